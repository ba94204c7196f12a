/**
 * What `cdk destroy` keeps (`crumbs:retainData`), for every log group of the app — the functions', the API's access
 * log, AppSync's — whichever construct made it: CDK keeps a log group by default, and one with a fixed name
 * (`/aws/lambda/crumbs-<stage>-<function>`) that outlives its stack makes the next deploy of the stage fail on
 * "already exists". Not kept, they go with their stack; kept, the next deploy adopts them
 * (`cdk deploy --import-existing-resources`, `docs/deploy.md`). The table's own policy is set where it is made
 * (`stateful-stack.ts`).
 */
import { type IAspect, RemovalPolicy } from 'aws-cdk-lib';
import { CfnLogGroup } from 'aws-cdk-lib/aws-logs';
import type { IConstruct } from 'constructs';

export class LogGroupRetention implements IAspect {
  constructor(private readonly retain: boolean) {}

  visit(node: IConstruct): void {
    if (node instanceof CfnLogGroup) {
      node.applyRemovalPolicy(this.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY);
    }
  }
}

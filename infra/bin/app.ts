/**
 * The CDK app (`cdk.json` runs it through `bin/run-ts.js`): reads `crumbs:*` context, builds the stateful and
 * stateless stacks, and checks them with cdk-nag's AwsSolutions pack (errors fail the synth).
 */
import { App } from 'aws-cdk-lib';
import { readConfig } from '../config.ts';
import { buildCrumbs } from '../crumbs-app.ts';

const app = new App();
buildCrumbs(app, readConfig(app.node));
app.synth();

/**
 * The dashboard: built from `ui/` at synth time, bundled beside a small function of its own so the API function
 * carries none of it, and served on the API's own origin (no CORS, one URL) at the ui function's public routes.
 * Public, like any login page: every data call it makes goes to the JWT-protected routes with the user's token.
 * A part of the stateless stack: its resources are created in the stack's scope (see `topology-functions.ts`).
 */
import { join } from 'node:path';
import { type HttpApi, type HttpMethod, HttpNoneAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { ENV, topology } from '#shared/topology.ts';
import { buildDashboard } from '../../ui/build.ts';
import { REPO_ROOT } from './bundling-options.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { httpTrigger, type TopologyFunctions } from './topology-functions.ts';

export interface DashboardProps {
  readonly functions: TopologyFunctions;
  /** The API whose origin serves the dashboard. */
  readonly httpApi: HttpApi;
}

export class Dashboard {
  /** Serves the dashboard's files at `/ui`. */
  public readonly function: CrumbsFunction;

  constructor(props: DashboardProps) {
    const declaration = topology.functions.ui;
    this.function = props.functions.create(declaration, {
      extraFiles: {
        from: buildDashboard(join(REPO_ROOT, 'node_modules', '.cache', 'crumbs-ui')),
        name: 'ui',
      },
    });
    this.function.addEnvironment(ENV.uiDir, '/var/task/ui');
    const integration = new HttpLambdaIntegration('UiIntegration', this.function.function);
    for (const route of httpTrigger(declaration).publicRoutes ?? []) {
      const [method, path] = route.split(' ') as [string, string];
      props.httpApi.addRoutes({
        path,
        methods: [method as HttpMethod],
        integration,
        authorizer: new HttpNoneAuthorizer(),
      });
    }
  }
}

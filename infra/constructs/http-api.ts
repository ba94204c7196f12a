/**
 * The HTTP API: the api function behind a JWT authorizer on every route but `GET /health`, the dashboard on the same
 * origin, the MCP server's routes (its own function), access logs, and the stack outputs a user needs (the API's and
 * the dashboard's URLs). A part of the
 * stateless stack: its resources are created in the stack's scope (see `topology-functions.ts` for why).
 */
import { CfnOutput } from 'aws-cdk-lib';
import {
  HttpApi,
  HttpMethod,
  HttpNoneAuthorizer,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { ENV, type FunctionDeclaration, topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { Dashboard } from './dashboard.ts';
import { httpTrigger, type TopologyFunctions } from './topology-functions.ts';

export interface CrumbsHttpApiProps {
  readonly stage: string;
  readonly functions: TopologyFunctions;
  /** Issuer URL of the JWTs the API accepts. */
  readonly jwtIssuer: string;
  /** Accepted `aud` (or `client_id`) values of those JWTs. */
  readonly jwtAudience: readonly string[];
  /** The JWT claim listing the workspaces a caller may use (`ENV.workspacesClaim` of the api function). */
  readonly workspacesClaim: string;
}

export class CrumbsHttpApi {
  public readonly api: CrumbsFunction;
  public readonly dashboard: Dashboard;
  public readonly mcp: CrumbsFunction;
  public readonly a2a: CrumbsFunction;
  public readonly httpApi: HttpApi;
  public readonly httpStage: HttpStage;
  /** The dashboard's address, `<ApiUrl>ui/`: where sign-in returns to. */
  public readonly dashboardUrl: string;

  constructor(scope: Construct, props: CrumbsHttpApiProps) {
    this.api = props.functions.create(topology.functions.api);
    this.api.function.addEnvironment(ENV.workspacesClaim, props.workspacesClaim);
    const integration = new HttpLambdaIntegration('ApiIntegration', this.api.function);
    this.httpApi = new HttpApi(scope, 'HttpApi', {
      apiName: `crumbs-${props.stage}`,
      description: 'crumbs HTTP API (breadcrumbs, definitions)',
      createDefaultStage: false,
      defaultIntegration: integration,
      defaultAuthorizer: new HttpJwtAuthorizer('JwtAuthorizer', props.jwtIssuer, {
        jwtAudience: [...props.jwtAudience],
      }),
    });
    this.httpApi.addRoutes({
      path: '/health',
      methods: [HttpMethod.GET],
      integration,
      authorizer: new HttpNoneAuthorizer(),
    });

    this.dashboard = new Dashboard({ functions: props.functions, httpApi: this.httpApi });

    // The MCP and A2A servers: functions of their own (their SDKs load nowhere else), behind the same authorizer;
    // public only where a client must read before it has a token (MCP's resource metadata, opted-in A2A cards).
    this.mcp = this.serverFunction(props, topology.functions.mcp, 'McpIntegration');
    this.mcp.function.addEnvironment(ENV.jwtIssuer, props.jwtIssuer);
    this.a2a = this.serverFunction(props, topology.functions.a2a, 'A2aIntegration');

    const accessLogs = new LogGroup(scope, 'HttpApiAccessLogs', { retention: RetentionDays.ONE_MONTH });
    this.httpStage = new HttpStage(scope, 'HttpApiStage', {
      httpApi: this.httpApi,
      autoDeploy: true,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs) },
    });
    NagSuppressions.addResourceSuppressions(
      this.httpApi,
      [
        {
          id: 'AwsSolutions-APIG4',
          reason:
            'GET /health is public on purpose (load balancer and uptime checks; it reveals no data), and so are ' +
            "GET /ui and GET /ui/{proxy+}, the dashboard's static files (a login page and its script; they hold " +
            "no data, and every data call the dashboard makes needs the JWT), and the MCP endpoints' protected " +
            'resource metadata (RFC 9728: the endpoint URL and the issuer, which clients read before they have a ' +
            'token). Every other route, including ' +
            '$default, requires a JWT.',
        },
      ],
      true,
    );

    new CfnOutput(scope, 'ApiUrl', {
      value: this.httpStage.url,
      description: 'Base URL of the crumbs HTTP API',
    });
    this.dashboardUrl = `${this.httpStage.url}ui/`;
    new CfnOutput(scope, 'DashboardUrl', {
      value: this.dashboardUrl,
      description:
        "The crumbs dashboard (signs in with the stack's issuer, or takes a pasted JWT; #token=<jwt>&workspace=<ws> logs in directly)",
    });
  }

  /** A function serving its own routes of the API (`HttpTrigger.routes`, and `publicRoutes` without the JWT). */
  private serverFunction(
    props: CrumbsHttpApiProps,
    declaration: FunctionDeclaration,
    id: string,
  ): CrumbsFunction {
    const fn = props.functions.create(declaration);
    fn.function.addEnvironment(ENV.workspacesClaim, props.workspacesClaim);
    const integration = new HttpLambdaIntegration(id, fn.function);
    const trigger = httpTrigger(declaration);
    for (const [routes, authorizer] of [
      [trigger.routes ?? [], undefined],
      [trigger.publicRoutes ?? [], new HttpNoneAuthorizer()],
    ] as const) {
      for (const route of routes) {
        const [method, path] = route.split(' ') as [string, string];
        this.httpApi.addRoutes({
          path,
          methods: [method as HttpMethod],
          integration,
          ...(authorizer ? { authorizer } : {}),
        });
      }
    }
    return fn;
  }
}

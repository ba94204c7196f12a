/**
 * The front door: one REGIONAL API Gateway REST API in front of every HTTP function (api, ui, mcp, a2a), so the
 * API, the dashboard, the MCP endpoints and the A2A agents share one base URL. `docs/deploy.md` ("The front door")
 * says why a REST API, with its price and limits.
 *
 * - Routes come from the functions' topology declarations (`HttpTrigger`): `routes` behind the TOKEN authorizer,
 *   `publicRoutes` without, and every other path to the function with `defaultRoute` (the api function), behind the
 *   authorizer. A REST API matches a request down its resource tree without going back up, so every resource made
 *   for a route also takes any other method, and — unless it has a path-variable child — any deeper path, for the
 *   default function: nothing a client asks for falls through to API Gateway's own 403.
 * - A function whose declaration says `response: 'stream'` is a response-streaming handler, and every one of its
 *   integrations is a STREAM one (`InvokeWithResponseStream`, up to 15 minutes; the functions cap a stream at
 *   `FRONT_DOOR.streamCapSeconds`); the others are buffered.
 * - The authorizer (`shared/core/front-door/authorizer.ts`) takes the same issuer, audiences and workspaces claim
 *   as before; a 401 answers with the same problem body and `WWW-Authenticate` as the local server.
 * - Access logs and execution-error logs with a retention, X-Ray tracing on the stage.
 *
 * A part of the stateless stack: its resources are created in the stack's scope (`topology-functions.ts` says why).
 */
import { Aws, CfnOutput, Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  AuthorizationType,
  EndpointType,
  type IResource,
  LambdaIntegration,
  LogGroupLogDestination,
  Method,
  MethodLoggingLevel,
  Resource,
  ResponseTransferMode,
  ResponseType,
  RestApi,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { AUTHORIZER } from '#shared/core/front-door/authorizer.ts';
import { ENV, FRONT_DOOR, type FunctionDeclaration, type HttpTrigger, topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { dashboardFunction } from './dashboard.ts';
import { httpTrigger, type TopologyFunctions } from './topology-functions.ts';

export interface FrontDoorProps {
  readonly stage: string;
  readonly functions: TopologyFunctions;
  /** Issuer URL of the JWTs the API accepts: the operator's, or the stack's own user pool's (`SignIn.issuer`). */
  readonly jwtIssuer: string;
  /**
   * Accepted `aud` (or, for tokens without `aud`, `client_id`) values of those JWTs: with the stack's own user pool,
   * its app client (`SignIn.clientIds`), so its ID tokens (`aud`) and access tokens (`client_id`) both pass.
   */
  readonly jwtAudience: readonly string[];
  /** The JWT claim listing the workspaces a caller may use (`ENV.workspacesClaim`). */
  readonly workspacesClaim: string;
}

/** The 401 API Gateway answers for a missing or refused token: the local server's problem, word for word. */
const UNAUTHORIZED_BODY = JSON.stringify({
  type: 'https://crumbs.dev/problems/unauthorized',
  title: 'Unauthorized',
  status: 401,
  detail: 'missing or invalid bearer token (Authorization: Bearer <token>)',
});

export class FrontDoor {
  public readonly restApi: RestApi;
  public readonly authorizer: TokenAuthorizer;
  public readonly authorizerFunction: CrumbsFunction;
  public readonly api: CrumbsFunction;
  /** Serves the dashboard's files at `/ui` (public; the dashboard's data calls need the JWT). */
  public readonly ui: CrumbsFunction;
  public readonly mcp: CrumbsFunction;
  public readonly a2a: CrumbsFunction;
  /**
   * The API's base URL (no trailing slash), built from the API's id rather than its stage, so the functions can be
   * told it (`ENV.apiUrl`) without a dependency cycle (stage → deployment → methods → functions).
   */
  public readonly baseUrl: string;
  /**
   * The dashboard's address, `<baseUrl>/ui/`: where sign-in returns to (a redirect URI of the user pool's client).
   * Built from `baseUrl` for the same reason: the client's id reaches the ui function and the authorizer, whose
   * methods the stage depends on.
   */
  public readonly dashboardUrl: string;

  private readonly integrations = new Map<string, LambdaIntegration>();
  private readonly defaultIntegration: LambdaIntegration;

  constructor(scope: Construct, props: FrontDoorProps) {
    const { functions, stage } = props;
    const f = topology.functions;

    this.authorizerFunction = functions.create(f.authorizer);
    this.authorizerFunction.addEnvironment(ENV.jwtIssuer, props.jwtIssuer);
    this.authorizerFunction.addEnvironment(ENV.jwtAudience, props.jwtAudience.join(','));
    this.authorizerFunction.addEnvironment(ENV.workspacesClaim, props.workspacesClaim);

    const accessLogs = new LogGroup(scope, 'FrontDoorAccessLogs', { retention: RetentionDays.ONE_MONTH });
    this.restApi = new RestApi(scope, 'FrontDoor', {
      restApiName: `crumbs-${stage}`,
      description: 'crumbs API: breadcrumbs, definitions, the dashboard, MCP and A2A (streamed responses)',
      // EDGE (CDK's default) ends a stream idle for 30 s; REGIONAL allows 5 minutes and 15-minute streams.
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      // Execution and access logs need API Gateway's account-level CloudWatch role (one per account and region).
      cloudWatchRole: true,
      // Deleted with the stack (CDK keeps it by default), so `cdk destroy` leaves nothing behind and a redeploy of the
      // stage creates and sets its own (docs/deploy.md says what that means for other REST APIs of the account).
      cloudWatchRoleRemovalPolicy: RemovalPolicy.DESTROY,
      deployOptions: {
        stageName: stage,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        tracingEnabled: true,
        metricsEnabled: true,
      },
    });
    this.baseUrl = `https://${this.restApi.restApiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/${stage}`;
    this.dashboardUrl = `${this.baseUrl}/ui/`;
    // API Gateway writes execution logs to this group (by this name); made here so it has a retention.
    new LogGroup(scope, 'FrontDoorExecutionLogs', {
      logGroupName: `API-Gateway-Execution-Logs_${this.restApi.restApiId}/${stage}`,
      retention: RetentionDays.ONE_MONTH,
    });

    this.authorizer = new TokenAuthorizer(scope, 'FrontDoorAuthorizer', {
      handler: this.authorizerFunction.function,
      identitySource: AUTHORIZER.identitySource,
      validationRegex: AUTHORIZER.validationRegex,
      resultsCacheTtl: Duration.seconds(AUTHORIZER.ttlSeconds),
    });
    // No token (or not a bearer JWT): UNAUTHORIZED; a token the authorizer denies: ACCESS_DENIED. Both are the
    // same 401 to the client.
    for (const [id, type] of [
      ['Unauthorized', ResponseType.UNAUTHORIZED],
      ['AccessDenied', ResponseType.ACCESS_DENIED],
    ] as const) {
      this.restApi.addGatewayResponse(id, {
        type,
        statusCode: '401',
        responseHeaders: {
          'Content-Type': "'application/problem+json'",
          'WWW-Authenticate': "'Bearer'",
        },
        templates: { 'application/json': UNAUTHORIZED_BODY },
      });
    }

    this.api = functions.create(f.api);
    this.ui = dashboardFunction(functions);
    this.mcp = functions.create(f.mcp);
    this.mcp.addEnvironment(ENV.jwtIssuer, props.jwtIssuer);
    this.a2a = functions.create(f.a2a);
    const served: [FunctionDeclaration & { trigger: HttpTrigger }, CrumbsFunction][] = [
      [f.api, this.api],
      [f.ui, this.ui],
      [f.mcp, this.mcp],
      [f.a2a, this.a2a],
    ];
    for (const [declaration, fn] of served) {
      fn.addEnvironment(ENV.workspacesClaim, props.workspacesClaim);
      if (httpTrigger(declaration).response === 'stream') fn.addEnvironment(ENV.apiUrl, this.baseUrl);
    }

    const defaults = served.filter(([d]) => httpTrigger(d).defaultRoute === true);
    if (defaults.length !== 1) throw new Error('exactly one HTTP function must take the default route');
    const [defaultDeclaration, defaultFn] = defaults[0] as (typeof served)[number];
    this.defaultIntegration = this.integrationOf(defaultDeclaration, defaultFn);

    const made = new Set<IResource>();
    for (const [declaration, fn] of served) {
      const trigger = httpTrigger(declaration);
      const integration = this.integrationOf(declaration, fn);
      for (const [routes, open] of [
        [trigger.routes ?? [], false],
        [trigger.publicRoutes ?? [], true],
      ] as const) {
        for (const route of routes) {
          const [method, path] = route.split(' ') as [string, string];
          const resource = this.restApi.root.resourceForPath(path);
          for (let r: IResource | undefined = resource; r !== undefined; r = r.parentResource) made.add(r);
          resource.addMethod(method, integration, open ? this.publicMethod() : this.guardedMethod());
        }
      }
    }
    // Everything else goes to the default function, every method on each resource made above (and the root), and every
    // deeper path under one without a path-variable child.
    made.add(this.restApi.root);
    for (const resource of made) this.catchAll(resource);

    NagSuppressions.addResourceSuppressions(
      this.restApi,
      [
        {
          id: 'AwsSolutions-APIG4',
          reason:
            'GET /health is public on purpose (load balancer and uptime checks; it reveals no data), and so are ' +
            'GET /v1/openapi.json (the API description, generated from the route table; no data), ' +
            "GET /ui and GET /ui/{proxy+}, the dashboard's static files (a login page and its script; they hold " +
            "no data, and every data call the dashboard makes needs the JWT), the MCP endpoints' protected " +
            'resource metadata (RFC 9728: the endpoint URL and the issuer, which clients read before they have a ' +
            'token) and opted-in public A2A agent cards (served only for definitions that ask for it). Every other ' +
            'method has the TOKEN authorizer.',
        },
        {
          id: 'AwsSolutions-COG4',
          reason:
            'The authorizer is a Lambda TOKEN authorizer on purpose: the issuer may be any OIDC provider, not only ' +
            'a Cognito user pool, and a Cognito authorizer accepts only ID tokens where crumbs accepts both ID and ' +
            'access tokens (docs/deploy.md, "The front door").',
        },
        {
          id: 'AwsSolutions-APIG2',
          reason:
            'Every integration is a Lambda proxy: the functions validate each request themselves (zod schemas, ' +
            'JSON-RPC parsing) and answer a 4xx naming the field; a gateway request validator would check less.',
        },
        {
          id: 'AwsSolutions-APIG3',
          reason:
            'No WAF web ACL is bundled: its rules and price depend on the operator; attach one to the stage if ' +
            'wanted (docs/deploy.md). Workspace rates are limited by crumbs itself.',
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      scope,
      [
        {
          id: 'AwsSolutions-IAM4',
          reason:
            "API Gateway's account-level CloudWatch role uses the AWS managed policy " +
            'AmazonAPIGatewayPushToCloudWatchLogs, the policy AWS documents for it.',
          appliesTo: [
            'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs',
          ],
        },
      ],
      true,
    );

    new CfnOutput(scope, 'ApiUrl', {
      value: this.restApi.url,
      description: 'Base URL of the crumbs API (the front door)',
    });
    new CfnOutput(scope, 'DashboardUrl', {
      value: this.dashboardUrl,
      description:
        "The crumbs dashboard (signs in with the stack's issuer, or takes a pasted JWT; #token=<jwt>&workspace=<ws> logs in directly)",
    });
  }

  /** One Lambda integration per function: STREAM for a streaming handler, with the stream's whole time. */
  private integrationOf(declaration: FunctionDeclaration, fn: CrumbsFunction): LambdaIntegration {
    let integration = this.integrations.get(declaration.name);
    if (integration === undefined) {
      const stream = httpTrigger(declaration).response === 'stream';
      integration = new LambdaIntegration(fn.function, {
        proxy: true,
        // One permission per function for the whole API, not two per method (Lambda's policy has a size limit).
        scopePermissionToMethod: false,
        ...(stream
          ? {
              responseTransferMode: ResponseTransferMode.STREAM,
              timeout: Duration.seconds(FRONT_DOOR.limits.streamSeconds),
            }
          : {}),
      });
      this.integrations.set(declaration.name, integration);
    }
    return integration;
  }

  private guardedMethod() {
    return { authorizer: this.authorizer, authorizationType: AuthorizationType.CUSTOM };
  }

  private publicMethod() {
    return { authorizationType: AuthorizationType.NONE };
  }

  /** The default function on any other method of `resource`, and on any deeper path where nothing else matches. */
  private catchAll(resource: IResource): void {
    const children = resource.node.children;
    if (!children.some((c) => c instanceof Method && c.httpMethod === 'ANY')) {
      resource.addMethod('ANY', this.defaultIntegration, this.guardedMethod());
    }
    const greedy = resource.path.endsWith('+}');
    const variableChild = children.some((c) => c instanceof Resource && /\/\{[^/]*$/.test(c.path));
    if (!greedy && !variableChild) {
      resource.addResource('{proxy+}').addMethod('ANY', this.defaultIntegration, this.guardedMethod());
    }
  }
}

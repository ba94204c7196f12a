/**
 * Delta channels on AWS (`docs/streaming.md`): one AppSync Events API whose `crumbs` namespace carries a channel per
 * streamed request. People connect and subscribe with the same JWT the front door takes, in either Cognito shape (an
 * ID token's `aud`, an access token's `client_id`):
 *
 * - the stack's own user pool: Cognito user pool auth, its app client ids as the client id pattern (AppSync reads
 *   `client_id` or `aud`), so another client of the pool cannot even connect;
 * - an operator's issuer: OIDC with the issuer only — AppSync's OIDC client id is matched against `aud` alone, which
 *   would refuse every access token — and the audiences checked in the onSubscribe handler.
 *
 * Either way the namespace's onSubscribe handler (`shared/core/streaming/on-subscribe.appsync.js`) checks the
 * audience (`aud`, else `client_id`) and refuses a channel whose workspace the token's workspaces claim does not
 * grant. Only IAM may publish, and only roles granted here (`grantPublish`): the agent executor's. A part of the
 * stateless stack: created in the stack's scope.
 */
import { CfnOutput, Token } from 'aws-cdk-lib';
import {
  AppSyncAuthorizationType,
  type AppSyncAuthProvider,
  type CfnApi,
  ChannelNamespace,
  Code,
  EventApi,
} from 'aws-cdk-lib/aws-appsync';
import type { IUserPool } from 'aws-cdk-lib/aws-cognito';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { DELTA_NAMESPACE } from '#shared/core/streaming/channel.ts';
import { onSubscribeCode } from '#shared/core/streaming/on-subscribe.ts';
import { ENV } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';

export interface DeltaChannelsProps {
  readonly stage: string;
  /** The issuer of the JWTs the front door accepts: subscribers present the same tokens. */
  readonly jwtIssuer: string;
  /** The front door's accepted audiences: a token's `aud`, else its `client_id`, must be one of them. */
  readonly jwtAudience: readonly string[];
  /**
   * The stack's own user pool, whose tokens `jwtIssuer` issues: AppSync checks them as Cognito user pool tokens.
   * @default - an operator's issuer (OIDC)
   */
  readonly userPool?: IUserPool;
  /** The claim listing the workspaces a caller may use (the onSubscribe handler reads it). */
  readonly workspacesClaim: string;
}

/**
 * The app client id pattern AppSync matches a Cognito token's client against: exactly one of the client ids. Ids
 * the stack creates are CloudFormation tokens, resolved at deploy; Cognito client ids are letters and digits, so
 * they need no escaping, and any other text is escaped.
 */
export function clientIdPattern(clientIds: readonly string[]): string {
  if (clientIds.length === 0) throw new Error('clientIdPattern: no client id');
  const escaped = clientIds.map((id) =>
    Token.isUnresolved(id) ? id : id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
  );
  return `^(?:${escaped.join('|')})$`;
}

export class DeltaChannels {
  public readonly api: EventApi;
  public readonly namespace: ChannelNamespace;
  /** `https://<http domain>`: where publishes go (`ENV.eventsHttpUrl`). */
  public readonly httpUrl: string;
  /** `wss://<realtime domain>/event/realtime`: where clients subscribe (`ENV.eventsRealtimeUrl`). */
  public readonly realtimeUrl: string;
  public readonly logGroup: LogGroup;
  /** The onSubscribe handler, for every namespace of the API (the change channels' too). */
  public readonly subscribeCode: Code;
  /** How people subscribe (the stack's own user pool, or the operator's issuer): for every namespace of the API. */
  public readonly subscribeAuthMode: AppSyncAuthorizationType;

  constructor(scope: Construct, props: DeltaChannelsProps) {
    const people: AppSyncAuthProvider = props.userPool
      ? {
          authorizationType: AppSyncAuthorizationType.USER_POOL,
          cognitoConfig: { userPool: props.userPool, appIdClientRegex: clientIdPattern(props.jwtAudience) },
        }
      : {
          authorizationType: AppSyncAuthorizationType.OIDC,
          openIdConnectConfig: { oidcProvider: props.jwtIssuer },
        };
    this.subscribeAuthMode = people.authorizationType;
    this.api = new EventApi(scope, 'DeltaChannelApi', {
      apiName: `crumbs-${props.stage}-deltas`,
      authorizationConfig: {
        authProviders: [people, { authorizationType: AppSyncAuthorizationType.IAM }],
        connectionAuthModeTypes: [people.authorizationType],
        defaultSubscribeAuthModeTypes: [people.authorizationType],
        defaultPublishAuthModeTypes: [AppSyncAuthorizationType.IAM],
      },
    });
    this.subscribeCode = Code.fromInline(onSubscribeCode(props.workspacesClaim, props.jwtAudience));
    this.namespace = new ChannelNamespace(scope, 'DeltaChannelNamespace', {
      api: this.api,
      channelNamespaceName: DELTA_NAMESPACE,
      code: this.subscribeCode,
      authorizationConfig: {
        publishAuthModeTypes: [AppSyncAuthorizationType.IAM],
        subscribeAuthModeTypes: [people.authorizationType],
      },
    });

    // Errors only (refused subscriptions, failed handlers): a line per delta would cost more than the deltas.
    this.logGroup = new LogGroup(scope, 'DeltaChannelLogs', {
      logGroupName: `/aws/appsync/apis/${this.api.apiId}`,
      retention: RetentionDays.ONE_MONTH,
    });
    const logsRole = new Role(scope, 'DeltaChannelLogsRole', {
      assumedBy: new ServicePrincipal('appsync.amazonaws.com'),
      description: 'AppSync Events writes the delta channel API log',
    });
    this.logGroup.grantWrite(logsRole);
    (this.api.node.defaultChild as CfnApi).addPropertyOverride('EventConfig.LogConfig', {
      CloudWatchLogsRoleArn: logsRole.roleArn,
      LogLevel: 'ERROR',
    });

    this.httpUrl = `https://${this.api.httpDns}`;
    this.realtimeUrl = `wss://${this.api.realtimeDns}/event/realtime`;
    new CfnOutput(scope, 'DeltaChannelRealtimeUrl', {
      value: this.realtimeUrl,
      description: 'Where clients subscribe to streamed answers (AppSync Events, the JWT of the API)',
    });
  }

  /** Lets `fn` publish deltas (`appsync:EventPublish` on the `crumbs` namespace) and tells it where. */
  grantPublish(fn: CrumbsFunction): void {
    this.namespace.grantPublish(fn.function);
    this.bindEndpoints(fn);
  }

  /** Tells `fn` where the channels are (`streamingEndpoints`), granting nothing. */
  bindEndpoints(fn: CrumbsFunction): void {
    fn.function.addEnvironment(ENV.eventsHttpUrl, this.httpUrl);
    fn.function.addEnvironment(ENV.eventsRealtimeUrl, this.realtimeUrl);
  }
}

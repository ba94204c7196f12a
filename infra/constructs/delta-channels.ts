/**
 * Delta channels on AWS (`docs/streaming.md`): one AppSync Events API whose `crumbs` namespace carries a channel per
 * streamed request. People connect and subscribe with the same JWT the HTTP API takes (OIDC, the same issuer and
 * audience); the namespace's onSubscribe handler (`shared/core/streaming/on-subscribe.appsync.js`) refuses a
 * channel whose workspace the token's workspaces claim does not grant. Only IAM may publish, and only roles granted
 * here (`grantPublish`): the agent executor's. A part of the stateless stack: created in the stack's scope.
 */
import { CfnOutput } from 'aws-cdk-lib';
import {
  AppSyncAuthorizationType,
  type CfnApi,
  ChannelNamespace,
  Code,
  EventApi,
} from 'aws-cdk-lib/aws-appsync';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { DELTA_NAMESPACE } from '#shared/core/streaming/channel.ts';
import { onSubscribeCode } from '#shared/core/streaming/on-subscribe.ts';
import { ENV } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';

export interface DeltaChannelsProps {
  readonly stage: string;
  /** The issuer of the JWTs the HTTP API accepts: subscribers present the same tokens. */
  readonly jwtIssuer: string;
  /** The HTTP API's accepted audiences: AppSync checks `aud` against them (its client id is a pattern). */
  readonly jwtAudience: readonly string[];
  /** The claim listing the workspaces a caller may use (the onSubscribe handler reads it). */
  readonly workspacesClaim: string;
}

/** AppSync's OIDC client id is matched as a regular expression: several audiences become one anchored pattern. */
export function audiencePattern(audiences: readonly string[]): string | undefined {
  if (audiences.length === 0) return undefined;
  if (audiences.length === 1) return audiences[0];
  const escaped = audiences.map((a) => a.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
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

  constructor(scope: Construct, props: DeltaChannelsProps) {
    const clientId = audiencePattern(props.jwtAudience);
    this.api = new EventApi(scope, 'DeltaChannelApi', {
      apiName: `crumbs-${props.stage}-deltas`,
      authorizationConfig: {
        authProviders: [
          {
            authorizationType: AppSyncAuthorizationType.OIDC,
            openIdConnectConfig: {
              oidcProvider: props.jwtIssuer,
              ...(clientId !== undefined ? { clientId } : {}),
            },
          },
          { authorizationType: AppSyncAuthorizationType.IAM },
        ],
        connectionAuthModeTypes: [AppSyncAuthorizationType.OIDC],
        defaultSubscribeAuthModeTypes: [AppSyncAuthorizationType.OIDC],
        defaultPublishAuthModeTypes: [AppSyncAuthorizationType.IAM],
      },
    });
    this.subscribeCode = Code.fromInline(onSubscribeCode(props.workspacesClaim));
    this.namespace = new ChannelNamespace(scope, 'DeltaChannelNamespace', {
      api: this.api,
      channelNamespaceName: DELTA_NAMESPACE,
      code: this.subscribeCode,
      authorizationConfig: {
        publishAuthModeTypes: [AppSyncAuthorizationType.IAM],
        subscribeAuthModeTypes: [AppSyncAuthorizationType.OIDC],
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

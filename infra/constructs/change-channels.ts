/**
 * Change channels on AWS (`docs/streaming.md` "Live views"): the `changes` namespace of the delta channels' Event
 * API, one channel per workspace (`/changes/<ws>`), carrying each change's summary from the publisher. People
 * subscribe with the API's JWT, checked by the same onSubscribe handler as the delta channels (the channel's
 * workspace must be granted by the token's workspaces claim); only IAM may publish, and only roles granted here
 * (`grantPublish`): the stream publisher's, which may publish nowhere else on the API. A part of the stateless
 * stack: created in the stack's scope.
 */
import { AppSyncAuthorizationType, ChannelNamespace } from 'aws-cdk-lib/aws-appsync';
import type { Construct } from 'constructs';
import { CHANGES_NAMESPACE } from '#shared/core/streaming/channel.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import type { DeltaChannels } from './delta-channels.ts';

export interface ChangeChannelsProps {
  /** The Event API (and its onSubscribe handler) the delta channels already run on. */
  readonly deltaChannels: DeltaChannels;
}

export class ChangeChannels {
  public readonly namespace: ChannelNamespace;
  private readonly deltaChannels: DeltaChannels;

  constructor(scope: Construct, props: ChangeChannelsProps) {
    this.deltaChannels = props.deltaChannels;
    this.namespace = new ChannelNamespace(scope, 'ChangeChannelNamespace', {
      api: props.deltaChannels.api,
      channelNamespaceName: CHANGES_NAMESPACE,
      code: props.deltaChannels.subscribeCode,
      authorizationConfig: {
        publishAuthModeTypes: [AppSyncAuthorizationType.IAM],
        subscribeAuthModeTypes: [props.deltaChannels.subscribeAuthMode],
      },
    });
  }

  /** Lets `fn` publish changes (`appsync:EventPublish` on the `changes` namespace only) and tells it where. */
  grantPublish(fn: CrumbsFunction): void {
    this.namespace.grantPublish(fn.function);
    this.deltaChannels.bindEndpoints(fn);
  }
}

import { describe, expect, it } from 'vitest';
import { streamingEndpoints } from '#shared/core/streaming/endpoints.ts';
import { ENV } from '#shared/topology.ts';

describe('streamingEndpoints', () => {
  it('names the realtime URL and the host its authorization carries, from the environment CDK sets', () => {
    expect(
      streamingEndpoints({
        [ENV.eventsHttpUrl]: 'https://abc.appsync-api.eu-west-1.amazonaws.com',
        [ENV.eventsRealtimeUrl]: 'wss://abc.appsync-realtime-api.eu-west-1.amazonaws.com/event/realtime',
      }),
    ).toEqual({
      realtime_url: 'wss://abc.appsync-realtime-api.eu-west-1.amazonaws.com/event/realtime',
      http_host: 'abc.appsync-api.eu-west-1.amazonaws.com',
    });
  });

  it('is undefined without a channel, and refuses half a configuration or a wrong scheme', () => {
    expect(streamingEndpoints({})).toBeUndefined();
    expect(() => streamingEndpoints({ [ENV.eventsRealtimeUrl]: 'ws://127.0.0.1:1/event/realtime' })).toThrow(
      /set together/,
    );
    expect(() =>
      streamingEndpoints({
        [ENV.eventsHttpUrl]: 'http://127.0.0.1:1',
        [ENV.eventsRealtimeUrl]: 'http://127.0.0.1:1/event/realtime',
      }),
    ).toThrow(/ws\(s\) URL/);
  });
});

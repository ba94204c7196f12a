/**
 * The change channel on the local stack: every write and delete reaches a subscriber of its workspace pushed by
 * the publisher, as the same summary `/changes` serves (same fields, same position), with no context; a token
 * reads only its own workspaces' channels; and `crumbs tail` prints a write that came over the channel without
 * holding a long poll.
 */
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import WebSocket from 'ws';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import type { ChangeFeed } from '#shared/client/change-feed.ts';
import { type FeedChange, parseFeedEvent } from '#shared/core/stream/feed-events.ts';
import { openChannelSocket } from '#shared/core/streaming/channel-socket.ts';
import { eventually, uniqueWorkspace } from '../support/local.ts';

const crumbs = inject('crumbs');
const feeds: ChangeFeed[] = [];
afterEach(() => {
  for (const f of feeds.splice(0)) f.close();
  vi.restoreAllMocks();
});

function client(workspace: string, token = crumbs.token): CrumbsClient {
  return new CrumbsClient({ endpoint: crumbs.api, token, workspace });
}

async function follow(c: CrumbsClient, seen: FeedChange[]): Promise<ChangeFeed> {
  const channel = await c.changeChannel();
  if (!channel) throw new Error('the local stack pushes no changes');
  const feed = c.changeFeed(channel, { webSocket: WebSocket as never });
  feeds.push(feed);
  feed.listen({}, (changes) => seen.push(...changes));
  await eventually(async () => (feed.state.state === 'live' ? true : undefined), 10_000, 50);
  return feed;
}

describe('the change channel', () => {
  it('names the workspace’s channel and the realtime endpoint', async () => {
    const ws = uniqueWorkspace('chan');
    const channel = await client(ws).changeChannel();
    expect(channel).toMatchObject({ channel: `/changes/w${ws.replace(/-/g, '-d').replace(/_/g, '-u')}` });
    expect(channel?.realtime_url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/event\/realtime$/);
  });

  it('pushes every write and delete as the summary /changes serves, at the same position, without the context', async () => {
    const ws = uniqueWorkspace('push');
    const c = client(ws);
    const seen: FeedChange[] = [];
    await follow(c, seen);
    const start = await c.readChanges({});
    const note = await c.create({
      schema_name: 'push.note.v1',
      title: 'a note',
      tags: ['push'],
      context: { text: 'shown', secret: 'never on the channel' },
      llm_hints: { exclude: ['secret'] },
    });
    await c.update(note.id, { title: 'a note, edited' });
    await c.delete(note.id);
    await eventually(async () => (seen.length >= 3 ? true : undefined), 20_000, 100);
    expect(seen.map((s) => [s.event.type, s.event.id, s.event.version])).toEqual([
      ['created', note.id, 1],
      ['updated', note.id, 2],
      ['deleted', note.id, 2],
    ]);
    expect(JSON.stringify(seen)).not.toContain('never on the channel');
    expect(seen.every((s) => !('record' in s.event))).toBe(true);
    // What /changes serves for the same writes, once settled: the same events at the same positions.
    const served = await eventually(
      async () => {
        const answer = await c.readChanges({ after: start.cursor as string });
        return answer.changes.length >= 3 ? answer.changes : undefined;
      },
      20_000,
      200,
    );
    expect(seen).toEqual(served);
  });

  it('lets a token subscribe only to the channels of its own workspaces', async () => {
    const { channel, realtime_url, http_host } = (await client('someone-else').changeChannel()) ?? {
      channel: '',
      realtime_url: '',
      http_host: '',
    };
    await expect(
      openChannelSocket({
        realtimeUrl: realtime_url,
        httpHost: http_host,
        token: crumbs.scopedToken,
        channel,
        webSocket: WebSocket as never,
        onData: () => undefined,
      }),
    ).rejects.toMatchObject({ errorTypes: ['UnauthorizedException'] });
    // Its own workspace's channel is granted, and another workspace's writes never arrive on it.
    const own = await client(crumbs.scopedWorkspace, crumbs.scopedToken).changeChannel();
    const texts: string[] = [];
    const socket = await openChannelSocket({
      realtimeUrl: realtime_url,
      httpHost: http_host,
      token: crumbs.scopedToken,
      channel: own?.channel ?? '',
      webSocket: WebSocket as never,
      onData: (t) => texts.push(t),
    });
    const other = uniqueWorkspace('other');
    const seenOther: FeedChange[] = [];
    await follow(client(other), seenOther);
    await client(other).create({
      schema_name: 'push.note.v1',
      context: { text: 'not for the scoped token' },
    });
    await eventually(async () => (seenOther.length > 0 ? true : undefined), 20_000, 100);
    socket.close();
    expect(
      texts.flatMap((t) => parseFeedEvent(t) ?? []).filter((c) => c.event.schema_name === 'push.note.v1'),
    ).toEqual([]);
  });

  it('`crumbs tail` prints a pushed write and holds no long poll for it', async () => {
    const ws = uniqueWorkspace('tailpush');
    const requests: string[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
      requests.push(String(input instanceof Request ? input.url : input));
      return realFetch(input, init);
    });
    let out = '';
    let interrupt: (signal: NodeJS.Signals) => void = () => undefined;
    const tail = main(
      ['tail', '--backlog', '0', '-w', ws, '--endpoint', crumbs.api, '--token', crumbs.token],
      {
        stdout: (s) => {
          out += s;
        },
        stderr: () => undefined,
        env: {},
        onSignal: (handler) => {
          interrupt = handler;
          return () => undefined;
        },
      },
    );
    // Written once the tail is subscribed: its first read of /changes (answered at once) comes after that.
    await eventually(
      async () => (requests.some((r) => r.includes('/changes?')) ? true : undefined),
      10_000,
      50,
    );
    const note = await client(ws).create({
      schema_name: 'tail.note.v1',
      title: 'pushed to tail',
      context: {},
    });
    await eventually(async () => (out.includes(note.id) ? true : undefined), 20_000, 100);
    interrupt('SIGINT');
    expect(await tail).toBe(0);
    expect(out).toMatch(/created {2}\S+ {2}v1 {2}tail\.note\.v1/);
    const changeReads = requests.filter((r) => r.includes('/changes?'));
    expect(changeReads.length).toBeGreaterThan(0);
    for (const r of changeReads) expect(new URL(r).searchParams.get('wait')).toBe('0');
  });
});

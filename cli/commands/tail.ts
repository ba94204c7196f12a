/**
 * `crumbs tail [--schema S] [--tag T] [--thread ID] [--writer P]`: prints breadcrumb changes as they happen. Where
 * the stack pushes changes (`GET …/changes/channel`), they come over the workspace's change channel
 * (`shared/client/change-feed.ts`: the backlog read once, `/changes` read again only to catch up after a dropped
 * connection and once a minute to find a push that was lost); elsewhere from the change stream long-polled
 * (`GET …/changes`: each request waits on the server, the next continues from the last event id). Either way
 * nothing is missed or printed twice. Ctrl-C stops it.
 */
import WebSocket from 'ws';
import type { FeedStatus } from '#shared/client/change-feed.ts';
import type { ChangeEvent, ChangesQuery, CrumbsClient } from '#shared/client/crumbs-client.ts';
import { type Command, listenToProcessSignals, noPositionals, optInt, optString } from '../args.ts';

const MAX_BACKLOG = 100;

export const tailCommand: Command = {
  name: 'tail',
  summary: 'print breadcrumb changes as they happen (Ctrl-C stops)',
  usage: `Usage: crumbs tail [--schema S] [--tag T] [--thread ID] [--writer P] [--backlog N] [--once]

Prints breadcrumbs as they are created, updated or deleted: time, change, id, version, schema, writer, title, tags
(with --json, one change event a line, with the full record). Without filters, every change of the workspace.

Flags:
  --schema S       only these schema names (comma-separated)
  --tag T          only breadcrumbs with this tag
  --thread ID      only breadcrumbs of this thread
  --writer P       only what this principal wrote (e.g. agent:chat-assistant)
  --backlog N      print the newest N earlier changes first (default 10, 0 for none, at most ${MAX_BACKLOG})
  --once           print the backlog and stop`,
  options: {
    schema: { type: 'string' },
    tag: { type: 'string' },
    thread: { type: 'string' },
    writer: { type: 'string' },
    backlog: { type: 'string' },
    once: { type: 'boolean' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const filters = {
      ...optional('schema_name', optString(ctx.values, 'schema')),
      ...optional('tag', optString(ctx.values, 'tag')),
      ...optional('thread', optString(ctx.values, 'thread')),
      ...optional('writer', optString(ctx.values, 'writer')),
      ...(ctx.global.json ? { view: 'full' as const } : {}),
    } satisfies ChangesQuery;
    const backlog = optInt(ctx.values, 'backlog', { min: 0, max: MAX_BACKLOG }) ?? 10;
    const client = ctx.client();

    const controller = new AbortController();
    const subscribe = ctx.io.onSignal ?? listenToProcessSignals;
    const unsubscribe = subscribe(() => controller.abort());
    const print = (e: ChangeEvent) => ctx.io.stdout(`${ctx.global.json ? JSON.stringify(e) : line(e)}\n`);
    const channel =
      ctx.values.once === true ? undefined : await client.changeChannel({ signal: controller.signal });
    if (channel !== undefined) {
      try {
        return await followPushed(client, channel, filters, backlog, controller.signal, {
          print,
          full: ctx.global.json === true,
          stderr: ctx.io.stderr,
        });
      } finally {
        unsubscribe();
      }
    }
    try {
      // The first request answers the backlog at once (or, with none, waits for the first change).
      let { events, lastEventId } = await client.changes(
        { ...filters, backlog, wait: ctx.values.once === true || backlog > 0 ? 0 : undefined },
        { signal: controller.signal },
      );
      events.forEach(print);
      if (ctx.values.once === true) return 0;
      while (!controller.signal.aborted) {
        try {
          ({ events, lastEventId } = await client.changes(
            { ...filters, lastEventId },
            { signal: controller.signal },
          ));
        } catch (error) {
          if (controller.signal.aborted) break;
          throw error;
        }
        events.forEach(print);
      }
      return 0;
    } catch (error) {
      if (controller.signal.aborted) return 0;
      throw error;
    } finally {
      unsubscribe();
    }
  },
};

/**
 * Prints pushed changes until `signal` aborts; with `full` (`--json`) each with its record at that version, read
 * in order. A token the channel refuses ends it with that error.
 */
async function followPushed(
  client: CrumbsClient,
  channel: NonNullable<Awaited<ReturnType<CrumbsClient['changeChannel']>>>,
  query: ChangesQuery,
  backlog: number,
  signal: AbortSignal,
  out: { print: (e: ChangeEvent) => void; full: boolean; stderr: (text: string) => void },
): Promise<number> {
  const feed = client.changeFeed(channel, { webSocket: WebSocket as never, reconcileMs: 60_000 });
  let printing: Promise<void> = Promise.resolve();
  let stopped: Error | undefined;
  let wake: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    wake = resolve;
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  let said: string | undefined;
  const stop = feed.listen(
    {
      ...(query.schema_name ? { schema_name: query.schema_name.split(',') } : {}),
      ...(query.tag ? { tag: query.tag } : {}),
      ...(query.thread ? { thread: query.thread } : {}),
      ...(query.writer ? { writer: query.writer } : {}),
    },
    (changes) => {
      printing = printing.then(async () => {
        for (const { event } of changes) {
          if (out.full && event.type !== 'deleted') {
            const record = await client
              .getVersion(event.id, event.version, { signal })
              .catch(() => undefined);
            out.print(record ? { ...event, record } : event);
          } else out.print(event);
        }
      });
    },
    {
      backlog,
      exact: true,
      onStatus: (status: FeedStatus) => {
        if (status.state === 'stopped') {
          stopped = status.error;
          wake();
        } else if (status.state === 'retrying' && status.error.message !== said) {
          said = status.error.message;
          out.stderr(
            `crumbs tail: ${status.error.message}; connecting again in ${Math.round(status.inMs / 1000)} s\n`,
          );
        } else if (status.state === 'live') said = undefined;
      },
    },
  );
  await ended;
  stop();
  feed.close();
  await printing;
  if (stopped !== undefined) throw stopped;
  return 0;
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function line(e: ChangeEvent): string {
  const tags = e.tags.length > 0 ? `  [${e.tags.join(', ')}]` : '';
  const flag = e.outcome === 'ok' ? '' : `  !${e.outcome}`;
  return `${e.updated_at}  ${e.type.padEnd(7)}  ${e.id}  v${e.version}  ${e.schema_name}  ${e.updated_by}  ${e.title}${tags}${flag}`;
}

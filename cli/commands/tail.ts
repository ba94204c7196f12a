/**
 * `crumbs tail [--schema S] [--tag T] [--thread ID] [--writer P]`: prints breadcrumb changes as they happen, from
 * the API's change stream (`GET …/changes`, long-polled server-sent events): each request waits on the server
 * for the next changes, and the next continues from the last event id, so nothing is missed or printed twice.
 * Ctrl-C stops it.
 */
import type { ChangeEvent, ChangesQuery } from '../api-client.ts';
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

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function line(e: ChangeEvent): string {
  const tags = e.tags.length > 0 ? `  [${e.tags.join(', ')}]` : '';
  const flag = e.outcome === 'ok' ? '' : `  !${e.outcome}`;
  return `${e.updated_at}  ${e.type.padEnd(7)}  ${e.id}  v${e.version}  ${e.schema_name}  ${e.updated_by}  ${e.title}${tags}${flag}`;
}

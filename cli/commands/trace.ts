/**
 * `crumbs trace <breadcrumb-or-thread-id>`: prints the causal tree of the thread the id belongs to (from
 * `GET …/threads/{id}`): each breadcrumb under the one it answers, with schema, title, writer, hop number, the
 * time since the root and the hop's own duration. Error answers and loop stops are marked (and red on a terminal).
 */
import type { ThreadNode } from '#shared/client/crumbs-client.ts';
import { type Command, printJson, UsageError } from '../args.ts';

export const traceCommand: Command = {
  name: 'trace',
  summary: 'print the causal tree of a thread (give the thread id or any breadcrumb in it)',
  usage: `Usage: crumbs trace <breadcrumb-or-thread-id>

Prints every breadcrumb written in the thread as a tree: what answered what, who wrote it (and which
definition), the hop, the time since the thread started (+ms) and how long the hop took. Errors and loop stops are
marked with !. With --json, the thread as the API returns it.`,
  options: {},
  async run(ctx) {
    const [id, extra] = ctx.positionals;
    if (!id || extra !== undefined) throw new UsageError('expected one <breadcrumb-or-thread-id>', true);
    const view = await ctx.client().thread(id);
    if (ctx.global.json) {
      printJson(ctx.io, view);
      return 0;
    }
    const color =
      ctx.io.env.NO_COLOR === undefined && ctx.io.env.FORCE_COLOR !== '0' && process.stdout.isTTY === true;
    ctx.io.stdout(
      `thread ${view.thread} (${view.nodes.length} breadcrumbs${view.truncated ? ', truncated' : ''})\n`,
    );
    for (const line of renderTree(view.nodes, color)) ctx.io.stdout(`${line}\n`);
    return view.nodes.some((n) => n.outcome !== 'ok') ? 1 : 0;
  },
};

/** One line per node, indented by depth with tree guides. */
export function renderTree(nodes: readonly ThreadNode[], color = false): string[] {
  const lines: string[] = [];
  nodes.forEach((n, i) => {
    const hasLaterSibling = nodes.slice(i + 1).some((m) => m.depth === n.depth && m.parent === n.parent);
    const guides = ancestorsGuides(nodes, i);
    const branch = n.depth === 0 ? '' : hasLaterSibling ? '├─ ' : '└─ ';
    const hop = n.causation ? `hop ${n.causation.hop}` : 'root';
    const timing = `+${n.since_root_ms}ms${n.hop_ms !== null ? ` (${n.hop_ms}ms)` : ''}`;
    const flag = n.outcome === 'ok' ? '' : `  ! ${n.outcome}${n.error ? `: ${n.error}` : ''}`;
    const status = n.status && n.outcome === 'ok' ? ` [${n.status}]` : '';
    const text = `${guides}${branch}${n.schema_name}${status}  ${n.title || n.id}  — ${n.writer}  ${hop}  ${timing}${flag}`;
    lines.push(color && n.outcome !== 'ok' ? `\u001b[31m${text}\u001b[0m` : text);
  });
  return lines;
}

/** The vertical guides of a node's ancestors: `│  ` where an ancestor has siblings still to come. */
function ancestorsGuides(nodes: readonly ThreadNode[], index: number): string {
  const node = nodes[index]!;
  const parts: string[] = [];
  let parent = node.parent;
  for (let depth = node.depth - 1; depth >= 1; depth--) {
    const ancestorIndex = nodes.findIndex((n) => n.id === parent);
    const ancestor = nodes[ancestorIndex];
    if (!ancestor) {
      parts.unshift('   ');
      continue;
    }
    const more = nodes
      .slice(index + 1)
      .some((m) => m.depth === ancestor.depth && m.parent === ancestor.parent);
    parts.unshift(more ? '│  ' : '   ');
    parent = ancestor.parent;
  }
  return parts.join('');
}

/**
 * The README's quick start is one workspace (issue 33.2): its lines are read from README.md and run in order — the
 * `export` line `crumbs dev` prints (with this stack's endpoint and token for the README's placeholders), then the
 * `npx crumbs` lines of the block after it — and the note they write is found in the workspace the README's dashboard
 * link opens on. `crumbs dev`'s banner printing that export line is `test/unit/cli/dev.test.ts`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { main } from '#cli/main.ts';
import { ENV } from '#shared/topology.ts';
import { localStack } from '../support/local.ts';

interface QuickStart {
  /** The variables of the banner's `export` line, as the README shows them. */
  exported: Record<string, string>;
  /** The workspace of the README's dashboard link. */
  dashboardWorkspace: string;
  /** The `npx crumbs …` lines, in order, as argument lists. */
  lines: string[][];
}

/** A shell line's words: plain words and single-quoted strings (all the quick start uses); `#` starts a comment. */
function words(line: string): string[] {
  const out: string[] = [];
  const pattern = /'([^']*)'|(#.*$)|(\S+)/g;
  for (let m = pattern.exec(line); m !== null; m = pattern.exec(line)) {
    if (m[2] !== undefined) break;
    out.push(m[1] ?? String(m[3]));
  }
  return out;
}

function readQuickStart(): QuickStart {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('## Quick start');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const exportLine = /^\s*export (CRUMBS_ENDPOINT=.*)$/m.exec(section);
  const dashboard = /^Dashboard: (\S+)$/m.exec(section);
  if (!exportLine?.[1] || !dashboard?.[1])
    throw new Error('README quick start: no export line or dashboard link');
  const exported = Object.fromEntries(
    words(exportLine[1]).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
  );
  const workspace = new URLSearchParams(new URL(dashboard[1]).hash.slice(1)).get('workspace');
  const after = section.slice(section.indexOf('after pasting the `export` line'));
  const block = /```bash\n([\s\S]*?)```/.exec(after)?.[1] ?? '';
  const lines = block
    .split('\n')
    .filter((l) => l.startsWith('npx crumbs '))
    .map((l) => words(l).slice(2));
  return { exported, dashboardWorkspace: String(workspace), lines };
}

describe('the README quick start', () => {
  it("writes the note into the workspace the dashboard opens on, reading the README's lines in order", async () => {
    const quick = readQuickStart();
    const { api, token } = localStack();
    // The README's placeholders (its sample endpoint, `…` for the token) become this stack's; everything else the
    // export line sets is used as the README says it.
    const env = { ...quick.exported, [ENV.endpoint]: api, [ENV.localToken]: token };
    expect(quick.exported[ENV.workspace]).toBe(quick.dashboardWorkspace);

    const run = async (args: string[]) => {
      let out = '';
      let err = '';
      const code = await main(args, {
        stdout: (s) => {
          out += s;
        },
        stderr: (s) => {
          err += s;
        },
        env,
      });
      return { code, out, err };
    };
    // The lines up to the demo agent's chat: `chat` needs the demo seed and `smoke` makes a workspace of its own.
    const lines = quick.lines.slice(
      0,
      quick.lines.findIndex((l) => l[0] === 'chat'),
    );
    expect(lines.map((l) => l[0])).toEqual(['put', 'ls', 'get', 'update', 'history', 'rollback']);
    let id: string | undefined;
    for (const line of lines) {
      const args = line.map((w) => (w === '<id>' ? String(id) : w));
      const res = await run(args);
      expect(res.code, `${args.join(' ')}: ${res.err}`).toBe(0);
      // `put` prints the new breadcrumb as a table row: its id first.
      if (line[0] === 'put') id = res.out.split('\n')[1]?.trim().split(/\s+/)[0];
      if (line[0] === 'ls') expect(res.out).toContain(String(id));
    }

    // The dashboard's workspace holds the note, at the version the rollback wrote.
    const res = await fetch(
      `${api}/v1/workspaces/${quick.dashboardWorkspace}/breadcrumbs/${String(id)}?view=full`,
      { headers: { authorization: `Bearer ${token}` } },
    );
    expect(res.status).toBe(200);
    const note = (await res.json()) as {
      schema_name: string;
      title: string;
      version: number;
      context: unknown;
    };
    expect(note).toMatchObject({
      schema_name: 'note.text.v1',
      title: 'hello',
      version: 3,
      context: { text: 'hi' },
    });
  });
});

/**
 * Heavy checks of data cannot hold the neighbour back: team-b makes crumbs validate 2,000 objects against a
 * 9,000-entry enum of objects and under uniqueItems, run thirty JSONata expressions to their time limit, and read
 * listings whose templates render millions of steps. Each attack is refused or limited with an error naming the
 * limit, and team-a's requests, sent one after another while the attack runs, all complete before the attack's
 * answers are in (the checks run in workers, off the event loop the API shares with the executors). Orders of
 * events, never durations: the latencies belong in `npm run bench:checks`.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type ApiAnswer,
  adversary,
  defineActive,
  eventually,
  teamA,
  teamAData,
  teamB,
  toolAnswers,
  writeToolRequests,
} from './support.ts';

const uid = () => randomBytes(4).toString('hex');
type Team = ReturnType<typeof teamB>;

/**
 * Team-a's requests, one after the other (a write, a read of it, `/health`), `rounds` times, with when each
 * round finished relative to `finished` (the attack): the order the test asserts.
 */
async function probes(rounds: number, events: string[]): Promise<ApiAnswer[]> {
  const a = teamA();
  const answers: ApiAnswer[] = [];
  for (let i = 0; i < rounds; i++) {
    const id = `probe-${uid()}`;
    answers.push(await a.call('PUT', `/breadcrumbs/${id}`, { schema_name: 'note.text.v1', context: { i } }));
    answers.push(await a.call('GET', `/breadcrumbs/${id}`));
    const health = await fetch(`${adversary().api}/health`);
    answers.push({ status: health.status, headers: health.headers, body: {} });
    await health.text();
  }
  events.push('neighbour done');
  return answers;
}

/** Team-b's tool requests, written at once; resolves with every answer once all are in. */
async function attackWith(team: Team, tool: string, inputs: unknown[], events: string[]) {
  const ids = await writeToolRequests(team, tool, inputs);
  const answers = [];
  for (const id of ids) answers.push((await toolAnswers(team, id))[0] ?? {});
  events.push('attack answered');
  return answers;
}

function expectAnswered(answers: ApiAnswer[]) {
  for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
}

const entries = Array.from({ length: 9_000 }, (_, i) => ({ kind: 'item', id: i }));
// Each matches an entry near the enum's end: some 16,000,000 comparisons in all, past the schema's work budget.
const objects = Array.from({ length: 2_000 }, (_, i) => ({ kind: 'item', id: 8_999 - i }));

describe('heavy checks of data', () => {
  it('refuses 2,000 objects against a 9,000-entry enum, naming the limit, while team-a is answered', async () => {
    const b = teamB();
    const tool = `enum-${uid()}`;
    await defineActive(b, `tool-${tool}`, 'tool.def.v1', {
      name: tool,
      implementation: 'echo',
      input_schema: { type: 'object', properties: { items: { type: 'array', items: { enum: entries } } } },
    });
    const before = await teamAData();
    const events: string[] = [];
    const [answers, neighbour] = await Promise.all([
      attackWith(
        b,
        tool,
        [1, 2, 3].map(() => ({ items: objects })),
        events,
      ),
      probes(4, events),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe('error');
      expect(String(answer.error)).toMatch(/more than 6400000 steps of work \(JSON_SCHEMA_LIMITS\.maxWork/);
    }
    expectAnswered(neighbour);
    expect(events).toEqual(['neighbour done', 'attack answered']);
    // A value within the budget is checked and answered as ever.
    const [ok] = await attackWith(b, tool, [{ items: objects.slice(0, 3) }], []);
    expect(ok).toMatchObject({ status: 'success' });
    expect(await teamAData()).toEqual(before);
  });

  it('refuses uniqueItems over 2,000 objects, naming the limit, while team-a is answered', async () => {
    const b = teamB();
    const tool = `unique-${uid()}`;
    await defineActive(b, `tool-${tool}`, 'tool.def.v1', {
      name: tool,
      implementation: 'echo',
      input_schema: { type: 'object', properties: { items: { type: 'array', uniqueItems: true } } },
    });
    const events: string[] = [];
    const [answers, neighbour] = await Promise.all([
      attackWith(
        b,
        tool,
        [1, 2, 3].map(() => ({ items: objects })),
        events,
      ),
      probes(4, events),
    ]);
    for (const answer of answers) expect(String(answer.error)).toMatch(/JSON_SCHEMA_LIMITS\.maxWork/);
    expectAnswered(neighbour);
    expect(events).toEqual(['neighbour done', 'attack answered']);
  });

  it('stops thirty expressions at their time limit while team-a and /health are answered', async () => {
    const b = teamB();
    const tool = `xform-${uid()}`;
    await defineActive(b, `tool-${tool}`, 'tool.def.v1', { name: tool, implementation: 'json.transform' });
    const events: string[] = [];
    const slow = { expression: '$count([1..900000].($string($)))', data: {} };
    const [answers, neighbour] = await Promise.all([
      attackWith(
        b,
        tool,
        Array.from({ length: 30 }, () => slow),
        events,
      ),
      probes(4, events),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe('error');
      expect(String(answer.error)).toMatch(/Evaluation timeout after 1000 milliseconds/);
    }
    expectAnswered(neighbour);
    expect(events).toEqual(['neighbour done', 'attack answered']);
  });

  it("limits a read's templates to its budget, each view past it an error, while team-a is answered", async () => {
    const b = teamB();
    const schema = `heavy.view${uid()}.v1`;
    const hints = await b.call('POST', '/breadcrumbs', {
      schema_name: 'schema.def.v1',
      tags: [`defines:${schema}`],
      context: {
        llm_hints: {
          transform: { n: { type: 'template', template: '{{#each a}}{{#each ../a}}.{{/each}}{{/each}}' } },
        },
      },
    });
    expect(hints.status, JSON.stringify(hints.body)).toBeLessThan(300);
    const context = { a: Array.from({ length: 600 }, (_, i) => i) };
    for (let i = 0; i < 20; i++) {
      const put = await b.call('POST', '/breadcrumbs', { schema_name: schema, context });
      expect(put.status).toBeLessThan(300);
    }
    const listed = await eventually(async () => {
      const page = await b.call('GET', `/breadcrumbs?schema_name=${schema}&limit=20`);
      return ((page.body.items ?? []) as unknown[]).length === 20 ? page : undefined;
    }, 'the listing of 20');
    const events: string[] = [];
    const listing = async () => {
      const pages = await Promise.all(
        [1, 2, 3].map(() => b.call('GET', `/breadcrumbs?schema_name=${schema}&limit=20`)),
      );
      events.push('attack answered');
      return pages;
    };
    const [pages, neighbour] = await Promise.all([listing(), probes(3, events)]);
    for (const page of [listed, ...pages]) {
      expect(page.status).toBe(200);
      const views = (page.body.items as { context: { n: unknown } }[]).map((v) => v.context.n);
      // Each render is some 720,000 steps: a read renders 13 within its 10,000,000, the rest say why not.
      expect(views.filter((n) => typeof n === 'string')).toHaveLength(13);
      expect(views.filter((n) => typeof n !== 'string')).toEqual(
        Array(7).fill({ error: expect.stringMatching(/TEMPLATE_LIMITS\.maxStepsPerRead/) }),
      );
    }
    expectAnswered(neighbour);
    expect(events).toEqual(['neighbour done', 'attack answered']);
  });
});

/**
 * Expressions from data cannot freeze the stack: team-b's catastrophic regex in a `json.transform` expression (and
 * a `$pad` that made V8 abort the process, a backtracking lambda signature), a
 * workflow whose `input_schema` nests 24 anyOf $refs (then POST …/runs), a recursive `{"$ref": "#"}` and a
 * nested-quantifier `pattern` are each answered — a tool error or answer, an `invalid` definition naming the path,
 * a 422 — and team-a's probe requests, sent while the attacks run and after, are answered with team-a's data
 * unchanged. Outcomes only, never timings (the latencies belong in `bench:tenants`).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type ApiAnswer, eventually, teamA, teamAData, teamB } from './support.ts';

const uid = () => randomBytes(4).toString('hex');
const EVIL_MATCH = '$match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", /(a+)+$/)';

function nestedAnyOfRefs(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < levels; i++) {
    defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  }
  defs[`d${levels}`] = { type: 'string' };
  return { $defs: defs, $ref: '#/$defs/d0' };
}

type Team = ReturnType<typeof teamB>;

/** The rule manager's verdict on a definition (its `definition.status.v1`) once it has seen `version`. */
async function statusOf(team: Team, id: string, version: number): Promise<Record<string, unknown>> {
  return eventually(async () => {
    const page = await team.call(
      'GET',
      `/breadcrumbs?schema_name=definition.status.v1&tag=${encodeURIComponent(`definition:${id}`)}&limit=1&view=full`,
    );
    const items = (page.body.items ?? []) as { context: Record<string, unknown> }[];
    const status = items[0]?.context;
    return status && Number(status.definition_version) >= version ? status : undefined;
  }, `the status of ${id}`);
}

async function define(team: Team, id: string, schemaName: string, context: Record<string, unknown>) {
  const put = await team.call('PUT', `/breadcrumbs/${id}`, { schema_name: schemaName, title: id, context });
  expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
  return statusOf(team, id, Number(put.body.version));
}

/** Team-a's probe: a write and a read of its own, answered (the status, not the latency, is asserted). */
async function probe(tag: string): Promise<ApiAnswer[]> {
  const a = teamA();
  const id = `probe-${tag}-${uid()}`;
  const put = await a.call('PUT', `/breadcrumbs/${id}`, {
    schema_name: 'note.text.v1',
    context: { text: tag },
  });
  const get = await a.call('GET', `/breadcrumbs/${id}`);
  return [put, get];
}

function expectAnswered(answers: ApiAnswer[]) {
  for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
}

describe('expressions from data', () => {
  it("answers a catastrophic regex in a json.transform tool, and team-a's requests meanwhile", async () => {
    const b = teamB();
    const tool = `xform-${uid()}`;
    const status = await define(b, `tool-${tool}`, 'tool.def.v1', {
      name: tool,
      implementation: 'json.transform',
    });
    expect(status.state).toBe('active');
    const before = await teamAData();

    const ask = async (requestId: string, expression: string) => {
      const created = await b.call('POST', '/breadcrumbs', {
        schema_name: 'tool.request.v1',
        tags: [`request:${requestId}`],
        context: { tool, input: { expression, data: { text: `${'a'.repeat(40)}!` } }, requestId },
      });
      expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
    };
    const answer = (requestId: string) =>
      eventually(async () => {
        const page = await b.call(
          'GET',
          `/breadcrumbs?schema_name=tool.response.v1&tag=${encodeURIComponent(`request:${requestId}`)}&limit=1&view=full`,
        );
        return ((page.body.items ?? []) as { context: Record<string, unknown> }[])[0]?.context;
      }, `the answer to ${requestId}`);

    const ids = {
      review: `r-${uid()}`,
      replace: `r-${uid()}`,
      split: `r-${uid()}`,
      lookahead: `r-${uid()}`,
      pad: `r-${uid()}`,
      signature: `r-${uid()}`,
    };
    const [probeWhile] = await Promise.all([
      probe('while-transform'),
      ask(ids.review, EVIL_MATCH),
      ask(ids.replace, '$replace(text, /(a|aa)+$/, "x")'),
      ask(ids.split, '$split(text, /(a*)*b/)'),
      ask(ids.lookahead, '$match(text, /(?=a)a/)'),
      // A 500-million-character string made V8 abort the whole process; a backtracking signature ran minutes.
      ask(ids.pad, '$length($pad("", 5e8, "x"))'),
      ask(ids.signature, `($f := function($a, $b)<n+n+>{1}; $f(${Array(80).fill(1).join(', ')}, "x"))`),
    ]);
    const answers = {
      review: await answer(ids.review),
      replace: await answer(ids.replace),
      split: await answer(ids.split),
      lookahead: await answer(ids.lookahead),
      pad: await answer(ids.pad),
      signature: await answer(ids.signature),
    };
    const text = `${'a'.repeat(40)}!`;
    expect(answers.review).toMatchObject({ status: 'success', output: { result: null } });
    expect(answers.replace).toMatchObject({ status: 'success', output: { result: text } });
    expect(answers.split).toMatchObject({ status: 'success', output: { result: [text] } });
    // Refused when compiled, as a tool error naming the construct.
    expect(answers.lookahead.status).not.toBe('success');
    expect(JSON.stringify(answers.lookahead)).toMatch(/lookahead/);
    expect(answers.pad.status).not.toBe('success');
    expect(JSON.stringify(answers.pad)).toMatch(/\$pad cannot make a string/);
    expect(answers.signature.status).not.toBe('success');
    expect(JSON.stringify(answers.signature)).toMatch(/function signature <n\+n\+>/);

    expectAnswered(probeWhile);
    expect(await teamAData()).toEqual(before);
    expectAnswered(await probe('after-transform'));
  });

  it('makes a workflow with a 24-level anyOf $ref input_schema invalid and answers its runs with 422', async () => {
    const b = teamB();
    const workflow = `evil-${uid()}`;
    const before = await teamAData();
    const [status, probeWhile] = await Promise.all([
      define(b, `workflow-${workflow}`, 'workflow.def.v1', {
        workflow_id: workflow,
        input_schema: nestedAnyOfRefs(24),
        steps: [{ id: 'noop', tool: 'echo', input: {} }],
      }),
      probe('while-schema'),
    ]);
    expect(status.state).toBe('invalid');
    expect(status.errors).toEqual([
      { path: 'input_schema', message: expect.stringMatching(/more than 10000 subschema evaluations/) },
    ]);

    const [run, probeDuring] = await Promise.all([
      b.call('POST', '/runs', { workflow, input: 'x' }),
      probe('while-run'),
    ]);
    expect(run.status, JSON.stringify(run.body)).toBe(422);
    expect(JSON.stringify(run.body)).toMatch(/input_schema/);

    expectAnswered(probeWhile);
    expectAnswered(probeDuring);
    expect(await teamAData()).toEqual(before);
    expectAnswered(await probe('after-schema'));
  });

  it('makes recursive $refs and nested-quantifier patterns answerable: invalid, 422 or a plain verdict', async () => {
    const b = teamB();
    const loop = `loop-${uid()}`;
    const status = await define(b, `workflow-${loop}`, 'workflow.def.v1', {
      workflow_id: loop,
      input_schema: { anyOf: [{ $ref: '#' }] },
      steps: [{ id: 'noop', tool: 'echo', input: {} }],
    });
    expect(status.state).toBe('invalid');
    expect(status.errors).toEqual([
      { path: 'input_schema', message: expect.stringMatching(/applies itself to the same value again/) },
    ]);
    const loopRun = await b.call('POST', '/runs', { workflow: loop, input: 1 });
    expect(loopRun.status, JSON.stringify(loopRun.body)).toBe(422);

    const toolStatus = await define(b, `tool-loop-${uid()}`, 'tool.def.v1', {
      name: `loop-${uid()}`,
      implementation: 'echo',
      input_schema: { $ref: '#' },
    });
    expect(toolStatus.state).toBe('invalid');
    expect(toolStatus.errors).toEqual([
      { path: 'input_schema', message: expect.stringMatching(/applies itself to the same value again/) },
    ]);

    // A nested-quantifier pattern is valid and runs on the linear engine: the run is refused for its input at once.
    const patterned = `pattern-${uid()}`;
    const patternStatus = await define(b, `workflow-${patterned}`, 'workflow.def.v1', {
      workflow_id: patterned,
      input_schema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } },
      steps: [{ id: 'noop', tool: 'echo', input: {} }],
    });
    expect(patternStatus.state).toBe('active');
    const [refused, probeWhile] = await Promise.all([
      b.call('POST', '/runs', { workflow: patterned, input: { s: `${'a'.repeat(5000)}!` } }),
      probe('while-pattern'),
    ]);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(JSON.stringify(refused.body)).toMatch(/must match pattern/);
    expectAnswered(probeWhile);
    expectAnswered(await probe('after-pattern'));
  });
});

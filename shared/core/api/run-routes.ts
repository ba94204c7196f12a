/**
 * Workflow runs over HTTP. The rule: every route writes at most one breadcrumb (the run's executor does the rest)
 * and checks first what it can, so a bad request is a 4xx problem+json and writes nothing (checks: `runRoutes`).
 *
 *   POST …/runs                      { workflow, input }       → 201, writes `workflow.request.v1`
 *   GET  …/runs?workflow=&status=&limit=&cursor=               → the runs, newest first
 *   GET  …/runs/{run_id}                                       → the run (`status: "requested"` before it starts)
 *   POST …/runs/{run_id}/approve     { step?, input?, comment? } → 202, writes `human.response.v1`
 *   POST …/runs/{run_id}/reject      { step?, comment? }         → 202, writes `human.response.v1`
 *   POST …/runs/{run_id}/pause | resume | cancel                → 202, writes `workflow.control.v1`
 *   POST …/runs/{run_id}/resume      { limits? }                → raises a budget that stopped the run (limits.ts)
 *   POST …/runs/{run_id}/retry       { from_step }              → 202, writes `workflow.control.v1`
 *
 * What is written is tagged `run:<run id>` and `reply-to:<driver>` (and `step:` for a response), so the run's rule
 * delivers it to what drives the run: the workflow executor (`reply-to:workflow:<id>`) or the agent whose
 * orchestration it is (`reply-to:agent:<id>`) — written by the caller (shared/domain/CONVENTIONS.md).
 */

import { dataChecks } from '#shared/adapters/checks/checks.ts';
import { BreadcrumbIdSchema, parseOrThrow, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import type { RaisedLimits } from '#shared/domain/budget.ts';
import { parseDefinition } from '#shared/domain/definitions.ts';
import { BadRequestError, ConflictError, NotFoundError, ValidationError } from '#shared/domain/errors.ts';
import {
  REQUEST_TAG_PREFIX,
  RUN_SCHEMA,
  runTag,
  stepTag,
  WORKFLOW_DEF_SCHEMA,
  WORKFLOW_REQUEST_SCHEMA,
} from '#shared/domain/protocol.ts';
import { type WorkflowDefinition, WorkflowDefinitionSchema } from '#shared/domain/workflow-definition.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { DataChecks } from '#shared/ports/checks.ts';
import { controlAllowed, humanInputProblem, inputProblem, type Validate } from '../orchestration/checks.ts';
import { runLimits } from '../orchestration/limits.ts';
import { runListTag, runReplyToTag, SCHEMAS } from '../orchestration/messages.ts';
import { RUN_STATUSES, type Run, RunSchema } from '../orchestration/run.ts';
import {
  RunDecisionBodySchema as DecisionSchema,
  RunResumeBodySchema as ResumeSchema,
  RunRetryBodySchema as RetrySchema,
  StartRunBodySchema as StartSchema,
} from './contract/schemas.ts';
import type { Caller, HttpRequest, HttpResult } from './http.ts';
import { json } from './http.ts';

export interface RunRouteDeps {
  store: BreadcrumbStore;
  /** Where a run's input is checked against its schemas; default this process's (`dataChecks()`). */
  checks?: DataChecks;
}

type Params = Record<string, string>;
export interface RunRoute {
  template: string;
  pattern: RegExp;
  methods: Partial<Record<string, (req: HttpRequest, p: Params, caller: Caller) => Promise<HttpResult>>>;
}

/** Helpers of api.ts the run routes share (body parsing, page limits). */
export interface RunRouteHelpers {
  parseJsonBody(req: HttpRequest): unknown;
  optionalJsonBody(req: HttpRequest): unknown;
  pageLimit(raw: string | undefined): number;
}

const WORKFLOW_PAGES = 10;

const ACTIONS = ['approve', 'reject', 'pause', 'resume', 'cancel', 'retry'] as const;
type Action = (typeof ACTIONS)[number];

function workspace(p: Params): string {
  return parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
}

/**
 * Checks: the workflow exists (404) and its input matches its `input_schema` (422); the run exists (404); approve
 * and reject need a run that is `waiting` on a human step (409), name the step when several wait (400), and an
 * approved input must match the step's `input_schema` (422); pause needs a running or waiting run, resume a paused
 * one, cancel one that has not ended (409); retry names a top-level step of the run's workflow (422), which
 * GET …/runs/{run_id} lists as `retry_steps`.
 */
export function runRoutes(deps: RunRouteDeps, helpers: RunRouteHelpers): RunRoute[] {
  const { store } = deps;
  const base = '^/v1/workspaces/(?<ws>[^/]+)/runs';
  const validateIn =
    (ws: string): Validate =>
    (check) =>
      (deps.checks ?? dataChecks()).validate(ws, check);

  /** The workflow definition with this `workflow_id`, newest first. */
  async function findWorkflow(
    ws: string,
    workflowId: string,
  ): Promise<{ id: string; version: number; definition: WorkflowDefinition }> {
    let cursor: string | undefined;
    for (let page = 0; page < WORKFLOW_PAGES; page++) {
      const result = await store.list({
        workspace: ws,
        schema_name: WORKFLOW_DEF_SCHEMA,
        limit: 100,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const record of result.items) {
        if ((record.context as { workflow_id?: unknown }).workflow_id !== workflowId) continue;
        try {
          const parsed = parseDefinition(record.schema_name, record.context);
          if (parsed.kind === 'workflow')
            return { id: record.id, version: record.version, definition: parsed.definition };
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          throw new ValidationError([
            {
              path: 'workflow',
              message: `workflow "${workflowId}" (${record.id}) is not a valid definition: ${error.message}`,
            },
          ]);
        }
      }
      if (result.next_cursor === null) break;
      cursor = result.next_cursor;
    }
    throw new NotFoundError(`no workflow "${workflowId}" in workspace ${ws}`);
  }

  async function readRun(ws: string, runId: string): Promise<{ run: Run; version: number } | undefined> {
    if (!BreadcrumbIdSchema.safeParse(runId).success) return undefined;
    try {
      const record = await store.get(ws, runId);
      if (record.schema_name !== RUN_SCHEMA) return undefined;
      const run = RunSchema.safeParse(record.context);
      return run.success ? { run: run.data, version: record.version } : undefined;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  async function mustReadRun(ws: string, runId: string): Promise<Run> {
    const found = await readRun(ws, runId);
    if (found === undefined) throw new NotFoundError(`no run ${runId} in workspace ${ws}`);
    return found.run;
  }

  /** The definition a run follows (the version it started with). */
  async function definitionOf(ws: string, run: Run): Promise<WorkflowDefinition> {
    // An orchestrating agent's run carries the plan it generated.
    if (run.definition !== undefined) return WorkflowDefinitionSchema.parse(run.definition);
    const record = await store.getVersion(ws, run.definition_id, run.workflow_version);
    const parsed = parseDefinition(record.schema_name, record.context);
    if (parsed.kind !== 'workflow')
      throw new NotFoundError(`run ${run.run_id}'s workflow definition is gone`);
    return parsed.definition;
  }

  function view(run: Run, version: number) {
    return { ...run, id: run.run_id, version };
  }

  async function start(req: HttpRequest, p: Params, caller: Caller): Promise<HttpResult> {
    const ws = workspace(p);
    const body = parseOrThrow(StartSchema, helpers.parseJsonBody(req));
    const found = await findWorkflow(ws, body.workflow);
    const problem = await inputProblem(found.definition, body.input, validateIn(ws));
    if (problem !== undefined) throw new ValidationError([{ path: 'input', message: problem }]);
    const { breadcrumb } = await store.create(
      ws,
      {
        schema_name: WORKFLOW_REQUEST_SCHEMA,
        title: `run ${body.workflow}`,
        tags: [`workflow:${body.workflow}`],
        context: { workflow: body.workflow, input: body.input },
      },
      { principal: caller.principal },
    );
    const runId = `run-${breadcrumb.id}`;
    return json(
      201,
      { run_id: runId, request_id: breadcrumb.id, workflow: body.workflow, status: 'requested' },
      { location: `/v1/workspaces/${ws}/runs/${runId}` },
    );
  }

  async function list(req: HttpRequest, p: Params): Promise<HttpResult> {
    const ws = workspace(p);
    const status = req.query.status || undefined;
    if (status !== undefined && !(RUN_STATUSES as readonly string[]).includes(status)) {
      throw new BadRequestError('status is not valid', [
        {
          path: 'status',
          message: `expected one of ${RUN_STATUSES.join(', ')}, got ${JSON.stringify(status)}`,
        },
      ]);
    }
    const workflow = req.query.workflow || undefined;
    const tag = runListTag({ workflow, status });
    const page = await store.list({
      workspace: ws,
      schema_name: RUN_SCHEMA,
      ...(tag !== undefined ? { tag } : {}),
      limit: helpers.pageLimit(req.query.limit),
      ...(req.query.cursor ? { cursor: req.query.cursor } : {}),
    });
    const items = page.items.flatMap((record) => {
      const run = RunSchema.safeParse(record.context);
      return run.success ? [view(run.data, record.version)] : [];
    });
    return json(200, { items, next_cursor: page.next_cursor });
  }

  async function get(_req: HttpRequest, p: Params): Promise<HttpResult> {
    const ws = workspace(p);
    const found = await readRun(ws, p.id ?? '');
    if (found !== undefined) {
      // What `retry` accepts (top-level steps, in order), so a client offers only those; absent when the
      // definition the run follows is gone.
      const retrySteps = await definitionOf(ws, found.run).then(
        (d) => d.steps.map((s) => s.id),
        (error: unknown) => {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        },
      );
      return json(
        200,
        { ...view(found.run, found.version), ...(retrySteps ? { retry_steps: retrySteps } : {}) },
        { etag: `"${found.version}"` },
      );
    }
    // Before the executor has started it, a run is its request.
    const requestId = (p.id ?? '').startsWith('run-') ? (p.id ?? '').slice(4) : undefined;
    if (requestId !== undefined && BreadcrumbIdSchema.safeParse(requestId).success) {
      try {
        const request = await store.get(ws, requestId);
        if (request.schema_name === WORKFLOW_REQUEST_SCHEMA) {
          const context = request.context as { workflow?: unknown; input?: unknown };
          return json(200, {
            run_id: p.id,
            request_id: requestId,
            workflow: context.workflow,
            status: 'requested',
          });
        }
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
    }
    throw new NotFoundError(`no run ${p.id} in workspace ${ws}`);
  }

  async function decide(
    decision: 'approve' | 'reject',
    req: HttpRequest,
    p: Params,
    caller: Caller,
  ): Promise<HttpResult> {
    const ws = workspace(p);
    const run = await mustReadRun(ws, p.id ?? '');
    const body = parseOrThrow(DecisionSchema, helpers.optionalJsonBody(req) ?? {});
    if (decision === 'reject' && body.input !== undefined) {
      throw new BadRequestError('a rejection takes no input', [
        { path: 'input', message: 'only approve takes an input' },
      ]);
    }
    const waiting = Object.entries(run.steps).filter(([, s]) => s.kind === 'human' && s.status === 'waiting');
    if (run.status !== 'waiting' || waiting.length === 0) {
      throw new ConflictError(`run ${run.run_id} is ${run.status}, not waiting for a person`);
    }
    let chosen: (typeof waiting)[number] | undefined;
    if (body.step !== undefined) {
      chosen = waiting.find(([key]) => key === body.step);
      if (chosen === undefined) {
        throw new ValidationError([
          {
            path: 'step',
            message: `step "${body.step}" is not waiting; waiting: ${waiting.map(([k]) => k).join(', ')}`,
          },
        ]);
      }
    } else if (waiting.length > 1) {
      throw new BadRequestError('several steps wait; name one', [
        { path: 'step', message: `expected one of ${waiting.map(([k]) => k).join(', ')}` },
      ]);
    } else {
      chosen = waiting[0];
    }
    if (chosen === undefined || chosen[1].attempt_id === undefined)
      throw new ConflictError('the step has no request');
    const [step, state] = chosen;
    if (decision === 'approve') {
      const problem = await humanInputProblem(await definitionOf(ws, run), step, body.input, validateIn(ws));
      if (problem !== undefined) throw new ValidationError([{ path: 'input', message: problem }]);
    }
    const { breadcrumb } = await store.create(
      ws,
      {
        schema_name: SCHEMAS.humanResponse,
        title: `${run.workflow} › ${step}: ${decision}`,
        tags: [
          runTag(run.run_id),
          stepTag(step),
          runReplyToTag(run),
          `${REQUEST_TAG_PREFIX}${state.attempt_id}`,
        ],
        context: {
          request_id: state.attempt_id,
          decision,
          ...(body.input !== undefined ? { input: body.input } : {}),
          ...(body.comment !== undefined ? { comment: body.comment } : {}),
        },
      },
      { principal: caller.principal },
    );
    return json(202, { run_id: run.run_id, step, decision, response_id: breadcrumb.id });
  }

  async function control(
    action: 'pause' | 'resume' | 'cancel' | 'retry',
    req: HttpRequest,
    p: Params,
    caller: Caller,
  ): Promise<HttpResult> {
    const ws = workspace(p);
    const run = await mustReadRun(ws, p.id ?? '');
    let fromStep: string | undefined;
    let limits: RaisedLimits | undefined;
    if (action === 'retry') {
      fromStep = parseOrThrow(RetrySchema, helpers.parseJsonBody(req)).from_step;
      const definition = await definitionOf(ws, run);
      if (!definition.steps.some((s) => s.id === fromStep)) {
        throw new ValidationError([
          {
            path: 'from_step',
            message: `expected a top-level step of ${run.workflow}: ${definition.steps.map((s) => s.id).join(', ')}`,
          },
        ]);
      }
    } else {
      const body = helpers.optionalJsonBody(req);
      if (!controlAllowed(run.status, action))
        throw new ConflictError(`cannot ${action} run ${run.run_id}: it is ${run.status}`);
      if (action === 'resume') limits = await raisedLimits(ws, run, body);
    }
    const { breadcrumb } = await store.create(
      ws,
      {
        schema_name: SCHEMAS.control,
        title: `${run.workflow}: ${action}`,
        tags: [runTag(run.run_id), runReplyToTag(run)],
        context: {
          run_id: run.run_id,
          action,
          ...(fromStep !== undefined ? { from_step: fromStep } : {}),
          ...(limits !== undefined ? { limits } : {}),
        },
      },
      { principal: caller.principal },
    );
    return json(202, { run_id: run.run_id, action, control_id: breadcrumb.id });
  }

  /**
   * A resume's `{ limits: { max_tokens?, max_cost_usd?, max_llm_calls? } }` (400 naming the field when bad); a run a
   * budget stopped resumes only with that budget raised past what it used (409 saying so): it would stop again.
   */
  async function raisedLimits(ws: string, run: Run, body: unknown): Promise<RaisedLimits | undefined> {
    const parsed = ResumeSchema.safeParse(body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.length ? issue.path.join('.') : 'body';
      throw new BadRequestError(`${path}: ${issue?.message ?? 'invalid'}`);
    }
    const limits = parsed.data.limits;
    const stop = run.stopped_by;
    if (stop === undefined) return limits;
    const definition = await definitionOf(ws, run);
    const after = runLimits(definition, {
      raised_limits: { ...run.raised_limits, ...limits, by: '', at: '' },
    });
    const unit = stop.unit === 'usd' ? 'cost_nusd' : stop.unit;
    const limit = after[unit];
    if (limit !== undefined && limit <= stop.used) {
      const field = stop.budget.replace(/^limits\./, '');
      const used = stop.unit === 'usd' ? `$${(stop.used / 1e9).toFixed(6)}` : String(stop.used);
      throw new ConflictError(
        `run ${run.run_id} was stopped by ${stop.budget} (${used} used): resume with { "limits": { "${field}": … } } above that`,
      );
    }
    return limits;
  }

  const act = (action: Action) => (req: HttpRequest, p: Params, caller: Caller) =>
    action === 'approve' || action === 'reject'
      ? decide(action, req, p, caller)
      : control(action, req, p, caller);

  return [
    {
      template: '/v1/workspaces/{ws}/runs',
      pattern: new RegExp(`${base}$`),
      methods: { POST: start, GET: list },
    },
    {
      template: '/v1/workspaces/{ws}/runs/{run_id}',
      pattern: new RegExp(`${base}/(?<id>[^/]+)$`),
      methods: { GET: get },
    },
    ...ACTIONS.map((action) => ({
      template: `/v1/workspaces/{ws}/runs/{run_id}/${action}`,
      pattern: new RegExp(`${base}/(?<id>[^/]+)/${action}$`),
      methods: { POST: act(action) },
    })),
  ];
}

/**
 * An A2A task read from the table: the `agent.request.v1` (the task), its answer, and — until there is an answer —
 * what its work waits on a person for: a tool-call approval in the request's thread (`human.request.v1`, kind
 * `tool-approval`, tagged with the thread) or, for an orchestrated request, its run (`run-<request id>`) waiting
 * at a human step. An approval or step a person already answered (the response written, not yet applied) waits on
 * nobody. State: answer → completed / failed / canceled (a cancelled run's answer, or a cancelled stream's); waiting → input-required; a
 * cancelled run → canceled; else working. Artifacts: the answer, and the plan and deliverable it names.
 *
 * Everything goes through the API as the caller (`WorkspaceApi`), so a task shows only what its caller may read.
 */
import type { Artifact, Message, Part, Task } from '@a2a-js/sdk';
import { type AnswerRecord, findAnswer, isOk, type WorkspaceApi } from '#shared/core/api/in-process.ts';
import { isPerson } from '#shared/domain/breadcrumb.ts';
import {
  AGENT_ERROR_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  HUMAN_REQUEST_SCHEMA,
  HUMAN_RESPONSE_SCHEMA,
  requestTag,
  threadTag,
} from '#shared/domain/protocol.ts';
import { APPROVAL_KIND, isExpired, type ToolApproval } from '#shared/domain/tool-approval.ts';

export const STATE = {
  working: 2,
  completed: 3,
  failed: 4,
  canceled: 5,
  inputRequired: 6,
} as const;
const TERMINAL: readonly number[] = [STATE.completed, STATE.failed, STATE.canceled];
export const ANSWER_SCHEMAS = [AGENT_RESPONSE_SCHEMA, AGENT_ERROR_SCHEMA];
const ROLE_USER = 1;
const ROLE_AGENT = 2;
/** Human requests of a thread read to find its approvals (newest first: the pending ones). */
const APPROVALS_READ = '100';

/** A request or answer as read from the API (the full record). */
export type Record_ = AnswerRecord & {
  created_by: string;
  created_at: string;
  updated_at: string;
  causation?: { thread?: string };
};

/** Something the task's work waits on a person for. */
export type Waiting =
  | {
      kind: 'approval';
      approval_id: string;
      agent_id: string;
      tool: string;
      arguments: unknown;
      reason: string;
      input_schema?: Record<string, unknown>;
      created_at: string;
    }
  | { kind: 'run-step'; run_id: string; step: string; prompt: string; since: string };

export interface TaskView {
  request: Record_;
  answer?: Record_;
  /** The plan and deliverable the answer names, as read. */
  made: Record_[];
  waiting: Waiting[];
  /** An orchestrated request's run, once it started. */
  run?: { run_id: string; status: string };
}

export function isTerminal(state: number | undefined): boolean {
  return state !== undefined && TERMINAL.includes(state);
}

export function runIdOf(request: Record_): string | undefined {
  return request.context.orchestrate === true ? `run-${request.id}` : undefined;
}

/** The task's state as the table holds it now. */
export async function readTask(api: WorkspaceApi, request: Record_): Promise<TaskView> {
  const answer = (await findAnswer(api, request.id, ANSWER_SCHEMAS)) as Record_ | undefined;
  if (answer !== undefined) {
    const ids = [answer.context.plan_id, answer.context.deliverable_id].filter(
      (id): id is string => typeof id === 'string' && id !== '',
    );
    const made = await Promise.all(
      ids.map(async (id) => {
        const read = await api('GET', `breadcrumbs/${encodeURIComponent(id)}/full`);
        return isOk(read) ? (read.body as Record_) : undefined;
      }),
    );
    return { request, answer, made: made.filter((r) => r !== undefined), waiting: [] };
  }
  const runId = runIdOf(request);
  const [approvals, run] = await Promise.all([
    openApprovals(api, request),
    runId === undefined ? undefined : waitingRun(api, runId),
  ]);
  return {
    request,
    made: [],
    waiting: [...approvals, ...(run?.waiting ?? [])],
    ...(run?.run ? { run: run.run } : {}),
  };
}

/**
 * Pending approvals in the request's thread (an agent tags each `thread:<thread>`, and a run's sub-agents work in
 * the request's thread), less those a person already answered. Read by their tag — one query, where the approvals
 * API scans the workspace's — and held to the API's rules: an agent's own approval (`approval-routes.ts`), pending
 * and not past its expiry.
 */
async function openApprovals(api: WorkspaceApi, request: Record_): Promise<Waiting[]> {
  const thread = request.causation?.thread ?? request.id;
  const listed = await api('GET', 'breadcrumbs', {
    query: { schema_name: HUMAN_REQUEST_SCHEMA, tag: threadTag(thread), view: 'full', limit: APPROVALS_READ },
  });
  if (!isOk(listed)) return [];
  const now = new Date();
  const items = (listed.body as { items: Record_[] }).items.flatMap((r) => {
    const c = r.context as unknown as ToolApproval;
    const own = c.kind === APPROVAL_KIND && r.created_by === `agent:${c.agent_id}`;
    return own && c.status === 'pending' && !isExpired(c, now)
      ? [{ ...c, approval_id: r.id, created_at: r.created_at }]
      : [];
  });
  const open = await Promise.all(
    items.map(async (a) => {
      // The approvals API writes the answer under this id (approval-routes.ts); the agent applies it later. Only
      // a person's answer counts (as the agent counts it): anything else leaves the approval waiting.
      const answered = await api(
        'GET',
        `breadcrumbs/${encodeURIComponent(`${a.approval_id}.response`)}/full`,
      );
      return isOk(answered) && isPerson((answered.body as Record_).created_by) ? undefined : a;
    }),
  );
  return open
    .filter((a) => a !== undefined)
    .reverse()
    .map(
      (a): Waiting => ({
        kind: 'approval',
        approval_id: a.approval_id,
        agent_id: a.agent_id,
        tool: a.tool,
        arguments: a.arguments,
        reason: a.reason ?? '',
        ...(a.input_schema ? { input_schema: a.input_schema } : {}),
        created_at: a.created_at,
      }),
    );
}

interface RunStep {
  kind?: string;
  status?: string;
  prompt?: string;
  attempt_id?: string;
  started_at?: string;
}

/** The run (once started) and its human steps waiting for an answer nobody gave yet. */
async function waitingRun(
  api: WorkspaceApi,
  runId: string,
): Promise<{ run?: { run_id: string; status: string }; waiting: Waiting[] }> {
  const read = await api('GET', `runs/${encodeURIComponent(runId)}`);
  if (!isOk(read)) return { waiting: [] };
  const run = read.body as { run_id: string; status: string; steps?: Record<string, RunStep> };
  const summary = { run_id: run.run_id, status: run.status };
  if (run.status !== 'waiting') return { run: summary, waiting: [] };
  const steps = Object.entries(run.steps ?? {}).filter(
    ([, s]) => s.kind === 'human' && s.status === 'waiting' && typeof s.attempt_id === 'string',
  );
  const open = await Promise.all(
    steps.map(async ([key, s]) => {
      // A person's response, not yet applied; the run refuses anyone else's (and the step keeps waiting).
      const answered = await api('GET', 'breadcrumbs', {
        query: {
          schema_name: HUMAN_RESPONSE_SCHEMA,
          tag: requestTag(String(s.attempt_id)),
          view: 'full',
          limit: '10',
        },
      });
      const taken =
        isOk(answered) && (answered.body as { items: Record_[] }).items.some((r) => isPerson(r.created_by));
      return taken
        ? undefined
        : ({
            kind: 'run-step',
            run_id: run.run_id,
            step: key,
            prompt: s.prompt ?? '',
            since: s.started_at ?? '',
          } satisfies Waiting);
    }),
  );
  return { run: summary, waiting: open.filter((w) => w !== undefined) };
}

export function textPart(text: string, mediaType = 'text/plain'): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType };
}

export function dataPart(value: unknown): Part {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

/** What the status message of an input-required task says: what is asked, and how to answer. */
export const HOW_TO_ANSWER =
  'Answer with a message on this task: the text "approve" or "reject: <reason>", or a data part ' +
  '{"decision": "approve"|"reject", "reason"?, "arguments"? (an approval\'s edited arguments), ' +
  '"input"? (a run step\'s input), "approval_id"? or "step"? (which one, when several wait)}.';

function askedText(waiting: readonly Waiting[]): string {
  const lines = waiting.map((w) =>
    w.kind === 'approval'
      ? `Approval ${w.approval_id}: ${w.agent_id} wants to call the tool ${w.tool} with ${JSON.stringify(
          w.arguments,
        ).slice(0, 2000)}${w.reason ? ` (${w.reason.slice(0, 500)})` : ''}.`
      : `Run ${w.run_id} waits at step ${w.step}${w.prompt ? `: ${w.prompt}` : '.'}`,
  );
  return [...lines, HOW_TO_ANSWER].join('\n');
}

/** The A2A task of a view; `sent` is the message that started it when the caller has it at hand. */
export function taskOf(view: TaskView, sent?: Message): Task {
  const { request, answer } = view;
  const contextId = String(request.context.conversation_id ?? request.id);
  const agentMessage = (id: string, parts: Part[]): Message => ({
    messageId: `${id}-status`,
    contextId,
    taskId: request.id,
    role: ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  });
  const history: Message[] = [
    sent ?? {
      messageId: request.id,
      contextId,
      taskId: request.id,
      role: ROLE_USER,
      parts: [
        ...(typeof request.context.message === 'string' ? [textPart(request.context.message)] : []),
        ...(request.context.input !== undefined ? [dataPart(request.context.input)] : []),
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  ];
  const task = (
    state: number,
    message: Message | undefined,
    timestamp: string,
    artifacts: Artifact[] = [],
  ) => ({
    id: request.id,
    contextId,
    status: { state, message, timestamp },
    artifacts,
    history: message === undefined ? history : [...history, message],
    metadata: undefined,
  });
  if (answer === undefined) {
    if (view.run?.status === 'cancelled') {
      return task(
        STATE.canceled,
        agentMessage(view.run.run_id, [textPart(`run ${view.run.run_id} was cancelled`)]),
        request.updated_at,
      );
    }
    if (view.waiting.length > 0) {
      const first = view.waiting[0];
      const since = first?.kind === 'approval' ? first.created_at : first?.since;
      return task(
        STATE.inputRequired,
        agentMessage(`${request.id}-waiting`, [
          textPart(askedText(view.waiting)),
          dataPart({ waiting: view.waiting }),
        ]),
        since || request.updated_at,
      );
    }
    return task(STATE.working, undefined, request.updated_at);
  }
  const c = answer.context;
  if (c.run_status === 'cancelled') {
    return task(
      STATE.canceled,
      agentMessage(answer.id, [textPart(`run ${String(c.run_id)} was cancelled`)]),
      answer.updated_at,
    );
  }
  if (c.status === 'cancelled') {
    return task(
      STATE.canceled,
      agentMessage(answer.id, [textPart(String(c.message ?? 'cancelled'))]),
      answer.updated_at,
    );
  }
  if (c.status === 'error' || answer.schema_name === AGENT_ERROR_SCHEMA) {
    return task(
      STATE.failed,
      agentMessage(answer.id, [textPart(String(c.error ?? 'the agent failed'))]),
      answer.updated_at,
    );
  }
  const text =
    typeof c.text === 'string'
      ? c.text
      : typeof c.message === 'string'
        ? c.message
        : JSON.stringify(c.output ?? '');
  const answerArtifact: Artifact = {
    artifactId: answer.id,
    name: 'answer',
    description: `${request.context.agent}'s answer`,
    parts: [textPart(text), ...(c.output !== undefined && c.output !== null ? [dataPart(c.output)] : [])],
    metadata: undefined,
    extensions: [],
  };
  return task(STATE.completed, agentMessage(answer.id, [textPart(text)]), answer.updated_at, [
    answerArtifact,
    ...view.made.map(artifactOf),
  ]);
}

const MEDIA_TYPES: Record<string, string> = {
  markdown: 'text/markdown',
  html: 'text/html',
  json: 'application/json',
  yaml: 'application/yaml',
};

/** A plan or deliverable as an artifact: its text, and its structured content as a data part where it has one. */
export function artifactOf(record: Record_): Artifact {
  const c = record.context;
  const content = 'plan' in c ? c.plan : c.content;
  const format = typeof c.format === 'string' ? c.format : 'text';
  const structured = content !== null && typeof content === 'object';
  const text = typeof content === 'string' ? content : JSON.stringify(content ?? null, null, 2);
  return {
    artifactId: record.id,
    name: `${record.schema_name}: ${String((record as { title?: unknown }).title ?? record.id)}`,
    description:
      'plan' in c
        ? `the plan (${format})`
        : `the deliverable${c.type ? ` of type ${String(c.type)}` : ''} (${format})`,
    parts: [
      textPart(text, structured ? 'application/json' : (MEDIA_TYPES[format] ?? 'text/plain')),
      ...(structured ? [dataPart(content)] : []),
    ],
    metadata: { schema_name: record.schema_name, ...(typeof c.format === 'string' ? { format } : {}) },
    extensions: [],
  };
}

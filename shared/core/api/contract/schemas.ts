/**
 * The API's shapes as zod schemas: what the route table (`route-table.ts`) names for each route's request and
 * response, what the OpenAPI document is generated from (`openapi.ts`), and what the typed client (`crumbs/client`)
 * takes its types from (`z.infer`). Request bodies are the very schemas the handlers parse with; response schemas
 * are checked against the handlers' own types at compile time (`conforms` below) and against the running API by the
 * contract test (`test/integration/api-contract.test.ts`).
 *
 * Objects a client may see grow new fields are `looseObject`s: a new field is not a breaking change.
 */
import {
  BreadcrumbIdSchema,
  BreadcrumbSchema,
  CreateBreadcrumbFields,
  SchemaNameSchema,
  UpdateBreadcrumbFields,
  WorkspaceSchema,
} from '#shared/domain/breadcrumb.ts';
import { RaisedLimitsSchema } from '#shared/domain/budget.ts';
import { ApprovalDecisionSchema } from '#shared/domain/tool-approval.ts';
import * as z from '#shared/domain/zod.ts';

const int = () => z.number().check(z.int());
const FieldIssueSchema = z.object({ path: z.string(), message: z.string() });

/** RFC 9457 problem details: every 4xx and 5xx body (`application/problem+json`). */
export const ProblemSchema = z.looseObject({
  type: z.string(),
  title: z.string(),
  status: int(),
  detail: z.string(),
  /** Every bad field of a refused request. */
  errors: z.optional(z.array(FieldIssueSchema)),
  /** On a 429: the limit that refused the request, and the seconds to wait (also in `Retry-After`). */
  limit: z.optional(z.string()),
  retry_after_seconds: z.optional(z.number()),
});
export type Problem = z.infer<typeof ProblemSchema>;

export { BreadcrumbSchema };
export type Breadcrumb = z.infer<typeof BreadcrumbSchema>;

/** The context view: what an LLM reads (`llm_hints` applied); the default view of every read. */
export const ContextViewSchema = z.object({
  id: z.string(),
  schema_name: z.string(),
  title: z.string(),
  tags: z.array(z.string()),
  version: int(),
  updated_at: z.string(),
  context: z.unknown(),
});
export type ContextView = z.infer<typeof ContextViewSchema>;

const ReadBoundSchema = z.object({ entries_read: int(), bound: int() });

/** A page: `next_cursor` is null on the last page; pass it back as `?cursor=` for the next one. */
function page<T extends z.ZodMiniType>(item: T) {
  return z.object({
    items: z.array(item),
    next_cursor: z.optional(z.nullable(z.string())),
    /** The listing stopped at its read bound (expired or filtered-out entries): the cursor reads on. */
    read_bound: z.optional(ReadBoundSchema),
  });
}
export const BreadcrumbPageSchema = page(z.union([BreadcrumbSchema, ContextViewSchema]));
export type BreadcrumbPage = z.infer<typeof BreadcrumbPageSchema>;
export const BreadcrumbOrViewSchema = z.union([BreadcrumbSchema, ContextViewSchema]);

export const CreateBreadcrumbBodySchema = CreateBreadcrumbFields;
export type CreateBreadcrumbBody = z.input<typeof CreateBreadcrumbFields>;
export const UpdateBreadcrumbBodySchema = UpdateBreadcrumbFields;
export type UpdateBreadcrumbBody = z.input<typeof UpdateBreadcrumbFields>;

export const SearchResultSchema = z.looseObject({
  items: z.array(z.looseObject({ id: z.string(), score: z.number() })),
});

export const HealthSchema = z.looseObject({ status: z.literal('ok') });

export const ThreadSchema = z.looseObject({
  workspace: z.string(),
  thread: z.string(),
  nodes: z.array(z.looseObject({ id: z.string(), version: int(), schema_name: z.string() })),
  truncated: z.boolean(),
});

export const ChannelInfoSchema = z.object({
  channel: z.string(),
  realtime_url: z.string(),
  http_host: z.string(),
});
export type ChannelInfo = z.infer<typeof ChannelInfoSchema>;

export const DefinitionSummarySchema = z.object({
  id: z.string(),
  schema_name: z.string(),
  title: z.string(),
  version: int(),
  updated_at: z.string(),
  updated_by: z.string(),
  kind: z.string(),
  state: z.string(),
  status_version: z.nullable(int()),
  errors: z.array(FieldIssueSchema),
  rule_name: z.nullable(z.string()),
  event_bus: z.nullable(z.string()),
  pattern: z.unknown(),
  pattern_hash: z.nullable(z.string()),
});
export type DefinitionSummary = z.infer<typeof DefinitionSummarySchema>;
export const DefinitionListSchema = z.object({ items: z.array(DefinitionSummarySchema) });

export const RuleStatusSchema = z.object({
  state: z.string(),
  name: z.nullable(z.string()),
  event_bus: z.nullable(z.string()),
  definition_version: int(),
});
export const ExplanationSchema = z.looseObject({
  definition: z.string(),
  breadcrumb: z.string(),
  selectors: z.array(z.looseObject({})),
  rule: z.nullable(RuleStatusSchema),
});

export const FailureSummarySchema = z.object({
  id: z.string(),
  schema_name: z.string(),
  title: z.string(),
  at: z.string(),
  writer: z.string(),
  thread: z.string(),
  outcome: z.string(),
  error: z.nullable(z.string()),
  dead_letter: z.boolean(),
});
export type FailureSummary = z.infer<typeof FailureSummarySchema>;
export const FailureListSchema = z.object({ items: z.array(FailureSummarySchema) });

const UsageAmountsSchema = z.object({
  calls: int(),
  input_tokens: int(),
  output_tokens: int(),
  cached_tokens: int(),
  cost_nusd: int(),
  unpriced_calls: int(),
  cost_usd: z.number(),
});
export const UsageReportSchema = z.object({
  workspace: z.string(),
  by: z.enum(['day', 'agent', 'run', 'thread']),
  from: z.string(),
  to: z.string(),
  items: z.array(z.extend(UsageAmountsSchema, { key: z.string() })),
  totals: UsageAmountsSchema,
  truncated: z.boolean(),
});
export type UsageReport = z.infer<typeof UsageReportSchema>;
export const RequestUsageReportSchema = z.object({
  workspace: z.string(),
  request: z.string(),
  items: z.array(
    z.extend(UsageAmountsSchema, {
      id: z.string(),
      version: int(),
      schema_name: z.string(),
      agent_id: z.string(),
    }),
  ),
  totals: UsageAmountsSchema,
  truncated: z.boolean(),
});
export type RequestUsageReport = z.infer<typeof RequestUsageReportSchema>;

export const RUN_STATUS_VALUES = [
  'running',
  'waiting',
  'paused',
  'succeeded',
  'failed',
  'cancelled',
] as const;
/** A run as `GET …/runs/{run_id}` shows it (a run not yet started by its executor is `requested`). */
export const RunSchema = z.looseObject({
  run_id: z.string(),
  workflow: z.optional(z.unknown()),
  status: z.enum([...RUN_STATUS_VALUES, 'requested']),
  id: z.optional(z.string()),
  version: z.optional(int()),
  request_id: z.optional(z.string()),
  retry_steps: z.optional(z.array(z.string())),
});
export type Run = z.infer<typeof RunSchema>;
export const RunPageSchema = page(RunSchema);
export const StartRunBodySchema = z.strictObject({
  workflow: z.string({ error: 'expected a workflow id' }).check(z.minLength(1, 'expected a workflow id')),
  input: z._default(z.unknown(), {}),
});
export type StartRunBody = z.input<typeof StartRunBodySchema>;
export const RunStartedSchema = z.object({
  run_id: z.string(),
  request_id: z.string(),
  workflow: z.string(),
  status: z.literal('requested'),
});
export type RunStarted = z.infer<typeof RunStartedSchema>;
export const RunDecisionBodySchema = z.strictObject({
  step: z.optional(z.string({ error: 'expected a step key' }).check(z.minLength(1))),
  input: z.optional(z.unknown()),
  comment: z.optional(
    z.string({ error: 'expected a string' }).check(z.maxLength(4000, 'at most 4000 characters')),
  ),
});
export const RunRetryBodySchema = z.strictObject({
  from_step: z.string({ error: 'expected a step id' }).check(z.minLength(1, 'expected a step id')),
});
export const RunResumeBodySchema = z.strictObject(
  { limits: z.optional(RaisedLimitsSchema) },
  { error: 'expected { limits?: { max_tokens?, max_cost_usd?, max_llm_calls? } }' },
);
export const RunDecisionSchema = z.object({
  run_id: z.string(),
  step: z.string(),
  decision: z.enum(['approve', 'reject']),
  response_id: z.string(),
});
export const RunControlSchema = z.object({
  run_id: z.string(),
  action: z.string(),
  control_id: z.string(),
});

export const ApprovalItemSchema = z.object({
  approval_id: z.string(),
  agent_id: z.string(),
  tool: z.string(),
  arguments: z.unknown(),
  reason: z.string(),
  prompt: z.string(),
  status: z.enum(['pending', 'approved', 'rejected', 'expired']),
  thread: z.string(),
  round: int(),
  created_at: z.string(),
  expires_at: z.optional(z.string()),
  input_schema: z.optional(z.record(z.string(), z.unknown())),
  run_id: z.optional(z.string()),
  step: z.optional(z.string()),
  decided_by: z.optional(z.string()),
  decided_at: z.optional(z.string()),
  decision_reason: z.optional(z.string()),
  edited: z.optional(z.boolean()),
});
export type ApprovalItem = z.infer<typeof ApprovalItemSchema>;
export const ApprovalListSchema = z.object({
  workspace: z.string(),
  items: z.array(ApprovalItemSchema),
  pending: int(),
  truncated: z.boolean(),
});
export type ApprovalList = z.infer<typeof ApprovalListSchema>;
export { ApprovalDecisionSchema as ApprovalDecisionBodySchema };
export const ApprovalAnswerSchema = z.object({
  approval_id: z.string(),
  decision: z.enum(['approve', 'reject']),
  response_id: z.string(),
});
export type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>;

export const StreamInfoSchema = z.object({
  stream_id: z.string(),
  channel: z.string(),
  realtime_url: z.string(),
  http_host: z.string(),
  events_url: z.optional(z.string()),
});
export type StreamInfo = z.infer<typeof StreamInfoSchema>;
export const CancelRequestBodySchema = z.strictObject({
  reason: z.optional(z.string().check(z.minLength(1), z.maxLength(500))),
});
export const RequestCancelSchema = z.object({
  request_id: z.string(),
  cancel_id: z.string(),
  requested_by: z.string(),
  replayed: z.boolean(),
});
export type RequestCancel = z.infer<typeof RequestCancelSchema>;

export const ExportDeletionSchema = z.object({
  id: z.string(),
  workspace: z.string(),
  version: int(),
  deleted: z.literal(true),
  deleted_at: z.string(),
  deleted_by: z.string(),
});
export const ExportPageSchema = z.object({
  items: z.array(z.union([BreadcrumbSchema, ExportDeletionSchema])),
  next_cursor: z.nullable(z.string()),
});
export type ExportPage = z.infer<typeof ExportPageSchema>;
export const DeletionResultSchema = z.object({
  workspace: z.string(),
  done: z.boolean(),
  phase: z.enum(['check', 'definitions', 'rules', 'seal', 'timers', 'secrets', 'sweep', 'done']),
  deleted: int(),
  resumed: z.boolean(),
  timers_cancelled: z.optional(int()),
  tombstone_until: z.optional(z.string()),
  waiting: z.optional(z.string()),
  warnings: z.optional(z.array(z.string())),
});
export type DeletionResult = z.infer<typeof DeletionResultSchema>;

/** A JSON-RPC 2.0 message (MCP and A2A): one request, or a batch. */
export const JsonRpcRequestSchema = z.looseObject({
  jsonrpc: z.literal('2.0'),
  method: z.string(),
  id: z.optional(z.union([z.string(), z.number()])),
  params: z.optional(z.unknown()),
});
export const JsonRpcResponseSchema = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.nullable(z.union([z.string(), z.number()])),
  result: z.optional(z.unknown()),
  error: z.optional(z.looseObject({ code: int(), message: z.string(), data: z.optional(z.unknown()) })),
});
/** An A2A (1.0) agent card: the agent's name and where it answers JSON-RPC. */
export const AgentCardSchema = z.looseObject({
  name: z.string(),
  version: z.string(),
  supportedInterfaces: z.array(
    z.looseObject({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() }),
  ),
});
export const ProtectedResourceMetadataSchema = z.looseObject({ resource: z.string() });

/** Path parameters and query fields, as scalars (each one a parameter of the document). */
export const PARAMETERS = {
  ws: WorkspaceSchema,
  id: BreadcrumbIdSchema,
  schema_name: SchemaNameSchema,
} as const;

export const OpenApiDocumentSchema = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

// Guardrails (`shared/rooms/guardrails/routes.ts`).
export const GuardrailTestBodySchema = z.strictObject({
  text: z
    .string({ error: 'expected the text to check' })
    .check(z.maxLength(200_000, 'at most 200,000 characters')),
  point: z.optional(
    z.enum(['input', 'model_input', 'model_output', 'tool_args', 'tool_result', 'memory_write', 'handoff'], {
      error:
        'expected one of input, model_input, model_output, tool_args, tool_result, memory_write, handoff',
    }),
  ),
});
const GuardrailFindingSchema = z.object({
  check: z.string(),
  type: z.string(),
  action: z.enum(['mask', 'block', 'warn']),
  start: z.optional(int()),
  end: z.optional(int()),
});
export const GuardrailTestResultSchema = z.object({
  guardrail_id: z.string(),
  version: int(),
  point: z.string(),
  text: z.string(),
  blocked: z.optional(z.object({ policy: z.string(), message: z.string() })),
  findings: z.array(GuardrailFindingSchema),
  placeholders: z.array(z.object({ placeholder: z.string(), type: z.string() })),
  not_run: z.array(z.string()),
});
export type GuardrailTestResult = z.infer<typeof GuardrailTestResultSchema>;
export const GuardrailListSchema = z.object({
  items: z.array(
    z.object({
      id: z.string(),
      guardrail_id: z.unknown(),
      version: int(),
      state: z.enum(['active', 'invalid']),
      errors: z.array(FieldIssueSchema),
    }),
  ),
});
export const GuardrailEventListSchema = z.object({
  items: z.array(
    z.looseObject({
      id: z.string(),
      created_at: z.string(),
      policy: z.string(),
      point: z.string(),
      check: z.string(),
      action: z.string(),
      matches: z.array(z.looseObject({ type: z.string() })),
    }),
  ),
});

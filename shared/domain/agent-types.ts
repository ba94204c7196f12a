/**
 * The fields of `agent.def.v1` that say *how* an agent works, as every type reads them: the `yaml` text (agent
 * card, tools, transforms), the transports' shapes, credentials as secret references, transforms and `llm`.
 * Structure only, and no IO. Each type's own rules are its module in `agents/` (listed in `agents/types.ts`);
 * `agent-spec.ts` combines the fields (and the parsed `yaml`) into the configuration a type runs with.
 *
 * - `type` defaults to `context`, so an agent without one is a context (LLM) agent.
 * - `transport` is `{ kind, <kind>: {...} }`: `mcp` (tool agents), `api`, `external` (A2A) or `function`.
 * - Credentials are references, never literals: `secret_ref` names a secret of the definition's own workspace
 *   (`secret-refs.ts`). A header that carries credentials (`Authorization`, `*-api-key`, `*token*`,
 *   cookies) may not be written as a literal value: it is `{ secret_ref }` or the transport's `authentication`.
 * - A transform is a JSONata expression (a string), or a mapping (an object whose string leaves are JSONata
 *   expressions, built into an object of the same shape); an empty mapping passes its input through unchanged.
 * - Limits have defaults and ceilings here, so a definition cannot ask for a 10-minute HTTP call or 1 GB of
 *   sandbox memory.
 */
import { DeliverableConfigSchema, OrchestrationConfigSchema, PlanConfigSchema } from './agent-modes.ts';
import { AGENT_MODES } from './protocol.ts';
import { SecretRefSchema } from './secret-refs.ts';
import * as z from './zod.ts';

export type { AgentTypeName, Transport } from './agents/types.ts';

/** What a request asks of an agent (`agent-modes.ts`, `shared/core/agents/modes.ts`). */
export type AgentMode = (typeof AGENT_MODES)[number];

const wholeMs = (min: number, max: number, what: string) =>
  z
    .number({ error: `expected a whole number of milliseconds` })
    .check(
      z.int('expected a whole number of milliseconds'),
      z.minimum(min, `at least ${min} ms`),
      z.maximum(max, `at most ${max} ms (${what})`),
    );

const HttpUrlSchema = z.string({ error: 'expected an http(s) URL string' }).check(
  z.refine((text) => {
    try {
      const url = new URL(text);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'expected an absolute http:// or https:// URL'),
);

const SecretValueSchema = z.object({ secret_ref: SecretRefSchema }, { error: 'expected { secret_ref }' });

/** Header names whose values are credentials: only `{ secret_ref }` is accepted for them. */
const CREDENTIAL_HEADER =
  /^(authorization|proxy-authorization|cookie|x-api-key|api-key|.*-api-key|.*token.*|.*secret.*)$/i;

export const HeadersSchema = z.record(
  z.string().check(z.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'expected an HTTP header name')),
  z.union([z.string(), SecretValueSchema], { error: 'expected a string or { secret_ref }' }),
  { error: 'expected an object of header names to values' },
);

function literalCredentialHeaders(headers: Record<string, unknown> | undefined): string[] {
  return Object.entries(headers ?? {})
    .filter(([name, value]) => typeof value === 'string' && CREDENTIAL_HEADER.test(name))
    .map(([name]) => name);
}

/** Adds an issue per credential header written as a literal (see the header). */
export function checkHeaders(
  headers: Record<string, unknown> | undefined,
  ctx: z.core.$RefinementCtx,
  path: PropertyKey[],
): void {
  for (const name of literalCredentialHeaders(headers)) {
    ctx.addIssue({
      code: 'custom',
      path: [...path, name],
      message: `a credential header: write { secret_ref: "<secret name>" } instead of the value, or use authentication`,
    });
  }
}

export const AUTHENTICATION_TYPES = ['bearer', 'header', 'basic'] as const;

/**
 * bearer: `Authorization: Bearer <secret>`; header: `<header_name>: <secret>`; basic: the secret is
 * `user:password`, sent base64-encoded. `secret_ref` may be left out only so seed 004's example loads; calling
 * such an agent fails with a message that names the missing field.
 */
export const AuthenticationSchema = z.object({
  type: z.enum(AUTHENTICATION_TYPES, { error: `expected one of ${AUTHENTICATION_TYPES.join(', ')}` }),
  secret_ref: z.optional(SecretRefSchema),
  header_name: z.optional(z.string().check(z.regex(/^[A-Za-z0-9-]{1,128}$/, 'expected an HTTP header name'))),
});
export type Authentication = z.output<typeof AuthenticationSchema>;

export const TransformSchema = z.union(
  [
    z.string().check(z.minLength(1, 'an empty expression')),
    z.record(z.string(), z.unknown(), { error: 'expected a JSONata string or a mapping object' }),
  ],
  { error: 'expected a JSONata expression string or a mapping object' },
);
export type Transform = z.output<typeof TransformSchema>;

const HostListSchema = z.array(
  z
    .string()
    .check(z.regex(/^(\*|(\*\.)?[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])$/, 'expected a host name, *.domain or *')),
  { error: 'expected an array of host names' },
);

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

export const McpTransportSchema = z.object({
  url: HttpUrlSchema,
  headers: z.optional(HeadersSchema),
  authentication: z.optional(AuthenticationSchema),
  timeout_ms: z._default(wholeMs(100, 60_000, 'one MCP call'), 30_000),
});
export type McpTransport = z.output<typeof McpTransportSchema>;

export const ApiTransportSchema = z.object({
  endpoint: HttpUrlSchema,
  method: z._default(z.enum(HTTP_METHODS, { error: `expected one of ${HTTP_METHODS.join(', ')}` }), 'POST'),
  headers: z.optional(HeadersSchema),
  authentication: z.optional(AuthenticationSchema),
  request_transform: z.optional(TransformSchema),
  response_transform: z.optional(TransformSchema),
  timeout_ms: z._default(wholeMs(100, 60_000, 'one HTTP call'), 10_000),
  max_response_bytes: z._default(
    z.number().check(z.int(), z.minimum(1), z.maximum(5 * 1024 * 1024, 'at most 5 MiB')),
    1024 * 1024,
  ),
  /** Hosts the call may reach (the endpoint's and any redirect's); default: the endpoint's host only. */
  allowed_hosts: z.optional(HostListSchema),
  retry_on_status: z._default(
    z.array(z.number().check(z.int(), z.minimum(400), z.maximum(599))),
    [429, 500, 502, 503, 504],
  ),
});
export type ApiTransport = z.output<typeof ApiTransportSchema>;

export const ExternalTransportSchema = z.object({
  endpoint: HttpUrlSchema,
  protocol: z._default(z.literal('a2a', { error: 'the only external protocol is "a2a"' }), 'a2a'),
  /** Where the agent card is; default `<endpoint origin>/.well-known/agent-card.json`. */
  agent_card_url: z.optional(HttpUrlSchema),
  healthCheck: z.optional(
    z.object({
      /** A path on the endpoint's origin (`/health`) or a URL. */
      endpoint: z.optional(z.string().check(z.minLength(1))),
      timeout_ms: z._default(wholeMs(100, 10_000, 'a health check'), 2_000),
    }),
  ),
  authentication: z.optional(AuthenticationSchema),
  headers: z.optional(HeadersSchema),
  /** How long one message/send may block waiting for the task to end; then the answer is re-checked later. */
  timeout_ms: z._default(wholeMs(100, 90_000, 'one blocking call, under the executor timeout'), 60_000),
  circuit_breaker: z._default(
    z.object({
      failure_threshold: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(100)), 3),
      cooldown_ms: z._default(wholeMs(1_000, 3_600_000, 'one hour'), 30_000),
    }),
    { failure_threshold: 3, cooldown_ms: 30_000 },
  ),
});
export type ExternalTransport = z.output<typeof ExternalTransportSchema>;

export const FunctionTransportSchema = z.object({
  timeout_ms: z._default(wholeMs(10, 60_000, 'CPU and bridged calls together'), 5_000),
  memory_mb: z._default(
    z
      .number({ error: 'expected a whole number of MB' })
      .check(
        z.int('expected a whole number of MB'),
        z.minimum(1, 'at least 1 MB'),
        z.maximum(256, 'at most 256 MB'),
      ),
    32,
  ),
});
export type FunctionTransport = z.output<typeof FunctionTransportSchema>;

export const LlmSettingsSchema = z.object({
  provider: z.optional(
    z.string().check(z.regex(/^[a-z0-9-]{1,40}$/, 'expected a provider name like "bedrock"')),
  ),
  model: z.optional(z.string().check(z.minLength(1))),
  temperature: z.optional(z.number({ error: 'expected a number' }).check(z.minimum(0), z.maximum(2))),
  max_tokens: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(1_000_000))),
});
export type LlmSettings = z.output<typeof LlmSettingsSchema>;

/** `yaml` as written: YAML text (seed 004's column), or the object the seed's TypeScript examples show. */
export const YamlFieldSchema = z.union([z.string(), z.record(z.string(), z.unknown())], {
  error: 'expected YAML text or an object',
});

/**
 * What the `yaml` holds once parsed. Unknown keys are kept (a type may read keys of its own), the ones crumbs
 * reads are checked.
 */
export const AgentYamlSchema = z.looseObject({
  agent_card: z.optional(
    z.looseObject({
      name: z.optional(z.string()),
      description: z.optional(z.string()),
      modes: z.optional(
        z.array(z.enum(AGENT_MODES, { error: `expected one of ${AGENT_MODES.join(', ')}` }), {
          error: 'expected an array of modes',
        }),
      ),
    }),
  ),
  /** Tool agents: the MCP tools the agent may call (the first is the default). */
  tools: z.optional(
    z
      .array(z.string().check(z.minLength(1), z.maxLength(128)), { error: 'expected an array of tool names' })
      .check(z.minLength(1, 'list at least one tool')),
  ),
  tool_mode: z.optional(z.enum(['sequential', 'parallel'], { error: 'expected "sequential" or "parallel"' })),
  /** Tool agents: let the LLM pick the tool and its arguments from a request's `message`. */
  extract_arguments: z.optional(z.boolean({ error: 'expected true or false' })),
  request_transform: z.optional(TransformSchema),
  response_transform: z.optional(TransformSchema),
  /** Context agents: the token budget of the assembled context (system prompt and sources together). */
  context_budget_tokens: z.optional(z.number().check(z.int(), z.minimum(256), z.maximum(2_000_000))),
  /** Modes (`agent-modes.ts`): the shape of plans and deliverables, and orchestration. */
  plan: z.optional(PlanConfigSchema),
  deliverable: z.optional(DeliverableConfigSchema),
  orchestration: z.optional(OrchestrationConfigSchema),
});
export type AgentYaml = z.output<typeof AgentYamlSchema>;

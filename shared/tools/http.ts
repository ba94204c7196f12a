/**
 * `http`: one HTTP call (method, url, headers, body) with an optional JSONata `response_mapping` over
 * `{ status, headers, body }`.
 *
 * The rule: guard rails come from the tool definition's `config` (never from the request, which a model may write)
 * and the stack; a definition alone never opens the network.
 * - `allowed_hosts`: exact host names, `*.example.com` for subdomains, or `"*"`. Required: no list, no calls.
 * - Every call goes through the guarded fetch of `shared/adapters/network/` (address policy, checked redirects,
 *   `max_redirects` default 3, at most 5). `config.allow_private: true` lifts the address check only on a stack that
 *   allows private network access (`crumbs dev --allow-private-network`, never on AWS); elsewhere it is refused.
 * - `timeout_ms` (default 10 s, never beyond the executor's own deadline) and `max_response_bytes` (default 1 MiB,
 *   at most the operator's `CRUMBS_MAX_RESPONSE_BYTES`): the read stops at the cap with an error saying so.
 * - `retry_on_status` (default 429, 502, 503, 504): answers that say "try later" fail the trigger retriably, so SQS
 *   delivers it again; once the queue gives up (its DLQ), the caller gets a `status: "error"` response.
 * - `headers` / `authentication`: credentials by `secret_ref` of the definition's own workspace, read at call time
 *   and sent over the request's headers of the same name; never in the request, the answer or a log.
 * - `Idempotency-Key`: derived from the request (`shared/domain/idempotency-key.ts`), the same on every attempt,
 *   sent with every method but GET, HEAD and OPTIONS unless the request or the definition names one.
 */
import { readCappedBody } from '#shared/adapters/network/capped-body.ts';
import { guardedFetch, type Transport } from '#shared/adapters/network/guarded-fetch.ts';
import {
  type AddressLookup,
  ALLOW_PRIVATE_NETWORK_HINT,
  isPrivateAddress,
  privateNetworkAllowed,
  responseCeiling,
} from '#shared/adapters/network/network-guard.ts';
import { httpCredentialsOf } from '#shared/domain/definitions.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { withIdempotencyKey } from '#shared/domain/idempotency-key.ts';
import { httpConfigProblems } from '#shared/domain/outbound-limits.ts';
import { dataChecks } from '../adapters/checks/checks.ts';
import { resolveHeaders } from './credentials.ts';
import type { Tool, ToolContext } from './tool.ts';

export interface HttpInput {
  method?: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  response_mapping?: string;
}

export interface HttpResponseOutput {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface HttpToolOptions {
  /** DNS resolution (tests inject one); the system resolver by default. */
  lookup?: AddressLookup;
  /** What sends one hop (tests); undici's fetch, connected to the checked address, by default. */
  fetch?: Transport;
  /**
   * Whether this stack lets a definition's `config.allow_private` open private addresses.
   * @default privateNetworkAllowed(process.env), read once, at the tool's first call (in a Lambda, the first
   *   invocation after the cold start; not at import, which the local stack does before it sets the variable)
   */
  allowPrivateNetwork?: boolean;
  /** The operator's ceiling on `max_response_bytes`; `responseCeiling(process.env)`, read at the first call. */
  ceiling?: number;
  /** This host's own addresses (tests); every interface's by default. */
  ownAddresses?: () => ReadonlySet<string>;
}

/** Kept here for existing importers; the guard is the home of the address check. */
export { isPrivateAddress };

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;

interface HttpConfig {
  allowedHosts: string[];
  allowPrivate: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
  maxRedirects: number;
  retryOnStatus: readonly number[];
}

const DEFAULT_RETRY_ON_STATUS = [429, 502, 503, 504];

function readConfig(
  config: Record<string, unknown>,
  allowPrivateNetwork: boolean,
  ceiling: number,
): HttpConfig {
  const hosts = config.allowed_hosts;
  if (!Array.isArray(hosts) || hosts.length === 0 || !hosts.every((h) => typeof h === 'string')) {
    throw new NonRetriableError(
      'the http tool has no config.allowed_hosts: list the host names it may call (or "*" for any public host)',
    );
  }
  if (config.allow_private === true && !allowPrivateNetwork) {
    throw new NonRetriableError(
      `this tool's config.allow_private asks for private and loopback addresses, which this stack does not allow: ${ALLOW_PRIVATE_NETWORK_HINT}, never a definition`,
    );
  }
  const problem = httpConfigProblems(config, ceiling)[0];
  if (problem !== undefined) throw new NonRetriableError(`${problem.path}: ${problem.message}`);
  const positive = (value: unknown, fallback: number) =>
    typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
  return {
    allowedHosts: (hosts as string[]).map((h) => h.toLowerCase()),
    allowPrivate: config.allow_private === true,
    timeoutMs: positive(config.timeout_ms, DEFAULT_TIMEOUT_MS),
    maxResponseBytes: positive(config.max_response_bytes, Math.min(DEFAULT_MAX_RESPONSE_BYTES, ceiling)),
    maxRedirects: typeof config.max_redirects === 'number' ? config.max_redirects : DEFAULT_MAX_REDIRECTS,
    retryOnStatus:
      Array.isArray(config.retry_on_status) && config.retry_on_status.every((n) => Number.isInteger(n))
        ? (config.retry_on_status as number[])
        : DEFAULT_RETRY_ON_STATUS,
  };
}

function parseBody(bytes: Uint8Array, contentType: string | null): unknown {
  const text = Buffer.from(bytes).toString('utf8');
  if (contentType && /[/+]json\b/i.test(contentType) && text.length > 0) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/** `config.headers` and `config.authentication` of the tool's definition, secrets read from its own workspace. */
async function definitionHeaders(ctx: ToolContext): Promise<Record<string, string>> {
  const { headers, authentication } = httpCredentialsOf(ctx.config);
  if (headers === undefined && authentication === undefined) return {};
  if (ctx.secrets !== undefined) {
    return resolveHeaders('config', ctx.workspace, headers, authentication, ctx.secrets);
  }
  const literal: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (typeof value === 'string') literal[name] = value;
  }
  if (authentication !== undefined || Object.keys(literal).length < Object.keys(headers ?? {}).length) {
    throw new NonRetriableError('this executor has no secret source: the secret_ref headers cannot be read');
  }
  return literal;
}

export function createHttpTool(options: HttpToolOptions = {}): Tool<HttpInput, unknown> {
  const lookup = options.lookup;
  let allowPrivateNetwork = options.allowPrivateNetwork;
  let ceiling = options.ceiling;
  return {
    name: 'http',
    description:
      'Calls an HTTP API: method, url, headers, body; optional response_mapping (JSONata over {status, headers, body}).',
    inputSchema: {
      type: 'object',
      properties: {
        method: { type: 'string', enum: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] },
        url: { type: 'string', minLength: 1 },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        body: {},
        response_mapping: { type: 'string', minLength: 1 },
      },
      required: ['url'],
    },
    async run(input: HttpInput, ctx: ToolContext): Promise<unknown> {
      allowPrivateNetwork ??= privateNetworkAllowed();
      ceiling ??= responseCeiling();
      const config = readConfig(ctx.config, allowPrivateNetwork, ceiling);
      const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(config.timeoutMs)]);
      let url: URL;
      try {
        url = new URL(input.url);
      } catch {
        throw new NonRetriableError(`input.url is not a URL: ${JSON.stringify(input.url)}`);
      }
      const method = (input.method ?? 'GET').toUpperCase();
      const headers: Record<string, string> = { ...input.headers };
      // The definition's headers win over a request's of the same name: a request (a model may write it) cannot
      // replace the credential the definition sends, nor learn it — the answer carries only the response.
      for (const [name, value] of Object.entries(await definitionHeaders(ctx))) {
        for (const given of Object.keys(headers)) {
          if (given.toLowerCase() === name.toLowerCase()) delete headers[given];
        }
        headers[name] = value;
      }
      let body: string | undefined;
      if (input.body !== undefined && input.body !== null) {
        body = typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
        if (
          typeof input.body !== 'string' &&
          !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
        ) {
          headers['content-type'] = 'application/json';
        }
      }

      // The same key on every attempt of this request: a server that honours it applies the call once.
      const sent = withIdempotencyKey(headers, method, ctx.effectKey?.(0));
      const guarded = guardedFetch({
        allowPrivate: config.allowPrivate,
        allowedHosts: config.allowedHosts,
        maxRedirects: config.maxRedirects,
        maxResponseBytes: config.maxResponseBytes,
        ceiling,
        fields: {
          allowedHosts: "the http tool's config.allowed_hosts",
          maxRedirects: 'config.max_redirects',
          maxResponseBytes: 'config.max_response_bytes',
        },
        ...(lookup ? { lookup } : {}),
        ...(options.ownAddresses ? { ownAddresses: options.ownAddresses } : {}),
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
      try {
        const response = await guarded(url, { method, headers: sent, body, signal });
        if (config.retryOnStatus.includes(response.status)) {
          await response.body?.cancel();
          throw new RetriableError(`${url.host} answered ${response.status}; the request will be retried`);
        }
        const bytes = await readCappedBody(response, config.maxResponseBytes, 'config.max_response_bytes');
        const result: HttpResponseOutput = {
          status: response.status,
          headers: Object.fromEntries(response.headers.entries()),
          body: parseBody(bytes, response.headers.get('content-type')),
        };
        if (input.response_mapping === undefined) return result;
        return await (ctx.checks ?? dataChecks()).evaluate(
          ctx.workspace,
          {
            expression: input.response_mapping,
            data: result,
          },
          ctx.signal,
        );
      } catch (error) {
        if (signal.aborted && !ctx.signal.aborted) {
          throw new NonRetriableError(`the request to ${url.host} timed out after ${config.timeoutMs} ms`, {
            cause: error,
          });
        }
        if (error instanceof NonRetriableError || error instanceof RetriableError || signal.aborted)
          throw error;
        throw new NonRetriableError(`the request to ${url.host} failed: ${(error as Error).message}`, {
          cause: error,
        });
      }
    },
  };
}

export const httpTool = createHttpTool();

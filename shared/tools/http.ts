/**
 * `http`: one HTTP call (method, url, headers, body) with an optional JSONata `response_mapping` over
 * `{ status, headers, body }`.
 *
 * Guard rails, all from the tool definition's `config` (never from the request, which a model may write):
 * - `allowed_hosts`: exact host names, `*.example.com` for subdomains, or `"*"`. Required: no list, no calls.
 * - Private, loopback, link-local (incl. the instance metadata address 169.254.169.254), CGNAT, multicast and
 *   reserved addresses are refused, for IPv4 and IPv6 (mapped, NAT64 and 6to4 forms included), unless
 *   `allow_private` is true. Host names are resolved first and every resolved address is checked, so
 *   `localhost` or a public name pointing at 127.0.0.1 is refused too. Redirects are followed by hand (at most
 *   `max_redirects`) and each hop is checked the same way.
 *   Residual risk: global fetch resolves the name again when it connects, so a name whose DNS answer changes in
 *   between (rebinding) is not covered; pinning the address needs an undici dispatcher we do not bundle.
 * - `timeout_ms` (default 10 s, and never beyond the executor's own deadline) and `max_response_bytes`
 *   (default 1 MiB): larger responses are cut off with an error, not truncated silently.
 * - `retry_on_status` (default 429, 502, 503, 504): answers that say "try later" fail the trigger retriably, so SQS
 *   delivers it again; once the queue gives up (its DLQ), the caller gets a `status: "error"` response.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { evaluateJsonata } from './jsonata.ts';
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
  lookup?: (host: string) => Promise<{ address: string; family: number }[]>;
  fetch?: typeof fetch;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** True for addresses an `http` call must not reach unless `allow_private` is set. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const embedded = embeddedIpv4(address);
  if (embedded !== undefined) return blocked.check(embedded, 'ipv4');
  return blocked.check(address, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address. */
function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0xffff || g5 === 0)) {
    // ::ffff:a.b.c.d (mapped) and the deprecated ::a.b.c.d (compatible); :: and ::1 stay IPv6.
    if (g5 === 0xffff || g6 !== 0) return v4(g6, g7);
    return undefined;
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return v4(g6, g7);
  if (g0 === 0x2002) return v4(g1, g2);
  return undefined;
}

function expandIpv6(address: string): number[] | undefined {
  let text = address.split('%')[0] ?? '';
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const parts = dotted[1].split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted[1].length)}${((parts[0] << 8) | parts[1]).toString(16)}:${((parts[2] << 8) | parts[3]).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? left.length !== 8 : missing < 0) return undefined;
  const groups = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right].map((g) =>
    Number.parseInt(g, 16),
  );
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff)
    ? groups
    : undefined;
}

interface HttpConfig {
  allowedHosts: string[];
  allowPrivate: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
  maxRedirects: number;
  retryOnStatus: readonly number[];
}

const DEFAULT_RETRY_ON_STATUS = [429, 502, 503, 504];

function readConfig(config: Record<string, unknown>): HttpConfig {
  const hosts = config.allowed_hosts;
  if (!Array.isArray(hosts) || hosts.length === 0 || !hosts.every((h) => typeof h === 'string')) {
    throw new NonRetriableError(
      'the http tool has no config.allowed_hosts: list the host names it may call (or "*" for any public host)',
    );
  }
  const positive = (value: unknown, fallback: number) =>
    typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
  return {
    allowedHosts: (hosts as string[]).map((h) => h.toLowerCase()),
    allowPrivate: config.allow_private === true,
    timeoutMs: positive(config.timeout_ms, DEFAULT_TIMEOUT_MS),
    maxResponseBytes: positive(config.max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES),
    maxRedirects: typeof config.max_redirects === 'number' ? config.max_redirects : DEFAULT_MAX_REDIRECTS,
    retryOnStatus:
      Array.isArray(config.retry_on_status) && config.retry_on_status.every((n) => Number.isInteger(n))
        ? (config.retry_on_status as number[])
        : DEFAULT_RETRY_ON_STATUS,
  };
}

function hostAllowed(host: string, allowed: readonly string[]): boolean {
  return allowed.some(
    (entry) => entry === '*' || entry === host || (entry.startsWith('*.') && host.endsWith(entry.slice(1))),
  );
}

async function checkTarget(
  url: URL,
  config: HttpConfig,
  lookup: NonNullable<HttpToolOptions['lookup']>,
): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new NonRetriableError(`only http and https URLs are allowed, not ${url.protocol}`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (!hostAllowed(host, config.allowedHosts)) {
    throw new NonRetriableError(
      `host ${host} is not in the http tool's config.allowed_hosts (${config.allowedHosts.join(', ')})`,
    );
  }
  if (config.allowPrivate) return;
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await lookup(host)).map((a) => a.address);
    } catch (error) {
      throw new NonRetriableError(`cannot resolve ${host}: ${(error as Error).message}`);
    }
  }
  const bad = addresses.find(isPrivateAddress);
  if (bad !== undefined || addresses.length === 0) {
    throw new NonRetriableError(
      `${host} resolves to ${bad ?? 'no address'}, a private, loopback or link-local address; set config.allow_private to call it`,
    );
  }
}

async function readCapped(response: Response, cap: number): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > cap) {
    await response.body?.cancel();
    throw new NonRetriableError(
      `the response is ${declared} bytes, more than config.max_response_bytes (${cap})`,
    );
  }
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel();
      throw new NonRetriableError(`the response is larger than config.max_response_bytes (${cap} bytes)`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
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

export function createHttpTool(options: HttpToolOptions = {}): Tool<HttpInput, unknown> {
  const lookup = options.lookup ?? ((host: string) => dnsLookup(host, { all: true, verbatim: true }));
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
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
      const config = readConfig(ctx.config);
      const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(config.timeoutMs)]);
      let url: URL;
      try {
        url = new URL(input.url);
      } catch {
        throw new NonRetriableError(`input.url is not a URL: ${JSON.stringify(input.url)}`);
      }
      let method = (input.method ?? 'GET').toUpperCase();
      const headers: Record<string, string> = { ...input.headers };
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

      try {
        for (let redirects = 0; ; redirects++) {
          await checkTarget(url, config, lookup);
          const response = await doFetch(url, { method, headers, body, redirect: 'manual', signal });
          const location = response.headers.get('location');
          if (response.status >= 300 && response.status < 400 && location) {
            await response.body?.cancel();
            if (redirects >= config.maxRedirects) {
              throw new NonRetriableError(
                `more than ${config.maxRedirects} redirects (config.max_redirects)`,
              );
            }
            url = new URL(location, url);
            if (
              response.status === 303 ||
              ((response.status === 301 || response.status === 302) && method === 'POST')
            ) {
              method = 'GET';
              body = undefined;
            }
            continue;
          }
          if (config.retryOnStatus.includes(response.status)) {
            await response.body?.cancel();
            throw new RetriableError(`${url.host} answered ${response.status}; the request will be retried`);
          }
          const bytes = await readCapped(response, config.maxResponseBytes);
          const result: HttpResponseOutput = {
            status: response.status,
            headers: Object.fromEntries(response.headers.entries()),
            body: parseBody(bytes, response.headers.get('content-type')),
          };
          if (input.response_mapping === undefined) return result;
          return await evaluateJsonata(input.response_mapping, result);
        }
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

/**
 * The one `fetch` for requests a definition causes (the `http` tool, api agents, MCP servers, A2A partners); the
 * design, the address table and the costs are in README.md beside this file. The rule: the request and every
 * redirect hop are checked alike:
 *
 * - http and https only; a redirect from https to http is refused; at most `maxRedirects` (never more than 5);
 * - the host must be on `allowedHosts` and the origin in `allowedOrigins` when they are given;
 * - the name is resolved once (`resolveChecked`) and the connection goes to those checked addresses (an undici
 *   `Agent` whose `connect.lookup` answers them), so DNS rebinding cannot move it; TLS still verifies the host name;
 * - when a redirect changes the origin, only content negotiation headers go along (`CROSS_ORIGIN_HEADERS`):
 *   credentials, headers filled from secrets and any other header a caller set stay with their origin;
 * - the body is capped (`maxResponseBytes`, never above the operator's `CRUMBS_MAX_RESPONSE_BYTES`).
 *
 * The answer is a global `Response`, so SDK clients (MCP, A2A) that get this as their fetch see the class they
 * expect; `within({ allowedOrigins })` binds a call to the origins its definition configured.
 */
import type { Agent } from 'undici';
import { ENV } from '#shared/topology.ts';
import {
  type AddressLookup,
  assertHostAllowed,
  type CheckedHost,
  HostNotAllowedError,
  MAX_REDIRECTS,
  NetworkGuardError,
  RedirectRefusedError,
  ResponseTooLargeError,
  resolveChecked,
  responseCeiling,
} from './network-guard.ts';

/** What a hop may still carry when the origin changes: nothing that could identify or authorize the caller. */
const CROSS_ORIGIN_HEADERS = new Set([
  'accept',
  'accept-language',
  'content-language',
  'content-type',
  'user-agent',
]);

/** Statuses whose responses have no body (a `Response` refuses one). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

export interface GuardScope {
  /** Hosts a call may reach; when absent, every public host. */
  readonly allowedHosts?: readonly string[];
  /** Origins (`https://mcp.example.com:8443`) a call and its redirects must stay on: MCP and A2A calls. */
  readonly allowedOrigins?: readonly string[];
  /** The most bytes a response body may have; never above the operator's ceiling. */
  readonly maxResponseBytes?: number;
  /** Where the limits come from, for error messages (`{ allowedHosts: 'transport.api.allowed_hosts' }`). */
  readonly fields?: {
    readonly allowedHosts?: string;
    readonly allowedOrigins?: string;
    readonly maxRedirects?: string;
    readonly maxResponseBytes?: string;
  };
}

/** One hop's init: the fetch init, and the undici dispatcher that connects to the checked addresses. */
export type HopInit = Omit<RequestInit, 'dispatcher'> & { dispatcher?: Agent };
export type Transport = (url: URL, init: HopInit) => Promise<Response>;

export interface GuardedFetchOptions extends GuardScope {
  /**
   * Whether private addresses may be reached. A function is asked at each request: handlers pass one that reads
   * `privateNetworkAllowed()` at the first call, not at import (the local stack imports before it sets the switch).
   */
  readonly allowPrivate: boolean | (() => boolean);
  /** @default 3, and never more than 5 */
  readonly maxRedirects?: number;
  /** The operator's ceiling; `responseCeiling()` (read at the first request) by default. */
  readonly ceiling?: number;
  readonly lookup?: AddressLookup;
  /** This host's own addresses (tests); `os.networkInterfaces()` by default. */
  readonly ownAddresses?: () => ReadonlySet<string>;
  /** What sends one hop (tests); undici's fetch by default. */
  readonly fetch?: Transport;
}

/** A guarded fetch, and the same fetch bound to a narrower scope. */
export type GuardedFetch = typeof fetch & { within(scope: GuardScope): GuardedFetch };

/** A fetch that checks every request and redirect hop (see the header). */
export function guardedFetch(options: GuardedFetchOptions): GuardedFetch {
  return scopedFetch(options, []);
}

/** `options`, and the host lists of the scopes it narrows (`within`), each of which must allow every hop too. */
function scopedFetch(options: GuardedFetchOptions, outerHosts: readonly GuardScope[]): GuardedFetch {
  const transport: Transport = options.fetch ?? undiciTransport;
  const maxRedirects = Math.min(options.maxRedirects ?? 3, MAX_REDIRECTS);
  const allowPrivate =
    typeof options.allowPrivate === 'function' ? options.allowPrivate : () => options.allowPrivate as boolean;
  let ceiling = options.ceiling;
  const origins = options.allowedOrigins?.map((o) => new URL(o).origin);

  const check = async (url: URL): Promise<CheckedHost> => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new NetworkGuardError(`only http and https URLs may be called, not ${url.protocol}`);
    }
    for (const scope of [...outerHosts, options]) {
      if (scope.allowedHosts !== undefined)
        assertHostAllowed(url, scope.allowedHosts, scope.fields?.allowedHosts);
    }
    if (origins !== undefined && !origins.includes(url.origin)) {
      throw new HostNotAllowedError(
        `${url.origin} is not ${options.fields?.allowedOrigins ?? 'the origin this call is bound to'} (${origins.join(', ')})`,
      );
    }
    return resolveChecked(url, {
      allowPrivate: allowPrivate(),
      ...(options.lookup ? { lookup: options.lookup } : {}),
      ...(options.ownAddresses ? { ownAddresses: options.ownAddresses } : {}),
    });
  };

  const fetchIt = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    ceiling ??= responseCeiling();
    const { cap, capField } = capOf(options, ceiling);
    let url = new URL(input instanceof Request ? input.url : String(input));
    let request = await requestParts(input, init);
    for (let hop = 0; ; hop++) {
      const checked = await check(url);
      const response = await send(transport, url, request, checked);
      const location = response.headers.get('location');
      if (
        response.status < 300 ||
        response.status >= 400 ||
        location === null ||
        init?.redirect === 'manual'
      ) {
        return capped(response, url, cap, capField);
      }
      await response.body?.cancel();
      if (init?.redirect === 'error' || hop >= maxRedirects) {
        const field = options.fields?.maxRedirects;
        throw new RedirectRefusedError(`more than ${maxRedirects} redirects${field ? ` (${field})` : ''}`);
      }
      const next = new URL(location, url);
      if (url.protocol === 'https:' && next.protocol === 'http:') {
        throw new RedirectRefusedError(`${url.host} redirected from https to http (${next.href}): refused`);
      }
      if (next.origin !== url.origin) request = { ...request, headers: crossOriginHeaders(request.headers) };
      const method = request.method.toUpperCase();
      if (
        response.status === 303 ||
        ((response.status === 301 || response.status === 302) && method === 'POST')
      ) {
        const headers = new Headers(request.headers);
        headers.delete('content-type');
        headers.delete('content-length');
        request = { ...request, method: method === 'HEAD' ? 'HEAD' : 'GET', headers, body: null };
      }
      url = next;
    }
  };

  const guarded = fetchIt as GuardedFetch;
  // A scope narrows and never widens: hosts must pass both lists, origins both sets, the smaller cap holds.
  guarded.within = (scope) => {
    const keepCap =
      options.maxResponseBytes !== undefined &&
      (scope.maxResponseBytes === undefined || options.maxResponseBytes < scope.maxResponseBytes);
    const narrowed: GuardedFetchOptions = {
      ...options,
      ...scope,
      fields: {
        ...options.fields,
        ...scope.fields,
        ...(keepCap ? { maxResponseBytes: options.fields?.maxResponseBytes } : {}),
      },
      ...(keepCap ? { maxResponseBytes: options.maxResponseBytes } : {}),
      ...(origins !== undefined
        ? {
            allowedOrigins:
              scope.allowedOrigins === undefined
                ? origins
                : origins.filter((o) => scope.allowedOrigins?.some((s) => new URL(s).origin === o)),
          }
        : {}),
      ...(ceiling !== undefined ? { ceiling } : {}),
    };
    const outer = options.allowedHosts !== undefined && scope.allowedHosts !== undefined ? [options] : [];
    return scopedFetch(narrowed, [...outerHosts, ...outer]);
  };
  return guarded;
}

function capOf(scope: GuardScope, ceiling: number): { cap: number; capField: string } {
  const asked = scope.maxResponseBytes;
  if (asked !== undefined && asked <= ceiling) {
    return { cap: asked, capField: scope.fields?.maxResponseBytes ?? 'the response limit' };
  }
  return { cap: ceiling, capField: `${ENV.maxResponseBytes}, the operator's ceiling` };
}

interface RequestParts {
  readonly method: string;
  readonly headers: Headers;
  readonly body: RequestInit['body'];
  readonly signal: AbortSignal | null;
}

/**
 * The request as parts a hop can send again: a body given as a stream (or a `Request`'s) is read first, since a
 * 307/308 sends it once more and a stream can be read only once. Requests are the caller's own, small data.
 */
async function requestParts(input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<RequestParts> {
  const fromRequest = input instanceof Request ? input : undefined;
  const headers = new Headers(fromRequest?.headers);
  for (const [name, value] of new Headers(init?.headers)) headers.set(name, value);
  let body: RequestInit['body'] = init?.body ?? null;
  if (init?.body === undefined && fromRequest?.body) body = await fromRequest.arrayBuffer();
  if (body instanceof ReadableStream) body = await new Response(body).arrayBuffer();
  return {
    method: init?.method ?? fromRequest?.method ?? 'GET',
    headers,
    body,
    signal: init?.signal ?? fromRequest?.signal ?? null,
  };
}

function crossOriginHeaders(headers: Headers): Headers {
  const kept = new Headers();
  for (const [name, value] of headers) if (CROSS_ORIGIN_HEADERS.has(name)) kept.set(name, value);
  return kept;
}

/**
 * undici, loaded at the first request that goes out: it is the largest module of the functions that can make one
 * (about half of the tool executor's bundle), and most triggers of them make none, so their cold start does not
 * pay for it (`npm run bench:bundles`).
 */
let undici: Promise<typeof import('undici')> | undefined;
function loadUndici(): Promise<typeof import('undici')> {
  undici ??= import('undici');
  return undici;
}

/** One hop: to the checked addresses through an Agent of its own, closed once the response is read. */
async function send(transport: Transport, url: URL, request: RequestParts, checked: CheckedHost) {
  const init: HopInit = {
    method: request.method,
    headers: request.headers,
    body: request.body,
    redirect: 'manual',
    ...(request.signal ? { signal: request.signal } : {}),
  };
  const { Agent } = await loadUndici();
  const agent = new Agent({ connect: { lookup: pinnedLookup(checked) } });
  try {
    const response = await transport(url, { ...init, dispatcher: agent });
    // Closes once the body has been read or cancelled: the connection is not kept for another request.
    agent.close().catch(() => undefined);
    return response;
  } catch (error) {
    agent.destroy().catch(() => undefined);
    throw error;
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | { address: string; family: number }[],
  family?: number,
) => void;

/** A `dns.lookup` that answers only the addresses the guard checked, whatever the name resolves to now. */
function pinnedLookup(checked: CheckedHost) {
  return (
    _hostname: string,
    options: { family?: number | string; all?: boolean },
    callback: LookupCallback,
  ) => {
    const family =
      options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
    const addresses = checked.addresses.filter((a) => !family || a.family === family);
    const first = addresses[0];
    if (first === undefined) {
      callback(
        Object.assign(new Error(`${checked.host} has no checked IPv${family} address`), {
          code: 'ENOTFOUND',
        }),
        [],
      );
      return;
    }
    if (options.all)
      callback(
        null,
        addresses.map((a) => ({ address: a.address, family: a.family })),
      );
    else callback(null, first.address, first.family);
  };
}

async function undiciTransport(url: URL, init: HopInit): Promise<Response> {
  // undici's own RequestInit and Response types differ from the DOM's in details these calls do not use.
  const { fetch } = await loadUndici();
  return (await fetch(url, init as Parameters<typeof fetch>[1])) as unknown as Response;
}

/**
 * The response as a global `Response` whose body stops at `cap` bytes: a declared length above it is refused
 * before anything is read, and a stream that grows past it errors (and cancels the connection).
 */
async function capped(response: Response, url: URL, cap: number, field: string): Promise<Response> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > cap) {
    await response.body?.cancel();
    throw new ResponseTooLargeError(`the response is ${declared} bytes, more than ${field} (${cap})`, cap);
  }
  let body: ReadableStream<Uint8Array> | null = null;
  if (response.body !== null && !NULL_BODY_STATUS.has(response.status)) {
    let size = 0;
    body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          size += chunk.byteLength;
          if (size > cap) {
            controller.error(
              new ResponseTooLargeError(`the response is larger than ${field} (${cap} bytes)`, cap),
            );
            return;
          }
          controller.enqueue(chunk);
        },
      }),
    );
  } else {
    await response.body?.cancel();
  }
  const wrapped = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  Object.defineProperty(wrapped, 'url', { value: url.href });
  return wrapped;
}

/**
 * `fetchLike` bound to `origins`: a guarded fetch checks every request and redirect hop against them; any other
 * fetch (a test's recorder around one) has each request it is handed checked before it goes on.
 */
export function boundToOrigins(
  fetchLike: typeof fetch,
  origins: readonly string[],
  field: string,
): typeof fetch {
  if (isGuarded(fetchLike))
    return fetchLike.within({ allowedOrigins: origins, fields: { allowedOrigins: field } });
  const allowed = origins.map((o) => new URL(o).origin);
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!allowed.includes(url.origin)) {
      throw new HostNotAllowedError(`${url.origin} is not ${field} (${allowed.join(', ')})`);
    }
    return fetchLike(input, init);
  };
}

function isGuarded(fetchLike: typeof fetch): fetchLike is GuardedFetch {
  return typeof (fetchLike as Partial<GuardedFetch>).within === 'function';
}

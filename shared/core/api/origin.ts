/**
 * DNS rebinding protection shared by the protocol servers (MCP `shared/core/mcp/http.ts`, A2A
 * `shared/core/a2a/http.ts`): a browser page tricked into calling the endpoint — through its own origin, or a DNS
 * name rebound to loopback — is refused before the token is looked at.
 */
import type { HttpRequest } from './http.ts';

const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Why a request could come from a page a browser was tricked into sending it from (the MCP transport spec: servers
 * MUST validate Origin), or undefined when it may pass. A present Origin must be the endpoint's own (the origin of
 * the configured `baseUrl`, never one derived from the request's Host) or, for a request over loopback, a loopback origin on any port (the MCP Inspector and other
 * local tools). Over loopback the Host must name loopback too: a rebound name (evil.example resolving to
 * 127.0.0.1) reaches a local server whose pages it could then read, so a non-loopback Host is refused there.
 * Written here rather than the SDK transport's `allowedOrigins` / `allowedHosts`: those compare exact strings, so
 * they cannot say "loopback, any port", and they would run only after the token check.
 */
export function originRefusal(
  request: HttpRequest,
  viaLoopback: boolean,
  baseUrl: string,
): string | undefined {
  if (viaLoopback) {
    const host = hostnameOf(`http://${request.headers.host ?? ''}`);
    if (host === undefined || !LOOPBACK_HOSTNAMES.has(host)) {
      return `Host ${JSON.stringify((request.headers.host ?? '').slice(0, 100))} is not a loopback name; call this local server as localhost or 127.0.0.1`;
    }
  }
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return `Origin ${JSON.stringify(origin.slice(0, 100))} is not allowed`;
  }
  if (url.origin === new URL(baseUrl).origin) return undefined;
  if (
    viaLoopback &&
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    LOOPBACK_HOSTNAMES.has(url.hostname)
  ) {
    return undefined;
  }
  return `Origin ${JSON.stringify(origin.slice(0, 100))} is not allowed`;
}

function hostnameOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

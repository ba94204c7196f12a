/** What the browser tests ask the local stack directly: its HTTP API per workspace, and a bounded wait. */
import { inject } from 'vitest';

export type Json = Record<string, unknown>;

/** A caller of the stack's API in `workspace`, with the all-workspaces token. */
export function http(workspace: string) {
  const { api, token } = inject('e2e');
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const res = await fetch(`${api}/v1/workspaces/${workspace}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  };
}

export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

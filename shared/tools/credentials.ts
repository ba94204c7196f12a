/**
 * Headers with their credentials filled in: literal values as written, `{ secret_ref }` values and the
 * transport's `authentication` read from the SecretSource — always as secrets of `workspace`, the definition's own
 * (the source refuses a name that could reach elsewhere). The result is only ever sent, never written anywhere.
 * Shared by the agents that call out (api, external, tool) and the `http` tool, so it lives on the tools' floor.
 */
import type { Authentication } from '#shared/domain/agent-types.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';

export async function resolveHeaders(
  where: string,
  workspace: string,
  headers: Readonly<Record<string, string | { secret_ref: string }>> | undefined,
  authentication: Authentication | undefined,
  secrets: SecretSource,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    out[name] = typeof value === 'string' ? value : await secrets.secret(workspace, value.secret_ref);
  }
  if (authentication === undefined) return out;
  if (authentication.secret_ref === undefined) {
    throw new NonRetriableError(
      `${where}.authentication.secret_ref is missing: name the secret that holds the ${authentication.type} credential`,
    );
  }
  const secret = await secrets.secret(workspace, authentication.secret_ref);
  switch (authentication.type) {
    case 'bearer':
      out.Authorization = `Bearer ${secret}`;
      break;
    case 'basic':
      out.Authorization = `Basic ${Buffer.from(secret, 'utf8').toString('base64')}`;
      break;
    case 'header':
      out[authentication.header_name ?? 'X-API-Key'] = secret;
      break;
  }
  return out;
}

/**
 * Credentials by reference (`secret_ref` in agent definitions and MCP tool definitions).
 *
 *   On AWS (`CRUMBS_SECRET_SOURCE=secretsmanager`, set by CDK): the Secrets Manager secret
 *   `<CRUMBS_AGENT_SECRET_PREFIX><ref>` (prefix default `crumbs/agents/`, so the functions' IAM grant covers
 *   `crumbs/agents/*` and nothing else). The value is the secret string, or its `value` / `token` / `apiKey` key
 *   when the string is a JSON object.
 *   Locally: the environment variable named by the ref, upper-cased with every other character than A-Z, 0-9
 *   and `_` turned into `_` (`partner/token` → `PARTNER_TOKEN`).
 *
 * Values are cached for the life of the container (five minutes), so a rotated secret is picked up without a
 * deploy. A missing secret is NonRetriableError naming the ref and where it was looked for.
 */
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';

export const SECRET_SOURCE_ENV = 'CRUMBS_SECRET_SOURCE';
export const AGENT_SECRET_PREFIX_ENV = 'CRUMBS_AGENT_SECRET_PREFIX';
export const DEFAULT_AGENT_SECRET_PREFIX = 'crumbs/agents/';
const CACHE_MS = 5 * 60_000;

/** `partner/token` → `PARTNER_TOKEN`. */
export function envNameOf(ref: string): string {
  return ref.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

export class EnvSecrets implements SecretSource {
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {}

  async secret(ref: string): Promise<string> {
    const name = envNameOf(ref);
    const value = this.env[name];
    if (value === undefined || value === '') {
      throw new NonRetriableError(`secret_ref "${ref}": no environment variable ${name} is set for it`);
    }
    return value;
  }
}

export class SecretsManagerSecrets implements SecretSource {
  private readonly cache = new Map<string, { value: Promise<string>; until: number }>();

  constructor(
    private readonly prefix: string = DEFAULT_AGENT_SECRET_PREFIX,
    private readonly client: SecretsManagerClient = new SecretsManagerClient({}),
  ) {}

  secret(ref: string): Promise<string> {
    const cached = this.cache.get(ref);
    if (cached && cached.until > Date.now()) return cached.value;
    const value = this.read(ref);
    value.catch(() => this.cache.delete(ref));
    this.cache.set(ref, { value, until: Date.now() + CACHE_MS });
    return value;
  }

  private async read(ref: string): Promise<string> {
    const name = `${this.prefix}${ref}`;
    let text: string | undefined;
    try {
      text = (await this.client.send(new GetSecretValueCommand({ SecretId: name }))).SecretString;
    } catch (error) {
      if (error instanceof ResourceNotFoundException) {
        throw new NonRetriableError(`secret_ref "${ref}": no Secrets Manager secret ${name}`, {
          cause: error,
        });
      }
      throw new RetriableError(`secret_ref "${ref}": reading ${name} failed`, { cause: error });
    }
    const trimmed = text?.trim() ?? '';
    if (trimmed.startsWith('{')) {
      const parsed = JSON.parse(trimmed) as Record<string, unknown>;
      const v = parsed.value ?? parsed.token ?? parsed.apiKey ?? parsed.api_key;
      if (typeof v === 'string' && v !== '') return v;
      throw new NonRetriableError(`secret_ref "${ref}": ${name} is JSON without a "value" or "token" key`);
    }
    if (trimmed === '') throw new NonRetriableError(`secret_ref "${ref}": ${name} is empty`);
    return trimmed;
  }
}

/** The stack's secret source: Secrets Manager when CDK says so, environment variables otherwise. */
export function secretsFromEnv(env: NodeJS.ProcessEnv = process.env): SecretSource {
  return env[SECRET_SOURCE_ENV] === 'secretsmanager'
    ? new SecretsManagerSecrets(env[AGENT_SECRET_PREFIX_ENV] ?? DEFAULT_AGENT_SECRET_PREFIX)
    : new EnvSecrets(env);
}

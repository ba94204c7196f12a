/**
 * Credentials by reference (`secret_ref` of agents and MCP tools), each workspace's own:
 *   On AWS (`CRUMBS_SECRET_SOURCE=secretsmanager`, set by CDK): the Secrets Manager secret
 *   `<CRUMBS_AGENT_SECRET_PREFIX><workspace>/<name>` (prefix `crumbs/agents/`): its string, or the `value` / `token`
 *   / `apiKey` key of a JSON string.
 *   Locally: the workspace's entry of `{ "<workspace>": { "<name>": "<value>" } }` from `CRUMBS_SECRETS` and the file
 *   `CRUMBS_SECRETS_FILE` (`crumbs dev --secrets`; read again when it changes). Never the process environment: a
 *   definition could otherwise name `OPENAI_API_KEY`, or another workspace's credential.
 * Both refuse again at call time a workspace or name that could reach outside its namespace (`secret-refs.ts`), for
 * a ref that slipped past the rule manager. One function serves every workspace, so its IAM grant is the
 * `crumbs/agents/` prefix (`agentCredentials` in the CDK app) and the per-workspace boundary is this code. Values
 * are cached five minutes per container; a missing secret is NonRetriableError naming where it was looked for.
 */
import { readFileSync, statSync } from 'node:fs';
import {
  DescribeSecretCommand,
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { DEFAULT_AGENT_SECRET_PREFIX, parseEnv, SecretsEnvSchema } from '#shared/config.ts';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError, RetriableError, ValidationError } from '#shared/domain/errors.ts';
import { SECRET_NAME_PATTERN, secretNameProblem } from '#shared/domain/secret-refs.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import { ENV } from '#shared/topology.ts';

export { DEFAULT_AGENT_SECRET_PREFIX };

const CACHE_MS = 5 * 60_000;

/** Refuses, at call time, a workspace or a name that could reach outside the workspace's own namespace. */
export function checkSecretRef(workspace: string, name: string): void {
  if (!WORKSPACE_PATTERN.test(workspace)) {
    throw new NonRetriableError(
      `secret_ref ${JSON.stringify(name)}: ${JSON.stringify(workspace)} is no workspace`,
    );
  }
  const problem = secretNameProblem(name);
  if (problem !== undefined) throw new NonRetriableError(`secret_ref refused: ${problem}`);
}

/** `{ workspace: { name: value } }`, each key checked; held in Maps so no key can be an inherited property. */
export type SecretMapping = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** Parses a local mapping's JSON text; `where` names its origin in every message. */
export function parseSecretMapping(text: string, where: string): SecretMapping {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError([{ path: where, message: `not JSON: ${(error as Error).message}` }]);
  }
  const shape = 'expected a JSON object { "<workspace>": { "<secret name>": "<value>" } }';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError([{ path: where, message: shape }]);
  }
  const issues: { path: string; message: string }[] = [];
  const mapping = new Map<string, Map<string, string>>();
  for (const [workspace, secrets] of Object.entries(value)) {
    if (!WORKSPACE_PATTERN.test(workspace)) {
      issues.push({ path: `${where}.${workspace}`, message: 'not a workspace name' });
      continue;
    }
    if (secrets === null || typeof secrets !== 'object' || Array.isArray(secrets)) {
      issues.push({ path: `${where}.${workspace}`, message: 'expected an object of secret names to values' });
      continue;
    }
    const own = new Map<string, string>();
    for (const [name, secret] of Object.entries(secrets as Record<string, unknown>)) {
      if (!SECRET_NAME_PATTERN.test(name)) {
        issues.push({
          path: `${where}.${workspace}.${name}`,
          message: secretNameProblem(name) ?? 'bad name',
        });
      } else if (typeof secret !== 'string' || secret === '') {
        issues.push({ path: `${where}.${workspace}.${name}`, message: 'expected a non-empty string' });
      } else own.set(name, secret);
    }
    mapping.set(workspace, own);
  }
  if (issues.length > 0) throw new ValidationError(issues);
  return mapping;
}

/** The local mapping: `inline` (CRUMBS_SECRETS), then `file` (CRUMBS_SECRETS_FILE) over it, read when it changes. */
export class LocalSecrets implements SecretSource {
  private readonly inline: SecretMapping;
  private readonly file: string | undefined;
  private fileRead: { stamp: string; mapping: SecretMapping } | undefined;

  constructor(options: { inline?: string | undefined; file?: string | undefined } = {}) {
    this.inline = options.inline ? parseSecretMapping(options.inline, ENV.localSecrets) : new Map();
    this.file = options.file;
  }

  async secret(workspace: string, name: string): Promise<string> {
    checkSecretRef(workspace, name);
    const value = this.lookup(workspace, name);
    if (value === undefined) {
      throw new NonRetriableError(`secret_ref "${name}": ${this.whereIs(workspace, name)} is not set`);
    }
    return value;
  }

  async has(workspace: string, name: string): Promise<boolean> {
    checkSecretRef(workspace, name);
    return this.lookup(workspace, name) !== undefined;
  }

  whereIs(workspace: string, name: string): string {
    const sources = [ENV.localSecrets, ...(this.file ? [this.file] : [])].join(' or ');
    return `the local secret ${JSON.stringify(workspace)} → ${JSON.stringify(name)} (${sources})`;
  }

  private lookup(workspace: string, name: string): string | undefined {
    return this.fromFile().get(workspace)?.get(name) ?? this.inline.get(workspace)?.get(name);
  }

  private fromFile(): SecretMapping {
    if (this.file === undefined) return new Map();
    let stamp: string;
    try {
      const stat = statSync(this.file);
      stamp = `${stat.mtimeMs}:${stat.size}`;
    } catch {
      return new Map();
    }
    if (this.fileRead?.stamp !== stamp) {
      try {
        this.fileRead = { stamp, mapping: parseSecretMapping(readFileSync(this.file, 'utf8'), this.file) };
      } catch (error) {
        throw new NonRetriableError(
          `the local secrets file ${this.file} is unusable: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
    }
    return this.fileRead.mapping;
  }
}

export class SecretsManagerSecrets implements SecretSource {
  private readonly cache = new Map<string, { value: Promise<string>; until: number }>();

  constructor(
    private readonly prefix: string = DEFAULT_AGENT_SECRET_PREFIX,
    private readonly client: SecretsManagerClient = new SecretsManagerClient({}),
  ) {}

  /** `crumbs/agents/<workspace>/<name>`: the name is checked first, so it can only be this workspace's. */
  secretId(workspace: string, name: string): string {
    checkSecretRef(workspace, name);
    return `${this.prefix}${workspace}/${name}`;
  }

  whereIs(workspace: string, name: string): string {
    return `the Secrets Manager secret ${this.prefix}${workspace}/${name}`;
  }

  async secret(workspace: string, name: string): Promise<string> {
    const id = this.secretId(workspace, name);
    const cached = this.cache.get(id);
    if (cached && cached.until > Date.now()) return cached.value;
    const value = this.read(id, name);
    value.catch(() => this.cache.delete(id));
    this.cache.set(id, { value, until: Date.now() + CACHE_MS });
    return value;
  }

  async has(workspace: string, name: string): Promise<boolean> {
    const id = this.secretId(workspace, name);
    try {
      const out = await this.client.send(new DescribeSecretCommand({ SecretId: id }));
      // A secret scheduled for deletion cannot be read.
      return out.DeletedDate === undefined;
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return false;
      throw new RetriableError(`secret_ref "${name}": describing ${id} failed`, { cause: error });
    }
  }

  private async read(id: string, ref: string): Promise<string> {
    let text: string | undefined;
    try {
      text = (await this.client.send(new GetSecretValueCommand({ SecretId: id }))).SecretString;
    } catch (error) {
      if (error instanceof ResourceNotFoundException) {
        throw new NonRetriableError(`secret_ref "${ref}": no Secrets Manager secret ${id}`, { cause: error });
      }
      throw new RetriableError(`secret_ref "${ref}": reading ${id} failed`, { cause: error });
    }
    const trimmed = text?.trim() ?? '';
    if (trimmed.startsWith('{')) {
      const parsed = JSON.parse(trimmed) as Record<string, unknown>;
      const v = parsed.value ?? parsed.token ?? parsed.apiKey ?? parsed.api_key;
      if (typeof v === 'string' && v !== '') return v;
      throw new NonRetriableError(`secret_ref "${ref}": ${id} is JSON without a "value" or "token" key`);
    }
    if (trimmed === '') throw new NonRetriableError(`secret_ref "${ref}": ${id} is empty`);
    return trimmed;
  }
}

/** The stack's secret source: Secrets Manager when CDK says so, the local per-workspace mapping otherwise. */
export function secretsFromEnv(env: NodeJS.ProcessEnv = process.env): SecretSource {
  const parsed = parseEnv(SecretsEnvSchema, env);
  return parsed[ENV.secretSource] === 'secretsmanager'
    ? new SecretsManagerSecrets(parsed[ENV.agentSecretPrefix])
    : new LocalSecrets({ inline: parsed[ENV.localSecrets], file: parsed[ENV.localSecretsFile] });
}

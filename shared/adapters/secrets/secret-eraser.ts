/**
 * Removing a deleted workspace's credentials (`SecretEraser`), where `secret-source.ts` reads them:
 *   On AWS: every Secrets Manager secret named `<prefix><workspace>/…`, found with ListSecrets (its name filter is
 *   a case-insensitive prefix match, so each name is checked again exactly) and deleted with Secrets Manager's
 *   7-day recovery window (the shortest): a workspace deleted by mistake can have its credentials restored
 *   (`aws secretsmanager restore-secret`) for a week. A secret scheduled for deletion is neither listed nor readable.
 *   Locally: the workspace's entry of the secrets file (`CRUMBS_SECRETS_FILE`), rewritten without it (a temporary
 *   file renamed over it, so a crash leaves the old or the new file). `CRUMBS_SECRETS` is the process's
 *   configuration, not data: a mapping there is reported, not changed.
 */
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import {
  DeleteSecretCommand,
  ListSecretsCommand,
  type ListSecretsCommandOutput,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { DEFAULT_AGENT_SECRET_PREFIX, parseEnv, SecretsEnvSchema } from '#shared/config.ts';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type { SecretEraser } from '#shared/ports/workspace-deletion.ts';
import { ENV } from '#shared/topology.ts';
import { parseSecretMapping } from './secret-source.ts';

/** Secrets listed (and deleted) per call: each DeleteSecret is one request. */
const PAGE = 20;
export const RECOVERY_WINDOW_DAYS = 7;

function checkWorkspace(workspace: string): void {
  if (!WORKSPACE_PATTERN.test(workspace)) {
    throw new NonRetriableError(`${JSON.stringify(workspace)} is no workspace`);
  }
}

export class SecretsManagerEraser implements SecretEraser {
  constructor(
    private readonly prefix: string = DEFAULT_AGENT_SECRET_PREFIX,
    private readonly client: SecretsManagerClient = new SecretsManagerClient({}),
  ) {}

  async erase(workspace: string, cursor: string | undefined) {
    checkWorkspace(workspace);
    const own = `${this.prefix}${workspace}/`;
    let out: ListSecretsCommandOutput;
    try {
      out = await this.client.send(
        new ListSecretsCommand({
          Filters: [{ Key: 'name', Values: [own] }],
          MaxResults: PAGE,
          ...(cursor !== undefined ? { NextToken: cursor } : {}),
        }),
      );
    } catch (error) {
      throw new RetriableError(`listing the secrets under ${own} failed`, { cause: error });
    }
    const erased: string[] = [];
    for (const secret of out.SecretList ?? []) {
      const name = secret.Name ?? '';
      // The filter ignores case: only this workspace's own names, exactly.
      if (!name.startsWith(own)) continue;
      try {
        await this.client.send(
          new DeleteSecretCommand({
            SecretId: secret.ARN ?? name,
            RecoveryWindowInDays: RECOVERY_WINDOW_DAYS,
          }),
        );
      } catch (error) {
        if (error instanceof ResourceNotFoundException) continue;
        throw new RetriableError(`deleting the secret ${name} failed`, { cause: error });
      }
      erased.push(name.slice(own.length));
    }
    return {
      erased,
      ...(out.NextToken ? { cursor: out.NextToken } : {}),
      notes:
        erased.length > 0
          ? [
              `the secrets ${erased.map((n) => own + n).join(', ')} are scheduled for deletion in ${RECOVERY_WINDOW_DAYS} days (restorable until then)`,
            ]
          : [],
    };
  }
}

export class LocalSecretEraser implements SecretEraser {
  constructor(private readonly options: { inline?: string | undefined; file?: string | undefined } = {}) {}

  async erase(workspace: string) {
    checkWorkspace(workspace);
    const notes: string[] = [];
    const inline = this.options.inline
      ? parseSecretMapping(this.options.inline, ENV.localSecrets).get(workspace)
      : undefined;
    if (inline !== undefined && inline.size > 0) {
      notes.push(
        `${ENV.localSecrets} still maps secrets of ${workspace} (${[...inline.keys()].join(', ')}): it is the process's configuration; remove them there`,
      );
    }
    const file = this.options.file;
    if (file === undefined || !exists(file)) return { erased: [], notes };
    const text = readFileSync(file, 'utf8');
    // Checked like the reader checks it, then edited as plain JSON so other workspaces' entries stay verbatim.
    const own = parseSecretMapping(text, file).get(workspace);
    if (own === undefined) return { erased: [], notes };
    const value = JSON.parse(text) as Record<string, unknown>;
    delete value[workspace];
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: statSync(file).mode & 0o777 });
    renameSync(temporary, file);
    return { erased: [...own.keys()], notes };
  }
}

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

/** The eraser for where this process's secret source reads (`secretsFromEnv`). */
export function secretEraserFromEnv(env: NodeJS.ProcessEnv = process.env): SecretEraser {
  const parsed = parseEnv(SecretsEnvSchema, env);
  return parsed[ENV.secretSource] === 'secretsmanager'
    ? new SecretsManagerEraser(parsed[ENV.agentSecretPrefix])
    : new LocalSecretEraser({ inline: parsed[ENV.localSecrets], file: parsed[ENV.localSecretsFile] });
}

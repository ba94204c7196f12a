/**
 * The guardrails room as a function builds it once: the workspace's policies read from the table, the thread vault
 * in the table sealed with the key `CRUMBS_GUARDRAIL_KEY` gives (`crumbs dev` sets it) or the stack's secret
 * `CRUMBS_GUARDRAIL_KEY_SECRET` holds (on AWS; read once per cold start), and Bedrock's `ApplyGuardrail` for the
 * policies that name a Bedrock guardrail.
 */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Guardrails } from '#shared/ports/guardrails.ts';
import type { Log } from '#shared/ports/log.ts';
import { bedrockGuardrail } from '#shared/rooms/guardrails/bedrock-guardrail.ts';
import { DynamoVaultStore } from '#shared/rooms/guardrails/dynamo-vault-store.ts';
import { createGuardrails } from '#shared/rooms/guardrails/room.ts';
import { type KeyRing, LocalKeyRing, Vault } from '#shared/rooms/guardrails/vault.ts';
import { ENV } from '#shared/topology.ts';

let keyRing: Promise<KeyRing> | undefined;

/** The vault key: the environment's, else the stack's secret's. Fails (and the turn retries) when neither is set. */
function keyRingFromEnv(env: NodeJS.ProcessEnv): Promise<KeyRing> {
  keyRing ??= (async () => {
    const inline = env[ENV.guardrailKey];
    if (inline) return LocalKeyRing.fromBase64(inline);
    const secretId = env[ENV.guardrailKeySecret];
    if (!secretId) throw new Error(`guardrails need ${ENV.guardrailKey} or ${ENV.guardrailKeySecret}`);
    const out = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: secretId }));
    return LocalKeyRing.fromBase64(out.SecretString ?? '');
  })();
  keyRing.catch(() => {
    keyRing = undefined;
  });
  return keyRing;
}

/** A key ring that reads its key on first use (most invocations mask nothing and never need it). */
function lazyKeyRing(env: NodeJS.ProcessEnv): KeyRing {
  return {
    seal: async (plain, aad) => (await keyRingFromEnv(env)).seal(plain, aad),
    open: async (sealed, aad) => (await keyRingFromEnv(env)).open(sealed, aad),
  };
}

export function guardrailsFromEnv(
  store: Pick<BreadcrumbStore, 'list' | 'getVersion'>,
  log: Log,
  env: NodeJS.ProcessEnv = process.env,
): Guardrails {
  const tableName = env[ENV.tableName];
  if (!tableName) throw new Error(`${ENV.tableName} is not set`);
  return createGuardrails({
    store,
    vault: new Vault(new DynamoVaultStore(tableName), lazyKeyRing(env)),
    bedrock: bedrockGuardrail(new BedrockRuntimeClient({})),
    log,
  });
}

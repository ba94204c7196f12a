import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeSecretCommand,
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  LocalSecrets,
  SecretsManagerSecrets,
  secretsFromEnv,
} from '#shared/adapters/secrets/secret-source.ts';
import { NonRetriableError, ValidationError } from '#shared/domain/errors.ts';

/** Names a definition of team-b might use to reach what is not its own. */
const OUTSIDE = [
  '../team-a/partner-token',
  'team-a/partner-token',
  '..',
  'a/../../team-a/x',
  '/crumbs/agents/team-a/partner-token',
  'arn:aws:secretsmanager:eu-west-1:123456789012:secret:crumbs/agents/team-a/partner-token-AbCdEf',
  'crumbs/llm/openai',
  'partner token',
  '',
];

const MAPPING = JSON.stringify({
  'team-a': { 'partner-token': 'team-a-s3cret' },
  'team-b': { 'own-token': 'team-b-s3cret' },
});

describe('LocalSecrets (crumbs dev)', () => {
  it("reads a workspace's own secret, and no other workspace's, nor the process environment", async () => {
    const secrets = new LocalSecrets({ inline: MAPPING });
    expect(await secrets.secret('team-b', 'own-token')).toBe('team-b-s3cret');
    await expect(secrets.secret('team-b', 'partner-token')).rejects.toThrow(NonRetriableError);
    await expect(secrets.secret('team-b', 'partner-token')).rejects.toThrow(/"team-b" → "partner-token"/);
    process.env.OPENAI_API_KEY_FOR_TEST = 'host-key';
    try {
      await expect(secrets.secret('team-b', 'OPENAI_API_KEY_FOR_TEST')).rejects.toThrow(/is not set/);
      expect(await secrets.has('team-b', 'OPENAI_API_KEY_FOR_TEST')).toBe(false);
    } finally {
      delete process.env.OPENAI_API_KEY_FOR_TEST;
    }
    expect(await secrets.has('team-a', 'partner-token')).toBe(true);
    expect(await secrets.has('team-b', 'partner-token')).toBe(false);
  });

  it('refuses, at call time, every name that is a path, an ARN or not a plain word', async () => {
    const secrets = new LocalSecrets({ inline: MAPPING });
    for (const name of OUTSIDE) {
      await expect(secrets.secret('team-b', name), name).rejects.toThrow(/secret_ref refused/);
      await expect(secrets.has('team-b', name), name).rejects.toThrow(/secret_ref refused/);
    }
    // Nor can a workspace name smuggle a path in.
    await expect(secrets.secret('team-b/../team-a', 'partner-token')).rejects.toThrow(/is no workspace/);
  });

  it('keeps keys such as __proto__ and constructor as data, never as inherited properties', async () => {
    const secrets = new LocalSecrets({ inline: '{"team-b": {"constructor": "c"}}' });
    expect(await secrets.secret('team-b', 'constructor')).toBe('c');
    expect(await secrets.has('team-b', 'toString')).toBe(false);
    expect(await secrets.has('constructor', 'constructor')).toBe(false);
  });

  it('refuses a mapping whose workspace or name could not be one, naming the key', () => {
    expect(() => new LocalSecrets({ inline: '{"team-b": {"a/b": "x"}}' })).toThrow(ValidationError);
    expect(() => new LocalSecrets({ inline: '{"../x": {"a": "x"}}' })).toThrow(ValidationError);
    expect(() => new LocalSecrets({ inline: '{"team-b": {"a": 1}}' })).toThrow(ValidationError);
    expect(() => new LocalSecrets({ inline: '["team-b"]' })).toThrow(ValidationError);
    expect(() => new LocalSecrets({ inline: 'not json' })).toThrow(ValidationError);
  });

  describe('from a file', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'crumbs-secrets-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('reads the file again when it changes, and over the inline mapping', async () => {
      const file = join(dir, 'secrets.json');
      const secrets = new LocalSecrets({ inline: MAPPING, file });
      // Absent: only the inline mapping.
      expect(await secrets.secret('team-b', 'own-token')).toBe('team-b-s3cret');
      expect(await secrets.has('team-c', 'x')).toBe(false);
      writeFileSync(file, JSON.stringify({ 'team-c': { x: 'one' }, 'team-b': { 'own-token': 'file-wins' } }));
      expect(await secrets.secret('team-c', 'x')).toBe('one');
      expect(await secrets.secret('team-b', 'own-token')).toBe('file-wins');
      writeFileSync(file, JSON.stringify({ 'team-c': { x: 'two, a longer value' } }));
      expect(await secrets.secret('team-c', 'x')).toBe('two, a longer value');
      writeFileSync(file, '{ broken');
      await expect(secrets.secret('team-c', 'x')).rejects.toThrow(/secrets file .* is unusable/);
    });
  });

  it('is what the stack uses unless CDK says secretsmanager', () => {
    expect(secretsFromEnv({ CRUMBS_SECRETS: MAPPING })).toBeInstanceOf(LocalSecrets);
    expect(secretsFromEnv({ CRUMBS_SECRET_SOURCE: 'secretsmanager' })).toBeInstanceOf(SecretsManagerSecrets);
    expect(() => secretsFromEnv({ CRUMBS_SECRET_SOURCE: 'env' })).toThrow(ValidationError);
  });
});

describe('SecretsManagerSecrets (AWS)', () => {
  const sm = mockClient(SecretsManagerClient);
  afterEach(() => sm.reset());

  it("reads crumbs/agents/<workspace>/<name>: the workspace's own namespace", async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: '{"token":"t0k"}' });
    const secrets = new SecretsManagerSecrets('crumbs/agents/', new SecretsManagerClient({}));
    expect(await secrets.secret('team-b', 'own-token')).toBe('t0k');
    expect(sm.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input.SecretId)).toEqual([
      'crumbs/agents/team-b/own-token',
    ]);
  });

  it('refuses a path, an ARN or another workspace before asking Secrets Manager anything', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'leaked' });
    sm.on(DescribeSecretCommand).resolves({ Name: 'x' });
    const secrets = new SecretsManagerSecrets('crumbs/agents/', new SecretsManagerClient({}));
    for (const name of OUTSIDE) {
      await expect(secrets.secret('team-b', name), name).rejects.toThrow(/secret_ref refused/);
      await expect(secrets.has('team-b', name), name).rejects.toThrow(/secret_ref refused/);
    }
    expect(sm.calls()).toHaveLength(0);
  });

  it('says whether a secret exists with DescribeSecret, never reading its value', async () => {
    sm.on(DescribeSecretCommand, { SecretId: 'crumbs/agents/team-b/own-token' }).resolves({ Name: 'x' });
    sm.on(DescribeSecretCommand, { SecretId: 'crumbs/agents/team-b/gone' }).resolves({
      Name: 'gone',
      DeletedDate: new Date(),
    });
    sm.on(DescribeSecretCommand, { SecretId: 'crumbs/agents/team-b/missing' }).rejects(
      new ResourceNotFoundException({ message: 'no', $metadata: {} }),
    );
    const secrets = new SecretsManagerSecrets('crumbs/agents/', new SecretsManagerClient({}));
    expect(await secrets.has('team-b', 'own-token')).toBe(true);
    expect(await secrets.has('team-b', 'gone')).toBe(false);
    expect(await secrets.has('team-b', 'missing')).toBe(false);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });
});

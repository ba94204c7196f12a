/**
 * Removing a deleted workspace's credentials: locally its entry of the secrets file goes and every other
 * workspace's stays verbatim; on AWS only secrets named exactly `<prefix><workspace>/…` are deleted (ListSecrets'
 * name filter ignores case), with the recovery window, page by page.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteSecretCommand,
  ListSecretsCommand,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import {
  LocalSecretEraser,
  RECOVERY_WINDOW_DAYS,
  SecretsManagerEraser,
} from '#shared/adapters/secrets/secret-eraser.ts';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';

describe('LocalSecretEraser', () => {
  it("removes the workspace's entry from the file, keeps the others, and reports an inline mapping it cannot change", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'crumbs-secrets-')), 'secrets.json');
    writeFileSync(file, JSON.stringify({ gone: { key: 'a', other: 'b' }, kept: { key: 'c' } }), {
      mode: 0o600,
    });
    const inline = JSON.stringify({ gone: { env_key: 'x' } });
    const out = await new LocalSecretEraser({ inline, file }).erase('gone');
    expect(out.erased.sort()).toEqual(['key', 'other']);
    expect(out.notes.join()).toContain('env_key');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ kept: { key: 'c' } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const reader = new LocalSecrets({ file });
    expect(await reader.has('gone', 'key')).toBe(false);
    expect(await reader.has('kept', 'key')).toBe(true);
    // Again: nothing left to remove, nothing changes.
    expect((await new LocalSecretEraser({ file }).erase('gone')).erased).toEqual([]);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ kept: { key: 'c' } });
  });

  it('does nothing without a file and refuses a name that is no workspace', async () => {
    expect(await new LocalSecretEraser({}).erase('ws')).toEqual({ erased: [], notes: [] });
    await expect(new LocalSecretEraser({}).erase('../x')).rejects.toThrow('no workspace');
  });
});

describe('SecretsManagerEraser', () => {
  it("deletes only the workspace's own names, with the recovery window, and goes on from the page token", async () => {
    const sent: unknown[] = [];
    const client = {
      send: async (command: unknown) => {
        sent.push(command);
        if (command instanceof ListSecretsCommand) {
          return {
            SecretList: [
              { Name: 'crumbs/agents/ws/key', ARN: 'arn:1' },
              // The name filter is a case-insensitive prefix: these are other workspaces'.
              { Name: 'crumbs/agents/WS/key', ARN: 'arn:2' },
              { Name: 'crumbs/agents/ws-2/key', ARN: 'arn:3' },
            ],
            NextToken: command.input.NextToken === undefined ? 'page-2' : undefined,
          };
        }
        return {};
      },
    } as unknown as SecretsManagerClient;
    const eraser = new SecretsManagerEraser('crumbs/agents/', client);
    const first = await eraser.erase('ws', undefined);
    expect(first.erased).toEqual(['key']);
    expect(first.cursor).toBe('page-2');
    const list = sent[0] as ListSecretsCommand;
    expect(list.input.Filters).toEqual([{ Key: 'name', Values: ['crumbs/agents/ws/'] }]);
    const deletes = sent.filter((c): c is DeleteSecretCommand => c instanceof DeleteSecretCommand);
    expect(deletes.map((d) => [d.input.SecretId, d.input.RecoveryWindowInDays])).toEqual([
      ['arn:1', RECOVERY_WINDOW_DAYS],
    ]);
    const second = await eraser.erase('ws', first.cursor);
    expect(second.cursor).toBeUndefined();
    expect((sent[2] as ListSecretsCommand).input.NextToken).toBe('page-2');
  });
});

/**
 * The local stack's guardrail vault key (`ENV.guardrailKey`): the one the environment gives, else the one kept in
 * the data directory (`guardrail.key`, made on first start, readable by its owner only), else a new one for this
 * run (a stack without a data directory keeps nothing across runs either).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export async function guardrailKeyOf(
  given: string | undefined,
  dataDir: string | undefined,
): Promise<string> {
  if (given) {
    if (Buffer.from(given, 'base64').length !== 32)
      throw new Error('the guardrail key must be 32 bytes, base64');
    return given;
  }
  if (dataDir === undefined) return randomBytes(32).toString('base64');
  const file = join(dataDir, 'guardrail.key');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(32).toString('base64');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600, flag: 'wx' }).catch(
    async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    },
  );
  return (await readFile(file, 'utf8')).trim();
}

/**
 * Where `crumbs login` keeps what it signed in with: one session per API endpoint (the sign-in settings it used and
 * the tokens) in `credentials.json` in the user's config directory, readable by its owner only — the directory
 * 0700, the file 0600, written whole to a temporary file of the same mode and renamed over the old one, so a crash
 * leaves the old file or the new one, never half of either, and no moment where another user could read it.
 *
 * `storedToken` is what every other command sends when neither `--token` nor `CRUMBS_TOKEN` is given: the session's
 * token, refreshed with its refresh token when it is about to expire (and written back, the file read again first in
 * case another `crumbs` process refreshed meanwhile).
 */
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  type AvailableSignIn,
  bearerToken,
  expiresSoon,
  type FetchLike,
  refreshTokens,
  SignInError,
  type TokenSet,
} from '#shared/client/sign-in.ts';
import { AvailableSignInSchema } from '#shared/core/api/sign-in.ts';
import * as z from '#shared/domain/zod.ts';
import { ENV } from '#shared/topology.ts';
import { InputError } from './args.ts';

export const CREDENTIALS_FILE = 'credentials.json';

const TokenSetSchema = z.object({
  access_token: z.string(),
  id_token: z.optional(z.string()),
  refresh_token: z.optional(z.string()),
  expires_at: z.number(),
});

const SessionSchema = z.object({
  sign_in: AvailableSignInSchema,
  tokens: TokenSetSchema,
  /** Whom the tokens name (email, username or sub), for `crumbs login`'s and `crumbs logout`'s messages. */
  user: z.string(),
  signed_in_at: z.string(),
});
export type Session = z.infer<typeof SessionSchema>;

const FileSchema = z.object({ version: z.literal(1), sessions: z.record(z.string(), SessionSchema) });
type CredentialsFile = z.infer<typeof FileSchema>;

/** The user's config directory for crumbs: `CRUMBS_CONFIG_DIR`, else the platform's convention. */
export function configDir(env: NodeJS.ProcessEnv): string {
  if (env[ENV.configDir]) return env[ENV.configDir] as string;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, 'crumbs');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'crumbs');
  if (process.platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'crumbs');
  return join(homedir(), '.config', 'crumbs');
}

/** Sessions are kept per endpoint, written as the user gives it less trailing slashes. */
export function endpointKey(endpoint: string): string {
  return endpoint.replace(/\/+$/, '');
}

export class CredentialStore {
  readonly path: string;

  constructor(readonly dir: string) {
    this.path = join(dir, CREDENTIALS_FILE);
  }

  static of(env: NodeJS.ProcessEnv): CredentialStore {
    return new CredentialStore(configDir(env));
  }

  async get(endpoint: string): Promise<Session | undefined> {
    return (await this.read()).sessions[endpointKey(endpoint)];
  }

  async put(endpoint: string, session: Session): Promise<void> {
    const file = await this.read();
    file.sessions[endpointKey(endpoint)] = session;
    await this.write(file);
  }

  /** Removes the endpoint's session; false when there was none. */
  async delete(endpoint: string): Promise<boolean> {
    const file = await this.read();
    const key = endpointKey(endpoint);
    if (!(key in file.sessions)) return false;
    delete file.sessions[key];
    if (Object.keys(file.sessions).length === 0) await rm(this.path, { force: true });
    else await this.write(file);
    return true;
  }

  private async read(): Promise<CredentialsFile> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, sessions: {} };
      throw new InputError(`cannot read ${this.path}: ${(error as Error).message}`, { cause: error });
    }
    // A file someone made readable to others is put back to the owner only before its tokens are used.
    await chmod(this.path, 0o600).catch(() => undefined);
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new InputError(`${this.path} is not JSON: remove it and run \`crumbs login\` again`);
    }
    const parsed = FileSchema.safeParse(raw);
    if (!parsed.success) {
      throw new InputError(
        `${this.path} is not a crumbs credentials file: remove it and run \`crumbs login\` again`,
      );
    }
    return parsed.data;
  }

  private async write(file: CredentialsFile): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const temporary = `${this.path}.${process.pid}.${Date.now()}.tmp`;
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(file, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.path);
    // `open`'s mode is filtered by the umask, which can only take bits away: 0600 is set either way.
    await chmod(this.path, 0o600);
  }
}

/**
 * The token to send `endpoint`, from its stored session, refreshed when it is about to expire; undefined when there
 * is no session. Throws an InputError that says to sign in again when the refresh token no longer works.
 */
export function storedToken(
  store: CredentialStore,
  endpoint: string,
  fetchImpl?: FetchLike,
  now: () => number = Date.now,
): () => Promise<string | undefined> {
  let current: TokenSet | undefined;
  return async () => {
    if (current !== undefined && !expiresSoon(current, now())) return bearerToken(current);
    const session = await store.get(endpoint);
    if (session === undefined) return undefined;
    if (!expiresSoon(session.tokens, now())) {
      current = session.tokens;
      return bearerToken(current);
    }
    const refresh = session.tokens.refresh_token;
    if (refresh === undefined) {
      throw new InputError(
        `your sign-in to ${endpointKey(endpoint)} expired and cannot be refreshed: run \`crumbs login\``,
      );
    }
    let tokens: TokenSet;
    try {
      tokens = await refreshTokens(session.sign_in, refresh, fetchImpl, now);
    } catch (error) {
      if (error instanceof SignInError && error.signedOut) {
        throw new InputError(
          `you are signed out of ${endpointKey(endpoint)} (the refresh token was revoked or has expired): run \`crumbs login\``,
        );
      }
      throw new InputError(
        `cannot refresh your sign-in to ${endpointKey(endpoint)}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    await store.put(endpoint, { ...session, tokens });
    current = tokens;
    return bearerToken(tokens);
  };
}

export type { AvailableSignIn };

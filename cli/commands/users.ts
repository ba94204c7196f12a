/**
 * `crumbs users add|grant|revoke|ls`: an administrator manages who may sign in to a stack's own user pool (the one
 * crumbs creates when no issuer is given) and which workspaces each person may use — the pool's groups, named as
 * the workspaces, read from the `cognito:groups` claim of both token types. With the administrator's AWS
 * credentials (the SDK's default chain), never a crumbs token: the pool's admin API is IAM's.
 *
 * The pool is the endpoint's own (its issuer, from `/ui/sign-in.json`) unless `--user-pool-id` names one. `revoke`
 * signs the person out everywhere (AdminUserGlobalSignOut: every refresh token revoked), and says how long an access
 * token already issued stays good — the API's authorizer checks signature and expiry, not revocation.
 */
import {
  AdminAddUserToGroupCommand,
  AdminCreateUserCommand,
  AdminRemoveUserFromGroupCommand,
  AdminUserGlobalSignOutCommand,
  CognitoIdentityProviderClient,
  CreateGroupCommand,
  DescribeUserPoolClientCommand,
  paginateAdminListGroupsForUser,
  paginateListGroups,
  paginateListUsers,
  paginateListUsersInGroup,
  type UserType,
} from '@aws-sdk/client-cognito-identity-provider';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import { ENV } from '#shared/topology.ts';
import {
  type Command,
  type CommandContext,
  InputError,
  optString,
  printJson,
  strings,
  UsageError,
} from '../args.ts';
import { formatTable } from '../format.ts';
import { readSignIn } from './login.ts';

const COGNITO_ISSUER =
  /^https:\/\/cognito-idp\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\/([a-z0-9-]+_[A-Za-z0-9]+)\/?$/;
const POOL_ID = /^([a-z]{2}(?:-[a-z]+)+-\d)_[A-Za-z0-9]+$/;
const EMAIL = /^[^@\s]{1,64}@[^@\s]{1,255}$/;

export const usersCommand: Command = {
  name: 'users',
  summary: 'manage who may sign in to the stack’s user pool, and their workspaces (AWS credentials)',
  usage: `Usage: crumbs users add <email> --workspace WS [--workspace WS …]
       crumbs users grant <email> --workspace WS [--workspace WS …]
       crumbs users revoke <email> (--workspace WS [--workspace WS …] | --all)
       crumbs users ls [--workspace WS]

For the user pool a stack creates when it has no crumbs:jwtIssuer. A person's workspaces are the pool's groups
(one per workspace, "*" for every workspace), which their tokens carry in cognito:groups. Runs with your AWS
credentials and region (the SDK's default chain: AWS_PROFILE, environment, SSO …).

  add      invites the person (Cognito emails a temporary password; they choose their own at the first sign-in)
           and grants the workspaces
  grant    adds workspaces (creating their groups); tokens issued from then on carry them (\`crumbs login\` again,
           or wait for the next refresh)
  revoke   removes workspaces (--all: every one) and signs the person out everywhere: every refresh token is
           revoked at once; an access token already issued stays valid until it expires (the app client's token
           lifetime, crumbs:tokenValidityMinutes: 15 minutes unless set), because the API checks its signature
           and expiry, not revocation
  ls       everyone in the pool with their status and workspaces (--workspace: only that workspace's people)

Flags:
  --workspace WS      a workspace (repeatable)
  --all               revoke: every workspace the person has
  --user-pool-id ID   the pool (env ${ENV.userPoolId}); default: the pool that issues the endpoint's tokens`,
  options: {
    workspace: { type: 'string', short: 'w', multiple: true },
    all: { type: 'boolean' },
    'user-pool-id': { type: 'string' },
  },
  async run(ctx) {
    const [sub, email, extra] = ctx.positionals;
    if (sub === undefined) throw new UsageError('say add, grant, revoke or ls', true);
    if (!['add', 'grant', 'revoke', 'ls'].includes(sub)) {
      throw new UsageError(`unknown subcommand ${JSON.stringify(sub)} (add, grant, revoke or ls)`, true);
    }
    if (sub === 'ls') {
      if (email !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(email)}`, true);
    } else {
      if (email === undefined) throw new UsageError('give the person’s email address', true);
      if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`, true);
      if (!EMAIL.test(email)) throw new UsageError(`expected an email address, got ${JSON.stringify(email)}`);
    }
    const workspaces = workspacesOf(ctx);
    const all = ctx.values.all === true;
    if (all && sub !== 'revoke') throw new UsageError('--all goes with revoke');
    if ((sub === 'add' || sub === 'grant') && workspaces.length === 0) {
      throw new UsageError(`${sub} needs --workspace (the workspaces the person may use)`, true);
    }
    if (sub === 'revoke' && workspaces.length === 0 && !all) {
      throw new UsageError('revoke needs --workspace or --all', true);
    }
    if (sub === 'revoke' && workspaces.length > 0 && all) {
      throw new UsageError('give --workspace or --all, not both');
    }
    if (sub === 'ls' && workspaces.length > 1) throw new UsageError('ls takes at most one --workspace');

    const pool = await poolOf(ctx);
    const cognito = new CognitoIdentityProviderClient({ region: pool.region });
    try {
      switch (sub) {
        case 'add':
          return await add(ctx, cognito, pool, email as string, workspaces);
        case 'grant':
          return await grant(ctx, cognito, pool, email as string, workspaces);
        case 'revoke':
          return await revoke(ctx, cognito, pool, email as string, all ? 'all' : workspaces);
        default:
          return await list(ctx, cognito, pool, workspaces[0]);
      }
    } catch (error) {
      throw translated(error, pool, email);
    } finally {
      cognito.destroy();
    }
  },
};

interface Pool {
  readonly id: string;
  readonly region: string;
  /** The endpoint's app client, when the pool was found through it (its token lifetime is read for revoke). */
  readonly clientId?: string;
}

function workspacesOf(ctx: CommandContext): string[] {
  const names = strings(ctx.values, 'workspace');
  for (const name of names) {
    if (name !== '*' && !WORKSPACE_PATTERN.test(name)) {
      throw new UsageError(
        `--workspace: expected a workspace name (1-64 letters, digits, "_" or "-") or "*", got ${JSON.stringify(name)}`,
      );
    }
  }
  return [...new Set(names)];
}

/** The pool: `--user-pool-id`, else the one whose issuer the endpoint's sign-in settings name. */
async function poolOf(ctx: CommandContext): Promise<Pool> {
  const given = optString(ctx.values, 'user-pool-id') ?? (ctx.io.env[ENV.userPoolId] || undefined);
  if (given !== undefined) {
    const region = POOL_ID.exec(given)?.[1];
    if (region === undefined) {
      throw new UsageError(
        `--user-pool-id: expected a pool id like eu-west-1_AbCdEf123, got ${JSON.stringify(given)}`,
      );
    }
    return { id: given, region };
  }
  const signIn = await readSignIn(ctx.global.endpoint);
  const match = COGNITO_ISSUER.exec(signIn.issuer);
  if (!match) {
    throw new InputError(
      `the tokens of ${ctx.global.endpoint} come from ${signIn.issuer}, not a Cognito user pool: manage its people ` +
        'there (or name a pool with --user-pool-id)',
    );
  }
  return { id: match[2] as string, region: match[1] as string, clientId: signIn.client_id };
}

async function add(
  ctx: CommandContext,
  cognito: CognitoIdentityProviderClient,
  pool: Pool,
  email: string,
  workspaces: readonly string[],
): Promise<number> {
  await cognito.send(
    new AdminCreateUserCommand({
      UserPoolId: pool.id,
      Username: email,
      UserAttributes: [
        { Name: 'email', Value: email },
        // The administrator vouches for the address: the invitation goes there.
        { Name: 'email_verified', Value: 'true' },
      ],
      DesiredDeliveryMediums: ['EMAIL'],
    }),
  );
  await addToGroups(cognito, pool, email, workspaces);
  report(
    ctx,
    { user: email, added: true, workspaces },
    () =>
      `Added ${email} to ${pool.id}: Cognito emails a temporary password; the first sign-in (\`crumbs login\` or the ` +
      `dashboard) asks for a new one. Workspaces: ${workspaces.join(', ')}.`,
  );
  return 0;
}

async function grant(
  ctx: CommandContext,
  cognito: CognitoIdentityProviderClient,
  pool: Pool,
  email: string,
  workspaces: readonly string[],
): Promise<number> {
  await addToGroups(cognito, pool, email, workspaces);
  report(
    ctx,
    { user: email, granted: workspaces },
    () =>
      `Granted ${email} ${workspaces.join(', ')}: tokens issued from now on carry them (sign in again, or wait for ` +
      'the next refresh).',
  );
  return 0;
}

async function revoke(
  ctx: CommandContext,
  cognito: CognitoIdentityProviderClient,
  pool: Pool,
  email: string,
  which: readonly string[] | 'all',
): Promise<number> {
  const workspaces = which === 'all' ? await groupsOf(cognito, pool, email) : which;
  for (const workspace of workspaces) {
    await cognito.send(
      new AdminRemoveUserFromGroupCommand({ UserPoolId: pool.id, Username: email, GroupName: workspace }),
    );
  }
  // Every refresh token of the person is revoked: nothing can be refreshed into a token with the old groups.
  await cognito.send(new AdminUserGlobalSignOutCommand({ UserPoolId: pool.id, Username: email }));
  const minutes = await accessTokenMinutes(cognito, pool);
  const lifetime =
    minutes !== undefined
      ? `at most ${minutes} minutes (this app client's access token lifetime)`
      : "at most the app client's access token lifetime (crumbs:tokenValidityMinutes, 15 minutes unless set)";
  report(
    ctx,
    { user: email, revoked: workspaces, signed_out: true, access_token_minutes: minutes ?? null },
    () =>
      `Revoked ${workspaces.length > 0 ? workspaces.join(', ') : 'no workspace (none was granted)'} of ${email} and ` +
      `signed them out everywhere: their refresh tokens no longer work. An access token already issued stays valid ` +
      `for ${lifetime}.`,
  );
  return 0;
}

async function list(
  ctx: CommandContext,
  cognito: CognitoIdentityProviderClient,
  pool: Pool,
  workspace: string | undefined,
): Promise<number> {
  const users: UserType[] = [];
  if (workspace !== undefined) {
    for await (const page of paginateListUsersInGroup(
      { client: cognito },
      { UserPoolId: pool.id, GroupName: workspace },
    ))
      users.push(...(page.Users ?? []));
  } else {
    for await (const page of paginateListUsers({ client: cognito }, { UserPoolId: pool.id }))
      users.push(...(page.Users ?? []));
  }
  // Each group's members once (groups × pages), not each user's groups (one call per user).
  const groupsByUser = new Map<string, string[]>();
  const groups: string[] = [];
  for await (const page of paginateListGroups({ client: cognito }, { UserPoolId: pool.id }))
    groups.push(...(page.Groups ?? []).flatMap((g) => (g.GroupName ? [g.GroupName] : [])));
  for (const group of groups) {
    for await (const page of paginateListUsersInGroup(
      { client: cognito },
      { UserPoolId: pool.id, GroupName: group },
    )) {
      for (const user of page.Users ?? []) {
        if (user.Username === undefined) continue;
        groupsByUser.set(user.Username, [...(groupsByUser.get(user.Username) ?? []), group]);
      }
    }
  }
  const rows = users
    .map((u) => ({
      email: u.Attributes?.find((a) => a.Name === 'email')?.Value ?? u.Username ?? '',
      status: u.UserStatus ?? '',
      enabled: u.Enabled !== false,
      workspaces: (groupsByUser.get(u.Username ?? '') ?? []).sort(),
    }))
    .sort((a, b) => a.email.localeCompare(b.email));
  if (ctx.global.json) printJson(ctx.io, rows);
  else if (rows.length === 0) ctx.io.stdout(`No one${workspace ? ` in ${workspace}` : ''} in ${pool.id}.\n`);
  else {
    ctx.io.stdout(
      `${formatTable(
        [
          { header: 'email', value: (r: (typeof rows)[number]) => r.email },
          { header: 'status', value: (r: (typeof rows)[number]) => r.status },
          { header: 'enabled', value: (r: (typeof rows)[number]) => (r.enabled ? 'yes' : 'no') },
          { header: 'workspaces', value: (r: (typeof rows)[number]) => r.workspaces.join(', '), max: 80 },
        ],
        rows,
      )}\n`,
    );
  }
  return 0;
}

async function addToGroups(
  cognito: CognitoIdentityProviderClient,
  pool: Pool,
  email: string,
  workspaces: readonly string[],
): Promise<void> {
  for (const workspace of workspaces) {
    try {
      await cognito.send(
        new CreateGroupCommand({
          UserPoolId: pool.id,
          GroupName: workspace,
          Description: workspace === '*' ? 'crumbs: every workspace' : `crumbs workspace ${workspace}`,
        }),
      );
    } catch (error) {
      // The group is there already: another person has this workspace.
      if ((error as { name?: string }).name !== 'GroupExistsException') throw error;
    }
    await cognito.send(
      new AdminAddUserToGroupCommand({ UserPoolId: pool.id, Username: email, GroupName: workspace }),
    );
  }
}

async function groupsOf(
  cognito: CognitoIdentityProviderClient,
  pool: Pool,
  email: string,
): Promise<string[]> {
  const groups: string[] = [];
  for await (const page of paginateAdminListGroupsForUser(
    { client: cognito },
    { UserPoolId: pool.id, Username: email },
  ))
    groups.push(...(page.Groups ?? []).flatMap((g) => (g.GroupName ? [g.GroupName] : [])));
  return groups;
}

/** The app client's access token lifetime in minutes, when the client is known and may be described. */
async function accessTokenMinutes(
  cognito: CognitoIdentityProviderClient,
  pool: Pool,
): Promise<number | undefined> {
  if (pool.clientId === undefined) return undefined;
  try {
    const { UserPoolClient: client } = await cognito.send(
      new DescribeUserPoolClientCommand({ UserPoolId: pool.id, ClientId: pool.clientId }),
    );
    const value = client?.AccessTokenValidity;
    if (value === undefined) return 60; // Cognito's default when the client sets none
    const unit = client?.TokenValidityUnits?.AccessToken ?? 'hours';
    return unit === 'seconds'
      ? Math.ceil(value / 60)
      : unit === 'minutes'
        ? value
        : unit === 'hours'
          ? value * 60
          : value * 1440;
  } catch {
    return undefined;
  }
}

function report(ctx: CommandContext, json: Record<string, unknown>, text: () => string): void {
  if (ctx.global.json) printJson(ctx.io, json);
  else ctx.io.stdout(`${text()}\n`);
}

/** Cognito's errors as the administrator should read them. */
function translated(error: unknown, pool: Pool, email: string | undefined): Error {
  const name = (error as { name?: string }).name;
  const message = (error as Error).message;
  switch (name) {
    case 'UserNotFoundException':
      return new InputError(`no one signs in as ${email} in ${pool.id}: add them with \`crumbs users add\``);
    case 'UsernameExistsException':
      return new InputError(
        `${email} is already in ${pool.id}: give them workspaces with \`crumbs users grant\``,
      );
    case 'ResourceNotFoundException':
      return new InputError(`${pool.id} (or a group of it) does not exist in ${pool.region}: ${message}`);
    case 'CredentialsProviderError':
      return new InputError(
        `no AWS credentials: crumbs users uses your AWS credentials (AWS_PROFILE, the environment, SSO) — ${message}`,
      );
    case 'AccessDeniedException':
    case 'NotAuthorizedException':
      return new InputError(`your AWS credentials may not manage ${pool.id}: ${message}`);
    default:
      return error instanceof InputError
        ? error
        : new InputError(`Cognito refused: ${name ?? 'error'}: ${message}`, { cause: error });
  }
}

/**
 * `crumbs users` against a mocked Cognito (aws-sdk-client-mock): the calls an administrator's command makes on the
 * user pool, in the documented request shapes, what it prints, and Cognito's refusals as messages that say what to
 * do. The pool is named (`--user-pool-id`) or found through the endpoint's sign-in settings.
 */
import {
  AdminAddUserToGroupCommand,
  AdminCreateUserCommand,
  AdminListGroupsForUserCommand,
  AdminRemoveUserFromGroupCommand,
  AdminUserGlobalSignOutCommand,
  CognitoIdentityProviderClient,
  CognitoIdentityProviderServiceException,
  CreateGroupCommand,
  DescribeUserPoolClientCommand,
  ListGroupsCommand,
  ListUsersCommand,
  ListUsersInGroupCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from '#cli/main.ts';
import { startHttpServer, type TestHttpServer } from '../../support/http-server.ts';

const POOL = 'eu-west-1_AbCdEf123';
const CLIENT = '3n4b5urk1ft4fl3mg5e62d9ado';
const cognito = mockClient(CognitoIdentityProviderClient);

/** An endpoint whose sign-in settings name the pool (as a deployed stack's `/ui/sign-in.json` does). */
let endpoint: TestHttpServer;
let issuer = `https://cognito-idp.eu-west-1.amazonaws.com/${POOL}`;
beforeAll(async () => {
  endpoint = await startHttpServer((req, res) => {
    res.writeHead(req.path === '/ui/sign-in.json' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        available: true,
        issuer,
        client_id: CLIENT,
        authorization_endpoint: 'https://crumbs-x.auth.eu-west-1.amazoncognito.com/oauth2/authorize',
        token_endpoint: 'https://crumbs-x.auth.eu-west-1.amazoncognito.com/oauth2/token',
        logout_style: 'cognito',
        scopes: ['openid'],
        authorization_params: {},
        cli_redirect_uri: 'http://localhost:4790/callback',
        workspaces_claim: 'cognito:groups',
      }),
    );
  });
});
afterAll(() => endpoint.close());
beforeEach(() => {
  cognito.reset();
  issuer = `https://cognito-idp.eu-west-1.amazonaws.com/${POOL}`;
});

async function run(args: string[], pool: 'named' | 'endpoint' = 'named') {
  let stdout = '';
  let stderr = '';
  const code = await main(
    ['users', ...args, ...(pool === 'named' ? ['--user-pool-id', POOL] : ['--endpoint', endpoint.url])],
    {
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stderr += s;
      },
      env: {},
    },
  );
  return { code, stdout, stderr };
}

function cognitoError(name: string, message = name) {
  return new CognitoIdentityProviderServiceException({ name, message, $fault: 'client', $metadata: {} });
}

describe('crumbs users add', () => {
  it('invites the person (verified email, emailed temporary password) and grants each workspace as a group', async () => {
    cognito.on(CreateGroupCommand, { GroupName: 'team-b' }).rejects(cognitoError('GroupExistsException'));
    const result = await run(['add', 'ann@example.com', '--workspace', 'team-a', '-w', 'team-b']);
    expect(result.code, result.stderr).toBe(0);
    expect(cognito.commandCalls(AdminCreateUserCommand)[0]?.args[0].input).toEqual({
      UserPoolId: POOL,
      Username: 'ann@example.com',
      UserAttributes: [
        { Name: 'email', Value: 'ann@example.com' },
        { Name: 'email_verified', Value: 'true' },
      ],
      DesiredDeliveryMediums: ['EMAIL'],
    });
    expect(cognito.commandCalls(CreateGroupCommand).map((c) => c.args[0].input.GroupName)).toEqual([
      'team-a',
      'team-b',
    ]);
    expect(cognito.commandCalls(AdminAddUserToGroupCommand).map((c) => c.args[0].input)).toEqual([
      { UserPoolId: POOL, Username: 'ann@example.com', GroupName: 'team-a' },
      { UserPoolId: POOL, Username: 'ann@example.com', GroupName: 'team-b' },
    ]);
    expect(result.stdout).toContain('Cognito emails a temporary password');
    expect(result.stdout).toContain('Workspaces: team-a, team-b');
  });

  it('says to grant instead when the person is already in the pool', async () => {
    cognito.on(AdminCreateUserCommand).rejects(cognitoError('UsernameExistsException'));
    const result = await run(['add', 'ann@example.com', '-w', 'team-a']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `ann@example.com is already in ${POOL}: give them workspaces with \`crumbs users grant\``,
    );
    expect(cognito.commandCalls(AdminAddUserToGroupCommand)).toHaveLength(0);
  });
});

describe('crumbs users grant', () => {
  it('creates the workspace’s group when it is new and adds the person, "*" for every workspace', async () => {
    const result = await run(['grant', 'ann@example.com', '-w', '*']);
    expect(result.code, result.stderr).toBe(0);
    expect(cognito.commandCalls(CreateGroupCommand)[0]?.args[0].input).toEqual({
      UserPoolId: POOL,
      GroupName: '*',
      Description: 'crumbs: every workspace',
    });
    expect(result.stdout).toContain('tokens issued from now on carry them');
  });

  it('names the person who is not in the pool', async () => {
    cognito.on(AdminAddUserToGroupCommand).rejects(cognitoError('UserNotFoundException'));
    const result = await run(['grant', 'nobody@example.com', '-w', 'team-a']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `no one signs in as nobody@example.com in ${POOL}: add them with \`crumbs users add\``,
    );
  });
});

describe('crumbs users revoke', () => {
  it('removes the workspaces, signs the person out everywhere, and states how long an issued access token lives', async () => {
    cognito.on(DescribeUserPoolClientCommand).resolves({
      UserPoolClient: { AccessTokenValidity: 15, TokenValidityUnits: { AccessToken: 'minutes' } },
    });
    const result = await run(['revoke', 'ann@example.com', '-w', 'team-a'], 'endpoint');
    expect(result.code, result.stderr).toBe(0);
    expect(cognito.commandCalls(AdminRemoveUserFromGroupCommand)[0]?.args[0].input).toEqual({
      UserPoolId: POOL,
      Username: 'ann@example.com',
      GroupName: 'team-a',
    });
    expect(cognito.commandCalls(AdminUserGlobalSignOutCommand)[0]?.args[0].input).toEqual({
      UserPoolId: POOL,
      Username: 'ann@example.com',
    });
    expect(cognito.commandCalls(DescribeUserPoolClientCommand)[0]?.args[0].input).toEqual({
      UserPoolId: POOL,
      ClientId: CLIENT,
    });
    expect(result.stdout).toContain('signed them out everywhere: their refresh tokens no longer work');
    expect(result.stdout).toContain('An access token already issued stays valid for at most 15 minutes');
  });

  it('--all removes every group the person is in, then signs them out', async () => {
    cognito
      .on(AdminListGroupsForUserCommand)
      .resolves({ Groups: [{ GroupName: 'team-a' }, { GroupName: 'team-b' }] });
    const result = await run(['revoke', 'ann@example.com', '--all', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(
      cognito.commandCalls(AdminRemoveUserFromGroupCommand).map((c) => c.args[0].input.GroupName),
    ).toEqual(['team-a', 'team-b']);
    expect(cognito.commandCalls(AdminUserGlobalSignOutCommand)).toHaveLength(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ revoked: ['team-a', 'team-b'], signed_out: true });
  });

  it('does not sign out when removing a group fails, and says why', async () => {
    cognito.on(AdminRemoveUserFromGroupCommand).rejects(cognitoError('AccessDeniedException', 'not allowed'));
    const result = await run(['revoke', 'ann@example.com', '-w', 'team-a']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`your AWS credentials may not manage ${POOL}: not allowed`);
    expect(cognito.commandCalls(AdminUserGlobalSignOutCommand)).toHaveLength(0);
  });
});

describe('crumbs users ls', () => {
  it('lists everyone with status and workspaces, reading each group’s members once', async () => {
    cognito.on(ListUsersCommand).resolves({
      Users: [
        {
          Username: 'u-2',
          UserStatus: 'FORCE_CHANGE_PASSWORD',
          Enabled: true,
          Attributes: [{ Name: 'email', Value: 'bob@example.com' }],
        },
        {
          Username: 'u-1',
          UserStatus: 'CONFIRMED',
          Enabled: true,
          Attributes: [{ Name: 'email', Value: 'ann@example.com' }],
        },
      ],
    });
    cognito.on(ListGroupsCommand).resolves({ Groups: [{ GroupName: 'team-a' }, { GroupName: 'team-b' }] });
    cognito
      .on(ListUsersInGroupCommand, { GroupName: 'team-a' })
      .resolves({ Users: [{ Username: 'u-1' }, { Username: 'u-2' }] });
    cognito.on(ListUsersInGroupCommand, { GroupName: 'team-b' }).resolves({ Users: [{ Username: 'u-1' }] });
    const result = await run(['ls'], 'endpoint');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.split('\n').filter(Boolean)).toEqual([
      'EMAIL            STATUS                 ENABLED  WORKSPACES',
      'ann@example.com  CONFIRMED              yes      team-a, team-b',
      'bob@example.com  FORCE_CHANGE_PASSWORD  yes      team-a',
    ]);
    expect(cognito.commandCalls(ListUsersInGroupCommand)).toHaveLength(2);
  });
});

describe('crumbs users refuses', () => {
  it.each([
    [['add', 'ann@example.com'], /add needs --workspace/],
    [['add', 'not-an-email', '-w', 'a'], /expected an email address/],
    [['grant', 'ann@example.com', '-w', 'bad name'], /--workspace: expected a workspace name/],
    [['revoke', 'ann@example.com'], /revoke needs --workspace or --all/],
    [['grant', 'ann@example.com', '-w', 'a', '--all'], /--all goes with revoke/],
    [['remove', 'ann@example.com'], /unknown subcommand "remove"/],
  ])('%j as a usage error (exit 2), calling nothing', async (args, message) => {
    const result = await run(args as string[]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(cognito.calls()).toHaveLength(0);
  });

  it('a pool id that is not one, and an endpoint whose issuer is not a Cognito pool', async () => {
    let stderr = '';
    const code = await main(['users', 'ls', '--user-pool-id', 'pool'], {
      stdout: () => undefined,
      stderr: (s) => {
        stderr += s;
      },
      env: {},
    });
    expect(code).toBe(2);
    expect(stderr).toContain('--user-pool-id: expected a pool id like eu-west-1_AbCdEf123');
    issuer = 'https://login.example.com/';
    const result = await run(['ls'], 'endpoint');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('come from https://login.example.com/, not a Cognito user pool');
    expect(cognito.calls()).toHaveLength(0);
  });
});

/**
 * Sign-in out of the box: with no `crumbs:jwtIssuer`, crumbs owns a Cognito user pool. Two parts, one per stack:
 *
 * - `CrumbsUserPool` (stateful stack): the pool — people are data, so it lives beside the table and outlives a
 *   redeploy of the functions — and its managed login domain. Nobody signs themselves up: an administrator adds
 *   people (`crumbs users add`, AdminCreateUser) and grants workspaces, which are the pool's **groups**; the
 *   `cognito:groups` claim lists them in ID and access tokens alike, on every feature plan. Groups rather than a
 *   custom attribute, because a person may change their own writable attributes with their access token, never
 *   their groups.
 * - `SignIn` (stateless stack): one public app client (authorization code + PKCE, no secret) that the CLI
 *   (`crumbs login`, its fixed loopback callback) and the dashboard (its `/ui/` URL) sign in with, and the managed
 *   login branding the domain's pages need. It exposes what every front door checks a token against — `issuer`,
 *   `clientIds` (an ID token's `aud`, an access token's `client_id`) and `workspacesClaim` — and `bindSignIn` gives a
 *   function what the dashboard and the CLI read to sign in (`shared/core/api/sign-in.ts`).
 *
 * Resources are created in the stack's scope, as the other parts of the stacks are (`topology-functions.ts`).
 */
import { Aws, CfnOutput, Duration, Fn, Lazy, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccountRecovery,
  CfnManagedLoginBranding,
  FeaturePlan,
  type IUserPool,
  ManagedLoginVersion,
  Mfa,
  OAuthScope,
  UserPool,
  UserPoolClient,
  UserPoolClientIdentityProvider,
  UserPoolDomain,
} from 'aws-cdk-lib/aws-cognito';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { COGNITO_GROUPS_CLAIM } from '#shared/core/api/http.ts';
import type { SignInEndpoints } from '#shared/core/api/sign-in.ts';
import { ENV, topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';

/** Words Cognito refuses in a domain prefix. */
const RESERVED_IN_PREFIX = /aws|amazon|cognito/;

/**
 * The managed login domain's prefix: `crumbs-<stage>-<the stack's own UUID>`. Cognito prefixes are global per
 * region (every account's), so a stage name alone would collide with anyone else's `crumbs-dev`; the UUID of the
 * stack's id is unique per stack instance, so two stages, two accounts or a stack destroyed and deployed again never
 * ask for the same prefix (at most 7 + 16 + 1 + 36 = 60 of Cognito's 63 characters). A stage holding a word Cognito
 * refuses in a prefix is left out of it.
 */
export function domainPrefix(stage: string): string {
  const stackUuid = Fn.select(2, Fn.split('/', Aws.STACK_ID));
  return RESERVED_IN_PREFIX.test(stage)
    ? Fn.join('-', ['crumbs', stackUuid])
    : Fn.join('-', ['crumbs', stage, stackUuid]);
}

export interface CrumbsUserPoolProps {
  readonly stage: string;
  /**
   * Whether `cdk destroy` keeps the pool (`crumbs:retainData`), as it keeps the table: retained with deletion
   * protection; otherwise deleted with the stack, so a destroyed stage leaves no pool behind.
   * @default false
   */
  readonly retainData?: boolean;
}

/** The user pool and its managed login domain (stateful stack). */
export class CrumbsUserPool {
  public readonly pool: UserPool;
  public readonly domain: UserPoolDomain;

  constructor(scope: Construct, props: CrumbsUserPoolProps) {
    this.pool = new UserPool(scope, 'UserPool', {
      userPoolName: `crumbs-${props.stage}`,
      // Only an administrator adds people (AdminCreateUser): a pool open to sign-up would let anyone hold a token.
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      autoVerify: { email: true },
      standardAttributes: { email: { required: true, mutable: true } },
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(7),
      },
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      // Managed login (the sign-in pages) needs Essentials or Plus; Essentials has the same 10,000 free MAUs as Lite.
      featurePlan: FeaturePlan.ESSENTIALS,
      userInvitation: {
        emailSubject: 'You can sign in to crumbs',
        emailBody:
          'You have been added to crumbs. Sign in with `crumbs login` or on the dashboard as {username} with the ' +
          'temporary password {####}; you will choose your own password then.',
      },
      // People are data: kept like the table when crumbs:retainData says so, and deleted with the stack otherwise.
      deletionProtection: props.retainData === true,
      removalPolicy: props.retainData === true ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    this.domain = new UserPoolDomain(scope, 'UserPoolDomain', {
      userPool: this.pool,
      cognitoDomain: { domainPrefix: domainPrefix(props.stage) },
      managedLoginVersion: ManagedLoginVersion.NEWER_MANAGED_LOGIN,
    });
    NagSuppressions.addResourceSuppressions(this.pool, [
      {
        id: 'AwsSolutions-COG2',
        reason:
          'MFA is offered (TOTP) but not required: a first deploy must be usable by a team without authenticator ' +
          'apps; an operator who needs it sets the pool to required MFA.',
      },
      {
        id: 'AwsSolutions-COG8',
        reason:
          'The Plus feature plan is billed per user for threat protection; Essentials gives managed login and ' +
          'groups, all sign-in needs, and the pool takes no self sign-ups.',
      },
      {
        id: 'AwsSolutions-COG3',
        reason:
          'Threat protection (advanced security) needs the Plus feature plan, billed per user; the pool takes ' +
          'no self sign-ups, and every person in it was added by an administrator.',
      },
    ]);
    new CfnOutput(scope, 'UserPoolId', {
      value: this.pool.userPoolId,
      description: 'The Cognito user pool people sign in to (crumbs users add|grant|revoke|ls manage it)',
    });
  }
}

export interface SignInProps {
  readonly stage: string;
  /** The pool (from the stateful stack). */
  readonly userPool: IUserPool;
  /** Its managed login domain's base URL, `https://<prefix>.auth.<region>.amazoncognito.com`. */
  readonly domainBaseUrl: string;
  /** How long an access or ID token is good for (`crumbs:tokenValidityMinutes`). */
  readonly tokenValidityMinutes: number;
}

/** The app client people sign in with, and what front doors check tokens against (stateless stack). */
export class SignIn {
  public readonly client: UserPoolClient;
  /** `iss` of the pool's tokens. */
  public readonly issuer: string;
  /** What a token must have been issued to: an ID token's `aud`, an access token's `client_id`. */
  public readonly clientIds: readonly string[];
  /** The claim listing a person's workspaces: the pool's groups. */
  public readonly workspacesClaim = COGNITO_GROUPS_CLAIM;
  /** Where people sign in, exchange codes and sign out (the managed login domain). */
  public readonly endpoints: SignInEndpoints;
  public readonly tokenValidityMinutes: number;

  private readonly redirects: string[] = [topology.signIn.cliCallbackUrl];

  constructor(scope: Construct, props: SignInProps) {
    this.tokenValidityMinutes = props.tokenValidityMinutes;
    const redirects = Lazy.list({ produce: () => this.redirects });
    this.client = new UserPoolClient(scope, 'SignInClient', {
      userPool: props.userPool,
      userPoolClientName: `crumbs-${props.stage}`,
      // A public client: the CLI and a browser page cannot keep a secret, so the code is bound by PKCE instead.
      generateSecret: false,
      authFlows: { userSrp: true },
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: topology.signIn.scopes.map((s) => OAuthScope.custom(s)),
        callbackUrls: redirects,
        logoutUrls: redirects,
      },
      supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      preventUserExistenceErrors: true,
      accessTokenValidity: Duration.minutes(props.tokenValidityMinutes),
      idTokenValidity: Duration.minutes(props.tokenValidityMinutes),
      refreshTokenValidity: Duration.days(topology.signIn.refreshTokenValidityDays),
      // What `crumbs logout` and `crumbs users revoke` (AdminUserGlobalSignOut) end: the refresh tokens.
      enableTokenRevocation: true,
    });
    // Managed login shows an error page to a client without a style: Cognito's own look.
    new CfnManagedLoginBranding(scope, 'SignInBranding', {
      userPoolId: props.userPool.userPoolId,
      clientId: this.client.userPoolClientId,
      useCognitoProvidedValues: true,
    });
    this.issuer = `https://${props.userPool.userPoolProviderName}`;
    this.clientIds = [this.client.userPoolClientId];
    this.endpoints = {
      authorization_endpoint: `${props.domainBaseUrl}/oauth2/authorize`,
      token_endpoint: `${props.domainBaseUrl}/oauth2/token`,
      revocation_endpoint: `${props.domainBaseUrl}/oauth2/revoke`,
      logout_endpoint: `${props.domainBaseUrl}/logout`,
    };
    new CfnOutput(scope, 'SignInClientId', {
      value: this.client.userPoolClientId,
      description: 'The public app client crumbs login and the dashboard sign in with',
    });
    new CfnOutput(scope, 'SignInDomain', {
      value: props.domainBaseUrl,
      description: 'The managed login pages of the user pool',
    });
  }

  /** Registers a page (the dashboard's `/ui/` URL) as a place sign-in and sign-out may return to. */
  allowRedirect(url: string): void {
    this.redirects.push(url);
  }

  /** Tells `fn` how people sign in: the issuer, the client and the domain's endpoints. */
  bindSignIn(fn: CrumbsFunction): void {
    fn.function.addEnvironment(ENV.jwtIssuer, this.issuer);
    fn.function.addEnvironment(ENV.signInClientId, this.client.userPoolClientId);
    fn.function.addEnvironment(ENV.signInEndpoints, Fn.toJsonString(this.endpoints));
  }
}

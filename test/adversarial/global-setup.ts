/**
 * The adversarial suite's stack: two teams with scoped tokens on a local stack that allows no private network (as
 * `crumbs dev` starts by default), inside the tests' network namespace (`test/netns-run.ts`), where the addresses
 * under attack live on `lo`. Every attack runs as team-b; each test asserts it is refused or contained and that
 * team-a's data is unchanged.
 *
 * It is a vitest run of its own (`CRUMBS_SUITE=adversarial`): the integration stack allows private networks (its
 * tests call their own servers on 127.0.0.1), and two stacks cannot share one process's AWS environment.
 */
import type { JsonWebKey } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { parseScopedTokens } from '#local/tokens.ts';
import { ENV } from '#shared/topology.ts';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts';
import { inTestNamespace } from '../support/netns.ts';
import { OIDC_CLIENT_ID, type OidcIssuer, startOidcIssuer } from '../support/oidc-issuer.ts';

export const TEAM_A = { workspace: 'team-a', token: 'team-a-token-0123456789' } as const;
export const TEAM_B = { workspace: 'team-b', token: 'team-b-token-0123456789' } as const;
/** More tokens of team-b's workspace, which streams.test.ts uses to spend the workspace's share beyond one token's. */
export const TEAM_B_MORE_TOKENS = ['team-b-token-second-0123', 'team-b-token-third-01234'] as const;
/** A second workspace of team-b's token, which quotas.test.ts fills to its quota without starving other files. */
export const TEAM_B_QUOTA_WORKSPACE = 'team-b-quota';
/**
 * budgets.test.ts's workspaces of team-b's token, each with a daily budget of its own (`CRUMBS_DAILY_BUDGETS`), so
 * spending them refuses nothing elsewhere: $0.50 for the 60 concurrent requests, $0.05 for the llm tool.
 */
export const TEAM_B_BUDGETS = { 'team-b-spend': 0.5, 'team-b-llm-tool': 0.05 } as const;
/** The scripted model's prices there (`CRUMBS_LLM_PRICES`): $1 per million input tokens, $5 per million output. */
export const ADVERSARIAL_PRICES = {
  'openai-compatible/*': { input: 1, output: 5, source: 'test prices' },
} as const;
/**
 * A third workspace of team-b's token, with a low request rate of its own (`crumbs:workspaceQuotas`): throttling.test.ts
 * floods from it. The other files keep a general rate above what they send, so the flood cannot spill into them.
 */
export const TEAM_B_FLOOD_WORKSPACE = 'team-b-flood';
export const FLOOD_RATE = { requestRate: 2, requestBurst: 10 } as const;
const GENERAL_RATE = { requestRate: 1000, requestBurst: 2000 } as const;
/** The quotas of quotas.test.ts's workspace (its own, `CRUMBS_WORKSPACE_QUOTAS`): low, so the test can fill them. */
export const ADVERSARIAL_QUOTAS = { definitions: 40, rules: 30 } as const;

declare module 'vitest' {
  export interface ProvidedContext {
    adversary: {
      api: string;
      dynamodb: string;
      sqs: string;
      eventbridge: string;
      scheduler: string;
      /** The events server (delta and change channels): publish, and the realtime WebSocket URL. */
      events: string;
      eventsRealtime: string;
      /** The all-workspaces token (the operator's). */
      token: string;
      teamA: { workspace: string; token: string };
      teamB: { workspace: string; token: string };
      /** Base URL of the scripted OpenAI-compatible server (`openai-compatible/<script>` models). */
      fakeOpenAi: string;
      /**
       * The stack's OpenID Connect issuer, playing a Cognito user pool (workspaces in `cognito:groups`), and its
       * signing key: sign-in.test.ts forges and replays tokens against it.
       */
      oidc: { issuer: string; privateJwk: JsonWebKey };
    };
  }
}

let stack: LocalStack | undefined;
let fakeOpenAi: FakeOpenAi | undefined;
let issuer: OidcIssuer | undefined;

export async function setup(project: TestProject): Promise<void> {
  if (!inTestNamespace()) {
    throw new Error(
      "the adversarial suite runs only inside the tests' network namespace: `npm test`, or `npm run test:adversarial`",
    );
  }
  // A low thread budget, so the storm test's doubling stops within seconds (storm.test.ts).
  process.env[ENV.threadBudget] = '60';
  process.env[ENV.workspaceRequestRate] = String(GENERAL_RATE.requestRate);
  process.env[ENV.workspaceRequestBurst] = String(GENERAL_RATE.requestBurst);
  fakeOpenAi = await startFakeOpenAi();
  process.env.OPENAI_COMPATIBLE_BASE_URL = fakeOpenAi.baseUrl;
  issuer = await startOidcIssuer({ workspacesClaim: 'cognito:groups' });
  stack = await startLocalStack({
    // As a stack with its own user pool: tokens of one client, workspaces in cognito:groups (the teams' tokens too).
    oidc: {
      issuer: issuer.issuer,
      audiences: [OIDC_CLIENT_ID],
      clientId: OIDC_CLIENT_ID,
      workspacesClaim: 'cognito:groups',
    },
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    schedulerPort: 0,
    token: 'adversarial-operator-token',
    scopedTokens: parseScopedTokens(
      JSON.stringify({
        [TEAM_A.token]: [TEAM_A.workspace],
        [TEAM_B.token]: [
          TEAM_B.workspace,
          TEAM_B_QUOTA_WORKSPACE,
          TEAM_B_FLOOD_WORKSPACE,
          ...Object.keys(TEAM_B_BUDGETS),
        ],
        ...Object.fromEntries(TEAM_B_MORE_TOKENS.map((t) => [t, [TEAM_B.workspace]])),
      }),
    ),
    // As `crumbs dev` starts by default: definitions reach only globally routable addresses.
    allowPrivateNetwork: false,
    seedDemo: false,
    // quotas.test.ts's workspace gets quotas of its own, low enough to reach; the rest keep the defaults, so the
    // many definitions the other files write in team-b never run into them.
    workspaceQuotas: { [TEAM_B_QUOTA_WORKSPACE]: ADVERSARIAL_QUOTAS, [TEAM_B_FLOOD_WORKSPACE]: FLOOD_RATE },
    dailyBudgets: { workspaces: { ...TEAM_B_BUDGETS } },
    llmPrices: ADVERSARIAL_PRICES,
    // Each team's own credentials, which secrets.test.ts has team-b try to name across the boundary.
    secrets: {
      [TEAM_A.workspace]: { 'partner-token': 'team-a-s3cret' },
      [TEAM_B.workspace]: { 'own-token': 'b' },
    },
  });
  project.provide('adversary', {
    ...stack.endpoints,
    token: stack.token,
    teamA: { ...TEAM_A },
    teamB: { ...TEAM_B },
    fakeOpenAi: fakeOpenAi.baseUrl,
    oidc: { issuer: issuer.issuer, privateJwk: issuer.privateJwk },
  });
}

export async function teardown(): Promise<void> {
  await stack?.stop();
  await fakeOpenAi?.stop();
  await issuer?.stop();
}

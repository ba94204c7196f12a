/**
 * One local stack for every test project that needs one (integration and the browser tests): their global setups
 * run in the same process, and two stacks side by side — two DynamoDB Locals, two sets of pollers — would only
 * slow each other down on a 2-core machine. Counted, so the last project to finish stops it.
 */
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { parseScopedTokens } from '#local/tokens.ts';
import { ENV, topology } from '#shared/topology.ts';
import { OIDC_CLIENT_ID, type OidcIssuer, startOidcIssuer } from './oidc-issuer.ts';

export const TEST_TOKEN = 'integration-test-token';
/** A token that may use only `SCOPED_WORKSPACE` (CRUMBS_TOKENS): every other workspace answers 403. */
export const SCOPED_TOKEN = 'integration-scoped-token';
export const SCOPED_WORKSPACE = 'scoped-only';
/** The workspace that has a secret (`crumbs dev --secrets`): the one the agent-type tests' api agent names. */
export const SECRETS_WORKSPACE = 'agent-types-secrets';
/** A workspace whose external agent calls a crumbs agent of `SCOPED_WORKSPACE` over A2A with the scoped token. */
export const A2A_CALLER_WORKSPACE = 'a2a-caller';
export const TEST_SECRETS = {
  [SECRETS_WORKSPACE]: { 'partner-token': 'partner-s3cret' },
  [A2A_CALLER_WORKSPACE]: { 'crumbs-token': SCOPED_TOKEN },
} as const;
/** The operator's model aliases (CRUMBS_MODEL_ALIASES): a bare `house-model` runs `offline/house-v2`. */
export const TEST_MODEL_ALIASES = { 'house-model': 'offline/house-v2' } as const;
/**
 * The operator's prices (CRUMBS_LLM_PRICES) for the scripted model server: a call of it (10 input tokens, 4 of them
 * cached, 5 output; test/support/fake-openai.ts) costs 6 × 1.5 + 4 × 0.5 + 5 × 6 = 41 micro-dollars.
 */
export const TEST_LLM_PRICES = {
  'openai-compatible/*': { input: 1.5, output: 6, cached_input: 0.5, source: 'test prices' },
  // An offline model with a price, for the browser tests (whose stack may run without the scripted server).
  'offline/metered': { input: 2, output: 8, source: 'test prices' },
} as const;

/**
 * The operator's daily budgets (CRUMBS_DAILY_BUDGETS): only these workspaces have one (so every other test's calls
 * read nothing), $0.05 a day each — two calls of the scripted model billing its whole output cap (`~bills`: 4,096
 * output tokens at $6 a million, about $0.025), the second with a smaller cap.
 */
export const DAILY_BUDGET_WORKSPACES = ['daily-budget-a', 'daily-budget-b', 'daily-budget-tools'] as const;
export const TEST_DAILY_BUDGETS = {
  workspaces: Object.fromEntries(DAILY_BUDGET_WORKSPACES.map((ws) => [ws, 0.05])),
};

/**
 * The request rate (`CRUMBS_WORKSPACE_REQUEST_RATE`): the tests drive some workspaces hard (the API fuzz sends
 * 10,000 requests to one), so the stack's general rate is high; `RATE_LIMITED_WORKSPACE` has a low one of its own
 * (`crumbs:workspaceQuotas`), which `request-rate.test.ts` runs into.
 */
export const GENERAL_REQUEST_RATE = { requestRate: 100_000, requestBurst: 100_000 } as const;
export const RATE_LIMITED_WORKSPACE = 'rate-limited';
export const RATE_LIMITS = { requestRate: 1, requestBurst: 5 } as const;

const shared = globalThis as typeof globalThis & {
  __crumbsTestStack?: { users: number; stack: Promise<LocalStack>; issuer: Promise<OidcIssuer> };
};

/**
 * The stack takes JWTs of a local OpenID Connect issuer (`crumbs dev --oidc-issuer`) besides its tokens, so the
 * sign-in tests (`crumbs login`, the dashboard's Sign in, both token shapes) run against it; its client's redirect
 * URIs name the stack's dashboard, known once the stack is up.
 */
async function startWithIssuer(
  options: Parameters<typeof startLocalStack>[0],
  issuer: Promise<OidcIssuer>,
): Promise<LocalStack> {
  const oidc = await issuer;
  const stack = await startLocalStack({
    ...options,
    oidc: { issuer: oidc.issuer, audiences: [OIDC_CLIENT_ID], clientId: OIDC_CLIENT_ID },
  });
  oidc.configure([topology.signIn.cliCallbackUrl, `${stack.endpoints.api}/ui/`]);
  return stack;
}

/** The shared stack's OpenID Connect issuer (started with it). */
export function sharedIssuer(): Promise<OidcIssuer> {
  const entry = shared.__crumbsTestStack;
  if (!entry) throw new Error('acquireStack first');
  return entry.issuer;
}

export function acquireStack(): Promise<LocalStack> {
  // The offline model streams a word every 80 ms: a streamed chat answer lasts long enough to be seen (and
  // stopped) in the browser tests.
  process.env[ENV.offlineStreamDelayMs] ??= '80';
  process.env[ENV.workspaceRequestRate] ??= String(GENERAL_REQUEST_RATE.requestRate);
  process.env[ENV.workspaceRequestBurst] ??= String(GENERAL_REQUEST_RATE.requestBurst);
  const issuer = shared.__crumbsTestStack?.issuer ?? startOidcIssuer();
  shared.__crumbsTestStack ??= {
    users: 0,
    issuer,
    stack: startWithIssuer(
      {
        apiPort: 0,
        dynamodbPort: 0,
        sqsPort: 0,
        eventbridgePort: 0,
        schedulerPort: 0,
        token: TEST_TOKEN,
        scopedTokens: parseScopedTokens(JSON.stringify({ [SCOPED_TOKEN]: [SCOPED_WORKSPACE] })),
        // Tests call their own HTTP servers on 127.0.0.1 through the http tool.
        allowPrivateNetwork: true,
        secrets: TEST_SECRETS,
        modelAliases: TEST_MODEL_ALIASES,
        llmPrices: TEST_LLM_PRICES,
        dailyBudgets: TEST_DAILY_BUDGETS,
        workspaceQuotas: { [RATE_LIMITED_WORKSPACE]: RATE_LIMITS },
      },
      issuer,
    ),
  };
  shared.__crumbsTestStack.users++;
  return shared.__crumbsTestStack.stack;
}

export async function releaseStack(): Promise<void> {
  const entry = shared.__crumbsTestStack;
  if (!entry) return;
  entry.users--;
  if (entry.users > 0) return;
  shared.__crumbsTestStack = undefined;
  await (await entry.stack).stop();
  await (await entry.issuer).stop();
}

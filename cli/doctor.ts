/**
 * `crumbs doctor`: the check before a first deploy, with the CLI's AWS credentials and region, of what `cdk deploy`
 * and the first minutes of a stage need from the account, so each problem shows here, with what to do, instead of
 * as a failed deploy or a dead-lettered write:
 *
 * - configuration: the stage's CDK context (`cdk.json` and `-c` values) reads as `cdk synth` reads it;
 * - CDK bootstrap: the bootstrap version parameter (`/cdk-bootstrap/<qualifier>/version`, SSM) exists and is recent;
 * - Bedrock: for every Bedrock model the configuration names (the default agent model, the embedding model),
 *   `GetFoundationModelAvailability`, which reports what makes a call fail in practice — the region, the account's
 *   authorization (an SCP or IAM policy), the entitlement (Marketplace permissions, model access) and the provider's
 *   agreement (its first-use form); an inference profile id (`us.…`) is checked as its model;
 * - EventBridge's "Rules per event bus" quota (Service Quotas) against what crumbs' defaults assume (300 per bus of
 *   `crumbs:buses`);
 * - Lambda's "Concurrent executions" quota against what the executors may take and the API's reservation
 *   (`crumbs:apiReservedConcurrency`; Lambda keeps 100 unreserved);
 * - AppSync Events in the region (streamed answers' channels): its `ListApis` answers;
 * - the JWT issuer's discovery document, when `crumbs:jwtIssuer` is set.
 *
 * Each check is a function of injected clients (`DoctorDeps`), so tests run it against mocked accounts.
 */

import { AppSyncClient, ListApisCommand } from '@aws-sdk/client-appsync';
import { BedrockClient, GetFoundationModelAvailabilityCommand } from '@aws-sdk/client-bedrock';
import {
  ListAWSDefaultServiceQuotasCommand,
  ListServiceQuotasCommand,
  type ServiceQuota,
  ServiceQuotasClient,
} from '@aws-sdk/client-service-quotas';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import type { CrumbsConfig } from '#infra/config.ts';
import { resolveModel } from '#shared/domain/llm-model.ts';
import { allFunctions, topology } from '#shared/topology.ts';

export type DoctorStatus = 'ok' | 'failed' | 'warning' | 'skipped';

export interface DoctorLine {
  readonly name: string;
  readonly status: DoctorStatus;
  /** What was found. */
  readonly detail: string;
  /** What to do (failed and warning lines). */
  readonly fix?: string;
}

export interface DoctorDeps {
  readonly region: string;
  readonly ssm: SSMClient;
  readonly bedrock: BedrockClient;
  readonly quotas: ServiceQuotasClient;
  readonly appsync: AppSyncClient;
  readonly fetch: typeof fetch;
}

/** The CDK bootstrap template version this app's assets and roles need at least. */
export const MIN_BOOTSTRAP_VERSION = 6;
const BOOTSTRAP_QUALIFIER = 'hnb659fds';
/** What crumbs' per-workspace rule quotas assume a bus holds (`topology.bus.pool.rulesPerBus`). */
const RULES_PER_BUS = topology.bus.pool.rulesPerBus;
/** Lambda refuses a reservation that leaves fewer unreserved executions than this. */
const MIN_UNRESERVED = 100;

export function defaultDoctorDeps(region: string): DoctorDeps {
  return {
    region,
    ssm: new SSMClient({ region }),
    bedrock: new BedrockClient({ region }),
    quotas: new ServiceQuotasClient({ region }),
    appsync: new AppSyncClient({ region }),
    fetch: (input, init) => globalThis.fetch(input, init),
  };
}

/**
 * Every check against the account, in order. `config` is the stage's configuration, or the error reading it gave
 * (then the checks that need it are skipped and the configuration line says what to fix).
 */
export async function runDoctor(config: CrumbsConfig | Error, deps: DoctorDeps): Promise<DoctorLine[]> {
  const lines: DoctorLine[] = [];
  if (config instanceof Error) {
    lines.push({
      name: 'configuration',
      status: 'failed',
      detail: config.message,
      fix: 'set the context values in cdk.json or pass -c key=value (docs/deploy.md, "Context values")',
    });
  } else {
    lines.push({
      name: 'configuration',
      status: 'ok',
      detail: `stage ${config.stage}, ${config.buses} bus${config.buses === 1 ? '' : 'es'}, region ${deps.region}`,
    });
  }
  lines.push(await bootstrap(deps));
  if (!(config instanceof Error)) {
    for (const model of bedrockModels(config)) lines.push(await bedrockModel(deps, model));
    lines.push(await rulesPerBus(deps, config.buses));
    lines.push(await lambdaConcurrency(deps, config.apiReservedConcurrency));
  }
  lines.push(await appsyncEvents(deps));
  if (!(config instanceof Error)) lines.push(await issuer(deps, config));
  return lines;
}

async function bootstrap(deps: DoctorDeps): Promise<DoctorLine> {
  const name = 'cdk bootstrap';
  const fix = `run npx cdk bootstrap aws://<account-id>/${deps.region}`;
  try {
    const out = await deps.ssm.send(
      new GetParameterCommand({ Name: `/cdk-bootstrap/${BOOTSTRAP_QUALIFIER}/version` }),
    );
    const version = Number(out.Parameter?.Value);
    if (!Number.isFinite(version)) {
      return { name, status: 'failed', detail: 'the bootstrap version parameter holds no number', fix };
    }
    if (version < MIN_BOOTSTRAP_VERSION) {
      return {
        name,
        status: 'failed',
        detail: `bootstrap version ${version} in ${deps.region}, older than the ${MIN_BOOTSTRAP_VERSION} this app needs`,
        fix: `${fix} again (it updates the CDKToolkit stack)`,
      };
    }
    return { name, status: 'ok', detail: `CDKToolkit bootstrap version ${version} in ${deps.region}` };
  } catch (error) {
    if (errorName(error) === 'ParameterNotFound') {
      return { name, status: 'failed', detail: `${deps.region} is not bootstrapped for the CDK`, fix };
    }
    return failedCall(name, error);
  }
}

/** The Bedrock models the configuration names: the default agent model and the embedding model, where on Bedrock. */
export function bedrockModels(config: CrumbsConfig): { role: string; model: string; setting: string }[] {
  const models: { role: string; model: string; setting: string }[] = [];
  try {
    const agent = resolveModel(undefined, config.defaultLlmProvider, 'model', config.modelAliases);
    if (agent.provider === 'bedrock') {
      models.push({ role: 'default agent model', model: agent.model, setting: 'crumbs:defaultModel' });
    }
  } catch {
    // A provider without a default model (ollama, openai-compatible) names none: nothing to check on Bedrock.
  }
  if (config.embeddings.kind === 'bedrock') {
    models.push({ role: 'embedding model', model: config.embeddings.model, setting: 'crumbs:embeddings' });
  }
  return models;
}

/** `us.anthropic.claude-…` (a cross-region inference profile) → the model it routes to. */
function foundationModelOf(model: string): string {
  return model.replace(/^(us|eu|apac|us-gov|global|ca|jp|au)\./, '');
}

async function bedrockModel(
  deps: DoctorDeps,
  { role, model, setting }: { role: string; model: string; setting: string },
): Promise<DoctorLine> {
  const name = `bedrock ${role}`;
  const modelId = foundationModelOf(model);
  const shown = modelId === model ? model : `${model} (inference profile of ${modelId})`;
  try {
    const out = await deps.bedrock.send(new GetFoundationModelAvailabilityCommand({ modelId }));
    if (out.regionAvailability === 'NOT_AVAILABLE') {
      return {
        name,
        status: 'failed',
        detail: `${shown} is not offered in ${deps.region}`,
        fix: `deploy in a region that has it, or name another model (-c ${setting}=…)`,
      };
    }
    if (out.authorizationStatus === 'NOT_AUTHORIZED') {
      return {
        name,
        status: 'failed',
        detail: `${shown}: these credentials are not authorized to use it (an IAM policy or an organization's SCP denies it)`,
        fix: 'ask the account administrator to allow bedrock:InvokeModel on it, or name another model',
      };
    }
    if (out.entitlementAvailability === 'NOT_AVAILABLE') {
      return {
        name,
        status: 'failed',
        detail: `${shown}: the account has no access to it`,
        fix: 'grant Marketplace permissions (aws-marketplace:Subscribe, ViewSubscriptions) to whoever enables it, and request access in the Bedrock console (Model access)',
      };
    }
    const agreement = out.agreementAvailability?.status;
    if (agreement !== undefined && agreement !== 'AVAILABLE') {
      const why = out.agreementAvailability?.errorMessage;
      return {
        name,
        status: 'failed',
        detail: `${shown}: the provider's agreement is ${agreement.toLowerCase().replace('_', ' ')}${why ? ` (${why})` : ''}`,
        fix:
          agreement === 'PENDING'
            ? 'wait for the provider to accept, then run crumbs doctor again'
            : "open the model in the Bedrock console and submit the provider's first-use form (use case details)",
      };
    }
    return { name, status: 'ok', detail: `${shown} is available in ${deps.region}` };
  } catch (error) {
    if (['ValidationException', 'ResourceNotFoundException'].includes(errorName(error) ?? '')) {
      return {
        name,
        status: 'failed',
        detail: `${shown}: Bedrock knows no such model in ${deps.region} (${messageOf(error)})`,
        fix: `check the model id (aws bedrock list-foundation-models), or name another (-c ${setting}=…)`,
      };
    }
    return failedCall(name, error);
  }
}

/** A quota by its name: the applied value, else AWS's default. */
async function quotaValue(
  deps: DoctorDeps,
  serviceCode: string,
  quotaName: string,
): Promise<number | undefined> {
  const find = (quotas: ServiceQuota[] | undefined) =>
    quotas?.find((q) => q.QuotaName?.toLowerCase() === quotaName.toLowerCase())?.Value;
  let token: string | undefined;
  do {
    const out: { Quotas?: ServiceQuota[]; NextToken?: string } = await deps.quotas.send(
      new ListServiceQuotasCommand({ ServiceCode: serviceCode, NextToken: token, MaxResults: 100 }),
    );
    const found = find(out.Quotas);
    if (found !== undefined) return found;
    token = out.NextToken;
  } while (token);
  token = undefined;
  do {
    const out: { Quotas?: ServiceQuota[]; NextToken?: string } = await deps.quotas.send(
      new ListAWSDefaultServiceQuotasCommand({ ServiceCode: serviceCode, NextToken: token, MaxResults: 100 }),
    );
    const found = find(out.Quotas);
    if (found !== undefined) return found;
    token = out.NextToken;
  } while (token);
  return undefined;
}

async function rulesPerBus(deps: DoctorDeps, buses: number): Promise<DoctorLine> {
  const name = 'eventbridge rules per bus';
  try {
    const quota = await quotaValue(deps, 'events', 'Rules per event bus');
    if (quota === undefined) {
      return {
        name,
        status: 'warning',
        detail: 'Service Quotas lists no "Rules per event bus" quota',
        fix: 'check the quota in the Service Quotas console',
      };
    }
    const definitions = buses * quota - 2;
    if (quota < RULES_PER_BUS) {
      return {
        name,
        status: 'warning',
        detail: `${quota} rules per bus: ${buses} bus${buses === 1 ? '' : 'es'} hold ${definitions} definitions, fewer than crumbs' defaults assume (${buses} × ${RULES_PER_BUS})`,
        fix: `request "Rules per event bus" of ${RULES_PER_BUS} in Service Quotas, or add buses (-c crumbs:buses=${Math.ceil((buses * RULES_PER_BUS) / quota)}), or lower crumbs:maxRulesPerWorkspace`,
      };
    }
    return {
      name,
      status: 'ok',
      detail: `${quota} per bus: ${buses} × ${quota} rules, ${definitions} definitions (2 system rules)`,
    };
  } catch (error) {
    return failedCall(name, error);
  }
}

/** What crumbs' queue-fed functions may run at once, by their event sources' maximum concurrency. */
export function executorConcurrency(): number {
  return allFunctions().reduce(
    (sum, f) => sum + (f.trigger.kind === 'sqs' ? f.trigger.maxConcurrency : 0),
    0,
  );
}

async function lambdaConcurrency(deps: DoctorDeps, reserved: number | undefined): Promise<DoctorLine> {
  const name = 'lambda concurrent executions';
  try {
    const quota = await quotaValue(deps, 'lambda', 'Concurrent executions');
    if (quota === undefined) {
      return {
        name,
        status: 'warning',
        detail: 'Service Quotas lists no "Concurrent executions" quota',
        fix: 'check the quota in the Service Quotas console',
      };
    }
    const executors = executorConcurrency();
    if (reserved !== undefined && quota - reserved < MIN_UNRESERVED) {
      return {
        name,
        status: 'failed',
        detail: `${quota}: reserving ${reserved} for the API leaves ${quota - reserved} unreserved, and Lambda keeps at least ${MIN_UNRESERVED}`,
        fix: `lower -c crumbs:apiReservedConcurrency to at most ${Math.max(0, quota - MIN_UNRESERVED)} (0: none), or request a higher "Concurrent executions" quota`,
      };
    }
    if (quota < executors + MIN_UNRESERVED) {
      return {
        name,
        status: 'failed',
        detail: `${quota}: crumbs' executors alone may run ${executors} at once, and the API, publisher and rule manager share what is left`,
        fix: `request "Concurrent executions" of 1000 (the usual default) in Service Quotas (Lambda) before the first deploy; a new account starts lower`,
      };
    }
    return {
      name,
      status: 'ok',
      detail: `${quota}: executors take at most ${executors}${reserved ? `, ${reserved} reserved for the API` : ''}, the rest is the API's and the others'`,
    };
  } catch (error) {
    return failedCall(name, error);
  }
}

async function appsyncEvents(deps: DoctorDeps): Promise<DoctorLine> {
  const name = 'appsync events';
  try {
    await deps.appsync.send(new ListApisCommand({ maxResults: 1 }));
    return {
      name,
      status: 'ok',
      detail: `AppSync Events answers in ${deps.region} (streamed answers' channels)`,
    };
  } catch (error) {
    const code = errorName(error) ?? '';
    if (
      /UnknownEndpoint|ENOTFOUND|EndpointError|UnrecognizedClient|not (?:supported|available)/i.test(
        `${code} ${messageOf(error)}`,
      )
    ) {
      return {
        name,
        status: 'failed',
        detail: `AppSync Events is not available in ${deps.region} (${messageOf(error)})`,
        fix: 'deploy in a region that offers AppSync Events: streamed answers and live views use its channels',
      };
    }
    if (code === 'AccessDeniedException') {
      return {
        name,
        status: 'warning',
        detail: `these credentials may not list AppSync APIs in ${deps.region}`,
        fix: 'the deploying role needs appsync:* for the stack (cdk deploy uses the bootstrap roles)',
      };
    }
    return failedCall(name, error);
  }
}

async function issuer(deps: DoctorDeps, config: CrumbsConfig): Promise<DoctorLine> {
  const name = 'jwt issuer';
  const iss = (config as { jwtIssuer?: string }).jwtIssuer;
  if (!iss) return { name, status: 'skipped', detail: 'no crumbs:jwtIssuer set' };
  const url = `${iss.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  try {
    const res = await deps.fetch(url, {
      signal: AbortSignal.timeout(5_000),
      headers: { accept: 'application/json' },
    });
    if (!res.ok) {
      return {
        name,
        status: 'failed',
        detail: `${url} answered ${res.status}`,
        fix: 'check crumbs:jwtIssuer: it is the `iss` of your tokens, and <iss>/.well-known/openid-configuration must answer',
      };
    }
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== iss && doc.issuer !== iss.replace(/\/+$/, '')) {
      return {
        name,
        status: 'failed',
        detail: `the discovery document names the issuer ${JSON.stringify(doc.issuer)}, not ${iss}`,
        fix: `set -c crumbs:jwtIssuer=${String(doc.issuer)} (API Gateway compares it with the tokens' iss exactly)`,
      };
    }
    if (typeof doc.jwks_uri !== 'string') {
      return {
        name,
        status: 'failed',
        detail: `${url} names no jwks_uri`,
        fix: 'the issuer must publish its signing keys',
      };
    }
    return { name, status: 'ok', detail: `${iss} publishes its keys at ${doc.jwks_uri}` };
  } catch (error) {
    return {
      name,
      status: 'failed',
      detail: `${url} could not be read (${messageOf(error)})`,
      fix: 'check crumbs:jwtIssuer and that the issuer is reachable from the internet (API Gateway fetches its keys)',
    };
  }
}

function failedCall(name: string, error: unknown): DoctorLine {
  const code = errorName(error);
  const credentials = /CredentialsProviderError|ExpiredToken|InvalidClientTokenId|UnrecognizedClient/.test(
    code ?? '',
  );
  return {
    name,
    status: 'failed',
    detail: `${code ?? 'error'}: ${messageOf(error)}`,
    fix: credentials
      ? 'set AWS credentials for the target account (aws sts get-caller-identity must work) and a region (AWS_REGION or --region)'
      : code === 'AccessDeniedException'
        ? 'these credentials may not read this; run crumbs doctor as the account administrator who deploys'
        : 'run crumbs doctor again; if it persists, check the service in the console',
  };
}

function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

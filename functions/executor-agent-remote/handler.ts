/**
 * Executor for agents that work through other systems over HTTP: seed 004's `api` and `external` types.
 * Triggered by the agent-remote queue (the rules of those definitions: the agent.request.v1 naming an agent, its
 * subscriptions). Reads the definition, the trigger and its context; calls HTTP APIs (JSONata transforms) and A2A
 * partners (circuit state in the table), every call through the network guard (CRUMBS_ALLOW_PRIVATE_NETWORK) with
 * credentials from their secret references (Secrets Manager under crumbs/agents/ on AWS); writes
 * agent.response.v1 and agent.external_task.v1 breadcrumbs. Its own function because the A2A SDK and JSONata would
 * otherwise load in every agent's cold start; tool agents and MCP tools run in executor-agent-mcp.
 */

import { SdkA2aClient } from '#shared/adapters/a2a/a2a-client.ts';
import { dataChecks } from '#shared/adapters/checks/checks.ts';
import { DynamoCircuitStore } from '#shared/adapters/dynamodb/circuit-store.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { privateNetworkAllowed } from '#shared/adapters/network/network-guard.ts';
import { secretsFromEnv } from '#shared/adapters/secrets/secret-source.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { createApiAgent } from '#shared/core/agents/api-agent.ts';
import { CircuitBreaker } from '#shared/core/agents/circuit-breaker.ts';
import { createExternalAgent } from '#shared/core/agents/external-agent.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { ENV } from '#shared/topology.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';

// The stack's private-network switch, read at the first call (the local stack imports handlers before it may set
// it), and the only thing that lets these calls reach loopback or private addresses.
let stackAllowsPrivate: boolean | undefined;
const allowPrivate = (): boolean => {
  stackAllowsPrivate ??= privateNetworkAllowed();
  return stackAllowsPrivate;
};
const guarded = guardedFetch({ allowPrivate });
const secrets = secretsFromEnv();
const a2a = new SdkA2aClient({ fetch: guarded });
const circuits = new DynamoCircuitStore(parseEnv(TableEnvSchema)[ENV.tableName]);

export const handler = createExecutorHandler('agent-remote', {
  implementations: ({ store, log, clock }) => ({
    agent: createAgentKind({
      types: {
        api: createApiAgent({
          fetchFor: (allowedHosts, maxResponseBytes) =>
            guarded.within({
              allowedHosts,
              maxResponseBytes,
              fields: {
                allowedHosts: 'transport.api.allowed_hosts',
                maxResponseBytes: 'transport.api.max_response_bytes',
              },
            }),
          secrets,
          checks: { evaluate: (workspace, check) => dataChecks().evaluate(workspace, check) },
        }),
        external: createExternalAgent({
          a2a,
          breaker: new CircuitBreaker(circuits, clock),
          secrets,
          store,
          fetch: guarded,
        }),
      },
      // No model here (its clients would load in this function's cold start): plan mode and model-planned
      // orchestrations of api and external agents are answered as errors that say so; build and converse call out.
      store,
      clock,
      parseYaml,
      log,
    }),
  }),
  // An A2A call blocks for at most transport.external.timeout_ms (90 s); stop 10 s before the Lambda does.
  timeoutEarlyInMillis: 10_000,
});

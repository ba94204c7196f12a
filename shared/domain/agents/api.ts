/**
 * `api` agents: one HTTP call per request to their `api` transport's endpoint, with JSONata request and response
 * transforms (beside the transport or in `yaml`, not both).
 */
import { type ApiTransport, ApiTransportSchema, type Transform } from '../agent-types.ts';
import type { ExpressionCheck } from '../definitions.ts';
import type { FieldIssue } from '../errors.ts';
import type { AgentTypeSchema } from './agent-type.ts';
import { one } from './one.ts';

export interface ApiSpecFields {
  api: ApiTransport;
  requestTransform?: Transform;
  responseTransform?: Transform;
}

export const apiAgentType: AgentTypeSchema<'api', ApiSpecFields, 'api', ApiTransport> = {
  type: 'api',
  runner: 'agent-remote',
  transport: { kind: 'api', schema: ApiTransportSchema, headers: (api) => api.headers },
  spec: ({ config, transport, noTransport, issues, expression }) => {
    if (transport === undefined) {
      if (noTransport) {
        issues.push({
          path: 'transport',
          message: 'an api agent needs transport: { kind: "api", api: { endpoint, method } }',
        });
      }
      return undefined;
    }
    const requestTransform = one(
      issues,
      ['transport.api.request_transform', transport.request_transform],
      ['yaml.request_transform', config.request_transform],
    );
    const responseTransform = one(
      issues,
      ['transport.api.response_transform', transport.response_transform],
      ['yaml.response_transform', config.response_transform],
    );
    if (expression) {
      const at = (field: 'request_transform' | 'response_transform') =>
        transport[field] !== undefined ? `transport.api.${field}` : `yaml.${field}`;
      checkTransform(requestTransform, at('request_transform'), expression, issues);
      checkTransform(responseTransform, at('response_transform'), expression, issues);
    }
    return {
      api: transport,
      ...(requestTransform !== undefined ? { requestTransform } : {}),
      ...(responseTransform !== undefined ? { responseTransform } : {}),
    };
  },
};

function checkTransform(
  transform: Transform | undefined,
  path: string,
  check: ExpressionCheck,
  issues: FieldIssue[],
): void {
  if (transform === undefined) return;
  if (typeof transform === 'string') {
    const message = check(transform);
    if (message !== undefined) issues.push({ path, message });
    return;
  }
  for (const [key, value] of Object.entries(transform)) {
    if (typeof value === 'string' || (value !== null && typeof value === 'object' && !Array.isArray(value))) {
      checkTransform(value as Transform, `${path}.${key}`, check, issues);
    }
  }
}

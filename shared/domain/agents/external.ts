/**
 * `external` agents: partners reached over A2A at their `external` transport's endpoint, behind a circuit
 * breaker.
 */
import { type ExternalTransport, ExternalTransportSchema } from '../agent-types.ts';
import type { AgentTypeSchema } from './agent-type.ts';

export interface ExternalSpecFields {
  external: ExternalTransport;
}

export const externalAgentType: AgentTypeSchema<
  'external',
  ExternalSpecFields,
  'external',
  ExternalTransport
> = {
  type: 'external',
  runner: 'agent-remote',
  transport: { kind: 'external', schema: ExternalTransportSchema, headers: (external) => external.headers },
  spec: ({ transport, noTransport, issues }) => {
    if (transport !== undefined) return { external: transport };
    if (noTransport) {
      issues.push({
        path: 'transport',
        message:
          'an external agent needs transport: { kind: "external", external: { endpoint, protocol: "a2a" } }',
      });
    }
    return undefined;
  },
};

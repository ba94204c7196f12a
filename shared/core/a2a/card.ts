/**
 * A crumbs agent's A2A agent card, from its definition: name and description, the JSON-RPC interface at
 * `/a2a/workspaces/{ws}/agents/{agent_id}`, one skill per mode it answers in (converse always; plan and build when
 * its definition names them), and the API's bearer token (a JWT on AWS) as its security scheme. Streaming is
 * offered (the task's states as server-sent events); push notifications are not (the SDK refuses those calls).
 */
import type { AgentCard, AgentSkill } from '@a2a-js/sdk';

const MODE_SKILLS: Record<string, { name: string; description: string }> = {
  converse: { name: 'Converse', description: 'Answers a message.' },
  plan: { name: 'Plan', description: 'Writes a plan for a request (send {"mode": "plan"} in a data part).' },
  build: { name: 'Build', description: 'Builds a deliverable (send {"mode": "build"} in a data part).' },
};

export function agentCardOf(
  definition: Record<string, unknown>,
  baseUrl: string,
  workspace: string,
): AgentCard {
  const agent = String(definition.agent_id);
  const modes = Array.isArray(definition.modes)
    ? definition.modes.filter((m): m is string => typeof m === 'string' && m in MODE_SKILLS)
    : [];
  const skills: AgentSkill[] = ['converse', ...modes.filter((m) => m !== 'converse')].map((mode) => ({
    id: mode,
    name: MODE_SKILLS[mode]?.name ?? mode,
    description: MODE_SKILLS[mode]?.description ?? mode,
    tags: [mode],
    examples: [],
    inputModes: ['text/plain', 'application/json'],
    outputModes: ['text/plain', 'application/json'],
    securityRequirements: [],
  }));
  const description =
    typeof definition.description === 'string' && definition.description !== ''
      ? definition.description
      : `The ${agent} agent of crumbs workspace ${workspace}.`;
  return {
    name: agent,
    description,
    supportedInterfaces: [
      {
        url: `${baseUrl}/a2a/workspaces/${encodeURIComponent(workspace)}/agents/${encodeURIComponent(agent)}`,
        protocolBinding: 'JSONRPC',
        tenant: '',
        protocolVersion: '1.0',
      },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { description: "the crumbs API's bearer token", scheme: 'bearer', bearerFormat: 'JWT' },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills,
    signatures: [],
  };
}

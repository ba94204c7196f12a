/**
 * Seed definitions copied verbatim from the design documents in ../shared/seeds/, shared by the tests that check
 * they load (unit) and run (integration) unchanged.
 */

/** Seed 002, "Agent Definition Schema": the older RCRT agent shape. */
export const seed002Breadcrumb = {
  schema_name: 'agent.definition.v1',
  title: 'File Manager Agent',
  tags: ['agent:definition', 'workspace:agents'],
  context: {
    agent_name: 'file-manager',
    agent_entity_id: '00000000-0000-0000-0000-0000000000aa', // Links to agent entity
    description: 'Helps users manage their stored files',

    // What events trigger this agent
    triggers: [
      {
        selector: {
          any_tags: ['user:message', 'chat:input'],
          context_match: [{ path: '$.content', op: 'contains_any', value: ['file', 'list', 'javascript'] }],
        },
      },
    ],

    // No complex context gathering needed!
    // Agent gets the breadcrumb context via existing API: GET /breadcrumbs/{id}
    // This returns the minimal context-view designed for LLM usage

    // LLM configuration
    llm_config: {
      model: 'gpt-4',
      system_prompt: `You are a helpful file management assistant. You can:
        - List and analyze stored files
        - Help users find specific files
        - Invoke file-storage and agent-loader tools
        - Provide file management advice
        
        Always respond with structured JSON containing your response and any tools to invoke.`,

      response_schema: {
        type: 'object',
        required: ['response_text'],
        properties: {
          response_text: {
            type: 'string',
            description: 'Your response to the user',
          },
          tools_to_invoke: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                tool: { type: 'string' },
                input: { type: 'object' },
                reason: { type: 'string' },
              },
            },
          },
          create_breadcrumbs: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                title: { type: 'string' },
                tags: { type: 'array' },
                context: { type: 'object' },
              },
            },
          },
          confidence: { type: 'number', minimum: 0, maximum: 1 },
        },
      },
    },
  },
};

/** `echo`: answers with its input. Useful to test routing and the request/response round trip. */
import type { Tool } from './tool.ts';

export const echoTool: Tool<unknown, unknown> = {
  name: 'echo',
  description: 'Returns its input unchanged.',
  inputSchema: {},
  async run(input) {
    return input;
  },
};

/**
 * A loopback OpenAI-compatible chat-completions server whose behaviour the model id scripts, for integration tests
 * of agents through the real `openai-compatible` adapter (the local stack points OPENAI_COMPATIBLE_BASE_URL here):
 *
 *   rounds-<n>-<tool>     calls <tool> once per round until it has seen n tool results, then answers
 *                         "done after <n> rounds: <last result>"
 *   forbidden-<tool>      calls <tool> once, then answers with what the tool results said
 *   calls-<a>+<b>…        calls every tool named at once (arguments `{"text":"hello"}`), saying why ("I need
 *                         <a>+<b> to finish the job"), then answers "results: <each result, joined by ' | '>"
 *   throttled-<key>       answers 429 with Retry-After: 1 to the first two requests of <key>, then "recovered"
 *   badplan-always-<key>  answers every request with a plan that fails the schema (`{"steps":"none"}`)
 *   badplan-once-<key>    answers the first request with that invalid plan and the next with a valid one
 *                         (`{"steps":[{"title":"fixed after feedback"}]}`), when the retry carries the problems
 *   describe-parts[-<key>]  answers with the content parts of the last user message (`parts: text,
 *                         image_url(image/png, 118 bytes)`): what a model was shown of its attachments
 *   answer-from-prompt[-<key>]  answers every request with the text between `<answer>` and `</answer>` in the
 *                         system prompt (a definition's `system_prompt` scripts its model; the same answer again
 *                         whatever it is told), else "(fake) <model>"
 *
 * Requests per model id are counted (`GET /counts`), so a test can tell how often it was called. Every completion
 * reports the same usage (`FAKE_USAGE`: 10 prompt tokens, 4 of them cached, and 5 completion tokens), unless the
 * model id carries flags after `~` (the script is what comes before the first `~`):
 *
 *   ~bills     bills like a model that writes to its cap: completion tokens = the request's `max_tokens` (or
 *              `max_completion_tokens`, else 1,000), prompt tokens = a quarter of the messages' JSON characters
 *              (within any byte count of the prompt), none cached — a budget's worst case, spent in full
 *   ~hold<ms>  waits that long before a (non-streamed) answer, so concurrent calls overlap
 *
 * What each model id was billed is summed (`GET /usage`: `{ <model>: { calls, prompt_tokens, completion_tokens } }`),
 * the spend a provider would charge.
 *
 * A request with `stream: true` gets the same completion as server-sent chunks (the text word by word, tool calls
 * in pieces, usage in the last chunk). Model ids containing `slow<ms>` wait that long before each chunk (e.g.
 * `answer-from-prompt-slow200-x`); `breaks-once` cuts the first streamed request of that model id after three
 * chunks without `[DONE]` (a connection lost mid-answer), and answers the next in full.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const FAKE_USAGE = { input: 10, cached: 4, output: 5 } as const;
const USAGE = {
  prompt_tokens: FAKE_USAGE.input,
  completion_tokens: FAKE_USAGE.output,
  prompt_tokens_details: { cached_tokens: FAKE_USAGE.cached },
};

interface ChatRequest {
  model: string;
  stream?: boolean;
  max_tokens?: number;
  max_completion_tokens?: number;
  messages: { role: string; content?: string | null | Record<string, unknown>[]; tool_calls?: unknown[] }[];
}

export interface FakeOpenAi {
  /** The base URL (…/v1) to give as OPENAI_COMPATIBLE_BASE_URL. */
  readonly baseUrl: string;
  stop(): Promise<void>;
}

export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const counts = new Map<string, number>();
  const billed = new Map<string, { calls: number; prompt_tokens: number; completion_tokens: number }>();
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method === 'GET' && req.url === '/v1/counts') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(Object.fromEntries(counts)));
        return;
      }
      if (req.method === 'GET' && req.url === '/v1/usage') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(Object.fromEntries(billed)));
        return;
      }
      const body = JSON.parse(await read(req)) as ChatRequest;
      const n = (counts.get(body.model) ?? 0) + 1;
      counts.set(body.model, n);
      const [scriptName = '', ...flags] = body.model.split('~');
      const hold = Number(flags.find((f) => /^hold\d+$/.test(f))?.slice(4) ?? 0);
      if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
      const reply = script({ ...body, model: scriptName }, n);
      if (reply.kind === 'completion') {
        const usage = flags.includes('bills')
          ? {
              prompt_tokens: Math.ceil(JSON.stringify(body.messages).length / 4),
              completion_tokens: body.max_tokens ?? body.max_completion_tokens ?? 1000,
            }
          : USAGE;
        reply.body.usage = usage;
        const sum = billed.get(body.model) ?? { calls: 0, prompt_tokens: 0, completion_tokens: 0 };
        billed.set(body.model, {
          calls: sum.calls + 1,
          prompt_tokens: sum.prompt_tokens + usage.prompt_tokens,
          completion_tokens: sum.completion_tokens + usage.completion_tokens,
        });
      }
      if (reply.kind === 'error') {
        res.statusCode = reply.status;
        for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
        res.end(JSON.stringify({ error: { message: reply.message } }));
        return;
      }
      if (body.stream === true) {
        await streamCompletion(res, body.model, reply.body, n);
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(reply.body));
    })().catch((error: unknown) => {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: { message: String(error) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** What the fake billed each model id: calls, prompt and completion tokens. */
export async function fakeOpenAiUsage(
  baseUrl: string,
): Promise<Record<string, { calls: number; prompt_tokens: number; completion_tokens: number }>> {
  return (await (await fetch(`${baseUrl}/usage`)).json()) as Record<
    string,
    { calls: number; prompt_tokens: number; completion_tokens: number }
  >;
}

/** How often the fake was asked about each model id. */
export async function fakeOpenAiCounts(baseUrl: string): Promise<Record<string, number>> {
  return (await (await fetch(`${baseUrl}/counts`)).json()) as Record<string, number>;
}

type Reply =
  | { kind: 'completion'; body: Record<string, unknown> }
  | { kind: 'error'; status: number; headers: Record<string, string>; message: string };

function script(body: ChatRequest, requestNumber: number): Reply {
  const toolResults = body.messages.filter((m) => m.role === 'tool');
  const last = String(toolResults[toolResults.length - 1]?.content ?? '');
  const rounds = /^rounds-(\d+)-(.+)$/.exec(body.model);
  if (rounds) {
    const wanted = Number(rounds[1]);
    return toolResults.length < wanted
      ? toolCall(rounds[2] ?? 'echo', toolResults.length + 1)
      : answer(`done after ${toolResults.length} rounds: ${last}`);
  }
  const forbidden = /^forbidden-(.+)$/.exec(body.model);
  if (forbidden) {
    return toolResults.length === 0
      ? toolCall(forbidden[1] ?? 'calculator', 1)
      : answer(`the tool said: ${toolResults.map((m) => m.content).join(' | ')}`);
  }
  const calls = /^calls-(.+)$/.exec(body.model);
  if (calls) {
    const names = (calls[1] ?? 'echo').split('+');
    return toolResults.length === 0
      ? completion({
          choices: [
            {
              message: {
                role: 'assistant',
                content: `I need ${names.join('+')} to finish the job`,
                tool_calls: names.map((name, i) => ({
                  id: `call-${i + 1}`,
                  type: 'function',
                  function: { name, arguments: JSON.stringify({ text: 'hello' }) },
                })),
              },
              finish_reason: 'tool_calls',
            },
          ],
          usage: USAGE,
        })
      : answer(`results: ${toolResults.map((m) => m.content).join(' | ')}`);
  }
  if (body.model.startsWith('throttled-')) {
    if (requestNumber <= 2) {
      return {
        kind: 'error',
        status: 429,
        headers: { 'retry-after': '1' },
        message: 'rate limited, try again in 1 s',
      };
    }
    return answer(`recovered after ${requestNumber - 1} throttled calls`);
  }
  if (body.model.startsWith('badplan-always-')) return answer('{"steps":"none"}');
  if (body.model.startsWith('badplan-once-')) {
    const feedback = body.messages.some(
      (m) => m.role === 'user' && /is not valid: /.test(typeof m.content === 'string' ? m.content : ''),
    );
    return requestNumber === 1 || !feedback
      ? answer('{"steps":"none"}')
      : answer('{"steps":[{"title":"fixed after feedback"}]}');
  }
  if (body.model.startsWith('describe-parts')) {
    // The user message's content parts as the model received them: `text, image_url(image/png, 118 bytes)`.
    const user = body.messages.findLast((m) => m.role === 'user')?.content;
    const parts = Array.isArray(user) ? user : [{ type: 'text' }];
    const described = parts.map((p) => {
      const url = (p.image_url as { url?: string } | undefined)?.url;
      const m = url ? /^data:([^;]+);base64,(.*)$/.exec(url) : null;
      return m
        ? `${String(p.type)}(${m[1]}, ${Buffer.from(m[2] ?? '', 'base64').length} bytes)`
        : String(p.type);
    });
    return answer(`parts: ${described.join(', ')}`);
  }
  if (body.model.startsWith('answer-from-prompt')) {
    const content = body.messages.find((m) => m.role === 'system')?.content;
    const system = typeof content === 'string' ? content : '';
    const scripted = /<answer>([\s\S]*?)<\/answer>/.exec(system)?.[1];
    if (scripted !== undefined) return answer(scripted.trim());
  }
  return answer(`(fake) ${body.model}`);
}

function toolCall(name: string, round: number): Reply {
  return completion({
    choices: [
      {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call-${round}`,
              type: 'function',
              function: { name, arguments: JSON.stringify({ round }) },
            },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: USAGE,
  });
}

function answer(text: string): Reply {
  return completion({
    choices: [{ message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: USAGE,
  });
}

function completion(body: Record<string, unknown>): Reply {
  return { kind: 'completion', body };
}

/** The completion as OpenAI's streaming chunks, paced and broken as the model id says. */
async function streamCompletion(
  res: ServerResponse,
  model: string,
  body: Record<string, unknown>,
  requestNumber: number,
): Promise<void> {
  const delayMs = Number(/slow(\d+)/.exec(model)?.[1] ?? 0);
  const breakAfter = model.includes('breaks-once') && requestNumber === 1 ? 3 : Number.POSITIVE_INFINITY;
  const choice = (body.choices as { message: Record<string, unknown>; finish_reason: string }[])[0];
  const message = choice?.message ?? {};
  const chunks: Record<string, unknown>[] = [];
  const content = typeof message.content === 'string' ? message.content : '';
  for (const word of content.match(/\S+\s*|\s+/g) ?? []) chunks.push({ content: word });
  const calls = (message.tool_calls ?? []) as { id: string; function: { name: string; arguments: string } }[];
  calls.forEach((call, index) => {
    const args = call.function.arguments;
    const half = Math.ceil(args.length / 2);
    chunks.push({
      tool_calls: [
        {
          index,
          id: call.id,
          type: 'function',
          function: { name: call.function.name, arguments: args.slice(0, half) },
        },
      ],
    });
    chunks.push({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] });
  });
  res.setHeader('content-type', 'text/event-stream');
  res.flushHeaders();
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  let sent = 0;
  for (const delta of chunks) {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (sent === breakAfter) {
      res.destroy();
      return;
    }
    send({ object: 'chat.completion.chunk', model, choices: [{ index: 0, delta, finish_reason: null }] });
    sent++;
  }
  send({
    object: 'chat.completion.chunk',
    model,
    choices: [{ index: 0, delta: {}, finish_reason: choice?.finish_reason ?? 'stop' }],
  });
  send({ object: 'chat.completion.chunk', model, choices: [], usage: body.usage });
  res.end('data: [DONE]\n\n');
}

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

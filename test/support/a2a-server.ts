/**
 * A real A2A v1.0 partner on loopback, built with `@a2a-js/sdk` (its Express JSON-RPC handler and agent card
 * handler), for the A2A client's tests and the external agent's integration tests.
 *
 * The agent adds numbers: a message with a data part `{ a, b }` (or text "a+b") becomes a task that goes
 * submitted → working → an artifact `{ sum }` → completed. A data part `{ fail: "why" }` ends the task failed;
 * `{ slowMs }` keeps it working that long before completing (to test a task that outlives a blocking call).
 * `GET /health` answers 200. The card offers streaming unless `streaming: false`. `stop()` closes the port, so the partner is down; `start()` opens it again.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentCard, Part } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';

export interface TestA2aServer {
  /** `http://127.0.0.1:<port>`: the agent card is at `/.well-known/agent-card.json`. */
  readonly baseUrl: string;
  /** JSON-RPC requests received (method names), and health checks. */
  readonly requests: string[];
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const TASK_STATE = { submitted: 1, working: 2, completed: 3, failed: 4 } as const;
const ROLE_AGENT = 2;

function dataPart(value: unknown): Part {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}
function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

class AdderExecutor implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const parts = ctx.userMessage.parts;
    let args: Record<string, unknown> = {};
    for (const part of parts) {
      if (part.content?.$case === 'data')
        args = { ...args, ...(part.content.value as Record<string, unknown>) };
      if (part.content?.$case === 'text') {
        const m = /(-?\d+(?:\.\d+)?)\s*\+\s*(-?\d+(?:\.\d+)?)/.exec(part.content.value);
        if (m) args = { ...args, a: Number(m[1]), b: Number(m[2]) };
      }
    }
    const status = (state: number, text?: string) => ({
      state,
      message: text
        ? {
            messageId: `${ctx.taskId}-${state}`,
            contextId: ctx.contextId,
            taskId: ctx.taskId,
            role: ROLE_AGENT,
            parts: [textPart(text)],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          }
        : undefined,
      timestamp: new Date().toISOString(),
    });
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TASK_STATE.submitted),
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TASK_STATE.working),
        metadata: undefined,
      }),
    );
    if (typeof args.slowMs === 'number') await new Promise((r) => setTimeout(r, args.slowMs as number));
    if (typeof args.fail === 'string') {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          status: status(TASK_STATE.failed, `cannot add: ${args.fail}`),
          metadata: undefined,
        }),
      );
      bus.finished();
      return;
    }
    const sum = Number(args.a) + Number(args.b);
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        artifact: {
          artifactId: 'result',
          name: 'result',
          description: 'the sum',
          parts: [dataPart({ sum })],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TASK_STATE.completed, `the sum is ${sum}`),
        metadata: undefined,
      }),
    );
    bus.finished();
  }

  async cancelTask(): Promise<void> {}
}

export async function startA2aServer(options: { streaming?: boolean } = {}): Promise<TestA2aServer> {
  const requests: string[] = [];
  let port = 0;
  let server: Server | undefined;
  const card = (): AgentCard => ({
    name: 'Adder',
    description: 'Adds two numbers',
    supportedInterfaces: [
      {
        url: `http://127.0.0.1:${port}/a2a/jsonrpc`,
        protocolBinding: 'JSONRPC',
        tenant: '',
        protocolVersion: '1.0',
      },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: options.streaming ?? true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json'],
    skills: [
      {
        id: 'add',
        name: 'add',
        description: 'Adds a and b',
        tags: [],
        examples: ['2+3'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  });
  const app = express();
  app.use((req, _res, next) => {
    if (req.path === '/health') requests.push('health');
    next();
  });
  app.get('/health', (_req, res) => {
    res.status(200).json({ ok: true });
  });
  let handler: DefaultRequestHandler | undefined;
  const requestHandler = () => {
    handler ??= new DefaultRequestHandler(card(), new InMemoryTaskStore(), new AdderExecutor());
    return handler;
  };
  app.use('/.well-known/agent-card.json', (req, res, next) =>
    agentCardHandler({ agentCardProvider: requestHandler() })(req, res, next),
  );
  app.use(express.json(), (req, _res, next) => {
    if (req.path === '/a2a/jsonrpc' && req.body?.method) requests.push(String(req.body.method));
    next();
  });
  app.use('/a2a/jsonrpc', (req, res, next) =>
    jsonRpcHandler({ requestHandler: requestHandler(), userBuilder: UserBuilder.noAuthentication })(
      req,
      res,
      next,
    ),
  );
  const listen = () =>
    new Promise<void>((resolve) => {
      const listening = app.listen(port, '127.0.0.1', () => {
        port = (listening.address() as AddressInfo).port;
        resolve();
      });
      server = listening;
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server) return resolve();
      server.closeAllConnections();
      server.close(() => resolve());
      server = undefined;
    });
  await listen();
  return {
    get baseUrl() {
      return `http://127.0.0.1:${port}`;
    },
    requests,
    stop,
    start: listen,
    close: stop,
  };
}

/**
 * The onSubscribe handler's source with the operator's claim name filled in (`onSubscribeCode`: what the CDK app
 * inlines into the `crumbs` channel namespace), and the same text made runnable in Node (`loadOnSubscribe`: what
 * the local events server calls for every subscribe), with a shim of the one `util` function it uses. Read from
 * the repository at synth time and by the local stack, never inside a Lambda bundle.
 */
import { readFileSync } from 'node:fs';

const SOURCE_URL = new URL('./on-subscribe.appsync.js', import.meta.url);
const CLAIM_LINE = "const WORKSPACES_CLAIM = 'crumbs:workspaces';";
const AUDIENCES_LINE = 'const AUDIENCES = null;';
const IMPORT_LINE = "import { util } from '@aws-appsync/utils';";

/** Thrown by the shim's `util.unauthorized()`: AppSync answers such a subscribe with an Unauthorized error. */
export class SubscribeUnauthorizedError extends Error {
  constructor() {
    super('Unauthorized');
    this.name = 'SubscribeUnauthorizedError';
  }
}

/**
 * The handler's APPSYNC_JS source, reading the workspaces from `workspacesClaim` and taking tokens issued to one of
 * `audiences` (`aud`, else `client_id`); `null` leaves the audience to the API's auth mode (tokens that carry none).
 * The audiences may be CloudFormation tokens (a client id the stack creates): they are filled in at deploy time.
 */
export function onSubscribeCode(workspacesClaim: string, audiences: readonly string[] | null = null): string {
  const source = readFileSync(SOURCE_URL, 'utf8');
  if (!source.includes(CLAIM_LINE) || !source.includes(AUDIENCES_LINE) || !source.includes(IMPORT_LINE)) {
    throw new Error(
      `${SOURCE_URL.pathname}: the claim, audiences or import line this loader fills in is missing`,
    );
  }
  if (audiences !== null && audiences.length === 0) {
    throw new Error('onSubscribeCode: audiences must name at least one audience (or be null)');
  }
  return source
    .replace(CLAIM_LINE, `const WORKSPACES_CLAIM = ${JSON.stringify(workspacesClaim)};`)
    .replace(AUDIENCES_LINE, `const AUDIENCES = ${audiences === null ? 'null' : JSON.stringify(audiences)};`);
}

export interface SubscribeContext {
  identity?: { sub?: string; issuer?: string; claims?: Record<string, unknown> } | null;
  info: { channel: { path: string; segments: string[] }; channelNamespace: { name: string } };
}

export interface OnSubscribeHandler {
  /** Returns when the subscription is allowed; throws SubscribeUnauthorizedError (or the handler's error) when not. */
  onSubscribe(ctx: SubscribeContext): void;
  workspaceOfChannel(path: string): string | null;
  grantedWorkspaces(raw: unknown): string[] | null;
  audienceAccepted(claims: Record<string, unknown>): boolean;
  subscriberMayRead(claims: unknown, path: string): boolean;
}

/** The handler's exact text, run in Node with `util` shimmed. */
export function loadOnSubscribe(
  workspacesClaim: string,
  audiences: readonly string[] | null = null,
): OnSubscribeHandler {
  const body = onSubscribeCode(workspacesClaim, audiences)
    .replace(IMPORT_LINE, '')
    .replace(/^export function /gm, 'function ');
  const util = {
    unauthorized(): never {
      throw new SubscribeUnauthorizedError();
    },
    error(message: string): never {
      throw new Error(message);
    },
  };
  // The handler's source is the repository's own file (not data), evaluated once per server start.
  const make = new Function(
    'util',
    `"use strict";\n${body}\nreturn { onSubscribe, workspaceOfChannel, grantedWorkspaces, audienceAccepted, subscriberMayRead };`,
  ) as (u: typeof util) => OnSubscribeHandler;
  return make(util);
}

/**
 * The delta channel of one request, `/crumbs/<workspace segments>/<request segment>`, and the change channel of a
 * workspace, `/changes/<workspace segments>`, on AppSync Events (and the local twin). Channel segments allow only letters, digits and `-` (at most 50 characters, 5 segments with the
 * namespace), so the workspace is written reversibly into 1-3 segments the onSubscribe handler decodes
 * (`on-subscribe.appsync.js` holds the same rules in the APPSYNC_JS subset; the unit tests hold them equal):
 * `-` is written `-d`, `_` `-u`; the result is cut into pieces of at most 49 characters, never inside a pair;
 * each piece gets a leading `w`, so no segment starts or ends with `-`. The request is the first 32 hex digits of
 * SHA-256(workspace NUL request id): fixed length, any id fits. Only the canonical path of a workspace decodes,
 * and no wildcard does, so a subscription names exactly one request of exactly one workspace (or, in the `changes`
 * namespace, exactly one workspace's changes).
 * Web Crypto (not node:crypto) so the dashboard's bundle computes the same channel.
 */
import { ValidationError } from '#shared/domain/errors.ts';

/**
 * `WORKSPACE_PATTERN` and `BREADCRUMB_ID_PATTERN` of `shared/domain/breadcrumb.ts`, which loads node:crypto and so
 * cannot be in the dashboard's bundle; `test/unit/core/streaming/channel.test.ts` holds them equal.
 */
export const WORKSPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The channel namespace every delta channel lives in (`ChannelNamespace` in infra, the local events server). */
export const DELTA_NAMESPACE = 'crumbs';
/**
 * The namespace of the change channels: one per workspace, carrying each change's summary (the `/changes` item).
 * A namespace of its own, so publishing rights stay apart: only the publisher may publish changes, only the agent
 * executor deltas.
 */
export const CHANGES_NAMESPACE = 'changes';
/** Every namespace of the channels API, each with the same onSubscribe handler. */
export const CHANNEL_NAMESPACES: readonly string[] = [DELTA_NAMESPACE, CHANGES_NAMESPACE];

const PIECE_CHARS = 49;
const REQUEST_SEGMENT = /^[0-9a-f]{32}$/;
const SEGMENT = /^w[A-Za-z0-9-]{1,49}$/;

/** The workspace's segments (without the namespace), 1-3 of them. */
export function workspaceSegments(workspace: string): string[] {
  const pairs = [...workspace].map((c) => (c === '-' ? '-d' : c === '_' ? '-u' : c));
  const segments: string[] = [];
  let piece = '';
  for (const unit of pairs) {
    if (piece.length + unit.length > PIECE_CHARS) {
      segments.push(`w${piece}`);
      piece = '';
    }
    piece += unit;
  }
  segments.push(`w${piece}`);
  return segments;
}

function checkWorkspace(workspace: string): void {
  if (!WORKSPACE_PATTERN.test(workspace)) {
    throw new ValidationError([
      {
        path: 'workspace',
        message: 'expected 1-64 letters, digits, "_" or "-", starting with a letter or digit',
      },
    ]);
  }
}

/** The channel path (`/changes/...`) every change of `workspace` is published to (`change-feed.ts`). */
export function changesChannelFor(workspace: string): string {
  checkWorkspace(workspace);
  return `/${[CHANGES_NAMESPACE, ...workspaceSegments(workspace)].join('/')}`;
}

/** The channel path (`/crumbs/...`) the deltas of `requestId` in `workspace` are published to. */
export async function channelFor(workspace: string, requestId: string): Promise<string> {
  checkWorkspace(workspace);
  if (!REQUEST_ID_PATTERN.test(requestId)) {
    throw new ValidationError([
      { path: 'request_id', message: 'expected 1-128 characters: letters, digits, ".", "_", ":" or "-"' },
    ]);
  }
  const bytes = new TextEncoder().encode(`${workspace}\0${requestId}`);
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes));
  const hex = [...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `/${[DELTA_NAMESPACE, ...workspaceSegments(workspace), hex].join('/')}`;
}

/**
 * The workspace a channel path belongs to, or undefined when it is neither a delta channel's canonical path
 * (`/crumbs/<ws>/<request>`) nor a change channel's (`/changes/<ws>`).
 */
export function workspaceOfChannel(path: string): string | undefined {
  const segments = path.startsWith('/') ? path.slice(1).split('/') : path.split('/');
  let own: string[];
  if (segments[0] === DELTA_NAMESPACE) {
    if (segments.length < 3 || segments.length > 5) return undefined;
    if (!REQUEST_SEGMENT.test(segments[segments.length - 1] ?? '')) return undefined;
    own = segments.slice(1, -1);
  } else if (segments[0] === CHANGES_NAMESPACE) {
    if (segments.length < 2 || segments.length > 4) return undefined;
    own = segments.slice(1);
  } else return undefined;
  if (!own.every((s) => SEGMENT.test(s))) return undefined;
  const escaped = own.map((s) => s.slice(1)).join('');
  let workspace = '';
  for (let i = 0; i < escaped.length; i += 1) {
    const c = escaped[i] ?? '';
    if (c !== '-') workspace += c;
    else {
      const next = escaped[i + 1];
      if (next === 'd') workspace += '-';
      else if (next === 'u') workspace += '_';
      else return undefined;
      i += 1;
    }
  }
  if (!WORKSPACE_PATTERN.test(workspace)) return undefined;
  const canonical = workspaceSegments(workspace);
  return canonical.length === own.length && canonical.every((s, i) => s === own[i]) ? workspace : undefined;
}

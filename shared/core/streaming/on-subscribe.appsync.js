/**
 * The onSubscribe handler of the `crumbs` and `changes` channel namespaces (APPSYNC_JS): a subscription is allowed
 * only to a delta channel or a change channel (`channel.ts`) whose workspace the caller's token grants, read from the workspaces claim exactly as the
 * API reads it (`callerFromClaims` in shared/core/api/http.ts: a JSON array, its text, a space- or comma-separated
 * list, API Gateway's `[a b]`, `*`; of `cognito:groups`, only the groups named as workspaces), and only to a token
 * issued to one of the API's audiences, by the rule of API Gateway's JWT authorizer: `aud` when the token has one
 * (ID tokens), else `client_id` (Cognito access tokens) — AppSync's own OIDC client id check reads only `aud`. The
 * CDK app inlines this file (claim name and audiences filled in by `onSubscribeCode`), and the local events server
 * runs the same text for every subscribe, so the check is one. Written in the
 * runtime's subset: no regular expressions, try, throw, while or classic for loops; a claim that breaks JSON.parse
 * ends the handler with an error, which refuses the subscription as the API refuses such a claim.
 */
import { util } from '@aws-appsync/utils';

const WORKSPACES_CLAIM = 'crumbs:workspaces';
const AUDIENCES = null;
const COGNITO_GROUPS = 'cognito:groups';
const NAMESPACE = 'crumbs';
const CHANGES_NAMESPACE = 'changes';
const MAX_CLAIMED_WORKSPACES = 100;
const MAX_CLAIM_CHARS = 7200;
const PIECE_CHARS = 49;
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const HEX = '0123456789abcdef';
// What JavaScript's \s and String.prototype.trim treat as white space.
const SPACE =
  ' \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff';

function onlyOf(text, allowed) {
  for (const c of text.split('')) {
    if (allowed.indexOf(c) < 0) return false;
  }
  return true;
}

function isWorkspace(name) {
  return (
    typeof name === 'string' &&
    name.length >= 1 &&
    name.length <= 64 &&
    ALNUM.indexOf(name.charAt(0)) >= 0 &&
    onlyOf(name, `${ALNUM}_-`)
  );
}

function workspaceSegments(workspace) {
  const segments = [];
  let piece = '';
  for (const c of workspace.split('')) {
    const unit = c === '-' ? '-d' : c === '_' ? '-u' : c;
    if (piece.length + unit.length > PIECE_CHARS) {
      segments.push(`w${piece}`);
      piece = '';
    }
    piece = piece + unit;
  }
  segments.push(`w${piece}`);
  return segments;
}

/** The workspace of a delta channel's (`/crumbs/<ws>/<request>`) or a change channel's (`/changes/<ws>`) path, or null. */
export function workspaceOfChannel(path) {
  if (typeof path !== 'string') return null;
  const segments = (path.charAt(0) === '/' ? path.slice(1) : path).split('/');
  let own = null;
  if (segments[0] === NAMESPACE) {
    if (segments.length < 3 || segments.length > 5) return null;
    const request = segments[segments.length - 1];
    if (request.length !== 32 || !onlyOf(request, HEX)) return null;
    own = segments.slice(1, segments.length - 1);
  } else if (segments[0] === CHANGES_NAMESPACE) {
    if (segments.length < 2 || segments.length > 4) return null;
    own = segments.slice(1);
  } else return null;
  let escaped = '';
  for (const s of own) {
    if (s.length < 2 || s.length > 50 || s.charAt(0) !== 'w' || !onlyOf(s, `${ALNUM}-`)) return null;
    escaped = escaped + s.slice(1);
  }
  let workspace = '';
  let pending = false;
  for (const c of escaped.split('')) {
    if (pending) {
      if (c === 'd') workspace = `${workspace}-`;
      else if (c === 'u') workspace = `${workspace}_`;
      else return null;
      pending = false;
    } else if (c === '-') pending = true;
    else workspace = workspace + c;
  }
  if (pending || !isWorkspace(workspace)) return null;
  const canonical = workspaceSegments(workspace);
  if (canonical.length !== own.length) return null;
  for (const i of Object.keys(own)) {
    if (canonical[i] !== own[i]) return null;
  }
  return workspace;
}

function trimmed(text) {
  const chars = text.split('');
  let start = 0;
  let end = chars.length;
  for (const c of chars) {
    if (SPACE.indexOf(c) < 0) break;
    start = start + 1;
  }
  for (const c of chars.slice(start).reverse()) {
    if (SPACE.indexOf(c) < 0) break;
    end = end - 1;
  }
  return text.slice(start, end);
}

function splitList(text) {
  const names = [];
  let current = '';
  for (const c of text.split('')) {
    if (c === ',' || SPACE.indexOf(c) >= 0) {
      if (current !== '') names.push(current);
      current = '';
    } else current = current + c;
  }
  if (current !== '') names.push(current);
  return names;
}

/** The workspaces a claim grants: a list of names, or ['*'] for all; null when it grants none. */
export function grantedWorkspaces(raw) {
  let names = null;
  if (raw === undefined || raw === null) return null;
  if (Array.isArray(raw)) names = raw;
  else if (typeof raw === 'string') {
    let text = trimmed(raw);
    if (text.length > MAX_CLAIM_CHARS) return null;
    if (text.charAt(0) === '[' && text.indexOf('"') >= 0) {
      const value = JSON.parse(text);
      if (!Array.isArray(value)) return null;
      names = value;
    } else {
      if (text.charAt(0) === '[') text = text.slice(1);
      if (text.charAt(text.length - 1) === ']') text = text.slice(0, text.length - 1);
      names = splitList(text);
    }
  } else return null;
  if (WORKSPACES_CLAIM === COGNITO_GROUPS) {
    const workspaces = [];
    for (const name of names) {
      if (name === '*' || isWorkspace(name)) workspaces.push(name);
    }
    names = workspaces;
  }
  if (names.length === 0 || names.length > MAX_CLAIMED_WORKSPACES) return null;
  for (const name of names) {
    if (name !== '*' && !isWorkspace(name)) return null;
  }
  return names;
}

/** Whether the token was issued to one of the API's audiences: its `aud` when it has one, else its `client_id`. */
export function audienceAccepted(claims) {
  if (AUDIENCES === null) return true;
  const aud = claims.aud;
  if (aud !== undefined && aud !== null) {
    const list = Array.isArray(aud) ? aud : [aud];
    for (const a of list) {
      if (typeof a === 'string' && AUDIENCES.indexOf(a) >= 0) return true;
    }
    return false;
  }
  return typeof claims.client_id === 'string' && AUDIENCES.indexOf(claims.client_id) >= 0;
}

/** Whether a caller with these token claims may read the channel at `path`. */
export function subscriberMayRead(claims, path) {
  const workspace = workspaceOfChannel(path);
  if (workspace === null || claims === null || typeof claims !== 'object') return false;
  if (!audienceAccepted(claims)) return false;
  const granted = grantedWorkspaces(claims[WORKSPACES_CLAIM]);
  if (granted === null) return false;
  return granted.indexOf('*') >= 0 || granted.indexOf(workspace) >= 0;
}

export function onSubscribe(ctx) {
  const claims = ctx.identity ? ctx.identity.claims : null;
  if (!subscriberMayRead(claims ?? null, ctx.info.channel.path)) util.unauthorized();
}

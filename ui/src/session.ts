/**
 * Login and routing state. The token and workspace can come from the URL fragment (`#token=…&workspace=demo`,
 * what `crumbs dev` prints): a fragment never reaches a server or its logs. They are kept in localStorage, and the
 * fragment is replaced at once so the token does not stay in the address bar or the history. A person who signed
 * in with the stack's issuer (`sign-in.ts`) has a session without a pasted token.
 */
import type { Session } from './api.ts';
import { forgetSignIn, signedIn } from './sign-in.ts';

const TOKEN_KEY = 'crumbs.token';
const WORKSPACE_KEY = 'crumbs.workspace';
const RECENT_KEY = 'crumbs.workspaces';

export function readSession(): Session | undefined {
  const fragment = new URLSearchParams(location.hash.replace(/^#\/?/, ''));
  const token = fragment.get('token');
  if (token) {
    // A token given in the link is what this tab is opened for: it replaces a signed-in session.
    forgetSignIn();
    localStorage.setItem(TOKEN_KEY, token);
    const workspace = fragment.get('workspace');
    if (workspace) setWorkspace(workspace);
    history.replaceState(null, '', `${location.pathname}${location.search}#/live`);
  }
  const workspace = localStorage.getItem(WORKSPACE_KEY) || 'demo';
  if (signedIn()) return { token: '', workspace, signedIn: true };
  const stored = localStorage.getItem(TOKEN_KEY);
  return stored ? { token: stored, workspace } : undefined;
}

export function saveSession(session: Session): void {
  localStorage.setItem(TOKEN_KEY, session.token);
  setWorkspace(session.workspace);
}

export function forgetToken(): void {
  localStorage.removeItem(TOKEN_KEY);
}

export function setWorkspace(workspace: string): void {
  localStorage.setItem(WORKSPACE_KEY, workspace);
  const recent = [workspace, ...recentWorkspaces().filter((w) => w !== workspace)].slice(0, 8);
  localStorage.setItem(RECENT_KEY, JSON.stringify(recent));
}

export function recentWorkspaces(): string[] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(RECENT_KEY) ?? '[]');
    return Array.isArray(parsed) ? parsed.filter((w): w is string => typeof w === 'string') : [];
  } catch {
    return [];
  }
}

export type Route =
  | { view: 'live' }
  | { view: 'breadcrumb'; id: string }
  | { view: 'thread'; id: string }
  | { view: 'definitions' }
  | { view: 'errors' }
  | { view: 'chat' }
  | { view: 'runs' }
  | { view: 'usage' }
  | { view: 'approvals' }
  | { view: 'run'; id: string };

export function parseRoute(hash: string): Route {
  const [view, id] = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if ((view === 'breadcrumb' || view === 'thread' || view === 'run') && id) return { view, id };
  if (
    view === 'definitions' ||
    view === 'errors' ||
    view === 'chat' ||
    view === 'runs' ||
    view === 'usage' ||
    view === 'approvals'
  )
    return { view };
  return { view: 'live' };
}

export function href(route: Route): string {
  return 'id' in route ? `#/${route.view}/${encodeURIComponent(route.id)}` : `#/${route.view}`;
}

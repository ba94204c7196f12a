/**
 * The crumbs dashboard: a single page served at /ui on the API's origin. Views: Live, Breadcrumb, Thread,
 * Definitions, Errors, Chat, Runs (and one Run), Approvals (with the pending count in the navigation), Usage. Routing is in the URL fragment (`#/thread/<id>`), so links can be shared and the
 * server only ever serves the same three files.
 */
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { SignInConfig } from '#shared/client/sign-in.ts';
import { Api, type Session } from './api.ts';
import {
  forgetToken,
  href,
  parseRoute,
  type Route,
  readSession,
  recentWorkspaces,
  saveSession,
  setWorkspace,
} from './session.ts';
import {
  completeSignIn,
  forgetSignIn,
  identity,
  isSignInReturn,
  signedIn,
  signInConfig,
  signOut,
  startSignIn,
} from './sign-in.ts';
import './styles.css';
import { ApprovalsView, usePendingApprovals } from './views/approvals.tsx';
import { BreadcrumbView } from './views/breadcrumb.tsx';
import { ChatView } from './views/chat.tsx';
import { DefinitionsView } from './views/definitions.tsx';
import { ErrorsView } from './views/errors.tsx';
import { LiveView } from './views/live.tsx';
import { RunsView, RunView } from './views/runs.tsx';
import { ThreadView } from './views/thread.tsx';
import { UsageView } from './views/usage.tsx';

const NAV: { view: Route['view']; label: string }[] = [
  { view: 'live', label: 'Live' },
  { view: 'chat', label: 'Chat' },
  { view: 'runs', label: 'Runs' },
  { view: 'approvals', label: 'Approvals' },
  { view: 'definitions', label: 'Definitions' },
  { view: 'errors', label: 'Errors' },
  { view: 'usage', label: 'Usage' },
];

function App() {
  const [session, setSession] = useState<Session | undefined>(() =>
    isSignInReturn() ? undefined : readSession(),
  );
  const [returning, setReturning] = useState(() => isSignInReturn());
  const [signInError, setSignInError] = useState<string>();
  // Back from the issuer's sign-in page with a code: exchange it, then open the person's first workspace.
  useEffect(() => {
    if (!returning) return;
    void (async () => {
      try {
        const config = await signInConfig();
        if (!config.available) throw new Error(config.detail);
        await completeSignIn(config);
        const session = signedIn();
        if (session) chooseWorkspace(identity(session).workspaces);
        setSession(readSession());
      } catch (error) {
        setSignInError((error as Error).message);
      } finally {
        setReturning(false);
      }
    })();
  }, [returning]);
  const [route, setRoute] = useState<Route>(() => parseRoute(location.hash));
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  const api = useMemo(() => (session ? new Api(session) : undefined), [session]);
  const [answered, setAnswered] = useState(0);
  const pending = usePendingApprovals(api, `${route.view}:${answered}`);

  if (returning) {
    return (
      <div class="login">
        <p data-signing-in>Signing in…</p>
      </div>
    );
  }
  if (!session || !api) {
    return (
      <Login
        error={signInError}
        onLogin={(s) => {
          forgetSignIn();
          saveSession(s);
          setSession(s);
        }}
      />
    );
  }
  const person = session.signedIn ? signedIn() : undefined;
  const switchWorkspace = (workspace: string) => {
    if (!workspace || workspace === session.workspace) return;
    setWorkspace(workspace);
    setSession({ ...session, workspace });
    if (route.view === 'breadcrumb' || route.view === 'thread' || route.view === 'run')
      location.hash = '#/live';
  };
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/live">
          crumbs
        </a>
        <nav>
          {NAV.map((n) => (
            <a
              key={n.view}
              href={href({ view: n.view } as Route)}
              class={route.view === n.view ? 'active' : ''}
              data-nav={n.view}
            >
              {n.label}
              {n.view === 'approvals' && pending !== undefined && pending > 0 && (
                <span class="count" data-approvals-count>
                  {pending}
                </span>
              )}
            </a>
          ))}
          {route.view === 'thread' || route.view === 'breadcrumb' || route.view === 'run' ? (
            <span class="active crumb-nav">
              {{ thread: 'Thread', breadcrumb: 'Breadcrumb', run: 'Run' }[route.view]}
            </span>
          ) : null}
        </nav>
        <WorkspacePicker current={session.workspace} onSwitch={switchWorkspace} />
        {person && (
          <span class="who" data-user>
            {identity(person).user}
          </span>
        )}
        <button
          type="button"
          class="link"
          onClick={() => {
            forgetToken();
            setSession(undefined);
            // Signed in with the issuer: its refresh token is revoked and its own session ended (the page leaves).
            if (session.signedIn) void signOut();
          }}
        >
          Log out
        </button>
      </header>
      <main key={session.workspace}>
        {route.view === 'live' && <LiveView api={api} />}
        {route.view === 'breadcrumb' && <BreadcrumbView api={api} id={route.id} key={route.id} />}
        {route.view === 'thread' && <ThreadView api={api} id={route.id} key={route.id} />}
        {route.view === 'definitions' && <DefinitionsView api={api} />}
        {route.view === 'errors' && <ErrorsView api={api} />}
        {route.view === 'chat' && <ChatView api={api} />}
        {route.view === 'runs' && <RunsView api={api} />}
        {route.view === 'usage' && <UsageView api={api} />}
        {route.view === 'approvals' && <ApprovalsView api={api} onChange={() => setAnswered((n) => n + 1)} />}
        {route.view === 'run' && <RunView api={api} id={route.id} key={route.id} />}
      </main>
    </div>
  );
}

function WorkspacePicker({ current, onSwitch }: { current: string; onSwitch: (w: string) => void }) {
  const [value, setValue] = useState(current);
  useEffect(() => setValue(current), [current]);
  return (
    <form
      class="workspace"
      onSubmit={(e) => {
        e.preventDefault();
        onSwitch(value.trim());
      }}
    >
      <label>
        workspace
        <input
          name="workspace"
          list="recent-workspaces"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
      </label>
      <datalist id="recent-workspaces">
        {recentWorkspaces().map((w) => (
          <option key={w} value={w} />
        ))}
      </datalist>
      <button type="submit">Switch</button>
    </form>
  );
}

/** After a sign-in: keep the workspace in use if the token grants it, else open the first one it grants. */
function chooseWorkspace(granted: string[] | '*'): void {
  if (granted === '*' || granted.length === 0) return;
  const current = localStorage.getItem('crumbs.workspace');
  const chosen = current !== null && granted.includes(current) ? current : (granted[0] as string);
  // The granted workspaces are offered in the picker; the chosen one last, so it is current and first.
  for (const w of [...granted].reverse()) setWorkspace(w);
  setWorkspace(chosen);
}

function Login({ onLogin, error: given }: { onLogin: (s: Session) => void; error?: string | undefined }) {
  const [token, setToken] = useState('');
  const [workspace, setWs] = useState(localStorage.getItem('crumbs.workspace') || 'demo');
  const [error, setError] = useState<string | undefined>(given);
  const [config, setConfig] = useState<SignInConfig>();
  useEffect(() => {
    void signInConfig().then(setConfig);
  }, []);
  const issuer = config?.available ? config : undefined;
  return (
    <div class="login">
      {issuer && (
        <div class="sign-in">
          <h1>crumbs</h1>
          <p>Sign in with your account at {new URL(issuer.authorization_endpoint).host}.</p>
          <button type="button" data-sign-in onClick={() => void startSignIn(issuer)}>
            Sign in
          </button>
          {error && <p class="error">{error}</p>}
        </div>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const session = { token: token.trim(), workspace: workspace.trim() || 'demo' };
          // Check the token with a cheap authenticated call before keeping it.
          try {
            await new Api(session).definitions();
            onLogin(session);
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        {issuer ? (
          <p>Or paste an API token:</p>
        ) : (
          <>
            <h1>crumbs</h1>
            <p>Paste the API token (`crumbs dev` prints it, with a link that logs in directly).</p>
          </>
        )}
        <label>
          Token
          <input
            name="token"
            type="password"
            autoComplete="off"
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
        </label>
        <label>
          Workspace
          <input name="workspace" value={workspace} onInput={(e) => setWs(e.currentTarget.value)} />
        </label>
        {error && !issuer && <p class="error">{error}</p>}
        <button type="submit">Log in</button>
      </form>
    </div>
  );
}

render(<App />, document.getElementById('app')!);

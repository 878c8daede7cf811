// The dashboard's shell: sign-in with the hub's admin key (kept in sessionStorage by lib.js), the
// navigation between the six pages (a hash router: #/fleet, #/deployments, ...), and the banners
// for a hub that cannot be reached or a key it refuses. Each page polls its own data.
import { html, render, useEffect, useState, api, getKey, setKey, clearKey, onAuthFailure } from './lib.js';
import FleetPage from './pages/fleet.js';
import DeploymentsPage from './pages/deployments.js';
import TrafficPage from './pages/traffic.js';
import BatchesPage from './pages/batches.js';
import KeysPage from './pages/keys.js';
import MarketPage from './pages/market.js';

const PAGES = [
  { route: 'fleet', title: 'Fleet', Page: FleetPage },
  { route: 'deployments', title: 'Deployments', Page: DeploymentsPage },
  { route: 'traffic', title: 'Traffic', Page: TrafficPage },
  { route: 'batches', title: 'Batches', Page: BatchesPage },
  { route: 'keys', title: 'Keys', Page: KeysPage },
  { route: 'market', title: 'Market', Page: MarketPage },
];

const REFUSED = 'The hub refused this key. Enter the hub’s admin key (cellserve hub --api-key-file).';

function currentRoute() {
  const name = window.location.hash.replace(/^#\/?/, '');
  return PAGES.some((p) => p.route === name) ? name : 'fleet';
}

function useRoute() {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const changed = () => setRoute(currentRoute());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

// Whether the hub answers at all (/health is public): a banner, not the login form, when not.
function useReachable(intervalMs = 2000) {
  const [reachable, setReachable] = useState(true);
  useEffect(() => {
    let live = true;
    let timer = null;
    const probe = async () => {
      try {
        await api('GET', '/health');
        if (live) setReachable(true);
      } catch (e) {
        if (live) setReachable(e.status !== 0);
      }
      if (live) timer = setTimeout(probe, intervalMs);
    };
    probe();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [intervalMs]);
  return reachable;
}

function HubError() {
  return html`<div class="banner error" data-testid="hub-error" role="alert">
    The hub cannot be reached. It may have stopped or the network is down; this page retries every few seconds.
  </div>`;
}

function LoginForm({ error, onSubmit }) {
  const [key, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    await onSubmit(key.trim());
    setBusy(false);
  };
  return html`<form id="login" class="card login" onSubmit=${submit}>
    <h1>cellserve hub</h1>
    <p>This hub is closed: enter its admin key. The key stays in this tab only (session storage) and is sent
      to the hub as a Bearer header.</p>
    <label>Admin key
      <input name="key" type="password" autocomplete="current-password" required value=${key}
        onInput=${(e) => setValue(e.target.value)} />
    </label>
    <button type="submit" disabled=${busy}>Sign in</button>
    ${error && html`<p class="error" data-testid="login-error" role="alert">${error}</p>`}
  </form>`;
}

function Nav({ route, signedIn, onSignOut }) {
  return html`<header class="top">
    <span class="brand">cellserve hub</span>
    <nav>
      ${PAGES.map((p) => html`<a href=${`#/${p.route}`} class=${p.route === route ? 'active' : ''}
        aria-current=${p.route === route ? 'page' : undefined}>${p.title}</a>`)}
    </nav>
    ${signedIn && html`<button type="button" class="secondary" data-action="sign-out" onClick=${onSignOut}>Sign out</button>`}
  </header>`;
}

// 'checking' until the hub answered once; 'login' when it wants a key; 'in' when the API answers
// (with the key, or without one on a hub that has no admin key).
function App() {
  const route = useRoute();
  const reachable = useReachable();
  const [auth, setAuth] = useState('checking');
  const [loginError, setLoginError] = useState('');

  // Tries the API with the key held (none at first): in, or the login form on 401/403.
  const check = async () => {
    try {
      await api('GET', '/api/v1/processors');
      setAuth('in');
      return true;
    } catch (e) {
      if (e.status === 401 || e.status === 403) {
        if (getKey()) setLoginError(REFUSED);
        clearKey();
        setAuth('login');
      } else if (e.status === 0) {
        setTimeout(check, 2000);
      } else {
        setAuth('in'); // the hub answered; the page shows its error
      }
      return false;
    }
  };
  useEffect(() => {
    check();
    // A key refused later (changed at the hub): back to the form, saying why.
    return onAuthFailure(() => {
      clearKey();
      setLoginError(REFUSED);
      setAuth('login');
    });
  }, []);

  const signIn = async (key) => {
    setKey(key);
    setLoginError('');
    await check();
  };
  const signOut = () => {
    clearKey();
    setLoginError('');
    setAuth('login');
  };

  const page = PAGES.find((p) => p.route === route);
  return html`
    ${!reachable && html`<${HubError} />`}
    ${auth === 'login' && html`<main class="narrow"><${LoginForm} error=${loginError} onSubmit=${signIn} /></main>`}
    ${auth === 'checking' && reachable && html`<p class="muted">Connecting to the hub…</p>`}
    ${auth === 'in' && html`
      <${Nav} route=${route} signedIn=${Boolean(getKey())} onSignOut=${signOut} />
      <main><${page.Page} key=${route} /></main>`}
  `;
}

render(html`<${App} />`, document.getElementById('app'));

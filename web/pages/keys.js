// Keys: the deployments' API keys (GET /api/v1/keys) with their use against their quotas, a form
// that creates one (POST /api/v1/keys) and revoke (POST /api/v1/keys/{id}/revoke). The hub keeps
// only a key's hash, so a new key's secret is shown once: it lives in this page's state only and
// is dropped when the operator dismisses it or leaves the page.
import { api, confirmThen, fmtAgo, html, usePoll, useRef, useState } from '../lib.js';

const MAX_RPM = 100000; // KeyBook::kMaxRpm
const MAX_TOKENS_PER_DAY = 1e12;

// "used / quota" for a limit where 0 means none.
function Usage({ used, quota, unit }) {
  if (!quota) return html`<span>${used} <span class="muted">(no limit)</span></span>`;
  return html`<span class="usage">
    <progress value=${Math.min(used, quota)} max=${quota}></progress>
    <span class="usage-text">${used} / ${quota} ${unit}</span>
  </span>`;
}

function KeyRow({ k, onChanged }) {
  const [error, setError] = useState(null);
  const revoke = confirmThen(`Revoke key ${k.id}${k.name ? ` (${k.name})` : ''}? Requests with it are refused from now on.`,
    () => api('POST', `/api/v1/keys/${encodeURIComponent(k.id)}/revoke`).then(onChanged).catch(setError));
  return html`<tr data-key-id=${k.id}>
    <td data-col="id"><code>${k.id}</code></td>
    <td data-col="name">${k.name || html`<span class="muted">—</span>`}</td>
    <td data-col="deployment">${k.deployment}</td>
    <td data-col="state" class=${k.revoked ? 'state-revoked' : 'state-ready'}>${k.revoked ? 'revoked' : 'active'}</td>
    <td data-col="requests" class="num">${k.requests}</td>
    <td data-col="tokens" class="num">${k.tokens}</td>
    <td data-col="tokens-today"><${Usage} used=${k.tokens_today} quota=${k.tokens_per_day} unit="tokens" /></td>
    <td data-col="rpm" class="num">${k.rpm ? k.rpm : html`<span class="muted">no limit</span>`}</td>
    <td data-col="created" title=${new Date(k.created_ms).toISOString()}>${fmtAgo(k.created_ms)}</td>
    <td data-col="actions">
      ${!k.revoked && html`<button type="button" class="danger" data-action="revoke" onClick=${revoke}>Revoke</button>`}
      ${error && html`<span class="error" role="alert">${error.message}</span>`}
    </td>
  </tr>`;
}

// `text` with a line-break opportunity every 12 characters (<wbr> adds no character to the text
// or to a copy), so a 52-character key fits a phone's width.
function breakable(text) {
  const parts = [];
  for (let i = 0; i < text.length; i += 12) parts.push(i ? html`<wbr />${text.slice(i, i + 12)}` : text.slice(i, i + 12));
  return parts;
}

// The secret of the key just created, with a copy button; gone once dismissed.
function NewKey({ created, onDismiss }) {
  const field = useRef(null);
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied('Copied.');
    } catch {
      // No clipboard (a page not served over https or localhost): select it for Ctrl-C.
      const range = document.createRange();
      range.selectNodeContents(field.current);
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
      setCopied('Selected: press Ctrl-C (⌘-C) to copy.');
    }
  };
  return html`<div class="card new-key" role="status">
    <p><strong>Key ${created.id} for ${created.deployment} created.</strong> Copy it now: it is not shown again
      (the hub keeps only its hash).</p>
    <div class="toolbar">
      <code class="secret" ref=${field} data-testid="new-key">${breakable(created.key)}</code>
      <button type="button" data-action="copy" onClick=${copy}>Copy</button>
      <button type="button" class="secondary" data-action="dismiss" onClick=${onDismiss}>Done</button>
      ${copied && html`<span class="muted">${copied}</span>`}
    </div>
  </div>`;
}

// A whole number in [0, max] from a form field; '' is 0 (no limit).
function readLimit(value, max, what) {
  const text = String(value).trim();
  if (text === '') return 0;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > max) throw new Error(`${what} must be a whole number from 0 to ${max}`);
  return n;
}

function CreateKeyForm({ deployments, onCreated }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    const form = event.target;
    setError(null);
    let body;
    try {
      body = {
        deployment: form.elements.deployment.value,
        name: form.elements.name.value.trim(),
        rpm: readLimit(form.elements.rpm.value, MAX_RPM, 'Requests per minute'),
        tokens_per_day: readLimit(form.elements.tokens_per_day.value, MAX_TOKENS_PER_DAY, 'Tokens per day'),
      };
    } catch (e) {
      setError(e);
      return;
    }
    setBusy(true);
    try {
      onCreated(await api('POST', '/api/v1/keys', body));
      form.reset();
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  return html`<form id="create-key" class="card toolbar" onSubmit=${submit}>
    <label>Deployment
      <select name="deployment" required>
        ${deployments.map((d) => html`<option value=${d}>${d}</option>`)}
      </select>
    </label>
    <label>Name <input type="text" name="name" maxlength="100" placeholder="who uses it" /></label>
    <label>Requests / min <input type="number" name="rpm" min="0" max=${MAX_RPM} step="1" placeholder="0" /></label>
    <label>Tokens / day <input type="number" name="tokens_per_day" min="0" max=${MAX_TOKENS_PER_DAY} step="1"
      placeholder="0" /></label>
    <button type="submit" disabled=${busy || deployments.length === 0}>Create key</button>
    <span class="muted">0 or empty: no limit.</span>
    ${error && html`<p class="error" role="alert">${error.message}</p>`}
  </form>`;
}

export default function KeysPage() {
  const keys = usePoll('/api/v1/keys', 5000);
  const deployments = usePoll('/api/v1/deployments', 10000);
  const [created, setCreated] = useState(null);
  const names = deployments.data ? deployments.data.deployments.map((d) => d.name) : [];
  const list = keys.data ? keys.data.keys : [];
  const onCreated = (key) => {
    setCreated(key);
    keys.reload();
  };
  return html`<div class="page keys-page">
    <h1>API keys</h1>
    ${created && html`<${NewKey} created=${created} onDismiss=${() => setCreated(null)} />`}
    ${deployments.data !== null && names.length === 0
      ? html`<p class="empty">No deployments yet: a key opens one deployment.</p>`
      : html`<${CreateKeyForm} deployments=${names} onCreated=${onCreated} />`}
    ${(keys.error || deployments.error) && html`<p class="error" role="alert">${(keys.error || deployments.error).message}</p>`}
    ${keys.data === null && !keys.error && html`<p class="loading">Loading…</p>`}
    ${keys.data !== null &&
    html`<div class="table-scroll">
      <table data-testid="keys-table">
        <thead>
          <tr>
            <th>Id</th><th>Name</th><th>Deployment</th><th>State</th><th class="num">Requests</th>
            <th class="num">Tokens</th><th>Tokens today / quota</th><th class="num">Requests / min</th><th>Created</th><th></th>
          </tr>
        </thead>
        <tbody>
          ${list.map((k) => html`<${KeyRow} key=${k.id} k=${k} onChanged=${keys.reload} />`)}
          ${list.length === 0 && html`<tr><td colspan="10" class="empty">No API keys yet.</td></tr>`}
        </tbody>
      </table>
    </div>`}
  </div>`;
}

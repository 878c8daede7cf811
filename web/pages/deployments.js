// Deployments: each deployment of GET /api/v1/deployments with its replicas and spares (state,
// device, in-flight requests, errors, cost so far, the settings autotune chose), and the same
// calls the CLI makes (cli/deploy_command.cpp): drain/undrain a replica, scale, remove. An
// autoscaled deployment also shows its latest scaling decisions (docs/autoscale.md).
import { html, useMemo, useState, api, usePoll, fmtNumber, confirmThen } from '../lib.js';

// "downloading 42 %", "failed: <why>", "ready (draining)": what the replica is doing.
function stateText(r) {
  let text = r.state;
  if (r.state === 'downloading') text = `downloading ${fmtNumber((r.progress || 0) * 100, 0)} %`;
  if (r.state === 'failed' && r.detail) text = `failed: ${r.detail}`;
  if (r.draining) text += ' (draining)';
  if (r.quarantined) text += ' (quarantined)';
  return text;
}

// The agent's chosen settings (`tuned`), whatever keys it reports: "threads 4 · prefill chunk 256".
function settingsText(tuned) {
  if (tuned === null || tuned === undefined) return '—';
  const parts = Object.entries(tuned)
    .filter(([k]) => k !== 'autotuned' && k !== 'cached')
    .map(([k, v]) => `${k.replaceAll('_', ' ')} ${typeof v === 'object' ? JSON.stringify(v) : v}`);
  const prefix = tuned.autotuned === false ? 'autotune off' : tuned.cached === true ? 'autotune reused' : '';
  return [prefix, parts.join(' · ')].filter(Boolean).join(': ') || '—';
}

// Runs a REST call, then reloads; a refusal is shown, not swallowed.
async function call(method, path, body, reload) {
  try {
    await api(method, path, body);
  } catch (e) {
    window.alert(`${method} ${path} failed: ${e.message}`);
  }
  reload();
}

function ReplicaRow({ d, r, names, reload }) {
  const base = `/api/v1/deployments/${encodeURIComponent(d.name)}/replicas/${r.index}`;
  const label = `${d.name}/${r.index}`;
  const device = r.processor ? names.get(r.processor) || r.processor.slice(0, 12) : '—';
  return html`<tr data-replica=${label}>
    <td class="num">${r.index}</td>
    <td>${r.role}</td>
    <td data-col="state" class=${`state-${r.draining && r.state === 'ready' ? 'draining' : r.state} wrap`}>${stateText(r)}</td>
    <td data-col="device" title=${r.processor || ''}>${device}</td>
    <td data-col="in-flight" class="num" title=${`${r.busy ?? 0} busy of ${r.slots ?? 0} slots`}>${r.in_flight ?? 0}</td>
    <td data-col="errors" class="num">${r.failures ?? 0}</td>
    <td data-col="cost" class="num">${fmtNumber(r.cost, 4)}</td>
    <td data-col="settings" class="wrap">${settingsText(r.tuned)}</td>
    <td class="actions">
      ${r.draining
        ? html`<button type="button" class="secondary" data-action="undrain"
            onClick=${confirmThen(`Let replica ${label} take requests again?`, () => call('POST', `${base}/undrain`, undefined, reload))}>Undrain</button>`
        : html`<button type="button" class="secondary" data-action="drain"
            onClick=${confirmThen(`Drain replica ${label}? It takes no new requests; those in flight finish.`,
              () => call('POST', `${base}/drain`, undefined, reload))}>Drain</button>`}
    </td>
  </tr>`;
}

// The autoscaler's latest decisions (GET /api/v1/deployments/NAME/events), newest first.
function ScalingEvents({ d }) {
  const events = usePoll(`/api/v1/deployments/${encodeURIComponent(d.name)}/events?limit=10`, 5000);
  const list = events.data?.data || [];
  return html`<div class="scaling-events" data-testid=${`events-${d.name}`}>
    <h3>Autoscaling ${d.spec.min_replicas}–${d.spec.max_replicas} replicas</h3>
    ${events.error && html`<p class="error">Could not load the scaling events: ${events.error.message}</p>`}
    ${events.data && list.length === 0 && html`<p class="muted">No scaling decision yet.</p>`}
    <ul>${list.map((e) => html`<li key=${e.at_ms} data-action=${e.action}>
      <time>${new Date(e.at_ms).toISOString().replace('T', ' ').slice(0, 19)} UTC</time>
      ${' '}<b>${e.action}</b> ${e.from_replicas} → ${e.to_replicas}: ${e.reason}</li>`)}</ul>
  </div>`;
}

function Deployment({ d, names, reload }) {
  const [replicas, setReplicas] = useState(String(d.spec?.replicas ?? 1));
  const [spares, setSpares] = useState(String(d.spec?.spares ?? 0));
  const path = `/api/v1/deployments/${encodeURIComponent(d.name)}`;
  const scale = (event) => {
    event.preventDefault();
    const n = Number(replicas);
    const s = Number(spares);
    if (!Number.isInteger(n) || n < 1 || !Number.isInteger(s) || s < 0) {
      return window.alert('Replicas must be a whole number of at least 1, spares of at least 0.');
    }
    confirmThen(`Scale ${d.name} to ${n} replicas and ${s} spares?`,
      () => call('POST', `${path}/scale`, { replicas: n, spares: s }, reload))();
  };
  const wanted = d.spec?.replicas ?? 0;
  return html`<section class="card" data-testid=${`deployment-${d.name}`}>
    <div class="deployment-head">
      <h2>${d.name}</h2>
      <span class="facts">ready ${d.ready} of ${wanted}${d.spec?.spares ? ` + ${d.spec.spares} spares` : ''} ·
        queue ${d.queue ?? 0} · done last hour ${d.completed_last_hour ?? 0} · cost ${fmtNumber(d.cost, 4)} ·
        max ${fmtNumber(d.spec?.max_price_per_day, 2)}/day · <code>${d.endpoint}</code></span>
    </div>
    <div class="toolbar">
      <form class="actions" data-form="scale" onSubmit=${scale}>
        <label>Replicas <input type="number" name="replicas" min="1" max="1000" value=${replicas}
          onInput=${(e) => setReplicas(e.target.value)} /></label>
        <label>Spares <input type="number" name="spares" min="0" max="1000" value=${spares}
          onInput=${(e) => setSpares(e.target.value)} /></label>
        <button type="submit" data-action="scale">Scale</button>
      </form>
      <span class="grow"></span>
      <button type="button" class="danger" data-action="remove"
        onClick=${confirmThen(`Remove deployment ${d.name}? Its replicas stop and its endpoint goes away.`,
          () => call('DELETE', path, undefined, reload))}>Remove</button>
    </div>
    ${d.spec?.max_replicas && html`<${ScalingEvents} d=${d} />`}
    <div class="table-scroll">
      <table>
        <thead><tr><th class="num">#</th><th>Role</th><th>State</th><th>Device</th><th class="num">In flight</th>
          <th class="num">Errors</th><th class="num">Cost</th><th>Settings</th><th>Actions</th></tr></thead>
        <tbody>${d.replicas.map((r) => html`<${ReplicaRow} key=${r.index} d=${d} r=${r} names=${names} reload=${reload} />`)}</tbody>
      </table>
    </div>
  </section>`;
}

export default function DeploymentsPage() {
  const deployments = usePoll('/api/v1/deployments', 2000);
  const processors = usePoll('/api/v1/processors', 5000);
  const names = useMemo(() => new Map((processors.data?.processors || []).map((p) => [p.id, p.label || p.name])), [processors.data]);
  const list = deployments.data?.deployments || [];
  return html`<div>
    <h1>Deployments</h1>
    ${deployments.error && html`<p class="error">Could not load the deployments: ${deployments.error.message}</p>`}
    ${!deployments.data && !deployments.error && html`<p class="muted">Loading…</p>`}
    ${deployments.data && list.length === 0 && html`<p class="muted">No deployment yet: <code>cellserve deploy spec.toml</code>.</p>`}
    ${list.map((d) => html`<${Deployment} key=${d.name} d=${d} names=${names} reload=${deployments.reload} />`)}
  </div>`;
}

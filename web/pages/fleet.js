// Fleet: every device the hub knows (GET /api/v1/processors) with its specs, the speed it claims
// beside the speed the hub measured on its answers (the replicas of GET /api/v1/deployments), its
// price, state, enrolment, attestation and battery/heat. Filter, sort, approve and revoke.
import { html, useMemo, useState, api, usePoll, fmtNumber, fmtBytes, fmtAgo, confirmThen } from '../lib.js';

// The hub's measurement of each device, from the replica on it with the most measured answers.
function measuredByProcessor(deployments) {
  const out = new Map();
  for (const d of deployments?.deployments || []) {
    for (const r of d.replicas || []) {
      if (!r.processor || !(r.measured_answers > 0)) continue;
      const seen = out.get(r.processor);
      if (!seen || r.measured_answers > seen.answers) {
        out.set(r.processor, {
          prefill: r.measured_prefill_tps,
          decode: r.measured_decode_tps,
          answers: r.measured_answers,
          inflated: Boolean(r.speed_claim_inflated),
        });
      }
    }
  }
  return out;
}

function stateOf(p) {
  if (p.quarantined) return 'quarantined';
  if (!p.online) return 'offline';
  if (p.device?.paused) return 'paused';
  return 'online';
}

function Speed({ claimed, measured, inflated }) {
  if (measured === undefined) return html`${fmtNumber(claimed)} <span class="sub">claimed</span>`;
  return html`<span>claimed ${fmtNumber(claimed)} · measured ${fmtNumber(measured)}</span>
    ${inflated && html` <span class="inflated">(inflated)</span>`}`;
}

function battery(device) {
  if (device?.battery_percent === undefined) return '—';
  const charging = device.charging === undefined ? '' : device.charging ? ' charging' : ' discharging';
  return `${device.battery_percent} %${charging}`;
}

function temperature(device) {
  const t = device?.max_thermal_c ?? device?.battery_temp_c;
  return t === undefined ? '—' : `${fmtNumber(t)} °C`;
}

function throttled(device) {
  const ratio = device?.cpu_freq_ratio;
  if (ratio === undefined) return '—';
  return ratio < 0.95 ? `yes, ${fmtNumber(ratio * 100, 0)} %` : 'no';
}

// The columns: header, sort key, and the cell (td[data-col=<col>], the browser test's hook).
const COLUMNS = [
  { col: 'name', title: 'Name', key: (p) => p.label || p.name },
  { col: 'id', title: 'Id', key: (p) => p.id },
  { col: 'arch', title: 'Arch', key: (p) => p.specs?.arch || '' },
  { col: 'cores', title: 'Cores', key: (p) => p.specs?.cores ?? -1, num: true },
  { col: 'ram', title: 'RAM', key: (p) => p.specs?.ram_bytes ?? -1, num: true },
  { col: 'prefill', title: 'Prompt t/s', key: (p, m) => m.get(p.id)?.prefill ?? p.benchmark?.prefill_tps ?? -1, num: true },
  { col: 'decode', title: 'Generation t/s', key: (p, m) => m.get(p.id)?.decode ?? p.benchmark?.decode_tps ?? -1, num: true },
  { col: 'price', title: 'Price/day', key: (p) => p.price_per_day ?? -1, num: true },
  { col: 'state', title: 'State', key: stateOf },
  { col: 'last-seen', title: 'Last seen', key: (p) => -(p.last_seen_ms || 0) },
  { col: 'enrollment', title: 'Enrolment', key: (p) => p.enrollment },
  { col: 'attestation', title: 'Attestation', key: (p) => (p.attested ? 0 : 1) },
  { col: 'battery', title: 'Battery', key: (p) => p.device?.battery_percent ?? -1, num: true },
  { col: 'temperature', title: 'Temp.', key: (p) => p.device?.max_thermal_c ?? p.device?.battery_temp_c ?? -1, num: true },
  { col: 'throttled', title: 'Throttled', key: (p) => p.device?.cpu_freq_ratio ?? 2, num: true },
];

function compare(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

function Row({ p, measured, now, onChanged }) {
  const m = measured.get(p.id);
  const state = stateOf(p);
  const act = (verb) =>
    confirmThen(`${verb === 'approve' ? 'Approve' : 'Revoke'} device ${p.label || p.name} (${p.id.slice(0, 12)})?`, async () => {
      try {
        await api('POST', `/api/v1/processors/${p.id}/${verb}`);
      } catch (e) {
        window.alert(`${verb} failed: ${e.message}`);
      }
      onChanged();
    });
  return html`<tr data-device-id=${p.id}>
    <td data-col="name">${p.label || p.name}${p.label && p.label !== p.name && html`<span class="sub">claims ${p.name}</span>`}</td>
    <td data-col="id" title=${p.id}><code>${p.id.slice(0, 12)}</code></td>
    <td data-col="arch">${p.specs?.arch || '—'}</td>
    <td data-col="cores" class="num">${p.specs?.cores ?? '—'}</td>
    <td data-col="ram" class="num" data-value=${p.specs?.ram_bytes ?? ''}>${fmtBytes(p.specs?.ram_bytes)}</td>
    <td data-col="prefill"><${Speed} claimed=${p.benchmark?.prefill_tps} measured=${m?.prefill} inflated=${m?.inflated} /></td>
    <td data-col="decode"><${Speed} claimed=${p.benchmark?.decode_tps} measured=${m?.decode} inflated=${m?.inflated} /></td>
    <td data-col="price" class="num">${fmtNumber(p.price_per_day, 2)}</td>
    <td data-col="state" class=${`state-${state}`} title=${p.device?.paused || ''}>${state}${p.device?.paused &&
      html`<span class="sub">${p.device.paused}</span>`}${p.agreement && html`<span class="sub">agreement
      ${fmtNumber((p.agreement.rate ?? 0) * 100, 0)} % of ${p.agreement.checks} checks${p.agreement.reason ? `: ${p.agreement.reason}` : ''}</span>`}</td>
    <td data-col="last-seen" title=${p.last_seen_ms ? new Date(p.last_seen_ms).toISOString() : ''}>${fmtAgo(p.last_seen_ms, now)}</td>
    <td data-col="enrollment" class=${`state-${p.enrollment}`}>${p.enrollment}</td>
    <td data-col="attestation" class="wrap">${p.attested ? 'attested' : 'not attested'}
      ${p.attestation && html`<span class="sub">${p.attestation.replace(/^(not )?attested:\s*/, '')}</span>`}</td>
    <td data-col="battery">${battery(p.device)}</td>
    <td data-col="temperature" class="num">${temperature(p.device)}</td>
    <td data-col="throttled">${throttled(p.device)}</td>
    <td class="actions">
      ${p.enrollment !== 'enrolled' && html`<button type="button" data-action="approve" onClick=${act('approve')}>Approve</button>`}
      ${p.enrollment !== 'revoked' && html`<button type="button" class="danger" data-action="revoke" onClick=${act('revoke')}>Revoke</button>`}
    </td>
  </tr>`;
}

export default function FleetPage() {
  const processors = usePoll('/api/v1/processors', 2000);
  const deployments = usePoll('/api/v1/deployments', 2000);
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState({ col: 'name', dir: 1 });
  const measured = useMemo(() => measuredByProcessor(deployments.data), [deployments.data]);
  const list = processors.data?.processors || [];
  const now = Date.now();

  const shown = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    const column = COLUMNS.find((c) => c.col === sort.col) || COLUMNS[0];
    return list
      .filter((p) => !needle || [p.name, p.label, p.id, stateOf(p), p.enrollment].some((t) => (t || '').toLowerCase().includes(needle)))
      .sort((a, b) => sort.dir * compare(column.key(a, measured), column.key(b, measured)));
  }, [list, filter, sort, measured]);

  const header = (c) => html`<th class=${`sortable${c.num ? ' num' : ''}`} data-sort=${c.col}
    aria-sort=${sort.col === c.col ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none'}
    onClick=${() => setSort(sort.col === c.col ? { col: c.col, dir: -sort.dir } : { col: c.col, dir: 1 })}>
    ${c.title}${sort.col === c.col ? (sort.dir > 0 ? ' ▲' : ' ▼') : ''}</th>`;

  return html`<section class="card">
    <div class="toolbar">
      <h1 class="grow">Fleet <span class="muted">${list.filter((p) => p.online).length} online of ${list.length}</span></h1>
      <input type="search" name="filter" placeholder="Filter by name, id or state" value=${filter}
        onInput=${(e) => setFilter(e.target.value)} />
    </div>
    ${processors.error && html`<p class="error">Could not load the devices: ${processors.error.message}</p>`}
    ${!processors.data && !processors.error && html`<p class="muted">Loading…</p>`}
    <div class="table-scroll">
      <table data-testid="fleet-table">
        <thead><tr>${COLUMNS.map(header)}<th>Actions</th></tr></thead>
        <tbody>${shown.map((p) => html`<${Row} key=${p.id} p=${p} measured=${measured} now=${now} onChanged=${processors.reload} />`)}</tbody>
      </table>
    </div>
    ${processors.data && list.length === 0 &&
      html`<p class="muted">No device has connected yet: start one with <code>cellserve agent --hub …</code>.</p>`}
    <p class="muted">Speeds in tokens per second: what the device claims, and what the hub measured on its answers.</p>
  </section>`;
}

// Market: what a deployment with given requirements would find and pay right now
// (GET /api/v1/market): the eligible devices, those available (online and serving nothing), the
// average ask of the eligible online ones, and the price at which N replicas match, i.e. the
// N-th cheapest available ask (none when fewer than N are available). Simulated devices are not
// counted: the market is for real ones.
import { fmtNumber, html, usePoll, useState } from '../lib.js';

// The query string of the requirements set in the form (empty fields are left out).
export function marketQuery(f) {
  const q = new URLSearchParams();
  q.set('replicas', String(f.replicas));
  if (f.min_ram.trim()) q.set('min_ram', f.min_ram.trim());
  if (f.min_cores !== '') q.set('min_cores', String(f.min_cores));
  if (f.arch) q.set('arch', f.arch);
  if (f.min_decode_tps !== '') q.set('min_decode_tps', String(f.min_decode_tps));
  if (f.attested_only) q.set('attested_only', 'true');
  return q.toString();
}

function Figure({ label, testid, children }) {
  return html`<div class="card figure" data-testid=${testid}>
    <div class="muted">${label}</div>
    <div class="figure-value">${children}</div>
  </div>`;
}

export default function MarketPage() {
  const [filters, setFilters] = useState({
    replicas: 1,
    min_ram: '',
    min_cores: '',
    arch: '',
    min_decode_tps: '',
    attested_only: false,
  });
  const set = (name) => (event) => {
    const t = event.target;
    const value = t.type === 'checkbox' ? t.checked : t.value;
    setFilters((f) => ({ ...f, [name]: value }));
  };
  // An N the hub would refuse (it takes 1..10000) is not asked for.
  const n = Number(filters.replicas);
  const valid = Number.isInteger(n) && n >= 1 && n <= 10000;
  const { data, error } = usePoll(valid ? `/api/v1/market?${marketQuery(filters)}` : null, 5000);
  return html`<div class="page market-page" data-testid="market">
    <h1>Market</h1>
    <form class="card toolbar" data-testid="market-filters" onSubmit=${(e) => e.preventDefault()}>
      <label>Replicas (N)
        <input type="number" name="replicas" min="1" max="10000" step="1" value=${filters.replicas}
          onInput=${set('replicas')} /></label>
      <label>Min RAM <input type="text" name="min_ram" placeholder="e.g. 12G" size="6" value=${filters.min_ram}
        onInput=${set('min_ram')} /></label>
      <label>Min cores <input type="number" name="min_cores" min="0" max="1024" step="1" value=${filters.min_cores}
        onInput=${set('min_cores')} /></label>
      <label>Architecture
        <select name="arch" value=${filters.arch} onChange=${set('arch')}>
          <option value="">any</option>
          <option value="x86_64">x86_64</option>
          <option value="aarch64">aarch64</option>
        </select></label>
      <label>Min generation t/s <input type="number" name="min_decode_tps" min="0" step="any"
        value=${filters.min_decode_tps} onInput=${set('min_decode_tps')} /></label>
      <label><input type="checkbox" name="attested_only" checked=${filters.attested_only}
        onChange=${set('attested_only')} /> Attested only</label>
    </form>
    ${!valid && html`<p class="error" role="alert">Replicas must be a whole number from 1 to 10000.</p>`}
    ${valid && error && html`<p class="error" role="alert">${error.message}</p>`}
    ${valid && data === null && !error && html`<p class="loading">Loading…</p>`}
    ${data &&
    html`<div class="figures">
      <${Figure} label="Eligible devices" testid="market-eligible">${data.eligible}<//>
      <${Figure} label="Available now" testid="market-available">${data.available}<//>
      <${Figure} label="Average ask" testid="market-average-ask">${fmtNumber(data.average_ask, 2)} / day<//>
      <${Figure} label=${`Price for ${data.replicas} replica${data.replicas === 1 ? '' : 's'}`}
        testid="market-price">
        ${data.price_for_replicas === null
          ? html`<span class="muted">${`not available: ${data.available} available now`}</span>`
          : html`${fmtNumber(data.price_for_replicas, 2)} / day each
              <div class="muted">${`max_price_per_day ≥ ${fmtNumber(data.price_for_replicas, 2)} matches ${data.replicas} now`}</div>`}
      <//>
    </div>`}
  </div>`;
}

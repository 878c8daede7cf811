// Batches: each deployment's batches (the OpenAI Batch API at /d/<name>/v1/batches, newest first)
// with progress, failures, the rate so far (/batches/{id}/throughput, requests per hour), an ETA,
// and the output and error files. Files need the key, so a download fetches the content with the
// Authorization header and saves it from a Blob URL: the key never goes into a URL.
import { api, ApiError, confirmThen, fmtAgo, fmtNumber, getKey, html, usePoll, useState } from '../lib.js';

const POLL_MS = 3000;
const ACTIVE = new Set(['validating', 'in_progress', 'finalizing', 'cancelling']);
const CANCELLABLE = new Set(['validating', 'in_progress']);

const base = (deployment) => `/d/${encodeURIComponent(deployment)}/v1`;

// "2 h 05 min", "4 min 10 s", "12 s": a duration given in hours.
export function fmtHours(hours) {
  const s = Math.round(hours * 3600);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

// The time left at the batch's rate so far: its remaining lines over requests per hour; null
// without a rate or once nothing is left.
export function etaHours(batch, requestsPerHour) {
  const c = batch.request_counts;
  const remaining = c.total - c.completed - c.failed;
  if (!ACTIVE.has(batch.status) || remaining <= 0 || !(requestsPerHour > 0)) return null;
  return remaining / requestsPerHour;
}

// Fetches a file's content with the key and hands it to the browser as a download.
async function download(deployment, fileId) {
  let response;
  try {
    response = await fetch(`${base(deployment)}/files/${encodeURIComponent(fileId)}/content`, {
      headers: { Authorization: `Bearer ${getKey()}` },
    });
  } catch {
    throw new ApiError(0, 'The hub cannot be reached. Is it running?');
  }
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    throw new ApiError(response.status, body?.error?.message || `${response.status} ${response.statusText}`);
  }
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = `${fileId}.jsonl`;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function FileButton({ deployment, fileId, kind, onError }) {
  if (!fileId) return html`<span class="muted">—</span>`;
  const save = () => download(deployment, fileId).catch(onError);
  return html`<button type="button" class="link" data-file=${kind} title=${fileId} onClick=${save}>${kind}</button>`;
}

function BatchRow({ deployment, batch, onChanged }) {
  const active = ACTIVE.has(batch.status);
  // The rate moves while the batch runs; a finished batch's is fixed, so it is asked once.
  const throughput = usePoll(`${base(deployment)}/batches/${encodeURIComponent(batch.id)}/throughput`,
    active ? POLL_MS : 3600000);
  const [error, setError] = useState(null);
  const c = batch.request_counts;
  const rate = throughput.data ? throughput.data.requests_per_hour : null;
  const eta = etaHours(batch, rate);
  const cancel = confirmThen(`Cancel batch ${batch.id}? Lines in flight finish; the rest are not run.`, () =>
    api('POST', `${base(deployment)}/batches/${encodeURIComponent(batch.id)}/cancel`)
      .then(onChanged)
      .catch(setError));
  return html`<tr data-batch-id=${batch.id}>
    <td data-col="id">
      <code>${batch.id}</code>
      ${batch.errors && batch.errors.data.length > 0 &&
      html`<span class="sub">${batch.errors.data.length} input error(s), first: ${batch.errors.data[0].message}</span>`}
    </td>
    <td data-col="status">${batch.status}</td>
    <td data-col="progress">
      <progress value=${c.completed + c.failed} max=${Math.max(c.total, 1)}></progress>
      ${' '}<span class="progress-text">${c.completed + c.failed} / ${c.total}</span>
    </td>
    <td data-col="done" class="num">${c.completed}</td>
    <td data-col="failed" class="num">${c.failed}</td>
    <td data-col="rate" class="num">${rate === null ? '—' : fmtNumber(rate, 1)}</td>
    <td data-col="eta">${eta === null ? '—' : fmtHours(eta)}</td>
    <td data-col="created" title=${new Date(batch.created_at * 1000).toISOString()}>${fmtAgo(batch.created_at * 1000)}</td>
    <td data-col="files">
      <${FileButton} deployment=${deployment} fileId=${batch.output_file_id} kind="output" onError=${setError} />
      ${' '}
      <${FileButton} deployment=${deployment} fileId=${batch.error_file_id} kind="errors" onError=${setError} />
    </td>
    <td data-col="actions">
      ${CANCELLABLE.has(batch.status) &&
      html`<button type="button" data-action="cancel" onClick=${cancel}>Cancel</button>`}
      ${(error || throughput.error) && html`<span class="error" role="alert">${(error || throughput.error).message}</span>`}
    </td>
  </tr>`;
}

function DeploymentBatches({ name }) {
  // The newest 100 (the API's largest page).
  const { data, error, reload } = usePoll(`${base(name)}/batches?limit=100`, POLL_MS);
  const batches = data ? data.data : [];
  return html`<section class="card batches" data-testid=${`batches-${name}`}>
    <h2>${name}</h2>
    ${error && html`<p class="error" role="alert">${error.message}</p>`}
    ${data === null && !error && html`<p class="loading">Loading…</p>`}
    ${data !== null && batches.length === 0 && html`<p class="empty">No batches for ${name}.</p>`}
    ${batches.length > 0 &&
    html`<div class="table-scroll">
      <table>
        <thead>
          <tr>
            <th>Batch</th><th>Status</th><th>Progress</th><th class="num">Done</th><th class="num">Failed</th>
            <th class="num">Rate (req/h)</th><th>ETA</th><th>Created</th><th>Files</th><th></th>
          </tr>
        </thead>
        <tbody>
          ${batches.map((b) => html`<${BatchRow} key=${b.id} deployment=${name} batch=${b} onChanged=${reload} />`)}
        </tbody>
      </table>
    </div>`}
    ${data && data.has_more && html`<p class="hint">Showing the newest ${batches.length} batches.</p>`}
  </section>`;
}

export default function BatchesPage() {
  const { data, error } = usePoll('/api/v1/deployments', 5000);
  const names = data ? data.deployments.map((d) => d.name) : [];
  return html`<div class="page batches-page">
    <h1>Batches</h1>
    ${error && html`<p class="error" role="alert">${error.message}</p>`}
    ${data === null && !error && html`<p class="loading">Loading…</p>`}
    ${data !== null && names.length === 0 && html`<p class="empty">No deployments yet.</p>`}
    ${names.map((name) => html`<${DeploymentBatches} key=${name} name=${name} />`)}
  </div>`;
}

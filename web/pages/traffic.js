// Traffic: per deployment, live charts of the last hour from the hub's in-memory time series
// (GET /api/v1/traffic, one point per interval, oldest first). The page polls with since_ms so
// each answer carries only the newest points: the last one held (the unfinished interval) is
// sent again and replaced, newer ones are appended, and points older than the window dropped.
import { api, html, uPlot, useEffect, usePoll, useRef, useState } from '../lib.js';

const POLL_MS = 3000;
const CHART_HEIGHT = 170;

// uPlot's stylesheet, added once unless the page already links it.
function ensureChartStyles() {
  if (document.querySelector('link[href$="uPlot.min.css"]')) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = new URL('../vendor/uPlot.min.css', import.meta.url).href;
  document.head.appendChild(link);
}

// The series held after an answer of GET /api/v1/traffic. A full answer replaces them. An
// incremental one (since_ms = the newest point held, less 1) must begin, for every deployment
// held, with that point again: the hub sends each series' intervals up to the current one, idle
// ones as zero points. Then held points from the first fresh one on are replaced and the rest
// appended. When it does not (the hub restarted, or dropped a removed deployment's series) this
// returns null: the caller asks for everything again.
export function applyAnswer(held, answer, incremental) {
  const fresh = answer.deployments || {};
  if (incremental && Object.keys(held).some((name) => !(name in fresh))) return null;
  const cutoff = answer.now_ms - answer.window_ms;
  const next = {};
  for (const [name, points] of Object.entries(fresh)) {
    const before = incremental ? held[name] || [] : [];
    const last = before.length ? before[before.length - 1].t_ms : null;
    if (last !== null && (!points.length || points[0].t_ms !== last)) return null;
    const kept = points.length ? before.filter((p) => p.t_ms < points[0].t_ms) : before;
    const merged = kept.concat(points).filter((p) => p.t_ms > cutoff);
    if (merged.length) next[name] = merged;
  }
  return next;
}

// The t_ms of the newest point of any series, or null when none is held.
function newestPoint(series) {
  let newest = null;
  for (const points of Object.values(series)) {
    const t = points[points.length - 1].t_ms;
    if (newest === null || t > newest) newest = t;
  }
  return newest;
}

// The series held per deployment, kept up to date: { series: {name: [POINT...]}, intervalMs, error }.
function useTraffic() {
  const [state, setState] = useState({ series: {}, intervalMs: 5000, windowMs: 3600000 });
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    let timer = null;
    let held = {};
    const load = async () => {
      let delay = POLL_MS;
      try {
        const newest = newestPoint(held);
        const query = newest === null ? '' : `?since_ms=${newest - 1}`;
        const answer = await api('GET', `/api/v1/traffic${query}`);
        if (!live) return;
        const next = applyAnswer(held, answer, newest !== null);
        if (next === null) {
          held = {};
          delay = 0; // out of step with the hub: ask for everything now
        } else {
          held = next;
          setState({ series: held, intervalMs: answer.interval_ms, windowMs: answer.window_ms });
        }
        setError(null);
      } catch (e) {
        if (live) setError(e);
      }
      if (live) timer = setTimeout(load, delay);
    };
    load();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);
  return { ...state, error };
}

// The requests a deployment answered over the points held, by status class.
export function totalRequests(points) {
  return points.reduce((n, p) => n + p.requests_2xx + p.requests_4xx + p.requests_5xx, 0);
}

// One uPlot chart that follows its container's width. `series` is [{label, stroke}], `data` is
// uPlot's columns: [x seconds, ...one array per series]. The x axis always spans the whole window
// ending with the newest interval, so one point reads as "just now", not as a span of years.
function Chart({ title, unit, series, data, windowMs, intervalMs }) {
  const span = useRef({ windowMs, intervalMs });
  span.current = { windowMs, intervalMs };
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const el = box.current;
    const width = () => Math.max(200, el.clientWidth);
    plot.current = new uPlot(
      {
        width: width(),
        height: CHART_HEIGHT,
        scales: {
          x: {
            time: true,
            range: (u) => {
              const xs = u.data[0];
              const end = (xs.length ? xs[xs.length - 1] * 1000 + span.current.intervalMs : Date.now()) / 1000;
              return [end - span.current.windowMs / 1000, end];
            },
          },
          y: { range: (u, min, max) => [0, Math.max(max, 1)] },
        },
        axes: [{}, { label: unit, size: 60 }],
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 1.5, spanGaps: false }))],
      },
      data,
      el,
    );
    const resize = new ResizeObserver(() => plot.current && plot.current.setSize({ width: width(), height: CHART_HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current.destroy();
      plot.current = null;
    };
  }, []);
  useEffect(() => {
    if (plot.current) plot.current.setData(data);
  }, [data]);
  return html`<div class="chart">
    <h3 class="chart-title">${title}</h3>
    <div class="chart-plot" ref=${box}></div>
  </div>`;
}

// The chart columns of a deployment's points (x in seconds, as uPlot's time scale takes it).
function columns(points, intervalMs) {
  const perSecond = (n) => n / (intervalMs / 1000);
  const col = (f) => points.map(f);
  return {
    x: col((p) => p.t_ms / 1000),
    rps2xx: col((p) => perSecond(p.requests_2xx)),
    rps4xx: col((p) => perSecond(p.requests_4xx)),
    rps5xx: col((p) => perSecond(p.requests_5xx)),
    latP50: col((p) => p.latency_p50_ms),
    latP95: col((p) => p.latency_p95_ms),
    ttftP50: col((p) => p.ttft_p50_ms),
    ttftP95: col((p) => p.ttft_p95_ms),
    tokens: col((p) => p.tokens_per_s),
    queue: col((p) => p.queue_length),
    hedges: col((p) => p.hedges),
    retries: col((p) => p.retries),
  };
}

const GREEN = '#2e9d57';
const AMBER = '#d08a12';
const RED = '#cc3b3b';
const BLUE = '#3a6fd8';
const PURPLE = '#8a4fc7';

function DeploymentTraffic({ name, points, intervalMs, windowMs }) {
  const requests = totalRequests(points);
  const idle = points.every((p) => totalRequests([p]) === 0 && p.queue_length === 0);
  const c = columns(points, intervalMs);
  return html`<section class="card traffic" data-testid=${`traffic-${name}`}>
    <h2>${name}</h2>
    <p class="traffic-total">
      <span data-testid=${`traffic-requests-${name}`}>${requests}</span> requests in the last hour
    </p>
    ${idle
      ? html`<p class="empty">No traffic yet: charts appear with the first request.</p>`
      : html`<div class="charts">
          <${Chart} windowMs=${windowMs} intervalMs=${intervalMs} title="Requests per second" unit="req/s"
            series=${[{ label: '2xx', stroke: GREEN }, { label: '4xx', stroke: AMBER }, { label: '5xx', stroke: RED }]}
            data=${[c.x, c.rps2xx, c.rps4xx, c.rps5xx]} />
          <${Chart} windowMs=${windowMs} intervalMs=${intervalMs} title="Latency" unit="ms"
            series=${[{ label: 'p50', stroke: BLUE }, { label: 'p95', stroke: PURPLE }]}
            data=${[c.x, c.latP50, c.latP95]} />
          <${Chart} windowMs=${windowMs} intervalMs=${intervalMs} title="Time to first token" unit="ms"
            series=${[{ label: 'p50', stroke: BLUE }, { label: 'p95', stroke: PURPLE }]}
            data=${[c.x, c.ttftP50, c.ttftP95]} />
          <${Chart} windowMs=${windowMs} intervalMs=${intervalMs} title="Tokens per second" unit="tok/s"
            series=${[{ label: 'tokens/s', stroke: GREEN }]} data=${[c.x, c.tokens]} />
          <${Chart} windowMs=${windowMs} intervalMs=${intervalMs} title="Queue length" unit="requests"
            series=${[{ label: 'queued', stroke: AMBER }]} data=${[c.x, c.queue]} />
          <${Chart} windowMs=${windowMs} intervalMs=${intervalMs} title="Hedges and retries" unit="per interval"
            series=${[{ label: 'hedges', stroke: BLUE }, { label: 'retries', stroke: RED }]}
            data=${[c.x, c.hedges, c.retries]} />
        </div>`}
  </section>`;
}

export default function TrafficPage() {
  useEffect(ensureChartStyles, []);
  const deployments = usePoll('/api/v1/deployments', 5000);
  const traffic = useTraffic();
  const error = deployments.error || traffic.error;
  const names = deployments.data ? deployments.data.deployments.map((d) => d.name) : [];
  return html`<div class="page traffic-page">
    <h1>Traffic</h1>
    <p class="hint">The last hour, one point per ${Math.round(traffic.intervalMs / 1000)} s, updated every few seconds.</p>
    ${error && html`<p class="error" role="alert">${error.message}</p>`}
    ${deployments.data === null && !error && html`<p class="loading">Loading…</p>`}
    ${deployments.data !== null && names.length === 0 && html`<p class="empty">No deployments yet.</p>`}
    ${names.map(
      (name) => html`<${DeploymentTraffic} key=${name} name=${name} points=${traffic.series[name] || []}
        intervalMs=${traffic.intervalMs} windowMs=${traffic.windowMs} />`,
    )}
  </div>`;
}

// The hub's traffic time series and the settings replicas run with (issue 47), on a closed hub
// with one simulated agent: requests sent through the deployment endpoint show in
// GET /api/v1/traffic by status class with latency, time to first byte, tokens and the queue;
// the parameters are validated; /api/v1/traffic/stream sends a snapshot and then points, holds
// at most 16 streams and frees one when its client leaves; a removed deployment drops its
// series; each replica's "tuned" settings reach the deployments API and `deployments show`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { skipReason } from '../../e2e/harness.mjs';
import { inTempFleet, spawnLogged, startClosedHub, until } from '../../e2e/fleet_harness.mjs';

const ADMIN = 'traffic-suite-admin-key';
const admin = { authorization: `Bearer ${ADMIN}` };

// Reads the server-sent events of `response` until `done(events)` holds (or `limitMs` passes).
async function readEvents(response, done, limitMs = 20000) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const events = [];
  let text = '';
  const deadline = Date.now() + limitMs;
  while (!done(events)) {
    if (Date.now() > deadline) throw new Error(`no more events after ${JSON.stringify(events).slice(0, 300)}`);
    const { value, done: ended } = await reader.read();
    if (ended) break;
    text += decoder.decode(value, { stream: true });
    let end;
    while ((end = text.indexOf('\n\n')) >= 0) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      events.push({ event, data: JSON.parse(data) });
    }
  }
  await reader.cancel();
  return events;
}

test('traffic: requests show in the time series and its stream; replicas report their settings', { skip: skipReason() || false }, () => inTempFleet('cs-traffic-', async (dir) => {
  const { hub, cli } = await startClosedHub(dir, ADMIN);
  const get = async (p, headers = admin) => {
    const r = await fetch(`${hub}${p}`, { headers });
    return { status: r.status, json: await r.json() };
  };
  // One slow single-slot device: 20 tokens/s, so a 40-token answer holds its only slot for 2 s.
  const enroll = cli('hub', 'tokens', 'create', '--uses', '1').trim();
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'agent'), '--name', 'sim', '--enroll', enroll,
    '--simulate', 'prefill=4000,decode=20,slots=1'], 'agent');
  const spec = path.join(dir, 'cases.toml');
  writeFileSync(spec, `name = "cases"\nreplicas = 1\nmax_price_per_day = 5\nqueue_timeout = 30\n[model]\n` +
    `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ef'.repeat(32)}"\n[engine]\nsimulated = true\n`);
  cli('deploy', spec);
  const ready = await until('the replica ready', async () => {
    const { json } = await get('/api/v1/deployments/cases');
    return json.ready === 1 && json.replicas[0].tuned && json;
  }, 30000);

  // The settings the device runs the replica with: a simulated engine is not autotuned.
  assert.deepEqual(ready.replicas[0].tuned,
    { threads: 1, prefill_chunk: 256, parallel: 1, ctx_size: 4096, batch_size: 512, autotuned: false, kv_type: 'f16', cached: false });
  assert.match(cli('deployments', 'show', 'cases'),
    /settings: threads 1, prefill chunk 256, parallel 1, ctx 4096, batch 512, KV f16 \(not autotuned\)/);

  // Before any request the deployment has a series (its chart starts), with nothing in it.
  const empty = (await get('/api/v1/traffic')).json;
  assert.equal(empty.interval_ms, 5000);
  assert.equal(empty.window_ms, 3600000);
  assert.ok(Array.isArray(empty.deployments.cases), JSON.stringify(empty));
  assert.equal(empty.deployments.cases.reduce((n, p) => n + p.requests_2xx + p.requests_4xx + p.requests_5xx, 0), 0);

  const chat = (body) => fetch(`${hub}/d/cases/v1/chat/completions`, {
    method: 'POST', headers: { ...admin, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'is it fraud?' }], ignore_eos: true, ...body }),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));
  const busy = chat({ max_tokens: 40 }); // the only slot, for about 2 s
  await until('the slot taken', async () => (await get('/api/v1/deployments/cases')).json.replicas[0].in_flight === 1);
  const queued = chat({ max_tokens: 4, stream: true, stream_options: { include_usage: true } }); // waits in the hub's line for the slot
  const wrongModel = await chat({ model: 'not-this-one', max_tokens: 4 });
  assert.equal(wrongModel.status, 404, wrongModel.text);
  for (const r of [await busy, await queued]) assert.equal(r.status, 200, r.text);

  const sum = (points, key) => points.reduce((n, p) => n + p[key], 0);
  const series = (await get('/api/v1/traffic?deployment=cases')).json;
  assert.deepEqual(Object.keys(series.deployments), ['cases']);
  const points = series.deployments.cases;
  assert.equal(sum(points, 'requests_2xx'), 2, JSON.stringify(points));
  assert.equal(sum(points, 'requests_4xx'), 1);
  assert.equal(sum(points, 'requests_5xx'), 0);
  assert.equal(sum(points, 'completion_tokens'), 44);
  assert.ok(points.some((p) => p.queue_length >= 1), 'the queued request shows in the queue length');
  assert.ok(points.some((p) => p.latency_p95_ms > 0 && p.ttft_p50_ms > 0 && p.tokens_per_s > 0), JSON.stringify(points));
  for (let i = 1; i < points.length; ++i) assert.equal(points[i].t_ms - points[i - 1].t_ms, 5000, 'oldest first, one per interval');
  assert.ok(points.at(-1).t_ms <= series.now_ms && series.now_ms < points.at(-1).t_ms + 5000, 'the current interval is included');
  // since_ms: only later points.
  const last = points.at(-1).t_ms;
  assert.deepEqual((await get(`/api/v1/traffic?deployment=cases&since_ms=${last}`)).json.deployments.cases, []);
  assert.equal((await get(`/api/v1/traffic?since_ms=${last - 1}`)).json.deployments.cases.length, 1);

  // Validation, and the admin key.
  for (const [query, param] of [['since_ms=-1', 'since_ms'], ['since_ms=soon', 'since_ms'],
    ['deployment=..%2F', 'deployment'], ['colour=red', 'colour']]) {
    const r = await get(`/api/v1/traffic?${query}`);
    assert.equal(r.status, 400, query);
    assert.equal(r.json.error.param, param, query);
  }
  assert.equal((await get('/api/v1/traffic?deployment=nobody')).status, 404);
  assert.equal((await get('/api/v1/traffic', {})).status, 401);
  assert.equal((await get('/api/v1/traffic/stream', {})).status, 401);

  // The stream: a snapshot of the same series, then each finished interval's point.
  const stream = await fetch(`${hub}/api/v1/traffic/stream`, { headers: admin });
  assert.equal(stream.status, 200);
  assert.match(stream.headers.get('content-type'), /text\/event-stream/);
  const events = await readEvents(stream, (e) => e.some((x) => x.event === 'point'));
  assert.equal(events[0].event, 'snapshot');
  assert.equal(sum(events[0].data.deployments.cases, 'requests_2xx'), 2);
  const point = events.find((x) => x.event === 'point').data;
  assert.equal(point.deployment, 'cases');
  assert.equal(typeof point.point.t_ms, 'number');
  assert.ok('latency_p50_ms' in point.point && 'queue_length' in point.point, JSON.stringify(point));

  // At most 16 streams at once; one whose client left frees its place (within a check interval:
  // the streams read above may still hold theirs, so the attempt is repeated until they do not).
  const open = await until('16 streams open and a 17th refused', async () => {
    const tried = [];
    while (tried.length < 17) {
      const abort = new AbortController();
      const r = await fetch(`${hub}/api/v1/traffic/stream`, { headers: admin, signal: abort.signal });
      tried.push({ abort, r });
      if (r.status !== 200) break;
    }
    if (tried.length === 17 && tried[16].r.status === 503) return tried;
    tried.forEach((t) => t.abort.abort());
    return null;
  }, 20000);
  assert.match((await open[16].r.json()).error.message, /too many traffic streams/);
  const aborts = open.slice(0, 16).map((t) => t.abort);
  aborts[0].abort();
  const again = await until('a stream place freed', async () => {
    const r = await fetch(`${hub}/api/v1/traffic/stream`, { headers: admin });
    if (r.status !== 200) return null;
    return r;
  }, 10000);
  await again.body.cancel();
  aborts.forEach((a) => a.abort());

  // A removed deployment drops its series.
  assert.equal((await fetch(`${hub}/api/v1/deployments/cases`, { method: 'DELETE', headers: admin })).status, 200);
  assert.deepEqual((await get('/api/v1/traffic')).json.deployments, {});
  assert.equal((await get('/api/v1/traffic?deployment=cases')).status, 404);
}));

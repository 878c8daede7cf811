// The deployment endpoint end to end: a real hub and three real agents on 127.0.0.1 serve a
// deployment of 2 replicas + 1 spare of a testdata model behind one address, /d/risk/v1, driven
// by the official `openai` client. Checks the model names, the host form, and that 300 requests
// from 16 concurrent clients all get exactly one answer while one agent is SIGKILLed and another
// SIGSTOPped for 15 s (issue 18's check), counted from the clients' own records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { children, freePort, sleep, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';






const json = async (url) => (await fetch(url)).json();

test('the deployment endpoint: one address, load-aware routing, failover', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-gateway-'));
  const hubDir = path.join(dir, 'hub');
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3', '--ping-timeout', '3',
    '--domain', 'fleet.test'], 'hub');
  const agents = {};
  const startAgent = (name) =>
    (agents[name] = spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
      '--benchmark-shape', '', '--no-autotune'], name));
  try {
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const source = model('qwen3-tiny-f32.gguf');
    copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
    const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
    for (const name of ['a1', 'a2', 'a3']) startAgent(name);
    await until('three agents', async () => (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 3);
    const spec = path.join(dir, 'spec.toml');
    writeFileSync(spec, `name = "risk"\nalias = "fraud-v1"\nreplicas = 2\nspares = 1\nmax_price_per_day = 5\n` +
      `queue_timeout = 60\n[model]\nurl = "${hub}/files/model.gguf"\nsha256 = "${sha}"\n[engine]\nparallel = 2\nctx_size = 512\n`);
    const deploy = spawn(bin, ['deploy', spec, '--hub', hub], { stdio: 'ignore' });
    assert.equal(await new Promise((r) => deploy.on('exit', r)), 0);
    const allReady = async () => (await json(`${hub}/api/v1/deployments/risk`)).replicas.every((r) => r.state === 'ready');
    await until('2 replicas and the spare ready', allReady, 90000);

    // The deployment's models: its name and its alias.
    const models = await json(`${hub}/d/risk/v1/models`);
    assert.deepEqual(models.data.map((m) => m.id), ['risk', 'fraud-v1']);
    const client = new OpenAI({ baseURL: `${hub}/d/risk/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    for (const name of ['risk', 'fraud-v1']) {
      const r = await client.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
      assert.equal(r.choices.length, 1);
      assert.equal(r.model, 'risk');
    }
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 }),
      (e) => e.status === 404 && e.code === 'model_not_found');
    const completion = await client.completions.create({ model: 'risk', prompt: 'Once upon', max_tokens: 4 });
    assert.equal(completion.object, 'text_completion');
    let chunks = 0;
    for await (const _ of await client.chat.completions.create({
      model: 'risk', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, stream: true })) chunks++;
    assert.ok(chunks >= 2);
    // The Responses API through the same endpoint, whole and streamed, by the alias.
    const response = await client.responses.create({ model: 'fraud-v1', input: 'Hi', max_output_tokens: 4, temperature: 0 });
    assert.equal(response.object, 'response');
    assert.equal(response.model, 'risk');
    assert.equal(response.usage.output_tokens, 4);
    const events = [];
    for await (const e of await client.responses.create({ model: 'risk', input: 'Hi', max_output_tokens: 4, temperature: 0, stream: true })) {
      events.push(e.type);
    }
    assert.equal(events[0], 'response.created');
    assert.equal(events.at(-1), 'response.incomplete');
    // Bad bodies are refused at the hub with OpenAI-style errors.
    const bad = await fetch(`${hub}/d/risk/v1/chat/completions`, { method: 'POST', body: '{"model":', headers: { 'content-type': 'application/json' } });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error.message, /not valid JSON/);
    assert.equal((await fetch(`${hub}/d/nope/v1/models`)).status, 404);
    const badTimeout = await fetch(`${hub}/d/risk/v1/chat/completions`, { method: 'POST', headers: { 'x-request-timeout': 'soon' },
      body: JSON.stringify({ model: 'risk', messages: [{ role: 'user', content: 'Hi' }] }) });
    assert.equal(badTimeout.status, 400);
    // The same endpoint by host name.
    const byHost = await new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/v1/models', headers: { Host: `risk.fleet.test:${port}` } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      }).on('error', reject);
    });
    assert.equal(byHost.status, 200, byHost.body);
    assert.equal(JSON.parse(byHost.body).data[0].id, 'risk');

    // 300 requests from 16 concurrent clients; at 60 one agent is SIGKILLed, at 120 another is
    // SIGSTOPped for 15 s. Each client records its own outcomes.
    const total = 300;
    let next = 0;
    const outcomes = [];
    const served = {};
    const streamsBroken = [];
    let killed = null;
    let stopped = null;
    const serving = async () => {
      const reps = (await json(`${hub}/api/v1/deployments/risk`)).replicas;
      const procs = (await json(`${hub}/api/v1/processors`)).processors;
      return reps.filter((r) => r.role === 'replica').map((r) => procs.find((p) => p.id === r.processor)?.name);
    };
    const homes = await serving();
    const chaos = (async () => {
      await until('60 requests', async () => next >= 60, 120000);
      killed = homes[0];
      agents[killed].kill('SIGKILL');
      await until('120 requests', async () => next >= 120, 120000);
      stopped = homes[1];
      agents[stopped].kill('SIGSTOP');
      await sleep(15000);
      agents[stopped].kill('SIGCONT');
    })();
    const runClient = async (c) => {
      const oa = new OpenAI({ baseURL: `${hub}/d/risk/v1`, apiKey: `client-${c}`, maxRetries: 0, timeout: 120000 });
      while (next < total) {
        const i = next++;
        try {
          if (i % 10 === 9) {
            // Some streams: once begun, a stream either completes or ends with an error event.
            let text = '';
            let errored = false;
            try {
              for await (const chunk of await oa.chat.completions.create({
                model: 'risk', messages: [{ role: 'user', content: `Case ${i}` }], max_tokens: 8, stream: true })) {
                text += chunk.choices[0].delta.content ?? '';
              }
            } catch (e) {
              errored = true;
              streamsBroken.push(`${i}: ${e.message}`);
            }
            outcomes.push({ i, ok: !errored, stream: true });
          } else {
            const { data, response } = await oa.chat.completions
              .create({ model: 'risk', messages: [{ role: 'user', content: `Case ${i}` }], max_tokens: 8 })
              .withResponse();
            assert.equal(data.choices.length, 1);
            const replica = response.headers.get('x-cellserve-replica');
            served[replica] = (served[replica] ?? 0) + 1;
            outcomes.push({ i, ok: true });
          }
        } catch (e) {
          outcomes.push({ i, ok: false, error: `${e.status ?? ''} ${e.message}` });
        }
      }
    };
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 16 }, (_, c) => runClient(c)));
    const elapsed = Date.now() - t0;
    await chaos;
    const failures = outcomes.filter((o) => !o.ok && !o.stream);
    console.log(`300 requests, 16 clients: ${elapsed} ms; served by replica ${JSON.stringify(served)}; ` +
      `killed ${killed}, stopped ${stopped} for 15 s; failed non-streamed: ${failures.length}; broken streams: ${streamsBroken.length}`);
    assert.equal(outcomes.length, total, 'every request has exactly one outcome');
    assert.equal(new Set(outcomes.map((o) => o.i)).size, total);
    assert.deepEqual(failures, []);
    // A broken stream may only fail with the error the hub sent, never end silently.
    for (const s of streamsBroken) assert.match(s, /device|incomplete|failed/i, s);
    assert.ok(Object.keys(served).length >= 2, 'both replicas served');

    // The replica count is restored: the spare took the killed agent's place, and the stopped
    // agent came back.
    await until('2 replicas ready again', async () =>
      (await json(`${hub}/api/v1/deployments/risk`)).replicas.filter((r) => r.role === 'replica' && r.state === 'ready').length === 2,
    60000);
    const after = await client.chat.completions.create({ model: 'risk', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
    assert.equal(after.choices.length, 1);

    // What the hub saw, from its metrics and the CLI: requests by replica and status, retries,
    // the queue, completions in the last hour; labels only of known deployments.
    const metrics = await (await fetch(`${hub}/metrics`)).text();
    const sumOf = (re) => [...metrics.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
    const answered200 = sumOf(/^cellserve_hub_requests_total\{deployment="risk",replica="\d+",status="200"\} (\d+)$/gm);
    assert.ok(answered200 >= total - streamsBroken.length, `200s in metrics: ${answered200}`);
    assert.match(metrics, /^cellserve_hub_queue_length\{deployment="risk"\} \d+$/m);
    assert.match(metrics, /^cellserve_hub_request_duration_seconds_count\{deployment="risk"\} \d+$/m);
    assert.ok(!/deployment="(?!risk")/.test(metrics), 'only the known deployment is a label');
    const shown = JSON.parse(execFileSync(bin, ['deployments', 'show', 'risk', '--json', '--hub', hub], { encoding: 'utf8' }));
    assert.equal(shown.endpoint, '/d/risk/v1');
    assert.ok(shown.completed_last_hour >= answered200, `completed_last_hour ${shown.completed_last_hour}`);
    assert.ok(shown.replicas.every((r) => typeof r.slots === 'number' && typeof r.busy === 'number'));
    const table = execFileSync(bin, ['deployments', 'show', 'risk', '--hub', hub], { encoding: 'utf8' });
    assert.match(table, /endpoint \/d\/risk\/v1\s+queue \d+\s+completed last hour \d+/);
    assert.match(table, /load\s+errors\s+done\/h/);
    for (const args of [['fleet', 'ls'], ['deployments', 'ls'], ['market', '--replicas', '1']]) {
      JSON.parse(execFileSync(bin, [...args, '--json', '--hub', hub], { encoding: 'utf8' }));
    }
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-4000)}`);
    throw e;
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// The queue and prefix affinity need devices whose speed is known: simulated agents
// (`agent --simulate`, a paced engine under the real server), so every duration below follows
// from the stated token rates, not from this machine's speed.
test('the deployment queue: 429 beyond queue_max, 504 at the deadline; prefix affinity', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-gateway-sim-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const sha = 'cd'.repeat(32); // never fetched by simulated agents
  const deploy = async (toml) => {
    const file = path.join(dir, `spec-${Math.random().toString(36).slice(2)}.toml`);
    writeFileSync(file, toml + `[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${sha}"\n[engine]\nsimulated = true\n`);
    const p = spawn(bin, ['deploy', file, '--hub', hub], { stdio: 'ignore' });
    assert.equal(await new Promise((r) => p.on('exit', r)), 0);
  };
  try {
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    // One slow single-slot device: 20 tokens/s, so 60 tokens hold its slot for 3 s.
    spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'slow'), '--name', 'slow',
      '--simulate', 'prefill=4000,decode=20,slots=1'], 'slow');
    await until('the slow agent', async () => (await json(`${hub}/api/v1/processors`)).processors.some((p) => p.online));
    await deploy(`name = "tight"\nreplicas = 1\nmax_price_per_day = 5\nqueue_max = 1\nqueue_timeout = 1.5\n`);
    await until('tight ready', async () => (await json(`${hub}/api/v1/deployments/tight`)).ready === 1);

    const chat = (extra = {}, headers = {}) =>
      fetch(`${hub}/d/tight/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model: 'tight', messages: [{ role: 'user', content: 'long case' }], max_tokens: 60,
          ignore_eos: true, ...extra }),
      }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json(), at: Date.now() }));
    const t0 = Date.now();
    const busy = chat(); // takes the only slot for ~3 s
    await sleep(300);
    const header = await chat({}, { 'x-request-timeout': '0.4' }); // waits in the queue, gives up first
    assert.equal(header.status, 504, JSON.stringify(header.body));
    assert.equal(header.body.error.type, 'timeout');
    assert.ok(header.at - t0 < 1400, `the header's 0.4 s shortened the spec's 1.5 s (answered after ${header.at - t0} ms)`);
    const queued = chat(); // waits in the queue: its spec deadline (1.5 s) passes before the slot frees
    await sleep(200);
    const full = await chat(); // the queue (1) is full
    assert.equal(full.status, 429, JSON.stringify(full.body));
    assert.equal(full.headers.get('retry-after'), '1');
    assert.match(full.body.error.message, /queue is full/);
    const late = await queued;
    assert.equal(late.status, 504, JSON.stringify(late.body));
    const first = await busy;
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.usage.completion_tokens, 60);

    // Prefix affinity: 3 equal devices; requests share one of two long system prompts. Through the
    // deployment endpoint each prompt keeps to one replica, so its prefix cache hits; sent to
    // random replica addresses (the baseline, same run) they hit far less.
    for (const name of ['e1', 'e2', 'e3']) {
      spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
        '--simulate', 'prefill=20000,decode=400,slots=4'], name);
    }
    await until('four agents', async () => (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 4);
    await deploy(`name = "cases"\nreplicas = 3\nmax_price_per_day = 5\n`);
    await until('cases ready', async () => (await json(`${hub}/api/v1/deployments/cases`)).ready === 3);
    const system = (tag) => `${tag} you are a fraud analyst. `.repeat(80);
    const share = async (label, baseFor, prompts) => {
      let cached = 0;
      let total = 0;
      for (let i = 0; i < 24; ++i) {
        const oa = new OpenAI({ baseURL: baseFor(i), apiKey: 'x', maxRetries: 0 });
        const r = await oa.chat.completions.create({ model: 'cases', max_tokens: 4, messages: [
          { role: 'system', content: prompts[i % 2] }, { role: 'user', content: `case ${label} ${i}` }] });
        cached += r.usage.prompt_tokens_details?.cached_tokens ?? 0;
        total += r.usage.prompt_tokens;
      }
      return cached / total;
    };
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 3;
    const viaEndpoint = await share('a', () => `${hub}/d/cases/v1`, [system('alpha'), system('bravo')]);
    const viaRandom = await share('b', () => `${hub}/d/cases/r/${random()}/v1`, [system('charlie'), system('delta')]);
    // Each prompt must be computed once per replica it visits: affinity visits one, random all three.
    const recomputed = (1 - viaEndpoint) / (1 - viaRandom);
    console.log(`prefix affinity: cached-token share ${viaEndpoint.toFixed(3)} through the deployment endpoint, ` +
      `${viaRandom.toFixed(3)} over random replicas (ratio ${(viaEndpoint / viaRandom).toFixed(2)}); prompt tokens ` +
      `computed: ${recomputed.toFixed(2)}x those of random routing`);
    assert.ok(recomputed < 0.6, `affinity ${viaEndpoint} vs random ${viaRandom}`);
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// Scale and drain without dropping a request: a client keeps asking through the deployment
// endpoint while the deployment grows from 1 to 3 replicas, one replica is drained and back,
// and it shrinks to 1 while a long answer runs on a replica being removed.
test('scale and drain: no request dropped', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-gateway-scale-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  let hubProc = null;
  const hubLog = () => hubProc.log;
  let stopClient = false;
  let clientDone = Promise.resolve();
  try {
    hubProc = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    for (const name of ['s1', 's2', 's3']) {
      spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
        '--simulate', 'prefill=20000,decode=100,slots=2'], name);
    }
    await until('three agents', async () => (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 3);
    const spec = path.join(dir, 'elastic.toml');
    writeFileSync(spec, `name = "elastic"\nreplicas = 1\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${'ef'.repeat(32)}"\n[engine]\nsimulated = true\n`);
    cli('deploy', spec);
    await until('elastic ready', async () => (await json(`${hub}/api/v1/deployments/elastic`)).ready === 1);

    const outcomes = [];
    let phase = 'one';
    const ask = async (maxTokens, base = `${hub}/d/elastic/v1`) => {
      const r = await fetch(`${base}/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'elastic', messages: [{ role: 'user', content: 'case' }], max_tokens: maxTokens, ignore_eos: true }) });
      const body = await r.json();
      return { status: r.status, replica: r.headers.get('x-cellserve-replica'), body };
    };
    clientDone = (async () => {
      while (!stopClient) {
        const p = phase;
        const r = await ask(5).catch((e) => ({ status: 0, error: e.message }));
        outcomes.push({ ...r, phase: p });
      }
    })();
    const readyReplicas = async () => (await json(`${hub}/api/v1/deployments/elastic`)).replicas
      .filter((r) => r.role === 'replica' && r.state === 'ready').length;

    // Up to 3: the new replicas take traffic once ready.
    assert.match(cli('deployments', 'scale', 'elastic', '--replicas', '3'), /replicas 3/);
    await until('3 replicas ready', async () => (await readyReplicas()) === 3);
    phase = 'three';
    await until('traffic on the new replicas', async () =>
      new Set(outcomes.filter((o) => o.phase === 'three').map((o) => o.replica)).size >= 2, 20000);

    // Drain replica 0: no new request goes there, until undrained.
    assert.match(cli('deployments', 'drain', 'elastic', '0'), /ready \(draining\)/);
    phase = 'drained';
    const drainedFrom = outcomes.length;
    await until('20 answers while drained', async () => outcomes.length >= drainedFrom + 20, 20000);
    const whileDrained = outcomes.slice(drainedFrom + 2); // one may have been chosen just before
    assert.ok(whileDrained.every((o) => o.replica !== '0'), `replica 0 answered while drained: ${JSON.stringify(whileDrained.map((o) => o.replica))}`);
    cli('deployments', 'undrain', 'elastic', '0');
    phase = 'undrained';

    // Down to 1 while a long answer (300 tokens at 100/s: 3 s) runs on replica 2, which is
    // removed: the answer finishes first, then the replica goes.
    const long = ask(300, `${hub}/d/elastic/r/2/v1`);
    await sleep(300);
    cli('deployments', 'scale', 'elastic', '--replicas', '1');
    phase = 'shrinking';
    const longDone = await long;
    assert.equal(longDone.status, 200, JSON.stringify(longDone.body));
    assert.equal(longDone.body.usage.completion_tokens, 300);
    assert.doesNotMatch(hubLog(), /elastic\/2 removed/, 'kept while its answer ran');
    await until('rows 1 and 2 removed', async () => (await json(`${hub}/api/v1/deployments/elastic`)).replicas.length === 1, 20000);
    assert.match(hubLog(), /elastic\/2 removed \(scaled down, drained\)/);
    phase = 'one again';
    const after = outcomes.length;
    await until('answers after shrinking', async () => outcomes.length >= after + 5, 20000);
    stopClient = true;
    await clientDone;
    const failed = outcomes.filter((o) => o.status !== 200);
    console.log(`scale/drain: ${outcomes.length} requests during 1→3→1 replicas and a drain; failed ${failed.length}`);
    assert.deepEqual(failed, []);
    assert.ok(outcomes.filter((o) => o.phase === 'one again').every((o) => o.replica === '0'));
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    stopClient = true;
    await clientDone.catch(() => {});
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// Hedging: a frozen device (SIGSTOP; its tunnel stays up for the hub's 30 s ping timeout, so it
// still looks ready and idle) gets short requests first; after hedge_delay each is also sent to
// the other replica, whose answer wins. The frozen device's slots are freed once it runs again.
test('hedging: short requests are answered despite a frozen device', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-gateway-hedge-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  const agents = {};
  try {
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2',
      '--ping-timeout', '30'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    for (const name of ['h1', 'h2']) {
      agents[name] = spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
        '--simulate', 'prefill=20000,decode=400,slots=2'], name);
    }
    await until('two agents', async () => (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 2);
    const spec = path.join(dir, 'guard.toml');
    writeFileSync(spec, `name = "guard"\nreplicas = 2\nmax_price_per_day = 5\nhedge_max_tokens = 16\nhedge_delay = 0.3\n` +
      `[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`);
    cli('deploy', spec);
    await until('guard ready', async () => (await json(`${hub}/api/v1/deployments/guard`)).ready === 2);
    const d = await json(`${hub}/api/v1/deployments/guard`);
    const procs = (await json(`${hub}/api/v1/processors`)).processors;
    const frozen = procs.find((p) => p.id === d.replicas.find((r) => r.index === 0).processor).name;
    const ask = async (maxTokens) => {
      const t0 = Date.now();
      const r = await fetch(`${hub}/d/guard/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'guard', messages: [{ role: 'user', content: 'is this fraud?' }], max_tokens: maxTokens }) });
      return { status: r.status, replica: r.headers.get('x-cellserve-replica'), body: await r.json(), ms: Date.now() - t0 };
    };
    const before = await ask(8);
    assert.equal(before.status, 200);
    agents[frozen].kill('SIGSTOP');
    const answers = [];
    for (let i = 0; i < 5; ++i) answers.push(await ask(8));
    for (const a of answers) {
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal(a.replica, '1', 'the hedge on the live replica answered');
      assert.equal(a.body.choices[0].message.content, before.body.choices[0].message.content);
    }
    console.log(`hedging: answers with replica 0 frozen took ${answers.map((a) => a.ms).join(', ')} ms (hedge_delay 300 ms)`);
    const metrics = await (await fetch(`${hub}/metrics`)).text();
    const hedges = Number(metrics.match(/^cellserve_hub_hedges_total\{deployment="guard"\} (\d+)$/m)?.[1]);
    // Every request sent to the frozen replica was hedged: at least the first 3, while the hub has
    // measured neither replica (equal, so index 0 is chosen); once it has measured the live one
    // (3 answers), a request may go straight to it (docs/fleet.md, "Routing on measurements").
    assert.ok(hedges >= 3, `hedges_total ${hedges}`);
    agents[frozen].kill('SIGCONT');
    // The cancelled legs free the frozen device's slots once it runs again.
    await until('replica 0 idle again', async () => {
      const r = (await json(`${hub}/api/v1/deployments/guard`)).replicas.find((x) => x.index === 0);
      return r.in_flight === 0 && r.busy === 0;
    }, 20000);
    // Long requests are never hedged.
    const long = await ask(64);
    assert.equal(long.status, 200);
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    for (const a of Object.values(agents)) a.kill('SIGCONT');
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// Hostile input against a live fleet, bounded and loopback-only (issue 19's end-to-end check): a
// real hub and two real agents serve a deployment of 2 replicas while a normal client keeps
// chatting through both replica addresses with the official `openai` client. Meanwhile:
//   row 1  paths of 30,000 characters, to the hub's routes and through it to an agent's;
//   row 3  fake agents (tests/fleet/agent/hostile_agent.cpp) answer registration with an endless body;
//   row 4  heavy response_format schemas beside the normal chats, and one past the limits;
//   row 7  2,000 idle and slow-header connections from 40 loopback addresses;
//   row 8  hundreds of random paths, after which /metrics holds no series named by them.
// The normal client must get every answer, the hub must stay up, and its RSS must stay under
// kHubRssBoundMiB (sampled every 100 ms). Latencies are printed as ratios, never asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { children, exitOf, freePort, sleep, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

// The hub's resident memory may not pass this while under attack. An idle hub is ~10 MiB; the
// worst legitimate buffering here is the tunnel's per-call cap (1 MiB) per fake agent plus one
// thread stack per admitted connection (at most 2 × 1,024 threads, mostly untouched). Measured: a
// peak near 42 MiB.
const kHubRssBoundMiB = 96;
const hostileAgent = process.env.CELLSERVE_HOSTILE_AGENT || '';







function rssMiB(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return m ? Number(m[1]) / 1024 : 0;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

// The normal client: chats in a loop through both replicas until stopped; records every outcome
// and the latency of each answer, tagged with the phase it ran in.
function normalClient(hub) {
  const clients = [0, 1].map(
    (n) => new OpenAI({ baseURL: `${hub}/d/risk/r/${n}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 }));
  const state = { phase: 'idle', answers: [], failures: [], stopped: false };
  state.done = (async () => {
    for (let i = 0; !state.stopped; ++i) {
      const phase = state.phase;
      const t0 = performance.now();
      try {
        const r = await clients[i % 2].chat.completions.create({
          model: 'risk', messages: [{ role: 'user', content: `Hello ${i}` }], max_tokens: 4, temperature: 0 });
        assert.equal(r.choices.length, 1);
        state.answers.push({ phase, ms: performance.now() - t0 });
      } catch (e) {
        state.failures.push(`${phase}: request ${i}: ${e.status ?? ''} ${e.message}`);
      }
    }
  })();
  return state;
}

const hubAlive = async (hub) => (await fetch(`${hub}/health`)).status === 200;

test('hostile input against a live hub with two agents, while a normal client chats',
  { skip: skipReason() || (existsSync(hostileAgent) ? false : 'CELLSERVE_HOSTILE_AGENT is not built') }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-hostile-'));
    const hubDir = path.join(dir, 'hub');
    const port = await freePort();
    const hub = `http://127.0.0.1:${port}`;
    const hubProc = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3',
      '--ping-timeout', '3'], 'hub');
    let peakRss = 0;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, rssMiB(hubProc.pid));
      } catch {}
    }, 100);
    let client = null;
    try {
      await until('the hub', () => hubAlive(hub), 10000);
      const source = model('qwen3-tiny-f32.gguf');
      copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
      const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
      for (const name of ['a1', 'a2']) {
        spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
          '--benchmark-shape', '', '--no-autotune'], name);
      }
      const spec = path.join(dir, 'spec.toml');
      writeFileSync(spec, `name = "risk"\nreplicas = 2\nmax_price_per_day = 5\n[model]\nurl = "${hub}/files/model.gguf"\n` +
        `sha256 = "${sha}"\n[engine]\nparallel = 2\nctx_size = 512\n`);
      await until('two agents', async () =>
        (await (await fetch(`${hub}/api/v1/processors`)).json()).processors.filter((p) => p.online).length === 2);
      const deploy = spawn(bin, ['deploy', spec, '--hub', hub], { stdio: 'ignore' });
      assert.equal(await exitOf(deploy), 0);
      await until('both replicas ready', async () =>
        (await (await fetch(`${hub}/api/v1/deployments/risk`)).json()).ready === 2, 90000);

      client = normalClient(hub);
      await until('a first normal answer', async () => client.answers.length >= 10, 30000);
      const idleRss = rssMiB(hubProc.pid);

      // Row 1: long paths. The hub's own routes, a replica route the hub forwards, and the same
      // through the tunnel into the agent's route table.
      client.phase = 'row1';
      const long = 'a'.repeat(30000);
      for (const p of [`/${long}`, `/d/a/r/0/${long}`, `/d/risk/r/0/${long}`, `/d/risk/r/0/v1/${long}`, `/api/v1/${long}`]) {
        const r = await fetch(`${hub}${p}`);
        assert.ok([404, 405, 414, 431].includes(r.status), `${p.slice(0, 20)}…: ${r.status}`);
        const body = await r.json();
        assert.equal(typeof body.error?.message, 'string');
      }
      assert.ok(await hubAlive(hub), 'the hub survives long paths');

      // Row 3: fake agents whose registration answer never ends. Each is cut off (its tunnel
      // closed) and never registered.
      client.phase = 'row3';
      const fakes = [1, 2, 3, 4].map((i) => spawnLogged(['--hub', hub, '--limit-seconds', '30'], `fake${i}`, hostileAgent));
      const codes = await Promise.all(fakes.map(exitOf));
      const fakeBytes = [];
      for (const f of fakes) {
        assert.equal(f.exitCode, 0, `${f.name}: ${f.log}`);
        const sent = Number(f.out.match(/sent (\d+) bytes/)?.[1] ?? NaN);
        assert.ok(sent < 64 * 2 ** 20, `${f.name} sent ${sent} bytes before the hub stopped reading`);
        fakeBytes.push(sent);
      }
      assert.deepEqual(codes, [0, 0, 0, 0]);
      const procs = (await (await fetch(`${hub}/api/v1/processors`)).json()).processors;
      assert.equal(procs.length, 2, 'fake agents are not registered');
      assert.match(hubProc.log, /not registered/);

      // Row 4: heavy schemas beside the normal chats. 400 identical branches and 200 distinct
      // objects are within the limits (answered, slowing only themselves); 2,000 distinct
      // branches are refused before admission with the limit named.
      client.phase = 'row4';
      const schemaChat = (schema) =>
        fetch(`${hub}/d/risk/r/${Math.random() < 0.5 ? 0 : 1}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'risk', messages: [{ role: 'user', content: 'Give JSON' }], max_tokens: 24,
            response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }),
        }).then(async (r) => ({ status: r.status, body: await r.json() }));
      const identical = { anyOf: Array.from({ length: 400 }, () => ({ type: 'string' })) };
      const distinct = { anyOf: Array.from({ length: 200 }, (_, i) => ({
        type: 'object', properties: { [`k${i}`]: { type: 'string' } }, required: [`k${i}`] })) };
      const tooMany = { anyOf: Array.from({ length: 2000 }, (_, i) => ({ const: `v${i}` })) };
      const heavy = await Promise.all([schemaChat(identical), schemaChat(distinct), schemaChat(identical), schemaChat(distinct)]);
      for (const r of heavy) assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      const refused = await schemaChat(tooMany);
      assert.equal(refused.status, 400);
      assert.match(refused.body.error.message, /limit|branches|too many/i);

      // Row 7: 2,000 connections that never finish a request, from 40 loopback addresses (the
      // per-address cap applies to each), half of them idle, half sending a header slowly.
      client.phase = 'row7';
      const sockets = [];
      const slow = [];
      let opened = 0;
      for (let a = 0; a < 40; ++a) {
        for (let k = 0; k < 50; ++k) {
          const s = net.connect({ host: '127.0.0.1', port, localAddress: `127.0.0.${a + 2}` });
          s.on('error', () => {});
          s.on('connect', () => {
            ++opened;
            if (k % 2) s.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ');
          });
          sockets.push(s);
          if (k % 2) slow.push(s);
        }
        await sleep(5);
      }
      const answersBefore = client.answers.length;
      const healthDuringFlood = [];
      const floodEnd = Date.now() + 6000;
      while (Date.now() < floodEnd) {
        healthDuringFlood.push((await fetch(`${hub}/health`)).status);
        for (const s of slow) if (!s.destroyed && s.writable) s.write('a');
        await sleep(200);
      }
      const answersDuringFlood = client.answers.length - answersBefore;
      for (const s of sockets) s.destroy();
      assert.ok(opened >= 1000, `only ${opened} hostile connections opened`);
      assert.ok(healthDuringFlood.every((s) => s === 200), `health during the flood: ${healthDuringFlood}`);
      assert.ok(answersDuringFlood > 0, 'the normal client was answered during the flood');

      // Row 8: random paths, to the hub and through it to a replica; the replica's metrics name
      // route templates only.
      client.phase = 'row8';
      const tokens = Array.from({ length: 300 }, (_, i) => `zz${i}q${Math.random().toString(36).slice(2, 8)}`);
      for (let i = 0; i < tokens.length; i += 30) {
        await Promise.all(tokens.slice(i, i + 30).map(async (t, j) => {
          const p = j % 2 ? `/d/risk/r/0/v1/${t}` : `/${t}`;
          const r = await fetch(`${hub}${p}`, { method: j % 3 ? 'GET' : 'POST' });
          assert.ok(r.status >= 400 && r.status < 500, `${p}: ${r.status}`);
          await r.arrayBuffer();
        }));
      }
      const metrics = await (await fetch(`${hub}/d/risk/r/0/metrics`)).text();
      assert.match(metrics, /cellserve_requests_total/);
      for (const t of tokens) assert.ok(!metrics.includes(t), `a metrics series names the path ${t}`);
      const endpoints = new Set([...metrics.matchAll(/endpoint="([^"]*)"/g)].map((m) => m[1]));
      assert.ok(endpoints.size <= 20, `endpoint labels: ${[...endpoints]}`);

      // The normal client: every request answered, before, during and after.
      client.phase = 'after';
      const afterStart = client.answers.length;
      await until('answers after the attacks', async () => client.answers.length >= afterStart + 10, 30000);
      client.stopped = true;
      await client.done;
      assert.deepEqual(client.failures, []);
      assert.ok(await hubAlive(hub));
      const byPhase = {};
      for (const { phase, ms } of client.answers) (byPhase[phase] ??= []).push(ms);
      const idleMs = median(byPhase.idle);
      console.log(`normal client: ${client.answers.length} answers, 0 failures; median latency per phase as a ratio of idle ` +
        `(${idleMs.toFixed(1)} ms): ` +
        Object.entries(byPhase).map(([p, xs]) => `${p} ${(median(xs) / idleMs).toFixed(2)}× (n=${xs.length})`).join(', '));
      console.log(`hub RSS: ${idleRss.toFixed(1)} MiB serving, peak ${peakRss.toFixed(1)} MiB under attack ` +
        `(bound ${kHubRssBoundMiB} MiB); hostile connections opened: ${opened}; fake agents cut off after ` +
        `${fakeBytes.map((b) => (b / 2 ** 20).toFixed(2)).join(', ')} MiB`);
      assert.ok(peakRss > 0 && peakRss < kHubRssBoundMiB, `hub RSS peaked at ${peakRss.toFixed(1)} MiB`);
    } catch (e) {
      for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
      throw e;
    } finally {
      clearInterval(sampler);
      if (client) {
        client.stopped = true;
        await client.done.catch(() => {});
      }
      await Promise.all(children.map((c) => stop(c)));
      rmSync(dir, { recursive: true, force: true });
    }
  });

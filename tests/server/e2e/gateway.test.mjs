// The deployment endpoint end to end: a real hub and three real agents on 127.0.0.1 serve a
// deployment of 2 replicas + 1 spare of a testdata model behind one address, /d/risk/v1, driven
// by the official `openai` client. Checks the model names, the host form, and that 300 requests
// from 16 concurrent clients all get exactly one answer while one agent is SIGKILLed and another
// SIGSTOPped for 15 s (issue 18's check), counted from the clients' own records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, model, skipReason } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const children = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function spawnLogged(args, name) {
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  child.log = '';
  child.stderr.on('data', (d) => (child.log += d.toString()));
  child.name = name;
  children.push(child);
  return child;
}

async function stop(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGCONT');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(timer);
}

async function until(what, probe, limitMs = 60000) {
  const start = Date.now();
  for (;;) {
    const v = await probe().catch(() => null);
    if (v) return v;
    if (Date.now() - start > limitMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

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
                text += chunk.choices[0]?.delta?.content ?? '';
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
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-4000)}`);
    throw e;
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

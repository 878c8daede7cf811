// Hostile devices and hostile keys (issue 43), each attack performed against real processes on
// 127.0.0.1 and refused:
//   item 1   a revocation that lands while the device registers stands (a scripted agent that
//            answers /agent/info slowly; the test revokes it in between);
//   item 12  pending devices are bounded per source address, and an id never seen can be approved;
//   item 3   a user's API key reaches a replica's data paths only, not /lora-adapters, /slots,
//            /props or /metrics;
//   item 5   allow lists match the name the operator fixed at approval, never the name a device
//            gives itself;
//   item 11  an open hub and a key-less `serve` refuse a Host that a DNS-rebinding page would send;
//   item 8   a device that answers pings but never answers a request holds nothing: the hub's
//            first-byte deadline fails the request over to another replica;
//   item 14  a device that claims to have opened its secrets without opening them gets no traffic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, model, skipReason, startServer } from '../../e2e/harness.mjs';
import { children, exitOf, freePort, inTempFleet, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

const hostileAgent = process.env.CELLSERVE_HOSTILE_AGENT || '';
const adminKey = 'intruders-admin-key';
const admin = { authorization: `Bearer ${adminKey}` };

// A closed hub (admin key) with its data in `dir`; .url, .dir, .cli(args) (the CLI against it),
// .api(method, path, body) (the REST API with the admin key).
async function closedHub(dir) {
  const port = await freePort();
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, `${adminKey}\n`, { mode: 0o600 });
  const url = `http://127.0.0.1:${port}`;
  const proc = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
    '--poll-seconds', '0.3', '--ping-timeout', '3', '--api-key-file', keyFile], 'hub');
  await until('the hub', async () => (await fetch(`${url}/health`)).status === 200, 10000);
  const env = { ...process.env, CELLSERVE_HUB_KEY: adminKey };
  return {
    url, dir, proc,
    cli: (...args) => execFileSync(bin, [...args, '--hub', url], { env, encoding: 'utf8' }),
    api: async (method, p, body) => {
      const r = await fetch(`${url}${p}`, { method, headers: { ...admin, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, json: await r.json().catch(() => null) };
    },
  };
}

const processors = async (hub) => (await hub.api('GET', '/api/v1/processors')).json.processors;

// The first line of `child`'s stdout matching `re` (waits for it).
const lineOf = (child, re, what) => until(what, async () => child.out.match(re), 20000);

const needsHostileAgent = { skip: skipReason() || (existsSync(hostileAgent) ? false : 'CELLSERVE_HOSTILE_AGENT is not built') };

// Runs `body(hub)` against a fresh closed hub (inTempFleet prints the logs on a failure).
const withClosedHub = (name, body) => inTempFleet(`cs-${name}-`, async (dir) => body(await closedHub(dir)));

test('item 1: a revocation that lands while the device registers stands', needsHostileAgent, () =>
  withClosedHub('revoke', async (hub) => {
    // The device is approved, joins, and is revoked while the hub awaits its /agent/info.
    const slow = spawnLogged(['--hub', hub.url, '--mode', 'slow-info', '--delay-seconds', '2', '--limit-seconds', '20'],
      'slow-agent', hostileAgent);
    const id = (await lineOf(slow, /^id ([0-9a-f]{64})$/m, 'the scripted agent\'s id'))[1];
    assert.equal((await hub.api('POST', `/api/v1/processors/${id}/approve`)).status, 200);
    await lineOf(slow, /^info requested$/m, 'the hub to ask for /agent/info');
    assert.equal((await hub.api('POST', `/api/v1/processors/${id}/revoke`)).status, 200);
    assert.equal(await exitOf(slow), 0, `the revoked device is still connected: ${slow.log}`);
    assert.match(slow.out, /tunnel closed/);
    await until('the hub to settle', async () => {
      const p = (await processors(hub)).find((x) => x.id === id);
      return p && !p.online;
    }, 10000);
    const after = (await processors(hub)).find((x) => x.id === id);
    assert.equal(after.enrollment, 'revoked', 'registration wrote the enrolment back');
    assert.match(hub.proc.log, /revoked while it registered/);
  }));

test('item 12: pending devices are bounded per address; an id never seen can be approved', needsHostileAgent, () =>
  withClosedHub('pending', async (hub) => {
    // 24 fresh keys from one address; only 16 are recorded as pending.
    const flood = spawnLogged(['--hub', hub.url, '--mode', 'pending', '--count', '24'], 'flood', hostileAgent);
    assert.equal(await exitOf(flood), 0, flood.log);
    assert.match(flood.out, /refused 24 of 24/);
    const pending = (await processors(hub)).filter((p) => p.enrollment === 'pending');
    assert.equal(pending.length, 16, `pending rows from one address: ${pending.length}`);
    assert.ok(pending.every((p) => p.address === '127.0.0.1'));
    const unseen = randomBytes(32).toString('hex');
    const approved = await hub.api('POST', `/api/v1/processors/${unseen}/approve`, { name: 'dev-early' });
    assert.equal(approved.status, 200, JSON.stringify(approved.json));
    const row = (await processors(hub)).find((p) => p.id === unseen);
    assert.equal(row.enrollment, 'enrolled');
    assert.equal(row.label, 'dev-early');
  }));

test('item 14: a device that claims to have opened its secrets without opening them gets no traffic', needsHostileAgent,
  () => withClosedHub('fake-ack', async (hub) => {
    // It reports a hash of the sealed box, which anyone relaying the box can compute.
    const token = hub.cli('hub', 'tokens', 'create', '--uses', '1').trim();
    const faker = spawnLogged(['--hub', hub.url, '--mode', 'fake-ack', '--enroll', token, '--limit-seconds', '60'],
      'fake-ack', hostileAgent);
    await lineOf(faker, /^joined as /m, 'the faking device to join');
    const spec = path.join(hub.dir, 'sim.toml');
    writeFileSync(spec, `name = "sim"\nreplicas = 1\nmax_price_per_day = 5\nqueue_timeout = 1\n[model]\n` +
      `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n` +
      `[env]\nCASE_DB_PASSWORD = "${randomBytes(8).toString('hex')}"\n`);
    hub.cli('deploy', spec);
    const sim = async () => (await hub.api('GET', '/api/v1/deployments/sim')).json;
    await until('the faking device\'s replica ready', async () => (await sim()).replicas[0].state === 'ready', 20000);
    await new Promise((r) => setTimeout(r, 1500));  // several status polls
    assert.equal((await sim()).replicas[0].secrets_version, 0, 'a hash of the sealed box was taken for a proof');
    const r = await fetch(`${hub.url}/d/sim/v1/chat/completions`, { method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }) });
    assert.equal(r.status, 503, 'a replica whose device proved nothing got traffic');
  }));

test('user keys reach data paths only; allow lists name devices the operator named', { skip: skipReason() }, () => withClosedHub('keys', async (hub) => {
  const source = model('qwen3-tiny-f32.gguf');
  copyFileSync(source, path.join(hub.dir, 'hub', 'files', 'model.gguf'));
  const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
  const token = hub.cli('hub', 'tokens', 'create', '--uses', '2').trim();
  // Two devices; the cheaper one calls itself "dev9", the name the allow list holds.
  const startAgent = (name, price) => spawnLogged(['agent', '--hub', hub.url, '--data-dir', path.join(hub.dir, name),
    '--name', name, '--price-per-day', String(price), '--benchmark-shape', '', '--no-autotune', '--enroll', token], name);
  startAgent('dev9', 0.1);
  startAgent('honest', 0.2);
  await until('two agents', async () => (await processors(hub)).filter((p) => p.online).length === 2, 30000);
  const byName = Object.fromEntries((await processors(hub)).map((p) => [p.name, p.id]));
  const spec = path.join(hub.dir, 'spec.toml');
  writeFileSync(spec, `name = "risk"\nreplicas = 1\nmax_price_per_day = 5\n[requirements]\nallow = ["dev9"]\n` +
    `[model]\nurl = "${hub.url}/files/model.gguf"\nsha256 = "${sha}"\n[engine]\nparallel = 1\nctx_size = 256\n`);
  hub.cli('deploy', spec);
  const show = async () => (await hub.api('GET', '/api/v1/deployments/risk')).json;
  // Item 5: several reconcile rounds pass and the self-named impostor is not placed on.
  await new Promise((r) => setTimeout(r, 2000));
  const early = await show();
  assert.notEqual(early.replicas[0].processor, byName.dev9, 'the device that named itself dev9 was matched by the allow list');
  // The operator fixes the name "dev9" for the honest device; it gets the replica.
  assert.match(hub.cli('fleet', 'approve', byName.honest, '--name', 'dev9'), /enrolled/);
  const taken = await hub.api('POST', `/api/v1/processors/${byName.dev9}/approve`, { name: 'dev9' });
  assert.equal(taken.status, 409, 'a fixed name is unique');
  await until('the replica ready on the operator-named device', async () => (await show()).ready === 1, 90000);
  assert.equal((await show()).replicas[0].processor, byName.honest);

  // Item 3: a user's key reaches the data paths, and nothing else of the replica.
  const userKey = hub.cli('keys', 'create', '--deployment', 'risk').trim();
  const asUser = (method, p, body) => fetch(`${hub.url}/d/risk/r/0${p}`, { method,
    headers: { authorization: `Bearer ${userKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body) });
  const client = new OpenAI({ baseURL: `${hub.url}/d/risk/r/0/v1`, apiKey: userKey, maxRetries: 0, timeout: 60000 });
  const stream = await client.chat.completions.create({ model: 'risk', messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 4, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0].delta.content ?? '';
  assert.equal(typeof text, 'string');
  assert.equal((await asUser('GET', '/v1/models')).status, 200);
  assert.equal((await asUser('GET', '/health')).status, 200);
  const refusals = [['POST', '/lora-adapters', [{ id: 0, scale: 0 }]], ['GET', '/lora-adapters'], ['GET', '/slots'],
    ['GET', '/props'], ['GET', '/metrics'], ['POST', '/tokenize', { content: 'x' }], ['GET', '/v1/../slots'],
    ['GET', '/v1/%2e%2e/slots']];
  for (const [method, p, body] of refusals) {
    const r = await asUser(method, p, body);
    const answer = await r.json().catch(() => ({}));
      assert.equal(r.status, 403, `${method} ${p} with a user key: ${r.status} ${JSON.stringify(answer).slice(0, 200)}`);
      assert.match(answer.error.message, /admin key/);
    }
    // The admin key still reaches them.
    assert.equal((await fetch(`${hub.url}/d/risk/r/0/slots`, { headers: admin })).status, 200);
}));

// A request as a browser on a rebinding page sends it: to 127.0.0.1, with the page's own Host.
function getWithHost(port, host, p = '/health') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end();
  });
}

test('no DNS rebinding: an open hub and a key-less serve answer only address or localhost Hosts', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-rebind-'));
  const port = await freePort();
  spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--domain', 'fleet.test'], 'hub');
  const server = await startServer('qwen3-tiny-f32.gguf');
  const keyed = await startServer('qwen3-tiny-f32.gguf', [], { CELLSERVE_API_KEY: 'serve-key' });
  try {
    await until('the hub', async () => (await fetch(`http://127.0.0.1:${port}/health`)).status === 200, 10000);
    for (const target of [port, server.port]) {
      for (const host of ['attacker.example', `attacker.example:${target}`, 'localhost.attacker.example']) {
        assert.equal(await getWithHost(target, host), 403, `Host ${host} on port ${target}`);
      }
      for (const host of [`127.0.0.1:${target}`, `localhost:${target}`, `[::1]:${target}`]) {
        assert.equal(await getWithHost(target, host), 200, `Host ${host} on port ${target}`);
      }
    }
    assert.equal(await getWithHost(port, 'attacker.example', '/api/v1/processors'), 403);
    // The hub's own --domain names are its own.
    assert.equal(await getWithHost(port, `risk.fleet.test:${port}`), 200);
    // A serve with a key answers any Host (the key is what guards it).
    assert.equal(await getWithHost(keyed.port, 'serve.example'), 200);
  } finally {
    await server.stop();
    await keyed.stop();
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a device that never answers holds no request: the first-byte deadline fails over', {
  skip: skipReason() || (existsSync(hostileAgent) ? false : 'CELLSERVE_HOSTILE_AGENT is not built') }, () => inTempFleet('cs-mute-', async (dir) => {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const hubProc = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
    '--poll-seconds', '0.3', '--ping-timeout', '3'], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
  // The mute device claims to be very fast, so the gateway tries it first.
  const mute = spawnLogged(['--hub', hub, '--mode', 'mute', '--limit-seconds', '120'], 'mute', hostileAgent);
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'honest'), '--name', 'honest',
    '--simulate', 'prefill=4000,decode=400,slots=2'], 'honest');
  await until('two devices', async () =>
    (await (await fetch(`${hub}/api/v1/processors`)).json()).processors.filter((p) => p.online).length === 2, 30000);
  const spec = path.join(dir, 'sim.toml');
  writeFileSync(spec, `name = "sim"\nreplicas = 2\nmax_price_per_day = 5\nfirst_byte_timeout = 1\n[model]\n` +
    `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'cd'.repeat(32)}"\n[engine]\nsimulated = true\n`);
  execFileSync(bin, ['deploy', spec, '--hub', hub], { encoding: 'utf8' });
  await until('both replicas ready and acknowledged', async () => {
    const d = await (await fetch(`${hub}/api/v1/deployments/sim`)).json();
    return d.replicas.every((r) => r.state === 'ready' && r.secrets_version === d.secrets_version);
  }, 30000);
  const client = new OpenAI({ baseURL: `${hub}/d/sim/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
  for (let i = 0; i < 4; ++i) {
    const r = await client.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: `Hi ${i}` }],
      max_tokens: 4 });
    assert.equal(r.choices.length, 1);
    const stream = await client.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: `Hey ${i}` }],
      max_tokens: 4, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0].delta.content ?? '';
    assert.ok(text.length > 0);
  }
  // The mute device still answers its pings and polls: only the deadline got the requests back.
  assert.equal(mute.exitCode, null, 'the mute device stayed connected');
  const timedOut = (hubProc.log.match(/replica \d+: no first byte within 1000 ms/g) ?? []).length;
  assert.ok(timedOut >= 1, 'the mute device was never tried; the test proves nothing');
  console.log(`${timedOut} request(s) reached the mute device and failed over after the 1 s first-byte deadline`);
}));

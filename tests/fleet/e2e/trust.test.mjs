// Trust end to end (issue 20): a deployment's secrets are sealed to each device, opened only
// there, used by the replica (its Hugging Face download needs the token), rotated without a
// reload, and found nowhere else: not in hub.db, not in a log, not in an API answer, not in a
// device's data directory. A replica whose device has not opened the current secrets gets no
// traffic. Every answer is signed by the device: `cellserve verify` accepts a saved exchange
// and refuses a tampered one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { freePort, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

// Every file under `dir`, recursively.
function filesUnder(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

// A stand-in for Hugging Face ($HF_ENDPOINT): the model, only to a request with the current token.
async function startModelHost(bytes, token) {
  const host = { token: token, authorizations: [] };
  host.server = http.createServer((req, res) => {
    host.authorizations.push(req.headers.authorization ?? '');
    if (req.headers.authorization !== `Bearer ${host.token}`) {
      res.writeHead(401, { 'content-type': 'text/plain' });
      return res.end('a token is needed');
    }
    if (req.url !== '/acme/risk/resolve/main/model.gguf') {
      res.writeHead(404);
      return res.end();
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = range ? Number(range[1]) : 0;
    if (range) {
      res.writeHead(206, { 'content-length': bytes.length - start,
        'content-range': `bytes ${start}-${bytes.length - 1}/${bytes.length}` });
    } else {
      res.writeHead(200, { 'content-length': bytes.length });
    }
    res.end(bytes.subarray(start));
  });
  await new Promise((resolve) => host.server.listen(0, '127.0.0.1', resolve));
  host.url = `http://127.0.0.1:${host.server.address().port}`;
  return host;
}

test('secrets sealed to the device, used, rotated, found nowhere else, no traffic until opened; signed answers verify', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-trust-'));
  const hubDir = path.join(dir, 'hub');
  const agentDir = path.join(dir, 'agent');
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, 'trust-admin-key\n', { mode: 0o600 });
  const env = { ...process.env, CELLSERVE_HUB_KEY: 'trust-admin-key' };
  const admin = { authorization: 'Bearer trust-admin-key' };
  // Recognisable random values: any copy of one, anywhere, is a leak.
  const secret = (label) => `${label}-${randomBytes(16).toString('hex')}`;
  const hfToken = secret('hftoken');
  const dbPassword = secret('dbpassword');
  const rotated = secret('rotated');
  const secrets = [hfToken, dbPassword, rotated];
  const bytes = readFileSync(model('qwen3-tiny-f32.gguf'));
  const sha = createHash('sha256').update(bytes).digest('hex');
  const modelHost = await startModelHost(bytes, hfToken);
  const started = [];
  const answers = [];  // every API answer and CLI output, searched for the secrets at the end
  const cli = (args, input) => {
    const out = execFileSync(bin, [...args, '--hub', hub], { env, encoding: 'utf8', input });
    answers.push(out);
    return out;
  };
  const show = async () => {
    const text = await (await fetch(`${hub}/api/v1/deployments/case`, { headers: admin })).text();
    answers.push(text);
    return JSON.parse(text);
  };
  const chat = async () => {
    const r = await fetch(`${hub}/d/case/v1/chat/completions`, { method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 }) });
    const text = await r.text();
    answers.push(text);
    return { status: r.status, text };
  };
  const hubArgs = ['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3',
    '--api-key-file', keyFile];
  try {
    started.push(spawnLogged(hubArgs, 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const token = cli(['hub', 'tokens', 'create', '--uses', '1']).trim();
    const agentEnv = { ...process.env, HF_ENDPOINT: modelHost.url };
    delete agentEnv.HF_TOKEN;  // the only token the device can have is the deployment's
    // The model host is on loopback and is not the hub: a private download the agent opts into.
    const agent = spawnLogged(['agent', '--hub', hub, '--data-dir', agentDir, '--name', 'trusted',
      '--benchmark-shape', '', '--no-autotune', '--allow-private-downloads', '--enroll', token], 'agent', bin, agentEnv);
    started.push(agent);
    const spec = path.join(dir, 'spec.toml');
    writeFileSync(spec, `name = "case"\nmax_price_per_day = 1\nqueue_timeout = 1\n` +
      `[model]\nurl = "hf://acme/risk/model.gguf"\nsha256 = "${sha}"\n[engine]\nparallel = 1\nctx_size = 256\n` +
      `[env]\nHF_TOKEN = "${hfToken}"\nCASE_DB_PASSWORD = "${dbPassword}"\n`);
    cli(['deploy', spec]);
    rmSync(spec);  // the operator's own file is not the hub's to keep
    await until('the replica ready: downloaded with the deployment token', async () => (await show()).ready === 1, 60000);
    assert.ok(modelHost.authorizations.includes(`Bearer ${hfToken}`), 'the download carried the sealed token');
    await until('the device acknowledged the secrets', async () => (await show()).replicas[0].secrets_version === 1, 20000);
    assert.equal((await chat()).status, 200);

    // Signed answers: a whole answer and a stream, saved as a client would, verify against the
    // hub's record of the device; a tampered answer, model hash or time does not.
    const saved = (name, text) => {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      return file;
    };
    const verify = (req, resp, extra = []) => {
      try {
        return { code: 0, out: execFileSync(bin, ['verify', '--request', req, '--response', resp, ...extra],
          { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
      } catch (e) {
        return { code: e.status, out: e.stderr };
      }
    };
    const question = JSON.stringify({ model: 'case', messages: [{ role: 'user', content: 'Risk?' }], max_tokens: 3 });
    const whole = await fetch(`${hub}/d/case/v1/chat/completions`, { method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' }, body: question });
    const wholeBody = await whole.text();
    assert.equal(whole.status, 200);
    const header = whole.headers.get('x-cellserve-signature');
    assert.ok(header, 'a JSON answer carries its signature header');
    const reqFile = saved('req.json', question);
    const respFile = saved('resp.json', wholeBody);
    let v = verify(reqFile, respFile, ['--signature', header, '--hub', hub]);
    assert.equal(v.code, 0, v.out);
    assert.match(v.out, new RegExp(`valid: device trusted .* deployment case at 20\\d\\d-.* with model ${sha}`));
    // As saved by curl -i (status line and headers in the file).
    const curlFile = saved('resp.http', `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n` +
      `X-Cellserve-Signature: ${header}\r\n\r\n${wholeBody}`);
    assert.equal(verify(reqFile, curlFile, ['--hub', hub]).code, 0);
    assert.equal(verify(reqFile, saved('tampered.json', wholeBody.replace('"choices"', '"choices" ')), ['--hub', hub]).code, 1);
    const record = JSON.parse(header);
    v = verify(reqFile, respFile, ['--signature', JSON.stringify({ ...record, model_sha256: 'f'.repeat(64) }), '--allow-unknown-key']);
    assert.equal(v.code, 1);
    assert.match(v.out, /does not match its record/);
    assert.equal(verify(reqFile, respFile, ['--signature', JSON.stringify({ ...record, time_ms: record.time_ms + 1 }), '--allow-unknown-key']).code, 1);
    assert.equal(verify(saved('other.json', question.replace('Risk?', 'Risk!')), respFile, ['--signature', header, '--allow-unknown-key']).code, 1);
    // A stream: the signature is an SSE comment line before [DONE], which every client passes over.
    const streamed = JSON.stringify({ model: 'case', messages: [{ role: 'user', content: 'Risk?' }], max_tokens: 3, stream: true });
    const stream = await fetch(`${hub}/d/case/v1/chat/completions`, { method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' }, body: streamed });
    const streamBody = await stream.text();
    assert.match(streamBody, /\n\n: cellserve-signature \{"v":1,[^\n]*\}\n\ndata: \[DONE\]\n\n$/);
    const streamReq = saved('stream-req.json', streamed);
    v = verify(streamReq, saved('stream.txt', streamBody), ['--hub', hub]);
    assert.equal(v.code, 0, v.out);
    assert.equal(verify(streamReq, saved('stream-cut.txt', streamBody.replace('data: {', 'data:  {')), ['--hub', hub]).code, 1);
    const client = new OpenAI({ baseURL: `${hub}/d/case/v1`, apiKey: 'trust-admin-key', maxRetries: 0 });
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model: 'case', stream: true, max_tokens: 3,
      messages: [{ role: 'user', content: 'Hi' }] })) text += chunk.choices[0].delta.content ?? '';
    assert.ok(text.length > 0);
    answers.push(wholeBody, streamBody);

    // Rotation: the new value reaches the device without a reload, and traffic goes on.
    modelHost.token = rotated;
    assert.match(cli(['deployments', 'set-secret', 'case', 'HF_TOKEN'], `${rotated}\n`), /HF_TOKEN set \(secrets version 2\)/);
    await until('version 2 acknowledged', async () => (await show()).replicas[0].secrets_version === 2, 20000);
    assert.equal((await show()).secrets_version, 2);
    assert.equal((await chat()).status, 200);
    assert.equal(agent.log.match(/: ready \(/g).length, 1, 'the replica did not reload');
    assert.match(agent.log, /opened secrets version 2/);

    // A hub that lost its secrets key cannot open what it stored: the device gets nothing it can
    // acknowledge, so the replica, although loaded and ready, takes no traffic.
    await stop(started[0]);
    unlinkSync(path.join(hubDir, 'secrets.key'));
    started[0] = spawnLogged(hubArgs, 'hub (new secrets key)');
    await until('the device back and its replica ready', async () => (await show()).ready === 1, 30000);
    await until('the lost secrets logged', async () => /does not open/.test(started[0].log), 20000);
    assert.equal((await show()).replicas[0].secrets_version, 0);
    const direct = await fetch(`${hub}/d/case/r/0/v1/models`, { headers: admin });
    const directText = await direct.text();
    answers.push(directText);
    assert.equal(direct.status, 503);
    assert.match(directText, /not yet opened the deployment's current secrets/);
    const refused = await chat();
    assert.ok([503, 504].includes(refused.status), `no replica took it: ${refused.status} ${refused.text}`);
    // Setting the secrets again under the new key restores traffic.
    cli(['deployments', 'set-secret', 'case', 'HF_TOKEN'], rotated);
    assert.match(cli(['deployments', 'unset-secret', 'case', 'CASE_DB_PASSWORD']), /secrets version 4/);
    await until('version 4 acknowledged', async () => (await show()).replicas[0].secrets_version === 4, 20000);
    assert.equal((await chat()).status, 200);
    answers.push(cli(['deployments', 'ls', '--json']), cli(['deployments', 'show', 'case']));
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
  } catch (e) {
    for (const c of started) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(started.map((c) => stop(c)));
    if (process.env.DEBUG_TRUST) for (const c of started) console.error(`--- ${c.name}\n${c.log}`);
    modelHost.server.close();
  }
  try {
    // Nowhere: the hub's files (hub.db and its WAL included), the device's files, any log or answer.
    const places = [...filesUnder(hubDir), ...filesUnder(agentDir)];
    assert.ok(places.some((p) => p.endsWith('hub.db')));
    for (const file of places) {
      const content = readFileSync(file);
      for (const s of secrets) assert.ok(!content.includes(s), `${s.split('-')[0]} found in ${file}`);
    }
    for (const c of started) for (const s of secrets) assert.ok(!c.log.includes(s), `${s.split('-')[0]} in ${c.name}'s log`);
    for (const a of answers) for (const s of secrets) assert.ok(!a.includes(s), `${s.split('-')[0]} in an answer`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Attestation (issue 20, item 4): at every registration the agent's keystore helper
// (cs_test_keystore, playing a phone's) attests a key bound to the hub's challenge and the
// device's identity; the hub verifies the chain to the configured root. Only attested devices
// serve an attested_only deployment; a device whose chain is revoked in the status list is
// refused at its next registration and loses its replica at once.
const keystore = process.env.CELLSERVE_TEST_KEYSTORE;
test('attestation: only attested devices serve attested_only; a revoked chain is refused at re-registration',
  { skip: skipReason() || (!keystore && 'CELLSERVE_TEST_KEYSTORE is not set (ctest sets it)') }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-attest-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const keys = path.join(dir, 'keystore');
  execFileSync(keystore, ['init', keys]);
  const status = path.join(dir, 'status.json');
  writeFileSync(status, '{"entries": {}}');
  const started = [];
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  const processors = async () => (await (await fetch(`${hub}/api/v1/processors`)).json()).processors;
  const agent = (name, command) => spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
    '--simulate', 'prefill=4000,decode=400,slots=2', ...(command ? ['--attestation-command', command] : [])], name);
  try {
    started.push(spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
      '--poll-seconds', '0.2', '--attestation-roots', path.join(keys, 'root.pem'), '--attestation-status', status,
      '--attestation-status-refresh', '1s'], 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    let phone = agent('phone', `${keystore} helper ${keys}`);
    started.push(phone, agent('rooted', `${keystore} attest ${keys} --unlocked`), agent('plain', ''));
    const byName = async () => Object.fromEntries((await processors()).map((p) => [p.name, p]));
    const seen = await until('three devices registered', async () => {
      const ps = await byName();
      return Object.keys(ps).length === 3 && Object.values(ps).every((p) => p.online) && ps;
    }, 20000);
    assert.equal(seen.phone.attested, true, seen.phone.attestation);
    assert.match(seen.phone.attestation, /^attested: /);
    assert.equal(seen.rooted.attested, false);
    assert.match(seen.rooted.attestation, /^not attested: bootloader_unlocked/);
    assert.equal(seen.plain.attested, false);
    assert.match(seen.plain.attestation, /no attestation presented/);
    const table = cli('fleet', 'ls');
    assert.match(table, /phone .* yes /);
    assert.match(table, /bootloader_unlocked/);

    const spec = path.join(dir, 'spec.toml');
    writeFileSync(spec, `name = "cases"\nmax_price_per_day = 1\nqueue_timeout = 1\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${'ab'.repeat(32)}"\n[requirements]\nattested_only = true\n[engine]\nsimulated = true\n`);
    cli('deploy', spec);
    const show = async () => (await fetch(`${hub}/api/v1/deployments/cases`)).json();
    await until('the replica ready on the attested device', async () => (await show()).ready === 1, 20000);
    assert.equal((await show()).replicas[0].processor, seen.phone.id);
    const r = await fetch(`${hub}/d/cases/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }) });
    assert.equal(r.status, 200, await r.text());

    // The intermediate that signed the phone's chain is revoked; the phone registers again.
    const serial = new X509Certificate(readFileSync(path.join(keys, 'intermediate.pem'))).serialNumber.toLowerCase();
    writeFileSync(`${status}.new`, JSON.stringify({ entries: { [serial]: { status: 'REVOKED', reason: 'KEY_COMPROMISE' } } }));
    renameSync(`${status}.new`, status);
    await stop(phone);
    phone = agent('phone', `${keystore} helper ${keys}`);
    started.push(phone);
    const revoked = await until('the phone refused as revoked', async () => {
      const p = (await byName()).phone;
      return p.online && /revoked/.test(p.attestation) && p;
    }, 20000);
    assert.equal(revoked.attested, false);
    await until('its replica unmatched: no attested device is left', async () =>
      (await show()).replicas[0].state === 'unmatched', 10000);
    assert.match(started[0].log, /leaves .*attested_only/);
  } catch (e) {
    for (const c of started) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(started.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

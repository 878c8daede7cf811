// Signed answers end to end (issue 43, items 2, 10, 14 and 15), on a real hub with real and
// scripted devices:
// - A signed stream is a plain OpenAI stream: code that reads `chunk.choices[0].delta` of every
//   chunk works; the signature is an SSE comment line. /v1/responses and /completion streams are
//   signed too, and `cellserve verify` accepts each as saved.
// - `verify --hub` accepts only a device that served the deployment and model when it signed: a
//   pending key (anyone can make one by signing a challenge) and a revoked device's later
//   signatures are refused; without --hub only --allow-unknown-key accepts any key.
// - Each batch output line carries its device's signature record and verifies against the input.
// - A device's response headers reach users only through an allow-list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, createPrivateKey, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

const scripted = process.env.CELLSERVE_SCRIPTED_DEVICE;
const sha256 = (text) => createHash('sha256').update(text).digest('hex');

// The Ed25519 key in an agent's identity.key ("cellserve-ed25519-secret-key v1\n" + seed + public
// key, hex): what a device's owner holds.
function deviceKey(file) {
  const hex = readFileSync(file, 'utf8').split('\n')[1];
  const seed = Buffer.from(hex.slice(0, 64), 'hex');
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  return { id: hex.slice(64, 128), key: createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }) };
}

// A record as fleet/signing/answer_signature.cpp signs it, signed by `device`.
function forge(record, device, changes) {
  const r = { ...record, ...changes, device: device.id };
  const message = `cellserve-answer-v1\ndeployment=${r.deployment}\ndevice=${r.device}\nmodel=${r.model_sha256}\n` +
    `adapters=${r.adapters_sha256.join(',')}\ntime_ms=${r.time_ms}\nrequest=${r.request_sha256}\n` +
    `response=${r.response_sha256}\n`;
  r.signature = sign(null, Buffer.from(message), device.key).toString('hex');
  return r;
}

// The blocks of an SSE body, as a client splits them.
const blocks = (body) => body.split('\n\n').filter((b) => b.length > 0);

// What users' code does with each data event of a chat stream.
function readLikeAUser(body) {
  let text = '';
  for (const block of blocks(body)) {
    if (!block.startsWith('data: ') || block === 'data: [DONE]') continue;
    const chunk = JSON.parse(block.slice(6));
    assert.ok(chunk.choices.length > 0, `a chunk with empty choices: ${block}`);
    text += chunk.choices[0].delta.content ?? '';
  }
  return text;
}

test('signing: plain OpenAI streams, signed everywhere; verify --hub refuses pending and revoked keys; batch lines verify',
  { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-signing-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, 'signing-admin-key\n', { mode: 0o600 });
  const env = { ...process.env, CELLSERVE_HUB_KEY: 'signing-admin-key' };
  const admin = { authorization: 'Bearer signing-admin-key', 'content-type': 'application/json' };
  const started = [];
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { env, encoding: 'utf8' });
  const saved = (name, text) => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  const verify = (...args) => {
    try {
      return { code: 0, out: execFileSync(bin, ['verify', ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
    } catch (e) {
      return { code: e.status, out: `${e.stdout}${e.stderr}` };
    }
  };
  const post = async (p, body) => {
    const r = await fetch(`${hub}${p}`, { method: 'POST', headers: admin, body: JSON.stringify(body) });
    return { status: r.status, text: await r.text() };
  };
  const agent = (name, extra) => spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
    '--simulate', 'prefill=4000,decode=400,slots=2', ...extra], name);
  try {
    started.push(spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
      '--poll-seconds', '0.3', '--api-key-file', keyFile], 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    started.push(agent('dev', ['--enroll', cli('hub', 'tokens', 'create', '--uses', '1').trim()]));
    const spec = path.join(dir, 'spec.toml');
    writeFileSync(spec, `name = "cases"\nmax_price_per_day = 1\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`);
    cli('deploy', spec);
    const show = async () => (await fetch(`${hub}/api/v1/deployments/cases`, { headers: admin })).json();
    await until('the replica ready', async () => (await show()).ready === 1, 30000);

    // Item 15: a chat stream read as users read it; the signature is a comment before [DONE].
    const question = { model: 'cases', messages: [{ role: 'user', content: 'Is case 7 fraud?' }], max_tokens: 6 };
    const chatReq = saved('chat-req.json', JSON.stringify({ ...question, stream: true }));
    const chat = await post('/d/cases/v1/chat/completions', JSON.parse(readFileSync(chatReq, 'utf8')));
    assert.equal(chat.status, 200, chat.text);
    assert.ok(readLikeAUser(chat.text).length > 0);
    assert.match(chat.text, /\n\n: cellserve-signature \{"v":1,[^\n]*\}\n\ndata: \[DONE\]\n\n$/);
    assert.ok(!chat.text.includes('cellserve.signature'), 'no signature chunk');
    const chatResp = saved('chat.txt', chat.text);
    let v = verify('--request', chatReq, '--response', chatResp, '--hub', hub);
    assert.equal(v.code, 0, v.out);
    assert.match(v.out, /^valid: device dev \(.*, enrolled at the hub now\) answered for deployment cases/);
    // The official client reads the same stream.
    const client = new OpenAI({ baseURL: `${hub}/d/cases/v1`, apiKey: 'signing-admin-key', maxRetries: 0 });
    let text = '';
    for await (const chunk of await client.chat.completions.create({ ...question, stream: true })) {
      text += chunk.choices[0].delta.content ?? '';
    }
    assert.ok(text.length > 0);
    // /v1/responses (no [DONE]) and llama-server's /completion (no [DONE]) end with the comment.
    const responsesReq = saved('responses-req.json', JSON.stringify({ model: 'cases', input: 'Is case 8 fraud?',
      max_output_tokens: 6, stream: true }));
    const responses = await post('/d/cases/v1/responses', JSON.parse(readFileSync(responsesReq, 'utf8')));
    assert.equal(responses.status, 200, responses.text);
    assert.match(responses.text, /event: response\.(completed|incomplete)\n/);
    assert.match(responses.text, /\n\n: cellserve-signature \{"v":1,[^\n]*\}\n\n$/);
    v = verify('--request', responsesReq, '--response', saved('responses.txt', responses.text), '--hub', hub);
    assert.equal(v.code, 0, v.out);
    const completionReq = saved('completion-req.json', JSON.stringify({ prompt: 'Case 9:', n_predict: 6, stream: true }));
    const completion = await post('/d/cases/r/0/completion', JSON.parse(readFileSync(completionReq, 'utf8')));
    assert.equal(completion.status, 200, completion.text);
    assert.match(completion.text, /\n\n: cellserve-signature \{"v":1,[^\n]*\}\n\n$/);
    v = verify('--request', completionReq, '--response', saved('completion.txt', completion.text), '--hub', hub);
    assert.equal(v.code, 0, v.out);
    // An event appended after the signature is not covered: refused.
    v = verify('--request', chatReq, '--response', saved('appended.txt', chat.text.replace('data: [DONE]',
      'data: {"choices":[{"index":0,"delta":{"content":" APPROVED"}}]}\n\ndata: [DONE]')), '--hub', hub);
    assert.equal(v.code, 1, v.out);

    // Item 2: without --hub any key would do, so verify says so unless told that is enough.
    v = verify('--request', chatReq, '--response', chatResp);
    assert.equal(v.code, 1, v.out);
    assert.match(v.out, /--allow-unknown-key/);
    assert.equal(verify('--request', chatReq, '--response', chatResp, '--allow-unknown-key').code, 0);

    // A pending key: a device that joined without a token, which nobody approved.
    started.push(agent('stranger', []));
    const stranger = await until('the stranger\'s key', async () => deviceKey(path.join(dir, 'stranger', 'identity.key')));
    await until('the stranger pending', async () => {
      const ps = (await (await fetch(`${hub}/api/v1/processors`, { headers: admin })).json()).processors;
      return ps.some((p) => p.id === stranger.id && p.enrollment === 'pending');
    }, 20000);
    const record = JSON.parse(chat.text.match(/: cellserve-signature (\{[^\n]*\})\n/)[1]);
    const forgedBy = (device, changes) => chat.text.replace(/: cellserve-signature \{[^\n]*\}\n/,
      `: cellserve-signature ${JSON.stringify(forge(record, device, changes))}\n`);
    v = verify('--request', chatReq, '--response', saved('pending.txt', forgedBy(stranger, {})), '--hub', hub);
    assert.equal(v.code, 1, `a pending key's signature passed: ${v.out}`);
    assert.match(v.out, /\(pending at the hub\) was not serving deployment cases/);
    // The real device's key, but for a model it never served.
    const dev = deviceKey(path.join(dir, 'dev', 'identity.key'));
    v = verify('--request', chatReq, '--response', saved('model.txt', forgedBy(dev, { model_sha256: 'cd'.repeat(32) })),
      '--hub', hub);
    assert.equal(v.code, 1, v.out);

    // Item 10: a batch; each output line carries its record and verifies against the input.
    const lines = [0, 1, 2].map((i) => JSON.stringify({ custom_id: `case-${i}`, method: 'POST', url: '/v1/chat/completions',
      body: { model: 'cases', messages: [{ role: 'user', content: `Case ${i}: fraud?` }], max_tokens: 4 } }));
    const batchInput = saved('batch.jsonl', lines.join('\n') + '\n');
    const file = await client.files.create({ file: await toFile(readFileSync(batchInput), 'batch.jsonl'), purpose: 'batch' });
    let batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    batch = await until('the batch completed', async () => {
      const b = await client.batches.retrieve(batch.id);
      return ['completed', 'failed', 'expired', 'cancelled'].includes(b.status) && b;
    }, 60000);
    assert.equal(batch.status, 'completed', JSON.stringify(batch));
    const output = await (await client.files.content(batch.output_file_id)).text();
    for (const l of output.trim().split('\n')) {
      const r = JSON.parse(l);
      assert.equal(r.response.cellserve_signature.device, dev.id);
      assert.ok(r.response.body.choices[0].message.content.length > 0);
    }
    const batchOutput = saved('batch-out.jsonl', output);
    v = verify('--batch-input', batchInput, '--batch-output', batchOutput, '--hub', hub);
    assert.equal(v.code, 0, v.out);
    assert.equal(v.out.match(/: valid: device dev /g).length, 3, v.out);
    v = verify('--batch-input', batchInput, '--batch-output', batchOutput, '--custom-id', 'case-1', '--hub', hub);
    assert.equal(v.code, 0, v.out);
    assert.match(v.out, /^line \d \(case-1\): valid/);
    const tampered = output.split('\n').map((l) => l.replace(/"content":"[^"]*"/, '"content":"APPROVED"')).join('\n');
    v = verify('--batch-input', batchInput, '--batch-output', saved('batch-tampered.jsonl', tampered), '--hub', hub);
    assert.equal(v.code, 1, v.out);
    assert.match(v.out, /the response is not the one signed|is not the answer the device signed/);
    const otherInput = saved('batch-other.jsonl', lines.map((l) => l.replace('fraud?', 'fine?')).join('\n'));
    assert.equal(verify('--batch-input', otherInput, '--batch-output', batchOutput, '--hub', hub).code, 1);

    // Revoked: what the device signed while it served still verifies; what its key signs after
    // the revocation does not.
    cli('fleet', 'revoke', dev.id);
    const revokedAt = Date.now();
    v = verify('--request', chatReq, '--response', chatResp, '--hub', hub);
    assert.equal(v.code, 0, v.out);
    assert.match(v.out, /revoked at the hub now/);
    v = verify('--request', chatReq, '--response', saved('revoked.txt', forgedBy(dev, { time_ms: revokedAt + 120000 })),
      '--hub', hub);
    assert.equal(v.code, 1, `a revoked device's later signature passed: ${v.out}`);
    assert.match(v.out, /\(revoked at the hub\) was not serving/);
  } catch (e) {
    for (const c of started) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(started.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

test('signing: a device\'s response headers reach users only through an allow-list',
  { skip: skipReason() || (!scripted && 'CELLSERVE_SCRIPTED_DEVICE is not set (ctest sets it)') }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-headers-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const started = [];
  try {
    started.push(spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
      '--poll-seconds', '0.3'], 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const headers = ['Set-Cookie: session=device-chosen; Path=/', 'Strict-Transport-Security: max-age=63072000',
      'Access-Control-Allow-Origin: *', 'Access-Control-Allow-Credentials: true', 'Location: http://evil.example/',
      'X-Cellserve-Replica: 9', 'Retry-After: 3', 'X-Cellserve-Signature: {"v":1,"first":true}',
      'X-Cellserve-Signature: {"v":1,"second":true}'];
    started.push(spawnLogged(['--hub', hub, '--content-type', 'text/html', ...headers.flatMap((h) => ['--header', h])],
      'scripted device', scripted));
    const spec = path.join(dir, 'spec.toml');
    writeFileSync(spec, `name = "cases"\nmax_price_per_day = 1\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`);
    execFileSync(bin, ['deploy', spec, '--hub', hub], { encoding: 'utf8' });
    await until('the replica ready', async () =>
      (await (await fetch(`${hub}/api/v1/deployments/cases`)).json()).ready === 1, 30000);
    for (const where of ['/d/cases/v1/chat/completions', '/d/cases/r/0/v1/chat/completions']) {
      const r = await fetch(`${hub}${where}`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'cases', messages: [{ role: 'user', content: 'Hi' }] }) });
      const body = await r.text();
      assert.equal(r.status, 200, body);
      assert.equal(JSON.parse(body).choices[0].message.content, 'scripted');
      for (const name of ['set-cookie', 'strict-transport-security', 'access-control-allow-origin',
        'access-control-allow-credentials', 'location']) {
        assert.equal(r.headers.get(name), null, `${name} from the device reached the user at ${where}`);
      }
      assert.equal(r.headers.get('x-cellserve-signature'), '{"v":1,"first":true}', 'one signature, the first');
      assert.equal(r.headers.get('retry-after'), '3');
      assert.equal(r.headers.get('x-cellserve-replica'), where.includes('/r/0/') ? null : '0');
      assert.equal(r.headers.get('content-type'), 'application/octet-stream', 'the device chose text/html');
    }
  } catch (e) {
    for (const c of started) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(started.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// API keys against each other and against a deleted deployment (issue 43 items 4, 7, 9 and two
// parts of 14), each performed as an attack on a real hub with one real agent serving the tiny
// model:
// - 32 parallel requests of one key cannot overshoot its tokens_per_day (each holds its most);
// - key B of the same deployment neither lists, reads, downloads, deletes nor uses key A's file,
//   nor sees A's batch, nor learns from cached_tokens that A sent a prompt;
// - a batch's lines count against its key's rpm; output_expires_after sets the outputs' expiry;
// - deleting a deployment revokes its keys and removes its files and batches: created again
//   under the name, the old key and the old file open nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { children, freePort, inTempFleet, spawnLogged, until } from '../../e2e/fleet_harness.mjs';

const ADMIN = 'keys-suite-admin-key';
const QUOTA = 400;

test('keys: quotas hold under parallel requests, keys see only their own work, a deleted deployment takes its keys and files', { skip: skipReason() || false }, () => inTempFleet('cs-keys-', async (dir) => {
  const hubDir = path.join(dir, 'hub');
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, `${ADMIN}\n`, { mode: 0o600 });
  const env = { ...process.env, CELLSERVE_HUB_KEY: ADMIN };
  const admin = { authorization: `Bearer ${ADMIN}` };
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8', env });
  const spec = path.join(dir, 'spec.toml');
  spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3',
    '--api-key-file', keyFile], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
  const source = model('qwen3-tiny-f32.gguf');
  copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
  const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
  const enroll = cli('hub', 'tokens', 'create', '--uses', '1').trim();
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'agent'), '--name', 'a1', '--enroll', enroll,
    '--benchmark-shape', '', '--no-autotune'], 'agent');
  writeFileSync(spec, `name = "acme"\nmax_price_per_day = 1\nqueue_timeout = 60\n[model]\n` +
    `url = "${hub}/files/model.gguf"\nsha256 = "${sha}"\n[engine]\nparallel = 2\nctx_size = 512\n`);
  cli('deploy', spec);
  const show = async () => (await fetch(`${hub}/api/v1/deployments/acme`, { headers: admin })).json();
  await until('the replica ready', async () => (await show()).ready === 1, 90000);
  const newKey = (...flags) => cli('keys', 'create', '--deployment', 'acme', ...flags).trim();
  const chat = async (key, content, maxTokens = 8) => {
    const r = await fetch(`${hub}/d/acme/v1/chat/completions`, { method: 'POST', signal: AbortSignal.timeout(60000),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0 }) });
    return { status: r.status, body: await r.json() };
  };

  // Item 7: 32 requests at once, each within the quota alone; together they would use several
  // times it. Each holds its most (body bytes + max_tokens) at admission, so the ones that do
  // not fit beside those in flight are refused at once, and what the key used stays within.
  const quotaKey = newKey('--tokens-per-day', String(QUOTA));
  const burst = await Promise.all([...Array(32).keys()].map((i) => chat(quotaKey, `Case ${i}: is it fraud?`)));
  const answered = burst.filter((r) => r.status === 200);
  const refused = burst.filter((r) => r.status !== 200);
  const spent = answered.reduce((n, r) => n + r.body.usage.total_tokens, 0);
  // A request's use is settled just after its answer went out.
  const listed = await until('the answers settled', async () => {
    const k = JSON.parse(cli('keys', 'ls', '--json')).keys.find((x) => x.tokens_per_day === QUOTA);
    return k.tokens_today === spent && k;
  }, 10000).catch(() => JSON.parse(cli('keys', 'ls', '--json')).keys.find((x) => x.tokens_per_day === QUOTA));
  console.log(`32 parallel requests: ${answered.length} answered using ${spent} tokens (key: ${listed.tokens_today} ` +
    `today), ${refused.length} refused; quota ${QUOTA}`);
  assert.ok(answered.length >= 1, 'the quota covers at least one request');
  assert.ok(spent <= QUOTA, `the answers used ${spent} tokens of a ${QUOTA} quota`);
  assert.ok(listed.tokens_today <= QUOTA, `the key counted ${listed.tokens_today} of ${QUOTA}`);
  assert.equal(listed.tokens_today, spent);
  for (const r of refused) {
    assert.equal(r.status, 429, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'tokens_exceeded');
  }

  // Item 9: two keys of one deployment. B sees none of A's files or batches: not listed, and
  // 404 for reading, downloading, deleting, batching or cancelling by id.
  const keyA = newKey('--name', 'a');
  const keyB = newKey('--name', 'b');
  const clientA = new OpenAI({ baseURL: `${hub}/d/acme/v1`, apiKey: keyA, maxRetries: 0 });
  const clientB = new OpenAI({ baseURL: `${hub}/d/acme/v1`, apiKey: keyB, maxRetries: 0 });
  const lines = [0, 1].map((i) => JSON.stringify({ custom_id: `c${i}`, method: 'POST', url: '/v1/chat/completions',
    body: { messages: [{ role: 'user', content: `Case ${i}` }], max_tokens: 2 } })).join('\n') + '\n';
  const fileA = await clientA.files.create({ file: await toFile(Buffer.from(lines), 'secret-case.jsonl'), purpose: 'batch' });
  const batchA = await clientA.batches.create({ input_file_id: fileA.id, endpoint: '/v1/chat/completions',
    completion_window: '24h', output_expires_after: { anchor: 'created_at', seconds: 3600 } });
  const asB = (p, method = 'GET', body) => fetch(`${hub}/d/acme/v1${p}`, { method, body,
    headers: { authorization: `Bearer ${keyB}`, ...(body ? { 'content-type': 'application/json' } : {}) } });
  const filesB = await (await asB('/files')).json();
  assert.ok(!JSON.stringify(filesB).includes(fileA.id), `key B lists key A's file: ${JSON.stringify(filesB)}`);
  assert.equal((await asB(`/files/${fileA.id}`)).status, 404, "key B reads key A's file");
  assert.equal((await asB(`/files/${fileA.id}/content`)).status, 404, "key B downloads key A's file");
  const batchesB = await (await asB('/batches')).json();
  assert.ok(!JSON.stringify(batchesB).includes(batchA.id), "key B lists key A's batch");
  assert.equal((await asB(`/batches/${batchA.id}`)).status, 404, "key B reads key A's batch");
  assert.equal((await asB(`/batches/${batchA.id}/cancel`, 'POST')).status, 404, "key B cancels key A's batch");
  const stolen = await asB('/batches', 'POST', JSON.stringify({ input_file_id: fileA.id, endpoint: '/v1/chat/completions',
    completion_window: '24h' }));
  assert.equal(stolen.status, 404, "key B runs a batch on key A's file");
  assert.equal((await asB(`/files/${fileA.id}`, 'DELETE')).status, 404, "key B deletes key A's file");
  assert.equal((await clientA.files.retrieve(fileA.id)).id, fileA.id, 'A still has its file');
  const adminFiles = await (await fetch(`${hub}/d/acme/v1/files`, { headers: admin })).json();
  assert.ok(adminFiles.data.some((f) => f.id === fileA.id), 'the admin sees every file');
  // Item 14: output_expires_after is kept, and the outputs expire then; a bad one is refused.
  const doneA = await until('A\'s batch completed', async () => {
    const b = await clientA.batches.retrieve(batchA.id);
    return b.status === 'completed' && b;
  }, 60000);
  const output = await clientA.files.retrieve(doneA.output_file_id);
  assert.equal(output.expires_at, output.created_at + 3600);
  assert.equal((await asB(`/files/${doneA.output_file_id}/content`)).status, 404, "key B downloads A's answers");
  await assert.rejects(clientA.batches.create({ input_file_id: fileA.id, endpoint: '/v1/chat/completions',
    completion_window: '24h', output_expires_after: { anchor: 'created_at', seconds: 60 } }), (e) => e.status === 400);

  // Item 9: B cannot confirm A's prompt through cached_tokens. A's prompt is cached (A sees it
  // reused the second time); B's identical prompt reuses nothing.
  const casePrompt = 'Customer 4411 moved 9,200 EUR to a new payee at 03:12 after a password reset from a new ' +
    'device in another country; the payee was created eleven minutes earlier. Is this fraud?';
  const cached = (r) => r.body.usage.prompt_tokens_details.cached_tokens;
  assert.equal((await chat(keyA, casePrompt, 1)).status, 200);
  const probeB = await chat(keyB, casePrompt, 1);
  assert.equal(probeB.status, 200);
  const againA = await chat(keyA, casePrompt, 1);
  console.log(`cached_tokens: key B ${cached(probeB)}, key A again ${cached(againA)}`);
  assert.equal(cached(probeB), 0, "key B's cached_tokens confirm key A's prompt");
  assert.ok(cached(againA) > 0, "A's own prompt is reused (the cache works, so the check above means something)");

  // Item 14: a batch's lines count against its key's requests per minute. The key has 4: the
  // upload and the batch take 2, the first 2 lines the rest, so its next request is refused
  // while the batch is still in progress (polled with the admin key, which has no rate).
  const rpmKey = newKey('--rpm', '4');
  const rpmClient = new OpenAI({ baseURL: `${hub}/d/acme/v1`, apiKey: rpmKey, maxRetries: 0 });
  const many = [...Array(6).keys()].map((i) => JSON.stringify({ custom_id: `r${i}`, method: 'POST',
    url: '/v1/chat/completions', body: { messages: [{ role: 'user', content: `Case ${i}` }], max_tokens: 2 } })).join('\n');
  const rpmFile = await rpmClient.files.create({ file: await toFile(Buffer.from(many + '\n'), 'rpm.jsonl'), purpose: 'batch' });
  const rpmBatch = await rpmClient.batches.create({ input_file_id: rpmFile.id, endpoint: '/v1/chat/completions',
    completion_window: '24h' });
  const asAdmin = async (p) => (await fetch(`${hub}/d/acme/v1${p}`, { headers: admin })).json();
  await until('2 lines answered', async () => (await asAdmin(`/batches/${rpmBatch.id}`)).request_counts.completed >= 2, 60000);
  const overRate = await chat(rpmKey, 'Hi', 1);
  const progress = await asAdmin(`/batches/${rpmBatch.id}`);
  console.log(`rpm 4: after the upload, the batch and ${progress.request_counts.completed} lines, a request got ${overRate.status}`);
  assert.equal(overRate.status, 429, `the batch's lines did not count against the key's rpm: ${JSON.stringify(overRate.body)}`);
  assert.equal(overRate.body.error.code, 'rate_limit_exceeded');
  assert.equal(progress.status, 'in_progress');
  assert.ok(progress.request_counts.completed <= 2, `${progress.request_counts.completed} lines ran within 4 rpm`);

  // Item 4: the deployment is deleted (its rate-limited batch still in progress) and created
  // again under the name. The old key, file and batches open nothing.
  const fileKey = newKey('--name', 'old');
  const oldClient = new OpenAI({ baseURL: `${hub}/d/acme/v1`, apiKey: fileKey, maxRetries: 0 });
  const oldFile = await oldClient.files.create({ file: await toFile(Buffer.from(lines), 'old.jsonl'), purpose: 'batch' });
  const del = await fetch(`${hub}/api/v1/deployments/acme`, { method: 'DELETE', headers: admin });
  assert.equal(del.status, 200);
  const keysAfter = JSON.parse(cli('keys', 'ls', '--json')).keys;
  assert.ok(keysAfter.every((k) => k.revoked), `a key of the deleted deployment is live: ${JSON.stringify(keysAfter)}`);
  cli('deploy', spec);
  await until('acme again', async () => (await fetch(`${hub}/api/v1/deployments/acme`, { headers: admin })).status === 200);
  const oldKeyModels = await fetch(`${hub}/d/acme/v1/models`, { headers: { authorization: `Bearer ${fileKey}` } });
  assert.equal(oldKeyModels.status, 401, 'the old key opens the new deployment');
  const oldFileNow = await fetch(`${hub}/d/acme/v1/files/${oldFile.id}`, { headers: admin });
  assert.equal(oldFileNow.status, 404, 'the old file is in the new deployment');
  const filesNow = await asAdmin('/files');
  assert.deepEqual(filesNow.data, [], `the new deployment starts with files: ${JSON.stringify(filesNow)}`);
  assert.equal((await fetch(`${hub}/d/acme/v1/batches/${rpmBatch.id}`, { headers: admin })).status, 404);
  assert.deepEqual((await asAdmin('/batches')).data, []);
  const hubLog = children.find((c) => c.name === 'hub').log;
  assert.ok(!hubLog.includes(fileKey) && !hubLog.includes(keyA), 'a key reached the log');
}));

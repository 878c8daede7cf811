// Batch work end to end (issue 21): the official `openai` client uploads a 500-line file to a
// deployment served by 3 real agents, creates a batch, polls it to completion and downloads the
// output and error files. Meanwhile the hub is killed with SIGKILL and restarted, and one agent
// is killed: every custom_id still appears exactly once across the two files, and answers equal
// the same request sent alone at temperature 0. Interactive requests during the batch are timed
// against idle ones (the ratio is printed). Invalid input fails validation naming its lines; a
// cancelled batch ends cancelled with partial output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { freePort, sleep, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

const LINES = 500;
const question = (i) => ({ model: 'cases', messages: [{ role: 'user', content: `Case ${i}: is it fraud?` }],
  max_tokens: 6, temperature: 0 });

test('batch: 500 lines over 3 agents survive a hub SIGKILL and a dead agent; nothing lost or duplicated', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-batch-'));
  const hubDir = path.join(dir, 'hub');
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const hubArgs = ['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3', '--ping-timeout', '3'];
  const started = [];
  const agents = {};
  try {
    started.push(spawnLogged(hubArgs, 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const source = model('qwen3-tiny-f32.gguf');
    copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
    const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
    for (const name of ['a1', 'a2', 'a3']) {
      agents[name] = spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
        '--benchmark-shape', '', '--no-autotune'], name);
      started.push(agents[name]);
    }
    const spec = path.join(dir, 'spec.toml');
    writeFileSync(spec, `name = "cases"\nreplicas = 3\nmax_price_per_day = 1\n[model]\nurl = "${hub}/files/model.gguf"\n` +
      `sha256 = "${sha}"\n[engine]\nparallel = 2\nctx_size = 256\n`);
    execFileSync(bin, ['deploy', spec, '--hub', hub], { stdio: 'ignore' });
    const show = async () => (await fetch(`${hub}/api/v1/deployments/cases`)).json();
    await until('3 replicas ready', async () => (await show()).ready === 3, 90000);
    const client = new OpenAI({ baseURL: `${hub}/d/cases/v1`, apiKey: 'unused', maxRetries: 0 });

    // Idle latency of an interactive request, for the ratio below.
    const timeOne = async () => {
      const t0 = performance.now();
      await client.chat.completions.create(question('interactive'));
      return performance.now() - t0;
    };
    for (let i = 0; i < 3; ++i) await timeOne();
    const idle = [];
    for (let i = 0; i < 10; ++i) idle.push(await timeOne());

    // Invalid input fails validation, naming its lines.
    const bad = [JSON.stringify({ custom_id: 'x', method: 'POST', url: '/v1/chat/completions', body: question(0) }),
      '{oops', JSON.stringify({ custom_id: 'x', method: 'POST', url: '/v1/chat/completions', body: question(1) })].join('\n');
    const badFile = await client.files.create({ file: await toFile(Buffer.from(bad), 'bad.jsonl'), purpose: 'batch' });
    let badBatch = await client.batches.create({ input_file_id: badFile.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    badBatch = await until('the bad batch failed', async () => {
      const b = await client.batches.retrieve(badBatch.id);
      return b.status === 'failed' && b;
    }, 20000);
    assert.deepEqual(badBatch.errors.data.map((e) => e.line), [2, 3]);
    assert.equal(badBatch.errors.data[1].code, 'duplicate_custom_id');

    // The real batch.
    const lines = [];
    for (let i = 0; i < LINES; ++i) {
      lines.push(JSON.stringify({ custom_id: `case-${i}`, method: 'POST', url: '/v1/chat/completions', body: question(i) }));
    }
    const input = await client.files.create({ file: await toFile(Buffer.from(lines.join('\n') + '\n'), 'cases.jsonl'), purpose: 'batch' });
    assert.equal(input.object, 'file');
    assert.equal(input.purpose, 'batch');
    assert.equal((await client.files.retrieve(input.id)).bytes, Buffer.byteLength(lines.join('\n') + '\n'));
    let batch = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions',
      completion_window: '24h', metadata: { run: 'nightly' } });
    assert.equal(batch.object, 'batch');
    assert.equal(batch.metadata.run, 'nightly');

    // Interactive requests while the batch runs.
    await until('the batch under way', async () => (await client.batches.retrieve(batch.id)).request_counts.completed >= 20, 60000);
    const busy = [];
    for (let i = 0; i < 10; ++i) busy.push(await timeOne());
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(`interactive latency: idle median ${median(idle).toFixed(1)} ms, during the batch ` +
      `${median(busy).toFixed(1)} ms, ratio ${(median(busy) / median(idle)).toFixed(2)}`);

    // The hub dies mid-batch and comes back; then an agent dies.
    await until('a third of the batch done', async () => (await client.batches.retrieve(batch.id)).request_counts.completed >= LINES / 3, 120000);
    await stop(started[0], 'SIGKILL');
    started[0] = spawnLogged(hubArgs, 'hub (restarted)');
    await until('the hub back', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const resumed = await client.batches.retrieve(batch.id);
    assert.equal(resumed.status, 'in_progress', 'the hub died mid-batch');
    assert.ok(resumed.request_counts.completed < LINES);
    assert.match(started[0].log, /lines that were running when the hub stopped run again/);
    await until('two thirds done', async () => (await client.batches.retrieve(batch.id)).request_counts.completed >= (2 * LINES) / 3, 120000);
    await stop(agents.a2, 'SIGKILL');
    batch = await until('the batch completed', async () => {
      const b = await client.batches.retrieve(batch.id);
      return ['completed', 'failed', 'expired', 'cancelled'].includes(b.status) && b;
    }, 240000);
    assert.equal(batch.status, 'completed', JSON.stringify(batch));
    assert.equal(batch.request_counts.total, LINES);
    assert.equal(batch.request_counts.completed + batch.request_counts.failed, LINES);

    const ids = [];
    const answers = new Map();
    const output = await (await client.files.content(batch.output_file_id)).text();
    for (const l of output.trim().split('\n')) {
      const r = JSON.parse(l);
      assert.equal(r.response.status_code, 200);
      assert.equal(r.error, null);
      ids.push(r.custom_id);
      answers.set(r.custom_id, r.response.body.choices[0].message.content);
    }
    if (batch.error_file_id) {
      const errors = await (await client.files.content(batch.error_file_id)).text();
      for (const l of errors.trim().split('\n')) ids.push(JSON.parse(l).custom_id);
    }
    assert.equal(ids.length, LINES, 'one line per request across the two files');
    assert.equal(new Set(ids).size, LINES, 'no custom_id twice');
    // Answers equal the same request alone.
    for (const i of [0, 137, 250, 499]) {
      const alone = await client.chat.completions.create(question(i));
      assert.equal(answers.get(`case-${i}`), alone.choices[0].message.content, `case-${i}`);
    }
    const throughput = await (await fetch(`${hub}/d/cases/v1/batches/${batch.id}/throughput`)).json();
    console.log(`batch: ${throughput.requests_per_hour.toFixed(0)} requests per hour; by device: ` +
      throughput.devices.map((d) => `${d.device.slice(0, 8)} ${d.answered}`).join(', '));
    const cliShow = execFileSync(bin, ['batch', 'show', batch.id, '--deployment', 'cases', '--hub', hub], { encoding: 'utf8' });
    assert.match(cliShow, /completed/);
    assert.match(cliShow, /requests per hour/);
    const metrics = await (await fetch(`${hub}/metrics`)).text();
    assert.match(metrics, /cellserve_hub_batch_requests_total\{deployment="cases",device="[0-9a-f]{16}",outcome="answered"\} \d+/);

    // The CLI: submit and wait (plain progress lines without a terminal), then the results.
    const small = path.join(dir, 'small.jsonl');
    writeFileSync(small, lines.slice(0, 10).join('\n') + '\n');
    const submitted = execFileSync(bin, ['batch', 'submit', small, '--deployment', 'cases', '--wait', '--hub', hub],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const smallId = /^batch (batch_[0-9a-f]+)/.exec(submitted)[1];
    assert.match(submitted, /^completed done=10 failed=0 total=10 /m);
    const outFile = path.join(dir, 'small-out.jsonl');
    execFileSync(bin, ['batch', 'results', smallId, '--deployment', 'cases', '-o', outFile, '--hub', hub]);
    assert.deepEqual(readFileSync(outFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l).custom_id).sort(),
      lines.slice(0, 10).map((l) => JSON.parse(l).custom_id).sort());
    assert.match(execFileSync(bin, ['batch', 'ls', '--deployment', 'cases', '--hub', hub], { encoding: 'utf8' }),
      new RegExp(`${smallId}\\s+completed\\s+10/10 done`));

    // A cancelled batch ends cancelled with what finished.
    const big = [];
    for (let i = 0; i < 200; ++i) {
      big.push(JSON.stringify({ custom_id: `c-${i}`, method: 'POST', url: '/v1/chat/completions', body: { ...question(i), max_tokens: 8 } }));
    }
    const cancelFile = await client.files.create({ file: await toFile(Buffer.from(big.join('\n')), 'c.jsonl'), purpose: 'batch' });
    let cancelled = await client.batches.create({ input_file_id: cancelFile.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await until('some lines done', async () => (await client.batches.retrieve(cancelled.id)).request_counts.completed >= 5, 60000);
    cancelled = await client.batches.cancel(cancelled.id);
    assert.ok(['cancelling', 'cancelled'].includes(cancelled.status));
    cancelled = await until('cancelled', async () => {
      const b = await client.batches.retrieve(cancelled.id);
      return b.status === 'cancelled' && b;
    }, 60000);
    assert.ok(cancelled.request_counts.completed > 0 && cancelled.request_counts.completed < 200, JSON.stringify(cancelled.request_counts));
    const partial = await (await client.files.content(cancelled.output_file_id)).text();
    assert.equal(partial.trim().split('\n').length, cancelled.request_counts.completed);
    const listed = await client.batches.list({ limit: 2 });
    assert.equal(listed.data.length, 2);
    assert.equal(listed.data[0].id, cancelled.id);
    await client.files.delete(cancelFile.id);
    await assert.rejects(client.files.retrieve(cancelFile.id), (e) => e.status === 404);
  } catch (e) {
    for (const c of started) console.error(`--- ${c.name}\n${c.log.slice(-4000)}`);
    throw e;
  } finally {
    await Promise.all(started.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

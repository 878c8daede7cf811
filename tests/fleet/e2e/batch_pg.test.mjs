// Batches on PostgreSQL end to end (issue 46): a hub with `--store postgresql://...` on a private
// server, two simulated agents, and the official `openai` client. A 50-line batch file is
// uploaded (its bytes go to the database, not the hub's folder), the hub is SIGKILLed mid-batch
// and started again on the same database, and the batch still completes with every custom_id
// answered exactly once. A second hub on the same database, with a data folder of its own, then
// serves the batch and its output file: both live in the database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';
import { postgresAbsence, startPostgres } from '../../e2e/postgres.mjs';

const LINES = 50;
const question = (i) => ({ model: 'cases', messages: [{ role: 'user', content: `Case ${i}: is it fraud?` }], max_tokens: 24 });
const skip = skipReason() || postgresAbsence() || false;

test('batch on PostgreSQL: a hub SIGKILLed mid-batch restarts on the database; each line ends once', { skip }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-batchpg-'));
  const pg = startPostgres();
  const started = [];
  try {
    const store = pg.createDatabase('fleet');
    const port = await freePort();
    const hub = `http://127.0.0.1:${port}`;
    const hubDir = path.join(dir, 'hub');
    const folderEmpty = () => readdirSync(path.join(hubDir, 'batch', 'files')).length === 0;
    // Every hub on a PostgreSQL store needs the cluster key (docs/cluster.md).
    const clusterKey = path.join(dir, 'cluster.key');
    execFileSync(bin, ['hub', 'cluster-key', clusterKey]);
    const hubArgs = ['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--store', store, '--poll-seconds', '0.3',
      '--ping-timeout', '3', '--cluster-key-file', clusterKey];
    started.push(spawnLogged(hubArgs, 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 20000);
    for (const name of ['sim-a', 'sim-b']) {
      started.push(spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
        '--price-per-day', '0.1', '--simulate', 'prefill=4000,decode=100,slots=2'], name));
    }
    const spec = path.join(dir, 'cases.toml');
    writeFileSync(spec, `name = "cases"\nreplicas = 2\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`);
    execFileSync(bin, ['deploy', spec, '--hub', hub], { stdio: 'ignore' });
    await until('2 replicas ready', async () => (await (await fetch(`${hub}/api/v1/deployments/cases`)).json()).ready === 2, 60000);
    const client = new OpenAI({ baseURL: `${hub}/d/cases/v1`, apiKey: 'unused', maxRetries: 2 });

    const lines = [];
    for (let i = 0; i < LINES; ++i) {
      lines.push(JSON.stringify({ custom_id: `case-${i}`, method: 'POST', url: '/v1/chat/completions', body: question(i) }));
    }
    const text = lines.join('\n') + '\n';
    const input = await client.files.create({ file: await toFile(Buffer.from(text), 'cases.jsonl'), purpose: 'batch' });
    assert.equal(input.bytes, Buffer.byteLength(text));
    // The folder may still hold the upload's spooled request body (cellserve-body-*) for a moment: the
    // server deletes it after the handler has answered. A file kept there would never go.
    await until('no file in the hub\'s folder: the upload is in the database', async () => folderEmpty(), 10000);
    assert.equal(await (await client.files.content(input.id)).text(), text, 'the upload reads back from the database');
    let batch = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });

    // The hub dies mid-batch and starts again on the same database (and data folder: its lease id).
    await until('some lines done', async () => (await client.batches.retrieve(batch.id)).request_counts.completed >= 8, 60000);
    await stop(started[0], 'SIGKILL');
    started[0] = spawnLogged(hubArgs, 'hub (restarted)');
    await until('the hub back', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 20000);
    const resumed = await client.batches.retrieve(batch.id);
    assert.equal(resumed.status, 'in_progress', 'the hub died mid-batch');
    assert.ok(resumed.request_counts.completed < LINES, JSON.stringify(resumed.request_counts));
    // Its own leases (its id is in its data folder) come back at once, not after they expire.
    await until('the restarted hub took its lines back', async () =>
      /lines that were running when the hub stopped run again/.test(started[0].log), 10000);
    batch = await until('the batch ended', async () => {
      const b = await client.batches.retrieve(batch.id);
      return ['completed', 'failed', 'expired', 'cancelled'].includes(b.status) && b;
    }, 120000);
    assert.equal(batch.status, 'completed', JSON.stringify(batch));
    assert.equal(batch.request_counts.total, LINES);
    assert.equal(batch.request_counts.completed, LINES, JSON.stringify(batch.request_counts));
    assert.equal(batch.error_file_id, null);

    // A second hub on the same database serves the batch and its output: both are in the database.
    const port2 = await freePort();
    const hub2 = `http://127.0.0.1:${port2}`;
    started.push(spawnLogged(['hub', '--listen', `127.0.0.1:${port2}`, '--data-dir', path.join(dir, 'hub2'), '--store', store,
      '--poll-seconds', '0.3', '--cluster-key-file', clusterKey], 'hub2'));
    await until('the second hub', async () => (await fetch(`${hub2}/health`).catch(() => null))?.status === 200, 20000);
    const client2 = new OpenAI({ baseURL: `${hub2}/d/cases/v1`, apiKey: 'unused', maxRetries: 2 });
    const seen = await until('the batch at the second hub', async () => {
      const b = await client2.batches.retrieve(batch.id).catch(() => null);
      return b?.status === 'completed' && b;
    }, 20000);
    assert.equal(seen.output_file_id, batch.output_file_id);
    const output = await (await client2.files.content(batch.output_file_id)).text();
    const ids = output.trim().split('\n').map((l) => {
      const r = JSON.parse(l);
      assert.equal(r.response.status_code, 200, l);
      return r.custom_id;
    });
    assert.equal(ids.length, LINES, 'one output line per request');
    assert.equal(new Set(ids).size, LINES, 'no custom_id twice');
    assert.deepEqual([...ids].sort(), lines.map((l) => JSON.parse(l).custom_id).sort());
    await until('no file in the hub\'s folder: the output is in the database', async () => folderEmpty(), 10000);

    // Deleting the file removes it for every hub.
    await client2.files.delete(batch.output_file_id);
    await assert.rejects(client.files.content(batch.output_file_id), (e) => e.status === 404);
  } catch (e) {
    for (const c of started) console.error(`--- ${c.name}\n${c.log.slice(-4000)}`);
    throw e;
  } finally {
    await Promise.all(started.map((c) => stop(c)));
    pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

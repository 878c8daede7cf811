// Re-applying a changed spec end to end (issue 18, §4): a real hub and three real agents serve a
// deployment of 2 replicas of one testdata model; while four clients keep sending requests
// through /d/roll/v1 with the official `openai` client, the spec is re-applied with another model
// (one device is free: the new replicas surge onto it one by one), then with the first model and
// 3 replicas (no device is free: each replica is drained and reloaded in place, one at a time).
// Every request must succeed, counted from the clients' own records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { children, spawnLogged, stop, until, freePort, exitOf } from '../../e2e/fleet_harness.mjs';

const json = async (url) => (await fetch(url)).json();

test('re-applying a changed spec replaces every replica without failing a request', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-rollout-'));
  const hubDir = path.join(dir, 'hub');
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const hubProcess = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3'], 'hub');
  let stopLoad = false;
  try {
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const shas = {};
    for (const [file, name] of [['qwen3-tiny-f32.gguf', 'v1.gguf'], ['qwen3-tiny-q8_0.gguf', 'v2.gguf']]) {
      copyFileSync(model(file), path.join(hubDir, 'files', name));
      shas[name] = createHash('sha256').update(readFileSync(model(file))).digest('hex');
    }
    for (const name of ['a1', 'a2', 'a3']) {
      spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name, '--benchmark-shape', '',
        '--no-autotune'], name);
    }
    await until('three agents', async () => (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 3);
    const apply = async (file, replicas) => {
      const spec = path.join(dir, 'spec.toml');
      writeFileSync(spec, `name = "roll"\nreplicas = ${replicas}\nmax_price_per_day = 5\nqueue_timeout = 60\n` +
        `[model]\nurl = "${hub}/files/${file}"\nsha256 = "${shas[file]}"\n[engine]\nparallel = 2\nctx_size = 512\n`);
      const deploy = spawn(bin, ['deploy', spec, '--hub', hub], { stdio: 'ignore' });
      assert.equal(await exitOf(deploy), 0, `deploy ${file}`);
    };
    // Rolled over: every replica ready on `file`, nothing outdated, no surge row left.
    const rolledTo = (file, replicas) => async () => {
      const d = await json(`${hub}/api/v1/deployments/roll`);
      return d.outdated === 0 && d.replicas.length === replicas &&
        d.replicas.every((r) => r.role === 'replica' && r.state === 'ready' && r.model_sha256 === shas[file] && !r.draining);
    };
    await apply('v1.gguf', 2);
    await until('2 replicas of v1', rolledTo('v1.gguf', 2), 90000);

    // Four clients, each sending one request after another until told to stop.
    const client = new OpenAI({ baseURL: `${hub}/d/roll/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
    const outcomes = [];
    const loop = async (c) => {
      for (let i = 0; !stopLoad; ++i) {
        try {
          const r = await client.chat.completions.create({
            model: 'roll', messages: [{ role: 'user', content: `Case ${c}-${i}` }], max_tokens: 6 });
          outcomes.push({ ok: r.choices.length === 1 && typeof r.choices[0].message.content === 'string' });
        } catch (e) {
          outcomes.push({ ok: false, error: `${e.status ?? ''} ${e.message}` });
        }
      }
    };
    const load = Promise.all([0, 1, 2, 3].map(loop));
    await until('requests flowing', async () => outcomes.length >= 8, 30000);

    // One free device: surge, then swap.
    const t0 = Date.now();
    await apply('v2.gguf', 2);
    await until('2 replicas of v2', rolledTo('v2.gguf', 2), 120000);
    const surged = Date.now() - t0;
    const afterSurge = outcomes.length;
    // No free device (3 replicas on 3 devices, two of them outdated): in place, one at a time.
    const t1 = Date.now();
    await apply('v1.gguf', 3);
    await until('3 replicas of v1', rolledTo('v1.gguf', 3), 120000);
    const inPlace = Date.now() - t1;
    stopLoad = true;
    await load;

    const failures = outcomes.filter((o) => !o.ok);
    console.log(`surge rollout ${surged} ms, in-place rollout ${inPlace} ms; ${outcomes.length} requests ` +
      `(${afterSurge} by the end of the surge), ${failures.length} failed`);
    assert.deepEqual(failures, []);
    assert.ok(outcomes.length > afterSurge, 'requests were served during the in-place rollout');
    assert.match(hubProcess.log, /rolling update: replica roll\/0: its replacement loads the new spec on a free device/);
    assert.match(hubProcess.log, /rolling update: replica roll\/1 now serves the new spec/);
    assert.match(hubProcess.log, /rolling update: replica roll\/[01] drains to reload in place/);
    assert.doesNotMatch(hubProcess.log, /rolling update: replica roll\/2 drains/, 'the new replica served the new spec already');
    // The devices: each holds exactly one replica of the deployment, on the model its row says.
    const d = await json(`${hub}/api/v1/deployments/roll`);
    assert.equal(new Set(d.replicas.map((r) => r.processor)).size, 3);
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-4000)}`);
    throw e;
  } finally {
    stopLoad = true;
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

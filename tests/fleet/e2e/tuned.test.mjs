// The settings autotune chose reach the hub (issue 47): one real agent loads the tiny model with
// autotune on; the replica's "tuned" in the deployments API and the settings line of
// `deployments show` are what the agent logged it chose, with the spec's parallel and context.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { children, freePort, inTempFleet, spawnLogged, until } from '../../e2e/fleet_harness.mjs';

test('tuned: the threads and prefill chunk autotune chose show at the hub', { skip: skipReason() || false }, () => inTempFleet('cs-tuned-', async (dir) => {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const hubDir = path.join(dir, 'hub');
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3'], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
  const source = model('qwen3-tiny-f32.gguf');
  copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
  const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'agent'), '--name', 'a1', '--benchmark-shape', ''],
    'agent');
  const spec = path.join(dir, 'spec.toml');
  writeFileSync(spec, `name = "tuned"\nmax_price_per_day = 1\n[model]\nurl = "${hub}/files/model.gguf"\n` +
    `sha256 = "${sha}"\n[engine]\nparallel = 2\nctx_size = 512\n`);
  cli('deploy', spec);
  const replica = await until('the replica ready with its settings', async () => {
    const d = await (await fetch(`${hub}/api/v1/deployments/tuned`)).json();
    return d.ready === 1 && d.replicas[0].tuned && d.replicas[0];
  }, 90000);

  const agent = children.find((c) => c.name === 'agent');
  const chose = /autotune: chose threads (\d+), prefill chunk (\d+)/.exec(agent.log);
  assert.ok(chose, 'the agent autotuned');
  assert.deepEqual(replica.tuned, {
    threads: Number(chose[1]), prefill_chunk: Number(chose[2]), parallel: 2, ctx_size: 512, batch_size: 512,
    autotuned: true,
  });
  assert.match(cli('deployments', 'show', 'tuned'),
    new RegExp(`settings: threads ${chose[1]}, prefill chunk ${chose[2]}, parallel 2, ctx 512, batch 512 \\(autotuned\\)`));
}));

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
import OpenAI from 'openai';
import { children, freePort, inTempFleet, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

// A hub in DIR/hub serving the tiny testdata model at /files/model.gguf; its URL, the model's
// sha256, and the CLI pointed at it.
async function hubWithTinyModel(dir) {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const hubDir = path.join(dir, 'hub');
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3'], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
  const source = model('qwen3-tiny-f32.gguf');
  copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
  const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
  return { hub, sha, cli };
}

test('tuned: the threads and prefill chunk autotune chose show at the hub', { skip: skipReason() || false }, () => inTempFleet('cs-tuned-', async (dir) => {
  const { hub, sha, cli } = await hubWithTinyModel(dir);
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
    autotuned: true, kv_type: 'f16', cached: false,
  });
  assert.match(cli('deployments', 'show', 'tuned'),
    new RegExp(`settings: threads ${chose[1]}, prefill chunk ${chose[2]}, parallel 2, ctx 512, batch 512, KV f16 \\(autotuned\\)`));
}));

// Autotune on the deployment's own work (issue 48, item 2): the spec's [workload] (300-token
// prompts, 8-token answers, 4 at once) decides threads, prefill chunk, KV type and slots; the
// choice shows at the hub with the speeds measured on that work; an agent restarted on the same
// device reuses it instead of measuring again.
test('tuned: autotune on the spec\'s workload, kept for the next load', { skip: skipReason() || false }, () => inTempFleet('cs-workload-', async (dir) => {
  const { hub, sha, cli } = await hubWithTinyModel(dir);
  const startAgent = (name) => spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'agent'), '--name', 'w1',
    '--benchmark-shape', ''], name);
  let agent = startAgent('agent');
  const spec = path.join(dir, 'spec.toml');
  writeFileSync(spec, `name = "work"\nmax_price_per_day = 1\n[model]\nurl = "${hub}/files/model.gguf"\n` +
    `sha256 = "${sha}"\n[workload]\nprompt_tokens = 300\nmax_tokens = 8\nconcurrency = 4\nobjective = "throughput"\n` +
    `autotune_seconds = 60\n`);
  cli('deploy', spec);
  const ready = async () => {
    const d = await (await fetch(`${hub}/api/v1/deployments/work`)).json();
    return d.ready === 1 && d.replicas[0].tuned && d.replicas[0];
  };
  const first = await until('the replica ready, tuned on its workload', ready, 120000);
  const chose = /autotune: chose threads (\d+), prefill chunk (\d+), KV (\w+), (\d+) slots/.exec(agent.log);
  assert.ok(chose, `the agent tuned threads, chunk, KV and slots:\n${agent.log.slice(-2000)}`);
  assert.match(agent.log, /autotune: threads \d+: [\d.]+ s per request/);
  assert.match(agent.log, /autotune: 4 slots: [\d.]+ s per completed request/);
  assert.equal(first.tuned.autotuned, true);
  assert.equal(first.tuned.cached, false);
  assert.equal(first.tuned.threads, Number(chose[1]));
  assert.equal(first.tuned.prefill_chunk, Number(chose[2]));
  assert.equal(first.tuned.kv_type, chose[3]);
  assert.equal(first.tuned.parallel, Number(chose[4]));
  assert.ok([1, 2, 4].includes(first.tuned.parallel));
  assert.equal(first.tuned.ctx_size, 4096 * first.tuned.parallel, 'each slot holds a whole request (at least 4,096)');
  assert.ok(first.prefill_tps > 0 && first.decode_tps > 0, 'the speeds measured on the workload reach the hub');
  const client = new OpenAI({ baseURL: `${hub}/d/work/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  const answer = await client.chat.completions.create({ model: 'work', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
  assert.equal(answer.choices.length, 1);

  // The same device loads the same model for the same workload: the kept choice, no measuring.
  await stop(agent);
  await until('the agent offline', async () =>
    !(await (await fetch(`${hub}/api/v1/processors`)).json()).processors.some((p) => p.online), 30000);
  agent = startAgent('agent-again');
  const again = await until('the replica ready again', async () => {
    const r = await ready();
    return r && r.tuned.cached && r;
  }, 120000);
  assert.match(agent.log, /autotune: reused the choice kept in /);
  assert.doesNotMatch(agent.log, /autotune: threads \d+:/);
  for (const k of ['threads', 'prefill_chunk', 'kv_type', 'parallel', 'ctx_size']) assert.equal(again.tuned[k], first.tuned[k], k);
  assert.match(cli('deployments', 'show', 'work'), /settings: threads \d+, .*, KV \w+ \(autotuned, reused\)/);
}));

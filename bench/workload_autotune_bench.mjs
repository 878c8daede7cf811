// The 7,000-token case with autotune's choice against the default settings (issue 48, item 2),
// through a real hub and two real agents on this machine (one per deployment), in the same run,
// alternating:
//   - "plain": the spec gives only a context large enough for the case (ctx_size) and lets the
//     agent decide the rest (its defaults: 2 slots, f16, and autotune's short probes);
//   - "tuned": the spec describes the work ([workload] prompt_tokens, max_tokens, concurrency,
//     objective) and the agent tunes threads, chunk, KV type and slots on it.
// Each round sends CONCURRENCY cases at once to one deployment, then to the other (the order
// alternates), and reports cases per minute and the mean completion time. Not part of CI.
//
//   node bench/workload_autotune_bench.mjs [--bin build/cli/cellserve] [--model FILE.gguf]
//        [--prompt-tokens 7000] [--max-tokens 8] [--concurrency 4] [--rounds 2]
//        [--objective throughput] [--autotune-seconds 60]
// Without --model, a random-weight qwen35-0.8b Q4_K_M is made once with `cellserve synth`
// (in $TMPDIR/cellserve-bench-qwen35-0.8b-q4_k_m.gguf).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { f1, f2, freePort, parseArgs, processSet, stop, until } from './fleet_bench_lib.mjs';

const args = parseArgs();
const bin = path.resolve(args.bin ?? 'build/cli/cellserve');
const promptTokens = Number(args['prompt-tokens'] ?? 7000);
const maxTokens = Number(args['max-tokens'] ?? 8);
const concurrency = Number(args.concurrency ?? 4);
const rounds = Number(args.rounds ?? 2);
const objective = args.objective ?? 'throughput';
const autotuneSeconds = Number(args['autotune-seconds'] ?? 60);

let modelPath = args.model;
if (!modelPath) {
  modelPath = path.join(os.tmpdir(), 'cellserve-bench-qwen35-0.8b-q4_k_m.gguf');
  if (!existsSync(modelPath)) {
    console.log(`making ${modelPath} (cellserve synth)`);
    execFileSync(bin, ['synth', '--arch', 'qwen35', '--shape', 'qwen35-0.8b', '--type', 'Q4_K_M', '--out', modelPath,
      '--quiet'], { stdio: 'inherit' });
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-workload-bench-'));
const procs = processSet(bin, args.logs ?? '');
process.on('exit', procs.killAll);
const json = async (url, init) => (await fetch(url, init)).json();

try {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const hubDir = path.join(dir, 'hub');
  const hubProc = procs.spawn(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '1'], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 15000);
  copyFileSync(modelPath, path.join(hubDir, 'files', 'model.gguf'));
  const sha = createHash('sha256').update(readFileSync(modelPath)).digest('hex');
  // One agent per deployment (a device serves one replica), both on this machine; only one of
  // them works at a time.
  const agents = ['bench-a', 'bench-b'].map((name) => procs.spawn(['agent', '--hub', hub, '--data-dir',
    path.join(dir, name), '--name', name, '--benchmark-shape', ''], name));
  await until('two agents', async () =>
    (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 2, 30000);

  const slotCtx = Math.max(4096, promptTokens + maxTokens + 64);
  const model = `[model]\nurl = "${hub}/files/model.gguf"\nsha256 = "${sha}"\n`;
  const specs = {
    plain: `name = "plain"\nmax_price_per_day = 1\nqueue_timeout = 3600\nfirst_byte_timeout = 3600\n${model}` +
      `[engine]\nctx_size = ${2 * slotCtx}\n`,
    tuned: `name = "tuned"\nmax_price_per_day = 1\nqueue_timeout = 3600\nfirst_byte_timeout = 3600\n${model}` +
      `[workload]\nprompt_tokens = ${promptTokens}\nmax_tokens = ${maxTokens}\nconcurrency = ${concurrency}\n` +
      `objective = "${objective}"\nautotune_seconds = ${autotuneSeconds}\n`,
  };
  for (const [name, text] of Object.entries(specs)) {
    const file = path.join(dir, `${name}.toml`);
    writeFileSync(file, text);
    execFileSync(bin, ['deploy', file, '--hub', hub], { stdio: 'ignore' });
    const t0 = Date.now();
    const r = await until(`${name} ready`, async () => {
      const d = await json(`${hub}/api/v1/deployments/${name}`);
      return d.ready === 1 && d.replicas[0].tuned && d.replicas[0];
    }, 1800000, 500);
    console.log(`${name}: ready after ${f1((Date.now() - t0) / 1000)} s; settings ${JSON.stringify(r.tuned)}`);
  }

  // A case of about promptTokens tokens (the tokenizer says how many: usage.prompt_tokens).
  const words = ['claim', 'transfer', 'account', 'merchant', 'amount', 'device', 'location', 'history'];
  const caseText = (i, n) => `Case ${i}. ` + Array.from({ length: n }, (_, k) => words[(k * 7 + i) % words.length]).join(' ');
  let wordsPerCase = 200;  // a short probe first: the tokenizer says how many tokens a word is
  const ask = async (dep, i) => {
    const t0 = Date.now();
    const r = await json(`${hub}/d/${dep}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: dep, prompt: caseText(i, wordsPerCase), max_tokens: maxTokens, ignore_eos: true,
        temperature: 0, cache_prompt: false }),
    });
    if (!r.usage) throw new Error(`${dep}: ${JSON.stringify(r).slice(0, 300)}`);
    return { seconds: (Date.now() - t0) / 1000, prompt: r.usage.prompt_tokens };
  };
  const probe = await ask('plain', 0);
  wordsPerCase = Math.max(1, Math.round(wordsPerCase * promptTokens / probe.prompt));
  const measured = await ask('plain', 1);
  console.log(`a case is ${measured.prompt} prompt tokens (${wordsPerCase} words)`);

  const results = { plain: [], tuned: [] };
  let n = 100;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['plain', 'tuned'] : ['tuned', 'plain'];
    for (const dep of order) {
      const t0 = Date.now();
      const done = await Promise.all(Array.from({ length: concurrency }, () => ask(dep, n++)));
      const wall = (Date.now() - t0) / 1000;
      const mean = done.reduce((a, d) => a + d.seconds, 0) / done.length;
      results[dep].push({ wall, mean });
      console.log(`round ${round + 1} ${dep}: ${concurrency} cases in ${f1(wall)} s (${f2(60 * concurrency / wall)} ` +
        `cases/min), mean completion ${f1(mean)} s`);
    }
  }
  console.log('\n| round | plain cases/min | tuned cases/min | tuned / plain | plain mean s | tuned mean s |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (let round = 0; round < rounds; round++) {
    const p = results.plain[round];
    const t = results.tuned[round];
    console.log(`| ${round + 1} | ${f2(60 * concurrency / p.wall)} | ${f2(60 * concurrency / t.wall)} | ` +
      `${f2(p.wall / t.wall)} | ${f1(p.mean)} | ${f1(t.mean)} |`);
  }
  for (const a of agents) await stop(a);
  await stop(hubProc);
} finally {
  procs.killAll();
  rmSync(dir, { recursive: true, force: true });
}

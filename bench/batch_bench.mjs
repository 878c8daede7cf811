// Batch throughput over the fleet (issue 21, docs/batch.md): a real `cellserve hub` and N agents
// on 127.0.0.1, one batch through the official `openai` client's Files and Batches calls, timed
// from in_progress to completed. For each N it prints requests per hour and the scheduling
// efficiency: that rate ÷ N × the rate of one device alone (measured first, same run).
//   --simulated 1,10,100  agents with --simulate (paced, no model: the gateway issue's engine)
//   --real 1,2,3          real agents serving a ../shared/testdata model (they share this
//                         machine's cores, so their efficiency measures the machine, not the hub)
//   --interactive 10      simulated devices: the median latency of interactive requests sent one
//                         at a time, idle and during a batch, with batch_reserve_slots 1 and 0
// Not part of CI. Every process it starts is stopped; every wait is bounded.
//
// Usage: node bench/batch_bench.mjs [--bin build/cli/cellserve] [--simulated 1,10,100] [--real 1,2,3] [--interactive 10]
//          [--lines-per-slot 12] [--prefill 4000] [--decode 20] [--slots 2] [--max-tokens 16]
//          [--testdata ../shared/testdata] [--budget 900]
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { default: OpenAI, toFile } = await import(path.join(here, '../tests/node_modules/openai/index.mjs'));

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
  return acc;
}, []));
const bin = path.resolve(args.bin || 'build/cli/cellserve');
const list = (v, d) => (v === undefined ? d : v === 'none' ? [] : v.split(',').map(Number));
const simulated = list(args.simulated, [1, 10, 100]);
const real = list(args.real, [1, 2, 3]);
const interactive = list(args.interactive, [10]);
const linesPerSlot = Number(args['lines-per-slot'] || 12);
const prefill = Number(args.prefill || 4000);
const decode = Number(args.decode || 20);
const slots = Number(args.slots || 2);
const maxTokens = Number(args['max-tokens'] || 16);
const testdata = path.resolve(args.testdata || path.join(here, '../../shared/testdata'));
const budget = Number(args.budget || 900);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const children = new Set();
const killAll = () => children.forEach((c) => c.kill('SIGKILL'));
process.on('exit', killAll);
setTimeout(() => {
  console.error(`batch_bench: over the ${budget} s budget; stopping`);
  process.exit(1);
}, budget * 1000).unref();

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function start(argv, name) {
  const c = spawn(bin, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  c.log = '';
  c.stderr.on('data', (d) => (c.log = (c.log + d).slice(-20000)));
  c.name = name;
  children.add(c);
  c.on('exit', () => children.delete(c));
  return c;
}

async function until(what, probe, ms) {
  const t0 = Date.now();
  for (;;) {
    const v = await probe().catch(() => null);
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

// One fleet of `n` agents, one batch; returns requests per hour. With `probe`, also the median
// latency of 10 interactive requests sent one at a time before the batch and during it.
async function run(n, kind, reserve = 0, probe = false) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-batch-bench-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const procs = [];
  try {
    procs.push(start(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.5'], 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`)).ok, 10000);
    let modelLines;
    if (kind === 'simulated') {
      modelLines = `[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`;
    } else {
      const source = path.join(testdata, 'models', 'qwen3-tiny-f32.gguf');
      copyFileSync(source, path.join(dir, 'hub', 'files', 'model.gguf'));
      const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
      modelLines = `[model]\nurl = "${hub}/files/model.gguf"\nsha256 = "${sha}"\n[engine]\nparallel = ${slots}\nctx_size = 256\n`;
    }
    for (let i = 0; i < n; ++i) {
      const extra = kind === 'simulated' ? ['--simulate', `prefill=${prefill},decode=${decode},slots=${slots}`] : ['--benchmark-shape', '', '--no-autotune'];
      procs.push(start(['agent', '--hub', hub, '--data-dir', path.join(dir, `a${i}`), '--name', `a${i}`, ...extra], `a${i}`));
    }
    // By default no slot is held back for interactive requests: this measures the batch alone.
    writeFileSync(path.join(dir, 'spec.toml'), `name = "cases"\nreplicas = ${n}\nmax_price_per_day = 1\nbatch_reserve_slots = ${reserve}\n${modelLines}`);
    execFileSync(bin, ['deploy', path.join(dir, 'spec.toml'), '--hub', hub], { stdio: 'ignore' });
    await until(`${n} replicas ready`, async () => (await (await fetch(`${hub}/api/v1/deployments/cases`)).json()).ready === n, 180000);
    const client = new OpenAI({ baseURL: `${hub}/d/cases/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    const count = Math.max(100, n * slots * linesPerSlot);
    const lines = [];
    for (let i = 0; i < count; ++i) {
      lines.push(JSON.stringify({ custom_id: `c${i}`, method: 'POST', url: '/v1/chat/completions',
        body: { model: 'cases', messages: [{ role: 'user', content: `Case ${i}: the transactions of yesterday.` }], max_tokens: maxTokens, temperature: 0 } }));
    }
    const file = await client.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'b.jsonl'), purpose: 'batch' });
    const one = async () => {
      const t0 = performance.now();
      await client.chat.completions.create({ model: 'cases', messages: [{ role: 'user', content: 'Now?' }], max_tokens: maxTokens });
      return performance.now() - t0;
    };
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const idle = [];
    if (probe) for (let i = 0; i < 10; ++i) idle.push(await one());
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const busy = [];
    if (probe) {
      await until('the batch under way', async () => (await client.batches.retrieve(batch.id)).request_counts.completed >= n * slots, 120000);
      for (let i = 0; i < 10; ++i) busy.push(await one());
    }
    const done = await until('the batch', async () => {
      const b = await client.batches.retrieve(batch.id);
      return ['completed', 'failed', 'cancelled', 'expired'].includes(b.status) && b;
    }, budget * 1000);
    if (done.status !== 'completed' || done.request_counts.failed > 0) throw new Error(`batch ended ${JSON.stringify(done)}`);
    const t = await (await fetch(`${hub}/d/cases/v1/batches/${batch.id}/throughput`)).json();
    return { rate: t.requests_per_hour, lines: count, seconds: t.elapsed_seconds,
      idle: probe ? median(idle) : 0, busy: probe ? median(busy) : 0 };
  } catch (e) {
    for (const p of procs.slice(0, 2)) console.error(`--- ${p.name}\n${p.log.slice(-3000)}`);
    throw e;
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await sleep(500);
    for (const p of procs) p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const [kind, counts] of [['simulated', simulated], ['real', real]]) {
  if (counts.length === 0) continue;
  if (kind === 'real' && !existsSync(path.join(testdata, 'models', 'qwen3-tiny-f32.gguf'))) {
    console.log(`real agents: skipped (no ${testdata}/models/qwen3-tiny-f32.gguf)`);
    continue;
  }
  console.log(kind === 'simulated'
    ? `simulated devices: prefill ${prefill} tok/s, decode ${decode} tok/s, ${slots} slots, ${maxTokens} tokens per answer`
    : `real devices: qwen3-tiny-f32, ${slots} slots each, ${maxTokens} tokens per answer, all on this machine (${os.cpus().length} cores)`);
  console.log('| devices | lines | seconds | requests/hour | efficiency |');
  console.log('|---|---|---|---|---|');
  let one = 0;
  for (const n of counts) {
    const r = await run(n, kind);
    if (n === 1) one = r.rate;
    const eff = one > 0 ? (r.rate / (n * one)).toFixed(2) : '-';
    console.log(`| ${n} | ${r.lines} | ${r.seconds.toFixed(1)} | ${Math.round(r.rate)} | ${eff} |`);
  }
}
for (const n of interactive) {
  console.log(`interactive latency with ${n} simulated devices (${slots} slots, ${maxTokens} tokens per answer), median of 10:`);
  console.log('| batch_reserve_slots | idle ms | during the batch ms | ratio |');
  console.log('|---|---|---|---|');
  for (const reserve of [1, 0]) {
    const r = await run(n, 'simulated', reserve, true);
    console.log(`| ${reserve} | ${r.idle.toFixed(0)} | ${r.busy.toFixed(0)} | ${(r.busy / r.idle).toFixed(2)} |`);
  }
}
process.exit(0);

// Measures a running `cellserve serve` (or any OpenAI-compatible server):
//   1. aggregate generation tok/s with 1, 2 and 4 parallel streams (greedy, ignore_eos);
//   2. time to first token of a long prompt, cold vs warm (sharing a long prefix with the
//      previous request, so a prefix cache can reuse it).
// Usage: node bench/serve_bench.mjs --url http://127.0.0.1:8080 [--tokens 128] [--streams 1,2,4]
//        [--prefix 6000] [--suffix 1000] [--skip-ttft] [--skip-throughput] [--hogs N]
// --hogs N: a busy device. The throughput table is measured quiet, then again while N other
// processes each keep a CPU busy (busy loops started here and stopped after), then quiet once
// more, in the same run; the busy rows also give their share of the quiet mean.
//
// Case-file mode, the fleet's real work (a long case answered with one line): starts the servers
// itself, for each --parallel value cellserve serve --parallel P and llama-server -np P on the same
// model (the order alternating per P), sends --cases N distinct prompts of --case-tokens tokens at
// once, each answered with --answer-tokens tokens (greedy, ignore_eos), and reports cases per hour
// and time-to-first-token p50 / p95, then the ratio of cases per hour.
//   node bench/serve_bench.mjs --case-file --model M.gguf [--cases 8] [--case-tokens 7000]
//        [--answer-tokens 10] [--parallel 1,2,4] [--threads 2] [--cellserve build/cli/cellserve]
//        [--llama-server ../shared/anchors/llama.cpp/llama-server] [--port 8470]
import http from 'node:http';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
  return acc;
}, []));

let url = args.url || 'http://127.0.0.1:8080';
const nTokens = Number(args.tokens || 128);
const streams = (args.streams || '1,2,4').split(',').map(Number);

async function post(path, body) {
  const r = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const json = await r.json();
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

// One streamed completion; returns generated tokens and seconds.
async function generate(prompt) {
  const t0 = performance.now();
  const r = await post('/v1/completions', { prompt, max_tokens: nTokens, temperature: 0, ignore_eos: true });
  return { tokens: r.usage.completion_tokens, seconds: (performance.now() - t0) / 1000 };
}

const words = 'the of and to in is was that for it with as his on be at by had are but from or have an they which one you were her all she there would their we him been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three'.split(' ');
function text(seed, nWords) {
  let x = seed >>> 0;
  const out = [];
  for (let i = 0; i < nWords; ++i) {
    x = (x * 1103515245 + 12345) >>> 0;
    out.push(words[(x >>> 8) % words.length]);
  }
  return out.join(' ');
}

async function countTokens(s) {
  return (await post('/tokenize', { content: s })).tokens.length;
}

// Text of about `target` tokens: within 2, or the closest of 12 tries (a word can be several
// tokens, so the count need not converge).
async function textOfTokens(seed, target) {
  let n = Math.round(target * 0.9);
  let best = null;
  for (let i = 0; i < 12; i++) {
    const s = text(seed, n);
    const c = await countTokens(s);
    if (!best || Math.abs(c - target) < Math.abs(best.c - target)) best = { s, c };
    if (Math.abs(c - target) <= 2) break;
    n = Math.max(1, Math.round(n * target / c) + (c > target ? -1 : 1));
  }
  return best.s;
}

// Wait until the model is loaded.
async function waitReady() {
  for (let i = 0; ; ++i) {
    try {
      if ((await fetch(url + '/health')).status === 200) return;
    } catch {}
    if (i > 1200) throw new Error('the server never became ready');
    await new Promise((r) => setTimeout(r, 250));
  }
}

// One streamed completion: seconds to the first chunk that carries a choice, and to the end.
// node:http, not fetch: fetch gives up on a body silent for 300 s (a long prefill in a queue).
// One connection per request (agent: false): llama-server closes a stream's connection after
// [DONE], and a kept-alive socket reused after that hangs up.
function streamed(prompt, maxTokens) {
  const body = JSON.stringify({
    prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    let usage = null;
    let buffer = '';
    const req = http.request(url + '/v1/completions', { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (text) => {
        buffer += text;
        let at;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
          const chunk = JSON.parse(event.slice(6));
          if (!first && chunk.choices?.length) first = performance.now();
          if (chunk.usage) usage = chunk.usage;
        }
      });
      res.on('end', () => resolve({ ttft: (first - t0) / 1000, seconds: (performance.now() - t0) / 1000, usage }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function percentile(values, p) {
  const v = [...values].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
}

if (args['case-file'] === 'true') {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const model = args.model;
  if (!model) throw new Error('--case-file needs --model FILE.gguf');
  const nCases = Number(args.cases || 8);
  const caseTokens = Number(args['case-tokens'] || 7000);
  const answerTokens = Number(args['answer-tokens'] || 10);
  const parallels = (args.parallel || '1,2,4').split(',').map(Number);
  const threads = String(args.threads || 2);
  const port = Number(args.port || 8470);
  const servers = {
    cellserve: (p, ctx) => [args.cellserve || path.join(root, 'build/cli/cellserve'),
      ['serve', '-m', model, '--port', String(port), '--parallel', String(p), '--ctx-size', String(ctx), '-t', threads]],
    'llama-server': (p, ctx) => [args['llama-server'] || path.join(root, '../shared/anchors/llama.cpp/llama-server'),
      ['-m', model, '--port', String(port), '-np', String(p), '-c', String(ctx), '-t', threads]],
  };
  url = `http://127.0.0.1:${port}`;
  const start = async (name, p) => {
    const ctx = p * (caseTokens + answerTokens + 256);  // every slot holds a whole case
    const [bin, argv] = servers[name](p, ctx);
    const child = spawn(bin, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (d) => { log = (log + d).slice(-4000); });
    const exited = new Promise((r) => child.on('exit', r));
    try {
      await Promise.race([waitReady(), exited.then(() => { throw new Error(`${name} exited:\n${log}`); })]);
    } catch (e) {
      child.kill('SIGKILL');
      throw e;
    }
    return { stop: async () => { child.kill('SIGTERM'); await exited; } };
  };

  // The cases: distinct texts of caseTokens tokens each, counted by the model's own tokenizer.
  const texts = [];
  {
    const s = await start('cellserve', 1);
    try {
      for (let i = 0; i < nCases + 1; i++) texts.push(await textOfTokens(1000 + i, caseTokens));
    } finally {
      await s.stop();
    }
  }
  const results = [];
  // Rows print as they finish: a long run that is stopped still leaves what it measured.
  console.log(`${nCases} cases of ${caseTokens} tokens, ${answerTokens}-token answers, ${threads} threads, all sent at once\n`);
  console.log('| server | parallel | wall (s) | cases per hour | TTFT p50 (s) | TTFT p95 (s) |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [k, p] of parallels.entries()) {
    const order = k % 2 === 0 ? ['cellserve', 'llama-server'] : ['llama-server', 'cellserve'];
    for (const name of order) {
      const s = await start(name, p);
      try {
        await streamed(texts[nCases].slice(0, 200), 2);  // page in the weights
        const t0 = performance.now();
        const runs = await Promise.all(texts.slice(0, nCases).map((t) => streamed(t, answerTokens)));
        const wall = (performance.now() - t0) / 1000;
        const ttfts = runs.map((r) => r.ttft);
        const r = { name, p, wall, perHour: (3600 * nCases) / wall, p50: percentile(ttfts, 50), p95: percentile(ttfts, 95) };
        results.push(r);
        console.log(`| ${r.name} | ${r.p} | ${r.wall.toFixed(1)} | ${r.perHour.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p95.toFixed(2)} |`);
      } finally {
        await s.stop();
      }
    }
  }
  console.log('\n| parallel | cases per hour, cellserve / llama-server |');
  console.log('|---:|---:|');
  for (const p of parallels) {
    const c = results.find((r) => r.name === 'cellserve' && r.p === p);
    const l = results.find((r) => r.name === 'llama-server' && r.p === p);
    console.log(`| ${p} | ${(c.perHour / l.perHour).toFixed(2)} |`);
  }
  process.exit(0);
}

await waitReady();

// A process that keeps one CPU busy until it is killed (a phone's own app, a box's other service).
function startHog() {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  return { stop: () => new Promise((r) => { child.on('exit', r); child.kill('SIGKILL'); }) };
}

async function throughputTable(label) {
  console.log(`\n${label}\n`);
  console.log(`| streams | generated tokens | seconds | aggregate tok/s | per-stream tok/s |`);
  console.log(`|---:|---:|---:|---:|---:|`);
  const rates = {};
  for (const n of streams) {
    await generate('warm up'); // first request pays for page faults
    const t0 = performance.now();
    const results = await Promise.all(Array.from({ length: n }, (_, i) => generate(`Story ${i}: ` + text(i + 1, 8))));
    const seconds = (performance.now() - t0) / 1000;
    const total = results.reduce((a, r) => a + r.tokens, 0);
    const perStream = results.reduce((a, r) => a + r.tokens / r.seconds, 0) / n;
    rates[n] = total / seconds;
    console.log(`| ${n} | ${total} | ${seconds.toFixed(2)} | ${(total / seconds).toFixed(1)} | ${perStream.toFixed(1)} |`);
  }
  return rates;
}

if (args['skip-throughput'] !== 'true') {
  const hogs = Number(args.hogs || 0);
  if (!hogs) {
    await throughputTable('quiet');
  } else {
    const before = await throughputTable('quiet');
    const running = Array.from({ length: hogs }, startHog);
    let busy;
    try {
      busy = await throughputTable(`with ${hogs} busy process${hogs > 1 ? 'es' : ''}`);
    } finally {
      await Promise.all(running.map((h) => h.stop()));
    }
    const after = await throughputTable('quiet again');
    console.log('\n| streams | busy tok/s / mean quiet tok/s |');
    console.log('|---:|---:|');
    for (const n of streams) console.log(`| ${n} | ${(busy[n] / ((before[n] + after[n]) / 2)).toFixed(2)} |`);
  }
}

if (args['skip-ttft'] !== 'true') {
  const prefixTokens = Number(args.prefix || 6000);
  const suffixTokens = Number(args.suffix || 1000);
  const prefix = await textOfTokens(101, prefixTokens);
  const cold = prefix + ' ' + await textOfTokens(202, suffixTokens);
  const warm = prefix + ' ' + await textOfTokens(303, suffixTokens);
  // Streamed, so the response headers come at once; the first chunk that carries a choice marks
  // the first token.
  const ttft = async (prompt) => {
    const r = await streamed(prompt, 1);
    return { seconds: r.ttft, prompt: r.usage.prompt_tokens, cached: r.usage.prompt_tokens_details?.cached_tokens ?? 0 };
  };
  const c = await ttft(cold);
  const w = await ttft(warm);
  console.log(`\n| request | prompt tokens | cached tokens | time to first token (s) |`);
  console.log(`|---|---:|---:|---:|`);
  console.log(`| cold | ${c.prompt} | ${c.cached} | ${c.seconds.toFixed(2)} |`);
  console.log(`| warm | ${w.prompt} | ${w.cached} | ${w.seconds.toFixed(2)} |`);
  console.log(`\nwarm speed-up: ${(c.seconds / w.seconds).toFixed(2)}x`);
}

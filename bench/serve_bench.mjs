// Measures a running `cellserve serve` (or any OpenAI-compatible server):
//   1. aggregate generation tok/s with 1, 2 and 4 parallel streams (greedy, ignore_eos);
//   2. time to first token of a long prompt, cold vs warm (sharing a long prefix with the
//      previous request, so a prefix cache can reuse it).
// Usage: node bench/serve_bench.mjs --url http://127.0.0.1:8080 [--tokens 128] [--streams 1,2,4]
//        [--prefix 6000] [--suffix 1000] [--skip-ttft] [--skip-throughput]
import http from 'node:http';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
  return acc;
}, []));

const url = args.url || 'http://127.0.0.1:8080';
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

async function textOfTokens(seed, target) {
  let n = Math.round(target * 0.9);
  for (;;) {
    const s = text(seed, n);
    const c = await countTokens(s);
    if (Math.abs(c - target) <= 2) return s;
    n = Math.max(1, Math.round(n * target / c));
  }
}

// Wait until the model is loaded.
for (let i = 0; ; ++i) {
  try {
    if ((await fetch(url + '/health')).status === 200) break;
  } catch {}
  if (i > 1200) throw new Error('the server never became ready');
  await new Promise((r) => setTimeout(r, 250));
}

if (args['skip-throughput'] !== 'true') {
  console.log(`| streams | generated tokens | seconds | aggregate tok/s | per-stream tok/s |`);
  console.log(`|---:|---:|---:|---:|---:|`);
  for (const n of streams) {
    await generate('warm up'); // first request pays for page faults
    const t0 = performance.now();
    const results = await Promise.all(Array.from({ length: n }, (_, i) => generate(`Story ${i}: ` + text(i + 1, 8))));
    const seconds = (performance.now() - t0) / 1000;
    const total = results.reduce((a, r) => a + r.tokens, 0);
    const perStream = results.reduce((a, r) => a + r.tokens / r.seconds, 0) / n;
    console.log(`| ${n} | ${total} | ${seconds.toFixed(2)} | ${(total / seconds).toFixed(1)} | ${perStream.toFixed(1)} |`);
  }
}

if (args['skip-ttft'] !== 'true') {
  const prefixTokens = Number(args.prefix || 6000);
  const suffixTokens = Number(args.suffix || 1000);
  const prefix = await textOfTokens(101, prefixTokens);
  const cold = prefix + ' ' + await textOfTokens(202, suffixTokens);
  const warm = prefix + ' ' + await textOfTokens(303, suffixTokens);
  // Streamed, so the response headers come at once; the first chunk that carries a choice marks
  // the first token. node:http, not fetch: fetch gives up on a body silent for 300 s.
  function ttft(prompt) {
    const body = JSON.stringify({ prompt, max_tokens: 1, temperature: 0, stream: true, stream_options: { include_usage: true } });
    return new Promise((resolve, reject) => {
      const t0 = performance.now();
      let first = 0;
      let usage = null;
      let buffer = '';
      const req = http.request(url + '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`ttft: HTTP ${res.statusCode}`));
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
        res.on('end', () => resolve({ seconds: (first - t0) / 1000, prompt: usage.prompt_tokens, cached: usage.prompt_tokens_details?.cached_tokens ?? 0 }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  const c = await ttft(cold);
  const w = await ttft(warm);
  console.log(`\n| request | prompt tokens | cached tokens | time to first token (s) |`);
  console.log(`|---|---:|---:|---:|`);
  console.log(`| cold | ${c.prompt} | ${c.cached} | ${c.seconds.toFixed(2)} |`);
  console.log(`| warm | ${w.prompt} | ${w.cached} | ${w.seconds.toFixed(2)} |`);
  console.log(`\nwarm speed-up: ${(c.seconds / w.seconds).toFixed(2)}x`);
}

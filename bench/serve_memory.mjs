// Peak memory of `cellserve serve` against its start-up estimate, as the prompt grows.
//
// Starts `cellserve serve -m MODEL --parallel 1 --ctx-size CTX` (plus --serve-args), reads the
// estimate it logs ("memory: needs ... (weights + KV cache + recurrent state + scratch)"), then
// sends prompts of each --prompts length in turn (distinct random token ids, 1 generated token)
// and after each reads the process's resident and peak resident memory from /proc/PID/status.
// Prints one row per prompt; the peak should stay below the estimate whatever the length.
//   node bench/serve_memory.mjs --model M.gguf [--ctx 8192] [--prompts 512,2048,4096,8000]
//        [--threads 2] [--cellserve build/cli/cellserve] [--port 8490] [--serve-args "--mlock"]
// Nothing here is a test: the figures go to docs/server.md.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  // --serve-args takes the next word whatever it starts with ("--mlock" is a value there).
  const takes = all[i + 1] !== undefined && (a === '--serve-args' || !all[i + 1].startsWith('--'));
  if (a.startsWith('--') && all[i - 1] !== '--serve-args') acc.push([a.slice(2), takes ? all[i + 1] : 'true']);
  return acc;
}, []));
if (!args.model) {
  console.error('serve_memory: --model M.gguf is required');
  process.exit(2);
}
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cellserve = args.cellserve || path.join(root, 'build/cli/cellserve');
const ctx = Number(args.ctx || 8192);
const prompts = (args.prompts || '512,2048,4096,8000').split(',').map(Number);
const port = Number(args.port || 8490);
const url = `http://127.0.0.1:${port}`;
const serveArgs = ['serve', '-m', args.model, '--parallel', '1', '--ctx-size', String(ctx), '--port', String(port),
  '--threads', String(args.threads || 2), ...(args['serve-args'] ? args['serve-args'].split(' ') : [])];

const mib = (b) => (b / 2 ** 20).toFixed(0);
function statusBytes(pid, field) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
  return m ? Number(m[1]) * 1024 : NaN;
}

const server = spawn(cellserve, serveArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
server.stderr.on('data', (d) => { log += d; });
const stop = () => { try { server.kill('SIGTERM'); } catch {} };
process.on('exit', stop);

try {
  for (let i = 0; ; ++i) {
    if (server.exitCode !== null) throw new Error(`serve exited ${server.exitCode}:\n${log}`);
    try {
      if ((await fetch(url + '/health')).status === 200) break;
    } catch {}
    if (i > 1200) throw new Error('serve did not become ready in 10 minutes');
    await new Promise((r) => setTimeout(r, 500));
  }
  const estimate = (log.match(/memory: needs (.*)$/m) || [])[1] || '(no estimate logged)';
  console.log(`serve ${serveArgs.slice(1).join(' ')}`);
  console.log(`estimate: ${estimate}`);
  console.log(`after load: resident ${mib(statusBytes(server.pid, 'VmRSS'))} MiB, peak ${mib(statusBytes(server.pid, 'VmHWM'))} MiB`);
  console.log('| prompt tokens | seconds | resident (MiB) | peak resident (MiB) |');
  console.log('|---:|---:|---:|---:|');
  let seed = 12345;
  for (const n of prompts) {
    const prompt = [];
    for (let i = 0; i < n; ++i) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      prompt.push(1000 + ((seed >>> 8) % 20000));
    }
    const t0 = performance.now();
    const r = await fetch(url + '/v1/completions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: 1, temperature: 0 }),
    });
    const body = await r.json();
    if (r.status !== 200) throw new Error(`${n} tokens: ${r.status} ${JSON.stringify(body)}`);
    const seconds = (performance.now() - t0) / 1000;
    console.log(`| ${body.usage.prompt_tokens} | ${seconds.toFixed(1)} | ${mib(statusBytes(server.pid, 'VmRSS'))} | ${mib(statusBytes(server.pid, 'VmHWM'))} |`);
  }
} catch (e) {
  console.error(`serve_memory: ${e.message}`);
  process.exitCode = 1;
} finally {
  stop();
}

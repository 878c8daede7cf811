// Does one heavy structured-output request slow everyone else down (issue 19)? Starts
// `cellserve serve` with two slots and measures a plain 4-token chat: idle; beside a second
// client that keeps sending unconstrained 32-token chats (the control: sharing the model's
// steps costs something by itself); and beside a client that keeps sending 32-token chats
// constrained by the security probe's schema, an anyOf of N identical {"type":"string"} branches.
// Prints the latencies and the ratios to idle (medians, same run), then sends the 2,000-branch
// schema and a 2,000-distinct-branch schema once each and prints what came back and how fast.
//
// Usage: node bench/grammar_isolation_bench.mjs --bin build/cli/cellserve \
//          --model ../shared/testdata/models/qwen3-tiny-f32.gguf [--reps 40] [--rounds 5]
//          [--branches 400] [--timeout 60]
// No npm packages needed (Node 18+).
import { spawn } from 'node:child_process';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
  return acc;
}, []));
const bin = args.bin || 'build/cli/cellserve';
const model = args.model || '../shared/testdata/models/qwen3-tiny-f32.gguf';
const reps = Number(args.reps || 40);
const branches = Number(args.branches || 400);
const timeoutSeconds = Number(args.timeout || 60);

async function startServer() {
  const child = spawn(bin, ['serve', '-m', model, '--port', '0', '--threads', '2', '--parallel', '2'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`cellserve exited (${code}):\n${log}`)));
  });
  process.on('exit', () => child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; ++i) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, stop: () => child.kill('SIGTERM') };
}

const server = await startServer();

// One chat; resolves to { status, seconds, body } (status 0: no answer within the timeout).
async function chat(extra, timeout = timeoutSeconds) {
  const body = { messages: [{ role: 'user', content: 'Hi' }], temperature: 0, ...extra };
  const t0 = performance.now();
  try {
    const r = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeout * 1000),
    });
    const json = await r.json();
    return { status: r.status, seconds: (performance.now() - t0) / 1000, body: json };
  } catch (e) {
    return { status: 0, seconds: (performance.now() - t0) / 1000, body: { error: { message: String(e) } } };
  }
}

function schemaFormat(n, distinct) {
  const anyOf = Array.from({ length: n }, (_, i) => (distinct ? { type: 'string', maxLength: 1000 + i } : { type: 'string' }));
  return { type: 'json_schema', json_schema: { name: 'probe', schema: { anyOf } } };
}
const heavyFormat = schemaFormat(branches, false);
const heavyBytes = JSON.stringify(heavyFormat.json_schema.schema, null, 2).length;

const plain = () => chat({ max_tokens: 4, ignore_eos: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];

async function plainLatencies(n, out) {
  for (let i = 0; i < n; ++i) {
    const r = await plain();
    if (r.status !== 200) throw new Error(`plain chat: ${r.status} ${JSON.stringify(r.body)}`);
    out.push(r.seconds * 1000);
  }
}

// Plain latencies (appended to `out`) while another client sends one `extra` chat after another.
async function besideClient(extra, n, out, other) {
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const r = await chat({ messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 32, ...extra });
      other.sent += 1;
      other.statuses[r.status] = (other.statuses[r.status] || 0) + 1;
      other.seconds.push(r.seconds);
      other.tokens += r.body.usage ? r.body.usage.completion_tokens : 0;
    }
  })();
  await new Promise((r) => setTimeout(r, 100));  // let its first request reach its slot
  await plainLatencies(n, out);
  stop = true;
  await loop;
}

for (let i = 0; i < 3; ++i) await plain();  // warm-up (page faults, the vocabulary index)
await chat({ max_tokens: 8, response_format: heavyFormat });
// The three conditions take turns, so that load from outside the benchmark (other processes on a
// shared machine) falls on all of them alike.
const rounds = Number(args.rounds || 5);
const idle = [], control = [], beside = [];
const controlClient = { sent: 0, statuses: {}, seconds: [], tokens: 0 };
const heavyClient = { sent: 0, statuses: {}, seconds: [], tokens: 0 };
for (let round = 0; round < rounds; ++round) {
  const n = Math.ceil(reps / rounds);
  await plainLatencies(n, idle);
  await besideClient({ ignore_eos: true }, n, control, controlClient);
  await besideClient({ response_format: heavyFormat }, n, beside, heavyClient);
}

console.log(`model ${model}; ${idle.length} plain 4-token chats per condition in ${rounds} interleaved rounds; ` +
            `heavy schema: anyOf of ${branches} identical branches (${heavyBytes} bytes pretty-printed)`);
console.log(`| plain chat | median ms | p90 ms | ratio to idle (medians) | other client |`);
console.log(`|---|---:|---:|---:|---|`);
const row = (what, xs, other) => {
  const o = other ? `${other.sent} requests ${JSON.stringify(other.statuses)}, ${other.tokens} tokens, ` +
                    `median ${(median(other.seconds) * 1000).toFixed(1)} ms` : '';
  console.log(`| ${what} | ${median(xs).toFixed(2)} | ${p90(xs).toFixed(2)} | ` +
              `${(median(xs) / median(idle)).toFixed(2)} | ${o} |`);
};
row('idle', idle);
row('beside unconstrained 32-token chats', control, controlClient);
row(`beside the ${branches}-branch schema`, beside, heavyClient);
console.log(`ratio (beside the schema / idle, medians): ${(median(beside) / median(idle)).toFixed(2)}`);

for (const [what, format] of [['2000 identical branches', schemaFormat(2000, false)],
                              ['2000 distinct branches', schemaFormat(2000, true)]]) {
  const r = await chat({ max_tokens: 16, response_format: format });
  const detail = r.status === 200 ? `${r.body.usage.completion_tokens} tokens: ${r.body.choices[0].message.content}`
                                  : (r.body.error && r.body.error.message);
  console.log(`${what}: status ${r.status || 'none (timeout)'} after ${r.seconds.toFixed(2)} s; ${detail}`);
}
server.stop();

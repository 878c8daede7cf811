// The cost of spot checks (issue 45, docs/fleet.md "Spot checks and canaries"): completed
// requests per second through a deployment endpoint with verify_fraction = F (default 0.02)
// against 0, in the same run, alternating windows on the same hub and simulated devices (the
// spec is re-applied in place between windows). Expected: about 1 - F of the unchecked
// throughput, since each check is one more request on the fleet's slots (honest simulated devices
// agree, so no tie-break request follows).
//
// A real `cellserve hub` and D `cellserve agent --simulate` processes on 127.0.0.1; C clients (the
// official `openai` package) each send greedy chats back to back, enough to keep every slot busy.
// Not part of CI. Every process it starts is stopped; every wait and request is bounded.
//
// Usage: node bench/spot_check_cost.mjs [--bin build/cli/cellserve] [--devices 4] [--slots 2]
//          [--prefill 4000] [--decode 200] [--max-tokens 32] [--clients 16] [--seconds 10]
//          [--rounds 3] [--fraction 0.02]
// Needs tests/node_modules (cd tests && npm ci).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// The e2e suites' process handling: free ports, logged children always stopped, bounded polling.
const { children, freePort, sleep, spawnLogged, stop, until } = await import(path.join(here, '../tests/e2e/fleet_harness.mjs'));
const { default: OpenAI } = await import(path.join(here, '../tests/node_modules/openai/index.mjs'));

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
  return acc;
}, []));
const bin = path.resolve(args.bin || 'build/cli/cellserve');
const nDevices = Number(args.devices || 4);
const slots = Number(args.slots || 2);
const prefill = Number(args.prefill || 4000);
const decode = Number(args.decode || 200);
const maxTokens = Number(args['max-tokens'] || 32);
const nClients = Number(args.clients || nDevices * slots * 2);
const seconds = Number(args.seconds || 10);
const rounds = Number(args.rounds || 3);
const fraction = Number(args.fraction || 0.02);
for (const [k, v] of Object.entries({ nDevices, slots, prefill, decode, maxTokens, nClients, seconds, rounds })) {
  if (!(v > 0)) throw new Error(`bad --${k}: ${v}`);
}
if (!(fraction > 0 && fraction <= 1)) throw new Error(`bad --fraction: ${fraction}`);

const start = (argv, name) => spawnLogged(argv, name, bin);

const spec = (f) => ({
  name: 'cost', replicas: nDevices, max_price_per_day: 5, queue_max: 10000, verify_fraction: f,
  model: { url: 'http://127.0.0.1:9/m.gguf', sha256: 'ab'.repeat(32) },
  engine: { simulated: true, parallel: slots },
});

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-spotcost-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const put = async (f) => {
    const r = await fetch(`${hub}/api/v1/deployments/cost`, { method: 'PUT', headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spec(f)), signal: AbortSignal.timeout(10000) });
    if (r.status !== 200 && r.status !== 201) throw new Error(`PUT: ${r.status} ${await r.text()}`);
  };
  const checks = async () => {
    const text = await (await fetch(`${hub}/metrics`, { signal: AbortSignal.timeout(10000) })).text();
    let n = 0;
    for (const m of text.matchAll(/cellserve_hub_spot_checks_total\{deployment="cost",result="(\w+)"\} (\d+)/g)) n += Number(m[2]);
    return n;
  };
  try {
    start(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.5'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    for (let i = 0; i < nDevices; i++) {
      start(['agent', '--hub', hub, '--data-dir', path.join(dir, `a${i}`), '--name', `a${i}`,
        '--simulate', `prefill=${prefill},decode=${decode},slots=${slots}`], `a${i}`);
    }
    await put(0);
    await until('every replica ready', async () =>
      (await (await fetch(`${hub}/api/v1/deployments/cost`)).json()).ready === nDevices, 120000);
    const client = new OpenAI({ baseURL: `${hub}/d/cost/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    let n = 0;
    let failures = 0;
    const window = async () => {
      const end = Date.now() + seconds * 1000;
      let done = 0;
      await Promise.all([...Array(nClients).keys()].map(async (c) => {
        while (Date.now() < end) {
          try {
            await client.chat.completions.create({ model: 'cost', temperature: 0, max_tokens: maxTokens,
              messages: [{ role: 'user', content: `client ${c} request ${n++}` }] });
            if (Date.now() <= end) done++;
          } catch {
            failures++;
          }
        }
      }));
      return done / seconds;
    };
    await window();  // warm-up, unmeasured
    const rows = [];
    for (let r = 0; r < rounds; r++) {
      for (const f of r % 2 === 0 ? [0, fraction] : [fraction, 0]) {
        await put(f);
        await sleep(1000);  // the last window's checks drain
        const before = await checks();
        const rps = await window();
        rows.push({ round: r + 1, fraction: f, rps, checks: (await checks()) - before });
      }
    }
    const mean = (f) => rows.filter((x) => x.fraction === f).reduce((s, x) => s + x.rps, 0) / rounds;
    console.log(`${nDevices} simulated devices x ${slots} slots (prefill ${prefill}, decode ${decode} t/s), ` +
      `${nClients} clients, max_tokens ${maxTokens}, ${rounds} x ${seconds} s windows per setting`);
    console.log('round  verify_fraction  requests/s  spot checks');
    for (const x of rows) {
      console.log(`${String(x.round).padStart(5)}  ${String(x.fraction).padStart(15)}  ${x.rps.toFixed(2).padStart(10)}  ${String(x.checks).padStart(11)}`);
    }
    console.log(`mean requests/s: ${mean(0).toFixed(2)} at 0, ${mean(fraction).toFixed(2)} at ${fraction}; ` +
      `ratio ${(mean(fraction) / mean(0)).toFixed(3)} (expected about ${(1 - fraction).toFixed(3)}); failed requests ${failures}`);
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

// The measurements of issue 46 (docs/cluster.md, "Measured"): several `cellserve hub` processes
// sharing one private PostgreSQL server (started here: tests/e2e/postgres.mjs) and many
// `cellserve agent --simulate` processes, each given every hub, driven through the deployment
// endpoint by the official `openai` client spread over the hubs. Parts:
//   throughput  completed requests/s with D simulated devices through one hub, then through three
//               (same devices, same clients); the ratio, and each against D x one device's paced
//               capacity.
//   hop         latency of a request that reaches the hub holding the agent's tunnel against one
//               that reaches another hub and crosses the hub-to-hub link, alternated: p50, p99.
//   failover    SIGKILL of the hub holding the most agents: time until every agent is recorded on a
//               live hub and every replica is ready again.
//   thousand    T devices over three hubs against T x one device (measured alone, same run: its
//               slots' clients send back-to-back requests, and its rate is requests ÷ wall time,
//               which a short window of a slow device would round).
// Not part of CI. Every process it starts is stopped; every wait and request is bounded.
//
// Usage: node bench/cluster_bench.mjs [--bin build/cli/cellserve] [--only throughput,hop,failover,thousand]
//          [--devices 300] [--thousand 1000] [--seconds 10] [--decode 20] [--slots 2] [--max-tokens 16]
//          [--hop-requests 1000] [--failover-agents 30] [--poll-seconds 1] [--ping-timeout 3] [--logs DIR]
//          [--budget 1800] [--swarm 1] [--swarm-bin build/bench/agent_swarm]
// --swarm K: run the simulated devices K to a process (bench/agent_swarm: K agents, each with its
// own identity, tunnel and simulator) instead of one `cellserve agent` process each; what a
// thousand agent processes cost a small machine is then not charged to the hubs.
// The devices must be the limit for the ratios to mean what they say: on a small machine, slow
// them (--decode) so that D devices' paced capacity is below what the machine can carry, and give
// 1,000 agents a longer status poll (--poll-seconds 5: each poll costs the hub and the agent CPU).
// docs/cluster.md, "Measured", gives the command lines used.
// Quick run: --devices 30 --thousand 60 --seconds 5 --hop-requests 200 --failover-agents 12
// Needs tests/node_modules (cd tests && npm ci) and Debian's postgresql package. Linux only.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { closeHttpAgents, errorKey, parseArgs, f1, f2, f3, fetchFrom, freePort, procStatus, processSet, quantile, sleep, sourceAddress, stop,
  until } from './fleet_bench_lib.mjs';
import { postgresAbsence, startPostgres } from '../tests/e2e/postgres.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { default: OpenAI } = await import(path.join(here, '../tests/node_modules/openai/index.mjs'));

const args = parseArgs();
const bin = path.resolve(args.bin || 'build/cli/cellserve');
const only = new Set((args.only || 'throughput,hop,failover,thousand').split(','));
const nDevices = Number(args.devices || 300);
const nThousand = Number(args.thousand || 1000);
const seconds = Number(args.seconds || 10);
const decode = Number(args.decode || 20);
const slots = Number(args.slots || 2);
const maxTokens = Number(args['max-tokens'] || 16);
const hopRequests = Number(args['hop-requests'] || 1000);
const failoverAgents = Number(args['failover-agents'] || 30);
const budgetSeconds = Number(args.budget || 1800);
const pollSeconds = Number(args['poll-seconds'] || 1);
const pingTimeout = Number(args['ping-timeout'] || 3);
const logDir = args.logs ? path.resolve(args.logs) : '';
const swarm = Number(args.swarm || 1);
const swarmBin = path.resolve(args['swarm-bin'] || 'build/bench/agent_swarm');
const kReplicaCap = 64; // replicas per deployment here (the spec allows 1,000): several endpoints, as a fleet has
for (const [k, v] of Object.entries({ nDevices, nThousand, seconds, decode, slots, maxTokens, hopRequests, failoverAgents,
  pollSeconds, pingTimeout, swarm })) {
  if (!(v > 0)) throw new Error(`bad --${k}: ${v}`);
}
if (postgresAbsence()) throw new Error(postgresAbsence());

const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-cluster-bench-'));
if (logDir) mkdirSync(logDir, { recursive: true });
const { children, killAll, spawn } = processSet(bin, logDir);
const pg = startPostgres();
process.on('exit', () => {
  killAll();
  pg.stop();
  rmSync(dir, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));
setTimeout(() => {
  console.error(`cluster_bench: over the ${budgetSeconds} s budget; stopping`);
  process.exit(3);
}, budgetSeconds * 1000).unref();

const clusterKey = path.join(dir, 'cluster.key');
execFileSync(bin, ['hub', 'cluster-key', clusterKey]);
const deviceSim = `prefill=4000,decode=${decode},slots=${slots}`;
const perRequest = 30 / 4000 + maxTokens / decode; // ~30 prompt tokens, then max_tokens at the paced rate
const deviceCapacity = slots / perRequest;          // one device's paced requests/s
const mark = (label) => console.log(`\n## ${label}\n`);
let databases = 0;

// ---- the cluster ----------------------------------------------------------------------------

// `count` hubs on a fresh database. Each: { url, child, name, args }.
async function startHubs(count, label) {
  const store = pg.createDatabase(`bench_${databases++}`);
  const hubs = [];
  for (let i = 0; i < count; ++i) {
    const port = await freePort();
    const name = `${label}-hub${i}`;
    const argv = ['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, name), '--store', store,
      '--cluster-key-file', clusterKey, '--poll-seconds', String(pollSeconds), '--ping-timeout', String(pingTimeout), '--max-connections', '8192',
      '--max-connections-per-ip', '0'];
    const hub = { url: `http://127.0.0.1:${port}`, name, argv, child: spawn(argv, name) };
    hubs.push(hub);
  }
  for (const h of hubs) await until(`${h.name} up`, async () => (await fetch(`${h.url}/health`)).status === 200, 30000);
  return hubs;
}
function startAgents(hubs, label, count, simulate = deviceSim) {
  const list = hubs.map((h) => h.url).join(',');
  if (swarm > 1) {
    // Swarm s holds agents s*K .. s*K+K-1, named `${label}-s${s}-${k}`.
    return Array.from({ length: Math.ceil(count / swarm) }, (_, s) => spawn(['--hub', list,
      '--data-dir', path.join(dir, `${label}-s${s}`), '--count', String(Math.min(swarm, count - s * swarm)),
      '--name-prefix', `${label}-s${s}-`, '--price-per-day', '0.1', '--simulate', simulate], `${label}-s${s}`, swarmBin));
  }
  return Array.from({ length: count }, (_, i) => spawn(['agent', '--hub', list, '--data-dir', path.join(dir, `${label}-a${i}`),
    '--name', `${label}-a${i}`, '--price-per-day', '0.1', '--simulate', simulate], `${label}-a${i}`));
}
const json = async (hub, p) => (await fetch(`${hub.url}${p}`, { signal: AbortSignal.timeout(20000) })).json();
const onlineCount = async (hub) => (await json(hub, '/api/v1/processors')).processors.filter((p) => p.online).length;
// Tunnels recorded per live hub, by peer URL.
async function tunnelsByHub(hub) {
  const listed = await json(hub, '/api/v1/hubs');
  return Object.fromEntries(listed.hubs.filter((x) => x.alive).map((x) => [x.peer_url, x.agents]));
}
function split(n) {
  const k = Math.ceil(n / kReplicaCap);
  return Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));
}
async function deployAll(hub, label, n) {
  const names = [];
  for (const [i, size] of split(n).entries()) {
    const name = `${label}${i}`;
    const file = path.join(dir, `${name}.toml`);
    const spec = `name = "${name}"\nreplicas = ${size}\nmax_price_per_day = 5\nqueue_max = 10000\nqueue_timeout = 60\n` +
      `[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\nparallel = ${slots}\n`;
    writeFileSync(file, spec);
    // Asynchronous: this process reads every hub's log pipe, and a hub that cannot write its log
    // stops (a synchronous call here stalled 300-device runs).
    try {
      await promisify(execFile)(bin, ['deploy', file, '--hub', hub.url], { encoding: 'utf8', timeout: 120000 });
    } catch (e) {
      throw new Error(`deploy ${name}: ${(e.stderr || '') + (e.stdout || '')}`.trim());
    }
    names.push(name);
  }
  await until(`${names.join(', ')} ready`, async () => {
    for (const name of names) {
      const d = await json(hub, `/api/v1/deployments/${name}`);
      if (!d.replicas?.length || !d.replicas.every((r) => r.state === 'ready')) return false;
    }
    return true;
  }, 300000, 500);
  return names;
}
async function stopAll() {
  await Promise.all([...children].map((c) => stop(c)));
}

// Request k of client i: a short case, max_tokens decoded whatever the simulator samples.
const ask = (client, name, i, k) => client.chat.completions.create({ model: name, max_tokens: maxTokens, ignore_eos: true,
  messages: [{ role: 'user', content: `client ${i} request ${k}: is this case a risk?` }] });

// Errors by status or code, with the first message of each kind (what a 503 said).
function noteError(errors, e) {
  const key = errorKey(e);
  if (!errors[key]) errors[key] = { n: 0, first: String(e.message ?? e).slice(0, 160) };
  ++errors[key].n;
}
const errorCounts = (errors) => JSON.stringify(Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, v.n])));
function printErrorMessages(r) {
  for (const [k, v] of Object.entries(r.errors)) console.log(`- ${k} (${v.n}), the first: ${v.first}`);
}

// Closed-loop clients (1.5 x the slots), client i on hub i % hubs and deployment i % names;
// counts requests completed inside the measured window after a warm-up of one paced request and
// 2 s. Client i starts i / clients of a paced request late, so that completions do not come in
// waves that a window would cut.
async function drive(hubs, names, devices, measureSeconds) {
  const concurrency = Math.ceil(devices * slots * 1.5);
  const warm = 2000 + perRequest * 1000;
  const start = performance.now();
  const from = start + warm;
  const to = from + measureSeconds * 1000;
  let completed = 0;
  const errors = {};
  const latencies = [];
  console.error(`cluster_bench: ${concurrency} clients over ${hubs.length} hub(s) from ${new Date().toISOString()}`);
  await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
    const hub = hubs[i % hubs.length];
    const name = names[i % names.length];
    const client = new OpenAI({ baseURL: `${hub.url}/d/${name}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000,
      fetch: fetchFrom(sourceAddress(i)) });
    await sleep((i / concurrency) * perRequest * 1000);
    for (let k = 0; performance.now() < to; ++k) {
      const t0 = performance.now();
      try {
        await ask(client, name, i, k);
        const t1 = performance.now();
        if (t1 >= from && t1 < to) {
          ++completed;
          latencies.push(t1 - t0);
        }
      } catch (e) {
        noteError(errors, e);
        await sleep(100);
      }
    }
  }));
  latencies.sort((a, b) => a - b);
  return { perSecond: completed / measureSeconds, completed, errors, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

// One device's rate without a window's rounding: each of its slots' clients sends `perClient`
// requests back to back; the rate is their count over the wall time from the first start to the
// last end.
async function driveSerial(hub, name, perClient) {
  const client = new OpenAI({ baseURL: `${hub.url}/d/${name}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  const latencies = [];
  const errors = {};
  const start = performance.now();
  await Promise.all(Array.from({ length: slots }, async (_, i) => {
    for (let k = 0; k < perClient; ++k) {
      const t0 = performance.now();
      try {
        await ask(client, name, i, k);
        latencies.push(performance.now() - t0);
      } catch (e) {
        noteError(errors, e);
      }
    }
  }));
  latencies.sort((a, b) => a - b);
  const completed = latencies.length;
  return { perSecond: completed / ((performance.now() - start) / 1000), completed, errors, p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99) };
}

// One configuration: `hubCount` hubs, `devices` agents, their deployments, one measured window.
// `serialRequests` > 0: one device's rate by driveSerial instead of a window.
async function measure(label, hubCount, devices, measureSeconds = seconds, serialRequests = 0) {
  const hubs = await startHubs(hubCount, label);
  startAgents(hubs, label, devices);
  await until(`${devices} agents online`, async () => (await onlineCount(hubs[0])) >= devices, 300000, 500);
  const names = await deployAll(hubs[0], label, devices);
  await sleep(2000 + 2000 * pollSeconds); // slot reports settle
  // Hundreds of agents loading at once leave the machine busy for a while: measure after.
  await until('the machine settles', async () => os.loadavg()[0] < 2 * os.cpus().length, 180000, 2000).catch(() => {});
  const r = serialRequests > 0 ? await driveSerial(hubs[0], names[0], serialRequests)
    : await drive(hubs, names, devices, measureSeconds);
  r.hubRss = hubs.map((h) => f1(procStatus(h.child.pid).rssMiB)).join(' / ');
  await stopAll();
  return r;
}

function row(label, devices, r, base) {
  console.log(`| ${label} | ${devices} | ${f1(r.perSecond)} | ${base ? f3(r.perSecond / base) : '-'} | ` +
    `${f3(r.perSecond / (devices * deviceCapacity))} | ${f1(r.p50)} / ${f1(r.p99)} | ${r.hubRss} | ${errorCounts(r.errors)} |`);
}
const header = () => {
  console.log('| hubs | devices | completed/s | ÷ one hub (or ÷ N × one device) | ÷ N × paced capacity | latency p50 / p99 ms | hub RSS MiB | errors |');
  console.log('|---|---:|---:|---:|---:|---|---|---|');
};

// ---- parts ----------------------------------------------------------------------------------

async function partThroughput() {
  mark(`throughput: ${nDevices} devices (${deviceSim}), max_tokens ${maxTokens}, ${seconds} s windows; ` +
    `one device's paced capacity ${f2(deviceCapacity)} requests/s`);
  header();
  const one = await measure('t1', 1, nDevices);
  row('1', nDevices, one);
  const three = await measure('t3', 3, nDevices);
  row('3', nDevices, three, one.perSecond);
  printErrorMessages(one);
  printErrorMessages(three);
  console.log(`\n- three hubs ÷ one hub: ${f3(three.perSecond / one.perSecond)}`);
}

async function partHop() {
  mark(`hop: one fast device's tunnel on hub 0; ${hopRequests} requests through hub 0 and through hub 1, alternated`);
  const hubs = await startHubs(2, 'hop');
  spawn(['agent', '--hub', hubs[0].url, '--data-dir', path.join(dir, 'hop-a'), '--name', 'hop-a', '--simulate',
    'prefill=1000000,decode=100000,slots=4'], 'hop-a');
  await until('the agent online', async () => (await onlineCount(hubs[0])) >= 1, 60000);
  const [name] = await deployAll(hubs[0], 'hop', 1);
  await until('hub 1 routes to it', async () => (await json(hubs[1], `/api/v1/deployments/${name}`)).ready === 1, 30000);
  const clients = hubs.map((h) => new OpenAI({ baseURL: `${h.url}/d/${name}/v1`, apiKey: 'unused', maxRetries: 0,
    timeout: 30000, fetch: fetchFrom('127.0.0.2') }));
  const ask = async (c) => {
    const t0 = performance.now();
    await c.chat.completions.create({ model: name, max_tokens: 4, messages: [{ role: 'user', content: 'hop?' }] });
    return performance.now() - t0;
  };
  // Hub 1's registry follows the store each round (--poll-seconds): it answers within one.
  await until('hub 1 answers for it', async () => (await ask(clients[1])) > 0, 30000, 200);
  for (let i = 0; i < 50; ++i) await ask(clients[i % 2]);
  const local = [];
  const hop = [];
  const diff = [];
  for (let i = 0; i < hopRequests; ++i) {
    const first = i % 2;
    const a = await ask(clients[first]);
    const b = await ask(clients[1 - first]);
    const [l, h] = first === 0 ? [a, b] : [b, a];
    local.push(l);
    hop.push(h);
    diff.push(h - l);
  }
  for (const v of [local, hop, diff]) v.sort((x, y) => x - y);
  console.log('| path | p50 ms | p90 ms | p99 ms |');
  console.log('|---|---:|---:|---:|');
  console.log(`| hub holding the tunnel | ${f3(quantile(local, 0.5))} | ${f3(quantile(local, 0.9))} | ${f3(quantile(local, 0.99))} |`);
  console.log(`| another hub (one hop) | ${f3(quantile(hop, 0.5))} | ${f3(quantile(hop, 0.9))} | ${f3(quantile(hop, 0.99))} |`);
  console.log(`| paired difference | ${f3(quantile(diff, 0.5))} | ${f3(quantile(diff, 0.9))} | ${f3(quantile(diff, 0.99))} |`);
  await stopAll();
}

async function partFailover() {
  mark(`failover: three hubs, ${failoverAgents} agents; SIGKILL the hub holding the most`);
  const hubs = await startHubs(3, 'fo');
  startAgents(hubs, 'fo', failoverAgents);
  await until('agents online', async () => (await onlineCount(hubs[0])) >= failoverAgents, 120000, 200);
  const names = await deployAll(hubs[0], 'fo', failoverAgents);
  const counts = await until('every tunnel recorded', async () => {
    const m = await tunnelsByHub(hubs[0]);
    return Object.values(m).reduce((a, b) => a + b, 0) === failoverAgents && m;
  }, 30000);
  const victim = [...hubs].sort((a, b) => (counts[b.url] || 0) - (counts[a.url] || 0))[0];
  const survivor = hubs.find((h) => h !== victim);
  const t0 = performance.now();
  victim.child.kill('SIGKILL');
  let tunnelsMs = 0;
  await until('every agent on a live hub and every replica ready', async () => {
    const m = await tunnelsByHub(survivor);
    const onLive = Object.entries(m).filter(([url]) => url !== victim.url).reduce((a, [, n]) => a + n, 0);
    if (onLive !== failoverAgents) return false;
    if (!tunnelsMs) tunnelsMs = performance.now() - t0;
    for (const name of names) {
      const d = await json(survivor, `/api/v1/deployments/${name}`);
      if (d.ready !== d.replicas.filter((r) => !r.spare).length) return false;
    }
    return true;
  }, 120000, 100);
  const readyMs = performance.now() - t0;
  console.log(`- killed ${victim.name} holding ${counts[victim.url]} of ${failoverAgents} agents`);
  console.log(`- every agent recorded on a live hub after ${f1(tunnelsMs)} ms; every replica ready after ${f1(readyMs)} ms`);
  await stopAll();
}

async function partThousand() {
  mark(`thousand: ${nThousand} devices over three hubs against ${nThousand} x one device (same run)`);
  header();
  const one = await measure('k1', 1, 1, 0, 6);
  console.log(`| 1 (one device, ${one.completed} requests back to back) | 1 | ${f3(one.perSecond)} | - | ` +
    `${f3(one.perSecond / deviceCapacity)} | ${f1(one.p50)} / ${f1(one.p99)} | ${one.hubRss} | ${errorCounts(one.errors)} |`);
  const many = await measure('kn', 3, nThousand);
  console.log(`| 3 | ${nThousand} | ${f1(many.perSecond)} | ${f3(many.perSecond / (nThousand * one.perSecond))} | ` +
    `${f3(many.perSecond / (nThousand * deviceCapacity))} | ${f1(many.p50)} / ${f1(many.p99)} | ${many.hubRss} | ${errorCounts(many.errors)} |`);
  printErrorMessages(one);
  printErrorMessages(many);
}

console.log(`# cluster_bench: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ` +
  `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}, ` +
  `node ${process.version}, ${new Date().toISOString()}`);
try {
  if (only.has('hop')) await partHop();
  if (only.has('failover')) await partFailover();
  if (only.has('throughput')) await partThroughput();
  if (only.has('thousand')) await partThousand();
} catch (e) {
  for (const c of children) if (/hub/.test(c.name)) console.error(`--- ${c.name} (last log)\n${c.log.slice(-2000)}`);
  console.error(`cluster_bench: ${e.message}`);
  process.exitCode = 1;
} finally {
  await stopAll();
  closeHttpAgents();
}
process.exit();

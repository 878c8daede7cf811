// The fleet-scale measurements of issue 18 (docs/fleet_scale.md): a real `cellserve hub` and many
// `cellserve agent --simulate` processes on 127.0.0.1, driven through the deployment endpoint
// /d/<dep>/v1 by the official `openai` client. Four parts, each printed as a table with ratios:
//   agents   time for A simulated agents to register (10 first, then the rest) and for an
//            A-replica simulated deployment to be ready; hub RSS and threads at 0, 10, A agents.
//   scaling  completed requests/s through the deployment endpoint with 1, 10, 100 equal simulated
//            devices, against N x one device; CPU of the hub, the agents and this client.
//   gateway  latency of /d/<dep>/v1 against the replica address /d/<dep>/r/0/v1, alternated,
//            same run: p50, p99 and their difference.
//   streams  S streaming chats opened at once through /d/<dep>/v1: how many complete, hub
//            threads and RSS at the peak; first from one client address, then spread.
//   queue    the hub's CPU per completed request as more requests wait in its queue.
// Not part of CI. Every process it starts is stopped; every wait and request is bounded.
//
// Usage: node bench/fleet_scale_bench.mjs [--bin build/cli/cellserve] [--only agents,scaling,gateway,streams,queue]
//          [--agents 100] [--devices 1,10,100] [--seconds 8] [--prefill 4000] [--decode 20] [--slots 2]
//          [--max-tokens 16] [--overload 1.5] [--gateway-requests 1000] [--streams 1000]
//          [--stream-slots 32] [--stream-decode 2] [--stream-tokens 10] [--queue-devices 10]
//          [--queue-loads 1,5,20] [--budget 600]
// Quick run: --agents 20 --devices 1,10 --seconds 4 --gateway-requests 200 --streams 200 --queue-loads 1,5
// Needs tests/node_modules (cd tests && npm ci). Linux only (/proc).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { closeHttpAgents, errorKey, parseArgs, f1, f2, f3, fetchFrom, freePort, machineCpu, perAddress, procCpuSeconds, procStatus, processSet,
  quantile, sleep, sourceAddress, stop, until } from './fleet_bench_lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { default: OpenAI } = await import(path.join(here, '../tests/node_modules/openai/index.mjs'));

const args = parseArgs();
const bin = path.resolve(args.bin || 'build/cli/cellserve');
const only = new Set((args.only || 'agents,scaling,gateway,streams,queue').split(','));
const nAgents = Number(args.agents || 100);
const devices = (args.devices || '1,10,100').split(',').map(Number);
const seconds = Number(args.seconds || 8);
const prefill = Number(args.prefill || 4000);
const decode = Number(args.decode || 20);
const slots = Number(args.slots || 2);
const maxTokens = Number(args['max-tokens'] || 16);
const overload = Number(args.overload || 1.5);
const gatewayRequests = Number(args['gateway-requests'] || 1000);
const nStreams = Number(args.streams || 1000);
const streamSlots = Number(args['stream-slots'] || 32);
const streamDecode = Number(args['stream-decode'] || 2);
const streamTokens = Number(args['stream-tokens'] || 10);
const budgetSeconds = Number(args.budget || 600);
const queueDevices = Number(args['queue-devices'] || 10);
const queueLoads = (args['queue-loads'] || '1,5,20').split(',').map(Number);
const kReplicaCap = 64; // fleet/spec/deployment_spec.cpp: replicas in 1..64
for (const [k, v] of Object.entries({ nAgents, seconds, prefill, decode, slots, maxTokens, gatewayRequests, nStreams })) {
  if (!(v > 0)) throw new Error(`bad --${k}: ${v}`);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-fleet-bench-'));
const { children, killAll, spawn: spawnLogged } = processSet(bin);
process.on('exit', () => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));
// The whole run is bounded: past --budget seconds everything is stopped.
setTimeout(() => {
  console.error(`fleet_scale_bench: over the ${budgetSeconds} s budget; stopping`);
  process.exit(3);
}, budgetSeconds * 1000).unref();

// ---- processes -----------------------------------------------------------------------------

function cpuMeter(hub, agents) {
  const read = () => ({
    hub: procCpuSeconds(hub.pid),
    agents: agents.reduce((a, c) => a + procCpuSeconds(c.pid), 0),
    client: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    machine: machineCpu(),
    t: performance.now(),
  });
  const a = read();
  return () => {
    const b = read();
    const wall = (b.t - a.t) / 1000;
    return {
      hub: (b.hub - a.hub) / wall,
      agents: (b.agents - a.agents) / wall,
      client: (b.client - a.client) / wall,
      machineBusy: (b.machine.busy - a.machine.busy) / (b.machine.total - a.machine.total), // 0..1 of all cores
    };
  };
}

function openai(baseURL, localAddress, timeoutMs = 120000) {
  return new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: timeoutMs, fetch: fetchFrom(localAddress) });
}

// ---- the fleet ------------------------------------------------------------------------------

async function startHub(name) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, name), '--poll-seconds', '1'], name);
  await until('the hub', async () => (await fetch(`${url}/health`)).status === 200, 15000);
  return { url, child, name };
}

const json = async (url) => (await fetch(url)).json();
const onlineCount = async (hub) => (await json(`${hub.url}/api/v1/processors`)).processors.filter((p) => p.online).length;

function startAgents(hub, from, count, simulate) {
  const out = [];
  for (let i = from; i < from + count; ++i) {
    const name = `${hub.name}-sim${i}`;
    out.push(spawnLogged(['agent', '--hub', hub.url, '--data-dir', path.join(dir, name), '--name', name,
      '--price-per-day', '0.1', '--simulate', simulate], name));
  }
  return out;
}

const sha = 'ab'.repeat(32); // never fetched: simulated replicas download nothing
function specText(name, replicas, extra = '') {
  return `name = "${name}"\nreplicas = ${replicas}\nmax_price_per_day = 5\n${extra}` +
    `[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${sha}"\n[engine]\nsimulated = true\n`;
}
// `cellserve deploy`; resolves to { ok, out } (the CLI's message on failure).
async function deploy(hub, name, replicas, extra = '') {
  const file = path.join(dir, `${hub.name}-${name}.toml`);
  writeFileSync(file, specText(name, replicas, extra));
  try {
    const r = await promisify(execFile)(bin, ['deploy', file, '--hub', hub.url], { timeout: 30000 });
    return { ok: true, out: (r.stdout + r.stderr).trim() };
  } catch (e) {
    return { ok: false, out: ((e.stdout || '') + (e.stderr || '')).trim() || e.message };
  }
}
async function removeDeployment(hub, name) {
  await promisify(execFile)(bin, ['deployments', 'rm', name, '--hub', hub.url], { timeout: 30000 });
}
async function allReady(hub, names, limitMs) {
  await until(`${names.join(', ')} ready`, async () => {
    for (const n of names) {
      const d = await json(`${hub.url}/api/v1/deployments/${n}`);
      if (!d.replicas?.length || !d.replicas.every((r) => r.state === 'ready')) return false;
    }
    return true;
  }, limitMs);
}
// Splits n devices into deployments of at most the replica cap, equal sizes.
function split(n) {
  const k = Math.ceil(n / kReplicaCap);
  return Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));
}

// ---- figures --------------------------------------------------------------------------------

const mark = (label) => console.log(`\n## ${label}\n`);

console.log(`# fleet_scale_bench: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ` +
  `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}, ` +
  `node ${process.version}, ${new Date().toISOString()}`);
const benchStart = performance.now();

// ---- part 1: agents -------------------------------------------------------------------------

let bigFleet = null; // { hub, agents } kept for the scaling part
const deviceSim = `prefill=${prefill},decode=${decode},slots=${slots}`;

async function partAgents() {
  mark(`agents: ${nAgents} simulated agents (${deviceSim}), one hub (--poll-seconds 1)`);
  const hub = await startHub('hub-agents');
  await sleep(1000);
  const rows = [['0', '-', procStatus(hub.child.pid)]];
  const first = Math.min(10, nAgents);
  let t0 = performance.now();
  const agents = startAgents(hub, 0, first, deviceSim);
  await until(`${first} agents online`, async () => (await onlineCount(hub)) >= first, 120000);
  const t10 = (performance.now() - t0) / 1000;
  await sleep(1500);
  rows.push([String(first), f2(t10), procStatus(hub.child.pid)]);
  let tRest = 0;
  if (nAgents > first) {
    t0 = performance.now();
    agents.push(...startAgents(hub, first, nAgents - first, deviceSim));
    await until(`${nAgents} agents online`, async () => (await onlineCount(hub)) >= nAgents, 240000);
    tRest = (performance.now() - t0) / 1000;
    await sleep(1500);
    rows.push([String(nAgents), f2(tRest), procStatus(hub.child.pid)]);
  }
  // Agents whose log shows a refused or failed join (the hub caps outstanding challenges per address).
  const trouble = agents.map((a) => a.log.split('\n').find((l) => /\b(refused|failed|error|retry|429|401|503)\b/i.test(l))).filter(Boolean);

  // One deployment of all the devices if the spec allows it; else the cap's message, and as
  // many deployments of at most 64 as it takes.
  const whole = await deploy(hub, 'sim-all-probe', nAgents);
  let names;
  let deployNote;
  t0 = performance.now();
  if (whole.ok) {
    names = ['sim-all-probe'];
    deployNote = `one deployment of ${nAgents} replicas`;
  } else {
    const sizes = split(nAgents);
    names = sizes.map((_, i) => `sim${i}`);
    t0 = performance.now();
    for (let i = 0; i < sizes.length; ++i) {
      const r = await deploy(hub, names[i], sizes[i], 'queue_max = 10000\nqueue_timeout = 60\n');
      if (!r.ok) throw new Error(`deploy ${names[i]}: ${r.out}`);
    }
    deployNote = `replicas = ${nAgents} refused ("${whole.out.split('\n').pop()}"); ${sizes.length} deployments of ${sizes.join(' + ')}`;
  }
  await allReady(hub, names, 240000);
  const tReady = (performance.now() - t0) / 1000;
  await sleep(1500);
  const ready = procStatus(hub.child.pid);
  const idleMeter = cpuMeter(hub.child, agents);
  await sleep(3000);
  const idleCpu = idleMeter();
  const agentRss = agents.reduce((a, c) => a + procStatus(c.pid).rssMiB, 0);

  console.log('| agents online | seconds to join (this step) | hub RSS (MiB) | hub threads |');
  console.log('|---:|---:|---:|---:|');
  for (const [n, t, s] of rows) console.log(`| ${n} | ${t} | ${f1(s.rssMiB)} | ${s.threads} |`);
  console.log(`| ${nAgents}, all replicas ready | ${f2(tReady)} (deploy to all ready) | ${f1(ready.rssMiB)} | ${ready.threads} |`);
  const base = rows[0][2];
  const last = rows[rows.length - 1][2];
  console.log(`\n- deployment: ${deployNote}; ${nAgents} replicas ready ${f2(tReady)} s after the first deploy command`);
  console.log(`- ${nAgents} agents joined in ${f2(t10 + tRest)} s (${first} in ${f2(t10)} s, then ${nAgents - first} in ${f2(tRest)} s); ` +
    `${trouble.length} agents logged a refused or failed join${trouble.length ? ` (e.g. "${trouble[0]}")` : ''}`);
  console.log(`- per agent at the hub: ${f3((last.rssMiB - base.rssMiB) / nAgents)} MiB RSS and ` +
    `${f2((last.threads - base.threads) / nAgents)} threads (joined); with its replica ready: ` +
    `${f3((ready.rssMiB - base.rssMiB) / nAgents)} MiB, ${f2((ready.threads - base.threads) / nAgents)} threads`);
  console.log(`- idle, ${nAgents} agents and replicas ready: hub ${f3(idleCpu.hub)} cores, the agents together ${f3(idleCpu.agents)} cores (3 s)`);
  console.log(`- the ${nAgents} agent processes together: ${f1(agentRss)} MiB RSS (${f1(agentRss / nAgents)} MiB each)`);
  bigFleet = { hub, agents, names };
}

// ---- part 2: throughput scaling -------------------------------------------------------------

// Closed-loop clients against the given endpoints for warm-up + `seconds`; counts the requests
// completed inside the measured window.
async function drive(endpoints, model, concurrency, warmSeconds, measureSeconds) {
  const clients = Array.from({ length: concurrency }, (_, i) =>
    openai(endpoints[i % endpoints.length].url, sourceAddress(i), 60000));
  const start = performance.now();
  const from = start + warmSeconds * 1000;
  const to = from + measureSeconds * 1000;
  let completed = 0;
  let tokens = 0;
  const errors = {};
  const latencies = [];
  let meter = null;
  let cpu = null;
  const timer = setTimeout(() => (meter = endpoints.meter()), warmSeconds * 1000);
  const timer2 = setTimeout(() => (cpu = meter?.()), (warmSeconds + measureSeconds) * 1000);
  await Promise.all(clients.map(async (client, i) => {
    const ep = endpoints[i % endpoints.length];
    for (let k = 0; performance.now() < to; ++k) {
      const t0 = performance.now();
      try {
        const r = await client.chat.completions.create({ model: ep.model ?? model, max_tokens: maxTokens, ignore_eos: true,
          messages: [{ role: 'user', content: `client ${i} request ${k}: is this case a risk?` }] });
        const t1 = performance.now();
        if (t1 >= from && t1 < to) {
          ++completed;
          tokens += r.usage.completion_tokens;
          latencies.push(t1 - t0);
        }
      } catch (e) {
        const key = errorKey(e);
        errors[key] = (errors[key] || 0) + 1;
        await sleep(100);
      }
    }
  }));
  clearTimeout(timer);
  clearTimeout(timer2);
  latencies.sort((a, b) => a - b);
  return { perSecond: completed / measureSeconds, completed, tokens, errors, cpu, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

async function partScaling() {
  const maxN = Math.max(...devices);
  if (!bigFleet || bigFleet.agents.length < maxN) {
    if (bigFleet) await stopFleet(bigFleet);
    const hub = await startHub('hub-scaling');
    const agents = startAgents(hub, 0, maxN, deviceSim);
    await until(`${maxN} agents online`, async () => (await onlineCount(hub)) >= maxN, 240000);
    bigFleet = { hub, agents, names: [] };
  }
  const { hub, agents } = bigFleet;
  for (const n of bigFleet.names) await removeDeployment(hub, n);
  bigFleet.names = [];
  const perRequest = 30 / prefill + maxTokens / decode; // ~30 prompt tokens (chat template + text)
  mark(`scaling: completed chat requests/s through /d/<dep>/v1, devices ${deviceSim}, max_tokens ${maxTokens} ` +
    `(ignore_eos), ${overload}x their slots in closed-loop clients, ${seconds} s measured (1 device: ${3 * seconds} s) after 2 s warm-up`);
  console.log(`one device's paced capacity: ${slots} slots / ${f3(perRequest)} s = ${f2(slots / perRequest)} requests/s\n`);
  const results = [];
  for (const n of devices) {
    await sleep(500);
    const sizes = split(n);
    const names = sizes.map((_, i) => `scale${n}-${i}`);
    for (let i = 0; i < sizes.length; ++i) {
      const r = await deploy(hub, names[i], sizes[i], `queue_max = 10000\nqueue_timeout = 60\n`);
      if (!r.ok) throw new Error(`deploy ${names[i]}: ${r.out}`);
    }
    await allReady(hub, names, 240000);
    await sleep(1500); // the agents' slot reports settle
    const endpoints = names.map((name) => ({ url: `${hub.url}/d/${name}/v1`, model: name }));
    endpoints.meter = () => cpuMeter(hub.child, agents);
    const concurrency = Math.ceil(n * slots * overload);
    const peak = { threads: 0 };
    const sampler = setInterval(() => {
      const s = procStatus(hub.child.pid);
      peak.threads = Math.max(peak.threads, s.threads);
    }, 200);
    // One device completes few requests per window: measure it 3x as long, so it is a fair base.
    const window = n === 1 ? 3 * seconds : seconds;
    const r = await drive(endpoints, null, concurrency, 2, window);
    clearInterval(sampler);
    results.push({ n, deployments: sizes, concurrency, window, ...r, threads: peak.threads });
    for (const name of names) await removeDeployment(hub, name);
  }
  const one = results.find((r) => r.n === 1)?.perSecond ?? NaN;
  console.log('| devices | deployments | clients | completed (window s) | completed/s | ratio to N x one device (measured) | ' +
    'ratio to N x paced capacity | p50 / p99 latency (ms) | errors | CPU cores: hub / agents / client | machine busy | hub threads (peak) |');
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|');
  for (const r of results) {
    const c = r.cpu || {};
    console.log(`| ${r.n} | ${r.deployments.join('+')} | ${r.concurrency} | ${r.completed} (${r.window}) | ${f1(r.perSecond)} | ` +
      `${f3(r.perSecond / (r.n * one))} | ${f3(r.perSecond / (r.n * slots / perRequest))} | ${Math.round(r.p50)} / ${Math.round(r.p99)} | ` +
      `${JSON.stringify(r.errors)} | ${f2(c.hub)} / ${f2(c.agents)} / ${f2(c.client)} | ${Math.round((c.machineBusy ?? NaN) * 100)}% | ${r.threads} |`);
  }
  console.log(`\n(CPU: cores used during the measured window, from /proc/PID/stat; machine busy: all ${os.cpus().length} cores, /proc/stat, other users included)`);
}

async function stopFleet(fleet) {
  await Promise.all([...fleet.agents.map((a) => stop(a))]);
  await stop(fleet.hub.child);
}

// ---- part 5: the cost of the queue ------------------------------------------------------------
// The same 10 devices with more and more closed-loop clients, so more and more requests wait in
// the hub's queue: what one completed request costs the hub in CPU, against the queue's length.

async function partQueue() {
  const n = queueDevices;
  mark(`queue: ${n} devices (${deviceSim}), clients = ${queueLoads.join(', ')} x their ${n * slots} slots; ` +
    `hub CPU per completed request against the requests waiting at the hub`);
  const hub = await startHub('hub-queue');
  const agents = startAgents(hub, 0, n, deviceSim);
  await until(`${n} agents online`, async () => (await onlineCount(hub)) >= n, 120000);
  const r0 = await deploy(hub, 'q', n, 'queue_max = 10000\nqueue_timeout = 120\n');
  if (!r0.ok) throw new Error(`deploy q: ${r0.out}`);
  await allReady(hub, ['q'], 120000);
  await sleep(1500);
  const endpoints = [{ url: `${hub.url}/d/q/v1`, model: 'q' }];
  endpoints.meter = () => cpuMeter(hub.child, agents);
  console.log('| clients | waiting at the hub (clients - slots) | completed/s | hub CPU cores | hub CPU ms per completed request | ratio to the first row | hub threads |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  let base = NaN;
  for (const load of queueLoads) {
    const concurrency = Math.ceil(n * slots * load);
    const r = await drive(endpoints, null, concurrency, 2, seconds);
    const msPerRequest = (r.cpu.hub * 1000) / r.perSecond;
    if (!Number.isFinite(base)) base = msPerRequest;
    console.log(`| ${concurrency} | ${Math.max(0, concurrency - n * slots)} | ${f1(r.perSecond)} | ${f2(r.cpu.hub)} | ${f2(msPerRequest)} | ` +
      `${f2(msPerRequest / base)} | ${procStatus(hub.child.pid).threads} |`);
  }
  await Promise.all(agents.map((x) => stop(x)));
  await stop(hub.child);
}

// ---- part 3: gateway cost -------------------------------------------------------------------

async function partGateway() {
  mark(`gateway: /d/<dep>/v1 against the replica address /d/<dep>/r/0/v1, alternated, ${gatewayRequests} each, one client`);
  const hub = await startHub('hub-gateway');
  const agents = startAgents(hub, 0, 1, 'prefill=1000000,decode=100000,slots=4');
  await until('the agent', async () => (await onlineCount(hub)) >= 1, 60000);
  const r = await deploy(hub, 'gw', 1);
  if (!r.ok) throw new Error(`deploy gw: ${r.out}`);
  await allReady(hub, ['gw'], 60000);
  await sleep(1500);
  const endpoint = openai(`${hub.url}/d/gw/v1`, '127.0.0.2', 30000);
  const replica = openai(`${hub.url}/d/gw/r/0/v1`, '127.0.0.2', 30000);
  const messages = [{ role: 'user', content: 'Is this case a risk? Answer in one word.' }];
  const once = async (client) => {
    const t0 = performance.now();
    const c = await client.chat.completions.create({ model: 'gw', messages, max_tokens: 1 });
    if (c.choices.length !== 1) throw new Error('no answer');
    return performance.now() - t0;
  };
  for (let i = 0; i < 50; ++i) {
    await once(endpoint);
    await once(replica);
  }
  const a = [];
  const b = [];
  const diff = [];
  for (let i = 0; i < gatewayRequests; ++i) {
    // Alternate which goes first, so neither always follows the other.
    let x;
    let y;
    if (i % 2) {
      x = await once(endpoint);
      y = await once(replica);
    } else {
      y = await once(replica);
      x = await once(endpoint);
    }
    a.push(x);
    b.push(y);
    diff.push(x - y);
  }
  for (const v of [a, b, diff]) v.sort((p, q) => p - q);
  console.log('| address | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, v] of [['/d/gw/v1 (deployment endpoint)', a], ['/d/gw/r/0/v1 (replica address)', b]]) {
    console.log(`| ${name} | ${f3(quantile(v, 0.5))} | ${f3(quantile(v, 0.9))} | ${f3(quantile(v, 0.99))} | ${f3(v[v.length - 1])} |`);
  }
  console.log(`| difference of the quantiles | ${f3(quantile(a, 0.5) - quantile(b, 0.5))} | ${f3(quantile(a, 0.9) - quantile(b, 0.9))} | ` +
    `${f3(quantile(a, 0.99) - quantile(b, 0.99))} | |`);
  console.log(`| paired difference (endpoint - replica, same pair) | ${f3(quantile(diff, 0.5))} | ${f3(quantile(diff, 0.9))} | ` +
    `${f3(quantile(diff, 0.99))} | |`);
  console.log(`\n- ratio p50 endpoint / replica: ${f3(quantile(a, 0.5) / quantile(b, 0.5))}; p99: ${f3(quantile(a, 0.99) / quantile(b, 0.99))}` +
    ` (goal: added p50 < 1 ms, p99 < 5 ms)`);
  console.log('- `cellserve serve` has no simulated model (only `agent --simulate`), so the replica address (hub + tunnel + agent) is the baseline');
  await Promise.all(agents.map((x) => stop(x)));
  await stop(hub.child);
}

// ---- part 4: concurrent streams -------------------------------------------------------------

// Opens `count` streaming chats at once; resolves to the clients' own record.
async function streamsAtOnce(hub, agents, model, count, addressOf) {
  const tally = { completed: 0, broken: 0, errors: {}, streaming: 0, peakStreaming: 0, peakThreads: 0, peakRssMiB: 0 };
  const firsts = [];
  const durations = [];
  const meter = cpuMeter(hub.child, agents);
  const sampler = setInterval(() => {
    try {
      const s = procStatus(hub.child.pid);
      tally.peakThreads = Math.max(tally.peakThreads, s.threads);
      tally.peakRssMiB = Math.max(tally.peakRssMiB, s.rssMiB);
    } catch {}
  }, 50);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, i) => {
    const client = openai(`${hub.url}/d/${model}/v1`, addressOf(i), 180000);
    let started = false;
    try {
      const stream = await client.chat.completions.create({ model, stream: true, max_tokens: streamTokens, ignore_eos: true,
        messages: [{ role: 'user', content: `stream ${i}: summarise the case` }] });
      let finish = null;
      let n = 0;
      for await (const chunk of stream) {
        if (!started && chunk.choices?.[0]?.delta?.content) {
          started = true;
          firsts.push(performance.now() - t0);
          tally.peakStreaming = Math.max(tally.peakStreaming, ++tally.streaming);
        }
        if (chunk.choices?.[0]?.delta?.content) ++n;
        finish = chunk.choices?.[0]?.finish_reason ?? finish;
      }
      if (finish === 'length' && n > 0) {
        ++tally.completed;
        durations.push(performance.now() - t0);
      }
      else ++tally.broken;
    } catch (e) {
      const key = errorKey(e);
      tally.errors[key] = (tally.errors[key] || 0) + 1;
    } finally {
      if (started) --tally.streaming;
    }
  }));
  clearInterval(sampler);
  tally.seconds = (performance.now() - t0) / 1000;
  tally.cpu = meter();
  firsts.sort((a, b) => a - b);
  durations.sort((a, b) => a - b);
  tally.ttft = [quantile(firsts, 0.5), quantile(firsts, 0.99)];
  tally.duration = [quantile(durations, 0.5), quantile(durations, 0.99)];
  return tally;
}

async function partStreams() {
  const nDev = Math.ceil(nStreams / streamSlots);
  mark(`streams: ${nStreams} streaming chats at once through /d/<dep>/v1, ${nDev} simulated devices ` +
    `(slots=${streamSlots}, decode=${streamDecode}), max_tokens ${streamTokens} (ignore_eos)`);
  const hub = await startHub('hub-streams');
  const agents = startAgents(hub, 0, nDev, `prefill=100000,decode=${streamDecode},slots=${streamSlots}`);
  await until(`${nDev} agents online`, async () => (await onlineCount(hub)) >= nDev, 240000);
  for (const [i, size] of split(nDev).entries()) {
    if (i > 0) throw new Error(`more than ${kReplicaCap} devices for streams: lower --streams or raise --stream-slots`);
    const r = await deploy(hub, 'streams', size, `queue_max = ${nStreams * 2}\nqueue_timeout = 120\n`);
    if (!r.ok) throw new Error(`deploy streams: ${r.out}`);
  }
  await allReady(hub, ['streams'], 120000);
  await sleep(1500);
  const idle = procStatus(hub.child.pid);
  const spread = `${Math.ceil(nStreams / perAddress)} client addresses (127.0.0.2 ...), ${perAddress} each`;
  const beyond = Math.round(nStreams * 1.25);
  const runs = [
    ['one client address (127.0.0.1)', nStreams, () => '127.0.0.1'],
    [spread, nStreams, sourceAddress],
    [`${spread}, again`, nStreams, sourceAddress],
    [`${beyond} clients, ${Math.ceil(beyond / perAddress)} addresses`, beyond, sourceAddress],
  ];
  console.log(`hub before: ${f1(idle.rssMiB)} MiB RSS, ${idle.threads} threads; one stream takes ${f2(streamTokens / streamDecode)} s on its device\n`);
  console.log('| clients | completed | broken streams | errors (status: count) | peak streaming at once | seconds | ' +
    'first token p50 / p99 (s) | stream p50 / p99 (s) | CPU cores: hub / agents / client | machine busy | hub peak threads | hub peak RSS (MiB) | hub after: threads, RSS |');
  console.log('|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|');
  for (const [label, count, addressOf] of runs) {
    const t = await streamsAtOnce(hub, agents, 'streams', count, addressOf);
    // Close the clients' keep-alive connections (each holds a hub thread while open), then look.
    closeHttpAgents();
    await sleep(3000);
    const after = procStatus(hub.child.pid);
    const c = t.cpu;
    console.log(`| ${label} | ${t.completed} / ${count} | ${t.broken} | ${JSON.stringify(t.errors)} | ${t.peakStreaming} | ${f1(t.seconds)} | ` +
      `${f2(t.ttft[0] / 1000)} / ${f2(t.ttft[1] / 1000)} | ${f2(t.duration[0] / 1000)} / ${f2(t.duration[1] / 1000)} | ` +
      `${f2(c.hub)} / ${f2(c.agents)} / ${f2(c.client)} | ${Math.round(c.machineBusy * 100)}% | ${t.peakThreads} | ${f1(t.peakRssMiB)} | ${after.threads}, ${f1(after.rssMiB)} MiB |`);
  }
  await Promise.all(agents.map((x) => stop(x)));
  await stop(hub.child);
}

// ---- run ------------------------------------------------------------------------------------

try {
  if (only.has('agents')) await partAgents();
  if (only.has('scaling')) await partScaling();
  if (bigFleet) {
    await stopFleet(bigFleet);
    bigFleet = null;
  }
  if (only.has('gateway')) await partGateway();
  if (only.has('streams')) await partStreams();
  if (only.has('queue')) await partQueue();
} catch (e) {
  console.error(`fleet_scale_bench: ${e.stack || e}`);
  for (const c of children) if (/hub/.test(c.name)) console.error(`--- ${c.name} (last log)\n${c.log.slice(-2000)}`);
  process.exitCode = 1;
} finally {
  await Promise.all([...children].map((c) => stop(c)));
  closeHttpAgents();
}
console.log(`\n(total ${f1((performance.now() - benchStart) / 1000)} s)`);

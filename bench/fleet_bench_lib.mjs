// What the fleet benchmarks share (fleet_scale_bench.mjs, cluster_bench.mjs): child processes that
// are always stopped, polling with a limit, /proc readings, HTTP from chosen loopback source
// addresses (the hub admits at most 64 connections per client address), quantiles and formats.
// Linux only (/proc). Not part of CI.
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// `--name value` pairs of the command line (a flag with no value: 'true').
export function parseArgs(argv = process.argv.slice(2)) {
  return Object.fromEntries(argv.reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
    return acc;
  }, []));
}

// The processes a benchmark starts: spawn(argv, name) runs `bin`, keeping the tail of stderr in
// .log (and all of it in logDir/NAME.log when a folder is given); killAll() on exit; stop(child)
// is SIGTERM then SIGKILL after 10 s.
export function processSet(bin, logDir = '') {
  const children = new Set();
  const killAll = () => {
    for (const c of children) {
      try {
        c.kill('SIGCONT');
        c.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  // `program`: another executable than `bin` (bench/agent_swarm).
  const spawnLogged = (argv, name, program = bin) => {
    const child = spawn(program, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.log = '';
    child.stderr.on('data', (d) => (child.log = (child.log + d.toString()).slice(-4000)));
    if (logDir) child.stderr.pipe(createWriteStream(path.join(logDir, `${name}.log`)));
    child.name = name;
    children.add(child);
    child.on('exit', () => children.delete(child));
    return child;
  };
  return { children, killAll, spawn: spawnLogged };
}

export async function stop(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(timer);
}

export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export async function until(what, probe, limitMs, everyMs = 50) {
  const start = Date.now();
  for (;;) {
    const v = await probe().catch(() => null);
    if (v) return v;
    if (Date.now() - start > limitMs) throw new Error(`timed out after ${limitMs / 1000} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

// /proc/PID/status: resident memory (MiB) and thread count.
export function procStatus(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssMiB: Number(s.match(/^VmRSS:\s+(\d+)/m)[1]) / 1024, threads: Number(s.match(/^Threads:\s+(\d+)/m)[1]) };
}
// CPU seconds (user + system) a process has used; /proc/PID/stat fields 14 and 15.
export const clockTicks = 100; // sysconf(_SC_CLK_TCK) on Linux x86-64 and aarch64
export function procCpuSeconds(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / clockTicks;
  } catch {
    return 0; // exited
  }
}
// The machine's busy CPU seconds and total CPU seconds so far (/proc/stat, all cores).
export function machineCpu() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / clockTicks, total: total / clockTicks };
}

// ---- HTTP from chosen loopback source addresses -----------------------------------------------
// To hold more than 64 connections from one machine, clients are spread over source addresses
// 127.0.0.2, 127.0.0.3, ... (all of 127/8 is loopback). A fetch() over node:http with such an
// agent, for the openai client.
const httpAgents = new Map();
function httpAgent(localAddress) {
  if (!httpAgents.has(localAddress)) {
    httpAgents.set(localAddress, new http.Agent({ keepAlive: true, localAddress, maxSockets: Infinity, keepAliveMsecs: 1000 }));
  }
  return httpAgents.get(localAddress);
}
export function fetchFrom(localAddress) {
  const agent = httpAgent(localAddress);
  return (url, init = {}) => new Promise((resolve, reject) => {
    const u = new URL(typeof url === 'string' ? url : url.url);
    const headers = {};
    new Headers(init.headers || {}).forEach((v, k) => (headers[k] = v));
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: init.method || 'GET',
      headers, agent, signal: init.signal || undefined }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) h.append(k, Array.isArray(v) ? v.join(', ') : String(v));
      const empty = res.statusCode === 204 || res.statusCode === 304 || init.method === 'HEAD';
      resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, statusText: res.statusMessage, headers: h }));
    });
    req.on('error', reject);
    req.end(init.body ?? undefined);
  });
}
// Closes every kept-alive client connection (between parts, and at the end so node can exit).
export function closeHttpAgents() {
  for (const a of httpAgents.values()) a.destroy();
  httpAgents.clear();
}
// The i-th of many clients' source address, at most `perAddress` clients on each.
export const perAddress = 48;
export const sourceAddress = (i) => `127.0.0.${2 + Math.floor(i / perAddress)}`;
// What a failed request counts as: its HTTP status, else the socket error's code.
export function errorKey(e) {
  if (e.status) return String(e.status);
  let c = e;
  while (c?.cause) c = c.cause;
  return String(c?.code ?? c?.name ?? e.name);
}

// ---- figures --------------------------------------------------------------------------------
export function quantile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
export const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');
export const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');
export const f3 = (x) => (Number.isFinite(x) ? x.toFixed(3) : '-');

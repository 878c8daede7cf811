// What the fleet suites share (fleet, simulate, gateway, hostile): free ports, logged child
// processes that are always stopped, and polling with a limit.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { bin } from './harness.mjs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every process a suite starts; killed if the suite exits without stopping them.
export const children = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Starts `file` (default: cellserve) with `args` (and `env`, default this process's); .log
// collects stderr, .out stdout, and .closed turns true once it exited and its output is drained.
export function spawnLogged(args, name, file = bin, env = process.env) {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  child.log = '';
  child.out = '';
  child.closed = false;
  child.stdout.on('data', (d) => (child.out += d.toString()));
  child.stderr.on('data', (d) => (child.log += d.toString()));
  child.on('close', () => (child.closed = true));
  child.name = name;
  children.push(child);
  return child;
}

// Stops `child` (resuming it first, should a test have stopped it), SIGKILL after 10 s.
export async function stop(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGCONT');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(timer);
}

// Polls `probe` until it returns a truthy value (a probe that throws counts as not yet) or
// `limitMs` passes.
export async function until(what, probe, limitMs = 60000) {
  const start = Date.now();
  for (;;) {
    const v = await probe().catch(() => null);
    if (v) return v;
    if (Date.now() - start > limitMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

// The exit code once `child` has exited and its output is drained ('close', not 'exit', which
// can come before the last output).
export const exitOf = (child) =>
  child.closed ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.on('close', (code) => resolve(code)));

// Runs `body(dir)` in a fresh folder; on a failure prints the tail of every process's log; always
// stops every process the suite started and removes the folder.
export async function inTempFleet(prefix, body) {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    await body(dir);
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
}

// Starts a hub closed by `adminKey` (kept in DIR/admin.key, 0600) on a free port, with the suites'
// short poll interval plus `extraArgs`, and waits until it answers /health. `cli(...args)` runs
// the real `cellserve` against it as the admin.
export async function startClosedHub(dir, adminKey, extraArgs = []) {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, `${adminKey}\n`, { mode: 0o600 });
  const env = { ...process.env, CELLSERVE_HUB_KEY: adminKey };
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8', env });
  const hubProcess = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
    '--poll-seconds', '0.3', '--api-key-file', keyFile, ...extraArgs], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
  return { port, hub, cli, env, process: hubProcess };
}

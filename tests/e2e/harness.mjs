// Starts a real `cellserve serve` on 127.0.0.1 for a test file and stops it afterwards.
// Environment: CELLSERVE_BIN (the binary), CELLSERVE_TESTDATA (../shared/testdata).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';

export const testdata = process.env.CELLSERVE_TESTDATA || '';
export const bin = process.env.CELLSERVE_BIN || '';

// Why the suite cannot run here, or false when it can. Never '': node:test treats any string,
// even an empty one, as a skip message, and then reports the test as skipped even though it ran
// (and hides its failure).
export function skipReason() {
  if (!bin || !existsSync(bin)) return 'CELLSERVE_BIN is not set to the cellserve binary';
  if (!testdata || !existsSync(path.join(testdata, 'models'))) return 'shared testdata is absent';
  return false;
}

export function model(name) {
  return path.join(testdata, 'models', name);
}

// A running server: .url, .port, .stop(), .stderr (what it logged so far).
export async function startServer(modelName, args = [], env = {}) {
  const child = spawn(bin, ['serve', '-m', model(modelName), '--port', '0', '--threads', '2', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const server = { child, stderr: '', port: 0, url: '' };
  const listening = new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      server.stderr += chunk.toString();
      const m = server.stderr.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && !server.port) {
        server.port = Number(m[1]);
        resolve();
      }
    });
    child.on('exit', (code) => reject(new Error(`cellserve exited (${code}) before listening:\n${server.stderr}`)));
  });
  await listening;
  server.url = `http://127.0.0.1:${server.port}`;
  server.stop = async () => {
    if (child.exitCode !== null) return child.exitCode;
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  process.on('exit', () => child.kill('SIGKILL'));
  // Ready when /health says 200, and once the "model … ready" line it logs just after has been
  // read: /health's answer and stderr arrive on different pipes, so without it a test could
  // look at .stderr before the start-up lines (embeddings, autotune) reached it.
  for (let i = 0; i < 600; ++i) {
    try {
      const r = await fetch(`${server.url}/health`);
      if (r.status === 200) {
        for (let j = 0; j < 100 && !/ model .* ready \(/.test(server.stderr); ++j) await new Promise((r) => setTimeout(r, 20));
        return server;
      }
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  await server.stop();
  throw new Error(`server never became ready:\n${server.stderr}`);
}

export function client(server, apiKey = 'unused') {
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
}

// Raw POST returning {status, headers, json, text}.
export async function post(server, pathname, body, headers = {}) {
  const r = await fetch(`${server.url}${pathname}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, headers: r.headers, json, text };
}

export async function metrics(server, headers = {}) {
  const r = await fetch(`${server.url}/metrics`, { headers });
  return r.text();
}

export function metricValue(text, name) {
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

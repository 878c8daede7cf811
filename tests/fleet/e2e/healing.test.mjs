// Healing end to end (issue 48, item 4): real hubs and simulated agents on 127.0.0.1, driven by
// the official `openai` client.
// - A replica that answers 500 to everything (and one that answers 429), while its health looks
//   fine, costs the users nothing while a healthy replica can take their requests: every request
//   succeeds, the hub counts the refusals per replica and ejects the sick ones.
// - A hundred agents behind one address (a NAT) join one TLS listener with the hub's default
//   flags: their tunnels are not clients, so the per-IP cap (64) is left to clients.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

const json = async (url) => (await fetch(url)).json();
const sha = 'ab'.repeat(32); // never fetched: simulated agents download nothing

test('healing: a replica answering 500 or 429 to everything costs the users nothing', { skip: skipReason() }, async () => {
  await inTempFleet('cs-heal-', async (dir) => {
    const port = await freePort();
    const hub = `http://127.0.0.1:${port}`;
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    // Two sick devices and one healthy; the sick ones register, load and report healthy.
    const devices = { 'sick-500': ',fail=500', 'sick-429': ',fail=429', healthy: '' };
    for (const [name, fail] of Object.entries(devices)) {
      spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name, '--price-per-day', '0.1',
        '--simulate', `prefill=4000,decode=400,slots=4${fail}`], name);
    }
    await until('three agents', async () => (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 3);
    const spec = path.join(dir, 'sim.toml');
    writeFileSync(spec, `name = "sim"\nreplicas = 3\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${sha}"\n[engine]\nsimulated = true\nparallel = 4\n`);
    execFileSync(bin, ['deploy', spec, '--hub', hub], { stdio: 'ignore' });
    const ready = await until('three replicas ready', async () => {
      const d = await json(`${hub}/api/v1/deployments/sim`);
      return d.ready === 3 && d;
    });
    const nameOf = Object.fromEntries((await json(`${hub}/api/v1/processors`)).processors.map((p) => [p.id, p.name]));
    const indexOf = Object.fromEntries(ready.replicas.map((r) => [nameOf[r.processor], r.index]));

    const client = new OpenAI({ baseURL: `${hub}/d/sim/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
    const messages = [{ role: 'user', content: 'Is this case fraud?' }];
    const outcomes = { answered: 0, failed: [] };
    // 60 requests, 6 at a time, whole and streamed, counted from the client's own records.
    for (let round = 0; round < 10; round++) {
      await Promise.all([0, 1, 2, 3, 4, 5].map(async (i) => {
        try {
          if (i % 2 === 0) {
            const r = await client.chat.completions.create({ model: 'sim', messages, max_tokens: 6 });
            assert.ok(r.choices[0].message.content.length > 0);
          } else {
            let text = '';
            for await (const chunk of await client.chat.completions.create({ model: 'sim', messages, max_tokens: 6, stream: true })) {
              text += chunk.choices[0].delta.content ?? '';
            }
            assert.ok(text.length > 0);
          }
          outcomes.answered++;
        } catch (e) {
          outcomes.failed.push(`${e.status ?? ''} ${e.message}`);
        }
      }));
    }
    assert.deepEqual(outcomes.failed, [], 'no user saw a replica failure');
    assert.equal(outcomes.answered, 60);

    // The hub counted each sick replica's refusals against it, and ejected them.
    const metrics = await (await fetch(`${hub}/metrics`)).text();
    const count = (name, replica, status) => {
      const m = metrics.match(new RegExp(`^cellserve_hub_${name}\\{deployment="sim",replica="${replica}"` +
        `${status ? `,status="${status}"` : ''}\\} (\\d+)$`, 'm'));
      return m ? Number(m[1]) : 0;
    };
    const sick500 = indexOf['sick-500'];
    const sick429 = indexOf['sick-429'];
    const healthy = indexOf.healthy;
    assert.ok(sick500 !== undefined && sick429 !== undefined && healthy !== undefined, JSON.stringify(indexOf));
    assert.ok(count('replica_refusals_total', sick500, 500) >= 1, metrics);
    assert.ok(count('replica_refusals_total', sick429, 429) >= 1, metrics);
    assert.equal(count('replica_refusals_total', healthy, 500) + count('replica_refusals_total', healthy, 429), 0);
    assert.ok(count('ejections_total', sick500) >= 1, 'the replica answering 500 was ejected');
    assert.ok(count('ejections_total', sick429) >= 1, 'the replica answering 429 was ejected');
    assert.equal(count('ejections_total', healthy), 0);
    console.log(`60/60 answered; refusals: 500 x ${count('replica_refusals_total', sick500, 500)}, ` +
      `429 x ${count('replica_refusals_total', sick429, 429)}; ejections ${count('ejections_total', sick500)} and ` +
      `${count('ejections_total', sick429)}`);
  });
});

// bench/agent_swarm runs the hundred agents in one process; it is built with bench/ (the default).
const swarm = process.env.CELLSERVE_AGENT_SWARM;
const swarmSkip = swarm ? false : 'CELLSERVE_AGENT_SWARM is not set to build/bench/agent_swarm (built with -DCELLSERVE_BENCH=ON)';

test('healing: a hundred agents behind one address join one TLS listener with default flags', { skip: skipReason() || swarmSkip }, async () => {
  await inTempFleet('cs-heal-tls-', async (dir) => {
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key,
      '-out', cert, '-days', '1', '-subj', '/CN=cellserve-test', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const port = await freePort();
    const hub = `https://127.0.0.1:${port}`;
    const curl = (url) => execFileSync('curl', ['-sS', '--max-time', '10', '--cacert', cert, url],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    // Default flags: --max-connections-per-ip 64, --max-connections 1024.
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--tls-cert', cert,
      '--tls-key', key], 'tls-hub');
    await until('the TLS hub', async () => JSON.parse(curl(`${hub}/health`)).status === 'ok', 15000);
    const agents = spawnLogged(['--hub', hub, '--hub-ca', cert, '--data-dir', path.join(dir, 'swarm'), '--count', '100',
      '--simulate', 'prefill=4000,decode=400,slots=1'], 'swarm', swarm);
    const online = async () => JSON.parse(curl(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length;
    await until('100 agents online through one TLS listener', async () => (await online()) === 100, 120000);
    // Their 100 tunnels from 127.0.0.1 leave its 64 client connections free.
    for (let i = 0; i < 5; i++) assert.equal(JSON.parse(curl(`${hub}/health`)).status, 'ok');
    assert.equal(await online(), 100, 'every agent is still online');
    await stop(agents);
  });
});

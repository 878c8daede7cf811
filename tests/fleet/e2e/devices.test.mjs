// Device awareness end to end (docs/phones.md): a real hub and `cellserve agent` processes on
// 127.0.0.1 that read fixture sysfs and /proc trees of real phones (tests/fleet/fixtures/devices,
// through the test-only --device-root). A discharging phone below --min-battery takes no new
// requests and says why, gets no replica, and resumes once it charges; a charging_only
// deployment goes to the charging phone; `fleet ls` shows battery, heat, throttling and free
// memory; a real model larger than a phone's free memory is refused before it is loaded; and an
// agent with --dns finds its hub by name through a DNS server of the test's own, as on Android,
// which has no /etc/resolv.conf.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import { copyFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/devices');

async function api(hub, pathname) {
  const r = await fetch(`${hub}${pathname}`);
  return { status: r.status, json: await r.json() };
}

// `name`: a host name agents dial the hub by (its --public-url): an open hub answers other names
// than addresses and localhost only when told they are its own.
async function startHub(dir, name = '') {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2',
    ...(name ? ['--public-url', `http://${name}:${port}`] : [])], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 10000);
  return hub;
}

const processor = async (hub, name) => (await api(hub, '/api/v1/processors')).json.processors.find((p) => p.name === name);

test('devices: a low battery pauses a phone, charging resumes it, and placement follows the state', { skip: skipReason() || false }, async () => {
  await inTempFleet('cs-devices-', async (dir) => {
    // The hot phone's tree is a copy: the test plugs it in by rewriting its battery status.
    const galaxy = path.join(dir, 'galaxy');
    cpSync(path.join(fixtures, 'galaxy-discharging-hot'), galaxy, { recursive: true });
    const sha = 'ab'.repeat(32); // simulated deployments download nothing
    const hub = await startHub(dir);
    const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
    const agent = (name, price, root) => spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
      '--price-per-day', String(price), '--device-root', root, '--min-battery', '20', '--simulate', 'prefill=4000,decode=400,slots=2'], name);
    const hot = agent('galaxy', 0.05, galaxy); // the cheapest, but at 15 % and discharging
    agent('pixel', 0.2, path.join(fixtures, 'pixel-charging'));
    agent('hidden', 0.1, path.join(fixtures, 'hidden-battery'));

    const g = await until('the galaxy paused', async () => {
      const p = await processor(hub, 'galaxy');
      return p?.online && p.device?.paused && p;
    });
    assert.equal(g.device.battery_percent, 15);
    assert.equal(g.device.charging, false);
    assert.equal(g.device.battery_temp_c, 45.2);
    assert.equal(g.device.max_thermal_c, 49.1);
    assert.ok(Math.abs(g.device.cpu_freq_ratio - 0.6) < 0.01, JSON.stringify(g.device));
    assert.match(g.device.paused, /battery 15% below 20% and not charging/);
    const pixel = await until('the pixel reporting', async () => (await processor(hub, 'pixel'))?.device?.charging === true);
    assert.ok(pixel);
    // Online comes with the tunnel; `device` stays {} until the agent's first status report.
    const hidden = await until('the hidden phone reporting', async () => {
      const p = await processor(hub, 'hidden');
      return p?.online && p.device?.mem_available_bytes > 0 && p;
    });
    assert.equal(hidden.device.battery_percent, undefined, 'a hidden battery is unknown, not 0');
    assert.match(hot.log, /taking no new requests: battery 15% below 20%/);

    const table = cli('fleet', 'ls');
    assert.match(table, /battery 15% discharging, 49\.1 °C, throttled to 60%, [0-9.]+ GiB free, paused: battery 15% below 20%/);
    assert.match(table, /battery 64% charging/);

    // Only the charging phone may take a charging_only deployment; the paused phone takes none.
    const deploy = (name, extra = '') => {
      const spec = path.join(dir, `${name}.toml`);
      writeFileSync(spec, `name = "${name}"\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${sha}"\n` +
        `${extra}[engine]\nsimulated = true\n`);
      cli('deploy', spec);
    };
    deploy('plugged', '[requirements]\ncharging_only = true\n');
    const plugged = await until('plugged ready', async () => {
      const { json } = await api(hub, '/api/v1/deployments/plugged');
      return json.ready === 1 && json;
    });
    assert.equal(plugged.replicas[0].processor, (await processor(hub, 'pixel')).id, 'the cheaper phones are not charging');
    deploy('any');
    const any = await until('any ready', async () => {
      const { json } = await api(hub, '/api/v1/deployments/any');
      return json.ready === 1 && json;
    });
    const hiddenId = (await processor(hub, 'hidden')).id;
    assert.equal(any.replicas[0].processor, hiddenId, 'the paused galaxy is cheaper but takes no replica');

    // Plugged in: it takes requests again, and the next deployment goes to it.
    writeFileSync(path.join(galaxy, 'sys/class/power_supply/battery/status'), 'Charging\n');
    await until('the galaxy resumed', async () => {
      const p = await processor(hub, 'galaxy');
      return p.device.charging === true && !p.device.paused;
    });
    assert.match(hot.log, /taking new requests again/);
    deploy('later');
    const later = await until('later ready', async () => {
      const { json } = await api(hub, '/api/v1/deployments/later');
      return json.ready === 1 && json;
    });
    assert.equal(later.replicas[0].processor, (await processor(hub, 'galaxy')).id);
    const oa = new OpenAI({ baseURL: `${hub}/d/later/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
    const answer = await oa.chat.completions.create({ model: 'later', messages: [{ role: 'user', content: 'RISK_LEVEL?' }], max_tokens: 4 });
    assert.equal(answer.usage.completion_tokens, 4);

    // Discharging again: its replica stays, but the endpoint sends it nothing and says why.
    writeFileSync(path.join(galaxy, 'sys/class/power_supply/battery/status'), 'Discharging\n');
    await until('the galaxy paused again', async () => !!(await processor(hub, 'galaxy')).device.paused);
    await assert.rejects(
      oa.chat.completions.create({ model: 'later', messages: [{ role: 'user', content: 'RISK_LEVEL?' }], max_tokens: 4 }),
      (e) => e.status === 503 && /1 ready, 1 of them on a paused device/.test(e.message));
  });
});

test('devices: a model larger than the free memory is refused before loading, with the numbers', { skip: skipReason() || false }, async () => {
  await inTempFleet('cs-devices-mem-', async (dir) => {
    const hub = await startHub(dir);
    const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
    mkdirSync(path.join(dir, 'hub', 'files'), { recursive: true });
    const source = model('qwen3-tiny-f32.gguf'); // 7.0 MiB of weights; the fixture has 6 MiB free
    copyFileSync(source, path.join(dir, 'hub', 'files', 'model.gguf'));
    const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
    spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'small'), '--name', 'small',
      '--device-root', path.join(fixtures, 'tiny-memory'), '--benchmark-shape', '', '--no-autotune'], 'small');
    await until('the agent online', async () => (await processor(hub, 'small'))?.online);
    const spec = path.join(dir, 'big.toml');
    writeFileSync(spec, `name = "big"\nmax_price_per_day = 5\n[model]\nurl = "${hub}/files/model.gguf"\nsha256 = "${sha}"\n` +
      '[engine]\nparallel = 1\nctx_size = 256\n');
    cli('deploy', spec);
    const refused = await until('the refusal', async () => {
      const { json } = await api(hub, '/api/v1/deployments/big');
      return json.replicas.find((r) => /insufficient_memory/.test(r.detail ?? ''));
    }, 120000);
    assert.match(refused.detail, /insufficient_memory: needs [0-9.]+ MiB \(weights [0-9.]+ MiB \+ KV cache [0-9.]+ MiB \+ scratch [0-9.]+ MiB\); 6 MiB free/);
    assert.match(cli('deployments', 'show', 'big'), /insufficient_memory/);
  });
});

// A DNS server on 127.0.0.1 answering A queries for `name` with 127.0.0.1 (NXDOMAIN otherwise,
// no data for other types); .queries counts what it was asked.
async function tinyDns(name) {
  const socket = dgram.createSocket('udp4');
  socket.queries = 0;
  socket.on('message', (q, from) => {
    if (q.length < 12) return;
    socket.queries++;
    let i = 12;
    const labels = [];
    while (i < q.length && q[i] !== 0) {
      labels.push(q.subarray(i + 1, i + 1 + q[i]).toString('latin1').toLowerCase());
      i += 1 + q[i];
    }
    const qtype = q.readUInt16BE(i + 1);
    const known = labels.join('.') === name;
    const header = Buffer.from(q.subarray(0, i + 5));
    header[2] = 0x81;
    header[3] = known ? 0x80 : 0x83;
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(known && qtype === 1 ? 1 : 0, 6);
    header.writeUInt32BE(0, 8);
    const answer = known && qtype === 1 ? Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]) : Buffer.alloc(0);
    socket.send(Buffer.concat([header, answer]), from.port, from.address);
  });
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket;
}

test('devices: --dns finds the hub by name where the system has no resolver configuration', { skip: skipReason() || false }, async () => {
  const dns = await tinyDns('hub.cellserve.test');
  await inTempFleet('cs-devices-dns-', async (dir) => {
    const hub = await startHub(dir, 'hub.cellserve.test');
    const port = new URL(hub).port;
    const agent = spawnLogged(['agent', '--hub', `http://hub.cellserve.test:${port}`, '--data-dir', path.join(dir, 'named'),
      '--name', 'named', '--dns', `127.0.0.1:${dns.address().port}`, '--simulate', 'prefill=4000,decode=400,slots=1'], 'named');
    await until('the agent online through its DNS server', async () => (await processor(hub, 'named'))?.online);
    assert.ok(dns.queries >= 1, 'the name came from the test\'s DNS server');
    await stop(agent);
    // A malformed --dns is refused at start, in one line.
    const bad = spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'bad'), '--dns', 'dns.google',
      '--simulate', 'slots=1'], 'bad');
    assert.notEqual(await new Promise((resolve) => bad.on('close', resolve)), 0);
    assert.match(bad.log, /--dns dns\.google: expected an IP address/);
    assert.equal(bad.log.trim().split('\n').length, 1, bad.log);
  }).finally(() => dns.close());
});

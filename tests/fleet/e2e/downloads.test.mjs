// What a device's downloads may reach, and what its download token opens (issue 43, items 13 and
// 6), performed as the attacks: a hub whose deployment names a loopback service that is not the
// hub (SSRF: the device's own services, its network, a metadata endpoint), and a device owner who
// reads the download token off their own wire and uses it for another deployment's model, and
// again after `fleet revoke`. One closed hub and one real agent, which reaches the hub through a
// TCP relay in this test: the device owner's view of their own traffic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { freePort, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

// A TCP relay to 127.0.0.1:`port` that remembers the last download token (cs1.<id>.<expiry>.<mac>)
// seen in either direction.
async function startSniffingRelay(port) {
  const relay = { token: '', sockets: new Set() };
  relay.server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const [from, to] of [[client, upstream], [upstream, client]]) {
      let tail = '';
      from.on('data', (chunk) => {
        tail = (tail + chunk.toString('latin1')).slice(-8192);
        const found = /cs1\.[0-9a-f]{64}\.\d+\.[0-9a-f]{64}/.exec(tail);
        if (found) relay.token = found[0];
        to.write(chunk);
      });
      from.on('end', () => to.end());
      from.on('error', () => to.destroy());
      relay.sockets.add(from);
    }
  });
  await new Promise((resolve) => relay.server.listen(0, '127.0.0.1', resolve));
  relay.url = `http://127.0.0.1:${relay.server.address().port}`;
  relay.close = () => {
    relay.sockets.forEach((s) => s.destroy());
    relay.server.close();
  };
  return relay;
}

// The internal service a hub's URL must not reach: it answers every request with `body`.
async function startInternalService(body) {
  const service = { requests: 0 };
  service.server = http.createServer((req, res) => {
    service.requests += 1;
    res.writeHead(200, { 'content-length': body.length });
    res.end(body);
  });
  await new Promise((resolve) => service.server.listen(0, '127.0.0.1', resolve));
  service.url = `http://127.0.0.1:${service.server.address().port}`;
  return service;
}

test('downloads reach only public addresses and the hub; a download token opens only what its device serves, until revoked', { skip: skipReason() }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-downloads-'));
  const hubDir = path.join(dir, 'hub');
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, 'downloads-admin-key\n', { mode: 0o600 });
  const env = { ...process.env, CELLSERVE_HUB_KEY: 'downloads-admin-key' };
  const admin = { authorization: 'Bearer downloads-admin-key' };
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { env, encoding: 'utf8' });
  const started = [];
  const secret = Buffer.from(`internal-only ${Math.random()}\n`);
  const internal = await startInternalService(secret);
  let relay;
  try {
    // Agents reach the hub through the relay: its URL is one the hub answers to (--public-url), so
    // their tunnel signatures, which name the origin they dialed, are accepted.
    relay = await startSniffingRelay(port);
    started.push(spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3',
      '--api-key-file', keyFile, '--public-url', relay.url], 'hub'));
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const source = model('qwen3-tiny-f32.gguf');
    copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
    copyFileSync(source, path.join(hubDir, 'files', 'theirs.gguf'));  // another deployment's model
    const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
    const specs = path.join(dir, 'specs.json');
    writeFileSync(specs, JSON.stringify({ ram_bytes: 16 * 2 ** 30 }));
    const enroll = cli('hub', 'tokens', 'create', '--uses', '1').trim();
    // The device joined the hub at the relay's address: that origin, and only it, is its hub.
    started.push(spawnLogged(['agent', '--hub', relay.url, '--data-dir', path.join(dir, 'agent'), '--name', 'phone',
      '--specs-override', specs, '--benchmark-shape', '', '--no-autotune', '--enroll', enroll], 'agent'));
    const deploy = (name, toml) => {
      const spec = path.join(dir, `${name}.toml`);
      writeFileSync(spec, `name = "${name}"\nmax_price_per_day = 1\n${toml}`);
      cli('deploy', spec);
    };
    const show = async (name) => (await fetch(`${hub}/api/v1/deployments/${name}`, { headers: admin })).json();

    // SSRF: the hub names a loopback service that is not the hub. Refused before a byte is sent,
    // and the replica's detail says so without echoing anything fetched.
    const secretSha = createHash('sha256').update(secret).digest('hex');
    deploy('probe', `[model]\nurl = "${internal.url}/latest/meta-data"\nsha256 = "${'ab'.repeat(32)}"\n` +
      '[engine]\nparallel = 1\nctx_size = 256\n');
    // Its detail, while the device reports it failed or once the hub looks for another device.
    const probed = await until('the probe replica failed', async () =>
      (await show('probe')).replicas.find((r) => /download/.test(r.detail)) ?? null, 60000);
    assert.match(probed.detail, /refused to connect to 127\.0\.0\.1, a loopback address/);
    assert.equal(internal.requests, 0, 'the internal service was reached');
    assert.ok(!JSON.stringify(await show('probe')).includes(secretSha), 'the fetched digest reached the API');

    // The device's own deployment downloads from its hub (loopback, but the hub it joined), with
    // its token; another deployment's model is not assigned to it (no device has 100000 GiB).
    deploy('mine', `[model]\nurl = "${relay.url}/files/model.gguf"\nsha256 = "${sha}"\n` +
      '[engine]\nparallel = 1\nctx_size = 256\n');
    deploy('theirs', `[model]\nurl = "${relay.url}/files/theirs.gguf"\nsha256 = "${sha}"\n` +
      '[requirements]\nmin_ram = "100000G"\n[engine]\nparallel = 1\nctx_size = 256\n');
    await until('mine ready', async () => (await show('mine')).ready === 1, 60000);
    assert.match(relay.token, /^cs1\./, 'the download token was seen on the device\'s own wire');
    const fetchWith = async (file) => {
      const r = await fetch(`${hub}/files/${file}`, { headers: { authorization: `Bearer ${relay.token}`, range: 'bytes=0-15' } });
      await r.arrayBuffer();
      return r.status;
    };
    assert.equal(await fetchWith('model.gguf'), 206, 'the token opens what its device serves');
    assert.equal(await fetchWith('theirs.gguf'), 403, 'the token opened another deployment\'s model');
    assert.equal(await fetchWith('nothing.gguf'), 403);

    // Revoked: the token it still holds opens nothing.
    const phone = JSON.parse(cli('fleet', 'ls', '--json')).processors.find((p) => p.name === 'phone');
    cli('fleet', 'revoke', phone.id);
    assert.equal(await fetchWith('model.gguf'), 403, 'the token outlived fleet revoke');
    for (const c of started) assert.ok(!c.log.includes(relay.token), `${c.name} logged the token`);
  } catch (e) {
    for (const c of started) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(started.map((c) => stop(c)));
    relay?.close();
    internal.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

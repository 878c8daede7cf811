// The attested key is the device's key, and revocation is live (issue 45, items 3 and 4):
// a device is pinned to the key its first attestation proved; every later handshake must be signed
// by that key, so a second data dir relaying to the same phone and a stolen identity with another
// phone's keystore are both kept out of attested_only deployments; a key change waits for
// `fleet approve-key`; the status list is fetched on a schedule and a change takes a connected
// device's attested_only replicas at once, without a reconnect; `--attestation-app` refuses
// another app. cs_test_keystore's `helper` plays the phone (one persistent attested key).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';

const keystore = process.env.CELLSERVE_TEST_KEYSTORE;
const skip = skipReason() || (!keystore && 'CELLSERVE_TEST_KEYSTORE is not set (ctest sets it)');

// A hub on a fresh port with the keystore's root; `extra` flags appended.
async function startFleet(dir, keys, extra) {
  const port = await freePort();
  const fleet = { hub: `http://127.0.0.1:${port}`, started: [] };
  fleet.hubArgs = ['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2',
    '--attestation-roots', path.join(keys, 'root.pem'), ...extra];
  fleet.started.push(spawnLogged(fleet.hubArgs, 'hub'));
  await until('the hub', async () => (await fetch(`${fleet.hub}/health`)).status === 200, 10000);
  fleet.cli = (...args) => execFileSync(bin, [...args, '--hub', fleet.hub], { encoding: 'utf8' });
  fleet.byName = async () => Object.fromEntries(
    (await (await fetch(`${fleet.hub}/api/v1/processors`)).json()).processors.map((p) => [p.name, p]));
  fleet.agent = (name, command) => {
    const a = spawnLogged(['agent', '--hub', fleet.hub, '--data-dir', path.join(dir, name), '--name', name,
      '--simulate', 'prefill=4000,decode=400,slots=2', '--attestation-command', command], name);
    fleet.started.push(a);
    return a;
  };
  fleet.show = async (d) => (await fetch(`${fleet.hub}/api/v1/deployments/${d}`)).json();
  fleet.chat = (d) => fetch(`${fleet.hub}/d/${d}/v1/chat/completions`, { method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }) });
  fleet.deploy = (name, replicas) => {
    const spec = path.join(dir, `${name}.toml`);
    writeFileSync(spec, `name = "${name}"\nreplicas = ${replicas}\nmax_price_per_day = 1\nqueue_timeout = 1\n` +
      `[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[requirements]\nattested_only = true\n` +
      `[engine]\nsimulated = true\n`);
    fleet.cli('deploy', spec);
  };
  return fleet;
}

const serving = (p) => p.serving.map((s) => s.deployment);

test('a device is its attested key: a relay and a swapped keystore are refused, a key change waits for approve-key, ' +
  'and a status list change takes its attested_only replicas without a reconnect', { skip }, async () => {
  await inTempFleet('cs-attested-', async (dir) => {
    const keys = path.join(dir, 'phone');
    execFileSync(keystore, ['init', keys]);
    const status = path.join(dir, 'status.json');
    writeFileSync(status, '{"entries": {}}');
    const f = await startFleet(dir, keys, ['--attestation-status', status, '--attestation-status-refresh', '1s']);
    // The phone registers first and is pinned to its key.
    let phone = f.agent('phone', `${keystore} helper ${keys}`);
    const pinned = await until('the phone attested and pinned', async () => {
      const p = (await f.byName()).phone;
      return p?.online && p.attested && p.attested_key && p;
    }, 20000);
    assert.equal(pinned.attested_key.boot, 'Verified, locked');
    assert.deepEqual(pinned.attested_key.apps, ['com.cellserve.agent']);
    assert.match(f.started[0].log, /pinned to attested key/);

    // A second data dir relaying to the same phone: its keystore holds one key, attested for the
    // phone's identity, so the relay's registration cannot carry its own challenge.
    f.agent('relay', `${keystore} helper ${keys}`);
    const relay = await until('the relay registered', async () => {
      const p = (await f.byName()).relay;
      return p?.online && p;
    }, 20000);
    assert.equal(relay.attested, false);
    assert.match(relay.attestation, /wrong_challenge/);
    assert.equal(relay.attested_key, null);
    f.deploy('cases', 2);
    await until('one replica ready, on the phone', async () => (await f.show('cases')).ready === 1, 20000);
    const rows = (await f.show('cases')).replicas;
    assert.deepEqual(rows.filter((r) => r.processor).map((r) => r.processor), [pinned.id]);
    assert.deepEqual(serving((await f.byName()).relay), [], 'the relay serves no attested_only replica');
    // The phone's helper offers ecdh: the deployment's secrets are sealed to its attested key as
    // well, and the replica opened them (a replica that did not gets no traffic).
    await until('the secrets opened through the attested key', async () =>
      /replica cases\/\d: opened secrets version 1 \(0 values, sealed to the attested key too\)/.test(phone.log), 10000);
    await until('the secrets acknowledged', async () =>
      (await f.show('cases')).replicas.some((r) => r.processor === pinned.id && r.secrets_version === 1), 10000);
    assert.equal((await f.chat('cases')).status, 200);

    // The phone's identity with another phone's keystore (same vendor root, another key): the
    // handshake is not signed by the pinned key, so the tunnel is refused.
    await stop(phone);
    const other = path.join(dir, 'other-phone');
    mkdirSync(other);
    for (const file of ['root.pem', 'intermediate.pem', 'intermediate.key']) {
      copyFileSync(path.join(keys, file), path.join(other, file));
    }
    phone = f.agent('phone', `${keystore} helper ${other}`);
    const held = await until('the swapped keystore refused and held', async () => {
      const p = (await f.byName()).phone;
      return p.attested_key?.held && p;
    }, 20000);
    assert.match(held.attested_key.held, /pinned to attested key .* a signature that does not verify/);
    assert.match(f.started[0].log, /tunnel refused: agent [0-9a-f]{16}: this device is pinned/);
    await until('the agent told 401', async () => /401/.test(phone.log), 10000);
    assert.equal((await f.byName()).phone.online, false);
    assert.match(f.cli('fleet', 'ls'), /held: this device is pinned/);

    // The operator approves the change: the next registration pins the new key.
    assert.match(f.cli('fleet', 'approve-key', pinned.id), /change approved/);
    const repinned = await until('the phone pinned to its new key', async () => {
      const p = (await f.byName()).phone;
      return p.online && p.attested && p.attested_key.key_sha256 !== pinned.attested_key.key_sha256 &&
        !p.attested_key.change_approved && p;
    }, 20000);
    assert.equal(repinned.attested_key.held, '');
    await until('the phone serves again', async () => serving((await f.byName()).phone).includes('cases'), 20000);
    const shown = await f.show('cases');
    assert.equal(shown.attestation_status.source, status);
    assert.ok(shown.attestation_status.age_seconds <= 5, JSON.stringify(shown.attestation_status));
    assert.deepEqual(shown.warnings, []);
    const metrics = await (await fetch(`${f.hub}/metrics`)).text();
    assert.match(metrics, /^cellserve_attestation_status_age_seconds \d+$/m);
    assert.match(metrics, /^cellserve_attestation_status_fetch_failing 0$/m);

    // Live revocation: the intermediate is listed; within one refresh the connected phone is
    // judged again and loses its replica, with no reconnect.
    const connections = (phone.log.match(/connected to the hub at \S+ as/g) ?? []).length;
    const serial = new X509Certificate(readFileSync(path.join(keys, 'intermediate.pem'))).serialNumber.toLowerCase();
    writeFileSync(`${status}.new`, JSON.stringify({ entries: { [serial]: { status: 'REVOKED', reason: 'KEY_COMPROMISE' } } }));
    renameSync(`${status}.new`, status);
    const revoked = await until('the phone re-judged as revoked', async () => {
      const p = (await f.byName()).phone;
      return !p.attested && p;
    }, 10000);
    assert.match(revoked.attestation, /^not attested: revoked: /);
    assert.equal(revoked.online, true);
    await until('no replica on the phone', async () => serving((await f.byName()).phone).length === 0, 10000);
    assert.match(f.started[0].log, /re-judged without reconnecting/);
    assert.match(f.started[0].log, /leaves .*attested_only/);
    assert.equal((phone.log.match(/connected to the hub at \S+ as/g) ?? []).length, connections, 'no reconnect');

    // A status list that no longer parses: the last good copy stays (still revoked), and says so.
    writeFileSync(`${status}.new`, '{"entries": ');
    renameSync(`${status}.new`, status);
    await until('the failed fetch reported', async () => (await f.show('cases')).warnings.length === 1, 10000);
    assert.match((await f.show('cases')).warnings[0], /not refreshed/);
    assert.equal((await f.byName()).phone.attested, false);
  });
});

test('--attestation-app refuses another app; attested_only without a status list warns', { skip }, async () => {
  await inTempFleet('cs-attested-app-', async (dir) => {
    const keys = path.join(dir, 'phones');
    execFileSync(keystore, ['init', keys]);
    const relayKeys = path.join(dir, 'relay-phone');
    mkdirSync(relayKeys);
    for (const file of ['root.pem', 'intermediate.pem', 'intermediate.key']) {
      copyFileSync(path.join(keys, file), path.join(relayKeys, file));
    }
    const f = await startFleet(dir, keys, ['--attestation-app', `com.cellserve.agent:${'11'.repeat(32)}`]);
    const genuine = f.agent('genuine', `${keystore} helper ${keys} --no-ecdh`);
    f.agent('other-app', `${keystore} helper ${relayKeys} --app com.relay.anything`);
    const seen = await until('both registered', async () => {
      const ps = await f.byName();
      return ps.genuine?.online && ps['other-app']?.online && ps;
    }, 20000);
    assert.equal(seen.genuine.attested, true, seen.genuine.attestation);
    assert.equal(seen['other-app'].attested, false);
    assert.match(seen['other-app'].attestation, /^not attested: wrong_app: app com.relay.anything/);
    f.deploy('cases', 2);
    await until('one replica ready', async () => (await f.show('cases')).ready === 1, 20000);
    assert.deepEqual(serving((await f.byName())['other-app']), []);
    // A helper without ecdh: the secrets are sealed to the identity key only, and still open.
    await until('the secrets opened', async () => /opened secrets version 1 \(0 values\)/.test(genuine.log), 10000);
    await until('the secrets acknowledged', async () =>
      (await f.show('cases')).replicas.some((r) => r.state === 'ready' && r.secrets_version === 1), 10000);
    assert.equal((await f.chat('cases')).status, 200);
    const shown = await f.show('cases');
    assert.equal(shown.warnings.length, 1);
    assert.match(shown.warnings[0], /attested_only without --attestation-status/);
    assert.match(f.cli('deployments', 'show', 'cases'), /warning: attested_only without --attestation-status/);
    // And at start.
    await stop(f.started[0]);
    f.started[0] = spawnLogged(f.hubArgs, 'hub (restarted)');
    await until('the start warning', async () => /warning: deployment cases is attested_only but no --attestation-status/
      .test(f.started[0].log), 10000);
  });
});

test('the status list over HTTP: fetched on schedule, a revocation is live, an oversized answer keeps the last good copy',
  { skip }, async () => {
  await inTempFleet('cs-attested-url-', async (dir) => {
    const keys = path.join(dir, 'phone');
    execFileSync(keystore, ['init', keys]);
    const list = { body: '{"entries": {}}', requests: 0 };
    const server = http.createServer((req, res) => {
      list.requests += 1;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(list.body) });
      res.end(list.body);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${server.address().port}/attestation/status`;
    try {
      const f = await startFleet(dir, keys, ['--attestation-status', url, '--attestation-status-refresh', '1s']);
      const phone = f.agent('phone', `${keystore} helper ${keys}`);
      await until('the phone attested', async () => (await f.byName()).phone?.attested, 20000);
      f.deploy('cases', 1);
      await until('its replica ready', async () => (await f.show('cases')).ready === 1, 20000);
      const before = list.requests;
      await until('fetched again on schedule', async () => list.requests >= before + 2, 10000);
      assert.equal((await f.show('cases')).attestation_status.source, url);

      const serial = new X509Certificate(readFileSync(path.join(keys, 'intermediate.pem'))).serialNumber.toLowerCase();
      list.body = JSON.stringify({ entries: { [serial]: { status: 'SUSPENDED' } } });
      await until('the phone re-judged as revoked', async () => /revoked/.test((await f.byName()).phone.attestation), 10000);
      await until('its replica gone', async () => serving((await f.byName()).phone).length === 0, 10000);
      assert.equal((phone.log.match(/connected to the hub at \S+ as/g) ?? []).length, 1, 'no reconnect');

      // Larger than 16 MiB: refused, the last good copy (with the revocation) stays in use.
      list.body = `{"entries": {}, "pad": "${'x'.repeat(17 * 1024 * 1024)}"}`;
      await until('the oversized list refused', async () =>
        /larger than 16 MiB/.test((await f.show('cases')).warnings.join(' ')), 10000);
      const metrics = await (await fetch(`${f.hub}/metrics`)).text();
      assert.match(metrics, /^cellserve_attestation_status_fetch_failing 1$/m);
      assert.match(metrics, /^cellserve_attestation_status_entries 1$/m);
      assert.equal((await f.byName()).phone.attested, false);
    } finally {
      server.close();
    }
  });
});

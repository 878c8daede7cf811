// Spot checks and canaries end to end (docs/fleet.md, "Spot checks and canaries"): a real hub,
// honest simulated agents and one that answers every prompt with the same text
// (`--simulate ...,canned=1`), on 127.0.0.1. Users talk to the deployment endpoint with the
// official `openai` client. The hub cross-checks answers on other devices (verify_fraction = 1)
// and quarantines the canned device within a bounded number of requests, never an honest one;
// canaries catch it too; `fleet release` brings it back. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, until } from '../../e2e/fleet_harness.mjs';

const SIM = 'prefill=20000,decode=2000,slots=2';

async function api(hub, pathname, options = {}) {
  const r = await fetch(`${hub}${pathname}`, options);
  return { status: r.status, json: await r.json() };
}

// A hub and agents named `honest` (honest simulators) and `canned` (canned=1), and a simulated
// deployment of one replica per agent with `extra` spec lines; returns what the tests use.
async function startFleet(dir, name, honest, extra) {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  const hubProc = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
    '--poll-seconds', '0.2'], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 10000);
  for (const agent of [...honest, 'canned']) {
    spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, agent), '--name', agent, '--price-per-day', '0.1',
      '--simulate', agent === 'canned' ? `${SIM},canned=1` : SIM], agent);
  }
  const count = honest.length + 1;
  await until('the agents online', async () =>
    (await api(hub, '/api/v1/processors')).json.processors.filter((p) => p.online).length === count);
  const spec = path.join(dir, `${name}.toml`);
  writeFileSync(spec, `name = "${name}"\nreplicas = ${count}\nmax_price_per_day = 5\n${extra}` +
    `[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ef'.repeat(32)}"\n[engine]\nsimulated = true\n`);
  cli('deploy', spec);
  const shown = await until('every replica ready', async () => {
    const { json } = await api(hub, `/api/v1/deployments/${name}`);
    return json.ready === count && json;
  });
  const procs = (await api(hub, '/api/v1/processors')).json.processors;
  const idOf = (agent) => procs.find((p) => p.name === agent).id;
  const indexOf = (agent) => shown.replicas.find((r) => r.processor === idOf(agent)).index;
  const processor = async (agent) => (await api(hub, '/api/v1/processors')).json.processors.find((p) => p.id === idOf(agent));
  return { hub, cli, hubProc, idOf, indexOf, processor };
}

// A prompt whose first KiB differs per case: the hub's prefix affinity spreads the cases over
// the replicas (route_choice.h), so every device answers some and checks others.
const prompt = (i) => `case ${i}: ${'please classify this case carefully. '.repeat(30)}`;

test('spot checks: a device answering a fixed text is quarantined, honest ones never; release brings it back',
  { skip: skipReason() || false }, () => inTempFleet('cs-spot-', async (dir) => {
    const honest = ['honest-a', 'honest-b', 'honest-c'];
    const f = await startFleet(dir, 'spot', honest, 'verify_fraction = 1.0\n');
    const client = new OpenAI({ baseURL: `${f.hub}/d/spot/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
    const replica = (n) => new OpenAI({ baseURL: `${f.hub}/d/spot/r/${n}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });

    // What the devices say for one greedy request, each at its own address: the honest ones
    // agree with each other, the canned one says something else (and says it for any prompt).
    const ask = (c, i) => c.chat.completions.create({ model: 'spot', temperature: 0, max_tokens: 40,
      messages: [{ role: 'user', content: prompt(i) }] });
    const truth = (await ask(replica(f.indexOf('honest-a')), 0)).choices[0].message.content;
    for (const h of honest) assert.equal((await ask(replica(f.indexOf(h)), 0)).choices[0].message.content, truth, h);
    const canned = (await ask(replica(f.indexOf('canned')), 0)).choices[0].message.content;
    assert.notEqual(canned, truth);
    assert.equal((await ask(replica(f.indexOf('canned')), 1)).choices[0].message.content, canned);

    // Users send greedy requests, streamed and not, as users write them; every one is answered.
    const kBound = 60;  // the canned device is quarantined within this many requests
    let sent = 0;
    while (!(await f.processor('canned')).quarantined) {
      assert.ok(sent < kBound, `the canned device is not quarantined after ${sent} requests`);
      const i = 100 + sent++;
      if (sent % 2 === 0) {
        const stream = await client.chat.completions.create({ model: 'spot', temperature: 0, max_tokens: 40, stream: true,
          messages: [{ role: 'user', content: prompt(i) }] });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        assert.ok(text.length > 0, `answer ${i}`);
      } else {
        const r = await ask(client, i);
        assert.ok(r.choices[0].message.content.length > 0, `answer ${i}`);
      }
    }
    console.log(`the canned device was quarantined after ${sent} user requests`);
    const q = await f.processor('canned');
    assert.ok(q.agreement.lost >= 5, JSON.stringify(q.agreement));
    assert.match(q.agreement.reason, /agreed in \d+ of its last \d+ decided checks/);
    await until('the hub log names the quarantine', async () => /device [0-9a-f]{16} quarantined/.test(f.hubProc.log), 5000);

    // Quarantined: no traffic. Every answer now comes from an honest device.
    for (let i = 0; i < 20; i++) {
      const { data, response } = await ask(client, 500 + i).withResponse();
      assert.notEqual(Number(response.headers.get('x-cellserve-replica')), f.indexOf('canned'));
      assert.ok(data.choices[0].message.content.length > 0);
    }
    const direct = await fetch(`${f.hub}/d/spot/r/${f.indexOf('canned')}/v1/chat/completions`, { method: 'POST',
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'spot', messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(direct.status, 503);
    assert.match(await direct.text(), /quarantined/);

    // False positives: none over the whole run. Every honest device took part and never lost.
    for (const h of honest) {
      const p = await f.processor(h);
      assert.equal(p.quarantined, false, h);
      assert.equal(p.agreement.lost, 0, `${h}: ${JSON.stringify(p.agreement)}`);
      assert.ok(p.agreement.agreed > 0, `${h} took part: ${JSON.stringify(p.agreement)}`);
    }
    // Shown to the operator: fleet ls, deployments show, metrics.
    assert.match(f.cli('fleet', 'ls'), /QUARANTINED: agreed in/);
    const show = (await api(f.hub, '/api/v1/deployments/spot')).json;
    assert.equal(show.replicas.find((r) => r.index === f.indexOf('canned')).quarantined, true);
    assert.match(f.cli('deployments', 'show', 'spot'), /agreement \d+ of \d+ decided checks/);
    const metrics = await (await fetch(`${f.hub}/metrics`)).text();
    assert.match(metrics, new RegExp(`cellserve_hub_device_quarantined\\{device="${f.idOf('canned').slice(0, 16)}"\\} 1`));
    assert.match(metrics, /cellserve_hub_spot_checks_total\{deployment="spot",result="disagreed"\} [1-9]/);

    // The operator releases it: it takes traffic again, with a fresh record.
    assert.match(f.cli('fleet', 'release', f.idOf('canned')), /released from quarantine/);
    const released = await f.processor('canned');
    assert.equal(released.quarantined, false);
    assert.equal(released.agreement.checks, 0);
    const back = await fetch(`${f.hub}/d/spot/r/${f.indexOf('canned')}/v1/chat/completions`, { method: 'POST',
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'spot', messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(back.status, 200, await back.text());
  }));

test('canaries: a device that answers canaries wrong is quarantined, honest ones pass them',
  { skip: skipReason() || false }, () => inTempFleet('cs-canary-', async (dir) => {
    const honest = ['honest-a', 'honest-b'];
    const f = await startFleet(dir, 'can', honest, '');  // no spot checks: canaries alone
    const replica = new OpenAI({ baseURL: `${f.hub}/d/can/r/${f.indexOf('honest-a')}/v1`, apiKey: 'unused', maxRetries: 0 });
    // The operator's known cases and their expected answers (here: what an honest device says).
    const lines = [];
    for (const q of ['Is the sky blue?', 'Two plus two?', 'Name a river.']) {
      const request = { model: 'can', temperature: 0, max_tokens: 30, messages: [{ role: 'user', content: q }] };
      const expect = (await replica.chat.completions.create(request)).choices[0].message.content;
      lines.push(JSON.stringify({ request, expect }));
    }
    const file = path.join(dir, 'canaries.jsonl');
    writeFileSync(file, lines.join('\n') + '\n');
    assert.match(f.cli('deployments', 'canaries', 'can', file, '--every', '2'), /3 canaries, one per 2 requests/);
    // A bad file is refused with its line named, before anything is sent.
    writeFileSync(path.join(dir, 'bad.jsonl'), lines[0] + '\n{"request": {"prompt": "p"}, "expect": "x"}\n');
    assert.throws(() => f.cli('deployments', 'canaries', 'can', path.join(dir, 'bad.jsonl')), /line 2: request must be greedy/);

    const client = new OpenAI({ baseURL: `${f.hub}/d/can/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
    const kBound = 150;
    let sent = 0;
    while (!(await f.processor('canned')).quarantined) {
      assert.ok(sent < kBound, `the canned device is not quarantined after ${sent} requests`);
      const r = await client.chat.completions.create({ model: 'can', max_tokens: 8,
        messages: [{ role: 'user', content: prompt(sent++) }] });
      assert.ok(r.choices[0].message.content.length > 0);
    }
    console.log(`canaries quarantined the canned device after ${sent} user requests`);
    const metrics = await (await fetch(`${f.hub}/metrics`)).text();
    assert.match(metrics, /cellserve_hub_spot_checks_total\{deployment="can",result="canary_failed"\} [5-9]/);
    assert.match(metrics, /cellserve_hub_spot_checks_total\{deployment="can",result="canary_passed"\} [1-9]/);
    for (const h of honest) {
      const p = await f.processor(h);
      assert.equal(p.quarantined, false, h);
      assert.equal(p.agreement.lost, 0, `${h}: ${JSON.stringify(p.agreement)}`);
      assert.ok(p.agreement.agreed > 0, `${h} got canaries: ${JSON.stringify(p.agreement)}`);
    }
  }));

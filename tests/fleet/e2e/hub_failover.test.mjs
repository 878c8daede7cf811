// An agent that knows several hubs (`cellserve agent --hub URL1,URL2`): two independent open hubs
// (each its own data dir) and one `--simulate` agent given both. The agent registers on one; that
// hub is SIGKILLed; the agent is registered on the other within the 10 s and serves a
// deployment there, keeping the replica it already ran (same model and engine: not reloaded).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, until } from '../../e2e/fleet_harness.mjs';

async function startOpenHub(dir, name) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const process = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, name),
    '--poll-seconds', '0.2'], name);
  await until(name, async () => (await fetch(`${url}/health`)).status === 200, 10000);
  return { name, url, process, cli: (...args) => execFileSync(bin, [...args, '--hub', url], { encoding: 'utf8' }) };
}

async function online(hub) {
  const r = await fetch(`${hub.url}/api/v1/processors`);
  const { processors } = await r.json();
  return processors.filter((p) => p.online).length;
}

async function chat(hub) {
  const client = new OpenAI({ baseURL: `${hub.url}/d/sim/r/0/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
  const answer = await client.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'Still there?' }] });
  return answer.choices[0].message.content;
}

test('hub failover: a bad --hub list is refused in one line naming the entry', { skip: skipReason() || false }, () => {
  const r = spawnSync(bin, ['agent', '--hub', 'http://127.0.0.1:1,ftp://elsewhere:2', '--data-dir', '/nonexistent/x',
    '--simulate', 'prefill=400,decode=40,slots=1'], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /ftp:\/\/elsewhere:2/);
});

test('hub failover: the agent moves to the other hub when its hub is killed', { skip: skipReason() || false }, async () => {
  await inTempFleet('cs-failover-', async (dir) => {
    const hubs = [await startOpenHub(dir, 'hub-a'), await startOpenHub(dir, 'hub-b')];
    const spec = path.join(dir, 'sim.toml');
    writeFileSync(spec, `name = "sim"\nreplicas = 1\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`);
    for (const hub of hubs) hub.cli('deploy', spec); // the same deployment on both, as a shared store would have
    const agent = spawnLogged(['agent', '--hub', hubs.map((h) => h.url).join(','), '--data-dir', path.join(dir, 'agent'),
      '--name', 'sim-agent', '--simulate', 'prefill=4000,decode=400,slots=2'], 'agent');

    const first = await until('the agent on one hub', async () => {
      for (const hub of hubs) if ((await online(hub)) === 1) return hub;
      return null;
    }, 30000);
    const other = hubs.find((h) => h !== first);
    assert.equal(await online(other), 0, 'one tunnel at a time');
    await until(`the replica ready on ${first.name}`, async () =>
      (await (await fetch(`${first.url}/api/v1/deployments/sim`)).json()).ready === 1);
    const before = await chat(first);
    assert.ok(before.length > 0);

    first.process.kill('SIGKILL');
    const killedAt = Date.now();
    await until(`the agent online on ${other.name} within 10 s of the kill`, async () => (await online(other)) === 1, 10000);
    console.log(`# the agent was registered on ${other.name} ${Date.now() - killedAt} ms after ${first.name} was killed`);
    await until(`the replica ready on ${other.name}`, async () =>
      (await (await fetch(`${other.url}/api/v1/deployments/sim`)).json()).ready === 1);
    assert.equal(await chat(other), before, 'the deployment answers through the other hub as it did through the first');
    // The replica ran on through the move: the new hub's assignment was the same, nothing reloaded.
    assert.equal(agent.log.match(/replica sim\/\d+: assigned/g)?.length, 1, agent.log);
    assert.doesNotMatch(agent.log, /replica sim: unassigned/);
    assert.match(agent.log, new RegExp(`tunnel to ${first.url} closed`));
    assert.match(agent.log, new RegExp(`connected to the hub at ${other.url}`));
  });
});

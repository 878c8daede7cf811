// Autoscaling end to end (issue 48, item 3): a real hub and simulated agents on 127.0.0.1,
// driven by the official `openai` client and the CLI.
// - A queue that waits past target_wait_s brings new replicas up, one at a time; once the load is
//   gone the idle ones are drained and removed after cooldown_s, down to min_replicas.
// - A [[schedule]] window (the current UTC minute, for one minute) raises the deployment to its
//   replicas and, once the window has passed and the cool-down with it, lowers it again.
// Every decision is an event with its reason (API and `cellserve deployments events`), and a
// metric.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, until } from '../../e2e/fleet_harness.mjs';

const json = async (url) => (await fetch(url)).json();
const sha = 'ab'.repeat(32); // never fetched: simulated agents download nothing
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function writeSpec(dir, name, lines) {
  const file = path.join(dir, `${name}.toml`);
  writeFileSync(file, `name = "${name}"\nmax_price_per_day = 5\n${lines.join('\n')}\n[model]\n` +
    `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${sha}"\n[engine]\nsimulated = true\nparallel = 1\n`);
  return file;
}

test('autoscale: the queue brings replicas up, the cool-down takes them away, a schedule window comes and goes', { skip: skipReason() }, async () => {
  await inTempFleet('cs-autoscale-', async (dir) => {
    const port = await freePort();
    const hub = `http://127.0.0.1:${port}`;
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    // Five devices, each one request at a time at 20 tokens/s: a 40-token answer takes 2 s.
    for (let i = 0; i < 5; i++) {
      spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, `a${i}`), '--name', `a${i}`, '--price-per-day', '0.1',
        '--simulate', 'prefill=4000,decode=20,slots=1'], `a${i}`);
    }
    await until('five agents', async () => (await json(`${hub}/api/v1/processors`)).processors.filter((p) => p.online).length === 5);

    // The schedule window: this UTC minute, unless too little of it is left to see it.
    let now = new Date();
    if (now.getUTCSeconds() > 40) {
      await sleep((61 - now.getUTCSeconds()) * 1000);
      now = new Date();
    }
    const windowEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), now.getUTCHours(),
      now.getUTCMinutes() + 1);
    execFileSync(bin, ['deploy', writeSpec(dir, 'nightly', ['min_replicas = 1', 'max_replicas = 2', 'cooldown_s = 2',
      '[[schedule]]', `cron = "${now.getUTCMinutes()} ${now.getUTCHours()} * * *"`, 'replicas = 2', 'for = "1m"']),
    '--hub', hub], { stdio: 'ignore' });
    execFileSync(bin, ['deploy', writeSpec(dir, 'queue', ['min_replicas = 1', 'max_replicas = 3', 'target_wait_s = 0.5',
      'cooldown_s = 3']), '--hub', hub], { stdio: 'ignore' });

    const deployment = (name) => json(`${hub}/api/v1/deployments/${name}`);
    const events = async (name) => (await json(`${hub}/api/v1/deployments/${name}/events`)).data;
    await until('the schedule window raises nightly to 2 ready replicas', async () => (await deployment('nightly')).ready === 2, 15000);
    const up = (await events('nightly')).find((e) => e.action === 'scale_up');
    assert.ok(up, 'a scale_up event');
    assert.equal(up.from_replicas, 1);
    assert.equal(up.to_replicas, 2);
    assert.match(up.reason, /^schedule '\d+ \d+ \* \* \*' until \d\d:\d\d UTC asks for 2 replicas$/);
    await until('queue has its one replica ready', async () => (await deployment('queue')).ready === 1, 15000);

    // Eight requests at once on one replica that takes one at a time: the queue waits past 0.5 s.
    const client = new OpenAI({ baseURL: `${hub}/d/queue/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    let most = 1;
    let loading = true;
    const watch = (async () => {
      while (loading) {
        const d = await deployment('queue');
        most = Math.max(most, d.spec.replicas);
        await sleep(100);
      }
    })();
    const answers = await Promise.all([...Array(8).keys()].map(async () => {
      const r = await client.chat.completions.create({ model: 'queue', messages: [{ role: 'user', content: 'case' }], max_tokens: 40 });
      return r.choices[0].message.content;
    }));
    loading = false;
    await watch;
    assert.equal(answers.filter((text) => text.length > 0).length, 8, 'every request was answered');
    assert.ok(most >= 2, `the queue brought a replica up (most replicas seen: ${most})`);
    const rises = (await events('queue')).filter((e) => e.action === 'scale_up');
    assert.ok(rises.length >= 1);
    for (const e of rises) {
      assert.match(e.reason, /^queue wait \d+\.\d s > target_wait_s 0\.5 \(\d+ waiting\)$/);
      assert.equal(e.to_replicas, e.from_replicas + 1, 'one replica at a time');
    }

    // Idle for 3 s: drained and removed, back to min_replicas.
    await until('queue back to 1 replica', async () => {
      const d = await deployment('queue');
      return d.spec.replicas === 1 && d.replicas.filter((r) => !r.spare).length === 1;
    }, 30000);
    const fall = (await events('queue')).find((e) => e.action === 'scale_down');
    assert.ok(fall, 'a scale_down event');
    assert.equal(fall.to_replicas, 1);
    assert.match(fall.reason, /replica\(s\) idle for cooldown_s 3\.0 s$/);

    // The window ends at the minute's end; 2 s of idle later nightly is back to one replica.
    await until('the window passes and nightly falls back to 1', async () => (await deployment('nightly')).spec.replicas === 1,
      Math.max(0, windowEnd - Date.now()) + 20000);
    const nightly = await events('nightly');
    assert.equal(nightly[0].action, 'scale_down');
    assert.ok(Date.now() >= windowEnd, 'not before the window ended');

    // The CLI shows the same decisions, and /metrics counts them.
    const printed = execFileSync(bin, ['deployments', 'events', 'queue', '--hub', hub], { encoding: 'utf8' });
    assert.match(printed, /UTC {2}scale_down +\d+ -> 1 {2}\d+ replica\(s\) idle/);
    assert.match(printed, /UTC {2}scale_up +1 -> 2 {2}queue wait/);
    const metrics = await (await fetch(`${hub}/metrics`)).text();
    assert.match(metrics, /^cellserve_hub_scaling_events_total\{deployment="queue",action="scale_up"\} [1-9]/m);
    assert.match(metrics, /^cellserve_hub_scaling_events_total\{deployment="nightly",action="scale_down"\} 1$/m);
    // Deploying the file again keeps the count the deployment has unless the file names one.
    execFileSync(bin, ['deploy', writeSpec(dir, 'steady', ['replicas = 3', 'min_replicas = 1', 'max_replicas = 3',
      'cooldown_s = 3600']), '--hub', hub], { stdio: 'ignore' });
    assert.equal((await deployment('steady')).spec.replicas, 3);
    execFileSync(bin, ['deploy', writeSpec(dir, 'steady', ['min_replicas = 1', 'max_replicas = 3', 'cooldown_s = 3000']),
      '--hub', hub], { stdio: 'ignore' });
    const steady = await deployment('steady');
    assert.equal(steady.spec.cooldown_s, 3000, 'the new spec applied');
    assert.equal(steady.spec.replicas, 3, 'and the count kept');

    console.log(`queue: most replicas ${most}, ${rises.length} rise(s); nightly: ${nightly.map((e) => `${e.action} ${e.from_replicas}->${e.to_replicas}`).join(', ')}`);
  });
});

// Several hubs, one fleet (issue 46), with real processes: a private PostgreSQL server started
// here, three closed hubs sharing it and one cluster key, six simulated agents and one agent
// serving the tiny real model, each given all three hubs. Clients spread requests over the hubs
// and move to the next hub on a connection error, as a load balancer would. Mid-run the hub
// holding the most agents is SIGKILLed, and later started again. Counted from the clients' own
// records:
// - every request that reached a live hub was answered 200 (a request lost with the killed hub's
//   connection is the only kind allowed to fail, and the client moved on);
// - every agent of the killed hub serves through another hub again (the limit is the 10 s);
// - a 500-line batch started before the kill completes with each custom_id answered exactly once;
// - a key's requests-per-minute and tokens-per-day quotas hold across the three hubs together.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, sleep, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';
import { postgresAbsence, startPostgres } from '../../e2e/postgres.mjs';

const ADMIN = 'cluster-suite-admin-key';
const LINES = 500;
const SIM_AGENTS = 6;
const admin = { authorization: `Bearer ${ADMIN}` };

const skip = skipReason() || postgresAbsence() || false;

test('cluster: three hubs on PostgreSQL survive a SIGKILLed hub; requests, agents, a batch and quotas hold', { skip }, () =>
  inTempFleet('cs-cluster-', async (dir) => {
    const pg = startPostgres();
    try {
      await runCluster(dir, pg.createDatabase('fleet'));
    } finally {
      pg.stop();
    }
  }));

async function runCluster(dir, storeUrl) {
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, `${ADMIN}\n`, { mode: 0o600 });
  const clusterKey = path.join(dir, 'cluster.key');
  execFileSync(bin, ['hub', 'cluster-key', clusterKey]);
  const env = { ...process.env, CELLSERVE_HUB_KEY: ADMIN };

  // Three hubs, each with its own folder, one database and one cluster key.
  const hubs = [];
  for (let i = 0; i < 3; ++i) {
    const port = await freePort();
    const hubDir = path.join(dir, `hub${i}`);
    const args = ['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--store', storeUrl,
      '--cluster-key-file', clusterKey, '--api-key-file', keyFile, '--poll-seconds', '0.3', '--ping-timeout', '3'];
    hubs.push({ url: `http://127.0.0.1:${port}`, dir: hubDir, args, name: `hub${i}`, alive: true });
  }
  const startHub = async (h) => {
    h.process = spawnLogged(h.args, h.name);
    await until(`${h.name} up`, async () => (await fetch(`${h.url}/health`)).status === 200, 20000);
    h.alive = true; // clients count it live once it answers, as a load balancer's health check would
  };
  for (const h of hubs) await startHub(h);
  const cli = (h, ...args) => execFileSync(bin, [...args, '--hub', h.url], { encoding: 'utf8', env });
  const getJson = async (h, p) => {
    const r = await fetch(`${h.url}${p}`, { headers: admin, signal: AbortSignal.timeout(10000) });
    assert.equal(r.status, 200, `${h.name} ${p}: ${r.status}`);
    return r.json();
  };
  const hubList = hubs.map((h) => h.url).join(',');
  const live = () => hubs.filter((h) => h.alive);

  // The agents: one enrolment token of 7 uses made on hub 0, redeemed at whichever hub each
  // agent dials first.
  const enroll = cli(hubs[0], 'hub', 'tokens', 'create', '--uses', String(SIM_AGENTS + 1)).trim();
  for (let i = 0; i < SIM_AGENTS; ++i) {
    spawnLogged(['agent', '--hub', hubList, '--data-dir', path.join(dir, `sim${i}`), '--name', `sim${i}`,
      '--enroll', enroll, '--price-per-day', '0.1', '--simulate', 'prefill=4000,decode=60,slots=2'], `sim${i}`);
  }
  const source = model('qwen3-tiny-f32.gguf');
  for (const h of hubs) {
    mkdirSync(path.join(h.dir, 'files'), { recursive: true });
    copyFileSync(source, path.join(h.dir, 'files', 'model.gguf'));
  }
  const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
  spawnLogged(['agent', '--hub', hubList, '--data-dir', path.join(dir, 'real'), '--name', 'real', '--enroll', enroll,
    '--benchmark-shape', '', '--no-autotune'], 'real');

  // The real model first (so the real agent takes it), then the simulated deployment on the six.
  const realSpec = path.join(dir, 'real.toml');
  writeFileSync(realSpec, `name = "real"\nmax_price_per_day = 1\nqueue_timeout = 60\n[model]\n` +
    `url = "${hubs[0].url}/files/model.gguf"\nsha256 = "${sha}"\n[engine]\nparallel = 2\nctx_size = 256\n`);
  cli(hubs[0], 'deploy', realSpec);
  const simSpec = path.join(dir, 'sim.toml');
  writeFileSync(simSpec, `name = "sim"\nreplicas = ${SIM_AGENTS}\nmax_price_per_day = 5\nqueue_timeout = 60\n[model]\n` +
    `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\nparallel = 2\n`);
  cli(hubs[1], 'deploy', simSpec);
  const readyAt = async (h, name) => (await getJson(h, `/api/v1/deployments/${name}`)).ready;
  await until('the simulated replicas ready', async () => (await readyAt(hubs[2], 'sim')) === SIM_AGENTS, 90000);
  await until('the real replica ready', async () => (await readyAt(hubs[0], 'real')) === 1, 120000);

  // Which hub holds which agent's tunnel, as the cluster records it.
  const agentsByHub = async (h) => {
    const listed = await getJson(h, '/api/v1/hubs');
    return Object.fromEntries(listed.hubs.map((x) => [x.peer_url, x.alive ? x.agents : 0]));
  };
  const before = await until('all seven tunnels recorded', async () => {
    const m = await agentsByHub(hubs[0]);
    return Object.values(m).reduce((a, b) => a + b, 0) === SIM_AGENTS + 1 && m;
  }, 20000);
  console.log(`agents per hub before the kill: ${JSON.stringify(before)}`);
  assert.match(cli(hubs[1], 'fleet', 'hubs'), new RegExp(`127\\.0\\.0\\.1:${new URL(hubs[2].url).port}`));

  const keyOf = (...flags) => cli(hubs[0], 'keys', 'create', '--deployment', 'sim', ...flags).trim();
  const userKey = keyOf('--name', 'load');
  const realKey = cli(hubs[0], 'keys', 'create', '--deployment', 'real', '--name', 'load').trim();

  // A batch of 500 lines, created through hub 0 before the kill.
  const batchClient = new OpenAI({ baseURL: `${hubs[0].url}/d/sim/v1`, apiKey: userKey, maxRetries: 0 });
  const lines = [...Array(LINES).keys()].map((i) => JSON.stringify({ custom_id: `line-${i}`, method: 'POST',
    url: '/v1/chat/completions', body: { messages: [{ role: 'user', content: `Case ${i}` }], max_tokens: 24 } }));
  const file = await batchClient.files.create({ file: await toFile(Buffer.from(lines.join('\n') + '\n'), 'cases.jsonl'),
    purpose: 'batch' });
  const batch = await batchClient.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions',
    completion_window: '24h' });

  // The clients: eight loops, each sending to the hubs in turn and moving to the next on a
  // connection error. A record per request: the hub, whether that hub was alive when the request
  // was sent and when it ended, and the outcome.
  const records = [];
  let running = true;
  let turn = 0;
  const clientLoop = async (loop) => {
    while (running) {
      const h = hubs[turn++ % hubs.length];
      const real = loop === 0;
      const aliveAtSend = h.alive;
      const rec = { hub: h.name, aliveAtSend, deployment: real ? 'real' : 'sim' };
      try {
        const r = await fetch(`${h.url}/d/${rec.deployment}/v1/chat/completions`, { method: 'POST',
          signal: AbortSignal.timeout(60000),
          headers: { 'content-type': 'application/json', authorization: `Bearer ${real ? realKey : userKey}` },
          body: JSON.stringify({ messages: [{ role: 'user', content: `Is case ${turn} fraud?` }], max_tokens: 8,
            temperature: 0 }) });
        rec.status = r.status;
        const body = await r.json();
        rec.ok = r.status === 200 && body.choices[0].message.content !== undefined;
        if (!rec.ok) rec.error = JSON.stringify(body).slice(0, 300);
      } catch (e) {
        rec.error = String(e.cause?.code || e.message);
      }
      rec.aliveAtEnd = h.alive;
      records.push(rec);
      if (!h.alive) await sleep(50);  // a load balancer would mark it down: try the next hub
    }
  };
  const loops = [...Array(8).keys()].map(clientLoop);
  await sleep(2000);

  // The kill: the hub holding the most agents (never the one with no agents at all).
  const counts = await agentsByHub(hubs[0]);
  const victim = [...hubs].sort((a, b) => (counts[b.url] || 0) - (counts[a.url] || 0))[0];
  const victimAgents = counts[victim.url] || 0;
  const progressAtKill = (await batchClient.batches.retrieve(batch.id)).request_counts;
  victim.alive = false;
  victim.process.kill('SIGKILL');
  const killedAt = Date.now();
  console.log(`SIGKILL ${victim.name} (${victimAgents} agents); batch at ${JSON.stringify(progressAtKill)}`);
  assert.ok(victimAgents > 0, 'the killed hub held agents');
  assert.ok(progressAtKill.completed < LINES, 'the batch was still running at the kill');

  // Every agent serves through a live hub again: all seven tunnels recorded on live hubs, and all
  // replicas ready.
  const survivor = live()[0];
  await until('every agent of the killed hub serving through another hub', async () => {
    const m = await agentsByHub(survivor);
    const onLive = live().reduce((n, h) => n + (m[h.url] || 0), 0);
    return onLive === SIM_AGENTS + 1 && (await readyAt(survivor, 'sim')) === SIM_AGENTS &&
      (await readyAt(survivor, 'real')) === 1;
  }, 10000);
  console.log(`agents of the killed hub serving again after ${Date.now() - killedAt} ms`);

  await sleep(3000);
  await startHub(victim);
  await until('the restarted hub in the cluster', async () => {
    const listed = await getJson(victim, '/api/v1/hubs');
    return listed.hubs.filter((x) => x.alive).length === 3;
  }, 20000);
  await sleep(3000);
  running = false;
  await Promise.all(loops);

  // The clients' records: every request that reached a live hub succeeded.
  const atLive = records.filter((r) => r.aliveAtSend && r.aliveAtEnd);
  const failed = atLive.filter((r) => !r.ok);
  const lost = records.filter((r) => !(r.aliveAtSend && r.aliveAtEnd));
  console.log(`requests: ${records.length} sent, ${atLive.length} at live hubs (${failed.length} failed), ` +
    `${lost.length} at the killed hub (${lost.filter((r) => r.ok).length} answered anyway)`);
  assert.deepEqual(failed.slice(0, 5), [], `requests at live hubs failed: ${failed.length}`);
  assert.ok(atLive.filter((r) => r.deployment === 'real').length > 0, 'the real model was asked');

  // The batch: each custom_id exactly once.
  const done = await until('the batch completed', async () => {
    const b = await batchClient.batches.retrieve(batch.id);
    return ['completed', 'failed', 'expired', 'cancelled'].includes(b.status) && b;
  }, 240000);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const seen = new Map();
  for (const id of [done.output_file_id, done.error_file_id].filter(Boolean)) {
    const text = await (await batchClient.files.content(id)).text();
    for (const line of text.split('\n').filter(Boolean)) {
      const cid = JSON.parse(line).custom_id;
      seen.set(cid, (seen.get(cid) || 0) + 1);
    }
  }
  assert.equal(seen.size, LINES, `${seen.size} custom_ids answered of ${LINES}`);
  assert.deepEqual([...seen.values()].filter((n) => n !== 1), [], 'a line answered more than once');
  console.log(`batch: ${LINES} lines, each answered once (${JSON.stringify(done.request_counts)})`);

  // Quotas across hubs: a key with 12 requests per minute, 36 requests spread over the three hubs
  // at once; and a key with 300 tokens a day, 30 requests at once.
  const spread = async (key, n) => Promise.all([...Array(n).keys()].map(async (i) => {
    const h = hubs[i % hubs.length];
    const r = await fetch(`${h.url}/d/sim/v1/chat/completions`, { method: 'POST', signal: AbortSignal.timeout(60000),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: `Quota ${i}` }], max_tokens: 8 }) });
    return { status: r.status, body: await r.json() };
  }));
  const rpm = await spread(keyOf('--rpm', '12'), 36);
  const rpmOk = rpm.filter((r) => r.status === 200).length;
  console.log(`rpm 12 across 3 hubs: ${rpmOk} of 36 answered`);
  assert.ok(rpmOk >= 1 && rpmOk <= 12, `${rpmOk} answered under rpm 12`);
  assert.deepEqual([...new Set(rpm.filter((r) => r.status !== 200).map((r) => r.status))], [429]);
  const tokenKey = keyOf('--tokens-per-day', '300');
  const tok = await spread(tokenKey, 30);
  const spent = tok.filter((r) => r.status === 200).reduce((n, r) => n + r.body.usage.total_tokens, 0);
  console.log(`tokens_per_day 300 across 3 hubs: ${tok.filter((r) => r.status === 200).length} answered, ${spent} tokens`);
  assert.ok(spent > 0 && spent <= 300, `${spent} tokens used of 300`);
  const listed = JSON.parse(cli(hubs[2], 'keys', 'ls', '--json')).keys.find((k) => k.tokens_per_day === 300);
  assert.ok(listed.tokens_today <= 300, `the key counted ${listed.tokens_today} of 300`);

  for (const h of hubs) await stop(h.process);
}

// Routing on measurements, end to end: a real hub and two `cellserve agent --simulate` devices on
// 127.0.0.1. One writes 100 tok/s and says so; the other writes 25 tok/s and claims 100x that
// (`claim=100`, the simulate test knob). Three clients of the official `openai` package keep asking
// the deployment endpoint, streamed and not; from their own records (the X-Cellserve-Replica each
// answer names) the over-reporter answers no more than its measured share of the capacity, and
// the hub shows it flagged: in `deployments show`, the API, the metrics and one log line.
// No timing is asserted: shares and flags only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, until } from '../../e2e/fleet_harness.mjs';

const json = async (url) => (await fetch(url)).json();

test('measured routing: a device claiming 100x its speed gets no more than its measured share', { skip: skipReason() || false }, () => inTempFleet('cs-measured-', async (dir) => {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  const hubProc = spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2'], 'hub');
  await until('the hub', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 10000);
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'honest'), '--name', 'honest',
    '--simulate', 'prefill=4000,decode=100,slots=2'], 'honest');
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'liar'), '--name', 'liar',
    '--simulate', 'prefill=4000,decode=25,slots=8,claim=100'], 'liar');
  const processors = await until('two agents', async () => {
    const p = (await json(`${hub}/api/v1/processors`)).processors;
    return p.filter((x) => x.online).length === 2 && p;
  });
  const nameOf = Object.fromEntries(processors.map((p) => [p.id, p.name]));
  const spec = path.join(dir, 'measured.toml');
  writeFileSync(spec, `name = "measured"\nreplicas = 2\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
    `sha256 = "${'cd'.repeat(32)}"\n[engine]\nsimulated = true\nparallel = 2\n`);
  cli('deploy', spec);
  const ready = await until('both replicas ready', async () => {
    const d = await json(`${hub}/api/v1/deployments/measured`);
    return d.ready === 2 && d;
  });
  const deviceOf = Object.fromEntries(ready.replicas.map((r) => [String(r.index), nameOf[r.processor]]));
  const liarIndex = Object.keys(deviceOf).find((i) => deviceOf[i] === 'liar');
  const liarRow = ready.replicas.find((r) => String(r.index) === liarIndex);
  assert.equal(liarRow.decode_tps, 2500, 'the liar claims 100x its 25 tok/s');

  // Three clients, each with one request outstanding at a time, as users write them: more than
  // the honest device's 2 slots, so the over-reporter is measured too.
  const oa = new OpenAI({ baseURL: `${hub}/d/measured/v1`, apiKey: 'x', maxRetries: 0 });
  const answeredBy = [];
  const ask = async (i) => {
    const body = { model: 'measured', max_tokens: 16, ignore_eos: true, messages: [{ role: 'user', content: `case ${i}` }] };
    if (i % 2 === 0) {
      const { data, response } = await oa.chat.completions.create(body).withResponse();
      assert.ok(data.choices[0].message.content.length > 0);
      return response.headers.get('x-cellserve-replica');
    }
    const { data: stream, response } = await oa.chat.completions
      .create({ ...body, stream: true, stream_options: { include_usage: true } }).withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.ok(text.length > 0);
    return response.headers.get('x-cellserve-replica');
  };
  await Promise.all([0, 1, 2].map(async (client) => {
    for (let i = client; i < 90; i += 3) answeredBy.push(await ask(i));
  }));

  const counts = { honest: 0, liar: 0 };
  for (const index of answeredBy) ++counts[deviceOf[index]];
  const after = await json(`${hub}/api/v1/deployments/measured`);
  const rowOf = (name) => after.replicas.find((r) => deviceOf[String(r.index)] === name);
  const liar = rowOf('liar');
  const honest = rowOf('honest');
  // Its measured share of the deployment's capacity: measured speed times (clamped) slots.
  const capacity = (r) => r.measured_decode_tps * r.slots;
  const measuredShare = capacity(liar) / (capacity(liar) + capacity(honest));
  const share = counts.liar / answeredBy.length;
  console.log(`over-reporter: answered ${counts.liar} of ${answeredBy.length} (${share.toFixed(3)}); measured share ` +
    `${measuredShare.toFixed(3)} (measured ${liar.measured_decode_tps.toFixed(1)} vs honest ` +
    `${honest.measured_decode_tps.toFixed(1)} tok/s; claimed ${liar.decode_tps} and ${honest.decode_tps})`);
  assert.equal(liar.slots, 2, 'its 8 slots count as the spec\'s parallel');
  assert.ok(liar.measured_decode_tps < liar.decode_tps / 10, JSON.stringify(liar));
  assert.ok(share <= measuredShare, `the over-reporter answered ${share} of the requests, above its measured share ${measuredShare}`);
  assert.equal(liar.speed_claim_inflated, true, JSON.stringify(liar));
  assert.equal(honest.speed_claim_inflated, false, JSON.stringify(honest));
  assert.ok(liar.routed_decode_tps <= liar.measured_decode_tps, JSON.stringify(liar));

  // Shown to the operator: deployments show, the metrics, and one event in the hub's log.
  const shown = cli('deployments', 'show', 'measured');
  assert.match(shown, /SPEED CLAIM INFLATED/);
  assert.equal(shown.match(/SPEED CLAIM INFLATED/g).length, 1, shown);
  const metrics = await (await fetch(`${hub}/metrics`)).text();
  assert.match(metrics, new RegExp(`cellserve_hub_replica_speed_claim_inflated\\{deployment="measured",replica="${liarIndex}"\\} 1`));
  assert.match(metrics, new RegExp(`cellserve_hub_replica_speed_tps\\{deployment="measured",replica="${liarIndex}",phase="decode",source="claimed"\\} 2500`));
  assert.equal(hubProc.log.match(/speed claim inflated/g)?.length, 1, 'one event when the claim is found inflated');
}));

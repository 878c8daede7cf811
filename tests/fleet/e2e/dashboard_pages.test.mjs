// The dashboard's Keys, Batches, Market and Traffic pages (web/pages/, docs/dashboard.md) in a
// real browser: Debian's chromium, headless, driven by puppeteer-core (tests/e2e/browser.mjs),
// against a live hub with an admin key, one `--simulate` agent serving a simulated deployment and
// one idle real agent (the market counts real devices only). What an operator does and sees:
// - a key created on the page is listed by the API, its secret is shown once and answers a chat,
//   its use shows against its quota, and revoked from the page it opens nothing;
// - a batch's row reaches completed with its progress full, counts and rate equal to the API's,
//   and its output file downloads (with the key in a header, never a URL) byte for byte;
// - the market shows the idle device, and the price for more replicas than there are devices as
//   not available, as the API says;
// - the traffic page counts what the API counts;
// - no console errors; no page scrolls sideways at phone width. Screenshots are artifacts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { skipReason } from '../../e2e/harness.mjs';
import { inTempFleet, spawnLogged, startClosedHub, until } from '../../e2e/fleet_harness.mjs';
import { artifactsDir, browserSkipReason, openBrowser, text, texts } from '../../e2e/browser.mjs';

const ADMIN = 'dashboard-pages-admin-key-0123';
const DEPLOYMENT = 'risk';
const QUOTA = 5000;
const LINES = 4;

async function startFleet(dir) {
  const { hub, cli } = await startClosedHub(dir, ADMIN);
  const token = cli('hub', 'tokens', 'create', '--uses', '2').trim().split(/\s+/)[0];
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'sim'), '--name', 'sim', '--enroll', token,
    '--simulate', 'prefill=4000,decode=400,slots=2', '--no-autotune'], 'sim');
  // A real device that serves nothing: no model, no benchmark; what the market counts.
  spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'idle'), '--name', 'idle', '--enroll', token,
    '--benchmark-shape', '', '--no-autotune'], 'idle');
  const spec = path.join(dir, 'spec.toml');
  writeFileSync(spec, `name = "${DEPLOYMENT}"\nreplicas = 1\nmax_price_per_day = 5\n[model]\n` +
    `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`);
  cli('deploy', spec);
  const call = async (method, pathname, { key = ADMIN, body, form } = {}) => {
    const headers = { authorization: `Bearer ${key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${hub}${pathname}`, { method, headers, body: form ?? (body === undefined ? undefined : JSON.stringify(body)) });
    return { status: r.status, body: await r.json().catch(() => null) };
  };
  const api = async (pathname) => (await call('GET', pathname)).body;
  await until('the replica ready', async () => (await api(`/api/v1/deployments/${DEPLOYMENT}`)).ready === 1, 30000);
  await until('both devices online', async () =>
    (await api('/api/v1/processors')).processors.filter((p) => p.online).length === 2, 30000);
  return { hub, call, api };
}

const chat = (call, key) => call('POST', `/d/${DEPLOYMENT}/v1/chat/completions`, {
  key, body: { messages: [{ role: 'user', content: 'Is this payment fraud?' }], max_tokens: 8 } });

async function checkKeys(page, { call, api }) {
  await page.click('a[href="#/keys"]');
  await page.waitForSelector('form#create-key select[name=deployment] option');
  await page.type('form#create-key input[name=name]', 'dashboard-made');
  await page.type('form#create-key input[name=tokens_per_day]', String(QUOTA));
  await page.click('form#create-key button[type=submit]');
  await page.waitForSelector('[data-testid=new-key]');
  const secret = await text(page, '[data-testid=new-key]');
  assert.match(secret, /^csk_[0-9a-f]{48}$/);
  const listed = (await api('/api/v1/keys')).keys.find((k) => k.name === 'dashboard-made');
  assert.ok(listed, 'the API lists the key made on the page');
  assert.deepEqual([listed.deployment, listed.tokens_per_day, listed.rpm, listed.revoked], [DEPLOYMENT, QUOTA, 0, false]);
  const row = `[data-testid=keys-table] tr[data-key-id="${listed.id}"]`;
  await page.waitForSelector(row);

  // The secret answers a chat, and its use shows against the quota as the API counts it.
  const answered = await chat(call, secret);
  assert.equal(answered.status, 200, JSON.stringify(answered.body));
  const used = await until('the use counted', async () => {
    const k = (await api('/api/v1/keys')).keys.find((x) => x.id === listed.id);
    return k.requests === 1 && k.tokens_today > 0 && k;
  }, 10000);
  await until('the page showing the use', async () =>
    (await text(page, `${row} td[data-col=requests]`)) === '1' &&
    (await text(page, `${row} td[data-col=tokens-today]`)) === `${used.tokens_today} / ${QUOTA} tokens`, 10000);

  // The 52-character secret fits a phone's width.
  await page.setViewport({ width: 390, height: 844 });
  const right = await page.$eval('[data-testid=new-key]', (e) => e.getBoundingClientRect().right);
  assert.ok(right <= 390, `the new key ends at ${right} px in a 390 px window`);
  await page.setViewport({ width: 1280, height: 800 });

  // Shown once: gone from the page when dismissed, and never kept by the browser.
  await page.click('[data-action=dismiss]');
  assert.equal(await page.$('[data-testid=new-key]'), null);
  assert.equal((await page.content()).includes(secret), false);
  const stored = await page.evaluate(() => JSON.stringify([{ ...sessionStorage }, { ...localStorage }, window.location.href]));
  assert.equal(stored.includes(secret), false, 'the secret is in no storage and no URL');

  // Revoked from the page (confirmed): the API says so and the secret opens nothing.
  await page.click(`${row} button[data-action=revoke]`);
  await until('the key revoked', async () => (await api('/api/v1/keys')).keys.find((k) => k.id === listed.id).revoked, 10000);
  await until('the page showing it revoked', async () => (await text(page, `${row} td[data-col=state]`)) === 'revoked', 10000);
  assert.equal((await chat(call, secret)).status, 401);
}

async function checkBatches(page, { hub, call, api }, downloads) {
  const lines = [...Array(LINES).keys()].map((i) => JSON.stringify({ custom_id: `case-${i}`, method: 'POST',
    url: '/v1/chat/completions', body: { messages: [{ role: 'user', content: `Case ${i}` }], max_tokens: 16 } }));
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([lines.join('\n') + '\n']), 'cases.jsonl');
  const file = await call('POST', `/d/${DEPLOYMENT}/v1/files`, { form });
  assert.equal(file.status, 200, JSON.stringify(file.body));
  const created = await call('POST', `/d/${DEPLOYMENT}/v1/batches`, {
    body: { input_file_id: file.body.id, endpoint: '/v1/chat/completions', completion_window: '24h' } });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const id = created.body.id;

  await page.click('a[href="#/batches"]');
  const row = `tr[data-batch-id="${id}"]`;
  await page.waitForSelector(row);
  await until('the batch completed on the page', async () => (await text(page, `${row} td[data-col=status]`)) === 'completed', 30000);
  const batch = (await api(`/d/${DEPLOYMENT}/v1/batches/${id}`));
  const throughput = await api(`/d/${DEPLOYMENT}/v1/batches/${id}/throughput`);
  assert.equal(batch.request_counts.completed, LINES);
  const bar = await page.$eval(`${row} progress`, (p) => [p.value, p.max]);
  assert.deepEqual(bar, [LINES, LINES]);
  assert.equal(await text(page, `${row} td[data-col=done]`), String(batch.request_counts.completed));
  assert.equal(await text(page, `${row} td[data-col=failed]`), String(batch.request_counts.failed));
  // A finished batch's rate is fixed (over the time it ran): the page shows the API's, rounded.
  await until('the rate shown', async () =>
    (await text(page, `${row} td[data-col=rate]`)) === throughput.requests_per_hour.toFixed(1), 10000);
  assert.equal(await text(page, `${row} td[data-col=eta]`), '—');

  // The output file, fetched with the key in a header and saved from a Blob URL.
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
  await page.click(`${row} button[data-file=output]`);
  const saved = path.join(downloads, `${batch.output_file_id}.jsonl`);
  await until('the output downloaded', async () => readdirSync(downloads).includes(path.basename(saved)), 10000);
  const content = await fetch(`${hub}/d/${DEPLOYMENT}/v1/files/${batch.output_file_id}/content`,
    { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(readFileSync(saved, 'utf8'), await content.text());
  assert.equal(readFileSync(saved, 'utf8').trim().split('\n').length, LINES);
}

// An autoscaled deployment shows its scaling decisions with their reasons: a schedule window open
// all the time (each minute opens one for a minute) raises it to 2 at once, with no device free.
async function checkScalingEvents(page, { call, api }) {
  const spec = { name: 'nightly', min_replicas: 1, max_replicas: 2, max_price_per_day: 5,
    schedule: [{ cron: '* * * * *', replicas: 2, for: '1m' }],
    model: { url: 'http://127.0.0.1:9/m.gguf', sha256: 'ab'.repeat(32) }, engine: { simulated: true } };
  const created = await call('POST', '/api/v1/deployments', { body: spec });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const events = await until('the rise recorded', async () => {
    const e = (await api('/api/v1/deployments/nightly/events')).data;
    return e.length > 0 && e;
  }, 10000);
  assert.equal(events[0].action, 'scale_up');
  await page.click('a[href="#/deployments"]');
  const item = '[data-testid=events-nightly] li[data-action=scale_up]';
  await page.waitForSelector(item, { timeout: 15000 });
  assert.equal(await text(page, item),
    `${new Date(events[0].at_ms).toISOString().replace('T', ' ').slice(0, 19)} UTC scale_up 1 → 2: ${events[0].reason}`);
  assert.match(await text(page, '[data-testid=events-nightly] h3'), /^Autoscaling 1–2 replicas$/);
  assert.equal((await call('DELETE', '/api/v1/deployments/nightly')).status, 200);
}

async function checkMarket(page, { api }) {
  await page.click('a[href="#/market"]');
  await page.waitForSelector('[data-testid=market] [data-testid=market-eligible]');
  const one = await api('/api/v1/market?replicas=1');
  assert.deepEqual([one.eligible, one.available], [1, 1], 'the idle real device; the simulated one is not counted');
  assert.equal(await text(page, '[data-testid=market-eligible] .figure-value'), String(one.eligible));
  assert.equal(await text(page, '[data-testid=market-available] .figure-value'), String(one.available));
  assert.equal(await text(page, '[data-testid=market-average-ask] .figure-value'), `${one.average_ask.toFixed(2)} / day`);
  assert.match(await text(page, '[data-testid=market-price] .figure-value'), new RegExp(`^${one.price_for_replicas.toFixed(2)} / day each`));
  // Two replicas: only one device is available.
  await page.$eval('[data-testid=market] input[name=replicas]', (e) => e.select());
  await page.type('[data-testid=market] input[name=replicas]', '2');
  assert.equal((await api('/api/v1/market?replicas=2')).price_for_replicas, null);
  await until('the price for 2 not available', async () =>
    /not available/.test(await text(page, '[data-testid=market-price] .figure-value')), 10000);
}

async function checkTraffic(page, { call, api }) {
  for (let i = 0; i < 3; i++) assert.equal((await chat(call, ADMIN)).status, 200);
  // And one the deployment refuses (a 4xx): the count takes every status class.
  const refused = await call('POST', `/d/${DEPLOYMENT}/v1/chat/completions`, { body: { messages: 'not a list' } });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  await page.click('a[href="#/traffic"]');
  const counter = `[data-testid="traffic-requests-${DEPLOYMENT}"]`;
  await page.waitForSelector(counter);
  const points = async () => (await api('/api/v1/traffic')).deployments[DEPLOYMENT] || [];
  let shown = '';
  let counted = 0;
  await until('the page counting what the API counts', async () => {
    const held = await points();
    counted = held.reduce((n, p) => n + p.requests_2xx + p.requests_4xx + p.requests_5xx, 0);
    shown = await text(page, counter);
    return held.some((p) => p.requests_4xx > 0) && counted >= 4 && shown === String(counted);
  }, 20000).catch((e) => {
    throw new Error(`${e.message} (page '${shown}', API ${counted})`);
  });
  await page.waitForSelector(`[data-testid="traffic-${DEPLOYMENT}"] .uplot`);
  assert.equal((await page.$$(`[data-testid="traffic-${DEPLOYMENT}"] .uplot`)).length, 6);
}

test('the dashboard pages: keys, batches, market and traffic in chromium',
  { skip: skipReason() || (await browserSkipReason()) }, async () => {
    await inTempFleet('cs-dashboard-pages-', async (dir) => {
      const fleet = await startFleet(dir);
      const artifacts = artifactsDir('dashboard_pages');
      const downloads = path.join(dir, 'downloads');
      mkdirSync(downloads);
      const b = await openBrowser(artifacts);
      try {
        const { page } = b;
        await page.goto(`${fleet.hub}/ui/`);
        await page.waitForSelector('form#login input[name=key]');
        await page.type('input[name=key]', ADMIN);
        await page.click('form#login button[type=submit]');
        await page.waitForSelector('nav a[href="#/keys"]');
        // Before the key the shell asked once and was refused: its own 401, not a page's error.
        const refused = b.problems.splice(0);
        assert.ok(refused.every((p) => /status of 401 .*\/api\/v1\/processors\)$/.test(p)), refused.join('\n'));

        await checkKeys(page, fleet);
        await b.screenshot('keys-desktop');
        await checkBatches(page, fleet, downloads);
        await b.screenshot('batches-desktop');
        await checkMarket(page, fleet);
        await b.screenshot('market-desktop');
        await checkTraffic(page, fleet);
        await checkScalingEvents(page, fleet);
        await b.screenshot('traffic-desktop');

        // Phone width: no page scrolls sideways (wide tables scroll in their own box).
        await page.setViewport({ width: 390, height: 844 });
        for (const name of ['traffic', 'batches', 'keys', 'market']) {
          await page.click(`a[href="#/${name}"]`);
          await page.waitForSelector(`.${name}-page`);
          // The charts follow their box's new width (a ResizeObserver): a few frames.
          let widths = [];
          await until(`${name} fitting the phone's width`, async () => {
            widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
            return widths[0] <= widths[1];
          }, 5000).catch((e) => {
            throw new Error(`${e.message}: the page is ${widths[0]} px wide in a ${widths[1]} px window`);
          });
          await b.screenshot(`${name}-phone`);
        }
        assert.deepEqual(b.problems, [], 'no console errors, page errors or failed requests');
        console.log(`dashboard pages: screenshots in ${artifacts}`);
      } finally {
        await b.close();
      }
    });
  });

// The hub's dashboard (/ui/, docs/dashboard.md) in a real browser: Debian's chromium, headless,
// driven by puppeteer-core (tests/e2e/browser.mjs), against a live hub with an admin key, two
// `--simulate` agents and a simulated deployment of 2 replicas. It checks what an operator sees:
// a wrong key refused, the fleet's specs equal to the REST API's, the replicas reaching ready,
// traffic the test sent counted on the traffic page, a drain clicked on the page showing in
// `cellserve deployments show`, filter, sort, scale, remove and revoke from the page, a killed
// agent's row turning offline, no console errors, a page that fits a phone's width, and a banner
// once the hub is gone. Screenshots (desktop and phone) are saved as artifacts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { skipReason } from '../../e2e/harness.mjs';
import { inTempFleet, spawnLogged, startClosedHub, until } from '../../e2e/fleet_harness.mjs';
import { artifactsDir, browserSkipReason, openBrowser, text, texts } from '../../e2e/browser.mjs';

const ADMIN = 'dashboard-admin-key-0123456789';
const DEPLOYMENT = 'risk';
const SENT = 3;

async function startFleet(dir) {
  const { hub, cli, process: hubProcess } = await startClosedHub(dir, ADMIN, ['--ping-timeout', '3']);
  const token = cli('hub', 'tokens', 'create', '--uses', '2').trim().split(/\s+/)[0];
  const agents = {};
  // Names with letters outside hex digits, so filtering by one never matches the other's id.
  for (const name of ['north', 'south']) {
    agents[name] = spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name, '--enroll', token,
      '--simulate', 'prefill=4000,decode=400,slots=2', '--no-autotune'], name);
  }
  const spec = path.join(dir, 'spec.toml');
  writeFileSync(spec, `name = "${DEPLOYMENT}"\nreplicas = 2\nmax_price_per_day = 5\n[model]\n` +
    `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ab'.repeat(32)}"\n[engine]\nsimulated = true\n`);
  cli('deploy', spec);
  const admin = { authorization: `Bearer ${ADMIN}` };
  const api = async (pathname) => (await fetch(`${hub}${pathname}`, { headers: admin })).json();
  return { hub, hubProcess, cli, agents, api };
}

test('the dashboard: sign-in, fleet, deployments, traffic, drain and a lost device in chromium',
  { skip: skipReason() || (await browserSkipReason()) }, async () => {
    await inTempFleet('cs-dashboard-', async (dir) => {
      const { hub, hubProcess, cli, agents, api } = await startFleet(dir);
      const artifacts = artifactsDir('dashboard');
      const b = await openBrowser(artifacts);
      try {
        const { page } = b;
        // Load time, logged, not asserted: from navigation to the sign-in form drawn.
        const started = Date.now();
        await page.goto(`${hub}/ui/`);
        await page.waitForSelector('form#login input[name=key]');
        const nav = await page.evaluate(() => performance.getEntriesByType('navigation')[0].toJSON());
        console.log(`dashboard: sign-in form drawn ${Date.now() - started} ms after navigation ` +
          `(DOMContentLoaded ${Math.round(nav.domContentLoadedEventEnd)} ms, load ${Math.round(nav.loadEventEnd)} ms)`);

        // A wrong key is refused with a message; the right one opens the fleet.
        await page.type('input[name=key]', 'not-the-key');
        await page.click('form#login button[type=submit]');
        await page.waitForSelector('[data-testid=login-error]');
        assert.match(await text(page, '[data-testid=login-error]'), /refused/);
        assert.equal(await page.evaluate(() => window.location.href.includes('not-the-key')), false);
        await page.$eval('input[name=key]', (e) => e.select());
        await page.type('input[name=key]', ADMIN);
        await page.click('form#login button[type=submit]');
        await page.waitForSelector('[data-testid=fleet-table]');
        // Before the right key the page asked twice and was refused (401s the browser logs as
        // console errors: the sign-in's own); from here on nothing may fail.
        const refused = b.problems.splice(0);
        assert.ok(refused.every((p) => /status of 401 .*\/api\/v1\/processors\)$/.test(p)), refused.join('\n'));
        assert.equal(await page.evaluate(() => sessionStorage.getItem('cellserve.adminKey')), ADMIN);

        // Both devices, with the specs the REST API reports.
        const processors = (await until('two devices online', async () => {
          const list = (await api('/api/v1/processors')).processors;
          return list.filter((p) => p.online).length === 2 && list;
        })).sort((x, y) => x.name.localeCompare(y.name));
        for (const p of processors) {
          const row = `[data-testid=fleet-table] tr[data-device-id="${p.id}"]`;
          await page.waitForSelector(row);
          assert.equal(await text(page, `${row} td[data-col=name]`), p.name);
          assert.equal(await text(page, `${row} td[data-col=arch]`), p.specs.arch);
          assert.equal(await text(page, `${row} td[data-col=cores]`), String(p.specs.cores));
          assert.equal(await page.$eval(`${row} td[data-col=ram]`, (e) => e.dataset.value), String(p.specs.ram_bytes));
          assert.equal(await text(page, `${row} td[data-col=ram]`), `${(p.specs.ram_bytes / 2 ** 30).toFixed(1)} GiB`);
          assert.match(await text(page, `${row} td[data-col=prefill]`), /^4000\.0/);
          assert.match(await text(page, `${row} td[data-col=decode]`), /^400\.0/);
          assert.equal(await text(page, `${row} td[data-col=enrollment]`), 'enrolled');
        }
        await b.screenshot('fleet-desktop');
        // Filter and sort: the table narrows to south, then sorts by name downwards.
        const rowNames = () => texts(page, '[data-testid=fleet-table] tbody tr td[data-col=name]');
        await page.type('input[name=filter]', 'south');
        await until('the filter keeping south only', async () => (await rowNames()).join() === 'south', 5000);
        await page.$eval('input[name=filter]', (e) => e.select());
        await page.keyboard.press('Backspace');
        await until('both rows back', async () => (await rowNames()).length === 2, 5000);
        await page.click('[data-testid=fleet-table] th[data-sort=name]');
        await until('sorted by name, descending', async () => (await rowNames()).join() === 'south,north', 5000);

        // The replicas reach ready on the deployments page.
        await page.click('a[href="#/deployments"]');
        const section = `[data-testid="deployment-${DEPLOYMENT}"]`;
        await until('both replicas ready on the page', async () => {
          const states = await texts(page, `${section} tr[data-replica] td[data-col=state]`);
          return states.length === 2 && states.every((s) => s === 'ready');
        }, 30000);
        const shown = await api(`/api/v1/deployments/${DEPLOYMENT}`);
        for (const r of shown.replicas) {
          const device = processors.find((p) => p.id === r.processor).name;
          assert.equal(await text(page, `tr[data-replica="${DEPLOYMENT}/${r.index}"] td[data-col=device]`), device);
        }
        await b.screenshot('deployments-desktop');

        // Traffic: chat completions through the hub's endpoint with the official client.
        const client = new OpenAI({ baseURL: `${hub}/d/${DEPLOYMENT}/v1`, apiKey: ADMIN, maxRetries: 0, timeout: 30000 });
        for (let i = 0; i < SENT; i++) {
          const chunks = [];
          for await (const chunk of await client.chat.completions.create({ model: DEPLOYMENT, stream: true,
            messages: [{ role: 'user', content: `Case ${i}: is this payment fraud?` }] })) {
            if (chunk.choices.length > 0) chunks.push(chunk.choices[0].delta);
          }
          assert.ok(chunks.length > 0);
        }

        // A drain clicked on the page (its confirmation accepted) is what the CLI then shows.
        await page.click(`tr[data-replica="${DEPLOYMENT}/0"] button[data-action=drain]`);
        await until('the CLI showing replica 0 draining', async () =>
          /^\s*0\s+replica\s+\S+\s+ready \(draining\)/m.test(cli('deployments', 'show', DEPLOYMENT)), 10000);
        await page.waitForSelector(`tr[data-replica="${DEPLOYMENT}/0"] button[data-action=undrain]`);
        // Scale from the page: the hub's spec follows and a third replica row appears.
        await page.$eval(`${section} input[name=replicas]`, (e) => e.select());
        await page.type(`${section} input[name=replicas]`, '3');
        await page.click(`${section} button[data-action=scale]`);
        await until('the spec scaled to 3', async () => (await api(`/api/v1/deployments/${DEPLOYMENT}`)).spec.replicas === 3, 10000);
        await page.waitForSelector(`tr[data-replica="${DEPLOYMENT}/2"]`);

        // The traffic page counts what was sent.
        await page.click('a[href="#/traffic"]');
        const counter = `[data-testid="traffic-requests-${DEPLOYMENT}"]`;
        await page.waitForSelector(counter);
        let counted = '';
        await until(`the traffic page counting ${SENT} requests`, async () => {
          counted = await text(page, counter);
          return Number(counted) >= SENT;
        }, 20000).catch((e) => {
          throw new Error(`${e.message} (it shows '${counted}')`);
        });
        await b.screenshot('traffic-desktop');

        // A device lost (SIGKILL, no goodbye) turns offline on the fleet page.
        await page.click('a[href="#/fleet"]');
        const lost = processors.find((p) => p.name === 'south');
        agents.south.kill('SIGKILL');
        await until('south offline on the page', async () =>
          (await text(page, `tr[data-device-id="${lost.id}"] td[data-col=state]`))?.startsWith('offline'), 20000);
        assert.equal((await api('/api/v1/processors')).processors.find((p) => p.id === lost.id).online, false);

        // Phone width: the page itself never scrolls sideways (wide tables scroll in their box).
        await page.setViewport({ width: 390, height: 844 });
        await page.waitForSelector('[data-testid=fleet-table] tr[data-device-id]');
        const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
        assert.ok(widths[0] <= widths[1], `the page is ${widths[0]} px wide in a ${widths[1]} px window`);
        await b.screenshot('fleet-phone');
        await page.click('a[href="#/deployments"]');
        await page.waitForSelector(`${section} tr[data-replica]`);
        await b.screenshot('deployments-phone');

        // Remove, confirmed: the deployment is gone from the hub and from the page.
        await page.click(`${section} button[data-action=remove]`);
        await until('the deployment removed', async () =>
          (await fetch(`${hub}/api/v1/deployments/${DEPLOYMENT}`, { headers: { authorization: `Bearer ${ADMIN}` } })).status === 404, 10000);
        await until('its section gone from the page', async () => (await page.$(section)) === null, 10000);

        // Revoke a device from the fleet page (confirmed): the hub records it, the row offers approve.
        await page.click('a[href="#/fleet"]');
        const kept = processors.find((p) => p.name === 'north');
        const revoke = `tr[data-device-id="${kept.id}"] button[data-action=revoke]`;
        await page.waitForSelector(revoke);
        await page.click(revoke);
        await until('north revoked at the hub', async () =>
          (await api('/api/v1/processors')).processors.find((p) => p.id === kept.id).enrollment === 'revoked', 10000);
        await page.waitForSelector(`tr[data-device-id="${kept.id}"] button[data-action=approve]`);
        assert.equal(await text(page, `tr[data-device-id="${kept.id}"] td[data-col=enrollment]`), 'revoked');

        assert.deepEqual(b.problems, [], 'no console errors, page errors or failed requests');

        // The hub gone: a banner says so (the page keeps retrying).
        hubProcess.kill('SIGKILL');
        await page.waitForSelector('[data-testid=hub-error]', { timeout: 15000 });
        assert.match(await text(page, '[data-testid=hub-error]'), /cannot be reached/);
        console.log(`dashboard: screenshots in ${artifacts}`);
      } finally {
        await b.close();
      }
    });
  });

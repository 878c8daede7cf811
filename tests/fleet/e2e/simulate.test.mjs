// Simulate mode end to end: a real hub and two `cellserve agent --simulate` processes on
// 127.0.0.1. A simulated deployment of 2 replicas is matched to them without any download and
// answers the official `openai` client through the tunnel (streamed and not) with deterministic,
// paced text; a normal deployment is never matched to them. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, skipReason } from '../../e2e/harness.mjs';
import { children, freePort, sleep, spawnLogged, stop, until } from '../../e2e/fleet_harness.mjs';





async function api(hub, pathname, options = {}) {
  const r = await fetch(`${hub}${pathname}`, options);
  return { status: r.status, json: await r.json() };
}


test('simulate: --simulate refuses a bad setting with one line', { skip: skipReason() || false }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-sim-bad-'));
  try {
    for (const bad of ['prefill=400,speed=3', 'slots=0', 'decode=fast', 'prefill=1e12']) {
      const r = spawnSync(bin, ['agent', '--hub', 'http://127.0.0.1:1', '--data-dir', dir, '--simulate', bad], { encoding: 'utf8' });
      assert.notEqual(r.status, 0, bad);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /--simulate/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('simulate: two simulated agents serve a simulated deployment, never a normal one', { skip: skipReason() || false }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-sim-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const sha = 'ab'.repeat(32); // never fetched: simulated agents download nothing
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  try {
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 10000);
    for (const name of ['sim-a', 'sim-b']) {
      spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name, '--price-per-day', '0.1',
        '--simulate', 'prefill=4000,decode=400,slots=2'], name);
    }
    const procs = await until('two simulated agents online', async () => {
      const { json } = await api(hub, '/api/v1/processors');
      return json.processors.filter((p) => p.online).length === 2 && json.processors;
    });
    for (const p of procs) {
      assert.equal(p.simulated, true, p.name);
      assert.equal(p.benchmark.decode_tps, 400);
    }
    assert.match(cli('fleet', 'ls'), /sim-a\s+online sim/);

    // A normal deployment first: it is older, so it would be matched first if the rule allowed it.
    const realSpec = path.join(dir, 'real.toml');
    writeFileSync(realSpec, `name = "real"\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\nsha256 = "${sha}"\n`);
    cli('deploy', realSpec);
    const simSpec = path.join(dir, 'sim.toml');
    writeFileSync(simSpec, `name = "sim"\nreplicas = 2\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${sha}"\n[engine]\nsimulated = true\n`);
    cli('deploy', simSpec);
    const ready = await until('both simulated replicas ready', async () => {
      const { json } = await api(hub, '/api/v1/deployments/sim');
      return json.ready === 2 && json;
    });
    for (const r of ready.replicas) {
      assert.equal(r.prefill_tps, 4000);
      assert.equal(r.decode_tps, 400);
    }
    const real = (await api(hub, '/api/v1/deployments/real')).json;
    assert.equal(real.replicas[0].state, 'unmatched', JSON.stringify(real.replicas[0]));
    assert.ok(!real.replicas[0].processor, 'no processor for the normal deployment');

    const client = (n) => new OpenAI({ baseURL: `${hub}/d/sim/r/${n}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
    const models = await client(0).models.list();
    assert.equal(models.data[0].id, 'sim');
    assert.equal(models.data[0].owned_by, 'cellserve-simulated');

    // Equal requests get equal answers, on either device; the answer ends by itself.
    const messages = [{ role: 'user', content: 'How many devices does this fleet have?' }];
    const a = await client(0).chat.completions.create({ model: 'sim', messages });
    const b = await client(1).chat.completions.create({ model: 'sim', messages });
    assert.equal(a.choices[0].finish_reason, 'stop');
    assert.ok(a.choices[0].message.content.length > 0);
    assert.match(a.choices[0].message.content, /\.$/);
    assert.equal(b.choices[0].message.content, a.choices[0].message.content);
    assert.ok(a.usage.prompt_tokens > 0);
    assert.ok(a.usage.completion_tokens >= 8);
    assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
    const other = await client(0).chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'Something else' }] });
    assert.notEqual(other.choices[0].message.content, a.choices[0].message.content);

    // max_tokens and stop are honoured.
    const short = await client(1).chat.completions.create({ model: 'sim', messages, max_tokens: 3 });
    assert.equal(short.choices[0].finish_reason, 'length');
    assert.equal(short.usage.completion_tokens, 3);
    assert.ok(a.choices[0].message.content.startsWith(short.choices[0].message.content));
    const words = a.choices[0].message.content.split(' ');
    const stopped = await client(0).chat.completions.create({ model: 'sim', messages, stop: [` ${words[2]}`] });
    assert.equal(stopped.choices[0].finish_reason, 'stop');
    assert.equal(stopped.choices[0].message.content, a.choices[0].message.content.split(` ${words[2]}`)[0]);

    // Streaming gives the same text in pieces, then the finish reason.
    const t0 = performance.now();
    const stream = await client(1).chat.completions.create({ model: 'sim', messages, stream: true });
    let text = '';
    let chunks = 0;
    let finish = null;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    assert.ok(chunks > 2, `${chunks} chunks`);
    assert.equal(text, a.choices[0].message.content);
    assert.equal(finish, 'stop');
    // Reported, not asserted: the pace the simulator keeps through hub and tunnel.
    const paced = a.usage.prompt_tokens / 4000 + a.usage.completion_tokens / 400;
    console.log(`streamed ${a.usage.completion_tokens} tokens in ${(performance.now() - t0).toFixed(0)} ms; ` +
      `the simulated device needs ${(paced * 1000).toFixed(0)} ms`);

    // More requests than slots at once: the rest wait in the replica's queue, all complete.
    const burst = await Promise.all([0, 1, 2, 3, 4].map((i) =>
      client(0).completions.create({ model: 'sim', prompt: `request ${i}`, max_tokens: 6, ignore_eos: true })));
    for (const r of burst) assert.equal(r.usage.completion_tokens, 6);

    // Still: the normal deployment stays unmatched.
    assert.equal((await api(hub, '/api/v1/deployments/real')).json.replicas[0].state, 'unmatched');
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// A frozen device (SIGSTOP: its tunnel stays open, it just stops answering) is noticed by its
// missed heartbeats, long before the tunnel's 60 s ping timeout here: its replica gets no new
// requests, the other serves them all, and once it runs again it takes requests again.
test('simulate: a device that misses its heartbeats gets no new requests until it answers', { skip: skipReason() || false }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-sim-beat-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8' });
  const agents = {};
  try {
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'),
      '--poll-seconds', '0.2', '--ping-timeout', '60'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 10000);
    for (const name of ['beat-a', 'beat-b']) {
      agents[name] = spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name,
        '--simulate', 'prefill=4000,decode=400,slots=2'], name);
    }
    await until('two agents', async () => (await api(hub, '/api/v1/processors')).json.processors.filter((p) => p.online).length === 2);
    const spec = path.join(dir, 'beat.toml');
    writeFileSync(spec, `name = "beat"\nreplicas = 2\nmax_price_per_day = 5\n[model]\nurl = "http://127.0.0.1:9/m.gguf"\n` +
      `sha256 = "${'cd'.repeat(32)}"\n[engine]\nsimulated = true\n`);
    cli('deploy', spec);
    const shown = await until('both replicas ready', async () => {
      const { json } = await api(hub, '/api/v1/deployments/beat');
      return json.ready === 2 && json;
    });
    const procs = (await api(hub, '/api/v1/processors')).json.processors;
    const frozenId = procs.find((p) => p.name === 'beat-b').id;
    const frozenIndex = shown.replicas.find((r) => r.processor === frozenId).index;
    // Which replica answers each of `n` requests through the deployment endpoint, sent
    // `together` at a time (more at once than one device's 2 slots: the load spreads).
    const servedBy = async (n, together) => {
      const seen = [];
      for (let i = 0; i < n; i += together) {
        await Promise.all([...Array(together).keys()].map(async (j) => {
          const r = await fetch(`${hub}/d/beat/v1/chat/completions`, { method: 'POST', signal: AbortSignal.timeout(20000),
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'beat', messages: [{ role: 'user', content: `case ${i + j}` }], max_tokens: 40 }) });
          const body = await r.text();
          assert.equal(r.status, 200, body);
          assert.equal(JSON.parse(body).choices.length, 1);
          seen.push(Number(r.headers.get('x-cellserve-replica')));
        }));
      }
      return seen;
    };
    agents['beat-b'].kill('SIGSTOP');
    const missed = await until('the frozen replica marked', async () => {
      const { json } = await api(hub, '/api/v1/deployments/beat');
      return json.replicas.find((r) => r.index === frozenIndex).heartbeat_missed && json;
    }, 20000);
    assert.equal(missed.replicas.find((r) => r.index !== frozenIndex).heartbeat_missed, false);
    const whileFrozen = await servedBy(12, 4);
    assert.ok(whileFrozen.every((i) => i !== frozenIndex), JSON.stringify(whileFrozen));
    assert.equal((await api(hub, '/api/v1/processors')).json.processors.find((p) => p.id === frozenId).online, true,
      'still online: the tunnel has not timed out');
    agents['beat-b'].kill('SIGCONT');
    await until('the replica answers again', async () =>
      !(await api(hub, '/api/v1/deployments/beat')).json.replicas.find((r) => r.index === frozenIndex).heartbeat_missed, 20000);
    // Both take requests again.
    const after = await servedBy(12, 4);
    assert.ok(after.includes(frozenIndex), JSON.stringify(after));
    console.log(`while frozen: replicas ${JSON.stringify(whileFrozen)}; after: ${JSON.stringify(after)}`);
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// API keys and quotas (issue 20, item 3): a key opens one deployment, within a request rate and
// a daily token budget counted at the hub across both replicas.
test('simulate: API keys open one deployment within their quotas, across replicas', { skip: skipReason() || false }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-sim-keys-'));
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const keyFile = path.join(dir, 'admin.key');
  writeFileSync(keyFile, 'keys-admin-key\n', { mode: 0o600 });
  const env = { ...process.env, CELLSERVE_HUB_KEY: 'keys-admin-key' };
  const cli = (...args) => execFileSync(bin, [...args, '--hub', hub], { encoding: 'utf8', env });
  try {
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'hub'), '--poll-seconds', '0.2',
      '--api-key-file', keyFile], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`).catch(() => null))?.status === 200, 10000);
    const enroll = cli('hub', 'tokens', 'create', '--uses', '2').trim();
    for (const name of ['key-a', 'key-b']) {
      spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, name), '--name', name, '--enroll', enroll,
        '--simulate', 'prefill=4000,decode=400,slots=2'], name);
    }
    for (const [name, replicas] of [['quota', 2], ['other', 1]]) {
      const spec = path.join(dir, `${name}.toml`);
      writeFileSync(spec, `name = "${name}"\nreplicas = ${replicas}\nmax_price_per_day = 5\n[model]\n` +
        `url = "http://127.0.0.1:9/m.gguf"\nsha256 = "${'ef'.repeat(32)}"\n[engine]\nsimulated = true\n`);
      cli('deploy', spec);
    }
    const admin = { authorization: 'Bearer keys-admin-key' };
    await until('both replicas ready', async () =>
      (await (await fetch(`${hub}/api/v1/deployments/quota`, { headers: admin })).json()).ready === 2, 30000);
    const rateKey = cli('keys', 'create', '--deployment', 'quota', '--rpm', '6', '--name', 'interactive').trim();
    const tokenKey = cli('keys', 'create', '--deployment', 'quota', '--tokens-per-day', '400').trim();
    assert.match(rateKey, /^csk_[0-9a-f]{48}$/);
    const chat = async (key, deployment = 'quota', maxTokens = 40) => {
      const r = await fetch(`${hub}/d/${deployment}/v1/chat/completions`, { method: 'POST', signal: AbortSignal.timeout(20000),
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ model: deployment, messages: [{ role: 'user', content: 'a case' }], max_tokens: maxTokens }) });
      const body = await r.json();
      return { status: r.status, body, replica: r.headers.get('x-cellserve-replica'), retryAfter: r.headers.get('retry-after') };
    };
    // The rate: 6 requests (3 at a time, so both replicas take some) pass, the 7th is refused.
    const passed = [...await Promise.all([0, 1, 2].map(() => chat(rateKey))), ...await Promise.all([0, 1, 2].map(() => chat(rateKey)))];
    assert.deepEqual(passed.map((r) => r.status), [200, 200, 200, 200, 200, 200], JSON.stringify(passed.map((r) => r.body)));
    assert.deepEqual(new Set(passed.map((r) => r.replica)), new Set(['0', '1']), 'counted across both replicas');
    const limited = await chat(rateKey);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'rate_limit_exceeded');
    assert.equal(limited.body.error.type, 'rate_limit_error');
    assert.ok(Number(limited.retryAfter) >= 1, `Retry-After ${limited.retryAfter}`);
    // The official client sees the same 429.
    const client = new OpenAI({ baseURL: `${hub}/d/quota/v1`, apiKey: rateKey, maxRetries: 0 });
    await assert.rejects(client.chat.completions.create({ model: 'quota', messages: [{ role: 'user', content: 'Hi' }] }),
      (e) => e.status === 429);
    // A key for another deployment: 403; no key or a wrong one: 401; the admin key: any deployment.
    assert.equal((await chat(rateKey, 'other')).status, 403);
    assert.equal((await chat(rateKey, 'other')).body.error.code, 'wrong_deployment');
    assert.equal((await chat('')).status, 401);
    assert.equal((await chat('csk_' + '0'.repeat(48))).status, 401);
    const viaAdmin = await fetch(`${hub}/d/quota/v1/models`, { headers: admin });
    assert.equal(viaAdmin.status, 200);

    // The daily tokens: spent by answers' usage, then refused until the next UTC day, as soon as
    // what is left cannot cover a request's most (its body's bytes + max_tokens; issue 43 item 7).
    let used = 0;
    let refused = null;
    for (let i = 0; i < 60 && !refused; ++i) {
      const r = await chat(tokenKey, 'quota', 20);
      if (r.status === 200) used += r.body.usage.total_tokens;
      else refused = r;
    }
    assert.ok(refused, `never refused after ${used} tokens`);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'tokens_exceeded');
    assert.ok(used > 0 && used <= 400, `refused after ${used} tokens`);
    const listed = JSON.parse(cli('keys', 'ls', '--json')).keys;
    const rate = listed.find((k) => k.name === 'interactive');
    assert.equal(rate.requests, 6);
    assert.ok(rate.tokens > 0);
    assert.ok(!JSON.stringify(listed).includes(rateKey), 'keys ls never shows a key');
    const tokens = listed.find((k) => k.tokens_per_day === 400);
    assert.equal(tokens.tokens_today, used);
    cli('keys', 'revoke', rate.id);
    assert.equal((await chat(rateKey)).status, 401);
    console.log(`rate key: 6 passed on replicas ${JSON.stringify(passed.map((r) => r.replica))}, then 429 ` +
      `(Retry-After ${limited.retryAfter} s); token key: refused after ${used} tokens`);
  } catch (e) {
    for (const c of children) console.error(`--- ${c.name}\n${c.log.slice(-3000)}`);
    throw e;
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// Concurrent clients: batching never changes greedy tokens, a client that leaves frees its slot,
// the queue bound answers 429, and a deadline (X-Request-Timeout) is a 504 or a stream's error
// event, never a normal-looking answer, and frees its slot.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post, metrics, metricValue } from '../../e2e/harness.mjs';

const skip = skipReason();
const prompts = [
  'Once upon a time', 'The cat sat on', 'In a small town there lived', 'Tom and Lily',
  'The sun was shining and', 'A little bird', 'One day, a boy named Max', 'The big red ball',
];

async function complete(openai, prompt) {
  const r = await openai.completions.create({ model: 'm', prompt, max_tokens: 24, temperature: 0, logprobs: 0 });
  return r.choices[0].text;
}

describe('concurrency (stories260K)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('stories260K.gguf', ['--parallel', '4', '--ctx-size', '4096', '--alias', 'm']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('8 clients at once get exactly their solo greedy text', async () => {
    const solo = [];
    for (const p of prompts) solo.push(await complete(openai, p));
    const together = await Promise.all(prompts.map((p) => complete(openai, p)));
    assert.deepEqual(together, solo);
  });

  it('a client that disconnects frees its slot and generation stops', async () => {
    const controller = new AbortController();
    const stream = await openai.completions.create(
      { model: 'm', prompt: 'Once upon a time', max_tokens: 900, temperature: 1, ignore_eos: true, stream: true },
      { signal: controller.signal });
    let n = 0;
    let healthDuringStream = 0;
    try {
      for await (const _ of stream) {
        if (++n === 3) healthDuringStream = (await fetch(`${server.url}/health`)).status;
        if (n === 5) controller.abort();
      }
    } catch {}
    // /health never waits for the model.
    assert.equal(healthDuringStream, 200);
    let busy = 1;
    for (let i = 0; i < 100 && busy !== 0; ++i) {
      await new Promise((r) => setTimeout(r, 20));
      busy = metricValue(await metrics(server), 'cellserve_busy_slots');
    }
    assert.equal(busy, 0);
    const before = metricValue(await metrics(server), 'cellserve_generated_tokens_total');
    await new Promise((r) => setTimeout(r, 300));
    const after = metricValue(await metrics(server), 'cellserve_generated_tokens_total');
    assert.equal(after, before);
    assert.ok(before < 900, `generated ${before} tokens`);
  });
});

describe('queue bound (stories260K)', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('stories260K.gguf', ['--parallel', '1', '--max-queue', '1', '--ctx-size', '2048']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('answers 429 with Retry-After beyond --max-queue', async () => {
    const body = { prompt: 'Once upon a time', max_tokens: 1500, ignore_eos: true, temperature: 1 };
    const results = await Promise.all([0, 1, 2, 3].map(() => post(server, '/v1/completions', body)));
    const refused = results.filter((r) => r.status === 429);
    assert.ok(refused.length >= 1, `statuses: ${results.map((r) => r.status)}`);
    for (const r of refused) {
      assert.equal(r.json.error.type, 'rate_limit_error');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    assert.ok(results.some((r) => r.status === 200));
  });
});

describe('deadlines (stories260K)', { skip: skip || false }, () => {
  let server;
  let openai;
  // 4,000 tokens take seconds here (about 2 s unloaded; load only slows them): far beyond the
  // deadlines below. No test measures time.
  const long = { model: 'm', prompt: 'Once upon a time', max_tokens: 4000, ignore_eos: true, temperature: 1 };
  const timeout = (s) => ({ headers: { 'X-Request-Timeout': String(s) } });
  const busySlotsBecome = async (n) => {
    let busy = NaN;
    for (let i = 0; i < 250 && busy !== n; ++i) {
      busy = metricValue(await metrics(server), 'cellserve_busy_slots');
      if (busy !== n) await new Promise((r) => setTimeout(r, 20));
    }
    return busy;
  };
  before(async () => {
    server = await startServer('stories260K.gguf', ['--parallel', '1', '--ctx-size', '4096', '--timeout', '600', '--alias', 'm']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('504 "timeout" before the first token, whole or streamed, while the slot is busy', async () => {
    const stop = new AbortController();
    const blocker = fetch(`${server.url}/v1/completions`, { method: 'POST', body: JSON.stringify(long), signal: stop.signal })
      .catch(() => {});
    assert.equal(await busySlotsBecome(1), 1); // the blocker holds the only slot
    for (const stream of [false, true]) {
      const r = await post(server, '/v1/completions', { ...long, stream }, { 'X-Request-Timeout': '0.2' });
      assert.equal(r.status, 504, r.text);
      assert.equal(r.json.error.type, 'timeout');
      assert.match(r.json.error.message, /deadline \(0\.2 s\) passed before its first token/);
    }
    stop.abort(); // leaving frees the slot
    await blocker;
    assert.equal(await busySlotsBecome(0), 0);
  });

  it('mid-answer: a whole answer is 504, a stream ends with an error event; the slot is freed', async () => {
    await assert.rejects(openai.completions.create(long, timeout(0.5)),
      (e) => e.status === 504 && e.type === 'timeout' && /the answer is incomplete/.test(e.message));
    const stream = await openai.completions.create({ ...long, stream: true }, timeout(0.5));
    let chunks = 0;
    let finish = null;
    await assert.rejects((async () => {
      for await (const c of stream) {
        ++chunks;
        finish ??= c.choices[0]?.finish_reason ?? null;
      }
    })(), (e) => e.type === 'timeout' && /deadline \(0\.5 s\) passed after \d+ generated tokens/.test(e.message));
    assert.ok(chunks >= 1, 'some text came before the deadline');
    assert.equal(finish, null, 'never a clean final chunk');
    // The slot is free: generation stopped, and the next request is answered at once.
    assert.equal(await busySlotsBecome(0), 0);
    const next = await openai.completions.create({ model: 'm', prompt: 'Once', max_tokens: 4 }, timeout(30));
    assert.equal(next.choices[0].finish_reason, 'length');
    const text = await metrics(server);
    assert.match(text, /cellserve_requests_total\{endpoint="\/v1\/completions",status="504"\} 4/);
  });

  it('400 naming the header for a bad X-Request-Timeout', async () => {
    for (const value of ['soon', '0', '-1', '86401']) {
      const r = await post(server, '/v1/completions', { prompt: 'Once', max_tokens: 1 }, { 'X-Request-Timeout': value });
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error.message, /X-Request-Timeout/);
    }
  });
});

describe('autotune (stories260K)', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('stories260K.gguf', ['--parallel', '2', '--ctx-size', '1024', '--autotune', '--alias', 'm']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('logs the measurements and exposes the choice on /props and /v1/models', async () => {
    assert.match(server.stderr, /autotune: chose threads \d+, prefill chunk \d+/);
    const props = await (await fetch(`${server.url}/props`)).json();
    const chosen = props.autotune.chosen;
    assert.ok(chosen.threads >= 1 && chosen.prefill_chunk >= 1);
    assert.equal(props.settings.threads, chosen.threads);
    assert.equal(props.settings.prefill_chunk, chosen.prefill_chunk);
    assert.ok(props.autotune.threads.length >= 1);
    const models = await client(server).models.list();
    assert.deepEqual(models.data[0].meta.autotune.chosen, chosen);
    const r = await post(server, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 4 });
    assert.equal(r.status, 200);
  });
});

// llama-server's native conventions on a real `cellserve serve`: POST /completion (whole and
// streamed), "timings" on the OpenAI answers, GET /slots with fail_on_no_slot, and the
// server-wide sampling defaults (--temp, --top-k, --top-p, --seed, --n-predict).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { skipReason, startServer, client, post, model, bin } from '../../e2e/harness.mjs';

const skip = skipReason();
const KEY = 'sk-llama-0123456789';
const auth = { Authorization: `Bearer ${KEY}` };
const messages = [{ role: 'user', content: 'Hello' }];

// Measured timings: present, positive times, counts that equal usage, rates that follow.
function assertTimings(t, usage) {
  assert.ok(t, 'timings missing');
  for (const k of ['prompt_n', 'prompt_ms', 'prompt_per_token_ms', 'prompt_per_second', 'predicted_n', 'predicted_ms',
    'predicted_per_token_ms', 'predicted_per_second', 'cache_n']) {
    assert.equal(typeof t[k], 'number', k);
    assert.ok(Number.isFinite(t[k]) && t[k] >= 0, `${k} = ${t[k]}`);
  }
  assert.ok(t.prompt_ms > 0, `prompt_ms ${t.prompt_ms}`);
  assert.ok(t.predicted_ms > 0, `predicted_ms ${t.predicted_ms}`);
  assert.equal(t.predicted_n, usage.completion_tokens);
  assert.equal(t.prompt_n + t.cache_n, usage.prompt_tokens);
  assert.ok(Math.abs(t.predicted_per_token_ms - t.predicted_ms / t.predicted_n) < 1e-6);
  assert.ok(Math.abs(t.predicted_per_second - (1000 * t.predicted_n) / t.predicted_ms) < 1e-3 * t.predicted_per_second);
  // Sane: a tiny model's answer takes well under a minute.
  assert.ok(t.prompt_ms < 60000 && t.predicted_ms < 60000);
}

// The SSE events of a text/event-stream body, parsed.
function sseEvents(text) {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
}

describe('POST /completion, timings, /slots (qwen3-tiny)', { skip: skip || false }, () => {
  let server;
  before(async () => {
    // One slot with a long context, so a long generation keeps the only slot busy.
    server = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '32768'],
      { CELLSERVE_API_KEY: KEY });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('answers a whole /completion with llama-server fields', async () => {
    const r = await post(server, '/completion', { prompt: 'Once upon a time', n_predict: 4, temperature: 0 }, auth);
    assert.equal(r.status, 200, r.text);
    const j = r.json;
    assert.equal(typeof j.content, 'string');
    assert.equal(j.stop, true);
    assert.equal(j.tokens_predicted, 4);
    assert.ok(j.tokens_evaluated > 0);
    assert.equal(j.stop_type, 'limit');
    assert.equal(j.generation_settings.n_predict, 4);
    assert.equal(j.generation_settings.temperature, 0);
    assertTimings(j.timings, { completion_tokens: j.tokens_predicted, prompt_tokens: j.tokens_evaluated });
    // A token prompt works too; its ids are used as given.
    const ids = await post(server, '/completion', { prompt: [1, 2, 3], n_predict: 2, return_tokens: true }, auth);
    assert.equal(ids.status, 200, ids.text);
    assert.equal(ids.json.tokens_evaluated, 3);
    assert.equal(ids.json.tokens.length, 2);
  });

  it('streams /completion as llama-server: content chunks, one stop:true, no [DONE]', async () => {
    const body = { prompt: 'Once upon a time', n_predict: 5, temperature: 0 };
    const whole = await post(server, '/completion', body, auth);
    const r = await fetch(`${server.url}/completion`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...auth },
      body: JSON.stringify({ ...body, stream: true }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /text\/event-stream/);
    const events = sseEvents(await r.text());
    assert.ok(!events.includes('[DONE]'));
    const chunks = events.map((e) => JSON.parse(e));
    const last = chunks.pop();
    assert.ok(chunks.length >= 1);
    for (const c of chunks) {
      assert.equal(c.stop, false);
      assert.equal(typeof c.content, 'string');
    }
    assert.equal(chunks.map((c) => c.content).join(''), whole.json.content);
    assert.equal(last.stop, true);
    assert.equal(last.content, '');
    assert.equal(last.tokens_predicted, 5);
    assert.equal(last.stop_type, 'limit');
    assertTimings(last.timings, { completion_tokens: 5, prompt_tokens: last.tokens_evaluated });
  });

  it('gives completion_probabilities with n_probs, whole and streamed, as llama-server', async () => {
    const body = { prompt: 'Once upon a time', n_predict: 3, temperature: 0, n_probs: 3, return_tokens: true };
    const r = await post(server, '/completion', body, auth);
    assert.equal(r.status, 200, r.text);
    const probs = r.json.completion_probabilities;
    assert.equal(probs.length, 3);
    probs.forEach((p, i) => {
      assert.equal(p.id, r.json.tokens[i]);
      if (!p.token.includes('\uFFFD')) assert.deepEqual(p.bytes, [...Buffer.from(p.token)]);
      assert.ok(p.logprob <= 0);
      assert.equal(p.top_logprobs.length, 3);
      // Greedy: the chosen token is the most likely one, and the list is sorted.
      assert.equal(p.top_logprobs[0].id, p.id);
      assert.equal(p.top_logprobs[0].logprob, p.logprob);
      assert.ok(p.top_logprobs[0].logprob >= p.top_logprobs[1].logprob);
      assert.ok(p.top_logprobs[1].logprob >= p.top_logprobs[2].logprob);
    });
    const stream = await fetch(`${server.url}/completion`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...auth },
      body: JSON.stringify({ ...body, stream: true }),
    });
    const chunks = sseEvents(await stream.text()).map((e) => JSON.parse(e)).filter((c) => !c.stop);
    assert.deepEqual(chunks.flatMap((c) => c.completion_probabilities.map((p) => p.id)), r.json.tokens);
    // Without n_probs there is no such field.
    const plain = await post(server, '/completion', { prompt: 'Once', n_predict: 1 }, auth);
    assert.equal(plain.json.completion_probabilities, undefined);
  });

  it('rejects bad /completion bodies naming the field', async () => {
    for (const [body, param] of [
      [{ prompt: 'hi', n_predict: 'x' }, 'n_predict'],
      [{ prompt: 'hi', n_predict: 0 }, 'n_predict'],
      [{ prompt: 5 }, 'prompt'],
      [{ n_predict: 2 }, 'prompt'],
      [{ prompt: 'hi', temperature: 'hot' }, 'temperature'],
      [{ prompt: 'hi', stream: 'yes' }, 'stream'],
      [{ prompt: 'hi', grammar: 'root ::= "a' }, 'grammar'],
      [{ prompt: 'hi', grammar: 'root ::= "a"', json_schema: {} }, 'json_schema'],
      [{ prompt: 'hi', n_probs: 21 }, 'n_probs'],
      [{ prompt: 'hi', n_probs: 2, post_sampling_probs: true }, 'post_sampling_probs'],
    ]) {
      const r = await post(server, '/completion', body, auth);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.param, param, JSON.stringify(body));
    }
    assert.equal((await post(server, '/completion', '{"prompt":', auth)).status, 400);
    assert.equal((await post(server, '/completion', { prompt: 'hi' })).status, 401);
  });

  it('adds timings to OpenAI answers, whole and on the final stream chunk', async () => {
    const c = client(server, KEY);
    const chat = await c.chat.completions.create({ messages, max_tokens: 3, temperature: 0, model: 'qwen3-tiny-f32' });
    assertTimings(chat.timings, chat.usage);
    const text = await c.completions.create({ prompt: 'Once', max_tokens: 3, model: 'qwen3-tiny-f32' });
    assertTimings(text.timings, text.usage);
    const stream = await c.chat.completions.create({
      messages, max_tokens: 3, temperature: 0, stream: true, stream_options: { include_usage: true }, model: 'qwen3-tiny-f32',
    });
    // As llama-server: timings on the last chunk only (the usage chunk here).
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.pop();
    assert.ok(chunks.every((c) => c.timings === undefined));
    assert.deepEqual(last.choices, []);
    assertTimings(last.timings, last.usage);
    // Without include_usage the finish_reason chunk is the last.
    const plain = await c.completions.create({ prompt: 'Once', max_tokens: 3, stream: true, model: 'qwen3-tiny-f32' });
    const textChunks = [];
    for await (const chunk of plain) textChunks.push(chunk);
    const end = textChunks.at(-1);
    assert.equal(end.choices[0].finish_reason, 'length');
    assertTimings(end.timings, { completion_tokens: 3, prompt_tokens: end.timings.prompt_n + end.timings.cache_n });
  });

  it('lists /slots and answers 503 with fail_on_no_slot while the only slot is busy', async () => {
    const idle = await fetch(`${server.url}/slots?fail_on_no_slot=1`, { headers: auth });
    assert.equal(idle.status, 200);
    const slots = await idle.json();
    assert.equal(slots.length, 1);
    assert.deepEqual(
      { id: slots[0].id, is_processing: slots[0].is_processing, n_ctx: slots[0].n_ctx },
      { id: 0, is_processing: false, n_ctx: 32768 },
    );
    assert.equal((await fetch(`${server.url}/slots`)).status, 401);
    assert.equal((await fetch(`${server.url}/slots?fail_on_no_slot=maybe`, { headers: auth })).status, 400);

    // A long stream holds the slot; read its first chunk, then ask.
    const controller = new AbortController();
    const r = await fetch(`${server.url}/completion`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...auth },
      body: JSON.stringify({ prompt: 'Once upon a time', n_predict: -1, ignore_eos: true, stream: true }),
      signal: controller.signal,
    });
    const reader = r.body.getReader();
    await reader.read();
    const busy = await fetch(`${server.url}/slots?fail_on_no_slot=1`, { headers: auth });
    assert.equal(busy.status, 503);
    assert.equal((await busy.json()).error.type, 'unavailable_error');
    const listing = await (await fetch(`${server.url}/slots`, { headers: auth })).json();
    assert.equal(listing[0].is_processing, true);
    assert.equal(listing[0].params.n_predict, 32768 - listing[0].n_prompt_tokens);  // -1: the rest of the context
    assert.ok(listing[0].next_token[0].n_decoded >= 1);
    controller.abort();
    await reader.cancel().catch(() => {});
    // The client left: the slot is freed within a few steps.
    let freed = false;
    for (let i = 0; i < 100 && !freed; ++i) {
      const s = await fetch(`${server.url}/slots?fail_on_no_slot=1`, { headers: auth });
      freed = s.status === 200;
      if (!freed) await new Promise((res) => setTimeout(res, 50));
    }
    assert.ok(freed, 'the slot was not freed after the client left');
  });
});

describe('server-wide sampling defaults', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '2', '--ctx-size', '1024', '--n-predict', '3',
      '--temp', '0.9', '--seed', '1234', '--top-k', '20', '--top-p', '0.9']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('shows them in /props default_generation_settings', async () => {
    const props = await (await fetch(`${server.url}/props`)).json();
    const p = props.default_generation_settings.params;
    assert.equal(p.n_predict, 3);
    assert.equal(p.seed, 1234);
    assert.equal(p.top_k, 20);
    assert.ok(Math.abs(p.temperature - 0.9) < 1e-6);
    assert.ok(Math.abs(p.top_p - 0.9) < 1e-6);
    assert.equal(props.default_generation_settings.n_ctx, 512);
    assert.equal(props.total_slots, 2);
  });

  it('--n-predict caps requests without max_tokens, and a request\'s own budget wins', async () => {
    const c = client(server);
    const chat = await c.chat.completions.create({ messages, model: 'qwen3-tiny-f32', ignore_eos: true });
    assert.equal(chat.usage.completion_tokens, 3);
    const text = await c.completions.create({ prompt: 'Once', model: 'qwen3-tiny-f32', ignore_eos: true });
    assert.equal(text.usage.completion_tokens, 3);
    const own = await c.completions.create({ prompt: 'Once', model: 'qwen3-tiny-f32', ignore_eos: true, max_tokens: 5 });
    assert.equal(own.usage.completion_tokens, 5);
    const native = await post(server, '/completion', { prompt: 'Once', ignore_eos: true });
    assert.equal(native.json.tokens_predicted, 3);
    const ownBudget = await post(server, '/completion', { prompt: 'Once', ignore_eos: true, n_predict: 7 });
    assert.equal(ownBudget.json.tokens_predicted, 7);
  });

  it('--seed makes sampled answers repeat; a request\'s own seed and temperature win', async () => {
    const body = { prompt: 'Once upon a time', n_predict: 12, ignore_eos: true };
    const a = await post(server, '/completion', body);
    const b = await post(server, '/completion', body);
    assert.equal(a.json.generation_settings.seed, 1234);
    assert.ok(Math.abs(a.json.generation_settings.temperature - 0.9) < 1e-6);
    assert.equal(a.json.content, b.json.content);
    const own = await post(server, '/completion', { ...body, seed: 7, temperature: 0 });
    assert.equal(own.json.generation_settings.seed, 7);
    assert.equal(own.json.generation_settings.temperature, 0);
    const random = await post(server, '/completion', { ...body, seed: -1 });
    assert.notEqual(random.json.generation_settings.seed, 1234);
  });
});

describe('--temp 0 with --seed', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '512', '--temp', '0',
      '--seed', '42']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('gives identical answers to identical requests', async () => {
    const c = client(server);
    const answers = [];
    for (let i = 0; i < 3; ++i) {
      const r = await c.chat.completions.create({ messages, max_tokens: 8, model: 'qwen3-tiny-f32' });
      answers.push(r.choices[0].message.content);
    }
    assert.equal(answers[0], answers[1]);
    assert.equal(answers[1], answers[2]);
    // Greedy whatever the seed: other seeds give the same text only because --temp 0 applies.
    for (const seed of [1, 2, 3]) {
      const r = await c.chat.completions.create({ messages, max_tokens: 8, model: 'qwen3-tiny-f32', seed });
      assert.equal(r.choices[0].message.content, answers[0]);
    }
    // A request's own temperature wins: sampled with different seeds, the answers differ.
    const sampled = new Set();
    for (const seed of [1, 2, 3, 4]) {
      const r = await c.chat.completions.create({
        messages, max_tokens: 16, model: 'qwen3-tiny-f32', seed, temperature: 1.5, ignore_eos: true,
      });
      sampled.add(r.choices[0].message.content);
    }
    assert.ok(sampled.size > 1, 'temperature 1.5 with four seeds gave one answer');
  });
});

describe('sampling default flags out of range', { skip: skip || false }, () => {
  for (const [args, message] of [
    [['--temp', '3'], '--temp must be in [0, 2], got 3'],
    [['--top-p', '0'], '--top-p must be in (0, 1], got 0'],
    [['--top-k', '-1'], '--top-k must be in'],
    [['--seed', '-2'], '--seed must be -1 (random) or >= 0, got -2'],
    [['--n-predict', '0'], '--n-predict must be -1 (until the end) or >= 1, got 0'],
  ]) {
    it(`${args.join(' ')}: one line and exit 1`, () => {
      const r = spawnSync(bin, ['serve', '-m', model('qwen3-tiny-f32.gguf'), '--port', '0', ...args], {
        timeout: 30000,
      });
      assert.equal(r.status, 1);
      const stderr = r.stderr.toString().trim();
      assert.equal(stderr.split('\n').length, 1, stderr);
      assert.ok(stderr.includes(message), stderr);
    });
  }
});

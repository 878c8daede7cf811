// "n" > 1 through the official OpenAI SDK: n choices, each its own job with seed + index, whole
// and streamed (deltas interleaved by index), on chat and text completions.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post } from '../../e2e/harness.mjs';

const skip = skipReason();
const messages = [{ role: 'user', content: 'Name a fruit.' }];
const response_format = { type: 'regex', pattern: '[a-z]{4,9}' };

describe('n choices (qwen3-tiny)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '2', '--ctx-size', '1024', '--alias', 'tiny']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('answers n chat choices, choice i as the single answer with seed + i', async () => {
    const base = { model: 'tiny', messages, max_tokens: 16, temperature: 1, response_format };
    const r = await openai.chat.completions.create({ ...base, n: 3, seed: 40 });
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
    const singles = [];
    for (let i = 0; i < 3; i++) {
      const one = await openai.chat.completions.create({ ...base, seed: 40 + i });
      singles.push(one);
      assert.equal(r.choices[i].message.content, one.choices[0].message.content, `choice ${i}`);
      assert.match(r.choices[i].message.content, /^[a-z]{4,9}$/);
      assert.equal(r.choices[i].finish_reason, 'stop');
    }
    assert.ok(new Set(r.choices.map((c) => c.message.content)).size > 1, 'seeds differ, so should choices');
    // The prompt counts once, the completions add up.
    assert.equal(r.usage.prompt_tokens, singles[0].usage.prompt_tokens);
    assert.equal(r.usage.completion_tokens, singles.reduce((n, s) => n + s.usage.completion_tokens, 0));
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    // The server was fresh: the other choices shared the first one's prompt cells while it ran.
    assert.equal(r.usage.prompt_tokens_details.cached_tokens, r.usage.prompt_tokens - 1);
  });

  it('streams n choices interleaved by index, each with its finish, usage once at the end', async () => {
    const base = { model: 'tiny', messages, max_tokens: 16, temperature: 1, seed: 9, response_format };
    const whole = await openai.chat.completions.create({ ...base, n: 3 });
    const stream = await openai.chat.completions.create({
      ...base, n: 3, stream: true, stream_options: { include_usage: true },
    });
    const text = ['', '', ''];
    const finish = [null, null, null];
    let usage = null;
    let chunksAfterUsage = 0;
    for await (const chunk of stream) {
      if (usage) chunksAfterUsage++;
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text[c.index] += c.delta?.content ?? '';
        if (c.finish_reason) {
          assert.equal(finish[c.index], null, 'one finish per choice');
          finish[c.index] = c.finish_reason;
        }
      }
    }
    assert.deepEqual(text, whole.choices.map((c) => c.message.content));
    assert.deepEqual(finish, ['stop', 'stop', 'stop']);
    assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
    assert.equal(chunksAfterUsage, 0);
  });

  it('answers n text completions, streamed and whole alike', async () => {
    const base = { model: 'tiny', prompt: 'My favourite fruit is', max_tokens: 8, temperature: 1, seed: 3 };
    const whole = await openai.completions.create({ ...base, n: 2 });
    assert.deepEqual(whole.choices.map((c) => c.index), [0, 1]);
    const stream = await openai.completions.create({ ...base, n: 2, stream: true });
    const text = ['', ''];
    for await (const chunk of stream) for (const c of chunk.choices) text[c.index] += c.text;
    assert.deepEqual(text, whole.choices.map((c) => c.text));
  });

  it('refuses n outside 1..16, and n > 1 on llama.cpp\'s /completion', async () => {
    for (const n of [0, 17, 'two']) {
      const r = await post(server, '/v1/chat/completions', { messages, n });
      assert.equal(r.status, 400, String(n));
      assert.equal(r.json.error.param, 'n');
    }
    const native = await post(server, '/completion', { prompt: 'a', n: 2, n_predict: 2 });
    assert.equal(native.status, 400);
    assert.equal(native.json.error.param, 'n');
  });
});

// Bad requests get OpenAI-style errors with the right status; keys are enforced.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';
import { skipReason, startServer, client, post } from '../../e2e/harness.mjs';

const skip = skipReason();
const KEY = 'sk-test-0123456789abcdef';
const auth = { Authorization: `Bearer ${KEY}` };
const messages = [{ role: 'user', content: 'Hello' }];

function assertError(r, status, param) {
  assert.equal(r.status, status, r.text);
  assert.equal(typeof r.json.error.message, 'string');
  assert.equal(typeof r.json.error.type, 'string');
  if (param !== undefined) assert.equal(r.json.error.param, param);
}

describe('errors and keys (qwen3-tiny)', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '256', '--max-body-mb', '1'],
      { CELLSERVE_API_KEY: KEY });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('401 without or with a wrong key; /health stays open', async () => {
    assertError(await post(server, '/v1/chat/completions', { messages }), 401);
    assertError(await post(server, '/v1/chat/completions', { messages }, { Authorization: 'Bearer sk-wrong' }), 401);
    assertError(await post(server, '/v1/chat/completions', { messages }, { Authorization: `Bearer ${KEY}x` }), 401);
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    const bad = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'nope', maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ messages, model: 'x' }), (e) => e.status === 401);
    const good = client(server, KEY);
    const r = await good.chat.completions.create({ messages, max_tokens: 2, model: 'qwen3-tiny-f32' });
    assert.equal(r.choices.length, 1);
  });

  it('400 for invalid JSON and wrong types, naming the field', async () => {
    assertError(await post(server, '/v1/chat/completions', '{"messages": [', auth), 400);
    assertError(await post(server, '/v1/chat/completions', { messages: 'hi' }, auth), 400, 'messages');
    assertError(await post(server, '/v1/chat/completions', { messages, temperature: 'hot' }, auth), 400, 'temperature');
    assertError(await post(server, '/v1/chat/completions', { messages, max_tokens: -5 }, auth), 400, 'max_tokens');
    assertError(await post(server, '/v1/chat/completions', { messages, n: 17 }, auth), 400, 'n');
    assertError(await post(server, '/v1/chat/completions', { messages: [] }, auth), 400, 'messages');
    assertError(await post(server, '/v1/chat/completions', { messages, stop: ['a', 'b', 'c', 'd', 'e'] }, auth), 400, 'stop');
    assertError(await post(server, '/v1/chat/completions', { messages, logit_bias: { 99999: 1 } }, auth), 400, 'logit_bias');
    assertError(await post(server, '/v1/completions', { prompt: [1, 2, 999999] }, auth), 400, 'prompt');
  });

  it('404 model_not_found for a model the server does not serve, as OpenAI (the SDK raises NotFoundError)', async () => {
    const r = await post(server, '/v1/chat/completions', { messages, model: 'gpt-4' }, auth);
    assertError(r, 404, 'model');
    assert.deepEqual(r.json, { error: {
      message: 'The model `gpt-4` does not exist or you do not have access to it. This server serves `qwen3-tiny-f32`.',
      type: 'invalid_request_error', param: 'model', code: 'model_not_found' } });
    const sdk = client(server, KEY);
    for (const call of [() => sdk.chat.completions.create({ messages, model: 'gpt-4o', max_tokens: 2 }),
      () => sdk.completions.create({ prompt: 'Hi', model: 'gpt-3.5-turbo-instruct', max_tokens: 2 }),
      () => sdk.chat.completions.create({ messages, model: 'gpt-4o', max_tokens: 2, stream: true })]) {
      await assert.rejects(call, (e) => {
        assert.ok(e instanceof OpenAI.NotFoundError, `${e.constructor.name}: ${e.message}`);
        assert.equal(e.status, 404);
        assert.equal(e.code, 'model_not_found');
        assert.equal(e.type, 'invalid_request_error');
        assert.equal(e.param, 'model');
        return true;
      });
    }
    // The served id still works, and the server lives on.
    const ok = await sdk.chat.completions.create({ messages, model: 'qwen3-tiny-f32', max_tokens: 1 });
    assert.equal(ok.choices.length, 1);
  });

  it('400 context_length_exceeded when prompt + max_tokens do not fit', async () => {
    const r = await post(server, '/v1/chat/completions', { messages, max_tokens: 1000 }, auth);
    assertError(r, 400);
    assert.equal(r.json.error.code, 'context_length_exceeded');
    const long = 'word '.repeat(400);
    const r2 = await post(server, '/v1/completions', { prompt: long }, auth);
    assertError(r2, 400);
    assert.equal(r2.json.error.code, 'context_length_exceeded');
  });

  it('413 for an oversized body, 404 for an unknown path, and the server lives on', async () => {
    const huge = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(2 << 20) }] });
    const r = await post(server, '/v1/chat/completions', huge, auth);
    assert.equal(r.status, 413);
    assertError(await post(server, '/v1/nothing', {}, auth), 404);
    const ok = await post(server, '/v1/chat/completions', { messages, max_tokens: 1 }, auth);
    assert.equal(ok.status, 200);
  });

  it('curl sees the same errors', () => {
    const out = execFileSync('curl', ['-s', '-w', '\n%{http_code}', '-H', 'Content-Type: application/json',
      '-d', '{"messages": 5}', `${server.url}/v1/chat/completions`]).toString();
    const [body, code] = out.split('\n');
    assert.equal(code, '401');
    assert.equal(JSON.parse(body).error.type, 'authentication_error');
    const out2 = execFileSync('curl', ['-s', '-w', '\n%{http_code}', '-H', `Authorization: Bearer ${KEY}`,
      '-H', 'Content-Type: application/json', '-d', '{"messages": 5}', `${server.url}/v1/chat/completions`]).toString();
    assert.match(out2, /\n400$/);
  });
});

describe('--accept-any-model (qwen3-tiny)', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '256', '--accept-any-model']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('serves any model name with the loaded model (200), as llama-server', async () => {
    const sdk = client(server);
    for (const name of ['gpt-4o', 'qwen3-tiny-f32', 'some/other:model']) {
      const r = await sdk.chat.completions.create({ messages, model: name, max_tokens: 2, temperature: 0 });
      assert.equal(r.choices.length, 1, name);
      assert.equal(r.model, 'qwen3-tiny-f32', name);  // the model that answered
    }
    const text = await sdk.completions.create({ prompt: 'Hi', model: 'gpt-3.5-turbo-instruct', max_tokens: 2 });
    assert.equal(text.choices.length, 1);
    const props = await (await fetch(`${server.url}/props`)).json();
    assert.equal(props.settings.accept_any_model, true);
    // Other fields are still checked.
    assertError(await post(server, '/v1/chat/completions', { messages, model: 5 }), 400, 'model');
  });
});

// LoRA adapters through the API: a server started with --lora, requests choosing their adapter
// set per request (llama.cpp's "lora" field, or the adapter's name as the model, as vLLM),
// /lora-adapters, and concurrent requests with and without the adapter getting their solo tokens.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post, model } from '../../e2e/harness.mjs';

const skip = skipReason();
const ADAPTER = 'qwen3-tiny-lora-f32';
const prompt = 'Once upon a time there was a little dog';

describe('LoRA adapters (qwen3-tiny + adapter)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf',
      ['--parallel', '2', '--ctx-size', '512', '--lora', `${model(`${ADAPTER}.gguf`)}:0`]);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  async function complete(extra) {
    const r = await openai.completions.create({ model: 'qwen3-tiny-f32', prompt, max_tokens: 12, temperature: 0, ...extra });
    return r.choices[0].text;
  }

  it('lists the adapter on /lora-adapters and as a model on /v1/models', async () => {
    const list = await (await fetch(`${server.url}/lora-adapters`)).json();
    assert.equal(list.length, 1);
    assert.equal(list[0].id, 0);
    assert.equal(list[0].name, ADAPTER);
    assert.equal(list[0].scale, 0);
    assert.equal(list[0].alpha, 16);
    const models = await openai.models.list();
    const ids = models.data.map((m) => m.id);
    assert.deepEqual(ids, ['qwen3-tiny-f32', ADAPTER]);
    assert.equal(models.data[1].parent, 'qwen3-tiny-f32');
  });

  it('applies the adapter per request, by "lora" list or by model name', async () => {
    const base = await complete({});  // loaded at scale 0: the base model
    const withLora = await complete({ lora: [{ id: 0, scale: 1 }] });
    assert.notEqual(withLora, base);
    const byName = await openai.completions.create({ model: ADAPTER, prompt, max_tokens: 12, temperature: 0 });
    assert.equal(byName.choices[0].text, withLora, 'by name the adapter runs alone at scale 1');
    assert.equal(await complete({ lora: [] }), base);
    assert.equal(await complete({ lora: [{ id: 0, scale: 0 }] }), base);
    // Chat goes through the same path.
    const chat = await openai.chat.completions.create({
      model: 'qwen3-tiny-f32', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, temperature: 0,
      lora: [{ id: 0, scale: 1 }],
    });
    assert.equal(chat.choices.length, 1);
  });

  it('POST /lora-adapters changes the default scale', async () => {
    const base = await complete({});
    const withLora = await complete({ lora: [{ id: 0, scale: 1 }] });
    let r = await post(server, '/lora-adapters', [{ id: 0, scale: 1 }]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json[0].scale, 1);
    assert.equal(await complete({}), withLora);
    r = await post(server, '/lora-adapters', []);  // unlisted adapters go to 0
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json[0].scale, 0);
    assert.equal(await complete({}), base);
  });

  it('concurrent requests with and without the adapter get their solo tokens', async () => {
    const base = await complete({});
    const withLora = await complete({ lora: [{ id: 0, scale: 1 }] });
    const runs = await Promise.all([0, 1, 2, 3].map((i) => complete(i % 2 ? { lora: [{ id: 0, scale: 1 }] } : {})));
    runs.forEach((text, i) => assert.equal(text, i % 2 ? withLora : base, `request ${i}`));
  });

  it('rejects bad adapter choices with 400, an unknown model with 404', async () => {
    for (const [body, param] of [
      [{ lora: [{ id: 7, scale: 1 }] }, 'lora'],
      [{ lora: [{ id: 0, scale: 'x' }] }, 'lora.scale'],
      [{ lora: { id: 0 } }, 'lora'],
      [{ lora: [{ scale: 1 }] }, 'lora'],
      [{ model: ADAPTER, lora: [] }, 'lora'],
    ]) {
      const r = await post(server, '/v1/completions', { prompt, max_tokens: 2, ...body });
      assert.equal(r.status, 400, JSON.stringify(body) + ' ' + r.text);
      assert.equal(r.json.error.param, param, JSON.stringify(body));
    }
    // A name that is neither the model nor an adapter: OpenAI's 404 for a model that does not exist.
    const unknown = await post(server, '/v1/completions', { prompt, max_tokens: 2, model: 'no-such-adapter' });
    assert.equal(unknown.status, 404, unknown.text);
    assert.equal(unknown.json.error.param, 'model');
    assert.equal(unknown.json.error.code, 'model_not_found');
    let r = await post(server, '/lora-adapters', [{ id: 3, scale: 1 }]);
    assert.equal(r.status, 400, r.text);
    r = await post(server, '/lora-adapters', '{not json');
    assert.equal(r.status, 400, r.text);
    const del = await fetch(`${server.url}/lora-adapters`, { method: 'DELETE' });
    assert.equal(del.status, 405);
    assert.equal(del.headers.get('allow'), 'GET, HEAD, POST');
  });
});

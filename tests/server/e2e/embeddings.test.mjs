// POST /v1/embeddings through the official OpenAI SDK and raw fetch: a string, an array of
// strings, token-id arrays; encoding_format float and base64 (the SDK asks for base64 when none is
// given and decodes it); usage; 501 without --embeddings; 400 naming the field for bad input.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post } from '../../e2e/harness.mjs';

const skip = skipReason();
const texts = ['Once upon a time', 'there was a little girl named Lily.', 'She saw a big, red ball.'];

// Little-endian float32 values of a base64 string, decoded here rather than by the SDK.
function decodeBase64(s) {
  const buf = Buffer.from(s, 'base64');
  assert.equal(buf.length % 4, 0);
  const out = [];
  for (let i = 0; i < buf.length; i += 4) out.push(buf.readFloatLE(i));
  return out;
}

// A float answer's vector as float32 values: the server writes each float32 in the shortest
// decimal form that reads back as it, so Math.fround() of the parsed number is the exact value.
function f32(v) {
  return v.map((x) => Math.fround(x));
}

function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

function assertClose(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: lengths`);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
}

async function tokenize(server, content) {
  const r = await post(server, '/tokenize', { content, add_special: true });
  assert.equal(r.status, 200, r.text);
  return r.json.tokens;
}

// The float vectors of a raw request (encoding_format float), with the whole answer.
async function embedRaw(server, body, pathname = '/v1/embeddings') {
  const r = await post(server, pathname, { encoding_format: 'float', ...body });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

describe('embeddings (qwen3-tiny, --embeddings --pooling last)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--ctx-size', '512', '--alias', 'tiny', '--embeddings',
      '--pooling', 'last']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('embeds a string with OpenAI shapes, a unit vector of the model width, and usage', async () => {
    const r = await openai.embeddings.create({ model: 'tiny', input: texts[0], encoding_format: 'float' });
    assert.equal(r.object, 'list');
    assert.equal(r.model, 'tiny');
    assert.equal(r.data.length, 1);
    assert.equal(r.data[0].object, 'embedding');
    assert.equal(r.data[0].index, 0);
    const v = r.data[0].embedding;
    assert.ok(Array.isArray(v));
    assert.equal(v.length, 256);
    assert.ok(Math.abs(norm(v) - 1) < 1e-5, `norm ${norm(v)}`);
    const ids = await tokenize(server, texts[0]);
    assert.equal(r.usage.prompt_tokens, ids.length);
    assert.equal(r.usage.total_tokens, ids.length);
    // Deterministic.
    const again = await openai.embeddings.create({ model: 'tiny', input: texts[0], encoding_format: 'float' });
    assert.deepEqual(again.data[0].embedding, v);
  });

  it('embeds an array of strings in order, each as it would be alone', async () => {
    const r = await openai.embeddings.create({ model: 'tiny', input: texts, encoding_format: 'float' });
    assert.deepEqual(r.data.map((d) => d.index), [0, 1, 2]);
    let tokens = 0;
    for (let i = 0; i < texts.length; i++) {
      const alone = await openai.embeddings.create({ model: 'tiny', input: texts[i], encoding_format: 'float' });
      assertClose(r.data[i].embedding, alone.data[0].embedding, 1e-5, `input ${i}`);
      tokens += alone.usage.prompt_tokens;
    }
    assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
    assert.equal(r.usage.prompt_tokens, tokens);
  });

  it('embeds token ids as their text, one array or several', async () => {
    const ids = await Promise.all(texts.map((t) => tokenize(server, t)));
    const fromText = await embedRaw(server, { input: texts });
    const one = await embedRaw(server, { input: ids[1] });
    assert.equal(one.data.length, 1);
    assert.deepEqual(one.data[0].embedding, (await embedRaw(server, { input: texts[1] })).data[0].embedding);
    assert.equal(one.usage.prompt_tokens, ids[1].length);
    const several = await openai.embeddings.create({ model: 'tiny', input: ids, encoding_format: 'float' });
    assert.equal(several.data.length, texts.length);
    for (let i = 0; i < texts.length; i++) {
      assertClose(several.data[i].embedding, fromText.data[i].embedding, 1e-6, `ids ${i}`);
    }
  });

  it('answers base64 as little-endian float32 of the float answer, decoded by the SDK by default', async () => {
    const float = await embedRaw(server, { model: 'tiny', input: texts });
    // Explicit base64: the SDK hands the string back as it came.
    const b64 = await openai.embeddings.create({ model: 'tiny', input: texts, encoding_format: 'base64' });
    for (let i = 0; i < texts.length; i++) {
      assert.equal(typeof b64.data[i].embedding, 'string');
      assert.deepEqual(decodeBase64(b64.data[i].embedding), f32(float.data[i].embedding), `input ${i}`);
    }
    assert.deepEqual(b64.usage, float.usage);
    // No encoding_format: the SDK asks for base64 and decodes it into numbers itself.
    const sdk = await openai.embeddings.create({ model: 'tiny', input: texts });
    for (let i = 0; i < texts.length; i++) assert.deepEqual(sdk.data[i].embedding, f32(float.data[i].embedding));
    // Raw base64 over fetch, on the route without /v1.
    const raw = await post(server, '/embeddings', { input: texts[0], encoding_format: 'base64' });
    assert.equal(raw.status, 200, raw.text);
    assert.deepEqual(decodeBase64(raw.json.data[0].embedding), f32(float.data[0].embedding));
  });

  it('refuses bad input with 400 naming the field', async () => {
    const cases = [
      [{ input: '' }, 'input'],
      [{ input: [] }, 'input'],
      [{ input: ['a', 3] }, 'input'],
      [{ input: [[1, 2], []] }, 'input'],
      [{ input: [5, 1026] }, 'input'],
      [{ input: { text: 'a' } }, 'input'],
      [{}, 'input'],
      [{ input: 'a', encoding_format: 'int8' }, 'encoding_format'],
      [{ input: 'a', dimensions: 128 }, 'dimensions'],
    ];
    for (const [body, param] of cases) {
      const r = await post(server, '/v1/embeddings', body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.param, param, JSON.stringify(body));
    }
    // An input longer than the context (512 tokens) is context_length_exceeded, also through the SDK.
    const long = Array(513).fill(5);
    await assert.rejects(openai.embeddings.create({ model: 'tiny', input: long }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, 'input');
      assert.equal(e.code, 'context_length_exceeded');
      return true;
    });
    // Another model's name is 404, as for completions.
    await assert.rejects(openai.embeddings.create({ model: 'text-embedding-3-small', input: 'a' }),
      (e) => e.status === 404 && e.param === 'model');
  });
});

describe('embeddings with mean pooling (qwen3-tiny)', { skip: skip || false }, () => {
  let mean;
  let last;
  before(async () => {
    mean = await startServer('qwen3-tiny-f32.gguf', ['--ctx-size', '512', '--embeddings', '--pooling', 'mean']);
    last = await startServer('qwen3-tiny-f32.gguf', ['--ctx-size', '512', '--embeddings']);
  });
  after(async () => {
    assert.equal(await mean.stop(), 0);
    assert.equal(await last.stop(), 0);
  });

  it('pools differently from last (the default for a GGUF without pooling_type), still unit length', async () => {
    assert.match(last.stderr, /embeddings: on, pooling last/);
    assert.match(mean.stderr, /embeddings: on, pooling mean \(--pooling\)/);
    const m = await embedRaw(mean, { input: texts[1] });
    const l = await embedRaw(last, { input: texts[1] });
    assert.ok(Math.abs(norm(m.data[0].embedding) - 1) < 1e-5);
    assert.notDeepEqual(m.data[0].embedding, l.data[0].embedding);
    assert.equal(m.usage.prompt_tokens, l.usage.prompt_tokens);
    // A one-token input has one row: mean and last agree.
    const one = await tokenize(mean, 'a');
    assert.equal(one.length, 1);
    assertClose((await embedRaw(mean, { input: one })).data[0].embedding,
      (await embedRaw(last, { input: one })).data[0].embedding, 1e-6, 'one token');
  });
});

describe('embeddings without --embeddings (qwen3-tiny)', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--ctx-size', '512', '--alias', 'tiny']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('answers 501 not_supported_error, as llama-server does', async () => {
    const r = await post(server, '/v1/embeddings', { input: 'hello', model: 'tiny' });
    assert.equal(r.status, 501, r.text);
    assert.equal(r.json.error.type, 'not_supported_error');
    assert.match(r.json.error.message, /--embeddings/);
    await assert.rejects(client(server).embeddings.create({ model: 'tiny', input: 'hello' }), (e) => e.status === 501);
  });
});

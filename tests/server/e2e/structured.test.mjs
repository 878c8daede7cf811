// Structured outputs end to end: GBNF grammars, the regex response format and the JSON Schema
// keywords for numbers, strings and objects, through the official OpenAI SDK and curl-style posts.
// Random sampling (temperature 1, several seeds) so that the constraint, not the model, makes
// the answer valid.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post } from './harness.mjs';

const skip = skipReason();
const messages = [{ role: 'user', content: 'Read the case and answer with the risk level.' }];
const seeds = [1, 2, 3, 4];

describe('structured outputs (qwen3-tiny)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('qwen3-tiny-q8_0.gguf', ['--parallel', '2', '--ctx-size', '1024', '--alias', 'tiny']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('constrains chat, completions and /completion with a GBNF grammar', async () => {
    const grammar = 'root ::= "RISK_LEVEL: " [1-9]';
    for (const seed of seeds) {
      const chat = await openai.chat.completions.create({
        model: 'tiny', messages, max_tokens: 20, temperature: 1, seed, grammar,
      });
      assert.match(chat.choices[0].message.content, /^RISK_LEVEL: [1-9]$/);
      assert.equal(chat.choices[0].finish_reason, 'stop');
      const text = await openai.completions.create({
        model: 'tiny', prompt: 'Case 17:', max_tokens: 20, temperature: 1, seed, grammar,
      });
      assert.match(text.choices[0].text, /^RISK_LEVEL: [1-9]$/);
    }
    const words = 'root ::= ("yes" | "no") " because " [a-z]{3,5}';
    const native = await post(server, '/completion', { prompt: 'risk', grammar: words, n_predict: 30, seed: 5 });
    assert.equal(native.status, 200);
    assert.match(native.json.content, /^(yes|no) because [a-z]{3,5}$/);
    // Streamed: the pieces join into a sentence of the grammar.
    const stream = await openai.chat.completions.create({
      model: 'tiny', messages, max_tokens: 30, temperature: 1, seed: 9, grammar: words, stream: true,
    });
    let streamed = '';
    for await (const c of stream) streamed += c.choices[0]?.delta?.content ?? '';
    assert.match(streamed, /^(yes|no) because [a-z]{3,5}$/);
  });

  it('refuses a bad grammar, or two constraints, with 400 naming the field', async () => {
    for (const [body, param, text] of [
      [{ messages, grammar: 'root ::= "a' }, 'grammar', 'line 1'],
      [{ messages, grammar: 'root ::= missing' }, 'grammar', 'missing'],
      [{ messages, grammar: 'root ::= root "a"' }, 'grammar', 'left-recursive'],
      [{ messages, grammar: 5 }, 'grammar', 'string'],
      [{ messages, grammar: 'root ::= "a"', response_format: { type: 'json_object' } }, 'grammar', 'one of'],
    ]) {
      const r = await post(server, '/v1/chat/completions', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.param, param, JSON.stringify(body));
      assert.ok(r.json.error.message.includes(text), r.json.error.message);
    }
  });
});

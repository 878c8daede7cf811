// Structured outputs end to end: GBNF grammars, the regex response format and the JSON Schema
// keywords for numbers, strings and objects, through the official OpenAI SDK and curl-style posts.
// Random sampling (temperature 1, several seeds) so that the constraint, not the model, makes
// the answer valid.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post } from '../../e2e/harness.mjs';

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

  it('constrains the answer to a regex with response_format type regex', async () => {
    const response_format = { type: 'regex', pattern: 'RISK_LEVEL: [1-9]' };
    for (const seed of seeds) {
      const chat = await openai.chat.completions.create({
        model: 'tiny', messages, max_tokens: 20, temperature: 1, seed, response_format,
      });
      assert.match(chat.choices[0].message.content, /^RISK_LEVEL: [1-9]$/);
      assert.equal(chat.choices[0].finish_reason, 'stop');
    }
    const text = await openai.completions.create({
      model: 'tiny', prompt: 'Case 17:', max_tokens: 20, temperature: 1, seed: 3,
      response_format: { type: 'regex', pattern: '(low|high) [0-9]{2}' },
    });
    assert.match(text.choices[0].text, /^(low|high) [0-9]{2}$/);
  });

  it('enforces number bounds, multipleOf, pattern and format in a JSON schema', async () => {
    const schema = {
      type: 'object',
      properties: {
        risk_level: { type: 'integer', minimum: 1, maximum: 10 },
        score: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
        batch: { type: 'integer', multipleOf: 25, minimum: 100, maximum: 1000 },
        case_id: { type: 'string', pattern: '^FR-[0-9]{4}$' },
        opened: { type: 'string', format: 'date' },
        contact: { type: 'string', format: 'email', maxLength: 24 },
      },
      required: ['risk_level', 'score', 'batch', 'case_id', 'opened', 'contact'],
    };
    for (const seed of seeds) {
      const chat = await openai.chat.completions.create({
        model: 'tiny', messages, max_tokens: 200, temperature: 1, seed,
        response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema } },
      });
      assert.equal(chat.choices[0].finish_reason, 'stop', chat.choices[0].message.content);
      const v = JSON.parse(chat.choices[0].message.content);
      assert.ok(Number.isInteger(v.risk_level) && v.risk_level >= 1 && v.risk_level <= 10, JSON.stringify(v));
      assert.ok(v.score > 0 && v.score <= 1, JSON.stringify(v));
      assert.ok(Number.isInteger(v.batch) && v.batch % 25 === 0 && v.batch >= 100 && v.batch <= 1000);
      assert.match(v.case_id, /^FR-[0-9]{4}$/);
      assert.match(v.opened, /^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/);
      assert.match(v.contact, /^[^@\s]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/);
      assert.ok([...v.contact].length <= 24);
    }
  });

  it('refuses what the schema and regex subsets do not cover, naming the keyword', async () => {
    for (const [response_format, param, text] of [
      [{ type: 'json_schema', json_schema: { name: 'x', schema: { type: 'number', multipleOf: 0.5 } } },
        'response_format', "'multipleOf'"],
      [{ type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '(a)\\1' } } },
        'response_format', 'backreference'],
      [{ type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', minimum: 9, maximum: 2 } } },
        'response_format', 'no number'],
      [{ type: 'regex', pattern: '(?<=a)b' }, 'response_format.pattern', 'lookbehind'],
      [{ type: 'regex', pattern: '[z-a]' }, 'response_format.pattern', 'offset'],
      [{ type: 'regex' }, 'response_format.pattern', "'pattern'"],
    ]) {
      const r = await post(server, '/v1/chat/completions', { messages, response_format });
      assert.equal(r.status, 400, JSON.stringify(response_format));
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.param, param, JSON.stringify(response_format));
      assert.ok(r.json.error.message.includes(text), r.json.error.message);
    }
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

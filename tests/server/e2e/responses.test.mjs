// POST /v1/responses through the official OpenAI SDK: text answers equal to the chat answer of
// the same conversation, instructions, the stream's typed events (order, sequence numbers,
// deltas that add up to the done texts), tool calls whole and streamed, tool results as input
// items, and the 400s for what a stateless server cannot do.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post } from '../../e2e/harness.mjs';

const skip = skipReason();
const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', maxLength: 12 } },
    required: ['city'],
  },
};

// The events of a stream, with the SDK's own parsing.
async function events(stream) {
  const all = [];
  for await (const e of stream) all.push(e);
  return all;
}

function checkSequence(all) {
  assert.deepEqual(all.map((e) => e.sequence_number), all.map((_, i) => i), 'sequence numbers 0, 1, 2...');
  assert.equal(all[0].type, 'response.created');
  assert.equal(all[0].response.status, 'in_progress');
  assert.equal(all[1].type, 'response.in_progress');
}

describe('responses API, text (qwen3-tiny-f32)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '2', '--ctx-size', '1024', '--alias', 'tiny']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('answers what chat answers for the same conversation', async () => {
    const r = await openai.responses.create({
      model: 'tiny', input: 'Hello', max_output_tokens: 8, temperature: 0,
    });
    const chat = await openai.chat.completions.create({
      model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0,
    });
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, 'response');
    assert.equal(r.model, 'tiny');
    assert.equal(r.output.length, 1);
    const message = r.output[0];
    assert.equal(message.type, 'message');
    assert.equal(message.role, 'assistant');
    assert.equal(message.content[0].type, 'output_text');
    assert.equal(r.output_text, chat.choices[0].message.content);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    // Cut by max_output_tokens: incomplete, as OpenAI says (the chat's finish_reason is "length").
    assert.equal(chat.choices[0].finish_reason, 'length');
    assert.equal(r.status, 'incomplete');
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(message.status, 'incomplete');
    // The settings echo as the request gave them.
    assert.equal(r.temperature, 0);
    assert.equal(r.max_output_tokens, 8);
  });

  it('takes instructions and message items as the chat\'s system and turns', async () => {
    const input = [
      { role: 'user', content: 'Name a fruit.' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'fig' }] },
      { role: 'user', content: [{ type: 'input_text', text: 'Another one.' }] },
    ];
    const r = await openai.responses.create({
      model: 'tiny', instructions: 'Answer in one word.', input, max_output_tokens: 6, temperature: 0,
    });
    const chat = await openai.chat.completions.create({
      model: 'tiny',
      messages: [
        { role: 'system', content: 'Answer in one word.' },
        { role: 'user', content: 'Name a fruit.' },
        { role: 'assistant', content: 'fig' },
        { role: 'user', content: 'Another one.' },
      ],
      max_tokens: 6,
      temperature: 0,
    });
    assert.equal(r.instructions, 'Answer in one word.');
    assert.equal(r.output_text, chat.choices[0].message.content);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  });

  it('ends a stopped answer "completed", and text.format constrains it', async () => {
    const line = await openai.responses.create({
      model: 'tiny', input: 'Risk?', max_output_tokens: 16, temperature: 1, seed: 5,
      text: { format: { type: 'regex', pattern: 'RISK_LEVEL: [1-9]' } },
    });
    assert.equal(line.status, 'completed');
    assert.equal(line.incomplete_details, null);
    assert.equal(line.output[0].status, 'completed');
    assert.match(line.output_text, /^RISK_LEVEL: [1-9]$/);
    const r = await openai.responses.create({
      model: 'tiny', input: 'Risk?', max_output_tokens: 200, temperature: 1, seed: 5,
      text: { format: { type: 'json_schema', name: 'verdict', strict: true, schema: {
        type: 'object',
        properties: { risk_level: { type: 'integer', minimum: 1, maximum: 9 } },
        required: ['risk_level'],
        additionalProperties: false,
      } } },
    });
    assert.equal(r.status, 'completed');
    const verdict = JSON.parse(r.output_text);
    assert.ok(Number.isInteger(verdict.risk_level) && verdict.risk_level >= 1 && verdict.risk_level <= 9);
    assert.equal(r.text.format.type, 'json_schema');
  });

  it('streams created, in_progress, the item\'s events and completed, numbered in order', async () => {
    const base = { model: 'tiny', input: 'Hello', max_output_tokens: 8, temperature: 0 };
    const whole = await openai.responses.create(base);
    const all = await events(await openai.responses.create({ ...base, stream: true }));
    checkSequence(all);
    const types = all.map((e) => e.type);
    assert.deepEqual(types.slice(2, 4), ['response.output_item.added', 'response.content_part.added']);
    assert.deepEqual(types.slice(-4), [
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete',
    ]);
    const deltas = all.filter((e) => e.type === 'response.output_text.delta');
    assert.ok(deltas.length > 1, 'text arrives in pieces');
    for (const d of deltas) {
      assert.equal(d.output_index, 0);
      assert.equal(d.content_index, 0);
    }
    const text = deltas.map((d) => d.delta).join('');
    assert.equal(text, whole.output_text);
    assert.equal(all.find((e) => e.type === 'response.output_text.done').text, text);
    const last = all.at(-1).response;
    assert.equal(last.status, 'incomplete');
    assert.equal(last.output[0].content[0].text, text);
    assert.equal(last.usage.output_tokens, whole.usage.output_tokens);
  });

  it('refuses what a stateless server cannot do, naming the field', async () => {
    const cases = [
      [{ input: 'hi', previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{ input: 'hi', background: true }, 'background'],
      [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] },
        'input[0].content[0].type'],
      [{ input: 'hi', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      [{ input: 'hi', max_output_tokens: -1 }, 'max_output_tokens'],
      [{}, 'input'],
    ];
    for (const [body, param] of cases) {
      const r = await post(server, '/v1/responses', { model: 'tiny', ...body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.param, param, JSON.stringify(r.json));
      assert.equal(r.json.error.type, 'invalid_request_error');
    }
    const unknown = await post(server, '/v1/responses', { model: 'gpt-4o', input: 'hi' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, 'model_not_found');
  });
});

describe('responses API, tool calls (qwen3-tiny-q8_0)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('qwen3-tiny-q8_0.gguf', ['--parallel', '2', '--ctx-size', '2048', '--alias', 'tiny']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  const forced = {
    model: 'tiny', input: 'Weather in Paris?', tools: [weather],
    tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 120, temperature: 1, seed: 2,
  };

  it('answers a forced call as a function_call item', async () => {
    const r = await openai.responses.create(forced);
    assert.equal(r.status, 'completed');
    const calls = r.output.filter((o) => o.type === 'function_call');
    assert.equal(calls.length, 1);
    const call = calls[0];
    assert.equal(call.name, 'get_weather');
    assert.match(call.call_id, /^call_[A-Za-z0-9]{24}$/);
    assert.equal(call.status, 'completed');
    const args = JSON.parse(call.arguments);
    assert.equal(typeof args.city, 'string');
    assert.ok(args.city.length <= 12);
    assert.deepEqual(r.tools.map((t) => t.name), ['get_weather']);
    assert.deepEqual(r.tool_choice, { type: 'function', name: 'get_weather' });
  });

  it('streams the call\'s arguments in pieces that add up to the done arguments', async () => {
    const whole = await openai.responses.create(forced);
    const all = await events(await openai.responses.create({ ...forced, stream: true }));
    checkSequence(all);
    assert.equal(all.at(-1).type, 'response.completed');
    const added = all.find((e) => e.type === 'response.output_item.added' && e.item.type === 'function_call');
    assert.equal(added.item.name, 'get_weather');
    const deltas = all.filter((e) => e.type === 'response.function_call_arguments.delta');
    assert.ok(deltas.length > 1, 'arguments arrive in pieces');
    const done = all.find((e) => e.type === 'response.function_call_arguments.done');
    assert.equal(deltas.map((d) => d.delta).join(''), done.arguments);
    for (const d of deltas) assert.equal(d.output_index, done.output_index);
    const wholeCall = whole.output.find((o) => o.type === 'function_call');
    assert.equal(done.arguments, wholeCall.arguments, 'same seed, same call');
    const item = all.find((e) => e.type === 'response.output_item.done' && e.item.type === 'function_call').item;
    assert.equal(item.call_id, added.item.call_id);
  });

  it('takes a call and its output as input items, as chat takes tool_calls and a tool message', async () => {
    const args = '{"city":"Paris"}';
    const r = await openai.responses.create({
      model: 'tiny', tools: [weather], max_output_tokens: 4, temperature: 0,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: args },
        { type: 'function_call_output', call_id: 'call_1', output: '{"sky":"clear"}' },
      ],
    });
    const chat = await openai.chat.completions.create({
      model: 'tiny', max_tokens: 4, temperature: 0,
      tools: [{ type: 'function', function: { name: weather.name, description: weather.description, parameters: weather.parameters } }],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } },
        ] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' },
      ],
    });
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.output_text, chat.choices[0].message.content ?? '');
  });

  it('refuses a function_call_output with no call before it', async () => {
    const r = await post(server, '/v1/responses', {
      model: 'tiny', input: [{ type: 'function_call_output', call_id: 'call_9', output: 'x' }],
    });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'input[0].call_id');
  });
});

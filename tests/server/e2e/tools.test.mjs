// Tool calls through the official OpenAI SDK: tool_choice required / named / none / auto,
// parallel_tool_calls, streamed delta.tool_calls, finish_reason "tool_calls". qwen3-tiny carries
// the Qwen3 template (Hermes-style <tool_call> JSON). Its weights are random, so forced calls
// come from the grammar; "auto" is checked by giving the model's text with a grammar.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { skipReason, startServer, client, post } from '../../e2e/harness.mjs';

const skip = skipReason();
const messages = [{ role: 'user', content: 'What is the weather in Paris, and the time in Tokyo?' }];
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer' } },
      required: ['city'],
    },
  },
};
const clock = {
  type: 'function',
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { enum: ['Europe/Paris', 'Asia/Tokyo'] } }, required: ['zone'] },
  },
};

function checkCall(call, name) {
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, name);
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args, 'object');
  return args;
}

describe('tool calls (qwen3-tiny, Hermes format)', { skip: skip || false }, () => {
  let server;
  let openai;
  before(async () => {
    server = await startServer('qwen3-tiny-q8_0.gguf', ['--parallel', '2', '--ctx-size', '2048', '--alias', 'tiny']);
    openai = client(server);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('tool_choice "required" forces a valid call of one of the tools', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await openai.chat.completions.create({
        model: 'tiny', messages, tools: [weather, clock], tool_choice: 'required', parallel_tool_calls: false,
        max_tokens: 120, temperature: 1, seed,
      });
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, null);
      assert.equal(choice.message.tool_calls.length, 1);
      const call = choice.message.tool_calls[0];
      const args = checkCall(call, call.function.name);
      if (call.function.name === 'get_weather') {
        assert.equal(typeof args.city, 'string');
        assert.ok(args.city.length <= 12);
      } else {
        assert.equal(call.function.name, 'get_time');
        assert.ok(['Europe/Paris', 'Asia/Tokyo'].includes(args.zone));
      }
    }
  });

  it('a named tool_choice calls that function; parallel calls come in order', async () => {
    const r = await openai.chat.completions.create({
      model: 'tiny', messages, tools: [weather, clock], tool_choice: { type: 'function', function: { name: 'get_time' } },
      max_tokens: 200, temperature: 1, seed: 4,
    });
    const calls = r.choices[0].message.tool_calls;
    assert.ok(calls.length >= 1);
    for (const c of calls) assert.ok(['Europe/Paris', 'Asia/Tokyo'].includes(checkCall(c, 'get_time').zone));
    assert.equal(new Set(calls.map((c) => c.id)).size, calls.length);
  });

  it('streams delta.tool_calls with an index, the arguments in pieces', async () => {
    const body = {
      model: 'tiny', messages, tools: [weather], tool_choice: 'required', parallel_tool_calls: false,
      max_tokens: 120, temperature: 1, seed: 5,
    };
    const whole = await openai.chat.completions.create(body);
    const stream = await openai.chat.completions.create({ ...body, stream: true });
    const pieces = [];
    let start = null;
    let finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      if (c.finish_reason) finish = c.finish_reason;
      for (const t of c.delta?.tool_calls ?? []) {
        assert.equal(t.index, 0);
        if (t.id) {
          assert.equal(start, null, 'one start per call');
          start = t;
          assert.equal(t.function.name, 'get_weather');
        } else {
          pieces.push(t.function.arguments);
        }
      }
    }
    assert.equal(finish, 'tool_calls');
    assert.ok(start);
    assert.ok(pieces.length > 1, 'arguments arrive in pieces');
    // Same seed, same tokens: the pieces join into the non-streamed arguments.
    assert.equal(pieces.join(''), whole.choices[0].message.tool_calls[0].function.arguments);
  });

  it('tool_choice "none" renders no tools; "auto" reads the model\'s own call', async () => {
    const withTools = await openai.chat.completions.create({ model: 'tiny', messages, tools: [weather], max_tokens: 4 });
    const none = await openai.chat.completions.create({
      model: 'tiny', messages, tools: [weather], tool_choice: 'none', max_tokens: 4,
    });
    const bare = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 4 });
    assert.equal(none.usage.prompt_tokens, bare.usage.prompt_tokens);
    assert.ok(withTools.usage.prompt_tokens > bare.usage.prompt_tokens + 20);
    assert.equal(none.choices[0].message.tool_calls, undefined);
    // The text a model writes for a call, given here by a grammar, comes back as a call.
    const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>';
    const grammar = `root ::= ${JSON.stringify(text)}`;
    const auto = await post(server, '/v1/chat/completions', {
      messages, tools: [weather], tool_choice: 'auto', grammar, max_tokens: 400,
    });
    assert.equal(auto.status, 200, JSON.stringify(auto.json));
    const m = auto.json.choices[0];
    assert.equal(m.finish_reason, 'tool_calls');
    assert.equal(m.message.content, 'Let me check.');
    assert.equal(m.message.tool_calls.length, 1);
    assert.deepEqual(checkCall(m.message.tool_calls[0], 'get_weather'), { city: 'Paris', days: 2 });
  });

  it('refuses bad tool fields with 400 naming them', async () => {
    for (const [extra, param] of [
      [{ tools: [weather], tool_choice: 'sometimes' }, 'tool_choice'],
      [{ tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ tools: [{ type: 'retrieval' }] }, 'tools[0].type'],
      [{ tools: [{ type: 'function', function: { parameters: {} } }] }, 'tools[0].function.name'],
      [{ tools: [weather, weather] }, 'tools[1].function.name'],
      [{ tools: [weather], tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice'],
      [{ tools: [weather], parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
    ]) {
      const r = await post(server, '/v1/chat/completions', { messages, max_tokens: 4, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.param, param, JSON.stringify(extra) + ' ' + r.json.error.message);
    }
  });
});

// Chat templates: a model without one chats through the chatml fallback (and the log says so),
// --chat-template NAME and --chat-template-file replace the model's own (seen through
// POST /apply-template and /props), and bad choices stop the server with one line.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipReason, startServer, client, post, model, bin } from '../../e2e/harness.mjs';

const skip = skipReason();
const messages = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is the capital of France? Answer in one word.' },
];
const chatml = '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' +
  '<|im_start|>user\nWhat is the capital of France? Answer in one word.<|im_end|>\n<|im_start|>assistant\n';

async function props(server) {
  return (await fetch(`${server.url}/props`)).json();
}

async function applyTemplate(server, body) {
  const r = await post(server, '/apply-template', body);
  assert.equal(r.status, 200, r.text);
  return r.json.prompt;
}

// Runs `cellserve serve` expecting it to refuse its options: {status, stderr}.
function refusedServe(args) {
  const r = spawnSync(bin, ['serve', '-m', model('stories260K.gguf'), '--port', '0', ...args],
    { encoding: 'utf8', timeout: 60000 });
  return { status: r.status, stderr: r.stderr };
}

describe('a model without a chat template (stories260K)', { skip: skip || false }, () => {
  let server;
  before(async () => {
    server = await startServer('stories260K.gguf', ['--parallel', '1', '--ctx-size', '1024']);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('says at start-up that it uses the built-in chatml', () => {
    const lines = server.stderr.split('\n').filter((l) => /chat template/.test(l));
    assert.deepEqual(lines, ['cellserve serve: the model has no chat template; using the built-in chatml ' +
      '(choose another with --chat-template NAME or --chat-template-file FILE)']);
  });

  it('chats through the official client instead of answering 400', async () => {
    const r = await client(server).chat.completions.create({
      model: 'stories260K', messages, max_tokens: 8, temperature: 0,
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(r.choices[0].message.content.length > 0);
    // The prompt is the chatml text, tokenized with the model's BOS.
    const tokens = await post(server, '/tokenize', { content: chatml, add_special: true });
    assert.equal(r.usage.prompt_tokens, tokens.json.tokens.length);
  });

  it('renders chatml in /apply-template and reports it in /props', async () => {
    assert.equal(await applyTemplate(server, { messages }), chatml);
    assert.equal(await applyTemplate(server, { messages, add_generation_prompt: false }),
      chatml.slice(0, -'<|im_start|>assistant\n'.length));
    const p = await props(server);
    assert.equal(p.chat_template_source, 'fallback');
    assert.equal(p.chat_template_name, 'chatml');
    assert.match(p.chat_template, /<\|im_start\|>/);
    assert.equal(p.bos_token, '<s>');
    assert.equal(p.eos_token, '</s>');
  });

  it('answers /apply-template errors as the chat endpoint does', async () => {
    for (const [body, param] of [[{}, 'messages'], [{ messages: [] }, 'messages'],
      [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
      [{ messages, add_generation_prompt: 'yes' }, 'add_generation_prompt'], [{ messages, tools: {} }, 'tools']]) {
      const r = await post(server, '/apply-template', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.param, param, JSON.stringify(body));
    }
    assert.equal((await post(server, '/apply-template', '{"messages": [')).status, 400);
    const get = await fetch(`${server.url}/apply-template`);
    assert.equal(get.status, 405);
  });
});

describe('choosing the chat template (qwen3-tiny)', { skip: skip || false }, () => {
  let own;
  let dir;
  before(async () => {
    own = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '1024']);
    dir = mkdtempSync(path.join(os.tmpdir(), 'cellserve-templates-'));
  });
  after(async () => {
    assert.equal(await own.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  });

  it('uses the model\'s own template by default', async () => {
    assert.equal(await applyTemplate(own, { messages }), chatml);
    const p = await props(own);
    assert.equal(p.chat_template_source, 'model');
    assert.equal(p.chat_template_name, null);
    assert.match(own.stderr, /chat template: the model's own/);
  });

  it('--chat-template llama3 changes the rendered prompt and the chat still works', async () => {
    const llama = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '1024',
      '--chat-template', 'llama3']);
    try {
      const prompt = await applyTemplate(llama, { messages });
      assert.notEqual(prompt, await applyTemplate(own, { messages }));
      assert.equal(prompt, '<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.' +
        '<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is the capital of France? Answer in one word.' +
        '<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
      const p = await props(llama);
      assert.equal(p.chat_template_source, 'builtin');
      assert.equal(p.chat_template_name, 'llama3');
      assert.match(llama.stderr, /chat template: the built-in llama3 \(--chat-template\)/);
      const r = await client(llama).chat.completions.create({ messages, max_tokens: 4, temperature: 0 });
      assert.equal(r.choices.length, 1);
    } finally {
      assert.equal(await llama.stop(), 0);
    }
  });

  it('--chat-template qwen3 renders as the model\'s own Qwen3 template, tools included', async () => {
    const qwen = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '1024',
      '--chat-template', 'qwen3']);
    try {
      const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
      const withTools = [...messages, { role: 'assistant', content: '',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"id": 7}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'found' }];
      for (const body of [{ messages }, { messages: withTools, tools },
        { messages, chat_template_kwargs: { enable_thinking: false } }]) {
        assert.equal(await applyTemplate(qwen, body), await applyTemplate(own, body), JSON.stringify(body));
      }
    } finally {
      assert.equal(await qwen.stop(), 0);
    }
  });

  it('--chat-template-file replaces the model\'s template with the file', async () => {
    const file = path.join(dir, 'custom.jinja');
    writeFileSync(file, '{% for m in messages %}### {{ m.role | upper }}: {{ m.content }}\n{% endfor %}' +
      '{% if add_generation_prompt %}### ASSISTANT:{% endif %}');
    const custom = await startServer('qwen3-tiny-f32.gguf', ['--parallel', '1', '--ctx-size', '1024',
      '--chat-template-file', file]);
    try {
      assert.equal(await applyTemplate(custom, { messages: messages.slice(1) }),
        '### USER: What is the capital of France? Answer in one word.\n### ASSISTANT:');
      const p = await props(custom);
      assert.equal(p.chat_template_source, 'file');
      assert.equal(p.chat_template_name, file);
      const r = await client(custom).chat.completions.create({ messages, max_tokens: 4, temperature: 0 });
      const tokens = await post(custom, '/tokenize', { content: await applyTemplate(custom, { messages }) });
      assert.equal(r.usage.prompt_tokens, tokens.json.tokens.length);
    } finally {
      assert.equal(await custom.stop(), 0);
    }
  });

  it('refuses an unknown name or a broken file with one line and exit status 1', () => {
    const unknown = refusedServe(['--chat-template', 'vicuna']);
    assert.equal(unknown.status, 1);
    assert.equal(unknown.stderr, 'cellserve serve: error: --chat-template vicuna: no such built-in template; ' +
      'the built-in templates are chatml, llama3, mistral, qwen3\n');
    const broken = path.join(dir, 'broken.jinja');
    writeFileSync(broken, 'Hello\n{% for m in messages %}{{ m.content }}\n');
    const bad = refusedServe(['--chat-template-file', broken]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, new RegExp(`^cellserve serve: error: --chat-template-file ${broken}: line \\d+: .+\n$`));
    const missing = refusedServe(['--chat-template-file', path.join(dir, 'absent.jinja')]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /^cellserve serve: error: --chat-template-file .*absent\.jinja: No such file or directory\n$/);
    const both = refusedServe(['--chat-template', 'chatml', '--chat-template-file', broken]);
    assert.equal(both.status, 1);
    assert.equal(both.stderr.split('\n').length, 2, both.stderr);
  });
});

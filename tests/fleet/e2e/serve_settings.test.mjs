// The serve settings of a deployment spec end to end (issue 48, item 1): a real hub and a real
// agent on 127.0.0.1 serve a testdata model with [engine] embeddings, pooling and an inline chat
// template from the spec, and the official `openai` client uses embeddings, the Responses API and
// chat through the deployment endpoint /d/<deployment>/v1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { bin, model, skipReason } from '../../e2e/harness.mjs';
import { freePort, inTempFleet, spawnLogged, until } from '../../e2e/fleet_harness.mjs';

const json = async (url) => (await fetch(url)).json();

test('serve settings in the spec: embeddings, responses and a chat template through the deployment', { skip: skipReason() }, async () => {
  await inTempFleet('cs-serve-settings-', async (dir) => {
    const hubDir = path.join(dir, 'hub');
    const port = await freePort();
    const hub = `http://127.0.0.1:${port}`;
    spawnLogged(['hub', '--listen', `127.0.0.1:${port}`, '--data-dir', hubDir, '--poll-seconds', '0.3'], 'hub');
    await until('the hub', async () => (await fetch(`${hub}/health`)).status === 200, 10000);
    const source = model('qwen3-tiny-f32.gguf');
    copyFileSync(source, path.join(hubDir, 'files', 'model.gguf'));
    const sha = createHash('sha256').update(readFileSync(source)).digest('hex');
    spawnLogged(['agent', '--hub', hub, '--data-dir', path.join(dir, 'a'), '--name', 'a', '--benchmark-shape', '',
      '--no-autotune'], 'agent');
    await until('the agent', async () => (await json(`${hub}/api/v1/processors`)).processors.some((p) => p.online));

    // A bad setting is refused at deploy time, naming its key.
    const bad = path.join(dir, 'bad.toml');
    writeFileSync(bad, `name = "bad"\nmax_price_per_day = 1\n[model]\nurl = "${hub}/files/model.gguf"\nsha256 = "${sha}"\n` +
      `[engine]\nkv_type = "q4_0"\n`);
    assert.throws(() => execFileSync(bin, ['deploy', bad, '--hub', hub], { encoding: 'utf8', stdio: 'pipe' }),
      (e) => /engine\.kv_type must be f16, f32 or q8_0/.test(e.stderr));

    const template = '{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}[assistant] ';
    const spec = path.join(dir, 'emb.toml');
    writeFileSync(spec, `name = "emb"\nmax_price_per_day = 1\n[model]\nurl = "${hub}/files/model.gguf"\nsha256 = "${sha}"\n` +
      `[engine]\nparallel = 1\nctx_size = 512\nembeddings = true\npooling = "last"\nkv_type = "f16"\nbatch_size = 256\n` +
      `chat_template_jinja = ${JSON.stringify(template)}\n`);
    execFileSync(bin, ['deploy', spec, '--hub', hub], { stdio: 'ignore' });
    const shown = await until('the replica ready', async () => {
      const d = await json(`${hub}/api/v1/deployments/emb`);
      return d.ready === 1 && d;
    }, 90000);
    assert.equal(shown.spec.engine.embeddings, true);
    assert.equal(shown.spec.engine.pooling, 'last');
    assert.equal(shown.spec.engine.chat_template_jinja, template);

    const client = new OpenAI({ baseURL: `${hub}/d/emb/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    // Embeddings through the deployment endpoint (501 before: the spec could not ask for them).
    const emb = await client.embeddings.create({ model: 'emb', input: ['a fraud case', 'a normal case'] });
    assert.equal(emb.data.length, 2);
    assert.ok(emb.data[0].embedding.length > 0);
    assert.equal(emb.data[1].index, 1);
    assert.notDeepEqual(emb.data[0].embedding, emb.data[1].embedding);
    assert.ok(emb.usage.prompt_tokens > 0);

    // The Responses API and chat, through the same endpoint.
    const response = await client.responses.create({ model: 'emb', input: 'Hi', max_output_tokens: 4, temperature: 0 });
    assert.equal(response.object, 'response');
    assert.equal(response.usage.output_tokens, 4);
    const chat = await client.chat.completions.create({ model: 'emb', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
    assert.equal(chat.choices[0].message.role, 'assistant');

    // The spec's template is the one the replica renders with (llama-server's /apply-template on
    // the replica's address; an open hub lets its operator reach it).
    const applied = await (await fetch(`${hub}/d/emb/r/0/apply-template`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] }),
    })).json();
    assert.equal(applied.prompt, '[system] Be brief.\n[user] Hi\n[assistant] ');
  });
});

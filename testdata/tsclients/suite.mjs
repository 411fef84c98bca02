// The official TypeScript SDKs against a running gateway whose models are served by the
// upstream simulator: every client protocol against every upstream kind (passthrough and
// translated), plain and streamed, tool round trips, structured output, model lists, errors
// read back through each SDK's own error class, and the cost that streams show. Started by
// tsclients_test.go, which passes GATEWAY_URL and GATEWAY_KEY; run by hand the same way:
//   GATEWAY_URL=http://127.0.0.1:8080 GATEWAY_KEY=sk-gw-... node --test suite.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';

import OpenAI, { toFile } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI, ApiError } from '@google/genai';
import { GoogleGenerativeAI, GoogleGenerativeAIFetchError, SchemaType } from '@google/generative-ai';
import { Agent, run, tool, OpenAIResponsesModel, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';

const base = process.env.GATEWAY_URL;
const key = process.env.GATEWAY_KEY;
assert.ok(base && key, 'GATEWAY_URL and GATEWAY_KEY must be set');

// One model per upstream kind; each client reaches each of them.
const MODELS = (process.env.GATEWAY_MODELS || 'm-openai,m-anthropic,m-gemini').split(',');
const LIMITED = process.env.GATEWAY_LIMITED_MODEL || 'm-limited'; // output limit 100
const LIMIT = Number(process.env.GATEWAY_LIMITED_TOKENS || 100);

const openai = (apiKey = key) => new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
const anthropic = (apiKey = key) => new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
const genai = (apiKey = key) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
const legacy = (apiKey = key) => new GoogleGenerativeAI(apiKey);
const legacyOpts = { baseUrl: base };

const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};
const recipeSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 4 },
    steps: { type: 'array', items: { type: 'string' }, minItems: 2 },
    level: { type: 'string', enum: ['easy', 'hard'] },
    minutes: { type: 'integer', minimum: 5 },
  },
  required: ['name', 'steps', 'level', 'minutes'],
  additionalProperties: false,
};

// checkRecipe validates an answer against recipeSchema by hand (no validator dependency).
function checkRecipe(text, where) {
  let v;
  assert.doesNotThrow(() => { v = JSON.parse(text); }, `${where}: not JSON: ${text}`);
  assert.equal(typeof v.name, 'string', where);
  assert.ok(v.name.length >= 4, `${where}: name ${v.name}`);
  assert.ok(Array.isArray(v.steps) && v.steps.length >= 2 && v.steps.every((s) => typeof s === 'string'), `${where}: steps`);
  assert.ok(['easy', 'hard'].includes(v.level), `${where}: level ${v.level}`);
  assert.ok(Number.isInteger(v.minutes) && v.minutes >= 5, `${where}: minutes ${v.minutes}`);
  assert.deepEqual(Object.keys(v).sort(), ['level', 'minutes', 'name', 'steps'], where);
}

// checkCost: a stream's usage carries what the answer cost, a number, with the currency.
function checkCost(usage, where) {
  assert.ok(usage, `${where}: no usage`);
  assert.equal(typeof usage.cost, 'number', `${where}: usage.cost in ${JSON.stringify(usage)}`);
  assert.ok(usage.cost > 0, `${where}: cost ${usage.cost}`);
  assert.equal(usage.currency, 'RUB', `${where}: currency`);
}

// ---------------------------------------------------------------- chat completions (openai)
for (const model of MODELS) {
  test(`openai chat: plain, streamed with cost, tools, structured (${model})`, async () => {
    const c = openai();
    const r = await c.chat.completions.create({ model, messages: [{ role: 'user', content: 'hello' }], max_completion_tokens: 64 });
    assert.match(r.choices[0].message.content, /Simulated reply/);
    assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);

    const stream = await c.chat.completions.create({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello' }] });
    let text = '', usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.match(text, /Simulated reply/);
    checkCost(usage, 'chat stream');

    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: weatherSchema } }];
    const first = await c.chat.completions.create({ model, tools, messages: [{ role: 'user', content: 'weather in Paris?' }] });
    const call = first.choices[0].message.tool_calls?.[0];
    assert.ok(call, `no tool call: ${JSON.stringify(first.choices[0])}`);
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
    const second = await c.chat.completions.create({
      model, tools, messages: [
        { role: 'user', content: 'weather in Paris?' },
        first.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
      ],
    });
    assert.match(second.choices[0].message.content, /sunny, 21C/);

    const parsed = await c.chat.completions.parse({
      model, messages: [{ role: 'user', content: 'a recipe' }],
      response_format: { type: 'json_schema', json_schema: { name: 'recipe', schema: recipeSchema, strict: true } },
    });
    checkRecipe(parsed.choices[0].message.content, 'chat structured');
  });
}

// ---------------------------------------------------------------- responses (openai)
for (const model of MODELS) {
  test(`openai responses: plain, strict stream helper with cost, tools, structured (${model})`, async () => {
    const c = openai();
    const r = await c.responses.create({ model, input: 'hello', max_output_tokens: 64 });
    assert.match(r.output_text, /Simulated reply/);

    // responses.stream() checks the event order strictly.
    const s = c.responses.stream({ model, input: 'hello' });
    let text = '';
    s.on('response.output_text.delta', (e) => { text += e.delta; });
    const final = await s.finalResponse();
    assert.equal(final.output_text, text);
    checkCost(final.usage, 'response.completed');

    const tools = [{ type: 'function', name: 'get_weather', parameters: weatherSchema, strict: true }];
    const first = await c.responses.create({ model, tools, input: 'weather in Paris?' });
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call, JSON.stringify(first.output));
    const second = await c.responses.create({
      model, tools, input: [
        { role: 'user', content: 'weather in Paris?' },
        call,
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21C' },
      ],
    });
    assert.match(second.output_text, /sunny, 21C/);

    const structured = await c.responses.create({
      model, input: 'a recipe',
      text: { format: { type: 'json_schema', name: 'recipe', schema: recipeSchema, strict: true } },
    });
    checkRecipe(structured.output_text, 'responses structured');
  });
}

// ---------------------------------------------------------------- stored responses (openai)
test('openai responses: a stored conversation continued across three upstream kinds, retrieved, listed, deleted', async () => {
  const c = openai();
  const tools = [{ type: 'function', name: 'get_weather', parameters: weatherSchema, strict: true }];
  const r1 = await c.responses.create({ model: 'm-openai', input: 'my name is Ada' });
  assert.match(r1.id, /^resp_/);
  assert.equal(r1.store, true);
  // Turn 2 on a messages upstream: only the new input is sent, the model calls the tool.
  const r2 = await c.responses.create({ model: 'm-anthropic', previous_response_id: r1.id, tools, input: 'weather in Paris?' });
  assert.equal(r2.previous_response_id, r1.id);
  const call = r2.output.find((o) => o.type === 'function_call');
  assert.ok(call, JSON.stringify(r2.output));
  assert.ok(r2.usage.input_tokens > r1.usage.input_tokens, 'turn 2 counts turn 1 too');
  // Turn 3 on a content-generation upstream, streamed: the tool's output alone; the call it
  // answers is in the stored conversation.
  const s = c.responses.stream({
    model: 'm-gemini', previous_response_id: r2.id, tools,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21C' }],
  });
  const r3 = await s.finalResponse();
  assert.match(r3.output_text, /sunny, 21C/);
  assert.ok(r3.usage.input_tokens > r2.usage.input_tokens, 'turn 3 counts the conversation');

  const got = await c.responses.retrieve(r3.id);
  assert.equal(got.id, r3.id);
  assert.equal(got.output_text, r3.output_text);
  const items = [];
  for await (const it of c.responses.inputItems.list(r3.id, { limit: 1 })) items.push(it);
  assert.deepEqual(items.map((i) => i.type), ['function_call_output']);
  assert.ok(items[0].id);

  await c.responses.delete(r2.id);
  await assert.rejects(c.responses.retrieve(r2.id), (e) => e.status === 404);
  // The conversation through the deleted response cannot be continued.
  await assert.rejects(
    c.responses.create({ model: 'm-anthropic', previous_response_id: r3.id, input: 'and tomorrow?' }),
    (e) => e.status === 400 && e.param === 'previous_response_id',
  );
});

// ---------------------------------------------------------------- OpenAI Agents SDK
test('openai agents: a two-turn agent with a tool, the second turn continued by previous_response_id on a translated model', async () => {
  setTracingDisabled(true); // no trace export to api.openai.com
  const calls = [];
  const getWeather = tool({
    name: 'get_weather', description: 'The weather in a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => { calls.push(city); return 'sunny, 21C'; },
  });
  const agent = new Agent({
    name: 'Assistant', instructions: 'Be brief.', tools: [getWeather],
    model: new OpenAIResponsesModel(openai(), 'm-anthropic'),
  });
  const first = await run(agent, 'weather in Paris?');
  assert.match(first.finalOutput, /sunny, 21C/);
  assert.ok(first.lastResponseId?.startsWith('resp_'), String(first.lastResponseId));
  // Server-managed state: only the new input goes, with the first turn's last response id;
  // inside the turn the SDK chains its own tool round trip the same way.
  const second = await run(agent, 'and in Rome?', { previousResponseId: first.lastResponseId });
  assert.match(second.finalOutput, /sunny, 21C/);
  assert.equal(calls.length, 2);
  assert.notEqual(second.lastResponseId, first.lastResponseId);
  const last = await openai().responses.retrieve(second.lastResponseId);
  assert.ok(last.previous_response_id, 'the last response continues the conversation');
  assert.ok(last.usage.input_tokens > 0);
});

// ---------------------------------------------------------------- messages (anthropic)
for (const model of MODELS) {
  test(`anthropic messages: plain, stream helper with input at start and cost, tools, structured (${model})`, async () => {
    const c = anthropic(); // sends anthropic-version 2026-10-21
    const r = await c.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });
    assert.match(r.content[0].text, /Simulated reply/);
    assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);

    const s = c.messages.stream({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });
    let startInput = -1;
    s.on('streamEvent', (e) => { if (e.type === 'message_start') startInput = e.message.usage.input_tokens; });
    const final = await s.finalMessage();
    assert.match(final.content[0].text, /Simulated reply/);
    assert.ok(startInput > 0, `message_start input_tokens ${startInput}`);
    assert.ok(final.usage.output_tokens > 0);

    // The raw events show the cost in message_delta's usage.
    const raw = await c.messages.create({ model, max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let deltaUsage;
    for await (const e of raw) if (e.type === 'message_delta') deltaUsage = e.usage;
    checkCost(deltaUsage, 'message_delta');

    const tools = [{ name: 'get_weather', input_schema: weatherSchema }];
    const first = await c.messages.create({ model, max_tokens: 256, tools, messages: [{ role: 'user', content: 'weather in Paris?' }] });
    const call = first.content.find((b) => b.type === 'tool_use');
    assert.ok(call, JSON.stringify(first.content));
    assert.equal(first.stop_reason, 'tool_use');
    assert.equal(typeof call.input.city, 'string');
    const second = await c.messages.create({
      model, max_tokens: 256, tools, messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny, 21C' }] },
      ],
    });
    assert.match(second.content.find((b) => b.type === 'text').text, /sunny, 21C/);

    const structured = await c.messages.create({
      model, max_tokens: 512, messages: [{ role: 'user', content: 'a recipe' }],
      output_config: { format: { type: 'json_schema', schema: recipeSchema } },
    });
    checkRecipe(structured.content.find((b) => b.type === 'text').text, 'messages structured');
  });
}

// ---------------------------------------------------------------- content generation (@google/genai)
for (const model of MODELS) {
  test(`@google/genai: plain, stream with cost, tools, structured (${model})`, async () => {
    const ai = genai();
    const r = await ai.models.generateContent({ model, contents: 'hello' });
    assert.match(r.text, /Simulated reply/);
    assert.ok(r.usageMetadata.promptTokenCount > 0);

    let text = '', last;
    for await (const chunk of await ai.models.generateContentStream({ model, contents: 'hello' })) {
      text += chunk.text ?? '';
      last = chunk;
    }
    assert.match(text, /Simulated reply/);
    checkCost(last.usageMetadata, 'last content-generation chunk');

    const tools = [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: weatherSchema }] }];
    const first = await ai.models.generateContent({ model, contents: 'weather in Paris?', config: { tools } });
    const call = first.functionCalls?.[0];
    assert.ok(call, JSON.stringify(first.candidates));
    assert.equal(call.name, 'get_weather');
    const second = await ai.models.generateContent({
      model, config: { tools }, contents: [
        { role: 'user', parts: [{ text: 'weather in Paris?' }] },
        first.candidates[0].content,
        { role: 'user', parts: [{ functionResponse: { id: call.id, name: call.name, response: { result: 'sunny, 21C' } } }] },
      ],
    });
    assert.match(second.text, /sunny, 21C/);

    const structured = await ai.models.generateContent({
      model, contents: 'a recipe', config: { responseMimeType: 'application/json', responseJsonSchema: recipeSchema },
    });
    checkRecipe(structured.text, 'genai structured');
  });
}

// ------------------------------------------------- content generation (legacy @google/generative-ai)
for (const model of MODELS) {
  test(`@google/generative-ai (genai-js): plain, stream without [DONE], tools, structured (${model})`, async () => {
    const m = legacy().getGenerativeModel({ model }, legacyOpts);
    const r = await m.generateContent('hello');
    assert.match(r.response.text(), /Simulated reply/);

    // A [DONE] line would make this SDK throw inside its stream reader.
    const s = await m.generateContentStream('hello');
    let text = '';
    for await (const chunk of s.stream) text += chunk.text();
    const agg = await s.response;
    assert.equal(agg.text(), text);
    assert.match(text, /Simulated reply/);
    checkCost(agg.usageMetadata, 'legacy aggregated usage');

    const tm = legacy().getGenerativeModel({
      model,
      tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: SchemaType.OBJECT, properties: { city: { type: SchemaType.STRING } }, required: ['city'] } }] }],
    }, legacyOpts);
    const chat = tm.startChat();
    const first = await chat.sendMessage('weather in Paris?');
    const call = first.response.functionCalls()?.[0];
    assert.ok(call, JSON.stringify(first.response.candidates));
    const second = await chat.sendMessage([{ functionResponse: { name: call.name, response: { result: 'sunny, 21C' } } }]);
    assert.match(second.response.text(), /sunny, 21C/);

    const sm = legacy().getGenerativeModel({
      model,
      generationConfig: {
        responseMimeType: 'application/json',
        responseSchema: {
          type: SchemaType.OBJECT,
          properties: { name: { type: SchemaType.STRING }, steps: { type: SchemaType.ARRAY, items: { type: SchemaType.STRING } } },
          required: ['name', 'steps'],
        },
      },
    }, legacyOpts);
    const structured = JSON.parse((await sm.generateContent('a recipe')).response.text());
    assert.equal(typeof structured.name, 'string');
    assert.ok(Array.isArray(structured.steps));
  });
}

// ---------------------------------------------------------------- model lists
test('model lists: openai, anthropic and genai list the same models; the output limit is published', async () => {
  const ids = [];
  for await (const m of openai().models.list()) ids.push(m.id);
  for (const m of [...MODELS, LIMITED]) assert.ok(ids.includes(m), `openai list lacks ${m}: ${ids}`);

  const anthIds = [];
  for await (const m of anthropic().models.list()) {
    assert.equal(m.type, 'model');
    assert.equal(typeof m.display_name, 'string');
    assert.ok(!Number.isNaN(Date.parse(m.created_at)), `created_at ${m.created_at}`);
    anthIds.push(m.id);
  }
  assert.deepEqual(anthIds, ids);

  const limited = await anthropic().models.retrieve(LIMITED);
  assert.equal(limited.max_tokens, LIMIT);
  const viaOpenAI = await openai().models.retrieve(LIMITED);
  assert.equal(viaOpenAI.top_provider.max_completion_tokens, LIMIT);

  const gem = [];
  for await (const m of await genai().models.list()) gem.push(m);
  const lim = gem.find((m) => m.name === `models/${LIMITED}`);
  assert.ok(lim, `genai list lacks ${LIMITED}: ${gem.map((m) => m.name)}`);
  assert.equal(lim.outputTokenLimit, LIMIT);
});

// ---------------------------------------------------------------- errors through each SDK's classes
test('errors: each SDK raises its own class with status and message', async () => {
  await assert.rejects(openai('sk-wrong').chat.completions.create({ model: MODELS[0], messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === 'invalid_key' && /key/i.test(e.message));
  await assert.rejects(openai().chat.completions.create({ model: LIMITED, max_completion_tokens: LIMIT + 1, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'invalid_request_error' && new RegExp(String(LIMIT)).test(e.message));
  await assert.rejects(openai().chat.completions.create({ model: MODELS[0], messages: [{ role: 'user', content: 'x #sim:fail=429' }] }),
    (e) => e instanceof OpenAI.RateLimitError && e.status === 429 && e.code === 'upstream_error');

  // The messages routes add "type":"error", which the SDK's error body keeps beside the spec's.
  await assert.rejects(anthropic('sk-wrong').messages.create({ model: MODELS[0], max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401 && e.error?.type === 'error' && e.error?.error?.code === 'invalid_key');
  await assert.rejects(anthropic().messages.create({ model: LIMITED, max_tokens: LIMIT + 1, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.BadRequestError && e.error?.error?.code === 'invalid_request_error' && /limit/.test(e.message));
  await assert.rejects(anthropic().messages.create({ model: 'no-such-model', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.error?.error?.code === 'model_not_found');
  // An error in a stream after it started arrives as the SDK's stream error.
  await assert.rejects((async () => {
    const s = anthropic().messages.stream({ model: MODELS[0], max_tokens: 64, messages: [{ role: 'user', content: 'x #sim:fail=429' }] });
    await s.finalMessage();
  })(), (e) => e instanceof Anthropic.APIError && e.status === 429);

  await assert.rejects(genai('sk-wrong').models.generateContent({ model: MODELS[0], contents: 'x' }),
    (e) => e instanceof ApiError && e.status === 401 && /invalid_key/.test(e.message));
  await assert.rejects(genai().models.generateContent({ model: LIMITED, contents: 'x', config: { maxOutputTokens: LIMIT + 1 } }),
    (e) => e instanceof ApiError && e.status === 400 && /invalid_request_error/.test(e.message));

  await assert.rejects(legacy('sk-wrong').getGenerativeModel({ model: MODELS[0] }, legacyOpts).generateContent('x'),
    (e) => e instanceof GoogleGenerativeAIFetchError && e.status === 401 && /no API key|key/i.test(e.message));
  await assert.rejects(legacy().getGenerativeModel({ model: MODELS[0] }, legacyOpts).generateContent('x #sim:fail=429'),
    (e) => e instanceof GoogleGenerativeAIFetchError && e.status === 429);
});

// A key limited to one request per second (GATEWAY_RATE_LIMITED_KEY; tsclients_test.go makes
// it): the x-ratelimit-* headers do not disturb the answer the SDK parses; without retries a
// 429 is the SDK's RateLimitError with our code and retry-after; with retries the SDK waits
// what retry-after says (its own first back-off is shorter and would be refused again) and
// the retry is answered.
test('rate limits: openai reads the headers and retries a 429 after retry-after', { skip: !process.env.GATEWAY_RATE_LIMITED_KEY }, async () => {
  const limited = process.env.GATEWAY_RATE_LIMITED_KEY;
  const params = { model: MODELS[0], messages: [{ role: 'user', content: 'hi' }] };
  const { data, response } = await openai(limited).chat.completions.create(params).withResponse();
  assert.ok(data.choices[0].message.content && data.usage.total_tokens > 0);
  assert.equal(response.headers.get('x-ratelimit-limit-requests'), '1');
  assert.equal(response.headers.get('x-ratelimit-remaining-requests'), '0');
  assert.ok(response.headers.get('x-ratelimit-reset-requests'));

  await assert.rejects(openai(limited).chat.completions.create(params),
    (e) => e instanceof OpenAI.RateLimitError && e.status === 429 && e.code === 'rate_limited' && e.headers.get('retry-after') === '1');

  const attempts = [];
  const counting = async (url, init) => {
    const r = await fetch(url, init);
    attempts.push({ status: r.status, at: Date.now() });
    return r;
  };
  const retrying = new OpenAI({ baseURL: `${base}/v1`, apiKey: limited, maxRetries: 3, fetch: counting });
  const again = await retrying.chat.completions.create(params);
  assert.ok(again.choices[0].message.content);
  assert.deepEqual(attempts.map((a) => a.status), [429, 200]);
  assert.ok(attempts[1].at - attempts[0].at >= 900, `retried after ${attempts[1].at - attempts[0].at} ms, retry-after says 1 s`);
});

// ---------------------------------------------------------------- batches (openai, anthropic)
// The gateway runs a batch's items itself on every upstream kind: one item per model, each
// answered and charged like a live request, the results read back the SDKs' own way.
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const POLL = 100; // ms between polls of a batch
const POLL_FOR = 60_000;

test('openai batches: files.create, batches.create, retrieve until completed, files.content of the output (every upstream kind)', async () => {
  const c = openai();
  const lines = MODELS.map((model, i) => JSON.stringify({ custom_id: `item-${i}`, method: 'POST', url: '/v1/chat/completions',
    body: { model, max_completion_tokens: 32, messages: [{ role: 'user', content: 'hello' }] } }));
  const file = await c.files.create({ file: await toFile(Buffer.from(lines.join('\n') + '\n'), 'items.jsonl'), purpose: 'batch' });
  assert.equal(file.object, 'file');
  assert.equal(file.purpose, 'batch');
  assert.equal(file.bytes, Buffer.byteLength(lines.join('\n') + '\n'));

  let b = await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { suite: 'ts' } });
  assert.equal(b.object, 'batch');
  assert.equal(b.input_file_id, file.id);
  assert.deepEqual(b.metadata, { suite: 'ts' });
  for (const until = Date.now() + POLL_FOR; !['completed', 'failed', 'expired', 'cancelled'].includes(b.status); ) {
    assert.ok(Date.now() < until, `batch still ${b.status} after ${POLL_FOR} ms`);
    await sleep(POLL);
    b = await c.batches.retrieve(b.id);
  }
  assert.equal(b.status, 'completed', JSON.stringify(b.errors));
  assert.deepEqual(b.request_counts, { total: MODELS.length, completed: MODELS.length, failed: 0 });
  assert.ok(b.output_file_id && !b.error_file_id, `output ${b.output_file_id}, error ${b.error_file_id}`);
  assert.ok(b.completed_at >= b.created_at);

  const content = await c.files.content(b.output_file_id);
  const got = (await content.text()).trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(got.map((l) => l.custom_id).sort(), MODELS.map((_, i) => `item-${i}`));
  for (const l of got) {
    assert.equal(l.error, null, l.custom_id);
    assert.equal(l.response.status_code, 200, l.custom_id);
    assert.ok(l.response.request_id, `${l.custom_id}: request_id`);
    const model = MODELS[Number(l.custom_id.slice(5))];
    assert.equal(l.response.body.object, 'chat.completion', l.custom_id);
    assert.match(l.response.body.choices[0].message.content, /Simulated reply/, `${l.custom_id} (${model})`);
    assert.ok(l.response.body.usage.completion_tokens > 0, l.custom_id);
  }
});

test('anthropic message batches: create, retrieve until ended, results (every upstream kind)', async () => {
  const a = anthropic();
  const requests = MODELS.map((model, i) => ({ custom_id: `msg-${i}`, params: { model, max_tokens: 32, messages: [{ role: 'user', content: 'hello' }] } }));
  let b = await a.messages.batches.create({ requests });
  assert.equal(b.type, 'message_batch');
  for (const until = Date.now() + POLL_FOR; b.processing_status !== 'ended'; ) {
    assert.ok(Date.now() < until, `message batch still ${b.processing_status} after ${POLL_FOR} ms`);
    await sleep(POLL);
    b = await a.messages.batches.retrieve(b.id);
  }
  assert.equal(b.request_counts.succeeded, MODELS.length, JSON.stringify(b.request_counts));
  assert.equal(b.request_counts.errored + b.request_counts.canceled + b.request_counts.expired + b.request_counts.processing, 0);
  assert.ok(b.ended_at && b.results_url);

  const seen = [];
  for await (const r of await a.messages.batches.results(b.id)) {
    seen.push(r.custom_id);
    assert.equal(r.result.type, 'succeeded', `${r.custom_id}: ${JSON.stringify(r.result)}`);
    assert.equal(r.result.message.type, 'message', r.custom_id);
    assert.match(r.result.message.content[0].text, /Simulated reply/, r.custom_id);
    assert.ok(r.result.message.usage.output_tokens > 0, r.custom_id);
  }
  assert.deepEqual(seen.sort(), requests.map((r) => r.custom_id));
});

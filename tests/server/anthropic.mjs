// anthropic.mjs — the official `@anthropic-ai/sdk` client against
// /v1/messages: a message, the stream helper's event sequence and final
// message, the system prompt, stop_sequences, a tool_use block from an
// assistant prefill, count_tokens, x-api-key auth and errors in
// Anthropic's shape.
import { clients, eq, finish, ok, pickStop, post, startServer, stopServer, test, watchdog } from './lib.mjs';

watchdog(90);
const { Anthropic } = clients();
const srv = await startServer(['--api-key', 'sk-ant-test']);
const client = new Anthropic({ baseURL: srv.url, apiKey: 'sk-ant-test', maxRetries: 0, timeout: 60000 });
const MODEL = 'claude-sonnet-4-5';
const user = (content) => [{ role: 'user', content }];
const TOOLS = [{ name: 'get_weather', description: 'Weather of a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];

let greedy;
await test('messages.create', async () => {
    const r = await client.messages.create({ model: MODEL, max_tokens: 10, temperature: 0, messages: user('Tell me a story') });
    ok(/^msg_/.test(r.id) && r.type === 'message' && r.role === 'assistant', 'id, type, role', r);
    eq(r.model, MODEL, 'the reply names the requested model');
    ok(r.content.length === 1 && r.content[0].type === 'text' && r.content[0].text.length > 0, 'one text block', r.content);
    eq([r.stop_reason, r.stop_sequence], ['max_tokens', null], 'stop_reason max_tokens');
    ok(r.usage.input_tokens > 0 && r.usage.output_tokens === 10, 'usage', r.usage);
    greedy = r.content[0].text;
    const again = await client.messages.create({ model: MODEL, max_tokens: 10, temperature: 0, messages: user('Tell me a story') });
    eq(again.content[0].text, greedy, 'greedy is deterministic');
    ok(again.usage.cache_read_input_tokens > 0, 'a repeated prompt reads the cache', again.usage);
    eq(again.usage.input_tokens + again.usage.cache_read_input_tokens, r.usage.input_tokens + r.usage.cache_read_input_tokens,
       'input + cache_read tokens are the prompt');
    const blocks = await client.messages.create({ model: MODEL, max_tokens: 10, temperature: 0,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Tell me a story' }] }] });
    eq(blocks.content[0].text, greedy, 'content as text blocks = as a string');
});

await test('system prompt', async () => {
    const n0 = await client.messages.countTokens({ model: MODEL, messages: user('Hello') });
    const n1 = await client.messages.countTokens({ model: MODEL, system: 'You are a pirate.', messages: user('Hello') });
    ok(n0.input_tokens > 0 && n1.input_tokens > n0.input_tokens + 3, 'count_tokens grows with the system prompt', [n0, n1]);
    const r = await client.messages.create({ model: MODEL, max_tokens: 4, temperature: 0, system: 'You are a pirate.', messages: user('Hello') });
    eq(r.usage.input_tokens + r.usage.cache_read_input_tokens, n1.input_tokens, 'the reply counts the system prompt');
    const b = await client.messages.create({ model: MODEL, max_tokens: 4, temperature: 0,
        system: [{ type: 'text', text: 'You are a pirate.' }], messages: user('Hello') });
    eq(b.content, r.content, 'system as text blocks = as a string');
});

await test('streaming', async () => {
    const stream = client.messages.stream({ model: MODEL, max_tokens: 10, temperature: 0, messages: user('Tell me a story') });
    const types = [];
    let text = '';
    for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    }
    const seq = types.filter((t) => t !== 'ping');
    const squeezed = seq.filter((t, i) => t !== 'content_block_delta' || seq[i - 1] !== 'content_block_delta');
    eq(squeezed, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'],
       'the event sequence');
    eq(text, greedy, 'the text deltas = the non-streamed text');
    const final = await stream.finalMessage();
    eq([final.content.length, final.content[0]?.text, final.stop_reason], [1, greedy, 'max_tokens'], 'the final message');
    eq(final.usage.output_tokens, 10, 'the final usage');
});

await test('stop_sequences', async () => {
    const base = { model: MODEL, max_tokens: 24, temperature: 0, messages: user('Say something long') };
    const full = (await client.messages.create(base)).content[0].text;
    const pick = pickStop(full);
    if (!ok(pick, 'a stop sequence can be picked from the greedy text', full)) return;
    const r = await client.messages.create({ ...base, stop_sequences: ['qqqzzz', pick.stop] });
    eq([r.content[0].text, r.stop_reason, r.stop_sequence], [pick.before, 'stop_sequence', pick.stop], 'stopped at the sequence');
    const s = client.messages.stream({ ...base, stop_sequences: [pick.stop] });
    const m = await s.finalMessage();
    eq([m.content[0].text, m.stop_reason, m.stop_sequence], [pick.before, 'stop_sequence', pick.stop], 'streamed: stopped at the sequence');
});

await test('tool_use from an assistant prefill', async () => {
    // The prefill begins the call and the answer continues it; token 30975
    // ('"}}') is forced by logit_bias (an inferno extension on /v1/messages).
    const req = { model: MODEL, max_tokens: 1, temperature: 0, tools: TOOLS, logit_bias: { 30975: 100 },
        messages: [...user('Weather in Paris?'),
            { role: 'assistant', content: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris' }] };
    const r = await client.messages.create(req);
    const tu = r.content.filter((b) => b.type === 'tool_use');
    eq(r.stop_reason, 'tool_use', 'stop_reason tool_use');
    if (ok(tu.length === 1, 'one tool_use block', r.content)) {
        ok(/^toolu_/.test(tu[0].id), 'tool_use id', tu[0].id);
        eq([tu[0].name, tu[0].input], ['get_weather', { city: 'Paris' }], 'tool_use name and input');
    }
    eq(r.content.filter((b) => b.type === 'text' && b.text).length, 0, 'no text beside the call');
    const s = client.messages.stream(req);
    const types = [];
    for await (const ev of s) if (ev.type !== 'ping') types.push(ev.type === 'content_block_start' ? `start:${ev.content_block.type}` :
        ev.type === 'content_block_delta' ? `delta:${ev.delta.type}` : ev.type);
    eq(types, ['message_start', 'start:tool_use', 'delta:input_json_delta', 'content_block_stop', 'message_delta', 'message_stop'],
       'streamed: a tool_use block with its input as input_json_delta');
    const m = await s.finalMessage();
    const stu = m.content.filter((b) => b.type === 'tool_use');
    eq([m.stop_reason, stu.length, stu[0]?.name, stu[0]?.input], ['tool_use', 1, 'get_weather', { city: 'Paris' }],
       'streamed: the final message\'s tool_use block');
    // without the bias the random continuation breaks the call: its text comes back, never dropped
    const broken = await client.messages.create({ ...req, max_tokens: 3, logit_bias: { 30975: -100 } });
    const btext = broken.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    ok(broken.content.some((b) => b.type === 'tool_use') || btext.includes('Paris'), 'a broken call is text, not dropped', broken.content);
    // a prefill that holds the whole call: the same tool_use, streamed or not
    const whole = { model: MODEL, max_tokens: 2, temperature: 0, tools: TOOLS, messages: [...user('Weather in Paris?'),
        { role: 'assistant', content: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' }] };
    const w1 = await client.messages.create(whole);
    const w2 = await client.messages.stream(whole).finalMessage();
    const calls = (m) => m.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]);
    eq([w1.stop_reason, calls(w1)], ['tool_use', [['get_weather', { city: 'Paris' }]]], 'a whole call in the prefill: tool_use');
    eq([w2.stop_reason, calls(w2)], [w1.stop_reason, calls(w1)], 'streamed: the same tool_use');
    // a result goes back as tool_result blocks
    const back = await client.messages.create({ model: MODEL, max_tokens: 3, temperature: 0, tools: TOOLS,
        messages: [...user('Weather in Paris?'),
            { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny, 21 C' }] }] });
    eq(back.type, 'message', 'a tool_result turn is answered');
    // a tool_choice of one tool forces the call's beginning: a call or its text, never dropped
    const forced = await client.messages.create({ model: MODEL, max_tokens: 6, temperature: 0, tools: TOOLS,
        tool_choice: { type: 'tool', name: 'get_weather' }, messages: user('Weather?') });
    const call = forced.content.find((b) => b.type === 'tool_use');
    const text = forced.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    ok(call ? call.name === 'get_weather' : text.includes('get_weather'), 'tool_choice tool: the call, or its text', forced.content);
});

await test('a prefill is continued, not repeated', async () => {
    const req = { model: MODEL, max_tokens: 6, temperature: 0, messages: [...user('Greet me'), { role: 'assistant', content: 'Hello there, dear' }] };
    const r = await client.messages.create(req);
    const m = await client.messages.stream(req).finalMessage();
    eq(r.content, m.content, 'not streamed = streamed');
    ok(r.content.length === 1 && !r.content[0].text.startsWith('Hello there'), 'the reply is the continuation alone', r.content);
});

await test('thinking blocks', async () => {
    const req = { model: MODEL, max_tokens: 8, temperature: 0, thinking: { type: 'enabled', budget_tokens: 1024 },
        logit_bias: { 151667: -100, 151668: -100 }, messages: [...user('Think'), { role: 'assistant', content: '<think>\nLet me see' }] };
    const r = await client.messages.create(req);
    ok(r.content.length === 1 && r.content[0].type === 'thinking' && r.content[0].thinking.length > 0 &&
       !r.content[0].thinking.startsWith('Let me see'), 'a prefill inside <think>: the continuation is one thinking block', r.content);
    const m = await client.messages.stream(req).finalMessage();
    eq(m.content, r.content, 'streamed: the same thinking block');
});

await test('auth and errors', async () => {
    const wrong = new Anthropic({ baseURL: srv.url, apiKey: 'nope', maxRetries: 0, timeout: 30000 });
    try {
        await wrong.messages.create({ model: MODEL, max_tokens: 1, messages: user('x') });
        ok(false, 'a wrong x-api-key is refused');
    } catch (e) {
        ok(e instanceof Anthropic.AuthenticationError && e.status === 401, 'a wrong x-api-key: AuthenticationError 401', String(e));
        eq([e.error?.type, e.error?.error?.type], ['error', 'authentication_error'], 'the 401 in Anthropic\'s shape');
    }
    try {
        await client.messages.create({ model: MODEL, messages: user('x') });
        ok(false, 'max_tokens is required');
    } catch (e) {
        ok(e instanceof Anthropic.BadRequestError && e.status === 400, 'no max_tokens: BadRequestError', String(e));
        eq(e.error?.error?.type, 'invalid_request_error', 'invalid_request_error');
        ok(/max_tokens/.test(e.error?.error?.message), 'the message names max_tokens', e.error);
    }
    try {
        await client.messages.create({ model: MODEL, max_tokens: 1, temperature: 1.5, messages: user('x') });
        ok(false, 'temperature over 1 is refused');
    } catch (e) {
        ok(e.status === 400 && /temperature/.test(e.error?.error?.message), 'temperature 1.5: 400 naming it', String(e));
    }
    const raw = await post(srv, '/v1/messages', '{"model": ', { headers: { 'x-api-key': 'sk-ant-test', 'content-type': 'application/json' } });
    eq([raw.status, raw.json?.type, raw.json?.error?.type], [400, 'error', 'invalid_request_error'], 'malformed JSON in Anthropic\'s shape');
    const nf = await post(srv, '/v1/messages', { model: MODEL, max_tokens: 1, messages: [{ role: 'robot', content: 'x' }] },
                          { headers: { 'x-api-key': 'sk-ant-test' } });
    eq([nf.status, nf.json?.error?.type], [400, 'invalid_request_error'], 'a bad role: 400');
});

await stopServer(srv);
await finish();

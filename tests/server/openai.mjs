// openai.mjs — the official `openai` npm client against /v1: models, chat
// with and without streaming, completions (a string, token ids, a list of
// prompts, echo, streaming), usage and cached tokens, stop strings, seeds,
// n = 2, logprobs, tool calls forced by continue_final_message + logit_bias
// and by tool_choice, the reasoning split, and errors as the client sees
// them (400 naming the field, 401 with --api-key, 404 with --strict-model,
// a prompt over the context).
import { clients, eq, finish, ok, pickStop, post, startServer, stopServer, test, watchdog } from './lib.mjs';

watchdog(120);
const { OpenAI } = clients();
const srv = await startServer(['--parallel', '4']);
const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000 });
const user = (content) => [{ role: 'user', content }];
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
// The assistant has begun the call; token 30975 is '"}}', biased to come next.
const FORCED_CALL = {
    messages: [{ role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris' }],
    continue_final_message: true, logit_bias: { 30975: 100 }, max_tokens: 1, tools: TOOLS,
};

await test('models', async () => {
    const list = await client.models.list();
    eq(list.data.map((m) => m.id), ['tiny-test'], 'models.list names the model by general.name');
});

let greedy; // the greedy chat text of one prompt
await test('chat, not streaming', async () => {
    const r = await client.chat.completions.create({ model: 'anything', messages: user('Tell me a story'), max_tokens: 12, temperature: 0 });
    ok(/^chatcmpl-/.test(r.id), 'chat id', r.id);
    eq(r.object, 'chat.completion', 'chat object');
    eq(r.model, 'anything', 'the reply names the requested model');
    ok(typeof r.created === 'number' && typeof r.system_fingerprint === 'string', 'created and system_fingerprint');
    eq(r.choices.length, 1, 'one choice');
    const c = r.choices[0];
    eq([c.index, c.message.role, c.finish_reason], [0, 'assistant', 'length'], 'choice index, role, finish_reason');
    ok(typeof c.message.content === 'string' && c.message.content.length > 0, 'content text', c.message.content);
    const u = r.usage;
    ok(u.prompt_tokens > 0 && u.completion_tokens === 12 && u.total_tokens === u.prompt_tokens + 12, 'usage counts', u);
    ok(typeof u.prompt_tokens_details?.cached_tokens === 'number', 'usage.prompt_tokens_details.cached_tokens present', u);
    greedy = c.message.content;
    const again = await client.chat.completions.create({ messages: user('Tell me a story'), max_tokens: 12, temperature: 0, model: 'x' });
    eq(again.choices[0].message.content, greedy, 'greedy is deterministic');
    ok(again.usage.prompt_tokens_details.cached_tokens > 0, 'a repeated prompt has cached tokens', again.usage);
});

await test('chat, streaming', async () => {
    const stream = await client.chat.completions.create({ model: 'm', messages: user('Tell me a story'), max_tokens: 12,
        temperature: 0, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const ch of stream) chunks.push(ch);
    ok(chunks.length >= 3, 'several chunks', chunks.length);
    eq(chunks[0].choices[0]?.delta?.role, 'assistant', 'the role comes first');
    ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id), 'chunk object and one id');
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    eq(text, greedy, 'streamed text = the non-streamed text');
    const fin = chunks.filter((c) => c.choices[0]?.finish_reason);
    eq(fin.map((c) => c.choices[0].finish_reason), ['length'], 'one finish_reason, length');
    const last = chunks[chunks.length - 1];
    ok(last.choices.length === 0 && last.usage?.completion_tokens === 12 &&
       typeof last.usage.prompt_tokens_details?.cached_tokens === 'number', 'a usage chunk with empty choices ends it', last);
    // the SDK's stream helper assembles the same message
    const runner = client.chat.completions.stream({ model: 'm', messages: user('Tell me a story'), max_tokens: 12, temperature: 0 });
    const final = await runner.finalChatCompletion();
    eq(final.choices[0].message.content, greedy, 'the stream helper\'s final message');
});

await test('completions', async () => {
    const prompt = 'The capital of France is';
    const a = await client.completions.create({ model: 'm', prompt, max_tokens: 8, temperature: 0 });
    ok(/^cmpl-/.test(a.id) && a.object === 'text_completion', 'completion id and object', a);
    eq([a.choices.length, a.choices[0].index, a.choices[0].finish_reason], [1, 0, 'length'], 'one choice of length');
    ok(a.usage.completion_tokens === 8 && typeof a.usage.prompt_tokens_details?.cached_tokens === 'number', 'completion usage', a.usage);
    const ids = (await post(srv, '/tokenize', { content: prompt })).json.tokens;
    const b = await client.completions.create({ model: 'm', prompt: ids, max_tokens: 8, temperature: 0 });
    eq(b.choices[0].text, a.choices[0].text, 'a prompt of token ids = its text');
    eq(b.usage.prompt_tokens, ids.length, 'prompt_tokens of an id prompt');
    const p2 = 'Once upon a time';
    const c2 = await client.completions.create({ model: 'm', prompt: p2, max_tokens: 8, temperature: 0 });
    const list = await client.completions.create({ model: 'm', prompt: [prompt, p2], max_tokens: 8, temperature: 0 });
    eq(list.choices.map((c) => [c.index, c.text]), [[0, a.choices[0].text], [1, c2.choices[0].text]],
       'a list of prompts: one choice each, as when run alone');
    eq(list.usage.completion_tokens, 16, 'usage sums the prompts');
    const e = await client.completions.create({ model: 'm', prompt, max_tokens: 8, temperature: 0, echo: true });
    eq(e.choices[0].text, prompt + a.choices[0].text, 'echo prepends the prompt');
    const s = await client.completions.create({ model: 'm', prompt, max_tokens: 8, temperature: 0, stream: true });
    let text = '', fins = [];
    for await (const ch of s) { text += ch.choices[0]?.text ?? ''; if (ch.choices[0]?.finish_reason) fins.push(ch.choices[0].finish_reason); }
    eq(text, a.choices[0].text, 'streamed completion text');
    eq(fins, ['length'], 'streamed completion finish_reason');
    const cached = await client.completions.create({ model: 'm', prompt: 'The capital of France is a city', max_tokens: 2, temperature: 0 });
    ok(cached.usage.prompt_tokens_details.cached_tokens >= 0, 'cached_tokens on a shared prefix', cached.usage);
});

await test('stop strings', async () => {
    const base = { model: 'm', messages: user('Say something long'), max_tokens: 24, temperature: 0 };
    const full = (await client.chat.completions.create(base)).choices[0].message.content;
    const pick = pickStop(full);
    if (!ok(pick, 'a stop string can be picked from the greedy text', full)) return;
    const r = await client.chat.completions.create({ ...base, stop: [pick.stop, 'zzzzqqqq'] });
    eq(r.choices[0].message.content, pick.before, `the text ends before the stop string ${JSON.stringify(pick.stop)}`);
    eq(r.choices[0].finish_reason, 'stop', 'finish_reason stop');
    const one = await client.chat.completions.create({ ...base, stop: pick.stop });
    eq(one.choices[0].message.content, pick.before, 'stop as one string');
    const s = await client.chat.completions.create({ ...base, stop: [pick.stop], stream: true });
    let text = '', fin = null;
    for await (const ch of s) { text += ch.choices[0]?.delta?.content ?? ''; fin = ch.choices[0]?.finish_reason ?? fin; }
    eq([text, fin], [pick.before, 'stop'], 'streamed: text before the stop string, finish_reason stop');
    const comp = (await client.completions.create({ model: 'm', prompt: 'Numbers:', max_tokens: 24, temperature: 0 })).choices[0].text;
    const cp = pickStop(comp);
    if (cp) {
        const rc = await client.completions.create({ model: 'm', prompt: 'Numbers:', max_tokens: 24, temperature: 0, stop: [cp.stop] });
        eq([rc.choices[0].text, rc.choices[0].finish_reason], [cp.before, 'stop'], 'completions stop string');
    }
});

await test('seed reproducibility', async () => {
    const req = (seed) => client.chat.completions.create({ model: 'm', messages: user('Pick a word'), max_tokens: 12, temperature: 1, seed });
    const a = (await req(42)).choices[0].message.content;
    const b = (await req(42)).choices[0].message.content;
    eq(b, a, 'the same seed at temperature 1 gives the same text');
    const others = await Promise.all([1, 2, 3].map(async (s) => (await req(s)).choices[0].message.content));
    ok(others.some((t) => t !== a), 'different seeds give different texts', others);
    const ca = (await client.completions.create({ model: 'm', prompt: 'x', max_tokens: 8, temperature: 1, seed: 9 })).choices[0].text;
    const cb = (await client.completions.create({ model: 'm', prompt: 'x', max_tokens: 8, temperature: 1, seed: 9 })).choices[0].text;
    eq(cb, ca, 'completions: the same seed, the same text');
});

await test('n = 2', async () => {
    const g = await client.chat.completions.create({ model: 'm', messages: user('Tell me a story'), max_tokens: 12, temperature: 0, n: 2 });
    eq(g.choices.map((c) => [c.index, c.message.content]), [[0, greedy], [1, greedy]], 'n = 2 at temperature 0: both the greedy text');
    eq(g.usage.completion_tokens, 24, 'usage counts both completions');
    const r = await client.chat.completions.create({ model: 'm', messages: user('Pick a word'), max_tokens: 12, temperature: 1, seed: 5, n: 2 });
    ok(r.choices.length === 2 && r.choices[0].message.content !== r.choices[1].message.content, 'n = 2 at temperature 1: two texts',
       r.choices.map((c) => c.message.content));
    const s = await client.chat.completions.create({ model: 'm', messages: user('Pick a word'), max_tokens: 12, temperature: 1, seed: 5, n: 2, stream: true });
    const texts = ['', ''], fins = [null, null], roles = [0, 0];
    for await (const ch of s) for (const c of ch.choices) {
        texts[c.index] += c.delta?.content ?? '';
        if (c.delta?.role) roles[c.index]++;
        if (c.finish_reason) fins[c.index] = c.finish_reason;
    }
    eq(roles, [1, 1], 'streamed n = 2: a role chunk per choice');
    eq(texts, r.choices.map((c) => c.message.content), 'streamed n = 2 = not streamed (same seed)');
    eq(fins, ['length', 'length'], 'streamed n = 2: a finish_reason per choice');
});

await test('logprobs', async () => {
    const r = await client.chat.completions.create({ model: 'm', messages: user('Tell me a story'), max_tokens: 12, temperature: 0,
        logprobs: true, top_logprobs: 3 });
    const lp = r.choices[0].logprobs?.content;
    if (!ok(Array.isArray(lp) && lp.length === 12, 'one logprobs entry per token', r.choices[0].logprobs)) return;
    let shapes = true, sorted = true, chosen = true;
    for (const e of lp) {
        shapes &&= typeof e.token === 'string' && e.logprob <= 0 && Array.isArray(e.bytes) && e.top_logprobs.length === 3 &&
                   e.top_logprobs.every((t) => typeof t.token === 'string' && t.logprob <= 0 && Array.isArray(t.bytes));
        for (let i = 1; i < e.top_logprobs.length; i++) sorted &&= e.top_logprobs[i - 1].logprob >= e.top_logprobs[i].logprob;
        chosen &&= e.top_logprobs[0].token === e.token && Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6;
    }
    ok(shapes, 'entry shapes: token, logprob <= 0, bytes, 3 top_logprobs', lp[0]);
    ok(sorted, 'top_logprobs sorted by logprob');
    ok(chosen, 'greedy: the chosen token is the top one, same logprob');
    const bytes = Buffer.from(lp.flatMap((e) => e.bytes));
    eq(bytes.toString('utf8'), r.choices[0].message.content, 'the tokens\' bytes make the content');
    // sampled: the chosen token's logprob is its entry in the top list
    const t = await client.chat.completions.create({ model: 'm', messages: user('Pick a word'), max_tokens: 12, temperature: 1,
        seed: 3, logprobs: true, top_logprobs: 5 });
    let match = true, seen = 0;
    for (const e of t.choices[0].logprobs.content) {
        const m = e.top_logprobs.find((x) => x.token === e.token && JSON.stringify(x.bytes) === JSON.stringify(e.bytes));
        if (m) { seen++; match &&= Math.abs(m.logprob - e.logprob) < 1e-6; }
    }
    ok(match, 'sampled: the chosen token\'s logprob matches its top_logprobs entry', seen);
    const c = await client.completions.create({ model: 'm', prompt: 'The capital of France is', max_tokens: 6, temperature: 0, logprobs: 2 });
    const cl = c.choices[0].logprobs;
    ok(cl && cl.tokens.length === 6 && cl.token_logprobs.length === 6 && cl.top_logprobs.length === 6 && cl.text_offset.length === 6 &&
       cl.top_logprobs.every((o) => Object.keys(o).length >= 1 && Object.keys(o).length <= 2), 'completions logprobs shape', cl);
    eq(cl.tokens.join(''), c.choices[0].text, 'completions logprobs tokens make the text');
    // with echo, text_offset counts from the start of the returned text, prompt included
    const prompt = 'The capital of France is';
    const ce = await client.completions.create({ model: 'm', prompt, max_tokens: 3, temperature: 0, logprobs: 1, echo: true });
    const el = ce.choices[0].logprobs;
    ok(ce.choices[0].text.startsWith(prompt) && el.text_offset[0] === prompt.length &&
       el.tokens.every((t, i) => ce.choices[0].text.startsWith(t, el.text_offset[i])), 'echo: text_offset past the prompt', el);
});

await test('max_tokens must be at least 1', async () => {
    for (const field of ['max_tokens', 'max_completion_tokens']) {
        let status = 0, param = null;
        try {
            await client.chat.completions.create({ model: 'm', messages: user('Hi'), [field]: 0 });
        } catch (e) { status = e.status; param = e.param ?? e.error?.param; }
        eq(status, 400, `${field} 0 is a 400`);
        eq(param, field, `the error names ${field}`);
    }
});

await test('tool call forced by continue_final_message + logit_bias', async () => {
    const r = await client.chat.completions.create({ model: 'm', ...FORCED_CALL });
    const c = r.choices[0];
    eq(c.finish_reason, 'tool_calls', 'finish_reason tool_calls');
    const calls = c.message.tool_calls || [];
    eq(calls.length, 1, 'one tool call');
    if (calls.length) {
        ok(/^call_/.test(calls[0].id) && calls[0].type === 'function', 'call id and type', calls[0]);
        eq(calls[0].function.name, 'get_weather', 'the call\'s name');
        eq(JSON.parse(calls[0].function.arguments), { city: 'Paris' }, 'the call\'s arguments, a JSON string');
    }
    ok(!c.message.content, 'no content beside the call', c.message.content);
    const s = await client.chat.completions.create({ model: 'm', ...FORCED_CALL, stream: true });
    const frags = [];
    let fin = null;
    for await (const ch of s) for (const x of ch.choices) {
        if (x.delta?.tool_calls) frags.push(...x.delta.tool_calls);
        if (x.finish_reason) fin = x.finish_reason;
    }
    ok(frags.length >= 1 && frags[0].index === 0 && /^call_/.test(frags[0].id) && frags[0].type === 'function' &&
       frags[0].function?.name === 'get_weather', 'the first fragment: index, id, type and name', frags[0]);
    ok(frags.slice(1).every((f) => f.index === 0 && f.id === undefined && f.function?.name === undefined),
       'later fragments: the arguments only', frags);
    const args = frags.map((f) => f.function?.arguments ?? '').join('');
    eq(JSON.parse(args || 'null'), { city: 'Paris' }, 'the streamed arguments');
    eq(fin, 'tool_calls', 'streamed finish_reason tool_calls');
    const runner = client.chat.completions.stream({ model: 'm', ...FORCED_CALL });
    const final = await runner.finalChatCompletion();
    eq(final.choices[0].message.tool_calls?.[0]?.function?.name, 'get_weather', 'the SDK\'s stream helper assembles the call');
});

await test('a whole call in the continued message', async () => {
    const req = { model: 'm', tools: TOOLS, max_tokens: 2, temperature: 0, continue_final_message: true, messages: [...user('Weather?'),
        { role: 'assistant', content: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' }] };
    const r = await client.chat.completions.create(req);
    const calls = r.choices[0].message.tool_calls?.map((c) => [c.function.name, c.function.arguments]);
    eq([r.choices[0].finish_reason, calls], ['tool_calls', [['get_weather', '{"city":"Paris"}']]], 'the call is parsed');
    const f = await client.chat.completions.stream(req).finalChatCompletion();
    eq([f.choices[0].finish_reason, f.choices[0].message.tool_calls?.map((c) => [c.function.name, c.function.arguments])],
       ['tool_calls', calls], 'streamed: the same call');
});

await test('tool_choice', async () => {
    const base = { model: 'm', messages: user('Weather in Paris?'), tools: TOOLS, max_tokens: 8, temperature: 0 };
    for (const choice of [{ type: 'function', function: { name: 'get_weather' } }, 'required']) {
        const r = await client.chat.completions.create({ ...base, tool_choice: choice });
        const m = r.choices[0].message;
        const what = `tool_choice ${JSON.stringify(choice)}`;
        if (m.tool_calls?.length) {
            eq(m.tool_calls[0].function.name, 'get_weather', `${what}: a call of the named function`);
        } else {
            // the random continuation makes the call malformed: it comes back as content, not dropped
            ok(typeof m.content === 'string' && m.content.includes('<tool_call>') &&
               (choice === 'required' || m.content.includes('"name": "get_weather"')), `${what}: the forced call's text is content`, m.content);
            eq(r.choices[0].finish_reason, 'length', `${what}: finish_reason length`);
        }
        const st = await client.chat.completions.create({ ...base, tool_choice: choice, stream: true });
        let content = '', names = [];
        for await (const ch of st) {
            content += ch.choices[0]?.delta?.content ?? '';
            for (const tc of ch.choices[0]?.delta?.tool_calls ?? []) if (tc.function?.name) names.push(tc.function.name);
        }
        eq([content, names], [m.content ?? '', (m.tool_calls ?? []).map((c) => c.function.name)], `${what}: streamed = not streamed`);
    }
    const none = await client.chat.completions.create({ ...FORCED_CALL, model: 'm', tool_choice: 'none' });
    // the continued message's own text is not repeated: the reply is the continuation
    eq([none.choices[0].message.tool_calls, none.choices[0].message.content, none.choices[0].finish_reason], [undefined, '"}}', 'length'],
       'tool_choice none: no call parsed, the continuation is content');
    const nt = await client.chat.completions.create({ ...FORCED_CALL, model: 'm', tools: undefined });
    eq([nt.choices[0].message.tool_calls, nt.choices[0].message.content], [undefined, '"}}'], 'no tools: no call parsed');
    const sn = await client.chat.completions.create({ ...FORCED_CALL, model: 'm', tool_choice: 'none', stream: true });
    let st = '';
    for await (const ch of sn) st += ch.choices[0]?.delta?.content ?? '';
    eq(st, '"}}', 'streamed: the same content');
});

await test('continue_final_message: the reply is the continuation', async () => {
    const req = { model: 'm', messages: [{ role: 'user', content: 'Greet me' }, { role: 'assistant', content: 'Hello there, dear' }],
        continue_final_message: true, max_tokens: 6, temperature: 0 };
    const r = await client.chat.completions.create(req);
    const s = await client.chat.completions.create({ ...req, stream: true });
    let text = '';
    for await (const ch of s) text += ch.choices[0]?.delta?.content ?? '';
    eq(r.choices[0].message.content, text, 'not streamed = streamed');
    ok(!text.startsWith('Hello there'), 'the continued message is not repeated', text);
    eq(r.usage.completion_tokens, 6, 'six tokens continue it');
});

await test('reasoning split', async () => {
    const req = { model: 'm', messages: [{ role: 'user', content: 'Think first' }, { role: 'assistant', content: '<think>\n' }],
        continue_final_message: true, max_tokens: 10, temperature: 0, logit_bias: { 151668: -100, 151667: -100 } }; // no </think>, <think>
    const r = await client.chat.completions.create(req);
    const m = r.choices[0].message;
    ok(typeof m.reasoning_content === 'string' && m.reasoning_content.length > 0, 'all output is reasoning_content', m);
    ok(!m.content, 'content is empty', m.content);
    const s = await client.chat.completions.create({ ...req, stream: true });
    let reasoning = '', content = '';
    for await (const ch of s) { reasoning += ch.choices[0]?.delta?.reasoning_content ?? ''; content += ch.choices[0]?.delta?.content ?? ''; }
    eq([reasoning, content], [m.reasoning_content, ''], 'streamed as delta.reasoning_content');
    const off = await client.chat.completions.create({ model: 'm', messages: user('Answer'), max_tokens: 6, temperature: 0,
        chat_template_kwargs: { enable_thinking: false }, logit_bias: { 151667: -100 } });
    ok(!off.choices[0].message.reasoning_content && off.choices[0].message.content.length > 0, 'thinking off: the answer is content',
       off.choices[0].message);
});

await test('errors through the client', async () => {
    const expectError = async (what, p, status, check) => {
        try { await p; ok(false, `${what}: no error`); } catch (e) {
            if (!ok(e instanceof OpenAI.APIError, `${what}: an APIError`, String(e))) return;
            eq(e.status, status, `${what}: status`);
            if (check) check(e);
        }
    };
    await expectError('temperature a string', client.chat.completions.create({ model: 'm', messages: user('x'), temperature: 'hot' }), 400,
        (e) => eq([e.param, e.type], ['temperature', 'invalid_request_error'], 'the 400 names temperature'));
    await expectError('max_tokens negative', client.chat.completions.create({ model: 'm', messages: user('x'), max_tokens: -1 }), 400,
        (e) => eq(e.param, 'max_tokens', 'the 400 names max_tokens'));
    await expectError('no messages', client.chat.completions.create({ model: 'm' }), 400, (e) => eq(e.param, 'messages', 'names messages'));
    await expectError('bad role', client.chat.completions.create({ model: 'm', messages: [{ role: 'wizard', content: 'x' }] }), 400,
        (e) => eq(e.param, 'messages[0].role', 'names messages[0].role'));
    await expectError('n too big', client.chat.completions.create({ model: 'm', messages: user('x'), n: 1000 }), 400,
        (e) => eq(e.param, 'n', 'names n'));
    await expectError('no prompt', client.completions.create({ model: 'm' }), 400, (e) => eq(e.param, 'prompt', 'names prompt'));
    await expectError('a token id out of range', client.completions.create({ model: 'm', prompt: [1, 99999999] }), 400,
        (e) => eq(e.param, 'prompt', 'names prompt'));
    await expectError('tool_choice without tools', client.chat.completions.create({ model: 'm', messages: user('x'), tool_choice: 'required' }),
        400, (e) => eq(e.param, 'tool_choice', 'names tool_choice'));

    const strict = await startServer(['--api-key', 'sekret', '--strict-model', '-c', '256']);
    const good = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'sekret', maxRetries: 0, timeout: 30000 });
    const wrong = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'wrong', maxRetries: 0, timeout: 30000 });
    await expectError('wrong key', wrong.chat.completions.create({ model: 'tiny-test', messages: user('x'), max_tokens: 1 }), 401,
        (e) => ok(e instanceof OpenAI.AuthenticationError, 'an AuthenticationError'));
    await expectError('wrong key, models', wrong.models.list(), 401);
    const r = await good.chat.completions.create({ model: 'tiny-test', messages: user('x'), max_tokens: 1 });
    eq(r.choices.length, 1, 'the right key is accepted');
    await expectError('unknown model with --strict-model', good.chat.completions.create({ model: 'gpt-4o', messages: user('x'), max_tokens: 1 }),
        404, (e) => { ok(e instanceof OpenAI.NotFoundError, 'a NotFoundError'); eq(e.code, 'model_not_found', 'code model_not_found'); });
    await expectError('unknown model, completions', good.completions.create({ model: 'gpt-4o', prompt: 'x', max_tokens: 1 }), 404);
    await expectError('a prompt over the context', good.chat.completions.create({ model: 'tiny-test', messages: user('word '.repeat(400)) }),
        400, (e) => ok(/\d+ tokens/.test(e.message) && /256/.test(e.message), 'says the prompt\'s tokens and the context', e.message));
    await stopServer(strict, 'the --api-key server');
});

await stopServer(srv);
await finish();

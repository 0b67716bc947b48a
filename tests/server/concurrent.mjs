// concurrent.mjs — 16 streaming clients at once, each with its own prompt
// and logprobs (top 5): every text, token logprob and top_logprobs list is
// bit-identical to the same request run alone before (the server batches
// the 16 sequences in one step). Greedy, and seeded temperature 1; chat
// and completions.
import { eq, finish, ok, startServer, stopServer, streamPost, test, waitIdle, watchdog } from './lib.mjs';

watchdog(120);
const N = 16;
const srv = await startServer(['--parallel', String(N)]);
const topics = ['the sea', 'a red fox', 'quantum physics', 'bread', 'the moon', 'chess', 'rain in Paris', 'a lost key',
    'volcanoes', 'jazz', 'an old map', 'winter', 'bees', 'the desert', 'a robot', 'tea'];

// One streamed request, reduced to what must match: the text and every
// token's logprob entry (as JSON: numbers printed exactly), plus the finish.
async function run(i, mode) {
    const sampling = mode === 'greedy' ? { temperature: 0 } : { temperature: 1, seed: 1000 + i };
    if (i % 4 === 3) { // every fourth a completion (logprobs as numbers)
        const r = await streamPost(srv, '/v1/completions', { prompt: `A story about ${topics[i]}:`, max_tokens: 24 + i, logprobs: 5, ...sampling },
                                   { timeoutMs: 60000 });
        const chunks = r.events.filter((e) => !e.done).map((e) => e.data.choices[0]);
        return { status: r.status, errors: r.errors, done: r.events.at(-1)?.done === true,
            text: chunks.map((c) => c.text).join(''), finish: chunks.map((c) => c.finish_reason).filter(Boolean),
            lp: JSON.stringify(chunks.filter((c) => c.logprobs).map((c) => [c.logprobs.tokens, c.logprobs.token_logprobs, c.logprobs.top_logprobs])) };
    }
    const r = await streamPost(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: `Tell me about ${topics[i]}.` }],
        max_tokens: 24 + i, logprobs: true, top_logprobs: 5, ...sampling }, { timeoutMs: 60000 });
    const chunks = r.events.filter((e) => !e.done).map((e) => e.data.choices[0]).filter(Boolean);
    return { status: r.status, errors: r.errors, done: r.events.at(-1)?.done === true,
        text: chunks.map((c) => (c.delta?.content ?? '') + '|' + (c.delta?.reasoning_content ?? '')).join(''),
        finish: chunks.map((c) => c.finish_reason).filter(Boolean),
        lp: JSON.stringify(chunks.flatMap((c) => c.logprobs?.content ?? [])) };
}

for (const mode of ['greedy', 'seeded temperature 1']) {
    await test(`${N} concurrent streams = each alone (${mode})`, async () => {
        const alone = [];
        for (let i = 0; i < N; i++) alone.push(await run(i, mode));
        ok(alone.every((a) => a.status === 200 && a.errors.length === 0 && a.done && a.finish.length === 1),
           'the solo runs are whole streams', alone.map((a) => [a.status, a.errors, a.finish]));
        ok(alone.every((a) => JSON.parse(a.lp).length > 0), 'the solo runs have logprobs');
        ok(new Set(alone.map((a) => a.text)).size > N / 2, 'the prompts give different texts');
        const together = await Promise.all([...Array(N).keys()].map((i) => run(i, mode)));
        let same = 0;
        for (let i = 0; i < N; i++) {
            const a = alone[i], t = together[i];
            if (ok(t.status === 200 && t.errors.length === 0 && t.done, `stream ${i} concurrent: well-formed`, t.errors) &&
                ok(t.text === a.text, `stream ${i}: the same text as alone`, `${JSON.stringify(t.text)} vs ${JSON.stringify(a.text)}`) &&
                ok(t.lp === a.lp, `stream ${i}: the same logprobs and top_logprobs, bit for bit`) &&
                eq(t.finish, a.finish, `stream ${i}: the same finish_reason`)) same++;
        }
        eq(same, N, `all ${N} identical`);
    });
}

await test('the batch really ran together', async () => {
    // /metrics counts steps: 16 concurrent requests of ~30 tokens take far
    // fewer steps than 16 x 30 if they were batched
    const m0 = await (await fetch(`${srv.url}/metrics`)).text();
    const steps = (t) => Number((/inferno_engine_steps_total (\d+)/.exec(t) || [])[1]);
    await Promise.all([...Array(N).keys()].map((i) => run(i, 'greedy')));
    const m1 = await (await fetch(`${srv.url}/metrics`)).text();
    const used = steps(m1) - steps(m0);
    ok(used > 0 && used < N * 30 / 2, 'the 16 streams shared steps', used);
});

const idle = await waitIdle(srv, 1000);
eq([idle.inferno_requests_running, idle.inferno_kv_blocks_used], [0, 0], 'idle afterwards');
await stopServer(srv);
await finish();

// shutdown.mjs — graceful shutdown: SIGTERM while a long stream runs lets
// it complete (new connections are refused, a request on a kept-alive
// connection gets 503 with Retry-After) and the process exits 0; with a
// short --grace the stream is cut after the grace and the process still
// exits 0; a second signal ends the grace at once; SIGINT does the same.
import net from 'node:net';
import { SLOW, eq, finish, httpRequest, longTokens, ok, parseSSE, sleep, startServer, test, watchdog } from './lib.mjs';

watchdog(120);
const LONG = (max_tokens) => ({ prompt: 'Once upon a time', max_tokens, ignore_eos: true, temperature: 0, stream: true });

// A streaming request on a raw keep-alive socket: resolves {sock, first()}
// after the first bytes; done() resolves with the whole body when the
// stream ends (the terminating chunk) or the socket closes.
function stream(port, body) {
    return new Promise((resolve, reject) => {
        const sock = net.connect(port, '127.0.0.1');
        let raw = '', started = false, endResolve;
        const done = new Promise((r) => { endResolve = r; });
        const finishBody = () => {
            const at = raw.indexOf('\r\n\r\n');
            // de-chunk
            let rest = raw.slice(at + 4), out = '';
            for (;;) {
                const nl = rest.indexOf('\r\n');
                if (nl < 0) break;
                const n = parseInt(rest.slice(0, nl), 16);
                if (!(n > 0)) break;
                out += rest.slice(nl + 2, nl + 2 + n);
                rest = rest.slice(nl + 2 + n + 2);
            }
            return { head: raw.slice(0, at), body: Buffer.from(out, 'latin1').toString('utf8'), complete: /\r\n0\r\n\r\n/.test(raw) };
        };
        sock.on('data', (d) => {
            raw += d.toString('latin1');
            if (!started) { started = true; resolve({ sock, done }); }
            if (/\r\n0\r\n\r\n$/.test(raw)) endResolve(finishBody());
        });
        sock.on('close', () => endResolve(finishBody()));
        sock.on('error', (e) => { if (!started) reject(e); });
        sock.on('connect', () => sock.write(httpRequest('POST', '/v1/completions', body).replace('Connection: close\r\n', '')));
    });
}
const exitWithin = (s, ms) => Promise.race([s.exited, sleep(ms * SLOW).then(() => null)]);
const connects = (port) => new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.on('connect', () => { c.destroy(); resolve(true); });
    c.on('error', () => resolve(false));
});

await test('SIGTERM during a stream: it completes, then exit 0', async () => {
    const s = await startServer(['--grace', '30']);
    const st = await stream(s.port, LONG(longTokens(1200)));
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    await sleep(200);
    ok(!(await connects(s.port)), 'new connections are refused once stopping');
    const r = await st.done;
    const sse = parseSSE(r.body);
    const texts = sse.events.filter((e) => !e.done);
    ok(r.complete && sse.errors.length === 0 && sse.events.at(-1)?.done, 'the stream ends with [DONE]', sse.errors);
    eq(texts.filter((e) => e.data.choices[0].finish_reason).map((e) => e.data.choices[0].finish_reason), ['length'],
       'it ran to its max_tokens (finish_reason length)');
    const ex = await exitWithin(s, 20000);
    eq(ex && [ex.code, ex.signal], [0, null], 'exit 0 after the stream');
    ok(Date.now() - t0 < 20000 * SLOW, 'promptly', Date.now() - t0);
    ok(/shutting down/.test(s.stderr()), 'says it is shutting down');
});

await test('a kept-alive connection gets 503 while stopping', async () => {
    const s = await startServer(['--grace', '30']);
    const st = await stream(s.port, LONG(longTokens(1200)));
    // a second connection that made one request and stays open
    const sock = net.connect(s.port, '127.0.0.1');
    let raw = '';
    sock.on('data', (d) => { raw += d; });
    sock.on('error', () => {});
    await new Promise((r) => sock.on('connect', r));
    sock.write(httpRequest('GET', '/health').replace('Connection: close\r\n', ''));
    for (let i = 0; i < 200 && !/\r\n\r\n/.test(raw); i++) await sleep(10);
    ok(/^HTTP\/1\.1 200/.test(raw), 'the first request on it: 200', raw.slice(0, 40));
    raw = '';
    s.proc.kill('SIGTERM');
    await sleep(300);
    sock.write(httpRequest('POST', '/v1/completions', { prompt: 'x', max_tokens: 1 }).replace('Connection: close\r\n', ''));
    for (let i = 0; i < 300 && !/\r\n\r\n[\s\S]*\}/.test(raw); i++) await sleep(10);
    ok(/^HTTP\/1\.1 503/.test(raw) && /retry-after: *\d/i.test(raw) && /shutting_down/.test(raw), 'then 503 shutting_down with Retry-After',
       raw.slice(0, 300));
    sock.destroy();
    const r = await st.done;
    ok(r.complete && parseSSE(r.body).events.at(-1)?.done, 'the running stream still completes');
    const ex = await exitWithin(s, 20000);
    eq(ex && [ex.code, ex.signal], [0, null], 'exit 0');
});

await test('a stream longer than --grace is cut, exit 0', async () => {
    const s = await startServer(['--grace', '1']);
    const st = await stream(s.port, LONG(4000));
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    const r = await st.done;
    const ms = Date.now() - t0;
    const sse = parseSSE(r.body);
    ok(sse.errors.length === 0, 'what came is well-formed SSE', sse.errors);
    const n = sse.events.filter((e) => !e.done).length;
    ok(n < 4000, 'the stream was cut', n);
    ok(ms >= 800 && ms < 6000 * SLOW, 'after about the grace', ms);
    const ex = await exitWithin(s, 15000);
    eq(ex && [ex.code, ex.signal], [0, null], 'exit 0 after the grace');
});

await test('a second signal ends the grace at once; SIGINT', async () => {
    const s = await startServer(['--grace', '60']);
    const st = await stream(s.port, LONG(4000));
    s.proc.kill('SIGTERM');
    await sleep(300);
    const t0 = Date.now();
    s.proc.kill('SIGINT');
    const ex = await exitWithin(s, 15000);
    eq(ex && [ex.code, ex.signal], [0, null], 'exit 0 after a second signal');
    ok(Date.now() - t0 < 5000 * SLOW, 'without waiting out the 60 s grace', Date.now() - t0);
    await st.done;
    const i = await startServer([]);
    i.proc.kill('SIGINT');
    const e2 = await exitWithin(i, 15000);
    eq(e2 && [e2.code, e2.signal], [0, null], 'SIGINT on an idle server: exit 0');
});

await finish();

// lib.mjs — what the server test scripts share: a test counter that ends
// with "N passed, N failed", starting `inferno serve` on a free loopback
// port and stopping it (SIGTERM, exit code 0: under AddressSanitizer a leak
// report makes it nonzero), the official clients (installed by
// tests/cli/serve.sh into .deps/server-clients), raw HTTP over node:net,
// a strict SSE reader, and /metrics and RSS readers.
//
// Environment (set by tests/cli/serve.sh): INFERNO (the binary),
// INFERNO_TEST_MODEL (a synthetic GGUF), INFERNO_TEST_DEPS (the clients'
// folder), INFERNO_TEST_SAN=1 for a sanitizer build (slower: loads are
// scaled down and timeouts stretched).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const INFERNO = process.env.INFERNO || 'build/inferno';
export const MODEL = process.env.INFERNO_TEST_MODEL;
export const SAN = process.env.INFERNO_TEST_SAN === '1' || /build-(san|tsan)/.test(INFERNO);
export const SLOW = SAN ? 4 : 1; // timeout multiplier
// Tokens for a generation that must outlast some event (a signal, a
// disconnect, a queued request): a sanitizer build makes each token 4-6x
// slower, so a quarter of them lasts at least as long there.
export const longTokens = (n) => (SAN ? Math.ceil(n / 4) : n);
const DEPS = process.env.INFERNO_TEST_DEPS || '.deps/server-clients';

// ---- the official clients (CommonJS builds, loaded from DEPS)
export function clients() {
    const require = createRequire(path.resolve(DEPS, 'package.json'));
    const openai = require('openai');
    const anthropic = require('@anthropic-ai/sdk');
    return { OpenAI: openai.OpenAI || openai.default || openai, Anthropic: anthropic.Anthropic || anthropic.default || anthropic };
}

// ---- counting
let passed = 0, failed = 0;
const servers = new Set();
export function ok(cond, msg, detail) {
    if (cond) { passed++; return true; }
    failed++;
    console.log(`FAIL: ${msg}${detail !== undefined ? ': ' + (typeof detail === 'string' ? detail : JSON.stringify(detail)) : ''}`);
    return false;
}
export function eq(a, b, msg) {
    const sa = JSON.stringify(a), sb = JSON.stringify(b);
    return ok(sa === sb, msg, `got ${sa?.slice(0, 400)}, want ${sb?.slice(0, 400)}`);
}
// Runs one named test; an exception (or a rejected promise) is one failure.
export async function test(name, fn) {
    const t0 = Date.now();
    try {
        await fn();
    } catch (e) {
        failed++;
        console.log(`FAIL: ${name}: threw ${e && e.stack ? e.stack.split('\n').slice(0, 4).join(' | ') : e}`);
    }
    if (process.env.INFERNO_TEST_VERBOSE) console.log(`  ${name}: ${Date.now() - t0} ms`);
}
export async function finish() {
    for (const s of [...servers]) {
        if (s.proc.exitCode !== null || s.proc.signalCode !== null) continue; // stopped by the test itself
        ok(false, `server on port ${s.port} left running at the end`);
        await s.stop().catch(() => {});
    }
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
}
// A hard limit for the whole script: a hang is a failure, never a block.
export function watchdog(seconds) {
    const t = setTimeout(() => {
        console.log(`FAIL: the script ran past its limit of ${seconds} s`);
        for (const s of servers) { try { s.proc.kill('SIGKILL'); } catch { /* gone */ } }
        failed++;
        console.log(`${passed} passed, ${failed} failed`);
        process.exit(1);
    }, seconds * 1000 * SLOW);
    t.unref();
}
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the server
// Starts `inferno serve -m MODEL --port 0 ARGS...` and waits for /health 200.
// Returns {proc, port, url, stderr(), stop(), pid}.
export async function startServer(args = [], { waitReady = true, timeoutMs = 20000, env = {} } = {}) {
    const proc = spawn(INFERNO, ['serve', '-m', MODEL, '--host', '127.0.0.1', '--port', '0', '-t', '1', ...args],
                       { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let err = '';
    const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    const port = await new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no listening line in ${timeoutMs} ms: ${err}`)), timeoutMs * SLOW);
        proc.stderr.on('data', (d) => {
            err += d;
            const m = /listening on http:\/\/127\.0\.0\.1:(\d+), loading/.exec(err);
            if (m) { clearTimeout(t); resolve(Number(m[1])); }
        });
        proc.on('exit', (code) => { clearTimeout(t); reject(new Error(`server exited (${code}) before listening: ${err}`)); });
    });
    const key = args.includes('--api-key') ? args[args.indexOf('--api-key') + 1] : null;
    const s = {
        proc, port, pid: proc.pid, auth: key ? { Authorization: `Bearer ${key}` } : {}, url: `http://127.0.0.1:${port}`, exited,
        stderr: () => err,
        // SIGTERM, then the exit status: {code, signal}; SIGKILL after limitMs.
        async stop(limitMs = 30000) {
            servers.delete(s);
            if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
            const timer = setTimeout(() => proc.kill('SIGKILL'), limitMs * SLOW);
            const r = await exited;
            clearTimeout(timer);
            return r;
        },
    };
    servers.add(s);
    if (waitReady) {
        const until = Date.now() + timeoutMs * SLOW;
        for (;;) {
            const r = await fetch(`${s.url}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
            if (r && r.status === 200) { await r.arrayBuffer(); break; }
            if (r) await r.arrayBuffer();
            if (Date.now() > until) throw new Error(`not healthy in ${timeoutMs} ms: ${err}`);
            await sleep(20);
        }
    }
    return s;
}
// Stops the server and counts a clean exit (code 0: no leak report under ASan).
export async function stopServer(s, what = 'server') {
    const r = await s.stop();
    // a sanitizer's report from its first line (frames, not shadow bytes), else the last lines
    const lines = s.stderr().split('\n').filter((l) => !/^(GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) /.test(l));
    const at = lines.findIndex((l) => /ERROR: (Address|Leak)Sanitizer|runtime error:/.test(l));
    const tail = (at >= 0 ? lines.slice(at).filter((l) => !/^ +0x[0-9a-f]+: |^  [A-Z][a-z]+.*: +[0-9a-f ]+$/.test(l)).slice(0, 80)
                          : lines.slice(-30)).join('\n');
    ok(r.code === 0, `${what} exits 0 on SIGTERM`, `code ${r.code} signal ${r.signal}\n${tail}`);
    return r;
}

// ---- HTTP helpers
// fetch() with a time limit; returns {status, headers, text, json}.
export async function request(base, p, { method = 'POST', body, headers = {}, timeoutMs = 30000 } = {}) {
    const h = { ...headers };
    let b = body;
    if (b !== undefined && typeof b !== 'string') { b = JSON.stringify(b); h['content-type'] ??= 'application/json'; }
    const r = await fetch(base + p, { method, body: b, headers: h, signal: AbortSignal.timeout(timeoutMs * SLOW) });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, headers: r.headers, text, json };
}
export const post = (s, p, body, opt = {}) => request(s.url, p, { ...opt, body });

// Raw bytes over a socket: sends `data` (a string/Buffer or an array of
// pieces sent `gapMs` apart), reads until the server closes or timeoutMs.
// Returns {status, headers (lower-case), body, raw}.
export function rawHttp(port, data, { gapMs = 0, timeoutMs = 10000, halfClose = false } = {}) {
    return new Promise((resolve, reject) => {
        const sock = net.connect(port, '127.0.0.1');
        const chunks = [];
        const timer = setTimeout(() => { sock.destroy(); reject(new Error(`raw request timed out after ${timeoutMs} ms`)); },
                                 timeoutMs * SLOW);
        sock.on('data', (d) => chunks.push(d));
        sock.on('error', (e) => { clearTimeout(timer); reject(e); });
        sock.on('close', () => { clearTimeout(timer); resolve(parseRaw(Buffer.concat(chunks))); });
        sock.on('connect', async () => {
            const pieces = Array.isArray(data) ? data : [data];
            for (const p of pieces) {
                if (sock.destroyed) return;
                sock.write(p);
                if (gapMs) await sleep(gapMs);
            }
            if (halfClose) sock.end();
        });
    });
}
function parseRaw(buf) {
    const raw = buf.toString('latin1');
    const at = raw.indexOf('\r\n\r\n');
    if (at < 0) return { status: 0, headers: {}, body: '', raw };
    const lines = raw.slice(0, at).split('\r\n');
    const status = Number((/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]) || [])[1] || 0);
    const headers = {};
    for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    let body = Buffer.from(raw.slice(at + 4), 'latin1');
    if ((headers['transfer-encoding'] || '').toLowerCase() === 'chunked') {
        const parts = [];
        let i = 0;
        for (;;) {
            const nl = body.indexOf('\r\n', i);
            if (nl < 0) break;
            const n = parseInt(body.slice(i, nl).toString(), 16);
            if (!(n > 0)) break;
            parts.push(body.slice(nl + 2, nl + 2 + n));
            i = nl + 2 + n + 2;
        }
        body = Buffer.concat(parts);
    }
    return { status, headers, body: body.toString('utf8'), raw };
}
export function httpRequest(method, p, body, headers = {}) {
    const b = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
    let h = `${method} ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`;
    for (const [k, v] of Object.entries(headers)) h += `${k}: ${v}\r\n`;
    if (body !== undefined) h += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n`;
    return h + '\r\n' + b;
}

// ---- server-sent events
// Parses a whole SSE body strictly: every event is "event: X\n"? "data: Y\n"
// and a blank line; every data is JSON except "[DONE]". Returns
// {events: [{event, data}], errors: [...]}.
export function parseSSE(text) {
    const events = [], errors = [];
    if (!text.endsWith('\n\n')) errors.push('the stream does not end with a blank line');
    for (const block of text.split('\n\n')) {
        if (!block) continue;
        let event = null, data = null;
        for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data = (data === null ? '' : data + '\n') + line.slice(6);
            else if (line.startsWith(':')) continue;
            else errors.push(`a line that is not SSE: ${JSON.stringify(line.slice(0, 80))}`);
        }
        if (data === null) { errors.push('an event without data'); continue; }
        if (data === '[DONE]') { events.push({ event, data, done: true }); continue; }
        try { events.push({ event, data: JSON.parse(data) }); } catch { errors.push(`data that is not JSON: ${data.slice(0, 80)}`); }
    }
    return { events, errors };
}
// POSTs with stream: true and reads the whole SSE body (fetch; time-limited).
export async function streamPost(s, p, body, opt = {}) {
    const r = await post(s, p, { ...body, stream: true }, opt);
    return { status: r.status, headers: r.headers, text: r.text, ...parseSSE(r.text) };
}

// ---- server state
export async function metrics(s) {
    const r = await request(s.url, '/metrics', { method: 'GET', timeoutMs: 5000, headers: s.auth });
    const m = {};
    for (const line of r.text.split('\n')) {
        const x = /^(inferno_[a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
        if (x) m[x[1]] = Number(x[2]);
    }
    return m;
}
// Waits until requests_running and kv_blocks_used are 0 (at most ms); the last metrics.
export async function waitIdle(s, ms = 1000) {
    const until = Date.now() + ms * SLOW;
    let m;
    for (;;) {
        m = await metrics(s);
        if (m.inferno_requests_running === 0 && m.inferno_kv_blocks_used === 0 && m.inferno_requests_waiting === 0) return m;
        if (Date.now() > until) return m;
        await sleep(20);
    }
}
export function rssKiB(pid) {
    const t = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number((/VmRSS:\s+(\d+) kB/.exec(t) || [])[1]);
}

// A greedy text's stop string: the first k >= 1 where text[k..k+2) first
// occurs at k and neither it nor text[0..k) holds U+FFFD; null if none.
export function pickStop(text) {
    const chars = [...text];
    for (let k = 1; k + 2 <= chars.length; k++) {
        const stop = chars.slice(k, k + 2).join('');
        const before = chars.slice(0, k).join('');
        if (/\uFFFD/.test(stop + before) || stop.trim() !== stop || !stop.trim()) continue;
        if (text.indexOf(stop) !== before.length) continue;
        return { stop, before };
    }
    return null;
}

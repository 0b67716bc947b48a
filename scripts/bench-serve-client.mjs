// bench-serve-client.mjs — the client load of scripts/bench-serve.sh: C
// concurrent clients, each sending K streaming /v1/completions requests one
// after another (a distinct prompt per client and request, greedy,
// ignore_eos, max_tokens N), against one server. Prints one JSON line:
// aggregate generated tok/s over the wall time, and the percentiles of time
// to first token and of inter-token latency (ms).
//
//   node scripts/bench-serve-client.mjs --url http://127.0.0.1:PORT --clients C \
//        --requests K --tokens N --prompt-words W [--timeout S]
//
// Standard library only (Node's fetch); loopback only.
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = args.url;
const clients = Number(args.clients ?? 1);
const requests = Number(args.requests ?? 2);
const tokens = Number(args.tokens ?? 64);
const promptWords = Number(args['prompt-words'] ?? 48);
const timeoutS = Number(args.timeout ?? 600);
if (!url || !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(url)) {
  console.error('bench-serve-client: --url must be a loopback http:// address');
  process.exit(2);
}

const words = ['river', 'stone', 'lantern', 'orbit', 'meadow', 'copper', 'signal', 'harbor', 'ember', 'violet',
  'canyon', 'thread', 'glacier', 'pepper', 'falcon', 'marble', 'tundra', 'velvet', 'quartz', 'willow'];
function prompt(client, req) {
  const out = [];
  let x = (client * 7919 + req * 104729 + 1) >>> 0;
  for (let i = 0; i < promptWords; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out.push(words[x % words.length]);
  }
  return `Client ${client} request ${req}: ${out.join(' ')}`;
}

const ttft = [];
const itl = [];
let generated = 0;
let failed = 0;

async function one(client, req) {
  const t0 = performance.now();
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutS * 1000);
  try {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: prompt(client, req), max_tokens: tokens, temperature: 0, ignore_eos: true,
        stream: true, stream_options: { include_usage: true } }),
      signal: ctl.signal,
    });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const dec = new TextDecoder();
    let buf = '';
    let last = 0;
    let n = 0;
    let usage = null;
    for await (const chunk of res.body) {
      buf += dec.decode(chunk, { stream: true });
      let at;
      while ((at = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, at);
        buf = buf.slice(at + 2);
        const data = ev.split('\n').find((l) => l.startsWith('data: '));
        if (!data || data === 'data: [DONE]') continue;
        const j = JSON.parse(data.slice(6));
        if (j.usage?.completion_tokens) usage = j.usage.completion_tokens;
        const text = j.choices?.[0]?.text ?? '';
        if (!j.choices?.length || (text === '' && j.choices[0].finish_reason)) continue;
        const now = performance.now();
        if (n === 0) ttft.push(now - t0);
        else itl.push(now - last);
        last = now;
        n++;
      }
    }
    generated += usage ?? n; // the server's count when it gives one
  } catch (e) {
    failed++;
    console.error(`bench-serve-client: client ${client} request ${req}: ${e.message}`);
  } finally {
    clearTimeout(timer);
  }
}

function pct(v, p) {
  if (!v.length) return null;
  const s = [...v].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(2));
}

const start = performance.now();
await Promise.all(Array.from({ length: clients }, async (_, c) => {
  for (let r = 0; r < requests; r++) await one(c, r);
}));
const wall = (performance.now() - start) / 1000;
console.log(JSON.stringify({
  clients, requests_per_client: requests, max_tokens: tokens, generated, failed, wall_s: Number(wall.toFixed(3)),
  tok_s: Number((generated / wall).toFixed(2)),
  ttft_ms_p50: pct(ttft, 50), ttft_ms_p90: pct(ttft, 90), ttft_ms_p99: pct(ttft, 99),
  itl_ms_p50: pct(itl, 50), itl_ms_p90: pct(itl, 90), itl_ms_p99: pct(itl, 99),
}));

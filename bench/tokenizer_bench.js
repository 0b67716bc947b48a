// tokenizer_bench.js — the Hugging Face side of bench/tokenizer_bench.sh:
// encode throughput of npm `tokenizers` (HF's Rust core) on one thread over
// the same corpus and in the same two shapes as tokenizer_bench.c.
// usage: node bench/tokenizer_bench.js TOKENIZER.json CORPUS.jsonl [SECONDS]
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

async function main() {
  const [jsonPath, corpusPath, secArg] = process.argv.slice(2);
  const seconds = Number(secArg || 2);
  const texts = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
  const sizes = texts.map((t) => Buffer.byteLength(t, 'utf8'));
  const joined = texts.join('\n');
  const joinedBytes = Buffer.byteLength(joined, 'utf8');

  let t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(jsonPath);
  const ms = (a, b) => Number(b - a) / 1e6;
  console.log(`hf load_ms ${ms(t0, process.hrtime.bigint()).toFixed(1)} ms`);

  let bytes = 0, passes = 0, tokens = 0;
  t0 = process.hrtime.bigint();
  do {
    for (let i = 0; i < texts.length; i++) {
      tokens += (await tok.encode(texts[i])).getIds().length;
      bytes += sizes[i];
    }
    passes++;
  } while (ms(t0, process.hrtime.bigint()) < seconds * 1e3);
  let dt = ms(t0, process.hrtime.bigint()) / 1e3;
  console.log(`hf per_text_MB_s ${(bytes / dt / 1e6).toFixed(2)} MB/s (${texts.length} texts x ${passes} passes, ${(tokens / dt / 1e6).toFixed(1)} Mtok/s)`);

  bytes = passes = 0;
  t0 = process.hrtime.bigint();
  do {
    await tok.encode(joined);
    bytes += joinedBytes;
    passes++;
  } while (ms(t0, process.hrtime.bigint()) < seconds * 1e3);
  dt = ms(t0, process.hrtime.bigint()) / 1e3;
  console.log(`hf joined_MB_s ${(bytes / dt / 1e6).toFixed(2)} MB/s (${joinedBytes} bytes x ${passes} passes)`);
}
main().catch((e) => { console.error(e); process.exit(1); });

// tokenizer-goldens.js — computes the expected outputs of inferno's tokenizer
// test with Hugging Face tokenizers (npm `tokenizers`, its Rust core) on the
// real Qwen3 tokenizer.json. Run through scripts/gen-tokenizer-goldens.sh.
//
// For each line of tests/data/tokenizer/corpus.jsonl (one JSON string) it
// writes one line to each of, in tests/data/tokenizer/:
//   ids.jsonl                 encode(text) ids (added tokens matched)
//   decoded.jsonl             decode(those ids) — the round-trip text
//   ids-no-special.jsonl      ids with every added token treated as plain text
//   decoded-no-special.jsonl  decode(those ids) = HF's NFC of the whole text
// HF has no switch that makes *all* added tokens plain text (its
// encode_special_tokens covers special ones only, and the npm binding does not
// expose it), so the no-special variant is tokenizer.json with its
// added_tokens list emptied: the same model, normalizer and pre-tokenizer,
// nothing matched before BPE.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const root = path.join(__dirname, '..');
const dir = path.join(root, 'tests/data/tokenizer');
const jsonPath = path.join(root, 'data/qwen3-tokenizer/tokenizer.json');
const full = Tokenizer.fromFile(jsonPath);
const spec = JSON.parse(fs.readFileSync(jsonPath, 'utf8'));
spec.added_tokens = [];
const plain = Tokenizer.fromString(JSON.stringify(spec));

async function main() {
  const lines = fs.readFileSync(path.join(dir, 'corpus.jsonl'), 'utf8').split('\n').filter((l) => l.length);
  const out = { ids: [], decoded: [], idsPlain: [], decodedPlain: [] };
  for (const line of lines) {
    const text = JSON.parse(line);
    const a = (await full.encode(text)).getIds();
    const b = (await plain.encode(text)).getIds();
    out.ids.push(JSON.stringify(a));
    out.decoded.push(JSON.stringify(await full.decode(a, false)));
    out.idsPlain.push(JSON.stringify(b));
    out.decodedPlain.push(JSON.stringify(await plain.decode(b, false)));
  }
  const write = (name, rows) => fs.writeFileSync(path.join(dir, name), rows.join('\n') + '\n');
  write('ids.jsonl', out.ids);
  write('decoded.jsonl', out.decoded);
  write('ids-no-special.jsonl', out.idsPlain);
  write('decoded-no-special.jsonl', out.decodedPlain);
  const version = require('tokenizers/package.json').version;
  console.error(`${lines.length} texts encoded with tokenizers ${version}`);
}
main().catch((e) => { console.error(e); process.exit(1); });

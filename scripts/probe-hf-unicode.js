// probe-hf-unicode.js — asks Hugging Face tokenizers (npm `tokenizers`, its
// Rust core) how it classifies every code point, so that inferno's Unicode
// tables reproduce HF's behaviour exactly rather than some Unicode version's.
// Run by scripts/gen-unicode-tables.py; not meant to be run by hand.
//
// stdin:  JSON {"nfc": [string, ...]} — strings to NFC-normalize with HF's
//         normalizer (the generator sends probes around combining characters)
// stdout: JSON {"classes": "<one letter per code point 0..0x10FFFF>",
//               "nfc": [HF's NFC of each input string]}
// Classes, read off the Qwen2 split regex of the real Qwen3 tokenizer.json:
//   L = \p{L} ("a"+X is one piece), N = \p{N} (X+X is two pieces),
//   O = neither letter, number nor \s ("!"+X is one piece), W = \s,
//   S = surrogate (not encodable). \r and \n come out as O (the regex's
//   [\r\n]* tail joins them to "!"); the generator knows they are \s.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer, nfcNormalizer } = require('tokenizers');

const root = path.join(__dirname, '..');
const tok = Tokenizer.fromFile(path.join(root, 'data/qwen3-tokenizer/tokenizer.json'));
const pre = tok.getPreTokenizer();
const pieces = (s) => pre.preTokenizeString(s).length;

const classes = Buffer.alloc(0x110000);
for (let cp = 0; cp < 0x110000; cp++) {
  if (cp >= 0xd800 && cp < 0xe000) { classes[cp] = 0x53; continue; } // 'S'
  const x = String.fromCodePoint(cp);
  let c;
  if (pieces('a' + x) === 1) c = 'L';
  else if (pieces(x + x) === 2) c = 'N';
  else if (pieces('!' + x) === 1) c = 'O';
  else c = 'W';
  classes[cp] = c.charCodeAt(0);
}

const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const norm = nfcNormalizer();
const nfc = input.nfc.map((s) => norm.normalizeString(s));
process.stdout.write(JSON.stringify({ classes: classes.toString('latin1'), nfc }));

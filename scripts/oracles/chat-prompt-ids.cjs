// chat-prompt-ids.cjs — the expected token ids of inf_chat_template_render_ids
// (tests/test_chat_prompt.c), computed with the reference engines alone:
// @huggingface/jinja renders, npm `tokenizers` (HF's Rust core) tokenizes.
//
// For each request in tests/data/chat/ and tests/data/chat-prompt/ (chatml-*
// with the classic ChatML template, the rest with Qwen3's):
//   1. every occurrence of a special token's text (added_tokens with
//      "special": true) in every string and key of the request is replaced
//      by a sentinel (U+FDD0 + U+FDD1+k for token k: noncharacters, which
//      no request here contains, as is checked);
//   2. the request is rendered; now every special token's text in the
//      output is the template's own;
//   3. the output is split at those texts: each becomes its id, and each
//      stretch between them gets its sentinels turned back into the token
//      text and is encoded by a tokenizer whose added_tokens keep only the
//      non-special ones — HF's encode_special_tokens, which the npm binding
//      does not expose.
// Writes tests/data/chat-prompt/ids.jsonl ({"request": path, "ids": [...]}
// per rendering request) and NAME.expected.txt for the requests of
// tests/data/chat-prompt/ (the rendering of the unmodified request).
// Run through scripts/gen-chat-prompt-goldens.sh.
"use strict";
const fs = require("fs");
const path = require("path");
const { Template } = require("@huggingface/jinja");
const { Tokenizer } = require("tokenizers");

const root = process.argv[2] || ".";
const config = JSON.parse(fs.readFileSync(path.join(root, "data/qwen3-tokenizer/tokenizer_config.json"), "utf8"));
const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const templates = { qwen3: new Template(config.chat_template), chatml: new Template(CHATML_TEMPLATE) };

const jsonPath = path.join(root, "data/qwen3-tokenizer/tokenizer.json");
const spec = JSON.parse(fs.readFileSync(jsonPath, "utf8"));
const specials = spec.added_tokens.filter((t) => t.special);
spec.added_tokens = spec.added_tokens.filter((t) => !t.special);
const plain = Tokenizer.fromString(JSON.stringify(spec));
// that tokenizer numbers its added tokens afresh: map them back by text
const plainToId = new Map(spec.added_tokens.map((t) => [plain.tokenToId(t.content), t.id]));

const sentinelOf = (k) => "\uFDD0" + String.fromCharCode(0xfdd1 + k);

function hide(s) {
  if (/[\uFDD0-\uFDEF]/.test(s)) throw new Error("a request string holds a sentinel character");
  specials.forEach((t, k) => { s = s.split(t.content).join(sentinelOf(k)); });
  return s;
}
function reveal(s) {
  specials.forEach((t, k) => { s = s.split(sentinelOf(k)).join(t.content); });
  return s;
}
function hideAll(v) {
  if (typeof v === "string") return hide(v);
  if (Array.isArray(v)) return v.map(hideAll);
  if (v && typeof v === "object") {
    const o = {};
    for (const [k, x] of Object.entries(v)) o[hide(k)] = hideAll(x);
    return o;
  }
  return v;
}

function context(request) { // as render-chat.cjs builds it
  const ctx = {
    messages: request.messages,
    tools: request.tools ?? null,
    documents: null,
    add_generation_prompt: request.add_generation_prompt ?? false,
    continue_final_message: false,
    eos_token: config.eos_token,
    pad_token: config.pad_token,
    additional_special_tokens: config.additional_special_tokens,
  };
  if ("enable_thinking" in request) ctx.enable_thinking = request.enable_thinking;
  return ctx;
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const splitter = new RegExp("(" + specials.map((t) => escape(t.content)).join("|") + ")");
const idOf = new Map(specials.map((t) => [t.content, t.id]));

async function idsOf(rendered) {
  const ids = [];
  for (const piece of rendered.split(splitter)) {
    if (idOf.has(piece)) ids.push(idOf.get(piece));
    else if (piece.length)
      for (const id of (await plain.encode(reveal(piece))).getIds()) ids.push(plainToId.get(id) ?? id);
  }
  return ids;
}

async function main() {
  const lines = [];
  for (const dir of ["tests/data/chat", "tests/data/chat-prompt"]) {
    for (const file of fs.readdirSync(path.join(root, dir)).filter((f) => f.endsWith(".request.json")).sort()) {
      const name = file.slice(0, -".request.json".length);
      const request = JSON.parse(fs.readFileSync(path.join(root, dir, file), "utf8"));
      const template = name.startsWith("chatml-") ? templates.chatml : templates.qwen3;
      let text;
      try {
        text = template.render(context(request));
      } catch (e) {
        continue; // requests the template refuses have no ids
      }
      const hidden = template.render(context(hideAll(request)));
      if (reveal(hidden) !== text) throw new Error(`${file}: the sentinels changed the rendering`);
      if (dir.endsWith("chat-prompt")) fs.writeFileSync(path.join(root, dir, name + ".expected.txt"), text);
      lines.push(JSON.stringify({ request: `${dir}/${file}`, ids: await idsOf(hidden) }));
    }
  }
  fs.writeFileSync(path.join(root, "tests/data/chat-prompt/ids.jsonl"), lines.join("\n") + "\n");
  console.log(`${lines.length} requests`);
}
main().catch((e) => { console.error(e.message); process.exit(1); });

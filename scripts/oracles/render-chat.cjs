// render-chat.cjs — renders every tests/data/chat/*.request.json with
// @huggingface/jinja (the reference Jinja engine) and writes the golden
// files the chat-template test compares with:
//   NAME.expected.txt   the rendered prompt, byte for byte (UTF-8)
//   NAME.error.txt      the engine's error message, when the template raises
// Requests named chatml-* are rendered with the classic ChatML template (the
// fallback for unknown templates); all others with Qwen3's chat_template
// from data/qwen3-tokenizer/tokenizer_config.json.
// The context mirrors what transformers' apply_chat_template passes: the
// request fields plus the tokenizer's special tokens.
// Usage: NODE_PATH=.deps/oracles/node_modules node scripts/oracles/render-chat.cjs ROOT
"use strict";
const fs = require("fs");
const path = require("path");
const { Template } = require("@huggingface/jinja");

const root = process.argv[2] || ".";
const dir = path.join(root, "tests/data/chat");
const config = JSON.parse(fs.readFileSync(path.join(root, "data/qwen3-tokenizer/tokenizer_config.json"), "utf8"));
const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const templates = { qwen3: new Template(config.chat_template), chatml: new Template(CHATML_TEMPLATE) };

function context(request) {
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

let rendered = 0, raised = 0;
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".request.json")).sort()) {
  const name = file.slice(0, -".request.json".length);
  const request = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
  const template = name.startsWith("chatml-") ? templates.chatml : templates.qwen3;
  const expected = path.join(dir, name + ".expected.txt");
  const error = path.join(dir, name + ".error.txt");
  let text;
  try {
    text = template.render(context(request));
  } catch (e) {
    fs.rmSync(expected, { force: true });
    fs.writeFileSync(error, e.message + "\n");
    raised++;
    continue;
  }
  fs.rmSync(error, { force: true });
  fs.writeFileSync(expected, Buffer.from(text, "utf8"));
  rendered++;
}
const main = require.resolve("@huggingface/jinja"); // .../@huggingface/jinja/dist/index.cjs
const version = JSON.parse(fs.readFileSync(path.join(path.dirname(main), "..", "package.json"), "utf8")).version;
fs.writeFileSync(path.join(dir, "oracle.txt"), `@huggingface/jinja ${version}, node ${process.version}\n`);
console.log(`${rendered} rendered, ${raised} raised (@huggingface/jinja ${version})`);

// chat-differential.cjs — random chat requests rendered by @huggingface/jinja
// and by `inferno template`, compared byte for byte (a differential test
// that goes beyond the committed goldens). Requests are built from
// fragments that stress the Qwen3 template: think tags, whitespace of every
// kind around them, tool calls with odd JSON, tool responses, null content.
// Where the reference engine raises, inferno must fail with exit code 1.
// Usage: NODE_PATH=.deps/oracles/node_modules node scripts/oracles/chat-differential.cjs INFERNO [N] [SEED]
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawnSync } = require("child_process");
const { Template } = require("@huggingface/jinja");

const inferno = process.argv[2];
const count = Number(process.argv[3] || 1000);
let seed = Number(process.argv[4] || 1) >>> 0;
const config = JSON.parse(fs.readFileSync("data/qwen3-tokenizer/tokenizer_config.json", "utf8"));
const template = new Template(config.chat_template);

function rand() { // xorshift32, reproducible across runs
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const chance = (p) => rand() < p;

const FRAGMENTS = ["", "text", " ", "\n", "\n\n", "\t", "\u00a0", "\u3000", "\u2028", "\ufeff", "\u200b", "\r\n",
  "<think>", "</think>", "<tool_response>", "</tool_response>", "é", "😀", "日本", "<|im_end|>", "a b", "\\", "\""];
function text(maxParts) {
  let s = "";
  const n = Math.floor(rand() * maxParts);
  for (let i = 0; i < n; i++) s += pick(FRAGMENTS);
  return s;
}
function number() {
  return pick([0, 1, -1, 1.0, 0.5, 1e21, 1e-7, 123456789.125, -0, 3.14159, 2 ** 53 + 2, 1e300, 5e-324, rand() * 1000, Math.floor(rand() * 1e6)]);
}
function jsonValue(depth) {
  const kinds = depth > 2 ? ["s", "n", "b", "z"] : ["s", "n", "b", "z", "a", "o", "o"];
  switch (pick(kinds)) {
    case "s": return text(4);
    case "n": return number();
    case "b": return chance(0.5);
    case "z": return null;
    case "a": return Array.from({ length: Math.floor(rand() * 4) }, () => jsonValue(depth + 1));
    default: {
      const o = {};
      const n = Math.floor(rand() * 4);
      for (let i = 0; i < n; i++) o[pick(["a", "b", "name", "1", "10", "0", "01", "é", "k" + i, "\u0000"])] = jsonValue(depth + 1);
      return o;
    }
  }
}
function toolCall() {
  const args = chance(0.3) ? JSON.stringify(jsonValue(0)) : chance(0.1) ? undefined : jsonValue(0);
  const fn = { name: pick(["f", "get_weather", "名前", ""]) };
  if (args !== undefined) fn.arguments = args;
  return chance(0.8) ? { id: "c", type: "function", function: fn } : fn;
}
function message(i) {
  const role = pick(["user", "user", "assistant", "assistant", "tool", "tool", "system", "developer"]);
  const m = { role };
  const r = rand();
  if (r < 0.03) m.content = null;
  else if (r < 0.05) { /* missing */ }
  else if (role === "user" && chance(0.2)) m.content = "<tool_response>" + text(3) + "</tool_response>";
  else if (role === "assistant" && chance(0.5)) m.content = text(3) + "<think>" + text(4) + "</think>" + text(4);
  else m.content = text(6);
  if (role === "assistant") {
    if (chance(0.3)) m.reasoning_content = chance(0.2) ? null : text(4);
    if (chance(0.3)) m.tool_calls = Array.from({ length: Math.floor(rand() * 3) }, toolCall);
  }
  return m;
}
function request() {
  const req = { messages: Array.from({ length: 1 + Math.floor(rand() * 6) }, (_, i) => message(i)) };
  if (chance(0.3)) req.tools = Array.from({ length: Math.floor(rand() * 3) }, () => jsonValue(0));
  for (const key of ["add_generation_prompt", "enable_thinking"]) {
    const v = pick([undefined, null, true, false]);
    if (v !== undefined) req[key] = v;
  }
  return req;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "chat-diff-"));
let same = 0, bothFailed = 0, mismatched = 0;
for (let i = 0; i < count; i++) {
  const req = request();
  const ctx = { messages: req.messages, tools: req.tools ?? null, add_generation_prompt: req.add_generation_prompt ?? false };
  if ("enable_thinking" in req) ctx.enable_thinking = req.enable_thinking;
  let want = null;
  try { want = template.render(ctx); } catch (e) { want = null; }
  const json = JSON.stringify(req);
  const got = spawnSync(inferno, ["template", "-m", "data/qwen3-tokenizer/tokenizer_config.json"], { input: json });
  const ok = want === null ? got.status === 1 : got.status === 0 && Buffer.compare(got.stdout, Buffer.from(want, "utf8")) === 0;
  if (ok) {
    if (want === null) bothFailed++; else same++;
    continue;
  }
  mismatched++;
  const file = path.join(dir, `mismatch-${i}.json`);
  fs.writeFileSync(file, json);
  if (mismatched <= 5) {
    console.log(`MISMATCH ${file}: reference ${want === null ? "raises" : JSON.stringify(want)}`);
    console.log(`  inferno (exit ${got.status}, signal ${got.signal}${got.error ? ", " + got.error.message : ""}): ${JSON.stringify(String(got.stdout))} ${String(got.stderr).trim()}`);
  }
}
if (!mismatched) fs.rmSync(dir, { recursive: true, force: true });
console.log(`${same} identical, ${bothFailed} rejected by both, ${mismatched} mismatched (of ${count})` +
  (mismatched ? `; the requests are in ${dir}` : ""));
process.exit(mismatched ? 1 : 0);

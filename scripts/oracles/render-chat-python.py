"""render-chat-python.py — cross-check of the chat goldens against Python's
Jinja2, set up as Hugging Face transformers sets it up for
apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, tojson = json.dumps(ensure_ascii=False)).

The goldens come from @huggingface/jinja (render-chat.cjs); this script only
reports which requests Python's engine renders differently, into
tests/data/chat/python-differences.txt, so that those departures are known.
Usage: python3 scripts/oracles/render-chat-python.py ROOT
"""
import json
import os
import sys

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

root = sys.argv[1] if len(sys.argv) > 1 else "."
chat_dir = os.path.join(root, "tests/data/chat")
with open(os.path.join(root, "data/qwen3-tokenizer/tokenizer_config.json"), encoding="utf-8") as f:
    config = json.load(f)
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
templates = {"qwen3": env.from_string(config["chat_template"]), "chatml": env.from_string(CHATML)}

lines = []
for file in sorted(os.listdir(chat_dir)):
    if not file.endswith(".request.json"):
        continue
    name = file[: -len(".request.json")]
    with open(os.path.join(chat_dir, file), encoding="utf-8") as f:
        request = json.load(f)
    ctx = dict(messages=request["messages"], tools=request.get("tools"), documents=None,
               add_generation_prompt=request.get("add_generation_prompt") or False,
               eos_token=config["eos_token"], pad_token=config["pad_token"],
               additional_special_tokens=config["additional_special_tokens"])
    if "enable_thinking" in request:
        ctx["enable_thinking"] = request["enable_thinking"]
    template = templates["chatml" if name.startswith("chatml-") else "qwen3"]
    try:
        python_text, python_error = template.render(**ctx), None
    except Exception as e:  # the template raised
        python_text, python_error = None, "%s: %s" % (type(e).__name__, e)
    expected = os.path.join(chat_dir, name + ".expected.txt")
    if os.path.exists(expected):
        with open(expected, "rb") as f:
            reference = f.read().decode("utf-8")
        if python_error:
            lines.append("%s: Python raises (%s); @huggingface/jinja renders" % (name, python_error))
        elif python_text != reference:
            at = next((i for i, (a, b) in enumerate(zip(python_text, reference)) if a != b),
                      min(len(python_text), len(reference)))
            lines.append("%s: differs at character %d: Python %r, @huggingface/jinja %r" %
                         (name, at, python_text[max(0, at - 20):at + 20], reference[max(0, at - 20):at + 20]))
    elif not python_error:
        lines.append("%s: Python renders; @huggingface/jinja raises" % name)

with open(os.path.join(chat_dir, "python-differences.txt"), "w", encoding="utf-8") as f:
    f.write("# Requests that Python's Jinja2 (as transformers runs it) renders differently from\n"
            "# @huggingface/jinja, the reference of the goldens. Written by scripts/gen-chat-goldens.sh.\n")
    for line in lines:
        f.write(line + "\n")
print("%d of the chat goldens differ under Python's Jinja2 (see tests/data/chat/python-differences.txt)" % len(lines))

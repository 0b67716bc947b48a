#!/usr/bin/env python3
"""gen-fuzz-seeds.py — regenerates the committed GGUF seeds of the fuzzer
(tests/fuzz/corpus/fuzz_gguf/*.gguf): a few kilobytes each, small enough to
commit and to mutate quickly, and together they reach every stage the target
exercises (header, every metadata type, tensor infos of every dtype, the
tokenizer and chat template from metadata, the model loader, a forward pass).

The GGUF bytes are written here with Python's struct module, independently of
src/io/gguf.c (the layout is llama.cpp's GGUF v3 spec), so the seeds also
check the reader against a second writer. Deterministic: no randomness.

Usage: python3 scripts/gen-fuzz-seeds.py [OUT_DIR]   (default tests/fuzz/corpus/fuzz_gguf)
"""
import math
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f',
              BOOL: '<?', U64: '<Q', I64: '<q', F64: '<d'}
DT_F32, DT_F16, DT_Q8_0, DT_BF16 = 0, 1, 8, 30


def gstr(s):
    b = s.encode('utf-8') if isinstance(s, str) else s
    return struct.pack('<Q', len(b)) + b


def value(t, v):
    """Serializes v of GGUF type t; arrays are (elem_type, [items])."""
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack('<IQ', et, len(items)) + b''.join(value(et, x) for x in items)
    return struct.pack(SCALAR_FMT[t], v)


def f16(x):
    return struct.pack('<e', x)


def bf16(x):
    return struct.pack('<f', x)[2:]


def q8_0_row(xs):
    out = b''
    for i in range(0, len(xs), 32):
        block = xs[i:i + 32]
        amax = max(abs(x) for x in block)
        d = amax / 127 if amax else 0.0
        out += f16(d) + bytes((round(x / d) if d else 0) & 0xFF for x in block)
    return out


def tensor_bytes(dtype, ne, seed):
    """Deterministic small values, row by row (ne fastest-varying first)."""
    cols, rows = ne[0], math.prod(ne[1:])
    data = b''
    for r in range(rows):
        xs = [math.sin(seed * 7.1 + r * 1.3 + c * 0.37) * 0.5 for c in range(cols)]
        if dtype == DT_F32:
            data += b''.join(struct.pack('<f', x) for x in xs)
        elif dtype == DT_F16:
            data += b''.join(f16(x) for x in xs)
        elif dtype == DT_BF16:
            data += b''.join(bf16(x) for x in xs)
        else:
            data += q8_0_row(xs)
    return data


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, dtype, ne)]."""
    out = b'GGUF' + struct.pack('<IQQ', version, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += gstr(key) + struct.pack('<I', t) + value(t, v)
    blobs, offset = [], 0
    for i, (name, dtype, ne) in enumerate(tensors):
        blob = tensor_bytes(dtype, ne, i)
        out += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', n) for n in ne)
        out += struct.pack('<IQ', dtype, offset)
        blob += b'\0' * (-len(blob) % alignment)
        blobs.append(blob)
        offset += len(blob)
    out += b'\0' * (-len(out) % alignment)
    return out + b''.join(blobs)


def byte_level_alphabet():
    """GPT-2's bytes_to_unicode, as token texts for the 256 byte tokens."""
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    shifted, chars = 0, {}
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(0x100 + shifted)
            shifted += 1
    return chars


def tokenizer_kvs(merged_words=('in', 'th', 'the', 'Ġt', 'Ġth', 'Ġthe'), chat_template=None):
    """A byte-level vocabulary: the 256 bytes, a few merges, three control tokens."""
    alpha = byte_level_alphabet()
    tokens = [alpha[b] for b in range(256)]
    merges = []
    for w in merged_words:
        left = next(t for t in sorted(tokens, key=len, reverse=True) if w.startswith(t) and t != w)
        merges.append(left + ' ' + w[len(left):])
        tokens.append(w)
    specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
    types = [1] * len(tokens) + [3] * len(specials)
    tokens += specials
    kvs = [('tokenizer.ggml.model', STR, 'gpt2'), ('tokenizer.ggml.pre', STR, 'qwen2'),
           ('tokenizer.ggml.tokens', ARR, (STR, tokens)), ('tokenizer.ggml.token_type', ARR, (I32, types)),
           ('tokenizer.ggml.merges', ARR, (STR, merges)),
           ('tokenizer.ggml.eos_token_id', U32, tokens.index('<|im_end|>')),
           ('tokenizer.ggml.add_bos_token', BOOL, False)]
    if chat_template is not None:
        kvs.append(('tokenizer.chat_template', STR, chat_template))
    return kvs, len(tokens)


def qwen3_model(n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab, types, tied=True, extra_kvs=(),
                version=3, alignment=None):
    """types: dtype of each matrix by role ('embd', 'q', 'k', 'v', 'o', 'gate', 'up', 'down', 'out')."""
    kvs = [('general.architecture', STR, 'qwen3'), ('general.name', STR, 'fuzz seed'),
           ('qwen3.block_count', U32, n_layer), ('qwen3.context_length', U32, 64),
           ('qwen3.embedding_length', U32, n_embd), ('qwen3.feed_forward_length', U32, n_ff),
           ('qwen3.attention.head_count', U32, n_head), ('qwen3.attention.head_count_kv', U32, n_head_kv),
           ('qwen3.attention.key_length', U32, head_dim), ('qwen3.attention.value_length', U32, head_dim),
           ('qwen3.rope.freq_base', F32, 1e6), ('qwen3.attention.layer_norm_rms_epsilon', F32, 1e-6)]
    if alignment:
        kvs.append(('general.alignment', U32, alignment))
    kvs += list(extra_kvs)
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    tensors = [('token_embd.weight', types['embd'], [n_embd, n_vocab]), ('output_norm.weight', DT_F32, [n_embd])]
    if not tied:
        tensors.append(('output.weight', types['out'], [n_embd, n_vocab]))
    for l in range(n_layer):
        b = 'blk.%d.' % l
        tensors += [(b + 'attn_norm.weight', DT_F32, [n_embd]),
                    (b + 'attn_q.weight', types['q'], [n_embd, q_dim]),
                    (b + 'attn_k.weight', types['k'], [n_embd, kv_dim]),
                    (b + 'attn_v.weight', types['v'], [n_embd, kv_dim]),
                    (b + 'attn_q_norm.weight', DT_F32, [head_dim]),
                    (b + 'attn_k_norm.weight', DT_F32, [head_dim]),
                    (b + 'attn_output.weight', types['o'], [q_dim, n_embd]),
                    (b + 'ffn_norm.weight', DT_F32, [n_embd]),
                    (b + 'ffn_gate.weight', types['gate'], [n_embd, n_ff]),
                    (b + 'ffn_up.weight', types['up'], [n_embd, n_ff]),
                    (b + 'ffn_down.weight', types['down'], [n_ff, n_embd])]
    return gguf(kvs, tensors, version=version, alignment=alignment or 32)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'tests/fuzz/corpus/fuzz_gguf')
    os.makedirs(out_dir, exist_ok=True)
    every = dict.fromkeys(['embd', 'q', 'k', 'v', 'o', 'gate', 'up', 'down', 'out'], DT_F32)
    seeds = {}

    # no tokenizer: the smallest model that loads and runs (f32, 2 layers, GQA, untied)
    seeds['model-f32-untied.gguf'] = qwen3_model(2, 8, 8, 2, 1, 4, 16, every, tied=False)
    # every dtype in one file (q8_0 rows need 32 columns), GGUF v2, alignment 64
    mixed = dict(embd=DT_BF16, q=DT_Q8_0, k=DT_F16, v=DT_BF16, o=DT_F16, gate=DT_F16, up=DT_Q8_0, down=DT_BF16,
                 out=DT_F32)
    seeds['model-mixed-v2.gguf'] = qwen3_model(1, 32, 32, 2, 2, 8, 4, mixed, version=2, alignment=64)
    # with a byte-level tokenizer and a (non-Qwen3) chat template: exercises the tokenizer and the loader together
    tok_kvs, n_tok = tokenizer_kvs(chat_template='{% for m in messages %}{{ m.content }}{% endfor %}')
    seeds['model-f16-tokenizer.gguf'] = qwen3_model(1, 4, 4, 1, 1, 4, n_tok, dict(every, embd=DT_F16), extra_kvs=tok_kvs)
    # metadata only: every value type, nested and empty arrays, odd strings
    kvs = [('u8', U8, 255), ('i8', I8, -128), ('u16', U16, 65535), ('i16', I16, -32768), ('u32', U32, 2**32 - 1),
           ('i32', I32, -2**31), ('f32', F32, -0.0), ('bool', BOOL, True), ('str', STR, 'x\0y\xff'.encode('latin-1')),
           ('empty', STR, ''), ('u64', U64, 2**64 - 1), ('i64', I64, -2**63), ('f64', F64, float('inf')),
           ('arr.u8', ARR, (U8, [0, 1, 255])), ('arr.bool', ARR, (BOOL, [True, False])),
           ('arr.f64', ARR, (F64, [1.5, -2.0])), ('arr.str', ARR, (STR, ['a', '', 'ü'])),
           ('arr.empty', ARR, (I64, [])),
           ('arr.nested', ARR, (ARR, [(U16, [1, 2]), (STR, ['x']), (ARR, [(BOOL, [])])])),
           ('general.alignment', U32, 16)]
    seeds['metadata-all-types.gguf'] = gguf(kvs, [('t', DT_F32, [3, 1, 1, 2])], alignment=16)
    # tokenizer only, with the Qwen3 chat template's first line (not Qwen3's: renders as ChatML)
    tok_kvs, _ = tokenizer_kvs(chat_template='{%- if tools %}')
    seeds['tokenizer-only.gguf'] = gguf(tok_kvs, [])

    # regression: a merge of two empty parts once did arithmetic on a NULL buffer (UBSan)
    seeds['regress-empty-merge.gguf'] = gguf([('tokenizer.ggml.model', STR, 'gpt2'), ('tokenizer.ggml.pre', STR, 'qwen2'),
                                              ('tokenizer.ggml.tokens', ARR, (STR, ['<|x|>'])),
                                              ('tokenizer.ggml.token_type', ARR, (I32, [3])),
                                              ('tokenizer.ggml.merges', ARR, (STR, [' ']))], [])

    for name, data in seeds.items():
        with open(os.path.join(out_dir, name), 'wb') as f:
            f.write(data)
        print('%s: %d bytes' % (name, len(data)))


if __name__ == '__main__':
    main()

/*
 * tokenizer_gguf.c — builds the tokenizer from GGUF metadata, as llama.cpp's
 * converter writes it for Qwen2/Qwen3:
 *   tokenizer.ggml.model        "gpt2" (byte-level BPE; nothing else accepted)
 *   tokenizer.ggml.pre          "qwen2" (the Qwen2 split regex; nothing else accepted)
 *   tokenizer.ggml.tokens       [string] byte-level text of every id; added tokens as plain text
 *   tokenizer.ggml.token_type   [int32] 1 normal, 3 control (special), 4 user-defined
 *                               (added, not special), 5 unused (padding); optional
 *   tokenizer.ggml.merges       [string] "left right", in rank order
 *   tokenizer.ggml.{eos,bos}_token_id, tokenizer.ggml.add_bos_token   optional
 * Tokens of type 3 and 4 are matched in text before BPE, as Hugging Face
 * matches its added tokens. (llama.cpp's converter marks <|fim_*|>-style added
 * tokens as control even where tokenizer.json says special=false; that flag
 * changes nothing in encoding.)
 */
#include "core/common.h"
#include "tok/tokenizer.h"
#include "tok/vocab.h"

#include <string.h>

enum {
    GGUF_TOKEN_NORMAL = 1,
    GGUF_TOKEN_UNKNOWN = 2,
    GGUF_TOKEN_CONTROL = 3,
    GGUF_TOKEN_USER_DEFINED = 4,
    GGUF_TOKEN_UNUSED = 5,
    GGUF_TOKEN_BYTE = 6,
};

static inf_status optional_id(const gguf_file *f, const char *key, int32_t n_vocab, int32_t *out, inf_error *err) {
    int64_t v = -1;
    inf_status st = gguf_get_int(f, key, true, &v, err);
    if (st) return st;
    if (v >= n_vocab || v < -1)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: %s = %lld is outside the vocabulary of %ld", f->path, key,
                          (long long)v, (long)n_vocab);
    *out = (int32_t)v;
    return INF_OK;
}

inf_status inf_tokenizer_from_gguf(const gguf_file *f, inf_tokenizer **out, inf_error *err) {
    *out = NULL;
    const gguf_string *model = NULL, *pre = NULL;
    inf_status st = gguf_get_string(f, "tokenizer.ggml.model", false, &model, err);
    if (st) return st;
    if (strcmp(model->data, "gpt2"))
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model \"%s\" is not supported (only gpt2)",
                          f->path, model->data);
    st = gguf_get_string(f, "tokenizer.ggml.pre", true, &pre, err);
    if (st) return st;
    if (!pre || strcmp(pre->data, "qwen2"))
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: tokenizer.ggml.pre \"%s\" is not supported (only qwen2)",
                          f->path, pre ? pre->data : "(missing)");

    const void *tokens_v, *types_v = NULL, *merges_v;
    uint64_t n_tokens, n_types = 0, n_merges;
    st = gguf_get_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, false, &tokens_v, &n_tokens, err);
    if (!st) st = gguf_get_array(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, true, &types_v, &n_types, err);
    if (!st) st = gguf_get_array(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, false, &merges_v, &n_merges, err);
    if (st) return st;
    const gguf_string *tokens = tokens_v, *merges = merges_v;
    const int32_t *types = types_v;
    if (n_tokens == 0 || n_tokens > (1 << 28))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tokenizer.ggml.tokens has %llu entries", f->path,
                          (unsigned long long)n_tokens);
    if (types && n_types != n_tokens)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tokenizer.ggml.token_type has %llu entries for %llu tokens",
                          f->path, (unsigned long long)n_types, (unsigned long long)n_tokens);

    vocab_builder b;
    st = vocab_builder_init(&b, f->path, (int32_t)n_tokens, err);
    if (st) return st;
    inf_buf bytes = {0};
    for (uint64_t id = 0; id < n_tokens && !st; id++) {
        int32_t type = types ? types[id] : GGUF_TOKEN_NORMAL;
        const gguf_string *t = &tokens[id];
        bool bad;
        switch (type) {
        case GGUF_TOKEN_NORMAL:
            bytes.len = 0;
            if (!bytelevel_decode(t->data, t->len, &bytes, &bad))
                st = bad ? inf_errorf(err, INF_ERR_FORMAT, "%s: token %llu is not in the byte-level alphabet", f->path,
                                      (unsigned long long)id)
                         : inf_errorf(err, INF_ERR_NOMEM, "out of memory");
            else
                st = vocab_builder_set(&b, (int32_t)id, bytes.data, bytes.len, TOK_NORMAL, err);
            break;
        case GGUF_TOKEN_CONTROL:
        case GGUF_TOKEN_USER_DEFINED:
            st = vocab_builder_set(&b, (int32_t)id, t->data, t->len,
                                   type == GGUF_TOKEN_CONTROL ? TOK_SPECIAL : TOK_ADDED, err);
            break;
        case GGUF_TOKEN_UNUSED:
            break; /* stays an empty unused id */
        default:
            st = inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: token %llu has type %ld, unexpected for a gpt2 vocabulary",
                            f->path, (unsigned long long)id, (long)type);
        }
    }
    for (uint64_t m = 0; m < n_merges && !st; m++) {
        const gguf_string *s = &merges[m];
        const char *space = memchr(s->data, ' ', s->len);
        if (!space || memchr(space + 1, ' ', s->len - (size_t)(space + 1 - s->data))) {
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: tokenizer.ggml.merges[%llu] is not two space-separated tokens",
                            f->path, (unsigned long long)m);
            break;
        }
        size_t split = (size_t)(space - s->data);
        bool bad;
        bytes.len = 0;
        bool ok = bytelevel_decode(s->data, split, &bytes, &bad);
        size_t left_len = bytes.len;
        ok = ok && bytelevel_decode(space + 1, s->len - split - 1, &bytes, &bad);
        if (!ok) {
            st = bad ? inf_errorf(err, INF_ERR_FORMAT, "%s: tokenizer.ggml.merges[%llu] is not in the byte-level alphabet",
                                  f->path, (unsigned long long)m)
                     : inf_errorf(err, INF_ERR_NOMEM, "out of memory");
            break;
        }
        st = vocab_builder_add_merge(&b, bytes.data, left_len, bytes.data + left_len, bytes.len - left_len, err);
    }
    free(bytes.data);
    bool add_bos = false;
    if (!st) st = optional_id(f, "tokenizer.ggml.eos_token_id", b.n_vocab, &b.eos, err);
    if (!st) st = optional_id(f, "tokenizer.ggml.bos_token_id", b.n_vocab, &b.bos, err);
    if (!st) st = gguf_get_bool(f, "tokenizer.ggml.add_bos_token", true, &add_bos, err);
    if (st) {
        vocab_builder_free(&b);
        return st;
    }
    b.add_bos = add_bos;
    b.nfc = true; /* Qwen2's pipeline: NFC before the split (llama.cpp omits it; Hugging Face does not) */
    return vocab_build(&b, out, err);
}

/*
 * gguf_to_hf.c — writes a Hugging Face Qwen3 checkpoint directory from a
 * synthetic GGUF (inferno synth), for benchmarking the directory loader on
 * full-size shapes (e.g. the 4B geometry in BF16, ~8 GB) without downloads:
 *
 *   build/gguf_to_hf IN.gguf OUT_DIR [TOKENIZER_DIR]
 *
 * OUT_DIR gets config.json (the GGUF's qwen3.* keys as Qwen3's config.json
 * names them), model.safetensors (every tensor under its Hugging Face name,
 * bytes unchanged: F32, F16 or BF16 only, GGUF ne = {in, out} is PyTorch's
 * [out, in]), and tokenizer.json / tokenizer_config.json copied from
 * TOKENIZER_DIR (default data/qwen3-tokenizer). The tensor data is streamed
 * from the mapped GGUF, so memory stays small whatever the size. Not part
 * of the library: a bench helper (scripts/synth-hf.sh runs it).
 */
#include "inferno.h"
#include "io/gguf_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const layer_parts[][2] = {
    {"attn_norm", "input_layernorm"},         {"attn_q", "self_attn.q_proj"},   {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},           {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},      {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_norm", "post_attention_layernorm"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

static int hf_name(const char *gguf, char *out, size_t n) {
    if (!strcmp(gguf, "token_embd.weight")) return snprintf(out, n, "model.embed_tokens.weight") > 0;
    if (!strcmp(gguf, "output_norm.weight")) return snprintf(out, n, "model.norm.weight") > 0;
    if (!strcmp(gguf, "output.weight")) return snprintf(out, n, "lm_head.weight") > 0;
    int layer, used = 0;
    char part[64];
    if (sscanf(gguf, "blk.%d.%63[a-z_].weight%n", &layer, part, &used) != 2 || gguf[used]) return 0;
    for (size_t i = 0; i < sizeof layer_parts / sizeof *layer_parts; i++)
        if (!strcmp(part, layer_parts[i][0]))
            return snprintf(out, n, "model.layers.%d.%s.weight", layer, layer_parts[i][1]) > 0;
    return 0;
}

static long long key_int(const gguf_file *g, const char *key, long long def) {
    int64_t v = def;
    gguf_get_int(g, key, true, &v, NULL);
    return v;
}

static double key_float(const gguf_file *g, const char *key, double def) {
    double v = def;
    gguf_get_float(g, key, true, &v, NULL);
    return v;
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[1 << 16];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: gguf_to_hf IN.gguf OUT_DIR [TOKENIZER_DIR]\n");
        return 2;
    }
    const char *in = argv[1], *dir = argv[2], *tok_dir = argc > 3 ? argv[3] : "data/qwen3-tokenizer";
    gguf_file *g = NULL;
    inf_error err = {0};
    if (gguf_open_split(in, GGUF_OPEN_MMAP, NULL, NULL, &g, &err)) {
        fprintf(stderr, "gguf_to_hf: %s\n", err.msg);
        return 1;
    }
    mkdir(dir, 0755);
    char path[4096];
    /* the safetensors header: names, dtypes, PyTorch shapes, offsets */
    size_t cap = 1 << 20, len = 0;
    char *hdr = malloc(cap);
    uint64_t off = 0;
    int tied = gguf_find_tensor(g, "output.weight") == NULL;
    len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\": {\"format\": \"pt\"}");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        char name[256];
        const char *dt = t->type == INF_DTYPE_F32 ? "F32" : t->type == INF_DTYPE_F16 ? "F16"
                       : t->type == INF_DTYPE_BF16 ? "BF16" : NULL;
        if (!dt || !hf_name(t->name.data, name, sizeof name) || t->n_dims > 2) {
            fprintf(stderr, "gguf_to_hf: %s: tensor '%s' is not an F32/F16/BF16 Qwen3 tensor\n", in, t->name.data);
            return 1;
        }
        if (cap - len < 1024) hdr = realloc(hdr, cap *= 2);
        if (t->n_dims == 1)
            len += (size_t)snprintf(hdr + len, cap - len, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%llu], "
                                    "\"data_offsets\": [%llu, %llu]}", name, dt, (unsigned long long)t->ne[0],
                                    (unsigned long long)off, (unsigned long long)(off + t->nbytes));
        else
            len += (size_t)snprintf(hdr + len, cap - len, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%llu, %llu], "
                                    "\"data_offsets\": [%llu, %llu]}", name, dt, (unsigned long long)t->ne[1],
                                    (unsigned long long)t->ne[0], (unsigned long long)off,
                                    (unsigned long long)(off + t->nbytes));
        off += t->nbytes;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while (len % 8) hdr[len++] = ' ';
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    uint64_t hlen = len;
    int ok = f && fwrite(&hlen, 8, 1, f) == 1 && fwrite(hdr, 1, len, f) == len;
    for (uint64_t i = 0; ok && i < g->n_tensors; i++)
        ok = fwrite(g->tensors[i].data, 1, g->tensors[i].nbytes, f) == g->tensors[i].nbytes;
    if (f && fclose(f) != 0) ok = 0;
    free(hdr);
    if (!ok) {
        fprintf(stderr, "gguf_to_hf: %s: write failed\n", path);
        return 1;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "w");
    const gguf_tensor *emb = gguf_find_tensor(g, "token_embd.weight");
    ok = f && fprintf(f,
                      "{\n  \"architectures\": [\"Qwen3ForCausalLM\"],\n  \"attention_bias\": false,\n"
                      "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151645,\n  \"head_dim\": %lld,\n"
                      "  \"hidden_act\": \"silu\",\n  \"hidden_size\": %lld,\n  \"intermediate_size\": %lld,\n"
                      "  \"max_position_embeddings\": %lld,\n  \"model_type\": \"qwen3\",\n"
                      "  \"num_attention_heads\": %lld,\n  \"num_hidden_layers\": %lld,\n"
                      "  \"num_key_value_heads\": %lld,\n  \"rms_norm_eps\": %g,\n  \"rope_scaling\": null,\n"
                      "  \"rope_theta\": %.0f,\n  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"bfloat16\",\n"
                      "  \"use_sliding_window\": false,\n  \"vocab_size\": %llu\n}\n",
                      key_int(g, "qwen3.attention.key_length", 128), key_int(g, "qwen3.embedding_length", 0),
                      key_int(g, "qwen3.feed_forward_length", 0), key_int(g, "qwen3.context_length", 40960),
                      key_int(g, "qwen3.attention.head_count", 0), key_int(g, "qwen3.block_count", 0),
                      key_int(g, "qwen3.attention.head_count_kv", 0),
                      key_float(g, "qwen3.attention.layer_norm_rms_epsilon", 1e-6),
                      key_float(g, "qwen3.rope.freq_base", 1e6), tied ? "true" : "false",
                      emb ? (unsigned long long)emb->ne[1] : 0ULL) > 0;
    if (f && fclose(f) != 0) ok = 0;
    char from[4096];
    snprintf(from, sizeof from, "%s/tokenizer.json", tok_dir);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    ok = ok && copy_file(from, path);
    snprintf(from, sizeof from, "%s/tokenizer_config.json", tok_dir);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    ok = ok && copy_file(from, path);
    gguf_close(g);
    if (!ok) {
        fprintf(stderr, "gguf_to_hf: %s: writing config.json or copying the tokenizer from %s failed\n", dir, tok_dir);
        return 1;
    }
    fprintf(stderr, "gguf_to_hf: wrote %s (%.2f GB of tensors)\n", dir, (double)off / 1e9);
    return 0;
}

/*
 * test_hf_checkpoint.c — Hugging Face checkpoint directories (-m DIR) and
 * the safetensors reader.
 *
 *   same weights   a synthetic GGUF (inferno synth) is rewritten here as an
 *                  HF directory by a writer of this test's own (its own
 *                  name table, shapes reversed, dtypes converted): F32
 *                  untied in 3 shards with an index, F16, and BF16 tied in
 *                  one file with BF16 norms (compared with the GGUF that
 *                  llama.cpp's converter would write: norms as f32); the
 *                  logits of every prompt position and of decode steps are
 *                  bit-identical to the GGUF's, mapped and read into
 *                  memory, with a shard whose data is misaligned;
 *   llama.cpp      the golden tiny-a models as directories: bit-identical
 *                  to their GGUFs, and the F32 one within 1e-4 of
 *                  llama.cpp's final logits on the golden prompts;
 *   quantize       an F32 directory loaded with quantize q8_0 gives the
 *                  logits of the Q8_0 GGUF synth writes from the same
 *                  weights, bit for bit;
 *   tokenizer      tokenizer.json, tokenizer_config.json (chat template)
 *                  and generation_config.json (sampling defaults) of a
 *                  directory are used;
 *   convert        inf_convert_checkpoint of a directory made from a synth
 *                  GGUF writes that GGUF again, byte for byte (synth lays
 *                  files out as llama.cpp's converter does); converted to
 *                  q8_0 it keeps the sampling keys and computes what the
 *                  directory quantized on load does; BF16 norms become f32;
 *   corrupt files  a small valid .safetensors built byte by byte here, cut
 *                  at every length and patched into a table of malformed
 *                  variants: each is refused in every open mode with one
 *                  line that starts with the path and names the problem;
 *   bad dirs       directories that are well-formed but wrong (config keys,
 *                  shapes, dtypes, unknown or missing tensors, an index
 *                  that disagrees with its shards) each fail to load with
 *                  one line naming the file and the key or tensor.
 */
#include "harness.h"
#include "core/dtype.h"
#include "inferno.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/hf_checkpoint.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOKENIZER_JSON "data/qwen3-tokenizer/tokenizer.json"
#define TOKENIZER_CONFIG "data/qwen3-tokenizer/tokenizer_config.json"

static const char *tmpdir;

/* ------------------------------------------------------------------ small file helpers */

static bool write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static bool write_text(const char *path, const char *text) { return write_file(path, text, strlen(text)); }

static bool copy_file(const char *from, const char *to) {
    size_t n;
    char *text = test_read_file(from, &n);
    bool ok = text && write_file(to, text, n);
    free(text);
    return ok;
}

/* Replaces the first occurrence of old in the file; false when absent. */
static bool file_replace(const char *path, const char *old, const char *new_text) {
    size_t n;
    char *text = test_read_file(path, &n);
    if (!text) return false;
    char *at = strstr(text, old);
    bool ok = at != NULL;
    if (ok) {
        size_t pre = (size_t)(at - text), lo = strlen(old), ln = strlen(new_text);
        char *out = malloc(n - lo + ln + 1);
        memcpy(out, text, pre);
        memcpy(out + pre, new_text, ln);
        memcpy(out + pre + ln, at + lo, n - pre - lo);
        ok = write_file(path, out, n - lo + ln);
        free(out);
    }
    free(text);
    return ok;
}

/* file_replace inside a .safetensors header, rewriting the header length. */
static bool st_replace(const char *path, const char *old, const char *new_text) {
    size_t n;
    char *text = test_read_file(path, &n);
    if (!text || n < 8) {
        free(text);
        return false;
    }
    uint64_t hlen;
    memcpy(&hlen, text, 8);
    char *header = malloc(hlen + 1);
    memcpy(header, text + 8, hlen);
    header[hlen] = 0;
    char *at = strstr(header, old);
    bool ok = at != NULL;
    if (ok) {
        size_t pre = (size_t)(at - header), lo = strlen(old), ln = strlen(new_text);
        uint64_t nlen = hlen - lo + ln;
        char *out = malloc(n - lo + ln);
        memcpy(out, &nlen, 8);
        memcpy(out + 8, header, pre);
        memcpy(out + 8 + pre, new_text, ln);
        memcpy(out + 8 + pre + ln, at + lo, hlen - pre - lo);
        memcpy(out + 8 + nlen, text + 8 + hlen, n - 8 - hlen);
        ok = write_file(path, out, n - lo + ln);
        free(out);
    }
    free(header);
    free(text);
    return ok;
}

static char *path_in(const char *dir, const char *name) {
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    if (snprintf(p, sizeof buf[0], "%s/%s", dir, name) >= (int)sizeof buf[0]) p[0] = 0;
    return p;
}

/* ------------------------------------------------------------------ an HF writer of our own */

/* GGUF -> Hugging Face names, written out here independently of the loader. */
static const char *const layer_pairs[][2] = {
    {"attn_norm", "input_layernorm"},       {"attn_q", "self_attn.q_proj"},   {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},         {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_norm", "post_attention_layernorm"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

static bool hf_name(const char *gguf, char *out, size_t n) {
    if (!strcmp(gguf, "token_embd.weight")) return snprintf(out, n, "model.embed_tokens.weight") > 0;
    if (!strcmp(gguf, "output_norm.weight")) return snprintf(out, n, "model.norm.weight") > 0;
    if (!strcmp(gguf, "output.weight")) return snprintf(out, n, "lm_head.weight") > 0;
    int layer, used = 0;
    char part[64];
    if (sscanf(gguf, "blk.%d.%63[a-z_].weight%n", &layer, part, &used) != 2 || gguf[used]) return false;
    for (size_t i = 0; i < sizeof layer_pairs / sizeof layer_pairs[0]; i++)
        if (!strcmp(part, layer_pairs[i][0]))
            return snprintf(out, n, "model.layers.%d.%s.weight", layer, layer_pairs[i][1]) > 0;
    return false;
}

typedef struct st_tensor {
    char name[128];
    const char *dtype; /* "F32", "F16", "BF16", or any name for fault cases */
    int n_dims;
    uint64_t shape[2]; /* PyTorch order */
    void *data;        /* owned */
    size_t nbytes;
    int shard;
} st_tensor;

typedef struct ckpt {
    st_tensor t[128];
    int n;
    int n_shards;
    int misalign_shard; /* -1, or a shard whose header is padded to an odd length */
    bool tied;
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab, n_ctx;
    double eps, theta;
} ckpt;

static void ckpt_free(ckpt *c) {
    for (int i = 0; i < c->n; i++) free(c->t[i].data);
    c->n = 0;
}

static size_t dtype_size(const char *d) { return !strcmp(d, "F32") ? 4 : 2; }

static void encode(const float *x, size_t n, const char *dtype, void *out) {
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(dtype, "F32")) ((float *)out)[i] = x[i];
        else if (!strcmp(dtype, "F16")) ((inf_f16 *)out)[i] = inf_f32_to_f16(x[i]);
        else ((inf_bf16 *)out)[i] = inf_f32_to_bf16(x[i]);
    }
}

static int64_t kv_int(const gguf_file *g, const char *key) {
    int64_t v = 0;
    gguf_get_int(g, key, false, &v, NULL);
    return v;
}

/* The tensors of g, matrices as mat_dtype and vectors as vec_dtype, dealt
 * round-robin into n_shards. */
static bool ckpt_from_gguf(ckpt *c, const gguf_file *g, const char *mat_dtype, const char *vec_dtype, int n_shards) {
    memset(c, 0, sizeof *c);
    c->n_shards = n_shards;
    c->misalign_shard = -1;
    c->n_layer = (int)kv_int(g, "qwen3.block_count");
    c->n_embd = (int)kv_int(g, "qwen3.embedding_length");
    c->n_ff = (int)kv_int(g, "qwen3.feed_forward_length");
    c->n_head = (int)kv_int(g, "qwen3.attention.head_count");
    c->n_head_kv = (int)kv_int(g, "qwen3.attention.head_count_kv");
    c->head_dim = (int)kv_int(g, "qwen3.attention.key_length");
    c->n_ctx = (int)kv_int(g, "qwen3.context_length");
    gguf_get_float(g, "qwen3.attention.layer_norm_rms_epsilon", false, &c->eps, NULL);
    gguf_get_float(g, "qwen3.rope.freq_base", false, &c->theta, NULL);
    c->tied = gguf_find_tensor(g, "output.weight") == NULL;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *gt = &g->tensors[i];
        st_tensor *t = &c->t[c->n];
        if (!hf_name(gt->name.data, t->name, sizeof t->name)) return false;
        if (!strcmp(gt->name.data, "token_embd.weight")) c->n_vocab = (int)gt->ne[1];
        t->n_dims = (int)gt->n_dims;
        for (int d = 0; d < t->n_dims; d++) t->shape[d] = gt->ne[t->n_dims - 1 - d];
        t->dtype = t->n_dims == 2 ? mat_dtype : vec_dtype;
        size_t n = (size_t)(gt->ne[0] * gt->ne[1]);
        float *x = malloc(n * sizeof *x);
        t->nbytes = n * dtype_size(t->dtype);
        t->data = malloc(t->nbytes);
        inf_dequantize_row(gt->type, gt->data, x, (int64_t)n);
        encode(x, n, t->dtype, t->data);
        free(x);
        t->shard = c->n % n_shards;
        c->n++;
    }
    return true;
}

static void shard_name(const ckpt *c, int k, char *out, size_t n) {
    if (c->n_shards == 1) snprintf(out, n, "model.safetensors");
    else snprintf(out, n, "model-%05d-of-%05d.safetensors", k + 1, c->n_shards);
}

static void config_text(const ckpt *c, char *out, size_t n) {
    snprintf(out, n,
             "{\n  \"architectures\": [\"Qwen3ForCausalLM\"],\n  \"attention_bias\": false,\n"
             "  \"head_dim\": %d,\n  \"hidden_act\": \"silu\",\n  \"hidden_size\": %d,\n"
             "  \"intermediate_size\": %d,\n  \"max_position_embeddings\": %d,\n  \"model_type\": \"qwen3\",\n"
             "  \"num_attention_heads\": %d,\n  \"num_hidden_layers\": %d,\n  \"num_key_value_heads\": %d,\n"
             "  \"rms_norm_eps\": %.9g,\n  \"rope_scaling\": null,\n  \"rope_theta\": %.9g,\n"
             "  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"bfloat16\",\n  \"use_sliding_window\": false,\n"
             "  \"vocab_size\": %d\n}\n",
             c->head_dim, c->n_embd, c->n_ff, c->n_ctx, c->n_head, c->n_layer, c->n_head_kv, c->eps, c->theta,
             c->tied ? "true" : "false", c->n_vocab);
}

/* Writes config.json, the shards, and the index when sharded. */
static bool ckpt_write(const ckpt *c, const char *dir) {
    mkdir(dir, 0755);
    char text[4096], name[64];
    config_text(c, text, sizeof text);
    if (!write_text(path_in(dir, "config.json"), text)) return false;
    char *index = malloc(1 << 16);
    size_t ilen = 0;
    uint64_t total = 0;
    ilen += (size_t)snprintf(index + ilen, (1 << 16) - ilen, "{\"metadata\": {\"total_size\": TOTAL}, \"weight_map\": {");
    bool first_in_index = true;
    for (int k = 0; k < c->n_shards; k++) {
        char *hdr = malloc(1 << 16);
        size_t hlen = (size_t)snprintf(hdr, 1 << 16, "{\"__metadata__\":{\"format\":\"pt\"}");
        uint64_t off = 0;
        shard_name(c, k, name, sizeof name);
        for (int i = 0; i < c->n; i++) {
            const st_tensor *t = &c->t[i];
            if (t->shard != k) continue;
            hlen += (size_t)snprintf(hdr + hlen, (1 << 16) - hlen, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, t->dtype);
            for (int d = 0; d < t->n_dims; d++)
                hlen += (size_t)snprintf(hdr + hlen, (1 << 16) - hlen, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
            hlen += (size_t)snprintf(hdr + hlen, (1 << 16) - hlen, "],\"data_offsets\":[%llu,%llu]}",
                                     (unsigned long long)off, (unsigned long long)(off + t->nbytes));
            off += t->nbytes;
            ilen += (size_t)snprintf(index + ilen, (1 << 16) - ilen, "%s\n  \"%s\": \"%s\"", first_in_index ? "" : ",",
                                     t->name, name);
            first_in_index = false;
        }
        hdr[hlen++] = '}';
        /* padded with spaces as the safetensors writer pads, to 8 (or to an odd length) */
        size_t want = k == c->misalign_shard ? (hlen | 1) + (hlen % 2 == 1 ? 2 : 0) : (hlen + 7) & ~(size_t)7;
        while (hlen < want) hdr[hlen++] = ' ';
        FILE *f = fopen(path_in(dir, name), "wb");
        if (!f) return false;
        uint64_t n8 = hlen;
        fwrite(&n8, 8, 1, f);
        fwrite(hdr, 1, hlen, f);
        for (int i = 0; i < c->n; i++)
            if (c->t[i].shard == k) fwrite(c->t[i].data, 1, c->t[i].nbytes, f);
        fclose(f);
        free(hdr);
        total += off;
    }
    snprintf(index + ilen, (1 << 16) - ilen, "\n}}\n");
    bool ok = true;
    if (c->n_shards > 1) {
        ok = write_text(path_in(dir, "model.safetensors.index.json"), index);
        char num[32];
        snprintf(num, sizeof num, "%llu", (unsigned long long)total);
        ok = ok && file_replace(path_in(dir, "model.safetensors.index.json"), "TOTAL", num);
    }
    free(index);
    return ok;
}

/* ------------------------------------------------------------------ logits */

static const int32_t prompt[] = {1, 17, 300, 42, 7, 255, 99, 3, 128, 64, 11, 400};
enum { N_PROMPT = sizeof prompt / sizeof prompt[0], N_DECODE = 3 };

/* The logits of every prompt position and of N_DECODE greedy decode steps;
 * malloc'd [N_PROMPT + N_DECODE][n_vocab], NULL when loading failed. */
static float *run_logits(const char *path, bool mmap, bool quantize, int *n_vocab, char *why, size_t why_len) {
    inf_load_options o;
    inf_load_options_default(&o);
    o.use_mmap = mmap;
    o.n_threads = 2;
    o.n_ctx = 64;
    o.quantize = quantize;
    o.quantize_type = INF_DTYPE_Q8_0;
    inf_model *m = NULL;
    inf_session *s = NULL;
    inf_error err = {0};
    float *out = NULL;
    if (inf_model_load(path, &o, &m, &err) || inf_session_new(m, 0, &s, &err)) {
        snprintf(why, why_len, "%s", err.msg);
        goto done;
    }
    inf_model_info info;
    inf_model_get_info(m, &info);
    int V = *n_vocab = info.n_vocab;
    out = malloc((size_t)(N_PROMPT + N_DECODE) * (size_t)V * sizeof *out);
    if (inf_session_eval(s, prompt, N_PROMPT, INF_LOGITS_ALL, out, &err)) {
        snprintf(why, why_len, "%s", err.msg);
        free(out);
        out = NULL;
        goto done;
    }
    for (int d = 0; d < N_DECODE; d++) {
        const float *last = out + (size_t)(N_PROMPT + d - 1) * (size_t)V;
        int32_t best = 0;
        for (int i = 1; i < V; i++)
            if (last[i] > last[best]) best = i;
        if (inf_session_eval(s, &best, 1, INF_LOGITS_LAST, out + (size_t)(N_PROMPT + d) * (size_t)V, &err)) {
            snprintf(why, why_len, "%s", err.msg);
            free(out);
            out = NULL;
            goto done;
        }
    }
done:
    inf_session_free(s);
    inf_model_free(m);
    return out;
}

/* Logits of b bit-identical to those of a (same options). */
static void expect_same_logits(const char *what, const char *a, bool a_quantize, const char *b, bool b_quantize,
                               bool mmap) {
    char why_a[512] = "", why_b[512] = "";
    int va = 0, vb = 0;
    float *la = run_logits(a, mmap, a_quantize, &va, why_a, sizeof why_a);
    float *lb = run_logits(b, mmap, b_quantize, &vb, why_b, sizeof why_b);
    if (TEST_CHECK(la != NULL, "%s: %s: %s", what, a, why_a) && TEST_CHECK(lb != NULL, "%s: %s: %s", what, b, why_b) &&
        TEST_CHECK(va == vb, "%s: vocab %d vs %d", what, va, vb)) {
        size_t n = (size_t)(N_PROMPT + N_DECODE) * (size_t)va, differ = 0, first = 0;
        double max_diff = 0;
        for (size_t i = 0; i < n; i++)
            if (memcmp(&la[i], &lb[i], sizeof(float)) != 0) {
                if (!differ++) first = i;
                max_diff = fmax(max_diff, fabs((double)la[i] - (double)lb[i]));
            }
        TEST_CHECK(differ == 0, "%s: %zu of %zu logits differ (first at row %zu, max |diff| %g)", what, differ, n,
                   first / (size_t)va, max_diff);
        /* and they are not trivially equal */
        double spread = 0;
        for (int i = 0; i < va; i++) spread = fmax(spread, fabs((double)la[i] - (double)la[0]));
        TEST_CHECK(spread > 1e-3, "%s: logits vary (%g)", what, spread);
    }
    free(la);
    free(lb);
}

static void tiny_options(inf_synth_options *o, inf_dtype type, bool tied) {
    inf_synth_options_default(o);
    o->n_layer = 2;
    o->n_embd = 64;
    o->n_ff = 128;
    o->n_head = 4;
    o->n_head_kv = 2;
    o->head_dim = 32; /* q_dim 128 != n_embd: o_proj's orientation matters */
    o->n_ctx_train = 1024;
    o->weight_type = type;
    o->tied_output = tied;
    o->tokenizer_json = TOKENIZER_JSON;
    o->tokenizer_config_json = NULL;
    o->n_vocab = 512;
    o->seed = 11;
}

static bool synth(const inf_synth_options *o, const char *path) {
    inf_error err = {0};
    return TEST_CHECK(inf_synth_write(o, path, &err) == INF_OK, "synth %s: %s", path, err.msg);
}

/* The F32 untied checkpoint of the bad-directory cases, and its GGUF. */
static bool make_f32_dir(const char *gguf_path, const char *dir, int n_shards, int misalign_shard, ckpt *keep) {
    gguf_file *g = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(gguf_open(gguf_path, GGUF_OPEN_READ, &g, &err) == INF_OK, "open %s: %s", gguf_path, err.msg))
        return false;
    ckpt c;
    bool ok = TEST_CHECK(ckpt_from_gguf(&c, g, "F32", "F32", n_shards), "names of %s", gguf_path);
    c.misalign_shard = misalign_shard;
    ok = ok && TEST_CHECK(ckpt_write(&c, dir), "write %s", dir);
    if (keep) *keep = c;
    else ckpt_free(&c);
    gguf_close(g);
    return ok;
}

static void test_same_weights(void) {
    test_begin("same weights as the GGUF");
    inf_synth_options o;
    char g32[512], g16[512], gbf[512], gbf_conv[512], gq8[512];
    snprintf(g32, sizeof g32, "%s/f32.gguf", tmpdir);
    snprintf(g16, sizeof g16, "%s/f16.gguf", tmpdir);
    snprintf(gbf, sizeof gbf, "%s/bf16.gguf", tmpdir);
    snprintf(gbf_conv, sizeof gbf_conv, "%s/bf16-converted.gguf", tmpdir);
    snprintf(gq8, sizeof gq8, "%s/q8.gguf", tmpdir);
    tiny_options(&o, INF_DTYPE_F32, false);
    if (!synth(&o, g32)) return;
    tiny_options(&o, INF_DTYPE_F16, false);
    if (!synth(&o, g16)) return;
    tiny_options(&o, INF_DTYPE_BF16, true);
    if (!synth(&o, gbf)) return;
    tiny_options(&o, INF_DTYPE_Q8_0, false);
    if (!synth(&o, gq8)) return;

    /* F32, untied, three shards (the second with a misaligned data section) */
    char d32[512];
    snprintf(d32, sizeof d32, "%s/f32-dir", tmpdir);
    if (make_f32_dir(g32, d32, 3, 1, NULL)) {
        /* the second shard's data section starts at an odd offset; the loader
         * copies what it cannot use in place, so every tensor is aligned */
        size_t n = 0;
        char *bytes = test_read_file(path_in(d32, "model-00002-of-00003.safetensors"), &n);
        uint64_t hlen = 0;
        if (bytes && n >= 8) memcpy(&hlen, bytes, 8);
        free(bytes);
        TEST_CHECK(hlen % 2 == 1, "misaligned shard: header length %llu", (unsigned long long)hlen);
        gguf_file *hf = NULL;
        inf_error err = {0};
        if (TEST_CHECK(hf_checkpoint_open(d32, GGUF_OPEN_MMAP, NULL, NULL, &hf, &err) == INF_OK, "%s", err.msg)) {
            int misaligned = 0;
            for (uint64_t i = 0; i < hf->n_tensors; i++) misaligned += (uintptr_t)hf->tensors[i].data % 4 != 0;
            TEST_CHECK(misaligned == 0, "%d tensors misaligned", misaligned);
            TEST_CHECK(hf->n_tensors == 25 && !hf->map && !hf->buffer, "a gguf_file over the shards");
            gguf_close(hf);
        }
        expect_same_logits("f32 sharded, mmap", g32, false, d32, false, true);
        expect_same_logits("f32 sharded, read", g32, false, d32, false, false);
        /* quantized on load = the Q8_0 GGUF of the same weights */
        expect_same_logits("f32 dir quantized on load vs q8_0 gguf", gq8, false, d32, true, true);
        expect_same_logits("f32 gguf quantized on load vs q8_0 gguf", gq8, false, g32, true, true);
        expect_same_logits("f32 dir quantized on load, no mmap", gq8, false, d32, true, false);
        /* nothing to quantize: the Q8_0 matrices are copied into memory */
        expect_same_logits("q8_0 gguf with quantize, no mmap", gq8, false, gq8, true, false);
    }

    /* F16, one file */
    gguf_file *g = NULL;
    inf_error err = {0};
    ckpt c;
    char d16[512];
    snprintf(d16, sizeof d16, "%s/f16-dir", tmpdir);
    if (TEST_CHECK(gguf_open(g16, GGUF_OPEN_READ, &g, &err) == INF_OK, "%s", err.msg)) {
        if (TEST_CHECK(ckpt_from_gguf(&c, g, "F16", "F32", 1), "names") && TEST_CHECK(ckpt_write(&c, d16), "write"))
            expect_same_logits("f16 single file", g16, false, d16, false, true);
        ckpt_free(&c);
        gguf_close(g);
    }

    /* BF16 tied, norms BF16 as Hugging Face stores them; the GGUF the
     * converter would write has them as f32 (the same values) */
    char dbf[512];
    snprintf(dbf, sizeof dbf, "%s/bf16-dir", tmpdir);
    if (TEST_CHECK(gguf_open(gbf, GGUF_OPEN_READ, &g, &err) == INF_OK, "%s", err.msg)) {
        if (TEST_CHECK(ckpt_from_gguf(&c, g, "BF16", "BF16", 2), "names") && TEST_CHECK(ckpt_write(&c, dbf), "write")) {
            gguf_writer *w = gguf_writer_new();
            float *norms[64];
            int n_norms = 0;
            for (uint64_t i = 0; i < g->n_kv; i++) gguf_writer_set_value(w, g->kv[i].key.data, &g->kv[i].value);
            for (uint64_t i = 0; i < g->n_tensors; i++) {
                const gguf_tensor *t = &g->tensors[i];
                const void *data = t->data;
                if (t->n_dims == 1) { /* f32 -> bf16 -> f32 */
                    float *x = malloc(t->ne[0] * sizeof *x);
                    for (uint64_t j = 0; j < t->ne[0]; j++)
                        x[j] = inf_bf16_to_f32(inf_f32_to_bf16(((const float *)t->data)[j]));
                    norms[n_norms++] = x;
                    data = x;
                }
                gguf_writer_add_tensor(w, t->name.data, t->type, t->n_dims, t->ne, data);
            }
            TEST_CHECK(gguf_writer_write(w, gbf_conv, &err) == INF_OK, "write %s: %s", gbf_conv, err.msg);
            gguf_writer_free(w);
            for (int i = 0; i < n_norms; i++) free(norms[i]);
            expect_same_logits("bf16 tied, 2 shards, bf16 norms", gbf_conv, false, dbf, false, true);
            expect_same_logits("bf16 tied, read", gbf_conv, false, dbf, false, false);
        }
        ckpt_free(&c);
        gguf_close(g);
    }

    /* what info reports */
    inf_model *m = NULL;
    if (TEST_CHECK(inf_model_load(d32, NULL, &m, &err) == INF_OK, "load %s: %s", d32, err.msg)) {
        inf_model_info in;
        inf_model_get_info(m, &in);
        TEST_CHECK(!strcmp(in.name, "f32-dir"), "general.name is the directory's name: '%s'", in.name);
        TEST_CHECK(in.n_layer == 2 && in.n_embd == 64 && in.n_ff == 128 && in.n_head == 4 && in.n_head_kv == 2 &&
                       in.head_dim == 32 && in.n_vocab == 512 && in.n_ctx_train == 1024 && !in.tied_output,
                   "hyperparameters from config.json");
        TEST_CHECK(in.weight_type == INF_DTYPE_F32, "weight type f32");
        TEST_CHECK(inf_model_tensor_count(m) == 3 + 2 * 11, "25 tensors (%zu)", inf_model_tensor_count(m));
        inf_tensor_info ti;
        TEST_CHECK(inf_model_tensor_info(m, 1, &ti) && !strcmp(ti.name, "blk.0.attn_norm.weight"),
                   "GGUF names in the converter's order");
        bool found = false;
        for (size_t i = 0; inf_model_tensor_info(m, i, &ti); i++)
            if (!strcmp(ti.name, "blk.1.attn_q.weight"))
                found = ti.n_dims == 2 && ti.ne[0] == 64 && ti.ne[1] == 128 && ti.type == INF_DTYPE_F32;
        TEST_CHECK(found, "blk.1.attn_q.weight has GGUF dims {64, 128}");
        inf_model_free(m);
    }
    m = NULL;
    inf_load_options lo;
    inf_load_options_default(&lo);
    lo.quantize = true;
    lo.quantize_type = INF_DTYPE_Q8_0;
    if (TEST_CHECK(inf_model_load(d32, &lo, &m, &err) == INF_OK, "load quantized: %s", err.msg)) {
        inf_model_info in;
        inf_model_get_info(m, &in);
        gguf_file *q = NULL;
        if (TEST_CHECK(gguf_open(gq8, GGUF_OPEN_METADATA_ONLY, &q, &err) == INF_OK, "%s", err.msg)) {
            TEST_CHECK(in.weight_type == INF_DTYPE_Q8_0 && in.weight_bytes == q->data_bytes,
                       "quantized: type %s, %llu bytes (the q8_0 GGUF's %llu)", inf_dtype_name(in.weight_type),
                       (unsigned long long)in.weight_bytes, (unsigned long long)q->data_bytes);
            gguf_close(q);
        }
        inf_model_free(m);
    }
    lo.quantize_type = INF_DTYPE_BF16;
    m = NULL;
    TEST_CHECK(inf_model_load(d32, &lo, &m, &err) == INF_ERR_INVALID && !m && strstr(err.msg, "only q8_0"),
               "quantize to bf16 refused: %s", err.msg);
}

/* ------------------------------------------------------------------ llama.cpp's logits */

/* The golden tiny-a models (tests/data/golden) as directories: the F32 one
 * within test_golden's exact budget (1e-4) of llama.cpp's final logits on
 * each golden prompt, and every type bit-identical to its GGUF (whose
 * distance to llama.cpp test_golden holds within its budgets). */
static void test_golden_dirs(void) {
    test_begin("golden models as directories");
    static const struct {
        const char *model, *dtype;
    } models[] = {{"tiny-a-f32", "F32"}, {"tiny-a-f16", "F16"}, {"tiny-a-bf16", "BF16"}};
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        char gguf[256], dir[512];
        snprintf(gguf, sizeof gguf, "tests/data/golden/%s.gguf", models[k].model);
        snprintf(dir, sizeof dir, "%s/golden-%s", tmpdir, models[k].model);
        gguf_file *g = NULL;
        inf_error err = {0};
        if (!TEST_CHECK(gguf_open(gguf, GGUF_OPEN_READ, &g, &err) == INF_OK, "%s", err.msg)) continue;
        ckpt c;
        bool ok = TEST_CHECK(ckpt_from_gguf(&c, g, models[k].dtype, "F32", 2), "names") &&
                  TEST_CHECK(ckpt_write(&c, dir), "write %s", dir);
        ckpt_free(&c);
        gguf_close(g);
        if (!ok) continue;
        expect_same_logits(models[k].model, gguf, false, dir, false, true);
        if (k != 0) continue;
        inf_model *m = NULL;
        inf_session *s = NULL;
        inf_load_options o;
        inf_load_options_default(&o);
        o.n_threads = 2;
        if (!TEST_CHECK(inf_model_load(dir, &o, &m, &err) == INF_OK, "load %s: %s", dir, err.msg)) continue;
        inf_model_info in;
        inf_model_get_info(m, &in);
        float *logits = malloc((size_t)in.n_vocab * sizeof *logits);
        for (int p = 1; p <= 3; p++) {
            char path[256];
            snprintf(path, sizeof path, "tests/data/golden/%s.p%d.json", models[k].model, p);
            char *text = test_read_file(path, NULL);
            snprintf(path, sizeof path, "tests/data/golden/%s.p%d.final.f32", models[k].model, p);
            size_t n_ref = 0;
            float *ref = (float *)test_read_file(path, &n_ref);
            /* the prompt ids: "prompt_tokens": [a, b, ...] */
            const char *at = text ? strstr(text, "\"prompt_tokens\"") : NULL;
            int32_t ids[4096];
            int n = 0;
            if (at && (at = strchr(at, '['))) {
                char *end;
                for (at++; n < 4096; at = end + (*end == ',')) {
                    long v = strtol(at, &end, 10);
                    if (end == at) break;
                    ids[n++] = (int32_t)v;
                }
            }
            if (TEST_CHECK(n > 0 && ref && n_ref == (size_t)in.n_vocab * sizeof(float), "golden p%d (%d ids)", p, n) &&
                TEST_CHECK(inf_session_new(m, n + 1, &s, &err) == INF_OK, "%s", err.msg) &&
                TEST_CHECK(inf_session_eval(s, ids, n, INF_LOGITS_LAST, logits, &err) == INF_OK, "%s", err.msg)) {
                double worst = 0;
                for (int i = 0; i < in.n_vocab; i++) worst = fmax(worst, fabs((double)logits[i] - (double)ref[i]));
                TEST_CHECK(worst <= 1e-4, "%s p%d: max |ours - llama.cpp| = %g (budget 1e-4)", dir, p, worst);
                printf("  %s as a directory, p%d: max |logit - llama.cpp's| = %.3g\n", models[k].model, p, worst);
            }
            inf_session_free(s);
            s = NULL;
            free(text);
            free(ref);
        }
        free(logits);
        inf_model_free(m);
    }
}

/* ------------------------------------------------------------------ tokenizer, template, sampling */

static void test_tokenizer_files(void) {
    test_begin("tokenizer.json, tokenizer_config.json, generation_config.json");
    inf_synth_options o;
    inf_synth_options_default(&o);
    o.n_layer = 1;
    o.n_embd = 32;
    o.n_ff = 64;
    o.n_head = 2;
    o.n_head_kv = 1;
    o.head_dim = 16;
    o.weight_type = INF_DTYPE_BF16;
    o.tied_output = true;
    o.tokenizer_json = TOKENIZER_JSON;
    o.tokenizer_config_json = TOKENIZER_CONFIG;
    o.n_vocab = 0; /* the whole vocabulary: 151936 rows, as Qwen3's */
    char gpath[512], dir[512];
    snprintf(gpath, sizeof gpath, "%s/full.gguf", tmpdir);
    snprintf(dir, sizeof dir, "%s/Qwen3-tiny", tmpdir);
    if (!synth(&o, gpath)) return;
    gguf_file *g = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(gguf_open(gpath, GGUF_OPEN_READ, &g, &err) == INF_OK, "%s", err.msg)) return;
    ckpt c;
    bool ok = TEST_CHECK(ckpt_from_gguf(&c, g, "BF16", "F32", 1), "names") && TEST_CHECK(ckpt_write(&c, dir), "write");
    ckpt_free(&c);
    gguf_close(g);
    if (!ok) return;
    TEST_CHECK(copy_file(TOKENIZER_JSON, path_in(dir, "tokenizer.json")) &&
                   copy_file(TOKENIZER_CONFIG, path_in(dir, "tokenizer_config.json")),
               "tokenizer files");

    /* convert: the GGUF synth wrote, byte for byte (synth lays files out as
     * llama.cpp's converter does) */
    char conv[512];
    snprintf(conv, sizeof conv, "%s/converted.gguf", tmpdir);
    inf_convert_options co;
    inf_convert_options_default(&co);
    co.name = "Qwen3 synthetic";
    if (TEST_CHECK(inf_convert_checkpoint(dir, conv, &co, &err) == INF_OK, "convert: %s", err.msg)) {
        size_t na = 0, nb = 0;
        char *a = test_read_file(conv, &na), *b = test_read_file(gpath, &nb);
        TEST_CHECK(a && b && na == nb && !memcmp(a, b, na), "converted file equals synth's (%zu vs %zu bytes)", na, nb);
        free(a);
        free(b);
    }
    /* with Qwen3's YaRN rope_scaling: the file synth writes with those keys */
    char yarn_gguf[512];
    snprintf(yarn_gguf, sizeof yarn_gguf, "%s/full-yarn.gguf", tmpdir);
    inf_synth_options oy = o;
    oy.rope_scaling = INF_ROPE_SCALING_YARN, oy.rope_scale = 4.0f, oy.rope_orig_ctx = 32768;
    if (synth(&oy, yarn_gguf) &&
        TEST_CHECK(file_replace(path_in(dir, "config.json"), "\"rope_scaling\": null",
                                "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                                "\"original_max_position_embeddings\": 32768}"),
                   "config.json with rope_scaling") &&
        TEST_CHECK(inf_convert_checkpoint(dir, conv, &co, &err) == INF_OK, "convert yarn: %s", err.msg)) {
        size_t na = 0, nb = 0;
        char *a = test_read_file(conv, &na), *b = test_read_file(yarn_gguf, &nb);
        TEST_CHECK(a && b && na == nb && !memcmp(a, b, na), "converted yarn file equals synth's (%zu vs %zu bytes)",
                   na, nb);
        free(a);
        free(b);
    }
    TEST_CHECK(file_replace(path_in(dir, "config.json"),
                            "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                            "\"original_max_position_embeddings\": 32768}",
                            "\"rope_scaling\": null"),
               "config.json back");

    TEST_CHECK(write_text(path_in(dir, "generation_config.json"),
                              "{\"bos_token_id\": 151643, \"do_sample\": true, \"eos_token_id\": [151645, 151643],\n"
                              " \"temperature\": 0.5, \"top_k\": 7, \"top_p\": 0.9, \"repetition_penalty\": 1.25,\n"
                              " \"transformers_version\": \"4.51.0\"}\n"),
               "generation_config.json");

    inf_model *m = NULL, *ref = NULL;
    if (!TEST_CHECK(inf_model_load(dir, NULL, &m, &err) == INF_OK, "load %s: %s", dir, err.msg)) return;
    TEST_CHECK(inf_model_load(gpath, NULL, &ref, &err) == INF_OK, "load %s: %s", gpath, err.msg);
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    if (TEST_CHECK(tok != NULL, "the directory's tokenizer") && ref) {
        const inf_tokenizer *rt = inf_model_tokenizer(ref);
        /* the GGUF's vocabulary is padded to the 151936 rows with [PAD] entries, as
         * llama.cpp's converter pads it; tokenizer.json has the 151669 real ones */
        TEST_CHECK(inf_tokenizer_n_vocab(tok) == 151669 && inf_tokenizer_n_vocab(rt) == 151936, "vocab %d vs %d",
                   inf_tokenizer_n_vocab(tok), inf_tokenizer_n_vocab(rt));
        TEST_CHECK(inf_tokenizer_eos(tok) == inf_tokenizer_eos(rt), "eos %d vs %d", inf_tokenizer_eos(tok),
                   inf_tokenizer_eos(rt));
        const char *text = "<|im_start|>user\nHello, wörld! 123<|im_end|>";
        int32_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        TEST_CHECK(inf_tokenize(tok, text, strlen(text), 0, &a, &na, &err) == INF_OK &&
                       inf_tokenize(rt, text, strlen(text), 0, &b, &nb, &err) == INF_OK && na == nb && na > 5 &&
                       !memcmp(a, b, na * sizeof *a),
                   "same ids as the GGUF's tokenizer (%zu vs %zu)", na, nb);
        free(a);
        free(b);
    }
    inf_sampler_params p;
    inf_model_sampling_defaults(m, true, &p);
    TEST_CHECK(p.temperature == 0.5f && p.top_k == 7 && p.top_p == 0.9f && p.repeat_penalty == 1.25f && p.min_p == 0,
               "sampling from generation_config.json: temp %g top_k %d top_p %g repeat %g", p.temperature, p.top_k,
               p.top_p, p.repeat_penalty);
    inf_model_info in;
    inf_model_get_info(m, &in);
    TEST_CHECK(in.n_vocab == 151936 && in.tied_output && in.weight_type == INF_DTYPE_BF16 && !strcmp(in.name, "Qwen3-tiny"),
               "info: vocab %d, tied %d, %s, '%s'", in.n_vocab, in.tied_output, inf_dtype_name(in.weight_type), in.name);
    inf_chat_template *t = NULL;
    TEST_CHECK(inf_chat_template_load(dir, &t, &err) == INF_OK && !strcmp(inf_chat_template_describe(t), "qwen3"),
               "chat template from tokenizer_config.json: %s", t ? inf_chat_template_describe(t) : err.msg);
    inf_chat_template_free(t);
    inf_tokenizer *dt = NULL;
    TEST_CHECK(inf_tokenizer_load(dir, &dt, &err) == INF_OK && inf_tokenizer_n_vocab(dt) == 151669,
               "inf_tokenizer_load(DIR): %s", dt ? "ok" : err.msg);
    inf_tokenizer_free(dt);
    inf_model_free(m);
    inf_model_free(ref);

    /* convert to q8_0: the sampling keys go along, and the logits are those
     * of the directory quantized on load */
    co.keep_type = false;
    co.type = INF_DTYPE_Q8_0;
    co.name = NULL;
    if (TEST_CHECK(inf_convert_checkpoint(dir, conv, &co, &err) == INF_OK, "convert q8_0: %s", err.msg)) {
        gguf_file *q = NULL;
        if (TEST_CHECK(gguf_open(conv, GGUF_OPEN_METADATA_ONLY, &q, &err) == INF_OK, "%s", err.msg)) {
            double temp = 0;
            int64_t top_k = 0, file_type = 0;
            const gguf_string *nm = NULL;
            TEST_CHECK(gguf_get_float(q, "general.sampling.temp", false, &temp, &err) == INF_OK && temp == 0.5f &&
                           gguf_get_int(q, "general.sampling.top_k", false, &top_k, &err) == INF_OK && top_k == 7 &&
                           gguf_get_int(q, "general.file_type", false, &file_type, &err) == INF_OK && file_type == 7 &&
                           gguf_get_string(q, "general.name", false, &nm, &err) == INF_OK && !strcmp(nm->data, "Qwen3-tiny"),
                       "converted keys: %s", err.msg);
            int q8 = 0;
            for (uint64_t i = 0; i < q->n_tensors; i++) q8 += q->tensors[i].type == INF_DTYPE_Q8_0;
            TEST_CHECK(q8 == 8 && q->n_kv > 20, "8 q8_0 matrices (%d), %llu keys", q8, (unsigned long long)q->n_kv);
            gguf_close(q);
        }
        expect_same_logits("converted q8_0 vs the directory quantized on load", conv, false, dir, true, true);
    }

    /* BF16 norms, as Hugging Face stores them, become f32 in the GGUF: the
     * converted file computes what the directory does */
    char dir2[512];
    snprintf(dir2, sizeof dir2, "%s/Qwen3-tiny-bf16-norms", tmpdir);
    if (TEST_CHECK(gguf_open(gpath, GGUF_OPEN_READ, &g, &err) == INF_OK, "%s", err.msg)) {
        if (TEST_CHECK(ckpt_from_gguf(&c, g, "BF16", "BF16", 2), "names") && TEST_CHECK(ckpt_write(&c, dir2), "write") &&
            TEST_CHECK(copy_file(TOKENIZER_JSON, path_in(dir2, "tokenizer.json")), "tokenizer.json")) {
            inf_convert_options_default(&co);
            if (TEST_CHECK(inf_convert_checkpoint(dir2, conv, &co, &err) == INF_OK, "convert: %s", err.msg)) {
                gguf_file *q = NULL;
                if (TEST_CHECK(gguf_open(conv, GGUF_OPEN_METADATA_ONLY, &q, &err) == INF_OK, "%s", err.msg)) {
                    const gguf_tensor *norm = gguf_find_tensor(q, "blk.0.attn_norm.weight");
                    const gguf_tensor *wq = gguf_find_tensor(q, "blk.0.attn_q.weight");
                    TEST_CHECK(norm && norm->type == INF_DTYPE_F32 && wq && wq->type == INF_DTYPE_BF16,
                               "norms f32, matrices bf16");
                    gguf_close(q);
                }
                expect_same_logits("converted from bf16 norms vs the directory", conv, false, dir2, false, true);
            }
        }
        ckpt_free(&c);
        gguf_close(g);
    }
    remove(path_in(dir2, "tokenizer.json"));
    TEST_CHECK(inf_convert_checkpoint(dir2, conv, NULL, &err) == INF_ERR_IO && strstr(err.msg, "no tokenizer.json"),
               "convert without tokenizer.json: %s", err.msg);
    TEST_CHECK(inf_convert_checkpoint(gpath, conv, NULL, &err) == INF_ERR_IO && strstr(err.msg, "not a directory"),
               "convert of a file: %s", err.msg);

    /* without tokenizer files: no tokenizer, the built-in template, Qwen3's sampling */
    remove(path_in(dir, "tokenizer.json"));
    remove(path_in(dir, "tokenizer_config.json"));
    remove(path_in(dir, "generation_config.json"));
    m = NULL;
    if (TEST_CHECK(inf_model_load(dir, NULL, &m, &err) == INF_OK, "load bare: %s", err.msg)) {
        TEST_CHECK(inf_model_tokenizer(m) == NULL, "no tokenizer");
        inf_model_sampling_defaults(m, true, &p);
        TEST_CHECK(p.temperature == 0.6f && p.top_k == 20 && p.top_p == 0.95f, "Qwen3's sampling");
        t = NULL;
        TEST_CHECK(inf_chat_template_load(dir, &t, &err) == INF_OK && strstr(inf_chat_template_describe(t), "built-in"),
                   "built-in template: %s", t ? inf_chat_template_describe(t) : err.msg);
        inf_chat_template_free(t);
        inf_model_free(m);
    }
}

/* ------------------------------------------------------------------ corrupt safetensors */

/* A valid file: a F32 [2, 3] and b BF16 [4]; 32 bytes of data. */
#define BASE_HEADER                                                                                      \
    "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}," \
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}"

typedef struct st_case {
    const char *what;
    const char *header;    /* NULL: BASE_HEADER */
    int64_t data_delta;    /* bytes added to (or cut from) the 32 of data */
    bool set_len;          /* header length field = len instead of the header's */
    uint64_t len;
    size_t file_bytes;     /* nonzero: the file is cut to this many bytes */
    inf_status expect;
    const char *must_contain;
} st_case;

static size_t build_st(char *buf, size_t cap, const char *header, int64_t data_delta, bool set_len, uint64_t len) {
    uint64_t hlen = strlen(header);
    size_t n = 0;
    uint64_t field = set_len ? len : hlen;
    memcpy(buf, &field, 8);
    n = 8;
    memcpy(buf + n, header, hlen);
    n += hlen;
    size_t data = (size_t)(32 + data_delta);
    for (size_t i = 0; i < data && n < cap; i++) buf[n++] = (char)(i * 7 + 1);
    return n;
}

static void expect_st_failure(const char *path, const char *what, inf_status expect, const char *must) {
    for (int mode = 0; mode < 3; mode++) {
        safetensors_file *f = NULL;
        inf_error err = {0};
        inf_status st = safetensors_open(path, (safetensors_open_mode)mode, NULL, NULL, &f, &err);
        if (!TEST_CHECK(st != INF_OK && f == NULL, "%s (mode %d): opened a corrupt file", what, mode)) {
            safetensors_close(f);
            continue;
        }
        TEST_CHECK(st == expect, "%s (mode %d): status %s, expected %s (%s)", what, mode, inf_status_name(st),
                   inf_status_name(expect), err.msg);
        TEST_CHECK(err.status == st, "%s: err.status", what);
        TEST_CHECK(!strncmp(err.msg, path, strlen(path)) && strlen(err.msg) > strlen(path) + 2,
                   "%s: message starts with the path: '%s'", what, err.msg);
        TEST_CHECK(!strchr(err.msg, '\n') && !strchr(err.msg, '\r'), "%s: one line: '%s'", what, err.msg);
        if (must) TEST_CHECK(strstr(err.msg, must) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, must);
    }
}

static void test_corrupt_safetensors(void) {
    test_begin("corrupt safetensors files");
    static char buf[1 << 12];
    char path[512];
    snprintf(path, sizeof path, "%s/corrupt.safetensors", tmpdir);

    size_t n = build_st(buf, sizeof buf, BASE_HEADER, 0, false, 0);
    TEST_CHECK(write_file(path, buf, n), "write base");
    for (int mode = 0; mode < 3; mode++) {
        safetensors_file *f = NULL;
        inf_error err = {0};
        if (!TEST_CHECK(safetensors_open(path, (safetensors_open_mode)mode, NULL, NULL, &f, &err) == INF_OK,
                        "base opens (mode %d): %s", mode, err.msg))
            continue;
        const safetensors_tensor *a = safetensors_find(f, "a"), *b = safetensors_find(f, "b");
        TEST_CHECK(f->n_tensors == 2 && a && b && a->type == INF_DTYPE_F32 && a->n_dims == 2 && a->shape[0] == 2 &&
                       a->shape[1] == 3 && b->type == INF_DTYPE_BF16 && b->begin == 24 && b->end == 32,
                   "base parsed");
        if (mode != SAFETENSORS_OPEN_METADATA_ONLY)
            TEST_CHECK(b->data && !memcmp(b->data, buf + 8 + strlen(BASE_HEADER) + 24, 8), "tensor data");
        else TEST_CHECK(!a->data, "no data when metadata-only");
        safetensors_close(f);
    }

    /* cut at every length */
    int cut_failures = 0;
    for (size_t cut = 0; cut < n; cut++) {
        write_file(path, buf, cut);
        for (int mode = 0; mode < 3; mode++) {
            safetensors_file *f = NULL;
            inf_error err = {0};
            inf_status st = safetensors_open(path, (safetensors_open_mode)mode, NULL, NULL, &f, &err);
            if (st == INF_OK || f || strchr(err.msg, '\n') || strncmp(err.msg, path, strlen(path))) {
                if (!cut_failures++) TEST_CHECK(false, "cut at %zu (mode %d): %s '%s'", cut, mode, inf_status_name(st), err.msg);
            }
            safetensors_close(f);
        }
    }
    TEST_CHECK(cut_failures == 0, "%d truncated files opened or gave a bad message", cut_failures);

#define T(dtype, shape, offsets) "\"a\":{\"dtype\":" dtype ",\"shape\":" shape ",\"data_offsets\":" offsets "}"
#define B ",\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}"
    const st_case cases[] = {
        {"shorter than 8 bytes", NULL, 0, false, 0, 5, INF_ERR_FORMAT, "too short for the 8-byte header length"},
        {"header length past the end", NULL, 0, true, 4000, 0, INF_ERR_FORMAT, "runs past the end of the file"},
        {"header length 2^63", NULL, 0, true, 1ull << 63, 0, INF_ERR_FORMAT, "over the limit"},
        {"header length max", NULL, 0, true, UINT64_MAX, 0, INF_ERR_FORMAT, "over the limit"},
        {"header length 0", NULL, 0, true, 0, 0, INF_ERR_FORMAT, "too short for a JSON object"},
        {"header length cuts the JSON", NULL, 0, true, 40, 0, INF_ERR_FORMAT, "malformed"},
        {"not JSON", "this is not json at all.", 0, false, 0, 0, INF_ERR_FORMAT, "not a JSON object"},
        {"a JSON array", "[1, 2, 3]   ", 0, false, 0, 0, INF_ERR_FORMAT, "not a JSON object"},
        {"bytes after the JSON", "{" T("\"F32\"", "[2,3]", "[0,24]") B "xx", 0, false, 0, 0, INF_ERR_FORMAT, "after the JSON"},
        {"NUL in the header", "{" T("\"F32\"", "[2,3]", "[0,24]") B "\0   ", 0, false, 0, 0, INF_ERR_FORMAT, NULL},
        {"tensor not an object", "{\"a\":[1,2]" B, 0, false, 0, 0, INF_ERR_FORMAT, "'a': expected an object"},
        {"dtype missing", "{\"a\":{\"shape\":[2,3],\"data_offsets\":[0,24]}" B, 0, false, 0, 0, INF_ERR_FORMAT,
         "'a': \"dtype\" is missing"},
        {"dtype a number", "{" T("3", "[2,3]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT, "not a string"},
        {"unknown dtype", "{" T("\"F12\"", "[2,3]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT, "unknown dtype 'F12'"},
        {"sub-byte dtype F4", "{" T("\"F4\"", "[2,3]", "[0,24]") B, 0, false, 0, 0, INF_ERR_UNSUPPORTED, "'F4'"},
        {"shape missing", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,24]}" B, 0, false, 0, 0, INF_ERR_FORMAT,
         "\"shape\" is missing"},
        {"shape not a list", "{" T("\"F32\"", "6", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT, "not a list"},
        {"negative dimension", "{" T("\"F32\"", "[-2,-3]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT, "shape[0]"},
        {"fractional dimension", "{" T("\"F32\"", "[2,3.5]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT, "shape[1]"},
        {"dimension 2^60 as a float", "{" T("\"F32\"", "[1e300,1]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT, "shape[0]"},
        {"nine dimensions", "{" T("\"F32\"", "[1,1,1,1,1,1,2,3,1]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT,
         "9 dimensions"},
        {"element count overflow", "{" T("\"F32\"", "[4294967296,4294967296,2]", "[0,24]") B, 0, false, 0, 0,
         INF_ERR_FORMAT, "element count overflows"},
        {"byte size overflow", "{" T("\"F32\"", "[2147483648,2147483648]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT,
         "byte size overflows"},
        {"bytes do not match the shape", "{" T("\"F32\"", "[2,4]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT,
         "8 elements of F32 are 32 bytes, but data_offsets span 24"},
        {"dtype does not match the bytes", "{" T("\"F16\"", "[2,3]", "[0,24]") B, 0, false, 0, 0, INF_ERR_FORMAT,
         "span 24"},
        {"data_offsets missing", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3]}" B, 0, false, 0, 0, INF_ERR_FORMAT,
         "\"data_offsets\" must be two"},
        {"three data_offsets", "{" T("\"F32\"", "[2,3]", "[0,24,24]") B, 0, false, 0, 0, INF_ERR_FORMAT, "must be two"},
        {"negative offset", "{" T("\"F32\"", "[2,3]", "[-24,0]") B, 0, false, 0, 0, INF_ERR_FORMAT, "must be two"},
        {"offsets backwards", "{" T("\"F32\"", "[0]", "[24,0]") B, 0, false, 0, 0, INF_ERR_FORMAT, "end before they begin"},
        {"offsets past the data", "{" T("\"F32\"", "[2,3]", "[32,56]") B, 0, false, 0, 0, INF_ERR_FORMAT,
         "'a': data_offsets [32, 56] lie past the end of the data (32 bytes)"},
        {"offset near 2^53", "{" T("\"F32\"", "[2,3]", "[9007199254740000,9007199254740024]") B, 0, false, 0, 0,
         INF_ERR_FORMAT, "past the end"},
        {"data cut short", NULL, -4, false, 0, 0, INF_ERR_FORMAT, "'b': data_offsets [24, 32] lie past the end of the data (28 bytes)"},
        {"bytes after the last tensor", NULL, 8, false, 0, 0, INF_ERR_FORMAT, "8 bytes of data after the last tensor"},
        {"overlapping tensors", "{" T("\"F32\"", "[2,3]", "[0,24]") ",\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[20,28]},"
         "\"c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[28,32]}}", 0, false, 0, 0, INF_ERR_FORMAT, "'b' (data_offsets [20, 28]) overlaps 'a'"},
        {"a gap between tensors", "{" T("\"F32\"", "[2,2]", "[0,16]") B, 0, false, 0, 0, INF_ERR_FORMAT,
         "8 bytes of data at offset 16, before tensor 'b', belong to no tensor"},
        {"a tensor twice", "{" T("\"F32\"", "[2,3]", "[0,24]") ",\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}",
         0, false, 0, 0, INF_ERR_FORMAT, "tensor 'a' appears twice"},
        {"an empty name", "{" T("\"F32\"", "[2,3]", "[0,24]") ",\"\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}",
         0, false, 0, 0, INF_ERR_FORMAT, "empty name"},
        {"__metadata__ not an object", "{\"__metadata__\":[]," T("\"F32\"", "[2,3]", "[0,24]") B, 0, false, 0, 0,
         INF_ERR_FORMAT, "\"__metadata__\" is not an object"},
        {"__metadata__ value not a string", "{\"__metadata__\":{\"format\":1}," T("\"F32\"", "[2,3]", "[0,24]") B, 0, false,
         0, 0, INF_ERR_FORMAT, "__metadata__ \"format\" is not a string"},
        {"no tensors but data", "{}", 0, false, 0, 0, INF_ERR_FORMAT, "no tensors, but 32 bytes"},
    };
#undef T
#undef B
    const size_t n_cases = sizeof cases / sizeof cases[0];
    TEST_CHECK(n_cases >= 30, "at least 30 corrupt cases (%zu)", n_cases);
    for (size_t i = 0; i < n_cases; i++) {
        const st_case *c = &cases[i];
        const char *header = c->header ? c->header : BASE_HEADER;
        size_t len;
        if (c->header && !strcmp(c->what, "NUL in the header")) { /* the literal holds a NUL: build it by hand */
            char h[512];
            size_t hl = strlen(header);
            memcpy(h, header, hl);
            memcpy(h + hl, "\0   ", 4);
            uint64_t n8 = hl + 4;
            memcpy(buf, &n8, 8);
            memcpy(buf + 8, h, hl + 4);
            len = 8 + hl + 4;
            for (int k = 0; k < 32; k++) buf[len++] = 0;
        } else {
            len = build_st(buf, sizeof buf, header, c->data_delta, c->set_len, c->len);
        }
        if (c->file_bytes) len = c->file_bytes;
        write_file(path, buf, len);
        expect_st_failure(path, c->what, c->expect, c->must_contain);
    }

    /* valid variants: a scalar, an empty tensor, padding, every dtype */
    const char *valid[] = {
        "{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},\"e\":{\"dtype\":\"BF16\",\"shape\":[0,5],"
        "\"data_offsets\":[4,4]},\"r\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[4,28]},"
        "\"q\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[28,32]}}        ",
    };
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        size_t len;
        len = build_st(buf, sizeof buf, valid[i], 0, false, 0);
        write_file(path, buf, len);
        safetensors_file *f = NULL;
        inf_error err = {0};
        if (TEST_CHECK(safetensors_open(path, SAFETENSORS_OPEN_MMAP, NULL, NULL, &f, &err) == INF_OK, "valid %zu: %s", i,
                       err.msg)) {
            const safetensors_tensor *s = safetensors_find(f, "s"), *r = safetensors_find(f, "r");
            TEST_CHECK(s && s->n_dims == 0 && s->n_elems == 1 && r && !r->supported && r->elem_bytes == 8,
                       "scalar and I64 parsed");
        }
        safetensors_close(f);
    }
}

/* ------------------------------------------------------------------ bad directories */

typedef struct dir_case {
    const char *what;
    const char *file;     /* the file to edit (NULL: none) */
    const char *old_text; /* replaced by new_text in it */
    const char *new_text;
    const char *remove;   /* a file to delete */
    inf_status expect;
    const char *must_file;    /* the message names this file (relative to the directory), or NULL: the directory */
    const char *must_contain;
} dir_case;

static void test_bad_dirs(void) {
    test_begin("bad checkpoint directories");
    inf_synth_options o;
    tiny_options(&o, INF_DTYPE_F32, false);
    char gpath[512];
    snprintf(gpath, sizeof gpath, "%s/bad-base.gguf", tmpdir);
    if (!synth(&o, gpath)) return;
    const char *S1 = "model-00001-of-00002.safetensors", *S2 = "model-00002-of-00002.safetensors";
    (void)S2;
    const dir_case cases[] = {
        {"no config.json", NULL, NULL, NULL, "config.json", INF_ERR_IO, NULL, "no config.json in it"},
        {"config.json not JSON", "config.json", "{", "{{", NULL, INF_ERR_FORMAT, "config.json", "not valid JSON"},
        {"config.json an array", "config.json", "{\n  \"architectures\"", "[{\n  \"architectures\"", NULL, INF_ERR_FORMAT,
         "config.json", NULL},
        {"another model type", "config.json", "\"qwen3\"", "\"llama\"", NULL, INF_ERR_UNSUPPORTED, "config.json",
         "\"model_type\" is 'llama'"},
        {"hidden_size missing", "config.json", "\"hidden_size\"", "\"hidden_sizes\"", NULL, INF_ERR_FORMAT,
         "config.json", "\"hidden_size\" is missing"},
        {"hidden_size a string", "config.json", "\"hidden_size\": 64", "\"hidden_size\": \"64\"", NULL, INF_ERR_FORMAT,
         "config.json", "\"hidden_size\" must be an integer"},
        {"hidden_size fractional", "config.json", "\"hidden_size\": 64", "\"hidden_size\": 64.5", NULL, INF_ERR_FORMAT,
         "config.json", "\"hidden_size\" must be an integer"},
        {"negative heads", "config.json", "\"num_attention_heads\": 4", "\"num_attention_heads\": -4", NULL,
         INF_ERR_FORMAT, "config.json", "\"num_attention_heads\""},
        {"absurd layer count", "config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1e12", NULL,
         INF_ERR_FORMAT, "config.json", "\"num_hidden_layers\""},
        {"heads not a multiple of kv heads", "config.json", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3",
         NULL, INF_ERR_FORMAT, "config.json", "\"num_attention_heads\" (4) is not a multiple of \"num_key_value_heads\" (3)"},
        {"odd head_dim", "config.json", "\"head_dim\": 32", "\"head_dim\": 31", NULL, INF_ERR_FORMAT, "config.json",
         "\"head_dim\" (31) must be even"},
        {"absurd head_dim", "config.json", "\"head_dim\": 32", "\"head_dim\": 4096", NULL, INF_ERR_FORMAT,
         "config.json", "\"head_dim\" must be an integer from 1 to 1024"},
        {"rms_norm_eps a string", "config.json", "\"rms_norm_eps\": ", "\"rms_norm_eps\": \"x\", \"z\": ", NULL,
         INF_ERR_FORMAT, "config.json", "\"rms_norm_eps\""},
        {"longrope rope scaling", "config.json", "\"rope_scaling\": null",
         "\"rope_scaling\": {\"rope_type\": \"longrope\", \"factor\": 4.0}", NULL, INF_ERR_UNSUPPORTED, "config.json",
         "\"rope_scaling\".rope_type 'longrope' is not supported"},
        {"dynamic rope scaling (type)", "config.json", "\"rope_scaling\": null",
         "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}", NULL, INF_ERR_UNSUPPORTED, "config.json",
         "\"rope_scaling\".type 'dynamic' is not supported"},
        {"YaRN without its original context", "config.json", "\"rope_scaling\": null",
         "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}", NULL, INF_ERR_FORMAT, "config.json",
         "\"original_max_position_embeddings\" is missing"},
        {"YaRN factor a string", "config.json", "\"rope_scaling\": null",
         "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": \"4\"}", NULL, INF_ERR_FORMAT, "config.json",
         "\"factor\" must be a number"},
        {"attention biases", "config.json", "\"attention_bias\": false", "\"attention_bias\": true", NULL,
         INF_ERR_UNSUPPORTED, "config.json", "attention_bias"},
        {"another activation", "config.json", "\"silu\"", "\"gelu\"", NULL, INF_ERR_UNSUPPORTED, "config.json",
         "hidden_act"},
        {"more layers than tensors", "config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3", NULL,
         INF_ERR_FORMAT, NULL, "tensor 'model.layers.2.input_layernorm.weight' is missing (config.json has 3 layers)"},
        {"fewer layers than tensors", "config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1", NULL,
         INF_ERR_FORMAT, "model-0000", "'model.layers.1."},
        {"ffn size disagrees", "config.json", "\"intermediate_size\": 128", "\"intermediate_size\": 96", NULL,
         INF_ERR_FORMAT, "model-0000", "has shape [128, 64], config.json implies [96, 64]"},
        {"vocab_size disagrees", "config.json", "\"vocab_size\": 512", "\"vocab_size\": 1000", NULL, INF_ERR_FORMAT,
         "model-0000", "'model.embed_tokens.weight' has shape [512, 64], config.json implies [1000, 64]"},
        {"head_dim disagrees", "config.json", "\"head_dim\": 32", "\"head_dim\": 16", NULL, INF_ERR_FORMAT,
         "model-0000", "config.json implies"},
        {"kv heads disagree", "config.json", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4", NULL,
         INF_ERR_FORMAT, "model-0000", "_proj.weight' has shape [64, 64], config.json implies [128, 64]"},
        {"tied, but the config says untied and lm_head is gone", NULL, NULL, NULL, "lm_head", INF_ERR_FORMAT, NULL,
         "'lm_head.weight' is missing and tie_word_embeddings is false"},
        {"an I32 tensor", S1, "\"dtype\":\"F32\"", "\"dtype\":\"I32\"", NULL, INF_ERR_UNSUPPORTED, S1,
         "has dtype I32; inferno loads F32, F16 and BF16"},
        {"an unknown tensor", "model.safetensors", "\"model.embed_tokens.weight\"", "\"model.embed_tokens.bias\"",
         NULL, INF_ERR_UNSUPPORTED, "model.safetensors", "tensor 'model.embed_tokens.bias' is not part of a Qwen3 model"},
        {"layer number with a leading zero", "model.safetensors", "\"model.layers.1.", "\"model.layers.01.", NULL,
         INF_ERR_FORMAT, "model.safetensors", "tensor 'model.layers.01.input_layernorm.weight' belongs to no layer"},
        {"a tensor name past the layers", "model.safetensors", "\"model.layers.1.", "\"model.layers.2.", NULL,
         INF_ERR_FORMAT, "model.safetensors", "belongs to no layer of the 2 in config.json"},
        {"no weights", NULL, NULL, NULL, "model.safetensors.index.json", INF_ERR_IO, NULL,
         "no model.safetensors or model.safetensors.index.json"},
        {"index not JSON", "model.safetensors.index.json", "{", "", NULL, INF_ERR_FORMAT, "model.safetensors.index.json",
         "not valid JSON"},
        {"index without weight_map", "model.safetensors.index.json", "\"weight_map\"", "\"weights\"", NULL,
         INF_ERR_FORMAT, "model.safetensors.index.json", "\"weight_map\" is missing"},
        {"index names a missing shard", "model.safetensors.index.json", "-of-00002.safetensors\"", "-of-00003.safetensors\"",
         NULL, INF_ERR_IO, "model-00001-of-00003.safetensors", "missing, but"},
        {"index names a path outside", "model.safetensors.index.json", "\"model-00001", "\"../model-00001", NULL,
         INF_ERR_FORMAT, "model.safetensors.index.json", "must name a file in the directory"},
        {"index places a tensor in the wrong shard", "model.safetensors.index.json",
         "\"model.embed_tokens.weight\": \"model-00001", "\"model.embed_tokens.weight\": \"model-00002", NULL,
         INF_ERR_FORMAT, S1, "tensor 'model.embed_tokens.weight' is here, but"},
        {"a shard holds a tensor the index lacks", "model.safetensors.index.json", "\"model.embed_tokens.weight\"",
         "\"model.embed_tokens.weight.x\"", NULL, INF_ERR_FORMAT, S1, "'model.embed_tokens.weight' is not in"},
        {"index lists a tensor twice", "model.safetensors.index.json", "\"weight_map\": {",
         "\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\", ", NULL, INF_ERR_FORMAT,
         "model.safetensors.index.json", "lists tensor 'model.norm.weight' twice"},
        {"index lists a tensor no shard holds", "model.safetensors.index.json", "\"weight_map\": {",
         "\"weight_map\": {\"model.extra.weight\": \"model-00001-of-00002.safetensors\", ", NULL, INF_ERR_FORMAT,
         "model.safetensors.index.json", "'model.extra.weight' is listed in model-00001-of-00002.safetensors, which does not hold it"},
        {"a corrupt shard", S1, "\"data_offsets\":[0,", "\"data_offsets\":[1,", NULL, INF_ERR_FORMAT, S1, "data_offsets"},
        {"generation_config.json bad value", "generation_config.json", "0.6", "\"hot\"", NULL, INF_ERR_FORMAT,
         "generation_config.json", "\"temperature\""},
        {"generation_config.json not JSON", "generation_config.json", "{", "", NULL, INF_ERR_FORMAT,
         "generation_config.json", "not a JSON object"},
    };
    const size_t n_cases = sizeof cases / sizeof cases[0];
    TEST_CHECK(n_cases >= 30, "at least 30 bad directories (%zu)", n_cases);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/bad-dir", tmpdir);
    for (size_t i = 0; i < n_cases; i++) {
        const dir_case *c = &cases[i];
        ckpt k;
        /* cases that edit tensor names use one file (no index to keep in step) */
        bool single = c->file && !strcmp(c->file, "model.safetensors");
        remove(path_in(dir, "model.safetensors"));
        remove(path_in(dir, "model.safetensors.index.json"));
        remove(path_in(dir, "model-00001-of-00002.safetensors"));
        remove(path_in(dir, "model-00002-of-00002.safetensors"));
        if (!make_f32_dir(gpath, dir, single ? 1 : 2, -1, &k)) return;
        if (!strcmp(c->what, "tied, but the config says untied and lm_head is gone")) {
            /* rewrite without lm_head.weight */
            for (int t = 0; t < k.n; t++)
                if (!strcmp(k.t[t].name, "lm_head.weight")) {
                    free(k.t[t].data);
                    k.t[t] = k.t[--k.n];
                }
            remove(path_in(dir, "model-00001-of-00002.safetensors"));
            remove(path_in(dir, "model-00002-of-00002.safetensors"));
            ckpt_write(&k, dir);
        }
        ckpt_free(&k);
        write_text(path_in(dir, "generation_config.json"), "{\"temperature\": 0.6, \"top_k\": 20}\n");
        bool st_file = c->file && strstr(c->file, ".safetensors") && !strstr(c->file, ".json");
        if (c->file && !TEST_CHECK((st_file ? st_replace : file_replace)(path_in(dir, c->file), c->old_text, c->new_text),
                                   "%s: edit %s", c->what, c->file))
            continue;
        if (c->remove && strcmp(c->remove, "lm_head")) remove(path_in(dir, c->remove));
        inf_model *m = NULL;
        inf_error err = {0};
        inf_status st = inf_model_load(dir, NULL, &m, &err);
        if (!TEST_CHECK(st != INF_OK && !m, "%s: loaded", c->what)) {
            inf_model_free(m);
            continue;
        }
        TEST_CHECK(st == c->expect, "%s: status %s, expected %s (%s)", c->what, inf_status_name(st),
                   inf_status_name(c->expect), err.msg);
        char want[600];
        snprintf(want, sizeof want, "%s%s%s", dir, c->must_file ? "/" : "", c->must_file ? c->must_file : "");
        TEST_CHECK(!strncmp(err.msg, want, strlen(want)), "%s: message starts with %s: '%s'", c->what, want, err.msg);
        TEST_CHECK(!strchr(err.msg, '\n'), "%s: one line", c->what);
        if (c->must_contain)
            TEST_CHECK(strstr(err.msg, c->must_contain) != NULL, "%s: '%s' lacks '%s'", c->what, err.msg, c->must_contain);
        /* remove what this case wrote, so the next starts clean */
        remove(path_in(dir, "model-00001-of-00003.safetensors"));
    }
}

/* config.json's rope_scaling {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings":
 * 512} (Qwen3's long-context recipe, scaled down): the directory loads as a GGUF with the converter's
 * qwen3.rope.scaling.{type, factor, original_context_length} and computes what that GGUF computes;
 * transformers 5's rope_parameters and the older "type" spelling too (`convert`: test_golden_dirs). */
static void test_rope_scaling_dir(void) {
    test_begin("rope_scaling yarn");
    inf_synth_options o;
    tiny_options(&o, INF_DTYPE_F32, false);
    o.rope_scaling = INF_ROPE_SCALING_YARN;
    o.rope_scale = 4.0f;
    o.rope_orig_ctx = 512;
    char gpath[512], dir[512], conv[512];
    snprintf(gpath, sizeof gpath, "%s/yarn.gguf", tmpdir);
    snprintf(dir, sizeof dir, "%s/Qwen3-yarn", tmpdir);
    snprintf(conv, sizeof conv, "%s/yarn-converted.gguf", tmpdir);
    if (!synth(&o, gpath) || !make_f32_dir(gpath, dir, 1, -1, NULL)) return;
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s", path_in(dir, "config.json"));
    static const char *const objects[] = {
        "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 512}",
        "\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0}, \"original_max_position_embeddings\": 512",
        ("\"rope_scaling\": null, \"rope_parameters\": {\"rope_theta\": 1000000, \"rope_type\": \"yarn\", "
         "\"factor\": 4.0, \"original_max_position_embeddings\": 512}"),
    };
    const char *current = "\"rope_scaling\": null";
    for (size_t k = 0; k < sizeof objects / sizeof *objects; k++) {
        if (!TEST_CHECK(file_replace(cfg, current, objects[k]), "edit config.json")) break;
        current = objects[k];
        inf_model *m = NULL;
        inf_error err = {0};
        if (!TEST_CHECK(inf_model_load(dir, NULL, &m, &err) == INF_OK, "load %s: %s", dir, err.msg)) continue;
        inf_model_info in;
        inf_model_get_info(m, &in);
        TEST_CHECK(in.rope_scaling == INF_ROPE_SCALING_YARN && in.rope_scale == 4.0f && in.rope_orig_ctx == 512 &&
                       in.n_ctx_train == 1024 && in.n_ctx_max == 2048,
                   "config %zu: rope %s x%g over %d, context %d / %d", k, inf_rope_scaling_name(in.rope_scaling),
                   (double)in.rope_scale, in.rope_orig_ctx, in.n_ctx_train, in.n_ctx_max);
        inf_session *s = NULL;
        TEST_CHECK(inf_session_new(m, 2048, &s, &err) == INF_OK, "a 2048-token session: %s", err.msg);
        TEST_CHECK(inf_session_new(m, 2049, &(inf_session *){NULL}, &err) == INF_ERR_INVALID, "2049 tokens refused");
        inf_session_free(s);
        inf_model_free(m);
        if (k == 0) expect_same_logits("yarn directory vs its GGUF", dir, false, gpath, false, true);
    }
}

int main(void) {
    tmpdir = test_tmpdir("hf");
    if (!tmpdir) return 1;
    test_rope_scaling_dir();
    test_corrupt_safetensors();
    test_same_weights();
    test_golden_dirs();
    test_tokenizer_files();
    test_bad_dirs();
    test_tmpdir_remove();
    return test_summary();
}

/*
 * test_model.c — the model loader and the session, on models from our own
 * synthetic writer:
 *   - files that are well-formed GGUF but wrong as Qwen3 models (missing
 *     tensor, wrong shape, unknown architecture, zero or non-dividing head
 *     counts, more layers declared than present, ...) each fail to load
 *     with a one-line error naming the key or tensor;
 *   - a KV cache type the model cannot hold (q8_0 with head_dim 16) is
 *     refused with a one-line error naming the key;
 *   - in other geometries (untied head, KV heads = heads, head_dim * heads
 *     != hidden, prompts longer than 300 tokens, q8_0 KV cache with and
 *     without its Hadamard rotations) the logits of one-pass prefill equal
 *     those of token-by-token decode;
 *   - session rules: context full leaves the session unchanged, bad ids are
 *     refused, truncate + re-eval reproduces the logits;
 *   - the pages of a mapped token_embd that lookups fault in are given
 *     back every 16 rows; with --no-mmap and its tied head packed, its
 *     lookups read the file's mapping too, with the same logits;
 *   - split GGUFs (llama.cpp's gguf-split layout, written by
 *     gguf_split_write): 1, 3 and 5 shards (the first with metadata only),
 *     named by their first or last shard, mapped or read, give the
 *     unsplit file's logits bit for bit, read as one file they are the
 *     unsplit file byte for byte, and their tensors lie in the shards'
 *     mappings or buffers (what repacking gives back); a missing shard, a
 *     wrong split.count or split.no, a tensor in two shards or in none, a
 *     shard under another name each fail with a one-line error naming the
 *     shard.
 */
#include "harness.h"
#include "inferno.h"
#include "tiny_model.h"
#include "io/gguf_split.h"
#include "model/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *tmpdir;

static void tiny_options(inf_synth_options *o) { test_tiny_model_options(o); }

/* ------------------------------------------------------------ bad models */

typedef struct bad_case {
    const char *name;
    const char *expect; /* substring of the error message */
    inf_synth_faults faults;
    int n_layer_override; /* 0 = keep */
} bad_case;

static void check_bad_models(void) {
    static char shape_tensor[] = "blk.0.attn_k.weight";
    bad_case cases[] = {
        {"missing tensor", "blk.1.ffn_down.weight", {.omit_tensor = "blk.1.ffn_down.weight"}, 0},
        {"missing norm", "output_norm.weight", {.omit_tensor = "output_norm.weight"}, 0},
        {"wrong shape", "blk.0.attn_k.weight",
         {.reshape_tensor = shape_tensor, .reshape_n_dims = 2, .reshape_ne = {64, 48}}, 0},
        {"wrong rank", "blk.0.attn_q_norm.weight",
         {.reshape_tensor = "blk.0.attn_q_norm.weight", .reshape_n_dims = 2, .reshape_ne = {16, 2}}, 0},
        {"unknown architecture", "llama2",
         {.set_keys = {{"general.architecture", inf_synth_str("llama2")}}, .n_set_keys = 1}, 0},
        {"zero heads", "head_count",
         {.set_keys = {{"qwen3.attention.head_count", inf_synth_u32(0)}}, .n_set_keys = 1}, 0},
        {"zero kv heads", "head_count_kv",
         {.set_keys = {{"qwen3.attention.head_count_kv", inf_synth_u32(0)}}, .n_set_keys = 1}, 0},
        {"non-dividing heads", "head_count_kv",
         {.set_keys = {{"qwen3.attention.head_count_kv", inf_synth_u32(3)}}, .n_set_keys = 1}, 0},
        {"more layers declared", "blk.2.attn_norm.weight",
         {.set_keys = {{"qwen3.block_count", inf_synth_u32(3)}}, .n_set_keys = 1}, 0},
        {"fewer layers declared", "blk.1",
         {.set_keys = {{"qwen3.block_count", inf_synth_u32(1)}}, .n_set_keys = 1}, 0},
        {"missing hidden size", "qwen3.embedding_length", {.omit_key = "qwen3.embedding_length"}, 0},
        {"missing eps", "layer_norm_rms_epsilon", {.omit_key = "qwen3.attention.layer_norm_rms_epsilon"}, 0},
        {"hidden size mismatch", "token_embd.weight",
         {.set_keys = {{"qwen3.embedding_length", inf_synth_u32(80)}}, .n_set_keys = 1}, 0},
        {"odd head_dim", "key_length",
         {.set_keys = {{"qwen3.attention.key_length", inf_synth_u32(15)},
                       {"qwen3.attention.value_length", inf_synth_u32(15)}},
          .n_set_keys = 2}, 0},
        {"value_length differs", "value_length",
         {.set_keys = {{"qwen3.attention.value_length", inf_synth_u32(8)}}, .n_set_keys = 1}, 0},
        {"absurd layer count", "block_count",
         {.set_keys = {{"qwen3.block_count", inf_synth_u32(4000000000u)}}, .n_set_keys = 1}, 0},
        {"architecture of wrong type", "general.architecture",
         {.set_keys = {{"general.architecture", inf_synth_u32(3)}}, .n_set_keys = 1}, 0},
        {"unknown rope scaling", "qwen3.rope.scaling.type 'longrope' is not supported",
         {.set_keys = {{"qwen3.rope.scaling.type", inf_synth_str("longrope")}}, .n_set_keys = 1}, 0},
        {"rope scaling type of wrong type", "qwen3.rope.scaling.type",
         {.set_keys = {{"qwen3.rope.scaling.type", inf_synth_u32(2)}}, .n_set_keys = 1}, 0},
        {"negative rope factor", "qwen3.rope.scaling.factor",
         {.set_keys = {{"qwen3.rope.scaling.factor", inf_synth_f32(-4)}}, .n_set_keys = 1}, 0},
        {"zero original context", "qwen3.rope.scaling.original_context_length",
         {.set_keys = {{"qwen3.rope.scaling.original_context_length", inf_synth_u32(0)}}, .n_set_keys = 1}, 0},
    };
    inf_synth_options o;
    tiny_options(&o);
    char path[256];
    snprintf(path, sizeof path, "%s/bad.gguf", tmpdir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_begin(cases[i].name);
        inf_error err = {0};
        if (!TEST_CHECK(inf_synth_write_ex(&o, path, &cases[i].faults, &err) == INF_OK, "%s: synth: %s",
                        cases[i].name, err.msg))
            continue;
        inf_model *m = NULL;
        memset(&err, 0, sizeof err);
        inf_status st = inf_model_load(path, NULL, &m, &err);
        TEST_CHECK(st != INF_OK && m == NULL, "%s: loaded a broken model", cases[i].name);
        TEST_CHECK(strstr(err.msg, cases[i].expect) != NULL, "%s: message '%s' does not name '%s'",
                   cases[i].name, err.msg, cases[i].expect);
        TEST_CHECK(strchr(err.msg, '\n') == NULL && strlen(err.msg) > 10, "%s: not one line: '%s'",
                   cases[i].name, err.msg);
        inf_model_free(m);
    }
    test_begin("missing file");
    inf_model *m = NULL;
    inf_error err = {0};
    TEST_CHECK(inf_model_load("/nonexistent/model.gguf", NULL, &m, &err) == INF_ERR_IO, "missing file: %s", err.msg);
    TEST_CHECK(strstr(err.msg, "/nonexistent/model.gguf") != NULL, "message names the file: %s", err.msg);

    /* load options the model cannot honour: a q8_0 KV cache needs head_dim a
     * multiple of 32 (tiny_options has 16), and an unknown cache type */
    test_begin("kv type the model cannot hold");
    inf_load_options lo;
    inf_load_options_default(&lo);
    if (TEST_CHECK(inf_synth_write(&o, path, &err) == INF_OK, "synth: %s", err.msg)) {
        lo.kv_type = INF_KV_Q8_0;
        TEST_CHECK(inf_model_load(path, &lo, &m, &err) == INF_ERR_INVALID && m == NULL, "q8_0 KV with head_dim 16 loaded");
        TEST_CHECK(strstr(err.msg, "key_length") && strstr(err.msg, "q8_0") && !strchr(err.msg, '\n'),
                   "message does not name q8_0 and key_length in one line: '%s'", err.msg);
        lo.kv_type = (inf_kv_type)7;
        TEST_CHECK(inf_model_load(path, &lo, &m, &err) == INF_ERR_INVALID && m == NULL, "KV type 7 loaded");
    }
    unlink(path);
}

/* RoPE scaling from the load options (llama.cpp's --rope-scaling yarn
 * --rope-scale 4 --yarn-orig-ctx N) over an unscaled file computes what the
 * file with those keys computes, bit for bit, and lets -c go past the
 * trained context up to orig x factor; "none" over a YaRN file undoes it. */
static void check_rope_overrides(void) {
    test_begin("rope scaling overrides");
    inf_synth_options o;
    tiny_options(&o);
    o.n_ctx_train = 256;
    char plain[256], yarn[256];
    snprintf(plain, sizeof plain, "%s/plain.gguf", tmpdir);
    snprintf(yarn, sizeof yarn, "%s/yarn.gguf", tmpdir);
    inf_error err = {0};
    if (!TEST_CHECK(inf_synth_write(&o, plain, &err) == INF_OK, "synth: %s", err.msg)) return;
    o.rope_scaling = INF_ROPE_SCALING_YARN, o.rope_scale = 4.0f, o.rope_orig_ctx = 192;
    if (!TEST_CHECK(inf_synth_write(&o, yarn, &err) == INF_OK, "synth: %s", err.msg)) return;
    inf_load_options lo;
    inf_load_options_default(&lo);
    lo.n_ctx = 768;
    inf_model *m = NULL;
    TEST_CHECK(inf_model_load(plain, &lo, &m, &err) == INF_ERR_INVALID && m == NULL &&
                   strstr(err.msg, "exceeds the model's 256") && strstr(err.msg, "--rope-scaling"),
               "768 tokens on an unscaled 256-token model: %s", err.msg);
    static const int32_t ids[] = {1, 17, 300, 42, 7};
    float logits[3][5 * 512];
    const char *paths[3] = {plain, yarn, yarn};
    for (int k = 0; k < 3; k++) {
        inf_load_options_default(&lo);
        lo.n_ctx = k < 2 ? 768 : 256;
        if (k == 0) lo.rope_scaling_set = true, lo.rope_scaling = INF_ROPE_SCALING_YARN, lo.rope_scale = 4, lo.yarn_orig_ctx = 192;
        if (k == 2) lo.rope_scaling_set = true, lo.rope_scaling = INF_ROPE_SCALING_NONE;
        if (!TEST_CHECK(inf_model_load(paths[k], &lo, &m, &err) == INF_OK, "load %d: %s", k, err.msg)) return;
        inf_model_info in;
        inf_model_get_info(m, &in);
        TEST_CHECK(in.n_vocab <= 512, "vocab %d", in.n_vocab);
        if (k < 2)
            TEST_CHECK(in.rope_scaling == INF_ROPE_SCALING_YARN && in.rope_scale == 4 && in.rope_orig_ctx == 192 &&
                           in.n_ctx_max == 768 && fabsf(in.rope_attn_factor - (1 + 0.1f * logf(4))) < 1e-6f,
                       "case %d: %s x%g over %d, up to %d, mscale %g", k, inf_rope_scaling_name(in.rope_scaling),
                       (double)in.rope_scale, in.rope_orig_ctx, in.n_ctx_max, (double)in.rope_attn_factor);
        else
            TEST_CHECK(in.rope_scaling == INF_ROPE_SCALING_NONE && in.n_ctx_max == 256, "none over yarn");
        inf_session *s = NULL;
        if (TEST_CHECK(inf_session_new(m, 0, &s, &err) == INF_OK, "session: %s", err.msg))
            TEST_CHECK(inf_session_eval(s, ids, 5, INF_LOGITS_ALL, logits[k], &err) == INF_OK, "eval: %s", err.msg);
        inf_session_free(s);
        inf_model_free(m);
    }
    TEST_CHECK(!memcmp(logits[0], logits[1], sizeof logits[0]), "overrides differ from the file's keys");
    TEST_CHECK(memcmp(logits[1], logits[2], sizeof logits[1]) != 0, "none changed nothing");
    unlink(plain);
    unlink(yarn);
}

/* ------------------------------------------------------------ prefill == decode */

typedef struct geometry {
    const char *name;
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
    bool tied;
    inf_dtype type;
    inf_kv_type kv;
    int n_prompt;
    double tol;
} geometry;

static void check_prefill_equals_decode(const geometry *g) {
    test_begin(g->name);
    inf_synth_options o;
    tiny_options(&o);
    o.n_layer = g->n_layer;
    o.n_embd = g->n_embd;
    o.n_ff = g->n_ff;
    o.n_head = g->n_head;
    o.n_head_kv = g->n_head_kv;
    o.head_dim = g->head_dim;
    o.tied_output = g->tied;
    o.weight_type = g->type;
    char path[256];
    snprintf(path, sizeof path, "%s/geom.gguf", tmpdir);
    inf_error err = {0};
    if (!TEST_CHECK(inf_synth_write(&o, path, &err) == INF_OK, "synth: %s", err.msg)) return;
    inf_model *m = NULL;
    inf_load_options lo;
    inf_load_options_default(&lo);
    lo.kv_type = g->kv;
    if (!TEST_CHECK(inf_model_load(path, &lo, &m, &err) == INF_OK, "load: %s", err.msg)) return;
    inf_model_info info;
    inf_model_get_info(m, &info);
    TEST_CHECK(info.tied_output == g->tied, "tied flag");
    TEST_CHECK(info.head_dim == g->head_dim && info.n_head_kv == g->n_head_kv, "geometry read back");
    int n = g->n_prompt, V = info.n_vocab;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    uint64_t seed = 12345;
    for (int i = 0; i < n; i++) ids[i] = (int32_t)(test_rng_next(&seed) % (uint64_t)(V - 30));
    float *all = malloc((size_t)n * (size_t)V * sizeof(float));
    float *one = malloc((size_t)V * sizeof(float));
    inf_session *a = NULL, *b = NULL;
    TEST_CHECK(inf_session_new(m, n + 8, &a, &err) == INF_OK, "session: %s", err.msg);
    TEST_CHECK(inf_session_new(m, n + 8, &b, &err) == INF_OK, "session: %s", err.msg);
    if (a && b && TEST_CHECK(inf_session_eval(a, ids, n, INF_LOGITS_ALL, all, &err) == INF_OK, "prefill: %s", err.msg)) {
        double worst = 0;
        int first_bad = -1;
        for (int t = 0; t < n; t++) {
            if (inf_session_eval(b, &ids[t], 1, INF_LOGITS_LAST, one, &err) != INF_OK) {
                TEST_CHECK(false, "decode %d: %s", t, err.msg);
                break;
            }
            for (int v = 0; v < V; v++) {
                double d = fabs((double)one[v] - all[(size_t)t * V + v]);
                if (d > worst) worst = d;
                if (d > g->tol && first_bad < 0) first_bad = t;
            }
        }
        TEST_CHECK(worst <= g->tol, "%s: prefill vs decode differ by %.3g (tol %.3g), first at token %d",
                   g->name, worst, g->tol, first_bad);
        printf("  %-34s %3d tokens: prefill vs decode max|d| %.2e\n", g->name, n, worst);
        /* the last-row mode gives the last row of the all-rows mode (up to the
         * summation order of a matrix-vector vs a matrix-matrix kernel) */
        TEST_CHECK(inf_session_truncate(a, 0, &err) == INF_OK, "truncate");
        TEST_CHECK(inf_session_eval(a, ids, n, INF_LOGITS_LAST, one, &err) == INF_OK, "prefill last");
        double d_last = 0;
        for (int v = 0; v < V; v++) d_last = fmax(d_last, fabs((double)one[v] - all[(size_t)(n - 1) * V + v]));
        TEST_CHECK(d_last <= g->tol, "%s: LOGITS_LAST differs from the last row of LOGITS_ALL by %.3g", g->name, d_last);
    }
    free(ids);
    free(all);
    free(one);
    inf_session_free(a);
    inf_session_free(b);
    inf_model_free(m);
    unlink(path);
}

/* ------------------------------------------------------------ session rules */

/* Resident kB of the process's mappings of `path` (/proc/self/smaps); -1
 * when it cannot be read. */
static long mapped_file_rss_kb(const char *path) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[1024];
    bool in_file = false;
    long kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line; the path ends it */
            line[strcspn(line, "\n")] = 0;
            const size_t n = strlen(line), pn = strlen(path);
            in_file = n >= pn && !strcmp(line + n - pn, path);
        } else if (in_file && !strncmp(line, "Rss:", 4)) {
            kb += atol(line + 4);
        }
    }
    fclose(f);
    return kb;
}

/* token_embd's rows in the file's mapping are read with pread, not
 * through the mapping (qwen3.c, embed_tokens): lookups map no pages of
 * the file, so the process does not come to hold the table beside its
 * packed head. With --no-mmap and the tied head packed, token_embd is
 * only looked up and stays in the file's mapping too (quantize_load.c);
 * with --no-repack as well, the head multiplies token_embd itself, which
 * is then copied into anonymous memory and looked up there: the rows read
 * either way give the same logits. */
enum { EMBD_CONFIGS = 3 };

static void check_embedding_lookups(int config, const char *path, float *first_logits) {
    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.use_mmap = config == 0;
    opt.no_repack = config == 2;
    inf_error err = {0};
    inf_model *m = NULL;
    inf_session *s = NULL;
    if (!TEST_CHECK(inf_model_load(path, &opt, &m, &err) == INF_OK, "load: %s", err.msg)) return;
    inf_model_info info;
    inf_model_get_info(m, &info);
    float *logits = malloc((size_t)info.n_vocab * sizeof(float));
    if (TEST_CHECK(inf_session_new(m, 64, &s, &err) == INF_OK, "session: %s", err.msg) && logits) {
        const long loaded = mapped_file_rss_kb(path), spread = info.n_vocab / 40;
        for (int32_t i = 1; i <= 16; i++) { /* rows far apart: through the mapping, each would map pages */
            const int32_t id = i * (int32_t)spread;
            TEST_CHECK(inf_session_eval(s, &id, 1, INF_LOGITS_NONE, NULL, &err) == INF_OK, "eval: %s", err.msg);
        }
        const long after = mapped_file_rss_kb(path);
        TEST_CHECK(loaded >= 0, "/proc/self/smaps read");
        TEST_CHECK(after <= loaded + 8, "config %d: 16 lookups map no file pages: %ld kB, %ld after loading", config,
                   after, loaded);
        const int32_t prompt[5] = {7, (int32_t)info.n_vocab - 1, 0, 3 * (int32_t)spread, 7};
        TEST_CHECK(inf_session_eval(s, prompt, 5, INF_LOGITS_LAST, logits, &err) == INF_OK, "prompt: %s", err.msg);
        if (config == 0) memcpy(first_logits, logits, (size_t)info.n_vocab * sizeof(float));
        else TEST_CHECK(!memcmp(first_logits, logits, (size_t)info.n_vocab * sizeof(float)),
                        "config %d gives the mapped model's logits", config);
    }
    free(logits);
    inf_session_free(s);
    inf_model_free(m);
}

static void check_embedding_rows_read(void) {
    test_begin("looked-up rows of token_embd are read from the file, not mapped");
    inf_synth_options o;
    tiny_options(&o);
    o.n_vocab = 65536; /* 4.25 MiB of Q8_0 rows: more than a fault maps; Q8_0 packs on AVX-512 */
    o.weight_type = INF_DTYPE_Q8_0;
    char path[256];
    snprintf(path, sizeof path, "%s/embd.gguf", tmpdir);
    inf_error err = {0};
    float *first_logits = malloc((size_t)o.n_vocab * sizeof(float));
    if (TEST_CHECK(inf_synth_write(&o, path, &err) == INF_OK, "synth: %s", err.msg) && first_logits)
        for (int config = 0; config < EMBD_CONFIGS; config++) check_embedding_lookups(config, path, first_logits);
    free(first_logits);
}

static void check_session_rules(void) {
    test_begin("session rules");
    inf_synth_options o;
    tiny_options(&o);
    char path[256];
    snprintf(path, sizeof path, "%s/session.gguf", tmpdir);
    inf_error err = {0};
    inf_model *m = NULL;
    if (!TEST_CHECK(inf_synth_write(&o, path, &err) == INF_OK, "synth: %s", err.msg) ||
        !TEST_CHECK(inf_model_load(path, NULL, &m, &err) == INF_OK, "load: %s", err.msg))
        return;
    inf_model_info info;
    inf_model_get_info(m, &info);
    int V = info.n_vocab;
    inf_session *s = NULL;
    TEST_CHECK(inf_session_new(m, 8, &s, &err) == INF_OK, "session: %s", err.msg);
    TEST_CHECK(inf_session_new(m, info.n_ctx_train + 1, &(inf_session *){NULL}, &err) == INF_ERR_INVALID,
               "context above the trained length is refused");
    int32_t ids[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    float *l1 = malloc((size_t)V * sizeof(float)), *l2 = malloc((size_t)V * sizeof(float));
    TEST_CHECK(inf_session_eval(s, ids, 10, INF_LOGITS_LAST, l1, &err) == INF_ERR_CONTEXT_FULL,
               "10 tokens into a context of 8: %s", err.msg);
    TEST_CHECK(inf_session_n_past(s) == 0, "a refused eval changes nothing");
    int32_t bad = V;
    TEST_CHECK(inf_session_eval(s, &bad, 1, INF_LOGITS_LAST, l1, &err) == INF_ERR_INVALID, "id = n_vocab refused");
    bad = -1;
    TEST_CHECK(inf_session_eval(s, &bad, 1, INF_LOGITS_LAST, l1, &err) == INF_ERR_INVALID, "id -1 refused");
    TEST_CHECK(inf_session_eval(s, ids, 0, INF_LOGITS_LAST, l1, &err) == INF_ERR_INVALID, "no tokens refused");
    TEST_CHECK(inf_session_eval(s, ids, 6, INF_LOGITS_LAST, l1, &err) == INF_OK, "6 tokens: %s", err.msg);
    TEST_CHECK(inf_session_n_past(s) == 6, "n_past 6");
    TEST_CHECK(inf_session_truncate(s, 7, &err) == INF_ERR_INVALID, "truncate past the end refused");
    TEST_CHECK(inf_session_truncate(s, 3, &err) == INF_OK, "truncate to 3");
    TEST_CHECK(inf_session_eval(s, ids + 3, 3, INF_LOGITS_LAST, l2, &err) == INF_OK, "re-eval: %s", err.msg);
    TEST_CHECK(memcmp(l1, l2, (size_t)V * sizeof(float)) == 0, "truncate + re-eval gives the same logits");
    TEST_CHECK(inf_session_eval(s, ids, 3, INF_LOGITS_LAST, l2, &err) == INF_ERR_CONTEXT_FULL, "full at 9 > 8");
    TEST_CHECK(inf_session_eval(s, ids, 2, INF_LOGITS_NONE, NULL, &err) == INF_OK, "fill to 8 without logits");
    TEST_CHECK(inf_session_n_past(s) == 8, "n_past 8");
    free(l1);
    free(l2);
    inf_session_free(s);
    inf_model_free(m);
    unlink(path);
}

/* ------------------------------------------------------------ split GGUF */

/* The last-token logits of ids through the model at path, or NULL (the
 * check that failed is counted). */
static float *split_logits(const char *path, bool mmap, const int32_t *ids, int n, int *n_vocab) {
    inf_load_options lo;
    inf_load_options_default(&lo);
    lo.use_mmap = mmap;
    lo.n_threads = 1;
    inf_model *m = NULL;
    inf_session *s = NULL;
    inf_error err = {0};
    float *logits = NULL;
    if (TEST_CHECK(inf_model_load(path, &lo, &m, &err) == INF_OK, "load %s: %s", path, err.msg) &&
        TEST_CHECK(inf_session_new(m, n + 1, &s, &err) == INF_OK, "session: %s", err.msg)) {
        inf_model_info info;
        inf_model_get_info(m, &info);
        *n_vocab = info.n_vocab;
        logits = malloc((size_t)info.n_vocab * sizeof *logits);
        if (!TEST_CHECK(logits && inf_session_eval(s, ids, n, INF_LOGITS_LAST, logits, &err) == INF_OK, "eval: %s",
                        err.msg)) {
            free(logits);
            logits = NULL;
        }
    }
    inf_session_free(s);
    inf_model_free(m);
    return logits;
}

static void shard_path(char *out, size_t cap, const char *prefix, int k, int n) {
    snprintf(out, cap, "%s-%05d-of-%05d.gguf", prefix, k, n);
}

/* Rewrites the shard at path with one change (a broken shard llama.cpp's
 * gguf-split would not write). */
typedef struct shard_edit {
    const char *drop_key;        /* this metadata key left out */
    int split_count;             /* > 0: split.count written as this */
    bool drop_last_tensor;
    const char *extra_from;      /* with extra_tensor: that tensor of this file added */
    const char *extra_tensor;
} shard_edit;

static bool rewrite_shard(const char *path, const shard_edit *e) {
    gguf_file *f = NULL, *x = NULL;
    gguf_writer *w = gguf_writer_new();
    inf_error err = {0};
    bool ok = w && gguf_open(path, GGUF_OPEN_READ, &f, &err) == INF_OK &&
              (!e->extra_from || gguf_open(e->extra_from, GGUF_OPEN_READ, &x, &err) == INF_OK);
    for (uint64_t i = 0; ok && i < f->n_kv; i++) {
        const char *key = f->kv[i].key.data;
        if (e->drop_key && !strcmp(key, e->drop_key)) continue;
        gguf_value v = f->kv[i].value;
        if (e->split_count > 0 && !strcmp(key, "split.count")) v.u64 = (uint64_t)e->split_count;
        gguf_writer_set_value(w, key, &v);
    }
    for (uint64_t i = 0; ok && i < f->n_tensors - (e->drop_last_tensor ? 1 : 0); i++) {
        const gguf_tensor *t = &f->tensors[i];
        gguf_writer_add_tensor(w, t->name.data, t->type, t->n_dims, t->ne, t->data);
    }
    const gguf_tensor *t = ok && x ? gguf_find_tensor(x, e->extra_tensor) : NULL;
    if (t) gguf_writer_add_tensor(w, t->name.data, t->type, t->n_dims, t->ne, t->data);
    ok = ok && (!x || t) && gguf_writer_write(w, path, &err) == INF_OK;
    TEST_CHECK(ok, "rewriting %s: %s", path, err.msg);
    gguf_writer_free(w);
    gguf_close(f);
    gguf_close(x);
    return ok;
}

/* Loading path fails with a one-line error holding want (and want2). */
static void expect_split_error(const char *what, const char *path, const char *want, const char *want2) {
    test_begin(what);
    inf_model *m = NULL;
    inf_error err = {0};
    inf_status st = inf_model_load(path, NULL, &m, &err);
    TEST_CHECK(st != INF_OK && !m, "%s: loaded", what);
    TEST_CHECK(strstr(err.msg, want) && (!want2 || strstr(err.msg, want2)) && !strchr(err.msg, '\n'),
               "%s: '%s' does not hold '%s'%s%s in one line", what, err.msg, want, want2 ? " and " : "",
               want2 ? want2 : "");
    printf("  %s: %s\n", what, err.msg);
    inf_model_free(m);
}

static void check_split_models(void) {
    test_begin("split GGUF");
    inf_synth_options o;
    tiny_options(&o);
    o.weight_type = INF_DTYPE_Q8_0;
    char whole[256], prefix[256], p1[300], p2[300], p3[300];
    snprintf(whole, sizeof whole, "%s/whole.gguf", tmpdir);
    inf_error err = {0};
    if (!TEST_CHECK(inf_synth_write(&o, whole, &err) == INF_OK, "synth: %s", err.msg)) return;
    const int32_t ids[] = {97, 11, 187, 0, 42, 300, 7, 19};
    const int n_ids = (int)(sizeof ids / sizeof ids[0]);
    int V = 0, V2 = 0;
    float *want = split_logits(whole, true, ids, n_ids, &V);
    gguf_file *src = NULL;
    if (!want || !TEST_CHECK(gguf_open(whole, GGUF_OPEN_MMAP, &src, &err) == INF_OK, "open: %s", err.msg)) {
        free(want);
        return;
    }
    /* 24 tensors (2 layers, tied): 3 shards of 10, 10 and 4; 5 shards of
     * which the first holds only metadata; one shard of all */
    static const struct { uint64_t max_tensors; bool no_tensors_first; int n_shards; } layouts[] = {
        {10, false, 3}, {6, true, 5}, {100, false, 1}};
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        snprintf(prefix, sizeof prefix, "%s/layout%zu", tmpdir, l);
        int n = 0;
        if (!TEST_CHECK(gguf_split_write(src, layouts[l].max_tensors, layouts[l].no_tensors_first, prefix, &n, &err) ==
                            INF_OK && n == layouts[l].n_shards,
                        "split into %d: %s (%d shards)", layouts[l].n_shards, err.msg, n))
            continue;
        for (int given = 1; given <= n; given += n > 1 ? n - 1 : 1) {
            shard_path(p1, sizeof p1, prefix, given, n);
            for (int mapped = 0; mapped < 2; mapped++) {
                float *got = split_logits(p1, mapped, ids, n_ids, &V2);
                TEST_CHECK(got && V2 == V && !memcmp(got, want, (size_t)V * sizeof *got),
                           "%d shards, named by shard %d, %s: logits differ from the unsplit file's", n, given,
                           mapped ? "mapped" : "read");
                free(got);
            }
        }
        /* the set read as one file is the unsplit file: its metadata
         * (split.* dropped) and tensors in order, so writing it out again
         * gives the unsplit file's bytes */
        test_begin("split GGUF: read as one file, written again");
        shard_path(p1, sizeof p1, prefix, 1, n);
        snprintf(p2, sizeof p2, "%s/rewritten.gguf", tmpdir);
        gguf_file *set = NULL;
        gguf_writer *w = gguf_writer_new();
        if (TEST_CHECK(w && gguf_open_split(p1, GGUF_OPEN_READ, NULL, NULL, &set, &err) == INF_OK, "open: %s", err.msg)) {
            for (uint64_t i = 0; i < set->n_kv; i++) gguf_writer_set_value(w, set->kv[i].key.data, &set->kv[i].value);
            for (uint64_t i = 0; i < set->n_tensors; i++) {
                const gguf_tensor *t = &set->tensors[i];
                gguf_writer_add_tensor(w, t->name.data, t->type, t->n_dims, t->ne, t->data);
            }
            /* where each tensor's data lies (the model gives back the pages
             * of the matrices it repacks by this) */
            bool owned = true;
            for (uint64_t i = 0; i < set->n_tensors; i++)
                owned = owned && gguf_data_owned(set, set->tensors[i].data, (size_t)set->tensors[i].nbytes) &&
                        !gguf_data_mapped(set, set->tensors[i].data, 1);
            TEST_CHECK(owned, "%d shards read: every tensor in a shard's buffer", n);
            size_t len_a = 0, len_b = 0;
            char *a = NULL, *b = NULL;
            TEST_CHECK(gguf_writer_write(w, p2, &err) == INF_OK && (a = test_read_file(whole, &len_a)) &&
                           (b = test_read_file(p2, &len_b)) && len_a == len_b && !memcmp(a, b, len_a),
                       "%d shards written as one file differ from the unsplit file (%zu vs %zu bytes)", n, len_b, len_a);
            free(a);
            free(b);
        }
        gguf_writer_free(w);
        gguf_close(set);
        set = NULL;
        if (TEST_CHECK(gguf_open_split(p1, GGUF_OPEN_MMAP, NULL, NULL, &set, &err) == INF_OK, "open: %s", err.msg)) {
            bool mapped = true;
            for (uint64_t i = 0; i < set->n_tensors; i++)
                mapped = mapped && gguf_data_mapped(set, set->tensors[i].data, (size_t)set->tensors[i].nbytes) &&
                         !gguf_data_owned(set, set->tensors[i].data, 1);
            TEST_CHECK(mapped, "%d shards mapped: every tensor in a shard's mapping", n);
        }
        gguf_close(set);
        test_begin("split GGUF: the tokenizer and the chat template of any shard");
        shard_path(p1, sizeof p1, prefix, n, n);
        inf_tokenizer *tok = NULL;
        TEST_CHECK(inf_tokenizer_load(p1, &tok, &err) == INF_OK && inf_tokenizer_n_vocab(tok) == 512,
                   "tokenizer of %s: %s", p1, err.msg);
        inf_tokenizer_free(tok);
        inf_chat_template *tmpl = NULL;
        TEST_CHECK(inf_chat_template_load(p1, &tmpl, &err) == INF_OK, "chat template of %s: %s", p1, err.msg);
        inf_chat_template_free(tmpl);
    }

    /* broken sets, each from a fresh 3-shard split */
    snprintf(prefix, sizeof prefix, "%s/bad", tmpdir);
    shard_path(p1, sizeof p1, prefix, 1, 3);
    shard_path(p2, sizeof p2, prefix, 2, 3);
    shard_path(p3, sizeof p3, prefix, 3, 3);
#define FRESH_SPLIT() TEST_CHECK(gguf_split_write(src, 10, false, prefix, NULL, &err) == INF_OK, "split: %s", err.msg)
    if (FRESH_SPLIT() && unlink(p3) == 0)
        expect_split_error("split GGUF: a missing shard", p1, "bad-00003-of-00003.gguf: cannot open shard 3 of 3", NULL);
    if (FRESH_SPLIT() && rewrite_shard(p2, &(shard_edit){.split_count = 4}))
        expect_split_error("split GGUF: a wrong split.count", p1, "bad-00002-of-00003.gguf: split.count is 4",
                           "name says 3 shards");
    if (FRESH_SPLIT() && rewrite_shard(p2, &(shard_edit){.extra_from = p1, .extra_tensor = "token_embd.weight"}))
        expect_split_error("split GGUF: a tensor in two shards", p3,
                           "bad-00002-of-00003.gguf: tensor 'token_embd.weight' is also in", "bad-00001-of-00003.gguf");
    if (FRESH_SPLIT() && rewrite_shard(p3, &(shard_edit){.drop_last_tensor = true}))
        expect_split_error("split GGUF: a tensor in no shard", p1, "bad-00001-of-00003.gguf: split.tensors.count is 24",
                           "3 shards hold 23 tensors");
    if (FRESH_SPLIT() && rewrite_shard(p1, &(shard_edit){.drop_key = "split.tensors.count"}))
        expect_split_error("split GGUF: no split.tensors.count", p2, "bad-00001-of-00003.gguf",
                           "missing metadata key 'split.tensors.count'");
    if (FRESH_SPLIT() && rewrite_shard(p3, &(shard_edit){.drop_key = "split.no"}))
        expect_split_error("split GGUF: a shard without split.no", p1, "bad-00003-of-00003.gguf",
                           "missing metadata key 'split.no'");
    char renamed[300];
    snprintf(renamed, sizeof renamed, "%s/renamed.gguf", tmpdir);
    if (FRESH_SPLIT() && rename(p2, renamed) == 0 && rename(p3, p2) == 0 && rename(renamed, p3) == 0) {
        expect_split_error("split GGUF: two shards swapped", p1, "bad-00002-of-00003.gguf: split.no is 2",
                           "shard 2 of 3");
        expect_split_error("split GGUF: named by a swapped shard", p2, "bad-00002-of-00003.gguf: split.no 2",
                           "its name says 2 of 3");
    }
    if (FRESH_SPLIT() && rename(p1, renamed) == 0) {
        expect_split_error("split GGUF: a shard under another name", renamed, "split.count is 3, so this is one shard",
                           "-00001-of-00003.gguf");
    }
#undef FRESH_SPLIT
    /* a whole model under a shard's name is a whole model */
    test_begin("split GGUF: a whole model named like a shard");
    snprintf(prefix, sizeof prefix, "%s/named", tmpdir);
    shard_path(p1, sizeof p1, prefix, 1, 2);
    if (TEST_CHECK(rename(whole, p1) == 0, "rename")) {
        float *got = split_logits(p1, true, ids, n_ids, &V2);
        TEST_CHECK(got && V2 == V && !memcmp(got, want, (size_t)V * sizeof *got), "logits of the renamed file");
        free(got);
    }
    gguf_close(src);
    free(want);
}

int main(void) {
    if (!(tmpdir = test_tmpdir("test-model"))) return 1;
    check_bad_models();
    check_rope_overrides();
    static const geometry geometries[] = {
        {"f32 GQA tied", 2, 64, 96, 4, 2, 16, true, INF_DTYPE_F32, INF_KV_F32, 40, 1e-4},
        {"f32 untied head", 2, 64, 96, 4, 2, 16, false, INF_DTYPE_F32, INF_KV_F32, 40, 1e-4},
        {"f32 KV heads = heads", 2, 64, 96, 4, 4, 16, true, INF_DTYPE_F32, INF_KV_F32, 40, 1e-4},
        {"f32 head_dim*heads != hidden", 2, 96, 128, 4, 2, 32, true, INF_DTYPE_F32, INF_KV_F32, 40, 1e-4},
        {"f32 320-token prompt", 2, 64, 96, 8, 2, 16, false, INF_DTYPE_F32, INF_KV_F32, 320, 1e-4},
        /* longer than one forward pass (QWEN3_UBATCH): two passes */
        {"f32 1000-token prompt", 2, 64, 96, 4, 2, 16, true, INF_DTYPE_F32, INF_KV_F32, 1000, 1e-4},
        {"f16 320-token prompt", 2, 64, 96, 4, 1, 32, true, INF_DTYPE_F16, INF_KV_F32, 320, 1e-2},
        {"bf16 untied", 2, 64, 96, 4, 2, 16, false, INF_DTYPE_BF16, INF_KV_F32, 70, 5e-2},
        /* Q8_0 re-quantizes every activation: a last-bit difference between the
         * flash and the decode attention sums can flip one int8 rounding, which
         * moves a logit by ~1e-1 (llama.cpp's own f32/f16-KV spread on tiny-a
         * Q8_0 is 0.1); f32 and bf16 above show the paths otherwise agree. */
        {"q8_0 320-token prompt", 2, 64, 96, 4, 2, 16, true, INF_DTYPE_Q8_0, INF_KV_F32, 320, 2e-1},
        /* q8_0 KV cache, f32 weights: the same as Q8_0 weights at a smaller
         * scale. The gemm (prefill) and matvec (decode) K and V rows differ in
         * the last bit, and the query's quantization follows the attention
         * of the layer below, so now and then one int8 rounding of a cached
         * row or of the query flips: measured up to 2e-2 here (the q8_0 cache
         * itself moves tiny-b's logits by ~1e-1 from the f32 cache). */
        {"f32, q8_0 KV GQA", 2, 64, 96, 4, 2, 32, true, INF_DTYPE_F32, INF_KV_Q8_0, 70, 1e-1},
        {"f32, q8_0 KV group 4, head_dim 64", 2, 64, 96, 8, 2, 64, false, INF_DTYPE_F32, INF_KV_Q8_0, 320, 1e-1},
        {"f32, q8_0 KV 1000-token prompt", 2, 64, 96, 4, 4, 32, true, INF_DTYPE_F32, INF_KV_Q8_0, 1000, 1e-1},
        /* head_dim 128, Qwen3's: q and k rotated by 128-element Hadamard
         * blocks, v and the output by 64 (head_dim 64 above: 64 and 64;
         * head_dim 32: not rotated, as llama.cpp) */
        {"f32, q8_0 KV head_dim 128", 2, 64, 96, 4, 2, 128, true, INF_DTYPE_F32, INF_KV_Q8_0, 100, 1e-1},
    };
    for (size_t i = 0; i < sizeof geometries / sizeof geometries[0]; i++)
        check_prefill_equals_decode(&geometries[i]);
    check_session_rules();
    check_embedding_rows_read();
    check_split_models();
    test_tmpdir_remove();
    return test_summary();
}

/*
 * test_golden.c — inferno's logits against llama.cpp's on the tiny models
 * (tests/data/golden, see its README): tiny-a in all four weight types and
 * tiny-b (F32, head_dim 64), three prompts each.
 *
 * F32 (the exact case): every final logit within 1e-4 of llama.cpp, the
 * top-20 at every position within 1e-4 with the same ids, and the greedy
 * continuation identical up to the first step whose margin is below 1e-2.
 * F16 / BF16 / Q8_0: llama.cpp rounds activations to the weight's dot type
 * and so do we; the budget is 1.5x llama.cpp's own spread between its
 * f32-KV and f16-KV/flash settings (the .kvf16.json files); the measured
 * agreement is printed (the scalar path lands within 1e-6 for BF16/Q8_0).
 * The GGUF block types (tiny-q in eleven types, tiny-b in two mixes with
 * llama.cpp's fallbacks; scripts/gen-quant-golden.sh) are budgeted as Q8_0,
 * with the f32 KV cache only.
 * Q8_0 KV cache (tiny-b, F32 weights, head_dim 64): against llama.cpp with
 * the same cache and flash attention in its default setting (.kvq8_0.json:
 * q, k and v rotated by 64 x 64 Hadamard blocks around the cache, the
 * attention output rotated back), whose numerics ours follow: within 1e-3,
 * where the quantized cache itself moves logits by ~0.1. Measured 2e-6 to
 * 4e-4: a last-bit difference in a sum (llama.cpp's SIMD summation orders
 * are not ours) can flip the int8 rounding of one element of a later cached
 * K or V row, a step of 1/127 of the row's largest value. The rotation
 * spreads a difference in one element over its whole block, which is the
 * likely reason the longest prompt (p3) shows such a flip on the scalar
 * path too (3.9e-4; 2e-6 before the rotation).
 *
 * tiny-y (F32, head_dim 64, qwen3.rope.scaling YaRN factor 4 over 32768,
 * scripts/gen-golden.sh): the three prompts from position 0, and p1 and p3
 * placed at positions 100000 and 131000 (llama.cpp's batch positions; ours
 * through inf_session_set_rope_offset, session path only), as exact as
 * F32: YaRN changes every pair's angle and the cos/sin scale.
 *
 * Every case runs twice: through a session (the prompt in one call with
 * every position's logits, then one decode step per greedy token) and
 * through the engine (inf_engine: the prompt and its greedy continuation
 * as one request; each position's logits as the last-position logits of
 * the prompt's prefixes, requests of one token each that reuse the
 * earlier positions from the prefix cache). The same budgets hold for
 * both.
 *
 * Set INFERNO_GOLDEN_THREADS to run with another thread count, and
 * INFERNO_GOLDEN_NO_REPACK=1 to load the weights without repacking
 * (inf_load_options.no_repack: the matvecs' file-layout paths).
 */
#include "harness.h"
#include "inferno.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_DIR "tests/data/golden/"
#define TOP_K 20

/* Budgets: F32 as the issue states. For the rounded types, a logit may
 * move by a few 1e-3 when one activation lands on the other side of an
 * f16/bf16 rounding boundary because llama.cpp's SIMD norm/RoPE/SiLU differ
 * from ours in the last float bit; the budget is llama.cpp's own spread
 * between its f32-KV and f16-KV+flash runs of the same case (computed from
 * the .kvf16.json file), times 1.5 (see run_case). */
typedef struct budget {
    const char *model; /* GOLDEN_DIR <model>.gguf */
    double f32_tol;    /* fixed tolerance; 0 = use llama.cpp's own spread */
    bool kv_q8_0;      /* has .kvq8_0.json goldens (head_dim a multiple of 32) */
    bool quantized;    /* a GGUF block type file: compared with f32 KV only (tiny-a covers f16 KV) */
} budget;

/* tiny-y also has the prompts placed far out (pN-far: YaRN's long window). */
static bool has_far_prompts(const budget *b) { return !strcmp(b->model, "tiny-y-f32"); }

static const budget budgets[] = {
    {"tiny-a-f32", 1e-4, false, false},
    {"tiny-a-f16", 0, false, false},
    {"tiny-a-bf16", 0, false, false},
    {"tiny-a-q8_0", 0, false, false},
    {"tiny-b-f32", 1e-4, true, false},
    {"tiny-y-f32", 1e-4, false, false},
    /* llama.cpp's quantizer's files (scripts/gen-quant-golden.sh), budgeted
     * as Q8_0: the same integer dots and block scales as llama.cpp, so most
     * positions land within ~2e-6; where a last-bit difference upstream
     * flips one activation's int8 rounding, that position and the later
     * ones (through the KV cache) move by up to ~0.1, within the spread */
    {"tiny-q-q4_0", 0, false, true},   {"tiny-q-q4_1", 0, false, true},
    {"tiny-q-q5_0", 0, false, true},   {"tiny-q-q5_1", 0, false, true},
    {"tiny-q-iq4_nl", 0, false, true}, {"tiny-q-q2_k", 0, false, true},
    {"tiny-q-q3_k_m", 0, false, true}, {"tiny-q-q4_k_m", 0, false, true},
    {"tiny-q-q5_k_m", 0, false, true}, {"tiny-q-q6_k", 0, false, true},
    {"tiny-q-iq4_xs", 0, false, true}, {"tiny-b-q4_k_m", 0, false, true},
    {"tiny-b-q5_k_m", 0, false, true}, {"tiny-b-q6_k", 0, false, true},
};

static int threads_from_env(void) {
    const char *t = getenv("INFERNO_GOLDEN_THREADS");
    return t ? atoi(t) : 0;
}

static cJSON *load_json(const char *path) {
    char *text = test_read_file(path, NULL);
    if (!text) return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

static int32_t *json_ids(const cJSON *arr, int *n) {
    *n = cJSON_GetArraySize(arr);
    int32_t *ids = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *ids);
    for (int i = 0; i < *n; i++) ids[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valueint;
    return ids;
}

/* Checks our row against a golden top-k list: same values within tol at
 * those ids, and our top-k holds the same ids (ignoring entries whose
 * logit is within tol of the k-th, where membership is a tie). */
static double check_top(const char *what, const float *row, int n_vocab, const cJSON *top, double tol) {
    double worst = 0;
    int k = cJSON_GetArraySize(top);
    float kth = (float)cJSON_GetObjectItem(cJSON_GetArrayItem(top, k - 1), "logit")->valuedouble;
    for (int i = 0; i < k; i++) {
        const cJSON *e = cJSON_GetArrayItem(top, i);
        int id = cJSON_GetObjectItem(e, "id")->valueint;
        double want = cJSON_GetObjectItem(e, "logit")->valuedouble;
        double d = fabs((double)row[id] - want);
        if (d > worst) worst = d;
    }
    TEST_CHECK(worst <= tol, "%s: top-%d logits differ by %.3g (tol %.3g)", what, k, worst, tol);
    /* every id that beats the golden k-th logit by more than tol must be in the golden list */
    for (int id = 0; id < n_vocab; id++) {
        if (row[id] <= kth + tol) continue;
        bool found = false;
        for (int i = 0; i < k && !found; i++)
            found = cJSON_GetObjectItem(cJSON_GetArrayItem(top, i), "id")->valueint == id;
        TEST_CHECK(found, "%s: id %d (logit %.6g) is in our top-%d but not llama.cpp's", what, id,
                   (double)row[id], k);
    }
    return worst;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* max |a - b| over the ids both top lists hold: llama.cpp's own spread */
static double top_spread(const cJSON *top_a, const cJSON *top_b) {
    double worst = 0;
    for (int i = 0; i < cJSON_GetArraySize(top_a); i++) {
        const cJSON *ea = cJSON_GetArrayItem(top_a, i);
        for (int j = 0; j < cJSON_GetArraySize(top_b); j++) {
            const cJSON *eb = cJSON_GetArrayItem(top_b, j);
            if (cJSON_GetObjectItem(ea, "id")->valueint == cJSON_GetObjectItem(eb, "id")->valueint)
                worst = fmax(worst, fabs(cJSON_GetObjectItem(ea, "logit")->valuedouble -
                                         cJSON_GetObjectItem(eb, "logit")->valuedouble));
        }
    }
    return worst;
}

/* What one path computed for a prompt of n tokens: the logits at every
 * position, and a greedy continuation (argmax, ties to the lowest id; not
 * stopping at end-of-turn tokens) with the logits each token was chosen
 * from (gen_logits[0] is the last position's). */
typedef struct produced {
    float *logits;     /* [n][n_vocab] */
    int32_t *gen;      /* [n_gen] */
    float *gen_logits; /* [n_gen][n_vocab] */
    int n_gen;
} produced;

/* The session: the prompt in one call, then one decode step per token. */
static bool produce_session(inf_model *m, const int32_t *ids, int n, int n_vocab, int pos0, produced *out) {
    inf_session *s = NULL;
    inf_error err = {0};
    bool ok = TEST_CHECK(inf_session_new(m, 256, &s, &err) == INF_OK, "session: %s", err.msg) &&
              TEST_CHECK(inf_session_set_rope_offset(s, pos0, &err) == INF_OK, "offset: %s", err.msg) &&
              TEST_CHECK(inf_session_eval(s, ids, n, INF_LOGITS_ALL, out->logits, &err) == INF_OK, "eval: %s", err.msg);
    if (ok) memcpy(out->gen_logits, out->logits + (size_t)(n - 1) * (size_t)n_vocab, (size_t)n_vocab * sizeof(float));
    for (int step = 0; ok && step < out->n_gen; step++) {
        float *row = out->gen_logits + (size_t)step * (size_t)n_vocab;
        out->gen[step] = argmax(row, n_vocab);
        if (step + 1 < out->n_gen)
            ok = TEST_CHECK(inf_session_eval(s, &out->gen[step], 1, INF_LOGITS_LAST, row + n_vocab, &err) == INF_OK,
                            "decode: %s", err.msg);
    }
    inf_session_free(s);
    return ok;
}

/* Engine events of one request: the tokens and the logits they came from. */
typedef struct engine_sink {
    int32_t *gen;
    float *gen_logits;
    int cap, n, n_vocab;
    int n_cached; /* from DONE */
    bool done;
} engine_sink;

static void sink_event(const inf_event *ev, void *user) {
    engine_sink *k = user;
    if (ev->kind == INF_EVENT_DONE) {
        k->done = true;
        k->n_cached = ev->n_cached;
        return;
    }
    if (ev->kind != INF_EVENT_TOKEN || k->n >= k->cap) return;
    k->gen[k->n] = ev->token;
    if (ev->logits) memcpy(k->gen_logits + (size_t)k->n * (size_t)k->n_vocab, ev->logits, (size_t)k->n_vocab * sizeof(float));
    k->n++;
}

/* One greedy request of `max_tokens` through the engine, run to its end. */
static bool engine_request_run(inf_engine *e, const int32_t *ids, int n, int max_tokens, engine_sink *k) {
    inf_request r;
    inf_request_default(&r);
    r.prompt = ids;
    r.n_prompt = (size_t)n;
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.ignore_eog = true;
    r.want_logits = true;
    r.on_event = sink_event;
    r.user = k;
    inf_error err = {0};
    if (!TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit: %s", err.msg)) return false;
    bool busy = true;
    for (int i = 0; busy && i < 10000; i++)
        if (!TEST_CHECK(inf_engine_step(e, &busy, &err) == INF_OK, "step: %s", err.msg)) return false;
    return TEST_CHECK(k->done && k->n == max_tokens, "the request ended with %d of %d tokens", k->n, max_tokens);
}

/* The engine: the whole prompt and its greedy continuation as one request
 * (the prompt in one chunk); then, through the prefix cache, the prompt's
 * prefixes 1..n as requests of one token each. Prefix p reuses the first
 * p - 1 positions (a partial block, copied on write) and prefills only the
 * last, whose logits are the ones the engine gives: position p - 1's. The
 * last prefix is the whole prompt again, whose logits must be bit-identical
 * to the first request's (prompt rows do not depend on the chunk sizes). */
static bool produce_engine(inf_model *m, const int32_t *ids, int n, int n_vocab, produced *out) {
    inf_engine_options eo;
    inf_engine_options_default(&eo);
    eo.n_ctx = 256;
    eo.block_size = 16;
    inf_engine *e = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine: %s", err.msg)) return false;
    engine_sink whole = {.gen = out->gen, .gen_logits = out->gen_logits, .cap = out->n_gen, .n_vocab = n_vocab};
    bool ok = engine_request_run(e, ids, n, out->n_gen, &whole);
    int32_t tok;
    for (int p = 1; ok && p <= n; p++) {
        float *row = out->logits + (size_t)(p - 1) * (size_t)n_vocab;
        engine_sink one = {.gen = &tok, .gen_logits = row, .cap = 1, .n_vocab = n_vocab};
        ok = engine_request_run(e, ids, p, 1, &one) &&
             TEST_CHECK(one.n_cached == p - 1, "prefix %d: %d tokens came from the cache", p, one.n_cached);
    }
    ok = ok && TEST_CHECK(memcmp(out->logits + (size_t)(n - 1) * (size_t)n_vocab, out->gen_logits,
                                 (size_t)n_vocab * sizeof(float)) == 0,
                          "the prompt's logits, after n - 1 cached tokens and cold, are bit-identical");
    inf_engine_free(e);
    return ok;
}

/* The greedy continuation against llama.cpp's, up to the first step whose
 * margin is below min_margin. Returns the steps compared. */
static int check_greedy(const char *what, const produced *got, int n_vocab, const cJSON *greedy, double min_margin,
                        double tol) {
    int n_gen = 0;
    int32_t *want = json_ids(cJSON_GetObjectItem(greedy, "tokens"), &n_gen);
    const cJSON *margins = cJSON_GetObjectItem(greedy, "margins");
    const cJSON *chosen = cJSON_GetObjectItem(greedy, "logits");
    int compared = 0;
    double worst = 0;
    for (int step = 0; step < n_gen && step < got->n_gen; step++) {
        if (cJSON_GetArrayItem(margins, step)->valuedouble < min_margin) break;
        const int32_t tok = got->gen[step];
        if (!TEST_CHECK(tok == want[step], "%s: greedy step %d chose %d, llama.cpp %d", what, step, tok, want[step]))
            break;
        const float *row = got->gen_logits + (size_t)step * (size_t)n_vocab;
        worst = fmax(worst, fabs((double)row[tok] - cJSON_GetArrayItem(chosen, step)->valuedouble));
        compared++;
    }
    TEST_CHECK(worst <= tol, "%s: greedy logits differ by %.3g (tol %.3g)", what, worst, tol);
    free(want);
    return compared;
}

typedef enum eval_path { PATH_SESSION, PATH_ENGINE } eval_path;

static void run_case(const budget *b, const char *prompt, inf_kv_type kv_type, eval_path path) {
    char path_buf[256], what[128], label[160];
    snprintf(what, sizeof what, "%s %s kv=%s %s", b->model, prompt, inf_kv_type_name(kv_type),
             path == PATH_ENGINE ? "engine" : "session");
    test_begin(what);
    snprintf(path_buf, sizeof path_buf, GOLDEN_DIR "%s.%s.json", b->model, prompt);
    cJSON *g = load_json(path_buf);
    snprintf(path_buf, sizeof path_buf, GOLDEN_DIR "%s.%s.kvf16.json", b->model, prompt);
    cJSON *g16 = load_json(path_buf);
    cJSON *gq8 = NULL;
    if (kv_type == INF_KV_Q8_0) {
        snprintf(path_buf, sizeof path_buf, GOLDEN_DIR "%s.%s.kvq8_0.json", b->model, prompt);
        gq8 = load_json(path_buf);
    }
    snprintf(path_buf, sizeof path_buf, GOLDEN_DIR "%s.%s.final.f32", b->model, prompt);
    size_t dump_len = 0;
    float *dump = (float *)test_read_file(path_buf, &dump_len);
    inf_model *m = NULL;
    produced got = {0};
    int32_t *ids = NULL;
    if (!TEST_CHECK(g && g16 && dump && (gq8 || kv_type != INF_KV_Q8_0), "cannot read the goldens of %s", what))
        goto done;

    /* Both KV types are compared with llama.cpp's exact run. Our f16 KV
     * cache must move the top logits by the same order as llama.cpp's f16 KV
     * moves its own: within 2.5x that spread (the two round different
     * things: llama.cpp's flash path also rounds q and the V sums to f16). */
    double spread = top_spread(cJSON_GetObjectItem(cJSON_GetObjectItem(g, "final"), "top"),
                               cJSON_GetObjectItem(cJSON_GetObjectItem(g16, "final"), "top"));
    /* rounded types: 1.5x, since one flipped activation rounding alone moves
     * logits by about the spread, and SIMD summation orders (ours and
     * llama.cpp's) decide which roundings flip */
    double tol = b->f32_tol > 0 ? b->f32_tol : 1.5 * spread;
    if (kv_type == INF_KV_F16) tol = 2.5 * spread;
    /* Q8_0 KV: llama.cpp's run with the same cache is the golden (F32
     * weights, so it is as exact a case as F32 KV). */
    const cJSON *want = gq8 ? gq8 : g;
    if (gq8) tol = 1e-3;

    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = threads_from_env();
    opt.no_repack = getenv("INFERNO_GOLDEN_NO_REPACK") != NULL;
    opt.kv_type = kv_type;
    inf_error err = {0};
    snprintf(path_buf, sizeof path_buf, GOLDEN_DIR "%s.gguf", b->model);
    if (!TEST_CHECK(inf_model_load(path_buf, &opt, &m, &err) == INF_OK, "load %s: %s", path_buf, err.msg)) goto done;
    inf_model_info info;
    inf_model_get_info(m, &info);
    /* BF16 prompt rows on the AMX tiles: 2x. The tile unit rounds its dot
     * products its own way (no order of f32 FMAs reproduces it: measured
     * against VDPBF16PS chains, either pair order, and per-step exact
     * sums), one more source of flipped activation roundings; every
     * prompt row runs on the tiles however short the prompt (batch
     * invariance, matmul_amx.c), and on p1 (14 tokens) position 5 lands at
     * 1.56x the spread (avx512: 0.85x, avx2: 1.08x, ref: 5e-5x). */
    if (b->f32_tol == 0 && kv_type == INF_KV_F32 && info.weight_type == INF_DTYPE_BF16 &&
        strcmp(info.isa, "avx512+amx") == 0)
        tol = 2 * spread;
    const double min_margin = b->f32_tol > 0 && kv_type != INF_KV_F16 ? 1e-2 : 2 * tol;
    int n_vocab = info.n_vocab;
    if (!TEST_CHECK(dump_len == (size_t)n_vocab * sizeof(float), "final.f32 has %zu bytes", dump_len)) goto done;

    int n = 0;
    ids = json_ids(cJSON_GetObjectItem(want, "prompt_tokens"), &n);
    got.n_gen = cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(want, "greedy"), "tokens"));
    got.logits = malloc((size_t)n * (size_t)n_vocab * sizeof(float));
    got.gen = malloc((size_t)got.n_gen * sizeof *got.gen);
    got.gen_logits = malloc((size_t)got.n_gen * (size_t)n_vocab * sizeof(float));
    const cJSON *pos0 = cJSON_GetObjectItem(want, "pos0");
    if (!(path == PATH_ENGINE ? produce_engine(m, ids, n, n_vocab, &got)
                              : produce_session(m, ids, n, n_vocab, pos0 ? pos0->valueint : 0, &got)))
        goto done;
    float *final = got.logits + (size_t)(n - 1) * (size_t)n_vocab;
    double worst_all = 0, worst_pos = 0;
    for (int i = 0; i < n_vocab; i++) worst_all = fmax(worst_all, fabs((double)final[i] - dump[i]));
    if (kv_type == INF_KV_F32) /* every logit, not just the top */
        TEST_CHECK(worst_all <= tol, "%s: final logits differ by up to %.3g (tol %.3g)", what, worst_all, tol);
    const cJSON *positions = cJSON_GetObjectItem(want, "positions"); /* the exact run's only */
    for (int p = 0; p < cJSON_GetArraySize(positions); p++) {
        const cJSON *pos = cJSON_GetArrayItem(positions, p);
        int at = cJSON_GetObjectItem(pos, "pos")->valueint;
        snprintf(label, sizeof label, "%s pos %d", what, at);
        worst_pos = fmax(worst_pos, check_top(label, got.logits + (size_t)at * (size_t)n_vocab, n_vocab,
                                              cJSON_GetObjectItem(pos, "top"), tol));
    }
    snprintf(label, sizeof label, "%s final", what);
    double worst_top = check_top(label, final, n_vocab,
                                 cJSON_GetObjectItem(cJSON_GetObjectItem(want, "final"), "top"), tol);
    int steps = check_greedy(what, &got, n_vocab, cJSON_GetObjectItem(want, "greedy"), min_margin, tol);
    printf("  %-37s tol %.1e | final: all %.2e top-20 %.2e | positions top-20 %.2e | greedy %2d steps\n",
           what, tol, worst_all, worst_top, worst_pos, steps);
done:
    free(got.logits);
    free(got.gen);
    free(got.gen_logits);
    free(ids);
    inf_model_free(m);
    cJSON_Delete(g);
    cJSON_Delete(g16);
    cJSON_Delete(gq8);
    free(dump);
}

int main(void) {
    static const char *prompts[] = {"p1", "p2", "p3", "p1-far", "p3-far"};
    static const inf_kv_type kv_types[] = {INF_KV_F32, INF_KV_F16, INF_KV_Q8_0};
    for (int path = PATH_SESSION; path <= PATH_ENGINE; path++)
        for (size_t k = 0; k < 3; k++)
            for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
                /* the far prompts need the session's RoPE offset */
                const size_t n_prompts = has_far_prompts(&budgets[b]) && path == PATH_SESSION ? 5 : 3;
                for (size_t p = 0; p < n_prompts && (kv_types[k] != INF_KV_Q8_0 || budgets[b].kv_q8_0) &&
                                   (kv_types[k] != INF_KV_F16 || !budgets[b].quantized);
                     p++)
                    run_case(&budgets[b], prompts[p], kv_types[k], (eval_path)path);
            }
    return test_summary();
}

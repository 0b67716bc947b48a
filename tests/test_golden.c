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
 * Set INFERNO_GOLDEN_THREADS to run with another thread count.
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

static const budget budgets[] = {
    {"tiny-a-f32", 1e-4, false, false},
    {"tiny-a-f16", 0, false, false},
    {"tiny-a-bf16", 0, false, false},
    {"tiny-a-q8_0", 0, false, false},
    {"tiny-b-f32", 1e-4, true, false},
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

/* Greedy continuation from `row` (the prompt's final logits), one decode
 * step at a time, against llama.cpp's, up to the first step whose margin
 * is below min_margin. Returns the steps compared. */
static int check_greedy(const char *what, inf_session *s, float *row, int n_vocab, const cJSON *greedy,
                        double min_margin, double tol) {
    int n_gen = 0;
    int32_t *want = json_ids(cJSON_GetObjectItem(greedy, "tokens"), &n_gen);
    const cJSON *margins = cJSON_GetObjectItem(greedy, "margins");
    const cJSON *chosen = cJSON_GetObjectItem(greedy, "logits");
    int compared = 0;
    double worst = 0;
    inf_error err = {0};
    for (int step = 0; step < n_gen; step++) {
        if (cJSON_GetArrayItem(margins, step)->valuedouble < min_margin) break;
        int32_t tok = argmax(row, n_vocab);
        if (!TEST_CHECK(tok == want[step], "%s: greedy step %d chose %d, llama.cpp %d", what, step, tok,
                        want[step]))
            break;
        worst = fmax(worst, fabs((double)row[tok] - cJSON_GetArrayItem(chosen, step)->valuedouble));
        compared++;
        if (!TEST_CHECK(inf_session_eval(s, &tok, 1, INF_LOGITS_LAST, row, &err) == INF_OK, "decode: %s",
                        err.msg))
            break;
    }
    TEST_CHECK(worst <= tol, "%s: greedy logits differ by %.3g (tol %.3g)", what, worst, tol);
    free(want);
    return compared;
}

static void run_case(const budget *b, const char *prompt, inf_kv_type kv_type) {
    char path[256], what[128], label[160];
    snprintf(what, sizeof what, "%s %s kv=%s", b->model, prompt, inf_kv_type_name(kv_type));
    test_begin(what);
    snprintf(path, sizeof path, GOLDEN_DIR "%s.%s.json", b->model, prompt);
    cJSON *g = load_json(path);
    snprintf(path, sizeof path, GOLDEN_DIR "%s.%s.kvf16.json", b->model, prompt);
    cJSON *g16 = load_json(path);
    cJSON *gq8 = NULL;
    if (kv_type == INF_KV_Q8_0) {
        snprintf(path, sizeof path, GOLDEN_DIR "%s.%s.kvq8_0.json", b->model, prompt);
        gq8 = load_json(path);
    }
    snprintf(path, sizeof path, GOLDEN_DIR "%s.%s.final.f32", b->model, prompt);
    size_t dump_len = 0;
    float *dump = (float *)test_read_file(path, &dump_len);
    inf_model *m = NULL;
    inf_session *s = NULL;
    float *logits = NULL;
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
    double min_margin = b->f32_tol > 0 && kv_type != INF_KV_F16 ? 1e-2 : 2 * tol;

    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = threads_from_env();
    opt.kv_type = kv_type;
    inf_error err = {0};
    snprintf(path, sizeof path, GOLDEN_DIR "%s.gguf", b->model);
    if (!TEST_CHECK(inf_model_load(path, &opt, &m, &err) == INF_OK, "load %s: %s", path, err.msg)) goto done;
    inf_model_info info;
    inf_model_get_info(m, &info);
    int n_vocab = info.n_vocab;
    if (!TEST_CHECK(dump_len == (size_t)n_vocab * sizeof(float), "final.f32 has %zu bytes", dump_len)) goto done;

    int n = 0;
    ids = json_ids(cJSON_GetObjectItem(want, "prompt_tokens"), &n);
    logits = malloc((size_t)n * (size_t)n_vocab * sizeof(float));
    if (!TEST_CHECK(inf_session_new(m, 256, &s, &err) == INF_OK, "session: %s", err.msg) ||
        !TEST_CHECK(inf_session_eval(s, ids, n, INF_LOGITS_ALL, logits, &err) == INF_OK, "eval: %s", err.msg))
        goto done;
    float *final = logits + (size_t)(n - 1) * (size_t)n_vocab;
    double worst_all = 0, worst_pos = 0;
    for (int i = 0; i < n_vocab; i++) worst_all = fmax(worst_all, fabs((double)final[i] - dump[i]));
    if (kv_type == INF_KV_F32) /* every logit, not just the top */
        TEST_CHECK(worst_all <= tol, "%s: final logits differ by up to %.3g (tol %.3g)", what, worst_all, tol);
    const cJSON *positions = cJSON_GetObjectItem(want, "positions"); /* the exact run's only */
    for (int p = 0; p < cJSON_GetArraySize(positions); p++) {
        const cJSON *pos = cJSON_GetArrayItem(positions, p);
        int at = cJSON_GetObjectItem(pos, "pos")->valueint;
        snprintf(label, sizeof label, "%s pos %d", what, at);
        worst_pos = fmax(worst_pos, check_top(label, logits + (size_t)at * (size_t)n_vocab, n_vocab,
                                              cJSON_GetObjectItem(pos, "top"), tol));
    }
    snprintf(label, sizeof label, "%s final", what);
    double worst_top = check_top(label, final, n_vocab,
                                 cJSON_GetObjectItem(cJSON_GetObjectItem(want, "final"), "top"), tol);
    int steps = check_greedy(what, s, final, n_vocab, cJSON_GetObjectItem(want, "greedy"), min_margin, tol);
    printf("  %-29s tol %.1e | final: all %.2e top-20 %.2e | positions top-20 %.2e | greedy %2d steps\n",
           what, tol, worst_all, worst_top, worst_pos, steps);
done:
    free(logits);
    free(ids);
    inf_session_free(s);
    inf_model_free(m);
    cJSON_Delete(g);
    cJSON_Delete(g16);
    cJSON_Delete(gq8);
    free(dump);
}

int main(void) {
    static const char *prompts[] = {"p1", "p2", "p3"};
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
        for (size_t p = 0; p < 3; p++) run_case(&budgets[b], prompts[p], INF_KV_F32);
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
        for (size_t p = 0; p < 3 && !budgets[b].quantized; p++) run_case(&budgets[b], prompts[p], INF_KV_F16);
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
        for (size_t p = 0; p < 3 && budgets[b].kv_q8_0; p++) run_case(&budgets[b], prompts[p], INF_KV_Q8_0);
    return test_summary();
}

/*
 * test_sampler.c — the sampler, the stop-string matcher and the sampling
 * defaults.
 *
 *   filters      each filter alone and the whole chain, checked exactly
 *                (1e-6) through inf_sampler_probs against distributions
 *                computed by hand in the comments from the logits;
 *   draws        200k seeded draws match inf_sampler_probs within 5 standard
 *                errors per token (deterministic: fixed seeds);
 *   seeds        the same seed gives the same stream, another seed another;
 *   penalties    repeat / frequency / presence over the window, reset;
 *   stops        stop strings split across pushes anywhere, held text never
 *                released on a match, released by flush otherwise;
 *   utf-8        characters split across tokens come out whole from the
 *                streaming detokenizer, also through the stop matcher;
 *   defaults     Qwen3's values per mode, general.sampling.* keys in a GGUF,
 *                a generation_config.json.
 */
#include "harness.h"

#include "inferno.h"
#include "io/gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKENIZER "data/qwen3-tokenizer/tokenizer.json"

static const char *tmpdir;

static inf_sampler *make(int n_vocab, const inf_sampler_params *p) {
    inf_sampler *s = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(inf_sampler_new(n_vocab, p, &s, &err) == INF_OK, "inf_sampler_new: %s", err.msg)) exit(1);
    return s;
}

/* probs of the chain for these logits equal want (n values) within 1e-6 */
static void expect_probs(const char *what, const inf_sampler_params *p, const float *logits, const double *want,
                         int n) {
    inf_sampler *s = make(n, p);
    float got[64];
    inf_sampler_probs(s, logits, got);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        sum += got[i];
        TEST_CHECK(fabs(got[i] - want[i]) <= 1e-6, "%s: p[%d] = %.9f, expected %.9f", what, i, got[i], want[i]);
    }
    TEST_CHECK(fabs(sum - 1) <= 1e-6, "%s: probabilities sum to %.9f", what, sum);
    inf_sampler_free(s);
}

/* logits = ln(p): the softmax at temperature 1 gives p back */
static void log_of(const double *p, float *logits, int n) {
    for (int i = 0; i < n; i++) logits[i] = (float)log(p[i]);
}

static void test_filters(void) {
    inf_sampler_params p;
    const double base[5] = {0.35, 0.25, 0.2, 0.12, 0.08};
    float lg[5];
    log_of(base, lg, 5);

    test_begin("greedy");
    inf_sampler_params_default(&p);
    p.temperature = 0;
    const float tie[4] = {1, 3, 3, 2};
    expect_probs("greedy picks the max, tie to the lower id", &p, tie, (double[]){0, 1, 0, 0}, 4);
    inf_sampler *s = make(4, &p);
    TEST_CHECK(inf_sampler_sample(s, tie) == 1, "greedy sample");
    const float with_nan[4] = {NAN, -1, -2, -3};
    TEST_CHECK(inf_sampler_sample(s, with_nan) == 1, "NaN counts as -inf");
    inf_sampler_free(s);

    test_begin("temperature");
    inf_sampler_params_default(&p);
    expect_probs("T=1 is the softmax", &p, lg, base, 5);
    p.temperature = 0.5f; /* p^2 / sum p^2 */
    double sq[5], sum_sq = 0;
    for (int i = 0; i < 5; i++) sum_sq += (sq[i] = base[i] * base[i]);
    for (int i = 0; i < 5; i++) sq[i] /= sum_sq;
    expect_probs("T=0.5 squares the probabilities", &p, lg, sq, 5);
    p.temperature = 2.0f; /* sqrt(p) / sum sqrt(p) */
    double rt[5], sum_rt = 0;
    for (int i = 0; i < 5; i++) sum_rt += (rt[i] = sqrt(base[i]));
    for (int i = 0; i < 5; i++) rt[i] /= sum_rt;
    expect_probs("T=2 takes square roots", &p, lg, rt, 5);

    test_begin("top-k");
    inf_sampler_params_default(&p);
    p.top_k = 2; /* 0.35 and 0.25, renormalized over 0.6 */
    expect_probs("k=2", &p, lg, (double[]){0.35 / 0.6, 0.25 / 0.6, 0, 0, 0}, 5);
    p.top_k = 5;
    expect_probs("k = vocabulary is off", &p, lg, base, 5);
    p.top_k = 2;
    const float flat[4] = {2, 2, 2, 1};
    expect_probs("k=2 among ties keeps the lower ids", &p, flat, (double[]){0.5, 0.5, 0, 0}, 4);

    test_begin("top-p");
    inf_sampler_params_default(&p);
    p.top_p = 0.55f; /* 0.35 + 0.25 = 0.6 >= 0.55 */
    expect_probs("p=0.55", &p, lg, (double[]){0.35 / 0.6, 0.25 / 0.6, 0, 0, 0}, 5);
    p.top_p = 0.7f; /* 0.8 */
    expect_probs("p=0.7", &p, lg, (double[]){0.35 / 0.8, 0.25 / 0.8, 0.2 / 0.8, 0, 0}, 5);
    p.top_p = 0.0f;
    expect_probs("p=0 keeps one", &p, lg, (double[]){1, 0, 0, 0, 0}, 5);
    p.top_p = 0.3f;
    expect_probs("p below the top token keeps one", &p, lg, (double[]){1, 0, 0, 0, 0}, 5);

    test_begin("min-p");
    inf_sampler_params_default(&p);
    p.min_p = 0.5f; /* threshold 0.175: keeps 0.35, 0.25, 0.2 */
    expect_probs("min_p=0.5", &p, lg, (double[]){0.35 / 0.8, 0.25 / 0.8, 0.2 / 0.8, 0, 0}, 5);
    p.min_p = 0.3f; /* 0.105: also 0.12 */
    expect_probs("min_p=0.3", &p, lg, (double[]){0.35 / 0.92, 0.25 / 0.92, 0.2 / 0.92, 0.12 / 0.92, 0}, 5);
    p.min_p = 1.0f;
    expect_probs("min_p=1 keeps the max", &p, lg, (double[]){1, 0, 0, 0, 0}, 5);

    test_begin("logit bias");
    inf_sampler_params_default(&p);
    inf_logit_bias ban[2] = {{0, -INFINITY}, {4, (float)log(2.0)}}; /* ban 0.35, double 0.08 */
    p.logit_bias = ban;
    p.n_logit_bias = 2;
    expect_probs("ban and boost", &p, lg, (double[]){0, 0.25 / 0.73, 0.2 / 0.73, 0.12 / 0.73, 0.16 / 0.73}, 5);
    p.temperature = 0;
    expect_probs("greedy sees the bias", &p, lg, (double[]){0, 1, 0, 0, 0}, 5);

    test_begin("the whole chain, in order");
    /* top-k 4: 0.35 0.25 0.2 0.12 (sum 0.92); top-p 0.6 over those:
     * 0.35/0.92 = 0.380 < 0.6, + 0.25/0.92 = 0.652 >= 0.6: keeps 2;
     * min-p 0.7: 0.25/0.35 = 0.714 >= 0.7 keeps both; T = 0.5: squares.
     * Were min-p after temperature, the ratio would be 0.714^2 = 0.51 and
     * token 1 would go: this pins the order. */
    inf_sampler_params_default(&p);
    p.top_k = 4;
    p.top_p = 0.6f;
    p.min_p = 0.7f;
    p.temperature = 0.5f;
    double a = 0.35 * 0.35, b = 0.25 * 0.25;
    expect_probs("k4 p0.6 min0.7 T0.5", &p, lg, (double[]){a / (a + b), b / (a + b), 0, 0, 0}, 5);
    p.min_p = 0.72f; /* 0.714 < 0.72 */
    expect_probs("min-p 0.72 drops token 1", &p, lg, (double[]){1, 0, 0, 0, 0}, 5);
    /* top-p after top-k renormalizes: 0.35/0.92 + 0.25/0.92 = 0.652 >= 0.62,
     * while over the full vocabulary 0.35 + 0.25 = 0.6 < 0.62 */
    p.min_p = 0;
    p.top_p = 0.62f;
    p.temperature = 1;
    expect_probs("top-p after top-k", &p, lg, (double[]){0.35 / 0.6, 0.25 / 0.6, 0, 0, 0}, 5);
    /* bias then penalties then top-k: bias 0.08 up past all others */
    inf_sampler_params_default(&p);
    inf_logit_bias up = {4, 3.0f};
    p.logit_bias = &up;
    p.n_logit_bias = 1;
    p.top_k = 1;
    expect_probs("bias before top-k", &p, lg, (double[]){0, 0, 0, 0, 1}, 5);

    test_begin("top-p over a large vocabulary");
    /* 5000 tokens, logits -i/400: the cut lies past the first 256 sorted */
    enum { N = 5000 };
    float *big = malloc(N * sizeof *big), *got = malloc(N * sizeof *got);
    double norm = 0;
    for (int i = 0; i < N; i++) norm += exp(-(double)i / 400);
    for (int i = 0; i < N; i++) big[(i * 7919) % N] = -(float)i / 400; /* shuffled order */
    inf_sampler_params_default(&p);
    p.top_p = 0.9f;
    s = make(N, &p);
    inf_sampler_probs(s, big, got);
    int expect_keep = 0;
    double cum = 0;
    while (cum < 0.9) cum += exp(-(double)expect_keep++ / 400) / norm;
    int kept = 0;
    double max_err = 0;
    for (int i = 0; i < N; i++) {
        int rank = -1;
        for (int r = 0; r < N; r++)
            if ((r * 7919) % N == i) { rank = r; break; }
        double want = rank < expect_keep ? exp(-(double)rank / 400) / (norm * cum) : 0;
        kept += got[i] > 0;
        max_err = fmax(max_err, fabs(got[i] - want));
    }
    TEST_CHECK(expect_keep > 256 && kept == expect_keep, "kept %d tokens, expected %d", kept, expect_keep);
    TEST_CHECK(max_err < 1e-7, "largest probability error %g", max_err);
    inf_sampler_free(s);
    free(big);
    free(got);
}

/* cand ranks: higher logit (NaN lowest, as -inf), then lower id */
static const float *rank_logits;
static int rank_cmp(const void *a, const void *b) {
    const int i = *(const int *)a, j = *(const int *)b;
    const float x = isnan(rank_logits[i]) ? -INFINITY : rank_logits[i];
    const float y = isnan(rank_logits[j]) ? -INFINITY : rank_logits[j];
    if (x != y) return x > y ? -1 : 1;
    return i - j;
}

/* Greedy and top-k over a Qwen3-sized vocabulary against a full sort:
 * logits in few distinct values (ties everywhere), NaNs and -inf among
 * them, the best value repeated far apart; with and without a bias (the
 * samplers read the logits directly when nothing adjusts them). */
static void test_large_vocabulary(void) {
    test_begin("greedy and top-k over 151936 logits, against a full sort");
    enum { V = 151936 };
    float *lg = malloc(V * sizeof *lg), *got = malloc(V * sizeof *got);
    int *order = malloc(V * sizeof *order);
    uint64_t r = 7;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < V; i++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            const unsigned u = (unsigned)(r >> 33);
            lg[i] = u % 97 == 0 ? NAN : u % 89 == 0 ? -INFINITY : (float)(u % 50) * 0.25f - 6.0f;
        }
        if (round >= 3) lg[V - 1 - 1000 * round] = 7.0f, lg[V / 3 + round] = 7.0f; /* the best twice */
        if (round == 5) for (int i = 0; i < V; i++) lg[i] = NAN; /* nothing valid: id 0 */
        for (int i = 0; i < V; i++) order[i] = i;
        rank_logits = lg;
        qsort(order, V, sizeof *order, rank_cmp);
        for (int biased = 0; biased < 2; biased++) {
            const inf_logit_bias none = {.id = 0, .bias = 0.0f}; /* adjusts nothing, but takes the copy */
            inf_sampler_params p;
            inf_sampler_params_default(&p);
            p.logit_bias = biased ? &none : NULL;
            p.n_logit_bias = biased ? 1 : 0;
            p.temperature = 0;
            inf_sampler *s = make(V, &p);
            const int32_t best = inf_sampler_sample(s, lg);
            TEST_CHECK(best == order[0], "round %d bias %d: greedy picked %d, the first best is %d", round, biased,
                       best, order[0]);
            inf_sampler_free(s);
            static const int ks[] = {1, 20, 40, 1000};
            for (size_t k = 0; k < sizeof ks / sizeof *ks; k++) {
                p.temperature = 1;
                p.top_k = ks[k];
                p.top_p = 1;
                p.min_p = 0;
                s = make(V, &p);
                inf_sampler_probs(s, lg, got);
                /* the k first in rank order, by their softmax; nothing else */
                const double max = isnan(lg[order[0]]) ? -INFINITY : lg[order[0]];
                double sum = 0, err = 0;
                for (int i = 0; i < ks[k]; i++)
                    if (!isnan(lg[order[i]])) sum += exp(lg[order[i]] - max);
                for (int i = 0; i < V && max > -INFINITY; i++) {
                    const double want = i < ks[k] && !isnan(lg[order[i]]) ? exp(lg[order[i]] - max) / sum : 0;
                    err = fmax(err, fabs(got[order[i]] - want));
                }
                if (max == -INFINITY) err = fabs(got[0] - 1); /* nothing valid: the first id */
                TEST_CHECK(err <= 1e-6, "round %d bias %d top-k %d: largest probability error %g", round, biased,
                           ks[k], err);
                inf_sampler_free(s);
            }
            /* top-p 0.5 and 0.9 with top-k off: most of this flat vocabulary,
             * past the first 256 sorted (the radix sort's path) */
            static const float top_ps[] = {0.5f, 0.9f};
            for (size_t t = 0; t < sizeof top_ps / sizeof *top_ps && biased == 0; t++) {
                p.temperature = 1;
                p.top_k = 0;
                p.top_p = top_ps[t];
                p.min_p = 0;
                s = make(V, &p);
                inf_sampler_probs(s, lg, got);
                const double max = isnan(lg[order[0]]) ? -INFINITY : lg[order[0]];
                double all = 0, cum = 0, err = 0;
                int keep = 0;
                for (int i = 0; i < V; i++)
                    if (!isnan(lg[i])) all += exp(lg[i] - max);
                while (max > -INFINITY && keep < V && cum < top_ps[t]) cum += exp(lg[order[keep++]] - max) / all;
                double kept_sum = 0;
                for (int i = 0; i < keep; i++) kept_sum += exp(lg[order[i]] - max);
                int kept = 0;
                for (int i = 0; i < V && max > -INFINITY; i++) {
                    const double want = i < keep ? exp(lg[order[i]] - max) / kept_sum : 0;
                    err = fmax(err, fabs(got[order[i]] - want));
                    kept += got[order[i]] > 0;
                }
                TEST_CHECK(max == -INFINITY || (keep > 256 && kept == keep && err <= 1e-7),
                           "round %d top-p %.1f: kept %d of %d expected, largest probability error %g", round,
                           (double)top_ps[t], kept, keep, err);
                inf_sampler_free(s);
            }
        }
    }
    free(lg);
    free(got);
    free(order);
}

static void test_draws(void) {
    test_begin("draws follow the distribution");
    const double base[5] = {0.35, 0.25, 0.2, 0.12, 0.08};
    float lg[5], probs[5];
    log_of(base, lg, 5);
    inf_sampler_params p;
    inf_sampler_params_default(&p);
    p.top_k = 4;
    p.temperature = 0.8f;
    p.seed = 12345;
    inf_sampler *s = make(5, &p);
    inf_sampler_probs(s, lg, probs);
    enum { DRAWS = 200000 };
    long count[5] = {0};
    for (int i = 0; i < DRAWS; i++) count[inf_sampler_sample(s, lg)]++;
    for (int i = 0; i < 5; i++) {
        double freq = (double)count[i] / DRAWS, sd = sqrt(probs[i] * (1 - probs[i]) / DRAWS);
        TEST_CHECK(fabs(freq - probs[i]) <= 5 * sd + 1e-12, "token %d: frequency %.5f, probability %.5f (sd %.5f)",
                   i, freq, probs[i], sd);
    }
    TEST_CHECK(count[4] == 0, "a filtered token was drawn %ld times", count[4]);
    inf_sampler_free(s);

    test_begin("seeds");
    int32_t run[3][256];
    uint64_t seeds[3] = {7, 7, 8};
    for (int r = 0; r < 3; r++) {
        p.seed = seeds[r];
        s = make(5, &p);
        for (int i = 0; i < 256; i++) run[r][i] = inf_sampler_sample(s, lg);
        inf_sampler_free(s);
    }
    TEST_CHECK(!memcmp(run[0], run[1], sizeof run[0]), "the same seed gave different tokens");
    TEST_CHECK(memcmp(run[0], run[2], sizeof run[0]) != 0, "seeds 7 and 8 gave the same 256 tokens");
    /* a fresh sampler with the same seed starts the same stream again */
    int32_t first[8];
    p.seed = 7;
    s = make(5, &p);
    for (int i = 0; i < 8; i++) first[i] = inf_sampler_sample(s, lg);
    inf_sampler_reset(s);
    int32_t after_reset = inf_sampler_sample(s, lg);
    inf_sampler_free(s);
    TEST_CHECK(!memcmp(first, run[0], sizeof first), "a fresh sampler with seed 7 repeats the stream");
    TEST_CHECK(after_reset == run[0][8], "reset keeps the random stream going");
}

static void test_penalties(void) {
    test_begin("penalties");
    inf_sampler_params p;
    inf_sampler_params_default(&p);
    p.repeat_penalty = 2.0f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    p.penalty_last_n = 3;
    const float lg[4] = {2, 2, -1, 0};
    inf_sampler *s = make(4, &p);
    inf_sampler_accept(s, 3); /* pushed out of the window of 3 below */
    inf_sampler_accept(s, 1);
    inf_sampler_accept(s, 1);
    inf_sampler_accept(s, 2);
    inf_sampler_accept(s, 99); /* outside the vocabulary: ignored */
    /* id 1 (count 2): 2 / 2 - 2 * 0.5 - 0.25 = -0.25
     * id 2 (count 1): -1 * 2 - 0.5 - 0.25 = -2.75; ids 0 and 3 untouched */
    float got[4];
    inf_sampler_probs(s, lg, got);
    double want[4] = {exp(2), exp(-0.25), exp(-2.75), exp(0)}, z = want[0] + want[1] + want[2] + want[3];
    for (int i = 0; i < 4; i++)
        TEST_CHECK(fabs(got[i] - want[i] / z) < 1e-6, "p[%d] = %.7f, expected %.7f", i, got[i], want[i] / z);
    inf_sampler_reset(s);
    inf_sampler_probs(s, lg, got);
    double z0 = 2 * exp(2) + exp(-1) + 1;
    TEST_CHECK(fabs(got[1] - exp(2) / z0) < 1e-6, "reset forgets the history: p[1] = %.7f", got[1]);
    inf_sampler_free(s);

    /* greedy sees penalties: 1 is repeated, so 0 wins even though 1 ties it */
    p.temperature = 0;
    p.frequency_penalty = p.presence_penalty = 0;
    const float tie[3] = {1, 1, 0.5f};
    s = make(3, &p);
    inf_sampler_accept(s, 0);
    TEST_CHECK(inf_sampler_sample(s, tie) == 1, "greedy after a penalty on 0");
    inf_sampler_free(s);
}

static void test_invalid(void) {
    test_begin("parameter checks");
    inf_sampler_params p;
    inf_sampler *s = NULL;
    inf_error err = {0};
#define BAD(what, stmt)                                                                                  \
    do {                                                                                                 \
        inf_sampler_params_default(&p);                                                                  \
        stmt;                                                                                            \
        TEST_CHECK(inf_sampler_new(10, &p, &s, &err) == INF_ERR_INVALID && !s, "%s accepted", what);     \
    } while (0)
    BAD("temperature -1", p.temperature = -1);
    BAD("temperature NaN", p.temperature = NAN);
    BAD("top_k -1", p.top_k = -1);
    BAD("top_p 1.5", p.top_p = 1.5f);
    BAD("min_p -0.1", p.min_p = -0.1f);
    BAD("repeat_penalty 0", p.repeat_penalty = 0);
    BAD("penalty_last_n -1", p.penalty_last_n = -1);
    inf_logit_bias b = {10, 1};
    BAD("bias id 10 of 10", (p.logit_bias = &b, p.n_logit_bias = 1));
    inf_logit_bias pinf = {1, INFINITY};
    BAD("bias +inf", (p.logit_bias = &pinf, p.n_logit_bias = 1));
#undef BAD
    TEST_CHECK(strstr(err.msg, "logit bias") != NULL, "message names the field: %s", err.msg);
}

/* concatenated released text of pushing pieces, and whether it stopped */
static void stop_case(const char *what, const char *const *stops, size_t n_stops, const char *const *pieces,
                      const char *want, bool want_stop) {
    inf_stop_matcher *m = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(inf_stop_matcher_new(stops, n_stops, &m, &err) == INF_OK, "%s: %s", what, err.msg)) return;
    char got[256] = "";
    size_t n_got = 0;
    bool stopped = false;
    for (size_t i = 0; pieces[i]; i++) {
        const char *out;
        size_t n;
        bool st;
        TEST_CHECK(inf_stop_matcher_push(m, pieces[i], strlen(pieces[i]), &out, &n, &st, &err) == INF_OK, "push");
        memcpy(got + n_got, out, n);
        n_got += n;
        if (stopped) TEST_CHECK(n == 0, "%s: released text after the stop", what);
        stopped = st;
    }
    if (!stopped) {
        const char *out;
        size_t n;
        inf_stop_matcher_flush(m, &out, &n);
        memcpy(got + n_got, out, n);
        n_got += n;
    }
    got[n_got] = 0;
    TEST_CHECK(!strcmp(got, want) && stopped == want_stop, "%s: released '%s' (stopped %d), expected '%s' (%d)",
               what, got, stopped, want, want_stop);
    inf_stop_matcher_free(m);
}

static void test_stops(void) {
    test_begin("stop strings");
    const char *end[] = {"END"};
    stop_case("split 1+1+1", end, 1, (const char *[]){"foo E", "N", "D bar", NULL}, "foo ", true);
    stop_case("whole in one piece", end, 1, (const char *[]){"xENDy", NULL}, "x", true);
    stop_case("a false start is released", end, 1, (const char *[]){"a E", "Nx", "D", NULL}, "a ENxD", false);
    stop_case("held at the end is flushed", end, 1, (const char *[]){"abc E", "N", NULL}, "abc EN", false);
    stop_case("no stops releases all", NULL, 0, (const char *[]){"a", "END", NULL}, "aEND", false);
    const char *aab[] = {"aab"};
    stop_case("overlapping prefix aaab", aab, 1, (const char *[]){"a", "a", "a", "b", NULL}, "a", true);
    const char *two[] = {"bcd", "abc"};
    stop_case("earliest match wins", two, 2, (const char *[]){"xab", "cd", NULL}, "x", true);
    const char *nested[] = {"long stop", "long"};
    stop_case("shortest at the same start", nested, 2, (const char *[]){"so lo", "ng stop", NULL}, "so ", true);
    const char *utf[] = {"é!"};
    stop_case("multibyte stop", utf, 1, (const char *[]){"café", "!x", NULL}, "caf", true);
    stop_case("multibyte false start", utf, 1, (const char *[]){"café", " ok", NULL}, "café ok", false);

    inf_stop_matcher *m = NULL;
    inf_error err = {0};
    const char *empty[] = {"ok", ""};
    TEST_CHECK(inf_stop_matcher_new(empty, 2, &m, &err) == INF_ERR_INVALID && !m, "an empty stop string is refused");

    /* matched index and reset */
    const char *stops[] = {"<stop>", "###"};
    TEST_CHECK(inf_stop_matcher_new(stops, 2, &m, &err) == INF_OK, "new");
    const char *out;
    size_t n;
    bool stopped;
    inf_stop_matcher_push(m, "text ##", 7, &out, &n, &stopped, &err);
    TEST_CHECK(n == 5 && !memcmp(out, "text ", 5) && !stopped, "held '##'");
    inf_stop_matcher_push(m, "#", 1, &out, &n, &stopped, &err);
    TEST_CHECK(stopped && n == 0 && inf_stop_matcher_matched(m) == 1, "### matched as stop 1");
    inf_stop_matcher_reset(m);
    TEST_CHECK(inf_stop_matcher_matched(m) == -1, "reset clears the match");
    inf_stop_matcher_push(m, "again", 5, &out, &n, &stopped, &err);
    TEST_CHECK(n == 5 && !stopped, "released after reset");
    inf_stop_matcher_free(m);
}

static bool valid_utf8(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n) return false;
        for (size_t k = 1; k < len; k++)
            if (((unsigned char)s[i + k] >> 6) != 2) return false;
        i += len;
    }
    return true;
}

static void test_utf8_stream(void) {
    test_begin("utf-8 split across tokens");
    inf_tokenizer *tok = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(inf_tokenizer_load(TOKENIZER, &tok, &err) == INF_OK, "load %s: %s", TOKENIZER, err.msg)) return;
    /* rare CJK and emoji are several byte-level tokens each */
    const char *text = "naïve 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 鱻龘 🎉🦀 done";
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (!TEST_CHECK(inf_tokenize(tok, text, strlen(text), 0, &ids, &n_ids, &err) == INF_OK, "tokenize: %s", err.msg)) {
        inf_tokenizer_free(tok);
        return;
    }
    int partial = 0;
    for (size_t i = 0; i < n_ids; i++) {
        size_t len;
        const char *bytes = inf_tokenizer_token_bytes(tok, ids[i], &len);
        partial += bytes && !valid_utf8(bytes, len);
    }
    TEST_CHECK(partial >= 2, "only %d tokens hold part of a character; the test needs split characters", partial);

    /* streamed: every piece is valid UTF-8 and the whole is the text; a
     * stop string whose first character is split across tokens still stops */
    const char *stops[] = {"🦀 do"};
    inf_stop_matcher *m = NULL;
    TEST_CHECK(inf_stop_matcher_new(stops, 1, &m, &err) == INF_OK, "stop matcher");
    inf_detok_stream st;
    inf_detok_stream_init(&st);
    char all[256] = "", stopped_text[256] = "";
    size_t n_all = 0, n_stopped = 0;
    bool pieces_valid = true, stopped = false;
    for (size_t i = 0; i < n_ids; i++) {
        char piece[INF_DETOK_STREAM_MAX_OUT];
        size_t n;
        TEST_CHECK(inf_detok_stream_push(tok, &st, ids[i], piece, sizeof piece, &n, &err) == INF_OK, "push: %s", err.msg);
        pieces_valid &= valid_utf8(piece, n);
        memcpy(all + n_all, piece, n);
        n_all += n;
        const char *out;
        size_t n_out;
        bool now;
        if (!stopped) {
            inf_stop_matcher_push(m, piece, n, &out, &n_out, &now, &err);
            pieces_valid &= valid_utf8(out, n_out);
            memcpy(stopped_text + n_stopped, out, n_out);
            n_stopped += n_out;
            stopped = now;
        }
    }
    char tail[8];
    n_all += inf_detok_stream_flush(&st, tail, sizeof tail);
    TEST_CHECK(pieces_valid, "a streamed piece was not valid UTF-8");
    TEST_CHECK(n_all == strlen(text) && !memcmp(all, text, n_all), "streamed text differs: '%.*s'", (int)n_all, all);
    const char *want = "naïve 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 鱻龘 🎉";
    TEST_CHECK(stopped && n_stopped == strlen(want) && !memcmp(stopped_text, want, n_stopped),
               "stopped %d at '%.*s'", stopped, (int)n_stopped, stopped_text);
    inf_stop_matcher_free(m);
    free(ids);
    inf_tokenizer_free(tok);
}

/* Rewrites src with extra general.sampling.* keys. */
static bool add_sampling_keys(const char *src, const char *dst) {
    gguf_file *f = NULL;
    inf_error err = {0};
    if (gguf_open(src, GGUF_OPEN_MMAP, &f, &err)) return false;
    gguf_writer *w = gguf_writer_new();
    for (uint64_t i = 0; i < f->n_kv; i++) gguf_writer_set_value(w, f->kv[i].key.data, &f->kv[i].value);
    gguf_writer_set_f32(w, "general.sampling.temp", 0.9f);
    gguf_writer_set_i32(w, "general.sampling.top_k", 33);
    gguf_writer_set_f32(w, "general.sampling.min_p", 0.05f);
    gguf_writer_set_f32(w, "general.sampling.penalty_repeat", 1.1f);
    gguf_writer_set_i32(w, "general.sampling.penalty_last_n", 128);
    gguf_writer_set_f32(w, "general.sampling.top_p", 7.0f); /* out of range: ignored */
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        gguf_writer_add_tensor(w, t->name.data, t->type, t->n_dims, t->ne, t->data);
    }
    bool ok = gguf_writer_write(w, dst, &err) == INF_OK;
    gguf_writer_free(w);
    gguf_close(f);
    return ok;
}

static void test_defaults(void) {
    test_begin("sampling defaults");
    char plain[128], keyed[128], config[128];
    snprintf(plain, sizeof plain, "%s/plain.gguf", tmpdir);
    snprintf(keyed, sizeof keyed, "%s/keyed.gguf", tmpdir);
    snprintf(config, sizeof config, "%s/generation_config.json", tmpdir);
    inf_synth_options o;
    inf_synth_options_default(&o);
    o.n_layer = 1;
    o.n_embd = 32;
    o.n_ff = 64;
    o.n_head = 2;
    o.n_head_kv = 1;
    o.head_dim = 16;
    o.n_vocab = 300;
    o.tokenizer_json = TOKENIZER;
    inf_error err = {0};
    if (!TEST_CHECK(inf_synth_write(&o, plain, &err) == INF_OK, "synth: %s", err.msg)) return;
    TEST_CHECK(add_sampling_keys(plain, keyed), "rewrite with general.sampling.* keys");
    inf_model *m = NULL;
    inf_sampler_params p;
    if (TEST_CHECK(inf_model_load(plain, NULL, &m, &err) == INF_OK, "load: %s", err.msg)) {
        inf_model_sampling_defaults(m, true, &p);
        TEST_CHECK(p.temperature == 0.6f && p.top_p == 0.95f && p.top_k == 20 && p.min_p == 0,
                   "thinking: %g %g %d %g", p.temperature, p.top_p, p.top_k, p.min_p);
        inf_model_sampling_defaults(m, false, &p);
        TEST_CHECK(p.temperature == 0.7f && p.top_p == 0.8f && p.top_k == 20 && p.min_p == 0,
                   "non-thinking: %g %g %d %g", p.temperature, p.top_p, p.top_k, p.min_p);
        TEST_CHECK(p.repeat_penalty == 1 && p.presence_penalty == 0 && p.penalty_last_n == 64, "penalties off");
        inf_model_free(m);
    }
    m = NULL;
    if (TEST_CHECK(inf_model_load(keyed, NULL, &m, &err) == INF_OK, "load: %s", err.msg)) {
        inf_model_sampling_defaults(m, false, &p);
        TEST_CHECK(p.temperature == 0.9f && p.top_k == 33 && p.min_p == 0.05f && p.repeat_penalty == 1.1f &&
                       p.penalty_last_n == 128,
                   "keys: %g %d %g %g %d", p.temperature, p.top_k, p.min_p, p.repeat_penalty, p.penalty_last_n);
        TEST_CHECK(p.top_p == 0.8f, "an out-of-range top_p is ignored: %g", p.top_p);
        inf_model_free(m);
    }

    FILE *f = fopen(config, "w");
    fputs("{\"bos_token_id\": 151643, \"do_sample\": true, \"temperature\": 0.6, \"top_k\": 20, \"top_p\": 0.95,"
          " \"repetition_penalty\": 1.05}", f);
    fclose(f);
    inf_sampler_params_default(&p);
    TEST_CHECK(inf_sampler_params_from_generation_config(config, &p, &err) == INF_OK, "read: %s", err.msg);
    TEST_CHECK(p.temperature == 0.6f && p.top_k == 20 && p.top_p == 0.95f && p.repeat_penalty == 1.05f &&
                   p.min_p == 0,
               "generation_config: %g %d %g %g", p.temperature, p.top_k, p.top_p, p.repeat_penalty);
    f = fopen(config, "w");
    fputs("{\"top_p\": \"high\"}", f);
    fclose(f);
    TEST_CHECK(inf_sampler_params_from_generation_config(config, &p, &err) == INF_ERR_FORMAT &&
                   strstr(err.msg, "top_p"),
               "a bad value names the key: %s", err.msg);
    unlink(plain);
    unlink(keyed);
    unlink(config);
}

int main(void) {
    if (!(tmpdir = test_tmpdir("sampler"))) return 1;
    test_filters();
    test_large_vocabulary();
    test_draws();
    test_penalties();
    test_invalid();
    test_stops();
    test_utf8_stream();
    test_defaults();
    test_tmpdir_remove();
    return test_summary();
}

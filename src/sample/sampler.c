/*
 * sampler.c — logits to a token id: logit bias, repetition / presence /
 * frequency penalties over a window of accepted tokens, top-k, top-p, min-p,
 * temperature and a seeded draw, always in that order (see inferno.h).
 *
 * Invariants: a filter never leaves fewer than one candidate; candidates
 * are kept sorted by (logit descending, id ascending) from the first
 * truncation on, so ties resolve to the lower id everywhere; probabilities
 * are computed in double so the draw does not depend on summation order
 * beyond that fixed candidate order.
 */
#include "inferno.h"

#include "core/common.h"
#include "sample/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct candidate {
    int32_t id;
    float logit;
} candidate;

struct inf_sampler {
    int n_vocab;
    inf_sampler_params p; /* p.logit_bias points at bias below */
    inf_logit_bias *bias; /* [n_bias] owned copy */
    inf_rng rng;
    float *work;       /* [n_vocab] logits after bias and penalties */
    candidate *cand;   /* [n_vocab] surviving tokens, best first once truncated */
    double *prob;      /* [n_vocab] probability of cand[i] after the last step */
    int32_t *history;  /* [penalty_last_n] ring of the last accepted ids */
    int n_history;     /* ids in the ring (<= penalty_last_n) */
    int history_next;  /* ring slot the next accepted id goes to */
    int32_t *counts;   /* [n_vocab] occurrences of each id in the ring */
};

void inf_sampler_params_default(inf_sampler_params *p) {
    *p = (inf_sampler_params){
        .temperature = 1.0f,
        .top_k = 0,
        .top_p = 1.0f,
        .min_p = 0.0f,
        .repeat_penalty = 1.0f,
        .presence_penalty = 0.0f,
        .frequency_penalty = 0.0f,
        .penalty_last_n = 64,
        .seed = 0,
    };
}

static inf_status check_params(int n_vocab, const inf_sampler_params *p, inf_error *err) {
    if (n_vocab < 1) return inf_errorf(err, INF_ERR_INVALID, "sampler: n_vocab must be at least 1, got %d", n_vocab);
    if (!isfinite(p->temperature) || p->temperature < 0)
        return inf_errorf(err, INF_ERR_INVALID, "sampler: temperature must be >= 0, got %g", (double)p->temperature);
    if (p->top_k < 0) return inf_errorf(err, INF_ERR_INVALID, "sampler: top_k must be >= 0, got %d", p->top_k);
    if (!(p->top_p >= 0 && p->top_p <= 1))
        return inf_errorf(err, INF_ERR_INVALID, "sampler: top_p must be in [0, 1], got %g", (double)p->top_p);
    if (!(p->min_p >= 0 && p->min_p <= 1))
        return inf_errorf(err, INF_ERR_INVALID, "sampler: min_p must be in [0, 1], got %g", (double)p->min_p);
    if (!isfinite(p->repeat_penalty) || p->repeat_penalty <= 0)
        return inf_errorf(err, INF_ERR_INVALID, "sampler: repeat_penalty must be > 0, got %g",
                          (double)p->repeat_penalty);
    if (!isfinite(p->presence_penalty) || !isfinite(p->frequency_penalty))
        return inf_errorf(err, INF_ERR_INVALID, "sampler: presence and frequency penalties must be finite");
    if (p->penalty_last_n < 0 || p->penalty_last_n > (1 << 24))
        return inf_errorf(err, INF_ERR_INVALID, "sampler: penalty_last_n must be in [0, 2^24], got %d",
                          p->penalty_last_n);
    if (p->n_logit_bias > 0 && !p->logit_bias)
        return inf_errorf(err, INF_ERR_INVALID, "sampler: n_logit_bias is %zu but logit_bias is NULL", p->n_logit_bias);
    for (size_t i = 0; i < p->n_logit_bias; i++) {
        const inf_logit_bias *b = &p->logit_bias[i];
        if (b->id < 0 || b->id >= n_vocab)
            return inf_errorf(err, INF_ERR_INVALID, "sampler: logit bias for token %ld, outside the vocabulary (0..%d)",
                              (long)b->id, n_vocab - 1);
        if (isnan(b->bias) || b->bias == INFINITY)
            return inf_errorf(err, INF_ERR_INVALID, "sampler: logit bias for token %ld must be finite or -inf",
                              (long)b->id);
    }
    return INF_OK;
}

void inf_sampler_free(inf_sampler *s) {
    if (!s) return;
    free(s->bias);
    free(s->work);
    free(s->cand);
    free(s->prob);
    free(s->history);
    free(s->counts);
    free(s);
}

inf_status inf_sampler_new(int n_vocab, const inf_sampler_params *p, inf_sampler **out, inf_error *err) {
    *out = NULL;
    inf_status st = check_params(n_vocab, p, err);
    if (st) return st;
    inf_sampler *s = calloc(1, sizeof *s);
    if (!s) return inf_errorf(err, INF_ERR_NOMEM, "sampler: out of memory");
    s->n_vocab = n_vocab;
    s->p = *p;
    size_t v = (size_t)n_vocab;
    s->work = malloc(v * sizeof *s->work);
    s->cand = malloc(v * sizeof *s->cand);
    s->prob = malloc(v * sizeof *s->prob);
    bool ok = s->work && s->cand && s->prob;
    if (ok && p->n_logit_bias > 0) {
        s->bias = malloc(p->n_logit_bias * sizeof *s->bias);
        if ((ok = s->bias != NULL)) memcpy(s->bias, p->logit_bias, p->n_logit_bias * sizeof *s->bias);
    }
    if (ok && p->penalty_last_n > 0) {
        s->history = malloc((size_t)p->penalty_last_n * sizeof *s->history);
        s->counts = calloc(v, sizeof *s->counts);
        ok = s->history && s->counts;
    }
    if (!ok) {
        inf_sampler_free(s);
        return inf_errorf(err, INF_ERR_NOMEM, "sampler: out of memory for %d tokens", n_vocab);
    }
    s->p.logit_bias = s->bias;
    inf_rng_seed(&s->rng, p->seed);
    *out = s;
    return INF_OK;
}

void inf_sampler_reset(inf_sampler *s) {
    if (!s->counts) return;
    for (int i = 0; i < s->n_history; i++) s->counts[s->history[i]] = 0;
    s->n_history = 0;
    s->history_next = 0;
}

void inf_sampler_accept(inf_sampler *s, int32_t id) {
    if (!s->history || id < 0 || id >= s->n_vocab) return;
    int window = s->p.penalty_last_n;
    if (s->n_history == window) s->counts[s->history[s->history_next]]--;
    else s->n_history++;
    s->history[s->history_next] = id;
    s->counts[id]++;
    s->history_next = (s->history_next + 1) % window;
}

static bool penalties_active(const inf_sampler_params *p) {
    return p->penalty_last_n > 0 &&
           (p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f);
}

/* Each id in the window is penalized once, with its count; a visited id's
 * count is negated while the window is walked and restored after. */
static void apply_penalties(inf_sampler *s) {
    const inf_sampler_params *p = &s->p;
    for (int i = 0; i < s->n_history; i++) {
        int32_t id = s->history[i];
        int32_t count = s->counts[id];
        if (count <= 0) continue;
        float l = s->work[id];
        l = l > 0 ? l / p->repeat_penalty : l * p->repeat_penalty;
        l -= (float)count * p->frequency_penalty + p->presence_penalty;
        s->work[id] = l;
        s->counts[id] = -count;
    }
    for (int i = 0; i < s->n_history; i++) {
        int32_t id = s->history[i];
        if (s->counts[id] < 0) s->counts[id] = -s->counts[id];
    }
}

/* work = logits with NaN as -inf, plus bias, minus penalties. */
static void prepare(inf_sampler *s, const float *logits) {
    for (int i = 0; i < s->n_vocab; i++) s->work[i] = isnan(logits[i]) ? -INFINITY : logits[i];
    for (size_t i = 0; i < s->p.n_logit_bias; i++) s->work[s->bias[i].id] += s->bias[i].bias;
    if (penalties_active(&s->p)) apply_penalties(s);
}

/* a ranks before b: higher logit, then lower id. */
static inline bool ranks_before(candidate a, candidate b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

/* Moves heap[i] down a heap whose root is the candidate ranking last. */
static void sift_down(candidate *heap, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, worst = i;
        if (l < n && ranks_before(heap[worst], heap[l])) worst = l;
        if (r < n && ranks_before(heap[worst], heap[r])) worst = r;
        if (worst == i) return;
        candidate t = heap[i];
        heap[i] = heap[worst];
        heap[worst] = t;
        i = worst;
    }
}

/* cand[0..m) = the m best of x (NaN as -inf), best first (m <= n_vocab).
 * O(V log m). Once the heap is full, a later id (higher than all in it)
 * ranks before its root only by a higher logit: that compare, against the
 * root's logit kept in a register and for eight ids at once, is all most
 * ids cost (the root reloaded for each, top-k 20 over 151936 logits took
 * 190 us, Zen 5). */
static int select_top(inf_sampler *s, const float *x, int m) {
    candidate *heap = s->cand;
    int n = 0, id = 0;
    for (; id < s->n_vocab && n < m; id++) {
        /* sift up */
        int i = n++;
        heap[i] = (candidate){id, isnan(x[id]) ? -INFINITY : x[id]};
        while (i > 0) {
            int parent = (i - 1) / 2;
            if (!ranks_before(heap[parent], heap[i])) break;
            candidate t = heap[i];
            heap[i] = heap[parent];
            heap[parent] = t;
            i = parent;
        }
    }
    float root = n > 0 ? heap[0].logit : INFINITY;
    while (id < s->n_vocab) {
        if (id + 8 <= s->n_vocab) { /* eight at a time while none passes the root */
            float top = -INFINITY; /* not x[id]: a NaN there would hide the rest */
            for (int k = 0; k < 8; k++) top = x[id + k] > top ? x[id + k] : top;
            if (!(top > root)) {
                id += 8;
                continue;
            }
        }
        for (const int end = INF_MIN(id + 8, s->n_vocab); id < end; id++) {
            if (!(x[id] > root)) continue; /* NaN never passes */
            heap[0] = (candidate){id, x[id]};
            sift_down(heap, n, 0);
            root = heap[0].logit;
        }
    }
    /* heap sort: pop the worst to the end until the array is best first */
    for (int end = n - 1; end > 0; end--) {
        candidate t = heap[0];
        heap[0] = heap[end];
        heap[end] = t;
        sift_down(heap, end, 0);
    }
    return n;
}

/* Length of the shortest prefix of sorted cand[0..n) whose probabilities,
 * exp(logit - max) / sum, reach top_p; -1 when even all n fall short. */
static int top_p_prefix(const candidate *cand, int n, double max, double sum, double top_p) {
    double cum = 0;
    for (int i = 0; i < n; i++) {
        cum += exp((double)cand[i].logit - max) / sum;
        if (cum >= top_p) return i + 1;
    }
    return -1;
}

/* A float's place in rank order as an unsigned key, smallest first:
 * higher logits first, -0 with +0 (x without NaN). */
static inline uint32_t rank_key(float x) {
    uint32_t u;
    if (x == 0) x = 0;
    memcpy(&u, &x, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* ascending with x */
    return ~u;
}

/* cand[0..n_vocab) = every token of work, best first (ties to the lower
 * id): a stable radix sort, a byte of rank_key a pass, ids in order to
 * start with. prob is its scratch (a candidate fits a double). */
static void sort_all(inf_sampler *s) {
    candidate *a = s->cand, *b = (candidate *)(void *)s->prob;
    const int n = s->n_vocab;
    for (int i = 0; i < n; i++) a[i] = (candidate){i, s->work[i]};
    for (int shift = 0; shift < 32; shift += 8) {
        int count[257] = {0};
        for (int i = 0; i < n; i++) count[((rank_key(a[i].logit) >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++) count[d + 1] += count[d];
        for (int i = 0; i < n; i++) b[count[(rank_key(a[i].logit) >> shift) & 255]++] = a[i];
        candidate *t = a;
        a = b;
        b = t;
    }
    /* four passes: the result is back in cand */
}

/* top-p straight from the whole vocabulary: the normalizer over all tokens,
 * then the 256 best sorted, and when they fall short of top_p the whole
 * vocabulary sorted (a heap of ever more of it, 256 x8 at a time, took
 * ~33 ms over Qwen3's 151936 logits when top_p reached most of them). */
static int top_p_full(inf_sampler *s) {
    double max = -INFINITY, sum = 0;
    for (int i = 0; i < s->n_vocab; i++)
        if (s->work[i] > max) max = s->work[i];
    if (max == -INFINITY) return select_top(s, s->work, 1);
    for (int i = 0; i < s->n_vocab; i++) sum += exp((double)s->work[i] - max);
    int n = select_top(s, s->work, INF_MIN(256, s->n_vocab));
    int keep = top_p_prefix(s->cand, n, max, sum, s->p.top_p);
    if (keep > 0 || n == s->n_vocab) return keep > 0 ? keep : n;
    sort_all(s);
    keep = top_p_prefix(s->cand, s->n_vocab, max, sum, s->p.top_p);
    return keep > 0 ? keep : s->n_vocab; /* the sum rounded just below top_p */
}

/* The first index of x's maximum, NaN counting as -inf (0 when all are
 * NaN or -inf): the maximum in four independent lanes, then where it first
 * occurs. (Comparing each element with x[best], reloaded by the index just
 * chosen, chained every step on the last: greedy over 151936 logits took
 * 206 us, Zen 5.) */
static int argmax(const float *x, int n) {
    float m[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    const float max = INF_MAX(INF_MAX(m[0], m[1]), INF_MAX(m[2], m[3]));
    for (i = 0; i < n; i++)
        if (x[i] == max) return i;
    return 0;
}

/* Runs the filters; leaves cand[0..n) and their probabilities in prob. */
static int filter(inf_sampler *s, const float *logits) {
    const inf_sampler_params *p = &s->p;
    /* Greedy and top-k read the logits as they are when no bias or penalty
     * changes them (NaN as -inf), without copying the vocabulary first:
     * that copy was most of their time once the scans were fast. */
    const bool adjusted = p->n_logit_bias > 0 || penalties_active(p);
    if (adjusted) prepare(s, logits);
    const float *x = adjusted ? s->work : logits;
    if (p->temperature <= 0) {
        const int best = argmax(x, s->n_vocab);
        s->cand[0] = (candidate){best, isnan(x[best]) ? -INFINITY : x[best]};
        s->prob[0] = 1.0;
        return 1;
    }
    int n;
    bool top_p_done = false;
    const bool top_k = p->top_k > 0 && p->top_k < s->n_vocab;
    if (!top_k && !adjusted) prepare(s, logits);
    if (top_k) {
        n = select_top(s, x, p->top_k);
    } else if (p->top_p < 1) {
        n = top_p_full(s);
        top_p_done = true;
    } else {
        for (int i = 0; i < s->n_vocab; i++) s->cand[i] = (candidate){i, s->work[i]};
        n = s->n_vocab;
    }
    if (p->top_p < 1 && !top_p_done && s->cand[0].logit > -INFINITY) {
        double max = s->cand[0].logit, sum = 0;
        for (int i = 0; i < n; i++) sum += exp((double)s->cand[i].logit - max);
        int keep = top_p_prefix(s->cand, n, max, sum, p->top_p);
        if (keep > 0) n = keep;
    }
    /* min-p and the softmax are relative to the best survivor */
    int best = 0;
    for (int i = 0; i < n; i++)
        if (ranks_before(s->cand[i], s->cand[best])) best = i;
    double max = s->cand[best].logit;
    if (max == -INFINITY) { /* every token banned: keep the best ranked */
        s->cand[0] = s->cand[best];
        s->prob[0] = 1.0;
        return 1;
    }
    if (p->min_p > 0) {
        double threshold = max + log((double)p->min_p);
        int kept = 0;
        for (int i = 0; i < n; i++)
            if ((double)s->cand[i].logit >= threshold) s->cand[kept++] = s->cand[i];
        n = kept;
    }
    double sum = 0, inv_t = 1.0 / (double)p->temperature;
    for (int i = 0; i < n; i++) {
        s->prob[i] = exp(((double)s->cand[i].logit - max) * inv_t);
        sum += s->prob[i];
    }
    for (int i = 0; i < n; i++) s->prob[i] /= sum;
    return n;
}

int32_t inf_sampler_sample(inf_sampler *s, const float *logits) {
    int n = filter(s, logits);
    if (n == 1) return s->cand[0].id;
    double u = inf_rng_uniform(&s->rng), cum = 0;
    int last = 0;
    for (int i = 0; i < n; i++) {
        if (s->prob[i] <= 0) continue;
        cum += s->prob[i];
        last = i;
        if (u < cum) return s->cand[i].id;
    }
    return s->cand[last].id; /* u fell past a sum rounded below 1 */
}

void inf_sampler_probs(inf_sampler *s, const float *logits, float *probs) {
    int n = filter(s, logits);
    memset(probs, 0, (size_t)s->n_vocab * sizeof *probs);
    for (int i = 0; i < n; i++) probs[s->cand[i].id] = (float)s->prob[i];
}

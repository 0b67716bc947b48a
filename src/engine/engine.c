/*
 * engine.c — inf_engine: requests, the scheduler, and generation.
 *
 * Life of a request: inf_engine_submit checks it and queues it (under the
 * engine's mutex). The driving thread, at each step:
 *   1. takes cancellations and new requests from the queue;
 *   2. admits queued requests in order while the pool can hold what they
 *      may need (their reservation: every block their prompt and max_tokens
 *      can fill, less the prefix-cache hit, plus one copy-on-write block per
 *      completion); a request that does not fit waits, and so do the ones
 *      after it;
 *   3. runs one forward pass: one decode row per generating sequence, then
 *      the next chunks of the sequences still in their prompts, oldest
 *      first, up to prefill_chunk prompt tokens in all;
 *   4. samples each sequence whose logits came out, forking a request's n
 *      completions at the end of its prompt, and delivers events; finished
 *      sequences hand their blocks to the prefix tree and release the rest.
 * A sequence writes a position's K and V only into a block it alone holds:
 * a block still shared (with the prefix tree or a fork) is copied first.
 *
 * A row's kernel is chosen by its kind alone (decode rows on the matvec,
 * prompt rows on the gemm: ops.h, matmul), and attention runs per
 * sequence, so a sequence's rows do not depend on the batch it runs in or
 * on how its prompt is cut into chunks.
 */
#include "engine/kv_cache.h"

#include "core/common.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Blocks of 64: decode after 2044 tokens ran 2.4% below the contiguous
 * session with them, 5.9% with blocks of 32 (bench, Xeon, 2 threads). */
enum {
    DEFAULT_BLOCK_SIZE = 64,
    DEFAULT_MAX_SEQS = 16,
    DEFAULT_PREFILL_CHUNK = 512,
    MAX_TOP_LOGPROBS = 20,
};

typedef struct engine_request engine_request;

struct engine_request {
    uint64_t id;
    inf_request req;        /* prompt, stops and logit bias point at the copies below */
    int32_t *prompt;
    char **stops;
    inf_logit_bias *bias;
    int n_ctx_need;         /* prompt + generation, capped to n_ctx */
    int n_live;             /* completions not yet done */
    bool cancelled;         /* under the engine's mutex */
    bool admitted;
    double t_submit, t_admit;
    engine_request *next;   /* in the queue or the admitted list */
};

typedef struct sequence {
    engine_request *r;
    int index;              /* completion index */
    bool decoding;          /* past the prompt */
    int32_t *tokens;        /* [n_ctx] prompt, then generated tokens */
    int n_tokens;
    int n_cached;           /* tokens whose K and V are in the cache */
    int n_hit;              /* prompt tokens the prefix cache gave */
    int32_t *blocks;        /* [max blocks] block table */
    int n_blocks;
    int reserve;            /* blocks it may still allocate */
    inf_sampler *sampler;
    inf_stop_matcher *stops;
    inf_detok_stream detok;
    int n_generated;
    double t_first;
    bool done;
    inf_finish_reason finish;
} sequence;

struct inf_engine {
    inf_model *model;
    const inf_tokenizer *tok;
    int n_ctx, block_size, max_seqs, prefill_chunk, max_blocks_per_seq;
    int n_vocab;  /* logits per row */
    int n_sample; /* the ids a sampler may pick: those the tokenizer has, at most n_vocab */
    int32_t think_open, think_close; /* Qwen3's <think> and </think>, or -1 */
    kv_cache cache;
    qwen3_work work;
    float *logits;            /* [max_seqs + 1][n_vocab] */
    sequence **running;       /* [max_seqs], in admission order */
    int n_running;
    int n_slots;              /* running sequences and the forks their prompts will make */
    int outstanding;          /* sum of the running sequences' reserve */
    /* one step's batch */
    int32_t *batch_tokens;    /* [max_seqs + prefill_chunk] */
    qwen3_seq_rows *batch_rows;
    sequence **batch_seqs;
    char *text;               /* event text being assembled */
    size_t text_cap;
    inf_token_logprob top[MAX_TOP_LOGPROBS];
    uint64_t steps;

    pthread_mutex_t mu;       /* guards everything below */
    pthread_cond_t wake;
    engine_request *queue_head, *queue_tail;
    engine_request *admitted; /* requests with live completions */
    int n_queued;
    uint64_t next_id;
    bool stop;
    inf_engine_stats stats;   /* as of the last step */
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *inf_finish_reason_name(inf_finish_reason r) {
    switch (r) {
    case INF_FINISH_STOP: return "stop";
    case INF_FINISH_LENGTH: return "length";
    case INF_FINISH_CONTEXT: return "context";
    case INF_FINISH_CANCELLED: return "cancelled";
    }
    return "?";
}

void inf_engine_options_default(inf_engine_options *opt) { memset(opt, 0, sizeof *opt); }

void inf_request_default(inf_request *req) {
    memset(req, 0, sizeof *req);
    inf_sampler_params_default(&req->sampling);
}

static int blocks_for(int tokens, int bs) { return (tokens + bs - 1) / bs; }

/* ------------------------------------------------------------------ lifetime */

static void free_request(engine_request *r) {
    if (!r) return;
    free(r->prompt);
    for (size_t i = 0; r->stops && i < r->req.n_stops; i++) free(r->stops[i]);
    free(r->stops);
    free(r->bias);
    free(r);
}

static void free_sequence(sequence *s) {
    if (!s) return;
    free(s->tokens);
    free(s->blocks);
    inf_sampler_free(s->sampler);
    inf_stop_matcher_free(s->stops);
    free(s);
}

inf_status inf_engine_new(inf_model *m, const inf_engine_options *opt, inf_engine **out, inf_error *err) {
    *out = NULL;
    inf_engine_options o;
    if (opt) o = *opt;
    else inf_engine_options_default(&o);
    const int n_ctx = o.n_ctx ? o.n_ctx : m->opt.n_ctx;
    if (n_ctx < 2 || n_ctx > m->cfg.n_ctx_max)
        return inf_errorf(err, INF_ERR_INVALID, "engine context length %d is outside 2..%d", n_ctx, m->cfg.n_ctx_max);
    const int bs = o.block_size ? o.block_size : DEFAULT_BLOCK_SIZE;
    if (bs < 1 || bs > 4096) return inf_errorf(err, INF_ERR_INVALID, "KV block size %d is outside 1..4096", bs);
    const int max_seqs = o.max_seqs ? o.max_seqs : DEFAULT_MAX_SEQS;
    if (max_seqs < 1 || max_seqs > 1024)
        return inf_errorf(err, INF_ERR_INVALID, "max_seqs %d is outside 1..1024", max_seqs);
    const int chunk = o.prefill_chunk ? o.prefill_chunk : DEFAULT_PREFILL_CHUNK;
    if (chunk < 1 || chunk > 8192) return inf_errorf(err, INF_ERR_INVALID, "prefill chunk %d is outside 1..8192", chunk);
    int64_t pool_tokens = o.kv_pool_tokens;
    if (pool_tokens < 0) return inf_errorf(err, INF_ERR_INVALID, "KV pool of %lld tokens", (long long)pool_tokens);
    if (!pool_tokens && o.kv_pool_mib) {
        const double per_token = 2.0 * (double)qwen3_kv_bytes(m, bs, 1, 0) / bs;
        pool_tokens = (int64_t)((double)o.kv_pool_mib * 1048576.0 / per_token);
    }
    /* by default max_seqs requests of n_ctx tokens fit at once, each in whole blocks */
    const int64_t n_blocks =
        pool_tokens ? (pool_tokens + bs - 1) / bs : (int64_t)max_seqs * (((int64_t)n_ctx + bs - 1) / bs);
    if (n_blocks < 1 || n_blocks > (1 << 24))
        return inf_errorf(err, INF_ERR_INVALID, "a KV pool of %lld blocks is outside 1..%d", (long long)n_blocks, 1 << 24);

    inf_engine *e = calloc(1, sizeof *e);
    if (!e) return inf_errorf(err, INF_ERR_NOMEM, "out of memory for an engine");
    e->model = m;
    e->tok = m->tokenizer;
    e->think_open = e->tok ? inf_tokenizer_find_special(e->tok, "<think>") : -1;
    e->think_close = e->tok ? inf_tokenizer_find_special(e->tok, "</think>") : -1;
    e->n_ctx = n_ctx;
    e->block_size = bs;
    e->max_seqs = max_seqs;
    e->prefill_chunk = chunk;
    e->n_vocab = m->cfg.n_vocab;
    e->n_sample = e->tok && inf_tokenizer_n_vocab(e->tok) < e->n_vocab ? inf_tokenizer_n_vocab(e->tok) : e->n_vocab;
    e->max_blocks_per_seq = blocks_for(n_ctx, bs);
    e->next_id = 1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    inf_status st = kv_cache_init(&e->cache, m, bs, (int)n_blocks, !o.no_prefix_cache, err);
    const int max_rows = max_seqs + chunk;
    if (!st) st = qwen3_work_reserve(m, &e->work, max_rows, err);
    if (!st) {
        e->logits = malloc((size_t)(max_seqs + 1) * (size_t)e->n_vocab * sizeof(float));
        e->running = calloc((size_t)max_seqs, sizeof *e->running);
        e->batch_tokens = malloc((size_t)max_rows * sizeof *e->batch_tokens);
        e->batch_rows = malloc((size_t)(max_seqs + 1) * sizeof *e->batch_rows);
        e->batch_seqs = malloc((size_t)(max_seqs + 1) * sizeof *e->batch_seqs);
        if (!e->logits || !e->running || !e->batch_tokens || !e->batch_rows || !e->batch_seqs)
            st = inf_errorf(err, INF_ERR_NOMEM, "out of memory for the engine's batch of %d rows", max_rows);
    }
    if (st) {
        inf_engine_free(e);
        return st;
    }
    e->stats.n_ctx = n_ctx;
    e->stats.block_size = bs;
    e->stats.blocks_total = e->stats.blocks_free = (int)n_blocks;
    e->stats.kv_bytes = 2 * qwen3_kv_bytes(m, bs, (int)n_blocks, e->cache.kv.run_shift);
    *out = e;
    return INF_OK;
}

void inf_engine_free(inf_engine *e) {
    if (!e) return;
    for (int i = 0; i < e->n_running; i++) free_sequence(e->running[i]);
    for (engine_request *r = e->queue_head, *next; r; r = next) next = r->next, free_request(r);
    for (engine_request *r = e->admitted, *next; r; r = next) next = r->next, free_request(r);
    kv_cache_free(&e->cache);
    qwen3_work_free(e->model, &e->work);
    free(e->logits);
    free(e->running);
    free(e->batch_tokens);
    free(e->batch_rows);
    free(e->batch_seqs);
    free(e->text);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->wake);
    free(e);
}

/* ------------------------------------------------------------------ submission */

/* Blocks a request can need beyond its prefix-cache hit of `hit` tokens:
 * the first completion fills every block from the hit's last full one to
 * n_ctx_need (a partly hit block is copied), each further one its own copy
 * of the prompt's last block and the blocks after it. */
static int request_blocks(const engine_request *r, int bs, int hit) {
    const int total = blocks_for(r->n_ctx_need, bs);
    const int n = r->req.n;
    return total - hit / bs + (n - 1) * (total - (int)r->req.n_prompt / bs);
}

static char *dup_string(const char *s) {
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

inf_status inf_engine_submit(inf_engine *e, const inf_request *req, uint64_t *id, inf_error *err) {
    if (id) *id = 0;
    if (!req->on_event) return inf_errorf(err, INF_ERR_INVALID, "request: on_event is required");
    if (!req->prompt || req->n_prompt < 1) return inf_errorf(err, INF_ERR_INVALID, "request: the prompt is empty");
    if (req->n < 0 || req->n > e->max_seqs)
        return inf_errorf(err, INF_ERR_INVALID, "request: n = %d completions is outside 1..%d (the engine's sequences)",
                          req->n, e->max_seqs);
    if (req->max_tokens < 0) return inf_errorf(err, INF_ERR_INVALID, "request: max_tokens %d is negative", req->max_tokens);
    if (req->top_logprobs < 0 || req->top_logprobs > MAX_TOP_LOGPROBS)
        return inf_errorf(err, INF_ERR_INVALID, "request: top_logprobs %d is outside 0..%d", req->top_logprobs,
                          MAX_TOP_LOGPROBS);
    if (req->n_prompt >= (size_t)e->n_ctx)
        return inf_errorf(err, INF_ERR_CONTEXT_FULL, "request: a prompt of %zu tokens leaves no room in the context of %d",
                          req->n_prompt, e->n_ctx);
    for (size_t i = 0; i < req->n_prompt; i++)
        if (req->prompt[i] < 0 || req->prompt[i] >= e->n_vocab)
            return inf_errorf(err, INF_ERR_INVALID, "request: token id %d at index %zu is outside the vocabulary (0..%d)",
                              req->prompt[i], i, e->n_vocab - 1);
    inf_sampler *probe;
    inf_status st = inf_sampler_new(e->n_sample, &req->sampling, &probe, err);
    if (st) return st;
    inf_sampler_free(probe);
    for (size_t i = 0; i < req->n_stops; i++)
        if (!req->stops[i] || !*req->stops[i]) return inf_errorf(err, INF_ERR_INVALID, "request: stop string %zu is empty", i);

    engine_request *r = calloc(1, sizeof *r);
    if (!r) return inf_errorf(err, INF_ERR_NOMEM, "out of memory for a request");
    r->req = *req;
    if (r->req.n == 0) r->req.n = 1;
    const int gen = req->max_tokens ? req->max_tokens : e->n_ctx;
    r->n_ctx_need = (int)INF_MIN((int64_t)e->n_ctx, (int64_t)req->n_prompt + gen);
    r->n_live = r->req.n;
    const int need = request_blocks(r, e->block_size, 0);
    if (need > e->cache.kv.n_blocks) {
        inf_errorf(err, INF_ERR_CONTEXT_FULL, "request: %d tokens x %d completions need %d KV blocks; the pool has %d",
                   r->n_ctx_need, r->req.n, need, e->cache.kv.n_blocks);
        free(r);
        return INF_ERR_CONTEXT_FULL;
    }
    r->prompt = malloc(req->n_prompt * sizeof *r->prompt);
    r->stops = req->n_stops ? calloc(req->n_stops, sizeof *r->stops) : NULL;
    r->bias = req->sampling.n_logit_bias ? malloc(req->sampling.n_logit_bias * sizeof *r->bias) : NULL;
    bool ok = r->prompt && (!req->n_stops || r->stops) && (!req->sampling.n_logit_bias || r->bias);
    for (size_t i = 0; ok && i < req->n_stops; i++) ok = (r->stops[i] = dup_string(req->stops[i])) != NULL;
    if (!ok) {
        free_request(r);
        return inf_errorf(err, INF_ERR_NOMEM, "out of memory for a request");
    }
    memcpy(r->prompt, req->prompt, req->n_prompt * sizeof *r->prompt);
    if (r->bias) memcpy(r->bias, req->sampling.logit_bias, req->sampling.n_logit_bias * sizeof *r->bias);
    r->req.prompt = r->prompt;
    r->req.stops = (const char *const *)r->stops;
    r->req.sampling.logit_bias = r->bias;
    r->t_submit = now_ms();

    pthread_mutex_lock(&e->mu);
    const uint64_t new_id = r->id = e->next_id++;
    if (e->queue_tail) e->queue_tail->next = r;
    else e->queue_head = r;
    e->queue_tail = r;
    e->n_queued++;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    /* r belongs to the driving thread now: it may already be done and freed */
    if (id) *id = new_id;
    return INF_OK;
}

bool inf_engine_cancel(inf_engine *e, uint64_t id) {
    bool found = false;
    pthread_mutex_lock(&e->mu);
    for (engine_request *r = e->queue_head; r && !found; r = r->next)
        if (r->id == id) found = !r->cancelled, r->cancelled = true;
    for (engine_request *r = e->admitted; r && !found; r = r->next)
        if (r->id == id) found = !r->cancelled, r->cancelled = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    return found;
}

void inf_engine_stop(inf_engine *e) {
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
}

void inf_engine_get_stats(inf_engine *e, inf_engine_stats *out) {
    pthread_mutex_lock(&e->mu);
    *out = e->stats;
    out->queued = e->n_queued;
    pthread_mutex_unlock(&e->mu);
}

/* ------------------------------------------------------------------ events */

static bool text_reserve(inf_engine *e, size_t n) {
    if (n <= e->text_cap) return true;
    size_t cap = e->text_cap ? e->text_cap : 1024;
    while (cap < n) cap *= 2;
    char *t = realloc(e->text, cap);
    if (!t) return false;
    e->text = t;
    e->text_cap = cap;
    return true;
}

static void emit_done(sequence *s, const char *text, size_t len) {
    const double t = now_ms();
    const double t_first = s->t_first ? s->t_first : t;
    inf_event ev = {
        .kind = INF_EVENT_DONE,
        .request = s->r->id,
        .index = s->index,
        .token = -1,
        .text = text,
        .text_len = len,
        .finish = s->finish,
        .stop_index = s->finish == INF_FINISH_STOP ? inf_stop_matcher_matched(s->stops) : -1,
        .n_prompt = (int)s->r->req.n_prompt,
        .n_cached = s->n_hit,
        .n_generated = s->n_generated,
        .queue_ms = s->r->t_admit - s->r->t_submit,
        .prefill_ms = t_first - s->r->t_admit,
        .decode_ms = t - t_first,
    };
    s->r->req.on_event(&ev, s->r->req.user);
}

/* Ends a sequence: what the detokenizer and the stop matcher still hold is
 * released with the DONE event (unless a stop string matched). */
static void finish(inf_engine *e, sequence *s, inf_finish_reason why) {
    s->done = true;
    s->finish = why;
    size_t len = 0;
    if (inf_stop_matcher_matched(s->stops) < 0 && text_reserve(e, 8 + 256)) {
        char tail[8];
        const size_t n_tail = inf_detok_stream_flush(&s->detok, tail, sizeof tail);
        const char *out;
        size_t n_out;
        bool stopped = false;
        if (n_tail && !inf_stop_matcher_push(s->stops, tail, n_tail, &out, &n_out, &stopped, NULL) &&
            text_reserve(e, n_out)) {
            memcpy(e->text, out, n_out);
            len = n_out;
        }
        if (!stopped) {
            inf_stop_matcher_flush(s->stops, &out, &n_out);
            if (text_reserve(e, len + n_out)) {
                memcpy(e->text + len, out, n_out);
                len += n_out;
            }
        }
    }
    emit_done(s, e->text, len);
}

/* log-softmax of the raw logits at id, and the k most likely tokens. */
static float logprobs_of(inf_engine *e, const float *logits, int32_t id, int k) {
    const int n = e->n_sample;
    float mx = -INFINITY;
    for (int i = 0; i < n; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    const float lse = mx + (float)log(sum);
    int have = 0;
    for (int i = 0; i < n && k > 0; i++) {
        const float v = logits[i];
        if (have == k && v <= e->top[k - 1].logprob) continue;
        int at = have < k ? have++ : k - 1;
        while (at > 0 && e->top[at - 1].logprob < v) {
            e->top[at] = e->top[at - 1];
            at--;
        }
        e->top[at] = (inf_token_logprob){.id = i, .logprob = v};
    }
    for (int i = 0; i < have; i++) e->top[i].logprob -= lse;
    return logits[id] - lse;
}

/* Samples the next token of s from logits and delivers it. */
static void sample_next(inf_engine *e, sequence *s, const float *logits) {
    const inf_request *rq = &s->r->req;
    const int32_t id = inf_sampler_sample(s->sampler, logits);
    if (!s->t_first) s->t_first = now_ms();
    s->n_generated++;
    if (!rq->ignore_eog && e->tok && inf_tokenizer_is_eog(e->tok, id)) {
        finish(e, s, INF_FINISH_STOP);
        return;
    }
    inf_sampler_accept(s->sampler, id);
    s->tokens[s->n_tokens++] = id;

    char piece[INF_DETOK_STREAM_MAX_OUT];
    size_t n_piece = 0;
    if (e->tok) inf_detok_stream_push(e->tok, &s->detok, id, piece, sizeof piece, &n_piece, NULL);
    /* a stop string never spans a think tag: what was held is released first */
    size_t n_held = 0;
    if (id == e->think_open || id == e->think_close) {
        const char *held;
        inf_stop_matcher_flush(s->stops, &held, &n_held);
        if (n_held && text_reserve(e, n_held)) memcpy(e->text, held, n_held);
        else n_held = 0;
    }
    const char *out = "";
    size_t n_out = 0;
    bool stopped = false;
    if (inf_stop_matcher_push(s->stops, piece, n_piece, &out, &n_out, &stopped, NULL)) n_out = 0;
    if (n_held) {
        if (text_reserve(e, n_held + n_out)) memcpy(e->text + n_held, out, n_out);
        else n_out = 0;
        out = e->text;
        n_out += n_held;
    }
    inf_event ev = {
        .kind = INF_EVENT_TOKEN,
        .request = s->r->id,
        .index = s->index,
        .token = id,
        .text = out,
        .text_len = n_out,
        .logits = rq->want_logits ? logits : NULL,
    };
    if (rq->logprobs || rq->top_logprobs) {
        ev.logprob = logprobs_of(e, logits, id, rq->top_logprobs);
        ev.top = e->top;
        ev.n_top = rq->top_logprobs;
    }
    rq->on_event(&ev, rq->user);
    if (stopped) finish(e, s, INF_FINISH_STOP);
    else if (rq->max_tokens && s->n_generated >= rq->max_tokens) finish(e, s, INF_FINISH_LENGTH);
    else if (s->n_tokens > e->n_ctx) finish(e, s, INF_FINISH_CONTEXT);
}

/* ------------------------------------------------------------------ sequences */

static sequence *new_sequence(inf_engine *e, engine_request *r, int index) {
    sequence *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->r = r;
    s->index = index;
    s->tokens = malloc((size_t)(e->n_ctx + 1) * sizeof *s->tokens);
    s->blocks = malloc((size_t)e->max_blocks_per_seq * sizeof *s->blocks);
    inf_sampler_params p = r->req.sampling;
    p.seed += (uint64_t)index;
    if (!s->tokens || !s->blocks || inf_sampler_new(e->n_sample, &p, &s->sampler, NULL) ||
        inf_stop_matcher_new((const char *const *)r->stops, r->req.n_stops, &s->stops, NULL)) {
        free_sequence(s);
        return NULL;
    }
    inf_detok_stream_init(&s->detok);
    return s;
}

/* A fork of s after its prompt: the same tokens and blocks (one more
 * reference each), its own sampler, stop matcher and detokenizer. */
static sequence *fork_sequence(inf_engine *e, sequence *s, int index) {
    sequence *f = new_sequence(e, s->r, index);
    if (!f) return NULL;
    memcpy(f->tokens, s->tokens, (size_t)s->n_tokens * sizeof *f->tokens);
    f->n_tokens = s->n_tokens;
    f->n_cached = s->n_cached;
    f->n_hit = s->n_hit;
    f->decoding = true;
    memcpy(f->blocks, s->blocks, (size_t)s->n_blocks * sizeof *f->blocks);
    f->n_blocks = s->n_blocks;
    for (int i = 0; i < f->n_blocks; i++) kv_cache_ref(&e->cache, f->blocks[i]);
    for (int i = 0; i < f->n_tokens; i++) inf_sampler_accept(f->sampler, f->tokens[i]);
    return f;
}

/* Moves one block of reservation into a sequence's hands. */
static int32_t take_block(inf_engine *e, sequence *s) {
    const int32_t b = kv_cache_alloc(&e->cache);
    if (b >= 0 && s->reserve > 0) {
        s->reserve--;
        e->outstanding--;
    }
    return b;
}

/* Makes positions [pos, pos + n) of s writable: new blocks where the table
 * ends, a private copy of a shared block. False if the pool ran dry (the
 * reservations make that a bug). */
static bool make_writable(inf_engine *e, sequence *s, int pos, int n) {
    const int bs = e->block_size;
    for (int i = pos / bs; i <= (pos + n - 1) / bs; i++) {
        if (i == s->n_blocks) {
            const int32_t b = take_block(e, s);
            if (b < 0) return false;
            s->blocks[s->n_blocks++] = b;
        } else if (e->cache.ref[s->blocks[i]] > 1) {
            const int32_t b = take_block(e, s);
            if (b < 0) return false;
            kv_cache_copy_block(&e->cache, b, s->blocks[i]);
            kv_cache_unref(&e->cache, s->blocks[i]);
            s->blocks[i] = b;
        }
    }
    return true;
}

/* Hands the sequence's cached tokens to the prefix tree and drops its blocks. */
static void release_sequence(inf_engine *e, sequence *s) {
    kv_cache_insert(&e->cache, s->tokens, s->n_cached, s->blocks);
    /* last block first: freed, the first lands on top of the free stack,
     * and the next sequence takes them in order (runs, model.h) */
    for (int i = s->n_blocks - 1; i >= 0; i--) kv_cache_unref(&e->cache, s->blocks[i]);
    s->n_blocks = 0;
    e->outstanding -= s->reserve;
    s->reserve = 0;
}

/* ------------------------------------------------------------------ the step */

/* Takes the queue's cancelled requests out (they get DONE events after the
 * lock is released) and marks running sequences of cancelled requests. */
static engine_request *take_cancelled(inf_engine *e) {
    engine_request *gone = NULL, *kept = NULL; /* kept: the last request left in the queue */
    pthread_mutex_lock(&e->mu);
    for (engine_request **at = &e->queue_head; *at;) {
        engine_request *r = *at;
        if (!r->cancelled) {
            kept = r;
            at = &r->next;
            continue;
        }
        *at = r->next;
        if (e->queue_tail == r) e->queue_tail = kept;
        e->n_queued--;
        r->next = gone;
        gone = r;
    }
    for (int i = 0; i < e->n_running; i++)
        if (e->running[i]->r->cancelled && !e->running[i]->done) e->running[i]->finish = INF_FINISH_CANCELLED, e->running[i]->done = true;
    pthread_mutex_unlock(&e->mu);
    return gone;
}

/* Admits the queue's head while it fits. */
static void admit(inf_engine *e) {
    for (;;) {
        pthread_mutex_lock(&e->mu);
        engine_request *r = e->queue_head;
        pthread_mutex_unlock(&e->mu);
        if (!r || e->n_slots + r->req.n > e->max_seqs) return;
        const int n_prompt = (int)r->req.n_prompt;
        /* The longest cached prefix (the last prompt token always runs,
         * for its logits). Its blocks stop being evictable once used, and
         * a partly used block costs a copy: when that does not fit, only
         * the whole blocks of the hit are used (which fits whenever the
         * request fits cold). */
        const int avail = kv_cache_available(&e->cache) - e->outstanding;
        int hit_evictable;
        int hit = kv_cache_peek(&e->cache, r->prompt, n_prompt - 1, &hit_evictable);
        int need = request_blocks(r, e->block_size, hit);
        if (avail - hit_evictable < need && hit % e->block_size) {
            hit = kv_cache_peek(&e->cache, r->prompt, hit / e->block_size * e->block_size, &hit_evictable);
            need = request_blocks(r, e->block_size, hit);
        }
        if (avail - hit_evictable < need) return;

        sequence *s = new_sequence(e, r, 0);
        if (!s) return; /* out of memory: try again next step */
        pthread_mutex_lock(&e->mu);
        e->queue_head = r->next;
        if (!e->queue_head) e->queue_tail = NULL;
        e->n_queued--;
        r->next = e->admitted;
        e->admitted = r;
        r->admitted = true;
        pthread_mutex_unlock(&e->mu);
        r->t_admit = now_ms();

        kv_cache_match(&e->cache, r->prompt, hit, s->blocks);
        if (e->cache.prefix_enabled) e->cache.query_tokens += (uint64_t)(n_prompt - hit); /* the whole prompt was looked up */
        s->n_blocks = blocks_for(hit, e->block_size);
        s->n_hit = s->n_cached = hit;
        memcpy(s->tokens, r->prompt, (size_t)n_prompt * sizeof *s->tokens);
        s->n_tokens = n_prompt;
        for (int i = 0; i < n_prompt; i++) inf_sampler_accept(s->sampler, r->prompt[i]);
        s->reserve = need;
        e->outstanding += need;
        e->running[e->n_running++] = s;
        e->n_slots += r->req.n;
    }
}

/* Delivers DONE for every completion of a request cancelled in the queue. */
static void cancel_queued(engine_request *r) {
    r->t_admit = now_ms();
    for (int i = 0; i < r->req.n; i++) {
        sequence s = {.r = r, .index = i, .finish = INF_FINISH_CANCELLED};
        emit_done(&s, "", 0);
    }
    free_request(r);
}

/* Drops finished sequences; frees requests with no completion left. */
static void reap(inf_engine *e) {
    int kept = 0;
    for (int i = 0; i < e->n_running; i++) {
        sequence *s = e->running[i];
        if (!s->done) {
            e->running[kept++] = s;
            continue;
        }
        release_sequence(e, s);
        e->n_slots--;
        engine_request *r = s->r;
        free_sequence(s);
        if (--r->n_live == 0) {
            pthread_mutex_lock(&e->mu);
            for (engine_request **at = &e->admitted; *at; at = &(*at)->next)
                if (*at == r) {
                    *at = r->next;
                    break;
                }
            pthread_mutex_unlock(&e->mu);
            free_request(r);
        }
    }
    e->n_running = kept;
}

/* The end of a prompt: forks the other completions, then samples each. */
static void prompt_done(inf_engine *e, sequence *s, const float *logits) {
    s->decoding = true;
    const int n = s->r->req.n;
    /* the forks join the running list at its end: admission counted their
     * slots (n_slots), so the list (max_seqs long) has room for them */
    sequence **forks = e->running + e->n_running;
    int n_forks = 0;
    /* the reservation was made for all completions; spread it */
    const int per_fork = blocks_for(s->r->n_ctx_need, e->block_size) - (int)s->r->req.n_prompt / e->block_size;
    for (int i = 1; i < n; i++) {
        sequence *f = fork_sequence(e, s, i);
        if (!f) { /* out of memory: this completion ends at once */
            sequence gone = {.r = s->r, .index = i, .finish = INF_FINISH_CANCELLED};
            emit_done(&gone, "", 0);
            s->r->n_live--;
            e->n_slots--;
            continue;
        }
        f->reserve = INF_MIN(per_fork, s->reserve);
        s->reserve -= f->reserve;
        forks[n_forks++] = f;
    }
    e->n_running += n_forks;
    sample_next(e, s, logits);
    for (int i = 0; i < n_forks; i++) sample_next(e, forks[i], logits);
}

inf_status inf_engine_step(inf_engine *e, bool *busy, inf_error *err) {
    *busy = false;
    for (engine_request *r = take_cancelled(e), *next; r; r = next) next = r->next, cancel_queued(r);
    for (int i = 0; i < e->n_running; i++) {
        sequence *s = e->running[i];
        if (!s->done || s->finish != INF_FINISH_CANCELLED) continue;
        finish(e, s, INF_FINISH_CANCELLED);
        if (!s->decoding) /* cancelled in its prompt: the completions it would have forked end too */
            for (int k = 1; k < s->r->req.n; k++) {
                sequence never = {.r = s->r, .index = k, .finish = INF_FINISH_CANCELLED};
                emit_done(&never, "", 0);
                s->r->n_live--;
                e->n_slots--;
            }
    }
    reap(e);
    admit(e);

    /* the batch: decode rows, then prompt chunks, oldest first, up to
     * prefill_chunk prompt tokens in all */
    int n_rows = 0, n_seqs = 0;
    inf_status st = INF_OK;
    for (int i = 0; i < e->n_running && !st; i++) {
        sequence *s = e->running[i];
        if (!s->decoding) continue;
        if (!make_writable(e, s, s->n_cached, 1)) {
            st = inf_errorf(err, INF_ERR_NOMEM, "the KV pool ran out of blocks (a reservation bug)");
            break;
        }
        e->batch_tokens[n_rows++] = s->tokens[s->n_cached];
        e->batch_rows[n_seqs] = (qwen3_seq_rows){
            .n = 1, .pos0 = s->n_cached, .decode = true, .blocks = s->blocks, .n_logits = 1};
        e->batch_seqs[n_seqs++] = s;
    }
    int budget = e->prefill_chunk;
    for (int i = 0; i < e->n_running && !st && budget > 0; i++) {
        sequence *s = e->running[i];
        if (s->decoding || s->done) continue;
        const int n = INF_MIN(budget, s->n_tokens - s->n_cached);
        budget -= n;
        if (!make_writable(e, s, s->n_cached, n)) {
            st = inf_errorf(err, INF_ERR_NOMEM, "the KV pool ran out of blocks (a reservation bug)");
            break;
        }
        memcpy(e->batch_tokens + n_rows, s->tokens + s->n_cached, (size_t)n * sizeof *e->batch_tokens);
        n_rows += n;
        e->batch_rows[n_seqs] = (qwen3_seq_rows){
            .n = n, .pos0 = s->n_cached, .blocks = s->blocks, .n_logits = s->n_cached + n == s->n_tokens ? 1 : 0};
        e->batch_seqs[n_seqs++] = s;
    }
    if (!st && n_seqs) {
        qwen3_forward(e->model, &e->work, &e->cache.kv, e->batch_tokens, e->batch_rows, n_seqs, e->logits);
        e->steps++;
        int out = 0;
        for (int i = 0; i < n_seqs; i++) {
            sequence *s = e->batch_seqs[i];
            s->n_cached += e->batch_rows[i].n;
            if (!s->decoding && s->r->req.report_progress && !s->done) {
                inf_event ev = {.kind = INF_EVENT_PROMPT, .request = s->r->id, .token = -1, .text = "",
                                .n_prompt = (int)s->r->req.n_prompt, .n_cached = s->n_cached};
                s->r->req.on_event(&ev, s->r->req.user);
            }
            if (!e->batch_rows[i].n_logits) continue;
            const float *row = e->logits + (size_t)out++ * (size_t)e->n_vocab;
            if (s->done) continue; /* cancelled meanwhile: nothing more */
            if (s->decoding) sample_next(e, s, row);
            else prompt_done(e, s, row);
        }
    }
    reap(e);

    pthread_mutex_lock(&e->mu);
    e->stats.blocks_free = e->cache.n_free;
    e->stats.blocks_cached = e->cache.n_evictable;
    e->stats.running = e->n_running;
    e->stats.steps = e->steps;
    e->stats.prefix_queries = e->cache.queries;
    e->stats.prefix_query_tokens = e->cache.query_tokens;
    e->stats.prefix_hit_tokens = e->cache.hit_tokens;
    e->stats.prefix_evictions = e->cache.evictions;
    *busy = e->n_running > 0 || e->queue_head != NULL;
    pthread_mutex_unlock(&e->mu);
    return st;
}

inf_status inf_engine_run(inf_engine *e, inf_error *err) {
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->stop && !e->queue_head && e->n_running == 0) pthread_cond_wait(&e->wake, &e->mu);
        const bool stop = e->stop;
        e->stop = false;
        pthread_mutex_unlock(&e->mu);
        if (stop) return INF_OK;
        bool busy;
        inf_status st = inf_engine_step(e, &busy, err);
        if (st) return st;
    }
}

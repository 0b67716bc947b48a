/*
 * test_engine.c — the multi-sequence engine (src/engine/):
 *   - batch invariance: random mixes of 1 to 16 sequences of different
 *     lengths, joining and leaving between steps, with the prefix cache on
 *     and off, on every kernel path this CPU runs and 1, 2 and 3 threads:
 *     every generated token's logits are bit-identical to the same request
 *     run alone, for all four weight types, and for Q6_K and Q4_0 models
 *     quantized as llama.cpp would (inf_model_quantize);
 *   - short suffixes: prompts whose cached prefix leaves 1 to 40 tokens to
 *     prefill (either side of every kernel threshold) against the same
 *     prompts cold;
 *   - parallel sampling: completion i of an n-request equals the request
 *     run alone with seed + i;
 *   - the engine against a session (the golden-tested path): bit-identical
 *     logits for the prompt and each decode step;
 *   - the block pool and prefix tree: LRU eviction order, copy on write,
 *     partial blocks;
 *   - block accounting over thousands of random requests and cancellations;
 *   - queueing when the pool is full, refusal of what can never fit,
 *     cancellation in the queue, during prefill and during decode;
 *   - submit and cancel from other threads while one thread drives the
 *     engine (scripts/check.sh runs this part alone under ThreadSanitizer).
 * Models are small synthetic ones written to a temporary directory.
 */
#include "engine/kv_cache.h"
#include "harness.h"
#include "inferno.h"
#include "tiny_model.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_VOCAB = 512, MAX_GEN = 16, MAX_REQ = 16, MAX_PROMPT = 96 };

/* One model per weight type, the same geometry and seed. */
static const inf_dtype weight_types[4] = {INF_DTYPE_Q8_0, INF_DTYPE_F32, INF_DTYPE_F16, INF_DTYPE_BF16};
static char paths[4][256];
#define path_q8 paths[0]
static char path_q6_k[256], path_q4_0[256]; /* the block types (write_quant_models) */

static const char *model_path(inf_dtype type) {
    if (type == INF_DTYPE_Q6_K) return path_q6_k;
    if (type == INF_DTYPE_Q4_0) return path_q4_0;
    for (int i = 0; i < 4; i++)
        if (weight_types[i] == type) return paths[i];
    return paths[0];
}

static uint64_t rng_state = 20261201;
static uint32_t rnd(uint32_t n) { return (uint32_t)(test_rng_next(&rng_state) % n); }

static void write_model(const char *path, inf_dtype type) {
    inf_synth_options o;
    test_tiny_model_options(&o);
    o.head_dim = 32;
    o.weight_type = type;
    o.seed = 11;
    inf_error err = {0};
    if (inf_synth_write(&o, path, &err)) {
        fprintf(stderr, "synth %s: %s\n", path, err.msg);
        exit(1);
    }
}

/* Models of the GGUF block types: an F32 model with widths of 256,
 * quantized as llama.cpp would to Q6_K (every matrix a K-quant, whose
 * kernels are exact like Q8_0's) and to Q4_0 (32-blocks, whose decode and
 * prefill rows run different kernels, like F32; the tied embedding Q6_K). */
static void write_quant_models(const char *dir) {
    char f32[300];
    snprintf(f32, sizeof f32, "%s/f32-256.gguf", dir);
    inf_synth_options o;
    inf_synth_options_default(&o);
    o.n_layer = 2, o.n_embd = 256, o.n_ff = 256, o.n_head = 4, o.n_head_kv = 2, o.head_dim = 64;
    o.n_ctx_train = 1024, o.weight_type = INF_DTYPE_F32, o.tokenizer_json = TEST_TOKENIZER_JSON;
    o.tokenizer_config_json = NULL, o.n_vocab = N_VOCAB, o.seed = 12;
    inf_error err = {0};
    if (inf_synth_write(&o, f32, &err) || inf_model_quantize(f32, path_q6_k, "q6_k", 2, NULL, NULL, &err) ||
        inf_model_quantize(f32, path_q4_0, "q4_0", 2, NULL, NULL, &err)) {
        fprintf(stderr, "block-type models: %s\n", err.msg);
        exit(1);
    }
}

static inf_model *load(const char *path, int threads, inf_kv_type kv) {
    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = threads;
    opt.kv_type = kv;
    opt.use_mmap = false;
    opt.n_ctx = 256;
    inf_model *m = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(inf_model_load(path, &opt, &m, &err) == INF_OK, "load %s: %s", path, err.msg)) return NULL;
    return m;
}

/* ------------------------------------------------------------------ what a request produced */

typedef struct completion {
    int32_t tokens[MAX_GEN + 1];
    float *logits; /* [MAX_GEN + 1][N_VOCAB] */
    int n;
    bool done;
    inf_finish_reason finish;
    int n_cached;
    char text[4096];
    size_t text_len;
} completion;

typedef struct outcome {
    completion c[4];
    int n_done;
} outcome;

static void on_event(const inf_event *ev, void *user) {
    outcome *o = user;
    completion *c = &o->c[ev->index];
    if (ev->text_len && c->text_len + ev->text_len < sizeof c->text) {
        memcpy(c->text + c->text_len, ev->text, ev->text_len);
        c->text_len += ev->text_len;
    }
    if (ev->kind == INF_EVENT_DONE) {
        c->done = true;
        c->finish = ev->finish;
        c->n_cached = ev->n_cached;
        o->n_done++;
        return;
    }
    if (c->n <= MAX_GEN) { /* the first MAX_GEN + 1 are kept */
        c->tokens[c->n] = ev->token;
        if (ev->logits && c->logits) memcpy(c->logits + (size_t)c->n * N_VOCAB, ev->logits, N_VOCAB * sizeof(float));
    }
    c->n++;
}

static void outcome_init(outcome *o) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < 4; i++) o->c[i].logits = calloc((MAX_GEN + 1) * (size_t)N_VOCAB, sizeof(float));
}

static void outcome_free(outcome *o) {
    for (int i = 0; i < 4; i++) free(o->c[i].logits);
}

typedef struct req_spec {
    int32_t prompt[MAX_PROMPT];
    int n_prompt;
    int max_tokens;
    int n;
    float temperature;
    uint64_t seed;
    int submit_step; /* joins before this step */
} req_spec;

static void make_request(const req_spec *sp, outcome *o, inf_request *r) {
    inf_request_default(r);
    r->prompt = sp->prompt;
    r->n_prompt = (size_t)sp->n_prompt;
    r->max_tokens = sp->max_tokens;
    r->n = sp->n;
    r->sampling.temperature = sp->temperature;
    r->sampling.seed = sp->seed;
    r->ignore_eog = true;
    r->want_logits = true;
    r->on_event = on_event;
    r->user = o;
}

static void engine_opts(inf_engine_options *o, bool prefix, int block_size, int chunk) {
    inf_engine_options_default(o);
    o->n_ctx = 256;
    o->block_size = block_size;
    o->prefill_chunk = chunk;
    o->max_seqs = 16;
    o->no_prefix_cache = !prefix;
}

static void step_until_idle(inf_engine *e) {
    bool busy = true;
    inf_error err;
    for (int i = 0; busy && i < 10000; i++)
        if (inf_engine_step(e, &busy, &err)) break;
}

/* Runs the specs: each submitted before its submit_step; until all done. */
static bool run_specs(inf_model *m, const inf_engine_options *eo, const req_spec *specs, int n, outcome *out) {
    inf_engine *e = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(inf_engine_new(m, eo, &e, &err) == INF_OK, "engine: %s", err.msg)) return false;
    bool ok = true;
    int submitted = 0;
    for (int step = 0; ok && step < 10000; step++) {
        for (int i = 0; i < n; i++) {
            if (specs[i].submit_step != step) continue;
            inf_request r;
            make_request(&specs[i], &out[i], &r);
            ok = TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit: %s", err.msg);
            submitted++;
        }
        bool busy = false;
        ok = ok && TEST_CHECK(inf_engine_step(e, &busy, &err) == INF_OK, "step: %s", err.msg);
        if (!busy && submitted == n) break;
    }
    inf_engine_stats st;
    inf_engine_get_stats(e, &st);
    ok = ok && TEST_CHECK(st.running == 0 && st.queued == 0, "engine idle at the end");
    ok = ok && TEST_CHECK(st.blocks_free + st.blocks_cached == st.blocks_total, "no block leaked: %d free + %d cached of %d",
                          st.blocks_free, st.blocks_cached, st.blocks_total);
    inf_engine_free(e);
    return ok;
}

static bool same_completion(const completion *a, const completion *b, const char *what) {
    if (!TEST_CHECK(a->done && b->done && a->n == b->n, "%s: %d vs %d tokens", what, a->n, b->n)) return false;
    for (int t = 0; t < a->n && t <= MAX_GEN; t++) {
        if (!TEST_CHECK(a->tokens[t] == b->tokens[t], "%s: token %d differs (%d vs %d)", what, t, a->tokens[t], b->tokens[t]))
            return false;
        if (!TEST_CHECK(memcmp(a->logits + (size_t)t * N_VOCAB, b->logits + (size_t)t * N_VOCAB, N_VOCAB * sizeof(float)) == 0,
                        "%s: logits of token %d are not bit-identical", what, t))
            return false;
    }
    return true;
}

/* Random requests; some share prefixes of a common stem. */
static void random_specs(req_spec *specs, int n, int max_step) {
    int32_t stem[MAX_PROMPT];
    for (int i = 0; i < MAX_PROMPT; i++) stem[i] = (int32_t)rnd(N_VOCAB);
    for (int i = 0; i < n; i++) {
        req_spec *s = &specs[i];
        memset(s, 0, sizeof *s);
        s->n_prompt = 1 + (int)rnd(MAX_PROMPT);
        const int shared = rnd(2) ? (int)rnd((uint32_t)s->n_prompt + 1) : 0;
        for (int t = 0; t < s->n_prompt; t++) s->prompt[t] = t < shared ? stem[t] : (int32_t)rnd(N_VOCAB);
        s->max_tokens = 1 + (int)rnd(MAX_GEN);
        s->n = 1;
        s->temperature = 0;
        s->submit_step = (int)rnd((uint32_t)max_step + 1);
    }
}

static void test_invariance(const char *isa, int threads, inf_dtype type, bool prefix) {
    char what[160];
    snprintf(what, sizeof what, "invariance %s t=%d %s prefix=%s", isa, threads, inf_dtype_name(type), prefix ? "on" : "off");
    test_begin(what);
    inf_model *m = load(model_path(type), threads, INF_KV_F16);
    if (!m) return;
    enum { ROUNDS = 2 };
    for (int round = 0; round < ROUNDS; round++) {
        const int n = 1 + (int)rnd(MAX_REQ);
        req_spec specs[MAX_REQ];
        random_specs(specs, n, 12);
        outcome alone[MAX_REQ], mixed[MAX_REQ];
        inf_engine_options eo;
        bool ok = true;
        for (int i = 0; i < n && ok; i++) {
            outcome_init(&alone[i]);
            req_spec one = specs[i];
            one.submit_step = 0;
            engine_opts(&eo, false, 16, 32);
            ok = run_specs(m, &eo, &one, 1, &alone[i]);
        }
        for (int i = 0; i < n; i++) outcome_init(&mixed[i]);
        engine_opts(&eo, prefix, 16, 32);
        /* twice through one engine with the prefix cache: the second time hits */
        ok = ok && run_specs(m, &eo, specs, n, mixed);
        for (int i = 0; i < n && ok; i++) {
            char w[200];
            snprintf(w, sizeof w, "%s round %d request %d (prompt %d, gen %d)", what, round, i, specs[i].n_prompt,
                     specs[i].max_tokens);
            ok = same_completion(&alone[i].c[0], &mixed[i].c[0], w);
        }
        for (int i = 0; i < n; i++) outcome_free(&alone[i]), outcome_free(&mixed[i]);
    }
    inf_model_free(m);
}

/* A prompt whose first 24 tokens are cached leaves a chunk of k tokens
 * to prefill; cold, the same prompt runs as chunks of 32 and the rest.
 * Every k from 1 to 40 crosses the kernels' token thresholds (the gemm's
 * 8, the AMX tiles' 16 and 32) on one side or the other: the logits of
 * the prompt and of the decode steps after it must be bit-identical. */
static void test_short_suffixes(const char *isa, inf_dtype type) {
    char what[160];
    snprintf(what, sizeof what, "short suffixes after a prefix hit %s %s", isa, inf_dtype_name(type));
    test_begin(what);
    inf_model *m = load(model_path(type), 2, INF_KV_F16);
    if (!m) return;
    enum { STEM = 24, MAX_SUFFIX = 40 };
    req_spec stem = {.n_prompt = STEM, .max_tokens = 1, .n = 1};
    for (int i = 0; i < STEM; i++) stem.prompt[i] = (int32_t)rnd(N_VOCAB);
    inf_engine_options eo;
    engine_opts(&eo, true, 16, 32);
    inf_engine *e = NULL;
    inf_error err = {0};
    bool ok = TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine: %s", err.msg);
    for (int k = 1; ok && k <= MAX_SUFFIX; k++) {
        outcome first, cached, cold;
        outcome_init(&first), outcome_init(&cached), outcome_init(&cold);
        req_spec sp = stem; /* the stem, then k tokens no earlier prompt had */
        sp.n_prompt = STEM + k;
        sp.max_tokens = 3;
        sp.prompt[STEM] = (int32_t)k; /* no earlier suffix starts so */
        for (int i = STEM + 1; i < sp.n_prompt; i++) sp.prompt[i] = (int32_t)rnd(N_VOCAB);
        inf_request r;
        make_request(&stem, &first, &r); /* caches the stem (again: earlier suffixes' blocks may be evicted) */
        ok = TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit: %s", err.msg);
        step_until_idle(e);
        make_request(&sp, &cached, &r);
        ok = ok && TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit: %s", err.msg);
        step_until_idle(e);
        ok = ok && TEST_CHECK(cached.c[0].n_cached == STEM, "suffix %d: %d prompt tokens came from the cache", k,
                              cached.c[0].n_cached);
        inf_engine_options cold_opts;
        engine_opts(&cold_opts, false, 16, 32);
        ok = ok && run_specs(m, &cold_opts, &sp, 1, &cold);
        char w[200];
        snprintf(w, sizeof w, "%s: suffix of %d after %d cached", what, sp.n_prompt - cached.c[0].n_cached,
                 cached.c[0].n_cached);
        ok = ok && same_completion(&cold.c[0], &cached.c[0], w);
        outcome_free(&first), outcome_free(&cached), outcome_free(&cold);
    }
    inf_engine_free(e);
    inf_model_free(m);
}

/* The same prompts again through one engine: the second pass hits the
 * prefix cache and must give the same logits. */
static void test_prefix_hits(void) {
    test_begin("prefix cache hits give the same logits");
    inf_model *m = load(path_q8, 2, INF_KV_F16);
    if (!m) return;
    inf_engine_options eo;
    engine_opts(&eo, true, 16, 32);
    inf_engine *e = NULL;
    inf_error err = {0};
    TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine: %s", err.msg);
    req_spec sp = {.n_prompt = 70, .max_tokens = 6, .n = 1};
    for (int i = 0; i < sp.n_prompt; i++) sp.prompt[i] = (int32_t)rnd(N_VOCAB);
    outcome first, second, turn2;
    outcome_init(&first), outcome_init(&second), outcome_init(&turn2);
    inf_request r;
    bool busy = true;
    make_request(&sp, &first, &r);
    TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit");
    while (busy && inf_engine_step(e, &busy, &err) == INF_OK) {}
    make_request(&sp, &second, &r);
    TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit");
    busy = true;
    while (busy && inf_engine_step(e, &busy, &err) == INF_OK) {}
    TEST_CHECK(second.c[0].n_cached == sp.n_prompt - 1, "the repeat reuses %d of %d prompt tokens", second.c[0].n_cached,
               sp.n_prompt);
    same_completion(&first.c[0], &second.c[0], "repeat with a prefix hit");
    /* a second turn: the first turn's prompt and answer, then more */
    req_spec sp2 = sp;
    for (int i = 0; i < first.c[0].n - 1; i++) sp2.prompt[sp.n_prompt + i] = first.c[0].tokens[i];
    sp2.n_prompt = sp.n_prompt + first.c[0].n - 1;
    for (int i = 0; i < 5; i++) sp2.prompt[sp2.n_prompt++] = (int32_t)rnd(N_VOCAB);
    make_request(&sp2, &turn2, &r);
    TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit");
    busy = true;
    while (busy && inf_engine_step(e, &busy, &err) == INF_OK) {}
    TEST_CHECK(turn2.c[0].n_cached == sp.n_prompt + first.c[0].n - 1,
               "the next turn reuses the earlier prompt and answer: %d tokens", turn2.c[0].n_cached);
    inf_engine_stats st;
    inf_engine_get_stats(e, &st);
    TEST_CHECK(st.prefix_queries == 3 && st.prefix_hit_tokens == (uint64_t)(second.c[0].n_cached + turn2.c[0].n_cached),
               "counters: %llu queries, %llu hit tokens", (unsigned long long)st.prefix_queries,
               (unsigned long long)st.prefix_hit_tokens);
    /* the second turn alone, cold */
    outcome cold;
    outcome_init(&cold);
    engine_opts(&eo, false, 16, 32);
    run_specs(m, &eo, &sp2, 1, &cold);
    same_completion(&cold.c[0], &turn2.c[0], "next turn, cached vs cold");
    outcome_free(&first), outcome_free(&second), outcome_free(&turn2), outcome_free(&cold);
    inf_engine_free(e);
    inf_model_free(m);
}

static void test_parallel_sampling(void) {
    test_begin("n completions fork from one prefill");
    inf_model *m = load(path_q8, 2, INF_KV_F16);
    if (!m) return;
    req_spec sp = {.n_prompt = 40, .max_tokens = 10, .n = 3, .temperature = 0.9f, .seed = 1234};
    for (int i = 0; i < sp.n_prompt; i++) sp.prompt[i] = (int32_t)rnd(N_VOCAB);
    inf_engine_options eo;
    engine_opts(&eo, true, 16, 32);
    outcome forked;
    outcome_init(&forked);
    run_specs(m, &eo, &sp, 1, &forked);
    TEST_CHECK(forked.n_done == 3, "three DONE events: %d", forked.n_done);
    for (int i = 0; i < 3; i++) {
        req_spec one = sp;
        one.n = 1;
        one.seed = sp.seed + (uint64_t)i;
        outcome alone;
        outcome_init(&alone);
        engine_opts(&eo, false, 16, 32);
        run_specs(m, &eo, &one, 1, &alone);
        char w[64];
        snprintf(w, sizeof w, "completion %d", i);
        same_completion(&alone.c[0], &forked.c[i], w);
        outcome_free(&alone);
    }
    outcome_free(&forked);
    inf_model_free(m);
}

/* The engine's first token logits against a session's on the same prompt;
 * blocks of 4 put the prompt's 20 blocks in two runs of the pool (model.h,
 * qwen3_kv), blocks of 16 in one. */
static void test_engine_vs_session(int block_size) {
    char what[64];
    snprintf(what, sizeof what, "engine vs session, blocks of %d", block_size);
    test_begin(what);
    inf_model *m = load(path_q8, 2, INF_KV_F32);
    if (!m) return;
    req_spec sp = {.n_prompt = 77, .max_tokens = 3, .n = 1};
    for (int i = 0; i < sp.n_prompt; i++) sp.prompt[i] = (int32_t)rnd(N_VOCAB);
    inf_engine_options eo;
    engine_opts(&eo, false, block_size, 512);
    outcome o;
    outcome_init(&o);
    run_specs(m, &eo, &sp, 1, &o);
    inf_session *s = NULL;
    inf_error err = {0};
    float *logits = malloc(N_VOCAB * sizeof(float));
    TEST_CHECK(inf_session_new(m, 256, &s, &err) == INF_OK, "session");
    TEST_CHECK(inf_session_eval(s, sp.prompt, sp.n_prompt, INF_LOGITS_LAST, logits, &err) == INF_OK, "eval");
    /* the same kernels on the same rows: the paged cache reads as the contiguous one */
    TEST_CHECK(memcmp(logits, o.c[0].logits, N_VOCAB * sizeof(float)) == 0, "prompt logits are bit-identical");
    for (int t = 1; t < o.c[0].n; t++) {
        TEST_CHECK(inf_session_eval(s, &o.c[0].tokens[t - 1], 1, INF_LOGITS_LAST, logits, &err) == INF_OK, "decode");
        TEST_CHECK(memcmp(logits, o.c[0].logits + (size_t)t * N_VOCAB, N_VOCAB * sizeof(float)) == 0,
                   "decode step %d: logits are bit-identical", t);
    }
    free(logits);
    inf_session_free(s);
    outcome_free(&o);
    inf_model_free(m);
}

/* ------------------------------------------------------------------ pool and tree */

/* The ranges a backend was asked to ready for writing (buffer_prefault). */
static struct {
    const char *p[4096];
    size_t n[4096];
    int count;
} readied;

static void record_prefault(const inf_ops *self, void *p, size_t n) {
    (void)self;
    if (readied.count < 4096) readied.p[readied.count] = p, readied.n[readied.count] = n;
    readied.count++;
}

/* Whether the recorded ranges lie in [base, base + bytes) and cover the K
 * (or V) rows of positions [p0, p1) of every layer and head, and nothing
 * else: the rows' bytes add up to the ranges'. */
static bool readied_exactly(const inf_model *m, const qwen3_kv *kv, void *base, const int32_t *blocks, int p0,
                            int p1) {
    const size_t bytes = qwen3_kv_bytes(m, kv->block_size, kv->n_blocks, kv->run_shift);
    const size_t row = inf_kv_type_bytes(m->opt.kv_type, (size_t)m->cfg.head_dim);
    size_t in_base = 0, rows = 0;
    for (int i = 0; i < readied.count; i++) {
        if (readied.p[i] < (const char *)base || readied.p[i] >= (const char *)base + bytes) continue;
        if (readied.p[i] + readied.n[i] > (const char *)base + bytes) return false;
        in_base += readied.n[i];
    }
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const inf_kv_view v = qwen3_kv_view(m, kv, base, l, blocks);
        for (int h = 0; h < m->cfg.n_head_kv; h++)
            for (int p = p0; p < p1; p++, rows++) {
                const char *r = (const char *)v.data + inf_kv_type_bytes(v.type, inf_kv_elem(&v, p, h));
                bool covered = false;
                for (int i = 0; i < readied.count && !covered; i++)
                    covered = r >= readied.p[i] && r + row <= readied.p[i] + readied.n[i];
                if (!covered) return false;
            }
    }
    return in_base == rows * row;
}

static void test_kv_prefault(void) {
    test_begin("kv memory is readied for writing before its first use, and only that");
    inf_model *m = load(path_q8, 1, INF_KV_F16);
    if (!m) return;
    inf_ops recording = *m->backend;
    recording.buffer_prefault = record_prefault;
    const inf_ops *backend = m->backend;
    m->backend = &recording;
    kv_cache c;
    inf_error err = {0};
    if (TEST_CHECK(kv_cache_init(&c, m, 4, 6, false, &err) == INF_OK, "init: %s", err.msg)) {
        readied.count = 0;
        const int32_t b = kv_cache_alloc(&c);
        TEST_CHECK(readied_exactly(m, &c.kv, c.kv.k, &b, 0, 4) && readied_exactly(m, &c.kv, c.kv.v, &b, 0, 4) &&
                       readied.count == 2 * m->cfg.n_layer * m->cfg.n_head_kv,
                   "a new block: its K and V rows, a range per layer and head (%d ranges)", readied.count);
        kv_cache_unref(&c, b);
        readied.count = 0;
        TEST_CHECK(kv_cache_alloc(&c) == b && readied.count == 0, "a block used before: nothing");
        /* positions 3..9 of a sequence whose blocks are 5, 1, 2: three runs of rows per head */
        const int32_t table[3] = {5, 1, 2};
        readied.count = 0;
        qwen3_kv_prefault_positions(m, &c.kv, table, 3, 10);
        TEST_CHECK(readied_exactly(m, &c.kv, c.kv.k, table, 3, 10) &&
                       readied_exactly(m, &c.kv, c.kv.v, table, 3, 10),
                   "positions 3..9 through a block table: their rows exactly (%d ranges)", readied.count);
        kv_cache_free(&c);
    }
    /* a session readies its next positions before writing them */
    inf_session *s = NULL;
    if (TEST_CHECK(inf_session_new(m, 100, &s, &err) == INF_OK, "session: %s", err.msg)) {
        int32_t toks[70];
        for (int i = 0; i < 70; i++) toks[i] = 10 + i;
        readied.count = 0;
        TEST_CHECK(inf_session_eval(s, toks, 3, INF_LOGITS_NONE, NULL, &err) == INF_OK, "eval: %s", err.msg);
        TEST_CHECK(readied_exactly(m, &s->kv, s->kv.k, inf_kv_single_block, 0, 64) &&
                       readied_exactly(m, &s->kv, s->kv.v, inf_kv_single_block, 0, 64),
                   "3 tokens: positions 0..63");
        readied.count = 0;
        TEST_CHECK(inf_session_eval(s, toks, 61, INF_LOGITS_NONE, NULL, &err) == INF_OK, "eval: %s", err.msg);
        TEST_CHECK(readied_exactly(m, &s->kv, s->kv.k, inf_kv_single_block, 0, 0), "up to 64: nothing more");
        readied.count = 0;
        TEST_CHECK(inf_session_eval(s, toks, 1, INF_LOGITS_NONE, NULL, &err) == INF_OK, "eval: %s", err.msg);
        TEST_CHECK(readied_exactly(m, &s->kv, s->kv.k, inf_kv_single_block, 64, 100) &&
                       readied_exactly(m, &s->kv, s->kv.v, inf_kv_single_block, 64, 100),
                   "position 64: up to the context's end, 99");
        inf_session_free(s);
    }
    m->backend = backend;
    inf_model_free(m);
}

static void test_kv_cache(void) {
    test_begin("kv cache: LRU eviction, partial blocks, copy on write");
    inf_model *m = load(path_q8, 1, INF_KV_F16);
    if (!m) return;
    kv_cache c;
    inf_error err = {0};
    TEST_CHECK(kv_cache_init(&c, m, 4, 6, true, &err) == INF_OK, "init: %s", err.msg);
    /* three sequences of 8 tokens (2 blocks each) finish into the tree */
    int32_t toks[3][8], blocks[3][2];
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 8; i++) toks[s][i] = 100 * s + i;
        blocks[s][0] = kv_cache_alloc(&c), blocks[s][1] = kv_cache_alloc(&c);
        kv_cache_insert(&c, toks[s], 8, blocks[s]);
        kv_cache_unref(&c, blocks[s][0]), kv_cache_unref(&c, blocks[s][1]);
    }
    TEST_CHECK(c.n_free == 0 && c.n_evictable == 6, "all six blocks cached: %d free, %d evictable", c.n_free, c.n_evictable);
    /* use sequence 0 again: it becomes the most recent */
    int32_t got[2];
    TEST_CHECK(kv_cache_match(&c, toks[0], 8, got) == 8 && got[0] == blocks[0][0] && got[1] == blocks[0][1], "match seq 0");
    TEST_CHECK(c.n_evictable == 4, "held blocks are not evictable: %d", c.n_evictable);
    kv_cache_unref(&c, got[0]), kv_cache_unref(&c, got[1]);
    /* allocation evicts leaves least recently used first: seq 1's tail, then seq 1's head (now a leaf) */
    const int32_t a = kv_cache_alloc(&c), b = kv_cache_alloc(&c);
    TEST_CHECK(a == blocks[1][1] && b == blocks[1][0], "LRU order: got %d, %d; want %d, %d", a, b, blocks[1][1], blocks[1][0]);
    TEST_CHECK(c.evictions == 2, "two evictions counted");
    kv_cache_unref(&c, b);
    int ev;
    TEST_CHECK(kv_cache_peek(&c, toks[1], 8, &ev) == 0, "seq 1 is gone");
    TEST_CHECK(kv_cache_peek(&c, toks[2], 6, &ev) == 6 && ev == 2, "a partial match of seq 2: 6 tokens over 2 evictable blocks");
    /* a partial block: 3 tokens under seq 2's first block */
    int32_t part[7] = {200, 201, 202, 203, 7, 8, 9};
    int32_t pb[2] = {blocks[2][0], a};
    kv_cache_ref(&c, blocks[2][0]);
    kv_cache_insert(&c, part, 7, pb);
    kv_cache_unref(&c, pb[0]), kv_cache_unref(&c, pb[1]);
    TEST_CHECK(kv_cache_peek(&c, part, 7, &ev) == 7, "the partial node matches 7 tokens");
    int32_t longer[9] = {200, 201, 202, 203, 7, 8, 9, 10, 11};
    TEST_CHECK(kv_cache_match(&c, longer, 9, got) == 7 && got[1] == a, "a longer prompt uses the partial block");
    TEST_CHECK(c.ref[a] == 2, "the partial block is shared: ref %d", c.ref[a]);
    /* copy on write: the engine copies a shared block before writing it */
    const int32_t copy = kv_cache_alloc(&c);
    TEST_CHECK(copy >= 0 && copy != a, "a block for the copy");
    const size_t pool_bytes = qwen3_kv_bytes(m, 4, 6, c.kv.run_shift);
    for (size_t i = 0; i < pool_bytes; i++) ((uint8_t *)c.kv.k)[i] = (uint8_t)(i * 7), ((uint8_t *)c.kv.v)[i] = (uint8_t)(i * 13);
    kv_cache_copy_block(&c, copy, a);
    bool copied = true;
    const size_t row = inf_kv_type_bytes(m->opt.kv_type, (size_t)m->cfg.head_dim);
    for (int half = 0; half < 2; half++)
        for (int l = 0; l < m->cfg.n_layer; l++) {
            const inf_kv_view from = qwen3_kv_view(m, &c.kv, half ? c.kv.v : c.kv.k, l, &a);
            const inf_kv_view to = qwen3_kv_view(m, &c.kv, half ? c.kv.v : c.kv.k, l, &copy);
            for (int h = 0; h < m->cfg.n_head_kv; h++)
                for (int p = 0; p < 4; p++)
                    copied &= memcmp((const char *)to.data + inf_kv_type_bytes(to.type, inf_kv_elem(&to, p, h)),
                                     (const char *)from.data + inf_kv_type_bytes(from.type, inf_kv_elem(&from, p, h)),
                                     row) == 0;
        }
    TEST_CHECK(copied, "the copy holds the block's rows of every layer and head, K and V");
    kv_cache_unref(&c, a);
    TEST_CHECK(c.ref[a] == 1 && c.node_of[a], "the tree still holds the original");
    kv_cache_unref(&c, got[0]), kv_cache_unref(&c, copy);
    int held = 0;
    for (int i = 0; i < 6; i++) held += c.ref[i];
    TEST_CHECK(held == c.n_nodes && c.n_free + c.n_evictable == 6, "only the tree holds blocks: %d refs, %d nodes", held,
               c.n_nodes);
    kv_cache_free(&c);
    inf_model_free(m);
}

/* Random sequences through a small pool, as the engine drives it: match
 * the longest prefix, copy a partly matched block, allocate the rest
 * (evicting), hold it a while, then insert and release. After every step
 * kv_cache_check walks the tree: counts, and an eviction heap that holds
 * exactly the evictable leaves in LRU order. */
static void test_kv_cache_churn(void) {
    test_begin("kv cache: bookkeeping and the eviction heap under churn");
    inf_model *m = load(path_q8, 1, INF_KV_F16);
    if (!m) return;
    enum { BS = 4, N_BLOCKS = 24, LIVE = 3, MAX_TOK = 44, MAX_B = MAX_TOK / BS };
    kv_cache c;
    inf_error err = {0};
    if (!TEST_CHECK(kv_cache_init(&c, m, BS, N_BLOCKS, true, &err) == INF_OK, "init: %s", err.msg)) {
        inf_model_free(m);
        return;
    }
    typedef struct held_seq {
        int32_t tokens[MAX_TOK], blocks[MAX_B];
        int n, n_blocks;
    } held_seq;
    held_seq live[LIVE];
    memset(live, 0, sizeof live);
    int32_t stems[4][MAX_TOK];
    for (int i = 0; i < 4; i++)
        for (int t = 0; t < MAX_TOK; t++) stems[i][t] = (int32_t)rnd(64);
    bool ok = true;
    int refused = 0;
    for (int it = 0; it < 4000 && ok; it++) {
        held_seq *sq = &live[rnd(LIVE)];
        if (sq->n_blocks) { /* it finishes: its tokens go to the tree */
            kv_cache_insert(&c, sq->tokens, sq->n, sq->blocks);
            for (int i = 0; i < sq->n_blocks; i++) kv_cache_unref(&c, sq->blocks[i]);
            sq->n_blocks = 0;
            ok = TEST_CHECK(kv_cache_check(&c), "iteration %d: after a release", it);
        }
        sq->n = 1 + (int)rnd(MAX_TOK);
        memcpy(sq->tokens, stems[rnd(4)], sizeof sq->tokens);
        for (int t = (int)rnd((uint32_t)sq->n + 1); t < sq->n; t++) sq->tokens[t] = (int32_t)rnd(64);
        const int hit = kv_cache_match(&c, sq->tokens, sq->n, sq->blocks);
        sq->n_blocks = (hit + BS - 1) / BS;
        bool fits = true;
        if (hit % BS) { /* the partly matched block is copied before it is written */
            const int32_t copy = kv_cache_alloc(&c);
            if (copy >= 0) {
                kv_cache_unref(&c, sq->blocks[sq->n_blocks - 1]);
                sq->blocks[sq->n_blocks - 1] = copy;
            }
            fits = copy >= 0;
        }
        while (fits && sq->n_blocks * BS < sq->n) {
            const int32_t b = kv_cache_alloc(&c);
            if (b >= 0) sq->blocks[sq->n_blocks++] = b;
            fits = b >= 0;
        }
        if (!fits) { /* the pool is held: this one gives up */
            for (int i = 0; i < sq->n_blocks; i++) kv_cache_unref(&c, sq->blocks[i]);
            sq->n_blocks = 0;
            refused++;
        }
        ok = ok && TEST_CHECK(kv_cache_check(&c), "iteration %d: after an admission", it);
    }
    for (int i = 0; i < LIVE; i++) {
        kv_cache_insert(&c, live[i].tokens, live[i].n, live[i].blocks);
        for (int k = 0; k < live[i].n_blocks; k++) kv_cache_unref(&c, live[i].blocks[k]);
    }
    TEST_CHECK(kv_cache_check(&c), "after the last release");
    TEST_CHECK(c.n_free + c.n_evictable == N_BLOCKS, "every block free or evictable: %d + %d", c.n_free, c.n_evictable);
    TEST_CHECK(c.evictions > 100 && c.hit_tokens > 0, "the churn evicted (%llu) and hit (%llu tokens); %d refused",
               (unsigned long long)c.evictions, (unsigned long long)c.hit_tokens, refused);
    while (kv_cache_alloc(&c) >= 0) {} /* everything can be evicted */
    TEST_CHECK(c.n_nodes == 0 && kv_cache_check(&c), "the tree empties: %d nodes left", c.n_nodes);
    kv_cache_free(&c);
    inf_model_free(m);
}

/* ------------------------------------------------------------------ accounting, queueing, cancelling */

typedef struct churn {
    outcome o;
    uint64_t id;
    int n; /* completions */
    bool submitted;
} churn;

static void test_accounting(bool prefix) {
    char what[64];
    snprintf(what, sizeof what, "accounting over random requests, prefix %s", prefix ? "on" : "off");
    test_begin(what);
    inf_model *m = load(path_q8, 2, INF_KV_F16);
    if (!m) return;
    inf_engine_options eo;
    engine_opts(&eo, prefix, 8, 16);
    eo.kv_pool_tokens = 8 * 40; /* 40 blocks: requests queue */
    inf_engine *e = NULL;
    inf_error err = {0};
    TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine: %s", err.msg);
    enum { N = 2000, LIVE = 24 };
    static churn live[LIVE];
    memset(live, 0, sizeof live);
    int32_t stem[64];
    for (int i = 0; i < 64; i++) stem[i] = (int32_t)rnd(N_VOCAB);
    int made = 0, done = 0, cancelled = 0, refused = 0;
    bool ok = e != NULL;
    for (int step = 0; ok && step < 200000 && done + refused < N; step++) {
        for (int k = 0; k < 3 && made < N; k++) {
            churn *slot = &live[rnd(LIVE)];
            if (slot->submitted) continue;
            memset(&slot->o, 0, sizeof slot->o);
            req_spec sp = {.n_prompt = 1 + (int)rnd(60), .max_tokens = 1 + (int)rnd(6), .n = 1 + (int)rnd(3) / 2,
                           .temperature = 0.8f, .seed = (uint64_t)made};
            for (int t = 0; t < sp.n_prompt; t++) sp.prompt[t] = rnd(3) ? stem[t] : (int32_t)rnd(N_VOCAB);
            if (rnd(50) == 0) sp.n_prompt = 90, sp.max_tokens = 400; /* can never fit: refused */
            inf_request r;
            make_request(&sp, &slot->o, &r);
            r.want_logits = false;
            made++;
            if (inf_engine_submit(e, &r, &slot->id, &err) != INF_OK) {
                refused++;
                continue;
            }
            slot->submitted = true;
            slot->n = sp.n;
        }
        if (rnd(4) == 0) {
            churn *slot = &live[rnd(LIVE)];
            if (slot->submitted && inf_engine_cancel(e, slot->id)) cancelled++;
        }
        bool busy;
        ok = TEST_CHECK(inf_engine_step(e, &busy, &err) == INF_OK, "step: %s", err.msg);
        for (int i = 0; i < LIVE; i++)
            if (live[i].submitted && live[i].o.n_done == live[i].n) {
                done++;
                live[i].submitted = false;
            }
    }
    bool busy = true;
    for (int i = 0; busy && i < 100000; i++) inf_engine_step(e, &busy, &err);
    int unfinished = 0;
    for (int i = 0; i < LIVE; i++) unfinished += live[i].submitted && live[i].o.n_done != live[i].n;
    TEST_CHECK(unfinished == 0, "every completion of every request got its DONE event (%d requests short)", unfinished);
    inf_engine_stats st;
    inf_engine_get_stats(e, &st);
    TEST_CHECK(refused > 0 && cancelled > 0, "the churn refused (%d) and cancelled (%d) requests", refused, cancelled);
    TEST_CHECK(st.running == 0 && st.queued == 0, "idle at the end");
    TEST_CHECK(st.blocks_free + st.blocks_cached == st.blocks_total, "no block leaked: %d free + %d cached of %d",
               st.blocks_free, st.blocks_cached, st.blocks_total);
    if (!prefix) TEST_CHECK(st.blocks_free == st.blocks_total, "without the prefix cache every block is free");
    else TEST_CHECK(st.prefix_hit_tokens > 0 && st.prefix_evictions > 0, "hits %llu, evictions %llu",
                    (unsigned long long)st.prefix_hit_tokens, (unsigned long long)st.prefix_evictions);
    inf_engine_free(e);
    inf_model_free(m);
}

/* Short prompts share a step: prompt chunks of several sequences go into
 * one forward pass, up to prefill_chunk prompt tokens in all. */
static void test_prompt_packing(void) {
    test_begin("several prompts in one step");
    inf_model *m = load(path_q8, 2, INF_KV_F16);
    if (!m) return;
    inf_engine_options eo;
    engine_opts(&eo, false, 16, 64);
    inf_engine *e = NULL;
    inf_error err = {0};
    TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine: %s", err.msg);
    /* four prompts of 12 tokens fit one chunk of 64; a fifth of 40 does not */
    outcome o[5];
    for (int i = 0; i < 5; i++) {
        req_spec sp = {.n_prompt = i < 4 ? 12 : 40, .max_tokens = 1, .n = 1};
        for (int k = 0; k < sp.n_prompt; k++) sp.prompt[k] = (int32_t)rnd(N_VOCAB);
        memset(&o[i], 0, sizeof o[i]);
        inf_request r;
        make_request(&sp, &o[i], &r);
        r.want_logits = false;
        TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit %d: %s", i, err.msg);
    }
    bool busy;
    TEST_CHECK(inf_engine_step(e, &busy, &err) == INF_OK, "step: %s", err.msg);
    for (int i = 0; i < 4; i++) TEST_CHECK(o[i].c[0].done, "prompt %d finished in the first step", i);
    TEST_CHECK(!o[4].c[0].done, "the fifth waits for the next step");
    TEST_CHECK(inf_engine_step(e, &busy, &err) == INF_OK && o[4].c[0].done, "then it finishes");
    inf_engine_free(e);
    inf_model_free(m);
}

static void test_queue_and_cancel(void) {
    test_begin("queueing, refusal, cancellation");
    inf_model *m = load(path_q8, 2, INF_KV_F16);
    if (!m) return;
    inf_engine_options eo;
    engine_opts(&eo, false, 16, 16);
    eo.kv_pool_tokens = 128; /* 8 blocks */
    inf_engine *e = NULL;
    inf_error err = {0};
    TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine: %s", err.msg);

    /* each needs 6 of the 8 blocks: they run one at a time, none fails */
    req_spec sp = {.n_prompt = 50, .max_tokens = 40, .n = 1};
    for (int i = 0; i < sp.n_prompt; i++) sp.prompt[i] = (int32_t)rnd(N_VOCAB);
    outcome o[3];
    for (int i = 0; i < 3; i++) {
        memset(&o[i], 0, sizeof o[i]);
        inf_request r;
        make_request(&sp, &o[i], &r);
        r.want_logits = false;
        TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_OK, "submit %d: %s", i, err.msg);
    }
    int most_running = 0;
    bool busy = true;
    for (int i = 0; busy && i < 1000; i++) {
        inf_engine_step(e, &busy, &err);
        inf_engine_stats st;
        inf_engine_get_stats(e, &st);
        if (st.running > most_running) most_running = st.running;
    }
    TEST_CHECK(most_running == 1, "a full pool runs one at a time (%d)", most_running);
    for (int i = 0; i < 3; i++)
        TEST_CHECK(o[i].c[0].done && o[i].c[0].finish == INF_FINISH_LENGTH && o[i].c[0].n == 40,
                   "request %d completed: done %d, %s, %d tokens", i, o[i].c[0].done, inf_finish_reason_name(o[i].c[0].finish),
                   o[i].c[0].n);

    /* never fits: refused at once */
    req_spec big = {.n_prompt = 90, .max_tokens = 60, .n = 1};
    outcome ob;
    memset(&ob, 0, sizeof ob);
    inf_request r;
    make_request(&big, &ob, &r);
    TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_ERR_CONTEXT_FULL, "a request that can never fit is refused");
    TEST_CHECK(strstr(err.msg, "KV blocks") != NULL, "the error says why: %s", err.msg);
    /* bad input */
    req_spec bad = {.n_prompt = 3, .prompt = {1, N_VOCAB, 2}, .n = 1};
    make_request(&bad, &ob, &r);
    TEST_CHECK(inf_engine_submit(e, &r, NULL, &err) == INF_ERR_INVALID && strstr(err.msg, "index 1"), "bad id: %s", err.msg);

    /* cancel during prefill: a 200-token prompt in chunks of 16 */
    inf_engine_free(e);
    eo.kv_pool_tokens = 0;
    TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine: %s", err.msg);
    req_spec lp = {.n_prompt = 90, .max_tokens = 50, .n = 1};
    for (int i = 0; i < lp.n_prompt; i++) lp.prompt[i] = (int32_t)rnd(N_VOCAB);
    outcome oc[3];
    uint64_t ids[3];
    for (int i = 0; i < 3; i++) {
        memset(&oc[i], 0, sizeof oc[i]);
        make_request(&lp, &oc[i], &r);
        r.want_logits = false;
        TEST_CHECK(inf_engine_submit(e, &r, &ids[i], &err) == INF_OK, "submit");
    }
    for (int i = 0; i < 2; i++) inf_engine_step(e, &busy, &err);
    TEST_CHECK(inf_engine_cancel(e, ids[0]), "cancel in prefill");
    inf_engine_step(e, &busy, &err);
    TEST_CHECK(oc[0].c[0].done && oc[0].c[0].finish == INF_FINISH_CANCELLED && oc[0].c[0].n == 0,
               "cancelled within one step, before any token");
    TEST_CHECK(!inf_engine_cancel(e, ids[0]), "a finished request cannot be cancelled again");
    for (int i = 0; i < 20 && oc[1].c[0].n < 3; i++) inf_engine_step(e, &busy, &err);
    TEST_CHECK(inf_engine_cancel(e, ids[1]), "cancel in decode");
    const int had = oc[1].c[0].n;
    inf_engine_step(e, &busy, &err);
    TEST_CHECK(oc[1].c[0].done && oc[1].c[0].finish == INF_FINISH_CANCELLED && oc[1].c[0].n == had,
               "cancelled in decode within one step");
    step_until_idle(e);
    TEST_CHECK(oc[2].c[0].done && oc[2].c[0].finish == INF_FINISH_LENGTH, "the third one completed");
    inf_engine_stats st;
    inf_engine_get_stats(e, &st);
    TEST_CHECK(st.blocks_free == st.blocks_total, "cancelling freed the blocks: %d of %d", st.blocks_free, st.blocks_total);
    /* cancel while queued */
    make_request(&lp, &oc[0], &r);
    memset(&oc[0], 0, sizeof oc[0]);
    TEST_CHECK(inf_engine_submit(e, &r, &ids[0], &err) == INF_OK, "submit");
    TEST_CHECK(inf_engine_cancel(e, ids[0]), "cancel queued");
    inf_engine_step(e, &busy, &err);
    TEST_CHECK(oc[0].c[0].done && oc[0].c[0].finish == INF_FINISH_CANCELLED && !busy, "queued request cancelled");
    inf_engine_free(e);
    inf_model_free(m);
}

/* ------------------------------------------------------------------ threads */

typedef struct thread_job {
    inf_engine *e;
    int seed;
    atomic_int *done_events;
    int submitted;
} thread_job;

static void count_done(const inf_event *ev, void *user) {
    if (ev->kind == INF_EVENT_DONE) atomic_fetch_add((atomic_int *)user, 1);
}

static void *submitter(void *arg) {
    thread_job *j = arg;
    for (int i = 0; i < 12; i++) {
        int32_t prompt[20];
        for (int t = 0; t < 20; t++) prompt[t] = (int32_t)((j->seed * 31 + i * 7 + t) % N_VOCAB);
        inf_request r;
        inf_request_default(&r);
        r.prompt = prompt;
        r.n_prompt = 10 + (size_t)(i % 10);
        r.max_tokens = 1 + i % 5;
        r.ignore_eog = true;
        r.sampling.temperature = 0;
        r.on_event = count_done;
        r.user = j->done_events;
        uint64_t id;
        inf_error err;
        if (inf_engine_submit(j->e, &r, &id, &err) == INF_OK) {
            j->submitted++;
            if (i % 3 == 0) inf_engine_cancel(j->e, id);
        }
        inf_engine_stats st;
        inf_engine_get_stats(j->e, &st);
    }
    return NULL;
}

static void *driver(void *arg) {
    inf_error err;
    inf_engine_run(arg, &err);
    return NULL;
}

static void test_threads(void) {
    test_begin("submit and cancel from other threads");
    inf_model *m = load(path_q8, 2, INF_KV_F16);
    if (!m) return;
    inf_engine_options eo;
    engine_opts(&eo, true, 16, 16);
    inf_engine *e = NULL;
    inf_error err;
    TEST_CHECK(inf_engine_new(m, &eo, &e, &err) == INF_OK, "engine");
    atomic_int done = 0;
    pthread_t drv, sub[3];
    thread_job jobs[3];
    pthread_create(&drv, NULL, driver, e);
    for (int i = 0; i < 3; i++) {
        jobs[i] = (thread_job){.e = e, .seed = i + 1, .done_events = &done};
        pthread_create(&sub[i], NULL, submitter, &jobs[i]);
    }
    int submitted = 0;
    for (int i = 0; i < 3; i++) pthread_join(sub[i], NULL), submitted += jobs[i].submitted;
    for (int i = 0; i < 6000 && atomic_load(&done) < submitted; i++) usleep(5000); /* at most 30 s */
    inf_engine_stop(e);
    pthread_join(drv, NULL);
    TEST_CHECK(atomic_load(&done) == submitted, "every request ended: %d of %d", atomic_load(&done), submitted);
    inf_engine_free(e);
    inf_model_free(m);
}

int main(void) {
    /* Under ThreadSanitizer (scripts/check.sh) only the threads matter: the
     * rest is single-threaded and slow there. */
#if defined(__SANITIZE_THREAD__)
    const bool threads_only = true;
#else
    const bool threads_only = false;
#endif
    const char *dir = test_tmpdir("engine");
    if (!dir) return 1;
    atexit(test_tmpdir_remove);
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s.gguf", dir, inf_dtype_name(weight_types[i]));
        if (i == 0 || !threads_only) write_model(paths[i], weight_types[i]);
    }
    snprintf(path_q6_k, sizeof path_q6_k, "%s/q6_k.gguf", dir);
    snprintf(path_q4_0, sizeof path_q4_0, "%s/q4_0.gguf", dir);
    if (!threads_only) write_quant_models(dir);
    if (!threads_only) {
        static const char *isas[] = {"ref", "avx2", "avx512", "avx512+amx", "neon"};
        for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
            if (TEST_UNDER_ASAN && strcmp(isas[i], "ref") == 0) {
                printf("ref: skipped under AddressSanitizer (the plain build runs it)\n");
                continue;
            }
            setenv("INFERNO_ISA", isas[i], 1);
            inf_load_options opt;
            inf_load_options_default(&opt);
            inf_model *probe = NULL;
            if (inf_model_load(path_q8, &opt, &probe, NULL) != INF_OK) {
                printf("%s: not supported on this CPU, skipped\n", isas[i]);
                continue;
            }
            inf_model_free(probe);
            for (int t = 1; t <= 3; t++)
                for (int k = 0; k < 4; k++) {
                    test_invariance(isas[i], t, weight_types[k], true);
                    if (k == 0 || t == 2) test_invariance(isas[i], t, weight_types[k], false);
                }
            test_invariance(isas[i], 2, INF_DTYPE_Q6_K, true);
            test_invariance(isas[i], 2, INF_DTYPE_Q4_0, true);
            for (int k = 0; k < 4; k++) test_short_suffixes(isas[i], weight_types[k]);
        }
        unsetenv("INFERNO_ISA");
        test_prefix_hits();
        test_prompt_packing();
        test_parallel_sampling();
        test_engine_vs_session(16);
        test_engine_vs_session(4);
        test_kv_cache();
        test_kv_prefault();
        test_kv_cache_churn();
        test_accounting(true);
        test_accounting(false);
        test_queue_and_cancel();
    }
    test_threads();
    return test_summary();
}

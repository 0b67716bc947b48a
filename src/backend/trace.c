/*
 * trace.c — the tracing backend: an op table that wraps any other table,
 * forwards every call to it unchanged, and records per op the number of
 * calls, the time spent (CLOCK_MONOTONIC) and estimates of the bytes moved
 * and the flops done, so a profile can show GB/s and GFLOP/s next to time.
 *
 * The wrapper embeds its inf_ops as the first member, so the `self` an op
 * receives is cast back to the wrapper. The inner table gets itself as
 * `self`, so its own state is reached as usual and its internal calls are
 * not counted twice. Counters are relaxed atomics: a threaded backend may
 * call ops from several threads (today they come from one thread at a time),
 * and a report read while ops run is approximate but never torn.
 *
 * Matmul is also counted per weight, by name without "blk.N." and
 * ".weight" (a group's names joined by "+"; a call with prompt rows apart
 * from a decode one), so that a report shows which products read slower
 * than the others: on the Zen 5 VM in a 0.6B decode the small attn_output
 * and ffn_down products read ~10% slower than the large ones in a fast
 * spell, which the one matmul line hid.
 *
 * Byte estimates are the minimum traffic of an op: every input read once,
 * every output written once (matmul: all weight bytes + activations;
 * attention: each cached K/V row once). Flops are counted for matmul
 * (2 per multiply-add) and attention (4 per query-key pair and dim).
 */
#include "backend/ops.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum trace_op {
    TRACE_MATMUL,
    TRACE_RMSNORM,
    TRACE_ROPE_NEOX,
    TRACE_HADAMARD,
    TRACE_SWIGLU,
    TRACE_ADD,
    TRACE_EMBED,
    TRACE_KV_STORE,
    TRACE_ATTN_DECODE,
    TRACE_ATTN_PREFILL,
    TRACE_N_OPS
};

/* Names as the fields of inf_ops. */
static const char *const trace_op_names[TRACE_N_OPS] = {
    "matmul", "rmsnorm", "rope_neox", "hadamard", "swiglu", "add", "embed",
    "kv_store", "attn_decode", "attn_prefill",
};

typedef struct trace_counter {
    _Atomic uint64_t calls, total_ns, bytes, flops;
} trace_counter;

/* Matmul's counters per weight (see the header comment): the first
 * TRACE_MAX_WEIGHTS names seen, then one "other" for the rest. */
enum { TRACE_MAX_WEIGHTS = 24, TRACE_WEIGHT_CHARS = 48 };

typedef struct trace_weight {
    char name[TRACE_WEIGHT_CHARS]; /* "attn_q+attn_k+attn_v", "ffn_down, prompt" */
    trace_counter counter;
} trace_weight;

typedef struct inf_ops_trace {
    inf_ops ops; /* first: the `self` every op receives */
    const inf_ops *inner;
    char name[64]; /* "trace(<inner name>)" */
    trace_counter counters[TRACE_N_OPS];
    pthread_mutex_t weights_lock; /* guards n_weights and the names; the counters are atomics */
    int n_weights;
    trace_weight weights[TRACE_MAX_WEIGHTS + 1]; /* the last: "other" */
} inf_ops_trace;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* self came from inf_ops_trace_new (non-const storage), so writing the
 * counters through it is well defined. */
static inf_ops_trace *trace_of(const inf_ops *self) { return (inf_ops_trace *)self; }

static void counter_add(trace_counter *c, uint64_t dt, uint64_t bytes, uint64_t flops) {
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->total_ns, dt, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->flops, flops, memory_order_relaxed);
}

static void record(const inf_ops *self, enum trace_op op, uint64_t t0_ns, uint64_t bytes, uint64_t flops) {
    counter_add(&trace_of(self)->counters[op], now_ns() - t0_ns, bytes, flops);
}

/* Appends s[len] to the string in buf[n], truncated to fit. */
static void append(char *buf, size_t n, const char *s, size_t len) {
    const size_t used = strlen(buf), take = len < n - 1 - used ? len : n - 1 - used;
    memcpy(buf + used, s, take);
    buf[used + take] = 0;
}

/* Appends w's name as a weight line names it: "blk.3.ffn_down.weight" as
 * "ffn_down" ("?" when unnamed). */
static void append_weight_name(char *buf, size_t n, const inf_weight *w) {
    const char *name = w->name ? w->name : "?";
    if (!strncmp(name, "blk.", 4)) {
        const char *dot = strchr(name + 4, '.');
        if (dot) name = dot + 1;
    }
    size_t len = strlen(name);
    if (len > 7 && !strcmp(name + len - 7, ".weight")) len -= 7;
    append(buf, n, name, len);
}

/* Matmul's call of weights w[0 .. count) counted under their names too. */
static void record_weights(const inf_ops *self, const inf_weight *const *w, int count_w, int n, int n_decode,
                           uint64_t t0_ns, uint64_t bytes, uint64_t flops) {
    const uint64_t dt = now_ns() - t0_ns;
    inf_ops_trace *tr = trace_of(self);
    char name[TRACE_WEIGHT_CHARS] = "";
    for (int i = 0; i < count_w; i++) {
        if (i) append(name, sizeof name, "+", 1);
        append_weight_name(name, sizeof name, w[i]);
    }
    static const char prompt[] = ", prompt";
    if (n_decode < n) append(name, sizeof name, prompt, sizeof prompt - 1);
    pthread_mutex_lock(&tr->weights_lock);
    int k = 0;
    while (k < tr->n_weights && strcmp(tr->weights[k].name, name)) k++;
    if (k == tr->n_weights && k < TRACE_MAX_WEIGHTS) {
        memcpy(tr->weights[k].name, name, sizeof name);
        tr->n_weights++;
    }
    pthread_mutex_unlock(&tr->weights_lock);
    counter_add(&tr->weights[k].counter, dt, bytes, flops); /* k == TRACE_MAX_WEIGHTS: "other" */
    counter_add(&tr->counters[TRACE_MATMUL], dt, bytes, flops);
}

/* ------------------------------------------------------------------ forwarding ops */

static void *trace_buffer_alloc(const inf_ops *self, size_t bytes, inf_buffer_use use) {
    const inf_ops *in = trace_of(self)->inner;
    return in->buffer_alloc(in, bytes, use);
}

static void trace_buffer_free(const inf_ops *self, void *p) {
    const inf_ops *in = trace_of(self)->inner;
    in->buffer_free(in, p);
}

static void trace_buffer_prefault(const inf_ops *self, void *p, size_t n) {
    const inf_ops *in = trace_of(self)->inner;
    in->buffer_prefault(in, p, n);
}

static void trace_matmul(const inf_ops *self, const inf_weight *w, const float *x, int n, int n_decode,
                         float *y, void *scratch) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->matmul(in, w, x, n, n_decode, y, scratch);
    const uint64_t rows = (uint64_t)w->rows, cols = (uint64_t)w->cols;
    record_weights(self, &w, 1, n, n_decode, t0, rows * w->row_bytes + 4 * (uint64_t)n * (cols + rows),
                   2 * (uint64_t)n * rows * cols);
}

/* Recorded as one matmul call with the group's traffic and flops. */
static void trace_matmul_group(const inf_ops *self, const inf_weight *const *w, int count, const float *x, int n,
                               int n_decode, float *const *y, void *scratch) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->matmul_group(in, w, count, x, n, n_decode, y, scratch);
    uint64_t bytes = 4 * (uint64_t)n * (uint64_t)w[0]->cols, flops = 0;
    for (int i = 0; i < count; i++) {
        const uint64_t rows = (uint64_t)w[i]->rows;
        bytes += rows * w[i]->row_bytes + 4 * (uint64_t)n * rows;
        flops += 2 * (uint64_t)n * rows * (uint64_t)w[i]->cols;
    }
    record_weights(self, w, count, n, n_decode, t0, bytes, flops);
}

/* A hint, forwarded and not counted. */
static void trace_matmul_ahead(const inf_ops *self, const inf_weight *const *w, int count, int n) {
    const inf_ops *in = trace_of(self)->inner;
    in->matmul_ahead(in, w, count, n);
}

static void trace_rmsnorm(const inf_ops *self, float *y, const float *x, const float *w, int n_rows,
                          int dim, float eps) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->rmsnorm(in, y, x, w, n_rows, dim, eps);
    record(self, TRACE_RMSNORM, t0, 4 * (2 * (uint64_t)n_rows + 1) * (uint64_t)dim, 0);
}

static void trace_rope_neox(const inf_ops *self, float *x, int n_tok, int n_heads, int head_dim,
                            const int32_t *pos, const inf_rope *rope) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->rope_neox(in, x, n_tok, n_heads, head_dim, pos, rope);
    record(self, TRACE_ROPE_NEOX, t0, 8 * (uint64_t)n_tok * (uint64_t)n_heads * (uint64_t)head_dim, 0);
}

static void trace_hadamard(const inf_ops *self, float *x, int n_rows, int n) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->hadamard(in, x, n_rows, n);
    record(self, TRACE_HADAMARD, t0, 8 * (uint64_t)n_rows * (uint64_t)n, 0);
}

static void trace_swiglu(const inf_ops *self, float *out, const float *gate, const float *up, size_t n) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->swiglu(in, out, gate, up, n);
    record(self, TRACE_SWIGLU, t0, 12 * (uint64_t)n, 0);
}

static void trace_add(const inf_ops *self, float *y, const float *x, size_t n) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->add(in, y, x, n);
    record(self, TRACE_ADD, t0, 12 * (uint64_t)n, 0);
}

static void trace_embed(const inf_ops *self, const inf_weight *emb, const int32_t *ids, int n, float *out) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->embed(in, emb, ids, n, out);
    record(self, TRACE_EMBED, t0, (uint64_t)n * (emb->row_bytes + 4 * (uint64_t)emb->cols), 0);
}

static void trace_kv_store(const inf_ops *self, const inf_kv_view *k_cache, const inf_kv_view *v_cache,
                           const float *k, const float *v, int n_tok, int pos0, int n_head_kv, int head_dim) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->kv_store(in, k_cache, v_cache, k, v, n_tok, pos0, n_head_kv, head_dim);
    const uint64_t elems = (uint64_t)n_tok * (uint64_t)n_head_kv * (uint64_t)head_dim;
    /* f32 k and v read, both rows written in the caches' types (34 bytes per 32 for Q8_0) */
    record(self, TRACE_KV_STORE, t0,
           elems * 8 + inf_kv_type_bytes(k_cache->type, elems) + inf_kv_type_bytes(v_cache->type, elems), 0);
}

/* Minimum traffic and flops of an attention call: K and V rows of every
 * visible position read once, q read and out written once; each
 * (query, key) pair costs 2*head_dim flops for q·k and 2*head_dim for p·v. */
static void attn_cost(const inf_attn_shape *sh, const inf_kv_view *k, const inf_kv_view *v,
                      uint64_t *bytes, uint64_t *flops) {
    const uint64_t n_tok = (uint64_t)sh->n_tok, pos0 = (uint64_t)sh->pos0, hd = (uint64_t)sh->head_dim;
    const uint64_t kv_rows = (pos0 + n_tok) * (uint64_t)sh->n_head_kv;
    const uint64_t pairs = n_tok * pos0 + n_tok * (n_tok + 1) / 2; /* Σ_t (pos0 + t + 1) */
    *bytes = inf_kv_type_bytes(k->type, kv_rows * hd) + inf_kv_type_bytes(v->type, kv_rows * hd) +
             8 * n_tok * (uint64_t)sh->n_head * hd;
    *flops = 4 * pairs * (uint64_t)sh->n_head * hd;
}

static void trace_attn_decode(const inf_ops *self, const inf_attn_shape *shape, const float *q,
                              const inf_kv_view *k, const inf_kv_view *v, float *out) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->attn_decode(in, shape, q, k, v, out);
    uint64_t bytes, flops;
    attn_cost(shape, k, v, &bytes, &flops);
    record(self, TRACE_ATTN_DECODE, t0, bytes, flops);
}

/* Counted as attn_decode, one call per batch (its stores included). */
static void trace_attn_decode_seqs(const inf_ops *self, int n_seqs, const inf_attn_shape *shapes, const float *q,
                                   const float *k, const float *v, const inf_kv_view *k_caches,
                                   const inf_kv_view *v_caches, float *out) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->attn_decode_seqs(in, n_seqs, shapes, q, k, v, k_caches, v_caches, out);
    uint64_t bytes = 0, flops = 0;
    for (int s = 0; s < n_seqs; s++) {
        uint64_t b, f;
        attn_cost(&shapes[s], &k_caches[s], &v_caches[s], &b, &f);
        bytes += b, flops += f;
    }
    record(self, TRACE_ATTN_DECODE, t0, bytes, flops);
}

static void trace_attn_prefill(const inf_ops *self, const inf_attn_shape *shape, const float *q,
                               const inf_kv_view *k, const inf_kv_view *v, float *out) {
    const inf_ops *in = trace_of(self)->inner;
    const uint64_t t0 = now_ns();
    in->attn_prefill(in, shape, q, k, v, out);
    uint64_t bytes, flops;
    attn_cost(shape, k, v, &bytes, &flops);
    record(self, TRACE_ATTN_PREFILL, t0, bytes, flops);
}

/* ------------------------------------------------------------------ public */

/* The wrapper behind a table, or NULL when the table is not a trace table
 * (recognised by its matmul, which only trace tables carry). */
static inf_ops_trace *as_trace(const inf_ops *ops) {
    return ops && ops->matmul == trace_matmul ? trace_of(ops) : NULL;
}

static void counter_init(trace_counter *c) {
    atomic_init(&c->calls, 0);
    atomic_init(&c->total_ns, 0);
    atomic_init(&c->bytes, 0);
    atomic_init(&c->flops, 0);
}

static void counter_zero(trace_counter *c) {
    atomic_store_explicit(&c->calls, 0, memory_order_relaxed);
    atomic_store_explicit(&c->total_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&c->flops, 0, memory_order_relaxed);
}

inf_ops *inf_ops_trace_new(const inf_ops *inner) {
    inf_ops_trace *tr = calloc(1, sizeof *tr);
    if (!tr) return NULL;
    tr->inner = inner;
    snprintf(tr->name, sizeof tr->name, "trace(%s)", inner->name);
    tr->ops = (inf_ops){
        .name = tr->name,
        .buffer_alloc = trace_buffer_alloc,
        .buffer_free = trace_buffer_free,
        .buffer_prefault = inner->buffer_prefault ? trace_buffer_prefault : NULL,
        .matmul = trace_matmul,
        .matmul_group = trace_matmul_group,
        .matmul_ahead = inner->matmul_ahead ? trace_matmul_ahead : NULL,
        .rmsnorm = trace_rmsnorm,
        .rope_neox = trace_rope_neox,
        .hadamard = trace_hadamard,
        .swiglu = trace_swiglu,
        .add = trace_add,
        .embed = trace_embed,
        .kv_store = trace_kv_store,
        .attn_decode = trace_attn_decode,
        .attn_decode_seqs = trace_attn_decode_seqs,
        .attn_prefill = trace_attn_prefill,
    };
    for (int i = 0; i < TRACE_N_OPS; i++) counter_init(&tr->counters[i]);
    for (int i = 0; i <= TRACE_MAX_WEIGHTS; i++) counter_init(&tr->weights[i].counter);
    snprintf(tr->weights[TRACE_MAX_WEIGHTS].name, TRACE_WEIGHT_CHARS, "other");
    pthread_mutex_init(&tr->weights_lock, NULL);
    return &tr->ops;
}

static inf_op_stats load_stats(const trace_counter *c) {
    return (inf_op_stats){
        .calls = atomic_load_explicit(&c->calls, memory_order_relaxed),
        .total_ns = atomic_load_explicit(&c->total_ns, memory_order_relaxed),
        .bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed),
        .flops = atomic_load_explicit(&c->flops, memory_order_relaxed),
    };
}

bool inf_ops_trace_get(const inf_ops *traced, const char *op, inf_op_stats *out) {
    inf_ops_trace *tr = as_trace(traced);
    if (!tr || !op) return false;
    if (!strncmp(op, "matmul:", 7)) {
        bool found = false;
        pthread_mutex_lock(&tr->weights_lock);
        for (int k = 0; k < tr->n_weights && !found; k++)
            if ((found = !strcmp(op + 7, tr->weights[k].name))) *out = load_stats(&tr->weights[k].counter);
        pthread_mutex_unlock(&tr->weights_lock);
        return found;
    }
    for (int i = 0; i < TRACE_N_OPS; i++)
        if (strcmp(op, trace_op_names[i]) == 0) {
            *out = load_stats(&tr->counters[i]);
            return true;
        }
    return false;
}

void inf_ops_trace_reset(inf_ops *traced) {
    inf_ops_trace *tr = as_trace(traced);
    if (!tr) return;
    for (int i = 0; i < TRACE_N_OPS; i++) counter_zero(&tr->counters[i]);
    for (int i = 0; i <= TRACE_MAX_WEIGHTS; i++) counter_zero(&tr->weights[i].counter);
}

/* Prints a rate column: value per nanosecond is G per second; "-" when not counted. */
static void print_rate(FILE *out, uint64_t amount, uint64_t ns) {
    if (amount == 0 || ns == 0) fprintf(out, " %9s", "-");
    else fprintf(out, " %9.2f", (double)amount / (double)ns);
}

/* Sorts order[0 .. n) by st[order[i]].total_ns, longest first (insertion: a few dozen entries). */
static void sort_by_time(const inf_op_stats *st, int *order, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && st[order[j]].total_ns > st[order[j - 1]].total_ns; j--) {
            const int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
}

enum { TRACE_LABEL_WIDTH = 32 };

static void print_row(FILE *out, const char *label, const inf_op_stats *st, uint64_t total_ns) {
    const double ms = (double)st->total_ns / 1e6;
    fprintf(out, "%-*s %9llu %11.3f %6.1f%% %10.4f", TRACE_LABEL_WIDTH, label, (unsigned long long)st->calls, ms,
            total_ns ? 100.0 * (double)st->total_ns / (double)total_ns : 0.0, ms / (double)st->calls);
    print_rate(out, st->bytes, st->total_ns);
    print_rate(out, st->flops, st->total_ns);
    fputc('\n', out);
}

/* Matmul's lines per weight, under its own, longest first. */
static void print_weights(inf_ops_trace *tr, FILE *out, uint64_t total_ns) {
    inf_op_stats st[TRACE_MAX_WEIGHTS + 1];
    int order[TRACE_MAX_WEIGHTS + 1];
    pthread_mutex_lock(&tr->weights_lock);
    const int n = tr->n_weights + 1; /* and "other" */
    for (int k = 0; k < n; k++) {
        const int i = k < tr->n_weights ? k : TRACE_MAX_WEIGHTS;
        st[k] = load_stats(&tr->weights[i].counter);
        order[k] = k;
    }
    sort_by_time(st, order, n);
    for (int k = 0; k < n; k++) {
        const int i = order[k];
        if (st[i].calls == 0) continue;
        char label[TRACE_WEIGHT_CHARS + 2];
        snprintf(label, sizeof label, "  %s", tr->weights[i < tr->n_weights ? i : TRACE_MAX_WEIGHTS].name);
        print_row(out, label, &st[i], total_ns);
    }
    pthread_mutex_unlock(&tr->weights_lock);
}

void inf_ops_trace_print(const inf_ops *traced, FILE *out) {
    inf_ops_trace *tr = as_trace(traced);
    if (!tr || !out) return;
    inf_op_stats st[TRACE_N_OPS];
    int order[TRACE_N_OPS];
    uint64_t total_ns = 0, total_calls = 0;
    for (int i = 0; i < TRACE_N_OPS; i++) {
        st[i] = load_stats(&tr->counters[i]);
        total_ns += st[i].total_ns;
        total_calls += st[i].calls;
        order[i] = i;
    }
    sort_by_time(st, order, TRACE_N_OPS);

    fprintf(out, "op trace, backend %s\n", tr->inner->name);
    fprintf(out, "%-*s %9s %11s %7s %10s %9s %9s\n", TRACE_LABEL_WIDTH, "op", "calls", "total ms", "share", "ms/call",
            "GB/s", "GFLOP/s");
    for (int k = 0; k < TRACE_N_OPS; k++) {
        const int i = order[k];
        if (st[i].calls == 0) continue;
        print_row(out, trace_op_names[i], &st[i], total_ns);
        if (i == TRACE_MATMUL) print_weights(tr, out, total_ns);
    }
    fprintf(out, "%-*s %9llu %11.3f %6.1f%%\n", TRACE_LABEL_WIDTH, "total", (unsigned long long)total_calls,
            (double)total_ns / 1e6, total_ns ? 100.0 : 0.0);
    if (tr->inner->stream_report) {
        char line[512] = "";
        tr->inner->stream_report(tr->inner, line, sizeof line);
        if (line[0]) fprintf(out, "%s\n", line);
    }
}

void inf_ops_trace_free(inf_ops *traced) {
    inf_ops_trace *tr = as_trace(traced);
    if (!tr) return;
    pthread_mutex_destroy(&tr->weights_lock);
    free(tr);
}

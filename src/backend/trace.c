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
 * Byte estimates are the minimum traffic of an op: every input read once,
 * every output written once (matmul: all weight bytes + activations;
 * attention: each cached K/V row once). Flops are counted for matmul
 * (2 per multiply-add) and attention (4 per query-key pair and dim).
 */
#include "backend/ops.h"

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

typedef struct inf_ops_trace {
    inf_ops ops; /* first: the `self` every op receives */
    const inf_ops *inner;
    char name[64]; /* "trace(<inner name>)" */
    trace_counter counters[TRACE_N_OPS];
} inf_ops_trace;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* self came from inf_ops_trace_new (non-const storage), so writing the
 * counters through it is well defined. */
static inf_ops_trace *trace_of(const inf_ops *self) { return (inf_ops_trace *)self; }

static void record(const inf_ops *self, enum trace_op op, uint64_t t0_ns, uint64_t bytes, uint64_t flops) {
    const uint64_t dt = now_ns() - t0_ns;
    trace_counter *c = &trace_of(self)->counters[op];
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->total_ns, dt, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->flops, flops, memory_order_relaxed);
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
    record(self, TRACE_MATMUL, t0, rows * w->row_bytes + 4 * (uint64_t)n * (cols + rows),
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
    record(self, TRACE_MATMUL, t0, bytes, flops);
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
    for (int i = 0; i < TRACE_N_OPS; i++) {
        trace_counter *c = &tr->counters[i];
        atomic_init(&c->calls, 0);
        atomic_init(&c->total_ns, 0);
        atomic_init(&c->bytes, 0);
        atomic_init(&c->flops, 0);
    }
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
    const inf_ops_trace *tr = as_trace(traced);
    if (!tr || !op) return false;
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
    for (int i = 0; i < TRACE_N_OPS; i++) {
        trace_counter *c = &tr->counters[i];
        atomic_store_explicit(&c->calls, 0, memory_order_relaxed);
        atomic_store_explicit(&c->total_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
        atomic_store_explicit(&c->flops, 0, memory_order_relaxed);
    }
}

/* Prints a rate column: value per nanosecond is G per second; "-" when not counted. */
static void print_rate(FILE *out, uint64_t amount, uint64_t ns) {
    if (amount == 0 || ns == 0) fprintf(out, " %9s", "-");
    else fprintf(out, " %9.2f", (double)amount / (double)ns);
}

void inf_ops_trace_print(const inf_ops *traced, FILE *out) {
    const inf_ops_trace *tr = as_trace(traced);
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
    /* insertion sort by time, longest first (ten entries) */
    for (int i = 1; i < TRACE_N_OPS; i++)
        for (int j = i; j > 0 && st[order[j]].total_ns > st[order[j - 1]].total_ns; j--) {
            const int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }

    fprintf(out, "op trace, backend %s\n", tr->inner->name);
    fprintf(out, "%-14s %9s %11s %7s %10s %9s %9s\n", "op", "calls", "total ms", "share", "ms/call", "GB/s",
            "GFLOP/s");
    for (int k = 0; k < TRACE_N_OPS; k++) {
        const int i = order[k];
        if (st[i].calls == 0) continue;
        const double ms = (double)st[i].total_ns / 1e6;
        fprintf(out, "%-14s %9llu %11.3f %6.1f%% %10.4f", trace_op_names[i], (unsigned long long)st[i].calls, ms,
                total_ns ? 100.0 * (double)st[i].total_ns / (double)total_ns : 0.0, ms / (double)st[i].calls);
        print_rate(out, st[i].bytes, st[i].total_ns);
        print_rate(out, st[i].flops, st[i].total_ns);
        fputc('\n', out);
    }
    fprintf(out, "%-14s %9llu %11.3f %6.1f%%\n", "total", (unsigned long long)total_calls,
            (double)total_ns / 1e6, total_ns ? 100.0 : 0.0);
    if (tr->inner->stream_report) {
        char line[160] = "";
        tr->inner->stream_report(tr->inner, line, sizeof line);
        if (line[0]) fprintf(out, "%s\n", line);
    }
}

void inf_ops_trace_free(inf_ops *traced) {
    inf_ops_trace *tr = as_trace(traced);
    free(tr);
}

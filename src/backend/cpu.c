/*
 * cpu.c — the CPU backend: ISA detection and selection, and the op table
 * that splits every op into tasks on the thread pool and runs one ISA's
 * kernels (kernels.h) on them.
 *
 * ISAs by architecture: x86-64 has avx2, avx512 and avx512+amx (x86/,
 * features from __builtin_cpu_supports and cpuid; AMX also needs the
 * kernel's permission for the tile state, asked once), arm64 has neon (arm/, always present; its
 * integer dots use SDOT when the kernel reports the ARMv8.2 dot product in
 * AT_HWCAP). The other architecture's tables are NULL, so its ISAs are
 * unsupported; "ref" runs everywhere.
 *
 * Splits: matmul by weight rows (decode, and weights packed at load for
 * any token count: one range per thread, claimed from the front and
 * stolen from the back, run_ranges, whose front a thread may have read
 * ahead while the caller ran the ops before it, matmul_ahead, or from the
 * end of the dispatch before; prefill:
 * gemm row panels, each multiplied with every token), attention by
 * KV head (decode) and by KV head x query block (prefill, largest tasks
 * first), element-wise ops by rows or chunks once they are large enough to
 * pay for a dispatch. An op an ISA lacks runs the reference op of ref.c on
 * sub-ranges, so the "ref" ISA is ref.c threaded, bit for bit; so does
 * attention on K and V caches of different types.
 *
 * Per-thread scratch (gemm panels, attention tiles, the rounded activations
 * of a threaded reference matmul) grows in the calling thread before a
 * dispatch. Ops cannot fail: when it cannot grow, the op runs the reference
 * op serially instead. The RoPE angle table is computed once per forward
 * pass (it is the same for every layer) exactly as ref.c computes it.
 *
 * Like the pool, the backend runs one op at a time: the model's owner
 * thread calls it (ops.h).
 */
#include "backend/cpu.h"

#include "backend/kernels.h"
#include "backend/stream_tuner.h"
#include "core/common.h"
#include "core/dtype.h"
#include "core/pool.h"
#include "core/quant.h"
#include "core/shares.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20) /* the bit in the arm64 kernel's uapi hwcap.h */
#endif
#endif

/* ------------------------------------------------------------------ ISA selection */

static const char *const isa_names[INF_ISA_COUNT] = {"ref", "avx2", "avx512", "neon", "avx512+amx"};

const char *inf_isa_name(inf_isa isa) {
    return (unsigned)isa < INF_ISA_COUNT ? isa_names[isa] : "?";
}

bool inf_isa_from_name(const char *name, inf_isa *out) {
    for (int i = 0; i < INF_ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0) {
            *out = (inf_isa)i;
            return true;
        }
    return false;
}

/* The ARMv8.2 dot product (SDOT), as the kernel reports it; false off Linux. */
static bool cpu_has_dotprod(void) {
#if defined(__aarch64__) && defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
    return false;
#endif
}

/* AMX tiles usable: cpuid leaf 7 reports AMX-TILE, -INT8 and -BF16, and
 * Linux grants this process the tile data state (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA; without it the first tile
 * instruction faults). The permission covers every thread of the process;
 * asking again is harmless, the answer is cached after the first call. */
#if defined(__x86_64__)
static bool cpu_has_amx(void) {
#if defined(__linux__)
    static _Atomic int cached = -1; /* racing first calls compute the same answer */
    const int known = atomic_load_explicit(&cached, memory_order_relaxed);
    if (known >= 0) return known;
    unsigned a, b, c, d;
    bool ok = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1) /* tile */ && (d >> 25 & 1) /* int8 */ &&
              (d >> 22 & 1) /* bf16 */;
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (ok) ok = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
    atomic_store_explicit(&cached, ok, memory_order_relaxed);
    return ok;
#else
    return false;
#endif
}
#endif

const inf_kernels *inf_isa_kernels(inf_isa isa) {
    switch (isa) {
    case INF_ISA_AVX2: return inf_kernels_avx2();
    case INF_ISA_AVX512: return inf_kernels_avx512();
    case INF_ISA_AVX512_AMX: return inf_kernels_avx512_amx();
    case INF_ISA_NEON: return inf_kernels_neon(cpu_has_dotprod());
    default: return NULL;
    }
}

bool inf_isa_supported(inf_isa isa) {
    if (isa == INF_ISA_REF) return true;
    if ((unsigned)isa >= INF_ISA_COUNT || !inf_isa_kernels(isa)) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    unsigned a1, b1, c1, d1; /* F16C from cpuid leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports lacks "f16c" */
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __get_cpuid(1, &a1, &b1, &c1, &d1) && (c1 >> 29 & 1);
    if (isa == INF_ISA_AVX2) return avx2;
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
    if (isa == INF_ISA_AVX512) return avx512;
    return avx512 && isa == INF_ISA_AVX512_AMX && cpu_has_amx();
#elif defined(__aarch64__)
    return isa == INF_ISA_NEON; /* Advanced SIMD is part of every AArch64 CPU */
#else
    return false;
#endif
}

inf_isa inf_isa_best(void) {
    for (int i = INF_ISA_COUNT - 1; i > INF_ISA_REF; i--)
        if (inf_isa_supported((inf_isa)i)) return (inf_isa)i;
    return INF_ISA_REF;
}

inf_status inf_isa_select(inf_isa *out, inf_error *err) {
    const char *env = getenv("INFERNO_ISA");
    if (!env || !*env) {
        *out = inf_isa_best();
        return INF_OK;
    }
    if (!inf_isa_from_name(env, out))
        return inf_errorf(err, INF_ERR_INVALID, "INFERNO_ISA=%s: unknown ISA (ref, avx2, avx512, avx512+amx, neon)", env);
    if (!inf_isa_supported(*out))
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "INFERNO_ISA=%s: this CPU (or build) lacks %s",
                          env, env);
    return INF_OK;
}

/* ------------------------------------------------------------------ the backend */

/* A read-ahead job's ctx (ahead_step): the backend, and which of its two
 * sets of spans to read. */
typedef struct ahead_job {
    struct cpu_backend *c;
    int set;
} ahead_job;

typedef struct thread_tmp {
    void *p;
    size_t bytes;
} thread_tmp;

/* Weight types with a stream tuner each: every inf_dtype. */
enum { STREAM_TYPES = 32 };
_Static_assert((int)INF_DTYPE_BF16 < (int)STREAM_TYPES, "a stream tuner per inf_dtype");

typedef struct cpu_backend {
    inf_ops ops; /* first: the `self` every op receives */
    const inf_ops *ref;
    const inf_kernels *k; /* NULL for the "ref" ISA */
    inf_pool *pool;
    int n_threads;
    thread_tmp *tmp; /* [n_threads] */
    inf_share *slots; /* [n_threads] row ranges of the product running (run_ranges) */
    struct ahead_spans *ahead; /* [2][n_threads] what each thread reads ahead, two sets taking turns */
    ahead_job ahead_jobs[2];   /* the jobs that read each set */
    int ahead_set;             /* the set written last */
    struct ahead_next *ahead_next;    /* [AHEAD_NEXT_SLOTS] what followed each decode dispatch */
    const inf_weight *last_dispatch;  /* the last decode dispatch's first weight (compared, never read) */
    ahead_job *ahead_posted;          /* matmul_ahead's read-ahead, until a product runs (attention goes on with it) */
    /* RoPE table of the last call: cos/sin [n_tok][2][head_dim/2] */
    float *rope_cs;     /* [rope_n_tok][head_dim]: cos, sin of each token's angles */
    int32_t *rope_pos;  /* [rope_n_tok] the positions it was computed for */
    size_t rope_cap;    /* tokens */
    int rope_n_tok, rope_head_dim;
    inf_rope rope;      /* the frequencies it was computed with */
    /* the packed kernels' prefetch hint, one choice per weight type
     * (inf_dtype, below STREAM_TYPES; hints < 2: none to choose) */
    stream_tuner tuners[STREAM_TYPES];
} cpu_backend;

/* The backend came from inf_ops_cpu_new (non-const storage). */
static cpu_backend *cpu_of(const inf_ops *self) { return (cpu_backend *)self; }

static bool ahead_step(void *ctx, int thread, int step);
static ahead_job *ahead_after(cpu_backend *c, const inf_weight *key, int n);

/* A matmul starts: the read-ahead matmul_ahead posted is no longer the
 * next product's, and this one is no decode dispatch to remember until it
 * names itself (ahead_after). */
static void product_begins(cpu_backend *c) {
    c->last_dispatch = NULL;
    c->ahead_posted = NULL;
}

/* Makes every thread's scratch at least `bytes`; false when that fails. */
static bool ensure_tmp(cpu_backend *c, size_t bytes) {
    for (int i = 0; i < c->n_threads; i++) {
        if (c->tmp[i].bytes >= bytes) continue;
        inf_free_aligned(c->tmp[i].p);
        c->tmp[i].p = inf_alloc_aligned(bytes);
        c->tmp[i].bytes = c->tmp[i].p ? bytes : 0;
        if (!c->tmp[i].p) return false;
    }
    return true;
}

/* Tasks for `units` units of work of which one task should hold at least
 * min_units: up to per_thread tasks per thread. */
static int split_tasks(const cpu_backend *c, int64_t units, int64_t min_units, int per_thread) {
    int64_t tasks = units / (min_units > 0 ? min_units : 1);
    int64_t cap = (int64_t)c->n_threads * per_thread;
    if (tasks > cap) tasks = cap;
    return tasks < 1 ? 1 : (int)tasks;
}

/* Work below this many units (multiply-adds, or elements touched) runs in
 * the calling thread: a dispatch costs microseconds. */
enum { PARALLEL_MIN_WORK = 1 << 17 };

/* Runs tasks 0..tasks-1 of fn on the pool, the threads then reading ahead
 * for `then` once they find no task left (NULL: nothing to read); or in
 * the calling thread (as thread 0) when the op is small. */
static void run_tasks_then(cpu_backend *c, int tasks, inf_pool_fn fn, void *ctx, double work, ahead_job *then) {
    if (tasks > 1 && work >= PARALLEL_MIN_WORK) {
        inf_pool_run_then(c->pool, tasks, fn, ctx, then ? ahead_step : NULL, then);
        return;
    }
    for (int i = 0; i < tasks; i++) fn(ctx, i, 0);
}

static void run_tasks(cpu_backend *c, int tasks, inf_pool_fn fn, void *ctx, double work) {
    run_tasks_then(c, tasks, fn, ctx, work, NULL);
}

/* The i-th of `tasks` near-equal parts of [0, units), boundaries rounded to `align`. */
static void task_range(int64_t units, int tasks, int i, int64_t align, int64_t *lo, int64_t *hi) {
    int64_t chunks = (units + align - 1) / align;
    *lo = INF_MIN(units, chunks * i / tasks * align);
    *hi = INF_MIN(units, chunks * (i + 1) / tasks * align);
}

/* ------------------------------------------------------------------ matmul */

typedef struct matmul_job {
    cpu_backend *c;
    const inf_weight *w;
    const float *x;
    int n;
    float *y;
    void *scratch;
    inf_act act;
    bool gemm;           /* activations prepared for gemm */
    inf_dtype act_type;  /* the type they are prepared for */
    int tasks;
} matmul_job;

/* Token ranges of the activations, aligned to gemm's 8-token tiles. */
static void act_task(void *ctx, int task, int thread) {
    (void)thread;
    matmul_job *j = ctx;
    int64_t t0, t1;
    task_range(j->n, j->tasks, task, 8, &t0, &t1);
    if (j->gemm) {
        if (t0 < t1) j->c->k->gemm_prepare(j->act_type, j->x, j->w->cols, j->n, (int)t0, (int)t1, j->scratch);
        return;
    }
    for (int64_t t = t0; t < t1; t++)
        j->c->k->act_prepare(j->w->type, j->x + t * j->w->cols, j->w->cols,
                             (char *)j->scratch + (size_t)t * j->act.stride);
}

static void matvec_rows(void *ctx, int64_t r0, int64_t r1, int thread) {
    (void)thread;
    matmul_job *j = ctx;
    j->c->k->matvec(j->w, &j->act, r0, r1, j->y, (size_t)j->w->rows);
}

static void gemm_task(void *ctx, int task, int thread) {
    matmul_job *j = ctx;
    const int64_t r0 = (int64_t)task * j->c->k->gemm_rows;
    const int64_t r1 = INF_MIN(j->w->rows, r0 + j->c->k->gemm_rows);
    j->c->k->gemm(j->w, &j->act, r0, r1, j->y, (size_t)j->w->rows, j->c->tmp[thread].p);
}

/* A weight packed at load: split as the decode matvec splits (run_ranges),
 * whole groups of 16; the gemm walks a range a panel at a time. */
static void packed_rows(void *ctx, int64_t r0, int64_t r1, int thread) {
    matmul_job *j = ctx;
    j->c->k->gemm(j->w, &j->act, r0, r1, j->y, (size_t)j->w->rows, j->c->tmp[thread].p);
}

/* The reference matmul threaded: one token by row ranges (each thread
 * rounds x into its own scratch), several by token ranges (each range
 * rounds into its own slice of the op's scratch). */
static void ref_matmul_task(void *ctx, int task, int thread) {
    matmul_job *j = ctx;
    const inf_weight *w = j->w;
    if (j->n == 1) {
        int64_t r0, r1;
        task_range(w->rows, j->tasks, task, 16, &r0, &r1);
        if (r0 >= r1) return;
        inf_weight part = *w;
        part.rows = r1 - r0;
        part.data = (const char *)w->data + (size_t)r0 * w->row_bytes;
        j->c->ref->matmul(j->c->ref, &part, j->x, 1, 0, j->y + r0, j->c->tmp[thread].p);
    } else {
        int64_t t0, t1;
        task_range(j->n, j->tasks, task, 1, &t0, &t1);
        if (t0 >= t1) return;
        j->c->ref->matmul(j->c->ref, w, j->x + t0 * w->cols, (int)(t1 - t0), 0, j->y + t0 * w->rows,
                          (char *)j->scratch + (size_t)t0 * (size_t)w->cols * sizeof(float));
    }
}

/* Row ranges shared by claiming and stealing, for the products whose
 * rows are independent (matvec, and gemm over weights packed at load).
 *
 * Each thread owns one contiguous share of the rows and claims half of
 * what is left of it at a time from the front, so its reads are one long
 * run that the prefetchers follow; once its share is gone it steals half
 * of what is left of another's from the back, so the threads end within
 * a grain of each other, and a thread that starts late (another process
 * on its core) is covered by the others. A 0.6B Q4_K_M decode's
 * products are 1-3.5 MB (the head 128), 40-150 µs: split into 2 fixed
 * tasks per thread, a token spent 12% of its time with one thread
 * waiting for the other. A row's result is the same whichever thread
 * computes it, with whatever others. */
enum {
    RANGE_MIN_SHARE_BYTES = 128 * 1024, /* of weights, per thread at least (~5 µs of reads) */
    RANGE_GRAIN_BYTES = 16 * 1024,      /* of weights, per claim at least */
};

typedef void (*range_fn)(void *ctx, int64_t lo, int64_t hi, int thread);

typedef struct range_job {
    inf_share *slots;
    int n_slots;
    int64_t units, grain; /* rows; grain a multiple of 16 */
    range_fn fn;
    void *ctx;
} range_job;

static void range_run(void *ctx, uint32_t lo, uint32_t hi, int thread) {
    const range_job *j = ctx;
    j->fn(j->ctx, (int64_t)lo * j->grain, INF_MIN(j->units, (int64_t)hi * j->grain), thread);
}

/* A task of run_ranges: its thread's slot's share from the front, then
 * the others' from the back (thread t owns slot t, the share that
 * matmul_ahead read ahead for it; a thread that runs two tasks, the other
 * having started late, finds its slot empty the second time and steals).
 * The pool orders the slots' setup before every task. */
static void range_task(void *ctx, int task, int thread) {
    (void)task;
    range_job *j = ctx;
    inf_shares_work(j->slots, j->n_slots, thread % j->n_slots, range_run, j, thread);
}

/* How run_ranges splits `units` rows: grains of *grain rows, *grains of
 * them, into the returned number of shares (1: not split). */
static int range_split(const cpu_backend *c, int64_t units, size_t row_bytes, int64_t align, int64_t *grain,
                       int64_t *grains) {
    *grain = (INF_MAX(align, (int64_t)(RANGE_GRAIN_BYTES / row_bytes)) + align - 1) / align * align;
    *grains = (units + *grain - 1) / *grain;
    const int64_t min_grains = INF_MAX(1, (int64_t)(RANGE_MIN_SHARE_BYTES / row_bytes) / *grain);
    return *grains > UINT32_MAX ? 1 : split_tasks(c, *grains, min_grains, 1);
}

/* fn over rows [0, units) of row_bytes each, in pieces whose bounds are
 * multiples of `align` rows (a multiple of 16; or units), one share per
 * thread; then the threads read ahead for `then` (NULL: nothing). */
static void run_ranges(cpu_backend *c, int64_t units, size_t row_bytes, int64_t align, range_fn fn, void *ctx,
                       double work, ahead_job *then) {
    int64_t grain, grains;
    const int n_slots = range_split(c, units, row_bytes, align, &grain, &grains);
    if (n_slots == 1) {
        fn(ctx, 0, units, 0);
        return;
    }
    range_job j = {.slots = c->slots, .n_slots = n_slots, .units = units, .grain = grain, .fn = fn, .ctx = ctx};
    for (int i = 0; i < n_slots; i++) {
        int64_t lo, hi;
        task_range(grains, n_slots, i, 1, &lo, &hi);
        inf_share_set(&c->slots[i], (uint32_t)lo, (uint32_t)hi);
    }
    run_tasks_then(c, n_slots, range_task, &j, work, then);
}

/* The rows a piece of a packed product starts at a multiple of: 16 for
 * decode, whole gemm panels for a prompt (a piece that cut a panel would
 * run it as two smaller tiles: Q4_0 prefill 511 was 3% slower). */
static int64_t range_align(const cpu_backend *c, int n) {
    return n >= c->k->gemm_min_tokens ? c->k->gemm_rows : 16;
}

enum { STREAM_TUNE_MAX_TOKENS = 16 }; /* decode-sized products: the stream is their cost */

/* run_ranges over a product of packed weights of `type`, `rows` of
 * row_bytes. A decode-sized one runs with its type's stream tuner's hint
 * and is timed for it (stream_tuner.h); a longer prompt's runs with the
 * hint last chosen. Each type has a tuner of its own: their kernels do
 * different work per byte, and on the Zen 5 VM their better hints
 * differed (2026-12-08, a token's layer products alternating L2 and NTA
 * pass by pass in one process: Q6_K read 6-14% faster with NTA in three
 * runs of three, Q8_0 2-7% faster with L2, Q4_K level). 0.6B decode after
 * 17, one process alternating token by token against one tuner for all
 * types (1200 tokens a run): Q4_0 +1.2%, +1.3%, +2.1% (its Q6_K head
 * kept NTA while its Q4_0 layers changed hints), Q4_K_M +0.9%, +1.6%,
 * +2.0%, Q5_K_M +0.3%; IQ4_XS, Q8_0 and Q6_K (one type, or two that chose
 * alike) level. */
static void run_packed(cpu_backend *c, inf_dtype type, int n, int64_t rows, size_t row_bytes, range_fn fn, void *ctx,
                       double work, ahead_job *then) {
    stream_tuner *t = &c->tuners[(unsigned)type < STREAM_TYPES ? type : 0];
    if (t->hints < 2 || n > STREAM_TUNE_MAX_TOKENS) {
        run_ranges(c, rows, row_bytes, range_align(c, n), fn, ctx, work, then);
        return;
    }
    c->k->stream_hint_set(stream_tuner_hint(t));
    const double start = inf_monotonic_s();
    run_ranges(c, rows, row_bytes, range_align(c, n), fn, ctx, work, then);
    stream_tuner_record(t, (double)rows * (double)row_bytes, inf_monotonic_s() - start);
}

/* inf_ops.stream_report, each type whose products ran tuned: "weight prefetch
 * q4_0 L2 (trials won: L2 3, NTA 1), q6_k NTA (trials won: L2 0, NTA 2)". */
static void cpu_stream_report(const inf_ops *self, char *buf, size_t n) {
    const cpu_backend *c = cpu_of(self);
    if (n == 0) return;
    buf[0] = 0;
    if (c->tuners[0].hints < 2 || !c->k->stream_hint_names) return; /* every type's tuner has the same hints */
    size_t used = (size_t)snprintf(buf, n, "weight prefetch");
    bool first = true;
    for (int type = 0; type < STREAM_TYPES && used < n; type++) {
        const stream_tuner *t = &c->tuners[type];
        if (!stream_tuner_ran(t)) continue;
        used += (size_t)snprintf(buf + used, n - used, "%s %s %s (trials won:", first ? "" : ",",
                                 inf_dtype_name((inf_dtype)type), c->k->stream_hint_names[t->best]);
        for (int h = 0; h < t->hints && used < n; h++)
            used += (size_t)snprintf(buf + used, n - used, "%s %s %lld", h ? "," : "", c->k->stream_hint_names[h],
                                     (long long)t->wins[h]);
        if (used < n) used += (size_t)snprintf(buf + used, n - used, ")");
        first = false;
    }
    if (first) buf[0] = 0; /* no product ran tuned */
}

/* Whether w was packed at load for this ISA's gemm (kernels.h pack_rows):
 * then every product of it runs there (the 32-block types that dot with
 * Q8_0 on activations prepared as Q8_0's, the others on their own). */
static bool packed_here(const cpu_backend *c, const inf_weight *w) {
    return w->packed && c->k && c->k->packed_format && w->packed_format == c->k->packed_format;
}

/* Rounds j->x into j->scratch once for all the tasks (for gemm or for
 * matvec, as j->gemm says) and points j->act at it. */
static void prepare_act(matmul_job *j) {
    const inf_kernels *k = j->c->k;
    /* packed 32-block types that dot with Q8_0 share Q8_0's activation
     * tiles (Q4_1 and Q5_1 take their own Q8_1 rows) */
    const bool as_q8_0 = packed_here(j->c, j->w) && inf_dtype_block_elems(j->w->type) == INF_QK &&
                         inf_quant_act_type(j->w->type) == INF_ACT_Q8_0;
    j->act_type = as_q8_0 ? INF_DTYPE_Q8_0 : j->w->type;
    j->act = (inf_act){.data = j->scratch, .stride = j->gemm ? 0 : k->act_row_bytes(j->w->type, j->w->cols), .n = j->n};
    j->tasks = j->n >= 64 ? j->c->n_threads * 4 : 1;
    run_tasks(j->c, j->tasks, act_task, j, (double)j->w->cols * j->n);
}

/* Whether the ISA's matvec takes weights of `type` (kernels.h matvec_takes
 * for the GGUF block types); if not, ref.c's matmul runs, threaded. */
static bool isa_matvec(const cpu_backend *c, inf_dtype type) {
    if (!c->k || !c->k->matvec) return false;
    return !inf_dtype_is_quant(type) || (c->k->matvec_takes && c->k->matvec_takes(type));
}

/* Whether the ISA has a gemm for `type` (kernels.h gemm_takes). */
static bool isa_gemm(const cpu_backend *c, inf_dtype type) {
    return c->k && c->k->gemm && c->k->gemm_takes(type);
}

/* Whether rows of weight type `type` come out bit-identical from the
 * matvec and the gemm kernels (or there is only one of them, or only the
 * reference), so that any row may take either kernel (ops.h, matmul). The
 * GGUF block types: the super-block types' kernels agree (kernels.h), the
 * 32-block types' where the table says so. */
static bool rows_kind_free(const cpu_backend *c, inf_dtype type) {
    if (!isa_matvec(c, type) || !isa_gemm(c, type)) return true;
    if (inf_dtype_is_quant(type)) return inf_dtype_block_elems(type) == 256 || c->k->matvec_exact_quant;
    return type == INF_DTYPE_Q8_0 && c->k->matvec_exact_q8_0;
}

/* Whether n rows, n_decode of them decode rows (all or none, unless the
 * type is kind-free), run on the gemm. Where the kernels differ, a row's
 * kind alone picks: decode rows the matvec, prompt rows the gemm, however
 * few (its per-row result depends on neither the token count nor the
 * row's place in a tile, and a prefix-cache hit or a chunk boundary
 * leaves prompt chunks of any size). Where they agree, the count picks
 * the faster one. */
static bool use_gemm(const cpu_backend *c, inf_dtype type, int n, int n_decode) {
    if (!isa_gemm(c, type)) return false;
    if (rows_kind_free(c, type)) {
        const int q8_min = type == INF_DTYPE_Q8_0 ? c->k->gemm_min_tokens_q8_0 : 0;
        return n >= (q8_min ? q8_min : c->k->gemm_min_tokens);
    }
    return n_decode == 0;
}

static void matmul_rows(cpu_backend *c, const inf_weight *w, const float *x, int n, int n_decode, float *y,
                        void *scratch) {
    product_begins(c);
    matmul_job j = {.c = c, .w = w, .x = x, .n = n, .y = y, .scratch = scratch};
    const double work = (double)w->rows * (double)w->cols * n;

    if (!isa_matvec(c, w->type)) {
        if (n == 1) { /* up to 2 tasks per thread, ref.c being slow anyway */
            const int64_t min_rows = INF_MAX(16, RANGE_MIN_SHARE_BYTES / (int64_t)w->row_bytes);
            j.tasks = split_tasks(c, w->rows, min_rows, 2);
            if (j.tasks > 1 && !ensure_tmp(c, (size_t)w->cols * sizeof(float))) j.tasks = 1;
            if (j.tasks == 1) {
                c->ref->matmul(c->ref, w, x, n, n_decode, y, scratch);
                return;
            }
        } else {
            j.tasks = INF_MIN(n, c->n_threads * 4);
        }
        run_tasks(c, j.tasks, ref_matmul_task, &j, work);
        return;
    }

    /* (Should the gemm's panel not fit in memory, the matvec runs: the
     * result is still right, only no longer batch-invariant.) */
    const bool packed = packed_here(c, w);
    j.gemm = packed || (use_gemm(c, w->type, n, n_decode) && ensure_tmp(c, c->k->gemm_pack_bytes(w->type, w->cols)));
    prepare_act(&j);

    if (packed) {
        run_packed(c, w->type, n, w->rows, w->row_bytes, packed_rows, &j, work, ahead_after(c, w, n));
        return;
    }
    if (j.gemm) {
        j.tasks = (int)((w->rows + c->k->gemm_rows - 1) / c->k->gemm_rows);
        run_tasks(c, j.tasks, gemm_task, &j, work);
        return;
    }
    run_ranges(c, w->rows, w->row_bytes, 16, matvec_rows, &j, work, ahead_after(c, w, n));
}

/* Decode rows and prefill rows of a type whose kernels differ run as two
 * products: the decode rows on the matvec, the prefill rows on the gemm. */
static void cpu_matmul(const inf_ops *self, const inf_weight *w, const float *x, int n, int n_decode, float *y,
                       void *scratch) {
    cpu_backend *c = cpu_of(self);
    if (n_decode > 0 && n_decode < n && !rows_kind_free(c, w->type) && !packed_here(c, w)) {
        matmul_rows(c, w, x, n_decode, n_decode, y, scratch);
        matmul_rows(c, w, x + (size_t)n_decode * (size_t)w->cols, n - n_decode, 0, y + (size_t)n_decode * (size_t)w->rows,
                    scratch);
        return;
    }
    matmul_rows(c, w, x, n, n_decode, y, scratch);
}

/* Weights of one group (ops.h matmul_group) multiplied in one dispatch. */
enum { MATMUL_GROUP_MAX = 4 };

typedef struct group_job {
    cpu_backend *c;
    const inf_weight *const *w;
    float *const *y;
    int count;
    int64_t total_rows; /* of all the weights, in order */
    inf_act act;
} group_job;

/* Rows [g0, g1) of the concatenation, split at the weights' boundaries, on
 * the matvec, or for weights packed at load on the gemm: those take whole
 * 16-row groups of each weight (a weight's first row need not fall on a
 * multiple of 16 of the concatenation), each group going to the range
 * that holds its first row. */
static void group_rows(group_job *j, int64_t g0, int64_t g1, int thread, bool packed) {
    int64_t base = 0;
    for (int i = 0; i < j->count && base < g1; i++) {
        const int64_t rows = j->w[i]->rows;
        int64_t lo = INF_MAX(g0, base) - base, hi = INF_MIN(g1, base + rows) - base;
        if (packed) { /* each group to the task holding its first row */
            lo = INF_MIN(rows, (lo + 15) / 16 * 16);
            hi = INF_MIN(rows, (hi + 15) / 16 * 16);
            if (lo < hi) j->c->k->gemm(j->w[i], &j->act, lo, hi, j->y[i], (size_t)rows, j->c->tmp[thread].p);
        } else if (lo < hi) {
            j->c->k->matvec(j->w[i], &j->act, lo, hi, j->y[i], (size_t)rows);
        }
        base += rows;
    }
}

static void matvec_group_rows(void *ctx, int64_t g0, int64_t g1, int thread) {
    group_rows(ctx, g0, g1, thread, false);
}
static void gemm_group_rows(void *ctx, int64_t g0, int64_t g1, int thread) { group_rows(ctx, g0, g1, thread, true); }

/* Whether weights a and b, both packed here, multiply the same prepared
 * activations (prepare_act): the same type; two 32-block types that dot
 * with Q8_0 (both as Q8_0's) or Q4_1 and Q5_1 (Q8_1 rows); two
 * super-block types of one activation type (Q8_K rows, which gemm_prepare
 * makes alike for all of them, kernels.h). Q4_K_M
 * files mix Q4_K and Q6_K in one layer's q, k and v. */
static bool same_packed_act(const inf_weight *a, const inf_weight *b) {
    if (a->type == b->type) return true;
    if (!inf_dtype_is_quant(a->type) && a->type != INF_DTYPE_Q8_0) return false;
    if (!inf_dtype_is_quant(b->type) && b->type != INF_DTYPE_Q8_0) return false;
    return inf_dtype_block_elems(a->type) == inf_dtype_block_elems(b->type) &&
           inf_quant_act_type(a->type) == inf_quant_act_type(b->type);
}

/* Whether a group's products share one dispatch (cpu_matmul_group), and
 * in *packed whether that is over weights packed at load. */
static bool group_shared(const cpu_backend *c, const inf_weight *const *w, int count, int n, int n_decode,
                         bool *packed) {
    *packed = count <= MATMUL_GROUP_MAX;
    for (int i = 0; i < count && *packed; i++)
        *packed = packed_here(c, w[i]) && same_packed_act(w[i], w[0]) && w[i]->cols == w[0]->cols;
    bool shared = *packed || (isa_matvec(c, w[0]->type) && count <= MATMUL_GROUP_MAX &&
                              !use_gemm(c, w[0]->type, n, n_decode) &&
                              (n_decode == 0 || n_decode == n || rows_kind_free(c, w[0]->type)));
    for (int i = 1; i < count && shared && !*packed; i++)
        shared = w[i]->type == w[0]->type && w[i]->cols == w[0]->cols;
    return shared;
}

/* Decode-sized groups of weights of one type and width, or any group of
 * weights packed at load that take the same activations: those are
 * prepared once and all rows split among the threads in one dispatch (one
 * barrier instead of one per weight). Anything else: matmul each. */
static void cpu_matmul_group(const inf_ops *self, const inf_weight *const *w, int count, const float *x, int n,
                             int n_decode, float *const *y, void *scratch) {
    cpu_backend *c = cpu_of(self);
    product_begins(c);
    bool packed;
    if (!group_shared(c, w, count, n, n_decode, &packed)) {
        for (int i = 0; i < count; i++) cpu_matmul(self, w[i], x, n, n_decode, y[i], scratch);
        return;
    }
    matmul_job prep = {.c = c, .w = w[0], .x = x, .n = n, .scratch = scratch, .gemm = packed};
    prepare_act(&prep);
    group_job j = {.c = c, .w = w, .y = y, .count = count, .act = prep.act};
    for (int i = 0; i < count; i++) j.total_rows += w[i]->rows;
    const double work = (double)j.total_rows * (double)w[0]->cols * n;
    /* group_shared: every weight of the group has w[0]'s row_bytes */
    if (packed)
        run_packed(c, w[0]->type, n, j.total_rows, w[0]->row_bytes, gemm_group_rows, &j, work, ahead_after(c, w[0], n));
    else run_ranges(c, j.total_rows, w[0]->row_bytes, 16, matvec_group_rows, &j, work, ahead_after(c, w[0], n));
}

/* ------------------------------------------------------------------ reading ahead */

/* Between two decode products the calling thread runs the serial ops
 * (norms, RoPE, shallow attention, rounding the activations) while the
 * other threads spin. matmul_ahead has each of them read the front of the
 * share of the next product's rows that it will own (run_ranges' split,
 * thread t's slot t) into its caches meanwhile: the memory is read while
 * it would stand idle, and that thread's share starts warm. The caller
 * itself only asks for the first lines of its own share before it runs
 * those ops: requests that complete behind them, where its share used to
 * start cold. Zen 5 VM, 0.6B decode in one process, token by token, f16
 * cache: Q4_K_M +0.6-1.2% (three runs), Q4_0 +1.1%; f32 cache: Q4_K_M
 * +0.4-1.3% (twelve runs of 600-1200 tokens), IQ4_XS +1.5%, Q4_0, Q6_K
 * and Q8_0 level. 16-64 lines alike, 128 and 256 level. Asking as well
 * for the activation rows, to be written (held by the thread that read
 * them in the last product), did as much alone and added nothing to
 * this.
 *
 * The read-ahead starts earlier where the backend knows what comes next:
 * matmul_ahead remembers which decode dispatch it followed (ahead_next,
 * keyed by that dispatch's first weight), and the next time that dispatch
 * runs, each thread that finds no task of it left reads its share of the
 * successor ahead at once (inf_pool_run_then): a worker until the next
 * job, the caller while it waits for the others' last tasks. The model's
 * matmul_ahead then finds those spans set and goes on where they got to.
 * The gaps it fills are a product's end (one thread still on its last
 * grain) and the dispatch round trip, ~3 µs that each small product (o,
 * down) lost against the large ones (trace.c). Zen 5 VM, 0.6B decode
 * after 17, f16 cache, one process token by token against the same code
 * without it: Q4_K_M +1.1..3.1% (four runs), Q4_0 +0.3..2.1% (four), Q6_K
 * +0.4% and +0.8%, Q5_K_M +0.9% and +1.3%, IQ4_XS +1.2% and +2.3%, Q8_0
 * +1.5% and +0.6%. The caller's own part is +0.4..1.3% of that; its reach
 * a whole share front (AHEAD_MAX_BYTES) read 0-1.6% faster than 256 KiB,
 * and 256 KiB than 64 KiB and 16 KiB. */
enum {
    AHEAD_MAX_TOKENS = 16,       /* decode-sized products only */
    AHEAD_MAX_BYTES = 1 << 20,   /* per worker: within its L2 (or L3) */
    AHEAD_STEP_BYTES = 4096,      /* between looks at whether the product has come */
    AHEAD_CALLER_BYTES = 2048,   /* the caller's: a few lines in flight, not a stream it would wait on */
    AHEAD_NEXT_SLOTS = 1024,     /* decode dispatches remembered: 4 a layer and the head, of any Qwen3 */
    AHEAD_NEXT_PROBES = 16,
};

/* Where a thread reads ahead: the front of its share, as runs of bytes (one
 * per weight of a group), and how much of them it has asked for. Atomics:
 * a worker may still read a set while a later one is written (a torn span
 * or a stale `done` only misplaces prefetches). */
typedef struct ahead_spans {
    _Alignas(64) _Atomic(uintptr_t) addr[MATMUL_GROUP_MAX];
    _Atomic size_t bytes[MATMUL_GROUP_MAX];
    _Atomic size_t done; /* a job posted again on the same spans goes on from here */
} ahead_spans;

/* inf_pool_idle / inf_pool_run_then steps: the next AHEAD_STEP_BYTES of the
 * thread's spans in the job's set. */
static bool ahead_step(void *ctx, int thread, int step) {
    (void)step; /* `done` says where */
    const ahead_job *job = ctx;
    ahead_spans *a = &job->c->ahead[(size_t)job->set * (size_t)job->c->n_threads + (size_t)thread];
    const size_t done = atomic_load_explicit(&a->done, memory_order_relaxed);
    size_t off = done;
    for (int s = 0; s < MATMUL_GROUP_MAX; s++) {
        const size_t bytes = atomic_load_explicit(&a->bytes[s], memory_order_relaxed);
        if (off >= bytes) {
            off -= bytes;
            continue;
        }
        const char *p = (const char *)atomic_load_explicit(&a->addr[s], memory_order_relaxed) + off;
        const size_t n = INF_MIN(bytes - off, (size_t)AHEAD_STEP_BYTES);
        atomic_store_explicit(&a->done, done + n, memory_order_relaxed);
        for (size_t i = 0; i < n; i += 64) __builtin_prefetch(p + i, 0, 3);
        return true;
    }
    return false;
}

/* What reading a dispatch's shares ahead needs, taken from its weights
 * when the model names them (matmul_ahead) and kept for the next time the
 * dispatch before it runs (ahead_next): sizes and addresses, no pointer
 * to a weight, so that a stale plan only misplaces prefetches. */
typedef struct ahead_plan {
    int count;                        /* weights, their rows in this order */
    uintptr_t base[MATMUL_GROUP_MAX]; /* where each one's rows lie, packed or not */
    size_t bytes[MATMUL_GROUP_MAX];   /* all of its rows' */
    int64_t rows[MATMUL_GROUP_MAX];
    size_t row_bytes;                 /* of the first (a shared dispatch's are alike) */
    int64_t units, grain, grains;     /* run_ranges' split (range_split) */
    int n_slots;
} ahead_plan;

/* The plan of the dispatch of w[0 .. count) for n tokens (the group's
 * rows together, or its first weight's: as the dispatch will run); false
 * when it is not one that run_ranges splits. */
static bool ahead_plan_make(const cpu_backend *c, const inf_weight *const *w, int count, int n, ahead_plan *p) {
    if (c->n_threads == 1 || !c->k || n > AHEAD_MAX_TOKENS || count < 1 || range_align(c, n) != 16) return false;
    bool packed;
    if (count > 1 && !group_shared(c, w, count, n, n, &packed)) count = 1;
    if (count == 1 && !(packed_here(c, w[0]) || (isa_matvec(c, w[0]->type) && !use_gemm(c, w[0]->type, n, n))))
        return false;
    *p = (ahead_plan){.count = count, .row_bytes = w[0]->row_bytes};
    for (int i = 0; i < count; i++) {
        const bool packed_i = packed_here(c, w[i]);
        p->base[i] = (uintptr_t)(packed_i ? w[i]->packed : w[i]->data);
        p->bytes[i] = packed_i ? c->k->packed_bytes(w[i]) : (size_t)w[i]->rows * w[i]->row_bytes;
        p->rows[i] = w[i]->rows;
        p->units += w[i]->rows;
    }
    p->n_slots = range_split(c, p->units, p->row_bytes, 16, &p->grain, &p->grains);
    return p->n_slots > 1;
}

/* Thread t's spans: the first `max_bytes` of its share (run_ranges' split,
 * thread t's slot t), as runs of bytes, one per weight (0 bytes where a
 * weight has none of them; packed rows are in groups: their place is taken
 * in proportion). */
static void ahead_plan_spans(const ahead_plan *p, int t, size_t max_bytes, uintptr_t addr[MATMUL_GROUP_MAX],
                             size_t bytes[MATMUL_GROUP_MAX]) {
    int64_t lo = 0, hi = 0;
    if (t < p->n_slots) {
        task_range(p->grains, p->n_slots, t, 1, &lo, &hi);
        lo = INF_MIN(p->units, lo * p->grain);
        hi = INF_MIN(p->units, INF_MIN(hi * p->grain, lo + (int64_t)(AHEAD_MAX_BYTES / p->row_bytes)));
    }
    int64_t base = 0;
    size_t left = max_bytes;
    for (int i = 0; i < MATMUL_GROUP_MAX; i++) {
        addr[i] = 0;
        bytes[i] = 0;
        if (i >= p->count) continue;
        const int64_t r0 = INF_MAX(lo, base) - base, r1 = INF_MIN(hi, base + p->rows[i]) - base;
        base += p->rows[i];
        if (r0 >= r1) continue;
        const size_t b0 = (size_t)((double)p->bytes[i] * (double)r0 / (double)p->rows[i]);
        const size_t b1 = (size_t)((double)p->bytes[i] * (double)r1 / (double)p->rows[i]);
        addr[i] = p->base[i] + b0;
        bytes[i] = INF_MIN(b1 - b0, left);
        left -= bytes[i];
    }
}

/* The job that reads plan p ahead: the set written last when it already
 * holds p's spans (a read-ahead begun after the dispatch before goes on
 * where it got to), else the other set, written now (the workers read
 * only the last one posted). */
static ahead_job *ahead_job_for(cpu_backend *c, const ahead_plan *p) {
    const size_t n = (size_t)c->n_threads;
    ahead_spans *set = &c->ahead[(size_t)c->ahead_set * n];
    bool same = true;
    for (size_t t = 0; t < n && same; t++) {
        uintptr_t addr[MATMUL_GROUP_MAX];
        size_t bytes[MATMUL_GROUP_MAX];
        ahead_plan_spans(p, (int)t, AHEAD_MAX_BYTES, addr, bytes);
        for (int i = 0; i < MATMUL_GROUP_MAX; i++)
            same = same && atomic_load_explicit(&set[t].addr[i], memory_order_relaxed) == addr[i] &&
                   atomic_load_explicit(&set[t].bytes[i], memory_order_relaxed) == bytes[i];
    }
    if (same) return &c->ahead_jobs[c->ahead_set];
    c->ahead_set ^= 1;
    set = &c->ahead[(size_t)c->ahead_set * n];
    for (size_t t = 0; t < n; t++) {
        uintptr_t addr[MATMUL_GROUP_MAX];
        size_t bytes[MATMUL_GROUP_MAX];
        ahead_plan_spans(p, (int)t, AHEAD_MAX_BYTES, addr, bytes);
        for (int i = 0; i < MATMUL_GROUP_MAX; i++) {
            atomic_store_explicit(&set[t].addr[i], addr[i], memory_order_relaxed);
            atomic_store_explicit(&set[t].bytes[i], bytes[i], memory_order_relaxed);
        }
        atomic_store_explicit(&set[t].done, 0, memory_order_relaxed);
    }
    return &c->ahead_jobs[c->ahead_set];
}

/* What the model named after a decode dispatch, the last time it ran. */
typedef struct ahead_next {
    const inf_weight *key; /* the dispatch's first weight (compared, never read); NULL: free */
    ahead_plan plan;
} ahead_next;

/* key's entry, or the free one where it goes (open addressing; when
 * AHEAD_NEXT_PROBES slots find neither, the last of them is taken over). */
static ahead_next *ahead_next_entry(cpu_backend *c, const inf_weight *key) {
    const size_t home = (size_t)(((uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15u) >> 40);
    ahead_next *e = NULL;
    for (int probe = 0; probe < AHEAD_NEXT_PROBES; probe++) {
        e = &c->ahead_next[(home + (size_t)probe) % AHEAD_NEXT_SLOTS];
        if (e->key == key || !e->key) break;
    }
    return e;
}

/* Before a decode-sized dispatch whose first weight is `key`: the job its
 * threads read ahead once they find no task left, the dispatch the model
 * named after it the last time (NULL: none known). */
static ahead_job *ahead_after(cpu_backend *c, const inf_weight *key, int n) {
    if (c->n_threads == 1 || n > AHEAD_MAX_TOKENS) return NULL;
    c->last_dispatch = key;
    const ahead_next *e = ahead_next_entry(c, key);
    return e->key == key ? ahead_job_for(c, &e->plan) : NULL;
}

static void cpu_matmul_ahead(const inf_ops *self, const inf_weight *const *w, int count, int n) {
    cpu_backend *c = cpu_of(self);
    ahead_plan plan;
    if (!ahead_plan_make(c, w, count, n, &plan)) return;
    if (c->last_dispatch) {
        ahead_next *e = ahead_next_entry(c, c->last_dispatch);
        e->key = c->last_dispatch;
        e->plan = plan;
    }
    uintptr_t addr[MATMUL_GROUP_MAX];
    size_t bytes[MATMUL_GROUP_MAX];
    ahead_plan_spans(&plan, 0, AHEAD_CALLER_BYTES, addr, bytes); /* into L2: the front of the caller's share */
    for (int i = 0; i < MATMUL_GROUP_MAX; i++)
        for (size_t o = 0; o < bytes[i]; o += 64) __builtin_prefetch((const char *)addr[i] + o, 0, 2);
    c->ahead_posted = ahead_job_for(c, &plan);
    inf_pool_idle(c->pool, ahead_step, c->ahead_posted);
}

/* ------------------------------------------------------------------ packed weights */

typedef struct pack_job {
    cpu_backend *c;
    const inf_weight *w;
    void *dst;
} pack_job;

static void pack_task(void *ctx, int task, int thread) {
    (void)thread;
    pack_job *j = ctx;
    const int64_t r0 = (int64_t)task * j->c->k->gemm_rows;
    j->c->k->pack_rows(j->w, r0, INF_MIN(j->w->rows, r0 + j->c->k->gemm_rows), j->dst);
}

static size_t cpu_weight_packed_bytes(const inf_ops *self, const inf_weight *w) {
    return cpu_of(self)->k->packed_bytes(w);
}

static bool cpu_weight_pack(const inf_ops *self, inf_weight *w, void *dst) {
    cpu_backend *c = cpu_of(self);
    /* the gemm's per-task scratch, grown now so that the products never lack it */
    if (!c->k->packed_bytes(w) || !ensure_tmp(c, c->k->gemm_pack_bytes(w->type, w->cols))) return false;
    pack_job j = {.c = c, .w = w, .dst = dst};
    const int tasks = (int)((w->rows + c->k->gemm_rows - 1) / c->k->gemm_rows);
    run_tasks(c, tasks, pack_task, &j, (double)w->rows * (double)w->cols);
    w->packed = dst;
    w->packed_format = c->k->packed_format;
    return true;
}

typedef struct pack_made_job {
    cpu_backend *c;
    const inf_weight *w;
    inf_weight_rows_fn make_rows;
    void *ctx;
    void *dst;
} pack_made_job;

/* gemm_rows rows made into the thread's scratch, then packed as a weight
 * of those rows alone at their place in the copy (kernels.h pack_rows). */
static void pack_made_task(void *ctx, int task, int thread) {
    pack_made_job *j = ctx;
    const inf_kernels *k = j->c->k;
    const int64_t r0 = (int64_t)task * k->gemm_rows, r1 = INF_MIN(j->w->rows, r0 + k->gemm_rows);
    void *rows = j->c->tmp[thread].p;
    j->make_rows(j->ctx, r0, r1, rows);
    inf_weight before = *j->w, part = *j->w;
    before.rows = r0;
    part.rows = r1 - r0;
    part.data = rows;
    k->pack_rows(&part, 0, part.rows, (char *)j->dst + k->packed_bytes(&before));
}

static bool cpu_weight_pack_made(const inf_ops *self, inf_weight *w, inf_weight_rows_fn make_rows, void *ctx,
                                 void *dst) {
    cpu_backend *c = cpu_of(self);
    const size_t made_bytes = (size_t)c->k->gemm_rows * w->row_bytes;
    if (!c->k->packed_bytes(w) ||
        !ensure_tmp(c, INF_MAX(made_bytes, c->k->gemm_pack_bytes(w->type, w->cols))))
        return false;
    pack_made_job j = {.c = c, .w = w, .make_rows = make_rows, .ctx = ctx, .dst = dst};
    const int tasks = (int)((w->rows + c->k->gemm_rows - 1) / c->k->gemm_rows);
    run_tasks(c, tasks, pack_made_task, &j, (double)w->rows * (double)w->cols);
    w->packed = dst;
    w->packed_format = c->k->packed_format;
    return true;
}

static void cpu_quantize_q8_0(const inf_ops *self, const float *x, void *y, int64_t n) {
    cpu_of(self)->k->quantize_row_q8_0(x, y, n);
}

/* ------------------------------------------------------------------ element-wise ops */

/* Elements per task of the element-wise ops, and the size from which they
 * are split at all (a dispatch costs a few microseconds). */
enum { ELEMS_PER_TASK = 16384 };

typedef struct rows_job {
    cpu_backend *c;
    float *y;
    const float *x, *w;
    int n_rows, dim;
    float eps;
    int tasks;
} rows_job;

static void rmsnorm_task(void *ctx, int task, int thread) {
    (void)thread;
    rows_job *j = ctx;
    int64_t r0, r1;
    task_range(j->n_rows, j->tasks, task, 1, &r0, &r1);
    if (r0 >= r1) return;
    const size_t off = (size_t)r0 * (size_t)j->dim;
    if (j->c->k && j->c->k->rmsnorm) j->c->k->rmsnorm(j->y + off, j->x + off, j->w, (int)(r1 - r0), j->dim, j->eps);
    else j->c->ref->rmsnorm(j->c->ref, j->y + off, j->x + off, j->w, (int)(r1 - r0), j->dim, j->eps);
}

/* Splits the j->n_rows rows of j->dim elements into tasks and runs fn on them. */
static void run_rows(cpu_backend *c, rows_job *j, inf_pool_fn fn) {
    j->tasks = INF_MIN(j->n_rows, split_tasks(c, (int64_t)j->n_rows * j->dim, ELEMS_PER_TASK, 2));
    if (j->tasks <= 1) fn(j, 0, 0);
    else inf_pool_run(c->pool, j->tasks, fn, j);
}

static void cpu_rmsnorm(const inf_ops *self, float *y, const float *x, const float *w, int n_rows,
                        int dim, float eps) {
    rows_job j = {.c = cpu_of(self), .y = y, .x = x, .w = w, .n_rows = n_rows, .dim = dim, .eps = eps};
    run_rows(j.c, &j, rmsnorm_task);
}

static void hadamard_task(void *ctx, int task, int thread) {
    (void)thread;
    rows_job *j = ctx;
    int64_t r0, r1;
    task_range(j->n_rows, j->tasks, task, 1, &r0, &r1);
    if (r0 >= r1) return;
    float *x = j->y + (size_t)r0 * (size_t)j->dim;
    if (j->c->k && j->c->k->hadamard && j->dim >= 8) j->c->k->hadamard(x, (int)(r1 - r0), j->dim);
    else j->c->ref->hadamard(j->c->ref, x, (int)(r1 - r0), j->dim);
}

static void cpu_hadamard(const inf_ops *self, float *x, int n_rows, int n) {
    rows_job j = {.c = cpu_of(self), .y = x, .n_rows = n_rows, .dim = n};
    run_rows(j.c, &j, hadamard_task);
}

typedef struct rope_job {
    cpu_backend *c;
    float *x;
    int n_tok, n_heads, head_dim;
    const int32_t *pos; /* [n_tok] */
    const inf_rope *rope;
    int tasks;
} rope_job;

static void rope_task(void *ctx, int task, int thread) {
    (void)thread;
    rope_job *j = ctx;
    int64_t t0, t1;
    task_range(j->n_tok, j->tasks, task, 1, &t0, &t1);
    const size_t tok_elems = (size_t)j->n_heads * (size_t)j->head_dim;
    if (!j->c->k || !j->c->k->rope_rows || !j->c->rope_cs) {
        if (t0 < t1)
            j->c->ref->rope_neox(j->c->ref, j->x + t0 * tok_elems, (int)(t1 - t0), j->n_heads, j->head_dim,
                                 j->pos + t0, j->rope);
        return;
    }
    for (int64_t t = t0; t < t1; t++)
        j->c->k->rope_rows(j->x + t * tok_elems, j->n_heads, j->head_dim,
                           j->c->rope_cs + (size_t)t * (size_t)j->head_dim);
}

/* cos/sin of every (token, pair), by ref.c's inf_rope_angles (so every
 * path rotates by the same floats, YaRN included). Kept until the
 * positions, frequencies or geometry change (the next layer reuses it).
 * False when the table cannot be allocated. */
static bool rope_table(cpu_backend *c, int n_tok, int head_dim, const int32_t *pos, const inf_rope *rope) {
    if (c->rope_cs && c->rope_n_tok == n_tok && c->rope_head_dim == head_dim &&
        memcmp(&c->rope, rope, sizeof *rope) == 0 && memcmp(c->rope_pos, pos, (size_t)n_tok * sizeof *pos) == 0)
        return true;
    if ((size_t)n_tok > c->rope_cap || head_dim != c->rope_head_dim) {
        inf_free_aligned(c->rope_cs);
        free(c->rope_pos);
        c->rope_cs = inf_alloc_aligned((size_t)n_tok * (size_t)head_dim * sizeof(float));
        c->rope_pos = malloc((size_t)n_tok * sizeof *pos);
        c->rope_cap = c->rope_cs && c->rope_pos ? (size_t)n_tok : 0;
        if (!c->rope_cap) {
            inf_free_aligned(c->rope_cs);
            free(c->rope_pos);
            c->rope_cs = NULL;
            c->rope_pos = NULL;
            return false;
        }
    }
    for (int t = 0; t < n_tok; t++) /* [cos half][sin half] per token */
        inf_rope_angles(rope, head_dim, pos[t], c->rope_cs + (size_t)t * (size_t)head_dim);
    memcpy(c->rope_pos, pos, (size_t)n_tok * sizeof *pos);
    c->rope_n_tok = n_tok;
    c->rope_head_dim = head_dim;
    c->rope = *rope;
    return true;
}

static void cpu_rope_neox(const inf_ops *self, float *x, int n_tok, int n_heads, int head_dim,
                          const int32_t *pos, const inf_rope *rope) {
    cpu_backend *c = cpu_of(self);
    rope_job j = {.c = c, .x = x, .n_tok = n_tok, .n_heads = n_heads, .head_dim = head_dim, .pos = pos,
                  .rope = rope};
    if (c->k && c->k->rope_rows && !rope_table(c, n_tok, head_dim, pos, rope)) {
        c->ref->rope_neox(c->ref, x, n_tok, n_heads, head_dim, pos, rope);
        return;
    }
    j.tasks = INF_MIN(n_tok, split_tasks(c, (int64_t)n_tok * n_heads * head_dim, ELEMS_PER_TASK, 2));
    if (j.tasks <= 1) rope_task(&j, 0, 0);
    else inf_pool_run(c->pool, j.tasks, rope_task, &j);
}

typedef struct vec_job {
    cpu_backend *c;
    float *out;
    const float *a, *b;
    size_t n;
    int tasks;
} vec_job;

static void swiglu_task(void *ctx, int task, int thread) {
    (void)thread;
    vec_job *j = ctx;
    int64_t i0, i1;
    task_range((int64_t)j->n, j->tasks, task, 64, &i0, &i1);
    if (i0 >= i1) return;
    if (j->c->k && j->c->k->swiglu) j->c->k->swiglu(j->out + i0, j->a + i0, j->b + i0, (size_t)(i1 - i0));
    else j->c->ref->swiglu(j->c->ref, j->out + i0, j->a + i0, j->b + i0, (size_t)(i1 - i0));
}

static void add_task(void *ctx, int task, int thread) {
    (void)thread;
    vec_job *j = ctx;
    int64_t i0, i1;
    task_range((int64_t)j->n, j->tasks, task, 64, &i0, &i1);
    if (i0 >= i1) return;
    if (j->c->k && j->c->k->add) j->c->k->add(j->out + i0, j->a + i0, (size_t)(i1 - i0));
    else j->c->ref->add(j->c->ref, j->out + i0, j->a + i0, (size_t)(i1 - i0));
}

static void run_vec(cpu_backend *c, vec_job *j, inf_pool_fn fn) {
    j->tasks = split_tasks(c, (int64_t)j->n, ELEMS_PER_TASK, 2);
    if (j->tasks <= 1) fn(j, 0, 0);
    else inf_pool_run(c->pool, j->tasks, fn, j);
}

static void cpu_swiglu(const inf_ops *self, float *out, const float *gate, const float *up, size_t n) {
    vec_job j = {.c = cpu_of(self), .out = out, .a = gate, .b = up, .n = n};
    run_vec(j.c, &j, swiglu_task);
}

static void cpu_add(const inf_ops *self, float *y, const float *x, size_t n) {
    vec_job j = {.c = cpu_of(self), .out = y, .a = x, .n = n};
    run_vec(j.c, &j, add_task);
}

static void cpu_embed(const inf_ops *self, const inf_weight *emb, const int32_t *ids, int n, float *out) {
    const cpu_backend *c = cpu_of(self);
    c->ref->embed(c->ref, emb, ids, n, out);
}

typedef struct kv_store_job {
    const cpu_backend *c;
    const inf_kv_view *cache[2]; /* K, V */
    const float *src[2];         /* [n_tok][n_head_kv][head_dim] */
    int n_tok, pos0, n_head_kv, head_dim;
} kv_store_job;

/* KV head h of rows [n_tok][n_head_kv][head_dim] into a cache at
 * positions pos0.., in order. */
static void store_head(const cpu_backend *c, const inf_kv_view *cache, const float *src, int n_tok, int pos0,
                       int n_head_kv, int head_dim, int h) {
    for (int t = 0; t < n_tok; t++) {
        const float *s = src + ((size_t)t * n_head_kv + h) * (size_t)head_dim;
        void *row = (char *)cache->data + inf_kv_type_bytes(cache->type, inf_kv_elem(cache, pos0 + t, h));
        switch (cache->type) {
        case INF_KV_F32: memcpy(row, s, (size_t)head_dim * sizeof(float)); break;
        case INF_KV_F16: c->k->f32_to_f16(row, s, (size_t)head_dim); break;
        case INF_KV_Q8_0: /* ref.c's quantizer, bit for bit */
            if (c->k->quantize_row_q8_0) c->k->quantize_row_q8_0(s, row, head_dim);
            else inf_quantize_row_q8_0(s, row, head_dim);
            break;
        }
    }
}

/* Task = (cache, KV head): its rows at positions pos0.. in order. */
static void kv_store_task(void *ctx, int task, int thread) {
    (void)thread;
    const kv_store_job *j = ctx;
    const int i = task / j->n_head_kv, h = task % j->n_head_kv;
    store_head(j->c, j->cache[i], j->src[i], j->n_tok, j->pos0, j->n_head_kv, j->head_dim, h);
}

static void cpu_kv_store(const inf_ops *self, const inf_kv_view *k_cache, const inf_kv_view *v_cache,
                         const float *k, const float *v, int n_tok, int pos0, int n_head_kv, int head_dim) {
    cpu_backend *c = cpu_of(self);
    if (!c->k || !c->k->f32_to_f16) {
        c->ref->kv_store(c->ref, k_cache, v_cache, k, v, n_tok, pos0, n_head_kv, head_dim);
        return;
    }
    kv_store_job j = {.c = c, .cache = {k_cache, v_cache}, .src = {k, v}, .n_tok = n_tok, .pos0 = pos0,
                      .n_head_kv = n_head_kv, .head_dim = head_dim};
    run_tasks(c, 2 * n_head_kv, kv_store_task, &j, 2.0 * n_tok * n_head_kv * head_dim);
}

/* ------------------------------------------------------------------ attention */

typedef struct attn_job {
    cpu_backend *c;
    const inf_attn_shape *sh;
    const float *q;
    const inf_kv_view *k, *v;
    float *out;
    int n_blocks; /* query blocks per KV head (prefill) */
    int block;    /* query tokens per block */
    int tasks;
    bool use_ref; /* run the reference op (on sub-ranges) instead of the ISA's kernel */
} attn_job;

/* A view of KV head kvh of a cache as a cache of one head. */
static inf_kv_view kv_head_view(const inf_kv_view *c, int kvh) {
    inf_kv_view v = *c;
    v.data = (char *)c->data + inf_kv_type_bytes(c->type, (size_t)kvh * c->head_stride);
    return v;
}

/* Whether the ISA's attention kernels read these caches: both of one type
 * (any block tables: the kernels follow them). */
static bool kernels_read_kv(const cpu_backend *c, const inf_kv_view *k, const inf_kv_view *v) {
    return c->k && k->type == v->type;
}

/* The KV head (or group of heads, decode_seqs_task) of decode attention
 * task `task`: in an order in which the n_threads tasks that run at once
 * lie apart (8 on 2 threads: 0, 4, 1, 5, 2, 6, 3, 7). A paged cache's block
 * holds every head's rows side by side, and two cores streaming
 * neighbouring heads were slower than two apart: bench/attn_bench, depth
 * 1000, blocks of 64, 193-206 -> 164-176 µs a layer (Zen 5 VM, three
 * alternating pairs); the engine's layout in one process token by token,
 * decode after 1000 +8.1% and after 2044 +10.1%; one contiguous block
 * unchanged (+0.2%, -0.5% after 1000 and 17). Any order gives the same
 * floats. */
static int spread_head(int task, int n_heads, int n_threads) { /* n_heads: or groups */
    const int per_thread = (n_heads + n_threads - 1) / n_threads;
    for (int col = 0, t = 0; col < per_thread; col++)
        for (int i = 0; i < n_threads; i++) {
            const int h = i * per_thread + col;
            if (h < n_heads && t++ == task) return h;
        }
    return task; /* not reached: the order is a permutation */
}

/* The reference on KV head kvh (the task) alone: its group's heads are contiguous in q and out. */
static void ref_decode_task(void *ctx, int kvh, int thread) {
    (void)thread;
    attn_job *j = ctx;
    const int group = j->sh->n_head / j->sh->n_head_kv, hd = j->sh->head_dim;
    inf_attn_shape one = *j->sh;
    one.n_head = group;
    one.n_head_kv = 1;
    const inf_kv_view kh = kv_head_view(j->k, kvh), vh = kv_head_view(j->v, kvh);
    const size_t off = (size_t)kvh * (size_t)group * (size_t)hd;
    j->c->ref->attn_decode(j->c->ref, &one, j->q + off, &kh, &vh, j->out + off);
}

typedef struct decode_seqs_job {
    cpu_backend *c;
    const inf_attn_shape *shapes;
    const float *q, *k, *v; /* k and v: the new rows to store first, or NULL (stored already) */
    const inf_kv_view *k_caches, *v_caches;
    float *out;
    int heads_per_task;
} decode_seqs_job;

/* Positions of each cached head a decode task reads ahead at its start:
 * the kernels' first key tile (attention_avx512.c), which they then read
 * ahead a tile at a time as they go; of a context no longer than that,
 * only the first attn_decode_short_ahead keys where the kernel reads the
 * rest ahead itself. */
enum { DECODE_AHEAD_POSITIONS = 64 };

/* Prefetches the rows of positions [p0, p0 + n) of KV head h (n at most
 * DECODE_AHEAD_POSITIONS) into L1 and L2, to be written (the new rows) or
 * read. */
static void prefetch_head_rows(const inf_kv_view *c, int h, int p0, int n, size_t row_bytes, bool write) {
    const void *rows[DECODE_AHEAD_POSITIONS];
    inf_kv_rows(c, h, p0, n, rows);
    for (int i = 0; i < n; i++) {
        const uintptr_t end = (uintptr_t)rows[i] + row_bytes;
        for (uintptr_t line = (uintptr_t)rows[i] & ~(uintptr_t)63; line < end; line += 64) {
            if (write) __builtin_prefetch((const void *)line, 1, 3);
            else __builtin_prefetch((const void *)line, 0, 3);
        }
    }
}

/* Task = (sequence, a group of KV heads): each head's new K and V rows
 * (unless stored already), then its attention, which reads only that head
 * of the caches. The rows of all the group's heads are requested first, so
 * their memory latencies overlap instead of following one another: in
 * decode the caches come from DRAM (a layer's weights passed through
 * since), and a head's few rows gave a core too little to keep in flight.
 * Zen 5 VM, 0.6B, decode after 17, one process alternating token by token:
 * attention 15-19% less time (groups of 4, 2 and 1 heads alike; prefetching
 * into L2 only, as the kernels' tile-ahead does, 4%); groups of 2, the
 * token +1.0% (Q4_0) and +1.3% (Q4_K_M); after 200 and 1000 level. Groups
 * of consecutive heads in spread_head's order of groups; any grouping gives
 * the same floats. */
static void decode_seqs_task(void *ctx, int task, int thread) {
    const decode_seqs_job *j = ctx;
    const inf_attn_shape *sh0 = &j->shapes[0];
    const int per = j->heads_per_task, n_groups = sh0->n_head_kv / per;
    const int s = task / n_groups, h0 = per * spread_head(task % n_groups, n_groups, j->c->n_threads);
    const inf_attn_shape *sh = &j->shapes[s];
    const inf_kv_view *kc = &j->k_caches[s], *vc = &j->v_caches[s];
    const size_t q_row = (size_t)sh->n_head * (size_t)sh->head_dim;
    const size_t kv_row = (size_t)sh->n_head_kv * (size_t)sh->head_dim;
    const size_t row_bytes = inf_kv_type_bytes(kc->type, (size_t)sh->head_dim);
    const bool store = j->k != NULL;
    const int n_read = INF_MIN(store ? sh->pos0 : sh->pos0 + 1, DECODE_AHEAD_POSITIONS);
    /* a context of one key tile whose kernel reads ahead as it goes: only
     * the first keys of each head (kernels.h attn_decode_short_ahead) */
    const int short_ahead = j->c->k->attn_decode_short_ahead;
    const bool short_ctx = short_ahead > 0 && sh->pos0 + 1 <= DECODE_AHEAD_POSITIONS;
    for (int h = h0; h < h0 + per; h++) {
        if (store) {
            prefetch_head_rows(kc, h, sh->pos0, 1, row_bytes, true);
            prefetch_head_rows(vc, h, sh->pos0, 1, row_bytes, true);
        }
        prefetch_head_rows(kc, h, 0, short_ctx ? INF_MIN(n_read, short_ahead) : n_read, row_bytes, false);
        if (!short_ctx) prefetch_head_rows(vc, h, 0, n_read, row_bytes, false);
    }
    for (int h = h0; h < h0 + per; h++) {
        if (store) {
            store_head(j->c, kc, j->k + s * kv_row, 1, sh->pos0, sh->n_head_kv, sh->head_dim, h);
            store_head(j->c, vc, j->v + s * kv_row, 1, sh->pos0, sh->n_head_kv, sh->head_dim, h);
        }
        j->c->k->attn_decode(sh, j->q + s * q_row, kc, vc, j->out + s * q_row, h, j->c->tmp[thread].p);
    }
}

/* Decode attention of n_seqs sequences on the pool, two groups of KV heads
 * per thread (the later ones go to whichever is free); k and v as in
 * decode_seqs_job. A thread out of heads goes on reading ahead the product
 * matmul_ahead named (its idle job, which this dispatch ends): attention
 * waits on memory latency and leaves bandwidth idle, the more so while
 * the last heads finish. Zen 5 VM, 0.6B decode after 17, one process token
 * by token: Q4_K_M +0.6..1.4% (five runs), Q4_0 +0.2..1.8% (five), Q6_K,
 * IQ4_XS and Q8_0 +0.2..2.4%; after 1000, Q4_0 +2.5%, Q4_K_M +2.4%. */
static void run_decode_seqs(cpu_backend *c, int n_seqs, const inf_attn_shape *shapes, const float *q,
                            const float *k, const float *v, const inf_kv_view *k_caches,
                            const inf_kv_view *v_caches, float *out) {
    const int n_head_kv = shapes[0].n_head_kv;
    int per = INF_MAX(1, n_head_kv / (2 * c->n_threads));
    while (n_head_kv % per) per--;
    decode_seqs_job j = {.c = c, .shapes = shapes, .q = q, .k = k, .v = v, .k_caches = k_caches,
                         .v_caches = v_caches, .out = out, .heads_per_task = per};
    ahead_job *then = c->ahead_posted; /* out of heads, a thread reads the next product ahead */
    inf_pool_run_then(c->pool, n_seqs * (n_head_kv / per), decode_seqs_task, &j, then ? ahead_step : NULL, then);
}

/* Decode attention runs on every thread, a group of KV heads per task
 * (run_decode_seqs), at any depth: its K and V rows come from DRAM (the
 * weights of a whole layer passed through the caches since they were last
 * read), so it is bound by memory latency, and two threads wait for half as
 * many rows each. In the model on Zen 5 a layer's attention on one thread
 * took 28-32 µs at depths 17-31, on two 20-24 µs at 32-81 (0.6B, f16
 * cache); from the threshold of 32 positions this replaces, decode 20
 * tokens after 17 was 0.5-0.7% faster (in one process, alternating token by
 * token), and decode from depth 1 level. */
static void cpu_attn_decode(const inf_ops *self, const inf_attn_shape *sh, const float *q,
                            const inf_kv_view *k, const inf_kv_view *v, float *out) {
    cpu_backend *c = cpu_of(self);
    const bool fast = kernels_read_kv(c, k, v) && c->k->attn_decode;
    if (sh->n_tok != 1 || (fast && !ensure_tmp(c, c->k->attn_tmp_bytes(sh)))) {
        c->ref->attn_decode(c->ref, sh, q, k, v, out);
        return;
    }
    if (!fast) {
        attn_job j = {.c = c, .sh = sh, .q = q, .k = k, .v = v, .out = out};
        inf_pool_run(c->pool, sh->n_head_kv, ref_decode_task, &j);
        return;
    }
    run_decode_seqs(c, 1, sh, q, NULL, NULL, k, v, out);
}

static void cpu_attn_decode_seqs(const inf_ops *self, int n_seqs, const inf_attn_shape *shapes, const float *q,
                                 const float *k, const float *v, const inf_kv_view *k_caches,
                                 const inf_kv_view *v_caches, float *out) {
    cpu_backend *c = cpu_of(self);
    bool fast = c->k && c->k->attn_decode && c->k->f32_to_f16;
    size_t tmp = 0;
    for (int s = 0; s < n_seqs && fast; s++) {
        fast = shapes[s].n_tok == 1 && kernels_read_kv(c, &k_caches[s], &v_caches[s]);
        if (fast) tmp = INF_MAX(tmp, c->k->attn_tmp_bytes(&shapes[s]));
    }
    if (!fast || !ensure_tmp(c, tmp)) { /* one sequence at a time: the same results */
        for (int s = 0; s < n_seqs; s++) {
            const inf_attn_shape *sh = &shapes[s];
            const size_t q_row = (size_t)sh->n_head * (size_t)sh->head_dim;
            const size_t kv_row = (size_t)sh->n_head_kv * (size_t)sh->head_dim;
            cpu_kv_store(self, &k_caches[s], &v_caches[s], k + s * kv_row, v + s * kv_row, 1, sh->pos0,
                         sh->n_head_kv, sh->head_dim);
            cpu_attn_decode(self, sh, q + s * q_row, &k_caches[s], &v_caches[s], out + s * q_row);
        }
        return;
    }
    run_decode_seqs(c, n_seqs, shapes, q, k, v, k_caches, v_caches, out);
}

/* Task i runs query block (n_blocks - 1 - i % n_blocks) of KV head i / n_blocks:
 * the latest (longest) blocks first, so the pool ends with short tasks. */
static void prefill_task(void *ctx, int task, int thread) {
    attn_job *j = ctx;
    const int blk = j->n_blocks - 1 - task % j->n_blocks;
    const int t0 = blk * j->block, t1 = INF_MIN(j->sh->n_tok, t0 + j->block);
    if (!j->use_ref) {
        j->c->k->attn_prefill(j->sh, j->q, j->k, j->v, j->out, task / j->n_blocks, t0, t1, j->c->tmp[thread].p);
        return;
    }
    /* the reference on tokens [t0, t1): rows are independent */
    inf_attn_shape part = *j->sh;
    part.n_tok = t1 - t0;
    part.pos0 = j->sh->pos0 + t0;
    const size_t off = (size_t)t0 * (size_t)j->sh->n_head * (size_t)j->sh->head_dim;
    j->c->ref->attn_prefill(j->c->ref, &part, j->q + off, j->k, j->v, j->out + off);
}

static void cpu_attn_prefill(const inf_ops *self, const inf_attn_shape *sh, const float *q,
                             const inf_kv_view *k, const inf_kv_view *v, float *out) {
    cpu_backend *c = cpu_of(self);
    attn_job j = {.c = c, .sh = sh, .q = q, .k = k, .v = v, .out = out};
    if (kernels_read_kv(c, k, v) && c->k->attn_prefill && ensure_tmp(c, c->k->attn_tmp_bytes(sh))) {
        j.block = c->k->attn_block;
        j.n_blocks = (sh->n_tok + j.block - 1) / j.block;
        j.tasks = j.n_blocks * sh->n_head_kv;
    } else {
        j.use_ref = true;
        j.block = 8;
        j.n_blocks = (sh->n_tok + j.block - 1) / j.block;
        j.tasks = j.n_blocks;
    }
    /* query t sees pos0 + t + 1 keys */
    const double pairs = (double)sh->n_tok * (sh->pos0 + (sh->n_tok + 1) / 2.0);
    run_tasks(c, j.tasks, prefill_task, &j, pairs * sh->n_head * sh->head_dim);
}

/* ------------------------------------------------------------------ lifetime */

inf_status inf_ops_cpu_new(inf_isa isa, int n_threads, inf_ops **out, inf_error *err) {
    *out = NULL;
    if (n_threads < 1) return inf_errorf(err, INF_ERR_INVALID, "thread count %d is below 1", n_threads);
    if (!inf_isa_supported(isa))
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "ISA %s is not supported by this CPU or build",
                          inf_isa_name(isa));
    cpu_backend *c = calloc(1, sizeof *c);
    if (!c) return inf_errorf(err, INF_ERR_NOMEM, "out of memory for the CPU backend");
    c->ref = inf_ops_ref();
    c->k = inf_isa_kernels(isa);
    c->n_threads = n_threads;
    c->pool = inf_pool_new(n_threads);
    c->tmp = calloc((size_t)n_threads, sizeof *c->tmp);
    c->slots = inf_alloc_aligned((size_t)n_threads * sizeof *c->slots);
    c->ahead = inf_alloc_aligned(2 * (size_t)n_threads * sizeof *c->ahead);
    if (c->ahead) memset(c->ahead, 0, 2 * (size_t)n_threads * sizeof *c->ahead);
    c->ahead_jobs[0] = (ahead_job){c, 0};
    c->ahead_jobs[1] = (ahead_job){c, 1};
    c->ahead_next = calloc(AHEAD_NEXT_SLOTS, sizeof *c->ahead_next);
    const bool tuned = c->k && c->k->stream_hints > 1 && c->k->stream_hint_set && c->k->stream_hint_initial;
    for (int type = 0; type < STREAM_TYPES; type++)
        stream_tuner_init(&c->tuners[type], tuned ? c->k->stream_hints : 1, tuned ? c->k->stream_hint_initial() : 0);
    if (!c->pool || !c->tmp || !c->slots || !c->ahead || !c->ahead_next) {
        inf_ops_cpu_free(&c->ops);
        return inf_errorf(err, INF_ERR_NOMEM, "out of memory for %d threads", n_threads);
    }
    c->ops = (inf_ops){
        .name = inf_isa_name(isa),
        .buffer_alloc = c->ref->buffer_alloc, /* host memory, as the reference */
        .buffer_free = c->ref->buffer_free,
        .buffer_prefault = c->ref->buffer_prefault,
        .weight_packed_bytes = c->k && c->k->pack_rows ? cpu_weight_packed_bytes : NULL,
        .weight_pack = c->k && c->k->pack_rows ? cpu_weight_pack : NULL,
        .weight_pack_made = c->k && c->k->pack_rows ? cpu_weight_pack_made : NULL,
        .quantize_q8_0 = c->k && c->k->quantize_row_q8_0 ? cpu_quantize_q8_0 : NULL,
        .matmul = cpu_matmul,
        .matmul_group = cpu_matmul_group,
        .matmul_ahead = cpu_matmul_ahead,
        .stream_report = cpu_stream_report,
        .rmsnorm = cpu_rmsnorm,
        .rope_neox = cpu_rope_neox,
        .hadamard = cpu_hadamard,
        .swiglu = cpu_swiglu,
        .add = cpu_add,
        .embed = cpu_embed,
        .kv_store = cpu_kv_store,
        .attn_decode = cpu_attn_decode,
        .attn_decode_seqs = cpu_attn_decode_seqs,
        .attn_prefill = cpu_attn_prefill,
    };
    *out = &c->ops;
    return INF_OK;
}

void inf_ops_cpu_free(inf_ops *ops) {
    if (!ops) return;
    cpu_backend *c = cpu_of(ops);
    if (c->pool) inf_pool_free(c->pool);
    if (c->tmp)
        for (int i = 0; i < c->n_threads; i++) inf_free_aligned(c->tmp[i].p);
    free(c->tmp);
    inf_free_aligned(c->slots);
    inf_free_aligned(c->ahead);
    free(c->ahead_next);
    inf_free_aligned(c->rope_cs);
    free(c->rope_pos);
    free(c);
}

/*
 * test_kernels.c — every op of the CPU backend (backend/cpu.h), on every
 * ISA path this machine can run, against the scalar reference ops of
 * ref.c, at ragged sizes; and each result bit-identical for 1, 2 and 3
 * threads.
 *
 * Error budgets (a fast path may only sum in another order and use its own
 * exp; "cond" of a dot product is Σ|w_i·x_i|, what its rounding error
 * scales with):
 *   ISA "ref"                 bit-identical to ref.c for every op
 *   matmul Q8_0               bit-identical on every ISA, matvec and gemm,
 *                             and packed at load (weight_pack) where the
 *                             ISA packs, so a row's bits do not depend on
 *                             the batch
 *   matmul Q2_K..Q6_K, IQ4_XS (every ISA)                  bit-identical
 *   matmul Q4_0..Q5_1, IQ4_NL prompt rows (every ISA: gemm) bit-identical
 *   matmul Q4_0..Q5_1, IQ4_NL decode rows (neon; packed at load,
 *     avx512)                                              bit-identical
 *     (avx512+amx: the tiles from 16 tokens for the super-block types,
 *     from 12 for Q4_1, Q5_1, from 8 for Q4_0, Q5_0, IQ4_NL; the block
 *     types' quant_amx.c tiles also called directly from 1 token)
 *   matmul otherwise          |y - ref| <= (cols/8 + 16)·2^-24·cond
 *                             (f32 lanes of partial sums instead of a double);
 *                             a decode row's bits do not depend on the batch
 *   rmsnorm                   4·2^-24 relative (the double sum of exact
 *                             squares in another order; usually identical)
 *   rope, hadamard, add, kv_store   bit-identical
 *   swiglu                    12·2^-24 relative + 1e-30 (a vector exp within
 *                             2 ulp, then 1 + e, g / that and · up each round:
 *                             up to ~4 ulp against ref's own roundings)
 *   attention                 |o - ref| <= 2e-6·max|v| (outputs are convex
 *                             combinations of V rows; exp within 2 ulp, sums
 *                             in f32 lanes and per tile)
 *   attention, avx512+amx prefill, f16 cache
 *                             |o - ref| <= 2e-5·max|v|: the bf16 tiles
 *                             (attention_amx.c) take q and the weights p to
 *                             16 bits, hi + lo, and k, v exactly, each
 *                             product as hi·hi + hi·lo + lo·hi, within 2^-15
 *                             of it, errors of random sign: the score errors
 *                             are ~2^-15 of scale·Σ|q k| (f32 sums: ~2^-20),
 *                             the weighted sums ~2^-15·max|v| at worst.
 *                             Measured worst 0.46 of it here (9e-6), at
 *                             scores of a few units; llama.cpp's CPU flash
 *                             attention rounds q to f16 (2^-11) and sums
 *                             P·V in f16.
 *   attention at scores 16x those (queries in [-64, 64])   16x the budget
 *                             (the score errors are relative to the scores)
 * Outputs carry guard elements after their end that must stay untouched.
 * Each group prints its worst error / budget ratio.
 */
#include "harness.h"

#include "backend/cpu.h"
#include "backend/kernels.h"
#include "core/dtype.h"
#include "core/quant.h"
#if defined(__x86_64__)
#include "backend/x86/x86_kernels.h"
#endif

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_THREAD_COUNTS = 3, GUARD = 16 };
static const float SENTINEL = 12345.678f;

/* ------------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x243f6a8885a308d3u;

static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static float rng_uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)((double)(rng_next() >> 11) * 0x1p-53);
}

static void fill_uniform(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = rng_uniform(lo, hi);
}

/* n floats plus GUARD sentinels after them; 64-aligned. */
static float *alloc_out(size_t n) {
    float *p = aligned_alloc(64, ((n + GUARD) * sizeof(float) + 63) & ~(size_t)63);
    for (size_t i = 0; i < n + GUARD; i++) p[i] = SENTINEL;
    return p;
}

static bool guards_intact(const float *p, size_t n) {
    for (size_t i = n; i < n + GUARD; i++)
        if (p[i] != SENTINEL) return false;
    return true;
}

static void *alloc_bytes(size_t n) { return aligned_alloc(64, (n + 63) & ~(size_t)63); }

/* The backends under test: one ISA at 1, 2 and 3 threads. */
typedef struct isa_ops {
    inf_isa isa;
    inf_ops *ops[N_THREAD_COUNTS];
} isa_ops;

static const inf_ops *REF;

/* Tracks the worst error/budget ratio of a group. */
static double worst_ratio;

static void note_ratio(double err, double budget) {
    double r = budget > 0 ? err / budget : (err > 0 ? INFINITY : 0);
    if (r > worst_ratio) worst_ratio = r;
}

static void begin(char *label, size_t cap, const isa_ops *s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void begin(char *label, size_t cap, const isa_ops *s, const char *fmt, ...) {
    int n = snprintf(label, cap, "%s ", inf_isa_name(s->isa));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    test_begin(label);
}

/* Runs fn(ops, out) for 1, 2, 3 threads: checks that the results agree
 * bit for bit and that the guards survive; leaves the 1-thread result in out. */
typedef void (*run_fn)(const inf_ops *ops, void *ctx, float *out);

static void run_all_threads(const isa_ops *s, run_fn fn, void *ctx, float *out, size_t n) {
    float *other = alloc_out(n);
    fn(s->ops[0], ctx, out);
    TEST_CHECK(guards_intact(out, n), "1 thread wrote past the end of its output");
    for (int i = 1; i < N_THREAD_COUNTS; i++) {
        for (size_t j = 0; j < n + GUARD; j++) other[j] = SENTINEL;
        fn(s->ops[i], ctx, other);
        TEST_CHECK(guards_intact(other, n), "%d threads wrote past the end of the output", i + 1);
        TEST_CHECK(memcmp(out, other, n * sizeof(float)) == 0, "%d threads differ from 1 thread", i + 1);
    }
    free(other);
}

/* ------------------------------------------------------------------ matmul */

typedef struct matmul_case {
    inf_weight w;
    const float *x;
    int n, n_decode;
    void *scratch;
} matmul_case;

static void run_matmul(const inf_ops *ops, void *ctx, float *out) {
    matmul_case *c = ctx;
    ops->matmul(ops, &c->w, c->x, c->n, c->n_decode, out, c->scratch);
}

/* A random f16 of magnitude in [lo, hi), of either sign when `signed_`. */
static inf_f16 random_f16(float lo, float hi, bool signed_) {
    const float v = rng_uniform(lo, hi);
    return inf_f32_to_f16(signed_ && rng_next() % 2 ? -v : v);
}

/* A row of random blocks of a GGUF block type: every quant and scale bit
 * random, the f16 scales (and mins) set to small finite values. */
static void random_quant_row(inf_dtype type, void *dst, int64_t cols) {
    const size_t bb = inf_dtype_block_bytes(type);
    const int64_t nb = cols / inf_dtype_block_elems(type);
    uint8_t *p = dst;
    for (size_t i = 0; i < (size_t)nb * bb; i++) p[i] = (uint8_t)rng_next();
    for (int64_t b = 0; b < nb; b++) {
        void *blk = p + (size_t)b * bb;
        switch (type) {
        case INF_DTYPE_Q4_1: ((inf_block_q4_1 *)blk)->m = random_f16(0.001f, 0.02f, true); /* fall through */
        case INF_DTYPE_Q4_0: case INF_DTYPE_IQ4_NL: ((inf_block_q4_0 *)blk)->d = random_f16(0.001f, 0.02f, true); break;
        case INF_DTYPE_Q5_1: ((inf_block_q5_1 *)blk)->m = random_f16(0.001f, 0.02f, true); /* fall through */
        case INF_DTYPE_Q5_0: ((inf_block_q5_0 *)blk)->d = random_f16(0.001f, 0.02f, true); break;
        case INF_DTYPE_Q2_K:
            ((inf_block_q2_K *)blk)->d = random_f16(0.001f, 0.02f, false);
            ((inf_block_q2_K *)blk)->dmin = random_f16(0.001f, 0.02f, false);
            break;
        case INF_DTYPE_Q3_K: ((inf_block_q3_K *)blk)->d = random_f16(0.0001f, 0.002f, true); break;
        case INF_DTYPE_Q4_K:
            ((inf_block_q4_K *)blk)->d = random_f16(0.0001f, 0.002f, false);
            ((inf_block_q4_K *)blk)->dmin = random_f16(0.0001f, 0.002f, false);
            break;
        case INF_DTYPE_Q5_K:
            ((inf_block_q5_K *)blk)->d = random_f16(0.0001f, 0.002f, false);
            ((inf_block_q5_K *)blk)->dmin = random_f16(0.0001f, 0.002f, false);
            break;
        case INF_DTYPE_Q6_K: ((inf_block_q6_K *)blk)->d = random_f16(0.00001f, 0.0002f, true); break;
        case INF_DTYPE_IQ4_XS: ((inf_block_iq4_xs *)blk)->d = random_f16(0.0001f, 0.002f, true); break;
        default: break;
        }
    }
}

/* A random weight of the type; Q8_0 quants include -128 (legal in files). */
static void *make_weight(inf_dtype type, int64_t rows, int64_t cols, size_t *row_bytes, float *deq) {
    uint64_t rb;
    inf_dtype_row_bytes(type, (uint64_t)cols, &rb);
    *row_bytes = (size_t)rb;
    char *data = alloc_bytes((size_t)rows * rb + 64);
    float *row = malloc((size_t)cols * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        void *dst = data + (size_t)r * rb;
        fill_uniform(row, (size_t)cols, -1.0f, 1.0f);
        switch (type) {
        case INF_DTYPE_F32: memcpy(dst, row, (size_t)cols * 4); break;
        case INF_DTYPE_F16:
            for (int64_t i = 0; i < cols; i++) ((inf_f16 *)dst)[i] = inf_f32_to_f16(row[i]);
            break;
        case INF_DTYPE_BF16:
            for (int64_t i = 0; i < cols; i++) ((inf_bf16 *)dst)[i] = inf_f32_to_bf16(row[i]);
            break;
        case INF_DTYPE_Q8_0: {
            inf_quantize_row_q8_0(row, dst, cols);
            inf_block_q8_0 *b = dst;
            if (rng_next() % 3 == 0) b[rng_next() % (uint64_t)(cols / 32)].q[rng_next() % 32] = -128;
            break;
        }
        default: random_quant_row(type, dst, cols); break;
        }
        inf_dequantize_row(type, dst, deq + (size_t)r * cols, cols);
    }
    free(row);
    return data;
}

/* n tokens, all prompt rows or (decode) all decode rows. */
static void test_matmul_rows(const isa_ops *s, inf_dtype type, int64_t rows, int64_t cols, int n, bool decode) {
    char label[160];
    begin(label, sizeof label, s, "matmul %s rows=%lld cols=%lld n=%d%s", inf_dtype_name(type), (long long)rows,
          (long long)cols, n, decode ? " decode" : "");
    float *deq = malloc((size_t)(rows * cols) * sizeof(float));
    matmul_case c = {.n = n, .n_decode = decode ? n : 0};
    c.w = (inf_weight){.name = "w", .type = type, .rows = rows, .cols = cols};
    c.w.data = make_weight(type, rows, cols, &c.w.row_bytes, deq);
    float *x = malloc((size_t)n * (size_t)cols * sizeof(float));
    fill_uniform(x, (size_t)n * (size_t)cols, -2.0f, 2.0f);
    c.x = x;
    c.scratch = alloc_bytes((size_t)n * (size_t)cols * sizeof(float));

    const size_t n_out = (size_t)n * (size_t)rows;
    float *want = alloc_out(n_out), *got = alloc_out(n_out);
    REF->matmul(REF, &c.w, x, n, 0, want, c.scratch);
    run_all_threads(s, run_matmul, &c, got, n_out);

    const bool x86 = s->isa == INF_ISA_AVX2 || s->isa == INF_ISA_AVX512 || s->isa == INF_ISA_AVX512_AMX;
    /* the block types: prompt rows on a gemm bit-identical to ref.c (every
     * ISA, at any count: cpu.c use_gemm), decode rows on a matvec that is
     * too, but for the x86 matvecs of the 32-block types */
    const bool quant_exact = inf_dtype_is_quant(type) && (!decode || !x86 || inf_dtype_block_elems(type) == 256);
    const bool exact = s->isa == INF_ISA_REF || type == INF_DTYPE_Q8_0 || quant_exact;
    int reported = 0;
    for (int t = 0; t < n; t++)
        for (int64_t r = 0; r < rows; r++) {
            double cond = 0;
            for (int64_t i = 0; i < cols; i++) cond += fabs((double)deq[r * cols + i] * x[(size_t)t * cols + i]);
            const double budget = exact ? 0 : ((double)cols / 8 + 16) * 0x1p-24 * cond;
            const size_t at = (size_t)t * (size_t)rows + (size_t)r;
            const double err = fabs((double)got[at] - want[at]);
            note_ratio(err, budget);
            if (err > budget && reported++ < 3)
                TEST_CHECK(false, "y[%d][%lld] = %.9g, ref %.9g (budget %.3g)", t, (long long)r, (double)got[at],
                           (double)want[at], budget);
        }
    TEST_CHECK(reported == 0, "%d outputs over budget", reported);
    /* the same weight packed at load (ops.h weight_pack; the x86 ISAs with
     * AVX-512 pack Q8_0 and every GGUF block type):
     * ref.c's bits, decode rows too */
    const inf_ops *ops0 = s->ops[0];
    const size_t packed_bytes = ops0->weight_pack ? ops0->weight_packed_bytes(ops0, &c.w) : 0;
    void *packed = packed_bytes ? alloc_bytes(packed_bytes + 1) : NULL;
    if (packed &&
        TEST_CHECK(ops0->weight_pack(ops0, &c.w, packed), "weight_pack of a %s weight", inf_dtype_name(type))) {
        float *packed_got = alloc_out(n_out);
        run_all_threads(s, run_matmul, &c, packed_got, n_out);
        TEST_CHECK(memcmp(packed_got, want, n_out * sizeof(float)) == 0, "the packed weight's rows differ from ref.c's");
        free(packed_got);
    }
    free(packed);
    free(deq);
    free((void *)c.w.data);
    free(x);
    free(c.scratch);
    free(want);
    free(got);
}

static void test_matmul_case(const isa_ops *s, inf_dtype type, int64_t rows, int64_t cols, int n) {
    test_matmul_rows(s, type, rows, cols, n, false);
}

static void test_matmul(const isa_ops *s) {
    static const inf_dtype types[] = {INF_DTYPE_F32, INF_DTYPE_F16, INF_DTYPE_BF16, INF_DTYPE_Q8_0};
    static const int64_t rows_list[] = {1, 5, 16, 17, 70, 130};
    static const int64_t q8_cols[] = {32, 96, 160};
    static const int64_t f_cols[] = {1, 3, 17, 33, 64, 100};
    static const int ns[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 17, 64, 65};
    worst_ratio = 0;
    for (size_t ti = 0; ti < 4; ti++) {
        const inf_dtype type = types[ti];
        const int64_t *cols_list = type == INF_DTYPE_Q8_0 ? q8_cols : f_cols;
        const size_t n_cols = type == INF_DTYPE_Q8_0 ? 3 : 6;
        for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
            for (size_t ci = 0; ci < n_cols; ci++)
                for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                    /* the larger token counts on a subset of shapes keep the suite quick */
                    if (ns[ni] > 9 && (ri % 2 || ci % 2)) continue;
                    test_matmul_case(s, type, rows_list[ri], cols_list[ci], ns[ni]);
                }
        test_matmul_case(s, type, 33, type == INF_DTYPE_Q8_0 ? 64 : 50, 300);
    }
    /* The shapes of the tile gemm (avx512+amx; the other ISAs run them too):
     * token counts around its 16-token tiles and two tiles of 16 (its Q8_0
     * threshold of 8 is within the 1..18 loop below),
     * ragged row counts, and widths of several tile steps with and without
     * a partial last step (BF16: 16 columns is its narrowest). */
    static const int64_t tile_rows[] = {1, 17, 130};
    static const int tile_ns[] = {31, 32, 33, 47, 100};
    static const int64_t tile_q8_cols[] = {32, 1056}, tile_bf16_cols[] = {16, 17, 1030};
    for (size_t ri = 0; ri < 3; ri++)
        for (size_t ni = 0; ni < 5; ni++) {
            for (size_t ci = 0; ci < 2; ci++) test_matmul_case(s, INF_DTYPE_Q8_0, tile_rows[ri], tile_q8_cols[ci], tile_ns[ni]);
            for (size_t ci = 0; ci < 3; ci++) test_matmul_case(s, INF_DTYPE_BF16, tile_rows[ri], tile_bf16_cols[ci], tile_ns[ni]);
        }
    /* Q8_0 bit-identical at every token count around the matvec/gemm
     * thresholds (8, and 17 for Q8_0 on AVX-512), on ragged rows and widths of 1, 2, 3 and 33 blocks. */
    static const int64_t exact_q8_cols[] = {32, 64, 96, 1056};
    for (size_t ri = 0; ri < 3; ri++)
        for (size_t ci = 0; ci < 4; ci++)
            for (int n = 1; n <= 18; n++) test_matmul_case(s, INF_DTYPE_Q8_0, tile_rows[ri], exact_q8_cols[ci], n);
    printf("%s matmul: worst error/budget %.3g\n", inf_isa_name(s->isa), worst_ratio);
}

/* The GGUF block types: ragged row counts, one and several blocks per row,
 * token counts around the matvec's passes of 4 and the gemms' tiles, as
 * prompt rows (the gemms) and as decode rows (the matvecs); and batch
 * invariance: each row of an n-token product is bit-identical to the same
 * token alone. */
static void test_matmul_quant(const isa_ops *s) {
    static const inf_dtype types[] = {INF_DTYPE_Q4_0, INF_DTYPE_Q4_1, INF_DTYPE_Q5_0, INF_DTYPE_Q5_1,
                                      INF_DTYPE_IQ4_NL, INF_DTYPE_Q2_K, INF_DTYPE_Q3_K, INF_DTYPE_Q4_K,
                                      INF_DTYPE_Q5_K, INF_DTYPE_Q6_K, INF_DTYPE_IQ4_XS};
    static const int64_t rows_list[] = {1, 17, 70};
    static const int64_t blocks_list[] = {1, 3, 8};
    static const int ns[] = {1, 2, 5, 9};
    worst_ratio = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
            for (size_t bi = 0; bi < sizeof blocks_list / sizeof *blocks_list; bi++)
                for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                    const int64_t cols = blocks_list[bi] * inf_dtype_block_elems(types[ti]);
                    if (ns[ni] > 2 && (ri + bi) % 2) continue;
                    test_matmul_case(s, types[ti], rows_list[ri], cols, ns[ni]);
                    /* as decode rows: the matvec's passes of 2, 4 and 1 tokens (ref.c has one kernel) */
                    if ((ns[ni] == 2 || ns[ni] == 5) && s->isa != INF_ISA_REF)
                        test_matmul_rows(s, types[ti], rows_list[ri], cols, ns[ni], true);
                }
    /* the gemms: several row panels, token tiles with tails */
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        test_matmul_case(s, types[ti], 130, 512, 20);
        test_matmul_case(s, types[ti], 16, 256, 67);
    }
    /* The tile gemms' shapes (avx512+amx; the others run them too): token
     * counts around the thresholds (Q4_1, Q5_1: 12; the super-block types:
     * 16; the other 32-blocks: 32) with partial last tiles, ragged row
     * groups, one and several blocks. */
    static const int tile_ns[] = {11, 12, 15, 16, 17, 33, 47};
    static const int64_t tile_rows[] = {1, 17, 70};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t ni = 0; ni < sizeof tile_ns / sizeof *tile_ns; ni++)
            for (size_t ri = 0; ri < sizeof tile_rows / sizeof *tile_rows; ri++)
                test_matmul_case(s, types[ti], tile_rows[ri], (ni + ri) % 2 ? 3 * inf_dtype_block_elems(types[ti]) :
                                 inf_dtype_block_elems(types[ti]), tile_ns[ni]);
    printf("%s matmul (block types): worst error/budget %.3g\n", inf_isa_name(s->isa), worst_ratio);

    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const inf_dtype type = types[ti];
        const int64_t rows = 37, cols = 2 * inf_dtype_block_elems(type) + (type == INF_DTYPE_Q4_0 ? 32 : 0);
        const int n = 11;
        char label[160];
        begin(label, sizeof label, s, "matmul %s batch invariance n=%d", inf_dtype_name(type), n);
        float *deq = malloc((size_t)(rows * cols) * sizeof(float));
        inf_weight w = {.name = "w", .type = type, .rows = rows, .cols = cols};
        w.data = make_weight(type, rows, cols, &w.row_bytes, deq);
        float *x = malloc((size_t)n * (size_t)cols * sizeof(float));
        fill_uniform(x, (size_t)n * (size_t)cols, -2.0f, 2.0f);
        void *scratch = alloc_bytes((size_t)n * (size_t)cols * sizeof(float));
        float *all = alloc_out((size_t)n * rows), *one = alloc_out((size_t)rows);
        const inf_ops *ops = s->ops[1];
        /* 3 decode rows, 8 prefill rows: a decode row as the token alone;
         * the prefill rows as the same 8 prefill rows without decode rows */
        float *prefill = alloc_out((size_t)(n - 3) * rows);
        ops->matmul(ops, &w, x, n, 3, all, scratch);
        for (int t = 0; t < 3; t++) {
            ops->matmul(ops, &w, x + (size_t)t * cols, 1, 1, one, scratch);
            TEST_CHECK(memcmp(one, all + (size_t)t * rows, (size_t)rows * sizeof(float)) == 0,
                       "decode token %d alone differs from the same token among %d", t, n);
        }
        ops->matmul(ops, &w, x + 3 * (size_t)cols, n - 3, 0, prefill, scratch);
        TEST_CHECK(memcmp(prefill, all + 3 * (size_t)rows, (size_t)(n - 3) * rows * sizeof(float)) == 0,
                   "prefill rows differ with and without decode rows beside them");
        /* where one kernel serves both kinds (the super-block types; the
         * 32-block types on neon): every row as the token alone */
        const bool one_kernel = inf_dtype_block_elems(type) == 256 || s->isa == INF_ISA_NEON;
        for (int t = 3; t < n && one_kernel; t++) {
            ops->matmul(ops, &w, x + (size_t)t * cols, 1, 1, one, scratch);
            TEST_CHECK(memcmp(one, all + (size_t)t * rows, (size_t)rows * sizeof(float)) == 0,
                       "token %d alone differs from the same token among %d", t, n);
        }
        free(deq), free((void *)w.data), free(x), free(scratch), free(all), free(one), free(prefill);
    }
}

/* Batch invariance of matmul (ops.h): a prompt row's floats depend on
 * neither how many prompt rows share the call nor where it falls among
 * them (tiles of 8 or 16 tokens and their remainders, the AMX thresholds),
 * and a decode row's on neither the decode rows nor the prompt rows beside
 * it. All 70 rows as prompt rows once; then slices of every size around
 * the thresholds at ragged offsets, alone and behind d decode rows, must
 * give the same rows bit for bit; the decode rows likewise against all 70
 * as decode rows. matmul_group too, for its shared-activation path. */
static void test_matmul_rows_kind(const isa_ops *s) {
    static const inf_dtype types[] = {INF_DTYPE_F32, INF_DTYPE_F16, INF_DTYPE_BF16, INF_DTYPE_Q8_0,
                                      INF_DTYPE_Q4_0, INF_DTYPE_Q4_1, INF_DTYPE_Q4_K, INF_DTYPE_Q6_K};
    static const int sizes[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47};
    static const int decodes[] = {0, 1, 3, 16};
    enum { N = 70, ROWS = 37 };
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const inf_dtype type = types[ti];
        const int64_t cols = inf_dtype_block_elems(type) == 256 ? 256 : type == INF_DTYPE_F32 || type == INF_DTYPE_F16 ||
                             type == INF_DTYPE_BF16 ? 50 : 96;
        char label[160];
        begin(label, sizeof label, s, "matmul rows keep their kind's floats %s", inf_dtype_name(type));
        float *deq = malloc((size_t)(ROWS * cols) * sizeof(float));
        inf_weight w = {.name = "w", .type = type, .rows = ROWS, .cols = cols};
        w.data = make_weight(type, ROWS, cols, &w.row_bytes, deq);
        const inf_weight *ws[2] = {&w, &w};
        float *x = malloc((size_t)N * (size_t)cols * sizeof(float));
        fill_uniform(x, (size_t)N * (size_t)cols, -2.0f, 2.0f);
        void *scratch = alloc_bytes((size_t)N * (size_t)cols * sizeof(float));
        float *as_prompt = alloc_out((size_t)N * ROWS), *as_decode = alloc_out((size_t)N * ROWS);
        float *got = alloc_out((size_t)N * ROWS), *got2 = alloc_out((size_t)N * ROWS);
        const inf_ops *ops = s->ops[1];
        ops->matmul(ops, &w, x, N, 0, as_prompt, scratch);
        ops->matmul(ops, &w, x, N, N, as_decode, scratch);
        int bad = 0;
        for (size_t di = 0; di < sizeof decodes / sizeof *decodes; di++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                const int d = decodes[di], np = sizes[si];
                const int t0 = (int)(si * 7 % (size_t)(N - np - d + 1)); /* ragged offsets */
                /* rows t0 .. t0 + d - 1 as decode rows, then np prompt rows */
                float *y[2] = {got, got2};
                for (int way = 0; way < 2; way++) {
                    if (way == 0) ops->matmul(ops, &w, x + (size_t)t0 * (size_t)cols, d + np, d, got, scratch);
                    else ops->matmul_group(ops, ws, 2, x + (size_t)t0 * (size_t)cols, d + np, d, y, scratch);
                    for (int t = 0; t < d + np; t++) {
                        const float *want = (t < d ? as_decode : as_prompt) + (size_t)(t0 + t) * ROWS;
                        for (int i = 0; i < 1 + way; i++)
                            if (memcmp(y[i] + (size_t)t * ROWS, want, ROWS * sizeof(float)) != 0 && bad++ < 3)
                                TEST_CHECK(false, "%s: %d decode + %d prompt rows from %d: row %d (%s) differs",
                                           way ? "matmul_group" : "matmul", d, np, t0, t, t < d ? "decode" : "prompt");
                    }
                }
            }
        TEST_CHECK(bad == 0, "%d rows changed with their company", bad);
        free(deq), free((void *)w.data), free(x), free(scratch);
        free(as_prompt), free(as_decode), free(got), free(got2);
    }
}

/* The ISA's matvec kernel called directly, for token counts the op sends
 * to the gemm today (cpu.c may pass the matvec up to ~16 decode rows) and
 * for row ranges cut anywhere (matmul_group cuts at weight boundaries):
 * Q8_0 bit-identical to ref.c; F32/F16/BF16 each token's row the same
 * bits as that token alone. */
static void test_matvec_kernel(const isa_ops *s) {
    const inf_kernels *k = inf_isa_kernels(s->isa);
    if (!k || !k->matvec) return;
    static const inf_dtype types[] = {INF_DTYPE_F32, INF_DTYPE_F16, INF_DTYPE_BF16, INF_DTYPE_Q8_0};
    static const int64_t rows_list[] = {1, 17, 130};
    static const int64_t q8_cols[] = {32, 64, 96, 1056}, f_cols[] = {1, 33, 100};
    enum { MAX_N = 20 };
    for (size_t ti = 0; ti < 4; ti++) {
        const inf_dtype type = types[ti];
        const bool q8 = type == INF_DTYPE_Q8_0;
        for (size_t ri = 0; ri < 3; ri++)
            for (size_t ci = 0; ci < (q8 ? 4u : 3u); ci++) {
                const int64_t rows = rows_list[ri], cols = q8 ? q8_cols[ci] : f_cols[ci];
                char label[160];
                begin(label, sizeof label, s, "matvec kernel %s rows=%lld cols=%lld n=1..%d", inf_dtype_name(type),
                      (long long)rows, (long long)cols, MAX_N);
                float *deq = malloc((size_t)(rows * cols) * sizeof(float));
                inf_weight w = {.name = "w", .type = type, .rows = rows, .cols = cols};
                w.data = make_weight(type, rows, cols, &w.row_bytes, deq);
                float *x = malloc((size_t)MAX_N * (size_t)cols * sizeof(float));
                fill_uniform(x, (size_t)MAX_N * (size_t)cols, -2.0f, 2.0f);
                const size_t stride = k->act_row_bytes(type, cols);
                char *act_rows = alloc_bytes((size_t)MAX_N * stride);
                for (int t = 0; t < MAX_N; t++)
                    k->act_prepare(type, x + (size_t)t * (size_t)cols, cols, act_rows + (size_t)t * stride);
                const size_t n_out = (size_t)MAX_N * (size_t)rows;
                float *want = alloc_out(n_out), *got = alloc_out(n_out);
                void *scratch = alloc_bytes((size_t)MAX_N * (size_t)cols * sizeof(float));
                if (q8) REF->matmul(REF, &w, x, MAX_N, MAX_N, want, scratch);
                else
                    for (int t = 0; t < MAX_N; t++) {
                        const inf_act one = {.data = act_rows + (size_t)t * stride, .stride = stride, .n = 1};
                        k->matvec(&w, &one, 0, rows, want + (size_t)t * (size_t)rows, (size_t)rows);
                    }
                bool ok = true;
                for (int n = 1; n <= MAX_N && ok; n++) {
                    const inf_act a = {.data = act_rows, .stride = stride, .n = n};
                    /* the whole range, then three ranges cut at rows 5 and 21 */
                    for (int split = 0; split < 2 && ok; split++) {
                        for (size_t i = 0; i < n_out + GUARD; i++) got[i] = SENTINEL;
                        int64_t cuts[4] = {0, 0, 0, rows};
                        if (split) cuts[1] = rows < 5 ? rows : 5, cuts[2] = rows < 21 ? rows : 21;
                        for (int i = 0; i < 3; i++)
                            if (cuts[i] < cuts[i + 1]) k->matvec(&w, &a, cuts[i], cuts[i + 1], got, (size_t)rows);
                        const size_t n_got = (size_t)n * (size_t)rows;
                        ok = TEST_CHECK(got[n_got] == SENTINEL, "n=%d: wrote past its tokens' outputs", n) &&
                             TEST_CHECK(memcmp(got, want, n_got * sizeof(float)) == 0, "n=%d%s: rows differ from %s", n,
                                        split ? " (split)" : "", q8 ? "ref" : "each token alone");
                    }
                }
                free(deq), free((void *)w.data), free(x), free(act_rows), free(want), free(got), free(scratch);
            }
    }
}

/* The F32/F16/BF16 matvec on weights at any address (a safetensors
 * file's tensors are aligned to 8 bytes only, and mapped as they are):
 * a row's floats must not depend on it. The weight is copied to every
 * element offset from a 64-byte boundary, with row widths that also
 * leave consecutive rows at different offsets. */
static void test_matvec_any_address(const isa_ops *s) {
    const inf_kernels *k = inf_isa_kernels(s->isa);
    if (!k || !k->matvec) return;
    static const inf_dtype types[] = {INF_DTYPE_F32, INF_DTYPE_F16, INF_DTYPE_BF16};
    static const int64_t cols_list[] = {1, 2, 31, 32, 33, 63, 64, 65, 96, 130, 1000};
    enum { ROWS = 3, N = 4 };
    for (size_t ti = 0; ti < 3; ti++) {
        const inf_dtype type = types[ti];
        char label[160];
        begin(label, sizeof label, s, "matvec kernel %s at every address", inf_dtype_name(type));
        for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++) {
            const int64_t cols = cols_list[ci];
            inf_weight w = {.name = "w", .type = type, .rows = ROWS, .cols = cols};
            float *deq = malloc((size_t)(ROWS * cols) * sizeof(float));
            char *data = make_weight(type, ROWS, cols, &w.row_bytes, deq);
            const size_t bytes = (size_t)ROWS * w.row_bytes, elem = type == INF_DTYPE_F32 ? 4 : 2;
            char *moved = alloc_bytes(bytes + 64);
            float *x = malloc((size_t)N * (size_t)cols * sizeof(float));
            fill_uniform(x, (size_t)N * (size_t)cols, -2.0f, 2.0f);
            const size_t stride = k->act_row_bytes(type, cols);
            char *act_rows = alloc_bytes((size_t)N * stride);
            for (int t = 0; t < N; t++) k->act_prepare(type, x + (size_t)t * (size_t)cols, cols, act_rows + (size_t)t * stride);
            /* offset 0 (64-byte aligned), all N tokens; then every other
             * offset and token count (a token's row never depends on the count) */
            float want[N * ROWS], got[N * ROWS];
            memcpy(moved, data, bytes);
            w.data = moved;
            k->matvec(&w, &(inf_act){.data = act_rows, .stride = stride, .n = N}, 0, ROWS, want, ROWS);
            bool ok = true;
            for (size_t off = elem; off < 64 && ok; off += elem) {
                memcpy(moved + off, data, bytes);
                w.data = moved + off;
                for (int n = 1; n <= N && ok; n++) {
                    k->matvec(&w, &(inf_act){.data = act_rows, .stride = stride, .n = n}, 0, ROWS, got, ROWS);
                    ok = TEST_CHECK(memcmp(got, want, (size_t)n * ROWS * sizeof(float)) == 0,
                                    "cols=%lld n=%d: rows at 64-byte offset %zu differ from offset 0", (long long)cols,
                                    n, off);
                }
            }
            free(deq), free(data), free(moved), free(x), free(act_rows);
        }
    }
}

#if defined(__x86_64__)
/* The x86 activation quantizers (avx512's Q8_K: the super-block types';
 * Q8_0, and avx512's Q8_1: the 32-block types') against core's byte for
 * byte, on blocks that probe each rule: the first of two equal magnitudes
 * sets the sign, halves round to even, an all-zero block, NaN ignored, an
 * infinite input, subnormals (127 / amax overflowing), huge values. */
static void test_quantize_q8(const isa_ops *s) {
    const bool avx512 = s->isa == INF_ISA_AVX512 || s->isa == INF_ISA_AVX512_AMX;
    if (!avx512 && s->isa != INF_ISA_AVX2) return;
    char label[160];
    begin(label, sizeof label, s, "quantize_row q8_K, q8_0, q8_1 edge values");
    enum { BLOCKS = 10, N = BLOCKS * INF_QK_K, BLOCKS32 = N / INF_QK };
    float *x = malloc(N * sizeof(float));
    fill_uniform(x, N, -1.0f, 1.0f);
    float *b1 = x + 1 * INF_QK_K, *b2 = x + 2 * INF_QK_K, *b3 = x + 3 * INF_QK_K, *b4 = x + 4 * INF_QK_K;
    float *b5 = x + 5 * INF_QK_K, *b6 = x + 6 * INF_QK_K, *b7 = x + 7 * INF_QK_K, *b8 = x + 8 * INF_QK_K;
    b1[5] = -3.0f, b1[200] = 3.0f; /* the negative one first: iscale > 0 */
    b2[7] = 3.0f, b2[9] = -3.0f;
    for (int i = 0; i < INF_QK_K; i++) b3[i] = 0.0f;
    for (int i = 0; i < INF_QK_K; i++) b4[i] = (float)(i % 254 - 127) + 0.5f; /* amax 126.5 */
    b4[3] = -127.0f; /* iscale 1: every other value an exact half */
    b5[17] = NAN;
    b6[100] = INFINITY; /* iscale -0: products 0 and NaN */
    for (int i = 0; i < INF_QK_K; i++) b7[i] = i % 2 ? 1e-40f : -3e-39f;
    b7[255] = 1e-30f;
    for (int i = 0; i < INF_QK_K; i++) b8[i] *= 1e30f;
    inf_block_q8_0 *got0 = calloc(BLOCKS32, sizeof *got0), *want0 = calloc(BLOCKS32, sizeof *want0);
    (avx512 ? inf_avx512_quantize_row_q8_0 : inf_avx2_quantize_row_q8_0)(x, got0, N);
    inf_quantize_row_q8_0(x, want0, N);
    int bad = 0;
    for (int b = 0; b < BLOCKS32; b++) bad += memcmp(&got0[b], &want0[b], sizeof got0[b]) != 0;
    TEST_CHECK(bad == 0, "%d blocks differ from inf_quantize_row_q8_0", bad);
    if (avx512) {
        inf_block_q8_1 *got1 = calloc(BLOCKS32, sizeof *got1), *want1 = calloc(BLOCKS32, sizeof *want1);
        inf_avx512_quantize_row_q8_1(x, got1, N);
        inf_quantize_row_q8_1(x, want1, N);
        bad = 0;
        for (int b = 0; b < BLOCKS32; b++) bad += memcmp(&got1[b], &want1[b], sizeof got1[b]) != 0;
        TEST_CHECK(bad == 0, "%d blocks differ from inf_quantize_row_q8_1", bad);
        inf_block_q8_K *got = calloc(BLOCKS, sizeof *got), *want = calloc(BLOCKS, sizeof *want);
        inf_avx512_quantize_row_q8_K(x, got, N);
        inf_quantize_row_q8_K(x, want, N);
        for (int b = 0; b < BLOCKS; b++)
            TEST_CHECK(memcmp(&got[b], &want[b], sizeof got[b]) == 0, "block %d differs from inf_quantize_row_q8_K", b);
        free(got1), free(want1), free(got), free(want);
    }
    free(x), free(got0), free(want0);
}

/* A Q4_0, Q5_0 or IQ4_NL weight of 17 rows packed at load, unpacked by
 * inf_avx512_unpack_q32_group (the AMX gemm's int8 tiles), against the
 * file's blocks: every value (q - 8, q - 16, the IQ4_NL table's) at its
 * place in the Q8_0 layout (x86_kernels.h), every scale as in the file,
 * scale 0 past the rows (their values are any). Returns the mismatches. */
static int unpacked_q32_mismatches(const inf_weight *w, const char *packed) {
    const inf_dtype type = w->type;
    const int64_t nb = w->cols / INF_QK;
    const size_t pbytes = inf_x86_packed_group_bytes(type, w->cols);
    char *unpacked = alloc_bytes(inf_x86_packed_group_bytes(INF_DTYPE_Q8_0, w->cols));
    int bad = 0;
    for (int g = 0; g < 2; g++) {
        inf_avx512_unpack_q32_group(type, packed + g * pbytes, nb, unpacked);
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < 16; r++) {
                const int row = 16 * g + r;
                const char *blk = row < w->rows ? (const char *)w->data + (size_t)row * w->row_bytes +
                                                      (size_t)b * inf_dtype_block_bytes(type)
                                                : NULL;
                uint16_t d_want = 0, d_got;
                if (blk) memcpy(&d_want, blk, 2);
                memcpy(&d_got, unpacked + inf_x86_q32_scales_at(INF_DTYPE_Q8_0, b) + 2 * r, 2);
                bad += d_got != d_want;
                for (int i = 0; i < INF_QK && blk; i++) {
                    int want;
                    if (type == INF_DTYPE_Q4_0) {
                        const inf_block_q4_0 *q = (const inf_block_q4_0 *)blk;
                        want = (i < 16 ? q->qs[i] & 15 : q->qs[i - 16] >> 4) - 8;
                    } else if (type == INF_DTYPE_IQ4_NL) {
                        const inf_block_iq4_nl *q = (const inf_block_iq4_nl *)blk;
                        want = inf_iq4nl_values[i < 16 ? q->qs[i] & 15 : q->qs[i - 16] >> 4];
                    } else {
                        const inf_block_q5_0 *q = (const inf_block_q5_0 *)blk;
                        uint32_t qh;
                        memcpy(&qh, q->qh, 4);
                        want = ((i < 16 ? q->qs[i] & 15 : q->qs[i - 16] >> 4) | (int)((qh >> i) & 1) << 4) - 16;
                    }
                    const int8_t got = (int8_t)unpacked[inf_x86_q32_quants_at(INF_DTYPE_Q8_0, b) +
                                                        (size_t)(i / 4) * 64 + (size_t)r * 4 + (size_t)(i % 4)];
                    if (got != want && bad++ < 3)
                        TEST_CHECK(false, "row %d block %lld value %d: %d, want %d", row, (long long)b, i, got, want);
                }
            }
    }
    free(unpacked);
    return bad;
}

/* A Q4_1 or Q5_1 weight packed at load, unpacked into the 32-block gemm's
 * pack (inf_avx512_qgemm32_pack, through inf_avx512_unpack_q81_group: the
 * AMX Q4_1/Q5_1 tiles' pack), against the same pack of the file's rows:
 * the same bytes. Returns 1 if they differ. */
static int unpacked_q81_mismatches(const inf_weight *w, const char *packed) {
    const size_t bytes = inf_avx512_qgemm32_pack_bytes(w->cols);
    char *want = alloc_bytes(bytes), *got = alloc_bytes(bytes);
    memset(want, 0x55, bytes), memset(got, 0x55, bytes);
    inf_avx512_qgemm32_pack(w, 0, w->rows, want);
    inf_weight wp = *w;
    wp.packed = packed;
    wp.packed_format = INF_X86_PACKED_GROUPS;
    inf_avx512_qgemm32_pack(&wp, 0, w->rows, got);
    const int bad = memcmp(got, want, bytes) != 0;
    TEST_CHECK(!bad, "the pack differs from the file rows' pack");
    free(want), free(got);
    return bad;
}

/* The AMX gemm's unpackers of the 32-block types packed at load, on 17
 * rows (a full group and one row) of 1, 3 and 4 blocks. */
static void test_unpack_q32_group(const isa_ops *s) {
    if (s->isa != INF_ISA_AVX512) return;
    static const inf_dtype types[] = {INF_DTYPE_Q4_0, INF_DTYPE_Q5_0, INF_DTYPE_IQ4_NL, INF_DTYPE_Q4_1, INF_DTYPE_Q5_1};
    static const int64_t blocks_list[] = {1, 3, 4};
    enum { ROWS = 17 };
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t bi = 0; bi < 3; bi++) {
            const inf_dtype type = types[ti];
            const int64_t nb = blocks_list[bi], cols = nb * INF_QK;
            char label[160];
            begin(label, sizeof label, s, "unpack_q32_group %s blocks=%lld", inf_dtype_name(type), (long long)nb);
            float *deq = malloc((size_t)(ROWS * cols) * sizeof(float));
            inf_weight w = {.name = "w", .type = type, .rows = ROWS, .cols = cols};
            w.data = make_weight(type, ROWS, cols, &w.row_bytes, deq);
            char *packed = alloc_bytes(inf_avx512_packed_bytes(&w));
            inf_avx512_pack_rows(&w, 0, ROWS, packed);
            const bool q81 = inf_quant_act_type(type) == INF_ACT_Q8_1;
            const int bad = q81 ? unpacked_q81_mismatches(&w, packed) : unpacked_q32_mismatches(&w, packed);
            TEST_CHECK(bad == 0, "%d values or scales differ", bad);
            free(deq), free((void *)w.data), free(packed);
        }
}

/* inf_avx512_unpack_packed_kquant (the AMX tiles' unpacker of the
 * super-block types packed at load) against inf_avx512_unpack_kquant of
 * the file's rows: the same codes, scales, coefficients, d and dmin for
 * every row, 17 rows (a full group and one row) of 1 and 3 super-blocks. */
static void test_unpack_packed_kquant(const isa_ops *s) {
    if (s->isa != INF_ISA_AVX512) return;
    static const inf_dtype types[] = {INF_DTYPE_Q2_K, INF_DTYPE_Q3_K, INF_DTYPE_Q4_K,
                                      INF_DTYPE_Q5_K, INF_DTYPE_Q6_K, INF_DTYPE_IQ4_XS};
    enum { ROWS = 17 };
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (int64_t nb = 1; nb <= 3; nb += 2) {
            const inf_dtype type = types[ti];
            const int64_t cols = nb * INF_QK_K;
            char label[160];
            begin(label, sizeof label, s, "unpack_packed_kquant %s blocks=%lld", inf_dtype_name(type), (long long)nb);
            float *deq = malloc((size_t)(ROWS * cols) * sizeof(float));
            inf_weight w = {.name = "w", .type = type, .rows = ROWS, .cols = cols};
            w.data = make_weight(type, ROWS, cols, &w.row_bytes, deq);
            const size_t gbytes = inf_x86_packed_group_bytes(type, cols);
            char *packed = alloc_bytes(2 * gbytes);
            inf_avx512_pack_rows(&w, 0, ROWS, packed);
            uint8_t *quads = alloc_bytes(64 * 64), codes[256];
            int32_t *scale = alloc_bytes(16 * 16 * 4), *coef = alloc_bytes(16 * 16 * 4), sc[16], cf[16];
            float d[16], dmin[16], d1, dmin1;
            int bad = 0;
            for (int g = 0; g < 2; g++)
                for (int64_t b = 0; b < nb; b++) {
                    inf_avx512_unpack_packed_kquant(type, packed + g * gbytes, nb, b, quads, scale, coef, d, dmin);
                    for (int r = 0; r < 16 && 16 * g + r < ROWS; r++) {
                        const char *blk = (const char *)w.data + (size_t)(16 * g + r) * w.row_bytes +
                                          (size_t)b * inf_dtype_block_bytes(type);
                        inf_avx512_unpack_kquant(type, blk, codes, sc, cf, &d1, &dmin1);
                        bad += d[r] != d1 || dmin[r] != dmin1;
                        for (int e = 0; e < 256; e++) bad += quads[(e / 4) * 64 + r * 4 + e % 4] != codes[e];
                        for (int k = 0; k < 16; k++) bad += scale[16 * k + r] != sc[k] || coef[16 * k + r] != cf[k];
                    }
                }
            TEST_CHECK(bad == 0, "%d codes, scales, coefficients or d differ from the file's rows", bad);
            free(deq), free((void *)w.data), free(packed), free(quads), free(scale), free(coef);
        }
}

/* The block types' AMX tiles (quant_amx.c: Q4_1, Q5_1 and the super-block
 * types) called directly, also at the token counts the op gives the avx512
 * gemm (under the tiles' thresholds, down to 1), on ragged row ranges of
 * one task (1 row, 17, a whole 64-row task off a group boundary) and
 * widths of 1, 3 and 33 blocks: ref.c's bits, and no output written
 * outside the task's rows. */
static void test_amx_quant_tiles(const isa_ops *s) {
    if (s->isa != INF_ISA_AVX512_AMX) return;
    const inf_kernels *k = inf_isa_kernels(s->isa);
    static const inf_dtype types[] = {INF_DTYPE_Q4_1, INF_DTYPE_Q5_1, INF_DTYPE_Q2_K, INF_DTYPE_Q3_K,
                                      INF_DTYPE_Q4_K, INF_DTYPE_Q5_K, INF_DTYPE_Q6_K, INF_DTYPE_IQ4_XS};
    static const int64_t blocks_list[] = {1, 3, 33};
    static const int ns[] = {1, 2, 15, 16, 17, 33};
    static const int64_t ranges[][2] = {{0, 1}, {16, 33}, {3, 67}};
    enum { ROWS = 70 };
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t bi = 0; bi < 3; bi++) {
            const inf_dtype type = types[ti];
            if (bi == 2 && inf_dtype_block_elems(type) == INF_QK_K) continue; /* 1 and 3 super-blocks suffice */
            const int64_t cols = blocks_list[bi] * inf_dtype_block_elems(type);
            char label[160];
            begin(label, sizeof label, s, "amx tiles %s cols=%lld", inf_dtype_name(type), (long long)cols);
            float *deq = malloc((size_t)(ROWS * cols) * sizeof(float));
            inf_weight w = {.name = "w", .type = type, .rows = ROWS, .cols = cols};
            w.data = make_weight(type, ROWS, cols, &w.row_bytes, deq);
            const int max_n = ns[sizeof ns / sizeof *ns - 1];
            float *x = malloc((size_t)max_n * (size_t)cols * sizeof(float));
            fill_uniform(x, (size_t)max_n * (size_t)cols, -2.0f, 2.0f);
            void *buf = alloc_bytes((size_t)max_n * (size_t)cols * sizeof(float));
            void *pack = alloc_bytes(k->gemm_pack_bytes(type, cols));
            float *want = alloc_out((size_t)max_n * ROWS), *got = alloc_out((size_t)max_n * ROWS);
            int bad = 0;
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                const int n = ns[ni];
                REF->matmul(REF, &w, x, n, 0, want, buf);
                k->gemm_prepare(type, x, cols, n, 0, n, buf);
                const inf_act a = {.data = buf, .n = n};
                for (size_t gi = 0; gi < sizeof ranges / sizeof *ranges; gi++) {
                    const int64_t r0 = ranges[gi][0], r1 = ranges[gi][1];
                    for (size_t i = 0; i < (size_t)n * ROWS + GUARD; i++) got[i] = SENTINEL;
                    inf_amx_kquant_gemm(&w, &a, r0, r1, got, ROWS, pack);
                    for (int t = 0; t < n; t++)
                        for (int64_t r = 0; r < ROWS; r++) {
                            const float g = got[(size_t)t * ROWS + (size_t)r], e = want[(size_t)t * ROWS + (size_t)r];
                            const bool inside = r >= r0 && r < r1;
                            if ((inside ? memcmp(&g, &e, sizeof g) != 0 : g != SENTINEL) && bad++ < 3)
                                TEST_CHECK(false, "n=%d rows [%lld, %lld): y[%d][%lld] = %.9g, %s %.9g", n, (long long)r0,
                                           (long long)r1, t, (long long)r, (double)g, inside ? "ref" : "untouched",
                                           (double)(inside ? e : SENTINEL));
                        }
                    TEST_CHECK(guards_intact(got, (size_t)n * ROWS), "n=%d: wrote past the outputs", n);
                }
            }
            TEST_CHECK(bad == 0, "%d outputs differ", bad);
            free(deq), free((void *)w.data), free(x), free(buf), free(pack), free(want), free(got);
        }
}
#endif

/* matmul_group: three weights of one type and width (rows not multiples
 * of 16, as the concatenated split must cut inside a weight) give exactly
 * what matmul gives for each, on every thread count. */
typedef struct group_case {
    inf_weight w[3];
    const float *x;
    int n;
    void *scratch;
} group_case;

static void run_matmul_group(const inf_ops *ops, void *ctx, float *out) {
    group_case *c = ctx;
    const inf_weight *w[3] = {&c->w[0], &c->w[1], &c->w[2]};
    float *y[3] = {out, out + (size_t)c->n * c->w[0].rows, out + (size_t)c->n * (c->w[0].rows + c->w[1].rows)};
    ops->matmul_group(ops, w, 3, c->x, c->n, 0, y, c->scratch);
}

/* Groups of three weights: one type each (the last three: types that
 * share their activations, as a Q4_K_M file's q, k and v do), against
 * three matmuls; then packed at load, where the ISA packs them all. */
/* Three weights of the types in sets[si] and of rows[] rows, cols wide (0:
 * a small width for the types), multiplied as one group with each count in
 * ns: the same as three matmuls, at every thread count. */
static void test_matmul_group_of(const isa_ops *s, const inf_dtype (*sets)[3], size_t n_sets, const int64_t rows[3],
                                 int64_t wide, const int *ns, size_t n_ns) {
    for (size_t si = 0; si < n_sets; si++)
        for (size_t ni = 0; ni < n_ns; ni++) {
            const inf_dtype *types = sets[si];
            const int64_t block = inf_dtype_block_elems(types[0]);
            const int64_t cols = wide ? wide : block == 256 ? 512 : block == 32 ? 96 : 33;
            const int n = ns[ni];
            char label[160];
            begin(label, sizeof label, s, "matmul_group %s %s %s cols=%lld n=%d", inf_dtype_name(types[0]),
                  inf_dtype_name(types[1]), inf_dtype_name(types[2]), (long long)cols, n);
            group_case c = {.n = n};
            size_t n_out = 0;
            for (int i = 0; i < 3; i++) {
                float *deq = malloc((size_t)(rows[i] * cols) * sizeof(float));
                c.w[i] = (inf_weight){.name = "w", .type = types[i], .rows = rows[i], .cols = cols};
                c.w[i].data = make_weight(types[i], rows[i], cols, &c.w[i].row_bytes, deq);
                free(deq);
                n_out += (size_t)n * (size_t)rows[i];
            }
            float *x = malloc((size_t)n * (size_t)cols * sizeof(float));
            fill_uniform(x, (size_t)n * (size_t)cols, -2.0f, 2.0f);
            c.x = x;
            c.scratch = alloc_bytes((size_t)n * (size_t)cols * sizeof(float));
            float *want = alloc_out(n_out), *got = alloc_out(n_out);
            for (int i = 0, at = 0; i < 3; at += n * (int)rows[i], i++)
                s->ops[0]->matmul(s->ops[0], &c.w[i], x, n, 0, want + at, c.scratch);
            run_all_threads(s, run_matmul_group, &c, got, n_out);
            TEST_CHECK(memcmp(got, want, n_out * sizeof(float)) == 0, "matmul_group differs from matmul");
            /* packed at load, the group runs on the gemm in one dispatch */
            const inf_ops *ops0 = s->ops[0];
            bool packable = ops0->weight_pack != NULL;
            for (int i = 0; i < 3 && packable; i++) packable = ops0->weight_packed_bytes(ops0, &c.w[i]) > 0;
            if (packable) {
                bool packed = true;
                void *mem[3];
                for (int i = 0; i < 3; i++) {
                    mem[i] = alloc_bytes(ops0->weight_packed_bytes(ops0, &c.w[i]));
                    packed &= ops0->weight_pack(ops0, &c.w[i], mem[i]);
                }
                if (TEST_CHECK(packed, "weight_pack of the group")) {
                    for (int i = 0, at = 0; i < 3; at += n * (int)rows[i], i++)
                        ops0->matmul(ops0, &c.w[i], x, n, 0, want + at, c.scratch);
                    run_all_threads(s, run_matmul_group, &c, got, n_out);
                    TEST_CHECK(memcmp(got, want, n_out * sizeof(float)) == 0, "packed matmul_group differs from matmul");
                }
                for (int i = 0; i < 3; i++) free(mem[i]);
            }
            for (int i = 0; i < 3; i++) free((void *)c.w[i].data);
            free(x), free(c.scratch), free(want), free(got);
        }
}

static void test_matmul_group(const isa_ops *s) {
    static const inf_dtype sets[][3] = {
        {INF_DTYPE_F32, INF_DTYPE_F32, INF_DTYPE_F32},       {INF_DTYPE_F16, INF_DTYPE_F16, INF_DTYPE_F16},
        {INF_DTYPE_BF16, INF_DTYPE_BF16, INF_DTYPE_BF16},    {INF_DTYPE_Q8_0, INF_DTYPE_Q8_0, INF_DTYPE_Q8_0},
        {INF_DTYPE_Q4_K, INF_DTYPE_Q4_K, INF_DTYPE_Q6_K},    {INF_DTYPE_Q6_K, INF_DTYPE_IQ4_XS, INF_DTYPE_Q5_K},
        {INF_DTYPE_Q4_0, INF_DTYPE_Q8_0, INF_DTYPE_Q4_0},
    };
    static const int64_t rows[3] = {37, 5, 150};
    static const int ns[] = {1, 2, 9, 70};
    test_matmul_group_of(s, sets, sizeof sets / sizeof *sets, rows, 0, ns, sizeof ns / sizeof *ns);
}

/* Products large enough that every thread gets a share of the rows (cpu.c
 * run_ranges: at least 128 KiB of weights each) and the threads steal
 * from each other's: the same bits at 1, 2 and 3 threads, and ref.c's
 * where the kernels are exact. Row counts off the 16-row groups. */
static void test_matmul_shared_ranges(const isa_ops *s) {
    static const inf_dtype types[] = {INF_DTYPE_F32, INF_DTYPE_Q8_0, INF_DTYPE_Q4_0, INF_DTYPE_Q4_1,
                                      INF_DTYPE_Q4_K, INF_DTYPE_Q6_K, INF_DTYPE_IQ4_XS};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const int64_t rows = types[ti] == INF_DTYPE_F32 ? 247 : 1007;
        test_matmul_rows(s, types[ti], rows, 1024, 1, true);
        test_matmul_rows(s, types[ti], rows, 1024, 3, true);
    }
    test_matmul_rows(s, INF_DTYPE_Q4_K, 1007, 1024, 70, false); /* a prompt: whole gemm panels */
    static const inf_dtype sets[][3] = {
        {INF_DTYPE_Q4_K, INF_DTYPE_Q4_K, INF_DTYPE_Q6_K},
        {INF_DTYPE_Q8_0, INF_DTYPE_Q8_0, INF_DTYPE_Q8_0},
    };
    static const int64_t rows[3] = {1003, 170, 517};
    static const int ns[] = {1, 70};
    test_matmul_group_of(s, sets, sizeof sets / sizeof *sets, rows, 1024, ns, sizeof ns / sizeof *ns);
}

/* ------------------------------------------------------------------ row and element ops */

typedef struct elem_case {
    const float *x, *w, *b;
    int n_rows, dim;
    int n_tok, n_heads, head_dim, pos0;
    const int32_t *pos; /* rope: the tokens' positions; NULL: pos0, pos0 + 1, ... */
    const inf_rope *rope; /* rope: the frequencies; NULL: unscaled, base 1e6 */
    size_t n;
} elem_case;

static void run_rmsnorm(const inf_ops *ops, void *ctx, float *out) {
    elem_case *c = ctx;
    ops->rmsnorm(ops, out, c->x, c->w, c->n_rows, c->dim, 1e-6f);
}

static void run_rope(const inf_ops *ops, void *ctx, float *out) {
    elem_case *c = ctx;
    inf_rope plain;
    inf_rope_init(&plain, c->head_dim, 1e6f, INF_ROPE_SCALING_NONE, 0, 0, 1.0f);
    const inf_rope *rope = c->rope ? c->rope : &plain;
    memcpy(out, c->x, c->n * sizeof(float));
    if (c->pos) {
        ops->rope_neox(ops, out, c->n_tok, c->n_heads, c->head_dim, c->pos, rope);
        return;
    }
    int32_t *pos = malloc((size_t)c->n_tok * sizeof *pos);
    if (!pos) abort();
    for (int t = 0; t < c->n_tok; t++) pos[t] = c->pos0 + t;
    ops->rope_neox(ops, out, c->n_tok, c->n_heads, c->head_dim, pos, rope);
    free(pos);
}

static void run_hadamard(const inf_ops *ops, void *ctx, float *out) {
    elem_case *c = ctx;
    memcpy(out, c->x, c->n * sizeof(float));
    ops->hadamard(ops, out, c->n_rows, c->dim);
}

static void run_swiglu(const inf_ops *ops, void *ctx, float *out) {
    elem_case *c = ctx;
    ops->swiglu(ops, out, c->x, c->b, c->n);
}

static void run_add(const inf_ops *ops, void *ctx, float *out) {
    elem_case *c = ctx;
    memcpy(out, c->x, c->n * sizeof(float));
    ops->add(ops, out, c->b, c->n);
}

/* |got - want| <= rel·|want| + abs per element (0, 0: bit-identical). */
static void compare(const float *got, const float *want, size_t n, double rel, double abs_tol) {
    bool exact = rel == 0 && abs_tol == 0;
    if (exact) {
        TEST_CHECK(memcmp(got, want, n * sizeof(float)) == 0, "not bit-identical to ref");
        return;
    }
    int reported = 0;
    for (size_t i = 0; i < n; i++) {
        const double err = fabs((double)got[i] - want[i]), budget = rel * fabs((double)want[i]) + abs_tol;
        note_ratio(err, budget);
        if (err > budget && reported++ < 3)
            TEST_CHECK(false, "[%zu] %.9g vs ref %.9g (budget %.3g)", i, (double)got[i], (double)want[i], budget);
    }
    TEST_CHECK(true, "compare");
}

static void test_elementwise(const isa_ops *s) {
    const bool ref_isa = s->isa == INF_ISA_REF;
    char label[160];
    worst_ratio = 0;
    static const int dims[] = {1, 7, 16, 100, 1024};
    static const int row_counts[] = {1, 3, 40, 300};
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
        for (size_t ri = 0; ri < sizeof row_counts / sizeof *row_counts; ri++) {
            const int dim = dims[di], n_rows = row_counts[ri];
            begin(label, sizeof label, s, "rmsnorm dim=%d rows=%d", dim, n_rows);
            const size_t n = (size_t)dim * n_rows;
            float *x = malloc(n * sizeof(float)), *w = malloc((size_t)dim * sizeof(float));
            fill_uniform(x, n, -3.0f, 3.0f);
            fill_uniform(w, (size_t)dim, 0.5f, 1.5f);
            elem_case c = {.x = x, .w = w, .n_rows = n_rows, .dim = dim};
            float *want = alloc_out(n), *got = alloc_out(n);
            REF->rmsnorm(REF, want, x, w, n_rows, dim, 1e-6f);
            run_all_threads(s, run_rmsnorm, &c, got, n);
            compare(got, want, n, ref_isa ? 0 : 4 * 0x1p-24, 0);
            free(x), free(w), free(want), free(got);
        }

    static const int head_dims[] = {2, 8, 64, 128};
    static const int tok_counts[] = {1, 5, 65};
    static const int pos0s[] = {0, 7, 3000};
    for (size_t hi = 0; hi < sizeof head_dims / sizeof *head_dims; hi++)
        for (size_t ti = 0; ti < sizeof tok_counts / sizeof *tok_counts; ti++)
            for (size_t pi = 0; pi < sizeof pos0s / sizeof *pos0s; pi++) {
                const int hd = head_dims[hi], n_tok = tok_counts[ti], heads = 3;
                begin(label, sizeof label, s, "rope head_dim=%d n_tok=%d pos0=%d", hd, n_tok, pos0s[pi]);
                const size_t n = (size_t)n_tok * heads * hd;
                float *x = malloc(n * sizeof(float));
                fill_uniform(x, n, -2.0f, 2.0f);
                elem_case c = {.x = x, .n_tok = n_tok, .n_heads = heads, .head_dim = hd, .pos0 = pos0s[pi], .n = n};
                float *want = alloc_out(n), *got = alloc_out(n);
                run_rope(REF, &c, want);
                run_all_threads(s, run_rope, &c, got, n);
                compare(got, want, n, 0, 0);
                /* the same positions again: a backend may cache the angle table */
                run_rope(s->ops[0], &c, got);
                compare(got, want, n, 0, 0);
                free(x), free(want), free(got);
            }
    /* tokens of several sequences in one call: positions out of order,
     * repeated, far apart; then other positions for as many tokens (a
     * backend that caches its angle table must notice) */
    static const int32_t mixed_pos[2][8] = {{5, 0, 100, 101, 3000, 7, 7, 1}, {0, 1, 2, 3, 101, 100, 5, 4095}};
    static const int mixed_dims[] = {8, 128};
    for (size_t hi = 0; hi < sizeof mixed_dims / sizeof *mixed_dims; hi++)
        for (int pi = 0; pi < 2; pi++) {
            const int hd = mixed_dims[hi], n_tok = 8, heads = 3;
            begin(label, sizeof label, s, "rope head_dim=%d positions {%d, %d, %d, %d, ...}", hd, mixed_pos[pi][0],
                  mixed_pos[pi][1], mixed_pos[pi][2], mixed_pos[pi][3]);
            const size_t n = (size_t)n_tok * heads * hd;
            float *x = malloc(n * sizeof(float));
            fill_uniform(x, n, -2.0f, 2.0f);
            elem_case c = {.x = x, .n_tok = n_tok, .n_heads = heads, .head_dim = hd, .pos = mixed_pos[pi], .n = n};
            float *want = alloc_out(n), *got = alloc_out(n);
            run_rope(REF, &c, want);
            run_all_threads(s, run_rope, &c, got, n);
            compare(got, want, n, 0, 0);
            free(x), free(want), free(got);
        }
    /* YaRN and linear scaling (Qwen3's factor 4 over 32768, and a ragged
     * one), near 0 and past 100k; each right after an unscaled call at the
     * same positions, so a cached angle table must notice the frequencies */
    static const struct { inf_rope_scaling kind; float factor; int orig, hd, n_tok, pos0; } scaled[] = {
        {INF_ROPE_SCALING_YARN, 4.0f, 32768, 128, 5, 0},
        {INF_ROPE_SCALING_YARN, 4.0f, 32768, 128, 9, 131063},
        {INF_ROPE_SCALING_YARN, 2.5f, 100, 64, 17, 4000},
        {INF_ROPE_SCALING_LINEAR, 3.0f, 0, 8, 3, 100001},
    };
    for (size_t k = 0; k < sizeof scaled / sizeof *scaled; k++) {
        const int hd = scaled[k].hd, n_tok = scaled[k].n_tok, heads = 3;
        begin(label, sizeof label, s, "rope %s x%g head_dim=%d n_tok=%d pos0=%d",
              scaled[k].kind == INF_ROPE_SCALING_YARN ? "yarn" : "linear", scaled[k].factor, hd, n_tok,
              scaled[k].pos0);
        inf_rope rope;
        inf_rope_init(&rope, hd, 1e6f, scaled[k].kind, scaled[k].factor, scaled[k].orig, 1.0f);
        const size_t n = (size_t)n_tok * heads * hd;
        float *x = malloc(n * sizeof(float));
        fill_uniform(x, n, -2.0f, 2.0f);
        elem_case plain = {.x = x, .n_tok = n_tok, .n_heads = heads, .head_dim = hd, .pos0 = scaled[k].pos0, .n = n};
        elem_case c = plain;
        c.rope = &rope;
        float *want = alloc_out(n), *got = alloc_out(n);
        run_rope(REF, &c, want);
        run_rope(s->ops[0], &plain, got);
        run_rope(s->ops[0], &c, got);
        compare(got, want, n, 0, 0);
        run_all_threads(s, run_rope, &c, got, n);
        compare(got, want, n, 0, 0);
        free(x), free(want), free(got);
    }

    static const int hadamard_sizes[] = {1, 4, 8, 16, 64, 128};
    static const int hadamard_rows[] = {1, 7, 300, 1029};
    for (size_t si = 0; si < sizeof hadamard_sizes / sizeof *hadamard_sizes; si++)
        for (size_t ri = 0; ri < sizeof hadamard_rows / sizeof *hadamard_rows; ri++) {
            const int dim = hadamard_sizes[si], n_rows = hadamard_rows[ri];
            begin(label, sizeof label, s, "hadamard n=%d rows=%d", dim, n_rows);
            const size_t n = (size_t)dim * n_rows;
            float *x = malloc(n * sizeof(float));
            fill_uniform(x, n, -3.0f, 3.0f);
            elem_case c = {.x = x, .n_rows = n_rows, .dim = dim, .n = n};
            float *want = alloc_out(n), *got = alloc_out(n);
            run_hadamard(REF, &c, want);
            run_all_threads(s, run_hadamard, &c, got, n);
            compare(got, want, n, 0, 0);
            free(x), free(want), free(got);
        }

    static const size_t lens[] = {1, 15, 17, 1000, 40000};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        const size_t n = lens[li];
        float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
        fill_uniform(a, n, -20.0f, 20.0f);
        fill_uniform(b, n, -2.0f, 2.0f);
        if (n > 2) a[0] = -100.0f, a[1] = 100.0f; /* exp's clamps */
        elem_case c = {.x = a, .b = b, .n = n};
        float *want = alloc_out(n), *got = alloc_out(n);

        begin(label, sizeof label, s, "swiglu n=%zu", n);
        REF->swiglu(REF, want, a, b, n);
        run_all_threads(s, run_swiglu, &c, got, n);
        compare(got, want, n, ref_isa ? 0 : 12 * 0x1p-24, ref_isa ? 0 : 1e-30);

        begin(label, sizeof label, s, "add n=%zu", n);
        memcpy(want, a, n * sizeof(float));
        REF->add(REF, want, b, n);
        run_all_threads(s, run_add, &c, got, n);
        compare(got, want, n, 0, 0);

        free(a), free(b), free(want), free(got);
    }
    printf("%s element-wise: worst error/budget %.3g\n", inf_isa_name(s->isa), worst_ratio);
}

/* ------------------------------------------------------------------ KV store and attention */

typedef struct attn_case {
    inf_attn_shape sh;
    const float *q;
    inf_kv_view k, v;
} attn_case;

static void run_decode(const inf_ops *ops, void *ctx, float *out) {
    attn_case *c = ctx;
    ops->attn_decode(ops, &c->sh, c->q, &c->k, &c->v, out);
}

static void run_prefill(const inf_ops *ops, void *ctx, float *out) {
    attn_case *c = ctx;
    ops->attn_prefill(ops, &c->sh, c->q, &c->k, &c->v, out);
}

/* Fills positions [0, n_pos) of both caches through ops->kv_store (checked
 * against the reference store), values in [-1, 1]. */
static void fill_cache(const isa_ops *s, attn_case *c, int n_pos, int n_ctx, void *kref, void *vref) {
    const int hd = c->sh.head_dim, n_head_kv = c->sh.n_head_kv, kv_dim = n_head_kv * hd;
    float *k = malloc((size_t)n_pos * kv_dim * sizeof(float)), *v = malloc((size_t)n_pos * kv_dim * sizeof(float));
    fill_uniform(k, (size_t)n_pos * kv_dim, -1.0f, 1.0f);
    fill_uniform(v, (size_t)n_pos * kv_dim, -1.0f, 1.0f);
    const size_t bytes = inf_kv_type_bytes(c->k.type, (size_t)n_ctx * kv_dim);
    /* in two calls, as a prefill and a decode step would */
    const int first = n_pos > 1 ? n_pos - 1 : n_pos;
    s->ops[1]->kv_store(s->ops[1], &c->k, &c->v, k, v, first, 0, n_head_kv, hd);
    if (first < n_pos)
        s->ops[1]->kv_store(s->ops[1], &c->k, &c->v, k + (size_t)first * kv_dim, v + (size_t)first * kv_dim, 1, first,
                            n_head_kv, hd);
    inf_kv_view kr = c->k, vr = c->v;
    kr.data = kref, vr.data = vref;
    REF->kv_store(REF, &kr, &vr, k, v, n_pos, 0, n_head_kv, hd);
    TEST_CHECK(memcmp(c->k.data, kref, bytes) == 0 && memcmp(c->v.data, vref, bytes) == 0,
               "kv_store differs from ref");
    free(k), free(v);
}

/* kv_store into Q8_0 caches with values the quantizer must round exactly
 * as ref.c: ties at .5 after scaling (nearest even), an all-zero block,
 * subnormals next to a small normal value, values near FLT_MAX, a NaN (ignored by the block's amax; its
 * own quant is left out of the comparison, C does not define it). */
static void test_kv_store_q8_0_edges(const isa_ops *s) {
    char label[160];
    begin(label, sizeof label, s, "kv_store q8_0 edge values");
    enum { N_TOK = 3, N_HEAD_KV = 2, HD = 64, N = N_TOK * N_HEAD_KV * HD, NAN_AT = 200 };
    float k[N], v[N];
    fill_uniform(k, N, -1.0f, 1.0f);
    fill_uniform(v, N, -1e38f, 1e38f);
    for (int i = 0; i < 32; i++) k[i] = 127.0f - (float)i - 0.5f; /* amax 126.5: x * 127/126.5 */
    for (int i = 32; i < 64; i++) k[i] = (float)(i - 48) + 0.5f;  /* amax 16.5 */
    for (int i = 64; i < 96; i++) k[i] = 0.0f;
    for (int i = 96; i < 128; i++) k[i] = (i % 2 ? 1e-40f : -3e-39f); /* subnormals, */
    k[127] = 1e-30f; /* with a normal amax (an all-subnormal block overflows 127/amax: undefined in C) */
    k[130] = 127.0f, k[131] = 63.5f, k[132] = -0.5f, k[133] = 1.5f; /* exact ties with id = 1 */
    k[NAN_AT] = NAN;
    unsigned char got[2][N_TOK * N_HEAD_KV * HD / 32 * 34], want[2][sizeof got[0]];
    memset(got, 0, sizeof got), memset(want, 0, sizeof want);
    inf_kv_view gk = {.data = got[0], .type = INF_KV_Q8_0, .pos_stride = N_HEAD_KV * HD, .head_stride = HD,
                      .block_size = INF_KV_CONTIGUOUS, .blocks = inf_kv_single_block};
    inf_kv_view gv = gk, wk = gk, wv = gk;
    gv.data = got[1], wk.data = want[0], wv.data = want[1];
    s->ops[0]->kv_store(s->ops[0], &gk, &gv, k, v, N_TOK, 0, N_HEAD_KV, HD);
    REF->kv_store(REF, &wk, &wv, k, v, N_TOK, 0, N_HEAD_KV, HD);
    const size_t nan_byte = (size_t)NAN_AT / 32 * 34 + 2 + NAN_AT % 32;
    got[0][nan_byte] = want[0][nan_byte] = 0; /* NaN's code: -128 on x86 and in ref (inf_round_to_i8), 0 on NEON */
    TEST_CHECK(memcmp(got, want, sizeof got) == 0, "kv_store q8_0 differs from ref on edge values");
}

/* Cache layouts: the model's (each head's rows together, room for a few
 * more positions) and positions outermost. */
typedef enum { LAYOUT_HEAD_MAJOR, LAYOUT_POS_MAJOR } kv_layout;

/* The attention budget of an ISA and cache type at queries in [-4, 4]
 * (the header's table): the bf16 tiles of avx512+amx carry q and the
 * weights to 16 bits on an f16 cache. */
static double attention_budget(inf_isa isa, inf_kv_type kv) {
    if (isa == INF_ISA_REF) return 0;
    return isa == INF_ISA_AVX512_AMX && kv == INF_KV_F16 ? 2e-5 : 2e-6;
}

/* Queries uniform in [-q_range, q_range]: the budget grows with the
 * scores, whose rounding error is relative to them. */
static void test_attention_case_q(const isa_ops *s, inf_kv_type kv, int n_head, int n_head_kv, int hd, int pos0,
                                  int n_tok, kv_layout layout, float q_range) {
    char label[200];
    begin(label, sizeof label, s, "attention kv=%s %s heads=%d/%d hd=%d pos0=%d n_tok=%d q_range=%g",
          inf_kv_type_name(kv), layout == LAYOUT_HEAD_MAJOR ? "head-major" : "pos-major", n_head, n_head_kv,
          hd, pos0, n_tok, (double)q_range);
    const int n_pos = pos0 + n_tok, kv_dim = n_head_kv * hd;
    const int n_ctx = layout == LAYOUT_HEAD_MAJOR ? n_pos + 3 : n_pos;
    const size_t cache_bytes = inf_kv_type_bytes(kv, (size_t)n_ctx * kv_dim);
    attn_case c = {.sh = {.n_tok = n_tok, .pos0 = pos0, .n_head = n_head, .n_head_kv = n_head_kv, .head_dim = hd,
                          .scale = 1.0f / sqrtf((float)hd)}};
    c.k = (inf_kv_view){.data = alloc_bytes(cache_bytes), .type = kv, .block_size = INF_KV_CONTIGUOUS,
                        .blocks = inf_kv_single_block};
    if (layout == LAYOUT_HEAD_MAJOR) { /* [n_head_kv][n_ctx][hd] */
        c.k.pos_stride = (size_t)hd;
        c.k.head_stride = (size_t)n_ctx * hd;
    } else { /* [n_ctx][n_head_kv][hd] */
        c.k.pos_stride = (size_t)kv_dim;
        c.k.head_stride = (size_t)hd;
    }
    c.v = c.k;
    c.v.data = alloc_bytes(cache_bytes);
    void *kref = alloc_bytes(cache_bytes), *vref = alloc_bytes(cache_bytes);
    memset(c.k.data, 0, cache_bytes), memset(c.v.data, 0, cache_bytes);
    memset(kref, 0, cache_bytes), memset(vref, 0, cache_bytes);
    fill_cache(s, &c, n_pos, n_ctx, kref, vref);
    const size_t n = (size_t)n_tok * n_head * hd;
    float *q = malloc(n * sizeof(float));
    fill_uniform(q, n, -q_range, q_range); /* 4: scores of a few units, a peaked softmax */
    c.q = q;
    float *want = alloc_out(n), *got = alloc_out(n);
    const double tol = attention_budget(s->isa, kv) * (q_range > 4.0f ? q_range / 4.0 : 1.0);
    if (n_tok == 1) {
        run_decode(REF, &c, want);
        run_all_threads(s, run_decode, &c, got, n);
        compare(got, want, n, 0, tol);
    }
    run_prefill(REF, &c, want);
    run_all_threads(s, run_prefill, &c, got, n);
    compare(got, want, n, 0, tol);
    free(c.k.data), free(c.v.data), free(kref), free(vref), free(q), free(want), free(got);
}

static void test_attention_case(const isa_ops *s, inf_kv_type kv, int n_head, int n_head_kv, int hd, int pos0,
                                int n_tok, kv_layout layout) {
    test_attention_case_q(s, kv, n_head, n_head_kv, hd, pos0, n_tok, layout, 4.0f);
}

/* What the bf16 tiles of avx512+amx (attention_amx.c) run for an f16
 * cache (head_dim a multiple of 32): Qwen3's head_dim 128 and group of 2
 * at token counts around the 16-row groups, the 32-key steps and the
 * 128-token tasks, from positions on and off the 64-key tile edges;
 * head_dim 32, 64, 96 (dim blocks not a multiple of 4) and 256 with
 * groups of 1, 3 and 8; head_dim 48, which runs the avx512 kernel. */
static void test_attention_f16_tiles(const isa_ops *s, kv_layout layout) {
    static const int toks[] = {1, 15, 16, 17, 63, 65, 300};
    for (size_t i = 0; i < sizeof toks / sizeof *toks; i++) test_attention_case(s, INF_KV_F16, 4, 2, 128, 0, toks[i], layout);
    static const int pos0s[] = {31, 63, 64, 65, 128, 190};
    for (size_t i = 0; i < sizeof pos0s / sizeof *pos0s; i++) {
        test_attention_case(s, INF_KV_F16, 4, 2, 128, pos0s[i], 1, layout);
        test_attention_case(s, INF_KV_F16, 4, 2, 128, pos0s[i], 17, layout);
    }
    test_attention_case(s, INF_KV_F16, 4, 4, 64, 70, 33, layout);   /* group of 1 */
    test_attention_case(s, INF_KV_F16, 16, 2, 32, 3, 45, layout);   /* group of 8 */
    test_attention_case(s, INF_KV_F16, 6, 2, 96, 64, 20, layout);   /* group of 3 */
    test_attention_case(s, INF_KV_F16, 2, 1, 256, 100, 7, layout);
    test_attention_case(s, INF_KV_F16, 4, 2, 48, 60, 9, layout);    /* not on the tiles */
}

static void test_attention(const isa_ops *s) {
    for (int kv = 0; kv < 4; kv++) {
        const inf_kv_type type = kv & 2 ? INF_KV_F16 : INF_KV_F32;
        const kv_layout layout = kv & 1 ? LAYOUT_POS_MAJOR : LAYOUT_HEAD_MAJOR;
        if (layout == LAYOUT_HEAD_MAJOR) worst_ratio = 0;
        /* decode at several depths (tile edges at 64) */
        static const int depths[] = {0, 1, 15, 63, 64, 65, 200, 700};
        for (size_t i = 0; i < sizeof depths / sizeof *depths; i++) {
            test_attention_case(s, type, 4, 2, 64, depths[i], 1, layout);
            test_attention_case(s, type, 3, 3, 40, depths[i], 1, layout);
            /* head_dim 128, which the avx512 decode takes as a constant,
             * with groups of 1 and 4 (2: below) */
            test_attention_case(s, type, 2, 2, 128, depths[i], 1, layout);
            test_attention_case(s, type, 8, 2, 128, depths[i], 1, layout);
        }
        test_attention_case(s, type, 16, 8, 128, 300, 1, layout);
        test_attention_case(s, type, 8, 1, 16, 90, 1, layout); /* group of 8 */
        /* prefill: token counts around tile and block edges, fresh and after a prefix */
        static const int toks[] = {2, 17, 31, 32, 33, 64, 65, 130, 300};
        for (size_t i = 0; i < sizeof toks / sizeof *toks; i++) {
            test_attention_case(s, type, 4, 2, 64, 0, toks[i], layout);
            if (toks[i] <= 65) test_attention_case(s, type, 6, 2, 24, 70, toks[i], layout);
        }
        test_attention_case(s, type, 16, 8, 128, 0, 100, layout);
        test_attention_case(s, type, 8, 1, 16, 5, 40, layout); /* group of 8: several row chunks */
        test_attention_case(s, type, 2, 2, 130, 64, 9, layout); /* head_dim past 128 */
        if (type == INF_KV_F16 && layout == LAYOUT_HEAD_MAJOR && s->isa == INF_ISA_AVX512_AMX)
            test_attention_f16_tiles(s, layout);
        /* scores of tens of units: weights from 1 to subnormal and 0 */
        if (layout == LAYOUT_HEAD_MAJOR) test_attention_case_q(s, type, 4, 2, 128, 40, 50, layout, 64.0f);
        if (layout == LAYOUT_POS_MAJOR)
            printf("%s attention %s: worst error/budget %.3g\n", inf_isa_name(s->isa), inf_kv_type_name(type),
                   worst_ratio);
    }
    worst_ratio = 0;
    /* Q8_0 (head_dim a multiple of 32): 1 position and odd counts, GQA
     * ratios 1, 2, 3 (padded to 4), 4 and 8, head_dim 64 and 128, and 96
     * (an odd number of blocks: the last VNNI pair is half empty). */
    for (int l = 0; l < 2; l++) {
        const kv_layout layout = l ? LAYOUT_POS_MAJOR : LAYOUT_HEAD_MAJOR;
        static const int depths[] = {0, 1, 62, 63, 64, 65, 301};
        for (size_t i = 0; i < sizeof depths / sizeof *depths; i++) {
            test_attention_case(s, INF_KV_Q8_0, 4, 2, 64, depths[i], 1, layout);
            test_attention_case(s, INF_KV_Q8_0, 3, 3, 128, depths[i], 1, layout);
            test_attention_case(s, INF_KV_Q8_0, 8, 2, 128, depths[i], 1, layout);
        }
        test_attention_case(s, INF_KV_Q8_0, 16, 8, 128, 300, 1, layout);
        test_attention_case(s, INF_KV_Q8_0, 6, 2, 96, 77, 1, layout);
        test_attention_case(s, INF_KV_Q8_0, 8, 1, 32, 90, 1, layout);
        static const int toks[] = {1, 2, 17, 33, 65, 131};
        for (size_t i = 0; i < sizeof toks / sizeof *toks; i++) {
            test_attention_case(s, INF_KV_Q8_0, 4, 2, 64, 0, toks[i], layout);
            test_attention_case(s, INF_KV_Q8_0, 8, 2, 128, 70, toks[i], layout);
        }
        test_attention_case(s, INF_KV_Q8_0, 3, 3, 128, 5, 31, layout);
        test_attention_case(s, INF_KV_Q8_0, 6, 2, 96, 64, 9, layout);
        test_attention_case(s, INF_KV_Q8_0, 8, 1, 32, 5, 40, layout);
    }
    printf("%s attention q8_0: worst error/budget %.3g\n", inf_isa_name(s->isa), worst_ratio);
}

/* ------------------------------------------------------------------ paged KV */

/* K and V caches of one sequence in the engine's pool layout
 * [pool block][n_head_kv][block_size][head_dim], the sequence's blocks a
 * shuffle of the pool's (which holds two more, never in the table). The
 * pools start as 0xff bytes, a NaN in every type (a Q8_0 block's scale
 * too), so a row read from outside the table's positions shows in the
 * result. */
typedef struct paged_kv {
    inf_kv_view k, v;
    int32_t *table; /* [n_blocks] */
    size_t bytes;   /* of each pool */
} paged_kv;

static paged_kv paged_new(inf_kv_type type, int n_head_kv, int hd, int block_size, int n_pos) {
    const int n_blocks = (n_pos + block_size - 1) / block_size, pool_blocks = n_blocks + 2;
    const size_t block_elems = (size_t)n_head_kv * block_size * hd;
    paged_kv p = {.table = malloc((size_t)pool_blocks * sizeof(int32_t)),
                  .bytes = inf_kv_type_bytes(type, (size_t)pool_blocks * block_elems)};
    for (int i = 0; i < pool_blocks; i++) p.table[i] = i;
    for (int i = pool_blocks - 1; i > 0; i--) { /* Fisher-Yates */
        const int j = (int)(rng_next() % (uint64_t)(i + 1));
        const int32_t t = p.table[i];
        p.table[i] = p.table[j], p.table[j] = t;
    }
    p.k = (inf_kv_view){.data = alloc_bytes(p.bytes), .type = type, .pos_stride = (size_t)hd,
                        .head_stride = (size_t)block_size * hd, .block_stride = block_elems,
                        .block_size = block_size, .blocks = p.table};
    p.v = p.k;
    p.v.data = alloc_bytes(p.bytes);
    memset(p.k.data, 0xff, p.bytes), memset(p.v.data, 0xff, p.bytes);
    return p;
}

static void paged_free(paged_kv *p) { free(p->k.data), free(p->v.data), free(p->table); }

/* Cuts [0, n) at random points into pieces: cuts[0] = 0 < cuts[1] < ... <
 * cuts[count] = n; returns count (at least 1, at most max_pieces). */
static int random_cuts(int n, int max_pieces, int *cuts) {
    int count = 1 + (int)(rng_next() % (uint64_t)max_pieces);
    if (count > n) count = n;
    cuts[0] = 0;
    for (int i = 1; i < count; i++) /* leaves a position for each piece after it */
        cuts[i] = cuts[i - 1] + 1 + (int)(rng_next() % (uint64_t)(n - cuts[i - 1] - (count - i)));
    cuts[count] = n;
    return count;
}

static void check_same(const float *got, const float *want, size_t n, const char *what) {
    size_t i = 0;
    while (i < n && memcmp(&got[i], &want[i], sizeof(float)) == 0) i++;
    TEST_CHECK(i == n, "%s: [%zu] %.9g vs %.9g, not bit-identical", what, i, i < n ? (double)got[i] : 0.0,
               i < n ? (double)want[i] : 0.0);
}

enum { MAX_PIECES = 6 };

/* Query rows [0, n_tok) of a prefill at positions 0.. as MAX_PIECES calls
 * at most, cut at random points, each on a random thread count. */
static void prefill_in_pieces(const isa_ops *s, const inf_ops *only, const attn_case *c, float *out) {
    int cuts[MAX_PIECES + 1];
    const int pieces = random_cuts(c->sh.n_tok, MAX_PIECES, cuts);
    const size_t row = (size_t)c->sh.n_head * c->sh.head_dim;
    for (int i = 0; i < pieces; i++) {
        inf_attn_shape part = c->sh;
        part.pos0 = cuts[i];
        part.n_tok = cuts[i + 1] - cuts[i];
        const inf_ops *ops = only ? only : s->ops[rng_next() % N_THREAD_COUNTS];
        ops->attn_prefill(ops, &part, c->q + cuts[i] * row, &c->k, &c->v, out + cuts[i] * row);
    }
}

/* n_pos positions of random K and V stored into a contiguous cache
 * ([n_head_kv][n_pos][hd], one call) and into a paged one (random pieces,
 * random thread counts; checked against the reference store); then decode
 * (at the last position and at a random one) and prefill of all positions
 * read the paged cache exactly as the contiguous one, and prefill cut into
 * pieces gives the floats of one call. */
static void test_paged_case(const isa_ops *s, inf_kv_type type, int n_head, int n_head_kv, int hd, int block_size,
                            int n_pos) {
    char label[200];
    begin(label, sizeof label, s, "paged kv=%s heads=%d/%d hd=%d block=%d n_pos=%d", inf_kv_type_name(type), n_head,
          n_head_kv, hd, block_size, n_pos);
    const int kv_dim = n_head_kv * hd;
    const size_t kv_elems = (size_t)n_pos * kv_dim, cache_bytes = inf_kv_type_bytes(type, kv_elems);
    float *k = malloc(kv_elems * sizeof(float)), *v = malloc(kv_elems * sizeof(float));
    fill_uniform(k, kv_elems, -1.0f, 1.0f);
    fill_uniform(v, kv_elems, -1.0f, 1.0f);

    attn_case flat = {
        .sh = {.n_head = n_head, .n_head_kv = n_head_kv, .head_dim = hd, .scale = 1.0f / sqrtf((float)hd)}};
    flat.k = (inf_kv_view){.data = alloc_bytes(cache_bytes), .type = type, .pos_stride = (size_t)hd,
                           .head_stride = (size_t)n_pos * hd, .block_size = INF_KV_CONTIGUOUS,
                           .blocks = inf_kv_single_block};
    flat.v = flat.k;
    flat.v.data = alloc_bytes(cache_bytes);
    s->ops[0]->kv_store(s->ops[0], &flat.k, &flat.v, k, v, n_pos, 0, n_head_kv, hd);

    paged_kv pg = paged_new(type, n_head_kv, hd, block_size, n_pos), want_pg = pg;
    want_pg.k.data = alloc_bytes(pg.bytes), want_pg.v.data = alloc_bytes(pg.bytes);
    memset(want_pg.k.data, 0xff, pg.bytes), memset(want_pg.v.data, 0xff, pg.bytes);
    int cuts[MAX_PIECES + 1];
    const int pieces = random_cuts(n_pos, MAX_PIECES, cuts);
    for (int i = 0; i < pieces; i++) {
        const inf_ops *ops = s->ops[rng_next() % N_THREAD_COUNTS];
        const size_t at = (size_t)cuts[i] * kv_dim;
        ops->kv_store(ops, &pg.k, &pg.v, k + at, v + at, cuts[i + 1] - cuts[i], cuts[i], n_head_kv, hd);
    }
    REF->kv_store(REF, &want_pg.k, &want_pg.v, k, v, n_pos, 0, n_head_kv, hd);
    TEST_CHECK(memcmp(pg.k.data, want_pg.k.data, pg.bytes) == 0 && memcmp(pg.v.data, want_pg.v.data, pg.bytes) == 0,
               "paged kv_store differs from ref's (or wrote outside its rows)");
    bool rows_same = true;
    const size_t row_bytes = inf_kv_type_bytes(type, (size_t)hd);
    for (int p = 0; p < n_pos; p++)
        for (int h = 0; h < n_head_kv; h++)
            for (int i = 0; i < 2; i++) {
                const inf_kv_view *a = i ? &pg.v : &pg.k, *b = i ? &flat.v : &flat.k;
                rows_same &= memcmp((char *)a->data + inf_kv_type_bytes(type, inf_kv_elem(a, p, h)),
                                    (char *)b->data + inf_kv_type_bytes(type, inf_kv_elem(b, p, h)), row_bytes) == 0;
            }
    TEST_CHECK(rows_same, "paged kv_store: rows differ from the contiguous cache's");
    free(want_pg.k.data), free(want_pg.v.data);

    attn_case paged = flat;
    paged.k = pg.k, paged.v = pg.v;
    const size_t n = (size_t)n_pos * n_head * hd, row = (size_t)n_head * hd;
    float *q = malloc(n * sizeof(float));
    fill_uniform(q, n, -4.0f, 4.0f);
    float *want = alloc_out(n), *got = alloc_out(n);

    /* decode at the last position, and at a random one (a prefix of the table) */
    const int decode_at[2] = {n_pos - 1, (int)(rng_next() % (uint64_t)n_pos)};
    for (int i = 0; i < 2; i++) {
        flat.sh.n_tok = paged.sh.n_tok = 1;
        flat.sh.pos0 = paged.sh.pos0 = decode_at[i];
        flat.q = paged.q = q + (size_t)decode_at[i] * row;
        run_decode(s->ops[0], &flat, want);
        run_all_threads(s, run_decode, &paged, got, row);
        check_same(got, want, row, "decode, paged vs contiguous");
    }

    /* prefill of all positions, in one call and in pieces */
    flat.sh.n_tok = paged.sh.n_tok = n_pos;
    flat.sh.pos0 = paged.sh.pos0 = 0;
    flat.q = paged.q = q;
    run_prefill(s->ops[0], &flat, want);
    run_all_threads(s, run_prefill, &paged, got, n);
    check_same(got, want, n, "prefill, paged vs contiguous");
    for (int rep = 0; rep < 2; rep++) {
        for (size_t i = 0; i < n + GUARD; i++) got[i] = SENTINEL;
        prefill_in_pieces(s, NULL, rep ? &flat : &paged, got);
        check_same(got, want, n, rep ? "prefill in pieces (contiguous) vs one call" : "prefill in pieces vs one call");
        TEST_CHECK(guards_intact(got, n), "prefill in pieces wrote past the output");
    }
    if (s->isa == INF_ISA_REF) { /* ref.c's op itself, unthreaded (the "ref" ISA runs it on pieces of 8 rows) */
        prefill_in_pieces(s, REF, &paged, got);
        check_same(got, want, n, "ref.c prefill in pieces vs one call");
    }
    paged_free(&pg);
    free(flat.k.data), free(flat.v.data), free(k), free(v), free(q), free(want), free(got);
}

/* Block sizes 1, 16, 24 (not a power of two: blocks straddle key tiles),
 * 32 and 64, with lengths just below, at and just above one block and
 * three (two for 32 and 64; around key tiles for block size 1); every KV
 * type; GQA groups 2, 3 and 8 and Qwen3-0.6B's 16/8 x 128. */
static void test_paged(const isa_ops *s) {
    static const inf_kv_type types[] = {INF_KV_F32, INF_KV_F16, INF_KV_Q8_0};
    static const int block_sizes[] = {1, 16, 24, 32, 64};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        const inf_kv_type type = types[ti];
        for (size_t bi = 0; bi < sizeof block_sizes / sizeof *block_sizes; bi++) {
            const int bs = block_sizes[bi];
            const int m = bs >= 32 ? 2 : 3;
            const int lens[] = {bs - 1, bs, bs + 1, m * bs - 1, m * bs, m * bs + 1};
            static const int lens_1[] = {1, 2, 63, 64, 65, 129}; /* block size 1: around key tiles */
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                const int n_pos = bs == 1 ? lens_1[li] : lens[li];
                if (n_pos >= 1) test_paged_case(s, type, 4, 2, 64, bs, n_pos);
            }
            test_paged_case(s, type, 8, 1, 32, bs, bs + 40);
        }
        test_paged_case(s, type, 16, 8, 128, 16, 67);
        test_paged_case(s, type, 16, 8, 128, 24, 49);
        test_paged_case(s, type, 6, 2, 96, 24, 77); /* group 3; Q8_0: an odd number of blocks */
    }
}

/* attn_decode_seqs: n_seqs sequences at random positions (each its own
 * shuffled blocks, prior positions filled) store their new K and V rows
 * and attend in one call; outputs and caches must be the bits of
 * kv_store + attn_decode per sequence on the same ISA, on every thread
 * count. */
static void test_decode_seqs_case(const isa_ops *s, inf_kv_type type, int n_head, int n_head_kv, int hd, int bs,
                                  int n_seqs) {
    char label[200];
    begin(label, sizeof label, s, "attn_decode_seqs kv=%s heads=%d/%d hd=%d block=%d seqs=%d", inf_kv_type_name(type),
          n_head, n_head_kv, hd, bs, n_seqs);
    enum { MAX_SEQS = 8 };
    const int kv_dim = n_head_kv * hd, q_dim = n_head * hd;
    paged_kv pg[MAX_SEQS];
    void *pristine[MAX_SEQS][2];
    inf_kv_view kc[MAX_SEQS], vc[MAX_SEQS];
    inf_attn_shape sh[MAX_SEQS];
    float *q = malloc((size_t)n_seqs * q_dim * sizeof(float));
    float *k = malloc((size_t)n_seqs * kv_dim * sizeof(float)), *v = malloc((size_t)n_seqs * kv_dim * sizeof(float));
    fill_uniform(q, (size_t)n_seqs * q_dim, -4.0f, 4.0f);
    fill_uniform(k, (size_t)n_seqs * kv_dim, -1.0f, 1.0f);
    fill_uniform(v, (size_t)n_seqs * kv_dim, -1.0f, 1.0f);
    for (int i = 0; i < n_seqs; i++) {
        const int pos = i == 0 ? 0 : (int)(rng_next() % 150); /* one sequence at its first token */
        pg[i] = paged_new(type, n_head_kv, hd, bs, pos + 1);
        if (pos > 0) {
            float *pk = malloc((size_t)pos * kv_dim * sizeof(float)), *pv = malloc((size_t)pos * kv_dim * sizeof(float));
            fill_uniform(pk, (size_t)pos * kv_dim, -1.0f, 1.0f);
            fill_uniform(pv, (size_t)pos * kv_dim, -1.0f, 1.0f);
            REF->kv_store(REF, &pg[i].k, &pg[i].v, pk, pv, pos, 0, n_head_kv, hd);
            free(pk), free(pv);
        }
        for (int j = 0; j < 2; j++) {
            pristine[i][j] = alloc_bytes(pg[i].bytes);
            memcpy(pristine[i][j], j ? pg[i].v.data : pg[i].k.data, pg[i].bytes);
        }
        sh[i] = (inf_attn_shape){.n_tok = 1, .pos0 = pos, .n_head = n_head, .n_head_kv = n_head_kv, .head_dim = hd,
                                 .scale = 1.0f / sqrtf((float)hd)};
        kc[i] = pg[i].k, vc[i] = pg[i].v;
    }
    /* want: one sequence at a time */
    const inf_ops *one = s->ops[0];
    float *want = alloc_out((size_t)n_seqs * q_dim), *got = alloc_out((size_t)n_seqs * q_dim);
    void *want_cache[MAX_SEQS][2];
    for (int i = 0; i < n_seqs; i++) {
        one->kv_store(one, &kc[i], &vc[i], k + (size_t)i * kv_dim, v + (size_t)i * kv_dim, 1, sh[i].pos0, n_head_kv, hd);
        one->attn_decode(one, &sh[i], q + (size_t)i * q_dim, &kc[i], &vc[i], want + (size_t)i * q_dim);
        for (int j = 0; j < 2; j++) {
            want_cache[i][j] = alloc_bytes(pg[i].bytes);
            memcpy(want_cache[i][j], j ? pg[i].v.data : pg[i].k.data, pg[i].bytes);
        }
    }
    for (int t = 0; t < N_THREAD_COUNTS; t++) {
        for (int i = 0; i < n_seqs; i++) memcpy(pg[i].k.data, pristine[i][0], pg[i].bytes), memcpy(pg[i].v.data, pristine[i][1], pg[i].bytes);
        memset(got, 0, (size_t)n_seqs * q_dim * sizeof(float));
        s->ops[t]->attn_decode_seqs(s->ops[t], n_seqs, sh, q, k, v, kc, vc, got);
        check_same(got, want, (size_t)n_seqs * q_dim, "attn_decode_seqs vs one sequence at a time");
        bool caches_same = true;
        for (int i = 0; i < n_seqs; i++)
            caches_same &= memcmp(pg[i].k.data, want_cache[i][0], pg[i].bytes) == 0 &&
                           memcmp(pg[i].v.data, want_cache[i][1], pg[i].bytes) == 0;
        TEST_CHECK(caches_same, "attn_decode_seqs (%d threads): caches differ from kv_store's", t + 1);
    }
    for (int i = 0; i < n_seqs; i++) {
        for (int j = 0; j < 2; j++) free(pristine[i][j]), free(want_cache[i][j]);
        paged_free(&pg[i]);
    }
    free(q), free(k), free(v), free(want), free(got);
}

static void test_decode_seqs(const isa_ops *s) {
    static const inf_kv_type types[] = {INF_KV_F32, INF_KV_F16, INF_KV_Q8_0};
    for (size_t ti = 0; ti < 3; ti++) {
        test_decode_seqs_case(s, types[ti], 4, 2, 64, 16, 1);
        test_decode_seqs_case(s, types[ti], 4, 2, 64, 16, 7);
        test_decode_seqs_case(s, types[ti], 16, 8, 128, 64, 5);
        /* KV heads that split into groups unevenly (cpu.c, run_decode_seqs) */
        test_decode_seqs_case(s, types[ti], 18, 9, 32, 16, 3);
        test_decode_seqs_case(s, types[ti], 24, 12, 32, 64, 2);
    }
}

/* ------------------------------------------------------------------ backend selection */

static void test_selection(void) {
    test_begin("isa selection");
    inf_isa isa;
    TEST_CHECK(inf_isa_from_name("avx512", &isa) && isa == INF_ISA_AVX512, "parse avx512");
    TEST_CHECK(!inf_isa_from_name("sse9", &isa), "unknown name accepted");
    TEST_CHECK(inf_isa_supported(INF_ISA_REF), "ref must always be supported");
    TEST_CHECK(inf_isa_supported(inf_isa_best()), "best ISA not supported");
    inf_ops *ops = NULL;
    inf_error err = {0};
    TEST_CHECK(inf_ops_cpu_new(INF_ISA_REF, 0, &ops, &err) == INF_ERR_INVALID, "0 threads accepted");
    for (int i = 0; i < INF_ISA_COUNT; i++) {
        if (inf_isa_supported((inf_isa)i)) continue;
        TEST_CHECK(inf_ops_cpu_new((inf_isa)i, 1, &ops, &err) == INF_ERR_UNSUPPORTED && strstr(err.msg, inf_isa_name((inf_isa)i)),
                   "unsupported ISA %s accepted", inf_isa_name((inf_isa)i));
    }
    TEST_CHECK(inf_ops_cpu_new(INF_ISA_REF, 2, &ops, &err) == INF_OK && strcmp(ops->name, "ref") == 0, "ref backend");
    inf_ops_cpu_free(ops);

    setenv("INFERNO_ISA", "bogus", 1);
    TEST_CHECK(inf_isa_select(&isa, &err) == INF_ERR_INVALID && strstr(err.msg, "bogus"), "bad INFERNO_ISA accepted");
    setenv("INFERNO_ISA", "ref", 1);
    TEST_CHECK(inf_isa_select(&isa, &err) == INF_OK && isa == INF_ISA_REF, "INFERNO_ISA=ref");
    unsetenv("INFERNO_ISA");
    TEST_CHECK(inf_isa_select(&isa, &err) == INF_OK && isa == inf_isa_best(), "default is the best ISA");
}

static void usage(void) {
    fprintf(stderr, "usage: test_kernels [--isa NAME]... [--ops GROUP[,GROUP...]]\n"
                    "  --isa NAME   test only these ISAs (default: every one this CPU runs;\n"
                    "               best: the one inferno picks here)\n"
                    "  --ops LIST   only these groups of ops: matmul, elementwise, kv_store,\n"
                    "               attention (default: all)\n");
}

enum { OPS_MATMUL = 1, OPS_ELEMENTWISE = 2, OPS_KV_STORE = 4, OPS_ATTENTION = 8, OPS_ALL = 15 };

/* "matmul,attention" as OPS_ bits; 0 for an unknown name. */
static int parse_ops(const char *list) {
    static const struct { const char *name; int bit; } groups[] = {
        {"matmul", OPS_MATMUL}, {"elementwise", OPS_ELEMENTWISE}, {"kv_store", OPS_KV_STORE}, {"attention", OPS_ATTENTION}};
    int bits = 0;
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, ",");
        int bit = 0;
        for (size_t g = 0; g < sizeof groups / sizeof *groups; g++)
            if (strlen(groups[g].name) == len && strncmp(p, groups[g].name, len) == 0) bit = groups[g].bit;
        if (!bit) return 0;
        bits |= bit;
        p += len + (p[len] == ',');
    }
    return bits;
}

/* Arguments narrow the run (scripts/check-arm64.sh: the kernels arm64
 * has, on the emulated CPUs); without them every op runs on every ISA
 * this CPU has. */
int main(int argc, char **argv) {
    bool want[INF_ISA_COUNT], any_isa = false;
    int ops = OPS_ALL;
    memset(want, 0, sizeof want);
    for (int i = 1; i < argc; i++) {
        inf_isa isa;
        if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc && strcmp(argv[i + 1], "best") == 0) {
            want[inf_isa_best()] = any_isa = true;
            i++;
        } else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc && inf_isa_from_name(argv[i + 1], &isa)) {
            want[isa] = any_isa = true;
            i++;
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc && (ops = parse_ops(argv[i + 1])) != 0) {
            i++;
        } else {
            usage();
            return 2;
        }
    }
    REF = inf_ops_ref();
    test_selection();
    for (int i = 0; i < INF_ISA_COUNT; i++) {
        if (any_isa && !want[i]) continue;
        if (!any_isa && i == INF_ISA_REF && TEST_UNDER_ASAN) {
            printf("ref: skipped under AddressSanitizer (the plain build runs it)\n");
            continue;
        }
        if (!inf_isa_supported((inf_isa)i)) {
            printf("%s: not supported on this CPU, skipped\n", inf_isa_name((inf_isa)i));
            continue;
        }
        isa_ops s = {.isa = (inf_isa)i};
        inf_error err = {0};
        bool ok = true;
        for (int t = 0; t < N_THREAD_COUNTS; t++) ok &= inf_ops_cpu_new(s.isa, t + 1, &s.ops[t], &err) == INF_OK;
        if (TEST_CHECK(ok, "create %s backend: %s", inf_isa_name(s.isa), err.msg)) {
            if (ops & OPS_MATMUL) {
                test_matmul(&s);
                test_matmul_quant(&s);
                test_matvec_kernel(&s);
                test_matvec_any_address(&s);
#if defined(__x86_64__)
                test_quantize_q8(&s);
                test_unpack_q32_group(&s);
                test_unpack_packed_kquant(&s);
                test_amx_quant_tiles(&s);
#endif
                test_matmul_group(&s);
                test_matmul_shared_ranges(&s);
                test_matmul_rows_kind(&s);
            }
            if (ops & OPS_ELEMENTWISE) test_elementwise(&s);
            if (ops & OPS_KV_STORE) test_kv_store_q8_0_edges(&s);
            if (ops & OPS_ATTENTION) {
                test_attention(&s);
                test_paged(&s);
                test_decode_seqs(&s);
            }
        }
        for (int t = 0; t < N_THREAD_COUNTS; t++) inf_ops_cpu_free(s.ops[t]);
    }
    return test_summary();
}

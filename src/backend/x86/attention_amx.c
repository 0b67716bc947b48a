/*
 * attention_amx.c — flash prefill attention on AMX bf16 tiles (TDPBF16PS)
 * for an f16 KV cache: the avx512+amx table's attn_prefill. Other caches
 * (f32, Q8_0) and head_dim not a multiple of 32 run avx512's kernel.
 *
 * Algorithm (attention_avx512.c's, with its two products on tiles). A call
 * is one KV head and query tokens [t0, t1); its rows (row = token x query
 * head of the group, in token order) are taken 16 at a time, a row group.
 * Keys are walked in tiles of 64 at absolute positions 0, 64, ...; each key
 * tile is converted once per call (K and V below) and used by every row
 * group that sees it. Per row group and key tile:
 *   S^T[key][row] = K · Q^T              tiles of 16 keys x 16 rows, f32
 *   online softmax, lane-wise over rows  AVX-512: running max m and sum l
 *                                        per row; a tile that raises m
 *                                        rescales l and O^T by
 *                                        exp(m_old - m_new) once
 *   O^T[dim][row] += V^T · P^T           tiles of 16 dims x 16 rows, f32
 * so a tile column is one query row throughout. The causal mask is a loop
 * bound: a group stops at its last row's position, and its earlier rows'
 * scores past their own positions are -inf (weight exactly 0).
 *
 * Tile operands (A: 16 rows of 32 bf16; B: 16 rows of 16 bf16 pairs, each
 * pair two consecutive K elements of one column, "VNNI" order):
 *   scores  A = 16 keys x 32 dims: the converted key rows as they are
 *           B = Q^T: row i, column r = (q[r][2i], q[r][2i+1]); made once
 *               per row group and call
 *   output  A = V^T: row d, unit i = (v[2i][d], v[2i+1][d]); the value
 *               rows paired and transposed once per key tile and call
 *           B = P^T: row i, column r = (p[r][2i], p[r][2i+1]); made from
 *               the softmax's lane vectors of keys 2i and 2i + 1
 * O^T stays in memory ([hd][16] per group): each key tile's products load
 * it into the accumulators and store it back, so the rescale is an
 * AVX-512 multiply.
 *
 * Overlap: the tile unit can work beside the vector units only when tile
 * instructions sit among vector ones in the instruction stream, so the
 * products are queued as jobs (a group's scores, a group's accumulation)
 * and run a unit (three products) at a time from inside the vector loops:
 * group i's softmax runs group i - 1's accumulation and group i + 1's
 * scores, the conversion of a key tile the previous tile's last
 * accumulation and its own first scores. Measured on a Sapphire Rapids VM
 * core (one KV head of a 2044-token Qwen3-0.6B prefill, 2.2x the avx512
 * kernel): 11 ms, of which the vector work alone takes 5.7 (2.5 of it
 * converting K, V and Q) and the tile work alone 5.6; the two overlap
 * little. Weights that underflow (exp_weight) cost more than that: their
 * microcode assists had doubled the vector time.
 *
 * Numerics. bf16 holds 8 significant bits, f16 11, f32 24. Each operand is
 * split in two bf16 pieces, hi = bf16(x) and lo = bf16(x - hi) (round to
 * nearest even), and a dot product takes three products, hi·hi + hi·lo +
 * lo·hi, each exact in f32, summed in f32 by the tile:
 *   k, v (f16)  hi + lo == x exactly (lo holds the 3 bits hi lacks);
 *   q, p (f32)  hi + lo == x within 2^-16 |x| (16 significant bits).
 * Left out per product: q's (p's) last bits, <= 2^-16 |q k|, and lo·lo,
 * <= 2^-16 |q k|: each product within 2^-15 relative, errors of random
 * sign. So a score is within ~2^-15 of its condition scale·Σ|q_i k_i|
 * (f32's own sums are within ~2^-20) and a weighted sum of values within
 * ~2^-15 max|v|. test_kernels.c's budget: |o - ref| <= 2e-5 max|v| at its
 * scores of a few units (measured worst 0.46 of it), growing with the
 * scores' size as the f32 kernels' budget does; llama.cpp's CPU flash
 * attention, the engine's reference, rounds q to f16 (2^-11) and sums
 * P·V in f16. The tile unit treats bf16 subnormals as zero and flushes
 * subnormal sums; so weights below e^-87 are zeros here (exp_weight).
 *
 * Invariance (ops.h attn_prefill, kernels.h): a row's floats depend only
 * on its query, its position and the cache. A tile product computes each
 * column (query row) from that column's operands alone, by the same
 * instructions whatever the other columns hold; padding columns of a short
 * group repeat its last row and are not stored. The key tiles sit at
 * absolute positions, and a row's weights for keys after its position are
 * exactly 0, so the key steps and tiles a group runs past a row's position
 * (for a later row of the group) add exact zeros to its l and O^T and
 * leave its m. Any t0/t1, n_tok, pos0, thread count or block table gives
 * the same bits, and a 1-token chunk runs the same code as a long one.
 */
#include "backend/x86/amx_tiles.h"
#include "backend/x86/vec_avx512.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"

#include <math.h>
#include <string.h>

enum {
    KEY_TILE = 64,            /* keys per softmax tile, at absolute positions */
    ROWS = 16,                /* query rows per row group: every product's N */
    SUBTILES = KEY_TILE / 16, /* score tiles of 16 keys per key tile */
    DIM_STEP = 32,            /* dims per score product (K) */
    KEY_STEP = 32,            /* keys per output product (K) */
    KEY_STEPS = KEY_TILE / KEY_STEP,
    TILE_BYTES = 1024,        /* 16 rows x 64 bytes: every tile */
    TILE_WORDS = TILE_BYTES / 4,
    PIECE_TILES = 2,          /* hi, lo */
};

/* Tile registers: four accumulators (score subtiles, or O^T dim blocks),
 * the A operand's two pieces and the B operand's two. Macros: the tile
 * intrinsics paste the number into the instruction. */
#define T_C0 0
#define T_C1 1
#define T_C2 2
#define T_C3 3
#define T_AHI 4
#define T_ALO 5
#define T_BHI 6
#define T_BLO 7

#define INLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------------ bf16 pieces */

/* Lane i of the result: the bf16 pair (a[i], b[i]) rounded to nearest even,
 * a in the low half (a VNNI unit); the residuals a - hi, b - hi (exact) in
 * *ra, *rb. */
INLINE __m512i pair_round(__m512 a, __m512 b, __m512 *ra, __m512 *rb) {
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i units = _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(b, a));
    *ra = _mm512_sub_ps(a, _mm512_castsi512_ps(_mm512_slli_epi32(units, 16)));
    *rb = _mm512_sub_ps(b, _mm512_castsi512_ps(_mm512_and_si512(units, _mm512_set1_epi32((int)0xffff0000))));
    return units;
}

/* The units of two vectors, rounded, without residuals. */
INLINE __m512i pair_units(__m512 a, __m512 b) {
    __m512 ra, rb;
    return pair_round(a, b, &ra, &rb);
}

/* 32 consecutive elements x0 (0-15), x1 (16-31) as bf16 pieces in element
 * order: hi, and lo of the residuals. */
INLINE void row_pieces(__m512 x0, __m512 x1, __m512i *hi, __m512i *lo) {
    *hi = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
    const __m512 h0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(*hi)), 16));
    const __m512 h1 =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(*hi, 1)), 16));
    *lo = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0));
}

/* e^x for x <= 0 (vexp_avx512), 0 where x < -87 (a masked key's -inf
 * among them). The vector exp's subnormal and underflowing results take
 * microcode assists (half of this kernel's vector time, from the masked
 * keys of the causal edge alone), and nothing here sees them: a
 * subnormal weight's bf16 pieces are zeros to the tile unit, and a row's
 * l is at least 1 (its max weighs 1). */
INLINE __m512 exp_weight(__m512 x) {
    const __m512 floor = _mm512_set1_ps(-87.0f);
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, floor, _CMP_GE_OQ), vexp_avx512(_mm512_max_ps(x, floor)));
}

/* 16 f16 values widened to f32 (a missing row: zeros). */
INLINE __m512 f16_load(const void *row, int i) {
    return row ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + i)))
               : _mm512_setzero_ps();
}

/* ------------------------------------------------------------------ state */

/* One row group, kept across the call's key tiles. */
typedef struct row_group {
    float m[ROWS] __attribute__((aligned(64)));      /* running max of each row */
    float l[ROWS] __attribute__((aligned(64)));      /* running sum of its weights */
    int32_t last[ROWS] __attribute__((aligned(64))); /* each row's last visible key */
    int n_rows; /* real rows (the rest repeat the last) */
    int row0;   /* the call's row of column 0 */
    int n_keys; /* keys of the current key tile its last row sees */
    uint32_t *qt; /* [n_dstep][2 pieces] B tiles of Q^T: [16 dim pairs][16 rows] bf16 pairs */
    float *ot;    /* [hd][ROWS] O^T, unnormalized */
} row_group;

/* Products for the tile unit: a group's scores of the key tile, or its
 * accumulation of the tile's values, run a unit at a time. */
typedef enum { JOB_SCORES, JOB_ACCUMULATE } job_kind;
typedef struct tile_job {
    job_kind kind;
    row_group *g;
    float *st;          /* scores: their [KEY_TILE][ROWS] destination */
    const uint32_t *pt; /* accumulate: the group's P^T tiles */
    int n;              /* key subtiles (scores) or key steps (accumulate) */
    int unit, n_units;
} tile_job;

enum { MAX_JOBS = 2 }; /* queued at once: one accumulation, one group's scores */

typedef struct amx_ctx {
    const inf_attn_shape *sh;
    int hd, group, kvh, t0;
    int n_dstep;  /* hd / DIM_STEP */
    int n_dblk;   /* hd / 16 */
    uint16_t *kt; /* [SUBTILES][n_dstep][2 pieces] A tiles of K: [16 keys][32 dims] bf16 */
    uint32_t *vt; /* [n_dblk][KEY_STEPS][2 pieces] A tiles of V^T: [16 dims][16 key pairs] bf16 pairs */
    float *st;    /* [2][KEY_TILE][ROWS] S^T of two groups, then scaled and masked */
    uint32_t *pt; /* [2][KEY_STEPS][2 pieces] B tiles of P^T of two groups: [16 key pairs][16 rows] */
    tile_job jobs[MAX_JOBS];
    int job_head, n_jobs;
    const void *rows[KEY_TILE]; /* the key tile's cached rows (K, then V) */
} amx_ctx;

/* ------------------------------------------------------------------ tile jobs */

/* C += A · B, hi·hi + hi·lo + lo·hi, for the A pieces at a (hi, then lo a
 * tile later) and the B pieces in T_BHI, T_BLO. */
#define PRODUCTS(C, a)                                           \
    do {                                                         \
        _tile_loadd(T_AHI, (a), 64);                             \
        _tile_loadd(T_ALO, (const char *)(a) + TILE_BYTES, 64);  \
        _tile_dpbf16ps(C, T_AHI, T_BHI);                         \
        _tile_dpbf16ps(C, T_AHI, T_BLO);                         \
        _tile_dpbf16ps(C, T_ALO, T_BHI);                         \
    } while (0)

#define LOAD_B(b)                                                \
    do {                                                         \
        _tile_loadd(T_BHI, (b), 64);                             \
        _tile_loadd(T_BLO, (const char *)(b) + TILE_BYTES, 64);  \
    } while (0)

/* OP on accumulator i (a tile number must be a constant). */
#define ON_C(i, OP)            \
    switch (i) {               \
    case 0: OP(T_C0); break;   \
    case 1: OP(T_C1); break;   \
    case 2: OP(T_C2); break;   \
    default: OP(T_C3); break;  \
    }

/* Unit u of a scores job, dim step ds = u / n and subtile sub = u % n:
 * S^T[sub] += K[sub][ds] · Q^T[ds], zeroed before the first step and
 * stored after the last. */
static void scores_unit(const amx_ctx *c, const tile_job *j, int u) {
    const int ds = u / j->n, sub = u % j->n;
    if (sub == 0) LOAD_B(j->g->qt + (size_t)ds * PIECE_TILES * TILE_WORDS);
    const uint16_t *a = c->kt + (size_t)((sub * c->n_dstep + ds) * PIECE_TILES) * (TILE_BYTES / 2);
    float *st = j->st + sub * 16 * ROWS;
#define ZERO(C) _tile_zero(C)
#define PROD(C) PRODUCTS(C, a)
#define STORE(C) _tile_stored(C, st, 64)
    if (ds == 0) ON_C(sub, ZERO);
    ON_C(sub, PROD);
    if (ds == c->n_dstep - 1) ON_C(sub, STORE);
#undef STORE
#undef PROD
#undef ZERO
}

/* Unit u of an accumulate job, dim blocks four at a time, then key steps,
 * then the four: O^T[db] += V^T[db][ks] · P^T[ks], O^T loaded before the
 * first key step and stored after the last. */
static void accumulate_unit(const amx_ctx *c, const tile_job *j, int u) {
    const int per_four = 4 * j->n;
    const int db0 = u / per_four * 4, nb = INF_MIN(4, c->n_dblk - db0);
    const int ks = u % per_four / nb, cc = u % per_four % nb;
    const uint32_t *a = c->vt + (size_t)(((db0 + cc) * KEY_STEPS + ks) * PIECE_TILES) * TILE_WORDS;
    float *o = j->g->ot + (size_t)(db0 + cc) * 16 * ROWS;
    if (cc == 0) LOAD_B(j->pt + (size_t)ks * PIECE_TILES * TILE_WORDS);
#define LOAD(C) _tile_loadd(C, o, 64)
#define PROD(C) PRODUCTS(C, a)
#define STORE(C) _tile_stored(C, o, 64)
    if (ks == 0) ON_C(cc, LOAD);
    ON_C(cc, PROD);
    if (ks == j->n - 1) ON_C(cc, STORE);
#undef STORE
#undef PROD
#undef LOAD
}

static void job_push(amx_ctx *c, tile_job j) {
    j.unit = 0;
    j.n_units = (j.kind == JOB_SCORES ? c->n_dstep : c->n_dblk) * j.n;
    c->jobs[(c->job_head + c->n_jobs++) % MAX_JOBS] = j;
}

/* Runs up to n units of the queued jobs, in order. */
static void jobs_run(amx_ctx *c, int n) {
    for (; n > 0 && c->n_jobs > 0; n--) {
        tile_job *j = &c->jobs[c->job_head];
        if (j->kind == JOB_SCORES) scores_unit(c, j, j->unit);
        else accumulate_unit(c, j, j->unit);
        if (++j->unit == j->n_units) c->job_head = (c->job_head + 1) % MAX_JOBS, c->n_jobs--;
    }
}

static void jobs_finish(amx_ctx *c) { jobs_run(c, INT32_MAX); }

/* ------------------------------------------------------------------ operands */

/* Row group g's queries as the B tiles of Q^T, and its rows' positions and
 * softmax state. Padding columns repeat the last row. */
static void group_prepare(const amx_ctx *c, const float *q, row_group *g) {
    const inf_attn_shape *sh = c->sh;
    const float *qr[ROWS];
    for (int r = 0; r < ROWS; r++) {
        const int row = g->row0 + INF_MIN(r, g->n_rows - 1);
        const int t = c->t0 + row / c->group, h = c->kvh * c->group + row % c->group;
        qr[r] = q + ((size_t)t * sh->n_head + h) * c->hd;
        g->last[r] = sh->pos0 + t;
        g->m[r] = -INFINITY;
        g->l[r] = 0.0f;
    }
    for (int ds = 0; ds < c->n_dstep; ds++) {
        __m512i hi[ROWS], lo[ROWS]; /* [row][dim pair], then [dim pair][row] */
        for (int r = 0; r < ROWS; r++)
            row_pieces(_mm512_loadu_ps(qr[r] + ds * DIM_STEP), _mm512_loadu_ps(qr[r] + ds * DIM_STEP + 16), &hi[r],
                       &lo[r]);
        inf_avx512_transpose16(hi);
        inf_avx512_transpose16(lo);
        uint32_t *tile = g->qt + (size_t)ds * PIECE_TILES * TILE_WORDS;
        for (int i = 0; i < 16; i++) {
            _mm512_store_si512(tile + i * 16, hi[i]);
            _mm512_store_si512(tile + TILE_WORDS + i * 16, lo[i]);
        }
    }
    memset(g->ot, 0, (size_t)c->hd * ROWS * sizeof(float));
}

/* The key tile's nj keys (c->rows) as A tiles; keys up to the next 16
 * are zeros. Runs queued tile units in between. */
static void keys_prepare(amx_ctx *c, int nj) {
    const int n_sub = (nj + 15) / 16;
    for (int j = 0; j < n_sub * 16; j++) {
        const void *row = j < nj ? c->rows[j] : NULL;
        if (j % 4 == 0) jobs_run(c, 1);
        for (int ds = 0; ds < c->n_dstep; ds++) {
            __m512i hi, lo;
            row_pieces(f16_load(row, ds * DIM_STEP), f16_load(row, ds * DIM_STEP + 16), &hi, &lo);
            uint16_t *tile = c->kt + (size_t)(((j / 16) * c->n_dstep + ds) * PIECE_TILES) * (TILE_BYTES / 2);
            _mm512_store_si512(tile + (j % 16) * 32, hi);
            _mm512_store_si512(tile + TILE_BYTES / 2 + (j % 16) * 32, lo);
        }
    }
}

/* The key tile's nj values (c->rows) as V^T A tiles; keys up to the next
 * 32 are zeros. Runs queued tile units in between. */
static void values_prepare(amx_ctx *c, int nj) {
    const int n_ks = (nj + KEY_STEP - 1) / KEY_STEP;
    for (int db = 0; db < c->n_dblk; db++)
        for (int ks = 0; ks < n_ks; ks++) {
            jobs_run(c, 1);
            __m512i hi[16], lo[16]; /* [key pair][dim], then [dim][key pair] */
            for (int i = 0; i < 16; i++) {
                const int j = ks * KEY_STEP + 2 * i;
                __m512 re, ro;
                hi[i] = pair_round(f16_load(j < nj ? c->rows[j] : NULL, db * 16),
                                   f16_load(j + 1 < nj ? c->rows[j + 1] : NULL, db * 16), &re, &ro);
                lo[i] = pair_units(re, ro);
            }
            inf_avx512_transpose16(hi);
            inf_avx512_transpose16(lo);
            uint32_t *tile = c->vt + (size_t)((db * KEY_STEPS + ks) * PIECE_TILES) * TILE_WORDS;
            for (int d = 0; d < 16; d++) {
                _mm512_store_si512(tile + d * 16, hi[d]);
                _mm512_store_si512(tile + TILE_WORDS + d * 16, lo[d]);
            }
        }
}

/* ------------------------------------------------------------------ softmax */

/* The online softmax of the key tile at j0 for group g (its g->n_keys
 * keys), lane by lane: scale and mask the scores st, raise m (rescaling l
 * and O^T), add the weights to l and write them as the B tiles of P^T at
 * pt (keys up to the next 32 weigh 0). Runs queued tile units in between:
 * one per 4 keys of the max, one per pair of weights. */
static void softmax(amx_ctx *c, row_group *g, int j0, float *st, uint32_t *pt) {
    const int nj = g->n_keys;
    const __m512 scale = _mm512_set1_ps(c->sh->scale);
    const __m512i last = _mm512_load_si512(g->last);
    const bool mask = j0 + nj - 1 > g->last[0]; /* some row ends in this tile */
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < nj; j++) {
        if (j % 4 == 0) jobs_run(c, 1);
        __m512 s = _mm512_mul_ps(_mm512_load_ps(st + j * ROWS), scale);
        if (mask)
            s = _mm512_mask_mov_ps(s, _mm512_cmplt_epi32_mask(last, _mm512_set1_epi32(j0 + j)), _mm512_set1_ps(-INFINITY));
        _mm512_store_ps(st + j * ROWS, s);
        mx = _mm512_max_ps(mx, s);
    }
    __m512 m = _mm512_load_ps(g->m), l = _mm512_load_ps(g->l);
    const __mmask16 raised = _mm512_cmp_ps_mask(mx, m, _CMP_GT_OQ);
    if (raised) {
        const __m512 m_new = _mm512_mask_mov_ps(m, raised, mx);
        const __m512 corr = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), raised, exp_weight(_mm512_sub_ps(m, m_new)));
        l = _mm512_mul_ps(l, corr);
        for (int d = 0; d < c->hd; d++) {
            float *op = g->ot + (size_t)d * ROWS;
            _mm512_store_ps(op, _mm512_mul_ps(_mm512_load_ps(op), corr));
        }
        m = m_new;
    }
    const int n_pairs = (nj + KEY_STEP - 1) / KEY_STEP * (KEY_STEP / 2);
    for (int i = 0; i < n_pairs; i++) {
        jobs_run(c, 1);
        const int j = 2 * i;
        const __m512 pe = j < nj ? exp_weight(_mm512_sub_ps(_mm512_load_ps(st + j * ROWS), m)) : _mm512_setzero_ps();
        const __m512 po =
            j + 1 < nj ? exp_weight(_mm512_sub_ps(_mm512_load_ps(st + (j + 1) * ROWS), m)) : _mm512_setzero_ps();
        l = _mm512_add_ps(_mm512_add_ps(l, pe), po);
        __m512 re, ro;
        uint32_t *b = pt + (size_t)(i / 16) * PIECE_TILES * TILE_WORDS + (i % 16) * 16;
        _mm512_store_si512(b, pair_round(pe, po, &re, &ro));
        _mm512_store_si512(b + TILE_WORDS, pair_units(re, ro));
    }
    _mm512_store_ps(g->m, m);
    _mm512_store_ps(g->l, l);
}

/* ------------------------------------------------------------------ entry */

/* Row groups of a task of up to INF_AMX_ATTN_BLOCK tokens. */
static int max_groups(const inf_attn_shape *sh) {
    return (INF_AMX_ATTN_BLOCK * (sh->n_head / sh->n_head_kv) + ROWS - 1) / ROWS;
}

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Scratch bytes past the row_group structs: the key tile's operands, then
 * each group's. */
static size_t tile_bytes(int hd) {
    const size_t n_dstep = (size_t)hd / DIM_STEP, n_dblk = (size_t)hd / 16;
    return (SUBTILES * n_dstep + n_dblk * KEY_STEPS + 2 * KEY_STEPS) * PIECE_TILES * TILE_BYTES /* kt, vt, pt */
           + 2 * KEY_TILE * ROWS * sizeof(float);                                             /* st */
}
static size_t group_bytes(int hd) {
    return (size_t)hd / DIM_STEP * PIECE_TILES * TILE_BYTES + (size_t)hd * ROWS * sizeof(float); /* qt, ot */
}

static bool amx_takes(const inf_attn_shape *sh, const inf_kv_view *k) {
    return k->type == INF_KV_F16 && sh->head_dim % DIM_STEP == 0;
}

size_t inf_amx_attn_tmp_bytes(const inf_attn_shape *sh) {
    const size_t other = inf_avx512_attn_tmp_bytes(sh);
    if (sh->head_dim % DIM_STEP) return other;
    const size_t n_groups = (size_t)max_groups(sh);
    const size_t mine = 64 + round64(n_groups * sizeof(row_group)) + tile_bytes(sh->head_dim) +
                        n_groups * group_bytes(sh->head_dim);
    return INF_MAX(other, mine);
}

void inf_amx_attn_prefill(const inf_attn_shape *sh, const float *q, const inf_kv_view *k, const inf_kv_view *v,
                          float *out, int kvh, int t0, int t1, void *tmp) {
    if (!amx_takes(sh, k)) { /* V has K's type (cpu.c) */
        inf_avx512_attn_prefill(sh, q, k, v, out, kvh, t0, t1, tmp);
        return;
    }
    const int hd = sh->head_dim, group = sh->n_head / sh->n_head_kv;
    const int rows = (t1 - t0) * group, n_groups = (rows + ROWS - 1) / ROWS;
    amx_ctx c = {.sh = sh, .hd = hd, .group = group, .kvh = kvh, .t0 = t0, .n_dstep = hd / DIM_STEP,
                 .n_dblk = hd / 16};
    char *base = (char *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
    row_group *groups = (row_group *)base;
    char *p = base + round64((size_t)n_groups * sizeof(row_group));
    c.kt = (uint16_t *)p, p += (size_t)SUBTILES * c.n_dstep * PIECE_TILES * TILE_BYTES;
    c.vt = (uint32_t *)p, p += (size_t)c.n_dblk * KEY_STEPS * PIECE_TILES * TILE_BYTES;
    c.pt = (uint32_t *)p, p += 2 * KEY_STEPS * PIECE_TILES * TILE_BYTES;
    c.st = (float *)p, p += 2 * KEY_TILE * ROWS * sizeof(float);
    for (int i = 0; i < n_groups; i++) {
        row_group *g = &groups[i];
        g->row0 = i * ROWS;
        g->n_rows = INF_MIN(ROWS, rows - g->row0);
        g->qt = (uint32_t *)p, p += (size_t)c.n_dstep * PIECE_TILES * TILE_BYTES;
        g->ot = (float *)p, p += (size_t)hd * ROWS * sizeof(float);
        group_prepare(&c, q, g);
    }
    inf_amx_config cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) inf_amx_config_set(&cfg, t, 16, 64);
    _tile_loadconfig(&cfg);
    const size_t st_floats = KEY_TILE * ROWS, pt_words = KEY_STEPS * PIECE_TILES * TILE_WORDS;
    const int n_keys = sh->pos0 + t1; /* the last row's */
    for (int j0 = 0; j0 < n_keys; j0 += KEY_TILE) {
        const int nj = INF_MIN(KEY_TILE, n_keys - j0);
        /* the groups that see the tile: from `first` on, rows being in token order */
        int first = n_groups;
        for (int i = n_groups - 1; i >= 0; i--) {
            groups[i].n_keys = INF_MIN(nj, groups[i].last[ROWS - 1] + 1 - j0);
            if (groups[i].n_keys > 0) first = i;
        }
        inf_kv_rows(k, kvh, j0, nj, c.rows);
        keys_prepare(&c, nj); /* beside the previous tile's last accumulation */
        jobs_finish(&c);      /* it reads the value tiles */
        job_push(&c, (tile_job){.kind = JOB_SCORES, .g = &groups[first], .st = c.st,
                                .n = (groups[first].n_keys + 15) / 16});
        inf_kv_rows(v, kvh, j0, nj, c.rows);
        values_prepare(&c, nj);
        jobs_finish(&c);
        /* group i's softmax beside group i - 1's accumulation and group i + 1's scores */
        for (int i = first; i < n_groups; i++) {
            row_group *g = &groups[i];
            const int buf = (i - first) % 2;
            if (i + 1 < n_groups)
                job_push(&c, (tile_job){.kind = JOB_SCORES, .g = g + 1, .st = c.st + (size_t)(1 - buf) * st_floats,
                                        .n = (g[1].n_keys + 15) / 16});
            softmax(&c, g, j0, c.st + (size_t)buf * st_floats, c.pt + (size_t)buf * pt_words);
            jobs_finish(&c);
            job_push(&c, (tile_job){.kind = JOB_ACCUMULATE, .g = g, .pt = c.pt + (size_t)buf * pt_words,
                                    .n = (g->n_keys + KEY_STEP - 1) / KEY_STEP});
        }
    }
    jobs_finish(&c);
    _tile_release();
    /* out = O / l, each 16 x 16 block of O^T transposed */
    for (int i = 0; i < n_groups; i++) {
        const row_group *g = &groups[i];
        const __m512 l = _mm512_load_ps(g->l);
        const __m512 inv =
            _mm512_maskz_div_ps(_mm512_cmp_ps_mask(l, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(1.0f), l);
        for (int db = 0; db < c.n_dblk; db++) {
            __m512i blk[16]; /* [dim][row], then [row][dim] */
            for (int d = 0; d < 16; d++)
                blk[d] = _mm512_castps_si512(_mm512_mul_ps(_mm512_load_ps(g->ot + (size_t)(db * 16 + d) * ROWS), inv));
            inf_avx512_transpose16(blk);
            for (int r = 0; r < g->n_rows; r++) {
                const int row = g->row0 + r;
                const int t = t0 + row / group, h = kvh * group + row % group;
                _mm512_storeu_si512(out + ((size_t)t * sh->n_head + h) * hd + db * 16, blk[r]);
            }
        }
    }
}

/*
 * quant_amx.c — the prefill gemm of the GGUF super-block types (Q2_K ..
 * Q6_K, IQ4_XS) and of Q4_1 and Q5_1 on AMX int8 tiles, bit-identical to
 * ref.c and to the avx512 gemm (quant_avx512.c), which runs the products
 * of fewer tokens. (Q4_0, Q5_0 and IQ4_NL have Q8_0's dot and run its
 * tiles, matmul_amx.c.)
 *
 * Super-blocks:
 * ref.c sums, per super-block, (d_w * d_x) * isum - (dmin_w * d_x) * imin
 * in f32, where isum = Σ_k v_k x_k and imin = Σ_k m_k x_k are exact
 * integers over the 256 elements (v_k: the element's code times its
 * sub-block's scale, less the code offset; m_k: its sub-block's min; core/
 * quant.h). Only the f32 steps are per super-block, so the tiles can run
 * 64-deep products across the whole super-block, once the weights are
 * int8: v is not (|v| <= 4096), so the pack splits it as v = 64 hi + lo
 * with lo in 0..63 and hi in -64..64, and per super-block three 16 x 16
 * accumulators gather H = Σ hi x, L = Σ lo x and imin = Σ m x (four
 * TDPBSSD each). AVX-512 forms isum = 64 H + L (exact in int32) and does
 * ref.c's f32 steps lane by lane. The types without mins skip the third
 * product. Per super-block that is 8 or 12 tile products and one f32
 * scaling per (token, row): the Q8_0 tiles need 8 products and 8 scalings
 * for as many elements.
 *
 * Pack, per group of 16 rows and super-block: hi, lo (and m) planes, each
 * [64 quads][16 rows][4] int8 (the B tile of a 64-element step is 1 KiB
 * of it), then d and dmin [16] f32: 12.1 KiB with mins, 8.1 without; a
 * task of 64 rows x 3072 columns packs 582 KiB (the avx512 gemm 294).
 * The super-block types packed at load (x86_kernels.h) are unpacked from
 * their groups instead of the file's rows. Activations: the avx512 gemm's Q8_K rows
 * (inf_act_prepare_quant), A tile rows read straight from them.
 *
 * Q4_1, Q5_1 (x Q8_1): ref.c sums sum += (d_w * d_x) * (float)isum +
 * m_w * s_x per block of 32, isum = Σ u x over the weights' codes u (0..15,
 * 0..31) and the activations' int8 x. The f32 steps are per block, so as
 * for Q8_0 each block is one 32-deep tile product, stored and scaled by
 * AVX-512 in ref.c's operations. The avx512 gemm's pack and activations
 * serve as they are: the B tile is the pack's [8 quads][16 rows][4] codes,
 * the A tile the prepared rows' quants, which that gemm flips to x + 128
 * (unsigned), so TDPBUSD gathers Σ (x + 128) u and AVX-512 subtracts the
 * pack's 128 Σ u (exact in int32). (Starting the accumulator at -128 Σ u,
 * one row loaded with stride 0, gave the same bits 5% slower: the tile
 * unit is the busier side.) The tokens' d_x and s_x (f16 in the rows) are
 * widened to f32 once per token tile, for all blocks.
 * Weights packed at load are unpacked from their groups
 * (inf_avx512_unpack_q81_group: the same pack); below 12 tokens they run
 * avx512's gemm in place.
 * Pack: the avx512 gemm's, 704 B per group of 16 rows and block, then
 * [blocks][d_x 16, s_x 16] f32 of the current token tile: a task of 64
 * rows x 3072 columns packs 264 + 12 KiB (2944 B per 32 columns), however
 * many tokens.
 */
#include "backend/x86/vec_avx512.h"
#include "backend/x86/x86_kernels.h"
#include "backend/x86/amx_tiles.h"

#include "core/common.h"
#include "core/quant.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

enum {
    TILE = INF_AMX_TILE,
    KQ_PLANE = (INF_QK_K / 4) * TILE * 4, /* 4096: one int8 plane of a super-block and group */
    KQ_STEP = TILE * 64,                  /* bytes of a plane per 64-element step (a B tile) */
    /* From this many tokens the tiles run (Xeon, 2 threads, 64 x 1024 Q4_K:
     * see inf_amx_kquant_takes); below, the avx512 gemm, bit-identical. */
    KQ_MIN_TOKENS = 16,
    /* Q4_K and Q5_K packed at load: the avx512 tile reads them in place,
     * 4 tokens a pass, and wins below this many (Xeon, 1 thread, 16384 x
     * 4096 Q4_K: 16 tokens 6.7 vs 11.3 ms, 32 12.8 vs 15.2, 40 even, 64
     * 25.0 vs 23.0, 128 80 vs 53; Q5_K: 15 tokens 9.8 ms, 16 on the tiles
     * 12.5). Packed Q6_K's and IQ4_XS's tiles (VPMULLD per sum) lose from
     * 16 (Q6_K: 39 tokens 26.9 ms, 40 on the tiles 14.5). */
    KQ_PACKED_MIN_TOKENS = 40,
    /* Activation bytes per pass of the super-block gemm over a task's groups
     * (8B Q4_K_M, 4096 columns, prefill 511 on 2 threads: 256 KiB 62.9
     * tok/s, 512 63.2, 1024 60.5; all the tokens at once, 44.0). */
    KQ_CHUNK_BYTES = 512 * 1024,
    /* Q4_1, Q5_1: from this many tokens the tiles run (Xeon, 1 thread,
     * 64 x 1024 Q4_1: even with the avx512 gemm at 8, 1.2x at 12, 1.4x at
     * 16, 2x at 512); bit-identical below. */
    QM_MIN_TOKENS = 12,
};

static bool has_mins(inf_dtype type) {
    return type == INF_DTYPE_Q2_K || type == INF_DTYPE_Q4_K || type == INF_DTYPE_Q5_K;
}

static bool is_q81(inf_dtype type) { return type == INF_DTYPE_Q4_1 || type == INF_DTYPE_Q5_1; }

bool inf_amx_kquant_takes(inf_dtype type, int n, bool packed) {
    if (is_q81(type)) return n >= QM_MIN_TOKENS;
    const bool in_place = packed && (type == INF_DTYPE_Q4_K || type == INF_DTYPE_Q5_K);
    return n >= (in_place ? KQ_PACKED_MIN_TOKENS : KQ_MIN_TOKENS) && inf_dtype_is_quant(type) && inf_dtype_block_elems(type) == INF_QK_K;
}

static size_t block_bytes(inf_dtype type) { return (has_mins(type) ? 3 : 2) * (size_t)KQ_PLANE + 2 * 64; }

/* ------------------------------------------------------------------ packing */

/* Super-block b of rows [r, r + nr) into dst (block_bytes; missing rows
 * are zeros), from the file's rows or from the groups packed at load. */
static void pack_block(const inf_weight *w, int64_t r, int nr, int64_t b, char *dst) {
    const bool mins = has_mins(w->type);
    uint8_t quads[INF_QK_K / 4][64] __attribute__((aligned(64))); /* [quad][row][4] codes */
    int32_t scale[16][TILE] __attribute__((aligned(64))), coef[16][TILE] __attribute__((aligned(64))); /* [group][row] */
    float d[TILE], dmin[TILE];
    if (w->packed_format == INF_X86_PACKED_GROUPS) {
        const char *group = (const char *)w->packed + (size_t)(r / TILE) * inf_x86_packed_group_bytes(w->type, w->cols);
        inf_avx512_unpack_packed_kquant(w->type, group, w->cols / INF_QK_K, b, quads[0], scale[0], coef[0], d, dmin);
    } else {
        uint8_t codes[TILE][INF_QK_K] __attribute__((aligned(64)));
        const size_t wb = inf_dtype_block_bytes(w->type);
        for (int i = 0; i < TILE; i++) {
            if (i < nr) {
                inf_avx512_unpack_kquant(w->type, (const char *)w->data + (size_t)(r + i) * w->row_bytes + (size_t)b * wb,
                                         codes[i], scale[i], coef[i], &d[i], &dmin[i]);
            } else {
                memset(codes[i], 0, sizeof codes[i]);
                memset(scale[i], 0, sizeof scale[i]);
                memset(coef[i], 0, sizeof coef[i]);
                d[i] = dmin[i] = 0.0f;
            }
        }
        /* codes, scales and coefs to [.][row] order, 16 x 16 int32 at a time */
        __m512i v[TILE];
        for (int j = 0; j < INF_QK_K / 64; j++) {
            for (int i = 0; i < TILE; i++) v[i] = _mm512_load_si512(codes[i] + 64 * j);
            inf_avx512_transpose16(v);
            for (int c = 0; c < 16; c++) _mm512_store_si512(quads[16 * j + c], v[c]);
        }
        for (int t = 0; t < 2; t++) {
            int32_t(*m)[TILE] = t ? coef : scale;
            for (int i = 0; i < TILE; i++) v[i] = _mm512_load_si512(m[i]);
            inf_avx512_transpose16(v);
            for (int g = 0; g < 16; g++) _mm512_store_si512(m[g], v[g]);
        }
    }
    /* A quad vector's bytes widened by unpacklo (unpackhi) with zero: int16
     * lane j is row 4 (j / 8) + (j % 8) / 4 (plus 2); PACKSSWB of the two
     * halves puts the bytes back in row order. */
    static const uint16_t rows_lo[32] = {0, 0, 0, 0, 1, 1, 1, 1, 4, 4, 4, 4, 5, 5, 5, 5,
                                         8, 8, 8, 8, 9, 9, 9, 9, 12, 12, 12, 12, 13, 13, 13, 13};
    const __m512i idx_lo = _mm512_loadu_si512(rows_lo), idx_hi = _mm512_add_epi16(idx_lo, _mm512_set1_epi16(2));
    char *hi = dst, *lo = dst + KQ_PLANE, *mn = dst + 2 * KQ_PLANE;
    for (int g = 0; g < 16; g++) {
        const __m512i sc32 = _mm512_load_si512(scale[g]), cf32 = _mm512_load_si512(coef[g]);
        const __m512i sc = _mm512_castsi256_si512(_mm512_cvtepi32_epi16(sc32));
        const __m512i cf = _mm512_castsi256_si512(_mm512_cvtepi32_epi16(mins ? _mm512_setzero_si512() : cf32));
        const __m512i sc_lo = _mm512_permutexvar_epi16(idx_lo, sc), sc_hi = _mm512_permutexvar_epi16(idx_hi, sc);
        const __m512i cf_lo = _mm512_permutexvar_epi16(idx_lo, cf), cf_hi = _mm512_permutexvar_epi16(idx_hi, cf);
        const __m512i m4 = _mm512_mullo_epi32(cf32, _mm512_set1_epi32(0x01010101)); /* the min in each byte of its row */
        for (int c = 0; c < 4; c++) {
            const int q = 4 * g + c;
            const __m512i u = _mm512_load_si512(quads[q]), zero = _mm512_setzero_si512();
            /* v = scale * u - coef (no mins) or scale * u, exact in int16 */
            const __m512i v0 = _mm512_sub_epi16(_mm512_mullo_epi16(_mm512_unpacklo_epi8(u, zero), sc_lo), cf_lo);
            const __m512i v1 = _mm512_sub_epi16(_mm512_mullo_epi16(_mm512_unpackhi_epi8(u, zero), sc_hi), cf_hi);
            const __m512i m63 = _mm512_set1_epi16(63);
            /* hi in -64..64 and lo in 0..63: the packs never saturate */
            const __m512i h = _mm512_packs_epi16(_mm512_srai_epi16(v0, 6), _mm512_srai_epi16(v1, 6));
            const __m512i l = _mm512_packs_epi16(_mm512_and_si512(v0, m63), _mm512_and_si512(v1, m63));
            _mm512_store_si512(hi + q * 64, h);
            _mm512_store_si512(lo + q * 64, l);
            if (mins) _mm512_store_si512(mn + q * 64, m4);
        }
    }
    char *scales = dst + (mins ? 3 : 2) * KQ_PLANE;
    memcpy(scales, d, sizeof d);
    memcpy(scales + 64, dmin, sizeof dmin);
}

/* ------------------------------------------------------------------ tiles */

/* Accumulators H, L, M; activations A; weights BH, BL, BM. (Macros: the
 * tile intrinsics paste the number into the instruction text.) */
#define KQ_CH 0
#define KQ_CL 1
#define KQ_CM 2
#define KQ_A 3
#define KQ_BH 4
#define KQ_BL 5
#define KQ_BM 6

static void kq_config(void) {
    inf_amx_config c = {.palette = 1};
    inf_amx_config_set(&c, KQ_CH, TILE, 64);
    inf_amx_config_set(&c, KQ_CL, TILE, 64);
    inf_amx_config_set(&c, KQ_CM, TILE, 64);
    inf_amx_config_set(&c, KQ_A, TILE, 64);
    inf_amx_config_set(&c, KQ_BH, TILE, 64);
    inf_amx_config_set(&c, KQ_BL, TILE, 64);
    inf_amx_config_set(&c, KQ_BM, TILE, 64);
    _tile_loadconfig(&c);
}

/* y[t] (+)= (d * dx[t]) * (float)(64 H + L) - (dmin * dx[t]) * (float)M
 * for the tile's nt tokens, in ref.c's (and the avx512 gemm's) operations:
 * the sum over super-blocks lives in y, which starts at 0.0f (first) as
 * ref.c's sum does; M is zero without mins. */
INLINE void kq_scale(const int32_t *c, const bool MINS, const char *scales, const float *dx, int nt, bool first, float *y,
                     size_t y_stride, __mmask16 rows) {
    const __m512 d = _mm512_loadu_ps((const float *)scales), dmin = _mm512_loadu_ps((const float *)(scales + 64));
    const int32_t *h = c, *l = c + TILE * TILE, *m = c + 2 * TILE * TILE;
    _Pragma("GCC unroll 16")
    for (int t = 0; t < TILE; t++) {
        if (t >= nt) break;
        const __m512i is = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(h + t * TILE), 6),
                                            _mm512_load_si512(l + t * TILE));
        const __m512i im = MINS ? _mm512_load_si512(m + t * TILE) : _mm512_setzero_si512();
        const __m512 x = _mm512_set1_ps(dx[t]);
        const __m512 p = _mm512_mul_ps(_mm512_mul_ps(d, x), _mm512_cvtepi32_ps(is));
        const __m512 q = _mm512_mul_ps(_mm512_mul_ps(dmin, x), _mm512_cvtepi32_ps(im));
        float *yt = y + (size_t)t * y_stride;
        const __m512 sum = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, yt);
        _mm512_mask_storeu_ps(yt, rows, _mm512_add_ps(sum, _mm512_sub_ps(p, q)));
    }
}

/* Super-block b of one packed group (pb: its block) times every token:
 * the group's weights stay in L1 while the token tiles stream by (B
 * stationary: a tile's weights are 8 or 12 KiB, its activations 4). The
 * tile products of tile u are issued before tile u - 1 is scaled (from the
 * buffer its accumulators were stored to), so the vector units work while
 * the tile unit does. act: token 0's Q8_K row, rows `stride` apart; the
 * last, partial token tile reads `tail` (16 rows, zeros past n). */
INLINE void kq_block(const char *pb, const bool MINS, const char *act, size_t stride, const char *tail, int64_t b, int n,
                     float *y, size_t y_stride, __mmask16 rows) {
    int32_t c[2][3 * TILE * TILE] __attribute__((aligned(64)));
    float dx[2][TILE];
    const size_t xq = offsetof(inf_block_q8_K, qs), xd = offsetof(inf_block_q8_K, d);
    const size_t boff = (size_t)b * sizeof(inf_block_q8_K);
    const char *scales = pb + (MINS ? 3 : 2) * KQ_PLANE;
    const int n_tiles = (n + TILE - 1) / TILE;
    for (int u = 0; u <= n_tiles; u++) {
        const int cur = u & 1, prev = cur ^ 1;
        if (u < n_tiles) {
            const int nt = INF_MIN(TILE, n - u * TILE);
            const char *a = nt == TILE ? act + (size_t)u * TILE * stride : tail;
            const char *ab = a + boff + xq;
            _tile_zero(KQ_CH);
            _tile_zero(KQ_CL);
            if (MINS) _tile_zero(KQ_CM);
            _Pragma("GCC unroll 4")
            for (int s = 0; s < 4; s++) {
                _tile_loadd(KQ_A, ab + 64 * s, (long)stride);
                _tile_loadd(KQ_BH, pb + s * KQ_STEP, 64);
                _tile_dpbssd(KQ_CH, KQ_A, KQ_BH);
                _tile_loadd(KQ_BL, pb + KQ_PLANE + s * KQ_STEP, 64);
                _tile_dpbssd(KQ_CL, KQ_A, KQ_BL);
                if (MINS) {
                    _tile_loadd(KQ_BM, pb + 2 * KQ_PLANE + s * KQ_STEP, 64);
                    _tile_dpbssd(KQ_CM, KQ_A, KQ_BM);
                }
            }
            for (int t = 0; t < nt; t++) memcpy(&dx[cur][t], a + (size_t)t * stride + boff + xd, sizeof(float));
        }
        if (u >= 1) {
            const int t0 = (u - 1) * TILE;
            kq_scale(c[prev], MINS, scales, dx[prev], INF_MIN(TILE, n - t0), b == 0, y + (size_t)t0 * y_stride, y_stride,
                     rows);
        }
        if (u < n_tiles) {
            _tile_stored(KQ_CH, c[cur], 64);
            _tile_stored(KQ_CL, c[cur] + TILE * TILE, 64);
            if (MINS) _tile_stored(KQ_CM, c[cur] + 2 * TILE * TILE, 64);
        }
    }
}

static void kq_block_mins(const char *pb, const char *act, size_t stride, const char *tail, int64_t b, int n, float *y,
                          size_t y_stride, __mmask16 rows) {
    kq_block(pb, true, act, stride, tail, b, n, y, y_stride, rows);
}

static void kq_block_plain(const char *pb, const char *act, size_t stride, const char *tail, int64_t b, int n, float *y,
                           size_t y_stride, __mmask16 rows) {
    kq_block(pb, false, act, stride, tail, b, n, y, y_stride, rows);
}

/* The pack: the groups' blocks, then the padded last token tile (16 rows
 * of the activations, zeros past n). */
static size_t pack_groups_bytes(inf_dtype type, int64_t cols) {
    return (INF_X86_GEMM_ROWS / TILE) * (size_t)(cols / INF_QK_K) * block_bytes(type);
}

/* ------------------------------------------------------------------ Q4_1, Q5_1 */

/* The nt tokens' d_x and s_x of every block as f32, ds[b] = {d_x[16],
 * s_x[16]} (tokens past nt 0): the 4 bytes (d, s) of each token's block
 * gathered at once. act: the tile's first row. */
static void qm_token_scales(const char *act, size_t stride, int nt, int64_t nb, float *ds) {
    const __m512i at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32((int)stride));
    const __mmask16 live = (__mmask16)((1u << nt) - 1);
    for (int64_t b = 0; b < nb; b++) {
        const __m512i h = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, at,
                                                      act + (size_t)b * sizeof(inf_block_q8_1), 1);
        _mm512_storeu_ps(ds + 32 * b, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)));
        _mm512_storeu_ps(ds + 32 * b + 16, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16))));
    }
}

/* sum[t] += (float)isum[t] * (d_w * d_x[t]) + m_w * s_x[t] for 8 tokens,
 * isum = C - corr, as ref.c rounds it (and the avx512 gemm: the products
 * commute). Rows of C past the tile's tokens are never stored. */
INLINE void qm_scale_half(const int32_t *c, __m512i corr, __m512 dw, __m512 mw, const float *dx, const float *sx,
                          __m512 sum[8]) {
    _Pragma("GCC unroll 8")
    for (int t = 0; t < 8; t++) {
        const __m512i isum = _mm512_sub_epi32(_mm512_load_si512(c + t * TILE), corr);
        const __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(dx[t])));
        sum[t] = _mm512_add_ps(sum[t], _mm512_add_ps(p, _mm512_mul_ps(mw, _mm512_set1_ps(sx[t]))));
    }
}

/* One token tile (nt tokens; a: the first token's row) x one packed group
 * (16 rows), over all nb blocks, into y: two blocks a step, block j in
 * tile C(j % 2) and buffer c[j % 2], both products issued before either
 * is stored and scaled, so that the tile unit runs one while the vector
 * units scale the other and the next step's products are already queued.
 * (The Q8_0 loop of matmul_amx.c, which issues block j, stores j - 1 and
 * scales j - 2, measured the same here, within 1%.) */
static void qm_tile(const char *group, const char *a, size_t a_stride, const float *ds, int64_t nb, int nt, float *y,
                    size_t y_stride, __mmask16 rows) {
    int32_t c[2][TILE * TILE] __attribute__((aligned(64)));
    memset(c, 0, sizeof c); /* rows past nt: read, never written by the tile */
    __m512 lo[8], hi[8];    /* the sums of tokens 0-7 and 8-15 */
    _Pragma("GCC unroll 8")
    for (int t = 0; t < 8; t++) lo[t] = hi[t] = _mm512_setzero_ps();
    const size_t xq = offsetof(inf_block_q8_1, qs);
#define QM_PRODUCT(C, A, B, blk)                                                                   \
    do {                                                                                           \
        _tile_zero(C);                                                                             \
        _tile_loadd(A, a + (size_t)(blk) * sizeof(inf_block_q8_1) + xq, (long)a_stride);           \
        _tile_loadd(B, group + (blk) * INF_QB_BLOCK, 64);                                          \
        _tile_dpbusd(C, A, B);                                                                     \
    } while (0)
#define QM_SCALE(buf, blk)                                                                         \
    do {                                                                                           \
        const char *pb = group + (blk) * INF_QB_BLOCK;                                             \
        const __m512i corr = _mm512_load_si512(pb + INF_QB_CORR);                                  \
        const __m512 dw = _mm512_load_ps(pb + INF_QB_D), mw = _mm512_load_ps(pb + INF_QB_M);       \
        const float *dsb = ds + 32 * (blk);                                                        \
        qm_scale_half(buf, corr, dw, mw, dsb, dsb + 16, lo);                                       \
        qm_scale_half(buf + 8 * TILE, corr, dw, mw, dsb + 8, dsb + 24, hi);                        \
    } while (0)
    for (int64_t j = 0; j < nb; j += 2) {
        const bool two = j + 1 < nb;
        QM_PRODUCT(INF_AMX_B32_C0, INF_AMX_B32_A0, INF_AMX_B32_B0, j);
        if (two) QM_PRODUCT(INF_AMX_B32_C1, INF_AMX_B32_A1, INF_AMX_B32_B1, j + 1);
        _tile_stored(INF_AMX_B32_C0, c[0], 64);
        if (two) _tile_stored(INF_AMX_B32_C1, c[1], 64);
        QM_SCALE(c[0], j);
        if (two) QM_SCALE(c[1], j + 1);
    }
#undef QM_SCALE
#undef QM_PRODUCT
    inf_avx512_store_tile_sums(y, y_stride, rows, nt, lo, hi);
}

static size_t qm_pack_bytes(int64_t cols) {
    return inf_avx512_qgemm32_pack_bytes(cols) + (size_t)(cols / INF_QK) * 2 * TILE * sizeof(float);
}

/* Token tiles outer, the task's (at most 4) row groups inner: a tile's
 * activations and scales are read once per group from L1/L2, the groups'
 * pack (4 x 22 KiB per 1024 columns) stays in L2. */
static void q81_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                     void *pack) {
    const int64_t nb = w->cols / INF_QK;
    const size_t gbytes = (size_t)nb * INF_QB_BLOCK, stride = inf_act_row_bytes_quant(w->type, w->cols);
    const int n_groups = (int)((r1 - r0 + TILE - 1) / TILE);
    float *ds = (float *)((char *)pack + inf_avx512_qgemm32_pack_bytes(w->cols));
    inf_avx512_qgemm32_pack(w, r0, r1, pack);
    int configured = 0;
    for (int t0 = 0; t0 < a->n; t0 += TILE) {
        const int nt = INF_MIN(TILE, a->n - t0);
        const char *at = (const char *)a->data + (size_t)t0 * stride;
        qm_token_scales(at, stride, nt, nb, ds);
        if (nt != configured) inf_amx_config_b32(configured = nt);
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * TILE;
            qm_tile((const char *)pack + g * gbytes, at, stride, ds, nb, nt, y + (size_t)t0 * y_stride + (size_t)r,
                    y_stride, (__mmask16)((1u << INF_MIN(TILE, r1 - r)) - 1));
        }
    }
    _tile_release();
}

/* ------------------------------------------------------------------ entry */

size_t inf_amx_kquant_pack_bytes(inf_dtype type, int64_t cols) {
    if (is_q81(type)) return qm_pack_bytes(cols);
    return pack_groups_bytes(type, cols) + TILE * inf_act_row_bytes_quant(type, cols);
}

void inf_amx_kquant_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                         void *pack) {
    if (r1 - r0 > INF_X86_GEMM_ROWS) { /* packed at load: any range, a panel at a time */
        for (int64_t r = r0; r < r1; r += INF_X86_GEMM_ROWS)
            inf_amx_kquant_gemm(w, a, r, INF_MIN(r1, r + INF_X86_GEMM_ROWS), y, y_stride, pack);
        return;
    }
    if (is_q81(w->type)) {
        q81_gemm(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    const int64_t nb = w->cols / INF_QK_K;
    const size_t bbytes = block_bytes(w->type), gbytes = (size_t)nb * bbytes;
    const size_t stride = inf_act_row_bytes_quant(w->type, w->cols);
    const int n = a->n, n_groups = (int)((r1 - r0 + TILE - 1) / TILE);
    for (int g = 0; g < n_groups; g++) {
        const int64_t r = r0 + (int64_t)g * TILE;
        for (int64_t b = 0; b < nb; b++)
            pack_block(w, r, (int)INF_MIN(TILE, r1 - r), b, (char *)pack + g * gbytes + (size_t)b * bbytes);
    }
    char *tail = (char *)pack + pack_groups_bytes(w->type, w->cols);
    const int t_tail = n / TILE * TILE;
    memset(tail, 0, TILE * stride);
    memcpy(tail, (const char *)a->data + (size_t)t_tail * stride, (size_t)(n - t_tail) * stride);
    kq_config();
    const bool mins = has_mins(w->type);
    /* tokens in chunks whose activations stay in L2 while the groups pass */
    const int chunk = (int)INF_MAX(TILE, KQ_CHUNK_BYTES / stride / TILE * TILE);
    for (int t0 = 0; t0 < n; t0 += chunk) {
        const int nc = INF_MIN(chunk, n - t0);
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * TILE;
            const __mmask16 rows = (__mmask16)((1u << INF_MIN(TILE, r1 - r)) - 1);
            for (int64_t b = 0; b < nb; b++)
                (mins ? kq_block_mins : kq_block_plain)((const char *)pack + g * gbytes + (size_t)b * bbytes,
                                                        (const char *)a->data + (size_t)t0 * stride, stride, tail, b, nc,
                                                        y + (size_t)t0 * y_stride + r, y_stride, rows);
        }
    }
    _tile_release();
}

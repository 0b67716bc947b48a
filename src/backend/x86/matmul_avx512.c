/*
 * matmul_avx512.c — y[t][r] = x[t] · W[r] with AVX-512: VNNI integer dots
 * for Q8_0, VDPBF16PS for BF16, F16C conversion + FMA for F16, FMA for F32.
 *
 * Activations are rounded once per matmul (act_prepare) exactly as ref.c
 * rounds them. Then:
 *   - matvec (decode, few tokens) streams each weight row once and dots it
 *     with up to MV_TOKENS activation rows, lanes running along the row;
 *   - gemm (prefill) packs a panel of up to INF_X86_GEMM_ROWS weight rows
 *     into 16-row groups laid out k-major ([k][16 rows]), packs each tile of
 *     GEMM_TOKENS activation rows the same way, and runs a register tile of
 *     16 rows (one vector, lane = row) x GEMM_TOKENS tokens, so every
 *     vector op is a full-width multiply-add and every lane is one output.
 *
 * VPDPBUSD multiplies unsigned by signed bytes. Weights are signed, so they
 * enter with the top bit flipped (w ^ 0x80 = w + 128 as unsigned):
 * Σ (w + 128) x = Σ w x + 128 Σ x, and the accumulator starts at -128 Σ x
 * (precomputed per activation block), which leaves the exact Σ w x.
 *
 * Numerics (see kernels.h): the Q8_0 gemm is bit-identical to ref.c (exact
 * integer block dots, then sum += (float)dot * (d_w * d_x) block by block);
 * the Q8_0 matvec scales lanes of partial dots and sums them in another
 * order; F32/F16/BF16 sum exact products in f32 lanes.
 */
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"

#include <immintrin.h>
#include <string.h>

enum {
    MV_TOKENS = 4,   /* activation rows per pass of matvec */
    GEMM_TOKENS = 8, /* tokens of the gemm register tile */
    GROUP = 16,      /* weight rows per packed group: one vector of lanes */
    QK = INF_Q8_0_BLOCK,
};

/* ------------------------------------------------------------------ activations */

/* Q8_0 activation row, per block b of nb:
 *   q     [nb][32]  int8 quants (inf_quantize_row_q8_0)
 *   negc  [nb][8]   int32 -128 * (sum of each 4 consecutive quants): VNNI bias
 *   dxv   [nb][8]   f32 the block scale, 8 copies (a vector of two blocks)
 *   dx    [nb]      f32 the block scale (its f16 value)
 *   corr  [nb]      int32 -128 * (sum of the block's quants) */
typedef struct q8_act {
    const int8_t *q;
    const int32_t *negc;
    const float *dxv;
    const float *dx;
    const int32_t *corr;
} q8_act;

static q8_act q8_act_at(const void *row, int64_t nb) {
    const char *p = row;
    return (q8_act){
        .q = (const int8_t *)p,
        .negc = (const int32_t *)(p + nb * 32),
        .dxv = (const float *)(p + nb * 64),
        .dx = (const float *)(p + nb * 96),
        .corr = (const int32_t *)(p + nb * 100),
    };
}

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t inf_avx512_act_row_bytes(inf_dtype type, int64_t cols) {
    switch (type) {
    case INF_DTYPE_Q8_0: return round64((size_t)(cols / QK) * 104);
    case INF_DTYPE_BF16: return round64((size_t)cols * 2);
    case INF_DTYPE_F16:
    case INF_DTYPE_F32: return round64((size_t)cols * 4);
    }
    return 0;
}

static void q8_prepare(const float *x, int64_t cols, void *row) {
    const int64_t nb = cols / QK;
    char *p = row;
    int8_t *q = (int8_t *)p;
    int32_t *negc = (int32_t *)(p + nb * 32);
    float *dxv = (float *)(p + nb * 64), *dx = (float *)(p + nb * 96);
    int32_t *corr = (int32_t *)(p + nb * 100);
    const __m256i ones_u8 = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        const __m512 v0 = _mm512_loadu_ps(x + b * QK), v1 = _mm512_loadu_ps(x + b * QK + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const float dq = inf_f16_to_f32(inf_f32_to_f16(d));
        const __m512 vid = _mm512_set1_ps(id);
        /* x * id rounded to nearest even (the default MXCSR mode), as nearbyintf */
        const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)));
        const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, vid)));
        const __m256i qv = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
        _mm256_storeu_si256((__m256i *)(q + b * QK), qv);
        const __m256i bias = _mm256_sub_epi32(_mm256_setzero_si256(),
                                              _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones_u8, qv));
        _mm256_storeu_si256((__m256i *)(negc + b * 8), bias);
        _mm256_storeu_ps(dxv + b * 8, _mm256_set1_ps(dq));
        dx[b] = dq;
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(bias), _mm256_extracti128_si256(bias, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
        corr[b] = _mm_cvtsi128_si32(s);
    }
}

/* f32 -> bf16 round to nearest even, NaN kept quiet: inf_f32_to_bf16 on 16 lanes. */
static __m256i bf16_from_f32(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(64));
    return _mm512_cvtepi32_epi16(r);
}

void inf_avx512_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row) {
    const size_t bytes = inf_avx512_act_row_bytes(type, cols);
    int64_t i = 0;
    switch (type) {
    case INF_DTYPE_Q8_0: q8_prepare(x, cols, row); break;
    case INF_DTYPE_BF16: {
        uint16_t *xb = row;
        for (; i + 16 <= cols; i += 16) _mm256_store_si256((__m256i *)(xb + i), bf16_from_f32(_mm512_loadu_ps(x + i)));
        for (; i < cols; i++) xb[i] = inf_f32_to_bf16(x[i]);
        memset(xb + cols, 0, bytes - (size_t)cols * 2); /* zero padding: the kernels read it */
        break;
    }
    case INF_DTYPE_F16: {
        float *xf = row; /* the f16-rounded values, as f32 */
        for (; i + 16 <= cols; i += 16)
            _mm512_store_ps(xf + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
        for (; i < cols; i++) xf[i] = inf_f16_to_f32(inf_f32_to_f16(x[i]));
        memset(xf + cols, 0, bytes - (size_t)cols * 4);
        break;
    }
    case INF_DTYPE_F32:
        memcpy(row, x, (size_t)cols * 4);
        memset((float *)row + cols, 0, bytes - (size_t)cols * 4);
        break;
    }
}

/* ------------------------------------------------------------------ matvec */

static __mmask16 tail_mask(int64_t n) { return (__mmask16)((1u << n) - 1); }

/* Q8_0: two blocks per vector (lanes 0-7 block b, 8-15 block b+1); each
 * lane's partial integer dot is scaled by d_w * d_x and accumulated. */
static void q8_matvec(const inf_weight *w, const inf_act *a, int t0, int nt, int64_t r0, int64_t r1,
                      float *y, size_t y_stride) {
    const int64_t nb = w->cols / QK;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    q8_act xa[MV_TOKENS];
    for (int t = 0; t < nt; t++) xa[t] = q8_act_at((const char *)a->data + (size_t)(t0 + t) * a->stride, nb);
    for (int64_t r = r0; r < r1; r++) {
        const inf_block_q8_0 *wr = (const inf_block_q8_0 *)((const char *)w->data + (size_t)r * w->row_bytes);
        __m512 acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            const int par = (int)(b >> 1) & 1;
            const __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)wr[b].q)),
                                                  _mm256_loadu_si256((const __m256i *)wr[b + 1].q), 1);
            const __m512i wu = _mm512_xor_si512(wq, flip);
            const __m256i dh = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)wr[b].d)),
                                                       _mm_set1_epi16((short)wr[b + 1].d), 1);
            const __m512 dw = _mm512_cvtph_ps(dh);
            for (int t = 0; t < nt; t++) {
                const __m512i d = _mm512_dpbusd_epi32(_mm512_loadu_si512(xa[t].negc + b * 8), wu,
                                                      _mm512_loadu_si512(xa[t].q + b * QK));
                const __m512 s = _mm512_mul_ps(dw, _mm512_loadu_ps(xa[t].dxv + b * 8));
                acc[t][par] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc[t][par]);
            }
        }
        for (int t = 0; t < nt; t++) {
            float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
            if (b < nb) { /* odd block count: the last block alone */
                const __m256i wu = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)wr[b].q), _mm512_castsi512_si256(flip));
                const __m256i d = _mm256_dpbusd_epi32(_mm256_loadu_si256((const __m256i *)(xa[t].negc + b * 8)), wu,
                                                      _mm256_loadu_si256((const __m256i *)(xa[t].q + b * QK)));
                const __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(inf_f16_to_f32(wr[b].d) * xa[t].dx[b]));
                __m128 h = _mm_add_ps(_mm256_castps256_ps128(p), _mm256_extractf128_ps(p, 1));
                h = _mm_add_ps(h, _mm_movehl_ps(h, h));
                h = _mm_add_ss(h, _mm_movehdup_ps(h));
                sum += _mm_cvtss_f32(h);
            }
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = sum;
        }
    }
}

/* BF16: VDPBF16PS over 32 weights per vector, two accumulators per token. */
static void bf16_matvec(const inf_weight *w, const inf_act *a, int t0, int nt, int64_t r0, int64_t r1,
                        float *y, size_t y_stride) {
    const int64_t cols = w->cols;
    const uint16_t *xa[MV_TOKENS];
    for (int t = 0; t < nt; t++) xa[t] = (const uint16_t *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const uint16_t *wr = (const uint16_t *)((const char *)w->data + (size_t)r * w->row_bytes);
        __m512 acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
        int64_t k = 0;
        for (; k + 32 <= cols; k += 32) {
            const int par = (int)(k >> 5) & 1;
            const __m512bh wv = (__m512bh)_mm512_loadu_si512(wr + k);
            for (int t = 0; t < nt; t++)
                acc[t][par] = _mm512_dpbf16_ps(acc[t][par], wv, (__m512bh)_mm512_load_si512(xa[t] + k));
        }
        if (k < cols) { /* the activation row is zero-padded to 32 elements */
            const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16((__mmask32)((1ull << (cols - k)) - 1), wr + k);
            for (int t = 0; t < nt; t++)
                acc[t][0] = _mm512_dpbf16_ps(acc[t][0], wv, (__m512bh)_mm512_load_si512(xa[t] + k));
        }
        for (int t = 0; t < nt; t++)
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
    }
}

/* F16 (weights widened by F16C) and F32: 16 weights per vector, FMA. */
static void f_matvec(const inf_weight *w, const inf_act *a, int t0, int nt, int64_t r0, int64_t r1,
                     float *y, size_t y_stride) {
    const int64_t cols = w->cols;
    const bool half = w->type == INF_DTYPE_F16;
    const float *xa[MV_TOKENS];
    for (int t = 0; t < nt; t++) xa[t] = (const float *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        __m512 acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
        for (int64_t k = 0; k < cols; k += 16) {
            const int par = (int)(k >> 4) & 1;
            const __mmask16 m = cols - k >= 16 ? 0xffff : tail_mask(cols - k);
            const __m512 wv = half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)wr + k))
                                   : _mm512_maskz_loadu_ps(m, (const float *)wr + k);
            for (int t = 0; t < nt; t++) acc[t][par] = _mm512_fmadd_ps(wv, _mm512_load_ps(xa[t] + k), acc[t][par]);
        }
        for (int t = 0; t < nt; t++)
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
    }
}

void inf_avx512_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) {
        const int nt = INF_MIN(MV_TOKENS, a->n - t0);
        switch (w->type) {
        case INF_DTYPE_Q8_0: q8_matvec(w, a, t0, nt, r0, r1, y, y_stride); break;
        case INF_DTYPE_BF16: bf16_matvec(w, a, t0, nt, r0, r1, y, y_stride); break;
        case INF_DTYPE_F16:
        case INF_DTYPE_F32: f_matvec(w, a, t0, nt, r0, r1, y, y_stride); break;
        }
    }
}

/* ------------------------------------------------------------------ gemm: packing */

/* Packed layouts, per group of 16 weight rows (missing rows are zeros):
 *   Q8_0: per block, [8 quads][16 rows][4] unsigned quants (w ^ 0x80),
 *         then [16] f32 scales: Q8_GROUP_BLOCK bytes per block.
 *   BF16: [cols/2 pairs][16 rows][2] bf16 (an odd last column padded).
 *   F16, F32: [cols][16 rows] f32.
 * and per tile of GEMM_TOKENS activation rows:
 *   Q8_0: per block, [8 quads][GEMM_TOKENS] int32 (4 quants), then
 *         [GEMM_TOKENS] int32 corr and [GEMM_TOKENS] f32 scales.
 *   BF16: [pairs][GEMM_TOKENS] int32 (2 bf16).  F16, F32: [cols][GEMM_TOKENS] f32. */
enum {
    Q8_GROUP_BLOCK = 8 * GROUP * 4 + GROUP * 4,                 /* 576 */
    Q8_TILE_BLOCK = 8 * GEMM_TOKENS * 4 + 2 * GEMM_TOKENS * 4,  /* 320 */
};

static int64_t pairs_of(int64_t cols) { return (cols + 1) / 2; }

static size_t group_bytes(inf_dtype type, int64_t cols) {
    switch (type) {
    case INF_DTYPE_Q8_0: return (size_t)(cols / QK) * Q8_GROUP_BLOCK;
    case INF_DTYPE_BF16: return (size_t)pairs_of(cols) * GROUP * 4;
    default: return (size_t)cols * GROUP * 4;
    }
}

static size_t tile_bytes(inf_dtype type, int64_t cols) {
    switch (type) {
    case INF_DTYPE_Q8_0: return (size_t)(cols / QK) * Q8_TILE_BLOCK;
    case INF_DTYPE_BF16: return (size_t)pairs_of(cols) * GEMM_TOKENS * 4;
    default: return (size_t)cols * GEMM_TOKENS * 4;
    }
}

size_t inf_avx512_gemm_pack_bytes(inf_dtype type, int64_t cols) {
    return (INF_X86_GEMM_ROWS / GROUP) * round64(group_bytes(type, cols)) + round64(tile_bytes(type, cols));
}

/* Byte offsets of 16 rows from row 0 (rows >= nr masked off). */
static __m512i row_offsets(size_t row_bytes) {
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32((int)row_bytes));
}

/* Packs rows [r, r + nr), nr <= 16, into one group. Row offsets fit in
 * int32: 16 rows of at most 2^19 columns. */
static void pack_group(const inf_weight *w, int64_t r, int nr, void *dst) {
    const char *base = (const char *)w->data + (size_t)r * w->row_bytes;
    const __mmask16 m = tail_mask(nr);
    const __m512i offs = row_offsets(w->row_bytes);
    switch (w->type) {
    case INF_DTYPE_Q8_0: {
        const int64_t nb = w->cols / QK;
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        for (int64_t b = 0; b < nb; b++) {
            char *pb = (char *)dst + b * Q8_GROUP_BLOCK;
            const char *blk = base + b * (int64_t)sizeof(inf_block_q8_0);
            for (int quad = 0; quad < 8; quad++) {
                const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, blk + 2 + quad * 4, 1);
                _mm512_store_si512(pb + quad * 64, _mm512_xor_si512(v, flip));
            }
            const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, blk, 1);
            _mm512_store_ps(pb + 512, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d)));
        }
        break;
    }
    case INF_DTYPE_BF16: {
        const int64_t np = pairs_of(w->cols);
        int32_t *p = dst;
        for (int64_t k = 0; k < w->cols / 2; k++)
            _mm512_store_si512(p + k * GROUP, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, base + k * 4, 1));
        if (np * 2 != w->cols) { /* odd: the last column alone, high half zero */
            const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, base + (np - 1) * 4 - 2, 1);
            _mm512_store_si512(p + (np - 1) * GROUP, _mm512_srli_epi32(v, 16));
        }
        break;
    }
    case INF_DTYPE_F16: {
        float *p = dst;
        for (int64_t k = 0; k < w->cols; k++) {
            /* gather 32 bits ending at column k (column 0: starting at it) */
            const int64_t at = k == 0 ? 0 : k * 2 - 2;
            __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, base + at, 1);
            v = k == 0 ? _mm512_and_si512(v, _mm512_set1_epi32(0xffff)) : _mm512_srli_epi32(v, 16);
            _mm512_store_ps(p + k * GROUP, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v)));
        }
        break;
    }
    case INF_DTYPE_F32: {
        float *p = dst;
        for (int64_t k = 0; k < w->cols; k++)
            _mm512_store_ps(p + k * GROUP, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, offs, base + k * 4, 1));
        break;
    }
    }
}

/* Packs activation rows [t0, t0 + nt), nt <= GEMM_TOKENS, into one tile
 * (missing tokens are zeros). */
static void pack_tile(inf_dtype type, int64_t cols, const inf_act *a, int t0, int nt, void *dst) {
    memset(dst, 0, tile_bytes(type, cols));
    switch (type) {
    case INF_DTYPE_Q8_0: {
        const int64_t nb = cols / QK;
        for (int t = 0; t < nt; t++) {
            const q8_act xa = q8_act_at((const char *)a->data + (size_t)(t0 + t) * a->stride, nb);
            for (int64_t b = 0; b < nb; b++) {
                char *pb = (char *)dst + b * Q8_TILE_BLOCK;
                int32_t *quads = (int32_t *)pb;
                for (int quad = 0; quad < 8; quad++) memcpy(&quads[quad * GEMM_TOKENS + t], xa.q + b * QK + quad * 4, 4);
                ((int32_t *)(pb + 8 * GEMM_TOKENS * 4))[t] = xa.corr[b];
                ((float *)(pb + 9 * GEMM_TOKENS * 4))[t] = xa.dx[b];
            }
        }
        break;
    }
    case INF_DTYPE_BF16: {
        const int64_t np = pairs_of(cols);
        int32_t *p = dst;
        for (int t = 0; t < nt; t++) {
            const int32_t *x = (const int32_t *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
            for (int64_t k = 0; k < np; k++) p[k * GEMM_TOKENS + t] = x[k]; /* zero-padded row */
        }
        break;
    }
    default: {
        float *p = dst;
        for (int t = 0; t < nt; t++) {
            const float *x = (const float *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
            for (int64_t k = 0; k < cols; k++) p[k * GEMM_TOKENS + t] = x[k];
        }
        break;
    }
    }
}

/* ------------------------------------------------------------------ gemm: register tiles */

/* 16 rows x NT tokens of Q8_0, in ref.c's order: per block the exact
 * integer dot (VNNI, started at the bias correction), then
 * sum += (float)dot * (d_w * d_x). */
static inline __attribute__((always_inline)) void q8_tile(const char *group, const char *tile, int64_t nb,
                                                         const int NT, float *y, size_t y_stride, __mmask16 rows) {
    __m512 sum[GEMM_TOKENS];
    for (int t = 0; t < NT; t++) sum[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *gb = group + b * Q8_GROUP_BLOCK;
        const char *tb = tile + b * Q8_TILE_BLOCK;
        const int32_t *quads = (const int32_t *)tb;
        const int32_t *corr = (const int32_t *)(tb + 8 * GEMM_TOKENS * 4);
        const float *dx = (const float *)(tb + 9 * GEMM_TOKENS * 4);
        __m512i acc[GEMM_TOKENS];
        for (int t = 0; t < NT; t++) acc[t] = _mm512_set1_epi32(corr[t]);
        for (int quad = 0; quad < 8; quad++) {
            const __m512i wv = _mm512_load_si512(gb + quad * 64);
            for (int t = 0; t < NT; t++)
                acc[t] = _mm512_dpbusd_epi32(acc[t], wv, _mm512_set1_epi32(quads[quad * GEMM_TOKENS + t]));
        }
        const __m512 dw = _mm512_load_ps(gb + 512);
        for (int t = 0; t < NT; t++) {
            const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(dx[t]));
            sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_cvtepi32_ps(acc[t]), s));
        }
    }
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, sum[t]);
}

/* 16 rows x NT tokens of BF16: one VDPBF16PS per column pair and token. */
static inline __attribute__((always_inline)) void bf16_tile(const char *group, const char *tile, int64_t np,
                                                           const int NT, float *y, size_t y_stride, __mmask16 rows) {
    __m512 acc[GEMM_TOKENS];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    const int32_t *x = (const int32_t *)tile;
    for (int64_t k = 0; k < np; k++) {
        const __m512bh wv = (__m512bh)_mm512_load_si512(group + k * 64);
        for (int t = 0; t < NT; t++)
            acc[t] = _mm512_dpbf16_ps(acc[t], wv, (__m512bh)_mm512_set1_epi32(x[k * GEMM_TOKENS + t]));
    }
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, acc[t]);
}

/* 16 rows x NT tokens of f32 (F16 weights were widened when packed). */
static inline __attribute__((always_inline)) void f32_tile(const char *group, const char *tile, int64_t cols,
                                                          const int NT, float *y, size_t y_stride, __mmask16 rows) {
    __m512 acc[GEMM_TOKENS];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    const float *x = (const float *)tile;
    for (int64_t k = 0; k < cols; k++) {
        const __m512 wv = _mm512_load_ps(group + k * 64);
        for (int t = 0; t < NT; t++) acc[t] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[k * GEMM_TOKENS + t]), acc[t]);
    }
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, acc[t]);
}

/* One tile with a compile-time token count (so the accumulators stay in registers). */
#define TILE_CASES(fn, ...)                 \
    switch (nt) {                            \
    case 1: fn(__VA_ARGS__, 1, y, ys, rows); break; \
    case 2: fn(__VA_ARGS__, 2, y, ys, rows); break; \
    case 3: fn(__VA_ARGS__, 3, y, ys, rows); break; \
    case 4: fn(__VA_ARGS__, 4, y, ys, rows); break; \
    case 5: fn(__VA_ARGS__, 5, y, ys, rows); break; \
    case 6: fn(__VA_ARGS__, 6, y, ys, rows); break; \
    case 7: fn(__VA_ARGS__, 7, y, ys, rows); break; \
    default: fn(__VA_ARGS__, 8, y, ys, rows); break; \
    }

static void run_tile(inf_dtype type, const char *group, const char *tile, int64_t cols, int nt, float *y,
                     size_t ys, __mmask16 rows) {
    switch (type) {
    case INF_DTYPE_Q8_0: TILE_CASES(q8_tile, group, tile, cols / QK) break;
    case INF_DTYPE_BF16: TILE_CASES(bf16_tile, group, tile, pairs_of(cols)) break;
    default: TILE_CASES(f32_tile, group, tile, cols) break;
    }
}

_Static_assert(GEMM_TOKENS == 8, "TILE_CASES spells out token counts 1..8");

void inf_avx512_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                     void *pack) {
    const size_t gbytes = round64(group_bytes(w->type, w->cols));
    const int n_groups = (int)((r1 - r0 + GROUP - 1) / GROUP);
    char *tile = (char *)pack + (size_t)(INF_X86_GEMM_ROWS / GROUP) * gbytes;
    for (int g = 0; g < n_groups; g++)
        pack_group(w, r0 + (int64_t)g * GROUP, (int)INF_MIN(GROUP, r1 - r0 - g * GROUP), (char *)pack + g * gbytes);
    for (int t0 = 0; t0 < a->n; t0 += GEMM_TOKENS) {
        const int nt = INF_MIN(GEMM_TOKENS, a->n - t0);
        pack_tile(w->type, w->cols, a, t0, nt, tile);
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * GROUP;
            run_tile(w->type, (const char *)pack + g * gbytes, tile, w->cols, nt, y + (size_t)t0 * y_stride + (size_t)r,
                     y_stride, tail_mask(INF_MIN(GROUP, r1 - r)));
        }
    }
}

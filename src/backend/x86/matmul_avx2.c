/*
 * matmul_avx2.c — matrix-vector products with AVX2 + FMA + F16C, for CPUs
 * without AVX-512. Each weight row is streamed once and dotted with up to
 * MV_TOKENS activation rows; every token count goes through here (the
 * AVX2 table has no gemm).
 *
 * Q8_0: AVX2 has no VNNI; VPMADDUBSW multiplies unsigned by signed bytes
 * into pairwise int16 sums, so the block dot is |w| times x with w's sign
 * moved onto x (VPSIGNB): |w| <= 128 and |x| <= 127 keep each pair sum
 * within int16 (2 * 128 * 127 = 32512), and VPMADDWD widens exactly. Each
 * block's 8 integer lanes are scaled by d_w * d_x and accumulated in f32.
 * BF16 and F16: both operands widened to f32 (exact), FMA. Summation order
 * differs from ref.c (f32 lanes instead of a double): see kernels.h.
 */
#include "backend/x86/vec_avx2.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"

#include <string.h>

enum { MV_TOKENS = 4, QK = INF_Q8_0_BLOCK };

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Q8_0 activation row: quants [nb][32] int8, then scales [nb] f32 (the f16 value).
 * BF16 and F16 rows hold the rounded values as f32; F32 rows a copy. */
size_t inf_avx2_act_row_bytes(inf_dtype type, int64_t cols) {
    if (type == INF_DTYPE_Q8_0) return round64((size_t)(cols / QK) * (QK + 4));
    return (size_t)cols * 4;
}

void inf_avx2_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row) {
    float *xf = row;
    int64_t i = 0;
    switch (type) {
    case INF_DTYPE_Q8_0: {
        const int64_t nb = cols / QK;
        inf_block_q8_0 blk;
        for (int64_t b = 0; b < nb; b++) {
            inf_quantize_row_q8_0(x + b * QK, &blk, QK);
            memcpy((int8_t *)row + b * QK, blk.q, QK);
            ((float *)((char *)row + nb * QK))[b] = inf_f16_to_f32(blk.d);
        }
        return;
    }
    case INF_DTYPE_BF16:
        for (; i < cols; i++) xf[i] = inf_bf16_to_f32(inf_f32_to_bf16(x[i]));
        return;
    case INF_DTYPE_F16:
        for (; i + 8 <= cols; i += 8)
            _mm256_storeu_ps(xf + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
        for (; i < cols; i++) xf[i] = inf_f16_to_f32(inf_f32_to_f16(x[i]));
        return;
    case INF_DTYPE_F32: memcpy(row, x, (size_t)cols * 4); return;
    }
}

/* The exact integer dot of one Q8_0 weight block with one activation block, in 8 int32 lanes. */
static __m256i q8_dot(__m256i w, const int8_t *x) {
    const __m256i xs = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)x), w);
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), xs);
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

static void q8_matvec(const inf_weight *w, const inf_act *a, int t0, int nt, int64_t r0, int64_t r1,
                      float *y, size_t y_stride) {
    const int64_t nb = w->cols / QK;
    const int8_t *xq[MV_TOKENS];
    const float *dx[MV_TOKENS];
    for (int t = 0; t < nt; t++) {
        xq[t] = (const int8_t *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
        dx[t] = (const float *)(xq[t] + nb * QK);
    }
    for (int64_t r = r0; r < r1; r++) {
        const inf_block_q8_0 *wr = (const inf_block_q8_0 *)((const char *)w->data + (size_t)r * w->row_bytes);
        __m256 acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const __m256i wq = _mm256_loadu_si256((const __m256i *)wr[b].q);
            const float dw = inf_f16_to_f32(wr[b].d);
            for (int t = 0; t < nt; t++) {
                const __m256 d = _mm256_cvtepi32_ps(q8_dot(wq, xq[t] + b * QK));
                acc[t][b & 1] = _mm256_fmadd_ps(d, _mm256_set1_ps(dw * dx[t][b]), acc[t][b & 1]);
            }
        }
        for (int t = 0; t < nt; t++)
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = hsum_avx2(_mm256_add_ps(acc[t][0], acc[t][1]));
    }
}

/* 8 weights of a row from element k, widened to f32. */
static __m256 load_w8(inf_dtype type, const void *row, int64_t k) {
    switch (type) {
    case INF_DTYPE_BF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + k))), 16));
    case INF_DTYPE_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + k)));
    default: return _mm256_loadu_ps((const float *)row + k);
    }
}

static float load_w1(inf_dtype type, const void *row, int64_t k) {
    switch (type) {
    case INF_DTYPE_BF16: return inf_bf16_to_f32(((const uint16_t *)row)[k]);
    case INF_DTYPE_F16: return inf_f16_to_f32(((const uint16_t *)row)[k]);
    default: return ((const float *)row)[k];
    }
}

/* F32, F16, BF16: exact f32 products, FMA into two accumulators per token;
 * the columns past the last multiple of 8 are added one by one. */
static void f_matvec(const inf_weight *w, const inf_act *a, int t0, int nt, int64_t r0, int64_t r1, float *y,
                     size_t y_stride) {
    const int64_t cols = w->cols, body = cols & ~(int64_t)7;
    const float *xa[MV_TOKENS];
    for (int t = 0; t < nt; t++) xa[t] = (const float *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const void *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        __m256 acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
        for (int64_t k = 0; k < body; k += 8) {
            const __m256 wv = load_w8(w->type, wr, k);
            for (int t = 0; t < nt; t++)
                acc[t][(k >> 3) & 1] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xa[t] + k), acc[t][(k >> 3) & 1]);
        }
        for (int t = 0; t < nt; t++) {
            float sum = hsum_avx2(_mm256_add_ps(acc[t][0], acc[t][1]));
            for (int64_t k = body; k < cols; k++) sum += load_w1(w->type, wr, k) * xa[t][k];
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = sum;
        }
    }
}

void inf_avx2_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) {
        const int nt = INF_MIN(MV_TOKENS, a->n - t0);
        if (w->type == INF_DTYPE_Q8_0) q8_matvec(w, a, t0, nt, r0, r1, y, y_stride);
        else f_matvec(w, a, t0, nt, r0, r1, y, y_stride);
    }
}

/*
 * quant_avx512.c — matvec of the GGUF block types (core/quant.h) with
 * AVX-512 VNNI, on the activation rows of inf_act_prepare_quant (the dot
 * type's blocks, exactly as ref.c rounds them). Each weight row is read
 * once and dotted with every token's row in turn (the row stays in L1), so
 * a row's result never depends on the token count.
 *
 * VPDPBUSD multiplies unsigned by signed bytes. The weights enter as their
 * unsigned codes u = q + c (Q4_0: nibble, c = 8; Q5_0: 5 bits, c = 16;
 * IQ4_NL: table value + 128, c = 128; Q4_K/Q5_K: the code itself; Q6_K:
 * 6 bits, c = 32), and c Σx is subtracted: from the same instruction on
 * the bytes c (32-blocks), or from Q8_K's bsums (K-quants).
 *
 * Numerics against ref.c (tests/test_kernels.c):
 *   - Q4_K, Q5_K, Q6_K: the super-block's integer sum is formed exactly
 *     (int32 lanes scaled by the integer sub-block scales, then reduced),
 *     and then scaled and summed in ref.c's order: bit-identical.
 *   - Q4_0, Q5_0, IQ4_NL: per pair of blocks, the int32 lanes (4 products
 *     each) are converted and scaled by d_w * d_x in f32 lanes and summed
 *     at the end, as the Q8_0 matvec does: within the matvec budget.
 */
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/quant.h"

#include <immintrin.h>
#include <string.h>

enum { PREFETCH_BYTES = 8192 };

#define INLINE static inline __attribute__((always_inline))

bool inf_avx512_matvec_takes(inf_dtype type) {
    switch (type) {
    case INF_DTYPE_Q4_0: case INF_DTYPE_Q5_0: case INF_DTYPE_IQ4_NL:
    case INF_DTYPE_Q4_K: case INF_DTYPE_Q5_K: case INF_DTYPE_Q6_K:
        return true;
    default: return false;
    }
}

/* ------------------------------------------------------------------ 32-blocks x Q8_0 */

/* 16 quant bytes of a block as its 32 nibbles in element order (low
 * nibbles are elements 0..15, high ones 16..31). */
INLINE __m256i nibbles(const uint8_t *qs) {
    const __m128i q = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0F);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(q, m)),
                                   _mm_and_si128(_mm_srli_epi16(q, 4), m), 1);
}

/* The unsigned codes of the block at w (type's layout), 32 bytes. */
INLINE __m256i codes32(inf_dtype type, const char *w) {
    switch (type) {
    case INF_DTYPE_Q5_0: {
        const inf_block_q5_0 *b = (const inf_block_q5_0 *)w;
        uint32_t qh;
        memcpy(&qh, b->qh, 4);
        return _mm256_or_si256(nibbles(b->qs), _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(0x10)));
    }
    case INF_DTYPE_IQ4_NL: {
        const __m256i table = _mm256_broadcastsi128_si256(
            _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141, (char)153, (char)166, (char)181,
                          (char)197, (char)217, (char)241)); /* inf_iq4nl_values + 128 */
        return _mm256_shuffle_epi8(table, nibbles(((const inf_block_iq4_nl *)w)->qs));
    }
    default: return nibbles(((const inf_block_q4_0 *)w)->qs);
    }
}

INLINE int code_offset(inf_dtype type) {
    return type == INF_DTYPE_Q5_0 ? 16 : type == INF_DTYPE_IQ4_NL ? 128 : 8;
}

/* The f16 scale d of a 32-block (first in every layout). */
INLINE uint16_t block_d(const char *blk) {
    uint16_t d;
    memcpy(&d, blk, 2);
    return d;
}

/* Blocks b and b + 1 (or b alone: has2 false, the upper half zero) of a
 * weight row times the activation row: the lanes' partial integer dots,
 * scaled by d_w * d_x, added to acc. */
INLINE __m512 pair32(inf_dtype type, const char *wr, size_t wb, const inf_block_q8_0 *xa, int64_t b, bool has2,
                     __m512 acc) {
    const char *w0 = wr + (size_t)b * wb, *w1 = w0 + wb;
    const __m256i u0 = codes32(type, w0);
    const __m256i u1 = has2 ? codes32(type, w1) : _mm256_setzero_si256();
    const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(u0), u1, 1);
    const __m256i x0 = _mm256_loadu_si256((const __m256i *)xa[b].q);
    const __m256i x1 = has2 ? _mm256_loadu_si256((const __m256i *)xa[b + 1].q) : _mm256_setzero_si256();
    const __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(x0), x1, 1);
    const __m512i off = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)code_offset(type)), x);
    const __m512i d = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x), off);
    const __m256i dwh = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)block_d(w0))),
                                                _mm_set1_epi16(has2 ? (short)block_d(w1) : 0), 1);
    const __m256i dxh = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)xa[b].d)),
                                                _mm_set1_epi16(has2 ? (short)xa[b + 1].d : 0), 1);
    const __m512 s = _mm512_mul_ps(_mm512_cvtph_ps(dwh), _mm512_cvtph_ps(dxh));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc);
}

INLINE float dot32(inf_dtype type, const char *wr, const inf_block_q8_0 *xa, int64_t nb) {
    const size_t wb = inf_dtype_block_bytes(type);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        _mm_prefetch(wr + (size_t)b * wb + PREFETCH_BYTES, _MM_HINT_T1);
        _mm_prefetch(wr + (size_t)b * wb + PREFETCH_BYTES + 64, _MM_HINT_T1);
        acc0 = pair32(type, wr, wb, xa, b, true, acc0);
        acc1 = pair32(type, wr, wb, xa, b + 2, true, acc1);
    }
    if (b + 2 <= nb) {
        acc0 = pair32(type, wr, wb, xa, b, true, acc0);
        b += 2;
    }
    if (b < nb) acc1 = pair32(type, wr, wb, xa, b, false, acc1);
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

/* ------------------------------------------------------------------ K-quants x Q8_K */

/* 16 int32 lanes of partial dots times per-lane scales (|d| < 2^15 and
 * 0 <= scale lanes' low halves, high halves zero): exact int32 products. */
INLINE __m512i scale_lanes(__m512i d, __m512i scales16) { return _mm512_madd_epi16(d, scales16); }

/* [a x8, b x8] as int32 lanes. */
INLINE __m512i two_scales(int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(a)), _mm256_set1_epi32(b), 1);
}

/* Q4_K (five false) or Q5_K: the exact Σ_sub sc * Σ q x of one super-block. */
INLINE int32_t q45k_isum(const uint8_t *qs, const uint8_t *qh, const uint8_t *sc, const int8_t *xq, bool five) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i h = five ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    __m512i isum = _mm512_setzero_si512();
    for (int j = 0; j < 4; j++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (five) {
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * j), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * j + 1), one), 4));
        }
        const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, _mm512_loadu_si512(xq + 64 * j));
        isum = _mm512_add_epi32(isum, scale_lanes(d, two_scales(sc[2 * j], sc[2 * j + 1])));
    }
    return _mm512_reduce_add_epi32(isum);
}

INLINE float q45k_dot(const char *wr, const inf_block_q8_K *xa, int64_t nb, bool five) {
    float sum = 0.0f;
    const size_t wb = five ? sizeof(inf_block_q5_K) : sizeof(inf_block_q4_K);
    for (int64_t b = 0; b < nb; b++) {
        const char *blk = wr + (size_t)b * wb;
        _mm_prefetch(blk + PREFETCH_BYTES, _MM_HINT_T1);
        _mm_prefetch(blk + PREFETCH_BYTES + 64, _MM_HINT_T1);
        _mm_prefetch(blk + PREFETCH_BYTES + 128, _MM_HINT_T1);
        const inf_block_q4_K *x4 = (const inf_block_q4_K *)blk;
        const inf_block_q5_K *x5 = (const inf_block_q5_K *)blk;
        const uint8_t *s12 = five ? x5->scales : x4->scales;
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) inf_q4k_scale_min(j, s12, &sc[j], &m[j]);
        const int32_t isum = q45k_isum(five ? x5->qs : x4->qs, five ? x5->qh : NULL, sc, xa[b].qs, five);
        int32_t imin = 0;
        for (int j = 0; j < 8; j++) imin += ((int32_t)xa[b].bsums[2 * j] + xa[b].bsums[2 * j + 1]) * m[j];
        const float d = inf_f16_to_f32(five ? x5->d : x4->d), dmin = inf_f16_to_f32(five ? x5->dmin : x4->dmin);
        sum += (d * xa[b].d) * (float)isum - (dmin * xa[b].d) * (float)imin;
    }
    return sum;
}

INLINE float q6k_dot(const char *wr, const inf_block_q8_K *xa, int64_t nb) {
    float sum = 0.0f;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03), low16 = _mm512_set1_epi32(0xFFFF);
    for (int64_t b = 0; b < nb; b++) {
        const inf_block_q6_K *x = (const inf_block_q6_K *)(wr + (size_t)b * sizeof(inf_block_q6_K));
        _mm_prefetch((const char *)x + PREFETCH_BYTES, _MM_HINT_T1);
        _mm_prefetch((const char *)x + PREFETCH_BYTES + 64, _MM_HINT_T1);
        _mm_prefetch((const char *)x + PREFETCH_BYTES + 128, _MM_HINT_T1);
        _mm_prefetch((const char *)x + PREFETCH_BYTES + 192, _MM_HINT_T1);
        /* the 16 sub-block scales as int32 lanes, low halves only (madd pairs) */
        const __m512i sc = _mm512_and_si512(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)x->scales)), low16);
        __m512i isum = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            const __m512i ql = _mm512_loadu_si512(x->ql + 64 * h);
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
            const __m512i ha = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
            const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(qh, 4)),
                                                  _mm256_srli_epi16(qh, 6), 1);
            const __m512i v0 = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(ha, m2), 4));
            const __m512i v1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                               _mm512_slli_epi16(_mm512_and_si512(hb, m2), 4));
            const __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v0, _mm512_loadu_si512(xa[b].qs + 128 * h));
            const __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v1, _mm512_loadu_si512(xa[b].qs + 128 * h + 64));
            /* lane i of d0 covers sub-block 8h + i/4, of d1 sub-block 8h + 4 + i/4 */
            const __m512i i0 = _mm512_add_epi32(_mm512_set1_epi32(8 * h),
                                                _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
            const __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(4));
            isum = _mm512_add_epi32(isum, scale_lanes(d0, _mm512_permutexvar_epi32(i0, sc)));
            isum = _mm512_add_epi32(isum, scale_lanes(d1, _mm512_permutexvar_epi32(i1, sc)));
        }
        /* the codes are q + 32: subtract 32 Σ_sub sc * bsum */
        const __m256i bias = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales)),
                                               _mm256_loadu_si256((const __m256i *)xa[b].bsums));
        const int32_t is = _mm512_reduce_add_epi32(isum) -
                           32 * _mm512_reduce_add_epi32(_mm512_zextsi256_si512(bias));
        const float d = inf_f16_to_f32(x->d), dmin = 0.0f;
        const int32_t imin = 0;
        sum += (d * xa[b].d) * (float)is - (dmin * xa[b].d) * (float)imin; /* as ref.c */
    }
    return sum;
}

/* ------------------------------------------------------------------ matvec */

void inf_avx512_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                             size_t y_stride) {
    const int64_t cols = w->cols;
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        for (int t = 0; t < a->n; t++) {
            const void *xa = (const char *)a->data + (size_t)t * a->stride;
            float v;
            switch (w->type) {
            case INF_DTYPE_Q4_0: v = dot32(INF_DTYPE_Q4_0, wr, xa, cols / INF_QK); break;
            case INF_DTYPE_Q5_0: v = dot32(INF_DTYPE_Q5_0, wr, xa, cols / INF_QK); break;
            case INF_DTYPE_IQ4_NL: v = dot32(INF_DTYPE_IQ4_NL, wr, xa, cols / INF_QK); break;
            case INF_DTYPE_Q4_K: v = q45k_dot(wr, xa, cols / INF_QK_K, false); break;
            case INF_DTYPE_Q5_K: v = q45k_dot(wr, xa, cols / INF_QK_K, true); break;
            case INF_DTYPE_Q6_K: v = q6k_dot(wr, xa, cols / INF_QK_K); break;
            default: v = inf_quant_dot(w->type, wr, xa, cols); break; /* not taken (matvec_takes) */
            }
            y[(size_t)t * y_stride + (size_t)r] = v;
        }
    }
}

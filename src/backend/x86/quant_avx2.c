/*
 * quant_avx2.c — matvec and prefill gemm of the GGUF block types
 * (core/quant.h) with AVX2, on the activation rows of
 * inf_act_prepare_quant, structured as quant_avx512.c: a weight row is
 * streamed once per group of up to MV_TOKENS tokens, each block unpacked
 * once and dotted with every token of the group by the same operations
 * (batch invariance); the gemm (end of the file) packs row panels and runs
 * register tiles of 8 rows x 4 tokens.
 *
 * Without VNNI, 4-product integer dots are VPMADDUBSW (unsigned codes times
 * signed activations into int16 pairs; no code here exceeds 63, so no pair
 * saturates) then VPMADDWD by ones (the super-blocks: by their int16
 * sub-block scales, which scales and widens in one step). IQ4_NL and
 * IQ4_XS, whose codes would saturate, enter as signed values with the
 * sign moved to the activation (|v| <= 127: 2 * 127 * 127 < 2^15).
 *
 * Numerics against ref.c (tests/test_kernels.c):
 *   - the super-block types (Q2_K .. Q6_K, IQ4_XS): exact integer
 *     super-block sums, scaled and summed in ref.c's order: bit-identical
 *     (matvec and gemm).
 *   - the 32-blocks: the gemm is bit-identical; the matvec sums in
 *     llama.cpp's AVX2 vec_dot order (per block 8 int32 lanes of 4
 *     products, converted and multiply-added by d_w * d_x into one 8-lane
 *     f32 sum; Q4_1/Q5_1's m_w * s_x summed apart), within the matvec
 *     budget.
 */
#include "backend/x86/vec_avx2.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/quant.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

enum { MV_TOKENS = 4, RV_ROWS = 4 /* rows32: rows side by side, at most */, PREFETCH_BYTES = 8192 };

#define INLINE static inline __attribute__((always_inline))

bool inf_avx2_matvec_takes(inf_dtype type) { return inf_dtype_is_quant(type); }

/* ------------------------------------------------------------------ helpers */

/* Σ of each 4 consecutive u[i] * x[i] (u unsigned, u[i] + u[i+1] small
 * enough not to saturate an int16 pair), as 8 int32 lanes. */
INLINE __m256i dot4(__m256i u, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
}

/* The same for signed values v (|v| <= 127). */
INLINE __m256i dot4s(__m256i v, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(x, v)),
                             _mm256_set1_epi16(1));
}

/* 32 bits to 32 bytes: 0xFF where the bit is set. */
INLINE __m256i bits_to_bytes(uint32_t bits) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                          3, 3, 3, 3, 3, 3);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* 16 nibble bytes as the 32 codes of a block (low nibbles first). */
INLINE __m256i nibbles16(const uint8_t *qs) {
    /* the 16 bytes in both halves, the high half shifted right by 4 */
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    return _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
}

INLINE __m256i iq4_values(__m256i idx) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)inf_iq4nl_values));
    return _mm256_shuffle_epi8(table, idx);
}

INLINE float hsum_float_8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

INLINE uint16_t f16_at(const char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

INLINE void prefetch_block(const char *p, int lines) {
    for (int i = 0; i < lines; i++) _mm_prefetch(p + PREFETCH_BYTES + 64 * i, _MM_HINT_T1);
}

/* ------------------------------------------------------------------ 32-blocks */

/* A block's dot operand: unsigned codes (Q4_0: nibble, offset 8; Q5_0:
 * 5 bits, offset 16; Q4_1, Q5_1: codes, no offset) or signed values
 * (IQ4_NL). */
INLINE __m256i block_codes(inf_dtype type, const char *w) {
    switch (type) {
    case INF_DTYPE_Q4_1: return nibbles16(((const inf_block_q4_1 *)w)->qs);
    case INF_DTYPE_Q5_0:
    case INF_DTYPE_Q5_1: {
        const bool five0 = type == INF_DTYPE_Q5_0;
        uint32_t qh;
        memcpy(&qh, w + (five0 ? offsetof(inf_block_q5_0, qh) : offsetof(inf_block_q5_1, qh)), 4);
        const uint8_t *qs = (const uint8_t *)w + (five0 ? offsetof(inf_block_q5_0, qs) : offsetof(inf_block_q5_1, qs));
        return _mm256_or_si256(nibbles16(qs), _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10)));
    }
    case INF_DTYPE_IQ4_NL: return iq4_values(nibbles16(((const inf_block_iq4_nl *)w)->qs));
    default: return nibbles16(((const inf_block_q4_0 *)w)->qs);
    }
}

/* Rows r .. r + R - 1 side by side: each row's sum is formed exactly as
 * alone (one 8-lane f32 accumulator per token, block after block,
 * llama.cpp's order), but R rows' chains of dependent FMAs overlap, a
 * token's quants are loaded (and Q4_0/Q5_0's offset term formed) once
 * for the R rows, and the rows' f16 scales are converted and multiplied
 * by d_x together (the same f32 products). The kernel is compute-bound:
 * on Zen 5 with AVX2 a Qwen3-0.6B Q4_0 decode spent 54% of its samples
 * here, twice Q6_K's time per byte, when it took one row at a time. */
INLINE void rows32_r(inf_dtype type, const inf_weight *w, const char *const *xa, const int NT, const int R, int64_t r,
                     float *y, size_t ys, int t0) {
    const int64_t nb = w->cols / INF_QK;
    const size_t wb = inf_dtype_block_bytes(type);
    const bool q8_1 = inf_quant_act_type(type) == INF_ACT_Q8_1;
    const size_t xb = q8_1 ? sizeof(inf_block_q8_1) : sizeof(inf_block_q8_0);
    const size_t xq_at = q8_1 ? offsetof(inf_block_q8_1, qs) : offsetof(inf_block_q8_0, q);
    const int c = type == INF_DTYPE_Q4_0 ? 8 : type == INF_DTYPE_Q5_0 ? 16 : 0;
    const char *wr[RV_ROWS];
    __m256 acc[RV_ROWS][MV_TOKENS];
    float summs[RV_ROWS][MV_TOKENS];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
        wr[i] = (const char *)w->data + (size_t)(r + i) * w->row_bytes;
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            acc[i][t] = _mm256_setzero_ps();
            summs[i][t] = 0.0f;
        }
    }
    for (int64_t b = 0; b < nb; b++) {
        __m256i u[RV_ROWS];
        float mw[RV_ROWS];
        uint64_t dh = 0; /* the R rows' f16 scales, row i in bits 16i .. 16i + 15 */
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
            const char *blk = wr[i] + (size_t)b * wb;
            if ((b & 3) == 0) prefetch_block(blk, 2);
            u[i] = block_codes(type, blk);
            dh |= (uint64_t)f16_at(blk) << (16 * i);
            mw[i] = q8_1 ? f16c_to_f32(f16_at(blk + 2)) : 0.0f;
        }
        const __m256 dw = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)dh)));
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            const char *x = xa[t] + (size_t)b * xb;
            const __m256i xq = _mm256_loadu_si256((const __m256i *)(x + xq_at));
            const __m256i off = c ? dot4(_mm256_set1_epi8((char)c), xq) : _mm256_setzero_si256();
            const float dx = f16c_to_f32(f16_at(x)), sx = q8_1 ? f16c_to_f32(f16_at(x + 2)) : 0.0f;
            const __m256 dwdx = _mm256_mul_ps(dw, _mm256_set1_ps(dx)); /* lane i: dw_i * dx, as one f32 multiply */
            _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
                __m256i d;
                if (type == INF_DTYPE_IQ4_NL) d = dot4s(u[i], xq);
                else {
                    d = dot4(u[i], xq);
                    if (c) d = _mm256_sub_epi32(d, off);
                }
                if (q8_1) summs[i][t] += mw[i] * sx;
                const __m256 s = _mm256_permutevar8x32_ps(dwdx, _mm256_set1_epi32(i));
                acc[i][t] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(d), acc[i][t]);
            }
        }
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
            y[(size_t)(t0 + t) * ys + (size_t)(r + i)] = hsum_float_8(acc[i][t]) + summs[i][t];
}

/* Rows side by side: 4 for one token, 2 for more (the accumulators stay
 * within the 16 registers). */
INLINE void rows32(inf_dtype type, const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0, int64_t r1,
                   float *y, size_t ys) {
    const char *xa[MV_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) xa[t] = (const char *)a->data + (size_t)(t0 + t) * a->stride;
    const int R = NT == 1 ? 4 : 2;
    int64_t r = r0;
    for (; r + R <= r1; r += R) rows32_r(type, w, xa, NT, R, r, y, ys, t0);
    for (; r < r1; r++) rows32_r(type, w, xa, NT, 1, r, y, ys, t0);
}

/* ------------------------------------------------------------------ super-blocks */

/* One super-block unpacked: 8 operands of 32 elements (codes, or signed
 * values when `sgn`), each with its scales as int16 lanes against
 * VPMADDUBSW's pairs (two 16-groups per operand: lanes 0-7 and 8-15), and
 * the bias / min terms as quant_avx512.c. A scaled pair sum is then one
 * VPMADDWD: |pair| <= 2 * 127 * 127 and |scale| <= 128 fit its int32. */
typedef struct kblock {
    __m256i u[8], sc[8];
    __m256i bias16, min16;
    int bias_mul;
    bool sgn, has_min;
    float d, dmin;
} kblock;

INLINE __m256i lane_scales(int a, int b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)a)), _mm_set1_epi16((short)b), 1);
}

/* Int16 lane j of each 128-bit half of v, in all 8 lanes of that half. */
INLINE __m256i bcast_i16(__m256i v, int j) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)(0x0100 * (2 * j + 1) + 2 * j)));
}

/* Operands of Q4_K, Q5_K and Q6_K, the super-blocks of the common files,
 * one at a time: the matvec (k456_tokens) unpacks each just before the
 * tokens use it, with no unpacked block kept (which spills); unpack_kblock
 * takes all 8 for the gemm's pack. */

/* Operand j (elements 32j ..) of a Q4_K / Q5_K super-block: its codes. */
INLINE __m256i q45k_operand(const uint8_t *qs, const uint8_t *qh, const bool five, int j) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * (j / 2)));
    __m256i u = j % 2 ? _mm256_and_si256(_mm256_srli_epi16(q, 4), m4) : _mm256_and_si256(q, m4);
    if (five) {
        const __m256i h = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)qh), j);
        u = _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(1)), 4));
    }
    return u;
}

/* Operand j (elements 128 (j / 4) + 32 (j % 4) ..) of a Q6_K super-block:
 * its 6-bit codes (value + 32). */
INLINE __m256i q6k_operand(const inf_block_q6_K *x, int j) {
    const int h = j / 4, part = j % 4;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    const __m256i ql = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32 * (part & 1)));
    const __m256i lo = part < 2 ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
    return _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * part), m2), 4));
}

/* From s16, the 16 scales of a Q6_K super-block as int16 lanes, operand
 * j's: scale 2j in lanes 0-7, 2j + 1 in lanes 8-15. */
INLINE __m256i q6k_operand_scales(__m256i s16, int j) {
    /* (immediates in both arms: -O1 does not fold j) */
    const __m256i half = j < 4 ? _mm256_permute2x128_si256(s16, s16, 0x00) : _mm256_permute2x128_si256(s16, s16, 0x11);
    const int i = 2 * (j % 4);
    const __m128i lo = _mm_set1_epi16((short)(0x0100 * (2 * i + 1) + 2 * i));
    const __m128i hi = _mm_set1_epi16((short)(0x0100 * (2 * i + 3) + 2 * i + 2));
    const __m256i pick = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    return _mm256_shuffle_epi8(half, pick);
}

INLINE void unpack_kblock(inf_dtype type, const char *blk, kblock *k) {
    const __m256i m2 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1);
    k->has_min = false;
    k->sgn = false;
    k->bias_mul = 0;
    k->d = k->dmin = 0.0f;
    k->min16 = k->bias16 = _mm256_setzero_si256();
    switch (type) {
    case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K: {
        const bool five = type == INF_DTYPE_Q5_K;
        const inf_block_q4_K *x4 = (const inf_block_q4_K *)blk;
        const inf_block_q5_K *x5 = (const inf_block_q5_K *)blk;
        uint8_t sm[16]; /* 8 scales, then 8 mins */
        inf_q4k_scales_mins(five ? x5->scales : x4->scales, sm);
        const __m128i smv = _mm_loadu_si128((const __m128i *)sm);
        const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(smv)); /* scales 0-7 in both halves */
        for (int j = 0; j < 8; j++) {
            k->u[j] = q45k_operand(five ? x5->qs : x4->qs, x5->qh, five, j);
            k->sc[j] = bcast_i16(sc16, j);
        }
        const __m128i mb = _mm_srli_si128(smv, 8);
        k->min16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));
        k->has_min = true;
        k->d = f16c_to_f32(five ? x5->d : x4->d);
        k->dmin = f16c_to_f32(five ? x5->dmin : x4->dmin);
        break;
    }
    case INF_DTYPE_Q6_K: {
        const inf_block_q6_K *x = (const inf_block_q6_K *)blk;
        const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
        for (int j = 0; j < 8; j++) {
            k->u[j] = q6k_operand(x, j);
            k->sc[j] = q6k_operand_scales(s16, j);
        }
        k->bias16 = s16;
        k->bias_mul = 32;
        k->d = f16c_to_f32(x->d);
        break;
    }
    case INF_DTYPE_Q2_K:
    case INF_DTYPE_Q3_K: {
        const bool three = type == INF_DTYPE_Q3_K;
        const inf_block_q2_K *x2 = (const inf_block_q2_K *)blk;
        const inf_block_q3_K *x3 = (const inf_block_q3_K *)blk;
        const uint8_t *qs = three ? x3->qs : x2->qs;
        const __m256i hm = three ? _mm256_loadu_si256((const __m256i *)x3->hmask) : _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
            for (int j = 0; j < 4; j++) { /* elements 128h + 32j + l */
                __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m2);
                if (three)
                    u = _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + j), one), 2));
                k->u[4 * h + j] = u;
            }
        }
        int8_t sc[16];
        if (three) {
            const __m128i s = inf_q3k_scales_vec(x3->scales);
            _mm_storeu_si128((__m128i *)sc, s);
            k->bias16 = _mm256_cvtepi8_epi16(s);
            k->bias_mul = 4;
            k->d = f16c_to_f32(x3->d);
        } else { /* scale: low nibble, min: high nibble */
            const __m128i s = _mm_loadu_si128((const __m128i *)x2->scales), m4 = _mm_set1_epi8(0x0F);
            _mm_storeu_si128((__m128i *)sc, _mm_and_si128(s, m4));
            k->min16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4));
            k->has_min = true;
            k->d = f16c_to_f32(x2->d);
            k->dmin = f16c_to_f32(x2->dmin);
        }
        for (int i = 0; i < 8; i++) k->sc[i] = lane_scales(sc[2 * i], sc[2 * i + 1]);
        break;
    }
    case INF_DTYPE_IQ4_XS: {
        const inf_block_iq4_xs *x = (const inf_block_iq4_xs *)blk;
        for (int j = 0; j < 8; j++) {
            const int s = inf_iq4xs_scale(x, j);
            k->u[j] = iq4_values(nibbles16(x->qs + 16 * j));
            k->sc[j] = _mm256_set1_epi16((short)s);
        }
        k->sgn = true;
        k->d = f16c_to_f32(x->d);
        break;
    }
    default: break;
    }
}

/* The lane sums of a and b. */
INLINE void hsum2_i32_8(__m256i a, __m256i b, int32_t *sa, int32_t *sb) {
    const __m256i h = _mm256_hadd_epi32(a, b); /* per half: a01 a23 b01 b23 */
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    s = _mm_hadd_epi32(s, s);
    *sa = _mm_cvtsi128_si32(s);
    *sb = _mm_extract_epi32(s, 1);
}

/* Super-block b of a row (blk) times NT tokens, into sum[t]: the block
 * unpacked whole (Q2_K, Q3_K, IQ4_XS). */
INLINE void kblock_tokens(inf_dtype type, const char *blk, const inf_block_q8_K *const *xa, int64_t b, const int NT,
                          float *sum) {
    kblock k;
    unpack_kblock(type, blk, &k);
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        const inf_block_q8_K *x = &xa[t][b];
        __m256i acc = _mm256_setzero_si256();
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
            const __m256i xq = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * j));
            const __m256i u = k.u[j];
            const __m256i p = k.sgn ? _mm256_maddubs_epi16(_mm256_sign_epi8(u, u), _mm256_sign_epi8(xq, u))
                                    : _mm256_maddubs_epi16(u, xq);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, k.sc[j]));
        }
        /* the bias or the mins against the bsums, both reduced at once */
        const __m256i bs = _mm256_loadu_si256((const __m256i *)x->bsums);
        const __m256i other = k.bias_mul ? _mm256_madd_epi16(bs, k.bias16)
                              : k.has_min ? _mm256_madd_epi16(bs, k.min16) : _mm256_setzero_si256();
        int32_t isum, iother;
        hsum2_i32_8(acc, other, &isum, &iother);
        if (k.bias_mul) isum -= k.bias_mul * iother;
        const int32_t imin = k.has_min ? iother : 0;
        sum[t] += (k.d * x->d) * (float)isum - (k.dmin * x->d) * (float)imin; /* as ref.c */
    }
}

/* kblock_tokens for Q4_K, Q5_K and Q6_K. */
INLINE void k456_tokens(inf_dtype type, const char *blk, const inf_block_q8_K *const *xa, int64_t b, const int NT,
                        float *sum) {
    const bool six = type == INF_DTYPE_Q6_K, five = type == INF_DTYPE_Q5_K;
    const inf_block_q4_K *x4 = (const inf_block_q4_K *)blk;
    const inf_block_q5_K *x5 = (const inf_block_q5_K *)blk;
    const inf_block_q6_K *x6 = (const inf_block_q6_K *)blk;
    /* sc16: the scales as int16 lanes (Q4_K, Q5_K: scales 0-7 in both
     * halves); other16: against the bsums, the mins (each twice: a
     * sub-block is two 16-groups) or Q6_K's scales (its bias) */
    __m256i sc16, other16;
    float d, dmin = 0.0f;
    if (six) {
        sc16 = other16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x6->scales));
        d = f16c_to_f32(x6->d);
    } else {
        uint8_t sm[16]; /* 8 scales, then 8 mins */
        inf_q4k_scales_mins(five ? x5->scales : x4->scales, sm);
        const __m128i smv = _mm_loadu_si128((const __m128i *)sm), mins = _mm_srli_si128(smv, 8);
        sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(smv));
        other16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mins, mins));
        d = f16c_to_f32(five ? x5->d : x4->d);
        dmin = f16c_to_f32(five ? x5->dmin : x4->dmin);
    }
    __m256i acc[MV_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_si256();
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
        const __m256i u = six ? q6k_operand(x6, j) : q45k_operand(five ? x5->qs : x4->qs, x5->qh, five, j);
        const __m256i sc = six ? q6k_operand_scales(sc16, j) : bcast_i16(sc16, j);
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            const __m256i xq = _mm256_loadu_si256((const __m256i *)(xa[t][b].qs + 32 * j));
            acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(u, xq), sc));
        }
    }
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        const inf_block_q8_K *x = &xa[t][b];
        const __m256i other = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x->bsums), other16);
        int32_t isum, iother;
        hsum2_i32_8(acc[t], other, &isum, &iother);
        if (six) isum -= 32 * iother;
        const int32_t imin = six ? 0 : iother;
        sum[t] += (d * x->d) * (float)isum - (dmin * x->d) * (float)imin; /* as ref.c */
    }
}

/* Rows [r0, r1) times tokens [t0, t0 + NT) of a super-block type, each
 * row's super-blocks in order, every token's sum in ref.c's order. */
INLINE void rows256(inf_dtype type, const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0,
                    int64_t r1, float *y, size_t ys) {
    const int64_t nb = w->cols / INF_QK_K;
    const size_t wb = inf_dtype_block_bytes(type);
    const bool k456 = type == INF_DTYPE_Q4_K || type == INF_DTYPE_Q5_K || type == INF_DTYPE_Q6_K;
    const inf_block_q8_K *xa[MV_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
        xa[t] = (const inf_block_q8_K *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        float sum[MV_TOKENS];
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) sum[t] = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            const char *blk = wr + (size_t)b * wb;
            prefetch_block(blk, (int)((wb + 63) / 64));
            if (k456) k456_tokens(type, blk, xa, b, NT, sum);
            else kblock_tokens(type, blk, xa, b, NT, sum);
        }
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) y[(size_t)(t0 + t) * ys + (size_t)r] = sum[t];
    }
}

/* ------------------------------------------------------------------ matvec */

#define BY_TOKENS(fn, ...)                                       \
    do {                                                         \
        if (nt == 1) fn(__VA_ARGS__, t0, 1, r0, r1, y, ys);      \
        else if (nt == 2) fn(__VA_ARGS__, t0, 2, r0, r1, y, ys); \
        else if (nt == 3) fn(__VA_ARGS__, t0, 3, r0, r1, y, ys); \
        else fn(__VA_ARGS__, t0, 4, r0, r1, y, ys);              \
    } while (0)

_Static_assert(MV_TOKENS == 4, "BY_TOKENS spells out token counts 1..4");

#define TYPE_KERNEL(name, kind, type)                                                                       \
    static void name(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t ys) { \
        for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) {                                                      \
            const int nt = INF_MIN(MV_TOKENS, a->n - t0);                                                   \
            BY_TOKENS(kind, type, w, a);                                                                    \
        }                                                                                                   \
    }

TYPE_KERNEL(mv_q4_0, rows32, INF_DTYPE_Q4_0)
TYPE_KERNEL(mv_q4_1, rows32, INF_DTYPE_Q4_1)
TYPE_KERNEL(mv_q5_0, rows32, INF_DTYPE_Q5_0)
TYPE_KERNEL(mv_q5_1, rows32, INF_DTYPE_Q5_1)
TYPE_KERNEL(mv_iq4_nl, rows32, INF_DTYPE_IQ4_NL)
TYPE_KERNEL(mv_q2_k, rows256, INF_DTYPE_Q2_K)
TYPE_KERNEL(mv_q3_k, rows256, INF_DTYPE_Q3_K)
TYPE_KERNEL(mv_q4_k, rows256, INF_DTYPE_Q4_K)
TYPE_KERNEL(mv_q5_k, rows256, INF_DTYPE_Q5_K)
TYPE_KERNEL(mv_q6_k, rows256, INF_DTYPE_Q6_K)
TYPE_KERNEL(mv_iq4_xs, rows256, INF_DTYPE_IQ4_XS)

void inf_avx2_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                           size_t y_stride) {
    switch (w->type) {
    case INF_DTYPE_Q4_0: mv_q4_0(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q4_1: mv_q4_1(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q5_0: mv_q5_0(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q5_1: mv_q5_1(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_IQ4_NL: mv_iq4_nl(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q2_K: mv_q2_k(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q3_K: mv_q3_k(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q4_K: mv_q4_k(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q5_K: mv_q5_k(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_Q6_K: mv_q6_k(w, a, r0, r1, y, y_stride); break;
    case INF_DTYPE_IQ4_XS: mv_iq4_xs(w, a, r0, r1, y, y_stride); break;
    default: break; /* not taken (matvec_takes) */
    }
}

/* ------------------------------------------------------------------ gemm */

/* The prefill gemm of the block types, bit-identical to ref.c (so, for the
 * super-block types, to the matvec; the 32-block types' matvec follows
 * llama.cpp's order instead, and their decode rows stay on it: ops.h). A
 * panel of up to INF_AVX2_GEMM_ROWS rows is packed into groups of 8 rows
 * (lane = row), per block the 32-bit units of the 8 rows side by side; a
 * register tile of 8 rows x QG_TOKENS tokens broadcasts each activation
 * quad against them, forms every (row, token) block sum exactly, then
 * scales it in f32 lanes in ref.c's order. The activations are the
 * matvec's rows (inf_act_prepare_quant).
 *
 * 32-blocks, per block and group:
 *   vals [8 quads][8 rows][4] int8, the weights' signed values
 *   corr [8 rows] int32, 128 * Σ vals (0 for IQ4_NL)
 *   d, m [8 rows] f32 (m: Q4_1/Q5_1's min, else 0)
 * VPMADDUBSW takes the activations as its unsigned operand, flipped to
 * x + 128 at prepare (|x + 128| <= 255 times |v| <= 31 keeps a pair within
 * int16), so a lane gathers Σ x v + corr. IQ4_NL's values reach 127 and
 * would saturate: its activations stay signed and take v's sign (VPSIGNB)
 * against |v|, as the matvec's dot4s.
 * Super-blocks, per super-block and group:
 *   codes [64 quads][8 rows][4] u8, the matvec's unsigned codes (IQ4_XS:
 *                                   signed values, dotted as dot4s)
 *   scale [16 groups][8 rows][2] int16, the integer scale of each 16-group
 *                                   twice: VPMADDWD of a lane's two pair
 *                                   sums against it scales and adds them
 *   coef  [8 group pairs][8 rows][2] int16: of 16-groups 2j and 2j + 1,
 *                                   the min (Q2_K, Q4_K, Q5_K) or c *
 *                                   scale (Q3_K, Q6_K), for one VPMADDWD
 *                                   against the bsums of those groups
 *   d, dmin [8 rows] f32
 * A lane's pair sums (VPMADDUBSW) stay within int16 when two are added
 * (2 * 2 * 63 * 127 < 2^15) for the unsigned codes (IQ4_XS's signed
 * values, to 127, are scaled one at a time). */
enum {
    QG_ROWS = 8,
    QG_TOKENS = 4,
    QB_CORR = 8 * 32,          /* 32-blocks: vals 256 bytes, then */
    QB_D = QB_CORR + 32,
    QB_M = QB_D + 32,
    QB_BLOCK = QB_M + 32,      /* 352 bytes */
    QK_SCALE = 64 * 32,        /* super-blocks: codes 2048 bytes, then */
    QK_COEF = QK_SCALE + 16 * 32,
    QK_D = QK_COEF + 8 * 32,
    QK_DMIN = QK_D + 32,
    QK_BLOCK = QK_DMIN + 32,   /* 2880 bytes */
};

size_t inf_avx2_qgemm_pack_bytes(inf_dtype type, int64_t cols) {
    const bool b32 = inf_dtype_block_elems(type) == INF_QK;
    return (INF_AVX2_GEMM_ROWS / QG_ROWS) * (size_t)(cols / (b32 ? INF_QK : INF_QK_K)) * (b32 ? QB_BLOCK : QK_BLOCK);
}

/* Whether a 32-block type's gemm flips the activations (all but IQ4_NL). */
static bool flips_act(inf_dtype type) { return inf_dtype_block_elems(type) == INF_QK && type != INF_DTYPE_IQ4_NL; }

void inf_avx2_qgemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf) {
    (void)n;
    inf_act_prepare_quant_rows(type, x, cols, t0, t1, buf, flips_act(type), inf_act_prepare_quant);
}

/* Rows [r, r + nr) of 32-block b packed into dst (QB_BLOCK bytes; missing
 * rows are zeros). */
static void pack_block32(const inf_weight *w, int64_t r, int nr, int64_t b, char *dst) {
    const inf_dtype type = w->type;
    const size_t wb = inf_dtype_block_bytes(type);
    const int c = type == INF_DTYPE_Q4_0 ? 8 : type == INF_DTYPE_Q5_0 ? 16 : 0;
    int8_t v[QG_ROWS][32];
    int32_t corr[QG_ROWS] = {0};
    float d[QG_ROWS] = {0}, m[QG_ROWS] = {0};
    for (int i = 0; i < QG_ROWS; i++) {
        if (i >= nr) {
            memset(v[i], 0, 32);
            continue;
        }
        const char *blk = (const char *)w->data + (size_t)(r + i) * w->row_bytes + (size_t)b * wb;
        _mm256_storeu_si256((__m256i *)v[i], _mm256_sub_epi8(block_codes(type, blk), _mm256_set1_epi8((char)c)));
        d[i] = f16c_to_f32(f16_at(blk));
        if (inf_quant_act_type(type) == INF_ACT_Q8_1) m[i] = f16c_to_f32(f16_at(blk + 2));
        if (flips_act(type))
            for (int e = 0; e < 32; e++) corr[i] += 128 * v[i][e];
    }
    const __m256i rows = _mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224);
    for (int q = 0; q < 8; q++)
        _mm256_store_si256((__m256i *)(dst + q * 32), _mm256_i32gather_epi32((const int *)&v[0][4 * q], rows, 1));
    memcpy(dst + QB_CORR, corr, 32);
    memcpy(dst + QB_D, d, 32);
    memcpy(dst + QB_M, m, 32);
}

/* Rows [r, r + nr) of super-block b packed into dst (QK_BLOCK bytes). */
static void pack_kblock(const inf_weight *w, int64_t r, int nr, int64_t b, char *dst) {
    const inf_dtype type = w->type;
    const size_t wb = inf_dtype_block_bytes(type);
    uint8_t codes[QG_ROWS][256];
    uint32_t scale[16][QG_ROWS] = {{0}}, coef[8][QG_ROWS] = {{0}};
    float d[QG_ROWS] = {0}, dmin[QG_ROWS] = {0};
    for (int i = 0; i < QG_ROWS; i++) {
        if (i >= nr) {
            memset(codes[i], 0, 256);
            continue;
        }
        const char *blk = (const char *)w->data + (size_t)(r + i) * w->row_bytes + (size_t)b * wb;
        kblock k;
        unpack_kblock(type, blk, &k);
        for (int j = 0; j < 8; j++) _mm256_storeu_si256((__m256i *)(codes[i] + 32 * j), k.u[j]);
        d[i] = k.d;
        dmin[i] = k.dmin;
        int16_t bias[16], mins[16];
        int16_t lane_sc[8][16];
        _mm256_storeu_si256((__m256i *)bias, k.bias16);
        _mm256_storeu_si256((__m256i *)mins, k.min16);
        for (int j = 0; j < 8; j++) _mm256_storeu_si256((__m256i *)lane_sc[j], k.sc[j]);
        for (int g = 0; g < 16; g++) { /* k.sc[j]: lanes 0-7 scale 16-group 2j, lanes 8-15 group 2j + 1 */
            const uint32_t sc16 = (uint16_t)lane_sc[g / 2][8 * (g % 2)];
            scale[g][i] = sc16 | sc16 << 16;
            coef[g / 2][i] |= (uint32_t)(uint16_t)(k.has_min ? mins[g] : k.bias_mul * bias[g]) << (16 * (g % 2));
        }
    }
    const __m256i rows = _mm256_setr_epi32(0, 256, 512, 768, 1024, 1280, 1536, 1792);
    for (int q = 0; q < 64; q++)
        _mm256_store_si256((__m256i *)(dst + q * 32), _mm256_i32gather_epi32((const int *)&codes[0][4 * q], rows, 1));
    memcpy(dst + QK_SCALE, scale, sizeof scale);
    memcpy(dst + QK_COEF, coef, sizeof coef);
    memcpy(dst + QK_D, d, 32);
    memcpy(dst + QK_DMIN, dmin, 32);
}

INLINE __m256i bcast_quad(const void *p) {
    int32_t q;
    memcpy(&q, p, 4);
    return _mm256_set1_epi32(q);
}

/* Lanes [0, nr) of each token's sums to y[t * ys + lane]. */
INLINE void store_lanes(float *y, size_t ys, const __m256 *sum, const int NT, int nr) {
    for (int t = 0; t < NT; t++) {
        if (nr == QG_ROWS) _mm256_storeu_ps(y + (size_t)t * ys, sum[t]);
        else _mm256_maskstore_ps(y + (size_t)t * ys, tail_mask_avx2((size_t)nr), sum[t]);
    }
}

/* Tokens [t0, t0 + NT) times one packed group of a 32-block type; SGN:
 * IQ4_NL (signed activations), else flipped ones less corr. */
INLINE void qgemm32_tile(const char *pack, int64_t nb, const char *act, size_t stride, int t0, const int NT,
                         const bool Q81, const bool SGN, float *y, size_t ys, int nr) {
    const size_t xb = Q81 ? sizeof(inf_block_q8_1) : sizeof(inf_block_q8_0);
    const size_t xq_at = Q81 ? offsetof(inf_block_q8_1, qs) : offsetof(inf_block_q8_0, q);
    const __m256i ones = _mm256_set1_epi16(1);
    const char *xa[QG_TOKENS];
    __m256 sum[QG_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        xa[t] = act + (size_t)(t0 + t) * stride;
        sum[t] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        const char *pb = pack + (size_t)b * QB_BLOCK;
        __m256i acc[QG_TOKENS];
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_si256();
        if (SGN) {
            _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) {
                const __m256i wv = _mm256_load_si256((const __m256i *)(pb + q * 32));
                const __m256i aw = _mm256_sign_epi8(wv, wv);
                _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                    const __m256i xq = bcast_quad(xa[t] + (size_t)b * xb + xq_at + 4 * q);
                    const __m256i p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xq, wv));
                    acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p, ones));
                }
            }
        } else {
            /* two quads' pair sums added in int16 before widening: each is
             * at most 2 * 255 * 31 = 15810 in magnitude (Q5_1's codes reach
             * 31), so two stay within int16 */
            _Pragma("GCC unroll 4") for (int q = 0; q < 8; q += 2) {
                const __m256i w0 = _mm256_load_si256((const __m256i *)(pb + q * 32));
                const __m256i w1 = _mm256_load_si256((const __m256i *)(pb + q * 32 + 32));
                _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                    const char *xq = xa[t] + (size_t)b * xb + xq_at + 4 * q;
                    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(bcast_quad(xq), w0),
                                                       _mm256_maddubs_epi16(bcast_quad(xq + 4), w1));
                    acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p, ones));
                }
            }
        }
        const __m256i corr = _mm256_load_si256((const __m256i *)(pb + QB_CORR));
        const __m256 d = _mm256_load_ps((const float *)(pb + QB_D)), m = _mm256_load_ps((const float *)(pb + QB_M));
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            const char *x = xa[t] + (size_t)b * xb;
            const __m256 s = _mm256_mul_ps(d, _mm256_set1_ps(f16c_to_f32(f16_at(x))));
            const __m256 isum = _mm256_cvtepi32_ps(SGN ? acc[t] : _mm256_sub_epi32(acc[t], corr));
            if (Q81) { /* (d_w * d_x) * isum + m_w * s_x, as ref.c */
                const __m256 ms = _mm256_mul_ps(m, _mm256_set1_ps(f16c_to_f32(f16_at(x + 2))));
                sum[t] = _mm256_add_ps(sum[t], _mm256_add_ps(_mm256_mul_ps(s, isum), ms));
            } else { /* (float)isum * (d_w * d_x) */
                sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(isum, s));
            }
        }
    }
    store_lanes(y + (size_t)t0 * ys, ys, sum, NT, nr);
}

/* The same for a super-block type; MIN: coef is a min, else a bias (0 for
 * IQ4_XS) subtracted from isum; SGN: IQ4_XS's signed values. */
INLINE void qgemm256_tile(const char *pack, int64_t nb, const char *act, size_t stride, int t0, const int NT,
                          const bool MIN, const bool SGN, float *y, size_t ys, int nr) {
    const inf_block_q8_K *xa[QG_TOKENS];
    __m256 sum[QG_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        xa[t] = (const inf_block_q8_K *)(act + (size_t)(t0 + t) * stride);
        sum[t] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        const char *pb = pack + (size_t)b * QK_BLOCK;
        __m256i isum[QG_TOKENS], iterm[QG_TOKENS];
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) isum[t] = iterm[t] = _mm256_setzero_si256();
        for (int g = 0; g < 16; g++) {
            const __m256i sc = _mm256_load_si256((const __m256i *)(pb + QK_SCALE + g * 32));
            _Pragma("GCC unroll 2") for (int c = 0; c < 4; c += 2) {
                const int q = 4 * g + c;
                const __m256i w0 = _mm256_load_si256((const __m256i *)(pb + q * 32));
                const __m256i w1 = _mm256_load_si256((const __m256i *)(pb + q * 32 + 32));
                _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                    const __m256i x0 = bcast_quad(xa[t][b].qs + 4 * q), x1 = bcast_quad(xa[t][b].qs + 4 * q + 4);
                    if (SGN) {
                        const __m256i p0 = _mm256_maddubs_epi16(_mm256_sign_epi8(w0, w0), _mm256_sign_epi8(x0, w0));
                        const __m256i p1 = _mm256_maddubs_epi16(_mm256_sign_epi8(w1, w1), _mm256_sign_epi8(x1, w1));
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(p0, sc),
                                                                             _mm256_madd_epi16(p1, sc)));
                    } else {
                        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w0, x0), _mm256_maddubs_epi16(w1, x1));
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, sc));
                    }
                }
            }
        }
        if (!SGN)
            _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) { /* coef pairs against bsum pairs: one VPMADDWD */
                const __m256i cf = _mm256_load_si256((const __m256i *)(pb + QK_COEF + j * 32));
                _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
                    iterm[t] = _mm256_add_epi32(iterm[t], _mm256_madd_epi16(cf, bcast_quad(&xa[t][b].bsums[2 * j])));
            }
        const __m256 d = _mm256_load_ps((const float *)(pb + QK_D)), dmin = _mm256_load_ps((const float *)(pb + QK_DMIN));
        /* (d * dx) * isum - (dmin * dx) * imin, as ref.c, lane by lane */
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            const __m256i is = MIN ? isum[t] : _mm256_sub_epi32(isum[t], iterm[t]);
            const __m256i im = MIN ? iterm[t] : _mm256_setzero_si256();
            const __m256 dx = _mm256_set1_ps(xa[t][b].d);
            const __m256 p = _mm256_mul_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(is));
            const __m256 mm = _mm256_mul_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(im));
            sum[t] = _mm256_add_ps(sum[t], _mm256_sub_ps(p, mm));
        }
    }
    store_lanes(y + (size_t)t0 * ys, ys, sum, NT, nr);
}

/* One tile: full tiles with the token count a constant, the last tokens
 * one at a time (a token's floats are the same either way). */
#define QG_TILE(fn, A, B)                                                        \
    do {                                                                         \
        if (nt == QG_TOKENS) fn(p, nb, a->data, stride, t0, QG_TOKENS, A, B, yg, ys, nr); \
        else fn(p, nb, a->data, stride, t0, 1, A, B, yg, ys, nr);               \
    } while (0)

void inf_avx2_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t ys, void *pack) {
    const inf_dtype type = w->type;
    const bool b32 = inf_dtype_block_elems(type) == INF_QK;
    const int64_t nb = w->cols / (b32 ? INF_QK : INF_QK_K);
    const size_t bbytes = b32 ? QB_BLOCK : QK_BLOCK, gbytes = (size_t)nb * bbytes;
    const size_t stride = inf_act_row_bytes_quant(type, w->cols);
    const int n_groups = (int)((r1 - r0 + QG_ROWS - 1) / QG_ROWS);
    for (int g = 0; g < n_groups; g++) {
        const int64_t r = r0 + (int64_t)g * QG_ROWS;
        const int nr = (int)INF_MIN(QG_ROWS, r1 - r);
        for (int64_t b = 0; b < nb; b++) {
            char *dst = (char *)pack + (size_t)g * gbytes + (size_t)b * bbytes;
            if (b32) pack_block32(w, r, nr, b, dst);
            else pack_kblock(w, r, nr, b, dst);
        }
    }
    for (int t0 = 0; t0 < a->n;) {
        const int nt = a->n - t0 >= QG_TOKENS ? QG_TOKENS : 1;
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * QG_ROWS;
            const int nr = (int)INF_MIN(QG_ROWS, r1 - r);
            const char *p = (const char *)pack + (size_t)g * gbytes;
            float *yg = y + r;
            switch (type) {
            case INF_DTYPE_Q4_1: case INF_DTYPE_Q5_1: QG_TILE(qgemm32_tile, true, false); break;
            case INF_DTYPE_Q4_0: case INF_DTYPE_Q5_0: QG_TILE(qgemm32_tile, false, false); break;
            case INF_DTYPE_IQ4_NL: QG_TILE(qgemm32_tile, false, true); break;
            case INF_DTYPE_Q2_K: case INF_DTYPE_Q4_K: case INF_DTYPE_Q5_K: QG_TILE(qgemm256_tile, true, false); break;
            case INF_DTYPE_IQ4_XS: QG_TILE(qgemm256_tile, false, true); break;
            default: QG_TILE(qgemm256_tile, false, false); break; /* Q3_K, Q6_K */
            }
        }
        t0 += nt;
    }
}

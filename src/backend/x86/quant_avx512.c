/*
 * quant_avx512.c — matvec of the GGUF block types (core/quant.h) with
 * AVX-512 VNNI, on the activation rows of inf_act_prepare_quant (the dot
 * type's blocks, exactly as ref.c rounds them). A weight row is streamed
 * once per group of up to MV_TOKENS tokens; each block is unpacked once
 * and dotted with every token of the group. Each token's result is
 * computed by the same operations whatever the group, so a row's result
 * never depends on the token count (batch invariance).
 *
 * VPDPBUSD multiplies unsigned by signed bytes. The weights enter as their
 * unsigned codes u = q + c (Q4_0: the nibble, c = 8; Q5_0: 5 bits, c = 16;
 * IQ4_NL, IQ4_XS: table value + 128, c = 128; Q4_1, Q5_1, Q2_K, Q4_K, Q5_K:
 * the code, c = 0 (their mins are separate terms); Q3_K: 3 bits, c = 4;
 * Q6_K: 6 bits, c = 32) and c Σx is subtracted: from the same instruction
 * on the bytes c (32-blocks), or from Q8_K's bsums (super-blocks).
 *
 * Numerics against ref.c (tests/test_kernels.c):
 *   - the super-block types (Q2_K .. Q6_K, IQ4_XS): the super-block's
 *     integer sum is formed exactly (int32 lanes times the integer
 *     sub-block scales, then reduced), then scaled and summed in ref.c's
 *     order: bit-identical.
 *   - Q4_0, Q5_0, IQ4_NL: per pair of blocks the int32 lanes (4 products
 *     each) are converted and scaled by d_w * d_x in f32 lanes, summed at
 *     the end, as the Q8_0 matvec does: within the matvec budget.
 *   - Q4_1, Q5_1: llama.cpp's x86 summation order (rows_q81): within the
 *     matvec budget.
 */
#include "backend/x86/vec_avx2.h"
#include "backend/x86/vec_avx512.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/quant.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

enum { MV_TOKENS = 4, PREFETCH_BYTES = 8192 };

#define INLINE static inline __attribute__((always_inline))

bool inf_avx512_matvec_takes(inf_dtype type) { return inf_dtype_is_quant(type); }

/* ------------------------------------------------------------------ helpers */

/* 32 bytes of nibbles as [low nibbles, high nibbles] (64 codes). */
INLINE __m512i split_nibbles(__m256i q) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, m4)),
                              _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), 1);
}

/* Two 16-byte nibble blocks (each: 32 codes, low nibbles first) as 64 codes
 * in element order: [lo a, hi a, lo b, hi b]. */
INLINE __m512i nibbles2(const uint8_t *qa, const uint8_t *qb) {
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)qa)),
                                              _mm_loadu_si128((const __m128i *)qb), 1);
    return _mm512_shuffle_i64x2(split_nibbles(q), split_nibbles(q), _MM_SHUFFLE(3, 1, 2, 0));
}

/* [a x8, b x8] as int32 lanes. */
INLINE __m512i two_scales(int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(a)), _mm256_set1_epi32(b), 1);
}

/* d (int32 lanes, |d| < 2^15) times s (int32 lanes whose high halves are
 * zero, low halves the int16 scale): exact, in one VPMADDWD. */
INLINE __m512i mul_small(__m512i d, __m512i s) { return _mm512_madd_epi16(d, s); }

INLINE int32_t hsum256_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Σ bsums[j] * s[j] over the 16 groups, s given as 16 int16. */
INLINE int32_t bsum_dot(const int16_t *bsums, __m256i s16) {
    return hsum256_epi32(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)bsums), s16));
}

/* Lane index vectors: lane i of a 64-element vector starting at element
 * 64k of a super-block covers 16-element group 4k + i / 4. */
INLINE __m512i group_index(int k) {
    return _mm512_add_epi32(_mm512_set1_epi32(4 * k), _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
}

INLINE void prefetch_block(const char *p, int lines) {
    for (int i = 0; i < lines; i++) _mm_prefetch(p + PREFETCH_BYTES + 64 * i, _MM_HINT_T1);
}

/* ------------------------------------------------------------------ 32-blocks */

/* The codes of blocks b, b + 1 of a row (b + 1 absent: has2 false, zeros). */
INLINE __m512i codes_pair(inf_dtype type, const char *w0, const char *w1, bool has2) {
    const char *w1s = has2 ? w1 : w0; /* never read past the row */
    __m512i u;
    switch (type) {
    case INF_DTYPE_Q4_1: u = nibbles2(((const inf_block_q4_1 *)w0)->qs, ((const inf_block_q4_1 *)w1s)->qs); break;
    case INF_DTYPE_Q5_0:
    case INF_DTYPE_Q5_1: {
        const size_t qs_at = type == INF_DTYPE_Q5_0 ? offsetof(inf_block_q5_0, qs) : offsetof(inf_block_q5_1, qs);
        const size_t qh_at = type == INF_DTYPE_Q5_0 ? offsetof(inf_block_q5_0, qh) : offsetof(inf_block_q5_1, qh);
        uint32_t h0, h1;
        memcpy(&h0, w0 + qh_at, 4);
        memcpy(&h1, w1s + qh_at, 4);
        const __mmask64 hb = (__mmask64)h0 | (__mmask64)h1 << 32;
        u = _mm512_or_si512(nibbles2((const uint8_t *)w0 + qs_at, (const uint8_t *)w1s + qs_at),
                            _mm512_maskz_mov_epi8(hb, _mm512_set1_epi8(0x10)));
        break;
    }
    case INF_DTYPE_IQ4_NL:
        u = _mm512_shuffle_epi8(inf_avx512_iq4nl_codes(), nibbles2(((const inf_block_iq4_nl *)w0)->qs,
                                                      ((const inf_block_iq4_nl *)w1s)->qs));
        break;
    default: u = nibbles2(((const inf_block_q4_0 *)w0)->qs, ((const inf_block_q4_0 *)w1s)->qs); break;
    }
    return has2 ? u : _mm512_zextsi256_si512(_mm512_castsi512_si256(u));
}

INLINE int code_offset32(inf_dtype type) {
    switch (type) {
    case INF_DTYPE_Q4_0: return 8;
    case INF_DTYPE_Q5_0: return 16;
    case INF_DTYPE_IQ4_NL: return 128;
    default: return 0;
    }
}

__m512i inf_avx512_values_pair(inf_dtype type, const char *w0, const char *w1, bool has2) {
    const __m512i v = _mm512_sub_epi8(codes_pair(type, w0, w1, has2), _mm512_set1_epi8((char)code_offset32(type)));
    return has2 ? v : _mm512_zextsi256_si512(_mm512_castsi512_si256(v));
}

INLINE uint16_t f16_at(const char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* 16 f32 lanes: [a x8, b x8] from two f16 bit patterns. */
INLINE __m512 two_f16(uint16_t a, uint16_t b) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)a)),
                                                   _mm_set1_epi16((short)b), 1));
}

/* Tokens t0 .. t0 + NT - 1 of rows [r0, r1) for a 32-block type. */
INLINE void rows32(inf_dtype type, const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0, int64_t r1,
                   float *y, size_t ys) {
    const int64_t nb = w->cols / INF_QK;
    const size_t wb = inf_dtype_block_bytes(type);
    const bool q8_1 = inf_quant_act_type(type) == INF_ACT_Q8_1;
    const size_t xb = q8_1 ? sizeof(inf_block_q8_1) : sizeof(inf_block_q8_0);
    const size_t xq_at = q8_1 ? offsetof(inf_block_q8_1, qs) : offsetof(inf_block_q8_0, q);
    const int c = code_offset32(type);
    const char *xa[MV_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) xa[t] = (const char *)a->data + (size_t)(t0 + t) * a->stride;
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        __m512 acc[MV_TOKENS][2];
        float msum[MV_TOKENS];
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            acc[t][0] = acc[t][1] = _mm512_setzero_ps();
            msum[t] = 0.0f;
        }
        for (int64_t b = 0; b < nb; b += 2) {
            const bool has2 = b + 1 < nb;
            const char *w0 = wr + (size_t)b * wb, *w1 = w0 + wb;
            if ((b & 3) == 0) prefetch_block(w0, 2);
            const __m512i u = codes_pair(type, w0, w1, has2);
            const __m512 dw = two_f16(f16_at(w0), has2 ? f16_at(w1) : 0);
            float m0 = 0.0f, m1 = 0.0f;
            if (q8_1) {
                m0 = f16c_to_f32(f16_at(w0 + 2));
                m1 = has2 ? f16c_to_f32(f16_at(w1 + 2)) : 0.0f;
            }
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                const char *x0 = xa[t] + (size_t)b * xb, *x1 = x0 + xb;
                const __m256i lo = _mm256_loadu_si256((const __m256i *)(x0 + xq_at));
                const __m256i hi = has2 ? _mm256_loadu_si256((const __m256i *)(x1 + xq_at)) : _mm256_setzero_si256();
                const __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
                __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x);
                if (c) d = _mm512_sub_epi32(d, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)c), x));
                const __m512 s = _mm512_mul_ps(dw, two_f16(f16_at(x0), has2 ? f16_at(x1) : 0));
                acc[t][(b >> 1) & 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc[t][(b >> 1) & 1]);
                if (q8_1) {
                    msum[t] += m0 * f16c_to_f32(f16_at(x0 + 2));
                    if (has2) msum[t] += m1 * f16c_to_f32(f16_at(x1 + 2));
                }
            }
        }
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
            y[(size_t)(t0 + t) * ys + (size_t)r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1])) + msum[t];
    }
}

/* Q4_1, Q5_1 (x Q8_1) in the order of llama.cpp's x86 vec_dot: per block
 * the 8 int32 lanes (4 products each) converted and multiply-added by
 * d_w * d_x into one 8-lane f32 sum, block after block; m_w * s_x summed
 * apart in f32; then hsum(acc) + that. Which rows' activations land on the
 * other side of an int8 rounding boundary depends on these last bits, so
 * following llama.cpp's order keeps inferno's logits on its side. */
INLINE __m256i codes_q81(inf_dtype type, const char *w) {
    const __m128i q = _mm_loadu_si128((const __m128i *)(w + (type == INF_DTYPE_Q4_1 ? offsetof(inf_block_q4_1, qs)
                                                                                 : offsetof(inf_block_q5_1, qs))));
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m256i u = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(q, m4)),
                                        _mm_and_si128(_mm_srli_epi16(q, 4), m4), 1);
    if (type == INF_DTYPE_Q5_1) {
        uint32_t qh;
        memcpy(&qh, ((const inf_block_q5_1 *)w)->qh, 4);
        u = _mm256_or_si256(u, _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(0x10)));
    }
    return u;
}

INLINE float hsum_float_8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

INLINE void rows_q81(inf_dtype type, const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0,
                     int64_t r1, float *y, size_t ys) {
    const int64_t nb = w->cols / INF_QK;
    const size_t wb = inf_dtype_block_bytes(type);
    const inf_block_q8_1 *xa[MV_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
        xa[t] = (const inf_block_q8_1 *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        __m256 acc[MV_TOKENS];
        float summs[MV_TOKENS];
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            acc[t] = _mm256_setzero_ps();
            summs[t] = 0.0f;
        }
        for (int64_t b = 0; b < nb; b++) {
            const char *blk = wr + (size_t)b * wb;
            if ((b & 3) == 0) prefetch_block(blk, 2);
            const __m256i u = codes_q81(type, blk);
            const float dw = f16c_to_f32(f16_at(blk)), mw = f16c_to_f32(f16_at(blk + 2));
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                const inf_block_q8_1 *x = &xa[t][b];
                summs[t] += mw * f16c_to_f32(x->s);
                const __m256i d = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, _mm256_loadu_si256((const __m256i *)x->qs));
                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * f16c_to_f32(x->d)), _mm256_cvtepi32_ps(d), acc[t]);
            }
        }
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
            y[(size_t)(t0 + t) * ys + (size_t)r] = hsum_float_8(acc[t]) + summs[t];
    }
}

/* ------------------------------------------------------------------ super-blocks */

/* One super-block unpacked for the dots: codes u[4] (64 elements each, in
 * order), per-lane scales sc[4], and what the token-independent part of
 * the sum needs. isum = Σ_k lanes(dpbusd(u[k], x[64k..])) · sc[k]
 *   - bias_mul * Σ_g bsums[g] * bias16[g];  imin = Σ_g bsums[g] * min16[g]. */
typedef struct kblock {
    __m512i u[4], sc[4];
    __m256i bias16, min16;
    int bias_mul;  /* c of the header comment */
    bool wide;     /* scales too large for mul_small (IQ4_XS): VPMULLD */
    bool has_min;
    float d, dmin;
} kblock;

/* 16 signed 8-bit scales (one per 16-group) as lane scales of the four
 * 64-element vectors, low halves only (for mul_small). */
INLINE void group_scales(__m128i s16, kblock *k) {
    const __m512i s = _mm512_and_si512(_mm512_cvtepi8_epi32(s16), _mm512_set1_epi32(0xFFFF));
    for (int i = 0; i < 4; i++) k->sc[i] = _mm512_permutexvar_epi32(group_index(i), s);
}

/* [v0, v0, v1, v1, ..., v7, v7] as 16 int16 (a per-32 value for each 16-group). */
INLINE __m256i pairs16_u8(const uint8_t v[8]) {
    const __m128i b = _mm_loadl_epi64((const __m128i *)v);
    return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(b, b));
}

INLINE void unpack_kblock(inf_dtype type, const char *blk, kblock *k) {
    const __m512i m2 = _mm512_set1_epi8(0x03), one = _mm512_set1_epi8(1);
    k->has_min = false;
    k->wide = false;
    k->bias_mul = 0;
    k->d = k->dmin = 0.0f;
    k->min16 = k->bias16 = _mm256_setzero_si256();
    switch (type) {
    case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K: {
        const bool five = type == INF_DTYPE_Q5_K;
        const inf_block_q4_K *x4 = (const inf_block_q4_K *)blk;
        const inf_block_q5_K *x5 = (const inf_block_q5_K *)blk;
        const uint8_t *qs = five ? x5->qs : x4->qs;
        uint8_t sm[16]; /* 8 scales, then 8 mins */
        inf_q4k_scales_mins(five ? x5->scales : x4->scales, sm);
        const uint8_t *sc = sm, *m = sm + 8;
        const __m512i h = five ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x5->qh)) : _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            __m512i u = split_nibbles(_mm256_loadu_si256((const __m256i *)(qs + 32 * j)));
            if (five) { /* bit 2j of qh[l] for the low half, 2j + 1 for the high one */
                const __m512i hs = _mm512_inserti64x4(_mm512_srli_epi16(h, 2 * j),
                                                      _mm512_castsi512_si256(_mm512_srli_epi16(h, 2 * j + 1)), 1);
                u = _mm512_or_si512(u, _mm512_slli_epi16(_mm512_and_si512(hs, one), 4));
            }
            k->u[j] = u;
            k->sc[j] = two_scales(sc[2 * j], sc[2 * j + 1]);
        }
        k->min16 = pairs16_u8(m);
        k->has_min = true;
        k->d = f16c_to_f32(five ? x5->d : x4->d);
        k->dmin = f16c_to_f32(five ? x5->dmin : x4->dmin);
        break;
    }
    case INF_DTYPE_Q6_K: {
        const inf_block_q6_K *x = (const inf_block_q6_K *)blk;
        const __m512i m4 = _mm512_set1_epi8(0x0F);
        for (int h = 0; h < 2; h++) {
            const __m512i ql = _mm512_loadu_si512(x->ql + 64 * h);
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
            const __m512i ha = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
            const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(qh, 4)),
                                                  _mm256_srli_epi16(qh, 6), 1);
            k->u[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(ha, m2), 4));
            k->u[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                              _mm512_slli_epi16(_mm512_and_si512(hb, m2), 4));
        }
        const __m128i s16 = _mm_loadu_si128((const __m128i *)x->scales);
        group_scales(s16, k);
        k->bias16 = _mm256_cvtepi8_epi16(s16);
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
            for (int k2 = 0; k2 < 2; k2++) { /* elements 128h + 64 k2 + (0..63): shifts 4 k2, 4 k2 + 2 */
                const int s = 4 * k2;
                __m512i u = _mm512_and_si512(
                    _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(q, s)), _mm256_srli_epi16(q, s + 2), 1), m2);
                if (three) { /* bit 4h + 2 k2 (+1) of hmask[l] */
                    const int hb = 4 * h + 2 * k2;
                    const __m512i hs = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(hm, hb)),
                                                          _mm256_srli_epi16(hm, hb + 1), 1);
                    u = _mm512_or_si512(u, _mm512_slli_epi16(_mm512_and_si512(hs, one), 2));
                }
                k->u[2 * h + k2] = u;
            }
        }
        __m128i sc;
        if (three) {
            sc = inf_q3k_scales_vec(x3->scales);
            k->bias16 = _mm256_cvtepi8_epi16(sc);
            k->bias_mul = 4;
            k->d = f16c_to_f32(x3->d);
        } else { /* scale: low nibble, min: high nibble */
            const __m128i s = _mm_loadu_si128((const __m128i *)x2->scales), m4 = _mm_set1_epi8(0x0F);
            sc = _mm_and_si128(s, m4);
            k->min16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4));
            k->has_min = true;
            k->d = f16c_to_f32(x2->d);
            k->dmin = f16c_to_f32(x2->dmin);
        }
        group_scales(sc, k);
        break;
    }
    case INF_DTYPE_IQ4_XS: {
        const inf_block_iq4_xs *x = (const inf_block_iq4_xs *)blk;
        int s[8];
        uint8_t sb[8];
        for (int j = 0; j < 8; j++) {
            s[j] = inf_iq4xs_scale(x, j);
            sb[j] = (uint8_t)(int8_t)s[j];
        }
        for (int j = 0; j < 4; j++) {
            k->u[j] = _mm512_shuffle_epi8(inf_avx512_iq4nl_codes(), nibbles2(x->qs + 32 * j, x->qs + 32 * j + 16));
            k->sc[j] = two_scales(s[2 * j], s[2 * j + 1]);
        }
        /* the scales as int16 pairs, sign kept */
        const __m128i b = _mm_loadl_epi64((const __m128i *)sb);
        k->bias16 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(b, b));
        k->bias_mul = 128;
        k->wide = true;
        k->d = f16c_to_f32(x->d);
        break;
    }
    default: break;
    }
}

/* Tokens t0 .. t0 + NT - 1 of rows [r0, r1) for a super-block type. */
INLINE void rows256(inf_dtype type, const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0,
                    int64_t r1, float *y, size_t ys) {
    const int64_t nb = w->cols / INF_QK_K;
    const size_t wb = inf_dtype_block_bytes(type);
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
            kblock k;
            unpack_kblock(type, blk, &k);
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                const inf_block_q8_K *x = &xa[t][b];
                __m512i acc = _mm512_setzero_si512();
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
                    const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), k.u[j], _mm512_loadu_si512(x->qs + 64 * j));
                    acc = _mm512_add_epi32(acc, k.wide ? _mm512_mullo_epi32(d, k.sc[j]) : mul_small(d, k.sc[j]));
                }
                int32_t isum = _mm512_reduce_add_epi32(acc);
                if (k.bias_mul) isum -= k.bias_mul * bsum_dot(x->bsums, k.bias16);
                const int32_t imin = k.has_min ? bsum_dot(x->bsums, k.min16) : 0;
                sum[t] += (k.d * x->d) * (float)isum - (k.dmin * x->d) * (float)imin; /* as ref.c */
            }
        }
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) y[(size_t)(t0 + t) * ys + (size_t)r] = sum[t];
    }
}

/* ------------------------------------------------------------------ matvec */

#define BY_TOKENS(fn, ...)                                   \
    do {                                                     \
        if (nt == 1) fn(__VA_ARGS__, t0, 1, r0, r1, y, ys);  \
        else if (nt == 2) fn(__VA_ARGS__, t0, 2, r0, r1, y, ys); \
        else if (nt == 3) fn(__VA_ARGS__, t0, 3, r0, r1, y, ys); \
        else fn(__VA_ARGS__, t0, 4, r0, r1, y, ys);          \
    } while (0)

_Static_assert(MV_TOKENS == 4, "BY_TOKENS spells out token counts 1..4");

/* One function per type, so that the type is a constant in the kernels. */
#define TYPE_KERNEL(name, kind, type)                                                                         \
    static void name(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t ys) {   \
        for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) {                                                        \
            const int nt = INF_MIN(MV_TOKENS, a->n - t0);                                                     \
            BY_TOKENS(kind, type, w, a);                                                                      \
        }                                                                                                     \
    }

TYPE_KERNEL(mv_q4_0, rows32, INF_DTYPE_Q4_0)
TYPE_KERNEL(mv_q4_1, rows_q81, INF_DTYPE_Q4_1)
TYPE_KERNEL(mv_q5_0, rows32, INF_DTYPE_Q5_0)
TYPE_KERNEL(mv_q5_1, rows_q81, INF_DTYPE_Q5_1)
TYPE_KERNEL(mv_iq4_nl, rows32, INF_DTYPE_IQ4_NL)
TYPE_KERNEL(mv_q2_k, rows256, INF_DTYPE_Q2_K)
TYPE_KERNEL(mv_q3_k, rows256, INF_DTYPE_Q3_K)
TYPE_KERNEL(mv_q4_k, rows256, INF_DTYPE_Q4_K)
TYPE_KERNEL(mv_q5_k, rows256, INF_DTYPE_Q5_K)
TYPE_KERNEL(mv_q6_k, rows256, INF_DTYPE_Q6_K)
TYPE_KERNEL(mv_iq4_xs, rows256, INF_DTYPE_IQ4_XS)

void inf_avx512_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
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

/* ------------------------------------------------------------------ gemm (super-block types) */

/* The prefill gemm of the super-block types, bit-identical to the matvec
 * (and ref.c): a panel of up to INF_X86_GEMM_ROWS rows is packed into
 * groups of 16 rows, per super-block
 *   codes [64 quads][16 rows][4]  u8, the unsigned codes of the matvec
 *   scale [16 groups][16 rows]    int32, the integer scale of each 16-group
 *   coef  [16 groups][16 rows]    int32, per 16-group: the min (Q2_K, Q4_K,
 *                                  Q5_K) or c * scale (Q3_K, Q6_K, IQ4_XS)
 *   d, dmin [16 rows]             f32
 * and a register tile of 16 rows (lane = row) x up to 8 tokens forms each
 * (row, token) super-block's integer sums exactly: per 16- or 32-element
 * sub-block a VPDPBUSD sum with the token's quads broadcast, times the
 * sub-block scale; the coef terms with the token's bsums; then the f32
 * scaling of ref.c, lane by lane. The activations are the matvec's rows
 * (inf_act_prepare_quant), one per token. */
enum {
    QG_ROWS = 16,
    QG_TOKENS = 8,
    QG_CODES = 64 * 64,                      /* 4096 */
    QG_SCALE = QG_CODES,                     /* 16 x 64 bytes */
    QG_COEF = QG_SCALE + 16 * 64,
    QG_D = QG_COEF + 16 * 64,
    QG_DMIN = QG_D + 64,
    QG_BLOCK = QG_DMIN + 64,                 /* 6272 bytes per super-block per group */
};

size_t inf_avx512_qgemm_pack_bytes(inf_dtype type, int64_t cols) {
    if (inf_dtype_block_elems(type) == INF_QK) return inf_avx512_qgemm32_pack_bytes(cols);
    return (INF_X86_GEMM_ROWS / QG_ROWS) * (size_t)(cols / INF_QK_K) * QG_BLOCK;
}

/* inf_quantize_row_q8_K 16 lanes at a time, bit for bit: the first
 * element of largest magnitude (NaN ignored) sets iscale = -127 / max;
 * each product iscale * x rounded to nearest even (VCVTPS2DQ in the
 * default rounding mode, nearest_int's rounding for the |v| <= 127 it
 * sees; a NaN product, an infinite input's, gives INT_MIN, whose low byte
 * is nearest_int's 0), capped at 127, its low byte kept; one lane group
 * of 16 is one bsum. */
void inf_avx512_quantize_row_q8_K(const float *x, inf_block_q8_K *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK_K; b++) {
        const float *xb = x + b * INF_QK_K;
        __m512 v[16], m = _mm512_setzero_ps();
        for (int g = 0; g < 16; g++) {
            v[g] = _mm512_loadu_ps(xb + 16 * g);
            m = _mm512_max_ps(_mm512_abs_ps(v[g]), m); /* vmaxps keeps m for a NaN lane */
        }
        const float amax = _mm512_reduce_max_ps(m);
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        float max = 0.0f;
        for (int g = 0; g < 16; g++) {
            const __mmask16 at = _mm512_cmp_ps_mask(_mm512_abs_ps(v[g]), _mm512_set1_ps(amax), _CMP_EQ_OQ);
            if (at) {
                max = xb[16 * g + __builtin_ctz(at)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 vs = _mm512_set1_ps(iscale);
        for (int g = 0; g < 16; g++) {
            const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vs, v[g])), _mm512_set1_epi32(127));
            const __m128i q8 = _mm512_cvtepi32_epi8(q);
            _mm_storeu_si128((__m128i *)(y[b].qs + 16 * g), q8);
            y[b].bsums[g] = (int16_t)_mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q8));
        }
        y[b].d = 1.0f / iscale;
    }
}

void inf_avx512_act_prepare_quant(inf_dtype type, const float *x, int64_t cols, void *row) {
    switch (inf_quant_act_type(type)) {
    case INF_ACT_Q8_K: inf_avx512_quantize_row_q8_K(x, row, cols); break;
    case INF_ACT_Q8_1: inf_avx512_quantize_row_q8_1(x, row, cols); break;
    case INF_ACT_Q8_0: inf_avx512_quantize_row_q8_0(x, row, cols); break;
    }
}

/* The matvec's activation rows; for the 32-block types with the quants
 * flipped to x ^ 0x80 (= x + 128 as unsigned), the operand their gemm
 * broadcasts (see qgemm32_tile). */
void inf_avx512_qgemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf) {
    (void)n;
    inf_act_prepare_quant_rows(type, x, cols, t0, t1, buf, inf_dtype_block_elems(type) == INF_QK,
                               inf_avx512_act_prepare_quant);
}

/* One super-block of one row: the codes in element order, and the scale,
 * coef (per 16-group), d and dmin of the pack (x86_kernels.h). */
void inf_avx512_unpack_kquant(inf_dtype type, const char *blk, uint8_t codes[256], int32_t scale[16], int32_t coef[16],
                       float *d, float *dmin) {
    kblock k;
    memset(&k, 0, sizeof k); /* the types without super-blocks leave it unset (GCC's SAN build sees that path) */
    unpack_kblock(type, blk, &k);
    for (int j = 0; j < 4; j++) _mm512_storeu_si512(codes + 64 * j, k.u[j]);
    *d = k.d;
    *dmin = k.dmin;
    switch (type) {
    case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K: {
        const uint8_t *s12 = type == INF_DTYPE_Q5_K ? ((const inf_block_q5_K *)blk)->scales : ((const inf_block_q4_K *)blk)->scales;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            inf_q4k_scale_min(j, s12, &sc, &m);
            scale[2 * j] = scale[2 * j + 1] = sc;
            coef[2 * j] = coef[2 * j + 1] = m;
        }
        break;
    }
    case INF_DTYPE_Q6_K:
        for (int g = 0; g < 16; g++) {
            scale[g] = ((const inf_block_q6_K *)blk)->scales[g];
            coef[g] = 32 * scale[g];
        }
        break;
    case INF_DTYPE_Q2_K:
        for (int g = 0; g < 16; g++) {
            scale[g] = ((const inf_block_q2_K *)blk)->scales[g] & 0xF;
            coef[g] = ((const inf_block_q2_K *)blk)->scales[g] >> 4;
        }
        break;
    case INF_DTYPE_Q3_K: {
        int8_t sc[16];
        inf_q3k_scales(((const inf_block_q3_K *)blk)->scales, sc);
        for (int g = 0; g < 16; g++) {
            scale[g] = sc[g];
            coef[g] = 4 * sc[g];
        }
        break;
    }
    case INF_DTYPE_IQ4_XS:
        for (int j = 0; j < 8; j++) {
            scale[2 * j] = scale[2 * j + 1] = inf_iq4xs_scale((const inf_block_iq4_xs *)blk, j);
            coef[2 * j] = coef[2 * j + 1] = 128 * scale[2 * j];
        }
        break;
    default: break;
    }
}

/* Rows [r, r + nr) of super-block b packed into dst (QG_BLOCK bytes). */
static void pack_qgroup(const inf_weight *w, int64_t r, int nr, int64_t b, char *dst) {
    uint8_t codes[QG_ROWS][256];
    int32_t scale[QG_ROWS][16], coef[QG_ROWS][16];
    float d[QG_ROWS], dmin[QG_ROWS];
    const size_t wb = inf_dtype_block_bytes(w->type);
    for (int i = 0; i < QG_ROWS; i++) {
        if (i >= nr) {
            memset(codes[i], 0, 256);
            memset(scale[i], 0, sizeof scale[i]);
            memset(coef[i], 0, sizeof coef[i]);
            d[i] = dmin[i] = 0.0f;
            continue;
        }
        inf_avx512_unpack_kquant(w->type, (const char *)w->data + (size_t)(r + i) * w->row_bytes + (size_t)b * wb, codes[i], scale[i],
                   coef[i], &d[i], &dmin[i]);
    }
    const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(256));
    for (int q = 0; q < 64; q++)
        _mm512_store_si512(dst + q * 64, _mm512_i32gather_epi32(rows, (const int *)&codes[0][4 * q], 1));
    for (int g = 0; g < 16; g++)
        for (int i = 0; i < QG_ROWS; i++) {
            ((int32_t *)(dst + QG_SCALE + g * 64))[i] = scale[i][g];
            /* coef lanes feed VPMADDWD against a bsum in the low half: keep the low 16 bits */
            ((int32_t *)(dst + QG_COEF + g * 64))[i] = coef[i][g] & 0xFFFF;
        }
    memcpy(dst + QG_D, d, 64);
    memcpy(dst + QG_DMIN, dmin, 64);
}

/* Tokens [t0, t0 + NT) times one packed group; SUB: elements per scale run
 * (32 for Q4_K, Q5_K, IQ4_XS; 16 for the others); MIN: coef is a min. */
INLINE void qgemm_tile(const char *pack, int64_t nb, const char *act, size_t stride, int t0, const int NT, const int SUB,
                       const bool MIN, float *y, size_t ys, __mmask16 rows) {
    const inf_block_q8_K *xa[QG_TOKENS];
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) xa[t] = (const inf_block_q8_K *)(act + (size_t)(t0 + t) * stride);
    __m512 sum[QG_TOKENS];
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) sum[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *pb = pack + (size_t)b * QG_BLOCK;
        __m512i isum[QG_TOKENS], iterm[QG_TOKENS];
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) isum[t] = iterm[t] = _mm512_setzero_si512();
        for (int s = 0; s < 256 / SUB; s++) {
            __m512i dsub[QG_TOKENS];
            _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) dsub[t] = _mm512_setzero_si512();
            _Pragma("GCC unroll 8") for (int c = 0; c < SUB / 4; c++) {
                const int q = s * (SUB / 4) + c;
                const __m512i wq = _mm512_load_si512(pb + q * 64);
                _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {
                    int32_t xq;
                    memcpy(&xq, xa[t][b].qs + 4 * q, 4);
                    dsub[t] = _mm512_dpbusd_epi32(dsub[t], wq, _mm512_set1_epi32(xq));
                }
            }
            const __m512i sc = _mm512_load_si512(pb + QG_SCALE + (s * SUB / 16) * 64);
            _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++)
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dsub[t], sc));
        }
        for (int g = 0; g < 16; g++) {
            const __m512i cf = _mm512_load_si512(pb + QG_COEF + g * 64);
            _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++)
                iterm[t] = _mm512_add_epi32(iterm[t], _mm512_madd_epi16(cf, _mm512_set1_epi32((uint16_t)xa[t][b].bsums[g])));
        }
        const __m512 d = _mm512_load_ps((const float *)(pb + QG_D)), dmin = _mm512_load_ps((const float *)(pb + QG_DMIN));
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {
            const __m512i is = MIN ? isum[t] : _mm512_sub_epi32(isum[t], iterm[t]);
            const __m512i im = MIN ? iterm[t] : _mm512_setzero_si512();
            const __m512 dx = _mm512_set1_ps(xa[t][b].d);
            /* (d * dx) * isum - (dmin * dx) * imin, as ref.c, lane by lane */
            const __m512 p = _mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(is));
            const __m512 m = _mm512_mul_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(im));
            sum[t] = _mm512_add_ps(sum[t], _mm512_sub_ps(p, m));
        }
    }
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)(t0 + t) * ys, rows, sum[t]);
}

#define QG_CASES(SUB, MIN)                                                                                          \
    switch (nt) {                                                                                                   \
    case 1: qgemm_tile(pack, nb, act, stride, t0, 1, SUB, MIN, y, ys, rows); break;                                 \
    case 2: qgemm_tile(pack, nb, act, stride, t0, 2, SUB, MIN, y, ys, rows); break;                                 \
    case 3: qgemm_tile(pack, nb, act, stride, t0, 3, SUB, MIN, y, ys, rows); break;                                 \
    case 4: qgemm_tile(pack, nb, act, stride, t0, 4, SUB, MIN, y, ys, rows); break;                                 \
    case 5: qgemm_tile(pack, nb, act, stride, t0, 5, SUB, MIN, y, ys, rows); break;                                 \
    case 6: qgemm_tile(pack, nb, act, stride, t0, 6, SUB, MIN, y, ys, rows); break;                                 \
    case 7: qgemm_tile(pack, nb, act, stride, t0, 7, SUB, MIN, y, ys, rows); break;                                 \
    default: qgemm_tile(pack, nb, act, stride, t0, 8, SUB, MIN, y, ys, rows); break;                                \
    }

_Static_assert(QG_TOKENS == 8, "QG_CASES spells out token counts 1..8");

static void run_qtile(inf_dtype type, const char *pack, int64_t nb, const char *act, size_t stride, int t0, int nt,
                      float *y, size_t ys, __mmask16 rows) {
    switch (type) {
    case INF_DTYPE_Q4_K: case INF_DTYPE_Q5_K: QG_CASES(32, true) break;
    case INF_DTYPE_IQ4_XS: QG_CASES(32, false) break;
    case INF_DTYPE_Q2_K: QG_CASES(16, true) break;
    default: QG_CASES(16, false) break; /* Q3_K, Q6_K */
    }
}

/* Every token times rows [r0, r1) packed at pack (pack_qgroup's groups). */
static void run_qgroups(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                        const char *pack) {
    const int64_t nb = w->cols / INF_QK_K;
    const size_t gbytes = (size_t)nb * QG_BLOCK, stride = inf_act_row_bytes_quant(w->type, w->cols);
    const int n_groups = (int)((r1 - r0 + QG_ROWS - 1) / QG_ROWS);
    for (int t0 = 0; t0 < a->n; t0 += QG_TOKENS) {
        const int nt = INF_MIN(QG_TOKENS, a->n - t0);
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * QG_ROWS;
            const int nr = (int)INF_MIN(QG_ROWS, r1 - r);
            run_qtile(w->type, pack + g * gbytes, nb, a->data, stride, t0, nt, y + r, y_stride, (__mmask16)((1u << nr) - 1));
        }
    }
}

void inf_avx512_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                      void *pack) {
    if (inf_dtype_block_elems(w->type) == INF_QK) {
        inf_avx512_qgemm32(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    const int64_t nb = w->cols / INF_QK_K;
    const size_t gbytes = (size_t)nb * QG_BLOCK;
    const int n_groups = (int)((r1 - r0 + QG_ROWS - 1) / QG_ROWS);
    for (int g = 0; g < n_groups; g++) {
        const int64_t r = r0 + (int64_t)g * QG_ROWS;
        for (int64_t b = 0; b < nb; b++)
            pack_qgroup(w, r, (int)INF_MIN(QG_ROWS, r1 - r), b, (char *)pack + g * gbytes + (size_t)b * QG_BLOCK);
    }
    run_qgroups(w, a, r0, r1, y, y_stride, pack);
}

/* ------------------------------------------------------------------ super-blocks packed at load */

/* The super-block types packed at load (x86_kernels.h: Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K, IQ4_XS): lane = row, so a super-block's integer sums of 16 rows form in
 * vector lanes, with no horizontal sums and no scalar scale decoding. One
 * load of 4-byte units gives two quads of codes (the low and the high
 * nibbles; Q5_K and Q6_K OR in their top bits from their qh units), and
 * VPDPBUSD with the token's quads broadcast gathers Σ code x per row and
 * sub-block:
 *   Q4_K: two sums per 32-element sub-block (units 0-3, 4-7: |sum| <= 16
 *     * 15 * 128 < 2^15) times the scale by VPDPWSSD (the scale in the low
 *     half of its lane); the mins by VPDPWSSD of [m, m] per lane against
 *     the token's bsums of the sub-block's two 16-groups, read as one int32;
 *   Q5_K: as Q4_K, its scales by VPMULLD (codes to 31: sums of 16 pass 2^15);
 *   Q6_K: one sum per 16-group times its signed scale by VPMULLD; less 32
 *     Σ scale * bsum (VPDPWSSD of the scale pairs against bsum pairs);
 *   Q3_K: as Q6_K, codes of 3 bits (two from qs, the third from hmask, q
 *     + 4) and less 4 Σ scale * bsum;
 *   Q2_K: as Q3_K without the third bit or the bias, its mins as Q4_K's
 *     (VPDPWSSD of [m, m] pairs against the bsums);
 *   IQ4_XS: codes from the table by VPSHUFB, one sum per 32 by VPMULLD,
 *     less 128 Σ scale * bsum.
 * Then ref.c's f32 steps lane by lane: exact integers and the same
 * operations, so ref.c's bits at any token count. */
enum {
    PK_TOKENS = 4, /* tokens per pass of the packed tiles */
    Q6P_BLOCK = INF_X86_Q6K_BLOCK,
};

/* Super-blocks of a packed group read ahead by software prefetch (into
 * L2, or non-temporally as tuned: inf_avx512_prefetch_weights), 0 for none, by
 * CPU. One 2 GiB matrix of 1024 columns, 1 token, 2 threads, in % of the
 * read bandwidth measured in the same run (before prefetching NTA):
 *   - Intel Xeon (Sapphire Rapids class): only Q6_K, the most work per
 *     byte, gains (25.6 GB/s against 20.7 without, 25.0 two ahead); the
 *     others stream faster on the hardware prefetchers alone (Q4_K
 *     27.7-28.4 GB/s against 23.3-23.9, Q5_K 26.7-26.9 against 26.0-26.2,
 *     IQ4_XS 26.2 against 23.9): a software prefetch holds a fill buffer
 *     that a demand load could use;
 *   - AMD Zen 5 (EPYC, DRAM latency ~360 ns in its VM): every type gains
 *     from two ahead: Q4_K 89-92% against 69-70% without (79-83% one
 *     ahead), Q5_K 61-68% against 49-53%, IQ4_XS 91-101% against 66-75%,
 *     Q6_K 96-110% two ahead against 67-100% one ahead. Four ahead
 *     against two, a 0.6B decode token by token in one process (2
 *     threads, 305-366 alternating pairs): Q4_K_M +3.2% and +3.3%, Q5_K_M
 *     +1.2%, IQ4_XS +3.5%; three +2.6%, five +1.7%, six +3.6%, eight
 *     +1.5%, twelve -5.7% (Q4_K_M). */
static int packed_prefetch_blocks(inf_dtype type) {
    if (inf_x86_cpu_is_amd()) return 4;
    return type == INF_DTYPE_Q6_K ? 1 : 0;
}

/* The 8 scales and 8 mins of a packed Q4_K (Q5_K) super-block's 16 rows,
 * from its 12 x 16 scale bytes s, as bytes [sub-block][16 rows]
 * (get_scale_min_k4 of core/quant.h, 16 rows at once). */
INLINE void q4k_packed_scales(const char *s, uint8_t sc[128], uint8_t mn[128]) {
    const __m512i z0 = _mm512_load_si512(s), z1 = _mm512_load_si512(s + 64), z2 = _mm512_load_si512(s + 128);
    const __m512i m63 = _mm512_set1_epi8(63), m0f = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    /* sub-blocks 0-3: bytes 0-3 and 4-7 (low 6 bits); 4-7: the low (high)
     * nibbles of bytes 8-11, bits 4-5 from the top bits of bytes 0-3 (4-7) */
    _mm512_store_si512(sc, _mm512_and_si512(z0, m63));
    _mm512_store_si512(mn, _mm512_and_si512(z1, m63));
    _mm512_store_si512(sc + 64, _mm512_or_si512(_mm512_and_si512(z2, m0f), _mm512_and_si512(_mm512_srli_epi16(z0, 2), m30)));
    _mm512_store_si512(mn + 64, _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(z2, 4), m0f),
                                                _mm512_and_si512(_mm512_srli_epi16(z1, 2), m30)));
}

/* The 8 signed scales (ls - 32) of a packed IQ4_XS super-block's 16 rows,
 * as int32 [sub-block][16 rows] (inf_iq4xs_scale, 16 rows at once). */
INLINE void iq4xs_packed_scales(const char *sb, int32_t s[8][16]) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(sb + INF_X86_IQ4XS_SCALES_H)));
    const __m512i m0f = _mm512_set1_epi32(0xF), m3 = _mm512_set1_epi32(3), bias = _mm512_set1_epi32(32);
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
        const __m512i l = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(sb + INF_X86_IQ4XS_SCALES_L + 16 * (j / 2))));
        const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(l, (unsigned)(4 * (j % 2))), m0f);
        const __m512i hi = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, (unsigned)(2 * j)), m3), 4);
        _mm512_store_si512(s[j], _mm512_sub_epi32(_mm512_or_si512(lo, hi), bias));
    }
}

/* Bit j of every byte of h moved to bit 4 (the others cleared): Q5_K's
 * fifth bit of sub-block j's codes. */
INLINE __m512i fifth_bit(__m512i h, int j) {
    const __m512i v = j <= 4 ? _mm512_slli_epi16(h, (unsigned)(4 - j)) : _mm512_srli_epi16(h, (unsigned)(j - 4));
    return _mm512_and_si512(v, _mm512_set1_epi8(0x10));
}

/* Unit u of pair p of a packed Q4_K (five: Q5_K) super-block sb: the
 * codes of quad u of sub-blocks 2p (lo) and 2p + 1 (hi), 16 rows. */
INLINE void q45k_unit(const char *sb, bool five, int p, int u, __m512i *lo, __m512i *hi) {
    const __m512i m0f = _mm512_set1_epi8(0x0F);
    const __m512i v = _mm512_load_si512(sb + (five ? INF_X86_Q5K_CODES : INF_X86_Q4K_CODES) + p * 512 + u * 64);
    *lo = _mm512_and_si512(v, m0f);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
    if (five) {
        const __m512i h = _mm512_load_si512(sb + INF_X86_Q5K_QH + u * 64);
        *lo = _mm512_or_si512(*lo, fifth_bit(h, 2 * p));
        *hi = _mm512_or_si512(*hi, fifth_bit(h, 2 * p + 1));
    }
}

/* Unit u of half h of a packed Q6_K super-block sb (its codes): the codes
 * of elements 128h + 4u .. + 3 (lo) and 128h + 64 + 4u .. + 3 (hi), 16 rows. */
INLINE void q6k_unit(const char *sb, int h, int u, __m512i *lo, __m512i *hi) {
    const __m512i m0f = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i v = _mm512_load_si512(sb + h * 1024 + u * 64);
    const __m512i hb = _mm512_load_si512(sb + 2048 + h * 512 + (u % 8) * 64);
    const unsigned s = 2 * (unsigned)(u / 8); /* bit pairs 0, 1 (low nibbles), 2, 3 (high) */
    *lo = _mm512_or_si512(_mm512_and_si512(v, m0f), _mm512_and_si512(_mm512_slli_epi16(hb, 4 - s), m30));
    *hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m0f), _mm512_and_si512(_mm512_srli_epi16(hb, s), m30));
}

/* Q2_K's and Q3_K's qs unit v of half h (at codes), shifted so that bit
 * pair p (elements 128h + 32p + 4v .. + 3) is each byte's low two bits. */
INLINE __m512i crumbs(const char *codes, int h, int p, int v) {
    return _mm512_srli_epi16(_mm512_load_si512(codes + (8 * h + v) * 64), (unsigned)(2 * p));
}

/* A packed Q2_K super-block's (sb) codes q of elements 128h + 32p + 4v ..
 * + 3, 16 rows. */
INLINE __m512i q2k_codes(const char *sb, int h, int p, int v) {
    return _mm512_and_si512(crumbs(sb + INF_X86_Q2K_CODES, h, p, v), _mm512_set1_epi8(0x03));
}

/* A packed Q3_K super-block's (sb) codes q + 4 of elements 128h + 32p +
 * 4v .. + 3, 16 rows: bit pair p of qs unit v of half h, and bit 4h + p
 * of hmask unit v as bit 2. The 16-bit shifts keep each kept bit within
 * its byte (pairs from bits up to 7, the third bit from bits 0 to 7). */
INLINE __m512i q3k_codes(const char *sb, int h, int p, int v) {
    const __m512i qs = crumbs(sb + INF_X86_Q3K_CODES, h, p, v);
    const __m512i hm = _mm512_load_si512(sb + INF_X86_Q3K_HMASK + v * 64);
    const int bit = 4 * h + p;
    const __m512i third = bit >= 2 ? _mm512_srli_epi16(hm, (unsigned)(bit - 2)) : _mm512_slli_epi16(hm, (unsigned)(2 - bit));
    /* 0x03 ? qs : (third & 4), bit by bit (VPTERNLOGD 0xCA: a ? b : c) */
    return _mm512_ternarylogic_epi32(_mm512_set1_epi8(0x03), qs, _mm512_and_si512(third, _mm512_set1_epi8(0x04)), 0xCA);
}

/* The 4-byte units of rows[i] + at .. + 4 * units (zeros for a missing
 * row), transposed to [unit][16 rows][4] at dst; each row's 64 bytes from
 * at are readable (the super-block's). */
static void pack_units(const char *const rows[QG_ROWS], size_t at, int units, char *dst) {
    for (int h = 0; 16 * h < units; h++) {
        __m512i v[QG_ROWS];
        for (int i = 0; i < QG_ROWS; i++) v[i] = rows[i] ? _mm512_loadu_si512(rows[i] + at + 64 * h) : _mm512_setzero_si512();
        inf_avx512_transpose16(v);
        for (int u = 0; u < INF_MIN(16, units - 16 * h); u++) _mm512_store_si512(dst + h * 1024 + u * 64, v[u]);
    }
}

void inf_avx512_pack_kquant_group(const inf_weight *w, int64_t r, int nr, void *dst) {
    const int64_t nb = w->cols / INF_QK_K;
    const size_t wb = inf_dtype_block_bytes(w->type);
    char *group = dst;
    for (int64_t b = 0; b < nb; b++) {
        const char *rows[QG_ROWS];
        for (int i = 0; i < QG_ROWS; i++)
            rows[i] = i < nr ? (const char *)w->data + (size_t)(r + i) * w->row_bytes + (size_t)b * wb : NULL;
        uint16_t d[QG_ROWS], dmin[QG_ROWS];
        if (w->type == INF_DTYPE_Q4_K || w->type == INF_DTYPE_Q5_K) {
            const bool five = w->type == INF_DTYPE_Q5_K;
            char *sb = group + (size_t)b * (five ? INF_X86_Q5K_BLOCK : INF_X86_Q4K_BLOCK);
            char *scales = sb + (five ? INF_X86_Q5K_SCALES : INF_X86_Q4K_SCALES);
            pack_units(rows, five ? offsetof(inf_block_q5_K, qs) : offsetof(inf_block_q4_K, qs), 32,
                       sb + (five ? INF_X86_Q5K_CODES : INF_X86_Q4K_CODES));
            if (five) pack_units(rows, offsetof(inf_block_q5_K, qh), 8, sb + INF_X86_Q5K_QH);
            for (int i = 0; i < QG_ROWS; i++) { /* d, dmin and the scales lie alike in both types */
                const inf_block_q4_K *x = (const inf_block_q4_K *)rows[i];
                for (int k = 0; k < 12; k++) scales[k * 16 + i] = x ? (char)x->scales[k] : 0;
                d[i] = x ? x->d : 0;
                dmin[i] = x ? x->dmin : 0;
            }
            memcpy(sb + (five ? INF_X86_Q5K_D : INF_X86_Q4K_D), d, sizeof d);
            memcpy(sb + (five ? INF_X86_Q5K_DMIN : INF_X86_Q4K_DMIN), dmin, sizeof dmin);
        } else if (w->type == INF_DTYPE_IQ4_XS) {
            char *sb = group + (size_t)b * INF_X86_IQ4XS_BLOCK;
            pack_units(rows, offsetof(inf_block_iq4_xs, qs), 32, sb + INF_X86_IQ4XS_CODES);
            uint16_t sh[QG_ROWS];
            for (int i = 0; i < QG_ROWS; i++) {
                const inf_block_iq4_xs *x = (const inf_block_iq4_xs *)rows[i];
                for (int k = 0; k < 4; k++) sb[INF_X86_IQ4XS_SCALES_L + k * 16 + i] = x ? (char)x->scales_l[k] : 0;
                sh[i] = x ? x->scales_h : 0;
                d[i] = x ? x->d : 0;
            }
            memcpy(sb + INF_X86_IQ4XS_SCALES_H, sh, sizeof sh);
            memcpy(sb + INF_X86_IQ4XS_D, d, sizeof d);
        } else if (w->type == INF_DTYPE_Q2_K) {
            char *sb = group + (size_t)b * INF_X86_Q2K_BLOCK;
            pack_units(rows, offsetof(inf_block_q2_K, qs), 16, sb + INF_X86_Q2K_CODES);
            for (int i = 0; i < QG_ROWS; i++) {
                const inf_block_q2_K *x = (const inf_block_q2_K *)rows[i];
                for (int g = 0; g < 16; g++) sb[INF_X86_Q2K_SCALES + g * 16 + i] = x ? (char)x->scales[g] : 0;
                d[i] = x ? x->d : 0;
                dmin[i] = x ? x->dmin : 0;
            }
            memcpy(group + inf_x86_q2k_d_at(nb, b), d, sizeof d);
            memcpy(group + inf_x86_q2k_d_at(nb, b) + 32, dmin, sizeof dmin);
        } else if (w->type == INF_DTYPE_Q3_K) {
            char *sb = group + (size_t)b * INF_X86_Q3K_BLOCK;
            pack_units(rows, offsetof(inf_block_q3_K, qs), 16, sb + INF_X86_Q3K_CODES);
            pack_units(rows, offsetof(inf_block_q3_K, hmask), 8, sb + INF_X86_Q3K_HMASK);
            for (int i = 0; i < QG_ROWS; i++) {
                const inf_block_q3_K *x = (const inf_block_q3_K *)rows[i];
                int8_t sc[16] = {0};
                if (x) inf_q3k_scales(x->scales, sc);
                for (int g = 0; g < 16; g++) sb[INF_X86_Q3K_SCALES + g * 16 + i] = sc[g];
                d[i] = x ? x->d : 0;
            }
            memcpy(group + inf_x86_q3k_d_at(nb, b), d, sizeof d);
        } else { /* Q6_K */
            char *sb = group + (size_t)b * Q6P_BLOCK + INF_X86_Q6K_CODES;
            pack_units(rows, offsetof(inf_block_q6_K, ql), 32, sb);
            /* qh: 64 bytes, 16 units; halves as [8 units] each, in order */
            pack_units(rows, offsetof(inf_block_q6_K, qh), 16, sb + 2048);
            int8_t *sc = (int8_t *)(group + (size_t)b * Q6P_BLOCK + INF_X86_Q6K_SCALES);
            for (int i = 0; i < QG_ROWS; i++) {
                const inf_block_q6_K *x = (const inf_block_q6_K *)rows[i];
                for (int g = 0; g < 16; g++) sc[g * 16 + i] = x ? x->scales[g] : 0;
                d[i] = x ? x->d : 0;
            }
            memcpy(group + inf_x86_q6k_d_at(nb, b), d, sizeof d);
        }
    }
}

void inf_avx512_unpack_packed_kquant(inf_dtype type, const char *group, int64_t nb, int64_t b, uint8_t *quads,
                                     int32_t *scale, int32_t *coef, float *d, float *dmin) {
    const __m512i m0f = _mm512_set1_epi8(0x0F);
    if (type == INF_DTYPE_Q4_K || type == INF_DTYPE_Q5_K) {
        const bool five = type == INF_DTYPE_Q5_K;
        const char *sb = group + (size_t)b * (five ? INF_X86_Q5K_BLOCK : INF_X86_Q4K_BLOCK);
        for (int p = 0; p < 4; p++)
            for (int u = 0; u < 8; u++) { /* elements 64p + 4u (quad 16p + u) and 64p + 32 + 4u (quad 16p + 8 + u) */
                __m512i lo, hi;
                q45k_unit(sb, five, p, u, &lo, &hi);
                _mm512_storeu_si512(quads + (16 * p + u) * 64, lo);
                _mm512_storeu_si512(quads + (16 * p + 8 + u) * 64, hi);
            }
        uint8_t sc[128] __attribute__((aligned(64))), mn[128] __attribute__((aligned(64)));
        q4k_packed_scales(sb + (five ? INF_X86_Q5K_SCALES : INF_X86_Q4K_SCALES), sc, mn);
        for (int g = 0; g < 16; g++) { /* sub-block g / 2 */
            _mm512_storeu_si512(scale + 16 * g, _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(sc + 16 * (g / 2)))));
            _mm512_storeu_si512(coef + 16 * g, _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(mn + 16 * (g / 2)))));
        }
        _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sb + (five ? INF_X86_Q5K_D : INF_X86_Q4K_D)))));
        _mm512_storeu_ps(dmin, _mm512_cvtph_ps(_mm256_load_si256(
                                   (const __m256i *)(sb + (five ? INF_X86_Q5K_DMIN : INF_X86_Q4K_DMIN)))));
        return;
    }
    if (type == INF_DTYPE_IQ4_XS) {
        const char *sb = group + (size_t)b * INF_X86_IQ4XS_BLOCK;
        for (int u = 0; u < 32; u++) { /* elements 32j + 4i (quad 8j + i) and + 16 (quad 8j + 4 + i), j = u / 4, i = u % 4 */
            const __m512i v = _mm512_load_si512(sb + INF_X86_IQ4XS_CODES + u * 64);
            const int q = 8 * (u / 4) + u % 4;
            _mm512_storeu_si512(quads + q * 64, _mm512_shuffle_epi8(inf_avx512_iq4nl_codes(), _mm512_and_si512(v, m0f)));
            _mm512_storeu_si512(quads + (q + 4) * 64,
                                _mm512_shuffle_epi8(inf_avx512_iq4nl_codes(), _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f)));
        }
        int32_t sc[8][16] __attribute__((aligned(64)));
        iq4xs_packed_scales(sb, sc);
        for (int g = 0; g < 16; g++) {
            const __m512i s32 = _mm512_load_si512(sc[g / 2]);
            _mm512_storeu_si512(scale + 16 * g, s32);
            _mm512_storeu_si512(coef + 16 * g, _mm512_slli_epi32(s32, 7)); /* 128 * scale */
        }
        _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sb + INF_X86_IQ4XS_D))));
        _mm512_storeu_ps(dmin, _mm512_setzero_ps());
        return;
    }
    if (type == INF_DTYPE_Q2_K || type == INF_DTYPE_Q3_K) {
        const bool three = type == INF_DTYPE_Q3_K;
        const char *sb = group + (size_t)b * (three ? INF_X86_Q3K_BLOCK : INF_X86_Q2K_BLOCK);
        for (int h = 0; h < 2; h++)
            for (int p = 0; p < 4; p++)
                for (int v = 0; v < 8; v++) /* elements 128h + 32p + 4v: quad 32h + 8p + v */
                    _mm512_storeu_si512(quads + (32 * h + 8 * p + v) * 64, three ? q3k_codes(sb, h, p, v) : q2k_codes(sb, h, p, v));
        for (int g = 0; g < 16; g++) {
            const __m128i bytes = _mm_load_si128((const __m128i *)(sb + (three ? INF_X86_Q3K_SCALES : INF_X86_Q2K_SCALES) + 16 * g));
            const __m512i s32 = three ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
            /* Q3_K: the scale and 4 * it; Q2_K: the low nibble and the min in the high */
            _mm512_storeu_si512(scale + 16 * g, three ? s32 : _mm512_and_si512(s32, _mm512_set1_epi32(0xF)));
            _mm512_storeu_si512(coef + 16 * g, three ? _mm512_slli_epi32(s32, 2) : _mm512_srli_epi32(s32, 4));
        }
        const char *dd = group + (three ? inf_x86_q3k_d_at(nb, b) : inf_x86_q2k_d_at(nb, b));
        _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)dd)));
        _mm512_storeu_ps(dmin, three ? _mm512_setzero_ps() : _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(dd + 32))));
        return;
    }
    const char *sb = group + (size_t)b * Q6P_BLOCK + INF_X86_Q6K_CODES; /* Q6_K */
    for (int h = 0; h < 2; h++)
        for (int u = 0; u < 16; u++) { /* elements 128h + 4u (quad 32h + u) and 128h + 64 + 4u (quad 32h + 16 + u) */
            __m512i lo, hi;
            q6k_unit(sb, h, u, &lo, &hi);
            _mm512_storeu_si512(quads + (32 * h + u) * 64, lo);
            _mm512_storeu_si512(quads + (32 * h + 16 + u) * 64, hi);
        }
    const int8_t *sc = (const int8_t *)(group + (size_t)b * Q6P_BLOCK + INF_X86_Q6K_SCALES);
    for (int g = 0; g < 16; g++) {
        const __m512i s32 = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(sc + 16 * g)));
        _mm512_storeu_si512(scale + 16 * g, s32);
        _mm512_storeu_si512(coef + 16 * g, _mm512_slli_epi32(s32, 5)); /* 32 * scale */
    }
    _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(group + inf_x86_q6k_d_at(nb, b)))));
    _mm512_storeu_ps(dmin, _mm512_setzero_ps());
}

/* sum[t] += (d * dx) * isum - (dmin * dx) * imin, as ref.c, lane by lane. */
INLINE void pk_scale(__m512 d, __m512 dmin, const __m512i *isum, const __m512i *imin, const inf_block_q8_K *const *xa,
                     int64_t b, const int NT, __m512 *sum) {
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        const __m512 dx = _mm512_set1_ps(xa[t][b].d);
        const __m512 pr = _mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[t]));
        const __m512 mr = _mm512_mul_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(imin[t]));
        sum[t] = _mm512_add_ps(sum[t], _mm512_sub_ps(pr, mr));
    }
}

/* For NT tokens' Q8_K quants of super-block b: lo[t] += the quad at
 * at_lo dotted with ul, hi[t] += the quad at at_hi with uh, row by lane. */
INLINE void pk_dot_units(__m512i ul, __m512i uh, const inf_block_q8_K *const *xa, int64_t b, int at_lo, int at_hi,
                         const int NT, __m512i *lo, __m512i *hi) {
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        int32_t ql, qh;
        memcpy(&ql, xa[t][b].qs + at_lo, 4);
        memcpy(&qh, xa[t][b].qs + at_hi, 4);
        lo[t] = _mm512_dpbusd_epi32(lo[t], ul, _mm512_set1_epi32(ql));
        hi[t] = _mm512_dpbusd_epi32(hi[t], uh, _mm512_set1_epi32(qh));
    }
}

/* Super-block b of a packed Q4_K or (FIVE) Q5_K group (sb) times NT
 * tokens, into sum. Q5_K's codes reach 31, so its sums of 16 can pass
 * 2^15: it scales them by VPMULLD. */
INLINE void q45k_packed_block(const char *sb, const bool FIVE, const inf_block_q8_K *const *xa, int64_t b, const int NT,
                              __m512 *sum) {
    uint8_t sc[128] __attribute__((aligned(64))), mn[128] __attribute__((aligned(64)));
    q4k_packed_scales(sb + (FIVE ? INF_X86_Q5K_SCALES : INF_X86_Q4K_SCALES), sc, mn);
    __m512i isum[PK_TOKENS], imin[PK_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) isum[t] = imin[t] = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) {
        const __m512i sc_lo = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(sc + 32 * p)));
        const __m512i sc_hi = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(sc + 32 * p + 16)));
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            __m512i lo[PK_TOKENS], hi[PK_TOKENS];
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) lo[t] = hi[t] = _mm512_setzero_si512();
            _Pragma("GCC unroll 4") for (int u = 4 * h; u < 4 * h + 4; u++) {
                __m512i ul, uh;
                q45k_unit(sb, FIVE, p, u, &ul, &uh);
                pk_dot_units(ul, uh, xa, b, 64 * p + 4 * u, 64 * p + 32 + 4 * u, NT, lo, hi);
            }
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                if (FIVE) {
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(lo[t], sc_lo),
                                                                         _mm512_mullo_epi32(hi[t], sc_hi)));
                } else {
                    isum[t] = _mm512_dpwssd_epi32(isum[t], lo[t], sc_lo);
                    isum[t] = _mm512_dpwssd_epi32(isum[t], hi[t], sc_hi);
                }
            }
        }
    }
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
        const __m512i m = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(mn + 16 * j)));
        const __m512i mm = _mm512_or_si512(m, _mm512_slli_epi32(m, 16)); /* [m, m] */
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            int32_t bs; /* bsums of 16-groups 2j, 2j + 1 */
            memcpy(&bs, &xa[t][b].bsums[2 * j], 4);
            imin[t] = _mm512_dpwssd_epi32(imin[t], mm, _mm512_set1_epi32(bs));
        }
    }
    pk_scale(_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sb + (FIVE ? INF_X86_Q5K_D : INF_X86_Q4K_D)))),
             _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sb + (FIVE ? INF_X86_Q5K_DMIN : INF_X86_Q4K_DMIN)))), isum,
             imin, xa, b, NT, sum);
}

/* Super-block b of a packed Q6_K group of nb (codes at sb) times NT tokens. */
INLINE void q6k_packed_block(const char *group, int64_t nb, const char *sb, const inf_block_q8_K *const *xa, int64_t b,
                             const int NT, __m512 *sum) {
    const int8_t *sc = (const int8_t *)(group + (size_t)b * Q6P_BLOCK + INF_X86_Q6K_SCALES);
    __m512i isum[PK_TOKENS], bias[PK_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) isum[t] = bias[t] = _mm512_setzero_si512();
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) { /* units 4c .. 4c + 3: 16-groups 8h + c and 8h + 4 + c */
            __m512i lo[PK_TOKENS], hi[PK_TOKENS];
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) lo[t] = hi[t] = _mm512_setzero_si512();
            _Pragma("GCC unroll 4") for (int u = 4 * c; u < 4 * c + 4; u++) {
                __m512i ul, uh;
                q6k_unit(sb, h, u, &ul, &uh);
                pk_dot_units(ul, uh, xa, b, 128 * h + 4 * u, 128 * h + 64 + 4 * u, NT, lo, hi);
            }
            const __m512i sl = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(sc + 16 * (8 * h + c))));
            const __m512i sh = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(sc + 16 * (8 * h + 4 + c))));
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++)
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(lo[t], sl), _mm512_mullo_epi32(hi[t], sh)));
        }
    }
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) { /* Σ scale * bsum, 16-groups 2j and 2j + 1 at once */
        const __m512i se = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(sc + 16 * (2 * j))));
        const __m512i so = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(sc + 16 * (2 * j + 1))));
        const __m512i pair = _mm512_or_si512(_mm512_and_si512(se, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(so, 16));
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            int32_t bs;
            memcpy(&bs, &xa[t][b].bsums[2 * j], 4);
            bias[t] = _mm512_dpwssd_epi32(bias[t], pair, _mm512_set1_epi32(bs));
        }
    }
    __m512i zero[PK_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        isum[t] = _mm512_sub_epi32(isum[t], _mm512_slli_epi32(bias[t], 5));
        zero[t] = _mm512_setzero_si512();
    }
    pk_scale(_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(group + inf_x86_q6k_d_at(nb, b)))), _mm512_setzero_ps(),
             isum, zero, xa, b, NT, sum);
}

/* Super-block b of a packed Q2_K or (THREE) Q3_K group of nb (its block
 * at sb) times NT tokens: per 16-group one sum of codes times x by
 * VPDPBUSD, times its scale by VPMULLD; then by VPDPWSSD against the
 * token's bsums, pairs of 16-groups at once, Q2_K's mins (the imin of
 * ref.c) or Q3_K's scales (4 Σ scale * bsum off, its codes being q + 4). */
INLINE void q23k_packed_block(const char *group, int64_t nb, const char *sb, const bool THREE, const inf_block_q8_K *const *xa,
                              int64_t b, const int NT, __m512 *sum) {
    const char *sc = sb + (THREE ? INF_X86_Q3K_SCALES : INF_X86_Q2K_SCALES);
    __m512i isum[PK_TOKENS], other[PK_TOKENS], zero[PK_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) isum[t] = other[t] = zero[t] = _mm512_setzero_si512();
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
        _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) { /* 16-groups 8h + 2p (units 0-3) and 8h + 2p + 1 (4-7) */
            __m512i lo[PK_TOKENS], hi[PK_TOKENS];
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) lo[t] = hi[t] = _mm512_setzero_si512();
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)
                pk_dot_units(THREE ? q3k_codes(sb, h, p, v) : q2k_codes(sb, h, p, v),
                             THREE ? q3k_codes(sb, h, p, v + 4) : q2k_codes(sb, h, p, v + 4), xa, b,
                             128 * h + 32 * p + 4 * v, 128 * h + 32 * p + 16 + 4 * v, NT, lo, hi);
            const int g = 8 * h + 2 * p;
            const __m128i bytes_l = _mm_load_si128((const __m128i *)(sc + 16 * g));
            const __m128i bytes_h = _mm_load_si128((const __m128i *)(sc + 16 * (g + 1)));
            __m512i sl, sh, pair; /* scales of 16-groups g, g + 1; the pairs for VPDPWSSD */
            if (THREE) {
                sl = _mm512_cvtepi8_epi32(bytes_l);
                sh = _mm512_cvtepi8_epi32(bytes_h);
                pair = _mm512_or_si512(_mm512_and_si512(sl, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(sh, 16));
            } else { /* scale in the low nibble, min in the high */
                const __m512i bl = _mm512_cvtepu8_epi32(bytes_l), bh = _mm512_cvtepu8_epi32(bytes_h);
                sl = _mm512_and_si512(bl, _mm512_set1_epi32(0xF));
                sh = _mm512_and_si512(bh, _mm512_set1_epi32(0xF));
                pair = _mm512_or_si512(_mm512_srli_epi32(bl, 4), _mm512_slli_epi32(_mm512_srli_epi32(bh, 4), 16));
            }
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
                int32_t bs; /* bsums of 16-groups g, g + 1 */
                memcpy(&bs, &xa[t][b].bsums[g], 4);
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(lo[t], sl), _mm512_mullo_epi32(hi[t], sh)));
                other[t] = _mm512_dpwssd_epi32(other[t], pair, _mm512_set1_epi32(bs));
            }
        }
    }
    if (THREE) {
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) isum[t] = _mm512_sub_epi32(isum[t], _mm512_slli_epi32(other[t], 2));
        pk_scale(_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(group + inf_x86_q3k_d_at(nb, b)))), _mm512_setzero_ps(),
                 isum, zero, xa, b, NT, sum);
    } else {
        const char *dd = group + inf_x86_q2k_d_at(nb, b);
        pk_scale(_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)dd)),
                 _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(dd + 32))), isum, other, xa, b, NT, sum);
    }
}

/* Super-block b of a packed IQ4_XS group (sb) times NT tokens: codes
 * (table value + 128) by VPSHUFB, one sum of 32 per sub-block times its
 * signed scale by VPMULLD, less 128 Σ scale * bsum (VPDPWSSD of [s, s]). */
INLINE void iq4xs_packed_block(const char *sb, const inf_block_q8_K *const *xa, int64_t b, const int NT, __m512 *sum) {
    const __m512i m0f = _mm512_set1_epi8(0x0F), table = inf_avx512_iq4nl_codes();
    int32_t sc[8][16] __attribute__((aligned(64)));
    iq4xs_packed_scales(sb, sc);
    __m512i isum[PK_TOKENS], bias[PK_TOKENS], zero[PK_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) isum[t] = bias[t] = zero[t] = _mm512_setzero_si512();
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
        __m512i acc[PK_TOKENS];
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            const __m512i v = _mm512_load_si512(sb + INF_X86_IQ4XS_CODES + (4 * j + i) * 64);
            const __m512i ul = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m0f));
            const __m512i uh = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f));
            pk_dot_units(ul, uh, xa, b, 32 * j + 4 * i, 32 * j + 16 + 4 * i, NT, acc, acc); /* one sum of 32 */
        }
        const __m512i s = _mm512_load_si512(sc[j]);
        const __m512i pair = _mm512_or_si512(_mm512_and_si512(s, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(s, 16));
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
            int32_t bs; /* bsums of 16-groups 2j, 2j + 1 */
            memcpy(&bs, &xa[t][b].bsums[2 * j], 4);
            isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(acc[t], s));
            bias[t] = _mm512_dpwssd_epi32(bias[t], pair, _mm512_set1_epi32(bs));
        }
    }
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) isum[t] = _mm512_sub_epi32(isum[t], _mm512_slli_epi32(bias[t], 7));
    pk_scale(_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sb + INF_X86_IQ4XS_D))), _mm512_setzero_ps(), isum, zero,
             xa, b, NT, sum);
}

/* Tokens [t0, t0 + NT) times one packed group of nb super-blocks. */
INLINE void kquant_packed_tile(inf_dtype type, const char *group, int64_t nb, const char *act, size_t stride, int t0,
                               const int NT, float *y, size_t ys, __mmask16 rows, int prefetch_blocks, bool nta) {
    const inf_block_q8_K *xa[PK_TOKENS];
    __m512 sum[PK_TOKENS];
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {
        xa[t] = (const inf_block_q8_K *)(act + (size_t)(t0 + t) * stride);
        sum[t] = _mm512_setzero_ps();
    }
    const size_t step = type == INF_DTYPE_Q4_K    ? INF_X86_Q4K_BLOCK
                        : type == INF_DTYPE_Q5_K  ? INF_X86_Q5K_BLOCK
                        : type == INF_DTYPE_IQ4_XS ? INF_X86_IQ4XS_BLOCK
                        : type == INF_DTYPE_Q3_K  ? INF_X86_Q3K_BLOCK
                        : type == INF_DTYPE_Q2_K  ? INF_X86_Q2K_BLOCK
                                                   : Q6P_BLOCK;
    const size_t ahead = (size_t)prefetch_blocks * step;
    for (int64_t b = 0; b < nb; b++) {
        const char *sb = group + (size_t)b * step;
        /* The block `ahead` into the cache. Q4_K's 36 lines, IQ4_XS's 34
         * and Q5_K's 44 as a loop: fully unrolled, GCC held the lines'
         * addresses in vector registers across the block and spilled the
         * block's own; as a loop, in one process token by token (Zen 5 VM,
         * 2 threads, decode after 17, 2026-12-07), Q4_K_M +6-8%, Q5_K_M
         * +10%, IQ4_XS +7%. Q6_K's 52 lines as before (GCC makes a loop of
         * them either way; `unroll 1` was level in one process, 2-5% slower
         * in three of four runs of separate binaries). */
        if (ahead && type == INF_DTYPE_Q6_K) {
            _Pragma("GCC unroll 48") for (size_t line = 0; line < step / 64; line++)
                inf_avx512_prefetch_weights(sb + ahead + line * 64, nta);
        } else if (ahead) {
            _Pragma("GCC unroll 1") for (size_t line = 0; line < step / 64; line++)
                inf_avx512_prefetch_weights(sb + ahead + line * 64, nta);
        }
        if (type == INF_DTYPE_Q6_K) q6k_packed_block(group, nb, sb + INF_X86_Q6K_CODES, xa, b, NT, sum);
        else if (type == INF_DTYPE_Q3_K || type == INF_DTYPE_Q2_K)
            q23k_packed_block(group, nb, sb, type == INF_DTYPE_Q3_K, xa, b, NT, sum);
        else if (type == INF_DTYPE_IQ4_XS) iq4xs_packed_block(sb, xa, b, NT, sum);
        else q45k_packed_block(sb, type == INF_DTYPE_Q5_K, xa, b, NT, sum);
    }
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)(t0 + t) * ys, rows, sum[t]);
}

#define PK_CASES(T)                                                                              \
    switch (nt) {                                                                                \
    case 1: kquant_packed_tile(T, group, nb, act, stride, t0, 1, yg, ys, rows, ahead, nta); break; \
    case 2: kquant_packed_tile(T, group, nb, act, stride, t0, 2, yg, ys, rows, ahead, nta); break; \
    case 3: kquant_packed_tile(T, group, nb, act, stride, t0, 3, yg, ys, rows, ahead, nta); break; \
    default: kquant_packed_tile(T, group, nb, act, stride, t0, 4, yg, ys, rows, ahead, nta); break; \
    }

_Static_assert(PK_TOKENS == 4, "PK_CASES spells out token counts 1..4");

/* A panel of rows [r0, r1) (at most INF_X86_GEMM_ROWS) of a packed weight
 * of type T times every token. */
INLINE void kquant_packed_panel(const inf_dtype T, const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                                size_t ys) {
    const int64_t nb = w->cols / INF_QK_K;
    const size_t gbytes = inf_x86_packed_group_bytes(T, w->cols), stride = inf_act_row_bytes_quant(T, w->cols);
    const char *src = (const char *)w->packed + (size_t)(r0 / QG_ROWS) * gbytes, *act = a->data;
    const int n_groups = (int)((r1 - r0 + QG_ROWS - 1) / QG_ROWS);
    const int ahead_first = packed_prefetch_blocks(T);
    const bool nta = inf_x86_weights_nta();
    for (int t0 = 0; t0 < a->n; t0 += PK_TOKENS) {
        const int nt = INF_MIN(PK_TOKENS, a->n - t0);
        const int ahead = t0 == 0 ? ahead_first : 0; /* later passes find the panel in L2 */
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * QG_ROWS;
            const char *group = src + g * gbytes;
            const __mmask16 rows = (__mmask16)((1u << INF_MIN(QG_ROWS, r1 - r)) - 1);
            float *yg = y + r;
            PK_CASES(T)
        }
    }
}

/* One function per type: each type's code is laid out and its registers
 * allocated on its own, whatever the others' kernels become. With the
 * four types in one function, making Q4_K's prefetch a loop (above) also
 * slowed the all-Q6_K model's decode 4-6% (separate binaries, alternating
 * runs), though Q6_K's code had not changed; apart, it stayed level
 * (1.00 and 1.02 of the binary before, two runs). */
#define PK_PANELS(name, T)                                                                                            \
    static __attribute__((noinline)) void name(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, \
                                               size_t ys) {                                                           \
        for (int64_t r = r0; r < r1; r += INF_X86_GEMM_ROWS)                                                          \
            kquant_packed_panel(T, w, a, r, INF_MIN(r1, r + INF_X86_GEMM_ROWS), y, ys);                                \
    }
PK_PANELS(q4k_packed_panels, INF_DTYPE_Q4_K)
PK_PANELS(q5k_packed_panels, INF_DTYPE_Q5_K)
PK_PANELS(iq4xs_packed_panels, INF_DTYPE_IQ4_XS)
PK_PANELS(q6k_packed_panels, INF_DTYPE_Q6_K)
PK_PANELS(q3k_packed_panels, INF_DTYPE_Q3_K)
PK_PANELS(q2k_packed_panels, INF_DTYPE_Q2_K)

/* Q2_K and Q3_K packed at load, from this many tokens: each panel is
 * unpacked once into the qgemm's groups (pack_qgroup's layout) and runs
 * its tiles of 8 tokens. Their codes take the most unpacking per byte,
 * which the packed tiles repeat for every 4 tokens: prefill 511 of a
 * Q2_K model (Zen 5 VM, 2 threads) ran 6% slower on them than it had on
 * the file's rows. */
enum { QG_UNPACK_MIN_TOKENS = 8 };

/* Rows [r0, r1) (one panel) of a Q2_K or Q3_K weight packed at load, every
 * token, by way of the qgemm's groups at pack. */
static void unpacked_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                           char *pack) {
    const int64_t nb = w->cols / INF_QK_K;
    const size_t pbytes = inf_x86_packed_group_bytes(w->type, w->cols), gbytes = (size_t)nb * QG_BLOCK;
    const int n_groups = (int)((r1 - r0 + QG_ROWS - 1) / QG_ROWS);
    int32_t coef[16 * QG_ROWS] __attribute__((aligned(64)));
    for (int g = 0; g < n_groups; g++) {
        const char *group = (const char *)w->packed + (size_t)((r0 + (int64_t)g * QG_ROWS) / QG_ROWS) * pbytes;
        for (int64_t b = 0; b < nb; b++) {
            char *dst = pack + g * gbytes + (size_t)b * QG_BLOCK;
            inf_avx512_unpack_packed_kquant(w->type, group, nb, b, (uint8_t *)dst, (int32_t *)(dst + QG_SCALE), coef,
                                            (float *)(dst + QG_D), (float *)(dst + QG_DMIN));
            for (int i = 0; i < 16 * QG_ROWS; i++) /* as pack_qgroup: the low 16 bits, for VPMADDWD */
                ((int32_t *)(dst + QG_COEF))[i] = coef[i] & 0xFFFF;
        }
    }
    run_qgroups(w, a, r0, r1, y, y_stride, pack);
}

void inf_avx512_qgemm_packed(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                             void *pack) {
    if ((w->type == INF_DTYPE_Q2_K || w->type == INF_DTYPE_Q3_K) && a->n >= QG_UNPACK_MIN_TOKENS) {
        for (int64_t r = r0; r < r1; r += INF_X86_GEMM_ROWS)
            unpacked_qgemm(w, a, r, INF_MIN(r1, r + INF_X86_GEMM_ROWS), y, y_stride, pack);
        return;
    }
    if (w->type == INF_DTYPE_Q4_K) q4k_packed_panels(w, a, r0, r1, y, y_stride);
    else if (w->type == INF_DTYPE_Q5_K) q5k_packed_panels(w, a, r0, r1, y, y_stride);
    else if (w->type == INF_DTYPE_IQ4_XS) iq4xs_packed_panels(w, a, r0, r1, y, y_stride);
    else if (w->type == INF_DTYPE_Q3_K) q3k_packed_panels(w, a, r0, r1, y, y_stride);
    else if (w->type == INF_DTYPE_Q2_K) q2k_packed_panels(w, a, r0, r1, y, y_stride);
    else q6k_packed_panels(w, a, r0, r1, y, y_stride);
}

/* ------------------------------------------------------------------ gemm (32-blocks) */

/* The prefill gemm of Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL, bit-identical to
 * ref.c (not to the matvec, whose order follows llama.cpp's vec_dot: so
 * decode rows of these types run on the matvec and prefill rows here,
 * ops.h's contract). Per block and group of 16 rows the pack holds
 * (x86_kernels.h, INF_QB_*)
 *   vals  [8 quads][16 rows][4]  int8, the weights' signed values
 *   corr  [16 rows]              int32, 128 * Σ vals (see below)
 *   d, m  [16 rows]              f32 (m: Q4_1/Q5_1's min, else 0)
 * VPDPBUSD takes the activations as its unsigned operand, flipped to
 * x + 128 (x ^ 0x80, at prepare), broadcast a quad at a time, so a lane gathers
 * Σ (x + 128) v = Σ x v + corr: the exact block dot after subtracting
 * corr; then sum += (float)isum * (d_w * d_x) (+ m_w * s_x) per lane, in
 * ref.c's order. */
enum { QB_CORR = INF_QB_CORR, QB_D = INF_QB_D, QB_M = INF_QB_M, QB_BLOCK = INF_QB_BLOCK };
_Static_assert(QB_CORR == 8 * 64 && QB_D == QB_CORR + 64 && QB_M == QB_D + 64 && QB_BLOCK == QB_M + 64,
               "vals, then one vector each of corr, d and m");

size_t inf_avx512_qgemm32_pack_bytes(int64_t cols) {
    return (INF_X86_GEMM_ROWS / QG_ROWS) * (size_t)(cols / INF_QK) * QB_BLOCK;
}

/* Rows [r, r + nr) of blocks b and b + 1 (has2; else b alone) packed into
 * dst and dst + QB_BLOCK (missing rows zeros): each row's values of the
 * two blocks in one vector (inf_avx512_values_pair), the 16 rows
 * transposed in registers to [quad][row]; corr summed from the transposed
 * quads; d and m gathered from the rows' block heads (d, then Q4_1/Q5_1's
 * m) and widened. */
static void pack_bgroup2(const inf_weight *w, int64_t r, int nr, int64_t b, bool has2, char *dst) {
    const size_t wb = inf_dtype_block_bytes(w->type);
    const char *blk = (const char *)w->data + (size_t)r * w->row_bytes + (size_t)b * wb;
    __m512i v[QG_ROWS];
    for (int i = 0; i < QG_ROWS; i++) {
        const char *bi = blk + (size_t)i * w->row_bytes;
        v[i] = i < nr ? inf_avx512_values_pair(w->type, bi, bi + wb, has2) : _mm512_setzero_si512();
    }
    inf_avx512_transpose16(v);
    const bool q81 = inf_quant_act_type(w->type) == INF_ACT_Q8_1;
    const __mmask16 live = (__mmask16)((1u << nr) - 1);
    const __m512i at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32((int)w->row_bytes));
    for (int h = 0; h < 1 + has2; h++) {
        char *g = dst + h * QB_BLOCK;
        __m512i sum = _mm512_setzero_si512();
        for (int q = 0; q < 8; q++) {
            _mm512_store_si512(g + q * 64, v[8 * h + q]);
            sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(1), v[8 * h + q]);
        }
        _mm512_store_si512(g + QB_CORR, _mm512_slli_epi32(sum, 7));
        const __m512i dm = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, at, blk + h * wb, 1);
        _mm512_store_ps(g + QB_D, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm)));
        _mm512_store_ps(g + QB_M, q81 ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16))) : _mm512_setzero_ps());
    }
}

void inf_avx512_qgemm32_pack(const inf_weight *w, int64_t r0, int64_t r1, void *pack) {
    const int64_t nb = w->cols / INF_QK;
    const int n_groups = (int)((r1 - r0 + QG_ROWS - 1) / QG_ROWS);
    for (int g = 0; g < n_groups; g++) {
        const int64_t r = r0 + (int64_t)g * QG_ROWS;
        char *dst = (char *)pack + (size_t)g * (size_t)nb * QB_BLOCK;
        if (w->packed_format == INF_X86_PACKED_GROUPS) { /* Q4_1, Q5_1 packed at load */
            const size_t gbytes = inf_x86_packed_group_bytes(w->type, w->cols);
            inf_avx512_unpack_q81_group(w->type, (const char *)w->packed + (size_t)(r / QG_ROWS) * gbytes, nb, dst);
            continue;
        }
        for (int64_t b = 0; b < nb; b += 2)
            pack_bgroup2(w, r, (int)INF_MIN(QG_ROWS, r1 - r), b, b + 1 < nb, dst + (size_t)b * QB_BLOCK);
    }
}

INLINE void qgemm32_tile(const char *pack, int64_t nb, const char *act, size_t stride, int t0, const int NT,
                         const bool Q81, float *y, size_t ys, __mmask16 rows) {
    const size_t xb = Q81 ? sizeof(inf_block_q8_1) : sizeof(inf_block_q8_0);
    const size_t xq_at = Q81 ? offsetof(inf_block_q8_1, qs) : offsetof(inf_block_q8_0, q);
    const char *xa[QG_TOKENS];
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) xa[t] = act + (size_t)(t0 + t) * stride;
    __m512 sum[QG_TOKENS];
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) sum[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *pb = pack + (size_t)b * QB_BLOCK;
        __m512i acc[QG_TOKENS];
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) {
            const __m512i wv = _mm512_load_si512(pb + q * 64);
            _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {
                int32_t xq; /* flipped at prepare */
                memcpy(&xq, xa[t] + (size_t)b * xb + xq_at + 4 * q, 4);
                acc[t] = _mm512_dpbusd_epi32(acc[t], _mm512_set1_epi32(xq), wv);
            }
        }
        const __m512i corr = _mm512_load_si512(pb + QB_CORR);
        const __m512 d = _mm512_load_ps((const float *)(pb + QB_D));
        const __m512 m = _mm512_load_ps((const float *)(pb + QB_M));
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {
            const char *x = xa[t] + (size_t)b * xb;
            const __m512 dx = _mm512_set1_ps(f16c_to_f32(f16_at(x)));
            const __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[t], corr)), _mm512_mul_ps(d, dx));
            if (Q81) /* (d_w * d_x) * isum + m_w * s_x, as ref.c */
                sum[t] = _mm512_add_ps(sum[t], _mm512_add_ps(p, _mm512_mul_ps(m, _mm512_set1_ps(f16c_to_f32(f16_at(x + 2))))));
            else
                sum[t] = _mm512_add_ps(sum[t], p);
        }
    }
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)(t0 + t) * ys, rows, sum[t]);
}

#define QB_CASES(Q81)                                                                         \
    switch (nt) {                                                                             \
    case 1: qgemm32_tile(pack, nb, act, stride, t0, 1, Q81, y, ys, rows); break;              \
    case 2: qgemm32_tile(pack, nb, act, stride, t0, 2, Q81, y, ys, rows); break;              \
    case 3: qgemm32_tile(pack, nb, act, stride, t0, 3, Q81, y, ys, rows); break;              \
    case 4: qgemm32_tile(pack, nb, act, stride, t0, 4, Q81, y, ys, rows); break;              \
    case 5: qgemm32_tile(pack, nb, act, stride, t0, 5, Q81, y, ys, rows); break;              \
    case 6: qgemm32_tile(pack, nb, act, stride, t0, 6, Q81, y, ys, rows); break;              \
    case 7: qgemm32_tile(pack, nb, act, stride, t0, 7, Q81, y, ys, rows); break;              \
    default: qgemm32_tile(pack, nb, act, stride, t0, 8, Q81, y, ys, rows); break;             \
    }

void inf_avx512_qgemm32(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t ys,
                        void *pack) {
    const int64_t nb = w->cols / INF_QK;
    const size_t gbytes = (size_t)nb * QB_BLOCK, stride = inf_act_row_bytes_quant(w->type, w->cols);
    const bool q81 = inf_quant_act_type(w->type) == INF_ACT_Q8_1;
    const char *act = a->data;
    const int n_groups = (int)((r1 - r0 + QG_ROWS - 1) / QG_ROWS);
    inf_avx512_qgemm32_pack(w, r0, r1, pack);
    for (int t0 = 0; t0 < a->n; t0 += QG_TOKENS) {
        const int nt = INF_MIN(QG_TOKENS, a->n - t0);
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * QG_ROWS;
            const __mmask16 rows = (__mmask16)((1u << INF_MIN(QG_ROWS, r1 - r)) - 1);
            const char *p = (const char *)pack + g * gbytes;
            float *yg = y + r;
            {
                const char *pack = p;
                float *y = yg;
                if (q81) QB_CASES(true) else QB_CASES(false)
            }
        }
    }
}

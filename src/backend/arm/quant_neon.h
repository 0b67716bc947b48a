/*
 * quant_neon.h — the matvec and the prefill gemm of the GGUF block types
 * (core/quant.h) on arm64, shared by quant_neon.c (integer dots by
 * widening multiplies) and quant_dotprod.c (by SDOT), which differ only in
 * the two dot primitives they pass (q_dot16, q_dot4q); the loops here are
 * inlined into each with its own (the unpacking of super-blocks and the
 * gemm's packing are plain static functions: each file has one copy).
 *
 * Every weight block is unpacked to its signed int8 values (Q4_0: q - 8,
 * Q5_0: q - 16, Q3_K: q - 4 * !hbit, Q6_K: q - 32, IQ4_NL and IQ4_XS: the
 * table value; Q4_1, Q5_1, Q2_K, Q4_K, Q5_K: the code, their mins being
 * separate terms), all within [-127, 127], so a dot with the int8
 * activations needs no offset correction and every integer sum is exact.
 * Activations are the rows of inf_act_prepare_quant (Q8_0, Q8_1 or Q8_K
 * blocks, as ref.c rounds them), for the matvec and the gemm alike.
 *
 * Both kernels are bit-identical to ref.c (core/quant.c inf_quant_dot):
 * the same exact integer block (or super-block) sums, then per block in
 * order the same f32 operations,
 *   Q4_0, Q5_0, IQ4_NL: sum += (float)isum * (d_w * d_x)
 *   Q4_1, Q5_1:         sum += (d_w * d_x) * (float)isum + m_w * s_x
 *   super-blocks:       sum += (d_w * d_x) * (float)isum - (dmin_w * d_x) * (float)imin
 * the matvec with a scalar running sum per (row, token), the gemm with one
 * per f32 lane (lane = weight row). So decode and prefill rows of every
 * block type may share either kernel (kernels.h matvec_exact_quant).
 */
#ifndef INF_QUANT_NEON_H
#define INF_QUANT_NEON_H

#include "backend/kernels.h"
#include "core/common.h"
#include "core/quant.h"

#include <arm_neon.h>
#include <stddef.h>
#include <string.h>

#define QN_INLINE static inline __attribute__((always_inline))

enum {
    QN_MV_TOKENS = 4,   /* activation rows per pass of the matvec */
    QN_ROWS = 4,        /* weight rows per packed group of the gemm (one int32x4 / f32x4 lane each) */
    QN_TOKENS32 = 8,    /* tokens per gemm tile, 32-block types */
    QN_TOKENS256 = 4,   /* tokens per gemm tile, super-block types */
    /* gemm pack, per group of 4 rows and (super-)block: */
    QN_B32_D = 8 * 16,            /* vals [8 quads][4 rows][4] int8, then */
    QN_B32_M = QN_B32_D + 16,     /* d [4] f32, m [4] f32 (0 but for Q4_1 / Q5_1) */
    QN_B32 = QN_B32_M + 16,       /* 160 bytes */
    QN_BK_SCALE = 64 * 16,        /* vals [64 quads][4 rows][4] int8, then */
    QN_BK_MIN = QN_BK_SCALE + 256, /* scale [16 groups][4 rows] int32, min [16][4] int32, */
    QN_BK_D = QN_BK_MIN + 256,    /* d [4] f32, dmin [4] f32 */
    QN_BK = QN_BK_D + 32,         /* 1568 bytes */
};

/* acc + the exact dot of 16 int8 pairs, spread over 4 int32 lanes. */
typedef int32x4_t (*q_dot16)(int32x4_t acc, int8x16_t w, int8x16_t x);
/* acc[i] + Σ_k w[k][4i .. 4i + 3] · x[4k .. 4k + 3]: lane i is weight row i,
 * w[k] holds quad k of 4 rows, x 4 quads of one token (SDOT by element). */
typedef int32x4_t (*q_dot4q)(int32x4_t acc, const int8x16_t w[4], int8x16_t x);

QN_INLINE uint16_t qn_f16_at(const char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* ------------------------------------------------------------------ unpacking */

/* 0xFF in byte i where bit i of the low 16 bits of `bits` is set. */
QN_INLINE uint8x16_t qn_bits16(uint32_t bits) {
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)bits), vdup_n_u8((uint8_t)(bits >> 8)));
    return vtstq_u8(v, vld1q_u8(bit));
}

/* (v >> s) & mask, s a run-time shift. */
QN_INLINE uint8x16_t qn_bits_at(uint8x16_t v, int s, uint8_t mask) {
    return vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)-s)), vdupq_n_u8(mask));
}

/* The 32 signed values of a 32-block, elements 0-15 in v[0], 16-31 in v[1]. */
QN_INLINE void qn_block32_values(inf_dtype type, const char *blk, int8x16_t v[2]) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    size_t qs_at = offsetof(inf_block_q4_0, qs), qh_at = 0;
    int offset = 8;
    switch (type) {
    case INF_DTYPE_Q4_1: qs_at = offsetof(inf_block_q4_1, qs), offset = 0; break;
    case INF_DTYPE_Q5_0: qs_at = offsetof(inf_block_q5_0, qs), qh_at = offsetof(inf_block_q5_0, qh), offset = 16; break;
    case INF_DTYPE_Q5_1: qs_at = offsetof(inf_block_q5_1, qs), qh_at = offsetof(inf_block_q5_1, qh), offset = 0; break;
    default: break; /* Q4_0, IQ4_NL */
    }
    const uint8x16_t q = vld1q_u8((const uint8_t *)blk + qs_at);
    uint8x16_t lo = vandq_u8(q, m4), hi = vshrq_n_u8(q, 4);
    if (type == INF_DTYPE_IQ4_NL) {
        const int8x16_t table = vld1q_s8(inf_iq4nl_values);
        v[0] = vqtbl1q_s8(table, lo);
        v[1] = vqtbl1q_s8(table, hi);
        return;
    }
    if (qh_at) {
        uint32_t qh;
        memcpy(&qh, blk + qh_at, 4);
        lo = vorrq_u8(lo, vandq_u8(qn_bits16(qh), vdupq_n_u8(0x10)));
        hi = vorrq_u8(hi, vandq_u8(qn_bits16(qh >> 16), vdupq_n_u8(0x10)));
    }
    v[0] = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8((int8_t)offset));
    v[1] = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8((int8_t)offset));
}

/* One super-block unpacked: its 256 signed values in element order (16
 * groups of 16), the integer scale and min of each 16-group (a scale of 32
 * elements appears twice), and d, dmin (0 without mins). */
typedef struct qn_kblock {
    int8x16_t v[16];
    int32_t scale[16], min[16];
    float d, dmin;
} qn_kblock;

/* Not inlined: one copy serves every type and token count (a call per
 * super-block of 256 weights costs little). */
static __attribute__((noinline)) void qn_kblock_unpack(inf_dtype type, const char *blk, qn_kblock *k) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    k->d = k->dmin = 0.0f;
    for (int g = 0; g < 16; g++) k->min[g] = 0;
    switch (type) {
    case INF_DTYPE_Q2_K:
    case INF_DTYPE_Q3_K: {
        const bool three = type == INF_DTYPE_Q3_K;
        const inf_block_q2_K *x2 = (const inf_block_q2_K *)blk;
        const inf_block_q3_K *x3 = (const inf_block_q3_K *)blk;
        const uint8_t *qs = three ? x3->qs : x2->qs;
        const uint8x16_t hm[2] = {three ? vld1q_u8(x3->hmask) : vdupq_n_u8(0),
                                  three ? vld1q_u8(x3->hmask + 16) : vdupq_n_u8(0)};
        for (int h = 0; h < 2; h++)
            for (int half = 0; half < 2; half++) {
                const uint8x16_t q = vld1q_u8(qs + 32 * h + 16 * half);
                for (int j = 0; j < 4; j++) { /* elements 128h + 32j + 16 half + (0..15): bits 2j of qs */
                    uint8x16_t u = qn_bits_at(q, 2 * j, 3);
                    if (three) u = vorrq_u8(u, vshlq_n_u8(qn_bits_at(hm[half], 4 * h + j, 1), 2));
                    k->v[8 * h + 2 * j + half] = vsubq_s8(vreinterpretq_s8_u8(u), vdupq_n_s8(three ? 4 : 0));
                }
            }
        if (three) {
            int8_t sc[16];
            inf_q3k_scales(x3->scales, sc);
            for (int g = 0; g < 16; g++) k->scale[g] = sc[g];
            k->d = inf_f16_to_f32(x3->d);
        } else {
            for (int g = 0; g < 16; g++) {
                k->scale[g] = x2->scales[g] & 0xF;
                k->min[g] = x2->scales[g] >> 4;
            }
            k->d = inf_f16_to_f32(x2->d);
            k->dmin = inf_f16_to_f32(x2->dmin);
        }
        return;
    }
    case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K: {
        const bool five = type == INF_DTYPE_Q5_K;
        const inf_block_q4_K *x4 = (const inf_block_q4_K *)blk;
        const inf_block_q5_K *x5 = (const inf_block_q5_K *)blk;
        const uint8_t *qs = five ? x5->qs : x4->qs;
        const uint8x16_t qh[2] = {five ? vld1q_u8(x5->qh) : vdupq_n_u8(0), five ? vld1q_u8(x5->qh + 16) : vdupq_n_u8(0)};
        for (int j = 0; j < 4; j++)
            for (int half = 0; half < 2; half++) { /* sub-blocks 2j (low nibbles) and 2j + 1 (high) */
                const uint8x16_t q = vld1q_u8(qs + 32 * j + 16 * half);
                uint8x16_t lo = vandq_u8(q, m4), hi = vshrq_n_u8(q, 4);
                if (five) {
                    lo = vorrq_u8(lo, vshlq_n_u8(qn_bits_at(qh[half], 2 * j, 1), 4));
                    hi = vorrq_u8(hi, vshlq_n_u8(qn_bits_at(qh[half], 2 * j + 1, 1), 4));
                }
                k->v[4 * j + half] = vreinterpretq_s8_u8(lo);
                k->v[4 * j + 2 + half] = vreinterpretq_s8_u8(hi);
            }
        uint8_t sm[16]; /* 8 scales, then 8 mins */
        inf_q4k_scales_mins(five ? x5->scales : x4->scales, sm);
        for (int g = 0; g < 16; g++) {
            k->scale[g] = sm[g / 2];
            k->min[g] = sm[8 + g / 2];
        }
        k->d = inf_f16_to_f32(five ? x5->d : x4->d);
        k->dmin = inf_f16_to_f32(five ? x5->dmin : x4->dmin);
        return;
    }
    case INF_DTYPE_Q6_K: {
        const inf_block_q6_K *x = (const inf_block_q6_K *)blk;
        for (int h = 0; h < 2; h++)
            for (int half = 0; half < 2; half++) {
                const uint8x16_t ql0 = vld1q_u8(x->ql + 64 * h + 16 * half);      /* parts 0 (low), 2 (high) */
                const uint8x16_t ql1 = vld1q_u8(x->ql + 64 * h + 32 + 16 * half); /* parts 1, 3 */
                const uint8x16_t qh = vld1q_u8(x->qh + 32 * h + 16 * half);
                const uint8x16_t lo[4] = {vandq_u8(ql0, m4), vandq_u8(ql1, m4), vshrq_n_u8(ql0, 4), vshrq_n_u8(ql1, 4)};
                for (int part = 0; part < 4; part++) /* elements 128h + 32 part + 16 half + (0..15) */
                    k->v[8 * h + 2 * part + half] = vsubq_s8(
                        vreinterpretq_s8_u8(vorrq_u8(lo[part], vshlq_n_u8(qn_bits_at(qh, 2 * part, 3), 4))), vdupq_n_s8(32));
            }
        for (int g = 0; g < 16; g++) k->scale[g] = x->scales[g];
        k->d = inf_f16_to_f32(x->d);
        return;
    }
    case INF_DTYPE_IQ4_XS: {
        const inf_block_iq4_xs *x = (const inf_block_iq4_xs *)blk;
        const int8x16_t table = vld1q_s8(inf_iq4nl_values);
        for (int j = 0; j < 8; j++) {
            const uint8x16_t q = vld1q_u8(x->qs + 16 * j);
            k->v[2 * j] = vqtbl1q_s8(table, vandq_u8(q, m4));
            k->v[2 * j + 1] = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
            k->scale[2 * j] = k->scale[2 * j + 1] = inf_iq4xs_scale(x, j);
        }
        k->d = inf_f16_to_f32(x->d);
        return;
    }
    default: /* not a super-block type */
        for (int g = 0; g < 16; g++) k->v[g] = vdupq_n_s8(0), k->scale[g] = 0;
        return;
    }
}

QN_INLINE bool qn_has_min(inf_dtype type) {
    return type == INF_DTYPE_Q2_K || type == INF_DTYPE_Q4_K || type == INF_DTYPE_Q5_K;
}

/* ------------------------------------------------------------------ matvec */

/* Tokens [t0, t0 + NT) of rows [r0, r1) for a 32-block type. Per row and
 * token, 4 blocks at a time: their integer dots reduced to 4 lanes
 * (block k in lane k), scaled in f32 lanes, then added to the running sum
 * one block after the other. */
QN_INLINE void qn_rows32(q_dot16 dot, inf_dtype type, const inf_weight *w, const inf_act *a, int t0, const int NT,
                         int64_t r0, int64_t r1, float *y, size_t ys) {
    const int64_t nb = w->cols / INF_QK;
    const size_t wb = inf_dtype_block_bytes(type);
    const bool q81 = inf_quant_act_type(type) == INF_ACT_Q8_1;
    const size_t xb = q81 ? sizeof(inf_block_q8_1) : sizeof(inf_block_q8_0);
    const size_t xq_at = q81 ? offsetof(inf_block_q8_1, qs) : offsetof(inf_block_q8_0, q);
    const char *xa[QN_MV_TOKENS];
    for (int t = 0; t < NT; t++) xa[t] = (const char *)a->data + (size_t)(t0 + t) * a->stride;
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        float sum[QN_MV_TOKENS];
        for (int t = 0; t < NT; t++) sum[t] = 0.0f;
        for (int64_t b = 0; b < nb; b += 4) {
            const int nk = (int)INF_MIN(4, nb - b);
            int8x16_t v[4][2];
            float dw[4] = {0}, mw[4] = {0};
            for (int k = 0; k < 4; k++) {
                if (k >= nk) {
                    v[k][0] = v[k][1] = vdupq_n_s8(0);
                    continue;
                }
                const char *blk = wr + (size_t)(b + k) * wb;
                qn_block32_values(type, blk, v[k]);
                dw[k] = inf_f16_to_f32(qn_f16_at(blk));
                if (q81) mw[k] = inf_f16_to_f32(qn_f16_at(blk + 2));
            }
            for (int t = 0; t < NT; t++) {
                int32x4_t d[4];
                float dx[4] = {0}, sx[4] = {0};
                for (int k = 0; k < 4; k++) {
                    d[k] = vdupq_n_s32(0);
                    if (k >= nk) continue;
                    const char *x = xa[t] + (size_t)(b + k) * xb;
                    d[k] = dot(dot(d[k], v[k][0], vld1q_s8((const int8_t *)(x + xq_at))), v[k][1],
                               vld1q_s8((const int8_t *)(x + xq_at + 16)));
                    dx[k] = inf_f16_to_f32(qn_f16_at(x));
                    if (q81) sx[k] = inf_f16_to_f32(qn_f16_at(x + 2));
                }
                const float32x4_t isum = vcvtq_f32_s32(vpaddq_s32(vpaddq_s32(d[0], d[1]), vpaddq_s32(d[2], d[3])));
                const float32x4_t s = vmulq_f32(vld1q_f32(dw), vld1q_f32(dx));
                const float32x4_t p = q81 ? vaddq_f32(vmulq_f32(s, isum), vmulq_f32(vld1q_f32(mw), vld1q_f32(sx)))
                                          : vmulq_f32(isum, s);
                float pk[4];
                vst1q_f32(pk, p);
                for (int k = 0; k < nk; k++) sum[t] += pk[k];
            }
        }
        for (int t = 0; t < NT; t++) y[(size_t)(t0 + t) * ys + (size_t)r] = sum[t];
    }
}

/* Σ_g bsums[g] * min[g] of one Q8_K block, min as 16 int16. */
QN_INLINE int32_t qn_bsum_dot(const int16_t *bsums, int16x8_t m0, int16x8_t m1) {
    const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
    int32x4_t s = vmull_s16(vget_low_s16(b0), vget_low_s16(m0));
    s = vmlal_high_s16(s, b0, m0);
    s = vmlal_s16(s, vget_low_s16(b1), vget_low_s16(m1));
    return vaddvq_s32(vmlal_high_s16(s, b1, m1));
}

/* Tokens [t0, t0 + NT) of rows [r0, r1) for a super-block type (the
 * type not a constant: it only picks the unpacking). */
QN_INLINE void qn_rows256(q_dot16 dot, const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0,
                          int64_t r1, float *y, size_t ys) {
    const inf_dtype type = w->type;
    const int64_t nb = w->cols / INF_QK_K;
    const size_t wb = inf_dtype_block_bytes(type);
    const bool has_min = qn_has_min(type);
    const inf_block_q8_K *xa[QN_MV_TOKENS];
    for (int t = 0; t < NT; t++) xa[t] = (const inf_block_q8_K *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        float sum[QN_MV_TOKENS];
        for (int t = 0; t < NT; t++) sum[t] = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            qn_kblock k;
            qn_kblock_unpack(type, wr + (size_t)b * wb, &k);
            int16x8_t m0 = vdupq_n_s16(0), m1 = vdupq_n_s16(0);
            if (has_min) {
                int16_t m16[16];
                for (int g = 0; g < 16; g++) m16[g] = (int16_t)k.min[g];
                m0 = vld1q_s16(m16);
                m1 = vld1q_s16(m16 + 8);
            }
            for (int t = 0; t < NT; t++) {
                const inf_block_q8_K *x = &xa[t][b];
                int32x4_t acc = vdupq_n_s32(0);
                for (int g = 0; g < 16; g++)
                    acc = vmlaq_n_s32(acc, dot(vdupq_n_s32(0), k.v[g], vld1q_s8(x->qs + 16 * g)), k.scale[g]);
                const int32_t isum = vaddvq_s32(acc);
                const int32_t imin = has_min ? qn_bsum_dot(x->bsums, m0, m1) : 0;
                sum[t] += (k.d * x->d) * (float)isum - (k.dmin * x->d) * (float)imin; /* as ref.c */
            }
        }
        for (int t = 0; t < NT; t++) y[(size_t)(t0 + t) * ys + (size_t)r] = sum[t];
    }
}

/* One 32-block type's or super-block type's rows, tokens in passes of up
 * to QN_MV_TOKENS with the count a constant. */
#define QN_BY_TOKENS(fn, ...)                                     \
    do {                                                          \
        if (nt == 1) fn(__VA_ARGS__, t0, 1, r0, r1, y, ys);       \
        else if (nt == 2) fn(__VA_ARGS__, t0, 2, r0, r1, y, ys);  \
        else if (nt == 3) fn(__VA_ARGS__, t0, 3, r0, r1, y, ys);  \
        else fn(__VA_ARGS__, t0, 4, r0, r1, y, ys);               \
    } while (0)

_Static_assert(QN_MV_TOKENS == 4, "QN_BY_TOKENS spells out token counts 1..4");

/* A 32-block type's matvec, the type a constant (its unpacking is inlined:
 * a block is 18 to 24 bytes of weights). */
QN_INLINE void qn_matvec32(q_dot16 dot, inf_dtype type, const inf_weight *w, const inf_act *a, int64_t r0,
                           int64_t r1, float *y, size_t ys) {
    for (int t0 = 0; t0 < a->n; t0 += QN_MV_TOKENS) {
        const int nt = INF_MIN(QN_MV_TOKENS, a->n - t0);
        QN_BY_TOKENS(qn_rows32, dot, type, w, a);
    }
}

/* The matvec of every block type. */
QN_INLINE void qn_matvec(q_dot16 dot, const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                         size_t ys) {
    switch (w->type) {
    case INF_DTYPE_Q4_0: qn_matvec32(dot, INF_DTYPE_Q4_0, w, a, r0, r1, y, ys); return;
    case INF_DTYPE_Q4_1: qn_matvec32(dot, INF_DTYPE_Q4_1, w, a, r0, r1, y, ys); return;
    case INF_DTYPE_Q5_0: qn_matvec32(dot, INF_DTYPE_Q5_0, w, a, r0, r1, y, ys); return;
    case INF_DTYPE_Q5_1: qn_matvec32(dot, INF_DTYPE_Q5_1, w, a, r0, r1, y, ys); return;
    case INF_DTYPE_IQ4_NL: qn_matvec32(dot, INF_DTYPE_IQ4_NL, w, a, r0, r1, y, ys); return;
    default: break; /* the super-block types */
    }
    for (int t0 = 0; t0 < a->n; t0 += QN_MV_TOKENS) {
        const int nt = INF_MIN(QN_MV_TOKENS, a->n - t0);
        QN_BY_TOKENS(qn_rows256, dot, w, a);
    }
}

/* ------------------------------------------------------------------ gemm */

/* 4 rows' 16 bytes (4 quads each) to [quad][row]: out[k] holds quad k of
 * rows 0..3 (a 4 x 4 transpose of 32-bit units). */
QN_INLINE void qn_transpose_quads(const int8x16_t in[4], int8x16_t out[4]) {
    const uint32x4_t a = vreinterpretq_u32_s8(in[0]), b = vreinterpretq_u32_s8(in[1]);
    const uint32x4_t c = vreinterpretq_u32_s8(in[2]), d = vreinterpretq_u32_s8(in[3]);
    const uint64x2_t t0 = vreinterpretq_u64_u32(vtrn1q_u32(a, b)), t1 = vreinterpretq_u64_u32(vtrn2q_u32(a, b));
    const uint64x2_t t2 = vreinterpretq_u64_u32(vtrn1q_u32(c, d)), t3 = vreinterpretq_u64_u32(vtrn2q_u32(c, d));
    out[0] = vreinterpretq_s8_u64(vtrn1q_u64(t0, t2));
    out[1] = vreinterpretq_s8_u64(vtrn1q_u64(t1, t3));
    out[2] = vreinterpretq_s8_u64(vtrn2q_u64(t0, t2));
    out[3] = vreinterpretq_s8_u64(vtrn2q_u64(t1, t3));
}

/* Rows [r, r + nr), nr <= 4, of 32-block b packed into dst (QN_B32 bytes;
 * missing rows are zeros). The packs are not inlined: one copy serves
 * every type (they run once per row panel, not per token). */
static __attribute__((noinline)) void qn_pack32(const inf_weight *w, int64_t r, int nr, int64_t b, char *dst) {
    const size_t wb = inf_dtype_block_bytes(w->type);
    int8x16_t v[QN_ROWS][2];
    float d[QN_ROWS] = {0}, m[QN_ROWS] = {0};
    for (int i = 0; i < QN_ROWS; i++) {
        if (i >= nr) {
            v[i][0] = v[i][1] = vdupq_n_s8(0);
            continue;
        }
        const char *blk = (const char *)w->data + (size_t)(r + i) * w->row_bytes + (size_t)b * wb;
        qn_block32_values(w->type, blk, v[i]);
        d[i] = inf_f16_to_f32(qn_f16_at(blk));
        if (inf_quant_act_type(w->type) == INF_ACT_Q8_1) m[i] = inf_f16_to_f32(qn_f16_at(blk + 2));
    }
    for (int h = 0; h < 2; h++) {
        const int8x16_t rows[4] = {v[0][h], v[1][h], v[2][h], v[3][h]};
        int8x16_t quads[4];
        qn_transpose_quads(rows, quads);
        for (int k = 0; k < 4; k++) vst1q_s8((int8_t *)dst + (4 * h + k) * 16, quads[k]);
    }
    memcpy(dst + QN_B32_D, d, 16);
    memcpy(dst + QN_B32_M, m, 16);
}

/* The same for super-block b (QN_BK bytes). */
static __attribute__((noinline)) void qn_pack256(const inf_weight *w, int64_t r, int nr, int64_t b, char *dst) {
    const size_t wb = inf_dtype_block_bytes(w->type);
    qn_kblock k[QN_ROWS];
    for (int i = 0; i < QN_ROWS; i++) {
        if (i < nr) {
            qn_kblock_unpack(w->type, (const char *)w->data + (size_t)(r + i) * w->row_bytes + (size_t)b * wb, &k[i]);
            continue;
        }
        for (int g = 0; g < 16; g++) {
            k[i].v[g] = vdupq_n_s8(0);
            k[i].scale[g] = k[i].min[g] = 0;
        }
        k[i].d = k[i].dmin = 0.0f;
    }
    int32_t *scale = (int32_t *)(dst + QN_BK_SCALE), *min = (int32_t *)(dst + QN_BK_MIN);
    float *d = (float *)(dst + QN_BK_D);
    for (int g = 0; g < 16; g++) {
        const int8x16_t rows[4] = {k[0].v[g], k[1].v[g], k[2].v[g], k[3].v[g]};
        int8x16_t quads[4];
        qn_transpose_quads(rows, quads);
        for (int q = 0; q < 4; q++) vst1q_s8((int8_t *)dst + (4 * g + q) * 16, quads[q]);
        for (int i = 0; i < QN_ROWS; i++) {
            scale[4 * g + i] = k[i].scale[g];
            min[4 * g + i] = k[i].min[g];
        }
    }
    for (int i = 0; i < QN_ROWS; i++) {
        d[i] = k[i].d;
        d[QN_ROWS + i] = k[i].dmin;
    }
}

/* Lanes [0, nr) of each token's sums to y[t * ys + lane]. */
QN_INLINE void qn_store_rows(float *y, size_t ys, const float32x4_t *sum, const int NT, int nr) {
    for (int t = 0; t < NT; t++) {
        if (nr == QN_ROWS) {
            vst1q_f32(y + (size_t)t * ys, sum[t]);
            continue;
        }
        float lanes[QN_ROWS];
        vst1q_f32(lanes, sum[t]);
        for (int i = 0; i < nr; i++) y[(size_t)t * ys + (size_t)i] = lanes[i];
    }
}

/* Tokens [t0, t0 + NT) times one packed group of a 32-block type: per
 * block, lane i gathers row i's exact block dot, then ref.c's f32 step. */
QN_INLINE void qn_tile32(q_dot4q dot4q, const char *pack, int64_t nb, const char *act, size_t stride, int t0,
                         const int NT, const bool Q81, float *y, size_t ys, int nr) {
    const size_t xb = Q81 ? sizeof(inf_block_q8_1) : sizeof(inf_block_q8_0);
    const size_t xq_at = Q81 ? offsetof(inf_block_q8_1, qs) : offsetof(inf_block_q8_0, q);
    const char *xa[QN_TOKENS32];
    float32x4_t sum[QN_TOKENS32];
    for (int t = 0; t < NT; t++) {
        xa[t] = act + (size_t)(t0 + t) * stride;
        sum[t] = vdupq_n_f32(0.0f);
    }
    for (int64_t b = 0; b < nb; b++) {
        const char *pb = pack + (size_t)b * QN_B32;
        int8x16_t wv[8];
        for (int q = 0; q < 8; q++) wv[q] = vld1q_s8((const int8_t *)pb + 16 * q);
        const float32x4_t dw = vld1q_f32((const float *)(pb + QN_B32_D));
        const float32x4_t mw = vld1q_f32((const float *)(pb + QN_B32_M));
        for (int t = 0; t < NT; t++) {
            const char *x = xa[t] + (size_t)b * xb;
            int32x4_t acc = dot4q(vdupq_n_s32(0), wv, vld1q_s8((const int8_t *)(x + xq_at)));
            acc = dot4q(acc, wv + 4, vld1q_s8((const int8_t *)(x + xq_at + 16)));
            const float32x4_t s = vmulq_f32(dw, vdupq_n_f32(inf_f16_to_f32(qn_f16_at(x))));
            if (Q81) /* (d_w * d_x) * isum + m_w * s_x */
                sum[t] = vaddq_f32(sum[t], vaddq_f32(vmulq_f32(s, vcvtq_f32_s32(acc)),
                                                     vmulq_f32(mw, vdupq_n_f32(inf_f16_to_f32(qn_f16_at(x + 2))))));
            else /* (float)isum * (d_w * d_x) */
                sum[t] = vaddq_f32(sum[t], vmulq_f32(vcvtq_f32_s32(acc), s));
        }
    }
    qn_store_rows(y + (size_t)t0 * ys, ys, sum, NT, nr);
}

/* The same for a super-block type: per super-block, lane i gathers row
 * i's exact isum (16-group dots times their scales) and, with MIN, imin
 * (bsums times the mins); then ref.c's f32 step. */
QN_INLINE void qn_tile256(q_dot4q dot4q, const char *pack, int64_t nb, const char *act, size_t stride, int t0,
                          const int NT, const bool MIN, float *y, size_t ys, int nr) {
    const inf_block_q8_K *xa[QN_TOKENS256];
    float32x4_t sum[QN_TOKENS256];
    for (int t = 0; t < NT; t++) {
        xa[t] = (const inf_block_q8_K *)(act + (size_t)(t0 + t) * stride);
        sum[t] = vdupq_n_f32(0.0f);
    }
    for (int64_t b = 0; b < nb; b++) {
        const char *pb = pack + (size_t)b * QN_BK;
        const int32_t *scale = (const int32_t *)(pb + QN_BK_SCALE), *min = (const int32_t *)(pb + QN_BK_MIN);
        int32x4_t isum[QN_TOKENS256], imin[QN_TOKENS256];
        for (int t = 0; t < NT; t++) isum[t] = imin[t] = vdupq_n_s32(0);
        for (int g = 0; g < 16; g++) {
            int8x16_t wv[4];
            for (int q = 0; q < 4; q++) wv[q] = vld1q_s8((const int8_t *)pb + (4 * g + q) * 16);
            const int32x4_t sc = vld1q_s32(scale + 4 * g);
            for (int t = 0; t < NT; t++)
                isum[t] = vmlaq_s32(isum[t], dot4q(vdupq_n_s32(0), wv, vld1q_s8(xa[t][b].qs + 16 * g)), sc);
        }
        if (MIN)
            for (int g = 0; g < 16; g++) {
                const int32x4_t mn = vld1q_s32(min + 4 * g);
                for (int t = 0; t < NT; t++) imin[t] = vmlaq_n_s32(imin[t], mn, xa[t][b].bsums[g]);
            }
        const float32x4_t d = vld1q_f32((const float *)(pb + QN_BK_D));
        const float32x4_t dmin = vld1q_f32((const float *)(pb + QN_BK_D) + QN_ROWS);
        for (int t = 0; t < NT; t++) { /* (d * dx) * isum - (dmin * dx) * imin, lane by lane */
            const float32x4_t dx = vdupq_n_f32(xa[t][b].d);
            const float32x4_t p = vmulq_f32(vmulq_f32(d, dx), vcvtq_f32_s32(isum[t]));
            const float32x4_t m = vmulq_f32(vmulq_f32(dmin, dx), vcvtq_f32_s32(imin[t]));
            sum[t] = vaddq_f32(sum[t], vsubq_f32(p, m));
        }
    }
    qn_store_rows(y + (size_t)t0 * ys, ys, sum, NT, nr);
}

/* Rows [r0, r1) (at most the table's gemm_rows) packed into groups of 4,
 * then every token against every group: full tiles with the token count a
 * constant, the last tokens one at a time (a token's floats are the same
 * either way). */
QN_INLINE void qn_gemm(q_dot4q dot4q, const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                       size_t ys, void *pack) {
    const bool b32 = inf_dtype_block_elems(w->type) == INF_QK;
    const int64_t nb = w->cols / (b32 ? INF_QK : INF_QK_K);
    const size_t gbytes = (size_t)nb * (b32 ? QN_B32 : QN_BK), stride = inf_act_row_bytes_quant(w->type, w->cols);
    const bool q81 = inf_quant_act_type(w->type) == INF_ACT_Q8_1, min = qn_has_min(w->type);
    const int tile = b32 ? QN_TOKENS32 : QN_TOKENS256;
    const int n_groups = (int)((r1 - r0 + QN_ROWS - 1) / QN_ROWS);
    for (int g = 0; g < n_groups; g++) {
        const int64_t r = r0 + (int64_t)g * QN_ROWS;
        const int nr = (int)INF_MIN(QN_ROWS, r1 - r);
        for (int64_t b = 0; b < nb; b++) {
            char *dst = (char *)pack + (size_t)g * gbytes + (size_t)b * (b32 ? QN_B32 : QN_BK);
            if (b32) qn_pack32(w, r, nr, b, dst);
            else qn_pack256(w, r, nr, b, dst);
        }
    }
    for (int t0 = 0; t0 < a->n;) {
        const int nt = a->n - t0 >= tile ? tile : 1;
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * QN_ROWS;
            const int nr = (int)INF_MIN(QN_ROWS, r1 - r);
            const char *p = (const char *)pack + (size_t)g * gbytes;
            float *yg = y + r;
            if (b32 && q81) {
                if (nt == tile) qn_tile32(dot4q, p, nb, a->data, stride, t0, QN_TOKENS32, true, yg, ys, nr);
                else qn_tile32(dot4q, p, nb, a->data, stride, t0, 1, true, yg, ys, nr);
            } else if (b32) {
                if (nt == tile) qn_tile32(dot4q, p, nb, a->data, stride, t0, QN_TOKENS32, false, yg, ys, nr);
                else qn_tile32(dot4q, p, nb, a->data, stride, t0, 1, false, yg, ys, nr);
            } else if (min) {
                if (nt == tile) qn_tile256(dot4q, p, nb, a->data, stride, t0, QN_TOKENS256, true, yg, ys, nr);
                else qn_tile256(dot4q, p, nb, a->data, stride, t0, 1, true, yg, ys, nr);
            } else {
                if (nt == tile) qn_tile256(dot4q, p, nb, a->data, stride, t0, QN_TOKENS256, false, yg, ys, nr);
                else qn_tile256(dot4q, p, nb, a->data, stride, t0, 1, false, yg, ys, nr);
            }
        }
        t0 += nt;
    }
}

#endif /* INF_QUANT_NEON_H */

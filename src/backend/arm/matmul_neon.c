/*
 * matmul_neon.c — matrix-vector products with plain NEON (any AArch64 CPU).
 * Each weight row is streamed once and dotted with up to MV_TOKENS
 * activation rows; every token count goes through here (the table's gemm
 * takes only the block types, whose kernels are quant_neon.c's).
 *
 * Q8_0: activations quantized exactly as inf_quantize_row_q8_0. Without
 * SDOT the block dot is widening multiplies: SMULL gives exact int16
 * products (|w x| <= 128 * 128), SADALP adds their pairs into int32 lanes.
 * The loop is q8_matvec_neon.h's (shared with matmul_dotprod.c): 4 rows in
 * lanes, bit-identical to ref.c.
 * BF16 and F16: both operands widened to f32 (exact: FCVTL is base
 * ARMv8; bf16 is a shift), FMA. Summation order differs from ref.c (f32
 * lanes instead of a double): see kernels.h.
 */
#include "backend/arm/arm_kernels.h"

#include "core/common.h"
#include "core/dtype.h"
#include "core/quant.h"

#include "backend/arm/q8_matvec_neon.h"

#include <arm_neon.h>
#include <string.h>

enum { MV_TOKENS = 4 };

/* Activation rows as act_row.c lays them out; F16 rounded with FCVTN/FCVTL. */
void inf_neon_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row) {
    if (type != INF_DTYPE_F16) {
        inf_act_prepare_common(type, x, cols, row);
        return;
    }
    float *xf = row;
    int64_t i = 0;
    for (; i + 4 <= cols; i += 4) vst1q_f32(xf + i, vcvt_f32_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < cols; i++) xf[i] = inf_f16_to_f32(inf_f32_to_f16(x[i]));
}

/* The exact integer dot of one Q8_0 weight block (w0, w1) with one
 * activation block, in 4 int32 lanes. */
static int32x4_t q8_dot(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    const int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int32x4_t d = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
    d = vpadalq_s16(d, vmull_high_s8(w0, x0));
    d = vpadalq_s16(d, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    return vpadalq_s16(d, vmull_high_s8(w1, x1));
}

/* 8 weights of a row from element k, widened to f32 (two halves). */
static void load_w8(inf_dtype type, const void *row, int64_t k, float32x4_t out[2]) {
    switch (type) {
    case INF_DTYPE_BF16: {
        const uint16x8_t h = vld1q_u16((const uint16_t *)row + k);
        out[0] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        out[1] = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
        return;
    }
    case INF_DTYPE_F16: {
        const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16((const uint16_t *)row + k));
        out[0] = vcvt_f32_f16(vget_low_f16(h));
        out[1] = vcvt_high_f32_f16(h);
        return;
    }
    default:
        out[0] = vld1q_f32((const float *)row + k);
        out[1] = vld1q_f32((const float *)row + k + 4);
        return;
    }
}

static float load_w1(inf_dtype type, const void *row, int64_t k) {
    switch (type) {
    case INF_DTYPE_BF16: return inf_bf16_to_f32(((const uint16_t *)row)[k]);
    case INF_DTYPE_F16: return inf_f16_to_f32(((const uint16_t *)row)[k]);
    default: return ((const float *)row)[k];
    }
}

/* F32, F16, BF16: exact f32 products, FMA into two accumulators per token
 * (columns k..k+3 and k+4..k+7 of each 8); the columns past the last
 * multiple of 8 are added one by one. */
static void f_matvec(const inf_weight *w, const inf_act *a, int t0, int nt, int64_t r0, int64_t r1, float *y,
                     size_t y_stride) {
    const int64_t cols = w->cols, body = cols & ~(int64_t)7;
    const float *xa[MV_TOKENS];
    for (int t = 0; t < nt; t++) xa[t] = (const float *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const void *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        float32x4_t acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);
        for (int64_t k = 0; k < body; k += 8) {
            float32x4_t wv[2];
            load_w8(w->type, wr, k, wv);
            for (int t = 0; t < nt; t++) {
                acc[t][0] = vfmaq_f32(acc[t][0], wv[0], vld1q_f32(xa[t] + k));
                acc[t][1] = vfmaq_f32(acc[t][1], wv[1], vld1q_f32(xa[t] + k + 4));
            }
        }
        for (int t = 0; t < nt; t++) {
            float sum = vaddvq_f32(vaddq_f32(acc[t][0], acc[t][1]));
            for (int64_t k = body; k < cols; k++) sum += load_w1(w->type, wr, k) * xa[t][k];
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = sum;
        }
    }
}

void inf_neon_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    if (inf_dtype_is_quant(w->type)) { /* the block types (quant_neon.c) */
        inf_neon_matvec_quant(w, a, r0, r1, y, y_stride);
        return;
    }
    if (w->type == INF_DTYPE_Q8_0) {
        q8_matvec_with(q8_dot, w, a, r0, r1, y, y_stride);
        return;
    }
    for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) f_matvec(w, a, t0, INF_MIN(MV_TOKENS, a->n - t0), r0, r1, y, y_stride);
}

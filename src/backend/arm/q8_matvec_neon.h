/*
 * q8_matvec_neon.h — the Q8_0 matrix-vector loop of the arm64 kernels,
 * shared by matmul_neon.c (block dot by widening multiplies) and
 * matmul_dotprod.c (block dot by SDOT), which differ only in the dot they
 * pass. Activations as act_row.c lays them out: quants [nb][32], then
 * scales [nb] f32. Each block's 4 integer lanes are scaled by d_w * d_x and
 * accumulated in f32, blocks alternating between two accumulators.
 */
#ifndef INF_Q8_MATVEC_NEON_H
#define INF_Q8_MATVEC_NEON_H

#include "backend/kernels.h"
#include "core/dtype.h"

#include <arm_neon.h>

enum { Q8_MV_TOKENS = 4 }; /* activation rows per pass */

/* The exact integer dot of one weight block (w0, w1) with one activation
 * block, in 4 int32 lanes. */
typedef int32x4_t (*q8_block_dot)(int8x16_t w0, int8x16_t w1, const int8_t *x);

/* Rows [r0, r1) of w against tokens [t0, t0 + nt), nt <= Q8_MV_TOKENS:
 * y[t * y_stride + r]. Inlined into each caller with its dot. */
static inline __attribute__((always_inline)) void q8_matvec_with(q8_block_dot dot, const inf_weight *w,
                                                                  const inf_act *a, int t0, int nt, int64_t r0,
                                                                  int64_t r1, float *y, size_t y_stride) {
    const int64_t nb = w->cols / INF_Q8_0_BLOCK;
    const int8_t *xq[Q8_MV_TOKENS];
    const float *dx[Q8_MV_TOKENS];
    for (int t = 0; t < nt; t++) {
        xq[t] = (const int8_t *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
        dx[t] = (const float *)(xq[t] + nb * INF_Q8_0_BLOCK);
    }
    for (int64_t r = r0; r < r1; r++) {
        const inf_block_q8_0 *wr = (const inf_block_q8_0 *)((const char *)w->data + (size_t)r * w->row_bytes);
        float32x4_t acc[Q8_MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);
        for (int64_t b = 0; b < nb; b++) {
            const int8x16_t w0 = vld1q_s8(wr[b].q), w1 = vld1q_s8(wr[b].q + 16);
            const float dw = inf_f16_to_f32(wr[b].d);
            for (int t = 0; t < nt; t++) {
                const float32x4_t d = vcvtq_f32_s32(dot(w0, w1, xq[t] + b * INF_Q8_0_BLOCK));
                acc[t][b & 1] = vfmaq_f32(acc[t][b & 1], d, vdupq_n_f32(dw * dx[t][b]));
            }
        }
        for (int t = 0; t < nt; t++)
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = vaddvq_f32(vaddq_f32(acc[t][0], acc[t][1]));
    }
}

#endif /* INF_Q8_MATVEC_NEON_H */

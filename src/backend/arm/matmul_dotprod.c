/*
 * matmul_dotprod.c — the Q8_0 matrix-vector product with the ARMv8.2 dot
 * product (SDOT: four int8 products summed into each int32 lane, exact),
 * built with -march=armv8.2-a+dotprod and called only where the CPU
 * reports it (cpu.c). The loop is matmul_neon.c's: each block's 4 integer
 * lanes scaled by d_w * d_x and accumulated in f32; only which products
 * share a lane differs. The other dtypes go to inf_neon_matvec.
 */
#include "backend/arm/arm_kernels.h"

#include "core/common.h"
#include "core/dtype.h"

#include <arm_neon.h>

enum { MV_TOKENS = 4, QK = INF_Q8_0_BLOCK };

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
        float32x4_t acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);
        for (int64_t b = 0; b < nb; b++) {
            const int8x16_t w0 = vld1q_s8(wr[b].q), w1 = vld1q_s8(wr[b].q + 16);
            const float dw = inf_f16_to_f32(wr[b].d);
            for (int t = 0; t < nt; t++) {
                const int8_t *x = xq[t] + b * QK;
                const int32x4_t dot = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
                acc[t][b & 1] = vfmaq_f32(acc[t][b & 1], vcvtq_f32_s32(dot), vdupq_n_f32(dw * dx[t][b]));
            }
        }
        for (int t = 0; t < nt; t++)
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = vaddvq_f32(vaddq_f32(acc[t][0], acc[t][1]));
    }
}

void inf_dotprod_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                        size_t y_stride) {
    if (w->type != INF_DTYPE_Q8_0) {
        inf_neon_matvec(w, a, r0, r1, y, y_stride);
        return;
    }
    for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS)
        q8_matvec(w, a, t0, INF_MIN(MV_TOKENS, a->n - t0), r0, r1, y, y_stride);
}

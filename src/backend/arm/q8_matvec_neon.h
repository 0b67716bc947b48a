/*
 * q8_matvec_neon.h — the Q8_0 matrix-vector loop of the arm64 kernels,
 * shared by matmul_neon.c (block dot by widening multiplies) and
 * matmul_dotprod.c (block dot by SDOT), which differ only in the dot they
 * pass. Activations as act_row.c lays them out: quants [nb][32], then
 * scales [nb] f32.
 *
 * Bit-identical to ref.c: 4 weight rows side by side, lane = row. Per
 * block, each row's dot with a token comes in 4 int32 lanes (exact); two
 * rounds of pairwise adds (ADDP) leave lane i holding row i's exact integer
 * dot; then sum += (float)dot * (d_w * d_x), ref.c's expression, block
 * after block in the row's lane (vmulq/vaddq, each rounded: -std=c11 keeps
 * GCC from contracting them into FMAs).
 */
#ifndef INF_Q8_MATVEC_NEON_H
#define INF_Q8_MATVEC_NEON_H

#include "backend/kernels.h"
#include "core/common.h"
#include "core/dtype.h"

#include <arm_neon.h>

enum {
    Q8_MV_TOKENS = 4, /* activation rows per pass */
    Q8_GROUP = 4,     /* weight rows side by side: one vector of lanes */
};
_Static_assert(Q8_GROUP == 4, "q8_matvec_with loads the 4 rows' scales lane by lane");

/* The exact integer dot of one weight block (w0, w1) with one activation
 * block, in 4 int32 lanes. */
typedef int32x4_t (*q8_block_dot)(int8x16_t w0, int8x16_t w1, const int8_t *x);

/* Rows [r0, r1) of w against all a->n tokens: y[t * y_stride + r]. Each
 * group of 4 rows runs against the tokens a pass of up to Q8_MV_TOKENS at
 * a time (a later pass finds the group's weights in cache); a tail group
 * repeats its last row and stores only its own lanes. Inlined into each
 * caller with its dot. */
static inline __attribute__((always_inline)) void q8_matvec_with(q8_block_dot dot, const inf_weight *w,
                                                                  const inf_act *a, int64_t r0, int64_t r1,
                                                                  float *y, size_t y_stride) {
    const int64_t nb = w->cols / INF_Q8_0_BLOCK;
    for (int64_t r = r0; r < r1; r += Q8_GROUP) {
        const int nr = (int)INF_MIN(Q8_GROUP, r1 - r);
        const inf_block_q8_0 *wr[Q8_GROUP];
        for (int i = 0; i < Q8_GROUP; i++)
            wr[i] = (const inf_block_q8_0 *)((const char *)w->data + (size_t)(r + INF_MIN(i, nr - 1)) * w->row_bytes);
        for (int t0 = 0; t0 < a->n; t0 += Q8_MV_TOKENS) {
            const int nt = INF_MIN(Q8_MV_TOKENS, a->n - t0);
            const int8_t *xq[Q8_MV_TOKENS];
            const float *dx[Q8_MV_TOKENS];
            float32x4_t sum[Q8_MV_TOKENS];
            for (int t = 0; t < nt; t++) {
                xq[t] = (const int8_t *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
                dx[t] = (const float *)(xq[t] + nb * INF_Q8_0_BLOCK);
                sum[t] = vdupq_n_f32(0.0f);
            }
            for (int64_t b = 0; b < nb; b++) {
                int8x16_t w0[Q8_GROUP], w1[Q8_GROUP];
                uint16x4_t dh = vdup_n_u16(0);
                for (int i = 0; i < Q8_GROUP; i++) {
                    w0[i] = vld1q_s8(wr[i][b].q);
                    w1[i] = vld1q_s8(wr[i][b].q + 16);
                }
                dh = vld1_lane_u16(&wr[0][b].d, dh, 0);
                dh = vld1_lane_u16(&wr[1][b].d, dh, 1);
                dh = vld1_lane_u16(&wr[2][b].d, dh, 2);
                dh = vld1_lane_u16(&wr[3][b].d, dh, 3);
                const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(dh));
                for (int t = 0; t < nt; t++) {
                    const int8_t *xb = xq[t] + b * INF_Q8_0_BLOCK;
                    const int32x4_t d01 = vpaddq_s32(dot(w0[0], w1[0], xb), dot(w0[1], w1[1], xb));
                    const int32x4_t d23 = vpaddq_s32(dot(w0[2], w1[2], xb), dot(w0[3], w1[3], xb));
                    const float32x4_t s = vmulq_n_f32(dw, dx[t][b]);
                    sum[t] = vaddq_f32(sum[t], vmulq_f32(vcvtq_f32_s32(vpaddq_s32(d01, d23)), s));
                }
            }
            for (int t = 0; t < nt; t++) {
                float out[Q8_GROUP];
                vst1q_f32(out, sum[t]);
                for (int i = 0; i < nr; i++) y[(size_t)(t0 + t) * y_stride + (size_t)(r + i)] = out[i];
            }
        }
    }
}

#endif /* INF_Q8_MATVEC_NEON_H */

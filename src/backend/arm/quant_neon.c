/*
 * quant_neon.c — the GGUF block types' matvec and prefill gemm with plain
 * NEON (any AArch64 CPU): the loops of quant_neon.h with integer dots by
 * widening multiplies (SMULL gives exact int16 products, |w x| <= 127 * 127;
 * SADALP adds their pairs into int32 lanes). Bit-identical to ref.c. Also
 * what both arm64 tables share for these types: which types they take, the
 * gemm's activations (the matvec's rows) and its pack size.
 */
#include "backend/arm/arm_kernels.h"

#include "backend/arm/quant_neon.h"

bool inf_neon_quant_takes(inf_dtype type) { return inf_dtype_is_quant(type); }

size_t inf_neon_qgemm_pack_bytes(inf_dtype type, int64_t cols) {
    const bool b32 = inf_dtype_block_elems(type) == INF_QK;
    return (INF_NEON_GEMM_ROWS / QN_ROWS) * (size_t)(cols / (b32 ? INF_QK : INF_QK_K)) * (b32 ? QN_B32 : QN_BK);
}

void inf_neon_qgemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf) {
    (void)n;
    inf_act_prepare_quant_rows(type, x, cols, t0, t1, buf, false, inf_act_prepare_quant);
}

static int32x4_t dot16_mull(int32x4_t acc, int8x16_t w, int8x16_t x) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
    return vpadalq_s16(acc, vmull_high_s8(w, x));
}

/* Quad k of 4 rows (w) times the quad x8 (twice over): each pair of
 * products summed in int16 (|sum| <= 2 * 127 * 127 < 2^15), each row's two
 * pairs into its int32 lane. */
static inline int32x4_t quad_mull(int32x4_t acc, int8x16_t w, int8x8_t x8) {
    const int16x8_t p01 = vmull_s8(vget_low_s8(w), x8), p23 = vmull_s8(vget_high_s8(w), x8);
    return vpadalq_s16(acc, vpaddq_s16(p01, p23));
}

static int32x4_t dot4q_mull(int32x4_t acc, const int8x16_t w[4], int8x16_t x) {
    const int32x4_t x32 = vreinterpretq_s32_s8(x);
    acc = quad_mull(acc, w[0], vreinterpret_s8_s32(vdup_laneq_s32(x32, 0)));
    acc = quad_mull(acc, w[1], vreinterpret_s8_s32(vdup_laneq_s32(x32, 1)));
    acc = quad_mull(acc, w[2], vreinterpret_s8_s32(vdup_laneq_s32(x32, 2)));
    return quad_mull(acc, w[3], vreinterpret_s8_s32(vdup_laneq_s32(x32, 3)));
}

void inf_neon_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    qn_matvec(dot16_mull, w, a, r0, r1, y, y_stride);
}

void inf_neon_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                    void *pack) {
    qn_gemm(dot4q_mull, w, a, r0, r1, y, y_stride, pack);
}

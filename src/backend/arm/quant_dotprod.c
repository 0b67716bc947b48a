/*
 * quant_dotprod.c — the GGUF block types' matvec and prefill gemm with the
 * ARMv8.2 dot product: the loops of quant_neon.h with SDOT (four int8
 * products summed into each int32 lane, exact), by element in the gemm
 * (lane i: row i's quad times one activation quad). Built with
 * -march=armv8.2-a+dotprod, called only where the CPU reports it (cpu.c).
 * Bit-identical to ref.c, and so to quant_neon.c.
 */
#include "backend/arm/arm_kernels.h"

#include "backend/arm/quant_neon.h"

static int32x4_t dot16_sdot(int32x4_t acc, int8x16_t w, int8x16_t x) { return vdotq_s32(acc, w, x); }

static int32x4_t dot4q_sdot(int32x4_t acc, const int8x16_t w[4], int8x16_t x) {
    acc = vdotq_laneq_s32(acc, w[0], x, 0);
    acc = vdotq_laneq_s32(acc, w[1], x, 1);
    acc = vdotq_laneq_s32(acc, w[2], x, 2);
    return vdotq_laneq_s32(acc, w[3], x, 3);
}

void inf_dotprod_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                              size_t y_stride) {
    qn_matvec(dot16_sdot, w, a, r0, r1, y, y_stride);
}

void inf_dotprod_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                       void *pack) {
    qn_gemm(dot4q_sdot, w, a, r0, r1, y, y_stride, pack);
}

/*
 * matmul_dotprod.c — the Q8_0 matrix-vector product with the ARMv8.2 dot
 * product (SDOT: four int8 products summed into each int32 lane, exact),
 * built with -march=armv8.2-a+dotprod and called only where the CPU
 * reports it (cpu.c). The loop is q8_matvec_neon.h's, shared with
 * matmul_neon.c (bit-identical to ref.c either way: only which products
 * share a lane of a block's exact dot differs). The block types go to
 * quant_dotprod.c, F32, F16 and BF16 to inf_neon_matvec.
 */
#include "backend/arm/arm_kernels.h"

#include "backend/arm/q8_matvec_neon.h"
#include "core/common.h"
#include "core/quant.h"

#include <arm_neon.h>

/* SDOT: each lane sums four int8 products; exact. */
static int32x4_t q8_dot_sdot(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
}

void inf_dotprod_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                        size_t y_stride) {
    if (inf_dtype_is_quant(w->type)) {
        inf_dotprod_matvec_quant(w, a, r0, r1, y, y_stride);
        return;
    }
    if (w->type != INF_DTYPE_Q8_0) {
        inf_neon_matvec(w, a, r0, r1, y, y_stride);
        return;
    }
    q8_matvec_with(q8_dot_sdot, w, a, r0, r1, y, y_stride);
}

/*
 * tables.c — the kernel tables of arm64 (built without extra ISA flags: it
 * only takes the kernels' addresses). Two tables share the name "neon"
 * and differ in the integer dots of the Q8_0 matvec and of the block
 * types' matvec and gemm: SDOT where the CPU has the ARMv8.2 dot product,
 * widening multiplies elsewhere. On other architectures there
 * are none.
 */
#include "backend/kernels.h"

#if defined(__aarch64__)
#include "backend/arm/arm_kernels.h"

/* The members both tables share: all but the integer dots. */
#define NEON_COMMON_MEMBERS                                    \
    .name = "neon",                                            \
    .act_row_bytes = inf_act_row_bytes_common,                 \
    .act_prepare = inf_neon_act_prepare,                       \
    .matvec_takes = inf_neon_quant_takes,                      \
    .matvec_exact_quant = true,                                \
    .matvec_exact_q8_0 = true,                                 \
    .gemm_prepare = inf_neon_qgemm_prepare,                    \
    .gemm_pack_bytes = inf_neon_qgemm_pack_bytes,              \
    .gemm_takes = inf_neon_quant_takes,                        \
    .gemm_rows = INF_NEON_GEMM_ROWS,                           \
    .gemm_min_tokens = 8, /* not measured on arm64 hardware */ \
    .rmsnorm = inf_neon_rmsnorm,                               \
    .rope_rows = inf_neon_rope_rows,                           \
    .swiglu = inf_neon_swiglu,                                 \
    .add = inf_neon_add,                                       \
    .f32_to_f16 = inf_neon_f32_to_f16

static const inf_kernels neon_table = {
    .matvec = inf_neon_matvec,
    .gemm = inf_neon_qgemm,
    NEON_COMMON_MEMBERS,
};

static const inf_kernels neon_dotprod_table = {
    .matvec = inf_dotprod_matvec,
    .gemm = inf_dotprod_qgemm,
    NEON_COMMON_MEMBERS,
};

const inf_kernels *inf_kernels_neon(bool dotprod) { return dotprod ? &neon_dotprod_table : &neon_table; }

#else

const inf_kernels *inf_kernels_neon(bool dotprod) {
    (void)dotprod;
    return NULL;
}

#endif

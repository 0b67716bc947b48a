/*
 * tables.c — the kernel tables of arm64 (built without extra ISA flags: it
 * only takes the kernels' addresses). Two tables share the name "neon"
 * and differ in the Q8_0 matvec: SDOT where the CPU has the ARMv8.2 dot
 * product, widening multiplies elsewhere. On other architectures there
 * are none.
 */
#include "backend/kernels.h"

#if defined(__aarch64__)
#include "backend/arm/arm_kernels.h"

static const inf_kernels neon_table = {
    .name = "neon",
    .act_row_bytes = inf_act_row_bytes_common,
    .act_prepare = inf_neon_act_prepare,
    .matvec = inf_neon_matvec,
    .matvec_exact_q8_0 = true,
    .rmsnorm = inf_neon_rmsnorm,
    .rope_rows = inf_neon_rope_rows,
    .swiglu = inf_neon_swiglu,
    .add = inf_neon_add,
    .f32_to_f16 = inf_neon_f32_to_f16,
};

static const inf_kernels neon_dotprod_table = {
    .name = "neon",
    .act_row_bytes = inf_act_row_bytes_common,
    .act_prepare = inf_neon_act_prepare,
    .matvec = inf_dotprod_matvec,
    .matvec_exact_q8_0 = true,
    .rmsnorm = inf_neon_rmsnorm,
    .rope_rows = inf_neon_rope_rows,
    .swiglu = inf_neon_swiglu,
    .add = inf_neon_add,
    .f32_to_f16 = inf_neon_f32_to_f16,
};

const inf_kernels *inf_kernels_neon(bool dotprod) { return dotprod ? &neon_dotprod_table : &neon_table; }

#else

const inf_kernels *inf_kernels_neon(bool dotprod) {
    (void)dotprod;
    return NULL;
}

#endif

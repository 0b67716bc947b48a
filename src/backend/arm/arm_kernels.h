/*
 * arm_kernels.h — the NEON kernels of arm64, as tables.c collects them.
 * NEON (Advanced SIMD) is part of every AArch64 CPU, so *_neon.c files are
 * built for plain armv8-a; *_dotprod.c files use the ARMv8.2 dot product
 * (SDOT) and are only called when the CPU reports it (cpu.c).
 * Semantics: the members of inf_kernels (backend/kernels.h) of the same name.
 */
#ifndef INF_ARM_KERNELS_H
#define INF_ARM_KERNELS_H

#include "backend/kernels.h"

/* ---- neon: no gemm (matvec serves every token count) and no attention
 * (the reference, threaded) */
void inf_neon_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row);
/* Q8_0 block dots by widening multiplies (SMULL + SADALP). */
void inf_neon_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                     size_t y_stride);
void inf_neon_rmsnorm(float *y, const float *x, const float *w, int n_rows, int dim, float eps);
void inf_neon_rope_rows(float *x, int n_rows, int head_dim, const float *cos_sin);
void inf_neon_swiglu(float *out, const float *gate, const float *up, size_t n);
void inf_neon_add(float *y, const float *x, size_t n);
void inf_neon_f32_to_f16(uint16_t *dst, const float *src, size_t n);

/* ---- dotprod: the matvec with Q8_0 block dots by SDOT (other dtypes as
 * inf_neon_matvec); activations as inf_neon_act_prepare. */
void inf_dotprod_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                        size_t y_stride);

#endif /* INF_ARM_KERNELS_H */

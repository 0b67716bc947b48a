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

/* Weight rows per gemm task (the block types' gemm; 4-row groups). */
enum { INF_NEON_GEMM_ROWS = 32 };

/* ---- neon: a gemm for the block types only (the matvec serves every
 * token count of the others) and no attention (the reference, threaded) */
void inf_neon_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row);
/* Q8_0 block dots by widening multiplies (SMULL + SADALP); the block
 * types go to inf_neon_matvec_quant. */
void inf_neon_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                     size_t y_stride);
void inf_neon_rmsnorm(float *y, const float *x, const float *w, int n_rows, int dim, float eps);
void inf_neon_rope_rows(float *x, int n_rows, int head_dim, const float *cos_sin);
void inf_neon_swiglu(float *out, const float *gate, const float *up, size_t n);
void inf_neon_add(float *y, const float *x, size_t n);
void inf_neon_f32_to_f16(uint16_t *dst, const float *src, size_t n);

/* ---- neon, the GGUF block types (quant_neon.c; quant_neon.h says how):
 * matvec and gemm bit-identical to ref.c. Both tables take every block
 * type, prepare the gemm's activations as the matvec's rows and size its
 * pack alike. */
bool inf_neon_quant_takes(inf_dtype type);
void inf_neon_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                           size_t y_stride);
void inf_neon_qgemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);
void inf_neon_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                    void *pack);
size_t inf_neon_qgemm_pack_bytes(inf_dtype type, int64_t cols);

/* ---- dotprod: the matvec with Q8_0 block dots by SDOT (F32, F16, BF16
 * as inf_neon_matvec), the block types' matvec and gemm by SDOT
 * (quant_dotprod.c); activations as inf_neon_act_prepare. */
void inf_dotprod_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                        size_t y_stride);
void inf_dotprod_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                              size_t y_stride);
void inf_dotprod_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                       void *pack);

#endif /* INF_ARM_KERNELS_H */

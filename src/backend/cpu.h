/*
 * cpu.h — the CPU backend: an op table that runs every op on a persistent
 * thread pool, with the kernels of one instruction set (ISA).
 *
 * ISAs: "ref" (the scalar reference ops of ref.c, threaded: bit-identical
 * to inf_ops_ref), on x86-64 "avx2" (AVX2 + FMA + F16C) and "avx512"
 * (AVX-512 F/BW/VL/DQ + VNNI + BF16) and "avx512+amx" (avx512 with the
 * prefill gemm on AMX int8 and bf16 tiles, where cpuid reports AMX and the
 * kernel grants the tile state), on arm64 "neon" (with the ARMv8.2 dot
 * product for Q8_0 where the CPU has it). One binary runs on any CPU of its
 * architecture: a SIMD kernel is only called when the CPU reports its
 * features. Results never depend on the thread count: every output element
 * is computed by the same sequence of operations whichever task and thread
 * computes it.
 */
#ifndef INF_BACKEND_CPU_H
#define INF_BACKEND_CPU_H

#include "backend/ops.h"

typedef enum inf_isa {
    INF_ISA_REF = 0,
    INF_ISA_AVX2,
    INF_ISA_AVX512,
    INF_ISA_NEON,
    INF_ISA_AVX512_AMX, /* last: the best where the CPU has it */
    INF_ISA_COUNT
} inf_isa;

/* "ref", "avx2", "avx512", "neon", "avx512+amx". */
const char *inf_isa_name(inf_isa isa);
/* Parses a name as above; false when unknown. */
bool inf_isa_from_name(const char *name, inf_isa *out);
/* True when this CPU (and this build) can run the ISA's kernels. */
bool inf_isa_supported(inf_isa isa);
/* The fastest supported ISA. */
inf_isa inf_isa_best(void);
/* The ISA to use: INFERNO_ISA from the environment when set (an unknown
 * name or an ISA this CPU lacks is an error naming it), else the best. */
inf_status inf_isa_select(inf_isa *out, inf_error *err);

/* A backend with n_threads >= 1 threads (the caller counts as one) running
 * the kernels of isa, which must be supported. Its name is the ISA's name.
 * Free with inf_ops_cpu_free. */
inf_status inf_ops_cpu_new(inf_isa isa, int n_threads, inf_ops **out, inf_error *err);
void inf_ops_cpu_free(inf_ops *ops);

#endif /* INF_BACKEND_CPU_H */

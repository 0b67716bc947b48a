/*
 * tables.c — the kernel tables of the x86 ISAs (built without ISA flags:
 * it only takes the kernels' addresses), and the CPU vendor the kernels
 * tune by. On other architectures there are none.
 */
#include "backend/kernels.h"

#if defined(__x86_64__)
#include "backend/x86/x86_kernels.h"

#include <cpuid.h>
#include <stdatomic.h>
#include <string.h>

bool inf_x86_cpu_is_amd(void) {
    static _Atomic int cached = -1; /* racing first calls compute the same answer */
    const int known = atomic_load_explicit(&cached, memory_order_relaxed);
    if (known >= 0) return known;
    unsigned max_leaf, b, c, d;
    char vendor[12] = {0}; /* EBX, EDX, ECX */
    if (__get_cpuid(0, &max_leaf, &b, &c, &d)) {
        memcpy(vendor, &b, 4);
        memcpy(vendor + 4, &d, 4);
        memcpy(vendor + 8, &c, 4);
    }
    const bool amd = memcmp(vendor, "AuthenticAMD", 12) == 0;
    atomic_store_explicit(&cached, amd, memory_order_relaxed);
    return amd;
}

static _Atomic int weight_hint = -1; /* an INF_X86_HINT_*, -1 until set */

static const char *const weight_hint_names[INF_X86_HINTS] = {"L2", "NTA"};

static int weight_hint_initial(void) { return inf_x86_cpu_is_amd() ? INF_X86_HINT_NTA : INF_X86_HINT_L2; }

static void weight_hint_set(int hint) { atomic_store_explicit(&weight_hint, hint, memory_order_relaxed); }

bool inf_x86_weights_nta(void) {
    const int hint = atomic_load_explicit(&weight_hint, memory_order_relaxed);
    return (hint < 0 ? weight_hint_initial() : hint) == INF_X86_HINT_NTA;
}

/* The x86 gemms take every weight type (the block types: quant_*.c). */
static bool gemm_takes_all(inf_dtype type) {
    (void)type;
    return true;
}

static const inf_kernels avx2_table = {
    .name = "avx2",
    .act_row_bytes = inf_act_row_bytes_common,
    .act_prepare = inf_avx2_act_prepare,
    .matvec = inf_avx2_matvec,
    .matvec_takes = inf_avx2_matvec_takes,
    .gemm_prepare = inf_avx2_gemm_prepare,
    .gemm = inf_avx2_gemm,
    .gemm_pack_bytes = inf_avx2_gemm_pack_bytes,
    .gemm_takes = gemm_takes_all,
    .gemm_rows = INF_AVX2_GEMM_ROWS,
    .gemm_min_tokens = 8,
    .matvec_exact_q8_0 = true,
    .attn_tmp_bytes = inf_avx2_attn_tmp_bytes,
    .attn_decode = inf_avx2_attn_decode,
    .attn_prefill = inf_avx2_attn_prefill,
    .attn_block = INF_X86_ATTN_BLOCK,
    .rmsnorm = inf_avx2_rmsnorm,
    .rope_rows = inf_avx2_rope_rows,
    .hadamard = inf_avx2_hadamard,
    .swiglu = inf_avx2_swiglu,
    .add = inf_avx2_add,
    .f32_to_f16 = inf_avx2_f32_to_f16,
    .quantize_row_q8_0 = inf_avx2_quantize_row_q8_0,
};

/* The members avx512 and avx512+amx share: all but the gemm and prefill
 * attention. */
#define AVX512_SHARED_MEMBERS                                                   \
    .act_row_bytes = inf_avx512_act_row_bytes,                                  \
    .act_prepare = inf_avx512_act_prepare,                                      \
    .matvec = inf_avx512_matvec,                                                \
    .matvec_takes = inf_avx512_matvec_takes,                                    \
    .gemm_takes = gemm_takes_all,                                               \
    .gemm_rows = INF_X86_GEMM_ROWS,                                             \
    .packed_bytes = inf_avx512_packed_bytes,                                    \
    .pack_rows = inf_avx512_pack_rows,                                          \
    .packed_format = INF_X86_PACKED_GROUPS,                                     \
    .gemm_min_tokens = 8,                                                       \
    /* batched decode of 8 and 16 rows ran 1.2-3x faster on the matvec */     \
    .gemm_min_tokens_q8_0 = 17,                                                 \
    .matvec_exact_q8_0 = true,                                                  \
    .attn_decode = inf_avx512_attn_decode,                                      \
    .attn_decode_short_ahead = INF_X86_DECODE_SHORT_AHEAD,                      \
    .rmsnorm = inf_avx512_rmsnorm,                                              \
    .rope_rows = inf_avx512_rope_rows,                                          \
    .hadamard = inf_avx2_hadamard, /* AVX2 code: every AVX-512 CPU has AVX2 */  \
    .swiglu = inf_avx512_swiglu,                                                \
    .add = inf_avx512_add,                                                      \
    .f32_to_f16 = inf_avx512_f32_to_f16,                                        \
    .quantize_row_q8_0 = inf_avx512_quantize_row_q8_0,                         \
    .stream_hints = INF_X86_HINTS,                                              \
    .stream_hint_names = weight_hint_names,                                     \
    .stream_hint_initial = weight_hint_initial,                                 \
    .stream_hint_set = weight_hint_set

static const inf_kernels avx512_table = {
    .name = "avx512",
    .gemm_prepare = inf_avx512_gemm_prepare,
    .gemm = inf_avx512_gemm,
    .gemm_pack_bytes = inf_avx512_gemm_pack_bytes,
    .attn_tmp_bytes = inf_avx512_attn_tmp_bytes,
    .attn_prefill = inf_avx512_attn_prefill,
    .attn_block = INF_X86_ATTN_BLOCK,
    AVX512_SHARED_MEMBERS,
};

/* avx512 with the prefill gemm (matmul_amx.c) and, for f16 caches, prefill
 * attention (attention_amx.c) on AMX tiles. */
static const inf_kernels avx512_amx_table = {
    .name = "avx512+amx",
    .gemm_prepare = inf_amx_gemm_prepare,
    .gemm = inf_amx_gemm,
    .gemm_pack_bytes = inf_amx_gemm_pack_bytes,
    .attn_tmp_bytes = inf_amx_attn_tmp_bytes,
    .attn_prefill = inf_amx_attn_prefill,
    .attn_block = INF_AMX_ATTN_BLOCK,
    AVX512_SHARED_MEMBERS,
};

const inf_kernels *inf_kernels_avx2(void) { return &avx2_table; }
const inf_kernels *inf_kernels_avx512(void) { return &avx512_table; }
const inf_kernels *inf_kernels_avx512_amx(void) { return &avx512_amx_table; }

#else

const inf_kernels *inf_kernels_avx2(void) { return NULL; }
const inf_kernels *inf_kernels_avx512(void) { return NULL; }
const inf_kernels *inf_kernels_avx512_amx(void) { return NULL; }

#endif

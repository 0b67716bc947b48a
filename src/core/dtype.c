/*
 * dtype.c — type tables and reference row conversions.
 */
#include "core/dtype.h"
#include "core/common.h"
#include "core/quant.h"

#include <math.h>
#include <strings.h>

/* Every weight type inferno loads, in GGUF id order. */
static const inf_dtype all_types[] = {
    INF_DTYPE_F32, INF_DTYPE_F16, INF_DTYPE_Q4_0, INF_DTYPE_Q4_1, INF_DTYPE_Q5_0, INF_DTYPE_Q5_1,
    INF_DTYPE_Q8_0, INF_DTYPE_Q2_K, INF_DTYPE_Q3_K, INF_DTYPE_Q4_K, INF_DTYPE_Q5_K, INF_DTYPE_Q6_K,
    INF_DTYPE_IQ4_NL, INF_DTYPE_IQ4_XS, INF_DTYPE_BF16};

const char *inf_dtype_name(inf_dtype type) {
    switch (type) {
    case INF_DTYPE_F32: return "f32";
    case INF_DTYPE_F16: return "f16";
    case INF_DTYPE_Q4_0: return "q4_0";
    case INF_DTYPE_Q4_1: return "q4_1";
    case INF_DTYPE_Q5_0: return "q5_0";
    case INF_DTYPE_Q5_1: return "q5_1";
    case INF_DTYPE_Q8_0: return "q8_0";
    case INF_DTYPE_Q2_K: return "q2_k";
    case INF_DTYPE_Q3_K: return "q3_k";
    case INF_DTYPE_Q4_K: return "q4_k";
    case INF_DTYPE_Q5_K: return "q5_k";
    case INF_DTYPE_Q6_K: return "q6_k";
    case INF_DTYPE_IQ4_NL: return "iq4_nl";
    case INF_DTYPE_IQ4_XS: return "iq4_xs";
    case INF_DTYPE_BF16: return "bf16";
    }
    return "?";
}

bool inf_dtype_from_name(const char *name, inf_dtype *out) {
    for (size_t i = 0; i < sizeof all_types / sizeof all_types[0]; i++)
        if (strcasecmp(name, inf_dtype_name(all_types[i])) == 0) { *out = all_types[i]; return true; }
    return false;
}

const char *inf_kv_type_name(inf_kv_type type) {
    switch (type) {
    case INF_KV_F32: return "f32";
    case INF_KV_F16: return "f16";
    case INF_KV_Q8_0: return "q8_0";
    }
    return "?";
}

bool inf_kv_type_from_name(const char *name, inf_kv_type *out) {
    static const inf_kv_type all[] = {INF_KV_F32, INF_KV_F16, INF_KV_Q8_0};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcasecmp(name, inf_kv_type_name(all[i])) == 0) { *out = all[i]; return true; }
    return false;
}

size_t inf_kv_type_bytes(inf_kv_type type, size_t n) {
    switch (type) {
    case INF_KV_F32: return n * sizeof(float);
    case INF_KV_F16: return n * sizeof(inf_f16);
    case INF_KV_Q8_0: return n / INF_Q8_0_BLOCK * sizeof(inf_block_q8_0);
    }
    return 0;
}

const char *inf_ggml_type_name(uint32_t t) {
    static const char *names[] = {
        "f32", "f16", "q4_0", "q4_1", "type 4 (removed q4_2)", "type 5 (removed q4_3)", "q5_0", "q5_1",
        "q8_0", "q8_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "iq2_xxs", "iq2_xs",
        "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16", "i32", "i64",
        "f64", "iq1_m", "bf16", "type 31", "type 32", "type 33", "tq1_0", "tq2_0",
        "type 36", "type 37", "type 38", "mxfp4"};
    if (t < sizeof names / sizeof names[0]) return names[t];
    return "unknown type";
}

bool inf_dtype_supported(uint32_t t) {
    for (size_t i = 0; i < sizeof all_types / sizeof all_types[0]; i++)
        if (t == (uint32_t)all_types[i]) return true;
    return false;
}

int64_t inf_dtype_block_elems(inf_dtype type) {
    switch (type) {
    case INF_DTYPE_F32: case INF_DTYPE_F16: case INF_DTYPE_BF16: return 1;
    case INF_DTYPE_Q4_0: case INF_DTYPE_Q4_1: case INF_DTYPE_Q5_0: case INF_DTYPE_Q5_1:
    case INF_DTYPE_Q8_0: case INF_DTYPE_IQ4_NL: return INF_QK;
    case INF_DTYPE_Q2_K: case INF_DTYPE_Q3_K: case INF_DTYPE_Q4_K: case INF_DTYPE_Q5_K:
    case INF_DTYPE_Q6_K: case INF_DTYPE_IQ4_XS: return INF_QK_K;
    }
    return 0;
}

size_t inf_dtype_block_bytes(inf_dtype type) {
    switch (type) {
    case INF_DTYPE_F32: return 4;
    case INF_DTYPE_F16: return 2;
    case INF_DTYPE_BF16: return 2;
    case INF_DTYPE_Q8_0: return sizeof(inf_block_q8_0);
    case INF_DTYPE_Q4_0: return sizeof(inf_block_q4_0);
    case INF_DTYPE_Q4_1: return sizeof(inf_block_q4_1);
    case INF_DTYPE_Q5_0: return sizeof(inf_block_q5_0);
    case INF_DTYPE_Q5_1: return sizeof(inf_block_q5_1);
    case INF_DTYPE_IQ4_NL: return sizeof(inf_block_iq4_nl);
    case INF_DTYPE_Q2_K: return sizeof(inf_block_q2_K);
    case INF_DTYPE_Q3_K: return sizeof(inf_block_q3_K);
    case INF_DTYPE_Q4_K: return sizeof(inf_block_q4_K);
    case INF_DTYPE_Q5_K: return sizeof(inf_block_q5_K);
    case INF_DTYPE_Q6_K: return sizeof(inf_block_q6_K);
    case INF_DTYPE_IQ4_XS: return sizeof(inf_block_iq4_xs);
    }
    return 0;
}

bool inf_dtype_row_bytes(inf_dtype type, uint64_t n, uint64_t *bytes) {
    uint64_t be = (uint64_t)inf_dtype_block_elems(type);
    if (be == 0 || n % be != 0) return false;
    return inf_mul_u64(n / be, inf_dtype_block_bytes(type), bytes);
}

/* As llama.cpp's x86 quantize_row_q8_0 (the path that produced the goldens):
 * d = amax/127 stored as f16, q = x * (127/amax) rounded to nearest, ties to
 * even (its _mm256_round_ps); the scalar ggml reference differs only at
 * exact .5 ties (roundf) and in using 1/d. */
void inf_quantize_row_q8_0(const float *x, inf_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_Q8_0_BLOCK; b++) {
        const float *xb = x + b * INF_Q8_0_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < INF_Q8_0_BLOCK; i++) { /* as fmaxf (NaN ignored), without the libm call */
            float a = fabsf(xb[i]);
            if (a > amax) amax = a;
        }
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[b].d = inf_f32_to_f16(d);
        for (int i = 0; i < INF_Q8_0_BLOCK; i++) y[b].q[i] = inf_round_to_i8(xb[i] * id);
    }
}

void inf_dequantize_row(inf_dtype type, const void *src, float *dst, int64_t n) {
    switch (type) {
    case INF_DTYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case INF_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = inf_f16_to_f32(((const inf_f16 *)src)[i]);
        break;
    case INF_DTYPE_BF16: {
        /* in runs of 32 (a fixed count -O2 vectorizes: quantizing BF16
         * weights on load spends most of its time here), then the rest */
        const inf_bf16 *b = src;
        int64_t i = 0;
        for (; i + 32 <= n; i += 32)
            for (int k = 0; k < 32; k++) dst[i + k] = inf_bf16_to_f32(b[i + k]);
        for (; i < n; i++) dst[i] = inf_bf16_to_f32(b[i]);
        break;
    }
    case INF_DTYPE_Q8_0: {
        const inf_block_q8_0 *blk = src;
        for (int64_t b = 0; b < n / INF_Q8_0_BLOCK; b++) {
            const float d = inf_f16_to_f32(blk[b].d);
            for (int i = 0; i < INF_Q8_0_BLOCK; i++) dst[b * INF_Q8_0_BLOCK + i] = d * (float)blk[b].q[i];
        }
        break;
    }
    default: inf_dequantize_row_quant(type, src, dst, n); break;
    }
}

/*
 * dtype.h — element types of weights and caches: f16/bf16 <-> f32
 * conversion (bit-exact, round-to-nearest-even as ggml does), the Q8_0
 * block layout, and row sizes. Internal.
 */
#ifndef INF_DTYPE_H
#define INF_DTYPE_H

#include "inferno.h"

#include <stdint.h>
#include <string.h>

typedef uint16_t inf_f16;  /* IEEE half, raw bits */
typedef uint16_t inf_bf16; /* bfloat16, raw bits */

#define INF_Q8_0_BLOCK 32

/* Q8_0: 32 weights w[i] = d * q[i]; 34 bytes, exactly GGUF's layout. */
typedef struct inf_block_q8_0 {
    inf_f16 d;                    /* scale, f16 */
    int8_t q[INF_Q8_0_BLOCK];     /* quants */
} inf_block_q8_0;
_Static_assert(sizeof(inf_block_q8_0) == 34, "Q8_0 block must be 34 bytes");

static inline uint32_t inf_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float inf_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* f16 -> f32, exact for every input including subnormals, inf and NaN. */
static inline float inf_f16_to_f32(inf_f16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0) {
        if (mant == 0) return inf_bits_f32(sign);
        /* subnormal: value = mant * 2^-24 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31) return inf_bits_f32(sign | 0x7f800000u | (mant << 13));
    return inf_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

/* f32 -> f16 with round-to-nearest-even (what F16C's vcvtps2ph does). */
static inline inf_f16 inf_f32_to_f16(float f) {
    uint32_t x = inf_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (inf_f16)(sign | 0x7e00 | ((absx >> 13) & 0x3ff)); /* NaN */
    if (absx >= 0x477ff000u) return (inf_f16)(sign | 0x7c00); /* overflow (incl. rounding up) -> inf */
    if (absx < 0x38800000u) {
        /* result is subnormal or zero: round absx * 2^24 to an integer, ties to even */
        float a = inf_bits_f32(absx) * 0x1p24f;
        /* a < 1024; nearbyint-free RNE via the 2^23 trick */
        float r = (a + 0x1p23f) - 0x1p23f;
        return (inf_f16)(sign | (uint32_t)r);
    }
    uint32_t mant = absx & 0x7fffff;
    uint32_t exp = (absx >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (inf_f16)(sign | h);
}

static inline float inf_bf16_to_f32(inf_bf16 b) { return inf_bits_f32((uint32_t)b << 16); }

/* f32 -> bf16, round-to-nearest-even; NaN stays NaN (as ggml_fp32_to_bf16). */
static inline inf_bf16 inf_f32_to_bf16(float f) {
    uint32_t u = inf_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (inf_bf16)((u >> 16) | 64);
    return (inf_bf16)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

/* v rounded to the nearest int8, ties to even, as the x86 activation
 * quantizers do it (VCVTPS2DQ, then saturating packs): out-of-range values
 * saturate and NaN gives -128 (VCVTPS2DQ's "integer indefinite"), where a
 * plain (int8_t) cast would be undefined. */
static inline int8_t inf_round_to_i8(float v) {
    if (!(v > -128.5f)) return -128; /* also NaN */
    if (v >= 127.5f) return 127;
    return (int8_t)__builtin_nearbyintf(v);
}

/* Elements per block and bytes per block of a type (block = 1 for plain types). */
int64_t inf_dtype_block_elems(inf_dtype type);
size_t inf_dtype_block_bytes(inf_dtype type);
/* True for the types the engine can load. */
bool inf_dtype_supported(uint32_t ggml_type);
/* Bytes of one row of n elements; false when n is not a whole number of blocks or overflows. */
bool inf_dtype_row_bytes(inf_dtype type, uint64_t n, uint64_t *bytes);
/* Name for any ggml type id, including the ones we do not load (for error messages). */
const char *inf_ggml_type_name(uint32_t ggml_type);

/* Reference conversions of a row. n must be a multiple of 32 for Q8_0. */
void inf_quantize_row_q8_0(const float *x, inf_block_q8_0 *y, int64_t n);
void inf_dequantize_row(inf_dtype type, const void *src, float *dst, int64_t n);

#endif /* INF_DTYPE_H */

/*
 * quant.h — the GGUF block-quantized weight types beside Q8_0 (Q4_0, Q4_1,
 * Q5_0, Q5_1, IQ4_NL in blocks of 32; Q2_K .. Q6_K and IQ4_XS in
 * super-blocks of 256), the activation types llama.cpp dots them with (Q8_0,
 * Q8_1, Q8_K), and the scalar reference of both: dequantize a row, quantize
 * an activation row, dot one weight row with one activation row. Internal.
 *
 * The layouts are GGUF's, byte for byte (ggml-common.h); the formulas are
 * ggml's (ggml-quants.c dequantize_row_*, ggml-cpu quants.c vec_dot_*),
 * rewritten here. Every dot is exact in integers inside a block (or a
 * super-block, with its integer sub-block scales), then scaled once in f32
 * (ggml's generic Q2_K dot does exactly this; dmin and imin are 0 for the
 * types without mins):
 *
 *   Q4_0, Q5_0, IQ4_NL  x Q8_0: sum += (float)isum * (d_w * d_x)
 *   Q4_1, Q5_1          x Q8_1: sum += (d_w * d_x) * (float)isum + m_w * s_x
 *   K-quants, IQ4_XS    x Q8_K: sum += (d_w * d_x) * (float)isum - (dmin_w * d_x) * (float)imin
 *
 * with isum = Σ_sub scale_sub * Σ q_w q_x over the sub-blocks of the
 * super-block (|isum| < 2^31 for every type), imin = Σ_16 bsum_x * min_sub,
 * blocks summed in order in f32. ggml's generic C and its AVX2 kernels group
 * the f32 additions differently (within ~1e-6 relative); the integer parts
 * and the scales are the same.
 */
#ifndef INF_QUANT_H
#define INF_QUANT_H

#include "core/dtype.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define INF_QK 32   /* elements per block of the 32-types */
#define INF_QK_K 256 /* elements per K-quant super-block */

typedef struct inf_block_q4_0 { /* w = d * (q - 8), q in 0..15 */
    inf_f16 d;
    uint8_t qs[16]; /* element j in the low nibble of qs[j], j + 16 in the high one */
} inf_block_q4_0;

typedef struct inf_block_q4_1 { /* w = d * q + m */
    inf_f16 d, m;
    uint8_t qs[16];
} inf_block_q4_1;

typedef struct inf_block_q5_0 { /* w = d * (q - 16), q in 0..31 */
    inf_f16 d;
    uint8_t qh[4]; /* bit j: the fifth bit of element j (little-endian u32) */
    uint8_t qs[16];
} inf_block_q5_0;

typedef struct inf_block_q5_1 { /* w = d * q + m */
    inf_f16 d, m;
    uint8_t qh[4];
    uint8_t qs[16];
} inf_block_q5_1;

typedef struct inf_block_iq4_nl { /* w = d * kvalues[q] */
    inf_f16 d;
    uint8_t qs[16];
} inf_block_iq4_nl;

typedef struct inf_block_q8_1 { /* activations for Q4_1/Q5_1: x = d * q, s = d * Σq (f16) */
    inf_f16 d, s;
    int8_t qs[32];
} inf_block_q8_1;

typedef struct inf_block_q2_K { /* 16 sub-blocks of 16: w = d * (sc & 15) * q - dmin * (sc >> 4) */
    uint8_t scales[16];
    uint8_t qs[64];
    inf_f16 d, dmin;
} inf_block_q2_K;

typedef struct inf_block_q3_K { /* 16 sub-blocks of 16: w = d * (sc - 32) * (q - 4 * !hbit) */
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12]; /* 16 6-bit scales */
    inf_f16 d;
} inf_block_q3_K;

typedef struct inf_block_q4_K { /* 8 sub-blocks of 32: w = d * sc * q - dmin * m */
    inf_f16 d, dmin;
    uint8_t scales[12]; /* 8 6-bit scales and 8 6-bit mins */
    uint8_t qs[128];
} inf_block_q4_K;

typedef struct inf_block_q5_K { /* as Q4_K with a fifth bit */
    inf_f16 d, dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
} inf_block_q5_K;

typedef struct inf_block_q6_K { /* 16 sub-blocks of 16: w = d * sc * (q - 32) */
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    inf_f16 d;
} inf_block_q6_K;

typedef struct inf_block_iq4_xs { /* 8 sub-blocks of 32: w = d * (ls - 32) * kvalues[q] */
    inf_f16 d;
    uint16_t scales_h;
    uint8_t scales_l[4];
    uint8_t qs[128];
} inf_block_iq4_xs;

typedef struct inf_block_q8_K { /* activations for the K-quants and IQ4_XS: x = d * q */
    float d;
    int8_t qs[256];
    int16_t bsums[16]; /* sums of each 16 quants */
} inf_block_q8_K;

_Static_assert(sizeof(inf_block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(inf_block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(inf_block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(inf_block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(inf_block_iq4_nl) == 18, "iq4_nl");
_Static_assert(sizeof(inf_block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(inf_block_q2_K) == 84, "q2_K");
_Static_assert(sizeof(inf_block_q3_K) == 110, "q3_K");
_Static_assert(sizeof(inf_block_q4_K) == 144, "q4_K");
_Static_assert(sizeof(inf_block_q5_K) == 176, "q5_K");
_Static_assert(sizeof(inf_block_q6_K) == 210, "q6_K");
_Static_assert(sizeof(inf_block_iq4_xs) == 136, "iq4_xs");
_Static_assert(sizeof(inf_block_q8_K) == 292, "q8_K");

/* IQ4_NL / IQ4_XS: the 16 values a 4-bit index stands for. */
extern const int8_t inf_iq4nl_values[16];

/* The activation type a weight type is dotted with. */
typedef enum inf_act_type {
    INF_ACT_Q8_0, /* Q4_0, Q5_0, IQ4_NL (and Q8_0) */
    INF_ACT_Q8_1, /* Q4_1, Q5_1 */
    INF_ACT_Q8_K, /* Q2_K .. Q6_K, IQ4_XS */
} inf_act_type;

/* True for the block types of this file (not Q8_0, F32, F16, BF16). */
bool inf_dtype_is_quant(inf_dtype type);
/* The activation type of a quant type (inf_dtype_is_quant). */
inf_act_type inf_quant_act_type(inf_dtype type);
/* Bytes of the activation blocks of a row of n elements (n a multiple of the
 * weight type's block). */
size_t inf_quant_act_bytes(inf_dtype type, int64_t n);

/* Activation rows, n a multiple of the block. Q8_1: as llama.cpp's x86
 * quantize_row_q8_1 (d = amax/127 as f16, q = x * 127/amax rounded to
 * nearest even, s = f16(d * Σq) with d the f32 value). Q8_K: as
 * quantize_row_q8_K (the element of largest magnitude, first of equals,
 * sets iscale = -127 / max; q = round-to-nearest-even(iscale * x), at most
 * 127; d = 1 / iscale in f32; bsums of 16). */
void inf_quantize_row_q8_1(const float *x, inf_block_q8_1 *y, int64_t n);
void inf_quantize_row_q8_K(const float *x, inf_block_q8_K *y, int64_t n);
/* The activation row of weight type `type` into `act` (inf_quant_act_bytes). */
void inf_quant_act_row(inf_dtype type, const float *x, int64_t n, void *act);

/* w[n] dequantized, as ggml's dequantize_row_* (bit for bit). */
void inf_dequantize_row_quant(inf_dtype type, const void *w, float *y, int64_t n);

/* One weight row of n elements dotted with its activation row
 * (inf_quant_act_row), as the header comment says. */
float inf_quant_dot(inf_dtype type, const void *w, const void *act, int64_t n);

/* A row of n weights quantized as llama.cpp's quantizer does without an
 * importance matrix (what ggml_quantize_chunk runs then: quantize_row_*_ref,
 * and for IQ4_NL / IQ4_XS quantize_iq4_nl / quantize_iq4_xs; bit-identical
 * blocks), for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K .. Q6_K, IQ4_XS
 * and F16; false for another type or when n is not whole blocks. */
bool inf_quantize_weight_row(inf_dtype type, const float *x, void *y, int64_t n);

/* The 6-bit scale and min j (0..7) of a Q4_K / Q5_K super-block. */
static inline void inf_q4k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* All 8 scales (out[0..7]) and mins (out[8..15]) of a Q4_K / Q5_K
 * super-block at once, in 32-bit words (what inf_q4k_scale_min gives one
 * at a time). */
static inline void inf_q4k_scales_mins(const uint8_t *q, uint8_t out[16]) {
    uint32_t u[4];
    memcpy(u, q, 12);
    u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    const uint32_t m_lo = u[1] & 0x3f3f3f3fu;
    u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    u[2] = m_lo;
    u[0] &= 0x3f3f3f3fu;
    memcpy(out, u, 16);
}

/* The 16 scales of a Q3_K super-block, as signed values (scale - 32). */
static inline void inf_q3k_scales(const uint8_t *s12, int8_t out[16]) {
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? (s12[j] & 0xF) : (s12[j - 8] >> 4);
        const int hi = (s12[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = (int8_t)((lo | (hi << 4)) - 32);
    }
}

/* The 8 scales of an IQ4_XS super-block, as signed values (ls - 32). */
static inline int inf_iq4xs_scale(const inf_block_iq4_xs *b, int ib) {
    return (((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b->scales_h >> 2 * ib) & 3) << 4)) - 32;
}

#endif /* INF_QUANT_H */

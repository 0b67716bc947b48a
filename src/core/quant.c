/*
 * quant.c — the scalar reference of the GGUF block types (quant.h):
 * dequantization, activation quantization (Q8_1, Q8_K) and the dots.
 */
#include "core/quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

const int8_t inf_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

bool inf_dtype_is_quant(inf_dtype type) {
    switch (type) {
    case INF_DTYPE_Q4_0: case INF_DTYPE_Q4_1: case INF_DTYPE_Q5_0: case INF_DTYPE_Q5_1:
    case INF_DTYPE_IQ4_NL: case INF_DTYPE_Q2_K: case INF_DTYPE_Q3_K: case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K: case INF_DTYPE_Q6_K: case INF_DTYPE_IQ4_XS:
        return true;
    default: return false;
    }
}

inf_act_type inf_quant_act_type(inf_dtype type) {
    switch (type) {
    case INF_DTYPE_Q4_1: case INF_DTYPE_Q5_1: return INF_ACT_Q8_1;
    case INF_DTYPE_Q2_K: case INF_DTYPE_Q3_K: case INF_DTYPE_Q4_K: case INF_DTYPE_Q5_K:
    case INF_DTYPE_Q6_K: case INF_DTYPE_IQ4_XS:
        return INF_ACT_Q8_K;
    default: return INF_ACT_Q8_0;
    }
}

size_t inf_quant_act_bytes(inf_dtype type, int64_t n) {
    switch (inf_quant_act_type(type)) {
    case INF_ACT_Q8_1: return (size_t)(n / INF_QK) * sizeof(inf_block_q8_1);
    case INF_ACT_Q8_K: return (size_t)(n / INF_QK_K) * sizeof(inf_block_q8_K);
    case INF_ACT_Q8_0: break;
    }
    return (size_t)(n / INF_QK) * sizeof(inf_block_q8_0);
}

/* ------------------------------------------------------------------ activations */

void inf_quantize_row_q8_1(const float *x, inf_block_q8_1 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK; b++) {
        const float *xb = x + b * INF_QK;
        float amax = 0.0f;
        for (int i = 0; i < INF_QK; i++) {
            const float a = fabsf(xb[i]);
            if (a > amax) amax = a;
        }
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int i = 0; i < INF_QK; i++) {
            y[b].qs[i] = inf_round_to_i8(xb[i] * id);
            sum += y[b].qs[i];
        }
        y[b].d = inf_f32_to_f16(d);
        y[b].s = inf_f32_to_f16(d * (float)sum);
    }
}

/* Round to nearest, ties to even, for |v| < 2^22 (ggml's nearest_int). */
static int nearest_int(float v) {
    const float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* The first of x[0..n) with the largest magnitude (0 for none), that
 * magnitude in *amax. */
static float largest_magnitude(const float *x, int n, float *amax) {
    float max = 0.0f;
    *amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        if (a > *amax) {
            *amax = a;
            max = x[i];
        }
    }
    return max;
}

void inf_quantize_row_q8_K(const float *x, inf_block_q8_K *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK_K; b++) {
        const float *xb = x + b * INF_QK_K;
        float amax;
        const float max = largest_magnitude(xb, INF_QK_K, &amax);
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int i = 0; i < INF_QK_K; i++) {
            const int v = nearest_int(iscale * xb[i]);
            y[b].qs[i] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += y[b].qs[g * 16 + i];
            y[b].bsums[g] = (int16_t)sum;
        }
        y[b].d = 1.0f / iscale;
    }
}

void inf_quant_act_row(inf_dtype type, const float *x, int64_t n, void *act) {
    switch (inf_quant_act_type(type)) {
    case INF_ACT_Q8_0: inf_quantize_row_q8_0(x, act, n); break;
    case INF_ACT_Q8_1: inf_quantize_row_q8_1(x, act, n); break;
    case INF_ACT_Q8_K: inf_quantize_row_q8_K(x, act, n); break;
    }
}

/* ------------------------------------------------------------------ element access */

/* The integer quant of element i (0..31) of a 32-block, with its offset
 * applied (Q4_0: q - 8; Q5_0: q - 16; IQ4_NL: the table value). */
static int q4_nib(const uint8_t *qs, int i) { return i < 16 ? qs[i] & 0xF : qs[i - 16] >> 4; }

static int q5_fifth(const uint8_t *qh, int i) {
    uint32_t h;
    memcpy(&h, qh, 4);
    return (int)((h >> i) & 1) << 4;
}

/* ------------------------------------------------------------------ dequantize */

void inf_dequantize_row_quant(inf_dtype type, const void *w, float *y, int64_t n) {
    switch (type) {
    case INF_DTYPE_Q4_0:
        for (int64_t b = 0; b < n / INF_QK; b++) {
            const inf_block_q4_0 *x = (const inf_block_q4_0 *)w + b;
            const float d = inf_f16_to_f32(x->d);
            for (int i = 0; i < INF_QK; i++) y[b * INF_QK + i] = (float)(q4_nib(x->qs, i) - 8) * d;
        }
        break;
    case INF_DTYPE_Q4_1:
        for (int64_t b = 0; b < n / INF_QK; b++) {
            const inf_block_q4_1 *x = (const inf_block_q4_1 *)w + b;
            const float d = inf_f16_to_f32(x->d), m = inf_f16_to_f32(x->m);
            for (int i = 0; i < INF_QK; i++) y[b * INF_QK + i] = (float)q4_nib(x->qs, i) * d + m;
        }
        break;
    case INF_DTYPE_Q5_0:
        for (int64_t b = 0; b < n / INF_QK; b++) {
            const inf_block_q5_0 *x = (const inf_block_q5_0 *)w + b;
            const float d = inf_f16_to_f32(x->d);
            for (int i = 0; i < INF_QK; i++)
                y[b * INF_QK + i] = (float)((q4_nib(x->qs, i) | q5_fifth(x->qh, i)) - 16) * d;
        }
        break;
    case INF_DTYPE_Q5_1:
        for (int64_t b = 0; b < n / INF_QK; b++) {
            const inf_block_q5_1 *x = (const inf_block_q5_1 *)w + b;
            const float d = inf_f16_to_f32(x->d), m = inf_f16_to_f32(x->m);
            for (int i = 0; i < INF_QK; i++)
                y[b * INF_QK + i] = (float)(q4_nib(x->qs, i) | q5_fifth(x->qh, i)) * d + m;
        }
        break;
    case INF_DTYPE_IQ4_NL:
        for (int64_t b = 0; b < n / INF_QK; b++) {
            const inf_block_iq4_nl *x = (const inf_block_iq4_nl *)w + b;
            const float d = inf_f16_to_f32(x->d);
            for (int i = 0; i < INF_QK; i++) y[b * INF_QK + i] = d * (float)inf_iq4nl_values[q4_nib(x->qs, i)];
        }
        break;
    case INF_DTYPE_Q2_K:
        for (int64_t b = 0; b < n / INF_QK_K; b++) {
            const inf_block_q2_K *x = (const inf_block_q2_K *)w + b;
            const float d = inf_f16_to_f32(x->d), dmin = inf_f16_to_f32(x->dmin);
            for (int e = 0; e < INF_QK_K; e++) {
                const uint8_t sc = x->scales[e / 16];
                const int q = (x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
                const float dl = d * (float)(sc & 0xF), ml = dmin * (float)(sc >> 4);
                y[b * INF_QK_K + e] = dl * (float)q - ml;
            }
        }
        break;
    case INF_DTYPE_Q3_K:
        for (int64_t b = 0; b < n / INF_QK_K; b++) {
            const inf_block_q3_K *x = (const inf_block_q3_K *)w + b;
            const float d = inf_f16_to_f32(x->d);
            int8_t sc[16];
            inf_q3k_scales(x->scales, sc);
            for (int e = 0; e < INF_QK_K; e++) {
                const int q = (x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
                const int h = (x->hmask[e % 32] >> (e / 32)) & 1;
                y[b * INF_QK_K + e] = d * (float)sc[e / 16] * (float)(q - (h ? 0 : 4));
            }
        }
        break;
    case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K:
        for (int64_t b = 0; b < n / INF_QK_K; b++) {
            const bool five = type == INF_DTYPE_Q5_K;
            const inf_block_q4_K *x4 = (const inf_block_q4_K *)w + b;
            const inf_block_q5_K *x5 = (const inf_block_q5_K *)w + b;
            const float d = inf_f16_to_f32(five ? x5->d : x4->d), dmin = inf_f16_to_f32(five ? x5->dmin : x4->dmin);
            const uint8_t *scales = five ? x5->scales : x4->scales, *qs = five ? x5->qs : x4->qs;
            for (int s = 0; s < 8; s++) {
                uint8_t sc, m;
                inf_q4k_scale_min(s, scales, &sc, &m);
                const float ds = d * (float)sc, ms = dmin * (float)m;
                for (int l = 0; l < 32; l++) {
                    const uint8_t byte = qs[32 * (s / 2) + l];
                    int q = s % 2 ? byte >> 4 : byte & 0xF;
                    if (five && (x5->qh[l] >> s & 1)) q += 16;
                    y[b * INF_QK_K + 32 * s + l] = ds * (float)q - ms;
                }
            }
        }
        break;
    case INF_DTYPE_Q6_K:
        for (int64_t b = 0; b < n / INF_QK_K; b++) {
            const inf_block_q6_K *x = (const inf_block_q6_K *)w + b;
            const float d = inf_f16_to_f32(x->d);
            for (int e = 0; e < INF_QK_K; e++) {
                const int half = e / 128, r = e % 128, l = r % 32, part = r / 32; /* part 0..3 */
                const uint8_t lo = x->ql[64 * half + l + 32 * (part & 1)];
                const int q = ((part < 2 ? lo & 0xF : lo >> 4) | (((x->qh[32 * half + l] >> (2 * part)) & 3) << 4)) - 32;
                y[b * INF_QK_K + e] = d * (float)x->scales[e / 16] * (float)q;
            }
        }
        break;
    case INF_DTYPE_IQ4_XS:
        for (int64_t b = 0; b < n / INF_QK_K; b++) {
            const inf_block_iq4_xs *x = (const inf_block_iq4_xs *)w + b;
            const float d = inf_f16_to_f32(x->d);
            for (int ib = 0; ib < 8; ib++) {
                const float dl = d * (float)inf_iq4xs_scale(x, ib);
                for (int i = 0; i < 32; i++)
                    y[b * INF_QK_K + 32 * ib + i] = dl * (float)inf_iq4nl_values[q4_nib(x->qs + 16 * ib, i)];
            }
        }
        break;
    default: break;
    }
}

/* ------------------------------------------------------------------ dots */

/* Integer quants of one super-block of a K type (or IQ4_XS) as signed
 * values without their offset where the type has a min (Q2_K, Q4_K, Q5_K:
 * 0..max; the min term is separate), with their offset otherwise. */
static void kquant_values(inf_dtype type, const void *blk, int8_t q[INF_QK_K]) {
    switch (type) {
    case INF_DTYPE_Q2_K: {
        const inf_block_q2_K *x = blk;
        for (int e = 0; e < INF_QK_K; e++) q[e] = (int8_t)((x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3);
        break;
    }
    case INF_DTYPE_Q3_K: {
        const inf_block_q3_K *x = blk;
        for (int e = 0; e < INF_QK_K; e++) {
            const int v = (x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            q[e] = (int8_t)(v - (((x->hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4));
        }
        break;
    }
    case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K: {
        const bool five = type == INF_DTYPE_Q5_K;
        const uint8_t *qs = five ? ((const inf_block_q5_K *)blk)->qs : ((const inf_block_q4_K *)blk)->qs;
        for (int e = 0; e < INF_QK_K; e++) {
            const int s = e / 32, l = e % 32;
            const uint8_t byte = qs[32 * (s / 2) + l];
            int v = s % 2 ? byte >> 4 : byte & 0xF;
            if (five && (((const inf_block_q5_K *)blk)->qh[l] >> s & 1)) v += 16;
            q[e] = (int8_t)v;
        }
        break;
    }
    case INF_DTYPE_Q6_K: {
        const inf_block_q6_K *x = blk;
        for (int e = 0; e < INF_QK_K; e++) {
            const int half = e / 128, r = e % 128, l = r % 32, part = r / 32;
            const uint8_t lo = x->ql[64 * half + l + 32 * (part & 1)];
            q[e] = (int8_t)(((part < 2 ? lo & 0xF : lo >> 4) | (((x->qh[32 * half + l] >> (2 * part)) & 3) << 4)) - 32);
        }
        break;
    }
    case INF_DTYPE_IQ4_XS: {
        const inf_block_iq4_xs *x = blk;
        for (int e = 0; e < INF_QK_K; e++) q[e] = inf_iq4nl_values[q4_nib(x->qs + 16 * (e / 32), e % 32)];
        break;
    }
    default: memset(q, 0, INF_QK_K); break;
    }
}

/* Σ scale_sub * Σ q_w q_x of one super-block, the sub-block scales as
 * integers; *imin = Σ bsums * min for the types with mins. */
static int32_t kquant_isum(inf_dtype type, const void *blk, const inf_block_q8_K *a, int32_t *imin) {
    int8_t q[INF_QK_K];
    kquant_values(type, blk, q);
    int sub = 16; /* elements per sub-block */
    int32_t scale[16];
    *imin = 0;
    switch (type) {
    case INF_DTYPE_Q2_K: {
        const inf_block_q2_K *x = blk;
        for (int j = 0; j < 16; j++) {
            scale[j] = x->scales[j] & 0xF;
            *imin += (int32_t)a->bsums[j] * (x->scales[j] >> 4);
        }
        break;
    }
    case INF_DTYPE_Q3_K: {
        int8_t sc[16];
        inf_q3k_scales(((const inf_block_q3_K *)blk)->scales, sc);
        for (int j = 0; j < 16; j++) scale[j] = sc[j];
        break;
    }
    case INF_DTYPE_Q4_K:
    case INF_DTYPE_Q5_K: {
        const uint8_t *s12 = type == INF_DTYPE_Q5_K ? ((const inf_block_q5_K *)blk)->scales
                                                    : ((const inf_block_q4_K *)blk)->scales;
        sub = 32;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            inf_q4k_scale_min(j, s12, &sc, &m);
            scale[j] = sc;
            *imin += ((int32_t)a->bsums[2 * j] + a->bsums[2 * j + 1]) * m;
        }
        break;
    }
    case INF_DTYPE_Q6_K:
        for (int j = 0; j < 16; j++) scale[j] = ((const inf_block_q6_K *)blk)->scales[j];
        break;
    case INF_DTYPE_IQ4_XS:
        sub = 32;
        for (int j = 0; j < 8; j++) scale[j] = inf_iq4xs_scale(blk, j);
        break;
    default: return 0;
    }
    int32_t isum = 0;
    for (int j = 0; j < INF_QK_K / sub; j++) {
        int32_t s = 0;
        for (int i = j * sub; i < (j + 1) * sub; i++) s += (int32_t)q[i] * a->qs[i];
        isum += scale[j] * s;
    }
    return isum;
}

static float kquant_d(inf_dtype type, const void *blk, float *dmin) {
    *dmin = 0.0f;
    switch (type) {
    case INF_DTYPE_Q2_K:
        *dmin = inf_f16_to_f32(((const inf_block_q2_K *)blk)->dmin);
        return inf_f16_to_f32(((const inf_block_q2_K *)blk)->d);
    case INF_DTYPE_Q3_K: return inf_f16_to_f32(((const inf_block_q3_K *)blk)->d);
    case INF_DTYPE_Q4_K:
        *dmin = inf_f16_to_f32(((const inf_block_q4_K *)blk)->dmin);
        return inf_f16_to_f32(((const inf_block_q4_K *)blk)->d);
    case INF_DTYPE_Q5_K:
        *dmin = inf_f16_to_f32(((const inf_block_q5_K *)blk)->dmin);
        return inf_f16_to_f32(((const inf_block_q5_K *)blk)->d);
    case INF_DTYPE_Q6_K: return inf_f16_to_f32(((const inf_block_q6_K *)blk)->d);
    case INF_DTYPE_IQ4_XS: return inf_f16_to_f32(((const inf_block_iq4_xs *)blk)->d);
    default: return 0.0f;
    }
}

float inf_quant_dot(inf_dtype type, const void *w, const void *act, int64_t n) {
    float sum = 0.0f;
    const size_t wb = inf_dtype_block_bytes(type);
    if (inf_quant_act_type(type) == INF_ACT_Q8_K) {
        const inf_block_q8_K *a = act;
        for (int64_t b = 0; b < n / INF_QK_K; b++) {
            const void *blk = (const char *)w + (size_t)b * wb;
            int32_t imin;
            const int32_t isum = kquant_isum(type, blk, &a[b], &imin);
            float dmin;
            const float d = kquant_d(type, blk, &dmin);
            sum += (d * a[b].d) * (float)isum - (dmin * a[b].d) * (float)imin;
        }
        return sum;
    }
    for (int64_t b = 0; b < n / INF_QK; b++) {
        const void *blk = (const char *)w + (size_t)b * wb;
        const int8_t *xq;
        float dx, sx = 0.0f;
        if (inf_quant_act_type(type) == INF_ACT_Q8_1) {
            const inf_block_q8_1 *a = (const inf_block_q8_1 *)act + b;
            xq = a->qs;
            dx = inf_f16_to_f32(a->d);
            sx = inf_f16_to_f32(a->s);
        } else {
            const inf_block_q8_0 *a = (const inf_block_q8_0 *)act + b;
            xq = a->q;
            dx = inf_f16_to_f32(a->d);
        }
        int32_t isum = 0;
        switch (type) {
        case INF_DTYPE_Q4_0: {
            const inf_block_q4_0 *x = blk;
            for (int i = 0; i < INF_QK; i++) isum += (q4_nib(x->qs, i) - 8) * xq[i];
            sum += (float)isum * (inf_f16_to_f32(x->d) * dx);
            break;
        }
        case INF_DTYPE_Q5_0: {
            const inf_block_q5_0 *x = blk;
            for (int i = 0; i < INF_QK; i++) isum += ((q4_nib(x->qs, i) | q5_fifth(x->qh, i)) - 16) * xq[i];
            sum += (float)isum * (inf_f16_to_f32(x->d) * dx);
            break;
        }
        case INF_DTYPE_IQ4_NL: {
            const inf_block_iq4_nl *x = blk;
            for (int i = 0; i < INF_QK; i++) isum += inf_iq4nl_values[q4_nib(x->qs, i)] * xq[i];
            sum += (float)isum * (inf_f16_to_f32(x->d) * dx);
            break;
        }
        case INF_DTYPE_Q4_1: {
            const inf_block_q4_1 *x = blk;
            for (int i = 0; i < INF_QK; i++) isum += q4_nib(x->qs, i) * xq[i];
            sum += (inf_f16_to_f32(x->d) * dx) * (float)isum + inf_f16_to_f32(x->m) * sx;
            break;
        }
        case INF_DTYPE_Q5_1: {
            const inf_block_q5_1 *x = blk;
            for (int i = 0; i < INF_QK; i++) isum += (q4_nib(x->qs, i) | q5_fifth(x->qh, i)) * xq[i];
            sum += (inf_f16_to_f32(x->d) * dx) * (float)isum + inf_f16_to_f32(x->m) * sx;
            break;
        }
        default: break;
        }
    }
    return sum;
}

/* ------------------------------------------------------------------ weight quantizers */

/* llama.cpp's llama_model_quantize() without an importance matrix quantizes
 * with ggml's reference functions (ggml-quants.c quantize_row_*_ref); these
 * are those, rewritten, so a file quantized here holds the same blocks. */

/* v limited to [lo, hi], NaN to lo: keeps the float -> int conversions
 * below defined for any input; finite weights never reach the limits (the
 * values ggml converts lie within them), so the blocks stay ggml's. */
static float clampf(float v, float lo, float hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

/* Q8_0 weights: d = amax / 127, q = roundf(x * (1 / d)) (not the activation
 * rounding of inf_quantize_row_q8_0). */
static void quantize_weight_q8_0(const float *x, inf_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK; b++) {
        const float *xb = x + b * INF_QK;
        float amax = 0.0f;
        for (int i = 0; i < INF_QK; i++) amax = fmaxf(amax, fabsf(xb[i]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = inf_f32_to_f16(d);
        for (int i = 0; i < INF_QK; i++) y[b].q[i] = (int8_t)roundf(clampf(xb[i] * id, -127.0f, 127.0f));
    }
}

/* Q4_0: the element of largest magnitude (first of equals) is -8 d. */
static void quantize_weight_q4_0(const float *x, inf_block_q4_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK; b++) {
        const float *xb = x + b * INF_QK;
        float amax = 0.0f, max = 0.0f;
        for (int i = 0; i < INF_QK; i++)
            if (amax < fabsf(xb[i])) {
                amax = fabsf(xb[i]);
                max = xb[i];
            }
        const float d = max / -8, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = inf_f32_to_f16(d);
        for (int j = 0; j < 16; j++) {
            const int8_t v0 = (int8_t)clampf(xb[j] * id + 8.5f, 0.0f, 16.5f),
                         v1 = (int8_t)clampf(xb[j + 16] * id + 8.5f, 0.0f, 16.5f);
            const uint8_t q0 = (uint8_t)(v0 < 15 ? v0 : 15), q1 = (uint8_t)(v1 < 15 ? v1 : 15);
            y[b].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

#define GROUP_MAX_EPS 1e-15f

/* ggml's make_qx_quants for rmse_type 1 (weights x^2), no importance:
 * L[i] in [0, 2 nmax), returns the scale. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = largest_magnitude(x, n, &amax);
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    float iscale = -nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * x[i]);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale * x[i]);
            l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
            const float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                int l = nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + (l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

static void quantize_weight_q6_K(const float *x, inf_block_q6_K *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK_K; b++, x += INF_QK_K) {
        int8_t L[INF_QK_K];
        float scales[16], max_scale = 0.0f, max_abs_scale = 0.0f;
        for (int ib = 0; ib < 16; ib++) {
            const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) {
                max_abs_scale = fabsf(scale);
                max_scale = scale;
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float iscale = -128.0f / max_scale;
        y[b].d = inf_f32_to_f16(1 / iscale);
        for (int ib = 0; ib < 16; ib++) {
            const int s = nearest_int(iscale * scales[ib]);
            y[b].scales[ib] = (int8_t)(s < 127 ? s : 127);
        }
        for (int j = 0; j < 16; j++) {
            const float d = inf_f16_to_f32(y[b].d) * (float)y[b].scales[j];
            if (d == 0.0f) continue;
            for (int i = 0; i < 16; i++) {
                int l = nearest_int(x[16 * j + i] / d);
                l = l < -32 ? -32 : l > 31 ? 31 : l;
                L[16 * j + i] = (int8_t)(l + 32);
            }
        }
        uint8_t *ql = y[b].ql, *qh = y[b].qh;
        for (int j = 0; j < INF_QK_K; j += 128, ql += 64, qh += 32)
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                              q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | q3 << 4);
                ql[l + 32] = (uint8_t)(q2 | q4 << 4);
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                  ((L[j + l + 96] >> 4) << 6));
            }
    }
}

/* Q5_0: the element of largest magnitude (first of equals) is -16 d. */
static void quantize_weight_q5_0(const float *x, inf_block_q5_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK; b++) {
        const float *xb = x + b * INF_QK;
        float amax = 0.0f, max = 0.0f;
        for (int i = 0; i < INF_QK; i++)
            if (amax < fabsf(xb[i])) {
                amax = fabsf(xb[i]);
                max = xb[i];
            }
        const float d = max / -16, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = inf_f32_to_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const int8_t v0 = (int8_t)clampf(xb[j] * id + 16.5f, 0.0f, 32.5f),
                         v1 = (int8_t)clampf(xb[j + 16] * id + 16.5f, 0.0f, 32.5f);
            const uint8_t q0 = (uint8_t)(v0 < 31 ? v0 : 31), q1 = (uint8_t)(v1 < 31 ? v1 : 31);
            y[b].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= (uint32_t)((q0 & 0x10u) >> 4) << j;
            qh |= (uint32_t)((q1 & 0x10u) >> 4) << (j + 16);
        }
        memcpy(y[b].qh, &qh, 4);
    }
}

/* The least and greatest of a block of 32. */
static void block_min_max(const float *x, float *min, float *max) {
    *min = FLT_MAX, *max = -FLT_MAX;
    for (int i = 0; i < INF_QK; i++) {
        if (x[i] < *min) *min = x[i];
        if (x[i] > *max) *max = x[i];
    }
}

/* Q5_1: d = (max - min) / 31, m = min, q = (uint8)((x - min) / d + 0.5). */
static void quantize_weight_q5_1(const float *x, inf_block_q5_1 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK; b++) {
        const float *xb = x + b * INF_QK;
        float min, max;
        block_min_max(xb, &min, &max);
        const float d = (max - min) / 31, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = inf_f32_to_f16(d);
        y[b].m = inf_f32_to_f16(min);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t q0 = (uint8_t)clampf((xb[j] - min) * id + 0.5f, 0.0f, 255.0f),
                          q1 = (uint8_t)clampf((xb[j + 16] - min) * id + 0.5f, 0.0f, 255.0f);
            y[b].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= (uint32_t)((q0 & 0x10u) >> 4) << j;
            qh |= (uint32_t)((q1 & 0x10u) >> 4) << (j + 16);
        }
        memcpy(y[b].qh, &qh, 4);
    }
}

/* ggml's make_qkx2_quants: codes L in [0, nmax] and a scale and min for n
 * weighted values, searched over nstep + 1 scales; the error is weighted
 * absolute (use_mad, Q2_K) or squared (Q4_K, Q5_K). */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                              uint8_t *Laux, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; i++) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min), scale = 1 / iscale, best_error = 0;
    for (int i = 0; i < n; i++) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; i++) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* Q4_K (five false) and Q5_K: per 32-sub-block make_qkx2_quants, the
 * scales and mins to 6 bits against their maxima, then the codes again. */
static void quantize_weight_q45_K(const float *x, void *out, int64_t n, bool five) {
    const int nmax = five ? 31 : 15;
    for (int64_t b = 0; b < n / INF_QK_K; b++, x += INF_QK_K) {
        inf_block_q4_K *y4 = (inf_block_q4_K *)out + b;
        inf_block_q5_K *y5 = (inf_block_q5_K *)out + b;
        uint8_t *scales12 = five ? y5->scales : y4->scales;
        uint8_t L[INF_QK_K], Laux[32];
        float weights[32], mins[8], scales[8], max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
            const float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++) weights[l] = av_x + fabsf(x[32 * j + l]);
            scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, five ? -0.5f : -1.0f,
                                         0.1f, five ? 15 : 20, false);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < 8; j++) {
            uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]), lm = (uint8_t)nearest_int(inv_min * mins[j]);
            ls = ls < 63 ? ls : 63;
            lm = lm < 63 ? lm : 63;
            if (j < 4) {
                scales12[j] = ls;
                scales12[j + 4] = lm;
            } else {
                scales12[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
                scales12[j - 4] |= (uint8_t)((ls >> 4) << 6);
                scales12[j] |= (uint8_t)((lm >> 4) << 6);
            }
        }
        const inf_f16 d16 = inf_f32_to_f16(max_scale / 63.0f), dmin16 = inf_f32_to_f16(max_min / 63.0f);
        if (five) y5->d = d16, y5->dmin = dmin16;
        else y4->d = d16, y4->dmin = dmin16;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            inf_q4k_scale_min(j, scales12, &sc, &m);
            const float d = inf_f16_to_f32(d16) * (float)sc;
            if (d == 0.0f) continue;
            const float dm = inf_f16_to_f32(dmin16) * (float)m;
            for (int i = 0; i < 32; i++) {
                const int l = nearest_int((x[32 * j + i] + dm) / d);
                L[32 * j + i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
            }
        }
        if (!five) {
            for (int j = 0; j < INF_QK_K; j += 64)
                for (int l = 0; l < 32; l++) y4->qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        } else {
            memset(y5->qh, 0, 32);
            uint8_t m1 = 1, m2 = 2;
            for (int j = 0; j < INF_QK_K; j += 64, m1 = (uint8_t)(m1 << 2), m2 = (uint8_t)(m2 << 2))
                for (int l = 0; l < 32; l++) {
                    int l1 = L[j + l], l2 = L[j + l + 32];
                    if (l1 > 15) l1 -= 16, y5->qh[l] |= m1;
                    if (l2 > 15) l2 -= 16, y5->qh[l] |= m2;
                    y5->qs[j / 2 + l] = (uint8_t)(l1 | (l2 << 4));
                }
        }
    }
}

/* Q4_1: d = (max - min) / 15, m = min, q = min(15, (int8)((x - min) / d + 0.5)). */
static void quantize_weight_q4_1(const float *x, inf_block_q4_1 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK; b++) {
        const float *xb = x + b * INF_QK;
        float min, max;
        block_min_max(xb, &min, &max);
        const float d = (max - min) / 15, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = inf_f32_to_f16(d);
        y[b].m = inf_f32_to_f16(min);
        for (int j = 0; j < 16; j++) {
            const int8_t v0 = (int8_t)clampf((xb[j] - min) * id + 0.5f, 0.0f, 127.0f),
                         v1 = (int8_t)clampf((xb[j + 16] - min) * id + 0.5f, 0.0f, 127.0f);
            y[b].qs[j] = (uint8_t)((v0 < 15 ? v0 : 15) | (v1 < 15 ? v1 : 15) << 4);
        }
    }
}

/* The 2-bit codes of Q2_K and Q3_K: element j + 32 k of each half
 * super-block (k = 0..3) in bits 2k of byte j. */
static void pack_2bit_codes(const uint8_t L[INF_QK_K], uint8_t qs[64]) {
    for (int j = 0; j < INF_QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* Q2_K: per 16-sub-block make_qkx2_quants (weights |x|, absolute error),
 * scales and mins to 4 bits against their maxima, then the codes again. */
static void quantize_weight_q2_K(const float *x, inf_block_q2_K *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK_K; b++, x += INF_QK_K) {
        inf_block_q2_K *yb = &y[b];
        uint8_t L[INF_QK_K], Laux[16];
        float weights[16], mins[16], scales[16], max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = 15.0f / max_scale;
            for (int j = 0; j < 16; j++) yb->scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
            yb->d = inf_f32_to_f16(max_scale / 15.0f);
        } else {
            memset(yb->scales, 0, sizeof yb->scales);
            yb->d = inf_f32_to_f16(0.0f);
        }
        if (max_min > 0) {
            const float iscale = 15.0f / max_min;
            for (int j = 0; j < 16; j++) yb->scales[j] |= (uint8_t)(nearest_int(iscale * mins[j]) << 4);
            yb->dmin = inf_f32_to_f16(max_min / 15.0f);
        } else {
            yb->dmin = inf_f32_to_f16(0.0f);
        }
        for (int j = 0; j < 16; j++) {
            const float d = inf_f16_to_f32(yb->d) * (float)(yb->scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = inf_f16_to_f32(yb->dmin) * (float)(yb->scales[j] >> 4);
            for (int i = 0; i < 16; i++) {
                const int l = nearest_int((x[16 * j + i] + dm) / d);
                L[16 * j + i] = (uint8_t)(l < 0 ? 0 : l > 3 ? 3 : l);
            }
        }
        pack_2bit_codes(L, yb->qs);
    }
}

/* ggml's make_q3_quants with do_rmse (weights x^2): codes in [-nmax, nmax)
 * refined one element at a time for at most 5 passes, stored + nmax (all 0
 * for a group of zeros); returns the least-squares scale. */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = largest_magnitude(x, n, &amax);
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * x[i]);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx <= 0) continue;
            float sl2 = suml2 - w * (float)L[i] * (float)L[i];
            int new_l = nearest_int(x[i] * sl2 / slx);
            new_l = new_l < -nmax ? -nmax : new_l > nmax - 1 ? nmax - 1 : new_l;
            if (new_l == L[i]) continue;
            slx += w * x[i] * (float)new_l;
            sl2 += w * (float)new_l * (float)new_l;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)new_l;
                sumlx = slx;
                suml2 = sl2;
                n_changed++;
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Q3_K (ggml's quantize_row_q3_K_ref, what quantize_q3_K runs without an
 * importance matrix): per 16-sub-block make_q3_quants, the signed scales to
 * 6 bits against the largest in magnitude, then the codes again; the
 * third bit of each code goes to hmask. */
static void quantize_weight_q3_K(const float *x, inf_block_q3_K *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK_K; b++, x += INF_QK_K) {
        inf_block_q3_K *yb = &y[b];
        int8_t L[INF_QK_K];
        float scales[16], max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) {
                amax = fabsf(scales[j]);
                max_scale = scales[j];
            }
        }
        memset(yb->scales, 0, sizeof yb->scales);
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < 16; j++) {
                int l = nearest_int(iscale * scales[j]);
                l = (l < -32 ? -32 : l > 31 ? 31 : l) + 32;
                if (j < 8) yb->scales[j] = (uint8_t)(l & 0xF);
                else yb->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                yb->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            yb->d = inf_f32_to_f16(1 / iscale);
        } else {
            yb->d = inf_f32_to_f16(0.0f);
        }
        int8_t sc[16];
        inf_q3k_scales(yb->scales, sc);
        for (int j = 0; j < 16; j++) {
            const float d = inf_f16_to_f32(yb->d) * (float)sc[j];
            if (d == 0.0f) continue;
            for (int i = 0; i < 16; i++) {
                const int l = nearest_int(x[16 * j + i] / d);
                L[16 * j + i] = (int8_t)((l < -4 ? -4 : l > 3 ? 3 : l) + 4);
            }
        }
        uint8_t codes[INF_QK_K];
        memset(yb->hmask, 0, sizeof yb->hmask);
        for (int j = 0; j < INF_QK_K; j++) { /* bit j / 32 of hmask[j % 32] */
            codes[j] = (uint8_t)L[j];
            if (codes[j] > 3) {
                yb->hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                codes[j] -= 4;
            }
        }
        pack_2bit_codes(codes, yb->qs);
    }
}

/* The index of the IQ4_NL value nearest to x (ggml's best_index_int8: the
 * lower one of a tie). */
static int iq4nl_nearest(float x) {
    const int8_t *v = inf_iq4nl_values;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < v[mid]) hi = mid;
        else lo = mid;
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

/* IQ4_NL (n_sub 1: one block of 32) and IQ4_XS (n_sub 8: a super-block of
 * 256) as ggml's quantize_iq4_nl / quantize_iq4_xs run without an
 * importance matrix (quantize_row_iq4_nl_impl, ntry 7, weights x^2): per
 * 32-block the scale that makes the largest element the grid's end, then
 * the best of 15 scales around it by weighted least squares; IQ4_XS then
 * puts the block scales to 6 bits against the largest in magnitude. */
static void quantize_iq4_super_block(const float *x, int n_sub, inf_f16 *dh, uint8_t *qs, uint16_t *scales_h,
                                     uint8_t *scales_l) {
    const int8_t *values = inf_iq4nl_values;
    uint8_t L[INF_QK_K];
    float scales[8], weight[INF_QK], max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < n_sub; ib++) {
        const float *xb = x + INF_QK * ib;
        uint8_t *Lb = L + INF_QK * ib;
        float amax = 0, max = 0;
        for (int j = 0; j < INF_QK; j++) {
            weight[j] = xb[j] * xb[j];
            if (fabsf(xb[j]) > amax) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            scales[ib] = 0;
            continue;
        }
        float d = -max / values[0], id = 1 / d, sumqx = 0, sumq2 = 0;
        for (int j = 0; j < INF_QK; j++) {
            Lb[j] = (uint8_t)iq4nl_nearest(id * xb[j]);
            const float q = values[Lb[j]];
            sumqx += weight[j] * q * xb[j];
            sumq2 += weight[j] * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
        float best = d * sumqx;
        for (int itry = -7; itry <= 7; itry++) {
            id = (float)(itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < INF_QK; j++) {
                const float q = values[iq4nl_nearest(id * xb[j])];
                sumqx += weight[j] * q * xb[j];
                sumq2 += weight[j] * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if (fabsf(d) > amax_scale) {
            amax_scale = fabsf(d);
            max_scale = d;
        }
    }
    if (n_sub > 1) {
        const float d = -max_scale / 32, id = d != 0.0f ? 1 / d : 0.0f;
        *dh = inf_f32_to_f16(d);
        *scales_h = 0;
        for (int ib = 0; ib < n_sub; ib++) {
            int l = nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * (float)l, idl = dl != 0.0f ? 1 / dl : 0.0f;
            for (int j = 0; j < INF_QK; j++) L[INF_QK * ib + j] = (uint8_t)iq4nl_nearest(idl * x[INF_QK * ib + j]);
            l += 32;
            if (ib % 2 == 0) scales_l[ib / 2] = (uint8_t)(l & 0xF);
            else scales_l[ib / 2] |= (uint8_t)((l & 0xF) << 4);
            *scales_h |= (uint16_t)((l >> 4) << (2 * ib));
        }
    } else {
        *dh = inf_f32_to_f16(scales[0]);
        const float id = scales[0] != 0.0f ? 1 / scales[0] : 0.0f;
        for (int j = 0; j < INF_QK; j++) L[j] = (uint8_t)iq4nl_nearest(id * x[j]);
    }
    for (int i = 0; i < n_sub; i++)
        for (int j = 0; j < 16; j++) qs[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

static void quantize_weight_iq4_nl(const float *x, inf_block_iq4_nl *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK; b++) quantize_iq4_super_block(x + b * INF_QK, 1, &y[b].d, y[b].qs, NULL, NULL);
}

static void quantize_weight_iq4_xs(const float *x, inf_block_iq4_xs *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_QK_K; b++)
        quantize_iq4_super_block(x + b * INF_QK_K, 8, &y[b].d, y[b].qs, &y[b].scales_h, y[b].scales_l);
}

bool inf_quantize_weight_row(inf_dtype type, const float *x, void *y, int64_t n) {
    if (n % inf_dtype_block_elems(type) != 0) return false;
    switch (type) {
    case INF_DTYPE_Q8_0: quantize_weight_q8_0(x, y, n); return true;
    case INF_DTYPE_Q4_0: quantize_weight_q4_0(x, y, n); return true;
    case INF_DTYPE_Q6_K: quantize_weight_q6_K(x, y, n); return true;
    case INF_DTYPE_Q5_0: quantize_weight_q5_0(x, y, n); return true;
    case INF_DTYPE_Q5_1: quantize_weight_q5_1(x, y, n); return true;
    case INF_DTYPE_Q4_1: quantize_weight_q4_1(x, y, n); return true;
    case INF_DTYPE_IQ4_NL: quantize_weight_iq4_nl(x, y, n); return true;
    case INF_DTYPE_IQ4_XS: quantize_weight_iq4_xs(x, y, n); return true;
    case INF_DTYPE_Q2_K: quantize_weight_q2_K(x, y, n); return true;
    case INF_DTYPE_Q3_K: quantize_weight_q3_K(x, y, n); return true;
    case INF_DTYPE_Q4_K: quantize_weight_q45_K(x, y, n, false); return true;
    case INF_DTYPE_Q5_K: quantize_weight_q45_K(x, y, n, true); return true;
    case INF_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) ((inf_f16 *)y)[i] = inf_f32_to_f16(x[i]);
        return true;
    default: return false;
    }
}

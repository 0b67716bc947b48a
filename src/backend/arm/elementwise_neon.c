/*
 * elementwise_neon.c — the row and element ops with NEON: RMSNorm, RoPE
 * rotation, SwiGLU, add, f32 -> f16. Bit-identical to ref.c except
 * rmsnorm's summation order of exact double squares and swiglu's vector
 * exp (kernels.h gives the budgets). No FMA where ref.c rounds a product
 * and a sum separately.
 */
#include "backend/arm/arm_kernels.h"

#include "core/dtype.h"

#include <arm_neon.h>
#include <math.h>

/* e^x on 4 lanes, within 2 ulp of expf down to FLT_MIN: the reduction and
 * polynomial of vexp_avx2 (x86/vec_avx2.h). Below -87.3 the result is 0
 * (expf gives subnormals there), above 88.7 inf. */
static float32x4_t vexp_neon(float32x4_t x) {
    const uint32x4_t tiny = vcltq_f32(x, vdupq_n_f32(-87.3f));
    const uint32x4_t huge = vcgtq_f32(x, vdupq_n_f32(88.7f));
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.7f));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    /* 2^n for n in [-126, 128]: n = 128 (x near 88.7) is split as 2 * 2^127 */
    const int32x4_t ni = vcvtq_s32_f32(n);
    const int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
    const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, vdupq_n_s32(127)), 23));
    const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, vdupq_n_s32(127)), 23));
    const float32x4_t e = vmulq_f32(vmulq_f32(p, s1), s2);
    const float32x4_t e_or_0 = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(e), tiny));
    return vbslq_f32(huge, vdupq_n_f32(INFINITY), e_or_0);
}

void inf_neon_rmsnorm(float *y, const float *x, const float *w, int n_rows, int dim, float eps) {
    for (int r = 0; r < n_rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *yr = y + (size_t)r * dim;
        float64x2_t s0 = vdupq_n_f64(0.0), s1 = vdupq_n_f64(0.0);
        int i = 0;
        for (; i + 4 <= dim; i += 4) {
            const float32x4_t v = vld1q_f32(xr + i);
            const float32x4_t sq = vmulq_f32(v, v);
            s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(sq)));
            s1 = vaddq_f64(s1, vcvt_high_f64_f32(sq));
        }
        double sum_sq = vaddvq_f64(vaddq_f64(s0, s1));
        for (; i < dim; i++) sum_sq += (double)(xr[i] * xr[i]);
        const float mean = (float)(sum_sq / dim);
        const float scale = 1.0f / sqrtf(mean + eps);
        const float32x4_t vs = vdupq_n_f32(scale);
        for (i = 0; i + 4 <= dim; i += 4)
            vst1q_f32(yr + i, vmulq_f32(vmulq_f32(vld1q_f32(xr + i), vs), vld1q_f32(w + i)));
        for (; i < dim; i++) yr[i] = xr[i] * scale * w[i];
    }
}

void inf_neon_rope_rows(float *x, int n_rows, int head_dim, const float *cos_sin) {
    const int half = head_dim / 2;
    const float *cs = cos_sin, *sn = cos_sin + half;
    for (int r = 0; r < n_rows; r++) {
        float *xr = x + (size_t)r * head_dim;
        int i = 0;
        for (; i + 4 <= half; i += 4) {
            const float32x4_t c = vld1q_f32(cs + i), s = vld1q_f32(sn + i);
            const float32x4_t x0 = vld1q_f32(xr + i), x1 = vld1q_f32(xr + half + i);
            vst1q_f32(xr + i, vsubq_f32(vmulq_f32(x0, c), vmulq_f32(x1, s)));
            vst1q_f32(xr + half + i, vaddq_f32(vmulq_f32(x0, s), vmulq_f32(x1, c)));
        }
        for (; i < half; i++) {
            const float x0 = xr[i], x1 = xr[i + half];
            xr[i] = x0 * cs[i] - x1 * sn[i];
            xr[i + half] = x0 * sn[i] + x1 * cs[i];
        }
    }
}

/* silu(g) * up on 4 lanes: g / (1 + e^-g) * up, as ref.c rounds it. */
static float32x4_t swiglu4(float32x4_t g, float32x4_t up) {
    const float32x4_t e = vexp_neon(vnegq_f32(g));
    return vmulq_f32(vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), e)), up);
}

void inf_neon_swiglu(float *out, const float *gate, const float *up, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, swiglu4(vld1q_f32(gate + i), vld1q_f32(up + i)));
    if (i < n) { /* the tail through the same vector exp, via a padded copy */
        float g[4] = {0}, u[4] = {0}, o[4];
        for (size_t j = i; j < n; j++) g[j - i] = gate[j], u[j - i] = up[j];
        vst1q_f32(o, swiglu4(vld1q_f32(g), vld1q_f32(u)));
        for (size_t j = i; j < n; j++) out[j] = o[j - i];
    }
}

void inf_neon_add(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vld1q_f32(x + i)));
    for (; i < n; i++) y[i] += x[i];
}

/* FCVTN rounds to nearest even and keeps NaN payloads as inf_f32_to_f16. */
void inf_neon_f32_to_f16(uint16_t *dst, const float *src, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
    for (; i < n; i++) dst[i] = inf_f32_to_f16(src[i]);
}


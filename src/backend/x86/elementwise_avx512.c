/*
 * elementwise_avx512.c — the row and element ops with AVX-512: RMSNorm,
 * RoPE rotation, SwiGLU, add, f32 -> f16 for the KV cache.
 *
 * Same arithmetic as ref.c, lane by lane: add, rope (x0*c - x1*s with the
 * table ref's recurrence gives), f16 rounding (VCVTPS2PH rounds to nearest
 * even like inf_f32_to_f16) are bit-identical; rmsnorm sums the
 * same exact double squares in another order (the f32 mean it rounds to
 * agrees but for ties); swiglu's exp is vexp_avx512 (<= 2 ulp).
 */
#include "backend/x86/vec_avx512.h"
#include "backend/x86/x86_kernels.h"

#include "core/dtype.h"

#include <math.h>

static __mmask16 tail_mask(size_t n) { return (__mmask16)((1u << n) - 1); }

void inf_avx512_rmsnorm(float *y, const float *x, const float *w, int n_rows, int dim, float eps) {
    for (int r = 0; r < n_rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *yr = y + (size_t)r * dim;
        __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
        for (int i = 0; i < dim; i += 16) {
            const __mmask16 m = dim - i >= 16 ? 0xffff : tail_mask((size_t)(dim - i));
            const __m512 v = _mm512_maskz_loadu_ps(m, xr + i);
            const __m512 sq = _mm512_mul_ps(v, v); /* the f32 square, widened exactly */
            s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(sq)));
            s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sq), 1))));
        }
        const double sum_sq = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
        const float mean = (float)(sum_sq / dim);
        const __m512 scale = _mm512_set1_ps(1.0f / sqrtf(mean + eps));
        for (int i = 0; i < dim; i += 16) {
            const __mmask16 m = dim - i >= 16 ? 0xffff : tail_mask((size_t)(dim - i));
            const __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), scale),
                                           _mm512_maskz_loadu_ps(m, w + i));
            _mm512_mask_storeu_ps(yr + i, m, v);
        }
    }
}

void inf_avx512_rope_rows(float *x, int n_rows, int head_dim, const float *cos_sin) {
    const int half = head_dim / 2;
    const float *cs = cos_sin, *sn = cos_sin + half;
    for (int r = 0; r < n_rows; r++) {
        float *xr = x + (size_t)r * head_dim;
        for (int i = 0; i < half; i += 16) {
            const __mmask16 m = half - i >= 16 ? 0xffff : tail_mask((size_t)(half - i));
            const __m512 c = _mm512_maskz_loadu_ps(m, cs + i), s = _mm512_maskz_loadu_ps(m, sn + i);
            const __m512 x0 = _mm512_maskz_loadu_ps(m, xr + i), x1 = _mm512_maskz_loadu_ps(m, xr + half + i);
            _mm512_mask_storeu_ps(xr + i, m, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
            _mm512_mask_storeu_ps(xr + half + i, m, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
        }
    }
}

void inf_avx512_swiglu(float *out, const float *gate, const float *up, size_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xffff : tail_mask(n - i);
        const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 e = vexp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
        const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

void inf_avx512_add(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xffff : tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i)));
    }
}

void inf_avx512_f32_to_f16(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xffff : tail_mask(n - i);
        const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_mask_storeu_epi16(dst + i, m, h);
    }
}


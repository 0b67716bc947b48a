/*
 * elementwise_avx2.c — the row and element ops with AVX2 + FMA + F16C:
 * RMSNorm, RoPE rotation, Hadamard transform, SwiGLU, add, f32 -> f16.
 * Numerics as elementwise_avx512.c (bit-identical to ref.c except
 * rmsnorm's summation order of exact double squares and swiglu's vexp).
 * The avx512 table takes this Hadamard transform too: it is ~1% of a
 * prefill, in-register shuffles for the short spans and adds for the rest.
 */
#include "backend/x86/vec_avx2.h"
#include "backend/x86/x86_kernels.h"

#include "core/dtype.h"

#include <math.h>

void inf_avx2_rmsnorm(float *y, const float *x, const float *w, int n_rows, int dim, float eps) {
    for (int r = 0; r < n_rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *yr = y + (size_t)r * dim;
        __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
        int i = 0;
        for (; i + 8 <= dim; i += 8) {
            const __m256 v = _mm256_loadu_ps(xr + i);
            const __m256 sq = _mm256_mul_ps(v, v);
            s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
            s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
        }
        const __m256d s = _mm256_add_pd(s0, s1);
        __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
        double sum_sq = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
        for (; i < dim; i++) sum_sq += (double)(xr[i] * xr[i]);
        const float mean = (float)(sum_sq / dim);
        const float scale = 1.0f / sqrtf(mean + eps);
        const __m256 vs = _mm256_set1_ps(scale);
        for (i = 0; i + 8 <= dim; i += 8)
            _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), vs), _mm256_loadu_ps(w + i)));
        for (; i < dim; i++) yr[i] = xr[i] * scale * w[i];
    }
}

void inf_avx2_rope_rows(float *x, int n_rows, int head_dim, const float *cos_sin) {
    const int half = head_dim / 2;
    const float *cs = cos_sin, *sn = cos_sin + half;
    for (int r = 0; r < n_rows; r++) {
        float *xr = x + (size_t)r * head_dim;
        int i = 0;
        for (; i + 8 <= half; i += 8) {
            const __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
            const __m256 x0 = _mm256_loadu_ps(xr + i), x1 = _mm256_loadu_ps(xr + half + i);
            _mm256_storeu_ps(xr + i, _mm256_sub_ps(_mm256_mul_ps(x0, c), _mm256_mul_ps(x1, s)));
            _mm256_storeu_ps(xr + half + i, _mm256_add_ps(_mm256_mul_ps(x0, s), _mm256_mul_ps(x1, c)));
        }
        for (; i < half; i++) {
            const float x0 = xr[i], x1 = xr[i + half];
            xr[i] = x0 * cs[i] - x1 * sn[i];
            xr[i + half] = x0 * sn[i] + x1 * cs[i];
        }
    }
}

/* One 8-element group: the butterflies of spans 1, 2 and 4 in the register.
 * Lane i pairs with lane i ^ span; the lower of the two takes the sum, the
 * upper the difference lower - upper, as ref.c. */
static __m256 hadamard8(__m256 v) {
    __m256 p = _mm256_permute_ps(v, 0xB1); /* lanes i ^ 1 */
    v = _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0xAA);
    p = _mm256_permute_ps(v, 0x4E); /* lanes i ^ 2 */
    v = _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0xCC);
    p = _mm256_permute2f128_ps(v, v, 0x01); /* lanes i ^ 4 */
    return _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0xF0);
}

/* ref.c's transform, the same operations on the same pairs (n >= 8): the
 * scaling and the spans below 8 in one pass of 8-element groups, then the
 * wider spans on whole vectors. */
void inf_avx2_hadamard(float *x, int n_rows, int n) {
    const __m256 scale = _mm256_set1_ps(1.0f / sqrtf((float)n));
    for (int r = 0; r < n_rows; r++) {
        float *xr = x + (size_t)r * (size_t)n; /* [n] */
        for (int i = 0; i < n; i += 8)
            _mm256_storeu_ps(xr + i, hadamard8(_mm256_mul_ps(_mm256_loadu_ps(xr + i), scale)));
        for (int span = 8; span < n; span *= 2)
            for (int i0 = 0; i0 < n; i0 += 2 * span)
                for (int i = i0; i < i0 + span; i += 8) {
                    const __m256 a = _mm256_loadu_ps(xr + i), b = _mm256_loadu_ps(xr + i + span);
                    _mm256_storeu_ps(xr + i, _mm256_add_ps(a, b));
                    _mm256_storeu_ps(xr + i + span, _mm256_sub_ps(a, b));
                }
    }
}

void inf_avx2_swiglu(float *out, const float *gate, const float *up, size_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = vexp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), g));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
    if (i < n) { /* the tail through the same vector exp, via a padded copy */
        float g[8] = {0}, u[8] = {0}, o[8];
        for (size_t j = i; j < n; j++) g[j - i] = gate[j], u[j - i] = up[j];
        const __m256 gv = _mm256_loadu_ps(g);
        const __m256 e = vexp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), gv));
        _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_loadu_ps(u)));
        for (size_t j = i; j < n; j++) out[j] = o[j - i];
    }
}

void inf_avx2_add(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] += x[i];
}

void inf_avx2_f32_to_f16(uint16_t *dst, const float *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = inf_f32_to_f16(src[i]);
}


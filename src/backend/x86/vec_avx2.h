/*
 * vec_avx2.h — small AVX2 helpers shared by the *_avx2.c kernels: a vector
 * expf, horizontal sums, tail masks, f16 scalars and Q3_K's scales (the
 * last two by quant_avx512.c too). Include only from files built with the AVX2 flags
 * (the AVX-512 files' flags include them).
 */
#ifndef INF_VEC_AVX2_H
#define INF_VEC_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* f16 -> f32 by F16C's VCVTPH2PS: exact, as inf_f16_to_f32 (which the
 * kernels' hot loops cannot afford: it is a dozen scalar instructions). */
static inline float f16c_to_f32(uint16_t h) { return _cvtsh_ss(h); }

/* inf_q3k_scales (core/quant.h) on 16 byte lanes: a Q3_K super-block's
 * 16 signed 6-bit scales from its 12 scale bytes, as int8 (low 4 bits from
 * bytes 0-7, low then high nibbles; high 2 bits from bytes 8-11, byte
 * j % 4 shifted by 2 (j / 4)). */
static inline __m128i inf_q3k_scales_vec(const uint8_t *s12) {
    const __m128i lo8 = _mm_loadl_epi64((const __m128i *)s12);
    int32_t hi4;
    __builtin_memcpy(&hi4, s12 + 8, 4);
    const __m128i lo = _mm_and_si128(_mm_unpacklo_epi64(lo8, _mm_srli_epi16(lo8, 4)), _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(hi4), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* e^x on 8 lanes, within 2 ulp of expf down to FLT_MIN (the reduction and
 * polynomial of vexp_avx512); below -87.3 the result is 0 (expf gives
 * subnormals there), above 88.7 inf. */
static inline __m256 vexp_avx2(__m256 x) {
    const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
    const __m256 huge = _mm256_cmp_ps(x, _mm256_set1_ps(88.7f), _CMP_GT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^n for n in [-126, 128]: n = 128 (x near 88.7) is split as 2 * 2^127 */
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    __m256 e = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    e = _mm256_andnot_ps(tiny, e);
    return _mm256_blendv_ps(e, _mm256_set1_ps(__builtin_inff()), huge);
}

static inline float hsum_avx2(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* Lane i of the result is the sum of the 8 lanes of v[i]. */
static inline __m256 hsum8_avx2(const __m256 v[8]) {
    __m256 a[4], b[2];
    for (int i = 0; i < 4; i++) a[i] = _mm256_hadd_ps(v[2 * i], v[2 * i + 1]);
    for (int i = 0; i < 2; i++) b[i] = _mm256_hadd_ps(a[2 * i], a[2 * i + 1]);
    /* b[i] halves: [v4i..v4i+3 over lanes 0-3 | the same over lanes 4-7] */
    return _mm256_add_ps(_mm256_permute2f128_ps(b[0], b[1], 0x20), _mm256_permute2f128_ps(b[0], b[1], 0x31));
}

/* Lanes [0, n) all ones (a mask for maskload/maskstore), n <= 8. */
static inline __m256i tail_mask_avx2(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#endif /* INF_VEC_AVX2_H */

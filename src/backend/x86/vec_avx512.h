/*
 * vec_avx512.h — small AVX-512 helpers shared by the *_avx512.c kernels:
 * a vector expf, a transposing horizontal sum and a 16 x 16 int32
 * transpose. Include only from files
 * built with the AVX-512 flags.
 */
#ifndef INF_VEC_AVX512_H
#define INF_VEC_AVX512_H

#include <immintrin.h>

/* e^x on 16 lanes, within 2 ulp of expf for finite results: x = n ln2 + r
 * with |r| <= ln2/2 (ln2 split in two for an exact reduction), e^r by
 * Cephes' degree-6 polynomial, times 2^n by VSCALEFPS (which also rounds
 * the subnormal range and overflows to inf). -inf gives 0; inputs are
 * clamped to [-104, 89] first, where expf is 0 and inf. */
static inline __m512 vexp_avx512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* Lane i of the result is the sum of the 16 lanes of v[i]. Within each
 * 128-bit quarter, pairs then quads of vectors are interleaved and added,
 * so b[i]'s quarter q holds the partial sums of v[4i..4i+3] over quarter q;
 * two rounds of quarter shuffles then add the four quarters. */
static inline __m512 hsum16_avx512(const __m512 v[16]) {
    __m512 a[8], b[4], c[2];
    for (int i = 0; i < 8; i++)
        a[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; i++) {
        const __m512d x = _mm512_castps_pd(a[2 * i]), y = _mm512_castps_pd(a[2 * i + 1]);
        b[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    /* c[i] quarters: b[2i] q0+q1, b[2i] q2+q3, b[2i+1] q0+q1, b[2i+1] q2+q3 */
    for (int i = 0; i < 2; i++)
        c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x88), _mm512_shuffle_f32x4(c[0], c[1], 0xdd));
}

/* In place: v[c] becomes column c of the 16 x 16 int32 matrix v[row].
 * Within 128-bit quarters: pairs (unpack 32), then quads (unpack 64), so
 * quarter L of u[4i + j] holds column 4L + j of rows 4i..4i+3; quarter
 * shuffles then gather each column's four quarters. */
static inline void transpose16_epi32_avx512(__m512i v[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        const __m512i w0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44), w1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xee);
        const __m512i w2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44), w3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xee);
        v[j] = _mm512_shuffle_i32x4(w0, w2, 0x88);
        v[4 + j] = _mm512_shuffle_i32x4(w0, w2, 0xdd);
        v[8 + j] = _mm512_shuffle_i32x4(w1, w3, 0x88);
        v[12 + j] = _mm512_shuffle_i32x4(w1, w3, 0xdd);
    }
}

#endif /* INF_VEC_AVX512_H */

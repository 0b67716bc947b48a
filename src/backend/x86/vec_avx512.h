/*
 * vec_avx512.h — small AVX-512 helpers shared by the *_avx512.c and
 * *_amx.c kernels: a vector expf, a transposing horizontal sum, two
 * packing helpers of the gemms, the AMX gemms' store of a token tile and
 * the weight streams' software prefetch.
 * Include only from files built with the AVX-512 flags.
 */
#ifndef INF_VEC_AVX512_H
#define INF_VEC_AVX512_H

#include "core/dtype.h"

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>

/* v[i] (16 int32 each) transposed in place: v[c] lane i = old v[i] lane c
 * (matmul_avx512.c). */
void inf_avx512_transpose16(__m512i v[16]);
/* The signed values of blocks w0 and w1 (has2 false: zeros) of a Q4_0,
 * Q5_0 or IQ4_NL row, in element order (quant_avx512.c). */
__m512i inf_avx512_values_pair(inf_dtype type, const char *w0, const char *w1, bool has2);

/* A token tile's 16-row sums (lo: tokens 0-7, hi: 8-15) into y[t * y_stride],
 * the rows set in `rows`, for its nt tokens (the AMX gemms' 16 x 16 tiles,
 * whose sums stay in registers: two arrays of 8, which GCC keeps there). */
static inline __attribute__((always_inline)) void inf_avx512_store_tile_sums(float *y, size_t y_stride, __mmask16 rows,
                                                                             int nt, const __m512 lo[8],
                                                                             const __m512 hi[8]) {
    _Pragma("GCC unroll 8")
    for (int t = 0; t < 8; t++) {
        if (t < nt) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, lo[t]);
        if (t + 8 < nt) _mm512_mask_storeu_ps(y + (size_t)(t + 8) * y_stride, rows, hi[t]);
    }
}

/* One line of a weight stream read ahead by software prefetch: nta
 * non-temporal, else into L2 (inf_x86_weights_nta: chosen by timing, the
 * stream tuner of cpu.c; before it has timed anything NTA on AMD). Zen 5
 * (EPYC VM), Qwen3-0.6B decode, 2 threads, the same binary toggled,
 * alternating rounds (2026-12-05): NTA
 * instead of T1 gave Q4_K_M 104-107 -> 125-133 tok/s, Q6_K +8-20%,
 * Q5_K_M +11-17%, IQ4_XS +11-17%, Q8_0 +3-28%, Q4_0 better in 5 of 6
 * rounds; prefill 511 and batched decode of 4 and 16 sequences level.
 * The weights, read once a token, then pass the caches without evicting
 * the KV rows, activations and the next product's front into L3. In
 * another state of the same host type (2026-12-07) L2 read 20-43% faster,
 * which is why the hint is now chosen by timing (backend/stream_tuner.h). */
static inline __attribute__((always_inline)) void inf_avx512_prefetch_weights(const void *p, bool nta) {
    if (nta) _mm_prefetch((const char *)p, _MM_HINT_NTA);
    else _mm_prefetch((const char *)p, _MM_HINT_T1);
}

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

/* Lane i of the result is the sum of the 16 lanes of vi. Within each
 * 128-bit quarter, pairs then quads of vectors are interleaved and added,
 * so bi's quarter q holds the partial sums of v4i..v4i+3 over quarter q;
 * two rounds of quarter shuffles then add the four quarters. Sixteen
 * arguments and named partials, always inlined: taken as an array, the
 * vectors went through the stack (GCC 12), a third of the decode
 * attention's score time (Zen 5, attention_avx512.c). */
static inline __attribute__((always_inline)) __m512 inf_hsum16_pairs(__m512 x, __m512 y) {
    return _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y));
}

static inline __attribute__((always_inline)) __m512 inf_hsum16_quads(__m512 x, __m512 y) {
    const __m512d a = _mm512_castps_pd(x), b = _mm512_castps_pd(y);
    return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
}

static inline __attribute__((always_inline)) __m512 inf_hsum16_halves(__m512 x, __m512 y) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xdd));
}

static inline __attribute__((always_inline)) __m512
hsum16_avx512(__m512 v0, __m512 v1, __m512 v2, __m512 v3, __m512 v4, __m512 v5, __m512 v6, __m512 v7, __m512 v8,
              __m512 v9, __m512 v10, __m512 v11, __m512 v12, __m512 v13, __m512 v14, __m512 v15) {
    const __m512 b0 = inf_hsum16_quads(inf_hsum16_pairs(v0, v1), inf_hsum16_pairs(v2, v3));
    const __m512 b1 = inf_hsum16_quads(inf_hsum16_pairs(v4, v5), inf_hsum16_pairs(v6, v7));
    const __m512 b2 = inf_hsum16_quads(inf_hsum16_pairs(v8, v9), inf_hsum16_pairs(v10, v11));
    const __m512 b3 = inf_hsum16_quads(inf_hsum16_pairs(v12, v13), inf_hsum16_pairs(v14, v15));
    /* c0 and c1 quarters: b0 q0+q1, b0 q2+q3, b1 q0+q1, b1 q2+q3 (b2, b3) */
    return inf_hsum16_halves(inf_hsum16_halves(b0, b1), inf_hsum16_halves(b2, b3));
}

/* inf_iq4nl_values + 128, as unsigned codes (VPDPBUSD's unsigned side), in
 * every 128-bit lane: VPSHUFB looks up the 64 nibbles of a vector at once. */
static inline __m512i inf_avx512_iq4nl_codes(void) {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141, (char)153,
                                                (char)166, (char)181, (char)197, (char)217, (char)241));
}

#endif /* INF_VEC_AVX512_H */

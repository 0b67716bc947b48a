/*
 * matmul_avx512.c — y[t][r] = x[t] · W[r] with AVX-512: VNNI integer dots
 * for Q8_0, VDPBF16PS for BF16, F16C conversion + FMA for F16, FMA for F32.
 *
 * Activations are rounded once per matmul exactly as ref.c rounds them.
 * Then:
 *   - matvec (decode, few tokens; act_prepare rows) streams the weights
 *     once for up to a pass of tokens. Q8_0: 16 rows side by side, lane =
 *     row, an exact integer dot per (row, block) and the blocks summed in
 *     order (q8_group); F32/F16/BF16: one row at a time, lanes running
 *     along the row, two accumulators per token;
 *   - gemm (prefill; gemm_prepare tiles: GEMM_TOKENS tokens laid out
 *     k-major) packs a panel of up to INF_X86_GEMM_ROWS weight rows into
 *     16-row groups laid out k-major ([k][16 rows], transposed in
 *     registers), and runs a register tile of 16 rows (one vector, lane =
 *     row) x GEMM_TOKENS tokens: every vector op is a full-width
 *     multiply-add with the activation broadcast, every lane one output.
 *
 * VPDPBUSD multiplies unsigned by signed bytes, so one side enters with the
 * top bit flipped (q ^ 0x80 = q + 128 as unsigned) and the accumulator
 * starts at -128 times the other side's sum, which leaves the exact Σ w x:
 * the matvec flips the weights (-128 Σ x precomputed per activation
 * block), the gemm the activations (-128 Σ w formed per weight block).
 *
 * The 32-block weights can be packed once at load (inf_avx512_pack_rows,
 * the group layout of x86_kernels.h): the gemm then reads them as they
 * are (the 4- and 5-bit ones with Q8_0's activation tiles, Q4_1 and Q5_1
 * with their Q8_1 rows, their codes unpacked in registers) for any token
 * count, and cpu.c runs every product of such a weight on it,
 * bit-identical to ref.c (the matvecs read the file's rows). The
 * super-block types packed so run quant_avx512.c's
 * inf_avx512_qgemm_packed.
 *
 * Numerics (see kernels.h): the Q8_0 matvec and gemm are bit-identical to
 * ref.c (exact integer block dots, then sum += (float)dot * (d_w * d_x)
 * block by block, each product and sum rounded: -std=c11 keeps GCC from
 * contracting them into FMAs); F32/F16/BF16 sum exact products in f32 lanes.
 */
#include "backend/x86/vec_avx512.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"
#include "core/quant.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

enum {
    MV_TOKENS = 4,    /* F32/F16/BF16: activation rows per pass of matvec */
    Q8_MV_TOKENS = 8, /* Q8_0: activation rows per pass of matvec */
    /* Q8_0 matvec: blocks of all 16 rows read ahead into L2 (8.5 KiB) */
    Q8_PREFETCH_BLOCKS = 16,
    GEMM_TOKENS = 8, /* tokens of the gemm register tile */
    /* Q8_0 gemm: packed blocks read ahead into L2 (8 KiB;
     * a 3072-column decode matmul on 2 threads measured 0/2/4/8/16/32
     * blocks ahead: 3.45/3.20/3.06/3.25/3.06/3.01 ms) */
    Q8_PACKED_PREFETCH = 16,
    /* Q4_0's, by vendor. Intel Xeon: 8 (2.3 KiB): one 2 GiB matrix of
     * 1024 columns, 1 token, 2 threads, 6/8/12/16 blocks ahead:
     * 26.3/27.2/26.9/24.7 GB/s (none: 16.8). AMD Zen 5: 32 (9 KiB):
     * Qwen3-0.6B Q4_0 decode, 2 threads, three alternating rounds,
     * 8/32/48/64 ahead: 97-98/102-112/102-109/104-105 tok/s */
    Q4_PACKED_PREFETCH_INTEL = 8,
    Q4_PACKED_PREFETCH_AMD = 32,
    /* Q4_1 and Q5_1 packed at load, from this many tokens: each panel is
     * unpacked once into the 32-block gemm's pack (quant_avx512.c) and
     * runs its tiles, which take the activations flipped as they are:
     * q81_tile flips them back per token and quad, and its prefill 511 of
     * a Q4_1 model (Zen 5 VM, 2 threads) ran 20% slower than on the
     * file's rows. */
    Q81_UNPACK_MIN_TOKENS = 8,
    GROUP = 16,      /* weight rows per packed group: one vector of lanes */
    QK = INF_Q8_0_BLOCK,
};

/* ------------------------------------------------------------------ activations */

/* Q8_0 activation row (matvec), per block b of nb:
 *   q     [nb][32]  int8 quants (inf_quantize_row_q8_0)
 *   bias  [nb][4]   int32: lane k is -128 * (the sum of quads k and k + 4,
 *                   a quad being 4 consecutive quants), the VNNI bias of
 *                   one 128-bit quarter of q8_group's accumulators
 *   dx    [nb]      f32 the block scale (its f16 value) */
typedef struct q8_act {
    const int8_t *q;
    const int32_t *bias;
    const float *dx;
} q8_act;

static q8_act q8_act_at(const void *row, int64_t nb) {
    const char *p = row;
    return (q8_act){.q = (const int8_t *)p, .bias = (const int32_t *)(p + nb * 32), .dx = (const float *)(p + nb * 48)};
}

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

static int64_t pairs_of(int64_t cols) { return (cols + 1) / 2; }

/* Q8_0 rows are 64-byte multiples (52 bytes per 32 columns rounded up
 * stays within 128); BF16 rows hold whole pairs (an odd last column gets a
 * zero partner); F16 rows hold the f16-rounded values as f32. */
size_t inf_avx512_act_row_bytes(inf_dtype type, int64_t cols) {
    switch (type) {
    case INF_DTYPE_Q8_0: return round64((size_t)(cols / QK) * 52);
    case INF_DTYPE_BF16: return (size_t)pairs_of(cols) * 4;
    case INF_DTYPE_F16:
    case INF_DTYPE_F32: return (size_t)cols * 4;
    default: return inf_act_row_bytes_quant(type, cols); /* the block types (quant_avx512.c) */
    }
}

/* One block of 32 activations quantized as inf_quantize_row_q8_0 and
 * inf_quantize_row_q8_1 do: amax ignoring NaN, q = x * (127 / amax)
 * rounded to nearest even (the default MXCSR mode, as nearbyintf).
 * Returns amax. */
static float q8_quantize_block_amax(const float *x, __m256i *q) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    /* vmaxps returns its second operand when the first is NaN: NaN lanes keep 0 */
    const __m512 m = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()));
    const float amax = _mm512_reduce_max_ps(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    /* products over 127 (id overflows to inf when amax < 127 / FLT_MAX) to
     * 127, as inf_round_to_i8 saturates them, where VCVTPS2DQ would give
     * -2^31 from 2^31 on; NaN stays (vminps returns its second operand) */
    const __m512 vid = _mm512_set1_ps(id), top = _mm512_set1_ps(127.0f);
    const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(top, _mm512_mul_ps(v0, vid))));
    const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(top, _mm512_mul_ps(v1, vid))));
    *q = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
    return amax;
}

/* The same, returning Q8_0's d = amax / 127 as its f16 value. */
static float q8_quantize_block(const float *x, __m256i *q) {
    return inf_f16_to_f32(inf_f32_to_f16(q8_quantize_block_amax(x, q) / 127.0f));
}

/* The sum of a block's 32 signed quants. */
static int32_t q8_block_sum(__m256i q) {
    /* q + 128, as unsigned bytes, summed by 8-byte groups; then less 32 * 128 */
    const __m256i sad = _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256());
    const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(sad), _mm256_extracti128_si256(sad, 1));
    return (int32_t)(_mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1)) - 32 * 128;
}

/* -128 * (sum of each 4 consecutive quants), in 8 lanes: the VNNI bias. */
static __m256i q8_bias(__m256i q) {
    return _mm256_sub_epi32(_mm256_setzero_si256(),
                            _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), q));
}

static void q8_prepare(const float *x, int64_t cols, void *row) {
    const int64_t nb = cols / QK;
    char *p = row;
    int8_t *q = (int8_t *)p;
    int32_t *bias = (int32_t *)(p + nb * 32);
    float *dx = (float *)(p + nb * 48);
    for (int64_t b = 0; b < nb; b++) {
        __m256i qv;
        dx[b] = q8_quantize_block(x + b * QK, &qv);
        _mm256_storeu_si256((__m256i *)(q + b * QK), qv);
        const __m256i quads = q8_bias(qv); /* lane k: quad k's */
        _mm_storeu_si128((__m128i *)(bias + b * 4),
                         _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1)));
    }
}

void inf_avx512_quantize_row_q8_0(const float *x, inf_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / QK; b++) {
        __m256i q;
        y[b].d = inf_f32_to_f16(q8_quantize_block(x + b * QK, &q));
        _mm256_storeu_si256((__m256i *)y[b].q, q);
    }
}

/* s = d * Σq with d = amax / 127 before its rounding to f16, as
 * inf_quantize_row_q8_1. */
void inf_avx512_quantize_row_q8_1(const float *x, inf_block_q8_1 *y, int64_t n) {
    for (int64_t b = 0; b < n / QK; b++) {
        __m256i q;
        const float d = q8_quantize_block_amax(x + b * QK, &q) / 127.0f;
        y[b].d = inf_f32_to_f16(d);
        y[b].s = inf_f32_to_f16(d * (float)q8_block_sum(q));
        _mm256_storeu_si256((__m256i *)y[b].qs, q);
    }
}

/* f32 -> bf16 round to nearest even, NaN kept quiet: inf_f32_to_bf16 on 16 lanes. */
static __m256i bf16_from_f32(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(64));
    return _mm512_cvtepi32_epi16(r);
}

void inf_avx512_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row) {
    int64_t i = 0;
    switch (type) {
    case INF_DTYPE_Q8_0: q8_prepare(x, cols, row); break;
    case INF_DTYPE_BF16: {
        uint16_t *xb = row;
        for (; i + 16 <= cols; i += 16) _mm256_storeu_si256((__m256i *)(xb + i), bf16_from_f32(_mm512_loadu_ps(x + i)));
        for (; i < cols; i++) xb[i] = inf_f32_to_bf16(x[i]);
        if (cols % 2) xb[cols] = 0; /* the partner of an odd last column */
        break;
    }
    case INF_DTYPE_F16: {
        float *xf = row; /* the f16-rounded values, as f32 */
        for (; i + 16 <= cols; i += 16)
            _mm512_storeu_ps(xf + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
        for (; i < cols; i++) xf[i] = inf_f16_to_f32(inf_f32_to_f16(x[i]));
        break;
    }
    case INF_DTYPE_F32: memcpy(row, x, (size_t)cols * 4); break;
    default: inf_avx512_act_prepare_quant(type, x, cols, row); break;
    }
}

/* ------------------------------------------------------------------ matvec */

static __mmask16 tail_mask(int64_t n) { return (__mmask16)((1u << n) - 1); }

#define INLINE static inline __attribute__((always_inline))

/* The 32 quants of two weight blocks: a in the low half, b in the high. */
INLINE __m512i load_2x256(const void *a, const void *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(a)), _mm256_loadu_si256(b), 1);
}

/* Q8_0 matvec: 16 weight rows x NT tokens, lane i of every vector being
 * row i of the group (row i at base + off[i]; a tail group repeats its last
 * row and stores only the lanes of `rows`). Per block b:
 *   - the 16 rows' quants in 8 vectors, flipped to unsigned (w ^ 0x80):
 *     wq[2j] holds quads 0-3 of rows j, j + 4, j + 8, j + 12 (one row per
 *     128-bit quarter), wq[2j + 1] quads 4-7 of the same rows;
 *   - per token, acc[j] = bias + wq[2j] · x03 + wq[2j + 1] · x47 (VPDPBUSD,
 *     x03 and x47 the token's quads 0-3 and 4-7 in every quarter): quarter
 *     Q of acc[j] holds row j + 4Q's dot in 4 lanes, exactly;
 *   - two rounds of unpack-and-add within the quarters sum those 4 lanes:
 *     lane j + 4Q of `dot` is row j + 4Q's exact integer dot of block b;
 *   - sum += (float)dot * (d_w * d_x): ref.c's expression, block after
 *     block, in the row's lane.
 * Forming the 8 weight vectors costs 8 quarter shuffles per block, shared by
 * the tokens; each token's reduction then takes 6 shuffles (reducing 8
 * vectors of two rows each would take 14).
 * Each block also prefetches into L2 the line of block b +
 * Q8_PREFETCH_BLOCKS of every row (past the last block, of the next
 * group's rows, at `next`). Measured on a 2-core Xeon (Qwen3-0.6B Q8_0
 * decode, 2 threads, ~46 tok/s): the hardware prefetchers alone give ~32;
 * 8 or 32 blocks ahead 3-4% less than 16; the next group prefetched in
 * address order instead, 17 lines per block over the first half of the
 * blocks, 10% less. */
INLINE void q8_group(const char *base, const int32_t off[GROUP], const char *next, int64_t nb, const q8_act *xa,
                     const int NT, float *y, size_t y_stride, __mmask16 rows) {
    const __m512i offs = _mm512_loadu_si512(off), flip = _mm512_set1_epi8((char)0x80);
    __m512 sum[Q8_MV_TOKENS];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) sum[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *blk = base + b * (int64_t)sizeof(inf_block_q8_0);
        /* the line holding the end of block b + Q8_PREFETCH_BLOCKS of each
         * row, past the last block into the next group's rows */
        const int64_t bp = b + Q8_PREFETCH_BLOCKS;
        const char *ahead = (bp < nb ? base + bp * (int64_t)sizeof(inf_block_q8_0)
                                     : next + (bp - nb) * (int64_t)sizeof(inf_block_q8_0)) + sizeof(inf_block_q8_0) - 1;
        _Pragma("GCC unroll 16")
        for (int i = 0; i < GROUP; i++) _mm_prefetch(ahead + off[i], _MM_HINT_T1);
        __m512i wq[8];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) {
            /* quarters: row j lo, hi, row j + 4 lo, hi; then rows j + 8, j + 12 */
            const __m512i p = load_2x256(blk + off[j] + 2, blk + off[j + 4] + 2);
            const __m512i q = load_2x256(blk + off[j + 8] + 2, blk + off[j + 12] + 2);
            wq[2 * j] = _mm512_xor_si512(_mm512_shuffle_i32x4(p, q, 0x88), flip);
            wq[2 * j + 1] = _mm512_xor_si512(_mm512_shuffle_i32x4(p, q, 0xdd), flip);
        }
        /* the 16 scales: 32 bits gathered at each row's block start, low half kept */
        const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(offs, blk, 1)));
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; t++) {
            const __m512i x03 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(xa[t].q + b * QK)));
            const __m512i x47 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(xa[t].q + b * QK + 16)));
            const __m512i bias = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(xa[t].bias + b * 4)));
            __m512i acc[4];
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++)
                acc[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(bias, wq[2 * j], x03), wq[2 * j + 1], x47);
            const __m512i a01 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[0], acc[1]), _mm512_unpackhi_epi32(acc[0], acc[1]));
            const __m512i a23 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[2], acc[3]), _mm512_unpackhi_epi32(acc[2], acc[3]));
            const __m512i dot = _mm512_add_epi32(_mm512_unpacklo_epi64(a01, a23), _mm512_unpackhi_epi64(a01, a23));
            const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(xa[t].dx[b]));
            sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_cvtepi32_ps(dot), s));
        }
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, sum[t]);
}

/* Rows [r0, r1) in groups of 16, each group against all the tokens, a pass
 * of up to Q8_MV_TOKENS at a time (a later pass finds the group's weights
 * in cache). Row offsets within a group are int32: 15 rows of any real
 * model's Q8_0 width are far below 2 GiB. */
static void q8_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    const int64_t nb = w->cols / QK;
    q8_act xa[Q8_MV_TOKENS];
    for (int64_t r = r0; r < r1; r += GROUP) {
        const int nr = (int)INF_MIN(GROUP, r1 - r);
        int32_t off[GROUP];
        for (int i = 0; i < GROUP; i++) off[i] = (int32_t)((size_t)INF_MIN(i, nr - 1) * w->row_bytes);
        const char *base = (const char *)w->data + (size_t)r * w->row_bytes;
        const char *next = base + GROUP * w->row_bytes;
        const __mmask16 rows = tail_mask(nr);
        for (int t0 = 0; t0 < a->n; t0 += Q8_MV_TOKENS) {
            const int nt = INF_MIN(Q8_MV_TOKENS, a->n - t0);
            for (int t = 0; t < nt; t++) xa[t] = q8_act_at((const char *)a->data + (size_t)(t0 + t) * a->stride, nb);
            float *yt = y + (size_t)t0 * y_stride + (size_t)r;
            switch (nt) {
            case 1: q8_group(base, off, next, nb, xa, 1, yt, y_stride, rows); break;
            case 2: q8_group(base, off, next, nb, xa, 2, yt, y_stride, rows); break;
            case 3: q8_group(base, off, next, nb, xa, 3, yt, y_stride, rows); break;
            case 4: q8_group(base, off, next, nb, xa, 4, yt, y_stride, rows); break;
            case 5: q8_group(base, off, next, nb, xa, 5, yt, y_stride, rows); break;
            case 6: q8_group(base, off, next, nb, xa, 6, yt, y_stride, rows); break;
            case 7: q8_group(base, off, next, nb, xa, 7, yt, y_stride, rows); break;
            default: q8_group(base, off, next, nb, xa, 8, yt, y_stride, rows); break;
            }
        }
    }
}
_Static_assert(Q8_MV_TOKENS == 8, "q8_matvec spells out token counts 1..8");

/* BF16 row r of w times NT activation rows, in the summation order of
 * bf16_matvec_nt: 32 weights per vector (lane i a pair of weights),
 * vectors alternating between two accumulators, the last one or two
 * masked, then acc0 + acc1 reduced. */
INLINE void bf16_row_aligned(const uint16_t *wr, int64_t cols, const uint16_t *const *xa, const int NT, __m512 *acc0,
                             __m512 *acc1) {
    int64_t k = 0;
    for (; k + 64 <= cols; k += 64) {
        const __m512bh w0 = (__m512bh)_mm512_loadu_si512(wr + k), w1 = (__m512bh)_mm512_loadu_si512(wr + k + 32);
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) {
            acc0[t] = _mm512_dpbf16_ps(acc0[t], w0, (__m512bh)_mm512_loadu_si512(xa[t] + k));
            acc1[t] = _mm512_dpbf16_ps(acc1[t], w1, (__m512bh)_mm512_loadu_si512(xa[t] + k + 32));
        }
    }
    if (k < cols) {
        const int64_t left = cols - k;
        const __mmask32 m0 = left >= 32 ? 0xffffffffu : (__mmask32)((1ull << left) - 1);
        const __mmask32 m1 = left > 32 ? (__mmask32)((1ull << (left - 32)) - 1) : 0;
        const __m512bh w0 = (__m512bh)_mm512_maskz_loadu_epi16(m0, wr + k);
        const __m512bh w1 = (__m512bh)_mm512_maskz_loadu_epi16(m1, wr + k + 32);
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) {
            acc0[t] = _mm512_dpbf16_ps(acc0[t], w0, (__m512bh)_mm512_maskz_loadu_epi16(m0, xa[t] + k));
            if (m1) acc1[t] = _mm512_dpbf16_ps(acc1[t], w1, (__m512bh)_mm512_maskz_loadu_epi16(m1, xa[t] + k + 32));
        }
    }
}

/* One aligned load of bf16_row_rotated, masked: elements em of the load,
 * lanes lm of acc updated (not _mm512_mask_dpbf16_ps: gcc 12 loads its
 * mask with KMOVB, 8 lanes of 16). */
INLINE void bf16_rotated_edge(const uint16_t *wl, const uint16_t *const *xa, int64_t e0, __mmask32 em, __mmask16 lm,
                              const int NT, __m512 *acc) {
    const __m512bh w = (__m512bh)_mm512_maskz_loadu_epi16(em, wl);
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++) {
        /* (an address, not a pointer, before the row: masked, never read) */
        const __m512bh x = (__m512bh)_mm512_maskz_loadu_epi16(em, (const void *)((uintptr_t)xa[t] + 2 * e0));
        acc[t] = _mm512_mask_mov_ps(acc[t], lm, _mm512_dpbf16_ps(acc[t], w, x));
    }
}

/* How bf16_row_rotated reads a row that starts o lanes (4·o bytes,
 * 0 < o < 16) past a 64-byte boundary: n_loads aligned loads, of which
 * 1 .. whole-1 lie inside the row and the others (load 0 and up to two at
 * the end) are masked, elements em[i] and lanes lm[i] of load edge[i].
 * Rows of one weight share it when row_bytes is a multiple of 64. */
typedef struct bf16_rotation {
    int o;
    int64_t whole;
    int n_edges;
    int64_t edge[3];
    __mmask32 em[3];
    __mmask16 lm[3];
} bf16_rotation;

static bf16_rotation bf16_rotation_for(int64_t cols, int o) {
    bf16_rotation r = {.o = o};
    const int64_t lanes_used = 16 * ((cols + 31) / 32); /* lanes (pairs) of the vectors bf16_row_aligned takes */
    const int64_t n_loads = (lanes_used + o + 15) / 16;
    /* load j is whole when 32 j - 2 o + 32 <= cols */
    r.whole = INF_MAX(1, INF_MIN(n_loads, (cols + 2 * o) / 32));
    r.edge[r.n_edges++] = 0;
    for (int64_t j = r.whole; j < n_loads; j++) r.edge[r.n_edges++] = j;
    for (int i = 0; i < r.n_edges; i++) {
        const int64_t first = 16 * r.edge[i] - o; /* the lane pair held by lane 0 */
        const int64_t e0 = 2 * first;             /* its first element */
        const int64_t lo = e0 < 0 ? -e0 : 0, hi = INF_MIN(32, cols - e0);
        r.em[i] = hi > lo ? (__mmask32)(((hi >= 32 ? ~0ull : (1ull << hi) - 1)) & ~((1ull << lo) - 1)) : 0;
        const int64_t llo = first < 0 ? -first : 0, lhi = INF_MIN(16, lanes_used - first);
        r.lm[i] = lhi > llo ? (__mmask16)(((lhi >= 16 ? 0xffffu : (1u << lhi) - 1)) & ~((1u << llo) - 1)) : 0;
    }
    return r;
}

/* The same sums as bf16_row_aligned for a row that starts rot->o lanes
 * past a 64-byte boundary, as every row of a safetensors file whose data
 * begins so (its tensors are aligned to 8 bytes only): aligned loads
 * instead of loads that each span two cache lines (14% of the 4B
 * geometry's decode), the same floats. Aligned load j holds lanes
 * 16 j - o + i (i < 16) of the row: lanes i < o belong to the vector
 * before, the others to vector j. Even loads go to T, odd ones to U, so
 * acc0 (the even vectors) is T's lanes o.. then U's lanes ..o, and acc1
 * the other way round: each lane adds the same products in the same order
 * as bf16_row_aligned. A lane is updated iff bf16_row_aligned updates it
 * (every lane of the vectors it takes, zeros past the end), so even the
 * sign of a zero sum agrees; activations are read at the same offsets
 * (masked where they would start before the row). The whole loads go
 * two a pass, so that T and U stay in registers. */
INLINE void bf16_row_rotated(const uint16_t *wr, const bf16_rotation *rot, const uint16_t *const *xa, const int NT,
                             __m512 *acc0, __m512 *acc1) {
    const int o = rot->o;
    const uint16_t *base = (const uint16_t *)((uintptr_t)wr - 4 * (uintptr_t)o); /* 64-byte aligned */
    __m512 T[MV_TOKENS], U[MV_TOKENS];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++) T[t] = U[t] = _mm512_setzero_ps();
    bf16_rotated_edge(base, xa, -2 * o, rot->em[0], rot->lm[0], NT, T);
    int64_t j = 1;
    for (; j + 1 < rot->whole; j += 2) { /* j odd: U, then T */
        const int64_t e0 = 32 * j - 2 * o;
        const __m512bh w0 = (__m512bh)_mm512_load_si512(base + 32 * j);
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) U[t] = _mm512_dpbf16_ps(U[t], w0, (__m512bh)_mm512_loadu_si512(xa[t] + e0));
        const __m512bh w1 = (__m512bh)_mm512_load_si512(base + 32 * j + 32);
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) T[t] = _mm512_dpbf16_ps(T[t], w1, (__m512bh)_mm512_loadu_si512(xa[t] + e0 + 32));
    }
    if (j < rot->whole) {
        const __m512bh w0 = (__m512bh)_mm512_load_si512(base + 32 * j);
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++)
            U[t] = _mm512_dpbf16_ps(U[t], w0, (__m512bh)_mm512_loadu_si512(xa[t] + 32 * j - 2 * o));
    }
    for (int i = 1; i < rot->n_edges; i++) {
        const int64_t e = rot->edge[i];
        if (e & 1) bf16_rotated_edge(base + 32 * e, xa, 32 * e - 2 * o, rot->em[i], rot->lm[i], NT, U);
        else bf16_rotated_edge(base + 32 * e, xa, 32 * e - 2 * o, rot->em[i], rot->lm[i], NT, T);
    }
    const __m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(o));
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++) {
        acc0[t] = _mm512_permutex2var_ps(T[t], idx, U[t]);
        acc1[t] = _mm512_permutex2var_ps(U[t], idx, T[t]);
    }
}

/* BF16: VDPBF16PS over 32 weights per vector; vectors alternate between
 * the two accumulators (the last one or two masked). A row's floats do
 * not depend on its address. */
INLINE void bf16_matvec_nt(const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0, int64_t r1,
                           float *y, size_t y_stride) {
    const int64_t cols = w->cols;
    const uint16_t *xa[MV_TOKENS];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++) xa[t] = (const uint16_t *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    bf16_rotation rot = {.o = 0}; /* the last row's, when it was misaligned */
    for (int64_t r = r0; r < r1; r++) {
        const uint16_t *wr = (const uint16_t *)((const char *)w->data + (size_t)r * w->row_bytes);
        __m512 acc0[MV_TOKENS], acc1[MV_TOKENS];
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) acc0[t] = acc1[t] = _mm512_setzero_ps();
        const unsigned misaligned = (unsigned)((uintptr_t)wr & 63);
        if (misaligned && misaligned % 4 == 0) {
            if ((int)(misaligned / 4) != rot.o) rot = bf16_rotation_for(cols, (int)(misaligned / 4));
            bf16_row_rotated(wr, &rot, xa, NT, acc0, acc1);
        } else {
            bf16_row_aligned(wr, cols, xa, NT, acc0, acc1);
        }
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++)
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
    }
}

/* 16 weights of a row from column k (masked), widened to f32. */
INLINE __m512 f_load(const char *row, int64_t k, __mmask16 m, bool half) {
    return half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + k))
                : _mm512_maskz_loadu_ps(m, (const float *)row + k);
}

/* F16 (weights widened by F16C) and F32: 16 weights per vector, FMA;
 * vectors alternate between the two accumulators. */
INLINE void f_matvec_nt(const inf_weight *w, const inf_act *a, int t0, const int NT, int64_t r0, int64_t r1,
                        float *y, size_t y_stride) {
    const int64_t cols = w->cols;
    const bool half = w->type == INF_DTYPE_F16;
    const float *xa[MV_TOKENS];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++) xa[t] = (const float *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        __m512 acc0[MV_TOKENS], acc1[MV_TOKENS];
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) acc0[t] = acc1[t] = _mm512_setzero_ps();
        int64_t k = 0;
        for (; k + 32 <= cols; k += 32) {
            const __m512 w0 = f_load(wr, k, 0xffff, half), w1 = f_load(wr, k + 16, 0xffff, half);
            _Pragma("GCC unroll 4")
            for (int t = 0; t < NT; t++) {
                acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xa[t] + k), acc0[t]);
                acc1[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xa[t] + k + 16), acc1[t]);
            }
        }
        if (k < cols) {
            const int64_t left = cols - k;
            const __mmask16 m0 = left >= 16 ? 0xffff : tail_mask(left), m1 = left > 16 ? tail_mask(left - 16) : 0;
            const __m512 w0 = f_load(wr, k, m0, half), w1 = f_load(wr, k + 16, m1, half);
            _Pragma("GCC unroll 4")
            for (int t = 0; t < NT; t++) {
                acc0[t] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m0, xa[t] + k), acc0[t]);
                if (m1) acc1[t] = _mm512_fmadd_ps(w1, _mm512_maskz_loadu_ps(m1, xa[t] + k + 16), acc1[t]);
            }
        }
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++)
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
    }
}

_Static_assert(MV_TOKENS == 4, "the switches below spell out token counts 1..4");

void inf_avx512_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    if (w->type == INF_DTYPE_Q8_0) {
        q8_matvec(w, a, r0, r1, y, y_stride);
        return;
    }
    if (inf_dtype_is_quant(w->type)) { /* the block types, all tokens at once (quant_avx512.c) */
        inf_avx512_matvec_quant(w, a, r0, r1, y, y_stride);
        return;
    }
    for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) {
        const int nt = INF_MIN(MV_TOKENS, a->n - t0);
        if (w->type == INF_DTYPE_BF16) {
            if (nt == 1) bf16_matvec_nt(w, a, t0, 1, r0, r1, y, y_stride);
            else if (nt == 2) bf16_matvec_nt(w, a, t0, 2, r0, r1, y, y_stride);
            else if (nt == 3) bf16_matvec_nt(w, a, t0, 3, r0, r1, y, y_stride);
            else bf16_matvec_nt(w, a, t0, 4, r0, r1, y, y_stride);
        } else { /* F16, F32 */
            if (nt == 1) f_matvec_nt(w, a, t0, 1, r0, r1, y, y_stride);
            else if (nt == 2) f_matvec_nt(w, a, t0, 2, r0, r1, y, y_stride);
            else if (nt == 3) f_matvec_nt(w, a, t0, 3, r0, r1, y, y_stride);
            else f_matvec_nt(w, a, t0, 4, r0, r1, y, y_stride);
        }
    }
}

/* ------------------------------------------------------------------ gemm: layouts */

/* Packed weights, per group of 16 rows (missing rows are zeros):
 *   Q8_0: x86_kernels.h (inf_x86_packed_group_bytes): per block the signed
 *         quants [8 quads][16 rows][4], blocks in pairs after the pair's
 *         two vectors of f16 scales.
 *   BF16: [cols/2 pairs][16 rows][2] bf16 (an odd last column padded).
 *   F16, F32: [cols][16 rows] f32.
 * Activations, per tile of ts = min(GEMM_TOKENS, tokens left) tokens, tile
 * after tile (tile t0 at t0 * per-token bytes, so n tokens take no more
 * bytes than n rows of cols floats):
 *   Q8_0: per block, [8 quads][ts] int32 (4 signed quants), then [ts]
 *         f32 scales, then [ts] int32 sums of the block's 32 quants.
 *   BF16: [pairs][ts] int32 (2 bf16).  F16, F32: [cols][ts] f32. */
enum {
    Q8_TOKEN_BLOCK = 8 * 4 + 4 + 4,            /* 40 bytes per token per block */
};

static size_t group_bytes(inf_dtype type, int64_t cols) {
    switch (type) {
    case INF_DTYPE_Q8_0: return inf_x86_packed_group_bytes(type, cols);
    case INF_DTYPE_BF16: return (size_t)pairs_of(cols) * GROUP * 4;
    default: return (size_t)cols * GROUP * 4;
    }
}

/* Bytes of one token in the activation tiles. */
static size_t token_bytes(inf_dtype type, int64_t cols) {
    switch (type) {
    case INF_DTYPE_Q8_0: return (size_t)(cols / QK) * Q8_TOKEN_BLOCK;
    case INF_DTYPE_BF16: return (size_t)pairs_of(cols) * 4;
    default: return (size_t)cols * 4;
    }
}

size_t inf_avx512_gemm_pack_bytes(inf_dtype type, int64_t cols) {
    if (inf_dtype_is_quant(type)) return inf_avx512_qgemm_pack_bytes(type, cols);
    return (INF_X86_GEMM_ROWS / GROUP) * round64(group_bytes(type, cols));
}

/* In place: v[c] becomes column c of the 16 x 16 int32 matrix v[row].
 * Within 128-bit quarters: pairs (unpack 32), then quads (unpack 64), so
 * quarter L of u[4i + j] holds column 4L + j of rows 4i..4i+3; quarter
 * shuffles then gather each column's four quarters. */
void inf_avx512_transpose16(__m512i v[16]) {
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

/* 16 int32 of one token's row, from 32-bit column unit k (16 units: 32
 * columns of BF16 as pairs, 16 of F32/F16): rounded to the dot type. */
static __m512i tile_units(inf_dtype type, const float *x, int64_t cols, int64_t k) {
    if (type == INF_DTYPE_BF16) {
        const int64_t left = cols - 2 * k;
        const __mmask16 m0 = left >= 16 ? 0xffff : tail_mask(left);
        const __mmask16 m1 = left >= 32 ? 0xffff : left > 16 ? tail_mask(left - 16) : 0;
        const __m256i lo = bf16_from_f32(_mm512_maskz_loadu_ps(m0, x + 2 * k));
        const __m256i hi = bf16_from_f32(_mm512_maskz_loadu_ps(m1, x + 2 * k + 16));
        return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); /* pairs: low half the even column */
    }
    const __mmask16 m = cols - k >= 16 ? 0xffff : tail_mask(cols - k);
    __m512 v = _mm512_maskz_loadu_ps(m, x + k);
    if (type == INF_DTYPE_F16) v = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    return _mm512_castps_si512(v);
}

/* Tiles are [unit][ts]: up to 16 tokens' rows of 16 units are transposed
 * in registers, and each unit's ts tokens stored at once. */
void inf_avx512_gemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf) {
    if (inf_dtype_is_quant(type)) {
        inf_avx512_qgemm_prepare(type, x, cols, n, t0, t1, buf);
        return;
    }
    const size_t tb = token_bytes(type, cols);
    __m512i v[16];
    for (int tile0 = t0; tile0 < t1; tile0 += GEMM_TOKENS) {
        const int ts = INF_MIN(GEMM_TOKENS, n - tile0);
        const __mmask16 lanes = tail_mask(ts);
        char *tile = (char *)buf + (size_t)tile0 * tb;
        if (type == INF_DTYPE_Q8_0 && ts == 1) {
            /* a tile of one token is its blocks in order, nothing to
             * transpose (decode: 16 transposes cost ~3 µs a product) */
            const float *xt = x + (size_t)tile0 * (size_t)cols;
            for (int64_t b = 0; b < cols / QK; b++) {
                __m256i q;
                const float d = q8_quantize_block(xt + b * QK, &q);
                const int32_t sum = q8_block_sum(q);
                _mm256_storeu_si256((__m256i *)(tile + b * Q8_TOKEN_BLOCK), q);
                memcpy(tile + b * Q8_TOKEN_BLOCK + 32, &d, sizeof d);
                memcpy(tile + b * Q8_TOKEN_BLOCK + 36, &sum, sizeof sum);
            }
            continue;
        }
        if (type == INF_DTYPE_Q8_0) {
            /* two blocks (16 quads) per pass; then each block's scale and sum */
            const int64_t nb = cols / QK;
            for (int64_t b = 0; b < nb; b += 2) {
                const bool pair = b + 1 < nb;
                float d[2][16] = {{0}};
                int32_t sum[2][16] = {{0}};
                for (int t = 0; t < 16; t++) {
                    if (t >= ts) {
                        v[t] = _mm512_setzero_si512();
                        continue;
                    }
                    const float *xt = x + (size_t)(tile0 + t) * (size_t)cols + b * QK;
                    __m256i q0, q1 = _mm256_setzero_si256();
                    d[0][t] = q8_quantize_block(xt, &q0);
                    sum[0][t] = q8_block_sum(q0);
                    if (pair) {
                        d[1][t] = q8_quantize_block(xt + QK, &q1);
                        sum[1][t] = q8_block_sum(q1);
                    }
                    v[t] = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
                }
                inf_avx512_transpose16(v);
                for (int half = 0; half < 1 + pair; half++) {
                    char *pb = tile + (size_t)(b + half) * Q8_TOKEN_BLOCK * ts;
                    for (int quad = 0; quad < 8; quad++) _mm512_mask_storeu_epi32(pb + quad * 4 * ts, lanes, v[half * 8 + quad]);
                    _mm512_mask_storeu_ps(pb + 32 * ts, lanes, _mm512_loadu_ps(d[half]));
                    _mm512_mask_storeu_epi32(pb + 36 * ts, lanes, _mm512_loadu_si512(sum[half]));
                }
            }
            continue;
        }
        const int64_t units = type == INF_DTYPE_BF16 ? pairs_of(cols) : cols;
        for (int64_t k = 0; k < units; k += 16) {
            for (int t = 0; t < 16; t++)
                v[t] = t < ts ? tile_units(type, x + (size_t)(tile0 + t) * (size_t)cols, cols, k) : _mm512_setzero_si512();
            inf_avx512_transpose16(v);
            for (int c = 0; c < 16 && k + c < units; c++)
                _mm512_mask_storeu_epi32(tile + (size_t)(k + c) * 4 * ts, lanes, v[c]);
        }
    }
}

/* ------------------------------------------------------------------ gemm: packing weights */

/* Byte offsets of 16 consecutive rows. */
static __m512i row_offsets(size_t row_bytes) {
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32((int)row_bytes));
}

/* The f16 d leading the block at blk of each of nr rows (offs apart): 32
 * bits gathered per row, the low half kept; missing rows 0. */
static void store_scales(const char *blk, __m512i offs, int nr, uint16_t *dst) {
    const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), tail_mask(nr), offs, blk, 1);
    _mm256_store_si256((__m256i *)dst, _mm512_cvtepi32_epi16(d));
}

/* Quad q's fifth-bit mask of the packed Q5_0 block whose units start at gb. */
INLINE __mmask64 fifth_bits(const char *gb, int q) {
    uint64_t m;
    memcpy(&m, gb + INF_X86_Q5_0_MASKS + 8 * q, sizeof m);
    return _cvtu64_mask64(m);
}

/* Quad q of the packed Q4_0, Q4_1, Q5_0, Q5_1 or IQ4_NL block whose units
 * start at gb, 16 rows, as the unsigned codes w + q32_bias(T) VPDPBUSD
 * takes: the nibble (low for quads 0-3, high for 4-7), Q5_0's and Q5_1's
 * fifth bit as 16 under its mask, IQ4_NL's nibble looked up
 * (x86_kernels.h). */
INLINE __m512i q32_codes(const char *gb, int q, inf_dtype T) {
    const __m512i u = _mm512_load_si512(gb + (q % 4) * 64);
    __m512i c = _mm512_and_si512(q >= 4 ? _mm512_srli_epi16(u, 4) : u, _mm512_set1_epi8(0x0f));
    if (T == INF_DTYPE_Q5_0 || T == INF_DTYPE_Q5_1) c = _mm512_mask_add_epi8(c, fifth_bits(gb, q), c, _mm512_set1_epi8(16));
    if (T == INF_DTYPE_IQ4_NL) c = _mm512_shuffle_epi8(inf_avx512_iq4nl_codes(), c);
    return c;
}

/* What a packed 32-block type's codes (Q8_0's: flipped) exceed its values by. */
INLINE int q32_bias(inf_dtype T) {
    switch (T) {
    case INF_DTYPE_Q8_0:
    case INF_DTYPE_IQ4_NL: return 128;
    case INF_DTYPE_Q5_0: return 16;
    case INF_DTYPE_Q4_0: return 8;
    default: return 0; /* Q4_1, Q5_1: the codes are the values */
    }
}

/* The fifth bits of the Q5_0 block whose qh lies at qh in each of nr rows
 * (offs apart) as its 8 quads' masks (x86_kernels.h): quad q's nibble r is
 * bits 4q..4q+3 of row r's qh. */
static void store_fifth_bits(const char *qh, __m512i offs, int nr, char *dst) {
    const __m512i bits = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), tail_mask(nr), offs, qh, 1);
    for (int q = 0; q < 8; q++) {
        const __m128i nibbles = _mm512_cvtepi32_epi8(_mm512_and_si512(_mm512_srli_epi32(bits, 4 * q), _mm512_set1_epi32(0xf)));
        const __m128i pairs = _mm_maddubs_epi16(nibbles, _mm_set1_epi16(0x1001)); /* row 2j | row 2j + 1 << 4 */
        _mm_storel_epi64((__m128i *)(dst + 8 * q), _mm_packus_epi16(pairs, pairs));
    }
}

/* Packs rows [r, r + nr), nr <= 16, into one group: 16 rows x 16 int32
 * (64 bytes) at a time, transposed in registers. for_tiles gives the AMX
 * gemm's variant (x86_kernels.h). */
void inf_avx512_pack_group(const inf_weight *w, int64_t r, int nr, void *dst, bool for_tiles) {
    const char *base = (const char *)w->data + (size_t)r * w->row_bytes;
    const int64_t cols = w->cols;
    __m512i v[16];
    switch (w->type) {
    case INF_DTYPE_Q8_0: {
        /* two blocks per pass: the 8 quads of block b, then of block b + 1 */
        const int64_t nb = cols / QK;
        const __m512i offs = row_offsets(w->row_bytes);
        for (int64_t b = 0; b < nb; b += 2) {
            const bool pair = b + 1 < nb;
            for (int i = 0; i < GROUP; i++) {
                if (i >= nr) {
                    v[i] = _mm512_setzero_si512(); /* zero weights */
                    continue;
                }
                const inf_block_q8_0 *blk = (const inf_block_q8_0 *)(base + (size_t)i * w->row_bytes) + b;
                const __m256i lo = _mm256_loadu_si256((const __m256i *)blk[0].q);
                const __m256i hi = pair ? _mm256_loadu_si256((const __m256i *)blk[1].q) : _mm256_setzero_si256();
                v[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
            }
            inf_avx512_transpose16(v);
            for (int half = 0; half < 1 + pair; half++) {
                char *pb = (char *)dst + inf_x86_q32_quants_at(INF_DTYPE_Q8_0, b + half);
                for (int quad = 0; quad < 8; quad++) _mm512_store_si512(pb + quad * 64, v[half * 8 + quad]);
                store_scales(base + (b + half) * (int64_t)sizeof(inf_block_q8_0), offs, nr,
                             (uint16_t *)((char *)dst + inf_x86_q32_scales_at(INF_DTYPE_Q8_0, b + half)));
            }
        }
        break;
    }
    case INF_DTYPE_BF16: {
        /* 16 pairs (32 columns) per pass; masked loads zero an odd last
         * column's partner (and, for tiles, the pairs up to a whole pass) */
        const int64_t np = for_tiles ? (pairs_of(cols) + 15) / 16 * 16 : pairs_of(cols);
        for (int64_t k = 0; k < np; k += 16) {
            const int64_t left = cols - 2 * k;
            const __mmask32 m = left >= 32 ? 0xffffffffu : (__mmask32)((1ull << left) - 1);
            for (int i = 0; i < GROUP; i++)
                v[i] = i < nr ? _mm512_maskz_loadu_epi16(m, (const uint16_t *)(base + (size_t)i * w->row_bytes) + 2 * k)
                              : _mm512_setzero_si512();
            inf_avx512_transpose16(v);
            for (int c = 0; c < 16 && k + c < np; c++) _mm512_store_si512((char *)dst + (k + c) * 64, v[c]);
        }
        break;
    }
    case INF_DTYPE_F16:
    case INF_DTYPE_F32: {
        const bool half = w->type == INF_DTYPE_F16;
        for (int64_t k = 0; k < cols; k += 16) {
            const __mmask16 m = cols - k >= 16 ? 0xffff : tail_mask(cols - k);
            for (int i = 0; i < GROUP; i++) {
                const char *row = base + (size_t)i * w->row_bytes;
                v[i] = i >= nr ? _mm512_setzero_si512()
                       : half  ? _mm512_castps_si512(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + k)))
                               : _mm512_castps_si512(_mm512_maskz_loadu_ps(m, (const float *)row + k));
            }
            inf_avx512_transpose16(v);
            for (int c = 0; c < 16 && k + c < cols; c++) _mm512_store_si512((char *)dst + (k + c) * 64, v[c]);
        }
        break;
    }
    case INF_DTYPE_Q4_0:
    case INF_DTYPE_Q4_1:
    case INF_DTYPE_Q5_0:
    case INF_DTYPE_Q5_1:
    case INF_DTYPE_IQ4_NL: {
        /* four blocks per pass: a row's four 16-byte qs in one vector */
        const bool q5 = w->type == INF_DTYPE_Q5_0 || w->type == INF_DTYPE_Q5_1;
        const bool mins = w->type == INF_DTYPE_Q4_1 || w->type == INF_DTYPE_Q5_1; /* m after d */
        const int64_t nb = cols / QK, bb = (int64_t)inf_dtype_block_bytes(w->type);
        const size_t qs_at = w->type == INF_DTYPE_Q5_0   ? offsetof(inf_block_q5_0, qs)
                             : w->type == INF_DTYPE_Q5_1 ? offsetof(inf_block_q5_1, qs)
                             : w->type == INF_DTYPE_Q4_1 ? offsetof(inf_block_q4_1, qs)
                                                         : offsetof(inf_block_q4_0, qs); /* IQ4_NL's: Q4_0's */
        const size_t qh_at = mins ? offsetof(inf_block_q5_1, qh) : offsetof(inf_block_q5_0, qh);
        const __m512i offs = row_offsets(w->row_bytes);
        for (int64_t b = 0; b < nb; b += 4) {
            const int nblk = (int)INF_MIN(4, nb - b);
            for (int i = 0; i < GROUP; i++) {
                v[i] = _mm512_setzero_si512(); /* zero weights past the rows and blocks */
                if (i >= nr) continue;
                const char *blk = base + (size_t)i * w->row_bytes + b * bb + qs_at;
                for (int k = 0; k < nblk; k++)
                    v[i] = _mm512_mask_loadu_epi32(v[i], (__mmask16)(0xf << (4 * k)), (const int32_t *)(blk + k * bb) - 4 * k);
            }
            inf_avx512_transpose16(v);
            for (int k = 0; k < nblk; k++) {
                char *pb = (char *)dst + inf_x86_q32_quants_at(w->type, b + k);
                for (int unit = 0; unit < 4; unit++) _mm512_store_si512(pb + unit * 64, v[4 * k + unit]);
                uint16_t *scales = (uint16_t *)((char *)dst + inf_x86_q32_scales_at(w->type, b + k));
                store_scales(base + (b + k) * bb, offs, nr, scales);
                if (mins) store_scales(base + (b + k) * bb + offsetof(inf_block_q4_1, m), offs, nr, scales + GROUP);
                if (q5) store_fifth_bits(base + (b + k) * bb + qh_at, offs, nr, pb + INF_X86_Q5_0_MASKS);
            }
        }
        break;
    }
    default: break; /* the other block types: quant_avx512.c packs them */
    }
}

void inf_avx512_unpack_q32_group(inf_dtype type, const char *src, int64_t nb, char *dst) {
    for (int64_t b = 0; b < nb; b++) {
        const char *from = src + inf_x86_q32_quants_at(type, b);
        char *to = dst + inf_x86_q32_quants_at(INF_DTYPE_Q8_0, b);
        for (int quad = 0; quad < 8; quad++) /* codes less the bias, wrapping: the signed values */
            _mm512_store_si512(to + quad * 64,
                               _mm512_sub_epi8(q32_codes(from, quad, type), _mm512_set1_epi8((char)q32_bias(type))));
        memcpy(dst + inf_x86_q32_scales_at(INF_DTYPE_Q8_0, b), src + inf_x86_q32_scales_at(type, b),
               INF_X86_PACKED_SCALES_BLOCK);
    }
}

void inf_avx512_unpack_q81_group(inf_dtype type, const char *src, int64_t nb, char *dst) {
    for (int64_t b = 0; b < nb; b++) {
        const char *from = src + inf_x86_q32_quants_at(type, b);
        char *to = dst + (size_t)b * INF_QB_BLOCK;
        __m512i sum = _mm512_setzero_si512();
        for (int quad = 0; quad < 8; quad++) { /* the codes are the values, 0..31 */
            const __m512i v = q32_codes(from, quad, type);
            _mm512_store_si512(to + quad * 64, v);
            sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(1), v);
        }
        _mm512_store_si512(to + INF_QB_CORR, _mm512_slli_epi32(sum, 7));
        const __m256i *scales = (const __m256i *)(src + inf_x86_q32_scales_at(type, b));
        _mm512_store_ps(to + INF_QB_D, _mm512_cvtph_ps(_mm256_load_si256(scales)));
        _mm512_store_ps(to + INF_QB_M, _mm512_cvtph_ps(_mm256_load_si256(scales + 1)));
    }
}

size_t inf_avx512_packed_bytes(const inf_weight *w) {
    if (!inf_x86_packs(w->type)) return 0;
    return (size_t)((w->rows + GROUP - 1) / GROUP) * inf_x86_packed_group_bytes(w->type, w->cols);
}

void inf_avx512_pack_rows(const inf_weight *w, int64_t r0, int64_t r1, void *dst) {
    const size_t gbytes = inf_x86_packed_group_bytes(w->type, w->cols);
    for (int64_t r = r0; r < r1; r += GROUP) {
        char *group = (char *)dst + (size_t)(r / GROUP) * gbytes;
        if (inf_dtype_block_elems(w->type) == INF_QK_K) inf_avx512_pack_kquant_group(w, r, (int)INF_MIN(GROUP, r1 - r), group);
        else inf_avx512_pack_group(w, r, (int)INF_MIN(GROUP, r1 - r), group, false);
    }
}

/* ------------------------------------------------------------------ gemm: register tiles */

/* Block `ahead` of a packed group of a 32-block type T (past the group's
 * end: the next group's) read ahead with the tuned hint
 * (inf_x86_weights_nta). A loop, as the K-quant tiles': unrolled, GCC
 * kept the lines' addresses in registers across the block (in one process
 * token by token, Zen 5 VM, 2026-12-07, the loop decoded Q8_0 19-21%
 * faster, Q4_0 0-4%). */
INLINE void q32_read_ahead(const char *group, const inf_dtype T, int64_t ahead, bool nta) {
    const int64_t qb = (int64_t)inf_x86_packed_quants_block(T);
    _Pragma("GCC unroll 1")
    for (int line = 0; line < qb / 64; line++)
        inf_avx512_prefetch_weights(group + inf_x86_q32_quants_at(T, ahead) + line * 64, nta);
    inf_avx512_prefetch_weights(group + inf_x86_q32_scales_at(T, ahead), nta);
}

/* 16 rows x NT tokens of Q8_0, Q4_0, Q5_0 or IQ4_NL (T) from a packed group, in
 * ref.c's order: per block the exact integer dot, then sum += (float)dot *
 * (d_w * d_x). The tile holds NT tokens. VPDPBUSD multiplies unsigned by
 * signed bytes: the weights enter as unsigned, w + bias (Q8_0: flipped, w ^
 * 0x80 = w + 128; Q4_0: the nibble as stored, w + 8; Q5_0: the nibble plus
 * 16 under its fifth-bit mask, w + 16; IQ4_NL: its value looked up, w +
 * 128), each token's four quants
 * as they are (broadcast), and the accumulator starts at -bias * Σ x of
 * the token's block (gemm_prepare stores the sum), which leaves the exact
 * Σ w x. With the weights as the signed operand instead, the bias was
 * -128 * Σ w per row, eight more VPDPBUSD a block in a chain: a decode
 * product of Q4_0 from L2 ran at 43-44 GB/s a core, from DRAM on one
 * thread at 40; now 66-75 and 38-48 (Zen 5, 1024 x 1024). */
INLINE void q32_tile(const char *group, const char *tile, int64_t nb, const inf_dtype T, int q4_ahead, bool nta, const int NT,
                     float *y, size_t y_stride, __mmask16 rows) {
    const int bias = q32_bias(T);
    __m512 sum[GEMM_TOKENS];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) sum[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *gb = group + inf_x86_q32_quants_at(T, b);
        const char *tb = tile + b * Q8_TOKEN_BLOCK * NT;
        const int32_t *quads = (const int32_t *)tb;
        const float *dx = (const float *)(tb + 32 * NT);
        const int32_t *sx = (const int32_t *)(tb + 36 * NT);
        q32_read_ahead(group, T, b + (T == INF_DTYPE_Q8_0 ? Q8_PACKED_PREFETCH : q4_ahead), nta);
        __m512i wv[8]; /* unsigned: w + bias */
        _Pragma("GCC unroll 8")
        for (int quad = 0; quad < 8; quad++)
            wv[quad] = T == INF_DTYPE_Q8_0 ? _mm512_xor_si512(_mm512_load_si512(gb + quad * 64), _mm512_set1_epi8((char)0x80))
                                           : q32_codes(gb, quad, T);
        __m512i acc[GEMM_TOKENS];
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; t++) acc[t] = _mm512_set1_epi32(-bias * sx[t]);
        _Pragma("GCC unroll 8")
        for (int quad = 0; quad < 8; quad++) {
            _Pragma("GCC unroll 8")
            for (int t = 0; t < NT; t++)
                acc[t] = _mm512_dpbusd_epi32(acc[t], wv[quad], _mm512_set1_epi32(quads[quad * NT + t]));
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(group + inf_x86_q32_scales_at(T, b))));
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; t++) {
            const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(dx[t]));
            sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_cvtepi32_ps(acc[t]), s));
        }
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, sum[t]);
}

/* 16 rows x NT tokens of Q4_1 or Q5_1 (T) from a packed group, in ref.c's
 * order: per block the exact integer dot, then sum += (d_w * d_x) *
 * (float)isum + m_w * s_x. The activations are the NT tokens' rows of Q8_1
 * blocks (inf_avx512_qgemm_prepare: their quants flipped, x ^ 0x80, for
 * the unpacked gemm), stride bytes apart. The codes are the values, so
 * VPDPBUSD takes them as they are and each token's four quants flipped
 * back (broadcast), and the accumulator starts at 0. */
INLINE void q81_tile(const char *group, const char *act, size_t stride, int64_t nb, const inf_dtype T, int ahead,
                     bool nta, const int NT, float *y, size_t y_stride, __mmask16 rows) {
    const size_t xb = sizeof(inf_block_q8_1), xq_at = offsetof(inf_block_q8_1, qs);
    __m512 sum[GEMM_TOKENS];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) sum[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *gb = group + inf_x86_q32_quants_at(T, b);
        q32_read_ahead(group, T, b + ahead, nta);
        __m512i wv[8];
        _Pragma("GCC unroll 8")
        for (int quad = 0; quad < 8; quad++) wv[quad] = q32_codes(gb, quad, T);
        __m512i acc[GEMM_TOKENS];
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 8")
        for (int quad = 0; quad < 8; quad++) {
            _Pragma("GCC unroll 8")
            for (int t = 0; t < NT; t++) {
                int32_t xq;
                memcpy(&xq, act + (size_t)t * stride + (size_t)b * xb + xq_at + 4 * quad, 4);
                const __m512i x = _mm512_xor_si512(_mm512_set1_epi32(xq), _mm512_set1_epi8((char)0x80));
                acc[t] = _mm512_dpbusd_epi32(acc[t], wv[quad], x);
            }
        }
        const __m256i *scales = (const __m256i *)(group + inf_x86_q32_scales_at(T, b));
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(scales)), mw = _mm512_cvtph_ps(_mm256_load_si256(scales + 1));
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; t++) {
            int32_t ds; /* the block's d and s, f16 */
            memcpy(&ds, act + (size_t)t * stride + (size_t)b * xb, sizeof ds);
            const __m128 dsx = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
            const __m512 dx = _mm512_broadcastss_ps(dsx), sx = _mm512_broadcastss_ps(_mm_movehdup_ps(dsx));
            const __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[t]), _mm512_mul_ps(dw, dx));
            sum[t] = _mm512_add_ps(sum[t], _mm512_add_ps(p, _mm512_mul_ps(mw, sx)));
        }
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, sum[t]);
}

/* 16 rows x NT tokens of BF16: one VDPBF16PS per column pair and token. */
INLINE void bf16_tile(const char *group, const char *tile, int64_t np, const int NT, float *y, size_t y_stride,
                      __mmask16 rows) {
    __m512 acc[GEMM_TOKENS];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    const int32_t *x = (const int32_t *)tile;
    for (int64_t k = 0; k < np; k++) {
        const __m512bh wv = (__m512bh)_mm512_load_si512(group + k * 64);
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; t++)
            acc[t] = _mm512_dpbf16_ps(acc[t], wv, (__m512bh)_mm512_set1_epi32(x[k * NT + t]));
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, acc[t]);
}

/* 16 rows x NT tokens of f32 (F16 weights were widened when packed). */
INLINE void f32_tile(const char *group, const char *tile, int64_t cols, const int NT, float *y, size_t y_stride,
                     __mmask16 rows) {
    __m512 acc[GEMM_TOKENS];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    const float *x = (const float *)tile;
    for (int64_t k = 0; k < cols; k++) {
        const __m512 wv = _mm512_load_ps(group + k * 64);
        _Pragma("GCC unroll 8")
        for (int t = 0; t < NT; t++) acc[t] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[k * NT + t]), acc[t]);
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + (size_t)t * y_stride, rows, acc[t]);
}

/* One tile with a compile-time token count (so the accumulators stay in registers). */
#define TILE_CASES(fn, ...)                              \
    switch (nt) {                                        \
    case 1: fn(__VA_ARGS__, 1, y, ys, rows); break;      \
    case 2: fn(__VA_ARGS__, 2, y, ys, rows); break;      \
    case 3: fn(__VA_ARGS__, 3, y, ys, rows); break;      \
    case 4: fn(__VA_ARGS__, 4, y, ys, rows); break;      \
    case 5: fn(__VA_ARGS__, 5, y, ys, rows); break;      \
    case 6: fn(__VA_ARGS__, 6, y, ys, rows); break;      \
    case 7: fn(__VA_ARGS__, 7, y, ys, rows); break;      \
    default: fn(__VA_ARGS__, 8, y, ys, rows); break;     \
    }

static void run_tile(inf_dtype type, const char *group, const char *tile, size_t tb, int64_t cols, int nt, float *y,
                     size_t ys, __mmask16 rows, int q4_ahead, bool nta) {
    switch (type) {
    case INF_DTYPE_Q4_1: TILE_CASES(q81_tile, group, tile, tb, cols / QK, INF_DTYPE_Q4_1, q4_ahead, nta) break;
    case INF_DTYPE_Q5_1: TILE_CASES(q81_tile, group, tile, tb, cols / QK, INF_DTYPE_Q5_1, q4_ahead, nta) break;
    case INF_DTYPE_Q8_0: TILE_CASES(q32_tile, group, tile, cols / QK, INF_DTYPE_Q8_0, 0, nta) break;
    case INF_DTYPE_Q4_0: TILE_CASES(q32_tile, group, tile, cols / QK, INF_DTYPE_Q4_0, q4_ahead, nta) break;
    case INF_DTYPE_Q5_0: TILE_CASES(q32_tile, group, tile, cols / QK, INF_DTYPE_Q5_0, q4_ahead, nta) break;
    case INF_DTYPE_IQ4_NL: TILE_CASES(q32_tile, group, tile, cols / QK, INF_DTYPE_IQ4_NL, q4_ahead, nta) break;
    case INF_DTYPE_BF16: TILE_CASES(bf16_tile, group, tile, pairs_of(cols)) break;
    default: TILE_CASES(f32_tile, group, tile, cols) break;
    }
}

_Static_assert(GEMM_TOKENS == 8, "TILE_CASES spells out token counts 1..8");

void inf_avx512_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                     void *pack) {
    const bool packed = w->packed_format == INF_X86_PACKED_GROUPS; /* at load */
    if (packed && inf_dtype_block_elems(w->type) == INF_QK_K) {
        inf_avx512_qgemm_packed(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    if (inf_dtype_is_quant(w->type) && !packed) {
        inf_avx512_qgemm(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    if (packed && r1 - r0 > INF_X86_GEMM_ROWS) { /* any range: a panel at a time, for all the tokens */
        for (int64_t r = r0; r < r1; r += INF_X86_GEMM_ROWS)
            inf_avx512_gemm(w, a, r, INF_MIN(r1, r + INF_X86_GEMM_ROWS), y, y_stride, pack);
        return;
    }
    const bool rows_q81 = inf_quant_act_type(w->type) == INF_ACT_Q8_1; /* Q4_1, Q5_1 packed at load */
    if (rows_q81 && a->n >= Q81_UNPACK_MIN_TOKENS) { /* the panel unpacked into the 32-block gemm's pack */
        inf_avx512_qgemm32(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    /* the activations' bytes per token: Q8_0's tiles (the Q8_0-dot types
     * packed at load), Q4_1's and Q5_1's rows of Q8_1 blocks, or the
     * unpacked types' tiles */
    const size_t tb = rows_q81 ? inf_act_row_bytes_quant(w->type, w->cols)
                               : token_bytes(packed ? INF_DTYPE_Q8_0 : w->type, w->cols);
    const size_t gbytes = packed ? inf_x86_packed_group_bytes(w->type, w->cols) : round64(group_bytes(w->type, w->cols));
    const int n_groups = (int)((r1 - r0 + GROUP - 1) / GROUP);
    const int q4_ahead = inf_x86_cpu_is_amd() ? Q4_PACKED_PREFETCH_AMD : Q4_PACKED_PREFETCH_INTEL;
    const bool nta = inf_x86_weights_nta();
    if (packed) {
        pack = (char *)w->packed + (size_t)(r0 / GROUP) * gbytes;
    } else {
        for (int g = 0; g < n_groups; g++)
            inf_avx512_pack_group(w, r0 + (int64_t)g * GROUP, (int)INF_MIN(GROUP, r1 - r0 - g * GROUP),
                                  (char *)pack + g * gbytes, false);
    }
    for (int t0 = 0; t0 < a->n; t0 += GEMM_TOKENS) {
        const int nt = INF_MIN(GEMM_TOKENS, a->n - t0);
        const char *tile = (const char *)a->data + (size_t)t0 * tb;
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * GROUP;
            run_tile(w->type, (const char *)pack + g * gbytes, tile, tb, w->cols, nt, y + (size_t)t0 * y_stride + (size_t)r,
                     y_stride, tail_mask(INF_MIN(GROUP, r1 - r)), q4_ahead, nta);
        }
    }
}

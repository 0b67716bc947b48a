/*
 * matmul_avx2.c — y[t][r] = x[t] · W[r] with AVX2 + FMA + F16C, for CPUs
 * without AVX-512. Activations are rounded once per matmul exactly as
 * ref.c rounds them. Then:
 *   - matvec (decode, few tokens; act_prepare rows) streams the weights
 *     once for up to MV_TOKENS activation rows. Q8_0: 8 rows side by side,
 *     lane = row, an exact integer dot per (row, block) and the blocks
 *     summed in order (q8_group); F32/F16/BF16: one row at a time, lanes
 *     running along the row;
 *   - gemm (prefill; gemm_prepare tiles of GEMM_TOKENS tokens laid out
 *     k-major) packs a panel of up to INF_AVX2_GEMM_ROWS weight rows into
 *     16-row groups laid out k-major ([k][16 rows], 8 x 8 transposes in
 *     registers), and runs a register tile of 16 rows (two vectors, lane =
 *     row) x TILE_TOKENS tokens, the activation broadcast: every lane is
 *     one output, computed by the same operations wherever it falls.
 *
 * Q8_0 matvec: VPMADDUBSW multiplies unsigned by signed bytes into
 * pairwise int16 sums, so the block dot is |w| times x with w's sign moved
 * onto x (VPSIGNB): |w| <= 128 and |x| <= 127 keep each pair sum within
 * int16 (2 * 128 * 127 = 32512), and VPMADDWD widens exactly.
 * Q8_0 gemm: both sides are widened to int16 once (weights when packed,
 * activations when prepared), so one VPMADDWD forms two exact products
 * and their int32 sum per lane: no sign trick per token, and one multiply
 * per 16 products, as the byte path's two.
 *
 * The GGUF block types' matvec and gemm are quant_avx2.c's.
 *
 * Numerics (see kernels.h): the Q8_0 matvec and gemm are bit-identical to
 * ref.c (exact integer block dots, then sum += (float)dot * (d_w * d_x)
 * block by block, each product and sum rounded: -std=c11 keeps GCC from
 * contracting them into FMAs). F32/F16/BF16: exact products of the same
 * rounded operands (F32: fused), summed in f32: the matvec in 16 lanes of
 * partial sums, the gemm in chunks of SUM_CHUNK columns added to a running
 * total.
 */
#include "backend/x86/vec_avx2.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"
#include "core/quant.h"

#include <string.h>

enum { MV_TOKENS = 4, QK = INF_Q8_0_BLOCK };

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Activation rows as act_row.c lays them out; F16 rounded with F16C. */
void inf_avx2_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row) {
    if (type != INF_DTYPE_F16) {
        inf_act_prepare_common(type, x, cols, row);
        return;
    }
    float *xf = row;
    int64_t i = 0;
    for (; i + 8 <= cols; i += 8)
        _mm256_storeu_ps(xf + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < cols; i++) xf[i] = inf_f16_to_f32(inf_f32_to_f16(x[i]));
}

/* Q8_0 matvec: 8 weight rows x nt tokens, lane i of every vector being row
 * i of the group (row i at base + off[i]; a tail group repeats its last
 * row and stores only its first nr lanes). Per block b:
 *   - the 8 rows' quants in 8 vectors: w[2j] holds quants 0-15 of rows j
 *     and j + 4 (one row per 128-bit half), w[2j + 1] quants 16-31;
 *   - per token, with x0 and x1 its quants 0-15 and 16-31 in both halves,
 *     acc[j] = w[2j] · x0 + w[2j + 1] · x1 (VPSIGNB, VPMADDUBSW, VPMADDWD):
 *     half h of acc[j] holds row j + 4h's dot in 4 lanes, exactly;
 *   - two rounds of unpack-and-add within the halves sum those 4 lanes:
 *     lane j + 4h of `dot` is row j + 4h's exact integer dot of block b;
 *   - sum += (float)dot * (d_w * d_x): ref.c's expression, block after
 *     block, in the row's lane.
 * Each block also prefetches into L2 the line of block b +
 * Q8_PREFETCH_BLOCKS of every row (past the last block, of the next
 * group's rows, at `next`), as the avx512 matvec does: Qwen3-0.6B Q8_0
 * decode with INFERNO_ISA=avx2 on a 2-core Xeon, 2 threads, went from
 * 21 tok/s without to 36.6 (32 blocks ahead: 35.7). */
enum {
    Q8_GROUP = 8,
    Q8_PREFETCH_BLOCKS = 16, /* blocks of all 8 rows read ahead */
};

static void q8_group(const char *base, const int32_t off[Q8_GROUP], const char *next, int64_t nb,
                     const int8_t *const *xq, const float *const *dx, int nt, float *y, size_t y_stride, int nr) {
    const __m256i offs = _mm256_loadu_si256((const __m256i *)off), ones = _mm256_set1_epi16(1);
    __m256 sum[MV_TOKENS];
    for (int t = 0; t < nt; t++) sum[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *blk = base + b * (int64_t)sizeof(inf_block_q8_0);
        const int64_t bp = b + Q8_PREFETCH_BLOCKS; /* the line holding its end */
        const char *ahead = (bp < nb ? base + bp * (int64_t)sizeof(inf_block_q8_0)
                                     : next + (bp - nb) * (int64_t)sizeof(inf_block_q8_0)) + sizeof(inf_block_q8_0) - 1;
        for (int i = 0; i < Q8_GROUP; i++) _mm_prefetch(ahead + off[i], _MM_HINT_T1);
        __m256i w[8], wabs[8];
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 2; k++) {
                const char *lo = blk + off[j] + 2 + 16 * k, *hi = blk + off[j + 4] + 2 + 16 * k;
                w[2 * j + k] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
                                                       _mm_loadu_si128((const __m128i *)hi), 1);
                wabs[2 * j + k] = _mm256_abs_epi8(w[2 * j + k]);
            }
        /* the 8 scales: 32 bits gathered at each row's block start, low half kept */
        const __m256i d32 = _mm256_and_si256(_mm256_i32gather_epi32((const int *)blk, offs, 1), _mm256_set1_epi32(0xffff));
        const __m256 dw = _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(d32), _mm256_extracti128_si256(d32, 1)));
        for (int t = 0; t < nt; t++) {
            const __m256i x0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(xq[t] + b * QK)));
            const __m256i x1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(xq[t] + b * QK + 16)));
            __m256i acc[4];
            for (int j = 0; j < 4; j++) {
                const __m256i p0 = _mm256_maddubs_epi16(wabs[2 * j], _mm256_sign_epi8(x0, w[2 * j]));
                const __m256i p1 = _mm256_maddubs_epi16(wabs[2 * j + 1], _mm256_sign_epi8(x1, w[2 * j + 1]));
                acc[j] = _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
            }
            const __m256i a01 = _mm256_add_epi32(_mm256_unpacklo_epi32(acc[0], acc[1]), _mm256_unpackhi_epi32(acc[0], acc[1]));
            const __m256i a23 = _mm256_add_epi32(_mm256_unpacklo_epi32(acc[2], acc[3]), _mm256_unpackhi_epi32(acc[2], acc[3]));
            const __m256i dot = _mm256_add_epi32(_mm256_unpacklo_epi64(a01, a23), _mm256_unpackhi_epi64(a01, a23));
            const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(dx[t][b]));
            sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(_mm256_cvtepi32_ps(dot), s));
        }
    }
    const __m256i lanes = tail_mask_avx2((size_t)nr);
    for (int t = 0; t < nt; t++) _mm256_maskstore_ps(y + (size_t)t * y_stride, lanes, sum[t]);
}

/* Rows [r0, r1) in groups of 8, each group against all the tokens, a pass
 * of up to MV_TOKENS at a time (a later pass finds the group's weights in
 * cache). Row offsets within a group are int32: 7 rows of any real model's
 * Q8_0 width are far below 2 GiB. */
static void q8_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    const int64_t nb = w->cols / QK;
    const int8_t *xq[MV_TOKENS];
    const float *dx[MV_TOKENS];
    for (int64_t r = r0; r < r1; r += Q8_GROUP) {
        const int nr = (int)INF_MIN(Q8_GROUP, r1 - r);
        int32_t off[Q8_GROUP];
        for (int i = 0; i < Q8_GROUP; i++) off[i] = (int32_t)((size_t)INF_MIN(i, nr - 1) * w->row_bytes);
        const char *base = (const char *)w->data + (size_t)r * w->row_bytes;
        for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) {
            const int nt = INF_MIN(MV_TOKENS, a->n - t0);
            for (int t = 0; t < nt; t++) {
                xq[t] = (const int8_t *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
                dx[t] = (const float *)(xq[t] + nb * QK);
            }
            q8_group(base, off, base + Q8_GROUP * w->row_bytes, nb, xq, dx, nt, y + (size_t)t0 * y_stride + (size_t)r,
                     y_stride, nr);
        }
    }
}

/* 8 weights of a row from element k, widened to f32. */
static __m256 load_w8(inf_dtype type, const void *row, int64_t k) {
    switch (type) {
    case INF_DTYPE_BF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + k))), 16));
    case INF_DTYPE_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + k)));
    default: return _mm256_loadu_ps((const float *)row + k);
    }
}

static float load_w1(inf_dtype type, const void *row, int64_t k) {
    switch (type) {
    case INF_DTYPE_BF16: return inf_bf16_to_f32(((const uint16_t *)row)[k]);
    case INF_DTYPE_F16: return inf_f16_to_f32(((const uint16_t *)row)[k]);
    default: return ((const float *)row)[k];
    }
}

/* F32, F16, BF16: exact f32 products, FMA into two accumulators per token;
 * the columns past the last multiple of 8 are added one by one. */
static void f_matvec(const inf_weight *w, const inf_act *a, int t0, int nt, int64_t r0, int64_t r1, float *y,
                     size_t y_stride) {
    const int64_t cols = w->cols, body = cols & ~(int64_t)7;
    const float *xa[MV_TOKENS];
    for (int t = 0; t < nt; t++) xa[t] = (const float *)((const char *)a->data + (size_t)(t0 + t) * a->stride);
    for (int64_t r = r0; r < r1; r++) {
        const void *wr = (const char *)w->data + (size_t)r * w->row_bytes;
        __m256 acc[MV_TOKENS][2];
        for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
        for (int64_t k = 0; k < body; k += 8) {
            const __m256 wv = load_w8(w->type, wr, k);
            for (int t = 0; t < nt; t++)
                acc[t][(k >> 3) & 1] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xa[t] + k), acc[t][(k >> 3) & 1]);
        }
        for (int t = 0; t < nt; t++) {
            float sum = hsum_avx2(_mm256_add_ps(acc[t][0], acc[t][1]));
            for (int64_t k = body; k < cols; k++) sum += load_w1(w->type, wr, k) * xa[t][k];
            y[(size_t)(t0 + t) * y_stride + (size_t)r] = sum;
        }
    }
}

void inf_avx2_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride) {
    if (inf_dtype_is_quant(w->type)) { /* the block types (quant_avx2.c) */
        inf_avx2_matvec_quant(w, a, r0, r1, y, y_stride);
        return;
    }
    if (w->type == INF_DTYPE_Q8_0) {
        q8_matvec(w, a, r0, r1, y, y_stride);
        return;
    }
    for (int t0 = 0; t0 < a->n; t0 += MV_TOKENS) f_matvec(w, a, t0, INF_MIN(MV_TOKENS, a->n - t0), r0, r1, y, y_stride);
}

/* ------------------------------------------------------------------ gemm: layouts */

/* Packed weights, per group of 16 rows (two vectors of 8 lanes; missing
 * rows are zeros):
 *   Q8_0: per block, [16 pairs][16 rows][2] int16 quants (a pair is two
 *         consecutive columns), then [16] f32 scales: Q8_GROUP_BLOCK bytes.
 *   F32, F16, BF16: [cols][16 rows] f32 (F16 and BF16 widened, exact).
 * Activations, per tile of ts = min(GEMM_TOKENS, tokens left) tokens, tile
 * after tile (tile t0 at t0 * per-token bytes, so n tokens take no more
 * bytes than n rows of cols floats):
 *   Q8_0: per block, [16 pairs][ts] int32 (two int16 quants), [ts] f32 scales.
 *   F32, F16, BF16: [cols][ts] f32, rounded to the weight's type. */
enum {
    GEMM_TOKENS = 8,  /* tokens per activation tile (gemm_prepare's unit) */
    TILE_TOKENS = 4,  /* tokens of the register tile */
    GROUP = 16,       /* weight rows per packed group */
    SUM_CHUNK = 16,   /* F32/F16/BF16: columns summed before joining the total */
    Q8_GROUP_BLOCK = 16 * GROUP * 4 + GROUP * 4, /* 1088 */
    Q8_TOKEN_BLOCK = 16 * 4 + 4,                 /* 68 bytes per token per block */
};

static size_t group_bytes(inf_dtype type, int64_t cols) {
    if (type == INF_DTYPE_Q8_0) return (size_t)(cols / QK) * Q8_GROUP_BLOCK;
    return (size_t)cols * GROUP * 4;
}

static size_t token_bytes(inf_dtype type, int64_t cols) {
    if (type == INF_DTYPE_Q8_0) return (size_t)(cols / QK) * Q8_TOKEN_BLOCK;
    return (size_t)cols * 4;
}

size_t inf_avx2_gemm_pack_bytes(inf_dtype type, int64_t cols) {
    if (inf_dtype_is_quant(type)) return inf_avx2_qgemm_pack_bytes(type, cols); /* quant_avx2.c */
    return (INF_AVX2_GEMM_ROWS / GROUP) * round64(group_bytes(type, cols));
}

/* In place: v[c] becomes column c of the 8 x 8 matrix v[row]. */
static void transpose8(__m256 v[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);     /* a0 b0 a1 b1 | a4 b4 a5 b5 */
        t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]); /* a2 b2 a3 b3 | a6 b6 a7 b7 */
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44); /* a0 b0 c0 d0 | a4 b4 c4 d4 */
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int j = 0; j < 4; j++) {
        v[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
        v[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
}

static void transpose8i(__m256i v[8]) {
    __m256 f[8];
    for (int i = 0; i < 8; i++) f[i] = _mm256_castsi256_ps(v[i]);
    transpose8(f);
    for (int i = 0; i < 8; i++) v[i] = _mm256_castps_si256(f[i]);
}

/* ------------------------------------------------------------------ gemm: activations */

/* One block of 32 activations quantized as inf_quantize_row_q8_0 does
 * (amax ignoring NaN, d = amax / 127 kept as its f16 value, q = x * (127 /
 * amax) rounded to nearest even: the default MXCSR mode, as nearbyintf),
 * as int16 pairs: pairs[0] columns 0-15, pairs[1] columns 16-31. Returns d. */
static float q8_quantize_pairs(const float *x, __m256i pairs[2]) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 v[4], vmax = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        vmax = _mm256_max_ps(_mm256_and_ps(v[i], abs_mask), vmax); /* a NaN lane keeps vmax */
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i q[4];
    /* products over 127 to 127 (matmul_avx512.c's q8_quantize_block_amax) */
    for (int i = 0; i < 4; i++) q[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_set1_ps(127.0f), _mm256_mul_ps(v[i], id)));
    /* packs interleaves 128-bit halves; the permute puts the columns back in order */
    pairs[0] = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xd8);
    pairs[1] = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[2], q[3]), 0xd8);
    return inf_f16_to_f32(inf_f32_to_f16(amax / 127.0f));
}

void inf_avx2_quantize_row_q8_0(const float *x, inf_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / INF_Q8_0_BLOCK; b++) {
        __m256i pairs[2];
        y[b].d = inf_f32_to_f16(q8_quantize_pairs(x + b * INF_Q8_0_BLOCK, pairs));
        /* packs interleaves 128-bit halves; the permute puts the columns back in order */
        _mm256_storeu_si256((__m256i *)y[b].q, _mm256_permute4x64_epi64(_mm256_packs_epi16(pairs[0], pairs[1]), 0xd8));
    }
}

/* 8 f32 activations from column k (zeros past cols), rounded to the weight's type. */
static __m256 act_load8(inf_dtype type, const float *x, int64_t cols, int64_t k) {
    __m256 v = cols - k >= 8 ? _mm256_loadu_ps(x + k) : _mm256_maskload_ps(x + k, tail_mask_avx2((size_t)(cols - k)));
    if (type == INF_DTYPE_F16) return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    if (type == INF_DTYPE_BF16) { /* inf_f32_to_bf16: nearest even, a NaN stays a quiet NaN */
        const __m256i u = _mm256_castps_si256(v);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
        const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(64 << 16));
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        const __m256i r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet), nan));
        return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u)));
    }
    return v;
}

/* Tiles [unit][ts]: 8 tokens' units (int32 pairs or f32 columns) are
 * transposed in registers and each unit's ts tokens stored at once. */
void inf_avx2_gemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf) {
    if (inf_dtype_is_quant(type)) {
        inf_avx2_qgemm_prepare(type, x, cols, n, t0, t1, buf);
        return;
    }
    const size_t tb = token_bytes(type, cols);
    for (int tile0 = t0; tile0 < t1; tile0 += GEMM_TOKENS) {
        const int ts = INF_MIN(GEMM_TOKENS, n - tile0);
        const __m256i lanes = tail_mask_avx2((size_t)ts);
        char *tile = (char *)buf + (size_t)tile0 * tb;
        if (type == INF_DTYPE_Q8_0) {
            const int64_t nb = cols / QK;
            for (int64_t b = 0; b < nb; b++) {
                __m256i lo[8], hi[8]; /* [token] pairs 0-7 and 8-15 */
                float d[8] = {0};
                for (int t = 0; t < GEMM_TOKENS; t++) {
                    __m256i pairs[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
                    if (t < ts) d[t] = q8_quantize_pairs(x + (size_t)(tile0 + t) * (size_t)cols + b * QK, pairs);
                    lo[t] = pairs[0];
                    hi[t] = pairs[1];
                }
                transpose8i(lo);
                transpose8i(hi);
                char *pb = tile + (size_t)b * Q8_TOKEN_BLOCK * ts;
                for (int p = 0; p < 8; p++) {
                    _mm256_maskstore_epi32((int *)(pb + (size_t)p * 4 * ts), lanes, lo[p]);
                    _mm256_maskstore_epi32((int *)(pb + (size_t)(8 + p) * 4 * ts), lanes, hi[p]);
                }
                _mm256_maskstore_ps((float *)(pb + (size_t)64 * ts), lanes, _mm256_loadu_ps(d));
            }
            continue;
        }
        for (int64_t k = 0; k < cols; k += 8) {
            __m256 v[8];
            for (int t = 0; t < GEMM_TOKENS; t++)
                v[t] = t < ts ? act_load8(type, x + (size_t)(tile0 + t) * (size_t)cols, cols, k) : _mm256_setzero_ps();
            transpose8(v);
            for (int c = 0; c < 8 && k + c < cols; c++) _mm256_maskstore_ps((float *)tile + (size_t)(k + c) * ts, lanes, v[c]);
        }
    }
}

/* ------------------------------------------------------------------ gemm: packing weights */

/* Packs rows [r, r + nr), nr <= 16, into one group, 8 x 8 transposes at a time. */
static void pack_group(const inf_weight *w, int64_t r, int nr, char *dst) {
    const char *base = (const char *)w->data + (size_t)r * w->row_bytes;
    const int64_t cols = w->cols;
    if (w->type == INF_DTYPE_Q8_0) {
        const int64_t nb = cols / QK;
        for (int64_t b = 0; b < nb; b++) {
            char *pb = dst + b * Q8_GROUP_BLOCK;
            float *scales = (float *)(pb + 16 * GROUP * 4);
            for (int half = 0; half < 2; half++) { /* rows 8 * half .. + 7: one vector */
                __m256i lo[8], hi[8];          /* [row] pairs 0-7 and 8-15 */
                for (int i = 0; i < 8; i++) {
                    const int row = 8 * half + i;
                    if (row >= nr) {
                        lo[i] = hi[i] = _mm256_setzero_si256();
                        scales[row] = 0.0f;
                        continue;
                    }
                    const inf_block_q8_0 *blk = (const inf_block_q8_0 *)(base + (size_t)row * w->row_bytes) + b;
                    lo[i] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)blk->q));
                    hi[i] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk->q + 16)));
                    scales[row] = f16c_to_f32(blk->d);
                }
                transpose8i(lo);
                transpose8i(hi);
                for (int p = 0; p < 8; p++) {
                    _mm256_store_si256((__m256i *)(pb + p * 64 + half * 32), lo[p]);
                    _mm256_store_si256((__m256i *)(pb + (8 + p) * 64 + half * 32), hi[p]);
                }
            }
        }
        return;
    }
    for (int64_t k = 0; k < cols; k += 8) {
        for (int half = 0; half < 2; half++) {
            __m256 v[8];
            for (int i = 0; i < 8; i++) {
                const int row = 8 * half + i;
                const char *wr = base + (size_t)row * w->row_bytes;
                if (row >= nr) {
                    v[i] = _mm256_setzero_ps();
                } else if (cols - k >= 8) {
                    v[i] = load_w8(w->type, wr, k);
                } else {
                    float part[8] = {0};
                    for (int64_t c = k; c < cols; c++) part[c - k] = load_w1(w->type, wr, c);
                    v[i] = _mm256_loadu_ps(part);
                }
            }
            transpose8(v);
            for (int c = 0; c < 8 && k + c < cols; c++) _mm256_store_ps((float *)(dst + (k + c) * 64 + half * 32), v[c]);
        }
    }
}

/* ------------------------------------------------------------------ gemm: register tiles */

#define INLINE static inline __attribute__((always_inline))

/* Rows [0, nr) of the tile's two vectors, token by token, to y[t * ys + row]. */
INLINE void store_rows(float *y, size_t ys, __m256 sum[2][TILE_TOKENS], const int NT, int nr) {
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++)
        for (int half = 0; half < 2; half++) {
            const int n = INF_MIN(8, nr - 8 * half);
            float *dst = y + (size_t)t * ys + 8 * half;
            if (n == 8) _mm256_storeu_ps(dst, sum[half][t]);
            else if (n > 0) _mm256_maskstore_ps(dst, tail_mask_avx2((size_t)n), sum[half][t]);
        }
}

/* 16 rows x NT tokens (tokens sub.. of a tile of ts) of Q8_0 in ref.c's
 * order: per block the exact integer dot (VPMADDWD: two int16 products
 * summed into int32, then added), then sum += (float)dot * (d_w * d_x). */
INLINE void q8_tile(const char *group, const char *tile, int64_t nb, const int ts, int sub, const int NT, float *y,
                    size_t ys, int nr) {
    __m256 sum[2][TILE_TOKENS];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++) sum[0][t] = sum[1][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const char *gb = group + b * Q8_GROUP_BLOCK;
        const char *tb = tile + (size_t)b * Q8_TOKEN_BLOCK * ts;
        const int32_t *xq = (const int32_t *)tb + sub;            /* [16 pairs][ts] */
        const float *dx = (const float *)(tb + (size_t)64 * ts) + sub; /* [ts] */
        __m256i acc[2][TILE_TOKENS];
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) acc[0][t] = acc[1][t] = _mm256_setzero_si256();
        /* not unrolled: GCC would regroup the 16 integer adds as a tree and spill the products */
        _Pragma("GCC unroll 1")
        for (int p = 0; p < 16; p++) {
            const __m256i w0 = _mm256_load_si256((const __m256i *)(gb + p * 64));
            const __m256i w1 = _mm256_load_si256((const __m256i *)(gb + p * 64 + 32));
            const int32_t *xp = xq + p * ts;
            _Pragma("GCC unroll 4")
            for (int t = 0; t < NT; t++) {
                const __m256i xv = _mm256_set1_epi32(xp[t]);
                acc[0][t] = _mm256_add_epi32(acc[0][t], _mm256_madd_epi16(w0, xv));
                acc[1][t] = _mm256_add_epi32(acc[1][t], _mm256_madd_epi16(w1, xv));
            }
        }
        const __m256 dw0 = _mm256_load_ps((const float *)(gb + 1024)), dw1 = _mm256_load_ps((const float *)(gb + 1056));
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) {
            const __m256 d = _mm256_set1_ps(dx[t]);
            sum[0][t] = _mm256_add_ps(sum[0][t], _mm256_mul_ps(_mm256_cvtepi32_ps(acc[0][t]), _mm256_mul_ps(dw0, d)));
            sum[1][t] = _mm256_add_ps(sum[1][t], _mm256_mul_ps(_mm256_cvtepi32_ps(acc[1][t]), _mm256_mul_ps(dw1, d)));
        }
    }
    store_rows(y, ys, sum, NT, nr);
}

/* 16 rows x NT tokens of f32 (F16 and BF16 widened): FMA into a fresh
 * accumulator per SUM_CHUNK columns, each chunk then added to the total
 * (the rounding error grows with SUM_CHUNK + cols / SUM_CHUNK, not cols). */
INLINE void f32_tile(const char *group, const char *tile, int64_t cols, const int ts, int sub, const int NT, float *y,
                     size_t ys, int nr) {
    __m256 sum[2][TILE_TOKENS];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < NT; t++) sum[0][t] = sum[1][t] = _mm256_setzero_ps();
    const float *x = (const float *)tile + sub; /* [cols][ts] */
    for (int64_t k0 = 0; k0 < cols; k0 += SUM_CHUNK) {
        const int64_t k1 = INF_MIN(cols, k0 + SUM_CHUNK);
        __m256 acc[2][TILE_TOKENS];
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
        for (int64_t k = k0; k < k1; k++) {
            const __m256 w0 = _mm256_load_ps((const float *)(group + k * 64));
            const __m256 w1 = _mm256_load_ps((const float *)(group + k * 64 + 32));
            _Pragma("GCC unroll 4")
            for (int t = 0; t < NT; t++) {
                const __m256 xv = _mm256_broadcast_ss(x + k * ts + t);
                acc[0][t] = _mm256_fmadd_ps(w0, xv, acc[0][t]);
                acc[1][t] = _mm256_fmadd_ps(w1, xv, acc[1][t]);
            }
        }
        _Pragma("GCC unroll 4")
        for (int t = 0; t < NT; t++) {
            sum[0][t] = _mm256_add_ps(sum[0][t], acc[0][t]);
            sum[1][t] = _mm256_add_ps(sum[1][t], acc[1][t]);
        }
    }
    store_rows(y, ys, sum, NT, nr);
}

/* One tile with compile-time token counts (so the accumulators stay in
 * registers and the activation offsets are constants): the tile's NT and,
 * for full activation tiles, their TS (a partial last tile passes its ts). */
#define TILE_CASES(fn, n_units, TS)                                      \
    switch (nt) {                                                        \
    case 1: fn(group, tile, n_units, TS, sub, 1, y, ys, nr); break;      \
    case 2: fn(group, tile, n_units, TS, sub, 2, y, ys, nr); break;      \
    case 3: fn(group, tile, n_units, TS, sub, 3, y, ys, nr); break;      \
    default: fn(group, tile, n_units, TS, sub, 4, y, ys, nr); break;     \
    }

_Static_assert(TILE_TOKENS == 4, "TILE_CASES spells out token counts 1..4");
_Static_assert(GEMM_TOKENS % TILE_TOKENS == 0, "register tiles split activation tiles evenly");

static void run_tile(inf_dtype type, const char *group, const char *tile, int64_t cols, int ts, int sub, int nt,
                     float *y, size_t ys, int nr) {
    if (type == INF_DTYPE_Q8_0) {
        if (ts == GEMM_TOKENS) TILE_CASES(q8_tile, cols / QK, GEMM_TOKENS)
        else TILE_CASES(q8_tile, cols / QK, ts)
    } else {
        if (ts == GEMM_TOKENS) TILE_CASES(f32_tile, cols, GEMM_TOKENS)
        else TILE_CASES(f32_tile, cols, ts)
    }
}

void inf_avx2_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                   void *pack) {
    if (inf_dtype_is_quant(w->type)) {
        inf_avx2_qgemm(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    const size_t gbytes = round64(group_bytes(w->type, w->cols)), tb = token_bytes(w->type, w->cols);
    const int n_groups = (int)((r1 - r0 + GROUP - 1) / GROUP);
    for (int g = 0; g < n_groups; g++)
        pack_group(w, r0 + (int64_t)g * GROUP, (int)INF_MIN(GROUP, r1 - r0 - g * GROUP), (char *)pack + g * gbytes);
    for (int tile0 = 0; tile0 < a->n; tile0 += GEMM_TOKENS) {
        const int ts = INF_MIN(GEMM_TOKENS, a->n - tile0);
        const char *tile = (const char *)a->data + (size_t)tile0 * tb;
        for (int sub = 0; sub < ts; sub += TILE_TOKENS)
            for (int g = 0; g < n_groups; g++) {
                const int64_t r = r0 + (int64_t)g * GROUP;
                run_tile(w->type, (const char *)pack + g * gbytes, tile, w->cols, ts, sub, INF_MIN(TILE_TOKENS, ts - sub),
                         y + (size_t)(tile0 + sub) * y_stride + (size_t)r, y_stride, (int)INF_MIN(GROUP, r1 - r));
            }
    }
}

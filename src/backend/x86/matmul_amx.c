/*
 * matmul_amx.c — the prefill gemm on Intel AMX tiles (Sapphire Rapids and
 * later): TDPBSSD int8 tiles for Q8_0 weights (and for Q4_0, Q5_0 and
 * IQ4_NL, whose blocks are unpacked to their int8 values when a task packs
 * its rows: their dot is Q8_0's, core/quant.h), TDPBF16PS bf16 tiles for
 * BF16 weights; the super-block types, Q4_1 and Q5_1 go to quant_amx.c.
 * The rest of the "avx512+amx" table is avx512's.
 *
 * A tile product C[M][N] += A[M][K] · B[K][N] takes A as M rows of K
 * elements and B in "VNNI" order: K/4 rows (int8) or K/2 rows (bf16) of N
 * groups of 4 bytes, each group the consecutive K elements of one column.
 * Here A is the activations (M = 16 tokens, rows straight from the
 * prepared activation rows) and B the weights (N = 16 rows in that order:
 * Q8_0 packed once at load, x86_kernels.h, as it lies; Q4_0, Q5_0 and
 * IQ4_NL packed at load unpacked per task, inf_avx512_unpack_q32_group; the rest
 * per task by the avx512 gemm's packer),
 * so a row of C holds one token's 16 outputs,
 * contiguous in y.
 *
 * Q8_0: each block of 32 is one tile step (K = 32), so the tile holds the
 * exact integer dot of every (token, row) pair for that block; AVX-512 then
 * applies the scales as ref.c does, sum += (float)dot * (d_w * d_x), block
 * by block. The result is bit-identical to ref.c and to the avx512 gemm.
 * Two accumulator tiles alternate between blocks, so the tile unit can work
 * on later blocks while the vector units scale block b. The 32-block
 * weights packed at load (the default) cost no memory beyond the file's bytes
 * (the file's pages are given back, model.c) and save the per-task packing:
 * 5% of a 512-token product, most of a product of 8 to 32 tokens (batched
 * decode), which therefore runs on the tiles too.
 *
 * BF16: the tile accumulates the whole row in f32 (K = 32 per step, 2 x 2
 * tiles of 16 tokens x 16 rows per step); the products are exact and only
 * the order of the f32 sums differs from ref.c's double sum. The tile unit
 * treats bf16 subnormal inputs as zero and flushes subnormal sums.
 *
 * The tile state is configured at the start of every gemm call and
 * released at its end (each pool thread runs whole calls), so nothing is
 * kept between ops and a context switch between ops saves no tile data.
 * F16 and F32 weights, BF16 rows narrower than 16 columns (the padded
 * activation rows would not fit the op's scratch) and Q8_0 products of
 * fewer tokens than the threshold below run the avx512 gemm.
 */
#include "backend/x86/vec_avx512.h"
#include "backend/x86/x86_kernels.h"
#include "backend/x86/amx_tiles.h"

#include "core/common.h"
#include "core/dtype.h"
#include "core/quant.h"

#include <immintrin.h>
#include <string.h>

enum {
    QK = INF_Q8_0_BLOCK,
    TILE = 16,                          /* tokens (M) and weight rows (N) of a tile */
    Q8_QUANTS_BLOCK = 8 * 64, /* a block's B tile in a packed Q8_0 group (x86_kernels.h) */
    Q8_PREFETCH = 16,         /* blocks read ahead */
    BF16_STEP = 32,                     /* bf16 columns per tile step (K) */
};

/* Q8_0: tokens from which the tiles run; below, the avx512 gemm. Where
 * the tiles start to win (a Xeon with 2 MiB of L2, 3072 x 1024 weights
 * packed at load, 1 thread, in cache): 8 tokens 141 vs 150 us, 12 138 vs
 * 231, 16 144 vs 288; a tile of 16 tokens costs about what one of 8 does.
 * The two are bit-identical, so a row's result does not depend on the
 * side of the threshold its batch falls.
 * BF16: the tiles run every product, however few its tokens: they sum each
 * dot in one chain of f32 additions in their own order, which the avx512
 * gemm does not reproduce, and a prompt row's result must not depend on
 * how many rows share its product (ops.h, matmul: a prefix-cache hit
 * leaves a prompt chunk of any size). Tiles win from the gemm's 8 tokens
 * (2.2x at 8); below, a product of a few rows costs the weight packing
 * either way. */
enum { Q8_MIN_TOKENS = 8 };

/* The 32-blocks whose activations are Q8_0 blocks and whose dot is
 * sum += (float)isum * (d_w * d_x) (core/quant.h): Q8_0 and, unpacked to
 * their int8 values at packing, Q4_0, Q5_0 and IQ4_NL. Their avx512 gemms
 * are bit-identical to ref.c too, so the threshold changes no bit. */
static bool q8_kind(inf_dtype type) {
    return type == INF_DTYPE_Q8_0 || type == INF_DTYPE_Q4_0 || type == INF_DTYPE_Q5_0 || type == INF_DTYPE_IQ4_NL;
}

/* The AMX path handles this product; otherwise the avx512 gemm runs. */
static bool amx_handles(inf_dtype type, int64_t cols, int n) {
    return (q8_kind(type) && n >= Q8_MIN_TOKENS) || (type == INF_DTYPE_BF16 && cols >= 16);
}

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* ------------------------------------------------------------------ activations */

/* Q8_0 activations of n tokens (nb blocks each):
 *   q  [n][nb][32] int8, inf_quantize_row_q8_0's quants (A rows: token
 *      stride nb * 32 bytes)
 *   dx [nb][round16(n)] f32 block scales (its f16 value), tokens past n 0,
 *      so a tile's 16 scales of a block are contiguous.
 * BF16: [n][round32(cols)] bf16 rounded as ref.c, zero-padded to whole
 * tile steps. Both fit in n * cols * 4 bytes (BF16 needs cols >= 16). */
static size_t q8_scales_offset(int64_t nb, int n) { return (size_t)n * (size_t)nb * QK; }

void inf_amx_gemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf) {
    if (inf_amx_kquant_takes(type, n, false)) { /* the avx512 gemm's rows (Q8_K blocks) as they are */
        inf_avx512_gemm_prepare(type, x, cols, n, t0, t1, buf);
        return;
    }
    if (!amx_handles(type, cols, n)) {
        inf_avx512_gemm_prepare(type, x, cols, n, t0, t1, buf);
        return;
    }
    if (type == INF_DTYPE_BF16) {
        const int64_t width = round_up(cols, BF16_STEP);
        for (int t = t0; t < t1; t++) {
            uint16_t *row = (uint16_t *)buf + (size_t)t * (size_t)width;
            inf_avx512_act_prepare(type, x + (size_t)t * (size_t)cols, cols, row);
            for (int64_t i = cols; i < width; i++) row[i] = 0;
        }
        return;
    }
    const int64_t nb = cols / QK;
    const int n_pad = (int)round_up(n, TILE);
    int8_t *q = buf;
    float *dx = (float *)((char *)buf + q8_scales_offset(nb, n));
    for (int t = t0; t < t1; t++)
        for (int64_t b = 0; b < nb; b++) {
            inf_block_q8_0 blk;
            inf_avx512_quantize_row_q8_0(x + (size_t)t * (size_t)cols + b * QK, &blk, QK);
            memcpy(q + ((size_t)t * (size_t)nb + (size_t)b) * QK, blk.q, QK);
            dx[(size_t)b * (size_t)n_pad + (size_t)t] = inf_f16_to_f32(blk.d);
        }
    if (t1 == n)
        for (int t = n; t < n_pad; t++)
            for (int64_t b = 0; b < nb; b++) dx[(size_t)b * (size_t)n_pad + (size_t)t] = 0.0f;
}

/* ------------------------------------------------------------------ packed weights */

static __mmask16 tail_mask(int64_t n) { return n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1); }

/* Bytes of one group of 16 rows as inf_avx512_pack_group packs it for tiles. */
static size_t group_bytes(inf_dtype type, int64_t cols) {
    if (q8_kind(type)) return inf_x86_packed_group_bytes(INF_DTYPE_Q8_0, cols);
    return (size_t)round_up(cols, BF16_STEP) / 2 * TILE * 4; /* [pairs][16 rows][2] bf16 */
}

/* Enough for either path (the token count is not known here). */
size_t inf_amx_gemm_pack_bytes(inf_dtype type, int64_t cols) {
    const size_t other = inf_avx512_gemm_pack_bytes(type, cols);
    if (inf_amx_kquant_takes(type, INT32_MAX, false)) return INF_MAX(other, inf_amx_kquant_pack_bytes(type, cols));
    if (!amx_handles(type, cols, Q8_MIN_TOKENS)) return other;
    return INF_MAX(other, (INF_X86_GEMM_ROWS / TILE) * group_bytes(type, cols));
}

/* Rows [r, r + nr) of a Q4_0, Q5_0 or IQ4_NL weight as a Q8_0 tile group
 * (x86_kernels.h's layout): per block the signed values, [8 quads][16
 * rows][4], and the 16 d_w of each (f16, as in the file) before each pair
 * of blocks; missing rows are zeros. Two blocks per pass, as the avx512 packer
 * does Q8_0: a row's 64 values in one vector, 16 rows transposed in
 * registers. */
static void pack_q32_group(const inf_weight *w, int64_t r, int nr, char *dst) {
    const int64_t nb = w->cols / QK;
    const size_t wb = inf_dtype_block_bytes(w->type);
    const char *w0 = (const char *)w->data + (size_t)r * w->row_bytes;
    for (int64_t b = 0; b < nb; b += 2) {
        const bool pair = b + 1 < nb;
        __m512i v[TILE];
        uint16_t d[2][TILE];
        for (int i = 0; i < TILE; i++) {
            if (i >= nr) {
                v[i] = _mm512_setzero_si512();
                d[0][i] = d[1][i] = 0;
                continue;
            }
            const char *blk = w0 + (size_t)i * w->row_bytes + (size_t)b * wb;
            d[1][i] = 0;
            memcpy(&d[0][i], blk, 2); /* d leads each of these blocks */
            if (pair) memcpy(&d[1][i], blk + wb, 2);
            v[i] = inf_avx512_values_pair(w->type, blk, blk + wb, pair);
        }
        inf_avx512_transpose16(v);
        for (int half = 0; half < 1 + pair; half++) {
            char *g = dst + inf_x86_q32_quants_at(INF_DTYPE_Q8_0, b + half);
            for (int q = 0; q < QK / 4; q++) _mm512_store_si512(g + q * 64, v[half * 8 + q]);
            memcpy(dst + inf_x86_q32_scales_at(INF_DTYPE_Q8_0, b + half), d[half], sizeof d[half]);
        }
    }
}

/* ------------------------------------------------------------------ Q8_0 */

/* Tiles: accumulators C0, C1 (blocks alternate), activations A0, A1,
 * weights B0, B1 (amx_tiles.h, inf_amx_config_b32). */
#define Q8_C0 INF_AMX_B32_C0
#define Q8_C1 INF_AMX_B32_C1
#define Q8_A0 INF_AMX_B32_A0
#define Q8_A1 INF_AMX_B32_A1
#define Q8_B0 INF_AMX_B32_B0
#define Q8_B1 INF_AMX_B32_B1

#define INLINE static inline __attribute__((always_inline))

/* sum[t] += (float)C[t] * (d_w * d_x[t]) for 8 tokens of a tile, in ref.c's
 * operations (rows of C past the tile's tokens are stale, and their d_x
 * are 0: they only touch sums that are never stored). Two arrays of 8
 * rather than one of 16: GCC keeps arrays of up to 8 vectors in registers. */
INLINE void q8_scale_half(const int32_t *c, __m512 w, const float *dx, __m512 sum[8]) {
    _Pragma("GCC unroll 8")
    for (int t = 0; t < 8; t++) {
        const __m512 s = _mm512_mul_ps(w, _mm512_set1_ps(dx[t]));
        sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + t * TILE)), s));
    }
}

/* One tile of nt <= 16 tokens (a points at the first token's quants, row
 * stride a_stride) x 16 rows of one packed group, over all nb blocks;
 * dx: the tile's scales of block 0 (block b at dx + b * dx_stride). */
static void q8_tile(const char *group, const int8_t *a, size_t a_stride, const float *dx, size_t dx_stride,
                    int64_t nb, int nt, float *y, size_t y_stride, __mmask16 rows) {
    int32_t c[2][TILE * TILE] __attribute__((aligned(64)));
    memset(c, 0, sizeof c); /* rows past nt are read (and discarded) but never stored by the tile */
    __m512 lo[8], hi[8]; /* the sums of tokens 0-7 and 8-15 */
    _Pragma("GCC unroll 8")
    for (int t = 0; t < 8; t++) lo[t] = hi[t] = _mm512_setzero_ps();
    /* B tiles Q8_PREFETCH blocks ahead into L2, and their scales: weights
     * packed at load stream from memory in a batched decode */
#define Q8_ISSUE(C, A, B, blk)                                                  \
    do {                                                                        \
        for (int line = 0; line < 8; line++)                                    \
            _mm_prefetch(group + inf_x86_q32_quants_at(INF_DTYPE_Q8_0, (blk) + Q8_PREFETCH) + line * 64, _MM_HINT_T1); \
        _mm_prefetch(group + inf_x86_q32_scales_at(INF_DTYPE_Q8_0, (blk) + Q8_PREFETCH), _MM_HINT_T1); \
        _tile_loadd(A, a + (blk) * QK, (long)a_stride);                         \
        _tile_loadd(B, group + inf_x86_q32_quants_at(INF_DTYPE_Q8_0, blk), 64); \
        _tile_zero(C);                                                          \
        _tile_dpbssd(C, A, B);                                                  \
    } while (0)
#define Q8_SCALE(buf, blk)                                                                 \
    do {                                                                                   \
        const __m512 w = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(group + inf_x86_q32_scales_at(INF_DTYPE_Q8_0, blk)))); \
        q8_scale_half(buf, w, dx + (blk) * dx_stride, lo);                                 \
        q8_scale_half(buf + 8 * TILE, w, dx + (blk) * dx_stride + 8, hi);                  \
    } while (0)
    /* Step s issues block s on the tile unit, stores block s - 1 (issued a
     * step earlier) and scales block s - 2 (stored a step earlier), so that
     * no instruction waits on the one just before it. (On a Sapphire Rapids
     * core the tile work and the scaling still hardly overlap: 48 + 34 us
     * apart, 80 us together, for 64 x 1024 weights x 512 tokens; issuing and
     * scaling each block in turn measured 84.) Block j lives in tile
     * C(j % 2) and buffer c[j % 2]; steps go in pairs so that tile numbers
     * are constants. */
    for (int64_t s = 0; s < nb + 2; s += 2) {
        if (s < nb) Q8_ISSUE(Q8_C0, Q8_A0, Q8_B0, s);
        if (s >= 1 && s - 1 < nb) _tile_stored(Q8_C1, c[1], 64);
        if (s >= 2) Q8_SCALE(c[0], s - 2);
        if (s + 1 < nb) Q8_ISSUE(Q8_C1, Q8_A1, Q8_B1, s + 1);
        if (s < nb) _tile_stored(Q8_C0, c[0], 64);
        if (s >= 1 && s - 1 < nb) Q8_SCALE(c[1], s - 1);
    }
#undef Q8_SCALE
#undef Q8_ISSUE
    inf_avx512_store_tile_sums(y, y_stride, rows, nt, lo, hi);
}

static void q8_gemm(const inf_weight *w, const inf_act *act, int64_t r0, int64_t r1, float *y, size_t y_stride,
                    const char *pack) {
    const int64_t nb = w->cols / QK;
    const size_t gbytes = group_bytes(w->type, w->cols);
    const int n = act->n, n_pad = (int)round_up(n, TILE);
    const int8_t *q = act->data;
    const float *dx = (const float *)((const char *)act->data + q8_scales_offset(nb, n));
    const int n_groups = (int)((r1 - r0 + TILE - 1) / TILE);
    int configured = 0;
    for (int t0 = 0; t0 < n; t0 += TILE) {
        const int nt = INF_MIN(TILE, n - t0);
        if (nt != configured) inf_amx_config_b32(configured = nt);
        for (int g = 0; g < n_groups; g++) {
            const int64_t r = r0 + (int64_t)g * TILE;
            q8_tile(pack + g * gbytes, q + (size_t)t0 * (size_t)nb * QK, (size_t)nb * QK, dx + t0, (size_t)n_pad, nb, nt,
                    y + (size_t)t0 * y_stride + (size_t)r, y_stride, tail_mask(r1 - r));
        }
    }
}

/* ------------------------------------------------------------------ BF16 */

/* Tiles: C[token tile][row group] accumulators, activations A0, A1 (two
 * token tiles), weights B0, B1 (two row groups). */
#define BF_C00 0
#define BF_C01 1
#define BF_C10 2
#define BF_C11 3
#define BF_A0 4
#define BF_A1 5
#define BF_B0 6
#define BF_B1 7

/* nt0 tokens in the first tile, nt1 (0: none) in the second. */
static void bf16_config(int nt0, int nt1) {
    inf_amx_config c = {.palette = 1};
    inf_amx_config_set(&c, BF_C00, nt0, 64);
    inf_amx_config_set(&c, BF_C01, nt0, 64);
    inf_amx_config_set(&c, BF_A0, nt0, 64);
    if (nt1) {
        inf_amx_config_set(&c, BF_C10, nt1, 64);
        inf_amx_config_set(&c, BF_C11, nt1, 64);
        inf_amx_config_set(&c, BF_A1, nt1, 64);
    }
    inf_amx_config_set(&c, BF_B0, TILE, 64);
    inf_amx_config_set(&c, BF_B1, TILE, 64);
    _tile_loadconfig(&c);
}

/* Stores accumulator rows into y[t][r ..]: straight when the group is
 * whole, else through a buffer, masked to the group's rows. */
#define BF16_STORE(C, nt, yy, rows)                                                                  \
    do {                                                                                             \
        if ((rows) == 0xffff) {                                                                      \
            _tile_stored(C, yy, (long)(y_stride * sizeof(float)));                                   \
        } else {                                                                                     \
            _tile_stored(C, buf, 64);                                                                \
            for (int t = 0; t < (nt); t++)                                                           \
                _mm512_mask_storeu_ps((yy) + (size_t)t * y_stride, rows, _mm512_loadu_ps(buf + t * TILE)); \
        }                                                                                            \
    } while (0)

/* Token tiles at t0 (nt0 tokens) and t0 + 16 (nt1, 0: none) x the row
 * groups g, g + 1 (rows masks m0, m1; m1 == 0: no second group). */
static void bf16_block(const char *pack, size_t gbytes, const uint16_t *a, size_t a_stride, int64_t steps, int nt0,
                       int nt1, int g, __mmask16 m0, __mmask16 m1, float *y, size_t y_stride) {
    float buf[TILE * TILE] __attribute__((aligned(64)));
    const char *b0 = pack + (size_t)g * gbytes, *b1 = b0 + gbytes;
    const uint16_t *a1 = a + TILE * a_stride;
    const long as = (long)(a_stride * 2);
    _tile_zero(BF_C00);
    _tile_zero(BF_C01);
    if (nt1) {
        _tile_zero(BF_C10);
        _tile_zero(BF_C11);
    }
    for (int64_t s = 0; s < steps; s++) {
        _tile_loadd(BF_A0, a + s * BF16_STEP, as);
        _tile_loadd(BF_B0, b0 + s * 1024, 64);
        _tile_loadd(BF_B1, b1 + s * 1024, 64); /* a missing second group is packed as zeros */
        _tile_dpbf16ps(BF_C00, BF_A0, BF_B0);
        _tile_dpbf16ps(BF_C01, BF_A0, BF_B1);
        if (nt1) {
            _tile_loadd(BF_A1, a1 + s * BF16_STEP, as);
            _tile_dpbf16ps(BF_C10, BF_A1, BF_B0);
            _tile_dpbf16ps(BF_C11, BF_A1, BF_B1);
        }
    }
    float *y1 = y + (size_t)TILE * y_stride;
    BF16_STORE(BF_C00, nt0, y, m0);
    if (m1) BF16_STORE(BF_C01, nt0, y + TILE, m1);
    if (nt1) {
        BF16_STORE(BF_C10, nt1, y1, m0);
        if (m1) BF16_STORE(BF_C11, nt1, y1 + TILE, m1);
    }
}
#undef BF16_STORE

static void bf16_gemm(const inf_weight *w, const inf_act *act, int64_t r0, int64_t r1, float *y, size_t y_stride,
                      const char *pack) {
    const int64_t width = round_up(w->cols, BF16_STEP), steps = width / BF16_STEP;
    const size_t gbytes = group_bytes(w->type, w->cols);
    const int n = act->n;
    const int n_groups = (int)((r1 - r0 + TILE - 1) / TILE);
    int cfg0 = 0, cfg1 = -1;
    for (int t0 = 0; t0 < n; t0 += 2 * TILE) {
        const int nt0 = INF_MIN(TILE, n - t0), nt1 = INF_MAX(0, INF_MIN(TILE, n - t0 - TILE));
        if (nt0 != cfg0 || nt1 != cfg1) bf16_config(cfg0 = nt0, cfg1 = nt1);
        const uint16_t *a = (const uint16_t *)act->data + (size_t)t0 * (size_t)width;
        for (int g = 0; g < n_groups; g += 2) {
            const int64_t r = r0 + (int64_t)g * TILE;
            const __mmask16 m0 = tail_mask(r1 - r), m1 = r + TILE < r1 ? tail_mask(r1 - r - TILE) : 0;
            bf16_block(pack, gbytes, a, (size_t)width, steps, nt0, nt1, g, m0, m1, y + (size_t)t0 * y_stride + (size_t)r,
                       y_stride);
        }
    }
}

/* ------------------------------------------------------------------ entry */

void inf_amx_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride, void *pack) {
    if (inf_amx_kquant_takes(w->type, a->n, w->packed_format == INF_X86_PACKED_GROUPS)) {
        inf_amx_kquant_gemm(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    if (!amx_handles(w->type, w->cols, a->n)) {
        inf_avx512_gemm(w, a, r0, r1, y, y_stride, pack);
        return;
    }
    /* an even number of groups: bf16 multiplies groups in pairs (the pad group is zeros) */
    const int n_groups = (int)((r1 - r0 + TILE - 1) / TILE);
    const size_t gbytes = group_bytes(w->type, w->cols);
    if (w->packed_format == INF_X86_PACKED_GROUPS && r1 - r0 > INF_X86_GEMM_ROWS) { /* a panel at a time */
        for (int64_t r = r0; r < r1; r += INF_X86_GEMM_ROWS)
            inf_amx_gemm(w, a, r, INF_MIN(r1, r + INF_X86_GEMM_ROWS), y, y_stride, pack);
        return;
    }
    if (w->packed_format == INF_X86_PACKED_GROUPS) { /* packed at load: Q8_0 as it is, the others unpacked to int8 */
        const size_t pbytes = inf_x86_packed_group_bytes(w->type, w->cols);
        const char *src = (const char *)w->packed + (size_t)(r0 / TILE) * pbytes;
        const bool unpack = w->type != INF_DTYPE_Q8_0;
        for (int g = 0; g < n_groups && unpack; g++)
            inf_avx512_unpack_q32_group(w->type, src + g * pbytes, w->cols / QK, (char *)pack + g * gbytes);
        q8_gemm(w, a, r0, r1, y, y_stride, unpack ? (const char *)pack : src);
        _tile_release();
        return;
    }
    for (int g = 0; g < n_groups; g++) {
        const int64_t r = r0 + (int64_t)g * TILE;
        const int nr = (int)INF_MIN(TILE, r1 - r);
        if (w->type == INF_DTYPE_Q8_0 || w->type == INF_DTYPE_BF16)
            inf_avx512_pack_group(w, r, nr, (char *)pack + g * gbytes, true);
        else
            pack_q32_group(w, r, nr, (char *)pack + g * gbytes);
    }
    if (w->type == INF_DTYPE_BF16 && n_groups % 2) memset((char *)pack + n_groups * gbytes, 0, gbytes);
    if (q8_kind(w->type)) q8_gemm(w, a, r0, r1, y, y_stride, pack);
    else bf16_gemm(w, a, r0, r1, y, y_stride, pack);
    _tile_release();
}

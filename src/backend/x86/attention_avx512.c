/*
 * attention_avx512.c — fused decode attention and flash prefill attention
 * with AVX-512, one KV head (all the query heads of its group) per call.
 *
 * Both walk the cached keys in tiles of 64 at absolute positions 0, 64, ...
 * and keep, per query row, a running max m, sum l and output o; a tile
 * that raises m rescales l and o by exp(m_old - m_new) once. This is ref.c's
 * prefill algorithm; ref's decode rescales per key instead (same result up
 * to rounding). Each K/V row is read from memory once per call for all the
 * query heads of the group.
 *
 * Decode (one query token): lanes run along head_dim; the query heads are
 * taken up to 8 at a time, and each key row, read once, is dotted with all
 * of them: the 16 partial dot vectors of 16 / heads keys are summed across
 * lanes at once (hsum16); each value row, read once, updates every head.
 * Prefill: lanes run along query rows (row = token x head of the group), so
 * a score tile is S^T[key][row] = Σ_d K[key][d] · Q^T[d][row] — all
 * vertical FMAs with the key element broadcast — the softmax max and sum
 * are lane-wise, and O^T[d][row] += Σ_key P^T[key][row] · V[key][d] the
 * same way. Rows are processed 64 at a time (four vectors).
 *
 * The causal mask is a loop bound (per row: a lane mask on the tiles that
 * cross its last position). An f16 cache is widened as it is loaded
 * (decode) or tile by tile (prefill).
 *
 * K and V rows are found through the views' block tables: each tile's row
 * addresses are gathered first (inf_kv_rows), so a tile may straddle
 * blocks, and the arithmetic (tiles at absolute positions, keys in order)
 * is the same for every block size and table, and for every split of a
 * sequence's query rows into calls. Decode prefetches the next tile's rows
 * by their addresses, wherever its blocks lie.
 *
 * Q8_0 cache (ref.c's numerics: the query quantized to Q8_0, integer block
 * dots, V dequantized to f32): decode dots each key row with the query's
 * blocks two at a time by VNNI (vpdpbusd wants unsigned x signed bytes, so
 * keys enter as k + 128 and the accumulator starts at -128 * Σ q of each
 * lane's four quants, as the Q8_0 matvec does), scales the lane partials by
 * d_k * d_q and sums them in f32; values are widened to d * q as they are
 * loaded. Prefill scores a key tile against 64 query rows by VNNI with
 * lanes along the rows (each key's four bytes broadcast against the rows'
 * four quants) and sums the blocks as ref.c does, so its scores are ref's
 * bit for bit; it widens V tiles to f32.
 */
#include "backend/x86/vec_avx512.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"

#include <math.h>
#include <string.h>

enum {
    TILE = 64,      /* keys per tile */
    SHORT_AHEAD = INF_X86_DECODE_SHORT_AHEAD, /* K rows in flight, a one-tile decode */
    ROW_CHUNK = 64, /* prefill query rows per pass: RV vectors */
    RV = ROW_CHUNK / 16,
};

static __mmask16 tail_mask(int n) { return (__mmask16)((1u << n) - 1); }

static int round4(int n) { return (n + 3) & ~3; }

#define INLINE static inline __attribute__((always_inline))

/* 16 elements of a cached row of type T from element i (masked), widened
 * to f32. Q8_0 rows have head_dim a multiple of 32: the mask is all or
 * nothing, and a Q8_0 element is d * q in f32, as ref.c forms it. */
INLINE __m512 row_load(const char *row, int i, __mmask16 m, const inf_kv_type T) {
    if (T == INF_KV_F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + i));
    if (T == INF_KV_Q8_0) {
        if (!m) return _mm512_setzero_ps();
        const inf_block_q8_0 *b = (const inf_block_q8_0 *)row + i / INF_Q8_0_BLOCK;
        const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b->q + i % INF_Q8_0_BLOCK))));
        return _mm512_mul_ps(q, _mm512_set1_ps(_cvtsh_ss(b->d)));
    }
    return _mm512_maskz_loadu_ps(m, (const float *)row + i);
}

/* The n cached rows rows[] of an f16 or Q8_0 cache widened to f32 into
 * dst[n][hd]; rows[j] then points at dst[j]. */
static void widen_tile(const inf_kv_view *c, const void **rows, int n, int hd, float *dst) {
    for (int j = 0; j < n; j++) {
        const char *row = rows[j];
        rows[j] = dst + (size_t)j * hd;
        for (int i = 0; i < hd; i += 16) {
            const __mmask16 m = hd - i >= 16 ? 0xffff : tail_mask(hd - i);
            const __m512 x = c->type == INF_KV_F16 ? row_load(row, i, m, INF_KV_F16)
                             : c->type == INF_KV_Q8_0 ? row_load(row, i, m, INF_KV_Q8_0)
                                                      : row_load(row, i, m, INF_KV_F32);
            _mm512_mask_storeu_ps(dst + (size_t)j * hd + i, m, x);
        }
    }
}

/* ------------------------------------------------------------------ decode */

enum { DECODE_HEADS = 8 }; /* query heads per pass over the cache */

/* One query head's Q8_0 blocks 2c and 2c + 1 as the VNNI dot takes them
 * (lanes 0-7 block 2c, 8-15 block 2c + 1; a missing odd last block is
 * zeros): the quants, -128 * Σ of each lane's four quants (the keys enter
 * vpdpbusd as unsigned k + 128), and the block scale per lane. */
typedef struct q8_query_pair {
    int8_t q[2 * INF_Q8_0_BLOCK];
    int32_t negc[16];
    float d[16];
} q8_query_pair;

/* q[hd] quantized as inf_quantize_row_q8_0 (by its AVX-512 twin, bit for
 * bit; the scalar one was a quarter of a layer's time at depth 48) into
 * pairs[(hd / 32 + 1) / 2]. */
static void q8_query_prepare(const float *q, int hd, q8_query_pair *pairs) {
    inf_block_q8_0 blocks[INF_MAX_HEAD_DIM / INF_Q8_0_BLOCK];
    const int nb = hd / INF_Q8_0_BLOCK;
    inf_avx512_quantize_row_q8_0(q, blocks, hd);
    for (int c = 0; c < (nb + 1) / 2; c++) {
        q8_query_pair *pp = &pairs[c];
        memset(pp, 0, sizeof *pp);
        for (int half = 0; half < 2 && 2 * c + half < nb; half++) {
            const inf_block_q8_0 *b = &blocks[2 * c + half];
            memcpy(pp->q + half * INF_Q8_0_BLOCK, b->q, INF_Q8_0_BLOCK);
            for (int lane = 0; lane < 8; lane++) {
                const int8_t *x = b->q + 4 * lane;
                pp->negc[8 * half + lane] = -128 * (x[0] + x[1] + x[2] + x[3]);
                pp->d[8 * half + lane] = _cvtsh_ss(b->d);
            }
        }
    }
}

/* Key blocks 2c and 2c + 1 of a Q8_0 row as unsigned bytes k + 128 (a
 * missing odd last block reads as zeros, which meet zero query quants). */
INLINE __m512i q8_key_pair(const char *row, int c, bool single) {
    const inf_block_q8_0 *b = (const inf_block_q8_0 *)row + 2 * c;
    const __m256i lo = _mm256_loadu_si256((const __m256i *)b[0].q);
    const __m256i hi = single ? _mm256_setzero_si256() : _mm256_loadu_si256((const __m256i *)b[1].q);
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi8((char)0x80));
}

/* The scales of key blocks 2c and 2c + 1, lanes 0-7 and 8-15. */
INLINE __m512 q8_key_scales(const char *row, int c, bool single) {
    const inf_block_q8_0 *b = (const inf_block_q8_0 *)row + 2 * c;
    const __m128i lo = _mm_set1_epi16((short)b[0].d), hi = _mm_set1_epi16(single ? 0 : (short)b[1].d);
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

/* acc += (Σ k q per lane) * d_k * d_q: the integer dot is exact. */
INLINE __m512 q8_dot_pair(__m512i ku, __m512 dk, const q8_query_pair *qp, __m512 acc) {
    const __m512i d = _mm512_dpbusd_epi32(_mm512_loadu_si512(qp->negc), ku, _mm512_loadu_si512(qp->q));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(dk, _mm512_loadu_ps(qp->d)), acc);
}

/* Compile-time selection among named registers: SEL8(i, x) is x<i> for a
 * constant i. The decode kernel keeps its 16 accumulators, 8 query slices
 * and 16 key rows in named variables (an array of vectors carried across
 * a loop is kept in memory by GCC, one store per FMA). */
#define SEL8(i, x) ((i) == 0 ? x##0 : (i) == 1 ? x##1 : (i) == 2 ? x##2 : (i) == 3 ? x##3 : \
                    (i) == 4 ? x##4 : (i) == 5 ? x##5 : (i) == 6 ? x##6 : x##7)
#define SEL16(i, x) ((i) < 8 ? SEL8(i, x) : (i) == 8 ? x##8 : (i) == 9 ? x##9 : (i) == 10 ? x##10 : \
                     (i) == 11 ? x##11 : (i) == 12 ? x##12 : (i) == 13 ? x##13 : (i) == 14 ? x##14 : x##15)
#define REPEAT8(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define REPEAT16(M) REPEAT8(M) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)

/* Cached rows read ahead of the one in use by software prefetch: one tile
 * (row j of the next tile while row j of this one is read), and the first
 * tile all at once before it is read. With the hardware prefetchers alone
 * one thread streamed the cache from DRAM at ~10 GB/s (0.79 ms per layer
 * at depth 2044 for Qwen3-0.6B's f16 K and V) and two threads at 12-17;
 * with the tile ahead, 19 and 29 GB/s (0.43 and 0.29 ms), the machine's
 * read bandwidth at the time. A paged cache needs it more: the hardware
 * streams stop at every block. The first tile's rows, read one after
 * another, each paid a full memory latency: at depth 64 (AMD Zen 5, ~360
 * ns) a layer took 27 µs on 2 threads and 57 on 1; with the whole tile
 * prefetched first, 15 and 23 (bench/attn_bench.c). On AMD (nta) the rows
 * come non-temporal, as the weights do (vec_avx512.h): attn_bench on the
 * Zen 5 VM, 2 threads, f16, alternating, two rounds each, us a layer
 * contiguous / paged B=64: depth 300 35.7, 34.6 / 46.2, 44.7 into L2 ->
 * 33.3, 31.0 / 40.7, 36.0 NTA; depth 1000 102.5, 104.6 / 136.8, 132.5 ->
 * 95.6, 92.6 / 119.3, 117.2; depth 4000 405, 426 / 535, 544 -> 394, 384 /
 * 502, 483 (T0 in between, T2 worse). In the model (Q4_0, one process,
 * token by token ABBA, 4 x 64 tokens, a busy spell), into L2 instead took
 * +0.9% / -0.3% (median / mean) after 17, +1.5% / +1.0% and +3.5% / +3.4%
 * after 1000, -0.1% / +0.1% and +3.2% / +2.0% after 2044. Elsewhere into
 * L2 (not measured there). */
INLINE void prefetch_row(const void *row, size_t bytes, bool nta) {
    const uintptr_t end = (uintptr_t)row + bytes;
    for (uintptr_t line = (uintptr_t)row & ~(uintptr_t)63; line < end; line += 64) {
        if (nta) _mm_prefetch((const char *)line, _MM_HINT_NTA);
        else _mm_prefetch((const char *)line, _MM_HINT_T1);
    }
}

/* The row addresses of two consecutive key tiles, [tile parity][key]: the
 * one in use, and the next one, being prefetched. */
typedef struct tile_rows {
    const void *k[2][TILE], *v[2][TILE];
} tile_rows;

/* Decode for query heads q[G][hd] (G a power of two <= 8; rows past the
 * real head count are duplicates whose results are dropped; for a Q8_0
 * cache, T == INF_KV_Q8_0, their pairs qq[G][n_pairs] are read instead)
 * against positions [0, n_keys) of KV head kvh of caches k and v of type T
 * (tr: room for the tiles' row addresses). o[G][hd]
 * accumulates unnormalized outputs, m and l the running max and sum.
 * Scores: KB = 16 / G keys at a time, all G heads per key row read, the 16
 * partial dots (accumulator p: key p / G, head p % G) summed across lanes
 * at once. Values: each row read once per slice of W vectors of head_dim,
 * for all heads (accumulator p: head p / W, vector p % W). */
INLINE void decode_heads(const float *q, const q8_query_pair *qq, const inf_kv_view *k, const inf_kv_view *v,
                         int kvh, int n_keys, int hd, float scale, const int G, const inf_kv_type T, bool nta,
                         tile_rows *tr, float *s, float *o, float *m, float *l) {
    const int n_pairs = (hd / INF_Q8_0_BLOCK + 1) / 2; /* Q8_0: qq[G][n_pairs] */
    const bool odd_blocks = (hd / INF_Q8_0_BLOCK) % 2 != 0;
    const int KB = 16 / G;             /* keys per score block */
    const int W = G <= 2 ? 8 : 16 / G; /* vectors of head_dim per value slice */
    const size_t row_bytes = inf_kv_type_bytes(T, (size_t)hd);
    const __m512 zero = _mm512_setzero_ps();
    const __m512 vscale = _mm512_set1_ps(scale);
    __m512i head_lanes[8]; /* head g's keys 0..KB-1 in a score block's dots: lanes jj * G + g */
    for (int g = 0; g < G; g++)
        head_lanes[g] = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                            _mm512_set1_epi32(G)), _mm512_set1_epi32(g));
    inf_kv_rows(k, kvh, 0, INF_MIN(TILE, n_keys), tr->k[0]);
    inf_kv_rows(v, kvh, 0, INF_MIN(TILE, n_keys), tr->v[0]);
    /* The first tile at once, the later ones a tile ahead, as they are
     * read. A context of one tile: only its first SHORT_AHEAD keys at once
     * (cpu.c has asked for them already), then each key SHORT_AHEAD rows
     * ahead and each value alongside its key as the scores are computed,
     * so that the arithmetic runs while the rows arrive instead of after
     * them. Zen 5 VM, 0.6B decode at depths 17-80 with an f16 cache, one
     * process, token by token against the whole tile at once: attention
     * 9-11% less time, the token +0.8-1.4% (Q4_K_M and Q4_0); 8 rows ahead
     * did as 16; with a Q8_0 cache the token +0.4-0.7% (Q4_K_M). Past one
     * tile the same scheme lost (attention +1.5-6 µs a layer at depths 200
     * and 1000, the token level to -0.7%), so longer contexts keep the
     * burst. */
    const bool short_ctx = n_keys <= TILE;
    for (int j = 0; j < INF_MIN(short_ctx ? SHORT_AHEAD : TILE, n_keys); j++) {
        prefetch_row(tr->k[0][j], row_bytes, nta);
        if (!short_ctx) prefetch_row(tr->v[0][j], row_bytes, nta);
    }
    for (int j0 = 0, cur = 0; j0 < n_keys; j0 += TILE, cur ^= 1) {
        const int nj = INF_MIN(TILE, n_keys - j0);
        const void *const *krows = tr->k[cur], *const *vrows = tr->v[cur];
        const void **knext = tr->k[cur ^ 1], **vnext = tr->v[cur ^ 1];
        const int n_next = INF_MAX(0, INF_MIN(TILE, n_keys - j0 - TILE));
        inf_kv_rows(k, kvh, j0 + TILE, n_next, knext);
        inf_kv_rows(v, kvh, j0 + TILE, n_next, vnext);
        for (int jb = 0; jb < nj; jb += KB) {
            const int last = nj - jb - 1; /* rows past the tile repeat its last one */
#define ROW_PTR(jj) const char *r##jj = krows[jb + INF_MIN(jj, last)];
            REPEAT16(ROW_PTR)
#undef ROW_PTR
            for (int jj = 0; jj < KB && jb + jj < n_next; jj++) prefetch_row(knext[jb + jj], row_bytes, nta);
            for (int jj = jb + SHORT_AHEAD; short_ctx && jj < INF_MIN(nj, jb + SHORT_AHEAD + KB); jj++)
                prefetch_row(krows[jj], row_bytes, nta);
            for (int jj = jb; short_ctx && jj < INF_MIN(nj, jb + KB); jj++) prefetch_row(vrows[jj], row_bytes, nta);
#define ACC_ZERO(p) __m512 a##p = zero;
            REPEAT16(ACC_ZERO)
#undef ACC_ZERO
            for (int c = 0; T == INF_KV_Q8_0 && c < n_pairs; c++) {
                const bool single = odd_blocks && c == n_pairs - 1;
#define K8_LOAD(jj) const __m512i k##jj = q8_key_pair(r##jj, c, single); \
                    const __m512 dk##jj = q8_key_scales(r##jj, c, single);
                REPEAT16(K8_LOAD)
#undef K8_LOAD
#define K8_DOT(p) a##p = q8_dot_pair(SEL16((p) / G, k), SEL16((p) / G, dk), &qq[(p) % G * n_pairs + c], a##p);
                REPEAT16(K8_DOT)
#undef K8_DOT
            }
            for (int i = 0; T != INF_KV_Q8_0 && i < hd; i += 16) {
                const __mmask16 mk = hd - i >= 16 ? 0xffff : tail_mask(hd - i);
#define Q_LOAD(g) const __m512 q##g = (g) < G ? _mm512_maskz_loadu_ps(mk, q + (size_t)(g) * hd + i) : zero;
                REPEAT8(Q_LOAD)
#undef Q_LOAD
#define K_LOAD(jj) const __m512 k##jj = (jj) < KB ? row_load(r##jj, i, mk, T) : zero;
                REPEAT16(K_LOAD)
#undef K_LOAD
#define K_FMA(p) a##p = _mm512_fmadd_ps(SEL8((p) % G, q), SEL16((p) / G, k), a##p);
                REPEAT16(K_FMA)
#undef K_FMA
            }
            /* lane p the scaled dot of accumulator p; head g's keys into
             * its scores by a permute (the lanes one by one through memory
             * cost as much as the reduction) */
            const __m512 dots = _mm512_mul_ps(
                hsum16_avx512(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15), vscale);
            const __mmask16 keys = tail_mask(INF_MIN(KB, last + 1));
            for (int g = 0; g < G; g++)
                _mm512_mask_storeu_ps(s + g * TILE + jb, keys, _mm512_permutexvar_ps(head_lanes[g], dots));
        }
        /* online softmax, head by head */
        for (int g = 0; g < G; g++) {
            float *sg = s + g * TILE, *og = o + (size_t)g * hd;
            __m512 vmax = _mm512_set1_ps(-INFINITY);
            for (int j = 0; j < nj; j += 16) {
                const __mmask16 mk = nj - j >= 16 ? 0xffff : tail_mask(nj - j);
                vmax = _mm512_mask_max_ps(vmax, mk, vmax, _mm512_maskz_loadu_ps(mk, sg + j));
            }
            const float tile_max = _mm512_reduce_max_ps(vmax);
            if (tile_max > m[g]) {
                const float corr = expf(m[g] - tile_max);
                l[g] *= corr;
                const __m512 vc = _mm512_set1_ps(corr);
                for (int i = 0; i < hd; i += 16) {
                    const __mmask16 mk = hd - i >= 16 ? 0xffff : tail_mask(hd - i);
                    _mm512_mask_storeu_ps(og + i, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, og + i), vc));
                }
                m[g] = tile_max;
            }
            const __m512 vm = _mm512_set1_ps(m[g]);
            __m512 lsum = zero;
            for (int j = 0; j < nj; j += 16) {
                const __mmask16 mk = nj - j >= 16 ? 0xffff : tail_mask(nj - j);
                const __m512 pv = _mm512_maskz_mov_ps(mk, vexp_avx512(_mm512_sub_ps(_mm512_loadu_ps(sg + j), vm)));
                _mm512_storeu_ps(sg + j, pv);
                lsum = _mm512_add_ps(lsum, pv);
            }
            l[g] += _mm512_reduce_add_ps(lsum);
        }
        /* o[g] += Σ_j p[g][j] V[j], a slice of W vectors of head_dim at a time */
        for (int i0 = 0; i0 < hd; i0 += 16 * W) {
#define V_MASK(w) const __mmask16 m##w = i0 + 16 * (w) >= hd ? 0 : hd - i0 - 16 * (w) >= 16 ? 0xffff \
                                         : tail_mask(hd - i0 - 16 * (w));
            REPEAT8(V_MASK)
#undef V_MASK
#define O_LOAD(p) __m512 c##p = (p) < G * W ? _mm512_maskz_loadu_ps(SEL8((p) % W, m), \
                                              o + (size_t)((p) / W) * hd + i0 + 16 * ((p) % W)) : zero;
            REPEAT16(O_LOAD)
#undef O_LOAD
            for (int j = 0; j < nj; j++) {
                const char *row = vrows[j];
                if (i0 == 0 && j < n_next) prefetch_row(vnext[j], row_bytes, nta);
#define P_BCAST(g) const __m512 pb##g = (g) < G ? _mm512_set1_ps(s[(g) * TILE + j]) : zero;
                REPEAT8(P_BCAST)
#undef P_BCAST
                if (T == INF_KV_Q8_0) {
                    /* the weight of head g times the scale of block bb: one
                     * multiply per head and block, then the quants as f32 */
                    const inf_block_q8_0 *vblk = (const inf_block_q8_0 *)row + i0 / INF_Q8_0_BLOCK;
                    const int n_blk = INF_MIN(W / 2, (hd - i0) / INF_Q8_0_BLOCK);
#define D_LOAD(bb) const __m512 dv##bb = (bb) < W / 2 && (bb) < n_blk ? _mm512_set1_ps(_cvtsh_ss(vblk[bb].d)) : zero;
                    REPEAT8(D_LOAD)
#undef D_LOAD
#define PD(x) const __m512 pd##x = (x) < G * (W / 2) ? _mm512_mul_ps(SEL8((x) / (W / 2), pb), SEL8((x) % (W / 2), dv)) : zero;
                    REPEAT8(PD)
#undef PD
#define VQ_LOAD(w) const __m512 v##w = (w) < W && m##w ? _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128( \
                       (const __m128i *)(vblk[(w) / 2].q + 16 * ((w) % 2))))) : zero;
                    REPEAT8(VQ_LOAD)
#undef VQ_LOAD
#define VQ_FMA(p) if ((p) < G * W) c##p = _mm512_fmadd_ps(SEL8((p) / W * (W / 2) + (p) % W / 2, pd), SEL8((p) % W, v), c##p);
                    REPEAT16(VQ_FMA)
#undef VQ_FMA
                    continue;
                }
#define V_LOAD(w) const __m512 v##w = (w) < W ? row_load(row, i0 + 16 * (w), m##w, T) : zero;
                REPEAT8(V_LOAD)
#undef V_LOAD
#define V_FMA(p) if ((p) < G * W) c##p = _mm512_fmadd_ps(SEL8((p) / W, pb), SEL8((p) % W, v), c##p);
                REPEAT16(V_FMA)
#undef V_FMA
            }
#define O_STORE(p) if ((p) < G * W) _mm512_mask_storeu_ps(o + (size_t)((p) / W) * hd + i0 + 16 * ((p) % W), \
                                                      SEL8((p) % W, m), c##p);
            REPEAT16(O_STORE)
#undef O_STORE
        }
    }
}

size_t inf_avx512_attn_tmp_bytes(const inf_attn_shape *sh) {
    const size_t hd = (size_t)sh->head_dim;
    /* scores [8][TILE], o [8][hd], m and l [8], duplicated q heads [8][hd],
     * their Q8_0 pairs [8][n_pairs] (Q8_0 cache) */
    const size_t n_pairs = (hd / INF_Q8_0_BLOCK + 1) / 2;
    const size_t decode = DECODE_HEADS * (TILE + 2 * hd + 2 + n_pairs * sizeof(q8_query_pair) / sizeof(float));
    /* Q^T and O^T [hd][64], S^T [64][64], K and V tiles [64][hd], m, l, limits */
    const size_t prefill = (hd + (size_t)round4((int)hd)) * ROW_CHUNK + TILE * ROW_CHUNK + 2 * TILE * hd + 3 * ROW_CHUNK;
    return (decode > prefill ? decode : prefill) * sizeof(float) + 64;
}

void inf_avx512_attn_decode(const inf_attn_shape *sh, const float *q, const inf_kv_view *k,
                            const inf_kv_view *v, float *out, int kvh, void *tmp) {
    const int group = sh->n_head / sh->n_head_kv, hd = sh->head_dim, n_keys = sh->pos0 + 1;
    const inf_kv_type type = k->type; /* V has the same (cpu.c) */
    const int n_pairs = (hd / INF_Q8_0_BLOCK + 1) / 2;
    const bool nta = inf_x86_cpu_is_amd(); /* how rows are read ahead (prefetch_row) */
    tile_rows tr;
    float *s = tmp;                             /* [8][TILE] scores, then weights */
    float *o = s + DECODE_HEADS * TILE;         /* [8][hd] */
    float *qs = o + (size_t)DECODE_HEADS * hd;  /* [8][hd] the heads of a pass, padded */
    float *m = qs + (size_t)DECODE_HEADS * hd;  /* [8] */
    float *l = m + DECODE_HEADS;                /* [8] */
    q8_query_pair *qq = (q8_query_pair *)(l + DECODE_HEADS); /* [8][n_pairs], Q8_0 cache */
    for (int h0 = 0; h0 < group; h0 += DECODE_HEADS) {
        const int nh = INF_MIN(DECODE_HEADS, group - h0);
        const int G = nh == 1 ? 1 : nh == 2 ? 2 : nh <= 4 ? 4 : 8;
        for (int g = 0; g < G; g++) {
            memcpy(qs + (size_t)g * hd, q + (size_t)(kvh * group + h0 + INF_MIN(g, nh - 1)) * hd, (size_t)hd * sizeof(float));
            if (type == INF_KV_Q8_0) q8_query_prepare(qs + (size_t)g * hd, hd, qq + (size_t)g * n_pairs);
            m[g] = -INFINITY;
            l[g] = 0.0f;
        }
        memset(o, 0, (size_t)G * hd * sizeof(float));
#define DECODE_TYPE(g, t) decode_heads(qs, qq, k, v, kvh, n_keys, hd, sh->scale, g, t, nta, &tr, s, o, m, l)
#define DECODE_CASE(g)                                                  \
    if (type == INF_KV_F16) DECODE_TYPE(g, INF_KV_F16);                 \
    else if (type == INF_KV_Q8_0) DECODE_TYPE(g, INF_KV_Q8_0);          \
    else DECODE_TYPE(g, INF_KV_F32);
        switch (G) {
        case 1: DECODE_CASE(1) break;
        case 2: DECODE_CASE(2) break;
        case 4: DECODE_CASE(4) break;
        default: DECODE_CASE(8) break;
        }
#undef DECODE_CASE
#undef DECODE_TYPE
        /* o / l, a vector at a time: o was just written by masked vector
         * stores, which AMD does not forward to loads, and a scalar loop
         * here waited on every element (Zen 5, build/attn_bench -t 1 -l 1,
         * hot caches: depth 8 4.0 -> 2.1 µs a layer, depth 80 17.8 -> 10.2) */
        for (int g = 0; g < nh; g++) {
            const __m512 inv = _mm512_set1_ps(l[g] > 0.0f ? 1.0f / l[g] : 0.0f);
            float *dst = out + (size_t)(kvh * group + h0 + g) * hd;
            for (int i = 0; i < hd; i += 16) {
                const __mmask16 mk = hd - i >= 16 ? 0xffff : tail_mask(hd - i);
                _mm512_mask_storeu_ps(dst + i, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, o + (size_t)g * hd + i), inv));
            }
        }
    }
}

/* ------------------------------------------------------------------ prefill */

typedef struct prefill_ctx {
    const inf_attn_shape *sh;
    const inf_kv_view *k, *v;
    int kvh, group, hd;
    float *qt;     /* [hd][ROW_CHUNK] Q^T; a Q8_0 K cache: the q8_query_rows there */
    float *ot;     /* [round4(hd)][ROW_CHUNK] O^T */
    float *st;     /* [TILE][ROW_CHUNK] S^T, then P^T */
    float *ktile;  /* [TILE][hd] keys as f32 (f16 cache) */
    float *vtile;  /* [TILE][hd] values as f32 (f16 or Q8_0 cache) */
    const void *krows[TILE], *vrows[TILE]; /* the tile's rows: in the cache (f32; Q8_0 K) or widened */
    float *m, *l;  /* [ROW_CHUNK] */
    int32_t *last; /* [ROW_CHUNK] last visible key per row */
} prefill_ctx;

/* S^T[j][rows] = scale * Σ_d K[j][d] Q^T[d][rows] for j < nj, four keys at a
 * time; c->krows[j] is key j's f32 row. */
static void score_tile(const prefill_ctx *c, int nj) {
    const __m512 scale = _mm512_set1_ps(c->sh->scale);
    for (int j = 0; j < nj; j += 4) {
        const int nk = INF_MIN(4, nj - j);
        __m512 acc[4][RV];
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++) acc[a][r] = _mm512_setzero_ps();
        const float *kr[4];
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++) kr[a] = c->krows[j + INF_MIN(a, nk - 1)];
        for (int d = 0; d < c->hd; d++) {
            __m512 qv[RV];
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++) qv[r] = _mm512_load_ps(c->qt + (size_t)d * ROW_CHUNK + 16 * r);
            _Pragma("GCC unroll 4")
            for (int a = 0; a < 4; a++) {
                const __m512 kb = _mm512_set1_ps(kr[a][d]);
                _Pragma("GCC unroll 4")
                for (int r = 0; r < RV; r++) acc[a][r] = _mm512_fmadd_ps(kb, qv[r], acc[a][r]);
            }
        }
        /* rows past nj (at most 3, within the tile) are never read */
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++)
                _mm512_store_ps(c->st + (size_t)(j + a) * ROW_CHUNK + 16 * r, _mm512_mul_ps(acc[a][r], scale));
    }
}

/* The chunk's query rows as Q8_0, laid out for score_tile_q8 (in the place
 * of Q^T: 80 bytes per head_dim element against its 256), per block b:
 *   quads [8][ROW_CHUNK][4]  int8: quants 4g .. 4g + 3 of each row
 *   corr  [ROW_CHUNK]        int32 -128 * Σ of the row's block quants
 *   d     [ROW_CHUNK]        f32 the row's block scale */
typedef struct q8_query_rows {
    int8_t *quads;
    int32_t *corr;
    float *d;
} q8_query_rows;

static q8_query_rows q8_rows_at(float *qt, int hd) {
    const size_t nb = (size_t)hd / INF_Q8_0_BLOCK;
    int8_t *quads = (int8_t *)qt;
    int32_t *corr = (int32_t *)(quads + nb * 8 * ROW_CHUNK * 4);
    return (q8_query_rows){.quads = quads, .corr = corr, .d = (float *)(corr + nb * ROW_CHUNK)};
}

/* Row r of the chunk: query row q[hd] quantized (inf_quantize_row_q8_0). */
static void q8_rows_set(const q8_query_rows *qr, int r, const float *q, int hd) {
    inf_block_q8_0 blocks[INF_MAX_HEAD_DIM / INF_Q8_0_BLOCK];
    inf_avx512_quantize_row_q8_0(q, blocks, hd);
    for (int b = 0; b < hd / INF_Q8_0_BLOCK; b++) {
        int32_t sum = 0;
        for (int g = 0; g < 8; g++)
            for (int t = 0; t < 4; t++) {
                const int8_t x = blocks[b].q[4 * g + t];
                qr->quads[(((size_t)b * 8 + (size_t)g) * ROW_CHUNK + (size_t)r) * 4 + (size_t)t] = x;
                sum += x;
            }
        qr->corr[(size_t)b * ROW_CHUNK + (size_t)r] = -128 * sum;
        qr->d[(size_t)b * ROW_CHUNK + (size_t)r] = _cvtsh_ss(blocks[b].d);
    }
}

/* S^T[j][rows] = scale * (Q8_0 key j · each row's Q8_0 query) for j < nj:
 * per block, the integer dot of 16 rows per vector (keys enter vpdpbusd as
 * unsigned k + 128, corrected by corr), then sum += dot * (d_k * d_q) in
 * f32, block after block: ref.c's dot_q8_0, bit for bit. c->krows[j] is
 * key j's Q8_0 row. */
static void score_tile_q8(const prefill_ctx *c, int nj) {
    const int nb = c->hd / INF_Q8_0_BLOCK;
    const q8_query_rows qr = q8_rows_at(c->qt, c->hd);
    const __m512 scale = _mm512_set1_ps(c->sh->scale);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int j = 0; j < nj; j++) {
        const inf_block_q8_0 *key = c->krows[j];
        __m512 s[RV];
        _Pragma("GCC unroll 4")
        for (int r = 0; r < RV; r++) s[r] = _mm512_setzero_ps();
        for (int b = 0; b < nb; b++) {
            __m512i acc[RV];
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++) acc[r] = _mm512_loadu_si512(qr.corr + (size_t)b * ROW_CHUNK + 16 * r);
            _Pragma("GCC unroll 8")
            for (int g = 0; g < 8; g++) {
                int32_t four;
                memcpy(&four, key[b].q + 4 * g, 4);
                const __m512i kg = _mm512_xor_si512(_mm512_set1_epi32(four), flip);
                const int8_t *quads = qr.quads + ((size_t)b * 8 + (size_t)g) * ROW_CHUNK * 4;
                _Pragma("GCC unroll 4")
                for (int r = 0; r < RV; r++) acc[r] = _mm512_dpbusd_epi32(acc[r], kg, _mm512_loadu_si512(quads + 64 * r));
            }
            const __m512 dk = _mm512_set1_ps(_cvtsh_ss(key[b].d));
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++) {
                const __m512 d = _mm512_mul_ps(dk, _mm512_loadu_ps(qr.d + (size_t)b * ROW_CHUNK + 16 * r));
                s[r] = _mm512_add_ps(s[r], _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r]), d));
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < RV; r++) _mm512_store_ps(c->st + (size_t)j * ROW_CHUNK + 16 * r, _mm512_mul_ps(s[r], scale));
    }
}

/* O^T[d][rows] += Σ_j P^T[j][rows] V[j][d] for j < nj, four dims at a time
 * (O^T has rows up to hd rounded up to 4, so all four are stored);
 * c->vrows[j] is value j's f32 row. */
static void accumulate_tile(const prefill_ctx *c, int nj) {
    for (int d = 0; d < c->hd; d += 4) {
        const int nd = INF_MIN(4, c->hd - d);
        __m512 acc[4][RV];
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++)
                acc[a][r] = _mm512_load_ps(c->ot + (size_t)(d + a) * ROW_CHUNK + 16 * r);
        for (int j = 0; j < nj; j++) {
            const float *vr = (const float *)c->vrows[j] + d;
            __m512 p[RV];
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++) p[r] = _mm512_load_ps(c->st + (size_t)j * ROW_CHUNK + 16 * r);
            _Pragma("GCC unroll 4")
            for (int a = 0; a < 4; a++) {
                const __m512 vb = _mm512_set1_ps(vr[INF_MIN(a, nd - 1)]);
                _Pragma("GCC unroll 4")
                for (int r = 0; r < RV; r++) acc[a][r] = _mm512_fmadd_ps(p[r], vb, acc[a][r]);
            }
        }
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 4")
            for (int r = 0; r < RV; r++) _mm512_store_ps(c->ot + (size_t)(d + a) * ROW_CHUNK + 16 * r, acc[a][r]);
    }
}

/* Query rows [row0, row0 + nr) of the task (row = token * group + head):
 * transpose in, walk the key tiles, transpose out. */
static void prefill_rows(prefill_ctx *c, const float *q, float *out, int t0, int row0, int nr) {
    const inf_attn_shape *sh = c->sh;
    const int hd = c->hd, group = c->group;
    const bool q8_keys = c->k->type == INF_KV_Q8_0;
    int max_last = 0;
    for (int r = 0; r < ROW_CHUNK; r++) {
        const int row = row0 + INF_MIN(r, nr - 1); /* padding lanes repeat the last row */
        const int t = t0 + row / group, h = c->kvh * group + row % group;
        const float *qr = q + ((size_t)t * sh->n_head + h) * hd;
        if (q8_keys) {
            const q8_query_rows rows8 = q8_rows_at(c->qt, hd);
            q8_rows_set(&rows8, r, qr, hd);
        } else {
            for (int d = 0; d < hd; d++) c->qt[(size_t)d * ROW_CHUNK + r] = qr[d];
        }
        c->last[r] = sh->pos0 + t;
        max_last = INF_MAX(max_last, c->last[r]);
    }
    memset(c->ot, 0, (size_t)round4(hd) * ROW_CHUNK * sizeof(float));
    __m512 m[RV], l[RV];
    for (int r = 0; r < RV; r++) {
        m[r] = _mm512_set1_ps(-INFINITY);
        l[r] = _mm512_setzero_ps();
    }
    const int min_last = c->last[0]; /* rows are in token order */
    for (int j0 = 0; j0 <= max_last; j0 += TILE) {
        const int nj = INF_MIN(TILE, max_last + 1 - j0);
        inf_kv_rows(c->k, c->kvh, j0, nj, c->krows);
        if (c->k->type == INF_KV_F16) widen_tile(c->k, c->krows, nj, hd, c->ktile);
        if (q8_keys) score_tile_q8(c, nj);
        else score_tile(c, nj);
        inf_kv_rows(c->v, c->kvh, j0, nj, c->vrows);
        if (c->v->type != INF_KV_F32) widen_tile(c->v, c->vrows, nj, hd, c->vtile);
        /* mask keys past each row's last position */
        if (j0 + nj - 1 > min_last) {
            for (int j = 0; j < nj; j++)
                for (int r = 0; r < RV; r++) {
                    const __m512i last = _mm512_load_si512(c->last + 16 * r);
                    const __mmask16 hidden = _mm512_cmplt_epi32_mask(last, _mm512_set1_epi32(j0 + j));
                    float *sp = c->st + (size_t)j * ROW_CHUNK + 16 * r;
                    _mm512_store_ps(sp, _mm512_mask_mov_ps(_mm512_load_ps(sp), hidden, _mm512_set1_ps(-INFINITY)));
                }
        }
        /* online softmax, lane-wise */
        for (int r = 0; r < RV; r++) {
            __m512 mx = _mm512_set1_ps(-INFINITY);
            for (int j = 0; j < nj; j++) mx = _mm512_max_ps(mx, _mm512_load_ps(c->st + (size_t)j * ROW_CHUNK + 16 * r));
            const __mmask16 raised = _mm512_cmp_ps_mask(mx, m[r], _CMP_GT_OQ);
            if (raised) {
                const __m512 m_new = _mm512_mask_mov_ps(m[r], raised, mx);
                const __m512 corr = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), raised, vexp_avx512(_mm512_sub_ps(m[r], m_new)));
                l[r] = _mm512_mul_ps(l[r], corr);
                for (int d = 0; d < hd; d++) {
                    float *op = c->ot + (size_t)d * ROW_CHUNK + 16 * r;
                    _mm512_store_ps(op, _mm512_mul_ps(_mm512_load_ps(op), corr));
                }
                m[r] = m_new;
            }
            for (int j = 0; j < nj; j++) {
                float *sp = c->st + (size_t)j * ROW_CHUNK + 16 * r;
                const __m512 p = vexp_avx512(_mm512_sub_ps(_mm512_load_ps(sp), m[r]));
                _mm512_store_ps(sp, p);
                l[r] = _mm512_add_ps(l[r], p);
            }
        }
        accumulate_tile(c, nj);
    }
    /* out = O / l */
    float inv[ROW_CHUNK];
    for (int r = 0; r < RV; r++) {
        const __mmask16 pos = _mm512_cmp_ps_mask(l[r], _mm512_setzero_ps(), _CMP_GT_OQ);
        _mm512_storeu_ps(inv + 16 * r, _mm512_maskz_div_ps(pos, _mm512_set1_ps(1.0f), l[r]));
    }
    for (int r = 0; r < nr; r++) {
        const int row = row0 + r;
        const int t = t0 + row / group, h = c->kvh * group + row % group;
        float *dst = out + ((size_t)t * sh->n_head + h) * hd;
        for (int d = 0; d < hd; d++) dst[d] = c->ot[(size_t)d * ROW_CHUNK + r] * inv[r];
    }
}

void inf_avx512_attn_prefill(const inf_attn_shape *sh, const float *q, const inf_kv_view *k,
                             const inf_kv_view *v, float *out, int kvh, int t0, int t1, void *tmp) {
    const int hd = sh->head_dim, group = sh->n_head / sh->n_head_kv;
    float *base = (float *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
    prefill_ctx c = {.sh = sh, .k = k, .v = v, .kvh = kvh, .group = group, .hd = hd};
    c.qt = base;
    c.ot = c.qt + (size_t)hd * ROW_CHUNK;
    c.st = c.ot + (size_t)round4(hd) * ROW_CHUNK;
    c.ktile = c.st + (size_t)TILE * ROW_CHUNK;
    c.vtile = c.ktile + (size_t)TILE * hd;
    c.m = c.vtile + (size_t)TILE * hd;
    c.l = c.m + ROW_CHUNK;
    c.last = (int32_t *)(c.l + ROW_CHUNK);
    const int rows = (t1 - t0) * group;
    for (int row0 = 0; row0 < rows; row0 += ROW_CHUNK)
        prefill_rows(&c, q, out, t0, row0, INF_MIN(ROW_CHUNK, rows - row0));
}

/*
 * attention_avx2.c — fused decode attention and flash prefill attention
 * with AVX2 + FMA + F16C, one KV head (all the query heads of its group)
 * per call: the algorithms of attention_avx512.c with 8-lane vectors.
 *
 * Both walk the cached keys in tiles of 64 at absolute positions 0, 64, ...
 * and keep, per query row, a running max m, sum l and output o; a tile
 * that raises m rescales l and o by exp(m_old - m_new) once (ref.c's
 * prefill algorithm; ref's decode rescales per key).
 *
 * Decode: lanes run along head_dim; the scores of 8 keys are summed across
 * lanes together (hsum8).
 * Prefill: lanes run along query rows (row = token x head of the group), so
 * a score tile is S^T[key][row] = Σ_d K[key][d] · Q^T[d][row], vertical
 * FMAs with the key element broadcast, the softmax max and sum are
 * lane-wise, and O^T[d][row] += Σ_key P^T[key][row] · V[key][d] the same
 * way. Rows are taken ROW_CHUNK = 16 at a time (two vectors), so a
 * register tile of 4 keys (or dims) x 2 vectors plus its operands fits the
 * 16 ymm registers; the key tiles are the outer loop and every chunk of
 * the task keeps its own state, so each tile is read (an f16 cache:
 * widened) once per task, not once per chunk. The causal mask is a loop
 * bound (per row: -inf lanes on the tiles that cross its last position).
 * An f32 cache is read in place.
 *
 * K and V rows are found through the views' block tables: each tile's row
 * addresses are gathered first (inf_kv_rows), so a tile may straddle
 * blocks, and the arithmetic (tiles at absolute positions, keys in order)
 * is the same for every block size and table, and for every split of a
 * sequence's query rows into calls.
 *
 * A Q8_0 K cache is dotted with the query's Q8_0 blocks as ref.c does it,
 * bit for bit: each block's integer dot exact (maddubs on |k| and q signed
 * by k), then sum += dot * (d_k * d_q) in f32, block after block. So an
 * int8 rounding of a later layer's cached K or V cannot flip on a last-bit
 * difference here. A Q8_0 V cache is widened to d * q in f32.
 */
#include "backend/x86/vec_avx2.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"

#include <math.h>
#include <string.h>

enum {
    TILE = 64,      /* keys per tile */
    ROW_CHUNK = 16, /* prefill query rows per pass: RV vectors */
    RV = ROW_CHUNK / 8,
};

static int round4(int n) { return (n + 3) & ~3; }

/* Elements [i, i + min(n, 8)) of an f32 row, zeros past n. */
static __m256 f32_load8(const float *row, int i, int n) {
    return n >= 8 ? _mm256_loadu_ps(row + i) : _mm256_maskload_ps(row + i, tail_mask_avx2((size_t)n));
}

/* Element i.. (8, or the n < 8 left) of a cached row as f32. A Q8_0 row
 * has head_dim a multiple of 32, so n >= 8 there. */
static __m256 kv_load8(const inf_kv_view *c, const void *row, int i, int n) {
    if (c->type == INF_KV_Q8_0) {
        const inf_block_q8_0 *b = (const inf_block_q8_0 *)row + i / INF_Q8_0_BLOCK;
        const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b->q + i % INF_Q8_0_BLOCK)));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(f16c_to_f32(b->d)));
    }
    if (n >= 8) {
        if (c->type == INF_KV_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + i)));
        return _mm256_loadu_ps((const float *)row + i);
    }
    float v[8] = {0};
    for (int j = 0; j < n; j++)
        v[j] = c->type == INF_KV_F16 ? inf_f16_to_f32(((const uint16_t *)row)[i + j]) : ((const float *)row)[i + j];
    return _mm256_loadu_ps(v);
}

/* Σ k[i] q[i] over one block of 32 quants in [-127, 127] (the Q8_0
 * quantizer's range: the int16 pair sums of maddubs cannot saturate). */
static int32_t q8_block_dot(const int8_t *k, const int8_t *q) {
    const __m256i kv = _mm256_loadu_si256((const __m256i *)k), qv = _mm256_loadu_si256((const __m256i *)q);
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(kv, kv), _mm256_sign_epi8(qv, kv));
    const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* A Q8_0 key row against a Q8_0 query row of nb blocks: ref.c's dot_q8_0. */
static float q8_row_dot(const inf_block_q8_0 *k, const inf_block_q8_0 *q, int nb) {
    float sum = 0.0f;
    for (int b = 0; b < nb; b++)
        sum += (float)q8_block_dot(k[b].q, q[b].q) * (f16c_to_f32(k[b].d) * f16c_to_f32(q[b].d));
    return sum;
}

void inf_avx2_attn_decode(const inf_attn_shape *sh, const float *q, const inf_kv_view *k, const inf_kv_view *v,
                          float *out, int kvh, void *tmp) {
    const int group = sh->n_head / sh->n_head_kv, hd = sh->head_dim, n_keys = sh->pos0 + 1;
    float *scores = tmp;                   /* [group][TILE] */
    float *o_all = scores + group * TILE;  /* [group][hd] */
    float *m = o_all + (size_t)group * hd; /* [group] running max */
    float *l = m + group;                  /* [group] running sum */
    const int nb = hd / INF_Q8_0_BLOCK;
    inf_block_q8_0 *q8 = (inf_block_q8_0 *)(l + group); /* [group][nb] the query heads' blocks (Q8_0 K) */
    for (int g = 0; g < group; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
        if (k->type == INF_KV_Q8_0) inf_avx2_quantize_row_q8_0(q + (size_t)(kvh * group + g) * hd, q8 + (size_t)g * nb, hd);
    }
    memset(o_all, 0, (size_t)group * hd * sizeof(float));
    const __m256 scale = _mm256_set1_ps(sh->scale);
    const void *krows[TILE], *vrows[TILE]; /* the tile's cached rows */
    for (int j0 = 0; j0 < n_keys; j0 += TILE) {
        const int nj = INF_MIN(TILE, n_keys - j0);
        inf_kv_rows(k, kvh, j0, nj, krows);
        inf_kv_rows(v, kvh, j0, nj, vrows);
        for (int g = 0; g < group; g++) {
            const float *qh = q + (size_t)(kvh * group + g) * hd;
            float *s = scores + g * TILE;
            if (k->type == INF_KV_Q8_0)
                for (int j = 0; j < nj; j++) s[j] = q8_row_dot(krows[j], q8 + (size_t)g * nb, nb) * sh->scale;
            for (int jb = 0; k->type != INF_KV_Q8_0 && jb < nj; jb += 8) {
                __m256 dots[8];
                for (int j = 0; j < 8; j++) {
                    dots[j] = _mm256_setzero_ps();
                    if (jb + j >= nj) continue;
                    const void *kr = krows[jb + j];
                    for (int i = 0; i < hd; i += 8)
                        dots[j] = _mm256_fmadd_ps(kv_load8(k, kr, i, hd - i), f32_load8(qh, i, hd - i), dots[j]);
                }
                _mm256_storeu_ps(s + jb, _mm256_mul_ps(hsum8_avx2(dots), scale));
            }
            float tile_max = -INFINITY;
            for (int j = 0; j < nj; j++) tile_max = fmaxf(tile_max, s[j]);
            float *o = o_all + (size_t)g * hd;
            if (tile_max > m[g]) {
                const float corr = expf(m[g] - tile_max);
                l[g] *= corr;
                for (int i = 0; i < hd; i++) o[i] *= corr;
                m[g] = tile_max;
            }
            const __m256 vm = _mm256_set1_ps(m[g]);
            __m256 lsum = _mm256_setzero_ps();
            for (int j = 0; j < nj; j += 8) {
                __m256 p = vexp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
                if (nj - j < 8) p = _mm256_and_ps(p, _mm256_castsi256_ps(tail_mask_avx2((size_t)(nj - j))));
                _mm256_storeu_ps(s + j, p);
                lsum = _mm256_add_ps(lsum, p);
            }
            l[g] += hsum_avx2(lsum);
            for (int i = 0; i < hd; i += 8) {
                const int n = INF_MIN(8, hd - i);
                __m256 acc = f32_load8(o, i, n);
                for (int j = 0; j < nj; j++)
                    acc = _mm256_fmadd_ps(_mm256_set1_ps(s[j]), kv_load8(v, vrows[j], i, n), acc);
                if (n == 8) _mm256_storeu_ps(o + i, acc);
                else _mm256_maskstore_ps(o + i, tail_mask_avx2((size_t)n), acc);
            }
        }
    }
    for (int g = 0; g < group; g++) {
        const float inv = l[g] > 0.0f ? 1.0f / l[g] : 0.0f;
        const float *o = o_all + (size_t)g * hd;
        float *dst = out + (size_t)(kvh * group + g) * hd;
        for (int i = 0; i < hd; i++) dst[i] = o[i] * inv;
    }
}

/* ------------------------------------------------------------------ prefill */

/* The state of one chunk of ROW_CHUNK query rows, in the task's scratch. */
typedef struct row_chunk {
    float *qt;     /* [hd][ROW_CHUNK] Q^T; for a Q8_0 K cache, q8_rows() instead */
    float *ot;     /* [round4(hd)][ROW_CHUNK] O^T */
    float *m, *l;  /* [ROW_CHUNK] running max and sum */
    int32_t *last; /* [ROW_CHUNK] last visible key per row (padding lanes repeat the last row) */
} row_chunk;

static size_t chunk_floats(int hd) { return (size_t)(hd + round4(hd)) * ROW_CHUNK + 3 * ROW_CHUNK; }

static row_chunk chunk_at(float *base, int i, int hd) {
    float *p = base + (size_t)i * chunk_floats(hd);
    row_chunk ch = {.qt = p, .ot = p + (size_t)hd * ROW_CHUNK};
    ch.m = ch.ot + (size_t)round4(hd) * ROW_CHUNK;
    ch.l = ch.m + ROW_CHUNK;
    ch.last = (int32_t *)(ch.l + ROW_CHUNK);
    return ch;
}

/* A Q8_0 K cache: the chunk's query rows as Q8_0 blocks [ROW_CHUNK][hd / 32],
 * in the place of Q^T (17 bytes per element against its 64). */
static inf_block_q8_0 *q8_rows(const row_chunk *ch) { return (inf_block_q8_0 *)ch->qt; }

/* The n cached rows rows[] of an f16 or Q8_0 cache widened to f32 into
 * dst[n][hd]; rows[j] then points at dst[j]. */
static void widen_tile(const inf_kv_view *c, const void **rows, int n, int hd, float *dst) {
    for (int j = 0; j < n; j++) {
        const uint16_t *row = rows[j];
        float *d = dst + (size_t)j * hd;
        rows[j] = d;
        int i = 0;
        if (c->type == INF_KV_Q8_0) {
            for (; i < hd; i += 8) _mm256_storeu_ps(d + i, kv_load8(c, row, i, hd - i));
            continue;
        }
        for (; i + 8 <= hd; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + i))));
        for (; i < hd; i++) d[i] = inf_f16_to_f32(row[i]);
    }
}

/* S^T[j][rows] = scale * Σ_d K[j][d] Q^T[d][rows] for j < nj, four keys at a
 * time; keys[j] is key j's f32 row. */
static void score_tile(const row_chunk *ch, int hd, float scale, const void *const *keys, int nj, float *st) {
    const __m256 vscale = _mm256_set1_ps(scale);
    for (int j = 0; j < nj; j += 4) {
        const int nk = INF_MIN(4, nj - j);
        __m256 acc[4][RV];
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 2")
            for (int r = 0; r < RV; r++) acc[a][r] = _mm256_setzero_ps();
        const float *kr[4];
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++) kr[a] = keys[j + INF_MIN(a, nk - 1)];
        for (int d = 0; d < hd; d++) {
            __m256 qv[RV];
            _Pragma("GCC unroll 2")
            for (int r = 0; r < RV; r++) qv[r] = _mm256_load_ps(ch->qt + (size_t)d * ROW_CHUNK + 8 * r);
            _Pragma("GCC unroll 4")
            for (int a = 0; a < 4; a++) {
                const __m256 kb = _mm256_broadcast_ss(kr[a] + d);
                _Pragma("GCC unroll 2")
                for (int r = 0; r < RV; r++) acc[a][r] = _mm256_fmadd_ps(kb, qv[r], acc[a][r]);
            }
        }
        /* rows past nj (at most 3, within the tile) are never read */
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 2")
            for (int r = 0; r < RV; r++)
                _mm256_store_ps(st + (size_t)(j + a) * ROW_CHUNK + 8 * r, _mm256_mul_ps(acc[a][r], vscale));
    }
}

/* S^T[j][rows] = scale * (Q8_0 key j · the row's Q8_0 query) for j < nj;
 * keys[j] is key j's Q8_0 row. */
static void score_tile_q8(const row_chunk *ch, int hd, float scale, const void *const *keys, int nj, float *st) {
    const int nb = hd / INF_Q8_0_BLOCK;
    for (int j = 0; j < nj; j++) {
        const inf_block_q8_0 *key = keys[j];
        for (int r = 0; r < ROW_CHUNK; r++)
            st[(size_t)j * ROW_CHUNK + r] = q8_row_dot(key, q8_rows(ch) + (size_t)r * nb, nb) * scale;
    }
}

/* O^T[d][rows] += Σ_j P^T[j][rows] V[j][d] for j < nj, four dims at a time
 * (O^T has rows up to hd rounded up to 4, so all four are stored); vals[j]
 * is value j's f32 row. */
static void accumulate_tile(const row_chunk *ch, int hd, const void *const *vals, int nj, const float *pt) {
    for (int d = 0; d < hd; d += 4) {
        const int nd = INF_MIN(4, hd - d);
        __m256 acc[4][RV];
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 2")
            for (int r = 0; r < RV; r++) acc[a][r] = _mm256_load_ps(ch->ot + (size_t)(d + a) * ROW_CHUNK + 8 * r);
        for (int j = 0; j < nj; j++) {
            const float *vr = (const float *)vals[j] + d;
            __m256 p[RV];
            _Pragma("GCC unroll 2")
            for (int r = 0; r < RV; r++) p[r] = _mm256_load_ps(pt + (size_t)j * ROW_CHUNK + 8 * r);
            _Pragma("GCC unroll 4")
            for (int a = 0; a < 4; a++) {
                const __m256 vb = _mm256_broadcast_ss(vr + INF_MIN(a, nd - 1));
                _Pragma("GCC unroll 2")
                for (int r = 0; r < RV; r++) acc[a][r] = _mm256_fmadd_ps(p[r], vb, acc[a][r]);
            }
        }
        _Pragma("GCC unroll 4")
        for (int a = 0; a < 4; a++)
            _Pragma("GCC unroll 2")
            for (int r = 0; r < RV; r++) _mm256_store_ps(ch->ot + (size_t)(d + a) * ROW_CHUNK + 8 * r, acc[a][r]);
    }
}

/* One chunk's share of key tile [j0, j0 + nj): scores, causal mask, online
 * softmax (lane-wise), values. keys[j] and vals[j] are the rows of position
 * j0 + j (keys Q8_0 when q8_keys, else f32; values f32); st is the tile's
 * S^T scratch. */
static void chunk_tile(const row_chunk *ch, int hd, float scale, int j0, int nj, const void *const *keys,
                       bool q8_keys, const void *const *vals, float *st) {
    if (q8_keys) score_tile_q8(ch, hd, scale, keys, nj, st);
    else score_tile(ch, hd, scale, keys, nj, st);
    if (j0 + nj - 1 > ch->last[0]) { /* rows are in token order: last[0] is the least */
        for (int j = 0; j < nj; j++)
            for (int r = 0; r < RV; r++) {
                const __m256i last = _mm256_load_si256((const __m256i *)(ch->last + 8 * r));
                const __m256 hidden = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(j0 + j), last));
                float *sp = st + (size_t)j * ROW_CHUNK + 8 * r;
                _mm256_store_ps(sp, _mm256_blendv_ps(_mm256_load_ps(sp), _mm256_set1_ps(-INFINITY), hidden));
            }
    }
    for (int r = 0; r < RV; r++) {
        __m256 m = _mm256_load_ps(ch->m + 8 * r), l = _mm256_load_ps(ch->l + 8 * r);
        __m256 mx = _mm256_set1_ps(-INFINITY);
        for (int j = 0; j < nj; j++) mx = _mm256_max_ps(mx, _mm256_load_ps(st + (size_t)j * ROW_CHUNK + 8 * r));
        const __m256 raised = _mm256_cmp_ps(mx, m, _CMP_GT_OQ);
        if (_mm256_movemask_ps(raised)) {
            const __m256 m_new = _mm256_blendv_ps(m, mx, raised);
            const __m256 corr = _mm256_blendv_ps(_mm256_set1_ps(1.0f), vexp_avx2(_mm256_sub_ps(m, m_new)), raised);
            l = _mm256_mul_ps(l, corr);
            for (int d = 0; d < hd; d++) {
                float *op = ch->ot + (size_t)d * ROW_CHUNK + 8 * r;
                _mm256_store_ps(op, _mm256_mul_ps(_mm256_load_ps(op), corr));
            }
            m = m_new;
        }
        for (int j = 0; j < nj; j++) {
            float *sp = st + (size_t)j * ROW_CHUNK + 8 * r;
            const __m256 p = vexp_avx2(_mm256_sub_ps(_mm256_load_ps(sp), m));
            _mm256_store_ps(sp, p);
            l = _mm256_add_ps(l, p);
        }
        _mm256_store_ps(ch->m + 8 * r, m);
        _mm256_store_ps(ch->l + 8 * r, l);
    }
    accumulate_tile(ch, hd, vals, nj, st);
}

/* Scratch: [chunks] row_chunk states, then S^T [TILE][ROW_CHUNK], then the
 * K and V tiles [TILE][hd] each. */
static size_t prefill_floats(int hd, int group) {
    const int chunks = (INF_X86_ATTN_BLOCK * group + ROW_CHUNK - 1) / ROW_CHUNK;
    return (size_t)chunks * chunk_floats(hd) + TILE * ROW_CHUNK + 2 * (size_t)TILE * hd;
}

size_t inf_avx2_attn_tmp_bytes(const inf_attn_shape *sh) {
    const size_t hd = (size_t)sh->head_dim, group = (size_t)(sh->n_head / sh->n_head_kv);
    /* scores, o, m, l, then the query's Q8_0 blocks (34 bytes per 32 elements) */
    const size_t decode = group * TILE + group * hd + 2 * group + (group * hd / INF_Q8_0_BLOCK * sizeof(inf_block_q8_0) + 3) / 4;
    const size_t prefill = prefill_floats(sh->head_dim, (int)group);
    return (decode > prefill ? decode : prefill) * sizeof(float) + 32;
}

/* Query tokens [t0, t1) of KV head kvh: rows (row = token * group + head)
 * in chunks of ROW_CHUNK; each key tile is read (f16: widened; Q8_0 V: widened) once and
 * applied to every chunk that sees any of it. */
void inf_avx2_attn_prefill(const inf_attn_shape *sh, const float *q, const inf_kv_view *k, const inf_kv_view *v,
                           float *out, int kvh, int t0, int t1, void *tmp) {
    const int hd = sh->head_dim, group = sh->n_head / sh->n_head_kv;
    const int rows = (t1 - t0) * group, n_chunks = (rows + ROW_CHUNK - 1) / ROW_CHUNK;
    float *base = (float *)(((uintptr_t)tmp + 31) & ~(uintptr_t)31);
    float *st = base + (size_t)n_chunks * chunk_floats(hd); /* [TILE][ROW_CHUNK] */
    float *ktile = st + TILE * ROW_CHUNK, *vtile = ktile + (size_t)TILE * hd; /* [TILE][hd] */
    for (int i = 0; i < n_chunks; i++) {
        const row_chunk ch = chunk_at(base, i, hd);
        for (int r = 0; r < ROW_CHUNK; r++) {
            const int row = INF_MIN(i * ROW_CHUNK + r, rows - 1);
            const int t = t0 + row / group, h = kvh * group + row % group;
            const float *qr = q + ((size_t)t * sh->n_head + h) * hd;
            if (k->type == INF_KV_Q8_0) inf_avx2_quantize_row_q8_0(qr, q8_rows(&ch) + (size_t)r * (hd / INF_Q8_0_BLOCK), hd);
            else
                for (int d = 0; d < hd; d++) ch.qt[(size_t)d * ROW_CHUNK + r] = qr[d];
            ch.last[r] = sh->pos0 + t;
            ch.m[r] = -INFINITY;
            ch.l[r] = 0.0f;
        }
        memset(ch.ot, 0, (size_t)round4(hd) * ROW_CHUNK * sizeof(float));
    }
    const int max_last = sh->pos0 + t1 - 1;
    const void *krows[TILE], *vrows[TILE]; /* the tile's rows: in the cache (f32; Q8_0 K) or widened */
    for (int j0 = 0; j0 <= max_last; j0 += TILE) {
        const int nj = INF_MIN(TILE, max_last + 1 - j0);
        inf_kv_rows(k, kvh, j0, nj, krows);
        if (k->type == INF_KV_F16) widen_tile(k, krows, nj, hd, ktile);
        inf_kv_rows(v, kvh, j0, nj, vrows);
        if (v->type != INF_KV_F32) widen_tile(v, vrows, nj, hd, vtile);
        for (int i = 0; i < n_chunks; i++) {
            const row_chunk ch = chunk_at(base, i, hd);
            const int chunk_last = ch.last[ROW_CHUNK - 1];
            if (j0 > chunk_last) continue;
            chunk_tile(&ch, hd, sh->scale, j0, INF_MIN(nj, chunk_last + 1 - j0), krows, k->type == INF_KV_Q8_0, vrows,
                       st);
        }
    }
    /* out = O / l */
    for (int i = 0; i < n_chunks; i++) {
        const row_chunk ch = chunk_at(base, i, hd);
        float inv[ROW_CHUNK];
        for (int r = 0; r < RV; r++) {
            const __m256 l = _mm256_load_ps(ch.l + 8 * r);
            const __m256 pos = _mm256_cmp_ps(l, _mm256_setzero_ps(), _CMP_GT_OQ);
            _mm256_storeu_ps(inv + 8 * r, _mm256_and_ps(pos, _mm256_div_ps(_mm256_set1_ps(1.0f), l)));
        }
        for (int r = 0; r < ROW_CHUNK && i * ROW_CHUNK + r < rows; r++) {
            const int row = i * ROW_CHUNK + r;
            const int t = t0 + row / group, h = kvh * group + row % group;
            float *dst = out + ((size_t)t * sh->n_head + h) * hd;
            for (int d = 0; d < hd; d++) dst[d] = ch.ot[(size_t)d * ROW_CHUNK + r] * inv[r];
        }
    }
}

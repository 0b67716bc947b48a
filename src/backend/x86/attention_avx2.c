/*
 * attention_avx2.c — fused decode attention with AVX2 + FMA + F16C for one
 * KV head (all the query heads of its group): the tiled online softmax of
 * attention_avx512.c with 8-lane vectors (scores of 8 keys summed across
 * lanes together). Prefill attention on AVX2 is the reference, threaded.
 */
#include "backend/x86/vec_avx2.h"
#include "backend/x86/x86_kernels.h"

#include "core/common.h"
#include "core/dtype.h"

#include <math.h>
#include <string.h>

enum { TILE = 64 };

size_t inf_avx2_attn_tmp_bytes(const inf_attn_shape *sh) {
    const size_t hd = (size_t)sh->head_dim, group = (size_t)(sh->n_head / sh->n_head_kv);
    return (group * TILE + group * hd + 2 * group) * sizeof(float);
}

/* Elements [i, i + min(n, 8)) of an f32 row, zeros past n. */
static __m256 f32_load8(const float *row, int i, int n) {
    return n >= 8 ? _mm256_loadu_ps(row + i) : _mm256_maskload_ps(row + i, tail_mask_avx2((size_t)n));
}

/* Element i.. (8, or the n < 8 left) of a cached row as f32. */
static __m256 kv_load8(const inf_kv_view *c, const void *row, int i, int n) {
    if (n >= 8) {
        if (c->type == INF_KV_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + i)));
        return _mm256_loadu_ps((const float *)row + i);
    }
    float v[8] = {0};
    for (int j = 0; j < n; j++)
        v[j] = c->type == INF_KV_F16 ? inf_f16_to_f32(((const uint16_t *)row)[i + j]) : ((const float *)row)[i + j];
    return _mm256_loadu_ps(v);
}

static const void *kv_row(const inf_kv_view *c, int pos, int kvh, int hd) {
    const size_t elem = c->type == INF_KV_F16 ? 2 : 4;
    return (const char *)c->data + ((size_t)pos * c->pos_stride + (size_t)kvh * hd) * elem;
}

void inf_avx2_attn_decode(const inf_attn_shape *sh, const float *q, const inf_kv_view *k, const inf_kv_view *v,
                          float *out, int kvh, void *tmp) {
    const int group = sh->n_head / sh->n_head_kv, hd = sh->head_dim, n_keys = sh->pos0 + 1;
    float *scores = tmp;                   /* [group][TILE] */
    float *o_all = scores + group * TILE;  /* [group][hd] */
    float *m = o_all + (size_t)group * hd; /* [group] running max */
    float *l = m + group;                  /* [group] running sum */
    for (int g = 0; g < group; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }
    memset(o_all, 0, (size_t)group * hd * sizeof(float));
    const __m256 scale = _mm256_set1_ps(sh->scale);
    for (int j0 = 0; j0 < n_keys; j0 += TILE) {
        const int nj = INF_MIN(TILE, n_keys - j0);
        for (int g = 0; g < group; g++) {
            const float *qh = q + (size_t)(kvh * group + g) * hd;
            float *s = scores + g * TILE;
            for (int jb = 0; jb < nj; jb += 8) {
                __m256 dots[8];
                for (int j = 0; j < 8; j++) {
                    dots[j] = _mm256_setzero_ps();
                    if (jb + j >= nj) continue;
                    const void *kr = kv_row(k, j0 + jb + j, kvh, hd);
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
                    acc = _mm256_fmadd_ps(_mm256_set1_ps(s[j]), kv_load8(v, kv_row(v, j0 + j, kvh, hd), i, n), acc);
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

/*
 * ref.c — the scalar reference backend: one plain C implementation of every
 * op in ops.h. It is always compiled, it is what every faster backend is
 * tested against, and a faster backend starts from a copy of this table and
 * overrides only the ops it does better.
 *
 * Numerics follow the scalar (generic) paths of ggml's CPU backend, so the
 * forward pass reproduces llama.cpp's logits to float rounding:
 *   - matmul rounds the activations to the weight's dot type first (Q8_0
 *     blocks for Q8_0, f16 for F16, bf16 for BF16, none for F32).
 *     Q8_0: an int32 dot of the int8 quants per block, scaled by
 *     d_w * d_x (both f16 -> f32) and summed over blocks in f32, exactly as
 *     ggml_vec_dot_q8_0_q8_0. F32/F16/BF16: each product is formed in f32
 *     (exact for f16 x f16 and bf16 x bf16) and the products are summed in
 *     double, as ggml's generic ggml_vec_dot_{f32,f16,bf16} do with
 *     ggml_float. ggml's SIMD paths sum in several f32 lanes instead; the
 *     two differ by ~1e-7 relative, and the double sum is the better oracle.
 *     The GGUF block types (Q4_0 ... IQ4_XS): the activations as Q8_0, Q8_1
 *     or Q8_K blocks, then core/quant.h's integer dots, blocks summed in
 *     order in f32 (inf_quant_dot).
 *   - rmsnorm sums squares in double, scale = 1/sqrtf(mean + eps), then
 *     y = (x * scale) * w, as ggml_rms_norm followed by ggml_mul.
 *   - rope: theta starts at (float)pos and is multiplied by
 *     theta_scale = powf(base, -2/head_dim) once per pair, in f32, with
 *     cosf/sinf of it (ggml's rope cache). At large positions this float
 *     recurrence differs from the exact angle by ~1e-3 rad; matching it is
 *     what matches llama.cpp. Linear and YaRN scaling (inf_rope_init,
 *     inf_rope_angles) follow ggml's rope_yarn step by step in f32: the
 *     ramp between interpolated and extrapolated angles, then cos and sin
 *     times mscale.
 *   - attention (all three forms) computes q·k like the f32 matmul (double
 *     sum), scales by `scale`, and takes exp in f32. An f16 KV cache is read
 *     as f32 values; q is not rounded (llama.cpp rounds q to f16 there, and
 *     its flash path even accumulates V in f16: we keep the better numbers).
 *     A Q8_0 cache is read as llama.cpp's flash attention reads it: q is
 *     quantized to Q8_0 and q·k is the Q8_0 matmul's dot (no other dot is
 *     possible on int8 keys), V rows are dequantized to f32 (d * q) and
 *     accumulated in f32. The rows in such a cache are Hadamard-rotated by
 *     the model (ops.h); attention does not know.
 *   - hadamard is ggml's CPU fwht (what llama.cpp runs for its rotation
 *     matrices' products): x * (1/sqrtf(n)), then butterflies at spans 1,
 *     2, 4, ...; every step is one f32 add or subtract, so the result is
 *     llama.cpp's to the bit whatever the vector width.
 */
#include "backend/ops.h"
#include "core/common.h"
#include "core/dtype.h"
#include "core/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ row dots */

/* Σ w[i]*x[i], each product in f32, summed in double (ggml_vec_dot_f32). */
static float dot_f32(const float *w, const float *x, int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)(w[i] * x[i]);
    return (float)sum;
}

/* f16 weights times f16-rounded activations; products exact in f32. */
static float dot_f16(const inf_f16 *w, const inf_f16 *x, int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)(inf_f16_to_f32(w[i]) * inf_f16_to_f32(x[i]));
    return (float)sum;
}

/* bf16 weights times bf16-rounded activations; products exact in f32. */
static float dot_bf16(const inf_bf16 *w, const inf_bf16 *x, int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)(inf_bf16_to_f32(w[i]) * inf_bf16_to_f32(x[i]));
    return (float)sum;
}

/* Q8_0 x Q8_0 over n_blocks blocks: integer dot per block, f32 over blocks. */
static float dot_q8_0(const inf_block_q8_0 *w, const inf_block_q8_0 *x, int64_t n_blocks) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n_blocks; b++) {
        int32_t sumi = 0;
        for (int i = 0; i < INF_Q8_0_BLOCK; i++) sumi += (int32_t)w[b].q[i] * (int32_t)x[b].q[i];
        sum += (float)sumi * (inf_f16_to_f32(w[b].d) * inf_f16_to_f32(x[b].d));
    }
    return sum;
}

/* ------------------------------------------------------------------ ops */

/* y[n][rows] = x[n][cols] · W^T. The activations are first rounded into
 * scratch ([n][cols] in the dot type, at most n*cols*4 bytes); then each
 * weight row is read once and dotted with all n activation rows. */
static void ref_matmul(const inf_ops *self, const inf_weight *w, const float *x, int n, int n_decode, float *y,
                       void *scratch) {
    (void)self;
    (void)n_decode; /* every row is computed on its own, decode or prefill */
    const int64_t rows = w->rows, cols = w->cols;
    const char *wdata = w->data;

    switch (w->type) {
    case INF_DTYPE_F32:
        for (int64_t r = 0; r < rows; r++) {
            const float *wr = (const float *)(wdata + (size_t)r * w->row_bytes);
            for (int t = 0; t < n; t++) y[(size_t)t * rows + r] = dot_f32(wr, x + (size_t)t * cols, cols);
        }
        break;
    case INF_DTYPE_F16: {
        inf_f16 *xh = scratch; /* [n][cols] */
        for (size_t i = 0; i < (size_t)n * (size_t)cols; i++) xh[i] = inf_f32_to_f16(x[i]);
        for (int64_t r = 0; r < rows; r++) {
            const inf_f16 *wr = (const inf_f16 *)(wdata + (size_t)r * w->row_bytes);
            for (int t = 0; t < n; t++) y[(size_t)t * rows + r] = dot_f16(wr, xh + (size_t)t * cols, cols);
        }
        break;
    }
    case INF_DTYPE_BF16: {
        inf_bf16 *xb = scratch; /* [n][cols] */
        for (size_t i = 0; i < (size_t)n * (size_t)cols; i++) xb[i] = inf_f32_to_bf16(x[i]);
        for (int64_t r = 0; r < rows; r++) {
            const inf_bf16 *wr = (const inf_bf16 *)(wdata + (size_t)r * w->row_bytes);
            for (int t = 0; t < n; t++) y[(size_t)t * rows + r] = dot_bf16(wr, xb + (size_t)t * cols, cols);
        }
        break;
    }
    case INF_DTYPE_Q8_0: {
        const int64_t n_blocks = cols / INF_Q8_0_BLOCK;
        inf_block_q8_0 *xq = scratch; /* [n][n_blocks], 34/128 of the f32 size */
        for (int t = 0; t < n; t++)
            inf_quantize_row_q8_0(x + (size_t)t * cols, xq + (size_t)t * n_blocks, cols);
        for (int64_t r = 0; r < rows; r++) {
            const inf_block_q8_0 *wr = (const inf_block_q8_0 *)(wdata + (size_t)r * w->row_bytes);
            for (int t = 0; t < n; t++)
                y[(size_t)t * rows + r] = dot_q8_0(wr, xq + (size_t)t * n_blocks, n_blocks);
        }
        break;
    }
    default: { /* the GGUF block types (core/quant.h): activation blocks of the type's dot type */
        const size_t act_bytes = inf_quant_act_bytes(w->type, cols); /* at most 292/1024 of the f32 row */
        for (int t = 0; t < n; t++)
            inf_quant_act_row(w->type, x + (size_t)t * cols, cols, (char *)scratch + (size_t)t * act_bytes);
        for (int64_t r = 0; r < rows; r++) {
            const void *wr = wdata + (size_t)r * w->row_bytes;
            for (int t = 0; t < n; t++)
                y[(size_t)t * rows + r] = inf_quant_dot(w->type, wr, (const char *)scratch + (size_t)t * act_bytes, cols);
        }
        break;
    }
    }
}

static void ref_rmsnorm(const inf_ops *self, float *y, const float *x, const float *w, int n_rows,
                        int dim, float eps) {
    (void)self;
    for (int r = 0; r < n_rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *yr = y + (size_t)r * dim;
        double sum_sq = 0.0;
        for (int i = 0; i < dim; i++) sum_sq += (double)(xr[i] * xr[i]);
        const float mean = (float)(sum_sq / dim);
        const float scale = 1.0f / sqrtf(mean + eps);
        for (int i = 0; i < dim; i++) yr[i] = xr[i] * scale * w[i]; /* (x * scale) * w */
    }
}

/* ggml's YaRN helpers, in its f32 arithmetic (ggml.c, ggml-cpu/ops.cpp). */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return n_dims * logf(n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base));
}

static float yarn_ramp(float low, float high, int pair) {
    const float y = ((float)pair - low) / fmaxf(0.001f, high - low);
    return 1 - fminf(1, fmaxf(0, y));
}

/* llama_context's get_mscale: 1 + 0.1 * mscale * ln(scale) above 1. */
static float yarn_get_mscale(float scale, float mscale) {
    return scale <= 1.0f ? 1.0f : (0.1f * mscale * logf(scale) + 1.0f);
}

void inf_rope_init(inf_rope *r, int head_dim, float freq_base, inf_rope_scaling kind, float factor,
                   int n_ctx_orig, float attn_factor) {
    enum { BETA_FAST = 32, BETA_SLOW = 1 }; /* llama_hparams' yarn_beta_fast, yarn_beta_slow */
    *r = (inf_rope){.freq_base = freq_base, .freq_scale = 1.0f};
    if (kind != INF_ROPE_SCALING_NONE && factor != 0.0f) r->freq_scale = 1.0f / factor;
    r->ext_factor = kind == INF_ROPE_SCALING_YARN ? 1.0f : 0.0f;
    /* llama_context: yarn_attn_factor from get_mscale, with ggml's own
     * log term (below) cancelled, then times the file's attn_factor */
    float attn = 1.0f;
    if (r->ext_factor != 0.0f) {
        const float f = 1.0f / r->freq_scale;
        attn = yarn_get_mscale(f, 1.0f);
        attn *= 1.0f / (1.0f + 0.1f * logf(f));
    }
    attn *= attn_factor;
    /* ggml's rope_yarn: mscale *= 1 + 0.1 ln(1/freq_scale) when extrapolating */
    r->mscale = attn;
    if (r->ext_factor != 0.0f) r->mscale *= 1.0f + 0.1f * logf(1.0f / r->freq_scale);
    const float lo = floorf(yarn_corr_dim(head_dim, n_ctx_orig, (float)BETA_FAST, freq_base));
    const float hi = ceilf(yarn_corr_dim(head_dim, n_ctx_orig, (float)BETA_SLOW, freq_base));
    r->corr_dims[0] = lo > 0 ? lo : 0;
    r->corr_dims[1] = hi < (float)(head_dim - 1) ? hi : (float)(head_dim - 1);
}

void inf_rope_angles(const inf_rope *r, int head_dim, int32_t pos, float *cs) {
    const int half = head_dim / 2;
    const float theta_scale = powf(r->freq_base, -2.0f / (float)head_dim);
    float theta_e = (float)pos; /* pos * theta_scale^i, built up in f32 */
    for (int i = 0; i < half; i++) {
        const float theta_i = r->freq_scale * theta_e;
        float theta = theta_i;
        if (r->ext_factor != 0.0f) {
            const float mix = yarn_ramp(r->corr_dims[0], r->corr_dims[1], i) * r->ext_factor;
            theta = theta_i * (1 - mix) + theta_e * mix;
        }
        cs[i] = cosf(theta) * r->mscale;
        cs[half + i] = sinf(theta) * r->mscale;
        theta_e *= theta_scale;
    }
}

static void ref_rope_neox(const inf_ops *self, float *x, int n_tok, int n_heads, int head_dim,
                          const int32_t *pos, const inf_rope *rope) {
    (void)self;
    const int half = head_dim / 2;
    float cs[INF_MAX_HEAD_DIM]; /* [cos half][sin half] */
    for (int t = 0; t < n_tok; t++) {
        float *xt = x + (size_t)t * n_heads * head_dim; /* [n_heads][head_dim] */
        inf_rope_angles(rope, head_dim, pos[t], cs);
        for (int i = 0; i < half; i++) {
            const float c = cs[i], s = cs[half + i];
            for (int h = 0; h < n_heads; h++) {
                float *xh = xt + (size_t)h * head_dim;
                const float x0 = xh[i], x1 = xh[i + half];
                xh[i] = x0 * c - x1 * s;
                xh[i + half] = x0 * s + x1 * c;
            }
        }
    }
}

static void ref_hadamard(const inf_ops *self, float *x, int n_rows, int n) {
    (void)self;
    const float scale = 1.0f / sqrtf((float)n);
    for (int r = 0; r < n_rows; r++) {
        float *xr = x + (size_t)r * (size_t)n; /* [n] */
        for (int i = 0; i < n; i++) xr[i] *= scale;
        for (int span = 1; span < n; span *= 2)
            for (int i0 = 0; i0 < n; i0 += 2 * span)
                for (int i = i0; i < i0 + span; i++) {
                    const float a = xr[i], b = xr[i + span];
                    xr[i] = a + b;
                    xr[i + span] = a - b;
                }
    }
}

static void ref_swiglu(const inf_ops *self, float *out, const float *gate, const float *up, size_t n) {
    (void)self;
    for (size_t i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i]; /* silu(g) * up, as ggml_silu_f32 */
    }
}

static void ref_add(const inf_ops *self, float *y, const float *x, size_t n) {
    (void)self;
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* ids must be valid rows of emb (the model checks token ids on entry). */
static void ref_embed(const inf_ops *self, const inf_weight *emb, const int32_t *ids, int n, float *out) {
    (void)self;
    for (int t = 0; t < n; t++) {
        const char *row = (const char *)emb->data + (size_t)ids[t] * emb->row_bytes;
        inf_dequantize_row(emb->type, row, out + (size_t)t * emb->cols, emb->cols);
    }
}

const int32_t inf_kv_single_block[1] = {0};

/* The cached row of (pos, KV head): head_dim elements of the cache's type. */
static void *kv_row(const inf_kv_view *c, int pos, int kv_head) {
    return (char *)c->data + inf_kv_type_bytes(c->type, inf_kv_elem(c, pos, kv_head));
}

/* Writes src[n_tok][n_head_kv][head_dim] at positions pos0.. of one cache. */
static void store_rows(const inf_kv_view *cache, const float *src, int n_tok, int pos0, int n_head_kv,
                       int head_dim) {
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < n_head_kv; h++) {
            const float *s = src + ((size_t)t * n_head_kv + h) * head_dim;
            void *row = kv_row(cache, pos0 + t, h);
            switch (cache->type) {
            case INF_KV_F32: memcpy(row, s, (size_t)head_dim * sizeof(float)); break;
            case INF_KV_F16:
                for (int i = 0; i < head_dim; i++) ((inf_f16 *)row)[i] = inf_f32_to_f16(s[i]);
                break;
            case INF_KV_Q8_0: inf_quantize_row_q8_0(s, row, head_dim); break;
            }
        }
}

static void ref_kv_store(const inf_ops *self, const inf_kv_view *k_cache, const inf_kv_view *v_cache,
                         const float *k, const float *v, int n_tok, int pos0, int n_head_kv, int head_dim) {
    (void)self;
    store_rows(k_cache, k, n_tok, pos0, n_head_kv, head_dim);
    store_rows(v_cache, v, n_tok, pos0, n_head_kv, head_dim);
}

/* ------------------------------------------------------------------ attention */

/* One query row of a head as the K cache's dot wants it: the f32 row, and
 * for a Q8_0 cache its Q8_0 blocks (llama.cpp's q_to_vec_dot). */
typedef struct attn_query {
    const float *f32;                                        /* [head_dim] */
    inf_block_q8_0 q8[INF_MAX_HEAD_DIM / INF_Q8_0_BLOCK];    /* [head_dim / 32], Q8_0 K only */
} attn_query;

static void query_prepare(attn_query *aq, const inf_kv_view *k, const float *q, int head_dim) {
    aq->f32 = q;
    if (k->type == INF_KV_Q8_0) inf_quantize_row_q8_0(q, aq->q8, head_dim);
}

/* q · K[pos][kv_head]: f32 or f16 K with the f32 query, products in f32
 * summed in double (as dot_f32); Q8_0 K with the Q8_0 query (dot_q8_0). */
static float kv_dot(const inf_kv_view *k, int pos, int kv_head, int head_dim, const attn_query *aq) {
    const void *kr = kv_row(k, pos, kv_head);
    switch (k->type) {
    case INF_KV_F32: return dot_f32(kr, aq->f32, head_dim);
    case INF_KV_F16: {
        double sum = 0.0;
        for (int i = 0; i < head_dim; i++) sum += (double)(inf_f16_to_f32(((const inf_f16 *)kr)[i]) * aq->f32[i]);
        return (float)sum;
    }
    case INF_KV_Q8_0: return dot_q8_0(kr, aq->q8, head_dim / INF_Q8_0_BLOCK);
    }
    return 0.0f;
}

/* Element i of a cached row as f32 (a Q8_0 element is d * q, in f32). */
static float row_value(inf_kv_type type, const void *row, int i) {
    switch (type) {
    case INF_KV_F32: return ((const float *)row)[i];
    case INF_KV_F16: return inf_f16_to_f32(((const inf_f16 *)row)[i]);
    case INF_KV_Q8_0: {
        const inf_block_q8_0 *b = (const inf_block_q8_0 *)row + i / INF_Q8_0_BLOCK;
        return inf_f16_to_f32(b->d) * (float)b->q[i % INF_Q8_0_BLOCK];
    }
    }
    return 0.0f;
}

static float kv_get(const inf_kv_view *v, int pos, int kv_head, int i) {
    return row_value(v->type, kv_row(v, pos, kv_head), i);
}

/* acc[head_dim] += a * V[pos][kv_head] */
static void kv_axpy(float *acc, float a, const inf_kv_view *v, int pos, int kv_head, int head_dim) {
    const void *vr = kv_row(v, pos, kv_head);
    for (int i = 0; i < head_dim; i++) acc[i] += a * row_value(v->type, vr, i);
}

static void scale_row(float *x, float a, int n) {
    for (int i = 0; i < n; i++) x[i] *= a;
}

/* Fused decode: one pass over positions 0 ..= pos per head; the running max
 * m, sum l and output o are rescaled by exp(m_old - m_new) whenever a score
 * raises the max. The output row itself is the accumulator. (Each row of
 * shape->n_tok is handled at its own position; the model passes one.) */
static void ref_attn_decode(const inf_ops *self, const inf_attn_shape *sh, const float *q,
                            const inf_kv_view *k, const inf_kv_view *v, float *out) {
    (void)self;
    const int group = sh->n_head / sh->n_head_kv, hd = sh->head_dim;
    for (int t = 0; t < sh->n_tok; t++) {
        const int last = sh->pos0 + t;
        for (int h = 0; h < sh->n_head; h++) {
            const size_t row = ((size_t)t * sh->n_head + (size_t)h) * hd;
            attn_query aq;
            query_prepare(&aq, k, q + row, hd);
            float *o = out + row; /* [head_dim] accumulator, then result */
            const int kvh = h / group;
            float m = -INFINITY, l = 0.0f;
            memset(o, 0, (size_t)hd * sizeof(float));
            for (int p = 0; p <= last; p++) {
                const float s = kv_dot(k, p, kvh, hd, &aq) * sh->scale;
                if (s > m) {
                    const float corr = expf(m - s); /* 0 on the first key */
                    l *= corr;
                    scale_row(o, corr, hd);
                    m = s;
                }
                const float e = expf(s - m);
                l += e;
                kv_axpy(o, e, v, p, kvh, hd);
            }
            scale_row(o, l > 0.0f ? 1.0f / l : 0.0f, hd);
        }
    }
}

static void ref_attn_decode_seqs(const inf_ops *self, int n_seqs, const inf_attn_shape *shapes, const float *q,
                                 const float *k, const float *v, const inf_kv_view *k_caches,
                                 const inf_kv_view *v_caches, float *out) {
    for (int s = 0; s < n_seqs; s++) {
        const inf_attn_shape *sh = &shapes[s];
        const size_t q_row = (size_t)sh->n_head * (size_t)sh->head_dim;
        const size_t kv_row = (size_t)sh->n_head_kv * (size_t)sh->head_dim;
        ref_kv_store(self, &k_caches[s], &v_caches[s], k + s * kv_row, v + s * kv_row, 1, sh->pos0, sh->n_head_kv,
                     sh->head_dim);
        ref_attn_decode(self, sh, q + s * q_row, &k_caches[s], &v_caches[s], out + s * q_row);
    }
}

enum { ATTN_TILE = 64 }; /* keys per flash tile */

/* Flash prefill: per query row and head, keys/values in tiles of 64 (at
 * absolute positions 0, 64, ...). A tile's scores are computed first, then
 * the state (m, l, o) is rescaled once if the tile raised the max, then the
 * tile's values are accumulated. Query t sees keys 0 ..= pos0 + t: the
 * causal mask is the loop bound. */
static void ref_attn_prefill(const inf_ops *self, const inf_attn_shape *sh, const float *q,
                             const inf_kv_view *k, const inf_kv_view *v, float *out) {
    (void)self;
    const int group = sh->n_head / sh->n_head_kv, hd = sh->head_dim;
    float s[ATTN_TILE]; /* scores of the current tile */
    for (int t = 0; t < sh->n_tok; t++) {
        const int n_keys = sh->pos0 + t + 1;
        for (int h = 0; h < sh->n_head; h++) {
            const size_t row = ((size_t)t * sh->n_head + (size_t)h) * hd;
            attn_query aq;
            query_prepare(&aq, k, q + row, hd);
            float *o = out + row;
            const int kvh = h / group;
            float m = -INFINITY, l = 0.0f;
            memset(o, 0, (size_t)hd * sizeof(float));
            for (int j0 = 0; j0 < n_keys; j0 += ATTN_TILE) {
                const int n_j = INF_MIN(ATTN_TILE, n_keys - j0);
                float tile_max = -INFINITY;
                for (int j = 0; j < n_j; j++) {
                    s[j] = kv_dot(k, j0 + j, kvh, hd, &aq) * sh->scale;
                    tile_max = fmaxf(tile_max, s[j]);
                }
                if (tile_max > m) {
                    const float corr = expf(m - tile_max);
                    l *= corr;
                    scale_row(o, corr, hd);
                    m = tile_max;
                }
                for (int j = 0; j < n_j; j++) {
                    const float e = expf(s[j] - m);
                    l += e;
                    kv_axpy(o, e, v, j0 + j, kvh, hd);
                }
            }
            scale_row(o, l > 0.0f ? 1.0f / l : 0.0f, hd);
        }
    }
}

/* The textbook form, as llama.cpp's non-flash path: per head the full
 * score matrix S[n_tok][n_keys] = (q·k) * scale with -inf above the causal
 * diagonal, a row softmax (max subtracted, exp in f32, sum in double, then
 * multiplied by 1/sum as ggml_soft_max), and P · V summed in double. */
inf_status inf_attn_materialized(const inf_attn_shape *sh, const float *q, const inf_kv_view *k,
                                 const inf_kv_view *v, float *out) {
    const int group = sh->n_head / sh->n_head_kv, hd = sh->head_dim;
    const int n_keys = sh->pos0 + sh->n_tok;
    size_t n_scores;
    if (!inf_mul_size((size_t)sh->n_tok, (size_t)n_keys, &n_scores)) return INF_ERR_NOMEM;
    float *scores = malloc((n_scores ? n_scores : 1) * sizeof(float)); /* [n_tok][n_keys] */
    if (!scores) return INF_ERR_NOMEM;

    for (int h = 0; h < sh->n_head; h++) {
        const int kvh = h / group;
        for (int t = 0; t < sh->n_tok; t++) {
            attn_query aq;
            query_prepare(&aq, k, q + ((size_t)t * sh->n_head + (size_t)h) * hd, hd);
            float *sr = scores + (size_t)t * n_keys;
            for (int j = 0; j < n_keys; j++)
                sr[j] = j <= sh->pos0 + t ? kv_dot(k, j, kvh, hd, &aq) * sh->scale : -INFINITY;
            float max = -INFINITY;
            for (int j = 0; j < n_keys; j++) max = fmaxf(max, sr[j]);
            double sum = 0.0;
            for (int j = 0; j < n_keys; j++) {
                sr[j] = expf(sr[j] - max);
                sum += (double)sr[j];
            }
            const float inv_sum = (float)(1.0 / sum);
            for (int j = 0; j < n_keys; j++) sr[j] *= inv_sum;
        }
        for (int t = 0; t < sh->n_tok; t++) {
            const float *pr = scores + (size_t)t * n_keys;
            float *o = out + ((size_t)t * sh->n_head + (size_t)h) * hd;
            for (int i = 0; i < hd; i++) {
                double acc = 0.0;
                for (int j = 0; j < n_keys; j++) acc += (double)(pr[j] * kv_get(v, j, kvh, i));
                o[i] = (float)acc;
            }
        }
    }
    free(scores);
    return INF_OK;
}

static void ref_matmul_group(const inf_ops *self, const inf_weight *const *w, int count, const float *x, int n,
                             int n_decode, float *const *y, void *scratch) {
    for (int i = 0; i < count; i++) ref_matmul(self, w[i], x, n, n_decode, y[i], scratch);
}

/* Buffers written in runs, of 2 MiB and more, on huge pages where the
 * system gives them: readied (buffer_prefault) 2 MiB at a time, ~0.25 µs
 * per 4 KiB where 4 KiB pages took ~1.8 µs each through
 * MADV_POPULATE_WRITE and ~10 µs each faulted (Zen 5 VM). */
static void *ref_buffer_alloc(const inf_ops *self, size_t bytes, inf_buffer_use use) {
    (void)self;
    return use == INF_BUFFER_RUNS && bytes >= (2u << 20) ? inf_alloc_huge(bytes) : inf_alloc_aligned(bytes);
}

static void ref_buffer_free(const inf_ops *self, void *p) {
    (void)self;
    inf_free_aligned(p);
}

static void ref_buffer_prefault(const inf_ops *self, void *p, size_t n) {
    (void)self;
    inf_prefault_write(p, n);
}

static const inf_ops ref_table = {
    .name = "ref",
    .buffer_alloc = ref_buffer_alloc,
    .buffer_free = ref_buffer_free,
    .buffer_prefault = ref_buffer_prefault,
    .matmul = ref_matmul,
    .matmul_group = ref_matmul_group,
    .rmsnorm = ref_rmsnorm,
    .rope_neox = ref_rope_neox,
    .hadamard = ref_hadamard,
    .swiglu = ref_swiglu,
    .add = ref_add,
    .embed = ref_embed,
    .kv_store = ref_kv_store,
    .attn_decode = ref_attn_decode,
    .attn_decode_seqs = ref_attn_decode_seqs,
    .attn_prefill = ref_attn_prefill,
};

const inf_ops *inf_ops_ref(void) { return &ref_table; }

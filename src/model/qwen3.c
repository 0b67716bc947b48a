/*
 * qwen3.c — the Qwen3 forward pass and the session that owns a sequence.
 *
 * Per layer (pre-norm):
 *   h = rmsnorm(x) ; q,k,v = h·Wq, h·Wk, h·Wv
 *   q,k = rmsnorm per head (QK-norm) ; RoPE (NeoX) ; k,v -> cache
 *   x += attention(q, cache) · Wo
 *   h = rmsnorm(x) ; x += (silu(h·Wgate) * (h·Wup)) · Wdown
 * then the final norm and the output head (token_embd when tied). With a
 * Q8_0 cache, q, k and v are rotated by Hadamard blocks after RoPE and the
 * attention output rotated back before Wo (model.h).
 *
 * The same code runs prefill (n tokens in one pass, flash attention) and
 * decode (one token, fused attention); everything numeric goes through the
 * op table, so faster backends change no line here. Decode allocates
 * nothing: buffers are sized at session creation for one token and grown
 * only when a prefill needs more rows.
 */
#include "model/model.h"

#include "core/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void free_activations(inf_session *s) {
    inf_free_aligned(s->x);
    inf_free_aligned(s->xn);
    inf_free_aligned(s->q);
    inf_free_aligned(s->k);
    inf_free_aligned(s->v);
    inf_free_aligned(s->attn);
    inf_free_aligned(s->gate);
    inf_free_aligned(s->up);
    inf_free_aligned(s->scratch);
    s->x = s->xn = s->q = s->k = s->v = s->attn = s->gate = s->up = NULL;
    s->scratch = NULL;
    s->n_cap = 0;
}

/* Makes room for n tokens of activations. */
static inf_status reserve_activations(inf_session *s, int n, inf_error *err) {
    if (n <= s->n_cap) return INF_OK;
    const qwen3_config *c = &s->model->cfg;
    free_activations(s);
    size_t rows = (size_t)n;
    int widest = INF_MAX(INF_MAX(c->n_embd, c->q_dim), c->n_ff);
    s->x = inf_alloc_aligned(rows * (size_t)c->n_embd * sizeof(float));
    s->xn = inf_alloc_aligned(rows * (size_t)c->n_embd * sizeof(float));
    s->q = inf_alloc_aligned(rows * (size_t)c->q_dim * sizeof(float));
    s->k = inf_alloc_aligned(rows * (size_t)c->kv_dim * sizeof(float));
    s->v = inf_alloc_aligned(rows * (size_t)c->kv_dim * sizeof(float));
    s->attn = inf_alloc_aligned(rows * (size_t)c->q_dim * sizeof(float));
    s->gate = inf_alloc_aligned(rows * (size_t)c->n_ff * sizeof(float));
    s->up = inf_alloc_aligned(rows * (size_t)c->n_ff * sizeof(float));
    s->scratch = inf_alloc_aligned(rows * (size_t)widest * sizeof(float));
    if (!s->x || !s->xn || !s->q || !s->k || !s->v || !s->attn || !s->gate || !s->up || !s->scratch) {
        free_activations(s);
        return inf_errorf(err, INF_ERR_NOMEM, "out of memory for activations of %d tokens", n);
    }
    s->n_cap = n;
    return INF_OK;
}

inf_status inf_session_new(inf_model *m, int n_ctx, inf_session **out, inf_error *err) {
    *out = NULL;
    if (n_ctx == 0) n_ctx = m->opt.n_ctx;
    if (n_ctx < 1 || n_ctx > m->cfg.n_ctx_train)
        return inf_errorf(err, INF_ERR_INVALID, "context length %d is outside 1..%d", n_ctx,
                          m->cfg.n_ctx_train);
    inf_session *s = calloc(1, sizeof *s);
    if (!s) return inf_errorf(err, INF_ERR_NOMEM, "out of memory for a session");
    s->model = m;
    s->n_ctx = n_ctx;
    s->kv_layer_elems = (size_t)n_ctx * (size_t)m->cfg.kv_dim;
    size_t kv_bytes = inf_kv_type_bytes(m->opt.kv_type, s->kv_layer_elems * (size_t)m->cfg.n_layer);
    /* Ordinary pages, touched as positions fill. Huge pages (MADV_HUGEPAGE)
     * made no measurable difference to decode attention, which prefetches
     * its rows itself, but faulted in every head's 2 MiB page at the first
     * token: ~0.4 s of a 2044-token prefill, and up to 1 s before the first
     * token when the kernel compacted memory for them. */
    s->k_cache = inf_alloc_aligned(kv_bytes);
    s->v_cache = inf_alloc_aligned(kv_bytes);
    inf_status st = INF_OK;
    if (!s->k_cache || !s->v_cache)
        st = inf_errorf(err, INF_ERR_NOMEM, "out of memory for a KV cache of %zu bytes", 2 * kv_bytes);
    if (!st) st = reserve_activations(s, 1, err);
    if (st) {
        inf_session_free(s);
        return st;
    }
    *out = s;
    return INF_OK;
}

void inf_session_free(inf_session *s) {
    if (!s) return;
    free_activations(s);
    inf_free_aligned(s->k_cache);
    inf_free_aligned(s->v_cache);
    free(s);
}

int inf_session_n_past(const inf_session *s) { return s->n_past; }
int inf_session_n_ctx(const inf_session *s) { return s->n_ctx; }

inf_status inf_session_truncate(inf_session *s, int n_past, inf_error *err) {
    if (n_past < 0 || n_past > s->n_past)
        return inf_errorf(err, INF_ERR_INVALID, "cannot truncate a sequence of %d tokens to %d",
                          s->n_past, n_past);
    s->n_past = n_past;
    return INF_OK;
}

inf_status inf_session_eval(inf_session *s, const int32_t *tokens, int n, inf_logits_mode mode,
                            float *logits, inf_error *err) {
    if (n < 1) return inf_errorf(err, INF_ERR_INVALID, "no tokens to evaluate");
    if (mode != INF_LOGITS_NONE && !logits)
        return inf_errorf(err, INF_ERR_INVALID, "logits requested without an output buffer");
    if (n > s->n_ctx - s->n_past)
        return inf_errorf(err, INF_ERR_CONTEXT_FULL,
                          "%d tokens do not fit: %d of the context's %d are in use", n, s->n_past,
                          s->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->model->cfg.n_vocab)
            return inf_errorf(err, INF_ERR_INVALID, "token id %d at index %d is outside the vocabulary (0..%d)",
                              tokens[i], i, s->model->cfg.n_vocab - 1);
    /* Long prompts run as forward passes of at most QWEN3_UBATCH tokens,
     * which bounds the activation memory (llama.cpp's n_ubatch); each pass
     * attends to the cache the earlier ones filled, so the logits are those
     * of one pass. */
    const int n_pass_max = INF_MIN(n, QWEN3_UBATCH);
    inf_status st = reserve_activations(s, n_pass_max, err);
    if (st) return st;
    const int n_past0 = s->n_past;
    const size_t n_vocab = (size_t)s->model->cfg.n_vocab;
    for (int i = 0; i < n; i += n_pass_max) {
        const int n_pass = INF_MIN(n_pass_max, n - i);
        const bool last = i + n_pass == n;
        inf_logits_mode pass_mode = mode == INF_LOGITS_ALL ? mode : last ? mode : INF_LOGITS_NONE;
        float *pass_logits = mode == INF_LOGITS_ALL ? logits + (size_t)i * n_vocab : logits;
        st = qwen3_forward(s, tokens + i, n_pass, pass_mode, pass_logits, err);
        if (st) {
            s->n_past = n_past0; /* nothing changed */
            return st;
        }
    }
    return INF_OK;
}

/* Layer `layer` of a cache [n_layer][n_head_kv][n_ctx][head_dim]. */
static inf_kv_view layer_cache(const inf_session *s, void *base, int layer) {
    const inf_kv_type type = s->model->opt.kv_type;
    const size_t head_dim = (size_t)s->model->cfg.head_dim;
    return (inf_kv_view){
        .data = (char *)base + inf_kv_type_bytes(type, (size_t)layer * s->kv_layer_elems),
        .type = type,
        .pos_stride = head_dim,
        .head_stride = (size_t)s->n_ctx * head_dim,
    };
}

inf_status qwen3_forward(inf_session *s, const int32_t *tokens, int n, inf_logits_mode mode,
                         float *logits, inf_error *err) {
    (void)err;
    const inf_model *m = s->model;
    const inf_ops *ops = m->ops;
    const qwen3_config *c = &m->cfg;
    const int pos0 = s->n_past;
    const size_t E = (size_t)c->n_embd;

    float *x = s->x;       /* [n][n_embd] residual stream */
    float *h = s->xn;      /* [n][n_embd] normed input, then projection output */
    ops->embed(ops, &m->token_embd, tokens, n, x);

    for (int l = 0; l < c->n_layer; l++) {
        const qwen3_layer *L = &m->layers[l];
        /* In the last layer only the rows whose logits are wanted need the
         * attention output projection and the FFN (as llama.cpp does). */
        int rows = n;
        size_t row0 = 0;
        if (l == c->n_layer - 1 && mode != INF_LOGITS_ALL) {
            rows = 1;
            row0 = (size_t)(n - 1);
        }

        ops->rmsnorm(ops, h, x, L->attn_norm, n, c->n_embd, c->rms_norm_eps);
        /* q [n][q_dim], k and v [n][kv_dim] */
        const inf_weight *qkv_w[3] = {&L->wq, &L->wk, &L->wv};
        float *const qkv[3] = {s->q, s->k, s->v};
        ops->matmul_group(ops, qkv_w, 3, h, n, qkv, s->scratch);
        ops->rmsnorm(ops, s->q, s->q, L->q_norm, n * c->n_head, c->head_dim, c->rms_norm_eps);
        ops->rmsnorm(ops, s->k, s->k, L->k_norm, n * c->n_head_kv, c->head_dim, c->rms_norm_eps);
        ops->rope_neox(ops, s->q, n, c->n_head, c->head_dim, pos0, c->rope_freq_base);
        ops->rope_neox(ops, s->k, n, c->n_head_kv, c->head_dim, pos0, c->rope_freq_base);
        if (m->kv_rot_qk) { /* rotated rows go into a Q8_0 cache (model.h) */
            ops->hadamard(ops, s->q, n * c->q_dim / m->kv_rot_qk, m->kv_rot_qk);
            ops->hadamard(ops, s->k, n * c->kv_dim / m->kv_rot_qk, m->kv_rot_qk);
        }
        if (m->kv_rot_v) ops->hadamard(ops, s->v, n * c->kv_dim / m->kv_rot_v, m->kv_rot_v);

        inf_kv_view kc = layer_cache(s, s->k_cache, l);
        inf_kv_view vc = layer_cache(s, s->v_cache, l);
        ops->kv_store(ops, &kc, &vc, s->k, s->v, n, pos0, c->n_head_kv, c->head_dim);
        inf_attn_shape shape = {
            .n_tok = n, .pos0 = pos0, .n_head = c->n_head, .n_head_kv = c->n_head_kv,
            .head_dim = c->head_dim, .scale = 1.0f / sqrtf((float)c->head_dim),
        };
        if (n == 1) ops->attn_decode(ops, &shape, s->q, &kc, &vc, s->attn);
        else ops->attn_prefill(ops, &shape, s->q, &kc, &vc, s->attn);

        float *attn = s->attn + row0 * (size_t)c->q_dim; /* [rows][q_dim] */
        if (m->kv_rot_v) ops->hadamard(ops, attn, rows * c->q_dim / m->kv_rot_v, m->kv_rot_v); /* back */
        float *xr = x + row0 * E; /* [rows][n_embd] */
        ops->matmul(ops, &L->wo, attn, rows, h, s->scratch);
        ops->add(ops, xr, h, (size_t)rows * E);

        ops->rmsnorm(ops, h, xr, L->ffn_norm, rows, c->n_embd, c->rms_norm_eps);
        const inf_weight *gate_up_w[2] = {&L->ffn_gate, &L->ffn_up};
        float *const gate_up[2] = {s->gate, s->up}; /* [rows][n_ff] each */
        ops->matmul_group(ops, gate_up_w, 2, h, rows, gate_up, s->scratch);
        ops->swiglu(ops, s->gate, s->gate, s->up, (size_t)rows * (size_t)c->n_ff);
        ops->matmul(ops, &L->ffn_down, s->gate, rows, h, s->scratch);  /* [rows][n_embd] */
        ops->add(ops, xr, h, (size_t)rows * E);
    }
    s->n_past += n;

    if (mode == INF_LOGITS_NONE) return INF_OK;
    int rows = mode == INF_LOGITS_ALL ? n : 1;
    const float *xr = x + (size_t)(n - rows) * E;
    ops->rmsnorm(ops, h, xr, m->output_norm, rows, c->n_embd, c->rms_norm_eps);
    ops->matmul(ops, &m->output, h, rows, logits, s->scratch); /* [rows][n_vocab] */
    return INF_OK;
}

/*
 * session.c — inf_session: one sequence with a contiguous KV cache, for
 * callers that drive the forward pass themselves (logits, the golden tests,
 * the prefill/decode benchmark). Its cache is a KV store of one block, so
 * it runs the same forward pass as the engine; the block holds the first
 * positions of the context and is moved to one twice as long when the
 * sequence outgrows it.
 */
#include "model/model.h"

#include "core/common.h"

#include <stdlib.h>
#include <string.h>

/* Positions of a session's first KV block (or its context, if shorter). */
enum { SESSION_KV_FIRST = 512 };

/* Allocates the session's KV block for `positions` positions, readied for
 * writing, and moves the cached rows into it. Nothing changes on failure.
 *
 * One block, so each head's rows of a layer are one stream (blocks of 64
 * positions of every layer, the engine's layout, decoded 11-28% slower
 * after 1000 and 2044 tokens); on huge pages (buffer_alloc), which
 * decoded after 17 1.4-2.6% faster than ordinary pages and fault 2 MiB at
 * a time, ~120 µs where 512 ordinary pages took ~10 µs each (Zen 5 VM).
 * A block as long as the context would make the whole cache resident at
 * the first token; one that doubles keeps it within 512 positions or
 * twice what the sequence holds. */
static inf_status kv_grow(inf_session *s, int positions, inf_error *err) {
    const inf_model *m = s->model;
    const inf_ops *b = m->backend;
    const size_t bytes = qwen3_kv_bytes(m, positions, 1);
    qwen3_kv grown = {.block_size = positions, .n_blocks = 1};
    grown.k = b->buffer_alloc(b, bytes);
    grown.v = b->buffer_alloc(b, bytes);
    if (!grown.k || !grown.v) {
        b->buffer_free(b, grown.k);
        b->buffer_free(b, grown.v);
        return inf_errorf(err, INF_ERR_NOMEM, "out of memory for a KV cache of %d positions (%zu bytes)", positions,
                          2 * bytes);
    }
    qwen3_kv_prefault(m, &grown, 0, 1);
    const size_t rows = inf_kv_type_bytes(m->opt.kv_type, (size_t)s->n_past * (size_t)m->cfg.head_dim);
    for (int l = 0; l < m->cfg.n_layer && rows; l++)
        for (int half = 0; half < 2; half++) {
            const inf_kv_view from = qwen3_kv_view(m, &s->kv, half ? s->kv.v : s->kv.k, l, inf_kv_single_block);
            const inf_kv_view to = qwen3_kv_view(m, &grown, half ? grown.v : grown.k, l, inf_kv_single_block);
            for (int h = 0; h < m->cfg.n_head_kv; h++)
                memcpy((char *)to.data + inf_kv_type_bytes(to.type, inf_kv_elem(&to, 0, h)),
                       (const char *)from.data + inf_kv_type_bytes(from.type, inf_kv_elem(&from, 0, h)), rows);
        }
    b->buffer_free(b, s->kv.k);
    b->buffer_free(b, s->kv.v);
    s->kv = grown;
    return INF_OK;
}

inf_status inf_session_new(inf_model *m, int n_ctx, inf_session **out, inf_error *err) {
    *out = NULL;
    if (n_ctx == 0) n_ctx = m->opt.n_ctx;
    if (n_ctx < 1 || n_ctx > m->cfg.n_ctx_max)
        return inf_errorf(err, INF_ERR_INVALID, "context length %d is outside 1..%d", n_ctx,
                          m->cfg.n_ctx_max);
    inf_session *s = calloc(1, sizeof *s);
    if (!s) return inf_errorf(err, INF_ERR_NOMEM, "out of memory for a session");
    s->model = m;
    s->n_ctx = n_ctx;
    inf_status st = kv_grow(s, INF_MIN(n_ctx, SESSION_KV_FIRST), err);
    if (!st) st = qwen3_work_reserve(m, &s->work, 1, err);
    if (st) {
        inf_session_free(s);
        return st;
    }
    *out = s;
    return INF_OK;
}

void inf_session_free(inf_session *s) {
    if (!s) return;
    qwen3_work_free(s->model, &s->work);
    s->model->backend->buffer_free(s->model->backend, s->kv.k);
    s->model->backend->buffer_free(s->model->backend, s->kv.v);
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

inf_status inf_session_set_rope_offset(inf_session *s, int offset, inf_error *err) {
    if (s->n_past != 0) return inf_errorf(err, INF_ERR_INVALID, "the RoPE offset is set on an empty session only");
    if (offset < 0 || offset > INT32_MAX - s->n_ctx)
        return inf_errorf(err, INF_ERR_INVALID, "RoPE offset %d is out of range", offset);
    s->rope_offset = offset;
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
     * of one pass. One token is a decode row; more are prompt rows. */
    const int n_pass_max = INF_MIN(n, QWEN3_UBATCH);
    inf_status st = qwen3_work_reserve(s->model, &s->work, n_pass_max, err);
    if (st) return st;
    if (s->n_past + n > s->kv.block_size) {
        st = kv_grow(s, INF_MIN(s->n_ctx, INF_MAX(s->n_past + n, 2 * s->kv.block_size)), err);
        if (st) return st;
    }
    const size_t n_vocab = (size_t)s->model->cfg.n_vocab;
    for (int i = 0; i < n; i += n_pass_max) {
        const int n_pass = INF_MIN(n_pass_max, n - i);
        const bool last = i + n_pass == n;
        const qwen3_seq_rows rows = {
            .n = n_pass,
            .pos0 = s->n_past,
            .rope_offset = s->rope_offset,
            .decode = n == 1,
            .blocks = inf_kv_single_block,
            .n_logits = mode == INF_LOGITS_ALL ? n_pass : last && mode == INF_LOGITS_LAST ? 1 : 0,
        };
        float *pass_logits = mode == INF_LOGITS_ALL ? logits + (size_t)i * n_vocab : logits;
        qwen3_forward(s->model, &s->work, &s->kv, tokens + i, &rows, 1, pass_logits);
        s->n_past += n_pass;
    }
    return INF_OK;
}

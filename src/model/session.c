/*
 * session.c — inf_session: one sequence with a contiguous KV cache, for
 * callers that drive the forward pass themselves (logits, the golden tests,
 * the prefill/decode benchmark). Its cache is a KV store of one block as
 * long as the context, so it runs the same forward pass as the engine.
 */
#include "model/model.h"

#include "core/common.h"

#include <stdlib.h>

/* Positions readied for writing at a time, ahead of the sequence. */
enum { SESSION_READY_STEP = 64 };

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
    s->kv.block_size = n_ctx;
    s->kv.n_blocks = 1;
    const size_t kv_bytes = qwen3_kv_bytes(m, n_ctx, 1, 0);
    /* Ordinary pages, readied as positions reach them (inf_session_eval).
     * Huge pages decoded after 17 1.4-2.6% faster, but the first token
     * writes a row of every head of every layer, which touches every 2 MiB
     * page of the cache at once: a block of 512 positions moved into one
     * twice as long when outgrown stalled the token that outgrew it 20-209
     * ms at 512, 66-383 at 1024 and ~680 at 2048 (0.6B, memory the VM had
     * not given before). In blocks of every layer (the engine's layout
     * then) huge pages grew with the sequence, but the block boundaries cut
     * the heads' streams: decode after 1000 and 2044 11-28% slower than one
     * block (0.6B Q4_K_M, Zen 5 VM, two sessions in one process, token by
     * token; the engine's pool now lays blocks in runs, model.h). */
    s->kv.k = m->backend->buffer_alloc(m->backend, kv_bytes, INF_BUFFER_SCATTERED);
    s->kv.v = m->backend->buffer_alloc(m->backend, kv_bytes, INF_BUFFER_SCATTERED);
    inf_status st = INF_OK;
    if (!s->kv.k || !s->kv.v)
        st = inf_errorf(err, INF_ERR_NOMEM, "out of memory for a KV cache of %zu bytes", 2 * kv_bytes);
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
    if (s->n_past + n > s->n_ready) { /* the rows these tokens write, and some ahead */
        const int ready = INF_MIN(s->n_ctx, (s->n_past + n + SESSION_READY_STEP - 1) / SESSION_READY_STEP *
                                                SESSION_READY_STEP);
        qwen3_kv_prefault_positions(s->model, &s->kv, inf_kv_single_block, s->n_ready, ready);
        s->n_ready = ready;
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

/*
 * qwen3.c — the Qwen3 forward pass over a batch of sequences.
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
 * A batch holds the rows of several sequences: decode rows (one generated
 * token each) first, then prompt chunks. Projections, the MLP and the
 * output head run as one matrix product over all rows; RoPE takes each
 * row's position; the KV store and attention run per sequence through its
 * block table (decode rows: the fused decode kernel, prompt rows: flash
 * attention). Every op computes a row from that row alone, and matmul keeps
 * decode and prefill rows apart where their kernels differ (ops.h), so a
 * sequence's logits do not depend on what else is in the batch, nor on
 * how its prompt is cut into chunks.
 *
 * Everything numeric goes through the op table, so faster backends change
 * no line here. The forward pass allocates nothing.
 */
#include "model/model.h"

#include "core/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void qwen3_work_free(const inf_model *m, qwen3_work *w) {
    const inf_ops *b = m->backend;
    void *const bufs[] = {w->x, w->xn, w->phase, w->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) b->buffer_free(b, bufs[i]);
    free(w->pos);
    free(w->keep);
    free(w->dec_shapes);
    free(w->dec_k);
    free(w->dec_v);
    free(w->embd_row);
    memset(w, 0, sizeof *w);
}

/* An activation buffer of `bytes`; one that a pass writes whole is readied
 * for writing now (ops.h buffer_prefault), not faulted in page by page. */
static void *work_buffer(const inf_ops *b, size_t bytes, bool written_whole) {
    void *p = b->buffer_alloc(b, bytes, INF_BUFFER_RUNS);
    if (p && written_whole && b->buffer_prefault) b->buffer_prefault(b, p, bytes);
    return p;
}

/* n floats rounded up to whole 64-byte lines */
static size_t whole_lines(size_t n) { return (n + 15) & ~(size_t)15; }

inf_status qwen3_work_reserve(const inf_model *m, qwen3_work *w, int n, inf_error *err) {
    if (n <= w->n_cap) return INF_OK;
    const qwen3_config *c = &m->cfg;
    const inf_ops *b = m->backend;
    qwen3_work_free(m, w);
    const size_t rows = (size_t)n;
    const int widest = INF_MAX(INF_MAX(c->n_embd, c->q_dim), c->n_ff);
    w->x = work_buffer(b, rows * (size_t)c->n_embd * sizeof(float), true);
    w->xn = work_buffer(b, rows * (size_t)c->n_embd * sizeof(float), true);
    /* q, k, v and attn live from the q/k/v product to the output
     * projection, gate and up from the gate/up product to ffn_down: never
     * together, so the two sets share one buffer (a 512-token pass of the
     * 0.6B: 12.6 MB less). Each part starts on a 64-byte boundary. */
    const size_t q_part = whole_lines(rows * (size_t)c->q_dim), kv_part = whole_lines(rows * (size_t)c->kv_dim),
                 ff_part = whole_lines(rows * (size_t)c->n_ff);
    w->phase = work_buffer(b, INF_MAX(2 * q_part + 2 * kv_part, 2 * ff_part) * sizeof(float), true);
    if (w->phase) {
        w->q = w->phase;
        w->k = w->q + q_part;
        w->v = w->k + kv_part;
        w->attn = w->v + kv_part;
        w->gate = w->phase;
        w->up = w->gate + ff_part;
    }
    w->scratch = work_buffer(b, rows * (size_t)widest * sizeof(float), false); /* rounded activations: in part */
    w->pos = malloc(rows * sizeof *w->pos);
    w->keep = malloc(rows * sizeof *w->keep);
    w->dec_shapes = malloc(rows * sizeof *w->dec_shapes);
    w->dec_k = malloc(rows * sizeof *w->dec_k);
    w->dec_v = malloc(rows * sizeof *w->dec_v);
    w->embd_row = m->embd_fd >= 0 ? malloc(m->token_embd.row_bytes) : NULL;
    if (!w->x || !w->xn || !w->phase || !w->scratch || !w->pos ||
        !w->keep || !w->dec_shapes || !w->dec_k || !w->dec_v || (m->embd_fd >= 0 && !w->embd_row)) {
        qwen3_work_free(m, w);
        return inf_errorf(err, INF_ERR_NOMEM, "out of memory for activations of %d tokens", n);
    }
    w->n_cap = n;
    return INF_OK;
}

size_t qwen3_kv_bytes(const inf_model *m, int block_size, int n_blocks, int run_shift) {
    const size_t run = (size_t)1 << run_shift, runs = ((size_t)n_blocks + run - 1) >> run_shift;
    const size_t elems = (size_t)m->cfg.n_layer * runs * run * (size_t)block_size * (size_t)m->cfg.kv_dim;
    return inf_kv_type_bytes(m->opt.kv_type, elems);
}

void qwen3_kv_prefault(const inf_model *m, const qwen3_kv *kv, int first, int count) {
    for (int32_t block = first; block < first + count; block++) /* its rows, as a table of one block */
        qwen3_kv_prefault_positions(m, kv, &block, 0, kv->block_size);
}

void qwen3_kv_copy_block(const inf_model *m, const qwen3_kv *kv, int32_t dst, int32_t src) {
    const inf_kv_type type = m->opt.kv_type;
    const size_t bytes = inf_kv_type_bytes(type, (size_t)kv->block_size * (size_t)m->cfg.head_dim);
    for (int half = 0; half < 2; half++)
        for (int l = 0; l < m->cfg.n_layer; l++) {
            const inf_kv_view to = qwen3_kv_view(m, kv, half ? kv->v : kv->k, l, &dst);
            const inf_kv_view from = qwen3_kv_view(m, kv, half ? kv->v : kv->k, l, &src);
            for (int h = 0; h < m->cfg.n_head_kv; h++) /* a head's rows of a block lie together */
                memcpy((char *)to.data + inf_kv_type_bytes(type, inf_kv_elem(&to, 0, h)),
                       (const char *)from.data + inf_kv_type_bytes(type, inf_kv_elem(&from, 0, h)), bytes);
        }
}

void qwen3_kv_prefault_positions(const inf_model *m, const qwen3_kv *kv, const int32_t *blocks, int p0, int p1) {
    const inf_ops *b = m->backend;
    if (!b->buffer_prefault || p0 >= p1) return;
    const inf_kv_type type = m->opt.kv_type;
    const size_t row_bytes = inf_kv_type_bytes(type, (size_t)m->cfg.head_dim);
    for (int l = 0; l < m->cfg.n_layer; l++)
        for (int half = 0; half < 2; half++) {
            const inf_kv_view v = qwen3_kv_view(m, kv, half ? kv->v : kv->k, l, blocks);
            for (int h = 0; h < m->cfg.n_head_kv; h++)
                for (int p = p0; p < p1;) {
                    const int end = INF_MIN(p1, (p / v.block_size + 1) * v.block_size); /* p's block */
                    b->buffer_prefault(b, (char *)v.data + inf_kv_type_bytes(type, inf_kv_elem(&v, p, h)),
                                       (size_t)(end - p) * row_bytes);
                    p = end;
                }
        }
}

inf_kv_view qwen3_kv_view(const inf_model *m, const qwen3_kv *kv, void *base, int layer, const int32_t *blocks) {
    const inf_kv_type type = m->opt.kv_type;
    const size_t head_dim = (size_t)m->cfg.head_dim, run = (size_t)1 << kv->run_shift;
    const size_t block_elems = (size_t)kv->block_size * head_dim;      /* one head's rows of a block */
    const size_t head_elems = run * block_elems;                      /* one head's rows of a run */
    const size_t layer_elems = (size_t)m->cfg.n_head_kv * head_elems; /* one layer's rows of a run */
    const size_t run_elems = (size_t)m->cfg.n_layer * layer_elems;    /* a run */
    return (inf_kv_view){
        .data = (char *)base + inf_kv_type_bytes(type, (size_t)layer * layer_elems),
        .type = type,
        .pos_stride = head_dim,
        .head_stride = head_elems,
        .block_stride = block_elems,
        .block_size = kv->block_size,
        .blocks = blocks,
        .run_shift = (unsigned)kv->run_shift,
        .run_skip = run_elems - run * block_elems,
    };
}

/* Copies rows keep[0..n) of src[.][width] to rows 0..n of dst (in place
 * when dst == src: keep is increasing, so no row is overwritten early). */
static void gather_rows(float *dst, const float *src, const int32_t *keep, int n, size_t width) {
    for (int i = 0; i < n; i++)
        if (dst != src || keep[i] != i)
            memmove(dst + (size_t)i * width, src + (size_t)keep[i] * width, width * sizeof(float));
}

/* x[n][n_embd] = the tokens' rows of token_embd. When those rows lie in
 * a file's mapping, they are read from the file with pread (~3 µs) into a
 * row's buffer and looked up there. Through the mapping, each lookup
 * faulted the page cache around its row into the process (fault-around:
 * ~200 KB a row, Linux 6.18; 60-90 µs a fault on the Zen 5 VM, 1-2% of a
 * 0.6B token), and over a long generation the process came to hold the
 * whole table beside its packed copy (the tied head). */
static void embed_tokens(const inf_model *m, qwen3_work *w, const int32_t *tokens, int n, float *x) {
    const inf_ops *ops = m->ops;
    if (m->embd_fd < 0) {
        ops->embed(ops, &m->token_embd, tokens, n, x);
        return;
    }
    const size_t E = (size_t)m->cfg.n_embd, row_bytes = m->token_embd.row_bytes;
    inf_weight row = m->token_embd; /* one row: the one read */
    row.rows = 1;
    row.data = w->embd_row;
    const int32_t only_row = 0;
    for (int i = 0; i < n; i++) {
        if (inf_pread_all(m->embd_fd, m->embd_offset + (uint64_t)tokens[i] * row_bytes, w->embd_row, row_bytes))
            ops->embed(ops, &row, &only_row, 1, x + (size_t)i * E);
        else /* the file went short under us: the mapping, as it is */
            ops->embed(ops, &m->token_embd, tokens + i, 1, x + (size_t)i * E);
    }
}

/* Tells the backend which weights the next product reads, while the ops
 * before it run (ops.h matmul_ahead): decode rows only. */
static void read_ahead(const inf_ops *ops, const inf_weight *const *w, int count, int n, int n_decode) {
    if (ops->matmul_ahead && n > 0 && n_decode == n) ops->matmul_ahead(ops, w, count, n);
}

void qwen3_forward(const inf_model *m, qwen3_work *w, const qwen3_kv *kv, const int32_t *tokens,
                   const qwen3_seq_rows *seqs, int n_seqs, float *logits) {
    const inf_ops *ops = m->ops;
    const qwen3_config *c = &m->cfg;
    const size_t E = (size_t)c->n_embd;

    /* rows, positions, decode rows, and the rows that need the last layer's
     * output projection and FFN: those whose logits are wanted (as
     * llama.cpp does). From there on, a row that is its sequence's only
     * logit row (a decode row, or the last row of a prompt chunk) runs as
     * a decode row, the leading ones of the kept rows (the decode rows,
     * then a sequence keeping one row, as the engine's batch and a session
     * make them): that kind is fixed by the row's role, not by the batch,
     * and the last layer and the output head then stream their weights
     * once instead of packing them for a gemm of one row (a 300-token
     * Q8_0 prefill spent ~20 ms more with the gemm, most of it on the
     * 151936-row head). Rows of sequences that keep all their rows stay
     * prompt rows. */
    int n = 0, n_decode = 0, n_keep = 0, n_keep_decode = 0;
    bool leading = true; /* every kept row so far runs as a decode row */
    for (int s = 0; s < n_seqs; s++) {
        const qwen3_seq_rows *sq = &seqs[s];
        for (int i = 0; i < sq->n; i++) {
            w->pos[n + i] = sq->pos0 + sq->rope_offset + i;
            if (i >= sq->n - sq->n_logits) w->keep[n_keep++] = n + i;
        }
        if (sq->decode) n_decode += sq->n;
        if (sq->n_logits > 0) {
            leading = leading && (sq->decode || sq->n_logits == 1);
            if (leading) n_keep_decode = n_keep;
        }
        n += sq->n;
    }

    float *x = w->x;  /* [n][n_embd] residual stream */
    float *h = w->xn; /* [n][n_embd] normed input, then projection output */
    embed_tokens(m, w, tokens, n, x);

    for (int l = 0; l < c->n_layer; l++) {
        const qwen3_layer *L = &m->layers[l];
        const inf_weight *qkv_w[3] = {&L->wq, &L->wk, &L->wv};
        read_ahead(ops, qkv_w, 3, n, n_decode);

        ops->rmsnorm(ops, h, x, L->attn_norm, n, c->n_embd, c->rms_norm_eps);
        /* q [n][q_dim], k and v [n][kv_dim] */
        float *const qkv[3] = {w->q, w->k, w->v};
        ops->matmul_group(ops, qkv_w, 3, h, n, n_decode, qkv, w->scratch);
        const inf_weight *wo = &L->wo;
        if (l < c->n_layer - 1 || n_keep == n) read_ahead(ops, &wo, 1, n, n_decode);
        ops->rmsnorm(ops, w->q, w->q, L->q_norm, n * c->n_head, c->head_dim, c->rms_norm_eps);
        ops->rmsnorm(ops, w->k, w->k, L->k_norm, n * c->n_head_kv, c->head_dim, c->rms_norm_eps);
        ops->rope_neox(ops, w->q, n, c->n_head, c->head_dim, w->pos, &c->rope);
        ops->rope_neox(ops, w->k, n, c->n_head_kv, c->head_dim, w->pos, &c->rope);
        if (m->kv_rot_qk) { /* rotated rows go into a Q8_0 cache (model.h) */
            ops->hadamard(ops, w->q, n * c->q_dim / m->kv_rot_qk, m->kv_rot_qk);
            ops->hadamard(ops, w->k, n * c->kv_dim / m->kv_rot_qk, m->kv_rot_qk);
        }
        if (m->kv_rot_v) ops->hadamard(ops, w->v, n * c->kv_dim / m->kv_rot_v, m->kv_rot_v);

        /* the leading decode sequences (one row each) store and attend in
         * one call; then each other sequence's rows */
        int n_dec = 0;
        while (n_dec < n_seqs && seqs[n_dec].decode && seqs[n_dec].n == 1) {
            const qwen3_seq_rows *sq = &seqs[n_dec];
            w->dec_k[n_dec] = qwen3_kv_view(m, kv, kv->k, l, sq->blocks);
            w->dec_v[n_dec] = qwen3_kv_view(m, kv, kv->v, l, sq->blocks);
            w->dec_shapes[n_dec] = (inf_attn_shape){
                .n_tok = 1, .pos0 = sq->pos0, .n_head = c->n_head, .n_head_kv = c->n_head_kv,
                .head_dim = c->head_dim, .scale = 1.0f / sqrtf((float)c->head_dim),
            };
            n_dec++;
        }
        if (n_dec)
            ops->attn_decode_seqs(ops, n_dec, w->dec_shapes, w->q, w->k, w->v, w->dec_k, w->dec_v, w->attn);
        for (int s = n_dec, row = n_dec; s < n_seqs; row += seqs[s].n, s++) {
            const qwen3_seq_rows *sq = &seqs[s];
            const inf_kv_view kc = qwen3_kv_view(m, kv, kv->k, l, sq->blocks);
            const inf_kv_view vc = qwen3_kv_view(m, kv, kv->v, l, sq->blocks);
            const float *q = w->q + (size_t)row * (size_t)c->q_dim;
            ops->kv_store(ops, &kc, &vc, w->k + (size_t)row * (size_t)c->kv_dim,
                          w->v + (size_t)row * (size_t)c->kv_dim, sq->n, sq->pos0, c->n_head_kv, c->head_dim);
            const inf_attn_shape shape = {
                .n_tok = sq->n, .pos0 = sq->pos0, .n_head = c->n_head, .n_head_kv = c->n_head_kv,
                .head_dim = c->head_dim, .scale = 1.0f / sqrtf((float)c->head_dim),
            };
            float *out = w->attn + (size_t)row * (size_t)c->q_dim;
            if (sq->decode) ops->attn_decode(ops, &shape, q, &kc, &vc, out);
            else ops->attn_prefill(ops, &shape, q, &kc, &vc, out);
        }

        int rows = n, rows_decode = n_decode;
        if (l == c->n_layer - 1) { /* only the rows whose logits are wanted go on */
            gather_rows(w->attn, w->attn, w->keep, n_keep, (size_t)c->q_dim);
            gather_rows(x, x, w->keep, n_keep, E);
            rows = n_keep;
            rows_decode = n_keep_decode;
            if (rows == 0) break;
        }
        /* attn [rows][q_dim] */
        if (m->kv_rot_v) ops->hadamard(ops, w->attn, rows * c->q_dim / m->kv_rot_v, m->kv_rot_v); /* back */
        ops->matmul(ops, &L->wo, w->attn, rows, rows_decode, h, w->scratch);
        const inf_weight *gate_up_w[2] = {&L->ffn_gate, &L->ffn_up};
        read_ahead(ops, gate_up_w, 2, rows, rows_decode);
        ops->add(ops, x, h, (size_t)rows * E);

        ops->rmsnorm(ops, h, x, L->ffn_norm, rows, c->n_embd, c->rms_norm_eps);
        float *const gate_up[2] = {w->gate, w->up}; /* [rows][n_ff] each */
        ops->matmul_group(ops, gate_up_w, 2, h, rows, rows_decode, gate_up, w->scratch);
        const inf_weight *down = &L->ffn_down;
        read_ahead(ops, &down, 1, rows, rows_decode);
        ops->swiglu(ops, w->gate, w->gate, w->up, (size_t)rows * (size_t)c->n_ff);
        ops->matmul(ops, &L->ffn_down, w->gate, rows, rows_decode, h, w->scratch); /* [rows][n_embd] */
        ops->add(ops, x, h, (size_t)rows * E);
    }

    if (n_keep == 0) return;
    const inf_weight *head = &m->output;
    read_ahead(ops, &head, 1, n_keep, n_keep_decode);
    ops->rmsnorm(ops, h, x, m->output_norm, n_keep, c->n_embd, c->rms_norm_eps);
    ops->matmul(ops, &m->output, h, n_keep, n_keep_decode, logits, w->scratch); /* [n_keep][n_vocab] */
    /* while the caller samples: the next decode step's first product */
    const inf_weight *qkv0[3] = {&m->layers[0].wq, &m->layers[0].wk, &m->layers[0].wv};
    read_ahead(ops, qkv0, 3, n_keep, n_keep_decode);
}

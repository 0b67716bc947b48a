/*
 * quantize_load.c — quantizing a loaded model's matrices while loading
 * (inf_load_options.quantize): every 2-D weight stored as F32, F16 or BF16
 * (token_embd and output included, as llama.cpp's quantizer treats them
 * for a Q8_0 file) becomes Q8_0; norms stay f32 (model.c keeps them as f32
 * copies anyway), matrices already quantized are kept.
 *
 * Two destinations. Where the backend repacks Q8_0 matrices (ops.h
 * weight_pack_made; model.c prepare_weights), a matrix is quantized
 * straight into its packed place, a few rows at a time on the backend's
 * threads (model_quantize_packed): no full-size Q8_0 copy of it ever
 * exists. The others (token_embd, whose rows the embedding lookup reads;
 * every matrix with --no-repack or an ISA that packs nothing) go to one
 * anonymous arena the model owns (model_quantize_weights), which with
 * copy_others also takes the matrices already quantized, so that with
 * --no-mmap every weight the forward pass multiplies is in anonymous
 * memory while the file itself is only mapped and read once. The same
 * copy serves --no-mmap without quantizing: the file is mapped, the
 * matrices repacked from it, and the ones not packed copied here. A
 * token_embd that is only looked up (untied, or its tied head packed) is
 * not copied unless converted: the lookup reads its rows from the file.
 *
 * Each row is widened to f32 and quantized as inf_quantize_row_q8_0 does
 * (the backend's vector version of it where it has one: ops.h
 * quantize_q8_0), the reference the synthetic-model writer uses, so an F32 checkpoint
 * quantized on load is bit-identical to the Q8_0 GGUF `inferno synth`
 * writes from the same weights (test_hf_checkpoint checks this), packed
 * or not. A row's result depends only on the row. The file's mapped pages
 * of the rows are given back as soon as they are quantized, so that the
 * file and the quantized weights are not both resident at the end.
 */
#include "model/model.h"

#include "core/common.h"
#include "core/dtype.h"
#include "core/pool.h"
#include "io/gguf_split.h"

#include <string.h>

static bool is_float_type(inf_dtype t) {
    return t == INF_DTYPE_F32 || t == INF_DTYPE_F16 || t == INF_DTYPE_BF16;
}

bool model_quantizes(const inf_model *m, const inf_weight *w) {
    return m->opt.quantize && is_float_type(w->type) && !w->packed;
}

bool model_quantized_shape(const inf_model *m, const inf_weight *w, inf_weight *out) {
    *out = *w;
    if (!model_quantizes(m, w)) return true;
    uint64_t row_bytes;
    if (!inf_dtype_row_bytes(m->opt.quantize_type, (uint64_t)w->cols, &row_bytes)) return false;
    out->type = m->opt.quantize_type;
    out->row_bytes = (size_t)row_bytes;
    out->data = NULL;
    return true;
}

/* Columns widened to f32 at a time (on the stack); a multiple of the
 * Q8_0 block, whose quantization depends on its own 32 values alone. */
enum { WIDEN_COLS = 1024 };

/* x[n] to Q8_0 blocks at dst: the backend's vector quantizer, or the reference. */
static void quantize_row(const inf_ops *b, const float *x, void *dst, int64_t n) {
    if (b->quantize_q8_0) b->quantize_q8_0(b, x, dst, n);
    else inf_quantize_row_q8_0(x, dst, n);
}

/* Rows [r0, r1) of w at dst, dst_row_bytes apart: quantized to Q8_0 when
 * the model quantizes w (F32, F16 or BF16), else copied as they are; then
 * the file's mapped pages of those rows go back (read-only: nothing reads
 * them again). */
static void quantize_rows(const inf_model *m, const inf_weight *w, int64_t r0, int64_t r1, uint8_t *dst,
                          size_t dst_row_bytes) {
    const size_t elem_bytes = model_quantizes(m, w) ? w->row_bytes / (size_t)w->cols : 0;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *src = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
        uint8_t *out = dst + (size_t)(r - r0) * dst_row_bytes;
        if (!elem_bytes) {
            memcpy(out, src, w->row_bytes);
        } else if (w->type == INF_DTYPE_F32) {
            quantize_row(m->backend, (const float *)src, out, w->cols);
        } else {
            float x[WIDEN_COLS];
            for (int64_t c = 0; c < w->cols; c += WIDEN_COLS) {
                const int64_t n = INF_MIN((int64_t)WIDEN_COLS, w->cols - c);
                inf_dequantize_row(w->type, src + (size_t)c * elem_bytes, x, n);
                quantize_row(m->backend, x, (inf_block_q8_0 *)out + c / INF_Q8_0_BLOCK, n);
            }
        }
    }
    const void *rows = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    const size_t n = (size_t)(r1 - r0) * w->row_bytes;
    if (gguf_data_mapped(m->file, rows, n)) inf_release_pages(rows, n);
}

/* ---- straight into the backend's packed layout */

typedef struct made_rows {
    const inf_model *m;
    const inf_weight *src;
    size_t row_bytes; /* of a quantized row */
} made_rows;

static void make_quantized_rows(void *ctx, int64_t r0, int64_t r1, void *rows) {
    const made_rows *mr = ctx;
    quantize_rows(mr->m, mr->src, r0, r1, rows, mr->row_bytes);
}

bool model_quantize_packed(inf_model *m, inf_weight *w, void *dst) {
    const inf_ops *b = m->backend;
    inf_weight q;
    if (!b->weight_pack_made || !model_quantizes(m, w) || !model_quantized_shape(m, w, &q)) return false;
    made_rows mr = {.m = m, .src = w, .row_bytes = q.row_bytes};
    if (!b->weight_pack_made(b, &q, make_quantized_rows, &mr, dst)) return false;
    m->weight_bytes -= (uint64_t)w->row_bytes * (uint64_t)w->rows;
    m->weight_bytes += (uint64_t)q.row_bytes * (uint64_t)q.rows;
    m->weight_type = q.type;
    *w = q; /* packed only: no unpacked rows (data NULL) */
    return true;
}

/* ---- into the model's arena */

typedef struct quant_matrix {
    inf_weight *w;
    uint8_t *dst;
    size_t dst_row_bytes;
    bool convert; /* quantized, not copied */
} quant_matrix;

typedef struct quant_task {
    int matrix;
    int64_t row0, row1;
} quant_task;

typedef struct quant_job {
    const inf_model *m;
    const quant_matrix *mats;
    const quant_task *tasks;
} quant_job;

static void quantize_task(void *ctx, int task, int thread) {
    (void)thread;
    const quant_job *job = ctx;
    const quant_task *t = &job->tasks[task];
    const quant_matrix *q = &job->mats[t->matrix];
    quantize_rows(job->m, q->w, t->row0, t->row1, q->dst + (size_t)t->row0 * q->dst_row_bytes, q->dst_row_bytes);
}

inf_status model_quantize_weights(inf_model *m, bool copy_others, inf_error *err) {
    const inf_dtype type = m->opt.quantize_type;
    const int per_layer = 7;
    const int cap = 2 + per_layer * m->cfg.n_layer;
    quant_matrix *mats = calloc((size_t)cap, sizeof *mats);
    inf_weight **all = calloc((size_t)cap, sizeof *all);
    quant_task *tasks = NULL;
    inf_pool *pool = NULL;
    inf_status st = INF_OK;
    if (!mats || !all) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", m->path);
        goto done;
    }
    int n_all = 0;
    /* token_embd only looked up (untied, or the tied head packed) and not
     * converted stays where it is: the lookup reads a row at a time */
    const bool embd_looked_up_only = !m->tied_output || m->output.packed;
    if (!embd_looked_up_only || model_quantizes(m, &m->token_embd)) all[n_all++] = &m->token_embd;
    if (!m->tied_output) all[n_all++] = &m->output;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        qwen3_layer *L = &m->layers[l];
        inf_weight *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        for (int i = 0; i < per_layer; i++) all[n_all++] = ws[i];
    }

    /* plan: the arena's layout (each matrix 64-byte aligned) and the tasks;
     * a matrix already packed (quantized straight there) has no rows here */
    int n_mats = 0;
    size_t arena = 0, n_tasks = 0;
    uint64_t old_bytes = 0, new_bytes = 0;
    for (int i = 0; i < n_all; i++) {
        inf_weight *w = all[i];
        const bool convert = model_quantizes(m, w);
        if (w->packed || (!convert && !copy_others)) continue;
        inf_weight q;
        if (!model_quantized_shape(m, w, &q)) {
            st = inf_errorf(err, INF_ERR_INVALID, "%s: cannot quantize '%s' to %s: %lld columns are not a multiple of %d",
                            m->path, w->name, inf_dtype_name(type), (long long)w->cols, INF_Q8_0_BLOCK);
            goto done;
        }
        mats[n_mats] = (quant_matrix){
            .w = w, .dst = (uint8_t *)(uintptr_t)arena, .dst_row_bytes = q.row_bytes, .convert = convert};
        arena += (q.row_bytes * (size_t)w->rows + 63) & ~(size_t)63;
        old_bytes += (uint64_t)w->row_bytes * (uint64_t)w->rows;
        new_bytes += (uint64_t)q.row_bytes * (uint64_t)w->rows;
        int64_t rows_per_task = INF_MAX((int64_t)1, ((int64_t)1 << 16) / w->cols);
        n_tasks += (size_t)((w->rows + rows_per_task - 1) / rows_per_task);
        n_mats++;
    }
    if (n_mats == 0) goto done;
    if (n_tasks > INT32_MAX) {
        st = inf_errorf(err, INF_ERR_INVALID, "%s: too many rows to quantize", m->path);
        goto done;
    }
    tasks = malloc(n_tasks * sizeof *tasks);
    m->quant_arena = inf_alloc_aligned(arena);
    m->quant_arena_bytes = m->quant_arena ? arena : 0;
    if (!tasks || !m->quant_arena || !(pool = inf_pool_new(INF_MAX(1, m->opt.n_threads)))) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for %zu bytes of %s weights", m->path, arena,
                        inf_dtype_name(type));
        goto done;
    }
    size_t k = 0;
    for (int i = 0; i < n_mats; i++) {
        quant_matrix *q = &mats[i];
        q->dst = (uint8_t *)m->quant_arena + (uintptr_t)q->dst;
        int64_t rows_per_task = INF_MAX((int64_t)1, ((int64_t)1 << 16) / q->w->cols);
        for (int64_t r = 0; r < q->w->rows; r += rows_per_task)
            tasks[k++] = (quant_task){i, r, INF_MIN(q->w->rows, r + rows_per_task)};
    }
    quant_job job = {.m = m, .mats = mats, .tasks = tasks};
    inf_pool_run(pool, (int)n_tasks, quantize_task, &job);
    int n_converted = 0;
    for (int i = 0; i < n_mats; i++) {
        inf_weight *w = mats[i].w;
        if (mats[i].convert) {
            w->type = type;
            n_converted++;
        }
        w->row_bytes = mats[i].dst_row_bytes;
        w->data = mats[i].dst;
    }
    if (m->tied_output && !m->output.packed) m->output = m->token_embd;
    m->weight_bytes = m->weight_bytes - old_bytes + new_bytes;
    if (n_converted) m->weight_type = type;
done:
    inf_pool_free(pool);
    free(tasks);
    free(all);
    free(mats);
    return st;
}

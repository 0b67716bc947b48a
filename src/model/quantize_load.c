/*
 * quantize_load.c — quantizing a loaded model's matrices while loading
 * (inf_load_options.quantize): every 2-D weight stored as F32, F16 or BF16
 * (token_embd and output included, as llama.cpp's quantizer treats them
 * for a Q8_0 file) becomes Q8_0 in one anonymous arena the model owns;
 * norms stay f32 (model.c keeps them as f32 copies anyway), matrices
 * already quantized are kept (copied into the arena with copy_others, so
 * that with --no-mmap every weight the forward pass reads is in anonymous
 * memory while the file itself is only mapped and read once).
 *
 * Each row is widened to f32 and quantized by inf_quantize_row_q8_0, the
 * reference the synthetic-model writer uses, so an F32 checkpoint
 * quantized on load is bit-identical to the Q8_0 GGUF `inferno synth`
 * writes from the same weights (test_hf_checkpoint checks this). Rows are
 * spread over a thread pool; a row's result depends only on the row.
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

typedef struct quant_matrix {
    inf_weight *w;
    uint8_t *dst;
    size_t dst_row_bytes;
} quant_matrix;

typedef struct quant_task {
    int matrix;
    int64_t row0, row1;
} quant_task;

typedef struct quant_job {
    const quant_matrix *mats;
    const quant_task *tasks;
    float *scratch; /* [n_threads][max_cols] */
    int64_t max_cols;
    const gguf_file *file;
} quant_job;

static void quantize_task(void *ctx, int task, int thread) {
    const quant_job *job = ctx;
    const quant_task *t = &job->tasks[task];
    const quant_matrix *q = &job->mats[t->matrix];
    const inf_weight *w = q->w;
    float *row = job->scratch + (size_t)thread * (size_t)job->max_cols;
    for (int64_t r = t->row0; r < t->row1; r++) {
        const uint8_t *src = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
        if (!is_float_type(w->type)) { /* copied as it is */
            memcpy(q->dst + (size_t)r * q->dst_row_bytes, src, w->row_bytes);
            continue;
        }
        const float *x = (const float *)src;
        if (w->type != INF_DTYPE_F32) {
            inf_dequantize_row(w->type, src, row, w->cols);
            x = row;
        }
        inf_quantize_row_q8_0(x, (inf_block_q8_0 *)(q->dst + (size_t)r * q->dst_row_bytes), w->cols);
    }
    /* the file's rows are not read again: their mapped pages go back now,
     * so that the file and the arena are not both resident at the end */
    const void *src = (const uint8_t *)w->data + (size_t)t->row0 * w->row_bytes;
    const size_t n = (size_t)(t->row1 - t->row0) * w->row_bytes;
    if (gguf_data_mapped(job->file, src, n)) inf_release_pages(src, n);
}

inf_status model_quantize_weights(inf_model *m, inf_dtype type, bool copy_others, inf_error *err) {
    if (type != INF_DTYPE_Q8_0)
        return inf_errorf(err, INF_ERR_INVALID, "cannot quantize on load to %s (only q8_0)", inf_dtype_name(type));
    const int per_layer = 7;
    const int cap = 2 + per_layer * m->cfg.n_layer;
    quant_matrix *mats = calloc((size_t)cap, sizeof *mats);
    inf_weight **all = calloc((size_t)cap, sizeof *all);
    quant_task *tasks = NULL;
    float *scratch = NULL;
    inf_pool *pool = NULL;
    inf_status st = INF_OK;
    if (!mats || !all) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", m->path);
        goto done;
    }
    int n_all = 0;
    all[n_all++] = &m->token_embd;
    if (!m->tied_output) all[n_all++] = &m->output;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        qwen3_layer *L = &m->layers[l];
        inf_weight *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        for (int i = 0; i < per_layer; i++) all[n_all++] = ws[i];
    }

    /* plan: the arena's layout (each matrix 64-byte aligned) and the tasks */
    int n_mats = 0;
    size_t arena = 0, n_tasks = 0;
    int64_t max_cols = 1;
    uint64_t old_bytes = 0, new_bytes = 0;
    for (int i = 0; i < n_all; i++) {
        inf_weight *w = all[i];
        bool convert = is_float_type(w->type);
        if (!convert && !copy_others) continue;
        uint64_t row_bytes = w->row_bytes;
        if (convert && !inf_dtype_row_bytes(type, (uint64_t)w->cols, &row_bytes)) {
            st = inf_errorf(err, INF_ERR_INVALID, "%s: cannot quantize '%s' to %s: %lld columns are not a multiple of %d",
                            m->path, w->name, inf_dtype_name(type), (long long)w->cols, INF_Q8_0_BLOCK);
            goto done;
        }
        mats[n_mats] = (quant_matrix){.w = w, .dst = (uint8_t *)(uintptr_t)arena, .dst_row_bytes = (size_t)row_bytes};
        arena += ((size_t)row_bytes * (size_t)w->rows + 63) & ~(size_t)63;
        old_bytes += (uint64_t)w->row_bytes * (uint64_t)w->rows;
        new_bytes += row_bytes * (uint64_t)w->rows;
        int64_t rows_per_task = INF_MAX((int64_t)1, ((int64_t)1 << 16) / w->cols);
        n_tasks += (size_t)((w->rows + rows_per_task - 1) / rows_per_task);
        max_cols = INF_MAX(max_cols, w->cols);
        n_mats++;
    }
    if (n_mats == 0) goto done;
    if (n_tasks > INT32_MAX) {
        st = inf_errorf(err, INF_ERR_INVALID, "%s: too many rows to quantize", m->path);
        goto done;
    }
    int n_threads = INF_MAX(1, m->opt.n_threads);
    tasks = malloc(n_tasks * sizeof *tasks);
    scratch = malloc((size_t)n_threads * (size_t)max_cols * sizeof *scratch);
    m->quant_arena = inf_alloc_aligned(arena);
    m->quant_arena_bytes = m->quant_arena ? arena : 0;
    if (!tasks || !scratch || !m->quant_arena || !(pool = inf_pool_new(n_threads))) {
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
    quant_job job = {.mats = mats, .tasks = tasks, .scratch = scratch, .max_cols = max_cols, .file = m->file};
    inf_pool_run(pool, (int)n_tasks, quantize_task, &job);
    int n_converted = 0;
    for (int i = 0; i < n_mats; i++) {
        inf_weight *w = mats[i].w;
        if (is_float_type(w->type)) {
            w->type = type;
            n_converted++;
        }
        w->row_bytes = mats[i].dst_row_bytes;
        w->data = mats[i].dst;
    }
    if (m->tied_output) m->output = m->token_embd;
    m->weight_bytes = m->weight_bytes - old_bytes + new_bytes;
    if (n_converted) m->weight_type = type;
done:
    inf_pool_free(pool);
    free(scratch);
    free(tasks);
    free(all);
    free(mats);
    return st;
}

/*
 * model.c — loading a Qwen3 GGUF: hyperparameters from the qwen3.* keys
 * (validated), every tensor checked for presence, shape and type and bound
 * to an inf_weight, the tokenizer from tokenizer.ggml.*, the op table.
 *
 * The path is a GGUF file or a Hugging Face checkpoint directory, which
 * hf_checkpoint.c opens as the GGUF llama.cpp's converter would write for
 * it; everything after opening is the same for both (open_weights,
 * load_tokenizer). Matrices can be quantized while loading
 * (quantize_load.c).
 *
 * Invariant after a successful load: every weight the forward pass reads
 * exists with exactly the shape the config implies, so qwen3.c never
 * checks shapes again.
 */
#include "model/model.h"

#include "backend/cpu.h"
#include "core/common.h"
#include "core/dtype.h"
#include "io/gguf_split.h"
#include "model/hf_checkpoint.h"
#include "tok/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <unistd.h>

/* Sanity bounds on hyperparameters: far above any Qwen3, low enough that
 * products of them cannot overflow the size arithmetic below. */
enum {
    MAX_LAYERS = 1024,
    MAX_EMBD = 1 << 17,
    MAX_FF = 1 << 19,
    MAX_HEADS = 1024,
    MAX_VOCAB = 1 << 22,
    MAX_CTX = 1 << 24,
};

void inf_load_options_default(inf_load_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->use_mmap = true;
    opt->kv_type = INF_KV_F32;
}

int inf_physical_cores(void) {
    /* Count distinct (physical id, core id) pairs; fall back to online CPUs. */
    FILE *f = fopen("/proc/cpuinfo", "r");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (!f) return online > 0 ? (int)online : 1;
    char line[256];
    int phys = -1, ids[4096], n = 0;
    while (fgets(line, sizeof line, f)) {
        int v;
        if (sscanf(line, "physical id : %d", &v) == 1) phys = v;
        else if (sscanf(line, "core id : %d", &v) == 1 && n < 4096) {
            int key = phys * 65536 + v, seen = 0;
            for (int i = 0; i < n; i++) seen |= ids[i] == key;
            if (!seen) ids[n++] = key;
        }
    }
    fclose(f);
    if (n > 0) return n;
    return online > 0 ? (int)online : 1;
}

/* Reads an integer hyperparameter into *out, checking 1 <= v <= max. */
static inf_status get_dim(const gguf_file *f, const char *key, bool optional, int max, int *out,
                          inf_error *err) {
    int64_t v = *out;
    inf_status st = gguf_get_int(f, key, optional, &v, err);
    if (st) return st;
    if (v < 1 || v > max)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: %s = %lld is out of range (1..%d)", f->path,
                          key, (long long)v, max);
    *out = (int)v;
    return INF_OK;
}

const char *inf_rope_scaling_name(inf_rope_scaling s) {
    return s == INF_ROPE_SCALING_LINEAR ? "linear" : s == INF_ROPE_SCALING_YARN ? "yarn" : "none";
}

bool inf_rope_scaling_from_name(const char *name, inf_rope_scaling *out) {
    static const inf_rope_scaling all[] = {INF_ROPE_SCALING_NONE, INF_ROPE_SCALING_LINEAR, INF_ROPE_SCALING_YARN};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(name, inf_rope_scaling_name(all[i]))) {
            *out = all[i];
            return true;
        }
    return false;
}

/* qwen3.rope.scaling.*, the keys llama.cpp reads for Qwen3 (llama_model's
 * load_hparams): type, factor (or the older rope.scale_linear),
 * original_context_length, attn_factor. It reads none of the converter's
 * yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow or
 * yarn_log_multiplier for Qwen3 (only for other architectures), so neither
 * do we: the same file gives the same frequencies. */
static inf_status load_rope_scaling(const gguf_file *f, qwen3_config *c, inf_error *err) {
    const gguf_string *type = NULL;
    inf_status st = gguf_get_string(f, "qwen3.rope.scaling.type", true, &type, err);
    if (st) return st;
    double factor = 0, attn = 1;
    if ((st = gguf_get_float(f, "qwen3.rope.scaling.factor", true, &factor, err))) return st;
    if (!gguf_find(f, "qwen3.rope.scaling.factor") &&
        (st = gguf_get_float(f, "qwen3.rope.scale_linear", true, &factor, err)))
        return st;
    if (!(factor >= 0) || factor > 1e6)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: qwen3.rope.scaling.factor = %g is out of range (0..1e6)", f->path,
                          factor);
    if ((st = gguf_get_float(f, "qwen3.rope.scaling.attn_factor", true, &attn, err))) return st;
    if (!(attn > 0) || attn > 1e6)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: qwen3.rope.scaling.attn_factor = %g is out of range", f->path,
                          attn);
    c->rope_orig_ctx = c->n_ctx_train;
    if ((st = get_dim(f, "qwen3.rope.scaling.original_context_length", true, MAX_CTX, &c->rope_orig_ctx, err)))
        return st;
    /* llama.cpp's default type is "linear" (a factor of 0 or 1 changes nothing) */
    c->rope_scaling = factor != 0 ? INF_ROPE_SCALING_LINEAR : INF_ROPE_SCALING_NONE;
    if (type && !inf_rope_scaling_from_name(type->data, &c->rope_scaling))
        return inf_errorf(err, INF_ERR_UNSUPPORTED,
                          "%s: qwen3.rope.scaling.type '%.32s' is not supported (none, linear or yarn)", f->path,
                          type->data);
    c->rope_scale = (float)factor;
    c->rope_attn_factor = (float)attn;
    return INF_OK;
}

/* The frequencies in use: the file's scaling, overridden by the load
 * options as llama.cpp's context parameters override it, and the longest
 * context that allows (llama.cpp's n_ctx_orig_yarn / freq_scale). */
static inf_status apply_rope_options(qwen3_config *c, const inf_load_options *o, const char *path, inf_error *err) {
    if (o->rope_scaling_set) {
        if ((unsigned)o->rope_scaling > INF_ROPE_SCALING_YARN)
            return inf_errorf(err, INF_ERR_INVALID, "unknown RoPE scaling %d", (int)o->rope_scaling);
        c->rope_scaling = o->rope_scaling;
    }
    if (!(o->rope_scale >= 0) || o->rope_scale > 1e6f)
        return inf_errorf(err, INF_ERR_INVALID, "RoPE scale %g is out of range (0..1e6)", (double)o->rope_scale);
    if (o->rope_scale != 0) c->rope_scale = o->rope_scale;
    if (o->yarn_orig_ctx < 0 || o->yarn_orig_ctx > MAX_CTX)
        return inf_errorf(err, INF_ERR_INVALID, "YaRN original context %d is out of range", o->yarn_orig_ctx);
    if (o->yarn_orig_ctx) c->rope_orig_ctx = o->yarn_orig_ctx;
    if (c->rope_scaling != INF_ROPE_SCALING_NONE && c->rope_scale == 0) c->rope_scaling = INF_ROPE_SCALING_NONE;
    if (c->rope_scaling == INF_ROPE_SCALING_NONE) c->rope_scale = 0;
    inf_rope_init(&c->rope, c->head_dim, c->rope_freq_base, c->rope_scaling, c->rope_scale, c->rope_orig_ctx,
                  c->rope_attn_factor);
    c->n_ctx_max = c->n_ctx_train;
    if (c->rope_scaling != INF_ROPE_SCALING_NONE && c->rope_scale > 1) {
        const double longest = (double)c->rope_orig_ctx * c->rope_scale;
        if (longest > c->n_ctx_max) c->n_ctx_max = longest < MAX_CTX ? (int)longest : MAX_CTX;
    }
    (void)path;
    return INF_OK;
}

static inf_status load_config(const gguf_file *f, qwen3_config *c, inf_error *err) {
    const gguf_string *arch = NULL;
    inf_status st = gguf_get_string(f, "general.architecture", false, &arch, err);
    if (st) return st;
    if (strcmp(arch->data, "qwen3") != 0)
        return inf_errorf(err, INF_ERR_UNSUPPORTED,
                          "%s: general.architecture is '%.64s'; inferno runs qwen3 models", f->path,
                          arch->data);
    if ((st = get_dim(f, "qwen3.block_count", false, MAX_LAYERS, &c->n_layer, err)) ||
        (st = get_dim(f, "qwen3.embedding_length", false, MAX_EMBD, &c->n_embd, err)) ||
        (st = get_dim(f, "qwen3.feed_forward_length", false, MAX_FF, &c->n_ff, err)) ||
        (st = get_dim(f, "qwen3.attention.head_count", false, MAX_HEADS, &c->n_head, err)))
        return st;
    c->n_head_kv = c->n_head;
    c->n_ctx_train = 4096;
    if ((st = get_dim(f, "qwen3.attention.head_count_kv", true, MAX_HEADS, &c->n_head_kv, err)) ||
        (st = get_dim(f, "qwen3.context_length", true, MAX_CTX, &c->n_ctx_train, err)))
        return st;
    if (c->n_head % c->n_head_kv != 0)
        return inf_errorf(err, INF_ERR_FORMAT,
                          "%s: qwen3.attention.head_count (%d) is not a multiple of "
                          "qwen3.attention.head_count_kv (%d)",
                          f->path, c->n_head, c->n_head_kv);
    c->head_dim = c->n_embd / c->n_head;
    if ((st = get_dim(f, "qwen3.attention.key_length", true, INF_MAX_HEAD_DIM, &c->head_dim, err)))
        return st;
    int value_length = c->head_dim;
    if ((st = get_dim(f, "qwen3.attention.value_length", true, INF_MAX_HEAD_DIM, &value_length, err)))
        return st;
    if (value_length != c->head_dim)
        return inf_errorf(err, INF_ERR_UNSUPPORTED,
                          "%s: qwen3.attention.value_length (%d) differs from key_length (%d)",
                          f->path, value_length, c->head_dim);
    if (c->head_dim % 2 != 0)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: qwen3.attention.key_length (%d) must be even (RoPE pairs)",
                          f->path, c->head_dim);
    double base = 10000.0, eps = 0;
    if ((st = gguf_get_float(f, "qwen3.rope.freq_base", true, &base, err)) ||
        (st = gguf_get_float(f, "qwen3.attention.layer_norm_rms_epsilon", false, &eps, err)))
        return st;
    if (!(base > 0) || base > 1e12)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: qwen3.rope.freq_base = %g is out of range",
                          f->path, base);
    if (!(eps >= 0) || eps > 1)
        return inf_errorf(err, INF_ERR_FORMAT,
                          "%s: qwen3.attention.layer_norm_rms_epsilon = %g is out of range", f->path, eps);
    c->rope_freq_base = (float)base;
    c->rms_norm_eps = (float)eps;
    if ((st = load_rope_scaling(f, c, err))) return st;
    c->q_dim = c->n_head * c->head_dim;
    c->kv_dim = c->n_head_kv * c->head_dim;
    return INF_OK;
}

static const gguf_tensor *find_checked(const gguf_file *f, const char *name, uint32_t n_dims,
                                       uint64_t ne0, uint64_t ne1, inf_error *err) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' is missing", f->path, name);
        return NULL;
    }
    uint64_t want[2] = {ne0, ne1};
    bool ok = t->n_dims == n_dims;
    for (uint32_t d = 0; ok && d < n_dims; d++) ok = t->ne[d] == want[d];
    if (!ok) {
        char have[96] = "", need[64];
        for (uint32_t d = 0; d < t->n_dims; d++) {
            size_t len = strlen(have);
            snprintf(have + len, sizeof have - len, "%s%llu", d ? ", " : "", (unsigned long long)t->ne[d]);
        }
        if (n_dims == 1) snprintf(need, sizeof need, "%llu", (unsigned long long)ne0);
        else snprintf(need, sizeof need, "%llu, %llu", (unsigned long long)ne0, (unsigned long long)ne1);
        inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' has shape [%s], expected [%s]", f->path,
                   name, have, need);
        return NULL;
    }
    return t;
}

/* Binds a matrix [rows][cols] (GGUF ne = {cols, rows}). */
static inf_status bind_matrix(const gguf_file *f, const char *name, int64_t rows, int64_t cols,
                              inf_weight *w, inf_error *err) {
    const gguf_tensor *t = find_checked(f, name, 2, (uint64_t)cols, (uint64_t)rows, err);
    if (!t) return err ? err->status : INF_ERR_FORMAT;
    uint64_t row_bytes;
    if (!inf_dtype_row_bytes(t->type, (uint64_t)cols, &row_bytes))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' row of %lld is not whole %s blocks",
                          f->path, name, (long long)cols, inf_dtype_name(t->type));
    w->name = t->name.data;
    w->type = t->type;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = (size_t)row_bytes;
    w->data = t->data;
    return INF_OK;
}

/* Binds a vector [n], converting it to an owned f32 copy. */
static inf_status bind_vector(const gguf_file *f, const char *name, int64_t n, float **out,
                              inf_error *err) {
    const gguf_tensor *t = find_checked(f, name, 1, (uint64_t)n, 0, err);
    if (!t) return err ? err->status : INF_ERR_FORMAT;
    if (n % inf_dtype_block_elems(t->type) != 0)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' is %s with %lld elements", f->path,
                          name, inf_dtype_name(t->type), (long long)n);
    float *v = inf_alloc_aligned((size_t)n * sizeof(float));
    if (!v) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for '%s'", f->path, name);
    inf_dequantize_row(t->type, t->data, v, n);
    *out = v;
    return INF_OK;
}

static inf_status bind_tensors(inf_model *m, inf_error *err) {
    const gguf_file *f = m->file;
    const qwen3_config *c = &m->cfg;
    inf_status st;
    const gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
    if (!emb) return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor 'token_embd.weight' is missing", f->path);
    if (emb->n_dims != 2 || emb->ne[1] < 1 || emb->ne[1] > MAX_VOCAB)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor 'token_embd.weight' has %u dims / %llu rows",
                          f->path, emb->n_dims, (unsigned long long)emb->ne[1]);
    m->cfg.n_vocab = (int)emb->ne[1];
    if ((st = bind_matrix(f, "token_embd.weight", c->n_vocab, c->n_embd, &m->token_embd, err)) ||
        (st = bind_vector(f, "output_norm.weight", c->n_embd, &m->output_norm, err)))
        return st;
    m->tied_output = gguf_find_tensor(f, "output.weight") == NULL;
    if (m->tied_output) m->output = m->token_embd;
    else if ((st = bind_matrix(f, "output.weight", c->n_vocab, c->n_embd, &m->output, err)))
        return st;

    m->layers = calloc((size_t)c->n_layer, sizeof *m->layers);
    if (!m->layers) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", f->path);
    uint64_t n_expected = 2 + (m->tied_output ? 0 : 1); /* token_embd, output_norm, output */
    for (int l = 0; l < c->n_layer; l++) {
        qwen3_layer *L = &m->layers[l];
        char name[64];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d." suffix ".weight", l), name)
        if ((st = bind_vector(f, NAME("attn_norm"), c->n_embd, &L->attn_norm, err)) ||
            (st = bind_matrix(f, NAME("attn_q"), c->q_dim, c->n_embd, &L->wq, err)) ||
            (st = bind_matrix(f, NAME("attn_k"), c->kv_dim, c->n_embd, &L->wk, err)) ||
            (st = bind_matrix(f, NAME("attn_v"), c->kv_dim, c->n_embd, &L->wv, err)) ||
            (st = bind_vector(f, NAME("attn_q_norm"), c->head_dim, &L->q_norm, err)) ||
            (st = bind_vector(f, NAME("attn_k_norm"), c->head_dim, &L->k_norm, err)) ||
            (st = bind_matrix(f, NAME("attn_output"), c->n_embd, c->q_dim, &L->wo, err)) ||
            (st = bind_vector(f, NAME("ffn_norm"), c->n_embd, &L->ffn_norm, err)) ||
            (st = bind_matrix(f, NAME("ffn_gate"), c->n_ff, c->n_embd, &L->ffn_gate, err)) ||
            (st = bind_matrix(f, NAME("ffn_up"), c->n_ff, c->n_embd, &L->ffn_up, err)) ||
            (st = bind_matrix(f, NAME("ffn_down"), c->n_embd, c->n_ff, &L->ffn_down, err)))
            return st;
#undef NAME
        n_expected += 11;
    }
    /* Anything else (e.g. blk.N for N >= block_count) means the file and its
     * metadata disagree: refuse rather than silently ignore weights. */
    if (f->n_tensors != n_expected) {
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            const char *name = f->tensors[i].name.data;
            int layer;
            if (sscanf(name, "blk.%d.", &layer) == 1 && (layer < 0 || layer >= c->n_layer))
                return inf_errorf(err, INF_ERR_FORMAT,
                                  "%s: tensor '%s' belongs to a layer past qwen3.block_count (%d)",
                                  f->path, name, c->n_layer);
        }
        return inf_errorf(err, INF_ERR_FORMAT, "%s: %llu tensors, expected %llu for %d layers",
                          f->path, (unsigned long long)f->n_tensors,
                          (unsigned long long)n_expected, c->n_layer);
    }
    return INF_OK;
}

/* The type holding most of the weight bytes; parameters counted on the way. */
static void summarize_weights(inf_model *m) {
    uint64_t bytes_by_type[64] = {0};
    m->n_params = 0;
    for (uint64_t i = 0; i < m->file->n_tensors; i++) {
        const gguf_tensor *t = &m->file->tensors[i];
        uint64_t n = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) n *= t->ne[d];
        m->n_params += n;
        if ((unsigned)t->type < 64) bytes_by_type[t->type] += t->nbytes;
    }
    int best = 0;
    for (int t = 1; t < 64; t++)
        if (bytes_by_type[t] > bytes_by_type[best]) best = t;
    m->weight_type = (inf_dtype)best;
    m->weight_bytes = m->file->data_bytes;
}

/* The matrices the forward pass multiplies (token_embd is only looked up,
 * unless it is also the output); NULL after the last. */
static inf_weight *matrix_at(inf_model *m, int i) {
    if (i == 0) return &m->output;
    const int l = (i - 1) / 7, k = (i - 1) % 7;
    if (l >= m->cfg.n_layer) return NULL;
    qwen3_layer *L = &m->layers[l];
    inf_weight *const w[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
    return w[k];
}

static bool within(const void *p, size_t n, const void *base, size_t len) {
    return base && (uintptr_t)p >= (uintptr_t)base && (uintptr_t)p + n <= (uintptr_t)base + len;
}

/* The bytes of matrix w packed for the backend (64-byte aligned), as w
 * will be once quantized on load; 0 when it will not be packed. */
static size_t packed_size(const inf_model *m, const inf_weight *w) {
    inf_weight as_used;
    if (!model_quantized_shape(m, w, &as_used)) return 0;
    return (m->backend->weight_packed_bytes(m->backend, &as_used) + 63) / 64 * 64;
}

/* The matrices made ready for the backend: quantized on load
 * (quantize_load.c) and repacked (ops.h weight_pack), into one arena on
 * huge pages (a page per matrix would waste up to 2 MiB each) laid out in
 * matrix_at order; a matrix the backend cannot pack stays as loaded (none
 * is packed if the arena cannot be had). A matrix to be quantized whose
 * quantized type the backend packs is quantized straight into its packed
 * place; the others into the model's arena first, then packed from there.
 * The loaded copy of a packed matrix is then given back: the file's mapped
 * pages (read-only: the embedding lookup faults its rows of token_embd
 * back in from the file, and gives them back again, qwen3.c), and the
 * model's anonymous copies (quantized on load, or read: --no-repack with
 * --no-mmap) but for token_embd's, whose data pointer is then NULL:
 * nothing reads it again. With --no-mmap the file is mapped to be
 * repacked or quantized, and what was not packed is copied into anonymous
 * memory afterwards (quantize_load.c), so that the file's bytes and their
 * packed copy are never resident together in full. */
static inf_status prepare_weights(inf_model *m, inf_error *err) {
    const inf_ops *b = m->backend;
    const gguf_file *f = m->file;
    size_t total = 0;
    if (b->weight_pack && !m->opt.no_repack && m->layers)
        for (int i = 0; matrix_at(m, i); i++) total += packed_size(m, matrix_at(m, i));
    if (total) m->packed_arena = inf_alloc_huge(total);
    if (m->packed_arena) { /* a tied output is token_embd, which stays unpacked */
        size_t at = 0;
        for (int i = 0; matrix_at(m, i); i++) {
            inf_weight *w = matrix_at(m, i);
            const size_t bytes = packed_size(m, w);
            /* where the backend cannot, w is quantized below and packed from there */
            if (bytes && !(i == 0 && m->tied_output) && model_quantizes(m, w))
                model_quantize_packed(m, w, (char *)m->packed_arena + at);
            at += bytes;
        }
    }
    inf_status st;
    if (m->opt.quantize && (st = model_quantize_weights(m, !m->opt.use_mmap, err))) return st;
    size_t at = 0;
    for (int i = 0; m->packed_arena && matrix_at(m, i); i++) {
        inf_weight *w = matrix_at(m, i);
        const size_t bytes = packed_size(m, w);
        void *dst = (char *)m->packed_arena + at;
        at += bytes;
        if (!bytes || w->packed || !b->weight_pack(b, w, dst)) continue;
        const size_t n = (size_t)w->rows * w->row_bytes;
        if (gguf_data_mapped(f, w->data, n)) { /* every shard's mapping, of a split GGUF or a directory */
            inf_release_pages(w->data, n);
        } else if (w->data != m->token_embd.data && (gguf_data_owned(f, w->data, n) ||
                                                     within(w->data, n, m->quant_arena, m->quant_arena_bytes))) {
            inf_release_pages(w->data, n);
            w->data = NULL;
        }
    }
    /* --no-mmap, mapped to be repacked (open_weights): what was not packed is copied */
    if (!m->opt.use_mmap && !m->opt.quantize && !m->opt.no_repack && (st = model_quantize_weights(m, true, err)))
        return st;
    return INF_OK;
}

void inf_model_free(inf_model *m) {
    if (!m) return;
    inf_free_aligned(m->packed_arena);
    if (m->layers) {
        for (int l = 0; l < m->cfg.n_layer; l++) {
            qwen3_layer *L = &m->layers[l];
            inf_free_aligned(L->attn_norm);
            inf_free_aligned(L->q_norm);
            inf_free_aligned(L->k_norm);
            inf_free_aligned(L->ffn_norm);
        }
        free(m->layers);
    }
    inf_free_aligned(m->output_norm);
    inf_free_aligned(m->quant_arena);
    if (m->tracer) inf_ops_trace_free(m->tracer);
    inf_ops_cpu_free((inf_ops *)m->backend); /* created by inf_ops_cpu_new */
    inf_tokenizer_free(m->tokenizer);
    gguf_close(m->file);
    free(m->path);
    free(m);
}

/* llama.cpp's rule (llama_kv_cache: attn_rot_k, attn_rot_v; LLAMA_ATTN_ROT_DISABLE
 * unset): rotate around a quantized cache when head_dim is a multiple of 64;
 * q and k by the largest power of two dividing head_dim, v and the output
 * by 64 ("smaller rotation matrices for V seem beneficial", its comment).
 * f32 and f16 caches are stored as computed. There is no off switch:
 * llama.cpp's only one is that environment variable, a debugging knob; the
 * rotation costs ~1% of a prefill and is what llama.cpp's q8_0 numbers,
 * which inferno is compared with, include. */
static void choose_kv_rotation(inf_model *m) {
    const int head_dim = m->cfg.head_dim;
    m->kv_rot_qk = m->kv_rot_v = 0;
    if (m->opt.kv_type != INF_KV_Q8_0 || head_dim % 64 != 0) return;
    m->kv_rot_qk = head_dim & -head_dim;
    m->kv_rot_v = 64;
}

/* The weights and metadata: a GGUF file (all shards of a split one), or a
 * checkpoint directory. */
static inf_status open_weights(const char *path, const inf_load_options *opt, gguf_file **out, inf_error *err) {
    /* quantizing or repacking reads the file once into anonymous memory
     * itself (prepare_weights): map it */
    gguf_open_mode mode = opt->use_mmap || opt->quantize || !opt->no_repack ? GGUF_OPEN_MMAP : GGUF_OPEN_READ;
    if (hf_checkpoint_is_dir(path))
        return hf_checkpoint_open(path, mode, opt->progress, opt->progress_user, out, err);
    return gguf_open_split(path, mode, opt->progress, opt->progress_user, out, err);
}

/* The tokenizer: tokenizer.ggml.* of a GGUF, tokenizer.json of a directory;
 * none when the file has none. The tokenizer keeps its own copy of the
 * vocabulary, so the file's arrays go (Qwen3's 151936 tokens and 151387
 * merges: ~15 MB of strings). */
static inf_status load_tokenizer(inf_model *m, inf_error *err) {
    if (hf_checkpoint_is_dir(m->path)) return hf_checkpoint_tokenizer(m->path, &m->tokenizer, err);
    if (!gguf_find(m->file, "tokenizer.ggml.model")) return INF_OK;
    const inf_status st = inf_tokenizer_from_gguf(m->file, &m->tokenizer, err);
    if (!st) {
        gguf_forget(m->file, "tokenizer.ggml.tokens");
        gguf_forget(m->file, "tokenizer.ggml.merges");
        gguf_forget(m->file, "tokenizer.ggml.token_type");
#ifdef __GLIBC__
        malloc_trim(0); /* their pages lie amid the heap: free() alone keeps them */
#endif
    }
    return st;
}

inf_status inf_model_load(const char *path, const inf_load_options *opt, inf_model **out,
                          inf_error *err) {
    *out = NULL;
    inf_load_options defaults;
    if (!opt) {
        inf_load_options_default(&defaults);
        opt = &defaults;
    }
    if (opt->n_threads < 0 || opt->n_ctx < 0)
        return inf_errorf(err, INF_ERR_INVALID, "n_threads and n_ctx must not be negative");
    if (opt->quantize && opt->quantize_type != INF_DTYPE_Q8_0)
        return inf_errorf(err, INF_ERR_INVALID, "cannot quantize on load to %s (only q8_0)",
                          inf_dtype_name(opt->quantize_type));
    inf_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
    }
    m->opt = *opt;
    m->embd_fd = -1;
    if (m->opt.n_threads == 0) m->opt.n_threads = inf_physical_cores();
    if (opt->progress) opt->progress(0.0, opt->progress_user);
    inf_status st = open_weights(path, opt, &m->file, err);
    if (!st) st = load_config(m->file, &m->cfg, err);
    if (!st) st = bind_tensors(m, err);
    if (!st && (unsigned)m->opt.kv_type > INF_KV_Q8_0)
        st = inf_errorf(err, INF_ERR_INVALID, "unknown KV cache type %d", (int)m->opt.kv_type);
    if (!st && m->opt.kv_type == INF_KV_Q8_0 && m->cfg.head_dim % INF_Q8_0_BLOCK != 0)
        st = inf_errorf(err, INF_ERR_INVALID,
                        "%s: a q8_0 KV cache needs qwen3.attention.key_length (head_dim %d) to be a multiple of %d",
                        path, m->cfg.head_dim, INF_Q8_0_BLOCK);
    if (!st) choose_kv_rotation(m);
    if (!st) st = apply_rope_options(&m->cfg, opt, path, err);
    if (!st && m->opt.n_ctx > m->cfg.n_ctx_max)
        st = inf_errorf(err, INF_ERR_INVALID, "context length %d exceeds the model's %d%s", m->opt.n_ctx,
                        m->cfg.n_ctx_max,
                        m->cfg.rope_scaling == INF_ROPE_SCALING_NONE
                            ? " (longer contexts need RoPE scaling: --rope-scaling yarn --rope-scale F)"
                            : "");
    if (!st) st = load_tokenizer(m, err);
    if (!st && m->tokenizer && inf_tokenizer_n_vocab(m->tokenizer) > m->cfg.n_vocab)
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: the tokenizer has %d tokens but token_embd has %d rows",
                        path, inf_tokenizer_n_vocab(m->tokenizer), m->cfg.n_vocab);
    if (st) {
        inf_model_free(m);
        return st;
    }
    if (m->opt.n_ctx == 0) m->opt.n_ctx = INF_MIN(m->cfg.n_ctx_train, 4096);
    summarize_weights(m);
    inf_isa isa;
    inf_ops *backend = NULL;
    st = inf_isa_select(&isa, err);
    if (!st) st = inf_ops_cpu_new(isa, m->opt.n_threads, &backend, err);
    m->backend = backend;
    m->ops = m->backend;
    if (!st) st = prepare_weights(m, err);
    if (!st && m->token_embd.data &&
        !gguf_data_source(m->file, m->token_embd.data, (size_t)m->token_embd.rows * m->token_embd.row_bytes,
                          &m->embd_fd, &m->embd_offset))
        m->embd_fd = -1;
    if (st) {
        inf_model_free(m);
        return st;
    }
    if (opt->trace) {
        m->tracer = inf_ops_trace_new(m->ops);
        if (!m->tracer) {
            inf_model_free(m);
            return inf_errorf(err, INF_ERR_NOMEM, "out of memory for the tracer");
        }
        m->ops = m->tracer;
    }
    if (opt->progress) opt->progress(1.0, opt->progress_user);
    *out = m;
    return INF_OK;
}

void inf_model_get_info(const inf_model *m, inf_model_info *out) {
    const gguf_kv *name = gguf_find(m->file, "general.name");
    *out = (inf_model_info){
        .architecture = "qwen3",
        .name = name && name->value.type == GGUF_TYPE_STRING ? name->value.str.data : "",
        .n_layer = m->cfg.n_layer,
        .n_embd = m->cfg.n_embd,
        .n_ff = m->cfg.n_ff,
        .n_head = m->cfg.n_head,
        .n_head_kv = m->cfg.n_head_kv,
        .head_dim = m->cfg.head_dim,
        .n_vocab = m->cfg.n_vocab,
        .n_ctx_train = m->cfg.n_ctx_train,
        .n_ctx_max = m->cfg.n_ctx_max,
        .rope_freq_base = m->cfg.rope_freq_base,
        .rope_scaling = m->cfg.rope_scaling,
        .rope_scale = m->cfg.rope_scaling == INF_ROPE_SCALING_NONE ? 1.0f : m->cfg.rope_scale,
        .rope_orig_ctx = m->cfg.rope_orig_ctx,
        .rope_attn_factor = m->cfg.rope.mscale,
        .rms_norm_eps = m->cfg.rms_norm_eps,
        .tied_output = m->tied_output,
        .weight_type = m->weight_type,
        .n_params = m->n_params,
        .weight_bytes = m->weight_bytes,
        .n_files = m->file->n_files,
        .file_bytes = m->file->file_bytes,
        .isa = m->backend->name,
        .n_threads = m->opt.n_threads,
    };
}

const inf_tokenizer *inf_model_tokenizer(const inf_model *m) { return m->tokenizer; }

size_t inf_model_tensor_count(const inf_model *m) { return (size_t)m->file->n_tensors; }

bool inf_model_tensor_info(const inf_model *m, size_t i, inf_tensor_info *out) {
    if (i >= m->file->n_tensors) return false;
    const gguf_tensor *t = &m->file->tensors[i];
    *out = (inf_tensor_info){.name = t->name.data, .type = t->type, .n_dims = (int)t->n_dims, .n_bytes = t->nbytes};
    for (int d = 0; d < 4; d++) out->ne[d] = t->ne[d];
    return true;
}

void inf_model_print_trace(const inf_model *m, FILE *out) {
    if (m->tracer) inf_ops_trace_print(m->tracer, out);
}

/*
 * quantize.c — inf_model_quantize: a GGUF's F32/F16/BF16 matrices
 * quantized the way llama.cpp's llama_model_quantize() does it without an
 * importance matrix, so the output's tensors are llama.cpp's bit for bit:
 *   - which tensors: those of 2 or more dimensions whose name ends in
 *     "weight" and does not contain "_norm.weight"; the others are copied;
 *   - the type of each (llama-quant.cpp's llama_tensor_get_type for a dense
 *     model like Qwen3, target_type below): the mix's type, except the
 *     output head (output.weight, or token_embd.weight when the output is
 *     tied to it), which becomes Q6_K unless the mix is Q8_0, or Q8_0 when
 *     its rows are not whole blocks of the mix's type; attn_v, attn_output
 *     and ffn_down get more bits in some mixes, some by layer
 *     (use_more_bits, the first eighth or sixteenth, the first 2 or 4
 *     attn_v) and some by n_gqa; then a type whose block does not divide
 *     the row falls back (IQ4_XS to IQ4_NL, Q2_K and Q3_K to Q4_0, Q4_K to
 *     Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, then F16);
 *   - the blocks: the quantizers ggml_quantize_chunk runs without an
 *     importance matrix (core/quant.h inf_quantize_weight_row), row by row
 *     on a thread pool;
 *   - the metadata: every key of the input, in order, with
 *     general.file_type set to the mix's llama_ftype and
 *     general.quantization_version to 2; tensors in the input's order.
 * The output is written to a temporary name and renamed into place.
 */
#include "inferno.h"

#include "core/common.h"
#include "core/dtype.h"
#include "core/pool.h"
#include "core/quant.h"
#include "io/gguf_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.h's llama_ftype of each mix written here (LLAMA_FTYPE_MOSTLY_*),
 * which is also general.file_type. */
typedef enum mix_ftype {
    FTYPE_Q4_0 = 2,
    FTYPE_Q4_1 = 3,
    FTYPE_Q8_0 = 7,
    FTYPE_Q5_0 = 8,
    FTYPE_Q5_1 = 9,
    FTYPE_Q2_K = 10,
    FTYPE_Q3_K_S = 11,
    FTYPE_Q3_K_M = 12,
    FTYPE_Q3_K_L = 13,
    FTYPE_Q4_K_S = 14,
    FTYPE_Q4_K_M = 15,
    FTYPE_Q5_K_S = 16,
    FTYPE_Q5_K_M = 17,
    FTYPE_Q6_K = 18,
    FTYPE_IQ4_NL = 25,
    FTYPE_IQ4_XS = 30,
} mix_ftype;

/* The mixes: llama-quantize's name, the type of most matrices
 * (llama_ftype_get_default_type) and the llama_ftype. */
typedef struct quant_mix {
    const char *name;
    inf_dtype type;
    mix_ftype ftype;
} quant_mix;

static const quant_mix mixes[] = {
    {"q8_0", INF_DTYPE_Q8_0, FTYPE_Q8_0},       {"q4_0", INF_DTYPE_Q4_0, FTYPE_Q4_0},
    {"q4_1", INF_DTYPE_Q4_1, FTYPE_Q4_1},       {"q5_0", INF_DTYPE_Q5_0, FTYPE_Q5_0},
    {"q5_1", INF_DTYPE_Q5_1, FTYPE_Q5_1},       {"iq4_nl", INF_DTYPE_IQ4_NL, FTYPE_IQ4_NL},
    {"iq4_xs", INF_DTYPE_IQ4_XS, FTYPE_IQ4_XS}, {"q2_k", INF_DTYPE_Q2_K, FTYPE_Q2_K},
    {"q3_k_s", INF_DTYPE_Q3_K, FTYPE_Q3_K_S},   {"q3_k_m", INF_DTYPE_Q3_K, FTYPE_Q3_K_M},
    {"q3_k_l", INF_DTYPE_Q3_K, FTYPE_Q3_K_L},   {"q4_k_s", INF_DTYPE_Q4_K, FTYPE_Q4_K_S},
    {"q4_k_m", INF_DTYPE_Q4_K, FTYPE_Q4_K_M},   {"q5_k_s", INF_DTYPE_Q5_K, FTYPE_Q5_K_S},
    {"q5_k_m", INF_DTYPE_Q5_K, FTYPE_Q5_K_M},   {"q6_k", INF_DTYPE_Q6_K, FTYPE_Q6_K},
};

#define MIX_NAMES \
    "q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k"

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* llama-quant.cpp's use_more_bits: the first and last eighth of the layers
 * and every third in between. */
static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static bool quantizable(const gguf_tensor *t) {
    const char *name = t->name.data;
    return t->n_dims >= 2 && ends_with(name, "weight") && !strstr(name, "_norm.weight");
}

/* llama.cpp's attn_v-like tensors (category_is_attn_v): the fused qkv and
 * kv_b projections share attn_v's rules and its counter. */
static bool is_attn_v(const char *name) {
    return strstr(name, "attn_qkv.weight") || strstr(name, "attn_kv_b.weight") || strstr(name, "attn_v.weight");
}

/* What llama.cpp's quantize state knows of the model: n_gqa (query heads
 * per KV head) and the counters. Tensors are visited in the file's order,
 * and attn_v and ffn_down are numbered in that order (checked on a
 * 28-layer file, where name order would differ); n_attn_v counts the
 * attn_v-like tensors, n_ffn_down is the layer count. */
typedef struct mix_state {
    int n_gqa;
    int i_attn_v, n_attn_v, i_ffn_down, n_ffn_down;
} mix_state;

/* llama-quant.cpp's tensor_type_fallback for rows that are not whole
 * blocks: the 256-types fall back to a 32-type, then to F16. */
static inf_dtype fallback_type(inf_dtype type, uint64_t cols) {
    if (cols % (uint64_t)inf_dtype_block_elems(type) == 0) return type;
    switch (type) {
    case INF_DTYPE_IQ4_XS: type = INF_DTYPE_IQ4_NL; break;
    case INF_DTYPE_Q2_K: case INF_DTYPE_Q3_K: type = INF_DTYPE_Q4_0; break;
    case INF_DTYPE_Q4_K: type = INF_DTYPE_Q5_0; break;
    case INF_DTYPE_Q5_K: type = INF_DTYPE_Q5_1; break;
    case INF_DTYPE_Q6_K: type = INF_DTYPE_Q8_0; break;
    default: break;
    }
    return cols % (uint64_t)inf_dtype_block_elems(type) == 0 ? type : INF_DTYPE_F16;
}

/* The type llama.cpp gives tensor t of file f for a mix (visited in order):
 * llama_tensor_get_type_impl's rules for a dense model that is not Falcon
 * and not LLM_TYPE_70B (no Qwen3 is), without an importance matrix. */
static inf_dtype target_type(const gguf_file *f, const gguf_tensor *t, const quant_mix *mix, mix_state *ms) {
    const char *name = t->name.data;
    if (!quantizable(t)) return t->type;
    const mix_ftype ft = mix->ftype;
    inf_dtype type = mix->type;
    const bool tied = gguf_find_tensor(f, "output.weight") == NULL;
    if (!strcmp(name, "output.weight") || (tied && !strcmp(name, "token_embd.weight"))) {
        if (t->ne[0] % (uint64_t)inf_dtype_block_elems(type) != 0) type = INF_DTYPE_Q8_0;
        else if (type != INF_DTYPE_Q8_0) type = INF_DTYPE_Q6_K;
    } else if (!strcmp(name, "token_embd.weight")) {
        /* an untied embedding keeps the mix's type */
    } else if (is_attn_v(name)) {
        const int i = ms->i_attn_v++;
        if (ft == FTYPE_Q2_K) type = ms->n_gqa >= 4 ? INF_DTYPE_Q4_K : INF_DTYPE_Q3_K;
        else if (ft == FTYPE_Q3_K_M) type = i < 2 ? INF_DTYPE_Q5_K : INF_DTYPE_Q4_K;
        else if (ft == FTYPE_Q3_K_L) type = INF_DTYPE_Q5_K;
        else if ((ft == FTYPE_IQ4_NL || ft == FTYPE_IQ4_XS) && ms->n_gqa >= 4) type = INF_DTYPE_Q5_K;
        else if ((ft == FTYPE_Q4_K_M || ft == FTYPE_Q5_K_M) && use_more_bits(i, ms->n_attn_v)) type = INF_DTYPE_Q6_K;
        else if (ft == FTYPE_Q4_K_S && i < 4) type = INF_DTYPE_Q5_K;
    } else if (strstr(name, "attn_output.weight")) {
        if (ft == FTYPE_Q2_K) type = INF_DTYPE_Q3_K;
        else if (ft == FTYPE_Q3_K_M) type = INF_DTYPE_Q4_K;
        else if (ft == FTYPE_Q3_K_L) type = INF_DTYPE_Q5_K;
    } else if (strstr(name, "ffn_down")) {
        const int i = ms->i_ffn_down++, n = ms->n_ffn_down;
        if (ft == FTYPE_Q2_K) type = INF_DTYPE_Q3_K;
        else if (ft == FTYPE_Q3_K_M) type = i < n / 16 ? INF_DTYPE_Q5_K : INF_DTYPE_Q4_K;
        else if (ft == FTYPE_Q3_K_L) type = INF_DTYPE_Q5_K;
        else if ((ft == FTYPE_Q4_K_M || ft == FTYPE_Q5_K_M) && use_more_bits(i, n)) type = INF_DTYPE_Q6_K;
        else if ((ft == FTYPE_IQ4_NL || ft == FTYPE_IQ4_XS || ft == FTYPE_Q4_K_S) && i < n / 8) type = INF_DTYPE_Q5_K;
    }
    return fallback_type(type, t->ne[0]);
}

/* What llama.cpp's hparams give the quantize state: n_gqa, ARCH.attention.
 * head_count over head_count_kv (which defaults to head_count; 0 without KV
 * heads), and n_ffn_down, ARCH.block_count (0 where a key is missing). */
static void model_hparams(const gguf_file *f, mix_state *ms) {
    const gguf_string *arch = NULL;
    inf_error ignored = {0};
    char key[160];
    int64_t n_head = 0, n_head_kv = 0, n_layer = 0;
    if (gguf_get_string(f, "general.architecture", true, &arch, &ignored) != INF_OK || !arch) return;
    snprintf(key, sizeof key, "%s.block_count", arch->data);
    if (gguf_get_int(f, key, true, &n_layer, &ignored) == INF_OK) ms->n_ffn_down = (int)n_layer;
    snprintf(key, sizeof key, "%s.attention.head_count", arch->data);
    if (gguf_get_int(f, key, true, &n_head, &ignored) != INF_OK) return;
    n_head_kv = n_head;
    snprintf(key, sizeof key, "%s.attention.head_count_kv", arch->data);
    if (gguf_get_int(f, key, true, &n_head_kv, &ignored) == INF_OK && n_head_kv > 0)
        ms->n_gqa = (int)(n_head / n_head_kv);
}

typedef struct quant_job {
    const gguf_tensor *t;
    inf_dtype type;
    uint64_t row_bytes, n_rows;
    void *out;
    float **scratch; /* [thread] one f32 row */
    int tasks;
} quant_job;

static void quant_task(void *ctx, int task, int thread) {
    const quant_job *j = ctx;
    const int64_t cols = (int64_t)j->t->ne[0];
    uint64_t in_row;
    inf_dtype_row_bytes(j->t->type, (uint64_t)cols, &in_row);
    const uint64_t r0 = j->n_rows * (uint64_t)task / (uint64_t)j->tasks, r1 = j->n_rows * ((uint64_t)task + 1) / (uint64_t)j->tasks;
    for (uint64_t r = r0; r < r1; r++) {
        float *row = j->scratch[thread];
        inf_dequantize_row(j->t->type, (const char *)j->t->data + r * in_row, row, cols);
        inf_quantize_weight_row(j->type, row, (char *)j->out + r * j->row_bytes, cols);
    }
}

inf_status inf_model_quantize(const char *in_path, const char *out_path, const char *mix_name, int n_threads,
                              void (*progress)(double fraction, void *user), void *progress_user, inf_error *err) {
    const quant_mix *mix = NULL;
    for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        if (!strcmp(mix_name, mixes[i].name)) mix = &mixes[i];
    if (!mix)
        return inf_errorf(err, INF_ERR_INVALID,
                          "quantize: '%s' is not a mix inferno writes (" MIX_NAMES ")", mix_name);
    if (n_threads < 1) n_threads = 1;
    gguf_file *f = NULL;
    inf_status st = gguf_open_split(in_path, GGUF_OPEN_MMAP, NULL, NULL, &f, err);
    if (st) return st;
    gguf_writer *w = gguf_writer_new();
    inf_pool *pool = inf_pool_new(n_threads);
    void **outs = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *outs);
    float **scratch = calloc((size_t)n_threads, sizeof *scratch);
    const gguf_tensor **order = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *order);
    if (!w || !pool || !outs || !scratch || !order) {
        st = inf_errorf(err, INF_ERR_NOMEM, "quantize: out of memory");
        goto done;
    }
    uint64_t total = 0, done_bytes = 0;
    size_t scratch_cols = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) total += f->tensors[i].nbytes;

    for (uint64_t i = 0; i < f->n_kv; i++) gguf_writer_set_value(w, f->kv[i].key.data, &f->kv[i].value);
    gguf_writer_set_u32(w, "general.quantization_version", 2);
    gguf_writer_set_u32(w, "general.file_type", mix->ftype);

    mix_state ms = {0};
    model_hparams(f, &ms);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        order[i] = &f->tensors[i];
        ms.n_attn_v += is_attn_v(order[i]->name.data);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = order[i];
        const inf_dtype type = target_type(f, t, mix, &ms);
        const void *data = t->data;
        if (type != t->type) {
            if (t->type != INF_DTYPE_F32 && t->type != INF_DTYPE_F16 && t->type != INF_DTYPE_BF16) {
                st = inf_errorf(err, INF_ERR_UNSUPPORTED,
                                "quantize: %s: tensor '%s' is already %s; quantize from an f32, f16 or bf16 file",
                                in_path, t->name.data, inf_dtype_name(t->type));
                goto done;
            }
            quant_job j = {.t = t, .type = type, .scratch = scratch};
            j.n_rows = t->ne[1] * t->ne[2] * t->ne[3];
            uint64_t bytes;
            if (!inf_dtype_row_bytes(type, t->ne[0], &j.row_bytes) || !inf_mul_u64(j.row_bytes, j.n_rows, &bytes) ||
                !(outs[i] = malloc(bytes ? (size_t)bytes : 1))) {
                st = inf_errorf(err, INF_ERR_NOMEM, "quantize: out of memory for tensor '%s'", t->name.data);
                goto done;
            }
            if ((size_t)t->ne[0] > scratch_cols) { /* one f32 row per thread, the widest so far */
                for (int k = 0; k < n_threads; k++) {
                    float *grown = realloc(scratch[k], (size_t)t->ne[0] * sizeof(float));
                    if (!grown) {
                        st = inf_errorf(err, INF_ERR_NOMEM, "quantize: out of memory");
                        goto done;
                    }
                    scratch[k] = grown;
                }
                scratch_cols = (size_t)t->ne[0];
            }
            j.out = outs[i];
            j.tasks = (int)INF_MIN((uint64_t)n_threads * 8, j.n_rows);
            if (j.tasks < 1) j.tasks = 1;
            inf_pool_run(pool, j.tasks, quant_task, &j);
            data = outs[i];
        }
        gguf_writer_add_tensor(w, t->name.data, type, t->n_dims, t->ne, data);
        done_bytes += t->nbytes;
        if (progress) progress(total ? (double)done_bytes / (double)total : 1.0, progress_user);
    }
    st = gguf_writer_write(w, out_path, err);
done:
    if (outs)
        for (uint64_t i = 0; i < f->n_tensors; i++) free(outs[i]);
    free(outs);
    if (scratch)
        for (int k = 0; k < n_threads; k++) free(scratch[k]);
    free(scratch);
    free(order);
    if (pool) inf_pool_free(pool);
    gguf_writer_free(w);
    gguf_close(f);
    return st;
}

/*
 * convert.c — `inferno convert`: a Hugging Face Qwen3 checkpoint directory
 * to the GGUF llama.cpp's converter writes for it.
 *
 * The directory is opened as hf_checkpoint.c presents it (every file and
 * shape checked, tensors under their GGUF names) and written by the
 * synthetic-model writer with the directory's weights in place of random
 * ones (synth.c, inf_synth_write_from): the same keys in the same order,
 * the tokenizer.ggml.* arrays from tokenizer.json padded to vocab_size as
 * the converter pads them, the chat template and special ids from
 * tokenizer_config.json, general.sampling.* from generation_config.json.
 * Matrices that keep their type are written straight from the mapping.
 */
#include "core/common.h"
#include "core/dtype.h"
#include "model/hf_checkpoint.h"
#include "model/synth.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void inf_convert_options_default(inf_convert_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->keep_type = true;
    opt->type = INF_DTYPE_BF16;
}

static int64_t key_int(const gguf_file *f, const char *key, int64_t fallback) {
    int64_t v = fallback;
    gguf_get_int(f, key, true, &v, NULL);
    return v;
}

static double key_float(const gguf_file *f, const char *key, double fallback) {
    double v = fallback;
    gguf_get_float(f, key, true, &v, NULL);
    return v;
}

/* The type holding most matrix bytes: general.file_type of a kept-type file. */
static inf_dtype main_matrix_type(const gguf_file *f) {
    uint64_t bytes[64] = {0};
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (f->tensors[i].n_dims == 2 && (unsigned)f->tensors[i].type < 64) bytes[f->tensors[i].type] += f->tensors[i].nbytes;
    int best = 0;
    for (int t = 1; t < 64; t++)
        if (bytes[t] > bytes[best]) best = t;
    return (inf_dtype)best;
}

inf_status inf_convert_checkpoint(const char *dir, const char *out_path, const inf_convert_options *opt, inf_error *err) {
    inf_convert_options defaults;
    if (!opt) {
        inf_convert_options_default(&defaults);
        opt = &defaults;
    }
    if (!dir || !out_path) return inf_errorf(err, INF_ERR_INVALID, "inf_convert_checkpoint: a path is NULL");
    if (!opt->keep_type && !inf_dtype_supported((uint32_t)opt->type))
        return inf_errorf(err, INF_ERR_INVALID, "cannot convert to type %d (f32, f16, bf16 or q8_0)", (int)opt->type);
    if (!hf_checkpoint_is_dir(dir))
        return inf_errorf(err, INF_ERR_IO, "%s: not a directory (convert reads a Hugging Face checkpoint directory)", dir);
    size_t n = strlen(dir) + 32;
    char *tokenizer = malloc(n), *tokenizer_config = malloc(n);
    gguf_file *src = NULL;
    inf_status st = INF_OK;
    if (!tokenizer || !tokenizer_config) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
        goto done;
    }
    snprintf(tokenizer, n, "%s/tokenizer.json", dir);
    snprintf(tokenizer_config, n, "%s/tokenizer_config.json", dir);
    struct stat sb;
    if (stat(tokenizer, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = inf_errorf(err, INF_ERR_IO, "%s: no tokenizer.json (a GGUF carries the tokenizer)", dir);
        goto done;
    }
    bool has_config = stat(tokenizer_config, &sb) == 0 && S_ISREG(sb.st_mode);
    if ((st = hf_checkpoint_open(dir, GGUF_OPEN_MMAP, NULL, NULL, &src, err))) goto done;

    inf_synth_options o;
    inf_synth_options_default(&o);
    const gguf_tensor *embd = gguf_find_tensor(src, "token_embd.weight");
    const gguf_string *name = NULL;
    gguf_get_string(src, "general.name", true, &name, NULL);
    o.n_layer = (int)key_int(src, "qwen3.block_count", 0);
    o.n_embd = (int)key_int(src, "qwen3.embedding_length", 0);
    o.n_ff = (int)key_int(src, "qwen3.feed_forward_length", 0);
    o.n_head = (int)key_int(src, "qwen3.attention.head_count", 0);
    o.n_head_kv = (int)key_int(src, "qwen3.attention.head_count_kv", o.n_head);
    o.head_dim = (int)key_int(src, "qwen3.attention.key_length", 0);
    o.n_ctx_train = (int)key_int(src, "qwen3.context_length", 4096);
    o.rope_freq_base = (float)key_float(src, "qwen3.rope.freq_base", 10000.0);
    o.rms_norm_eps = (float)key_float(src, "qwen3.attention.layer_norm_rms_epsilon", 1e-6);
    o.tied_output = gguf_find_tensor(src, "output.weight") == NULL;
    o.weight_type = opt->keep_type ? main_matrix_type(src) : opt->type;
    o.tokenizer_json = tokenizer;
    o.tokenizer_config_json = has_config ? tokenizer_config : NULL;
    o.n_vocab = embd ? (int)embd->ne[1] : 0;
    o.name = opt->name ? opt->name : name ? name->data : NULL;
    st = inf_synth_write_from(&o, src, opt->keep_type, out_path, err);
done:
    gguf_close(src);
    free(tokenizer);
    free(tokenizer_config);
    return st;
}

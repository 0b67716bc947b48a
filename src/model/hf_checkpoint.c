/*
 * hf_checkpoint.c — a Hugging Face Qwen3 directory as a gguf_file (the
 * contract is in hf_checkpoint.h).
 *
 * What llama.cpp's converter (convert_hf_to_gguf.py, Qwen3Model over
 * Qwen2Model over TextModel) does for Qwen3, and so what this does:
 *   - config.json: num_hidden_layers -> qwen3.block_count,
 *     max_position_embeddings -> context_length, hidden_size ->
 *     embedding_length, intermediate_size -> feed_forward_length,
 *     num_attention_heads -> attention.head_count, num_key_value_heads ->
 *     attention.head_count_kv, head_dim -> attention.key_length and
 *     value_length, rope_theta -> rope.freq_base, rms_norm_eps ->
 *     attention.layer_norm_rms_epsilon, rope_scaling (or rope_parameters)
 *     {rope_type "yarn", factor, original_max_position_embeddings} ->
 *     rope.scaling.{type, factor, original_context_length} (parse_rope_scaling);
 *   - tensors are renamed (model.layers.N.self_attn.q_proj.weight ->
 *     blk.N.attn_q.weight, ...) and nothing is permuted (the q/k
 *     permutation of its LlamaModel is not applied to Qwen2/Qwen3); GGUF
 *     lists dims fastest-varying first, so a PyTorch [out, in] matrix is
 *     ne = {in, out} with the same bytes; *.rotary_emb.inv_freq buffers
 *     (old checkpoints) are skipped;
 *   - generation_config.json -> general.sampling.{temp, top_k, top_p,
 *     min_p, penalty_repeat} (gguf-py's Metadata.load).
 * Where llama.cpp's converter would fail late or not at all, this refuses
 * early: rope_scaling other than linear or YaRN, attention biases,
 * sliding windows, activations other than silu.
 *
 * Defaults for absent keys are transformers' Qwen3Config defaults where
 * model.c has none of its own: rms_norm_eps 1e-6; head_dim absent means
 * hidden_size / num_attention_heads (llama.cpp's reading; every published
 * Qwen3 config states head_dim). tie_word_embeddings absent means tied
 * exactly when lm_head.weight is absent. A tied checkpoint that still
 * carries lm_head.weight loads tied (transformers ties it; the tensor is
 * not used).
 */
#include "model/hf_checkpoint.h"

#include "backend/ops.h"
#include "core/common.h"
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef unsigned long long ull;

/* Bounds on config.json's sizes: model.c's (so the error names the JSON key,
 * not the GGUF one), and what keeps the size arithmetic here from overflowing. */
enum {
    MAX_LAYERS = 1024,
    MAX_EMBD = 1 << 17,
    MAX_FF = 1 << 19,
    MAX_HEADS = 1024,
    MAX_VOCAB = 1 << 22,
    MAX_CTX = 1 << 24,
};

bool hf_checkpoint_is_dir(const char *path) {
    struct stat sb;
    return path && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t at = a;
    if (a && dir[a - 1] != '/') p[at++] = '/';
    memcpy(p + at, name, b + 1);
    return p;
}

static bool is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ------------------------------------------------------------------ storage */

/* What the gguf_file's tensor data points into. */
typedef struct hf_storage {
    safetensors_file **shards;
    size_t n_shards;
    void **copies; /* realigned tensors */
    size_t n_copies;
} hf_storage;

static void storage_free(void *p) {
    hf_storage *s = p;
    if (!s) return;
    for (size_t i = 0; i < s->n_shards; i++) safetensors_close(s->shards[i]);
    free(s->shards);
    for (size_t i = 0; i < s->n_copies; i++) inf_free_aligned(s->copies[i]);
    free(s->copies);
    free(s);
}

static bool storage_source(const void *p, const void *data, size_t n, int *fd, uint64_t *offset) {
    const hf_storage *s = p;
    for (size_t i = 0; i < s->n_shards; i++) {
        const safetensors_file *shard = s->shards[i];
        if (shard->map && (uintptr_t)data >= (uintptr_t)shard->map &&
            (uintptr_t)data + n <= (uintptr_t)shard->map + shard->map_bytes) {
            *fd = shard->map_fd;
            *offset = (uint64_t)((uintptr_t)data - (uintptr_t)shard->map);
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ JSON files */

static inf_status read_json(const char *path, cJSON **out, inf_error *err) {
    *out = NULL;
    size_t len = 0;
    char *text = NULL;
    inf_status st = inf_read_file(path, &text, &len, err);
    if (st) return st;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    bool trailing = false;
    if (root && end)
        for (const char *p = end; p < text + len; p++) trailing |= !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r');
    free(text);
    if (!root || trailing) {
        cJSON_Delete(root);
        return inf_errorf(err, INF_ERR_FORMAT, "%s: not valid JSON", path);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return inf_errorf(err, INF_ERR_FORMAT, "%s: expected a JSON object", path);
    }
    *out = root;
    return INF_OK;
}

static bool is_null(const cJSON *v) { return !v || cJSON_IsNull(v); }

/* An integer key in [lo, hi]; absent (or null) leaves *out and sets *found false. */
static inf_status cfg_int(const cJSON *cfg, const char *path, const char *key, int64_t lo, int64_t hi, bool required,
                          int64_t *out, bool *found, inf_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (found) *found = false;
    if (is_null(v)) {
        if (required) return inf_errorf(err, INF_ERR_FORMAT, "%s: \"%s\" is missing", path, key);
        return INF_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: \"%s\" must be an integer from %lld to %lld", path, key,
                          (long long)lo, (long long)hi);
    *out = (int64_t)d;
    if (found) *found = true;
    return INF_OK;
}

static inf_status cfg_float(const cJSON *cfg, const char *path, const char *key, double lo, double hi, double *out,
                            bool *found, inf_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    *found = false;
    if (is_null(v)) return INF_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= lo || v->valuedouble > hi)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: \"%s\" must be a number in (%g, %g]", path, key, lo, hi);
    *out = v->valuedouble;
    *found = true;
    return INF_OK;
}

static inf_status cfg_bool(const cJSON *cfg, const char *path, const char *key, bool *out, bool *found,
                           inf_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    *found = false;
    if (is_null(v)) return INF_OK;
    if (!cJSON_IsBool(v)) return inf_errorf(err, INF_ERR_FORMAT, "%s: \"%s\" must be true or false", path, key);
    *out = cJSON_IsTrue(v);
    *found = true;
    return INF_OK;
}

/* config.json's RoPE scaling, as llama.cpp's converter maps it to
 * qwen3.rope.scaling.* (convert_hf_to_gguf.py, TextModel): the object is
 * rope_parameters (transformers 5) or else rope_scaling; its rope_type (or
 * type) "linear" with a factor writes type and factor; "yarn" with a factor
 * also original_max_position_embeddings (from the object, else the
 * config's top level) and, when given, extrapolation_factor,
 * attention_factor (or attn_factor), beta_fast and beta_slow; "default"
 * writes nothing. Every other type (longrope, dynamic, llama3, ...) is
 * refused naming the key: the converter writes a type llama.cpp then
 * cannot run for Qwen3, or drops it silently, and neither is what the
 * checkpoint computes. */
typedef struct hf_rope_scaling {
    inf_rope_scaling kind;
    double factor;
    int64_t orig_ctx;
    /* optional YaRN parameters: written when found (llama.cpp reads none of them for Qwen3) */
    double ext_factor, attn_factor, beta_fast, beta_slow;
    bool has_ext_factor, has_attn_factor, has_beta_fast, has_beta_slow;
} hf_rope_scaling;

static inf_status parse_rope_scaling(const cJSON *cfg, const char *path, hf_rope_scaling *r, inf_error *err) {
    memset(r, 0, sizeof *r);
    const char *key = "rope_parameters";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (is_null(v)) {
        key = "rope_scaling";
        v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    }
    if (is_null(v)) return INF_OK;
    if (!cJSON_IsObject(v)) return inf_errorf(err, INF_ERR_FORMAT, "%s: \"%s\" must be an object or null", path, key);
    const char *type_key = "rope_type";
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(v, type_key);
    if (is_null(type)) type = cJSON_GetObjectItemCaseSensitive(v, type_key = "type");
    if (is_null(type)) return INF_OK; /* only parameters, e.g. rope_parameters {rope_theta} */
    if (!cJSON_IsString(type))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: \"%s\".%s must be a string", path, key, type_key);
    const char *t = type->valuestring;
    if (!strcmp(t, "default")) return INF_OK;
    if (strcmp(t, "linear") != 0 && strcmp(t, "yarn") != 0)
        return inf_errorf(err, INF_ERR_UNSUPPORTED,
                          "%s: \"%s\".%s '%.32s' is not supported (default, linear or yarn)", path, key, type_key, t);
    bool found;
    inf_status st = cfg_float(v, path, "factor", 0, 1e6, &r->factor, &found, err);
    if (st) return st;
    if (!found) return INF_OK; /* the converter writes nothing without a factor */
    if (!strcmp(t, "linear")) {
        r->kind = INF_ROPE_SCALING_LINEAR;
        return INF_OK;
    }
    r->kind = INF_ROPE_SCALING_YARN;
    const cJSON *from = v;
    if (is_null(cJSON_GetObjectItemCaseSensitive(v, "original_max_position_embeddings"))) from = cfg;
    if ((st = cfg_int(from, path, "original_max_position_embeddings", 1, MAX_CTX, true, &r->orig_ctx, NULL, err)))
        return st;
    if ((st = cfg_float(v, path, "extrapolation_factor", -1, 1e6, &r->ext_factor, &r->has_ext_factor, err)) ||
        (st = cfg_float(v, path, "attention_factor", 0, 1e6, &r->attn_factor, &r->has_attn_factor, err)) ||
        (!r->has_attn_factor &&
         (st = cfg_float(v, path, "attn_factor", 0, 1e6, &r->attn_factor, &r->has_attn_factor, err))) ||
        (st = cfg_float(v, path, "beta_fast", 0, 1e6, &r->beta_fast, &r->has_beta_fast, err)) ||
        (st = cfg_float(v, path, "beta_slow", 0, 1e6, &r->beta_slow, &r->has_beta_slow, err)))
        return st;
    return INF_OK;
}

/* The hyperparameters, as the loader will see them. */
typedef struct hf_config {
    int64_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab, n_ctx;
    bool has_ctx;
    double rope_theta, rms_eps;
    hf_rope_scaling rope;
    bool tied, tied_known;
} hf_config;

static inf_status parse_config(const char *path, const cJSON *cfg, hf_config *c, inf_error *err) {
    const cJSON *model_type = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    if (!is_null(model_type)) {
        if (!cJSON_IsString(model_type))
            return inf_errorf(err, INF_ERR_FORMAT, "%s: \"model_type\" must be a string", path);
        if (strcmp(model_type->valuestring, "qwen3") != 0)
            return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: \"model_type\" is '%.64s'; inferno runs qwen3 models", path,
                              model_type->valuestring);
    } else {
        const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
        if (!cJSON_IsString(first))
            return inf_errorf(err, INF_ERR_FORMAT, "%s: neither \"model_type\" nor \"architectures\" names the model", path);
        if (strcmp(first->valuestring, "Qwen3ForCausalLM") != 0)
            return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: \"architectures\" is '%.64s'; inferno runs Qwen3ForCausalLM",
                              path, first->valuestring);
    }
    inf_status st;
    bool found;
    if ((st = cfg_int(cfg, path, "num_hidden_layers", 1, MAX_LAYERS, true, &c->n_layer, NULL, err)) ||
        (st = cfg_int(cfg, path, "hidden_size", 1, MAX_EMBD, true, &c->n_embd, NULL, err)) ||
        (st = cfg_int(cfg, path, "intermediate_size", 1, MAX_FF, true, &c->n_ff, NULL, err)) ||
        (st = cfg_int(cfg, path, "num_attention_heads", 1, MAX_HEADS, true, &c->n_head, NULL, err)) ||
        (st = cfg_int(cfg, path, "vocab_size", 1, MAX_VOCAB, true, &c->n_vocab, NULL, err)))
        return st;
    c->n_head_kv = c->n_head;
    c->head_dim = c->n_embd / c->n_head;
    if ((st = cfg_int(cfg, path, "num_key_value_heads", 1, MAX_HEADS, false, &c->n_head_kv, NULL, err)) ||
        (st = cfg_int(cfg, path, "head_dim", 1, INF_MAX_HEAD_DIM, false, &c->head_dim, NULL, err)) ||
        (st = cfg_int(cfg, path, "max_position_embeddings", 1, MAX_CTX, false, &c->n_ctx, &c->has_ctx, err)))
        return st;
    if (c->head_dim < 1)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: hidden_size %lld / num_attention_heads %lld leaves no head_dim", path,
                          (long long)c->n_embd, (long long)c->n_head);
    if (c->n_head % c->n_head_kv != 0)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: \"num_attention_heads\" (%lld) is not a multiple of "
                          "\"num_key_value_heads\" (%lld)", path, (long long)c->n_head, (long long)c->n_head_kv);
    if (c->head_dim % 2 != 0)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: \"head_dim\" (%lld) must be even (RoPE pairs)", path,
                          (long long)c->head_dim);
    c->rms_eps = 1e-6;
    c->rope_theta = 10000.0;
    if ((st = cfg_float(cfg, path, "rms_norm_eps", 0, 1, &c->rms_eps, &found, err))) return st;
    const cJSON *rope_params = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters"); /* transformers 5 */
    if ((st = cfg_float(cfg, path, "rope_theta", 0, 1e12, &c->rope_theta, &found, err))) return st;
    if (!found && cJSON_IsObject(rope_params) &&
        (st = cfg_float(rope_params, path, "rope_theta", 0, 1e12, &c->rope_theta, &found, err)))
        return st;
    if ((st = parse_rope_scaling(cfg, path, &c->rope, err))) return st;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_act");
    if (!is_null(act) && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: \"hidden_act\" is not \"silu\"", path);
    bool flag = false;
    if ((st = cfg_bool(cfg, path, "attention_bias", &flag, &found, err))) return st;
    if (flag) return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: \"attention_bias\" is true; Qwen3 has no biases", path);
    flag = false;
    if ((st = cfg_bool(cfg, path, "use_sliding_window", &flag, &found, err))) return st;
    if (flag) return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: \"use_sliding_window\" is true; not supported", path);
    if ((st = cfg_bool(cfg, path, "tie_word_embeddings", &c->tied, &c->tied_known, err))) return st;
    return INF_OK;
}

/* ------------------------------------------------------------------ tensor names */

typedef struct name_map {
    const char *hf, *gguf;
    int shape; /* which expected shape (see expected_shape) */
} name_map;

enum { S_EMBD_VEC, S_HEAD_VEC, S_VOCAB_EMBD, S_Q_EMBD, S_KV_EMBD, S_EMBD_Q, S_FF_EMBD, S_EMBD_FF };

static const name_map global_names[] = {
    {"model.embed_tokens.weight", "token_embd.weight", S_VOCAB_EMBD},
    {"model.norm.weight", "output_norm.weight", S_EMBD_VEC},
    {"lm_head.weight", "output.weight", S_VOCAB_EMBD},
};

static const name_map layer_names[] = {
    {"input_layernorm.weight", "attn_norm.weight", S_EMBD_VEC},
    {"self_attn.q_proj.weight", "attn_q.weight", S_Q_EMBD},
    {"self_attn.k_proj.weight", "attn_k.weight", S_KV_EMBD},
    {"self_attn.v_proj.weight", "attn_v.weight", S_KV_EMBD},
    {"self_attn.o_proj.weight", "attn_output.weight", S_EMBD_Q},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", S_HEAD_VEC},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", S_HEAD_VEC},
    {"post_attention_layernorm.weight", "ffn_norm.weight", S_EMBD_VEC},
    {"mlp.gate_proj.weight", "ffn_gate.weight", S_FF_EMBD},
    {"mlp.up_proj.weight", "ffn_up.weight", S_FF_EMBD},
    {"mlp.down_proj.weight", "ffn_down.weight", S_EMBD_FF},
};
enum { N_LAYER_NAMES = sizeof layer_names / sizeof layer_names[0] };

/* PyTorch order ([out, in]); returns the number of dims. */
static uint32_t expected_shape(const hf_config *c, int shape, uint64_t out[2]) {
    uint64_t q = (uint64_t)c->n_head * (uint64_t)c->head_dim, kv = (uint64_t)c->n_head_kv * (uint64_t)c->head_dim;
    switch (shape) {
    case S_EMBD_VEC: out[0] = (uint64_t)c->n_embd; return 1;
    case S_HEAD_VEC: out[0] = (uint64_t)c->head_dim; return 1;
    case S_VOCAB_EMBD: out[0] = (uint64_t)c->n_vocab; out[1] = (uint64_t)c->n_embd; return 2;
    case S_Q_EMBD: out[0] = q; out[1] = (uint64_t)c->n_embd; return 2;
    case S_KV_EMBD: out[0] = kv; out[1] = (uint64_t)c->n_embd; return 2;
    case S_EMBD_Q: out[0] = (uint64_t)c->n_embd; out[1] = q; return 2;
    case S_FF_EMBD: out[0] = (uint64_t)c->n_ff; out[1] = (uint64_t)c->n_embd; return 2;
    default: out[0] = (uint64_t)c->n_embd; out[1] = (uint64_t)c->n_ff; return 2;
    }
}

/* Matches "model.layers.N.SUFFIX": the layer (-1 when the digits are not a
 * plain number) and the suffix; false for other names. */
static bool split_layer_name(const char *name, long *layer, const char **suffix) {
    static const char prefix[] = "model.layers.";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0) return false;
    const char *p = name + sizeof prefix - 1;
    long v = 0;
    const char *digits = p;
    while (*p >= '0' && *p <= '9') {
        if (v < 100000000) v = v * 10 + (*p - '0');
        p++;
    }
    if (p == digits || *p != '.') return false;
    *layer = (p - digits > 1 && digits[0] == '0') ? -1 : v;
    *suffix = p + 1;
    return true;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* ------------------------------------------------------------------ assembling the gguf_file */

typedef struct builder {
    gguf_file *f;
    size_t kv_cap;
    inf_error *err;
    bool failed;
} builder;

static gguf_kv *kv_add(builder *b, const char *key) {
    if (b->failed) return NULL;
    if (b->f->n_kv == b->kv_cap) {
        size_t cap = b->kv_cap ? 2 * b->kv_cap : 32;
        gguf_kv *kv = realloc(b->f->kv, cap * sizeof *kv);
        if (!kv) {
            b->failed = true;
            return NULL;
        }
        b->f->kv = kv;
        b->kv_cap = cap;
    }
    gguf_kv *kv = &b->f->kv[b->f->n_kv];
    memset(kv, 0, sizeof *kv);
    if (!(kv->key.data = strdup(key))) {
        b->failed = true;
        return NULL;
    }
    kv->key.len = strlen(key);
    b->f->n_kv++;
    return kv;
}

static void kv_u32(builder *b, const char *key, uint32_t v) {
    gguf_kv *kv = kv_add(b, key);
    if (kv) kv->value = (gguf_value){.type = GGUF_TYPE_UINT32, .u64 = v};
}
static void kv_i32(builder *b, const char *key, int32_t v) {
    gguf_kv *kv = kv_add(b, key);
    if (kv) kv->value = (gguf_value){.type = GGUF_TYPE_INT32, .i64 = v};
}
static void kv_f32(builder *b, const char *key, double v) {
    gguf_kv *kv = kv_add(b, key);
    if (kv) kv->value = (gguf_value){.type = GGUF_TYPE_FLOAT32, .f64 = (double)(float)v};
}
static void kv_str(builder *b, const char *key, const char *v) {
    gguf_kv *kv = kv_add(b, key);
    if (!kv) return;
    kv->value.type = GGUF_TYPE_STRING;
    if (!(kv->value.str.data = strdup(v))) {
        kv->value.type = GGUF_TYPE_UINT8; /* nothing to free */
        b->failed = true;
        return;
    }
    kv->value.str.len = strlen(v);
}

static void set_metadata(builder *b, const char *dir, const hf_config *c) {
    kv_str(b, "general.architecture", "qwen3");
    const char *end = dir + strlen(dir);
    while (end > dir && end[-1] == '/') end--;
    const char *base = end;
    while (base > dir && base[-1] != '/') base--;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(end - base), base);
    kv_str(b, "general.name", name);
    kv_u32(b, "qwen3.block_count", (uint32_t)c->n_layer);
    if (c->has_ctx) kv_u32(b, "qwen3.context_length", (uint32_t)c->n_ctx);
    kv_u32(b, "qwen3.embedding_length", (uint32_t)c->n_embd);
    kv_u32(b, "qwen3.feed_forward_length", (uint32_t)c->n_ff);
    kv_u32(b, "qwen3.attention.head_count", (uint32_t)c->n_head);
    kv_u32(b, "qwen3.attention.head_count_kv", (uint32_t)c->n_head_kv);
    kv_u32(b, "qwen3.attention.key_length", (uint32_t)c->head_dim);
    kv_u32(b, "qwen3.attention.value_length", (uint32_t)c->head_dim);
    const hf_rope_scaling *r = &c->rope;
    if (r->kind != INF_ROPE_SCALING_NONE) {
        kv_str(b, "qwen3.rope.scaling.type", inf_rope_scaling_name(r->kind));
        kv_f32(b, "qwen3.rope.scaling.factor", r->factor);
    }
    if (r->kind == INF_ROPE_SCALING_YARN) {
        kv_u32(b, "qwen3.rope.scaling.original_context_length", (uint32_t)r->orig_ctx);
        if (r->has_ext_factor) kv_f32(b, "qwen3.rope.scaling.yarn_ext_factor", r->ext_factor);
        if (r->has_attn_factor) kv_f32(b, "qwen3.rope.scaling.yarn_attn_factor", r->attn_factor);
        if (r->has_beta_fast) kv_f32(b, "qwen3.rope.scaling.yarn_beta_fast", r->beta_fast);
        if (r->has_beta_slow) kv_f32(b, "qwen3.rope.scaling.yarn_beta_slow", r->beta_slow);
    }
    kv_f32(b, "qwen3.rope.freq_base", c->rope_theta);
    kv_f32(b, "qwen3.attention.layer_norm_rms_epsilon", c->rms_eps);
}

/* generation_config.json's sampling keys, validated by the sampler's own
 * reader (sampling_defaults.c), as general.sampling.* keys. */
static inf_status set_sampling(builder *b, const char *dir, inf_error *err) {
    char *path = join(dir, "generation_config.json");
    if (!path) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
    inf_status st = INF_OK;
    if (is_file(path)) {
        inf_sampler_params p;
        inf_sampler_params_default(&p);
        p.temperature = p.top_p = p.min_p = p.repeat_penalty = NAN; /* NaN: not set by the file */
        p.top_k = -1;
        st = inf_sampler_params_from_generation_config(path, &p, err);
        if (!st) {
            if (!isnan(p.temperature)) kv_f32(b, "general.sampling.temp", p.temperature);
            if (p.top_k >= 0) kv_i32(b, "general.sampling.top_k", p.top_k);
            if (!isnan(p.top_p)) kv_f32(b, "general.sampling.top_p", p.top_p);
            if (!isnan(p.min_p)) kv_f32(b, "general.sampling.min_p", p.min_p);
            if (!isnan(p.repeat_penalty)) kv_f32(b, "general.sampling.penalty_repeat", p.repeat_penalty);
        }
    }
    free(path);
    return st;
}

/* ------------------------------------------------------------------ shards and the index */

typedef struct shard_progress {
    void (*fn)(double, void *);
    void *user;
    size_t index, count;
} shard_progress;

static void shard_progress_fn(double fraction, void *p) {
    const shard_progress *sp = p;
    sp->fn(((double)sp->index + fraction) / (double)sp->count, sp->user);
}

static inf_status add_shard(hf_storage *s, const char *path, safetensors_open_mode mode, size_t index, size_t count,
                            void (*progress)(double, void *), void *user, inf_error *err) {
    shard_progress sp = {progress, user, index, count};
    safetensors_file *f = NULL;
    inf_status st = safetensors_open(path, mode, progress ? shard_progress_fn : NULL, &sp, &f, err);
    if (st) return st;
    s->shards[s->n_shards++] = f;
    return INF_OK;
}

/* A shard name from the index: a plain file name in the directory. */
static bool plain_file_name(const char *name) {
    return name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Opens the shards the index names, in file-name order, and checks that
 * the index and the shards list the same tensors in the same places. */
static inf_status open_sharded(const char *dir, const char *index_path, safetensors_open_mode mode, hf_storage *s,
                               void (*progress)(double, void *), void *user, inf_error *err) {
    cJSON *index = NULL;
    inf_status st = read_json(index_path, &index, err);
    if (st) return st;
    const char **names = NULL, **files = NULL;
    char *shard_path = NULL;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(index, "weight_map");
    if (!cJSON_IsObject(map)) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: \"weight_map\" is %s", index_path, map ? "not an object" : "missing");
        goto done;
    }
    size_t n = (size_t)cJSON_GetArraySize(map);
    if (n == 0) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: \"weight_map\" is empty", index_path);
        goto done;
    }
    names = malloc(n * sizeof *names);
    files = malloc(n * sizeof *files);
    if (!names || !files) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", index_path);
        goto done;
    }
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, map) {
        if (!cJSON_IsString(item) || !plain_file_name(item->valuestring)) {
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: weight_map \"%.200s\" must name a file in the directory",
                            index_path, item->string);
            goto done;
        }
        names[i] = item->string;
        files[i] = item->valuestring;
        i++;
    }
    qsort(names, n, sizeof *names, cmp_str);
    for (i = 1; i < n; i++)
        if (!strcmp(names[i], names[i - 1])) {
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: weight_map lists tensor '%.200s' twice", index_path, names[i]);
            goto done;
        }
    qsort(files, n, sizeof *files, cmp_str);
    size_t n_files = 0;
    for (i = 0; i < n; i++)
        if (n_files == 0 || strcmp(files[i], files[n_files - 1])) files[n_files++] = files[i];
    if (!(s->shards = calloc(n_files, sizeof *s->shards))) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", index_path);
        goto done;
    }
    for (i = 0; i < n_files; i++) { /* all present before any is opened */
        free(shard_path);
        if (!(shard_path = join(dir, files[i]))) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
            goto done;
        }
        if (!is_file(shard_path)) {
            st = inf_errorf(err, INF_ERR_IO, "%s: missing, but %s names it", shard_path, index_path);
            goto done;
        }
    }
    for (i = 0; i < n_files; i++) {
        free(shard_path);
        if (!(shard_path = join(dir, files[i]))) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
            goto done;
        }
        if ((st = add_shard(s, shard_path, mode, i, n_files, progress, user, err))) goto done;
        const safetensors_file *shard = s->shards[i];
        for (size_t t = 0; t < shard->n_tensors; t++) {
            const char *tname = shard->tensors[t].name;
            const cJSON *where = cJSON_GetObjectItemCaseSensitive(map, tname);
            if (!where) {
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' is not in %s", shard_path, tname, index_path);
                goto done;
            }
            if (strcmp(where->valuestring, files[i]) != 0) {
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' is here, but %s places it in %.200s", shard_path,
                                tname, index_path, where->valuestring);
                goto done;
            }
        }
    }
    /* every indexed tensor is in its shard (the shards' names are unique per
     * shard and each maps back to its own shard, so counting suffices) */
    size_t total = 0;
    for (i = 0; i < s->n_shards; i++) total += s->shards[i]->n_tensors;
    if (total != n) {
        cJSON_ArrayForEach(item, map) {
            const char **file = bsearch(&item->valuestring, files, n_files, sizeof *files, cmp_str);
            if (!file || !safetensors_find(s->shards[file - files], item->string)) {
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' is listed in %.200s, which does not hold it",
                                index_path, item->string, item->valuestring);
                goto done;
            }
        }
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: the index lists %zu tensors, the shards hold %zu", index_path, n, total);
    }
done:
    free(shard_path);
    free(names);
    free(files);
    cJSON_Delete(index);
    return st;
}

/* ------------------------------------------------------------------ tensors */

typedef struct found_tensor {
    const safetensors_file *shard;
    const safetensors_tensor *t;
    const char *gguf_suffix; /* name_map.gguf */
    long layer;              /* -1 for the global ones */
} found_tensor;

static inf_status check_tensor(const hf_config *c, const safetensors_file *shard, const safetensors_tensor *t,
                               int shape, inf_error *err) {
    if (!t->supported)
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: tensor '%.200s' has dtype %s; inferno loads F32, F16 and BF16",
                          shard->path, t->name, t->dtype);
    uint64_t want[2];
    uint32_t n_dims = expected_shape(c, shape, want);
    bool ok = t->n_dims == n_dims;
    for (uint32_t d = 0; ok && d < n_dims; d++) ok = t->shape[d] == want[d];
    if (!ok) {
        char have[160] = "";
        for (uint32_t d = 0; d < t->n_dims; d++) {
            size_t len = strlen(have);
            snprintf(have + len, sizeof have - len, "%s%llu", d ? ", " : "", (ull)t->shape[d]);
        }
        char need[64];
        if (n_dims == 1) snprintf(need, sizeof need, "%llu", (ull)want[0]);
        else snprintf(need, sizeof need, "%llu, %llu", (ull)want[0], (ull)want[1]);
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' has shape [%s], config.json implies [%s]",
                          shard->path, t->name, have, need);
    }
    return INF_OK;
}

/* Maps every tensor of every shard; found[] is indexed global (0..2), then
 * 3 + layer * N_LAYER_NAMES + i. */
static inf_status map_tensors(const char *dir, const hf_config *c, hf_storage *s, found_tensor *found,
                              inf_error *err) {
    inf_status st;
    for (size_t k = 0; k < s->n_shards; k++) {
        const safetensors_file *shard = s->shards[k];
        for (size_t i = 0; i < shard->n_tensors; i++) {
            const safetensors_tensor *t = &shard->tensors[i];
            long slot = -1, layer = -1;
            int shape = 0;
            const char *gguf = NULL, *suffix;
            for (size_t g = 0; g < sizeof global_names / sizeof global_names[0]; g++)
                if (!strcmp(t->name, global_names[g].hf)) {
                    slot = (long)g;
                    shape = global_names[g].shape;
                    gguf = global_names[g].gguf;
                }
            if (slot < 0 && split_layer_name(t->name, &layer, &suffix)) {
                if (ends_with(suffix, "rotary_emb.inv_freq")) continue; /* a RoPE buffer, recomputed */
                for (int j = 0; j < N_LAYER_NAMES; j++)
                    if (!strcmp(suffix, layer_names[j].hf)) {
                        if (layer < 0 || layer >= c->n_layer)
                            return inf_errorf(err, INF_ERR_FORMAT,
                                              "%s: tensor '%.200s' belongs to no layer of the %lld in config.json",
                                              shard->path, t->name, (long long)c->n_layer);
                        slot = 3 + layer * N_LAYER_NAMES + j;
                        shape = layer_names[j].shape;
                        gguf = layer_names[j].gguf;
                    }
            }
            if (slot < 0)
                return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: tensor '%.200s' is not part of a Qwen3 model",
                                  shard->path, t->name);
            if (found[slot].t) /* only across shards: a shard's names are unique */
                return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' is also in %s", shard->path, t->name,
                                  found[slot].shard->path);
            if ((st = check_tensor(c, shard, t, shape, err))) return st;
            found[slot] = (found_tensor){shard, t, gguf, slot >= 3 ? layer : -1};
        }
    }
    for (long slot = 0; slot < 3 + c->n_layer * N_LAYER_NAMES; slot++) {
        if (found[slot].t || slot == 2) continue; /* lm_head: checked by the caller */
        if (slot < 2)
            return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' is missing", dir, global_names[slot].hf);
        long layer = (slot - 3) / N_LAYER_NAMES;
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor 'model.layers.%ld.%s' is missing (config.json has %lld layers)",
                          dir, layer, layer_names[(slot - 3) % N_LAYER_NAMES].hf, (long long)c->n_layer);
    }
    return INF_OK;
}

static inf_status build_tensors(builder *b, const hf_config *c, const found_tensor *found, hf_storage *s,
                                bool with_data, inf_error *err) {
    const long n_slots = 3 + c->n_layer * N_LAYER_NAMES;
    gguf_file *f = b->f;
    if (!(f->tensors = calloc((size_t)n_slots, sizeof *f->tensors)) ||
        !(s->copies = calloc((size_t)n_slots, sizeof *s->copies)))
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", f->path);
    /* GGUF's order as llama.cpp's converter writes Qwen3: token_embd, the
     * layers, output_norm, output */
    long order_n = 0, *order = malloc((size_t)n_slots * sizeof *order);
    if (!order) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", f->path);
    order[order_n++] = 0;
    for (long slot = 3; slot < n_slots; slot++) order[order_n++] = slot;
    order[order_n++] = 1;
    if (!c->tied) order[order_n++] = 2;
    inf_status st = INF_OK;
    for (long k = 0; k < order_n; k++) {
        const found_tensor *ft = &found[order[k]];
        const safetensors_tensor *t = ft->t;
        gguf_tensor *g = &f->tensors[f->n_tensors];
        char name[96];
        if (ft->layer >= 0) snprintf(name, sizeof name, "blk.%ld.%s", ft->layer, ft->gguf_suffix);
        else snprintf(name, sizeof name, "%s", ft->gguf_suffix);
        if (!(g->name.data = strdup(name))) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", f->path);
            break;
        }
        g->name.len = strlen(name);
        f->n_tensors++;
        g->n_dims = t->n_dims;
        for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) g->ne[d] = d < t->n_dims ? t->shape[t->n_dims - 1 - d] : 1;
        g->type = t->type;
        g->offset = t->begin;
        g->nbytes = t->end - t->begin;
        g->data = with_data ? t->data : NULL;
        if (g->data && (uintptr_t)g->data % t->elem_bytes != 0) {
            /* the format does not align tensors; the kernels read elements
             * through typed pointers, so a misaligned one gets a copy */
            void *copy = inf_alloc_aligned((size_t)g->nbytes);
            if (!copy) {
                st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for a copy of '%.200s'", f->path, t->name);
                break;
            }
            memcpy(copy, g->data, (size_t)g->nbytes);
            s->copies[s->n_copies++] = copy;
            g->data = copy;
        }
        f->data_bytes += g->nbytes;
    }
    free(order);
    return st;
}

inf_status hf_checkpoint_open(const char *dir, gguf_open_mode mode, void (*progress)(double fraction, void *user),
                              void *progress_user, gguf_file **out, inf_error *err) {
    *out = NULL;
    char *config_path = join(dir, "config.json"), *single = join(dir, "model.safetensors"),
         *index_path = join(dir, "model.safetensors.index.json");
    gguf_file *f = calloc(1, sizeof *f);
    hf_storage *s = calloc(1, sizeof *s);
    cJSON *cfg = NULL;
    found_tensor *found = NULL;
    inf_status st = INF_OK;
    if (!config_path || !single || !index_path || !f || !s || !(f->path = strdup(dir))) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
        goto done;
    }
    f->version = 3;
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    f->storage = s; /* from here gguf_close(f) releases s */
    f->storage_free = storage_free;
    f->storage_source = storage_source;
    if (!is_file(config_path)) {
        st = inf_errorf(err, INF_ERR_IO, "%s: not a regular file, and no config.json in it (a Hugging Face checkpoint)",
                        dir);
        goto done;
    }
    hf_config c = {0};
    if ((st = read_json(config_path, &cfg, err)) || (st = parse_config(config_path, cfg, &c, err))) goto done;

    safetensors_open_mode smode = mode == GGUF_OPEN_MMAP   ? SAFETENSORS_OPEN_MMAP
                                  : mode == GGUF_OPEN_READ ? SAFETENSORS_OPEN_READ
                                                           : SAFETENSORS_OPEN_METADATA_ONLY;
    if (is_file(single)) { /* transformers looks for the single file first */
        if (!(s->shards = calloc(1, sizeof *s->shards))) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
            goto done;
        }
        st = add_shard(s, single, smode, 0, 1, progress, progress_user, err);
    } else if (is_file(index_path)) {
        st = open_sharded(dir, index_path, smode, s, progress, progress_user, err);
    } else {
        st = inf_errorf(err, INF_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json", dir);
    }
    if (st) goto done;
    f->n_files = (int)s->n_shards;
    for (size_t i = 0; i < s->n_shards; i++) f->file_bytes += s->shards[i]->file_bytes;

    if (!(found = calloc((size_t)(3 + c.n_layer * N_LAYER_NAMES), sizeof *found))) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
        goto done;
    }
    if ((st = map_tensors(dir, &c, s, found, err))) goto done;
    if (!c.tied_known) c.tied = found[2].t == NULL;
    if (!c.tied && !found[2].t) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: tensor 'lm_head.weight' is missing and tie_word_embeddings is false",
                        dir);
        goto done;
    }
    builder b = {.f = f, .err = err};
    set_metadata(&b, dir, &c);
    if (!b.failed && (st = set_sampling(&b, dir, err))) goto done;
    if (b.failed) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
        goto done;
    }
    st = build_tensors(&b, &c, found, s, mode != GGUF_OPEN_METADATA_ONLY, err);
done:
    free(found);
    cJSON_Delete(cfg);
    free(config_path);
    free(single);
    free(index_path);
    if (st) {
        if (!f || !f->storage) storage_free(s);
        gguf_close(f); /* releases s through storage_free when set */
        return st;
    }
    *out = f;
    return INF_OK;
}

inf_status hf_checkpoint_tokenizer(const char *dir, inf_tokenizer **out, inf_error *err) {
    *out = NULL;
    char *path = join(dir, "tokenizer.json");
    if (!path) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", dir);
    inf_status st = is_file(path) ? inf_tokenizer_load(path, out, err) : INF_OK;
    free(path);
    return st;
}

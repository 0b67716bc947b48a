/*
 * synth.c — writes Qwen3 GGUF files with random weights, laid out exactly as
 * llama.cpp's converter lays out Qwen3 (the golden tiny-a files are the
 * reference): the same metadata keys in the same order and types, the same
 * tensor names, order, shapes and types, norms in f32 and matrices in the
 * chosen type.
 *
 * Vocabulary (from a Hugging Face tokenizer.json):
 *   full       every id of model.vocab and added_tokens, padded like the
 *              converter pads Qwen3 to its config's vocab_size (151936) with
 *              "[PAD<id>]" entries of type UNUSED;
 *   truncated  n_vocab entries: the first n_vocab - n_added BPE tokens, then
 *              the added tokens renumbered after them, and only the merges
 *              whose two parts and result all survive.
 *   Token types as the converter assigns them: 1 normal, 3 control (added
 *   tokens marked special, or that look special like "<|...|>"), 4 user
 *   defined (other added tokens), 5 unused (padding).
 *
 * Converting (inf_synth_write_from, `inferno convert`): the same file, with
 * the weights and sampling keys of an open source (a Hugging Face directory
 * as hf_checkpoint.c presents it) instead of random ones: each tensor is
 * the source's tensor of the same name and shape, each row converted to the
 * planned type (copied when the types agree, else widened to f32 and
 * rounded or quantized by the same functions as random rows).
 *
 * Weights: a deterministic function of (seed, tensor name, row), so the four
 * weight types are roundings of the same values, a fault that drops one
 * tensor leaves the others unchanged, and rows can be generated in parallel.
 * Values are near-normal (sum of four uniforms): matrices with standard
 * deviation 2/sqrt(fan_in) (fan_in = ne[0]), norm weights 1 + 0.1 z, the
 * scales the golden tiny-a files use; the final RMSNorm keeps the logits at
 * a standard deviation of about 2 at any depth.
 */
#include "model/synth.h"

#include "core/common.h"
#include "core/dtype.h"
#include "core/pool.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define QWEN3_CONFIG_VOCAB_SIZE 151936 /* vocab_size in Qwen3's config.json: rows of token_embd */

enum { TOKEN_NORMAL = 1, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4, TOKEN_UNUSED = 5 };

void inf_synth_options_default(inf_synth_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->n_layer = 28;
    opt->n_embd = 1024;
    opt->n_ff = 3072;
    opt->n_head = 16;
    opt->n_head_kv = 8;
    opt->head_dim = 128;
    opt->n_ctx_train = 40960;
    opt->rope_freq_base = 1e6f;
    opt->rms_norm_eps = 1e-6f;
    opt->weight_type = INF_DTYPE_Q8_0;
    opt->tied_output = true;
    opt->seed = 1;
    opt->n_vocab = 0;
}

/* ------------------------------------------------------------------ random numbers */

static uint64_t mix64(uint64_t z) { /* splitmix64's finalizer */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* n near-normal values mean + std * z: z is a sum of four 16-bit uniforms,
 * centred and scaled to unit variance, from one splitmix64 step each. */
static void fill_row(float *row, int64_t n, uint64_t row_seed, float mean, float std) {
    const float scale = std * (1.7320508f / 65536.0f); /* sqrt(3) / 65536: unit variance for the sum */
    uint64_t state = row_seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = mix64(state += 0x9e3779b97f4a7c15ull);
        int64_t sum = (int64_t)(r & 0xffff) + (int64_t)((r >> 16) & 0xffff) + (int64_t)((r >> 32) & 0xffff) +
                      (int64_t)(r >> 48);
        row[i] = mean + scale * (float)(sum - 131070);
    }
}

/* ------------------------------------------------------------------ vocabulary */

typedef struct vocab {
    cJSON *json;            /* tokenizer.json; token texts point into it */
    const char **texts;     /* [n] */
    int32_t *types;         /* [n] */
    int64_t n;
    int64_t n_ids;          /* ids the tokenizer defines (n may pad past them, or truncate) */
    char *pads;             /* "[PAD<id>]" texts, packed */
    char *merge_buf;        /* joined "a b" merges, packed */
    const char **merges;    /* [n_merges] */
    int64_t n_merges;
    uint32_t eos, pad, bos;
    char *chat_template;    /* from tokenizer_config.json, or NULL */
} vocab;

static void vocab_free(vocab *v) {
    cJSON_Delete(v->json);
    free(v->texts);
    free(v->types);
    free(v->pads);
    free(v->merge_buf);
    free(v->merges);
    free(v->chat_template);
}

/* Open-addressing map from token text to id (ids >= 0; capacity a power of two). */
typedef struct text_map {
    const char **keys;
    int64_t *ids;
    uint64_t mask;
} text_map;

static bool map_init(text_map *m, int64_t n) {
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n) cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->ids = malloc(cap * sizeof *m->ids);
    m->mask = cap - 1;
    return m->keys && m->ids;
}
static void map_free(text_map *m) {
    free(m->keys);
    free(m->ids);
}
static void map_put(text_map *m, const char *key, int64_t id) {
    uint64_t i = fnv1a(key) & m->mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & m->mask;
    if (!m->keys[i]) { /* the first id of a text wins */
        m->keys[i] = key;
        m->ids[i] = id;
    }
}
static int64_t map_get(const text_map *m, const char *key) {
    uint64_t i = fnv1a(key) & m->mask;
    while (m->keys[i]) {
        if (!strcmp(m->keys[i], key)) return m->ids[i];
        i = (i + 1) & m->mask;
    }
    return -1;
}

static cJSON *parse_json_file(const char *path, inf_error *err, inf_status *st) {
    size_t len;
    char *text;
    if ((*st = inf_read_file(path, &text, &len, err))) return NULL;
    cJSON *json = cJSON_ParseWithLength(text, len);
    free(text);
    if (!json) *st = inf_errorf(err, INF_ERR_FORMAT, "%s: not valid JSON", path);
    return json;
}

/* The converter marks added tokens that look like control tokens as CONTROL
 * even when tokenizer.json does not flag them special (e.g. <|fim_prefix|>). */
static bool looks_special(const char *t) {
    size_t n = strlen(t);
    if (n >= 4 && !strncmp(t, "<|", 2) && !strcmp(t + n - 2, "|>")) return true;
    /* the fullwidth-bar variant "<｜...｜>" (U+FF5C) */
    if (n >= 8 && !strncmp(t, "<\xef\xbd\x9c", 4) && !strcmp(t + n - 4, "\xef\xbd\x9c>")) return true;
    if (!strcmp(t, "<pad>") || !strcmp(t, "<mask>") || !strcmp(t, "<2mass>") || !strcmp(t, "[@BOS@]")) return true;
    return n >= 8 && !strncmp(t, "<unused", 7) && t[n - 1] == '>';
}

/* A special token's text from tokenizer_config.json: "text" or {"content": "text"}. */
static const char *config_token(const cJSON *config, const char *field, const char *fallback) {
    const cJSON *v = config ? cJSON_GetObjectItemCaseSensitive(config, field) : NULL;
    if (cJSON_IsString(v)) return v->valuestring;
    if (cJSON_IsObject(v)) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
        if (cJSON_IsString(c)) return c->valuestring;
    }
    return fallback;
}

static inf_status vocab_load(const inf_synth_options *opt, vocab *v, inf_error *err) {
    const char *path = opt->tokenizer_json;
    inf_status st = INF_OK;
    if (!(v->json = parse_json_file(path, err, &st))) return st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(v->json, "model");
    const cJSON *bpe = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(v->json, "added_tokens");
    if (!cJSON_IsObject(bpe) || !cJSON_IsArray(merges))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: no model.vocab object or model.merges array", path);
    if (added && !cJSON_IsArray(added)) return inf_errorf(err, INF_ERR_FORMAT, "%s: added_tokens is not an array", path);

    /* every id, in a table indexed by id; added tokens override BPE entries */
    const int64_t max_id = 1 << 24;
    int64_t n_all = 0, n_added = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, bpe) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble >= (double)max_id)
            return inf_errorf(err, INF_ERR_FORMAT, "%s: model.vocab entry '%.60s' has a bad id", path, it->string);
        n_all = INF_MAX(n_all, (int64_t)it->valuedouble + 1);
    }
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= (double)max_id || !cJSON_IsString(content))
            return inf_errorf(err, INF_ERR_FORMAT, "%s: added_tokens entry without a valid id and content", path);
        n_all = INF_MAX(n_all, (int64_t)id->valuedouble + 1);
        n_added++;
    }
    const char **all_texts = calloc((size_t)n_all + 1, sizeof *all_texts);
    int32_t *all_types = calloc((size_t)n_all + 1, sizeof *all_types);
    int64_t *order = malloc(((size_t)n_all + 1) * sizeof *order);
    if (!all_texts || !all_types || !order) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    cJSON_ArrayForEach(it, bpe) {
        int64_t id = (int64_t)it->valuedouble;
        all_texts[id] = it->string;
        all_types[id] = TOKEN_NORMAL;
    }
    cJSON_ArrayForEach(it, added) {
        int64_t id = (int64_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
        const char *text = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        bool special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
        all_texts[id] = text;
        all_types[id] = special || looks_special(text) ? TOKEN_CONTROL : TOKEN_USER_DEFINED;
    }

    /* which ids are kept, in output order */
    int64_t n_out, n_order = 0;
    if (opt->n_vocab == 0) {
        n_out = INF_MAX(n_all, (int64_t)QWEN3_CONFIG_VOCAB_SIZE);
        for (int64_t id = 0; id < n_all; id++) order[n_order++] = id;
    } else if (opt->n_vocab >= n_all) {
        n_out = opt->n_vocab;
        for (int64_t id = 0; id < n_all; id++) order[n_order++] = id;
    } else {
        n_out = opt->n_vocab;
        if (n_out <= n_added) {
            st = inf_errorf(err, INF_ERR_INVALID, "n_vocab %d leaves no room for BPE tokens next to the %lld added tokens",
                            opt->n_vocab, (long long)n_added);
            goto done;
        }
        int64_t n_bpe = n_out - n_added;
        for (int64_t id = 0; id < n_all && n_order < n_bpe; id++)
            if (all_types[id] == TOKEN_NORMAL || all_types[id] == 0) order[n_order++] = id;
        for (int64_t id = 0; id < n_all; id++)
            if (all_types[id] == TOKEN_CONTROL || all_types[id] == TOKEN_USER_DEFINED) order[n_order++] = id;
    }

    /* texts and types; ids missing from the tokenizer and the tail become "[PAD<id>]" */
    v->n = n_out;
    v->n_ids = n_all;
    v->texts = calloc((size_t)n_out, sizeof *v->texts);
    v->types = malloc((size_t)n_out * sizeof *v->types);
    int64_t n_pads = 0;
    for (int64_t i = 0; i < n_out; i++)
        if (i >= n_order || !all_texts[order[i]]) n_pads++;
    v->pads = malloc((size_t)n_pads * 24 + 1);
    if (!v->texts || !v->types || !v->pads) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    char *pad_at = v->pads;
    for (int64_t i = 0; i < n_out; i++) {
        if (i < n_order && all_texts[order[i]]) {
            v->texts[i] = all_texts[order[i]];
            v->types[i] = all_types[order[i]];
        } else {
            int len = snprintf(pad_at, 24, "[PAD%lld]", (long long)i);
            v->texts[i] = pad_at;
            v->types[i] = TOKEN_UNUSED;
            pad_at += len + 1;
        }
    }

    /* text -> new id, for the merge filter and the special-token ids */
    text_map map;
    if (!map_init(&map, n_out)) {
        map_free(&map);
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int64_t i = 0; i < n_out; i++)
        if (v->types[i] != TOKEN_UNUSED) map_put(&map, v->texts[i], i);

    /* merges as "a b"; a truncated vocabulary keeps those whose parts and result survive */
    int64_t n_merges = cJSON_GetArraySize(merges);
    size_t buf_bytes = 0, longest = 0;
    cJSON_ArrayForEach(it, merges) {
        size_t len;
        if (cJSON_IsString(it)) {
            len = strlen(it->valuestring);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(it->child) &&
                   cJSON_IsString(it->child->next)) {
            len = strlen(it->child->valuestring) + 1 + strlen(it->child->next->valuestring);
        } else {
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: model.merges holds an entry that is neither \"a b\" nor [a, b]",
                            path);
            break;
        }
        buf_bytes += len + 1;
        longest = INF_MAX(longest, len);
    }
    char *scratch = NULL; /* [longest + 1]: a part or the merged result */
    if (!st) {
        v->merge_buf = malloc(buf_bytes + 1);
        v->merges = malloc(((size_t)n_merges + 1) * sizeof *v->merges);
        scratch = malloc(longest + 1);
        if (!v->merge_buf || !v->merges || !scratch) st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
    }
    const bool truncated = opt->n_vocab > 0 && opt->n_vocab < n_all;
    char *at = v->merge_buf;
    v->n_merges = 0;
    if (!st) {
        cJSON_ArrayForEach(it, merges) {
            if (cJSON_IsString(it)) strcpy(at, it->valuestring);
            else sprintf(at, "%s %s", it->child->valuestring, it->child->next->valuestring);
            size_t len = strlen(at);
            if (truncated) {
                const char *space = strchr(at, ' ');
                if (!space) continue;
                size_t left = (size_t)(space - at);
                memcpy(scratch, at, left); /* part a */
                scratch[left] = 0;
                bool keep = map_get(&map, scratch) >= 0 && map_get(&map, space + 1) >= 0;
                strcpy(scratch + left, space + 1); /* the result "ab" */
                if (!keep || map_get(&map, scratch) < 0) continue;
            }
            v->merges[v->n_merges++] = at;
            at += len + 1;
        }
    }
    free(scratch);

    /* special tokens and the chat template */
    cJSON *config = NULL;
    if (!st && opt->tokenizer_config_json) {
        config = parse_json_file(opt->tokenizer_config_json, err, &st);
        const cJSON *tmpl = config ? cJSON_GetObjectItemCaseSensitive(config, "chat_template") : NULL;
        if (cJSON_IsString(tmpl) && !(v->chat_template = strdup(tmpl->valuestring)))
            st = inf_errorf(err, INF_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        struct {
            const char *field, *fallback, *key;
            uint32_t *out;
        } specials[] = {
            {"eos_token", "<|im_end|>", "tokenizer.ggml.eos_token_id", &v->eos},
            {"pad_token", "<|endoftext|>", "tokenizer.ggml.padding_token_id", &v->pad},
            {"bos_token", "<|endoftext|>", "tokenizer.ggml.bos_token_id", &v->bos},
        };
        for (size_t i = 0; i < sizeof specials / sizeof specials[0] && !st; i++) {
            const char *text = config_token(config, specials[i].field, specials[i].fallback);
            int64_t id = map_get(&map, text);
            if (id < 0)
                st = inf_errorf(err, INF_ERR_INVALID, "%s: the vocabulary has no token '%s' for %s", path, text,
                                specials[i].key);
            else
                *specials[i].out = (uint32_t)id;
        }
    }
    cJSON_Delete(config);
    map_free(&map);
done:
    free(all_texts);
    free(all_types);
    free(order);
    return st;
}

/* ------------------------------------------------------------------ tensors */

typedef enum init_kind { INIT_MATRIX, INIT_NORM } init_kind;

typedef struct tensor_plan {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* fastest-varying first */
    inf_dtype type;
    init_kind init;
    uint64_t row_bytes, nbytes;
    void *data; /* [nbytes] */
    const gguf_tensor *src; /* converting: the source tensor (same shape), else NULL */
    uint64_t src_row_bytes;
    bool borrowed;          /* data is src's own (same type): written from the source, not copied */
} tensor_plan;

typedef struct plan_list {
    tensor_plan *t;
    int n, cap;
} plan_list;

static bool plan_add(plan_list *p, const char *name, inf_dtype type, init_kind init, uint64_t ne0, uint64_t ne1) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        tensor_plan *t = realloc(p->t, (size_t)cap * sizeof *t);
        if (!t) return false;
        p->t = t;
        p->cap = cap;
    }
    tensor_plan *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = ne1 ? 2 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1 ? ne1 : 1;
    t->ne[2] = t->ne[3] = 1;
    t->type = type;
    t->init = init;
    return true;
}

/* The converter's tensor list for Qwen3, in its order. */
static bool plan_model(const inf_synth_options *o, uint64_t n_vocab, plan_list *p) {
    const inf_dtype wt = o->weight_type, f32 = INF_DTYPE_F32;
    const uint64_t embd = (uint64_t)o->n_embd, q_dim = (uint64_t)o->n_head * (uint64_t)o->head_dim;
    const uint64_t kv_dim = (uint64_t)o->n_head_kv * (uint64_t)o->head_dim, ff = (uint64_t)o->n_ff;
    const uint64_t hd = (uint64_t)o->head_dim;
    bool ok = plan_add(p, "token_embd.weight", wt, INIT_MATRIX, embd, n_vocab);
    for (int l = 0; l < o->n_layer && ok; l++) {
        char name[64];
#define LAYER_TENSOR(suffix, type, init, ne0, ne1)                                                   \
        snprintf(name, sizeof name, "blk.%d." suffix, l);                                            \
        ok = ok && plan_add(p, name, type, init, ne0, ne1)
        LAYER_TENSOR("attn_norm.weight", f32, INIT_NORM, embd, 0);
        LAYER_TENSOR("attn_q.weight", wt, INIT_MATRIX, embd, q_dim);
        LAYER_TENSOR("attn_k.weight", wt, INIT_MATRIX, embd, kv_dim);
        LAYER_TENSOR("attn_v.weight", wt, INIT_MATRIX, embd, kv_dim);
        LAYER_TENSOR("attn_output.weight", wt, INIT_MATRIX, q_dim, embd);
        LAYER_TENSOR("attn_q_norm.weight", f32, INIT_NORM, hd, 0);
        LAYER_TENSOR("attn_k_norm.weight", f32, INIT_NORM, hd, 0);
        LAYER_TENSOR("ffn_norm.weight", f32, INIT_NORM, embd, 0);
        LAYER_TENSOR("ffn_gate.weight", wt, INIT_MATRIX, embd, ff);
        LAYER_TENSOR("ffn_up.weight", wt, INIT_MATRIX, embd, ff);
        LAYER_TENSOR("ffn_down.weight", wt, INIT_MATRIX, ff, embd);
#undef LAYER_TENSOR
    }
    ok = ok && plan_add(p, "output_norm.weight", f32, INIT_NORM, embd, 0);
    if (!o->tied_output) ok = ok && plan_add(p, "output.weight", wt, INIT_MATRIX, embd, n_vocab);
    return ok;
}

static tensor_plan *plan_find(plan_list *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->t[i].name, name)) return &p->t[i];
    return NULL;
}

/* Parallel fill of one tensor: task k fills rows [k * rows_per_task, ...). */
typedef struct fill_job {
    tensor_plan *t;
    uint64_t tensor_seed;
    float mean, std;
    uint64_t n_rows, rows_per_task;
    float *scratch; /* [n_threads][ne0] */
} fill_job;

static void fill_task(void *ctx, int task, int thread) {
    const fill_job *job = ctx;
    const tensor_plan *t = job->t;
    const int64_t ne0 = (int64_t)t->ne[0];
    float *row = job->scratch + (size_t)thread * (size_t)ne0;
    uint64_t end = INF_MIN(job->n_rows, ((uint64_t)task + 1) * job->rows_per_task);
    for (uint64_t r = (uint64_t)task * job->rows_per_task; r < end; r++) {
        uint8_t *dst = (uint8_t *)t->data + r * t->row_bytes;
        if (t->src) {
            const uint8_t *src = (const uint8_t *)t->src->data + r * t->src_row_bytes;
            if (t->src->type == t->type) {
                memcpy(dst, src, t->row_bytes);
                continue;
            }
            inf_dequantize_row(t->src->type, src, row, ne0);
        } else {
            uint64_t row_seed = mix64(job->tensor_seed ^ mix64(r + 1));
            if (t->type == INF_DTYPE_F32) {
                fill_row((float *)dst, ne0, row_seed, job->mean, job->std);
                continue;
            }
            fill_row(row, ne0, row_seed, job->mean, job->std);
        }
        switch (t->type) {
        case INF_DTYPE_F16:
            for (int64_t i = 0; i < ne0; i++) ((inf_f16 *)dst)[i] = inf_f32_to_f16(row[i]);
            break;
        case INF_DTYPE_BF16:
            for (int64_t i = 0; i < ne0; i++) ((inf_bf16 *)dst)[i] = inf_f32_to_bf16(row[i]);
            break;
        case INF_DTYPE_Q8_0: inf_quantize_row_q8_0(row, (inf_block_q8_0 *)dst, ne0); break;
        case INF_DTYPE_F32: memcpy(dst, row, (size_t)ne0 * sizeof *row); break;
        default: break; /* synth_type refuses the rest */
        }
    }
}

static inf_status fill_tensor(tensor_plan *t, uint64_t seed, inf_pool *pool, float *scratch, inf_error *err) {
    uint64_t n_rows = t->ne[1] * t->ne[2] * t->ne[3];
    if (!inf_dtype_row_bytes(t->type, t->ne[0], &t->row_bytes) || !inf_mul_u64(t->row_bytes, n_rows, &t->nbytes) ||
        t->nbytes > SIZE_MAX)
        return inf_errorf(err, INF_ERR_INVALID, "tensor '%s': %llu columns do not fit type %s", t->name,
                          (unsigned long long)t->ne[0], inf_dtype_name(t->type));
    if (t->src && t->src->type == t->type) { /* the writer reads the source's bytes directly */
        t->data = (void *)(uintptr_t)t->src->data;
        t->borrowed = true;
        return INF_OK;
    }
    t->data = malloc((size_t)t->nbytes);
    if (!t->data)
        return inf_errorf(err, INF_ERR_NOMEM, "tensor '%s': cannot allocate %llu bytes", t->name,
                          (unsigned long long)t->nbytes);
    fill_job job = {
        .t = t,
        .tensor_seed = mix64(seed ^ fnv1a(t->name)),
        .mean = t->init == INIT_NORM ? 1.0f : 0.0f,
        .std = t->init == INIT_NORM ? 0.1f : 2.0f / sqrtf((float)t->ne[0]),
        .n_rows = n_rows,
        .rows_per_task = INF_MAX((uint64_t)1, ((uint64_t)1 << 16) / t->ne[0]),
        .scratch = scratch,
    };
    uint64_t n_tasks = (n_rows + job.rows_per_task - 1) / job.rows_per_task;
    if (n_tasks > INT32_MAX) return inf_errorf(err, INF_ERR_INVALID, "tensor '%s' is too large", t->name);
    inf_pool_run(pool, (int)n_tasks, fill_task, &job);
    return INF_OK;
}

/* ------------------------------------------------------------------ metadata */

/* Sets keys through the faults: an omitted key is skipped, a replaced one
 * takes the fault's value in the same place. */
typedef struct meta {
    gguf_writer *w;
    const inf_synth_faults *faults;
    bool omit_used;
    bool set_used[INF_SYNTH_MAX_KEY_FAULTS];
} meta;

static bool meta_faulted(meta *m, const char *key) {
    const inf_synth_faults *f = m->faults;
    if (f->omit_key && !strcmp(f->omit_key, key)) return m->omit_used = true;
    for (int i = 0; i < f->n_set_keys; i++) {
        if (f->set_keys[i].key && !strcmp(f->set_keys[i].key, key)) {
            gguf_writer_set_value(m->w, key, &f->set_keys[i].value);
            return m->set_used[i] = true;
        }
    }
    return false;
}

static void meta_str(meta *m, const char *key, const char *v) {
    if (!meta_faulted(m, key)) gguf_writer_set_str(m->w, key, v);
}
static void meta_u32(meta *m, const char *key, uint32_t v) {
    if (!meta_faulted(m, key)) gguf_writer_set_u32(m->w, key, v);
}
static void meta_f32(meta *m, const char *key, float v) {
    if (!meta_faulted(m, key)) gguf_writer_set_f32(m->w, key, v);
}
static void meta_bool(meta *m, const char *key, bool v) {
    if (!meta_faulted(m, key)) gguf_writer_set_bool(m->w, key, v);
}

/* The types synth writes (llama.cpp's quantizer writes the others). */
static bool synth_type(uint32_t t) {
    return t == INF_DTYPE_F32 || t == INF_DTYPE_F16 || t == INF_DTYPE_BF16 || t == INF_DTYPE_Q8_0;
}

/* general.file_type: llama.cpp's LLAMA_FTYPE for "mostly" this type. */
static uint32_t file_type_of(inf_dtype t) {
    switch (t) {
    case INF_DTYPE_F32: return 0;
    case INF_DTYPE_F16: return 1;
    case INF_DTYPE_Q8_0: return 7;
    case INF_DTYPE_BF16: return 32;
    default: return 0; /* synth_type refuses the rest */
    }
}

/* The converter's keys for Qwen3, in its order. */
static void write_metadata(meta *m, const inf_synth_options *o, const vocab *v, const gguf_file *source) {
    meta_str(m, "general.architecture", "qwen3");
    meta_str(m, "general.type", "model");
    meta_str(m, "general.name", o->name ? o->name : "Qwen3 synthetic");
    /* the converter's general.sampling.* (from generation_config.json) follow the name */
    for (uint64_t i = 0; source && i < source->n_kv; i++)
        if (!strncmp(source->kv[i].key.data, "general.sampling.", 17))
            gguf_writer_set_value(m->w, source->kv[i].key.data, &source->kv[i].value);
    meta_u32(m, "qwen3.block_count", (uint32_t)o->n_layer);
    meta_u32(m, "qwen3.context_length", (uint32_t)o->n_ctx_train);
    meta_u32(m, "qwen3.embedding_length", (uint32_t)o->n_embd);
    meta_u32(m, "qwen3.feed_forward_length", (uint32_t)o->n_ff);
    meta_u32(m, "qwen3.attention.head_count", (uint32_t)o->n_head);
    meta_u32(m, "qwen3.attention.head_count_kv", (uint32_t)o->n_head_kv);
    /* the converter's rope scaling keys (from config.json's rope_scaling)
     * come before the frequency base: a source's as it has them, else the
     * options' */
    if (source) {
        for (uint64_t i = 0; i < source->n_kv; i++)
            if (!strncmp(source->kv[i].key.data, "qwen3.rope.scaling.", 19))
                gguf_writer_set_value(m->w, source->kv[i].key.data, &source->kv[i].value);
    } else if (o->rope_scaling != INF_ROPE_SCALING_NONE) {
        meta_str(m, "qwen3.rope.scaling.type", inf_rope_scaling_name(o->rope_scaling));
        meta_f32(m, "qwen3.rope.scaling.factor", o->rope_scale);
        if (o->rope_scaling == INF_ROPE_SCALING_YARN)
            meta_u32(m, "qwen3.rope.scaling.original_context_length", (uint32_t)o->rope_orig_ctx);
    }
    meta_f32(m, "qwen3.rope.freq_base", o->rope_freq_base);
    meta_f32(m, "qwen3.attention.layer_norm_rms_epsilon", o->rms_norm_eps);
    meta_u32(m, "qwen3.attention.key_length", (uint32_t)o->head_dim);
    meta_u32(m, "qwen3.attention.value_length", (uint32_t)o->head_dim);
    meta_u32(m, "general.file_type", file_type_of(o->weight_type));
    meta_str(m, "tokenizer.ggml.model", "gpt2");
    meta_str(m, "tokenizer.ggml.pre", "qwen2");
    if (!meta_faulted(m, "tokenizer.ggml.tokens"))
        gguf_writer_set_str_array(m->w, "tokenizer.ggml.tokens", v->texts, (uint64_t)v->n);
    if (!meta_faulted(m, "tokenizer.ggml.token_type"))
        gguf_writer_set_array(m->w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->types, (uint64_t)v->n);
    if (!meta_faulted(m, "tokenizer.ggml.merges"))
        gguf_writer_set_str_array(m->w, "tokenizer.ggml.merges", v->merges, (uint64_t)v->n_merges);
    meta_u32(m, "tokenizer.ggml.eos_token_id", v->eos);
    meta_u32(m, "tokenizer.ggml.padding_token_id", v->pad);
    meta_u32(m, "tokenizer.ggml.bos_token_id", v->bos);
    meta_bool(m, "tokenizer.ggml.add_bos_token", false);
    if (v->chat_template) meta_str(m, "tokenizer.chat_template", v->chat_template);
    meta_u32(m, "general.quantization_version", 2);
    /* faults that name keys the model does not have add them at the end */
    for (int i = 0; i < m->faults->n_set_keys; i++)
        if (!m->set_used[i] && m->faults->set_keys[i].key)
            gguf_writer_set_value(m->w, m->faults->set_keys[i].key, &m->faults->set_keys[i].value);
}

/* ------------------------------------------------------------------ entry points */

/* The released Qwen3 dense models' config.json values (Qwen/Qwen3-*):
 * every one has head_dim 128, 8 KV heads, max_position_embeddings 40960
 * (32768 native, 131072 with YaRN factor 4), rope_theta 1e6, rms_norm_eps
 * 1e-6 and vocab_size 151936. */
static const struct {
    const char *name;
    int n_layer, n_embd, n_ff, n_head;
    bool tied;
} qwen3_geometries[] = {
    {"0.6b", 28, 1024, 3072, 16, true},  {"1.7b", 28, 2048, 6144, 16, true},
    {"4b", 36, 2560, 9728, 32, true},    {"8b", 36, 4096, 12288, 32, false},
    {"14b", 40, 5120, 17408, 40, false}, {"32b", 64, 5120, 25600, 64, false},
};

bool inf_synth_geometry(inf_synth_options *opt, const char *name) {
    for (size_t i = 0; i < sizeof qwen3_geometries / sizeof *qwen3_geometries; i++) {
        if (strcmp(name, qwen3_geometries[i].name) != 0) continue;
        opt->n_layer = qwen3_geometries[i].n_layer;
        opt->n_embd = qwen3_geometries[i].n_embd;
        opt->n_ff = qwen3_geometries[i].n_ff;
        opt->n_head = qwen3_geometries[i].n_head;
        opt->n_head_kv = 8;
        opt->head_dim = 128;
        opt->n_ctx_train = 40960;
        opt->rope_freq_base = 1e6f;
        opt->rms_norm_eps = 1e-6f;
        opt->tied_output = qwen3_geometries[i].tied;
        return true;
    }
    return false;
}

static inf_status check_options(const inf_synth_options *o, inf_error *err) {
    struct {
        const char *name;
        int value, min, max;
    } ints[] = {
        {"n_layer", o->n_layer, 1, 4096},        {"n_embd", o->n_embd, 1, 1 << 20},
        {"n_ff", o->n_ff, 1, 1 << 22},           {"n_head", o->n_head, 1, 1 << 16},
        {"n_head_kv", o->n_head_kv, 1, 1 << 16}, {"head_dim", o->head_dim, 1, 1 << 16},
        {"n_ctx_train", o->n_ctx_train, 1, INT32_MAX}, {"n_vocab", o->n_vocab, 0, 1 << 24},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].value < ints[i].min || ints[i].value > ints[i].max)
            return inf_errorf(err, INF_ERR_INVALID, "synth: %s = %d is outside [%d, %d]", ints[i].name, ints[i].value,
                              ints[i].min, ints[i].max);
    if (o->n_head % o->n_head_kv != 0)
        return inf_errorf(err, INF_ERR_INVALID, "synth: n_head %d is not a multiple of n_head_kv %d", o->n_head,
                          o->n_head_kv);
    if (!(o->rope_freq_base > 0 && isfinite(o->rope_freq_base)) || !(o->rms_norm_eps > 0 && isfinite(o->rms_norm_eps)))
        return inf_errorf(err, INF_ERR_INVALID, "synth: rope_freq_base and rms_norm_eps must be positive");
    if ((unsigned)o->rope_scaling > INF_ROPE_SCALING_YARN)
        return inf_errorf(err, INF_ERR_INVALID, "synth: unknown RoPE scaling %d", (int)o->rope_scaling);
    if (o->rope_scaling != INF_ROPE_SCALING_NONE && !(o->rope_scale > 0 && o->rope_scale <= 1e6f))
        return inf_errorf(err, INF_ERR_INVALID, "synth: RoPE scaling needs a factor in (0, 1e6], got %g",
                          (double)o->rope_scale);
    if (o->rope_scaling == INF_ROPE_SCALING_YARN && o->rope_orig_ctx < 1)
        return inf_errorf(err, INF_ERR_INVALID, "synth: YaRN needs the original context length");
    if (!synth_type((uint32_t)o->weight_type))
        return inf_errorf(err, INF_ERR_INVALID, "synth: weight type %d is not f32, f16, bf16 or q8_0",
                          (int)o->weight_type);
    if (!o->tokenizer_json) return inf_errorf(err, INF_ERR_INVALID, "synth: no tokenizer.json given");
    if (o->weight_type == INF_DTYPE_Q8_0) {
        struct {
            const char *what;
            long long n;
        } rows[] = {{"n_embd", o->n_embd}, {"n_ff", o->n_ff}, {"n_head * head_dim", (long long)o->n_head * o->head_dim}};
        for (size_t i = 0; i < 3; i++)
            if (rows[i].n % INF_Q8_0_BLOCK != 0)
                return inf_errorf(err, INF_ERR_INVALID, "synth: q8_0 needs %s (%lld) to be a multiple of %d",
                                  rows[i].what, rows[i].n, INF_Q8_0_BLOCK);
    }
    return INF_OK;
}

static inf_status apply_tensor_faults(plan_list *p, const inf_synth_faults *f, inf_error *err) {
    if (f->omit_tensor) {
        tensor_plan *t = plan_find(p, f->omit_tensor);
        if (!t) return inf_errorf(err, INF_ERR_INVALID, "synth fault: no tensor '%s' to omit", f->omit_tensor);
        memmove(t, t + 1, (size_t)(p->t + p->n - (t + 1)) * sizeof *t);
        p->n--;
    }
    if (f->reshape_tensor) {
        tensor_plan *t = plan_find(p, f->reshape_tensor);
        if (!t) return inf_errorf(err, INF_ERR_INVALID, "synth fault: no tensor '%s' to reshape", f->reshape_tensor);
        if (f->reshape_n_dims < 1 || f->reshape_n_dims > GGUF_MAX_DIMS)
            return inf_errorf(err, INF_ERR_INVALID, "synth fault: reshape_n_dims %u", f->reshape_n_dims);
        t->n_dims = f->reshape_n_dims;
        for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
            t->ne[d] = d < t->n_dims ? f->reshape_ne[d] : 1;
            if (t->ne[d] == 0 || t->ne[d] > (1ull << 32))
                return inf_errorf(err, INF_ERR_INVALID, "synth fault: reshape dimension %u is %llu", d,
                                  (unsigned long long)t->ne[d]);
        }
    }
    if (f->retype_tensor) {
        tensor_plan *t = plan_find(p, f->retype_tensor);
        if (!t) return inf_errorf(err, INF_ERR_INVALID, "synth fault: no tensor '%s' to retype", f->retype_tensor);
        if (!synth_type((uint32_t)f->retype))
            return inf_errorf(err, INF_ERR_INVALID, "synth fault: retype to unsupported type %d", (int)f->retype);
        t->type = f->retype;
    }
    return INF_OK;
}

/* Binds every planned tensor to the source's tensor of its name and shape. */
static inf_status plan_sources(plan_list *p, const gguf_file *source, bool keep_types, inf_error *err) {
    if (source->n_tensors != (uint64_t)p->n)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: %llu tensors, but the model has %d", source->path,
                          (unsigned long long)source->n_tensors, p->n);
    for (int i = 0; i < p->n; i++) {
        tensor_plan *t = &p->t[i];
        const gguf_tensor *s = gguf_find_tensor(source, t->name);
        if (!s) return inf_errorf(err, INF_ERR_FORMAT, "%s: no tensor '%s'", source->path, t->name);
        bool same = s->n_dims == t->n_dims;
        for (uint32_t d = 0; same && d < GGUF_MAX_DIMS; d++) same = s->ne[d] == t->ne[d];
        if (!same) return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' has another shape", source->path, t->name);
        if (!s->data) return inf_errorf(err, INF_ERR_INVALID, "%s: tensor '%s' has no data", source->path, t->name);
        if (keep_types && t->n_dims == 2) t->type = s->type;
        if (!inf_dtype_row_bytes(s->type, s->ne[0], &t->src_row_bytes))
            return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' rows are not whole blocks", source->path, t->name);
        t->src = s;
    }
    return INF_OK;
}

static inf_status synth_write(const inf_synth_options *opt, const char *path, const inf_synth_faults *faults,
                              const gguf_file *source, bool keep_types, inf_error *err) {
    const inf_synth_faults no_faults = {0};
    if (!faults) faults = &no_faults;
    if (faults->n_set_keys < 0 || faults->n_set_keys > INF_SYNTH_MAX_KEY_FAULTS)
        return inf_errorf(err, INF_ERR_INVALID, "synth fault: n_set_keys %d", faults->n_set_keys);
    inf_status st = check_options(opt, err);
    if (st) return st;

    vocab v = {0};
    plan_list plan = {0};
    gguf_writer *w = NULL;
    inf_pool *pool = NULL;
    float *scratch = NULL;
    if ((st = vocab_load(opt, &v, err))) goto done;
    if (!plan_model(opt, (uint64_t)v.n, &plan)) {
        st = inf_errorf(err, INF_ERR_NOMEM, "synth: out of memory");
        goto done;
    }
    if ((st = apply_tensor_faults(&plan, faults, err))) goto done;
    if (source && v.n_ids > v.n) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: ids up to %lld, but the model has %lld rows of embeddings",
                        opt->tokenizer_json, (long long)v.n_ids - 1, (long long)v.n);
        goto done;
    }
    if (source && (st = plan_sources(&plan, source, keep_types, err))) goto done;

    long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
    int n_threads = (int)INF_MAX(1, INF_MIN(n_cpu, 16));
    uint64_t widest = 1;
    for (int i = 0; i < plan.n; i++) widest = INF_MAX(widest, plan.t[i].ne[0]);
    pool = inf_pool_new(n_threads);
    scratch = malloc((size_t)n_threads * (size_t)widest * sizeof *scratch);
    w = gguf_writer_new();
    if (!pool || !scratch || !w) {
        st = inf_errorf(err, INF_ERR_NOMEM, "synth: out of memory");
        goto done;
    }
    meta m = {.w = w, .faults = faults};
    write_metadata(&m, opt, &v, source);
    if (faults->omit_key && !m.omit_used) {
        st = inf_errorf(err, INF_ERR_INVALID, "synth fault: no metadata key '%s' to omit", faults->omit_key);
        goto done;
    }
    for (int i = 0; i < plan.n; i++) {
        tensor_plan *t = &plan.t[i];
        if ((st = fill_tensor(t, opt->seed, pool, scratch, err))) goto done;
        gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
    }
    st = gguf_writer_write(w, path, err);
done:
    for (int i = 0; i < plan.n; i++)
        if (!plan.t[i].borrowed) free(plan.t[i].data);
    free(plan.t);
    gguf_writer_free(w);
    free(scratch);
    inf_pool_free(pool);
    vocab_free(&v);
    return st;
}

inf_status inf_synth_write_ex(const inf_synth_options *opt, const char *path, const inf_synth_faults *faults,
                              inf_error *err) {
    return synth_write(opt, path, faults, NULL, false, err);
}

inf_status inf_synth_write_from(const inf_synth_options *opt, const gguf_file *source, bool keep_types,
                                const char *path, inf_error *err) {
    return synth_write(opt, path, NULL, source, keep_types, err);
}

inf_status inf_synth_write(const inf_synth_options *opt, const char *path, inf_error *err) {
    return inf_synth_write_ex(opt, path, NULL, err);
}

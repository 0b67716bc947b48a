/*
 * sampling_defaults.c — the sampling a checkpoint recommends: Qwen3's
 * published values per thinking mode, overridden by what the file itself
 * declares (GGUF general.sampling.* keys, named as llama.cpp's converter
 * writes them; or a Hugging Face generation_config.json).
 *
 * A declared value outside its valid range is ignored rather than failing
 * the load: it is advice, and the caller can still set anything explicitly.
 *
 * With the sampler (src/sample/) because it produces sampler parameters;
 * it reads the loaded model's GGUF metadata through model/model.h.
 */
#include "core/common.h"
#include "model/model.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Qwen3 model card, "Best Practices". */
static const struct {
    float temperature, top_p;
    int top_k;
    float min_p;
} qwen3_recommended[2] = {
    {0.7f, 0.8f, 20, 0.0f},  /* enable_thinking = false */
    {0.6f, 0.95f, 20, 0.0f}, /* enable_thinking = true */
};

static void set_float(const gguf_file *f, const char *key, float lo, float hi, bool lo_open, float *out) {
    double v;
    if (!gguf_find(f, key) || gguf_get_float(f, key, false, &v, NULL) != INF_OK) return;
    if (!isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) return;
    *out = (float)v;
}

static void set_int(const gguf_file *f, const char *key, int64_t lo, int64_t hi, int *out) {
    int64_t v;
    if (!gguf_find(f, key) || gguf_get_int(f, key, false, &v, NULL) != INF_OK) return;
    if (v < lo || v > hi) return;
    *out = (int)v;
}

void inf_model_sampling_defaults(const inf_model *m, bool thinking, inf_sampler_params *p) {
    inf_sampler_params_default(p);
    p->temperature = qwen3_recommended[thinking].temperature;
    p->top_p = qwen3_recommended[thinking].top_p;
    p->top_k = qwen3_recommended[thinking].top_k;
    p->min_p = qwen3_recommended[thinking].min_p;
    const gguf_file *f = m->file;
    set_float(f, "general.sampling.temp", 0, 100, false, &p->temperature);
    set_int(f, "general.sampling.top_k", 0, 1 << 30, &p->top_k);
    set_float(f, "general.sampling.top_p", 0, 1, false, &p->top_p);
    set_float(f, "general.sampling.min_p", 0, 1, false, &p->min_p);
    set_float(f, "general.sampling.penalty_repeat", 0, 100, true, &p->repeat_penalty);
    set_int(f, "general.sampling.penalty_last_n", 0, 1 << 24, &p->penalty_last_n);
}

static inf_status json_number(const cJSON *root, const char *path, const char *key, double lo, double hi,
                              bool lo_open, double *out, bool *found, inf_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *found = false;
    if (!v || cJSON_IsNull(v)) return INF_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi ||
        (lo_open && v->valuedouble == lo))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: \"%s\" must be a number in %c%g, %g]", path, key,
                          lo_open ? '(' : '[', lo, hi);
    *out = v->valuedouble;
    *found = true;
    return INF_OK;
}

inf_status inf_sampler_params_from_generation_config(const char *path, inf_sampler_params *p, inf_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return inf_errorf(err, INF_ERR_IO, "%s: cannot open", path);
    char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    bool too_big = len == sizeof buf - 1 && fgetc(f) != EOF;
    bool failed = ferror(f);
    fclose(f);
    if (failed) return inf_errorf(err, INF_ERR_IO, "%s: read error", path);
    if (too_big) return inf_errorf(err, INF_ERR_FORMAT, "%s: larger than 64 KiB; not a generation_config.json", path);
    buf[len] = 0;
    cJSON *root = cJSON_ParseWithLength(buf, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return inf_errorf(err, INF_ERR_FORMAT, "%s: not a JSON object", path);
    }
    inf_sampler_params q = *p;
    double v;
    bool found;
    inf_status st;
    if ((st = json_number(root, path, "temperature", 0, 100, false, &v, &found, err))) goto done;
    if (found) q.temperature = (float)v;
    if ((st = json_number(root, path, "top_k", 0, 1 << 30, false, &v, &found, err))) goto done;
    if (found) q.top_k = (int)v;
    if ((st = json_number(root, path, "top_p", 0, 1, false, &v, &found, err))) goto done;
    if (found) q.top_p = (float)v;
    if ((st = json_number(root, path, "min_p", 0, 1, false, &v, &found, err))) goto done;
    if (found) q.min_p = (float)v;
    if ((st = json_number(root, path, "repetition_penalty", 0, 100, true, &v, &found, err))) goto done;
    if (found) q.repeat_penalty = (float)v;
    *p = q;
done:
    cJSON_Delete(root);
    return st;
}

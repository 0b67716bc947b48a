/*
 * server_params.c — the request fields the APIs share, read into an
 * inf_request: sampling (over the model's recommended defaults), max
 * tokens, stop strings, seed, n, logprobs and logit bias. Every bad field
 * is a 400 that names it; unknown fields are ignored, as OpenAI's and
 * Anthropic's servers ignore them.
 */
#include "server/server_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_STOPS = 16, MAX_CHOICES = 16, MAX_STOP_BYTES = 1024 };

static bool fail(param_error *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(param_error *e, const char *param, const char *fmt, ...) {
    e->status = 400;
    snprintf(e->param, sizeof e->param, "%s", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return false;
}

/* A number field in [lo, hi]; absent or null leaves *out. */
static bool number_field(const cJSON *body, const char *name, double lo, double hi, double *out, bool *given,
                         param_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    if (given) *given = false;
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return fail(e, name, "%s must be a number", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return fail(e, name, "%s must be from %g to %g, got %g", name, lo, hi, v->valuedouble);
    *out = v->valuedouble;
    if (given) *given = true;
    return true;
}

static bool int_field(const cJSON *body, const char *name, double lo, double hi, long long *out, bool *given,
                      param_error *e) {
    double d = 0;
    bool g = false;
    if (!number_field(body, name, lo, hi, &d, &g, e)) return false;
    if (g && d != floor(d)) return fail(e, name, "%s must be an integer, got %g", name, d);
    if (g) *out = (long long)d;
    if (given) *given = g;
    return true;
}

static bool bool_field(const cJSON *body, const char *name, bool *out, param_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsBool(v)) return fail(e, name, "%s must be true or false", name);
    *out = cJSON_IsTrue(v);
    return true;
}

static bool add_stop(request_params *p, const char *s, const char *param, param_error *e) {
    if (!*s) return fail(e, param, "%s must not hold an empty string", param);
    if (strlen(s) > MAX_STOP_BYTES) return fail(e, param, "%s: a stop string is at most %d bytes", param, MAX_STOP_BYTES);
    if (p->n_stops == MAX_STOPS) return fail(e, param, "%s: at most %d stop strings", param, MAX_STOPS);
    if (!p->stops && !(p->stops = calloc(MAX_STOPS, sizeof *p->stops))) return fail(e, param, "out of memory");
    if (!(p->stops[p->n_stops] = strdup(s))) return fail(e, param, "out of memory");
    p->n_stops++;
    return true;
}

static bool stop_field(const cJSON *body, const char *name, bool string_allowed, request_params *p, param_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (cJSON_IsString(v) && string_allowed) return add_stop(p, v->valuestring, name, e);
    if (!cJSON_IsArray(v))
        return fail(e, name, string_allowed ? "%s must be a string or an array of strings" : "%s must be an array of strings",
                    name);
    const cJSON *s;
    cJSON_ArrayForEach(s, v) {
        if (!cJSON_IsString(s)) return fail(e, name, "%s must hold only strings", name);
        if (!add_stop(p, s->valuestring, name, e)) return false;
    }
    return true;
}

static bool bias_field(server *srv, const cJSON *body, request_params *p, param_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "logit_bias");
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsObject(v)) return fail(e, "logit_bias", "logit_bias must be an object of token id to bias");
    int n = cJSON_GetArraySize(v);
    if (n == 0) return true;
    if (n > 1024) return fail(e, "logit_bias", "logit_bias holds at most 1024 entries");
    if (!(p->bias = calloc((size_t)n, sizeof *p->bias))) return fail(e, "logit_bias", "out of memory");
    const cJSON *b;
    cJSON_ArrayForEach(b, v) {
        char *end;
        long id = strtol(b->string, &end, 10);
        if (!*b->string || *end || id < 0 || id >= srv->n_vocab)
            return fail(e, "logit_bias", "logit_bias: '%s' is not a token id of this model (0..%d)", b->string,
                        srv->n_vocab - 1);
        if (!cJSON_IsNumber(b) || b->valuedouble < -100 || b->valuedouble > 100)
            return fail(e, "logit_bias", "logit_bias[%s] must be a number from -100 to 100", b->string);
        /* -100 bans the token, as OpenAI documents */
        p->bias[p->n_bias].id = (int32_t)id;
        p->bias[p->n_bias].bias = b->valuedouble <= -100 ? -INFINITY : (float)b->valuedouble;
        p->n_bias++;
    }
    return true;
}

static uint64_t fresh_seed(void) {
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (atomic_fetch_add(&counter, 1) << 40);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 33);
}

bool reject(param_error *e, int status, const char *param, const char *code, const char *fmt, ...) {
    e->status = status;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return false;
}

bool reject_field(param_error *e, const char *param, const char *msg) {
    return reject(e, 400, param, NULL, "%s: %s", param, msg);
}

int reply_rejected(http_exchange *ex, const param_error *e) {
    int status = e->status ? e->status : 400;
    return http_reply_error(ex, status, e->param[0] ? e->param : NULL,
                            e->code[0] ? e->code : status == 400 ? "invalid_value" : NULL, "%s", e->msg);
}

bool params_parse(server *srv, const cJSON *body, bool anthropic, bool thinking, request_params *p, param_error *e) {
    memset(p, 0, sizeof *p);
    inf_request_default(&p->req);
    inf_sampler_params *s = &p->req.sampling;
    inf_model_sampling_defaults(srv->model, thinking, s);
    double d;
    long long ll;
    bool given;

    if (!number_field(body, "temperature", 0, anthropic ? 1 : 2, &d, &given, e)) return false;
    if (given) s->temperature = (float)d;
    if (!number_field(body, "top_p", 0, 1, &d, &given, e)) return false;
    if (given) s->top_p = d > 0 ? (float)d : 1.0f; /* top_p 0: no filtering left to do; OpenAI rejects it */
    if (!int_field(body, "top_k", -1, 1 << 30, &ll, &given, e)) return false;
    if (given) s->top_k = ll < 0 ? 0 : (int)ll;
    if (!number_field(body, "min_p", 0, 1, &d, &given, e)) return false;
    if (given) s->min_p = (float)d;
    if (!anthropic) {
        if (!number_field(body, "presence_penalty", -2, 2, &d, &given, e)) return false;
        if (given) s->presence_penalty = (float)d;
        if (!number_field(body, "frequency_penalty", -2, 2, &d, &given, e)) return false;
        if (given) s->frequency_penalty = (float)d;
        const char *rp = cJSON_GetObjectItemCaseSensitive(body, "repetition_penalty") ? "repetition_penalty"
                                                                                       : "repeat_penalty";
        if (!number_field(body, rp, 0.01, 10, &d, &given, e)) return false;
        if (given) s->repeat_penalty = (float)d;
        if (!int_field(body, "seed", -9.2e18, 9.2e18, &ll, &p->seed_given, e)) return false;
        if (p->seed_given) s->seed = (uint64_t)ll;
        if (!int_field(body, "n", 1, MAX_CHOICES, &ll, &given, e)) return false;
        p->req.n = given ? (int)ll : 1;
        bool ignore_eos = false;
        if (!bool_field(body, "ignore_eos", &ignore_eos, e)) return false;
        p->req.ignore_eog = ignore_eos;
    }
    if (!p->seed_given) s->seed = fresh_seed();
    /* logit_bias on the Messages API too: not Anthropic's, an extension
     * (as vLLM takes its sampling extras on every endpoint); it is how a
     * test forces a tool_use from a random-weight model */
    if (!bias_field(srv, body, p, e)) return false;
    s->logit_bias = p->bias;
    s->n_logit_bias = (size_t)p->n_bias;

    /* max tokens: OpenAI's two names, Anthropic's required one */
    long long max_tokens = 0;
    if (anthropic) {
        const cJSON *mt = cJSON_GetObjectItemCaseSensitive(body, "max_tokens");
        if (!mt) return fail(e, "max_tokens", "max_tokens is required");
        if (!int_field(body, "max_tokens", 1, 1e9, &max_tokens, NULL, e)) return false;
    } else {
        /* absent: until the context is full (0); given: at least 1, as OpenAI wants */
        if (!int_field(body, "max_completion_tokens", 1, 1e9, &max_tokens, &given, e)) return false;
        if (!given && !int_field(body, "max_tokens", 1, 1e9, &max_tokens, NULL, e)) return false;
    }
    /* more than the context holds is capped (the completion then ends with
     * finish_reason "length"), as llama-server does */
    p->req.max_tokens = max_tokens > srv->n_ctx ? srv->n_ctx : (int)max_tokens;

    if (!stop_field(body, anthropic ? "stop_sequences" : "stop", !anthropic, p, e)) return false;
    p->req.stops = (const char *const *)p->stops;
    p->req.n_stops = p->n_stops;

    if (!bool_field(body, "stream", &p->stream, e)) return false;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(body, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) return fail(e, "stream_options", "stream_options must be an object");
        if (!bool_field(so, "include_usage", &p->include_usage, e)) {
            snprintf(e->param, sizeof e->param, "stream_options.include_usage");
            return false;
        }
    }
    return true;
}

void params_free(request_params *p) {
    for (size_t i = 0; i < p->n_stops; i++) free(p->stops[i]);
    free(p->stops);
    free(p->bias);
    p->stops = NULL;
    p->bias = NULL;
}

bool params_check_context(server *srv, size_t n_prompt, int max_tokens, param_error *e) {
    (void)max_tokens;
    if (n_prompt == 0) return fail(e, "messages", "the prompt is empty");
    if (n_prompt >= (size_t)srv->n_ctx)
        return fail(e, "messages",
                    "the prompt has %zu tokens and the context is %d tokens: it leaves no room to generate "
                    "(start the server with a larger -c, or shorten the prompt)",
                    n_prompt, srv->n_ctx);
    return true;
}

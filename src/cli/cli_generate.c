/*
 * cli_generate.c — what run and chat share around the sampler: the sampling
 * flags, chunked prefill with a progress bar, and the generation loop
 * (sample, stop at end-of-turn / stop string / length / full context /
 * Ctrl-C, stream UTF-8-safe text, tell thinking apart).
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { PREFILL_CHUNK = 512 };

const char *cli_sampling_help =
    "sampling (applied in this order: logit bias, penalties, top-k, top-p, min-p,\n"
    "temperature, then a seeded draw; the truncations see logits before temperature):\n"
    "  --temp T               temperature; 0 = greedy (argmax)\n"
    "  --top-k K              keep the K most likely tokens (0 = off)\n"
    "  --top-p P              keep the most likely tokens until their probability sums to P (1 = off)\n"
    "  --min-p M              drop tokens below M times the top probability (0 = off)\n"
    "  --repeat-penalty R     divide a repeated token's positive logit by R (1 = off)\n"
    "  --presence-penalty X   subtract X from a repeated token's logit (0 = off)\n"
    "  --frequency-penalty X  subtract X times its count (0 = off)\n"
    "  --repeat-last-n N      tokens the penalties look back over (default 64; 0 = off, -1 = context)\n"
    "  --logit-bias ID+B      add B to token ID's logit (ID-B subtracts; ID-inf bans it); repeatable\n"
    "  --seed S               seed of the draw: the same seed gives the same output (default: random)\n"
    "  --stop STR             stop when the text contains STR (not printed); repeatable\n";

static int bad_value(const char *cmd, const char *flag, const char *want, const char *v) {
    cli_fail(EXIT_USAGE, cmd, "%s wants %s, got '%s'", flag, want, v);
    return -1;
}

static bool parse_float_in(const char *s, double lo, double hi, float *out) {
    double v;
    if (!cli_parse_float(s, &v) || v < lo || v > hi) return false;
    *out = (float)v;
    return true;
}

/* "ID+BIAS", "ID-BIAS", "ID-inf" */
static bool parse_bias(const char *s, inf_logit_bias *out) {
    char *end;
    errno = 0;
    long id = strtol(s, &end, 10);
    if (end == s || errno || id < 0 || id > INT32_MAX || (*end != '+' && *end != '-')) return false;
    double bias;
    if (!strcmp(end + 1, "inf") && *end == '-') {
        out->bias = -INFINITY;
    } else {
        if (!isdigit((unsigned char)end[1]) && end[1] != '.') return false;
        if (!cli_parse_float(end, &bias) || fabs(bias) > 1e6) return false;
        out->bias = (float)bias;
    }
    out->id = (int32_t)id;
    return true;
}

int cli_sampling_flag(const char *cmd, cli_sampling_args *a, int argc, char **argv, int *i) {
    const char *f = argv[*i], *v;
    long n;
    if (!strcmp(f, "--temp") || !strcmp(f, "--temperature")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!parse_float_in(v, 0, 100, &a->temperature)) return bad_value(cmd, f, "a number from 0 to 100", v);
        a->temperature_set = true;
    } else if (!strcmp(f, "--top-k")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!cli_parse_int(v, 0, 1 << 30, &n)) return bad_value(cmd, f, "a count from 0", v);
        a->top_k = (int)n;
        a->top_k_set = true;
    } else if (!strcmp(f, "--top-p")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!parse_float_in(v, 0, 1, &a->top_p)) return bad_value(cmd, f, "a number from 0 to 1", v);
        a->top_p_set = true;
    } else if (!strcmp(f, "--min-p")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!parse_float_in(v, 0, 1, &a->min_p)) return bad_value(cmd, f, "a number from 0 to 1", v);
        a->min_p_set = true;
    } else if (!strcmp(f, "--repeat-penalty")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!parse_float_in(v, 1e-6, 100, &a->repeat_penalty)) return bad_value(cmd, f, "a number above 0", v);
        a->repeat_penalty_set = true;
    } else if (!strcmp(f, "--presence-penalty")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!parse_float_in(v, -100, 100, &a->presence_penalty)) return bad_value(cmd, f, "a number from -100 to 100", v);
        a->presence_penalty_set = true;
    } else if (!strcmp(f, "--frequency-penalty")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!parse_float_in(v, -100, 100, &a->frequency_penalty)) return bad_value(cmd, f, "a number from -100 to 100", v);
        a->frequency_penalty_set = true;
    } else if (!strcmp(f, "--repeat-last-n")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!cli_parse_int(v, -1, 1 << 24, &n)) return bad_value(cmd, f, "a count from 0, or -1", v);
        a->repeat_last_n = (int)n;
        a->repeat_last_n_set = true;
    } else if (!strcmp(f, "--seed") || !strcmp(f, "-s")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (!strcmp(v, "-1")) {
            a->seed_set = false; /* llama.cpp's spelling of "random" */
            return 1;
        }
        if (!*v || *end || errno || v[0] == '-') return bad_value(cmd, f, "a number from 0 to 2^64-1", v);
        a->seed = s;
        a->seed_set = true;
    } else if (!strcmp(f, "--stop")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!*v) return bad_value(cmd, f, "a non-empty string", v);
        const char **s = realloc(a->stops, (a->n_stops + 1) * sizeof *s);
        if (!s) return bad_value(cmd, f, "less text (out of memory)", v);
        a->stops = s;
        a->stops[a->n_stops++] = v;
    } else if (!strcmp(f, "--logit-bias") || !strcmp(f, "-l")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        inf_logit_bias b;
        if (!parse_bias(v, &b)) return bad_value(cmd, f, "TOKEN_ID+BIAS, TOKEN_ID-BIAS or TOKEN_ID-inf", v);
        inf_logit_bias *nb = realloc(a->bias, (a->n_bias + 1) * sizeof *nb);
        if (!nb) return bad_value(cmd, f, "fewer biases (out of memory)", v);
        a->bias = nb;
        a->bias[a->n_bias++] = b;
    } else {
        return 0;
    }
    return 1;
}

bool cli_sampling_asked(const cli_sampling_args *a) {
    return a->temperature_set || a->top_k_set || a->top_p_set || a->min_p_set || a->seed_set;
}

void cli_sampling_params(const cli_sampling_args *a, const inf_sampler_params *base, int n_ctx,
                         inf_sampler_params *out) {
    *out = *base;
    if (a->temperature_set) out->temperature = a->temperature;
    if (a->top_k_set) out->top_k = a->top_k;
    if (a->top_p_set) out->top_p = a->top_p;
    if (a->min_p_set) out->min_p = a->min_p;
    if (a->repeat_penalty_set) out->repeat_penalty = a->repeat_penalty;
    if (a->presence_penalty_set) out->presence_penalty = a->presence_penalty;
    if (a->frequency_penalty_set) out->frequency_penalty = a->frequency_penalty;
    if (a->repeat_last_n_set) out->penalty_last_n = a->repeat_last_n < 0 ? n_ctx : a->repeat_last_n;
    if (a->seed_set) {
        out->seed = a->seed;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        out->seed = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    out->logit_bias = a->bias;
    out->n_logit_bias = a->n_bias;
}

void cli_sampling_args_free(cli_sampling_args *a) {
    free(a->stops);
    free(a->bias);
    a->stops = NULL;
    a->bias = NULL;
    a->n_stops = a->n_bias = 0;
}

inf_status cli_prefill(inf_session *s, const int32_t *ids, size_t n, float *logits, bool *interrupted,
                       inf_error *err) {
    *interrupted = false;
    cli_progress bar;
    cli_progress_begin(&bar, "prompt");
    inf_status st = INF_OK;
    for (size_t done = 0; done < n && !st;) {
        if (cli_interrupted) {
            *interrupted = true;
            break;
        }
        size_t chunk = n - done < PREFILL_CHUNK ? n - done : PREFILL_CHUNK;
        bool last = done + chunk == n;
        st = inf_session_eval(s, ids + done, (int)chunk, last ? INF_LOGITS_LAST : INF_LOGITS_NONE,
                              last ? logits : NULL, err);
        done += chunk;
        cli_progress_update(&bar, (double)done / (double)n);
    }
    cli_progress_end(&bar);
    return st;
}

const char *cli_stop_reason_name(cli_stop_reason r) {
    switch (r) {
    case CLI_STOP_EOG: return "eog";
    case CLI_STOP_STRING: return "stop";
    case CLI_STOP_LENGTH: return "length";
    case CLI_STOP_CONTEXT: return "context";
    case CLI_STOP_INTERRUPT: return "interrupt";
    case CLI_STOP_ERROR: return "error";
    }
    return "?";
}

/* Text through the stop matcher (when there is one) to emit; true once a stop matched. */
static bool release(cli_generation *g, const char *text, size_t len, bool thinking) {
    if (!g->stops) {
        if (len) g->emit(g->user, text, len, thinking);
        return false;
    }
    const char *out;
    size_t n;
    bool stopped;
    if (inf_stop_matcher_push(g->stops, text, len, &out, &n, &stopped, &g->err)) {
        g->stop = CLI_STOP_ERROR;
        return true;
    }
    if (n) g->emit(g->user, out, n, thinking);
    if (stopped) g->stop = CLI_STOP_STRING;
    return stopped;
}

static void release_held(cli_generation *g, bool thinking) {
    if (!g->stops) return;
    const char *out;
    size_t n;
    inf_stop_matcher_flush(g->stops, &out, &n);
    if (n) g->emit(g->user, out, n, thinking);
}

/* Decides and emits one token's text; true when generation must end. */
static bool emit_token(cli_generation *g, inf_detok_stream *ds, int32_t id, int32_t think_open,
                       int32_t think_close, bool *thinking) {
    char piece[INF_DETOK_STREAM_MAX_OUT];
    size_t n;
    if (!g->tok) {
        n = (size_t)snprintf(piece, sizeof piece, "%s%d", g->n_ids > 1 ? " " : "", id);
        return release(g, piece, n, *thinking);
    }
    if (inf_detok_stream_push(g->tok, ds, id, piece, sizeof piece, &n, &g->err)) {
        g->stop = CLI_STOP_ERROR;
        return true;
    }
    if (id >= 0 && (id == think_open || id == think_close)) {
        /* a stop string never spans a think tag: what was held is decided now */
        release_held(g, *thinking);
        if (n) g->emit(g->user, piece, n, true);
        *thinking = id == think_open;
        return false;
    }
    return release(g, piece, n, *thinking);
}

static bool push_id(cli_generation *g, int32_t id, size_t *cap) {
    if (g->n_ids == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        int32_t *ids = realloc(g->ids, nc * sizeof *ids);
        if (!ids) return false;
        g->ids = ids;
        *cap = nc;
    }
    g->ids[g->n_ids++] = id;
    return true;
}

void cli_generate(cli_generation *g, float *logits) {
    int32_t think_open = g->tok ? inf_tokenizer_find_special(g->tok, "<think>") : -1;
    int32_t think_close = g->tok ? inf_tokenizer_find_special(g->tok, "</think>") : -1;
    bool thinking = false, first = true;
    inf_detok_stream ds;
    inf_detok_stream_init(&ds);
    size_t cap = 0;
    g->ids = NULL;
    g->n_ids = 0;
    g->n_decoded = 0;
    g->stop = CLI_STOP_LENGTH;
    g->t_first_s = g->t_end_s = cli_now_s();
    for (;;) {
        if (g->n_predict >= 0 && (long)g->n_ids >= g->n_predict) break;
        if (cli_interrupted) {
            g->stop = CLI_STOP_INTERRUPT;
            break;
        }
        int32_t id = inf_sampler_sample(g->sampler, logits);
        if (first) g->t_first_s = cli_now_s();
        first = false;
        if (!g->ignore_eos && g->tok && inf_tokenizer_is_eog(g->tok, id)) {
            g->stop = CLI_STOP_EOG;
            break;
        }
        inf_sampler_accept(g->sampler, id);
        if (!push_id(g, id, &cap)) {
            g->stop = CLI_STOP_ERROR;
            snprintf(g->err.msg, sizeof g->err.msg, "out of memory after %zu tokens", g->n_ids);
            break;
        }
        if (emit_token(g, &ds, id, think_open, think_close, &thinking)) break;
        if (g->n_predict >= 0 && (long)g->n_ids >= g->n_predict) break;
        if (cli_interrupted) {
            g->stop = CLI_STOP_INTERRUPT;
            break;
        }
        if (inf_session_eval(g->session, &id, 1, INF_LOGITS_LAST, logits, &g->err)) {
            g->stop = g->err.status == INF_ERR_CONTEXT_FULL ? CLI_STOP_CONTEXT : CLI_STOP_ERROR;
            break;
        }
        g->n_decoded++;
    }
    g->t_end_s = cli_now_s();
    if (g->stop == CLI_STOP_STRING || g->stop == CLI_STOP_ERROR) return;
    /* the stream ended without a stop string: release what is pending */
    char tail[8];
    size_t n = g->tok ? inf_detok_stream_flush(&ds, tail, sizeof tail) : 0;
    if (n && release(g, tail, n, thinking)) return;
    release_held(g, thinking);
}

inf_status cli_render_chat(const inf_chat_template *tmpl, const cli_message *msgs, size_t n, bool thinking,
                           char **out, size_t *len, inf_error *err) {
    cJSON *req = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(req, "messages");
    bool ok = req && list;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        ok = m && cJSON_AddItemToArray(list, m) && cJSON_AddStringToObject(m, "role", msgs[i].role) &&
             cJSON_AddStringToObject(m, "content", msgs[i].content);
    }
    ok = ok && cJSON_AddBoolToObject(req, "add_generation_prompt", 1) &&
         cJSON_AddBoolToObject(req, "enable_thinking", thinking);
    char *json = ok ? cJSON_PrintUnformatted(req) : NULL;
    cJSON_Delete(req);
    if (!json) {
        snprintf(err->msg, sizeof err->msg, "out of memory rendering the chat");
        return err->status = INF_ERR_NOMEM;
    }
    inf_status st = inf_chat_template_render(tmpl, json, strlen(json), out, len, err);
    free(json);
    return st;
}

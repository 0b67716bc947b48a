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

inf_engine *cli_engine_new(const char *cmd, inf_model *m, int n_ctx, bool reuse) {
    inf_engine_options eo;
    inf_engine_options_default(&eo);
    eo.n_ctx = n_ctx;
    eo.max_seqs = 1;
    eo.prefill_chunk = PREFILL_CHUNK;
    eo.kv_pool_tokens = n_ctx + 128; /* and room to copy a partly reused block */
    eo.no_prefix_cache = !reuse;
    inf_engine *e = NULL;
    inf_error err = {0};
    if (inf_engine_new(m, &eo, &e, &err)) {
        cli_fail_error(cmd, &err);
        return NULL;
    }
    return e;
}

static bool push_id(cli_generation *g, int32_t id) {
    if (g->n_ids == g->cap_ids) {
        size_t nc = g->cap_ids ? 2 * g->cap_ids : 256;
        int32_t *ids = realloc(g->ids, nc * sizeof *ids);
        if (!ids) return false;
        g->ids = ids;
        g->cap_ids = nc;
    }
    g->ids[g->n_ids++] = id;
    return true;
}

/* Emits a token's released text; at a think tag the text before the tag's
 * own bytes belongs to the part that the tag ends. */
static void emit_text(cli_generation *g, int32_t id, const char *text, size_t len) {
    if (id >= 0 && (id == g->think_open || id == g->think_close)) {
        size_t tag_len = 0;
        inf_tokenizer_token_bytes(g->tok, id, &tag_len);
        const size_t before = len >= tag_len ? len - tag_len : 0;
        if (before) g->emit(g->user, text, before, g->thinking);
        g->thinking = id == g->think_open;
        if (len > before) g->emit(g->user, text + before, len - before, true);
        return;
    }
    if (len) g->emit(g->user, text, len, g->thinking);
}

static void on_event(const inf_event *ev, void *user) {
    cli_generation *g = user;
    switch (ev->kind) {
    case INF_EVENT_PROMPT:
        cli_progress_update(&g->bar, (double)ev->n_cached / (double)ev->n_prompt);
        break;
    case INF_EVENT_TOKEN:
        if (!g->n_ids) {
            g->t_first_s = cli_now_s();
            cli_progress_end(&g->bar);
        }
        if (!push_id(g, ev->token)) g->failed = true;
        if (g->tok) {
            emit_text(g, ev->token, ev->text, ev->text_len);
        } else { /* no tokenizer: the ids are the text */
            char piece[16];
            const int n = snprintf(piece, sizeof piece, "%s%d", g->n_ids > 1 ? " " : "", ev->token);
            g->emit(g->user, piece, (size_t)n, false);
        }
        break;
    case INF_EVENT_DONE:
        cli_progress_end(&g->bar);
        if (ev->text_len) g->emit(g->user, ev->text, ev->text_len, g->thinking);
        g->t_end_s = cli_now_s();
        if (!g->n_ids) g->t_first_s = g->t_end_s;
        g->n_cached = ev->n_cached;
        g->n_decoded = ev->n_generated > 0 ? ev->n_generated - 1 : 0;
        g->stop_index = ev->stop_index;
        switch (ev->finish) {
        case INF_FINISH_STOP: g->stop = ev->stop_index >= 0 ? CLI_STOP_STRING : CLI_STOP_EOG; break;
        case INF_FINISH_LENGTH: g->stop = CLI_STOP_LENGTH; break;
        case INF_FINISH_CONTEXT: g->stop = CLI_STOP_CONTEXT; break;
        case INF_FINISH_CANCELLED: g->stop = CLI_STOP_INTERRUPT; break;
        }
        break;
    }
}

void cli_generate(cli_generation *g) {
    g->think_open = g->tok ? inf_tokenizer_find_special(g->tok, "<think>") : -1;
    g->think_close = g->tok ? inf_tokenizer_find_special(g->tok, "</think>") : -1;
    g->thinking = g->failed = false;
    g->ids = NULL;
    g->n_ids = g->cap_ids = 0;
    g->n_decoded = 0;
    g->stop = CLI_STOP_ERROR;
    g->stop_index = -1;
    g->t_start_s = g->t_first_s = g->t_end_s = cli_now_s();
    inf_request req;
    inf_request_default(&req);
    req.prompt = g->prompt;
    req.n_prompt = g->n_prompt;
    req.sampling = g->sampling;
    req.stops = g->stops;
    req.n_stops = g->n_stops;
    req.max_tokens = g->n_predict < 0 ? 0 : (int)g->n_predict;
    req.ignore_eog = g->ignore_eos;
    req.report_progress = true;
    req.on_event = on_event;
    req.user = g;
    if (g->n_predict == 0) { /* nothing to generate */
        g->stop = CLI_STOP_LENGTH;
        return;
    }
    uint64_t id;
    if (inf_engine_submit(g->engine, &req, &id, &g->err)) {
        if (g->err.status == INF_ERR_CONTEXT_FULL) g->stop = CLI_STOP_CONTEXT;
        return;
    }
    cli_progress_begin(&g->bar, "prompt");
    bool busy = true, cancelled = false;
    while (busy) {
        if (cli_interrupted && !cancelled) cancelled = inf_engine_cancel(g->engine, id);
        if (inf_engine_step(g->engine, &busy, &g->err)) {
            g->stop = CLI_STOP_ERROR;
            break;
        }
    }
    cli_progress_end(&g->bar);
    if (g->failed) {
        g->stop = CLI_STOP_ERROR;
        snprintf(g->err.msg, sizeof g->err.msg, "out of memory after %zu tokens", g->n_ids);
    }
}

inf_status cli_render_chat(const inf_chat_template *tmpl, const inf_tokenizer *tok, const cli_message *msgs,
                           size_t n, bool thinking, int32_t **ids, size_t *n_ids, inf_error *err) {
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
    char *text = NULL;
    size_t len = 0;
    inf_status st = inf_chat_template_render_ids(tmpl, tok, json, strlen(json), &text, &len, ids, n_ids, err);
    free(text);
    free(json);
    return st;
}

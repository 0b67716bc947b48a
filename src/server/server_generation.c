/*
 * server_generation.c — one request's generation, shared by the APIs:
 * submit to the engine, take the events in order on the connection thread,
 * hand them to the API's formatter (gen_api), and either queue the whole
 * reply at the end or stream it as server-sent events. A client that goes
 * away is noticed while waiting (every 50 ms) and its request cancelled.
 */
#include "server/qwen3_output.h"
#include "server/server_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WAIT_MS = 50 };

void gen_sse(generation *g, const char *event, cJSON *json) {
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!text) {
        g->failed = true;
        return;
    }
    if (event) sb_printf(&g->out, "event: %s\n", event);
    sb_puts(&g->out, "data: ");
    sb_puts(&g->out, text);
    sb_puts(&g->out, "\n\n");
    free(text);
}

static int finish_metric(const gen_choice *c) {
    if (c->out && qwen3_output_n_tool_calls(c->out) > 0) return FINISH_METRIC_TOOL_CALLS;
    switch (c->finish) {
    case INF_FINISH_STOP: return FINISH_METRIC_STOP;
    case INF_FINISH_LENGTH:
    case INF_FINISH_CONTEXT: return FINISH_METRIC_LENGTH;
    case INF_FINISH_CANCELLED: return FINISH_METRIC_CANCELLED;
    }
    return FINISH_METRIC_ERROR;
}

static void handle(generation *g, job_event *ev) {
    if (ev->index < 0 || ev->index >= g->n_choices) return;
    gen_choice *c = &g->choices[ev->index];
    if (ev->kind == INF_EVENT_TOKEN) {
        if (g->t_first_s == 0) g->t_first_s = server_now_s();
        g->api->token(g, c, ev);
    } else if (ev->kind == INF_EVENT_DONE) {
        c->finish = ev->finish;
        c->stop_index = ev->stop_index;
        c->n_generated = ev->n_generated;
        c->done = true;
        /* a prompt's tokens count once, with its first completion */
        const bool first_of_prompt = ev->index % (g->n_choices / g->n_prompts) == 0;
        if (first_of_prompt) g->n_cached += ev->n_cached;
        g->n_generated += ev->n_generated;
        g->api->done(g, c, ev);
        if (g->ttft_ms == 0) {
            g->queue_ms = ev->queue_ms;
            g->ttft_ms = ev->queue_ms + ev->prefill_ms;
        }
        double ttft = ev->n_generated > 0 ? (ev->queue_ms + ev->prefill_ms) / 1e3 : -1;
        double tpot = ev->n_generated > 1 ? ev->decode_ms / 1e3 / (ev->n_generated - 1) : -1;
        metrics_request_done(g->srv, finish_metric(c), first_of_prompt ? ev->n_prompt : 0, ev->n_generated,
                             first_of_prompt ? ev->n_cached : 0, ttft, tpot, server_now_s() - g->t_submit_s);
    }
}

static bool all_done(const generation *g) {
    for (int i = 0; i < g->n_choices; i++)
        if (!g->choices[i].done) return false;
    return true;
}

generation *generation_new(server *srv, http_exchange *ex, const gen_api *api, int n_prompts, int n) {
    generation *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->ex = ex;
    g->srv = srv;
    g->api = api;
    g->n_prompts = n_prompts;
    g->n_choices = n_prompts * n;
    g->prompts = calloc((size_t)n_prompts, sizeof *g->prompts);
    g->prompt_lens = calloc((size_t)n_prompts, sizeof *g->prompt_lens);
    g->choices = calloc((size_t)g->n_choices, sizeof *g->choices);
    if (!g->prompts || !g->prompt_lens || !g->choices) {
        generation_free(g);
        return NULL;
    }
    for (int i = 0; i < g->n_choices; i++) {
        g->choices[i].index = i;
        g->choices[i].block = -1;
    }
    return g;
}

void generation_free(generation *g) {
    if (!g) return;
    if (g->job_live) job_finish(&g->job);
    if (g->ex) {
        g->ex->n_prompt = (int)g->n_prompt;
        g->ex->n_generated = g->n_generated;
        g->ex->n_cached = g->n_cached;
        g->ex->queue_ms = g->queue_ms;
        g->ex->ttft_ms = g->ttft_ms;
    }
    for (int i = 0; i < g->n_choices; i++) {
        gen_choice *c = &g->choices[i];
        qwen3_output_free(c->out);
        sb_free(&c->text);
        cJSON_Delete(c->logprobs);
        cJSON_Delete(c->lp_tokens);
        cJSON_Delete(c->lp_token_logprobs);
        cJSON_Delete(c->lp_top);
        cJSON_Delete(c->lp_offsets);
    }
    free(g->choices);
    params_free(&g->params);
    for (int i = 0; i < g->n_prompts; i++) {
        if (g->prompts) free(g->prompts[i]);
        if (g->echo) free(g->echo[i]);
    }
    free(g->prompts);
    free(g->prompt_lens);
    free(g->echo);
    free(g->forced_prefix);
    free(g->model_name_copy);
    sb_free(&g->out);
    free(g);
}

/* ---- streaming ---- */

static long produce(void *ctx, char *buf, size_t cap) {
    generation *g = ctx;
    for (;;) {
        if (g->out_sent < g->out.len) {
            size_t n = g->out.len - g->out_sent;
            if (n > cap) n = cap;
            memcpy(buf, g->out.data + g->out_sent, n);
            g->out_sent += n;
            if (g->out_sent == g->out.len) g->out.len = g->out_sent = 0;
            return (long)n;
        }
        if (g->ended) return -1;
        if (g->failed || g->out.failed) return -2;
        job_event ev;
        bool got = false;
        while (job_next(&g->job, got ? 0 : WAIT_MS, &ev)) {
            got = true;
            handle(g, &ev);
            job_event_free(&ev);
            if (g->out.len > 4096) break;
        }
        if (g->job.lost_event) g->failed = true;
        if (all_done(g) && job_drained(&g->job)) {
            g->api->stream_end(g);
            g->ended = true;
            g->ex->n_generated = g->n_generated;
            g->ex->n_cached = g->n_cached;
            g->ex->queue_ms = g->queue_ms;
            g->ex->ttft_ms = g->ttft_ms;
            continue;
        }
        if (!got) {
            if (http_client_gone(g->ex)) {
                job_cancel(&g->job);
                return -2;
            }
            if (g->out.len == 0) return 0;
        }
    }
}

static void stream_done(void *ctx) {
    generation *g = ctx;
    g->ex = NULL; /* the exchange may be gone by now: the log line has what produce left */
    generation_free(g);
}

/* ---- entry ---- */

int generation_run(generation *g) {
    http_exchange *ex = g->ex;
    server *srv = g->srv;
    g->stream = g->params.stream;
    g->created = (long long)time(NULL);
    g->t_submit_s = server_now_s();
    ex->n_prompt = (int)g->n_prompt;
    /* the name usually points into the request body, which is freed when
     * the handler returns, before a stream's chunks are written */
    if (g->model_name && !(g->model_name = g->model_name_copy = strdup(g->model_name))) {
        generation_free(g);
        return http_reply_error(ex, 500, NULL, NULL, "out of memory");
    }

    if (atomic_load(&srv->in_flight) >= srv->opt.parallel + srv->opt.max_queue) {
        generation_free(g);
        return http_reply_error(ex, 429, NULL, "queue_full", "too many requests are waiting; retry later");
    }
    inf_request *reqs = calloc((size_t)g->n_prompts, sizeof *reqs);
    if (!reqs) {
        generation_free(g);
        return http_reply_error(ex, 500, NULL, NULL, "out of memory");
    }
    for (int i = 0; i < g->n_prompts; i++) {
        reqs[i] = g->params.req;
        reqs[i].prompt = g->prompts[i];
        reqs[i].n_prompt = g->prompt_lens[i];
        reqs[i].n = g->n_choices / g->n_prompts;
        reqs[i].logprobs = g->logprobs;
        reqs[i].top_logprobs = g->top_logprobs;
    }
    inf_error err = {0};
    inf_status st = job_submit(srv, &g->job, reqs, g->n_prompts, &err);
    free(reqs);
    if (st) {
        generation_free(g);
        int status = err.status == INF_ERR_NOMEM ? 500 : 400;
        return http_reply_error(ex, status, NULL, err.status == INF_ERR_CONTEXT_FULL ? "context_length_exceeded" : NULL,
                                "%s", err.msg);
    }
    g->job_live = true;

    if (g->stream) {
        if (g->api->stream_begin) g->api->stream_begin(g);
        /* the exchange's counters are written as the stream goes */
        return http_reply_stream(ex, "text/event-stream", produce, stream_done, g);
    }
    /* the client is looked at every WAIT_MS, also while tokens keep coming
     * (a gone client was noticed only when none came for WAIT_MS: a
     * non-streamed request ran to its max_tokens after its client left) */
    double next_check = server_now_s() + WAIT_MS / 1e3;
    while (!(all_done(g) && job_drained(&g->job))) {
        job_event ev;
        bool got = job_next(&g->job, WAIT_MS, &ev);
        if (got) {
            handle(g, &ev);
            job_event_free(&ev);
        }
        if (!got || server_now_s() >= next_check) {
            next_check = server_now_s() + WAIT_MS / 1e3;
            if (http_client_gone(ex)) job_cancel(&g->job);
        }
    }
    if (g->job.lost_event) g->failed = true;
    int r = g->failed ? http_reply_error(ex, 500, NULL, NULL, "out of memory while generating") : g->api->reply(g);
    generation_free(g);
    return r;
}

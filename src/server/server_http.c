/*
 * server_http.c — the HTTP side of `inferno serve`: libmicrohttpd's daemon
 * (one thread per connection), request bodies under a size limit, routing,
 * the API key, CORS, replies and error objects, one log line per request,
 * and the server's life: load in the background, drive the engine on its
 * own thread, shut down gracefully on SIGINT/SIGTERM.
 */
#include "server/server_internal.h"

#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

void server_options_default(server_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->host = "127.0.0.1";
    opt->port = 8080;
    opt->parallel = 4;
    opt->kv_type = INF_KV_F16;
    opt->max_body = 8u << 20;
    opt->timeout_s = 600;
    opt->grace_s = 10;
    opt->max_queue = 256;
}

/* ------------------------------------------------------------------ replies */

static void add_common_headers(http_exchange *ex, struct MHD_Response *r) {
    if (ex->srv->opt.cors_origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", ex->srv->opt.cors_origin);
        MHD_add_response_header(r, "Vary", "Origin");
    }
}

static int queue(http_exchange *ex, int status, struct MHD_Response *r) {
    if (!r) return MHD_NO;
    add_common_headers(ex, r);
    ex->status = status;
    enum MHD_Result res = MHD_queue_response(ex->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return res;
}

int http_reply_text(http_exchange *ex, int status, const char *content_type, const char *text) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", content_type);
    return queue(ex, status, r);
}

int http_reply_json(http_exchange *ex, int status, char *text) {
    if (!text) return http_reply_text(ex, 500, "application/json",
                                      "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
                                      "\"param\":null,\"code\":null}}");
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    return queue(ex, status, r);
}

int http_reply_cjson(http_exchange *ex, int status, cJSON *json) {
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    return http_reply_json(ex, status, text);
}

static const char *openai_error_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

static const char *anthropic_error_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

/* The error object of ex's API; Retry-After: 1 when retry. */
static int reply_error_object(http_exchange *ex, int status, const char *param, const char *code, const char *msg,
                              bool retry) {
    cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
    if (ex->anthropic) {
        cJSON_AddStringToObject(root, "type", "error");
        cJSON_AddStringToObject(e, "type", anthropic_error_type(status));
        cJSON_AddStringToObject(e, "message", msg);
    } else {
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddStringToObject(e, "type", openai_error_type(status));
        if (param) cJSON_AddStringToObject(e, "param", param);
        else cJSON_AddNullToObject(e, "param");
        if (code) cJSON_AddStringToObject(e, "code", code);
        else cJSON_AddNullToObject(e, "code");
    }
    cJSON_AddItemToObject(root, "error", e);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (retry) MHD_add_response_header(r, "Retry-After", "1");
    return queue(ex, status, r);
}

int http_reply_error(http_exchange *ex, int status, const char *param, const char *code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return reply_error_object(ex, status, param, code, msg, status == 429 || status == 503);
}

/* 429 and 503 say when to come back. */
static int reply_retry_later(http_exchange *ex, int status, const char *code, const char *msg) {
    return reply_error_object(ex, status, NULL, code, msg, true);
}

typedef struct stream_ctx {
    http_stream_fn producer;
    void (*done)(void *ctx);
    void *ctx;
} stream_ctx;

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_ctx *s = cls;
    long n = s->producer(s->ctx, buf, max);
    if (n == -1) return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream_ctx *s = cls;
    s->done(s->ctx);
    free(s);
}

int http_reply_stream(http_exchange *ex, const char *content_type, http_stream_fn producer, void (*done)(void *ctx),
                      void *ctx) {
    stream_ctx *s = malloc(sizeof *s);
    if (!s) {
        done(ctx);
        return http_reply_error(ex, 500, NULL, NULL, "out of memory");
    }
    *s = (stream_ctx){producer, done, ctx};
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader, s,
                                                               stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", content_type);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    ex->streamed = true;
    return queue(ex, 200, r);
}

const char *http_header(http_exchange *ex, const char *name) {
    return MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, name);
}

bool http_client_gone(const http_exchange *ex) {
    if (ex->socket_fd < 0) return false;
    struct pollfd p = {.fd = ex->socket_fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* ------------------------------------------------------------------ routing */

static bool authorized(http_exchange *ex) {
    const char *key = ex->srv->opt.api_key;
    if (!key) return true;
    const char *auth = http_header(ex, "Authorization");
    if (auth && !strncasecmp(auth, "Bearer ", 7)) {
        const char *given = auth + 7;
        while (*given == ' ') given++;
        if (secure_equal(given, key)) return true;
    }
    const char *x = http_header(ex, "x-api-key");
    return x && secure_equal(x, key);
}

typedef enum route_kind { ROUTE_GET, ROUTE_POST_JSON } route_kind;

typedef struct route {
    const char *path;
    route_kind kind;
    int (*get)(http_exchange *ex);
    int (*post)(http_exchange *ex, const cJSON *body);
    bool anthropic;
} route;

static int api_health(http_exchange *ex);

static const route routes[] = {
    {"/health", ROUTE_GET, api_health, NULL, false},
    {"/v1/health", ROUTE_GET, api_health, NULL, false},
    {"/v1/models", ROUTE_GET, api_models, NULL, false},
    {"/models", ROUTE_GET, api_models, NULL, false},
    {"/metrics", ROUTE_GET, api_metrics, NULL, false},
    {"/v1/chat/completions", ROUTE_POST_JSON, NULL, api_chat_completions, false},
    {"/chat/completions", ROUTE_POST_JSON, NULL, api_chat_completions, false},
    {"/v1/completions", ROUTE_POST_JSON, NULL, api_completions, false},
    {"/completions", ROUTE_POST_JSON, NULL, api_completions, false},
    {"/v1/messages", ROUTE_POST_JSON, NULL, api_messages, true},
    {"/v1/messages/count_tokens", ROUTE_POST_JSON, NULL, api_messages, true},
    {"/tokenize", ROUTE_POST_JSON, NULL, api_tokenize, false},
    {"/detokenize", ROUTE_POST_JSON, NULL, api_detokenize, false},
};

static int api_health(http_exchange *ex) {
    int ready = atomic_load(&ex->srv->ready);
    if (ready == 1 && !atomic_load(&ex->srv->stopping))
        return http_reply_text(ex, 200, "application/json", "{\"status\":\"ok\"}");
    return reply_retry_later(ex, 503, ready == 1 ? "shutting_down" : "loading",
                             ready == 1 ? "the server is shutting down" : "the model is loading");
}

static const route *find_route(const char *url) {
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(url, routes[i].path)) return &routes[i];
    return NULL;
}

static int dispatch(http_exchange *ex) {
    const route *rt = find_route(ex->url);
    ex->anthropic = rt && rt->anthropic;
    if (!strcmp(ex->method, "OPTIONS")) {
        /* CORS preflight: allowed when an origin is configured */
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, "Allow", rt && rt->kind == ROUTE_GET ? "GET, OPTIONS" : "POST, OPTIONS");
        if (ex->srv->opt.cors_origin) {
            MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type, x-api-key, anthropic-version, anthropic-beta");
            MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
        }
        return queue(ex, 204, r);
    }
    if (!rt) return http_reply_error(ex, 404, NULL, "not_found", "no route %s %s", ex->method, ex->url);
    const char *want = rt->kind == ROUTE_GET ? "GET" : "POST";
    if (strcmp(ex->method, want) && !(rt->kind == ROUTE_GET && !strcmp(ex->method, "HEAD")))
        return http_reply_error(ex, 405, NULL, "method_not_allowed", "%s wants %s, not %s", ex->url, want, ex->method);
    if (rt->get == api_health) return api_health(ex);
    if (!authorized(ex)) return http_reply_error(ex, 401, NULL, "invalid_api_key", "missing or wrong API key");
    if (ex->body_too_large)
        return http_reply_error(ex, 413, NULL, "request_too_large", "the request body is over the limit of %zu bytes",
                                ex->srv->opt.max_body);
    if (atomic_load(&ex->srv->stopping)) return reply_retry_later(ex, 503, "shutting_down", "the server is shutting down");
    if (atomic_load(&ex->srv->ready) != 1) return reply_retry_later(ex, 503, "loading", "the model is loading");
    if (rt->kind == ROUTE_GET) return rt->get(ex);

    const char *parse_end = NULL;
    cJSON *body = cJSON_ParseWithLengthOpts(ex->body ? ex->body : "", ex->body_len, &parse_end, false);
    if (!body) {
        size_t at = parse_end && ex->body ? (size_t)(parse_end - ex->body) : 0;
        return http_reply_error(ex, 400, NULL, "invalid_json", "the body is not valid JSON (at byte %zu)", at);
    }
    /* only whitespace may follow the value */
    for (const char *p = parse_end; p && p < ex->body + ex->body_len; p++) {
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            cJSON_Delete(body);
            return http_reply_error(ex, 400, NULL, "invalid_json", "the body has text after its JSON value (at byte %zu)",
                                    (size_t)(p - ex->body));
        }
    }
    if (!cJSON_IsObject(body)) {
        cJSON_Delete(body);
        return http_reply_error(ex, 400, NULL, "invalid_json", "the body must be a JSON object");
    }
    int res = rt->post(ex, body);
    cJSON_Delete(body);
    return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    server *srv = cls;
    http_exchange *ex = *con_cls;
    if (!ex) {
        ex = calloc(1, sizeof *ex);
        if (!ex) return MHD_NO;
        ex->srv = srv;
        ex->conn = conn;
        ex->method = method;
        ex->url = url;
        ex->t_start_s = server_now_s();
        ex->socket_fd = -1;
        atomic_fetch_add(&srv->exchanges, 1);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) ex->socket_fd = ci->connect_fd;
        *con_cls = ex;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno || *end || n > srv->opt.max_body) ex->body_too_large = true;
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (ex->body_too_large) return MHD_YES; /* read and drop the rest */
        if (ex->body_len + n > srv->opt.max_body) {
            ex->body_too_large = true;
            free(ex->body);
            ex->body = NULL;
            ex->body_len = ex->body_cap = 0;
            return MHD_YES;
        }
        if (ex->body_len + n + 1 > ex->body_cap) {
            size_t cap = ex->body_cap ? ex->body_cap : 4096;
            while (cap < ex->body_len + n + 1) cap *= 2;
            char *b = realloc(ex->body, cap);
            if (!b) return MHD_NO;
            ex->body = b;
            ex->body_cap = cap;
        }
        memcpy(ex->body + ex->body_len, upload, n);
        ex->body_len += n;
        ex->body[ex->body_len] = 0;
        return MHD_YES;
    }
    return dispatch(ex) == MHD_YES ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)conn;
    server *srv = cls;
    http_exchange *ex = *con_cls;
    if (!ex) return;
    double ms = (server_now_s() - ex->t_start_s) * 1e3;
    int status = ex->status ? ex->status : 500;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && ex->status == 0) status = 499; /* nginx's "client closed" */
    pthread_mutex_lock(&srv->metrics.mu);
    int digit = status / 100;
    if (digit >= 1 && digit <= 5) srv->metrics.requests_by_status[digit]++;
    pthread_mutex_unlock(&srv->metrics.mu);
    if (!srv->opt.quiet) {
        fprintf(stderr, "%s %s %d prompt=%d gen=%d cached=%d queue=%.0fms ttft=%.0fms %.1fms%s\n", ex->method, ex->url,
                status, ex->n_prompt, ex->n_generated, ex->n_cached, ex->queue_ms, ex->ttft_ms, ms,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? ""
                : toe == MHD_REQUEST_TERMINATED_WITH_ERROR && !ex->streamed ? " (error)"
                                                                              : " (client gone)");
    }
    free(ex->body);
    free(ex);
    *con_cls = NULL;
    /* idle: hand what the connection threads freed back to the system */
    if (atomic_fetch_sub(&srv->exchanges, 1) == 1) malloc_trim(0);
}

/* ------------------------------------------------------------------ life */

static size_t mem_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (size_t)kb * 1024;
}

static char *default_alias(const char *path, const inf_model_info *info) {
    if (info->name && *info->name) return strdup(info->name);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".gguf")) n -= 5;
    return strndup(base, n);
}

typedef struct loader {
    server *srv;
    pthread_t engine_thread;
    bool engine_started;
} loader;

static void *engine_main(void *arg) {
    server *srv = arg;
    inf_error err = {0};
    if (inf_engine_run(srv->engine, &err)) fprintf(stderr, "inferno serve: engine stopped: %s\n", err.msg);
    return NULL;
}

static void *loader_main(void *arg) {
    loader *ld = arg;
    server *srv = ld->srv;
    const server_options *o = &srv->opt;
    inf_error err = {0};
    inf_load_options lo;
    inf_load_options_default(&lo);
    lo.n_threads = o->n_threads;
    lo.use_mmap = !o->no_mmap;
    lo.no_repack = o->no_repack;
    lo.trace = o->trace;
    lo.kv_type = o->kv_type;
    lo.quantize = o->quantize;
    lo.quantize_type = o->quantize_type;
    lo.rope_scaling_set = o->rope_scaling_set;
    lo.rope_scaling = o->rope_scaling;
    lo.rope_scale = o->rope_scale;
    lo.yarn_orig_ctx = o->yarn_orig_ctx;
    lo.n_ctx = o->n_ctx ? o->n_ctx : 1; /* the sessions' size; the engine has its own */
    if (inf_model_load(o->model_path, &lo, &srv->model, &err)) goto fail;
    inf_model_info info;
    inf_model_get_info(srv->model, &info);
    srv->tok = inf_model_tokenizer(srv->model);
    srv->n_vocab = info.n_vocab;
    if (inf_chat_template_load(o->model_path, &srv->tmpl, &err)) {
        fprintf(stderr, "inferno serve: %s; using the built-in Qwen3 chat template\n", err.msg);
        if (inf_chat_template_from_source(NULL, &srv->tmpl, &err)) goto fail;
    }
    srv->model_id = o->alias ? strdup(o->alias) : default_alias(o->model_path, &info);
    if (!srv->model_id) {
        snprintf(err.msg, sizeof err.msg, "out of memory");
        goto fail;
    }

    srv->n_ctx = o->n_ctx ? o->n_ctx : (info.n_ctx_train > 0 && info.n_ctx_train < 8192 ? info.n_ctx_train : 8192);
    inf_engine_options eo;
    inf_engine_options_default(&eo);
    eo.n_ctx = srv->n_ctx;
    eo.max_seqs = o->parallel;
    /* per token: K and V of every layer */
    size_t token_bytes = 2 * (size_t)info.n_layer * inf_kv_type_bytes(o->kv_type, (size_t)info.n_head_kv * info.head_dim);
    const char *capped = "";
    if (o->kv_pool_tokens) {
        eo.kv_pool_tokens = (int)o->kv_pool_tokens;
    } else if (o->kv_pool_mib) {
        eo.kv_pool_mib = (size_t)o->kv_pool_mib;
    } else {
        size_t want = (size_t)o->parallel * (size_t)srv->n_ctx;
        size_t avail = mem_available_bytes();
        size_t weights = (size_t)info.weight_bytes;
        /* what fits beside the weights, leaving a tenth of the memory free */
        if (avail && token_bytes) {
            size_t room = avail > weights ? (avail - weights) / 10 * 9 : 0;
            if (want * token_bytes > room) {
                want = room / token_bytes;
                capped = " (capped to the memory available)";
            }
        }
        if (want < (size_t)srv->n_ctx) want = (size_t)srv->n_ctx;
        if (want > (size_t)1 << 30) want = (size_t)1 << 30;
        eo.kv_pool_tokens = (int)want;
    }
    if (inf_engine_new(srv->model, &eo, &srv->engine, &err)) goto fail;
    if (pthread_create(&ld->engine_thread, NULL, engine_main, srv)) {
        snprintf(err.msg, sizeof err.msg, "cannot start the engine thread");
        goto fail;
    }
    ld->engine_started = true;
    inf_engine_stats st;
    inf_engine_get_stats(srv->engine, &st);
    atomic_store(&srv->ready, 1);
    fprintf(stderr,
            "inferno serve: ready on http://%s:%d model=%s (%s) slots=%d ctx=%d kv-pool=%d tokens (%.0f MiB, %s)%s "
            "threads=%d isa=%s\n",
            o->host, srv->port, srv->model_id, o->model_path, o->parallel, srv->n_ctx, st.blocks_total * st.block_size,
            (double)st.kv_bytes / (1 << 20), inf_kv_type_name(o->kv_type), capped, info.n_threads, info.isa);
    return NULL;
fail:
    fprintf(stderr, "inferno serve: %s\n", err.msg);
    atomic_store(&srv->ready, -1);
    return NULL;
}

/* Waits until every request's reply is out (the engine finishing is not
 * enough: its last events may still be on their way to the client), at
 * most seconds; returns 1 when a second signal came meanwhile. */
static int wait_replies(server *srv, double seconds, const sigset_t *signals) {
    double until = server_now_s() + seconds;
    while ((atomic_load(&srv->exchanges) > 0 || atomic_load(&srv->in_flight) > 0) && server_now_s() < until) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        if (signals && sigtimedwait(signals, NULL, &ts) > 0) return 1; /* a second signal: stop waiting */
        if (!signals) nanosleep(&ts, NULL);
    }
    return 0;
}

int server_run(const server_options *opt) {
    server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        fprintf(stderr, "inferno serve: out of memory\n");
        return 1;
    }
    srv->opt = *opt;
    /* One thread per connection: glibc's default of an arena per thread
     * keeps freed memory in each (RSS grew ~20 MB over 2000 requests); two
     * arenas keep it within a megabyte. */
    mallopt(M_ARENA_MAX, 2);
    metrics_init(&srv->metrics);
    pthread_mutex_init(&srv->jobs_mu, NULL);
    snprintf(srv->fingerprint, sizeof srv->fingerprint, "inferno-%s", INFERNO_VERSION);
    int rc = 1;

    /* Signals go to this thread alone: block them before any thread starts. */
    sigset_t signals, old;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, &old);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    socklen_t addr_len;
    /* no MHD_USE_ERROR_LOG: its lines (a client gone mid-stream) are not
     * errors of ours; the request's log line says what happened */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
    if (inet_pton(AF_INET, opt->host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)opt->port);
        addr_len = sizeof *a4;
    } else if (inet_pton(AF_INET6, opt->host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)opt->port);
        addr_len = sizeof *a6;
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "inferno serve: --host wants an IPv4 or IPv6 address, got '%s'\n", opt->host);
        goto out;
    }
    (void)addr_len;
    srv->daemon = MHD_start_daemon(flags, (uint16_t)opt->port, NULL, NULL, on_request, srv,
                                   MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)opt->timeout_s,
                                   MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
                                   MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)256 * 1024,
                                   MHD_OPTION_END);
    if (!srv->daemon) {
        fprintf(stderr, "inferno serve: cannot listen on %s:%d: %s\n", opt->host, opt->port, strerror(errno));
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : opt->port;
    fprintf(stderr, "inferno serve: listening on http://%s:%d, loading %s\n", opt->host, srv->port, opt->model_path);

    loader ld = {.srv = srv};
    pthread_t load_thread;
    if (pthread_create(&load_thread, NULL, loader_main, &ld)) {
        fprintf(stderr, "inferno serve: cannot start the loader thread\n");
        goto out;
    }
    /* wait for a signal, or for the load to fail */
    for (;;) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        int sig = sigtimedwait(&signals, NULL, &ts);
        if (sig > 0) break;
        if (atomic_load(&srv->ready) < 0) break;
    }
    atomic_store(&srv->stopping, 1);
    pthread_join(load_thread, NULL);
    bool load_failed = atomic_load(&srv->ready) < 0;
    if (!load_failed) fprintf(stderr, "inferno serve: shutting down (running requests get %d s)\n", opt->grace_s);
    MHD_socket listen_fd = MHD_quiesce_daemon(srv->daemon);
    if (listen_fd != MHD_INVALID_SOCKET) close(listen_fd);
    if (wait_replies(srv, opt->grace_s, &signals) || atomic_load(&srv->in_flight) > 0) jobs_cancel_all(srv);
    wait_replies(srv, 10, NULL);
    MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    if (ld.engine_started) {
        inf_engine_stop(srv->engine);
        pthread_join(ld.engine_thread, NULL);
    }
    rc = load_failed ? 1 : 0;
    if (opt->trace && srv->model) inf_model_print_trace(srv->model, stderr);
out:
    if (srv->daemon) MHD_stop_daemon(srv->daemon);
    inf_engine_free(srv->engine);
    inf_chat_template_free(srv->tmpl);
    inf_model_free(srv->model);
    free(srv->model_id);
    metrics_destroy(&srv->metrics);
    pthread_mutex_destroy(&srv->jobs_mu);
    free(srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

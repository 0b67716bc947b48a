/*
 * server_internal.h — what the server's files share: the server state, one
 * HTTP exchange (http_exchange), the bridge from engine events to a
 * connection thread (server_job), metrics, and JSON reply helpers.
 */
#ifndef INF_SERVER_INTERNAL_H
#define INF_SERVER_INTERNAL_H

#include "server/server.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct MHD_Connection;

/* A growable byte buffer. */
typedef struct strbuf {
    char *data;
    size_t len, cap;
    bool failed; /* out of memory: further appends do nothing */
} strbuf;

/* ------------------------------------------------------------------ metrics (server_metrics.c) */

enum { METRIC_BUCKETS = 14 };

/* A Prometheus histogram of seconds. */
typedef struct metric_histogram {
    uint64_t counts[METRIC_BUCKETS + 1]; /* per bucket (not cumulative); the last is +Inf */
    double sum;
    uint64_t n;
} metric_histogram;

/* Counters and histograms; every field under mu. */
typedef struct server_metrics {
    pthread_mutex_t mu;
    uint64_t requests_by_status[6]; /* 1xx .. 5xx by first digit (index 1..5) */
    uint64_t prompt_tokens, generated_tokens, cached_tokens;
    uint64_t finished[5];           /* by reason: stop, length, tool_calls, cancelled, error */
    metric_histogram ttft, tpot, latency;
} server_metrics;

enum { FINISH_METRIC_STOP, FINISH_METRIC_LENGTH, FINISH_METRIC_TOOL_CALLS, FINISH_METRIC_CANCELLED,
       FINISH_METRIC_ERROR };

void metrics_init(server_metrics *m);
void metrics_destroy(server_metrics *m);
void metrics_observe(metric_histogram *h, double seconds); /* under m->mu */

/* ------------------------------------------------------------------ the server */

typedef struct server {
    server_options opt;
    struct MHD_Daemon *daemon;
    int port;                      /* bound */
    /* set by the loader thread before ready becomes 1; read-only after */
    inf_model *model;
    const inf_tokenizer *tok;
    inf_chat_template *tmpl;
    inf_engine *engine;
    char *model_id;                /* the alias the model answers to */
    int n_ctx, n_vocab;
    atomic_int ready;              /* 0 loading, 1 ready, -1 failed */
    atomic_int stopping;           /* shutdown began: new requests get 503 */
    atomic_int in_flight;          /* HTTP requests with engine work not yet done (for 429) */
    atomic_int exchanges;          /* HTTP requests begun and not yet completed (their reply sent) */
    atomic_uint_fast64_t next_id;  /* for response ids */
    char fingerprint[32];          /* system_fingerprint */
    server_metrics metrics;
    pthread_mutex_t jobs_mu;       /* guards jobs (for the shutdown's cancel) */
    struct server_job *jobs;       /* live jobs, a doubly linked list */
} server;

/* ------------------------------------------------------------------ one HTTP exchange (server_http.c) */

typedef struct http_exchange {
    server *srv;
    struct MHD_Connection *conn;
    const char *method, *url;
    char *body;                    /* the request body, NUL-terminated */
    size_t body_len, body_cap;
    bool body_too_large;
    double t_start_s;
    int socket_fd;
    /* for the log line */
    int status;
    int n_prompt, n_generated, n_cached;
    double queue_ms, ttft_ms;      /* of the first completion: waiting for admission, and to its first token */
    bool streamed;
    bool anthropic;                /* /v1/messages: errors in Anthropic's shape */
} http_exchange;

/* Queues a reply with a JSON body (takes ownership of text, malloc'd) or an
 * OpenAI error object. Return the MHD result for the access handler. */
int http_reply_json(http_exchange *ex, int status, char *text);
int http_reply_cjson(http_exchange *ex, int status, cJSON *json); /* deletes json */
int http_reply_text(http_exchange *ex, int status, const char *content_type, const char *text);
/* An error: OpenAI's {"error": {"message", "type", "param", "code"}}, or
 * for ex->anthropic Anthropic's {"type": "error", "error": {"type",
 * "message"}} with the type mapped from the status. param and code may be
 * NULL (JSON null). */
int http_reply_error(http_exchange *ex, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A streamed reply: producer is called on the connection thread whenever
 * the client can take more bytes; it appends to out (at most cap bytes)
 * and returns the count, 0 when it has nothing yet (it may block briefly),
 * -1 at the end of the stream, -2 on an error (the connection is closed).
 * done is called once when the stream ends, however it ends. */
typedef long (*http_stream_fn)(void *ctx, char *out, size_t cap);
int http_reply_stream(http_exchange *ex, const char *content_type, http_stream_fn producer, void (*done)(void *ctx),
                      void *ctx);

/* A header of the request, or NULL. */
const char *http_header(http_exchange *ex, const char *name);
/* Whether the client closed its side of the connection. */
bool http_client_gone(const http_exchange *ex);

/* ------------------------------------------------------------------ engine bridge (server_job.c) */

/* One engine event, copied for the connection thread. */
typedef struct job_event {
    inf_event_kind kind;
    int index;
    int32_t token;
    char *text;        /* malloc'd, NUL-terminated */
    size_t text_len;
    float logprob;
    inf_token_logprob *top; /* malloc'd [n_top] */
    int n_top;
    inf_finish_reason finish;
    int stop_index;
    int n_prompt, n_cached, n_generated;
    double queue_ms, prefill_ms, decode_ms;
} job_event;

/* One HTTP request's engine requests (one per prompt; each with n
 * completions) as its connection thread sees them: the engine's callback
 * appends events under mu, with index = prompt * n + completion; the
 * connection thread takes them in order. A job lives until the engine has
 * delivered DONE for each completion, so its owner cancels and then drains
 * it before freeing (job_finish). */
typedef struct job_tag {
    struct server_job *job;
    int prompt;
} job_tag;

typedef struct server_job {
    server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job_event *events;
    size_t head, n, cap;
    int n_per_request;     /* completions per engine request */
    int n_choices, n_done; /* completions in all, and those done */
    bool lost_event;       /* out of memory in the callback: the reply fails */
    bool submitted;        /* every request is in: the last DONE ends the job's in_flight count */
    int n_requests;
    uint64_t *ids;         /* engine request ids [n_requests] */
    job_tag *tags;         /* [n_requests] */
    struct server_job *prev, *next;
} server_job;

/* Submits n_reqs requests with the same n (their on_event and user are set
 * here). On failure nothing is left running, the job needs no finish, and
 * err says why. */
inf_status job_submit(server *srv, server_job *job, inf_request *reqs, int n_reqs, inf_error *err);
/* Waits up to timeout_ms for the next event; true with *ev filled (the
 * caller frees it with job_event_free), false on timeout. */
bool job_next(server_job *job, int timeout_ms, job_event *ev);
/* Whether every completion has delivered DONE and every event was taken. */
bool job_drained(server_job *job);
/* Cancels what is still running, waits for the engine's last events, and
 * frees the job's resources. */
void job_finish(server_job *job);
void job_cancel(server_job *job);
void job_event_free(job_event *ev);
/* Cancels every live job (shutdown). */
void jobs_cancel_all(server *srv);

/* ------------------------------------------------------------------ request fields (server_params.c) */

/* A refused request: status (0 = 400), the field it names, an error code,
 * the message. Built by the parsers and the request builders. */
typedef struct param_error {
    int status;
    char param[96];
    char code[48];
    char msg[1024];
} param_error;

/* Fills e; returns false (for `return reject(...)`). */
bool reject(param_error *e, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A 400 naming param: "param: msg". Returns false. */
bool reject_field(param_error *e, const char *param, const char *msg);
/* Queues e as the reply. */
int reply_rejected(http_exchange *ex, const param_error *e);

/* Reads the sampling fields shared by the APIs into req->sampling (over the
 * model's defaults), plus max_tokens (both names), stop, seed, n,
 * logprobs/top_logprobs, logit_bias. anthropic: stop_sequences and the
 * Messages API's names. False with e filled on a bad field. stops and bias
 * are malloc'd into *stops_out / *bias_out (free with params_free). */
typedef struct request_params {
    inf_request req;
    char **stops;
    size_t n_stops;
    inf_logit_bias *bias;
    int n_bias;
    bool stream, include_usage;
    bool seed_given;
} request_params;

bool params_parse(server *srv, const cJSON *body, bool anthropic, bool thinking, request_params *p, param_error *e);
void params_free(request_params *p);

/* Prompt ids against the context: false with e filled when the prompt does
 * not leave room to generate. */
bool params_check_context(server *srv, size_t n_prompt, int max_tokens, param_error *e);

/* ------------------------------------------------------------------ one generation (server_generation.c) */

struct qwen3_output;
typedef struct generation generation;

/* One of a request's n completions. */
typedef struct gen_choice {
    int index;
    struct qwen3_output *out;  /* chat and messages: splits reasoning, content, tool calls */
    strbuf text;               /* completions: the text so far */
    cJSON *logprobs;           /* chat: logprobs.content entries; completions: see api_openai.c */
    cJSON *lp_tokens, *lp_token_logprobs, *lp_top, *lp_offsets;
    inf_finish_reason finish;
    int stop_index;
    int n_generated;
    /* bytes of the aggregate content and reasoning that the forced prefix
     * (a continued message, a prefill) produced: the stream never sends
     * them, so the whole reply leaves them out too */
    size_t prefix_content, prefix_reasoning;
    bool done;
    /* streaming state of the APIs */
    bool opened;               /* chat: the role chunk is out */
    int block;                 /* messages: the open content block's kind, or -1 */
    int n_blocks;              /* messages: content blocks opened so far */
    size_t text_chars;         /* completions: characters (code points) of text, for text_offset */
} gen_choice;

/* What an API does with the events of its generation. */
typedef struct gen_api {
    void (*token)(generation *g, gen_choice *c, const job_event *ev);
    void (*done)(generation *g, gen_choice *c, const job_event *ev);
    void (*stream_begin)(generation *g); /* the first bytes of a stream (may be NULL) */
    void (*stream_end)(generation *g);   /* after every choice is done: the last events */
    int (*reply)(generation *g);         /* not streaming: queue the whole reply */
} gen_api;

struct generation {
    http_exchange *ex;
    server *srv;
    const gen_api *api;
    request_params params;
    int n_prompts;                 /* engine requests (completions: a list of prompts) */
    int32_t **prompts;             /* [n_prompts], each malloc'd */
    size_t *prompt_lens;           /* [n_prompts] */
    size_t n_prompt;               /* tokens of all the prompts */
    char id[64];
    long long created;
    int n_choices;                 /* n_prompts * n */
    gen_choice *choices;
    bool stream;
    bool logprobs;
    int top_logprobs;
    bool tools;                    /* tool calls are parsed */
    bool starts_in_reasoning;
    char *forced_prefix;           /* malloc'd: text the prompt already holds of the answer (a forced tool call) */
    int n_cached;
    int n_generated;
    double t_submit_s, t_first_s;
    double queue_ms, ttft_ms;      /* of the first completion to end */
    /* streaming */
    strbuf out;
    size_t out_sent;
    bool ended;
    bool failed;                   /* out of memory or a lost event: the reply is an error */
    bool job_live;
    server_job job;
    /* API-specific */
    char **echo;                   /* completions: [n_prompts] prompt texts to prepend, or NULL */
    const char *model_name;        /* as the reply names it (may point into the request body) */
    char *model_name_copy;         /* generation_run's copy: a stream outlives the body */
};

/* A generation for n_prompts prompts of n completions each (calloc'd,
 * choices indexed); NULL when out of memory. */
generation *generation_new(server *srv, http_exchange *ex, const gen_api *api, int n_prompts, int n);
/* Frees g and everything it owns (before generation_run only). */
void generation_free(generation *g);
/* g's prompts, params and choices' parsers are set by the caller before.
 * Submits, then either waits and queues the reply, or queues a streamed
 * reply. Frees g when done. */
int generation_run(generation *g);
/* Appends a server-sent event "data: JSON\n\n" (deletes json). */
void gen_sse(generation *g, const char *event, cJSON *json);

/* What chat and messages share (api_openai.c). */
typedef enum tool_mode { TOOLS_AUTO, TOOLS_NONE, TOOLS_REQUIRED, TOOLS_NAMED } tool_mode;
/* Renders messages (and tools; both taken) with the chat template into
 * g->prompts[0]. The answer may begin in the prompt (g->forced_prefix,
 * which the parsers read first): a required or named tool choice opens the
 * call; continue_final (vLLM's continue_final_message) continues the last
 * assistant message's text. */
bool chat_prompt(generation *g, cJSON *messages, cJSON *tools, bool thinking, tool_mode mode, const char *tool_name,
                 bool continue_final, param_error *e);
/* The request's model field (a 404 for another name with --strict-model). */
bool request_model(server *srv, const cJSON *body, const char **name, param_error *e);
/* chat_template_kwargs.enable_thinking, else enable_thinking, else true. */
bool request_thinking(const cJSON *body, bool *thinking, param_error *e);
/* Creates each choice's output parser (and its logprobs array). */
bool gen_parsers(generation *g, bool tools);
/* A choice's content and reasoning without what its forced prefix produced
 * (NULL when nothing is left). */
const char *gen_content(const gen_choice *c, size_t *len);
const char *gen_reasoning(const gen_choice *c, size_t *len);

/* The request builders: a body to a generation ready to run (ex may be NULL:
 * the fuzz target builds without a connection), or NULL with e filled. */
generation *chat_build(server *srv, http_exchange *ex, const cJSON *body, param_error *e);
generation *completions_build(server *srv, http_exchange *ex, const cJSON *body, param_error *e);
/* count_only: /v1/messages/count_tokens (g->n_prompt is the answer). */
generation *messages_build(server *srv, http_exchange *ex, const cJSON *body, bool count_only, param_error *e);

/* ------------------------------------------------------------------ handlers */

int api_chat_completions(http_exchange *ex, const cJSON *body);
int api_completions(http_exchange *ex, const cJSON *body);
int api_messages(http_exchange *ex, const cJSON *body);
int api_tokenize(http_exchange *ex, const cJSON *body);
int api_detokenize(http_exchange *ex, const cJSON *body);
int api_models(http_exchange *ex);
int api_metrics(http_exchange *ex);

/* ------------------------------------------------------------------ small helpers (server_util.c) */

double server_now_s(void);
/* "chatcmpl-", "cmpl-", "msg_" + 24 characters, unique per server run. */
void server_make_id(server *srv, const char *prefix, char *out, size_t cap);
/* Text as valid UTF-8 (ill-formed bytes as U+FFFD), malloc'd. */
char *utf8_sanitize(const char *s, size_t len);
/* A token's text for logprobs: valid UTF-8 and its raw bytes. */
char *token_text(server *srv, int32_t id, const unsigned char **bytes, size_t *n_bytes);
/* Constant-time string equality. */
bool secure_equal(const char *a, const char *b);
void sb_append(strbuf *b, const char *s, size_t n);
void sb_puts(strbuf *b, const char *s);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(strbuf *b);

/* Records a finished request in the metrics. */
void metrics_request_done(server *srv, int finish_metric, int n_prompt, int n_generated, int n_cached,
                          double ttft_s, double tpot_s, double latency_s);

#endif /* INF_SERVER_INTERNAL_H */

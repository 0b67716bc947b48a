/*
 * server.h — `inferno serve`: an OpenAI- and Anthropic-compatible HTTP
 * server over the engine (include/inferno.h). Like the CLI, the server is a
 * client of the public header only.
 *
 * Threads:
 *   - libmicrohttpd runs one thread per connection; each request's handler
 *     runs on its connection's thread, submits to the engine, and blocks
 *     reading its request's events (server_job.c) while it writes the reply;
 *   - one engine thread drives inf_engine_run and owns the model's compute;
 *     the engine's event callback only copies events into the job's queue;
 *   - a loader thread loads the model after the listener is up (so /health
 *     answers 503 while it loads);
 *   - the caller's thread (server_run) waits for SIGINT/SIGTERM, then stops
 *     accepting, lets running requests finish for the grace period, cancels
 *     what is left and returns.
 */
#ifndef INF_SERVER_H
#define INF_SERVER_H

#include "inferno.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct server_options {
    const char *model_path;   /* -m */
    const char *host;         /* --host, default 127.0.0.1 */
    int port;                 /* --port, default 8080; 0 = any free port */
    const char *api_key;      /* --api-key / --api-key-file; NULL = no auth */
    int parallel;             /* --parallel: sequences decoded at once (default 4) */
    int n_ctx;                /* -c: longest context of one request (0: the model's, capped) */
    long kv_pool_tokens;      /* --kv-pool N (tokens); 0 = parallel * n_ctx, capped to memory */
    long kv_pool_mib;         /* --kv-pool NMiB / NGiB */
    inf_kv_type kv_type;      /* --kv-type */
    int n_threads;            /* -t, 0 = physical cores */
    const char *alias;        /* --alias; NULL: general.name, else the file name */
    const char *cors_origin;  /* --cors-origin; NULL: no CORS headers */
    size_t max_body;          /* --max-body bytes (default 8 MiB) */
    int timeout_s;            /* --timeout: idle connection timeout (default 600) */
    int grace_s;              /* --grace: how long running requests may finish at shutdown (default 10) */
    int max_queue;            /* --max-queue: requests waiting beyond the running ones before 429 (default 256) */
    bool strict_model;        /* --strict-model */
    bool no_mmap;             /* --no-mmap */
    bool no_repack;           /* --no-repack */
    bool quantize;            /* --quantize TYPE */
    inf_dtype quantize_type;
    bool rope_scaling_set;    /* --rope-scaling, --rope-scale, --yarn-orig-ctx (inf_load_options) */
    inf_rope_scaling rope_scaling;
    float rope_scale;
    int yarn_orig_ctx;
    bool quiet;               /* --quiet: no per-request log lines */
    bool trace;               /* --trace: per-op calls and times on stderr at shutdown */
} server_options;

void server_options_default(server_options *opt);

/* Runs the server until SIGINT or SIGTERM. Prints the startup line (address,
 * model, slots, KV pool) on stderr once the model is loaded. Returns a
 * process exit code: 0 after a clean shutdown, 1 when the model or the
 * listener failed. */
int server_run(const server_options *opt);

#endif /* INF_SERVER_H */

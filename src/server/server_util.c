/*
 * server_util.c — small helpers of the server: clocks and ids, UTF-8
 * sanitizing, token texts for logprobs, constant-time key comparison, a
 * growable string buffer, and the metrics (Prometheus text format).
 */
#include "server/server_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double server_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64: ids that differ per request and per server run */
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

void server_make_id(server *srv, const char *prefix, char *out, size_t cap) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    uint64_t n = atomic_fetch_add(&srv->next_id, 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t a = mix64(n ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec), b = mix64(a + n);
    char tail[25];
    for (int i = 0; i < 24; i++) {
        uint64_t *s = i < 12 ? &a : &b;
        tail[i] = alphabet[*s % 62];
        *s /= 62;
    }
    tail[24] = 0;
    snprintf(out, cap, "%s%s", prefix, tail);
}

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    unsigned cp = c & (0xFF >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

char *utf8_sanitize(const char *text, size_t len) {
    char *out = malloc(len * 3 + 1);
    if (!out) return NULL;
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq(s + i, len - i);
        if (k && !(k == 1 && s[i] == 0)) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else if (k == 1) { /* NUL: cJSON strings end there */
            i++;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = 0;
    return out;
}

char *token_text(server *srv, int32_t id, const unsigned char **bytes, size_t *n_bytes) {
    size_t n = 0;
    const char *b = inf_tokenizer_token_bytes(srv->tok, id, &n);
    if (!b) b = "", n = 0;
    if (bytes) *bytes = (const unsigned char *)b;
    if (n_bytes) *n_bytes = n;
    return utf8_sanitize(b, n);
}

bool secure_equal(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    unsigned char diff = (unsigned char)(na != nb);
    /* every byte of the expected key is looked at, whatever the given one holds */
    for (size_t i = 0; i < nb; i++) diff |= (unsigned char)(b[i] ^ (i < na ? a[i] : 0));
    return diff == 0;
}

void sb_append(strbuf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void sb_puts(strbuf *b, const char *s) { sb_append(b, s, strlen(s)); }

void sb_printf(strbuf *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        sb_append(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_append(b, big, (size_t)n);
    free(big);
}

void sb_free(strbuf *b) {
    free(b->data);
    *b = (strbuf){0};
}

/* ------------------------------------------------------------------ metrics */

/* Upper bounds of the histogram buckets, in seconds. */
static const double bucket_le[METRIC_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                 1,     2.5,  5,     10,   30,  60,  120};

void metrics_init(server_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void metrics_destroy(server_metrics *m) { pthread_mutex_destroy(&m->mu); }

void metrics_observe(metric_histogram *h, double s) {
    int b = 0;
    while (b < METRIC_BUCKETS && s > bucket_le[b]) b++;
    h->counts[b]++;
    h->sum += s;
    h->n++;
}

void metrics_request_done(server *srv, int finish_metric, int n_prompt, int n_generated, int n_cached, double ttft_s,
                          double tpot_s, double latency_s) {
    server_metrics *m = &srv->metrics;
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += (uint64_t)n_prompt;
    m->generated_tokens += (uint64_t)n_generated;
    m->cached_tokens += (uint64_t)n_cached;
    m->finished[finish_metric]++;
    if (ttft_s >= 0) metrics_observe(&m->ttft, ttft_s);
    if (tpot_s >= 0) metrics_observe(&m->tpot, tpot_s);
    metrics_observe(&m->latency, latency_s);
    pthread_mutex_unlock(&m->mu);
}

static void histogram(strbuf *b, const char *name, const char *help, const metric_histogram *h) {
    sb_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < METRIC_BUCKETS; i++) {
        cum += h->counts[i];
        sb_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, bucket_le[i], (unsigned long long)cum);
    }
    cum += h->counts[METRIC_BUCKETS];
    sb_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)cum, name,
              h->sum, name, (unsigned long long)h->n);
}

int api_metrics(http_exchange *ex) {
    server *srv = ex->srv;
    inf_engine_stats st;
    inf_engine_get_stats(srv->engine, &st);
    strbuf b = {0};
    int used = st.blocks_total - st.blocks_free - st.blocks_cached;
    sb_printf(&b,
              "# HELP inferno_requests_running Sequences being prefilled or decoded.\n"
              "# TYPE inferno_requests_running gauge\ninferno_requests_running %d\n"
              "# HELP inferno_requests_waiting Requests queued for admission.\n"
              "# TYPE inferno_requests_waiting gauge\ninferno_requests_waiting %d\n"
              "# HELP inferno_kv_blocks_used KV blocks held by running sequences.\n"
              "# TYPE inferno_kv_blocks_used gauge\ninferno_kv_blocks_used %d\n"
              "# HELP inferno_kv_blocks_cached KV blocks held only by the prefix cache (evictable).\n"
              "# TYPE inferno_kv_blocks_cached gauge\ninferno_kv_blocks_cached %d\n"
              "# HELP inferno_kv_blocks_total KV blocks in the pool.\n"
              "# TYPE inferno_kv_blocks_total gauge\ninferno_kv_blocks_total %d\n"
              "# HELP inferno_kv_usage_ratio Share of the KV pool held by running sequences.\n"
              "# TYPE inferno_kv_usage_ratio gauge\ninferno_kv_usage_ratio %.6f\n"
              "# HELP inferno_prefix_cache_queries_total Prompt tokens looked up in the prefix cache.\n"
              "# TYPE inferno_prefix_cache_queries_total counter\ninferno_prefix_cache_queries_total %llu\n"
              "# HELP inferno_prefix_cache_hits_total Prompt tokens found in the prefix cache.\n"
              "# TYPE inferno_prefix_cache_hits_total counter\ninferno_prefix_cache_hits_total %llu\n"
              "# HELP inferno_prefix_cache_requests_total Requests that looked up the prefix cache.\n"
              "# TYPE inferno_prefix_cache_requests_total counter\ninferno_prefix_cache_requests_total %llu\n"
              "# HELP inferno_engine_steps_total Forward passes run.\n"
              "# TYPE inferno_engine_steps_total counter\ninferno_engine_steps_total %llu\n",
              st.running, st.queued, used, st.blocks_cached, st.blocks_total,
              st.blocks_total ? (double)used / st.blocks_total : 0.0, (unsigned long long)st.prefix_query_tokens,
              (unsigned long long)st.prefix_hit_tokens, (unsigned long long)st.prefix_queries,
              (unsigned long long)st.steps);
    server_metrics *m = &srv->metrics;
    pthread_mutex_lock(&m->mu);
    sb_printf(&b,
              "# HELP inferno_prompt_tokens_total Prompt tokens of finished requests.\n"
              "# TYPE inferno_prompt_tokens_total counter\ninferno_prompt_tokens_total %llu\n"
              "# HELP inferno_generation_tokens_total Tokens generated.\n"
              "# TYPE inferno_generation_tokens_total counter\ninferno_generation_tokens_total %llu\n"
              "# HELP inferno_cached_prompt_tokens_total Prompt tokens served from the prefix cache.\n"
              "# TYPE inferno_cached_prompt_tokens_total counter\ninferno_cached_prompt_tokens_total %llu\n",
              (unsigned long long)m->prompt_tokens, (unsigned long long)m->generated_tokens,
              (unsigned long long)m->cached_tokens);
    static const char *const reasons[5] = {"stop", "length", "tool_calls", "cancelled", "error"};
    sb_puts(&b, "# HELP inferno_requests_finished_total Finished completions by finish reason.\n"
                "# TYPE inferno_requests_finished_total counter\n");
    for (int i = 0; i < 5; i++)
        sb_printf(&b, "inferno_requests_finished_total{reason=\"%s\"} %llu\n", reasons[i],
                  (unsigned long long)m->finished[i]);
    sb_puts(&b, "# HELP inferno_http_requests_total HTTP requests by status class.\n"
                "# TYPE inferno_http_requests_total counter\n");
    for (int i = 1; i <= 5; i++)
        sb_printf(&b, "inferno_http_requests_total{status=\"%dxx\"} %llu\n", i,
                  (unsigned long long)m->requests_by_status[i]);
    histogram(&b, "inferno_time_to_first_token_seconds", "Submission to the first generated token.", &m->ttft);
    histogram(&b, "inferno_time_per_output_token_seconds", "Mean time between generated tokens, per request.",
              &m->tpot);
    histogram(&b, "inferno_request_latency_seconds", "Submission to the last token.", &m->latency);
    pthread_mutex_unlock(&m->mu);
    if (b.failed) {
        sb_free(&b);
        return http_reply_error(ex, 500, NULL, NULL, "out of memory");
    }
    int r = http_reply_text(ex, 200, "text/plain; version=0.0.4", b.data ? b.data : "");
    sb_free(&b);
    return r;
}

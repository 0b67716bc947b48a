/*
 * hub_http.c — talking to the hub over HTTP(S) with libcurl: small GETs of
 * the API (bounded bodies), the HEAD that gives a file's etag, size and
 * commit (redirects within the hub followed, the one to the CDN not, as
 * huggingface_hub does), and resumable downloads of a blob into
 * blobs/<etag>.incomplete with the size and the sha256 checked.
 *
 * One curl handle per client, reset between requests, so connections are
 * reused. The token goes out as "Authorization: Bearer" to the endpoint's
 * host only: a download from another host (the CDN the hub redirects to,
 * with a signed URL) is made without it, and libcurl does not forward a
 * custom Authorization header across a redirect to another host either.
 */
#include "hub/hub.h"
#include "hub/sha256.h"
#include "inferno.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum {
    HEADER_VALUE_MAX = 8192,
    MAX_RELATIVE_REDIRECTS = 5,
    MAX_REQUESTS_PER_FILE = 100, /* resumed requests of one file, however much each moved */
};

struct hub_client {
    CURL *curl;
    char endpoint[1024];    /* without a trailing slash */
    char origin[1024];      /* scheme://host[:port] of the endpoint, for relative redirects */
    struct curl_slist *auth; /* "Authorization: Bearer ..." or NULL */
    hub_client_options opt;
};

bool hub_global_init(hub_error *err) {
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) return hub_fail(err, "libcurl: %s", curl_easy_strerror(rc));
    return true;
}

void hub_global_cleanup(void) { curl_global_cleanup(); }

hub_client *hub_client_new(const hub_client_options *opt, hub_error *err) {
    hub_client *c = calloc(1, sizeof *c);
    if (!c) {
        hub_fail(err, "out of memory");
        return NULL;
    }
    c->opt = *opt;
    if (c->opt.max_attempts <= 0) c->opt.max_attempts = 5;
    if (c->opt.retry_delay_s <= 0) c->opt.retry_delay_s = 1.0;
    const char *endpoint = opt->endpoint && *opt->endpoint ? opt->endpoint : "https://huggingface.co";
    size_t len = strlen(endpoint);
    while (len && endpoint[len - 1] == '/') len--;
    const char *scheme_end = strstr(endpoint, "://");
    if (len == 0 || len >= sizeof c->endpoint || !scheme_end ||
        (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0)) {
        hub_fail(err, "HF_ENDPOINT must be an http:// or https:// URL, got '%s'", endpoint);
        free(c);
        return NULL;
    }
    memcpy(c->endpoint, endpoint, len);
    c->endpoint[len] = 0;
    const char *host_end = strchr(scheme_end + 3, '/');
    size_t origin_len = host_end ? (size_t)(host_end - endpoint) : len;
    memcpy(c->origin, endpoint, origin_len);
    c->origin[origin_len] = 0;
    if (opt->token && *opt->token) {
        char header[1024];
        for (const char *p = opt->token; *p; p++)
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) {
                hub_fail(err, "HF_TOKEN holds a space or control character");
                free(c);
                return NULL;
            }
        if (snprintf(header, sizeof header, "Authorization: Bearer %s", opt->token) >= (int)sizeof header) {
            hub_fail(err, "HF_TOKEN is too long");
            free(c);
            return NULL;
        }
        c->auth = curl_slist_append(NULL, header);
    }
    if (!(c->curl = curl_easy_init())) {
        hub_fail(err, "libcurl: cannot create a handle");
        hub_client_free(c);
        return NULL;
    }
    return c;
}

void hub_client_free(hub_client *c) {
    if (!c) return;
    if (c->curl) curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->auth);
    free(c);
}

/* ---- response headers ---- */

typedef struct response_headers {
    char etag[HUB_ETAG_MAX + 8], linked_etag[HUB_ETAG_MAX + 8];
    char linked_size[32], content_length[32], content_range[96];
    char repo_commit[64];
    char error_message[256];
    char location[HEADER_VALUE_MAX];
} response_headers;

/* Copies header `name`'s value (trimmed) into out when line is that header. */
static void take_header(const char *line, size_t len, const char *name, char *out, size_t cap) {
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':') return;
    const char *v = line + n + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t m = (size_t)(end - v);
    if (m >= cap) m = cap - 1; /* over-long values are cut; each use checks the shape */
    memcpy(out, v, m);
    out[m] = 0;
}

static size_t on_header(char *line, size_t size, size_t count, void *user) {
    response_headers *h = user;
    size_t len = size * count;
    if (len >= 5 && !strncmp(line, "HTTP/", 5)) memset(h, 0, sizeof *h); /* a new response (after a redirect) */
    take_header(line, len, "ETag", h->etag, sizeof h->etag);
    take_header(line, len, "X-Linked-Etag", h->linked_etag, sizeof h->linked_etag);
    take_header(line, len, "X-Linked-Size", h->linked_size, sizeof h->linked_size);
    take_header(line, len, "Content-Length", h->content_length, sizeof h->content_length);
    take_header(line, len, "Content-Range", h->content_range, sizeof h->content_range);
    take_header(line, len, "X-Repo-Commit", h->repo_commit, sizeof h->repo_commit);
    take_header(line, len, "X-Error-Message", h->error_message, sizeof h->error_message);
    take_header(line, len, "Location", h->location, sizeof h->location);
    return len;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s) || v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

/* W/"abc" or "abc" -> abc (huggingface_hub's _normalize_etag). */
static void normalize_etag(const char *in, char *out, size_t cap) {
    if (!strncmp(in, "W/", 2)) in += 2;
    size_t n = strlen(in);
    if (n >= 2 && in[0] == '"' && in[n - 1] == '"') {
        in++;
        n -= 2;
    }
    if (n >= cap) n = cap - 1;
    memcpy(out, in, n);
    out[n] = 0;
}

static const char *status_text(long status) {
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "";
    }
}

/* "404 Not Found: the hub's message" */
static void describe_status(long status, const response_headers *h, char *out, size_t cap) {
    snprintf(out, cap, "HTTP %ld%s%s%s%s", status, *status_text(status) ? " " : "", status_text(status),
             *h->error_message ? ": " : "", h->error_message);
}

/* ---- requests ---- */

static int on_transfer_info(void *user, curl_off_t dl_total, curl_off_t dl_now, curl_off_t ul_total, curl_off_t ul_now) {
    (void)dl_total, (void)dl_now, (void)ul_total, (void)ul_now;
    const hub_client *c = user;
    return c->opt.cancel && *c->opt.cancel ? 1 : 0;
}

static void request_setup(hub_client *c, const char *url, response_headers *h, struct curl_slist *headers) {
    CURL *e = c->curl;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "inferno/" INFERNO_VERSION);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 15L);
    /* a transfer that moves nothing for a minute is dropped (and retried) */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_transfer_info);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
    memset(h, 0, sizeof *h);
}

/* The request headers: the token's (when with_token), plus extra
 * (NULL-terminated). malloc'd list. */
static struct curl_slist *request_headers_for(const hub_client *c, bool with_token, const char *const *extra) {
    struct curl_slist *list = NULL;
    for (const struct curl_slist *p = c->auth; p && with_token; p = p->next) list = curl_slist_append(list, p->data);
    for (; extra && *extra; extra++) list = curl_slist_append(list, *extra);
    return list;
}

static struct curl_slist *request_headers(const hub_client *c, const char *const *extra) {
    return request_headers_for(c, true, extra);
}

/* url is on the endpoint's scheme, host and port. */
static bool same_origin(const hub_client *c, const char *url) {
    size_t n = strlen(c->origin);
    return !strncmp(url, c->origin, n) && (url[n] == '/' || url[n] == 0);
}

typedef struct memory_body {
    char *data;
    size_t len, cap, max;
    bool too_big;
} memory_body;

static size_t on_memory_body(char *data, size_t size, size_t count, void *user) {
    memory_body *b = user;
    size_t n = size * count;
    if (n > b->max - b->len) {
        b->too_big = true;
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
    return n;
}

bool hub_get(hub_client *c, const char *path, size_t max_bytes, char **body, size_t *len, long *status,
             hub_error *err) {
    char url[4096];
    if (snprintf(url, sizeof url, "%s%s", c->endpoint, path) >= (int)sizeof url) return hub_fail(err, "URL too long: %s", path);
    response_headers h;
    const char *accept[] = {"Accept: application/json", NULL};
    struct curl_slist *headers = request_headers(c, accept);
    memory_body b = {.max = max_bytes};
    request_setup(c, url, &h, headers);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_memory_body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c->curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 120L);
    CURLcode rc = curl_easy_perform(c->curl);
    curl_slist_free_all(headers);
    *status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
    if (b.too_big) {
        free(b.data);
        return hub_fail(err, "%s: the answer is over %zu bytes", url, max_bytes);
    }
    if (rc != CURLE_OK) {
        free(b.data);
        *status = 0;
        return hub_fail(err, "%s: %s", url, curl_easy_strerror(rc));
    }
    if (*status != 200) {
        char what[400];
        describe_status(*status, &h, what, sizeof what);
        free(b.data);
        return hub_fail(err, "%s: %s", url, what);
    }
    if (!b.data && !(b.data = calloc(1, 1))) return hub_fail(err, "out of memory");
    *body = b.data;
    *len = b.len;
    return true;
}

/* Percent-encodes s into out (keeping '/' when keep_slash). */
static bool url_encode(const char *s, bool keep_slash, char *out, size_t cap) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep_slash && *p == '/');
        if (n + 4 >= cap) return false;
        if (plain) out[n++] = (char)*p;
        else n += (size_t)snprintf(out + n, cap - n, "%%%02X", *p);
    }
    out[n] = 0;
    return true;
}

bool hub_head_file(hub_client *c, const char *repo, const char *rev, const char *file, hub_file_meta *meta,
                   hub_error *err) {
    char file_enc[2048], rev_enc[512], url[HEADER_VALUE_MAX + 1024];
    memset(meta, 0, sizeof *meta);
    if (!url_encode(file, true, file_enc, sizeof file_enc) || !url_encode(rev, false, rev_enc, sizeof rev_enc) ||
        snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", c->endpoint, repo, rev_enc, file_enc) >= (int)sizeof url)
        return hub_fail(err, "%s: URL too long", file);
    response_headers *h = malloc(sizeof *h);
    if (!h) return hub_fail(err, "out of memory");
    /* the real size, not a compressed one */
    const char *identity[] = {"Accept-Encoding: identity", NULL};
    struct curl_slist *headers = request_headers(c, identity);
    long status = 0;
    bool ok = true;
    for (int hop = 0;; hop++) {
        request_setup(c, url, h, headers);
        curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 30L);
        CURLcode rc = curl_easy_perform(c->curl);
        if (rc != CURLE_OK) {
            ok = hub_fail(err, "%s: %s", url, curl_easy_strerror(rc));
            break;
        }
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        bool redirect = status >= 300 && status < 400;
        if (redirect && h->location[0] == '/') {
            /* within the hub (a renamed repository): followed */
            if (hop == MAX_RELATIVE_REDIRECTS) {
                ok = hub_fail(err, "%s: more than %d redirects", file, MAX_RELATIVE_REDIRECTS);
                break;
            }
            if (snprintf(url, sizeof url, "%s%s", c->origin, h->location) >= (int)sizeof url) {
                ok = hub_fail(err, "%s: redirect URL too long", file);
                break;
            }
            continue;
        }
        if (!(status >= 200 && status < 300) && !redirect) {
            char what[400];
            describe_status(status, h, what, sizeof what);
            ok = hub_fail(err, "%s: %s%s", url, what,
                      status == 401 || status == 403 ? " (a private or gated repository needs a token in HF_TOKEN)" : "");
            break;
        }
        if (redirect && strncmp(h->location, "http://", 7) != 0 && strncmp(h->location, "https://", 8) != 0) {
            ok = hub_fail(err, "%s: the hub redirected to '%.100s', not an http(s) URL", file, h->location);
            break;
        }
        normalize_etag(h->linked_etag[0] ? h->linked_etag : h->etag, meta->etag, sizeof meta->etag);
        if (!hub_etag_valid(meta->etag)) {
            ok = hub_fail(err, "%s: the hub's ETag '%.80s' is missing or not a blob name", file, meta->etag);
            break;
        }
        const char *size = h->linked_size[0] ? h->linked_size : redirect ? "" : h->content_length;
        if (!parse_u64(size, &meta->size_bytes)) {
            ok = hub_fail(err, "%s: the hub gave no size (X-Linked-Size / Content-Length '%.40s')", file, size);
            break;
        }
        if (h->repo_commit[0]) {
            if (!hub_commit_valid(h->repo_commit)) {
                ok = hub_fail(err, "%s: X-Repo-Commit '%.50s' is not a commit", file, h->repo_commit);
                break;
            }
            memcpy(meta->commit, h->repo_commit, HUB_COMMIT_LEN + 1);
        }
        if (!(meta->location = strdup(redirect ? h->location : url))) ok = hub_fail(err, "out of memory");
        break;
    }
    curl_slist_free_all(headers);
    free(h);
    return ok;
}

void hub_file_meta_free(hub_file_meta *meta) {
    free(meta->location);
    meta->location = NULL;
}

/* ---- downloads ---- */

typedef struct download {
    hub_client *c;
    const char *file;
    int fd;
    uint64_t have_bytes;       /* in the file, all hashed */
    uint64_t size_bytes;       /* expected */
    hub_sha256 hash;
    bool hashing;
    bool started;              /* the response's status was checked */
    bool restart;              /* a 200 answered our Range: start over */
    bool fatal;                /* stop retrying */
    bool remove_partial;       /* the bytes are wrong */
    response_headers headers;
    char why[400];             /* why the write callback stopped the transfer */
} download;

static bool write_all(int fd, const char *data, size_t n) {
    while (n) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        data += w;
        n -= (size_t)w;
    }
    return true;
}

static size_t on_download_body(char *data, size_t size, size_t count, void *user) {
    download *d = user;
    size_t n = size * count;
    if (!d->started) {
        long status = 0;
        curl_easy_getinfo(d->c->curl, CURLINFO_RESPONSE_CODE, &status);
        d->started = true;
        if (status == 200 && d->have_bytes > 0) {
            /* the server ignored the Range: start over (as huggingface_hub) */
            if (ftruncate(d->fd, 0) != 0 || lseek(d->fd, 0, SEEK_SET) != 0) {
                snprintf(d->why, sizeof d->why, "cannot truncate the partial download: %s", strerror(errno));
                d->fatal = true;
                return 0;
            }
            d->have_bytes = 0;
            hub_sha256_init(&d->hash);
        } else if (status == 206) {
            /* Content-Range: bytes START-END/TOTAL must start where we are */
            uint64_t start = 0;
            char digits[32] = "";
            const char *r = d->headers.content_range;
            if (!strncmp(r, "bytes ", 6)) sscanf(r + 6, "%31[0-9]", digits);
            if (!parse_u64(digits, &start) || start != d->have_bytes) {
                snprintf(d->why, sizeof d->why, "the server resumed at '%.60s', not at byte %" PRIu64, r, d->have_bytes);
                d->fatal = true;
                return 0;
            }
        } else if (status != 200) {
            describe_status(status, &d->headers, d->why, sizeof d->why);
            d->fatal = status < 500 && status != 408 && status != 429;
            return 0;
        }
    }
    if (n > d->size_bytes - d->have_bytes) {
        snprintf(d->why, sizeof d->why, "the server sent more than the %" PRIu64 " bytes the hub announced",
                 d->size_bytes);
        d->fatal = d->remove_partial = true;
        return 0;
    }
    if (!write_all(d->fd, data, n)) {
        snprintf(d->why, sizeof d->why, "cannot write: %s", strerror(errno));
        d->fatal = true;
        return 0;
    }
    if (d->hashing) hub_sha256_update(&d->hash, data, n);
    d->have_bytes += n;
    if (d->c->opt.progress) d->c->opt.progress(d->c->opt.progress_user, d->file, d->have_bytes, d->size_bytes);
    return n;
}

/* Hashes the first `bytes` of fd (the part a previous run left). */
static bool hash_existing(download *d, uint64_t bytes) {
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf) return false;
    hub_sha256_init(&d->hash);
    uint64_t done = 0;
    bool ok = lseek(d->fd, 0, SEEK_SET) == 0;
    while (ok && done < bytes) {
        size_t want = bytes - done < CHUNK ? (size_t)(bytes - done) : CHUNK;
        ssize_t r = read(d->fd, buf, want);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) ok = false;
        else {
            hub_sha256_update(&d->hash, buf, (size_t)r);
            done += (uint64_t)r;
        }
    }
    free(buf);
    return ok;
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static bool finish_failed(download *d, const char *incomplete_path, hub_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool finish_failed(download *d, const char *incomplete_path, hub_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    for (char *p = err->msg; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' ';
    close(d->fd);
    if (d->remove_partial) unlink(incomplete_path);
    return false;
}

bool hub_download(hub_client *c, const char *url, const char *file, const char *incomplete_path,
                  uint64_t size_bytes, const char *sha256_hex, hub_error *err) {
    download *d = calloc(1, sizeof *d);
    if (!d) return hub_fail(err, "out of memory");
    d->c = c;
    d->file = file;
    d->size_bytes = size_bytes;
    d->hashing = sha256_hex != NULL;
    d->fd = open(incomplete_path, O_RDWR | O_CREAT, 0666);
    bool ok = false;
    if (d->fd < 0) {
        hub_fail(err, "cannot open %s: %s", incomplete_path, strerror(errno));
        free(d);
        return false;
    }
    struct stat st;
    if (fstat(d->fd, &st) != 0) {
        ok = finish_failed(d, incomplete_path, err, "cannot stat %s: %s", incomplete_path, strerror(errno));
        goto out;
    }
    d->have_bytes = (uint64_t)st.st_size;
    if (d->have_bytes > size_bytes) { /* not ours, or the file changed: start over */
        if (ftruncate(d->fd, 0) != 0) {
            ok = finish_failed(d, incomplete_path, err, "cannot truncate %s: %s", incomplete_path, strerror(errno));
            goto out;
        }
        d->have_bytes = 0;
    }
    if (d->hashing && !hash_existing(d, d->have_bytes)) {
        ok = finish_failed(d, incomplete_path, err, "cannot read %s: %s", incomplete_path, strerror(errno));
        goto out;
    }
    if (!d->hashing) hub_sha256_init(&d->hash);
    struct statvfs fs;
    if (fstatvfs(d->fd, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < size_bytes - d->have_bytes) {
        ok = finish_failed(d, incomplete_path, err, "%s needs %.1f MiB more, and %s has %.1f MiB free", file,
                           (double)(size_bytes - d->have_bytes) / 1048576.0, incomplete_path,
                           (double)fs.f_bavail * (double)fs.f_frsize / 1048576.0);
        goto out;
    }

    double delay_s = c->opt.retry_delay_s;
    char last_error[400] = "";
    int n_requests = 0;
    for (int attempt = 1; d->have_bytes < size_bytes; attempt++) {
        if (lseek(d->fd, (off_t)d->have_bytes, SEEK_SET) < 0) {
            ok = finish_failed(d, incomplete_path, err, "cannot seek %s: %s", incomplete_path, strerror(errno));
            goto out;
        }
        char range[64];
        snprintf(range, sizeof range, "Range: bytes=%" PRIu64 "-", d->have_bytes);
        const char *extra[] = {d->have_bytes ? range : NULL, NULL};
        /* the token goes to the hub only: a CDN's URL is signed, and needs none */
        struct curl_slist *headers = request_headers_for(c, same_origin(c, url), extra);
        request_setup(c, url, &d->headers, headers);
        curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c->curl, CURLOPT_MAXREDIRS, 10L);
        curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_download_body);
        curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, d);
        d->started = false;
        d->why[0] = 0;
        uint64_t before = d->have_bytes;
        CURLcode rc = curl_easy_perform(c->curl);
        curl_slist_free_all(headers);
        long status = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        if (c->opt.cancel && *c->opt.cancel) {
            ok = finish_failed(d, incomplete_path, err, "%s: interrupted at %" PRIu64 " of %" PRIu64 " bytes (kept %s)",
                               file, d->have_bytes, size_bytes, incomplete_path);
            goto out;
        }
        if (rc == CURLE_OK && !d->started) {
            /* no body at all: a status without one (416, 304, an error page of zero bytes) */
            if (status == 416 && d->have_bytes > 0) { /* our part is not a prefix: start over */
                if (ftruncate(d->fd, 0) != 0) {
                    ok = finish_failed(d, incomplete_path, err, "cannot truncate %s", incomplete_path);
                    goto out;
                }
                d->have_bytes = 0;
                hub_sha256_init(&d->hash);
                continue;
            }
            describe_status(status, &d->headers, d->why, sizeof d->why);
            d->fatal = status < 500 && status != 408 && status != 429;
        }
        if (d->why[0]) snprintf(last_error, sizeof last_error, "%s", d->why);
        else if (rc != CURLE_OK) snprintf(last_error, sizeof last_error, "%s", curl_easy_strerror(rc));
        else if (d->have_bytes < size_bytes)
            snprintf(last_error, sizeof last_error, "the transfer ended at %" PRIu64 " of %" PRIu64 " bytes",
                     d->have_bytes, size_bytes);
        if (d->have_bytes == size_bytes) break;
        if (d->fatal || attempt >= c->opt.max_attempts || ++n_requests >= MAX_REQUESTS_PER_FILE) {
            ok = finish_failed(d, incomplete_path, err, "%s: %s%s", file, last_error,
                               d->remove_partial ? " (partial download removed)" : "");
            goto out;
        }
        if (d->have_bytes > before) {
            /* it moved before it dropped: resume at once, and the count of
             * tries starts afresh (as huggingface_hub's) */
            attempt = 0;
            delay_s = c->opt.retry_delay_s;
        } else {
            sleep_s(delay_s);
            delay_s *= 2;
        }
    }
    if (d->hashing) {
        char got[65];
        hub_sha256_final_hex(&d->hash, got);
        if (strcasecmp(got, sha256_hex) != 0) {
            d->remove_partial = true;
            ok = finish_failed(d, incomplete_path, err,
                               "%s: sha256 mismatch: the bytes hash to %s, the hub says %s (download removed)", file,
                               got, sha256_hex);
            goto out;
        }
    }
    if (fsync(d->fd) != 0 || close(d->fd) != 0) {
        hub_fail(err, "cannot write %s: %s", incomplete_path, strerror(errno));
        goto out;
    }
    ok = true;
out:
    free(d);
    return ok;
}

/*
 * stop.c — stop strings over streamed text. The matcher holds back the
 * shortest tail of the text that is still a proper prefix of some stop
 * string, and releases everything before it; a full match releases the
 * text before the match and nothing ever after.
 *
 * Invariant between pushes: held[start..n_held) contains no complete stop
 * string, and every suffix of it that starts a stop string is shorter than
 * that stop string. A stop string that begins with a UTF-8 lead byte can
 * only start on a character boundary, so the release point never splits a
 * character of well-formed input.
 */
#include "inferno.h"

#include "core/common.h"

#include <stdlib.h>
#include <string.h>

struct inf_stop_matcher {
    size_t n_stops;
    char **stops;     /* [n_stops] owned copies */
    size_t *stop_len; /* [n_stops] */
    char *held;       /* [cap] text bytes; [0, start) were released by the last call */
    size_t start, n_held, cap;
    int matched;      /* index of the matched stop string, or -1 */
};

void inf_stop_matcher_free(inf_stop_matcher *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n_stops; i++) free(m->stops[i]);
    free(m->stops);
    free(m->stop_len);
    free(m->held);
    free(m);
}

inf_status inf_stop_matcher_new(const char *const *stops, size_t n_stops, inf_stop_matcher **out,
                                inf_error *err) {
    *out = NULL;
    for (size_t i = 0; i < n_stops; i++)
        if (!stops[i] || !stops[i][0])
            return inf_errorf(err, INF_ERR_INVALID, "stop string %zu is empty", i + 1);
    inf_stop_matcher *m = calloc(1, sizeof *m);
    if (!m) return inf_errorf(err, INF_ERR_NOMEM, "stop strings: out of memory");
    m->matched = -1;
    if (n_stops > 0) {
        m->stops = calloc(n_stops, sizeof *m->stops);
        m->stop_len = calloc(n_stops, sizeof *m->stop_len);
        if (!m->stops || !m->stop_len) {
            inf_stop_matcher_free(m);
            return inf_errorf(err, INF_ERR_NOMEM, "stop strings: out of memory");
        }
    }
    for (size_t i = 0; i < n_stops; i++) {
        m->n_stops = i + 1;
        if (!(m->stops[i] = strdup(stops[i]))) {
            inf_stop_matcher_free(m);
            return inf_errorf(err, INF_ERR_NOMEM, "stop strings: out of memory");
        }
        m->stop_len[i] = strlen(stops[i]);
    }
    *out = m;
    return INF_OK;
}

void inf_stop_matcher_reset(inf_stop_matcher *m) {
    m->start = m->n_held = 0;
    m->matched = -1;
}

int inf_stop_matcher_matched(const inf_stop_matcher *m) { return m->matched; }

/* Earliest complete stop string in text (the shortest among those starting
 * there): its index and start, or -1. */
static int find_match(const inf_stop_matcher *m, const char *text, size_t len, size_t *at) {
    for (size_t pos = 0; pos < len; pos++) {
        int best = -1;
        for (size_t k = 0; k < m->n_stops; k++) {
            size_t sl = m->stop_len[k];
            if (sl <= len - pos && !memcmp(text + pos, m->stops[k], sl) &&
                (best < 0 || sl < m->stop_len[best]))
                best = (int)k;
        }
        if (best >= 0) {
            *at = pos;
            return best;
        }
    }
    return -1;
}

/* Start of the longest suffix of text that is a proper prefix of a stop string (len when none). */
static size_t undecided_tail(const inf_stop_matcher *m, const char *text, size_t len) {
    for (size_t pos = 0; pos < len; pos++)
        for (size_t k = 0; k < m->n_stops; k++)
            if (len - pos < m->stop_len[k] && !memcmp(text + pos, m->stops[k], len - pos)) return pos;
    return len;
}

inf_status inf_stop_matcher_push(inf_stop_matcher *m, const char *text, size_t len, const char **out,
                                 size_t *n_out, bool *stopped, inf_error *err) {
    *out = "";
    *n_out = 0;
    *stopped = m->matched >= 0;
    if (*stopped) return INF_OK;
    size_t kept = m->n_held - m->start, need;
    if (!inf_add_size(kept, len, &need))
        return inf_errorf(err, INF_ERR_NOMEM, "stop strings: %zu bytes of text is too much", len);
    if (need > m->cap) {
        size_t cap = INF_MAX(need, 2 * m->cap);
        char *held = realloc(m->held, cap ? cap : 1);
        if (!held) return inf_errorf(err, INF_ERR_NOMEM, "stop strings: out of memory");
        m->held = held;
        m->cap = cap;
    }
    if (kept) memmove(m->held, m->held + m->start, kept);
    if (len) memcpy(m->held + kept, text, len);
    m->start = 0;
    m->n_held = need;

    size_t at, release;
    int k = find_match(m, m->held, m->n_held, &at);
    if (k >= 0) {
        m->matched = k;
        *stopped = true;
        release = at;
        m->n_held = at; /* the match and anything after it are dropped */
    } else {
        release = undecided_tail(m, m->held, m->n_held);
    }
    *out = m->held;
    *n_out = release;
    m->start = release;
    return INF_OK;
}

void inf_stop_matcher_flush(inf_stop_matcher *m, const char **out, size_t *n_out) {
    *out = "";
    *n_out = 0;
    if (m->matched < 0 && m->n_held > m->start) {
        *out = m->held + m->start;
        *n_out = m->n_held - m->start;
    }
    m->start = m->n_held;
}

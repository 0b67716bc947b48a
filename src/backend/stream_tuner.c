/*
 * stream_tuner.c — the trial-and-exploit choice of a weight prefetch hint
 * (see stream_tuner.h).
 */
#include "backend/stream_tuner.h"

#include <stdbool.h>
#include <string.h>

static void start_trial(stream_tuner *t) {
    memset(t->trial_products, 0, sizeof t->trial_products);
    memset(t->trial_bytes, 0, sizeof t->trial_bytes);
    memset(t->trial_seconds, 0, sizeof t->trial_seconds);
    t->exploit_bytes_left = 0;
    t->next = t->best;
}

void stream_tuner_init(stream_tuner *t, int hints, int initial) {
    memset(t, 0, sizeof *t);
    t->hints = hints < 1 ? 1 : hints > STREAM_MAX_HINTS ? STREAM_MAX_HINTS : hints;
    t->best = initial >= 0 && initial < t->hints ? initial : 0;
    start_trial(t);
}

/* Whether every hint has read enough in this trial. */
static bool trial_done(const stream_tuner *t) {
    for (int h = 0; h < t->hints; h++)
        if (t->trial_products[h] < STREAM_TRIAL_PRODUCTS || t->trial_bytes[h] < STREAM_TRIAL_BYTES) return false;
    return true;
}

void stream_tuner_record(stream_tuner *t, double bytes, double seconds) {
    if (t->hints < 2 || !(bytes > 0) || !(seconds > 0)) return;
    if (t->exploit_bytes_left > 0) {
        t->exploit_bytes_left -= bytes;
        if (t->exploit_bytes_left <= 0) start_trial(t);
        return;
    }
    const int h = t->next;
    t->trial_products[h]++;
    t->trial_bytes[h] += bytes;
    t->trial_seconds[h] += seconds;
    if (!trial_done(t)) {
        t->next = (h + 1) % t->hints;
        return;
    }
    double trial_bytes = 0, best_rate = 0;
    for (int i = 0; i < t->hints; i++) {
        const double rate = t->trial_bytes[i] / t->trial_seconds[i];
        trial_bytes += t->trial_bytes[i];
        if (rate > best_rate) {
            best_rate = rate;
            t->best = i;
        }
    }
    t->trials++;
    t->wins[t->best]++;
    t->next = t->best;
    t->exploit_bytes_left = trial_bytes * STREAM_EXPLOIT_FACTOR;
}

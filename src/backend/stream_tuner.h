/*
 * stream_tuner.h — chooses, while a model decodes, how the kernels read
 * their weights ahead (a software prefetch hint), by timing the products
 * under each.
 *
 * Why: on the Zen 5 VM the better hint changed with the host's state. On
 * 2026-12-05 non-temporal prefetch read Q4_K_M 0.6B decode at 125-133
 * tok/s against 104-107 with prefetch into L2; on 2026-12-07 at about 08:05, in
 * another state of the same host type, NTA gave 82-84 and L2 119-120 (Q4_0:
 * 87-102 against 110-120), and NTA then read no faster than no prefetch at
 * all. Every hint gives the same results, so the choice is free to change
 * at any product.
 *
 * How: trials alternate the hints product by product (a token's products
 * in one order, so each kind of product meets both) until each hint has
 * read STREAM_TRIAL_BYTES in at least STREAM_TRIAL_PRODUCTS products; the
 * hint whose products read more bytes a second wins and runs alone for
 * STREAM_EXPLOIT_FACTOR times the trial's bytes; then the next trial.
 *
 * Not thread-safe: the CPU backend keeps one per weight type (cpu.c
 * run_packed), used by the thread that dispatches its products (the
 * engine thread).
 */
#ifndef INF_BACKEND_STREAM_TUNER_H
#define INF_BACKEND_STREAM_TUNER_H

#include <stdbool.h>
#include <stdint.h>

enum {
    STREAM_MAX_HINTS = 2,
    STREAM_TRIAL_PRODUCTS = 64,   /* per hint, at the least */
    STREAM_EXPLOIT_FACTOR = 16,   /* exploit bytes per trial byte */
};
#define STREAM_TRIAL_BYTES (512.0 * 1024 * 1024) /* per hint, at the least */

typedef struct stream_tuner {
    int hints;                       /* to choose from; below 2: nothing to tune */
    int best;                        /* the hint between trials */
    int next;                        /* the hint of the next product */
    int trial_products[STREAM_MAX_HINTS];
    double trial_bytes[STREAM_MAX_HINTS], trial_seconds[STREAM_MAX_HINTS];
    double exploit_bytes_left;       /* > 0: exploiting `best` */
    int64_t trials;                  /* trials finished */
    int64_t wins[STREAM_MAX_HINTS];  /* trials each hint won */
} stream_tuner;

/* A tuner over `hints` hints (clamped to 1..STREAM_MAX_HINTS) that starts
 * with a trial, `initial` (the hint the kernels used before tuning) first. */
void stream_tuner_init(stream_tuner *t, int hints, int initial);

/* The hint the next product should run with. */
static inline int stream_tuner_hint(const stream_tuner *t) { return t->next; }

/* A product that ran with stream_tuner_hint() read `bytes` in `seconds`. */
void stream_tuner_record(stream_tuner *t, double bytes, double seconds);

/* Whether any product has been recorded (a trial finished, or one under way). */
static inline bool stream_tuner_ran(const stream_tuner *t) {
    int64_t runs = t->trials;
    for (int h = 0; h < t->hints; h++) runs += t->trial_products[h];
    return runs > 0;
}

#endif

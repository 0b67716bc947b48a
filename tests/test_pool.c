/*
 * test_pool.c — the thread pool: every task runs exactly once per job, jobs
 * run back to back and after the workers fell asleep, results are the same
 * for every thread count. Also built and run under ThreadSanitizer by
 * scripts/check.sh.
 */
#include "harness.h"
#include "core/pool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct job {
    atomic_int *hits; /* [n_tasks] */
    double *out;      /* [n_tasks] */
    int max_thread;   /* largest thread index allowed */
    atomic_int bad_thread;
} job;

static void count_task(void *ctx, int task, int thread) {
    job *j = ctx;
    atomic_fetch_add(&j->hits[task], 1);
    if (thread < 0 || thread > j->max_thread) atomic_store(&j->bad_thread, 1);
    double acc = 0;
    for (int i = 0; i <= task % 97; i++) acc += (double)(task + 1) / (i + 1);
    j->out[task] = acc;
}

static void run_jobs(int n_threads) {
    char name[64];
    snprintf(name, sizeof name, "pool %d threads", n_threads);
    test_begin(name);
    inf_pool *p = inf_pool_new(n_threads);
    if (!TEST_CHECK(p != NULL, "pool_new(%d)", n_threads)) return;
    TEST_CHECK(inf_pool_threads(p) == n_threads, "thread count");
    enum { MAX_TASKS = 1000 };
    atomic_int hits[MAX_TASKS];
    double out[MAX_TASKS], expect[MAX_TASKS];
    for (int t = 0; t < MAX_TASKS; t++) {
        double acc = 0;
        for (int i = 0; i <= t % 97; i++) acc += (double)(t + 1) / (i + 1);
        expect[t] = acc;
    }
    int sizes[] = {1, 2, 3, 7, 64, 1000};
    for (int rep = 0; rep < 300; rep++) {
        int n_tasks = sizes[rep % 6];
        for (int t = 0; t < n_tasks; t++) atomic_init(&hits[t], 0);
        job j = {hits, out, n_threads - 1, 0};
        if (rep == 150) {
            /* let the workers go to sleep, then wake them */
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        inf_pool_run(p, n_tasks, count_task, &j);
        int wrong = 0;
        for (int t = 0; t < n_tasks; t++) wrong += atomic_load(&hits[t]) != 1 || out[t] != expect[t];
        TEST_CHECK(wrong == 0, "rep %d: %d of %d tasks ran wrongly", rep, wrong, n_tasks);
        TEST_CHECK(atomic_load(&j.bad_thread) == 0, "thread index out of range");
    }
    inf_pool_run(p, 0, count_task, NULL); /* no tasks: returns at once */
    inf_pool_free(p);
}

int main(void) {
    TEST_CHECK(inf_pool_new(0) == NULL, "pool of 0 threads is refused");
    for (int n = 1; n <= 4; n++) run_jobs(n);
    return test_summary();
}

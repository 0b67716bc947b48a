/*
 * test_pool.c — the thread pool: every task runs exactly once per job, jobs
 * run back to back and after the workers fell asleep, results are the same
 * for every thread count; idle work (inf_pool_idle) runs on the workers
 * only, stops when it says so, and never holds up the next job; a job's
 * then steps (inf_pool_run_then) run after its tasks, on any thread, and
 * hold up neither the job's end nor the next job. Also built and run under
 * ThreadSanitizer by scripts/check.sh.
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

/* Begins the test `what` on a new pool of n_threads; NULL (checked) when
 * the pool cannot be made. */
static inf_pool *begin_pool_test(const char *what, int n_threads) {
    char name[64];
    snprintf(name, sizeof name, "pool %s, %d threads", what, n_threads);
    test_begin(name);
    inf_pool *p = inf_pool_new(n_threads);
    TEST_CHECK(p != NULL, "pool_new(%d)", n_threads);
    return p;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void run_jobs(int n_threads) {
    inf_pool *p = begin_pool_test("jobs", n_threads);
    if (!p) return;
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
        if (rep == 150) sleep_ms(20); /* let the workers go to sleep, then wake them */
        inf_pool_run(p, n_tasks, count_task, &j);
        int wrong = 0;
        for (int t = 0; t < n_tasks; t++) wrong += atomic_load(&hits[t]) != 1 || out[t] != expect[t];
        TEST_CHECK(wrong == 0, "rep %d: %d of %d tasks ran wrongly", rep, wrong, n_tasks);
        TEST_CHECK(atomic_load(&j.bad_thread) == 0, "thread index out of range");
    }
    inf_pool_run(p, 0, count_task, NULL); /* no tasks: returns at once */
    inf_pool_free(p);
}

/* Steps of idle work (inf_pool_idle) or of a job's then (inf_pool_run_then). */
typedef struct step_job {
    atomic_int steps, caller_steps;
    atomic_int bad;             /* a step on a thread out of range, or after fn said stop */
    int limit;                  /* steps fn asks for; 0: endless */
    int min_thread, max_thread; /* idle work: the workers only */
} step_job;

static step_job step_job_new(int limit, int min_thread, int max_thread) {
    step_job j = {.limit = limit, .min_thread = min_thread, .max_thread = max_thread};
    atomic_init(&j.steps, 0);
    atomic_init(&j.caller_steps, 0);
    atomic_init(&j.bad, 0);
    return j;
}

static bool count_step(void *ctx, int thread, int step) {
    step_job *j = ctx;
    if (thread < j->min_thread || thread > j->max_thread || (j->limit && step >= j->limit)) atomic_store(&j->bad, 1);
    atomic_fetch_add(&j->steps, 1);
    if (thread == 0) atomic_fetch_add(&j->caller_steps, 1);
    return j->limit == 0 || step + 1 < j->limit;
}

/* Steps j's workers (not the caller) have run. */
static int worker_steps(step_job *j) { return atomic_load(&j->steps) - atomic_load(&j->caller_steps); }

/* Whether j's workers run more than `before` steps within about ms. */
static bool workers_step(step_job *j, int before, int ms) {
    for (int i = 0; i < ms && worker_steps(j) == before; i++) sleep_ms(1);
    return worker_steps(j) > before;
}

/* Idle work between jobs: endless idle work must give way to every job
 * (the test would hang otherwise), limited work stops at its limit. */
static void run_idle_jobs(int n_threads) {
    inf_pool *p = begin_pool_test("idle work", n_threads);
    if (!p) return;
    step_job endless = step_job_new(0, 1, n_threads - 1), limited = step_job_new(3, 1, n_threads - 1);
    enum { N_TASKS = 64 };
    atomic_int hits[N_TASKS];
    double out[N_TASKS];
    int wrong = 0;
    for (int rep = 0; rep < 200; rep++) {
        inf_pool_idle(p, count_step, rep % 2 ? (void *)&limited : (void *)&endless);
        if (rep % 50 == 0) sleep_ms(2); /* let the workers run it a while */
        for (int t = 0; t < N_TASKS; t++) atomic_init(&hits[t], 0);
        job j = {hits, out, n_threads - 1, 0};
        inf_pool_run(p, N_TASKS, count_task, &j);
        for (int t = 0; t < N_TASKS; t++) wrong += atomic_load(&hits[t]) != 1;
    }
    TEST_CHECK(wrong == 0, "%d tasks ran other than once", wrong);
    if (n_threads == 1) {
        TEST_CHECK(atomic_load(&endless.steps) == 0 && atomic_load(&limited.steps) == 0,
                   "one thread: no idle work runs");
    } else {
        /* a worker spinning after a job takes the next idle work (a
         * sleeping one does not). The worker spins about a millisecond; a
         * caller descheduled longer between the job and the idle work (a
         * loaded machine, ThreadSanitizer) finds it asleep, so a few tries */
        bool ran = false;
        for (int attempt = 0; attempt < 20 && !ran; attempt++) {
            const int before = worker_steps(&endless);
            for (int t = 0; t < N_TASKS; t++) atomic_init(&hits[t], 0);
            job j = {hits, out, n_threads - 1, 0};
            inf_pool_run(p, N_TASKS, count_task, &j);
            inf_pool_idle(p, count_step, &endless);
            ran = workers_step(&endless, before, 100);
        }
        TEST_CHECK(ran, "idle work posted to spinning workers ran");
    }
    TEST_CHECK(atomic_load(&endless.bad) == 0 && atomic_load(&limited.bad) == 0,
               "idle steps ran on the caller's thread or past their limit");
    inf_pool_free(p); /* joins the workers: the idle jobs outlive every step */
}

/* Then steps after a job's tasks: endless ones must give way to the job's
 * end on the caller and to the next job on the workers (the test would
 * hang otherwise), limited ones stop at their limit, and every task still
 * runs once. */
static void run_then_jobs(int n_threads) {
    inf_pool *p = begin_pool_test("then steps", n_threads);
    if (!p) return;
    step_job endless = step_job_new(0, 0, n_threads - 1), limited = step_job_new(2, 0, n_threads - 1);
    step_job *both[2] = {&endless, &limited};
    enum { MAX_TASKS = 1000 };
    atomic_int hits[MAX_TASKS];
    double out[MAX_TASKS];
    const int sizes[] = {1, 2, 3, 64, 1000};
    int wrong = 0;
    for (int rep = 0; rep < 200; rep++) {
        const int n_tasks = sizes[rep % 5];
        for (int t = 0; t < n_tasks; t++) atomic_init(&hits[t], 0);
        job j = {hits, out, n_threads - 1, 0};
        inf_pool_run_then(p, n_tasks, count_task, &j, count_step, both[rep % 2]);
        for (int t = 0; t < n_tasks; t++) wrong += atomic_load(&hits[t]) != 1;
        wrong += atomic_load(&j.bad_thread) != 0;
        if (rep % 50 == 0) sleep_ms(2); /* let the workers run the steps a while */
    }
    TEST_CHECK(wrong == 0, "%d tasks ran other than once, or on a thread out of range", wrong);
    if (n_threads == 1) {
        TEST_CHECK(atomic_load(&endless.steps) == 0 && atomic_load(&limited.steps) == 0,
                   "one thread: no then steps run");
    } else { /* a worker that finds no task left runs the steps until the next job */
        atomic_int two[2];
        atomic_init(&two[0], 0);
        atomic_init(&two[1], 0);
        job j = {two, out, n_threads - 1, 0};
        const int before = worker_steps(&endless);
        inf_pool_run_then(p, 2, count_task, &j, count_step, &endless);
        TEST_CHECK(workers_step(&endless, before, 2000), "then steps ran on the workers");
    }
    TEST_CHECK(atomic_load(&endless.bad) == 0 && atomic_load(&limited.bad) == 0,
               "then steps ran on a thread out of range or past their limit");
    inf_pool_free(p); /* joins the workers: the jobs outlive every step */
}

int main(void) {
    TEST_CHECK(inf_pool_new(0) == NULL, "pool of 0 threads is refused");
    for (int n = 1; n <= 4; n++) run_jobs(n);
    for (int n = 1; n <= 3; n++) run_idle_jobs(n);
    for (int n = 1; n <= 3; n++) run_then_jobs(n);
    return test_summary();
}

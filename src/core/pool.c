/*
 * pool.c — the persistent thread pool (see pool.h for the contract).
 *
 * Synchronization: the caller publishes (fn, ctx), zeroes `done`, then
 * stores `claim` = (n_tasks << 32 | next task 0) (release), and bumps
 * `generation` under the mutex, broadcasting if anyone sleeps. Every
 * thread claims tasks with one fetch-add on `claim` (acquire): the count
 * and the index come from the same word, so a claim is valid (index <
 * count) only for the job that word belongs to, and fn/ctx cannot change
 * while a valid claim runs. Each finished task increments `done`
 * (release); the caller runs tasks too and returns once `done` reaches
 * n_tasks. It never waits for a worker that has not started: a worker
 * that wakes late (descheduled by the OS while other processes load the
 * cores) finds the job's claims used up, or takes part in the next job.
 *
 * An idle job is a generation of its own: `idle_generation` names it
 * (stored before the bump), its fn and ctx are atomics (a worker may load
 * them after the caller has posted again), and a worker runs its steps
 * while `generation` still equals it. A job's `then` steps (inf_pool_run_then)
 * follow its tasks in the same way: `then_generation` names the job that
 * has them, and a worker that found no task left runs them while
 * `generation` still equals it; the caller runs its own while it waits.
 */
#include "core/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Spin iterations before a worker sleeps (~1 ms): decode issues hundreds of
 * parallel loops per token with only short serial gaps between them. */
#define SPIN_BEFORE_SLEEP (1 << 16)

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

typedef struct worker_arg {
    struct inf_pool *pool;
    int index;
} worker_arg;

struct inf_pool {
    int n_threads;
    pthread_t *threads;
    worker_arg *args;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    int sleepers;             /* guarded by mutex */
    atomic_uint generation;   /* bumped once per job */
    atomic_bool stop;
    _Atomic uint64_t claim;   /* n_tasks << 32 | next task index */
    atomic_int done;          /* finished tasks of the current job */
    /* the current job, published before `claim` */
    inf_pool_fn fn;
    void *ctx;
    /* the last idle job (inf_pool_idle) */
    atomic_uint idle_generation;
    _Atomic(inf_pool_idle_fn) idle_fn;
    _Atomic(void *) idle_ctx;
    /* the last job's steps after its tasks (inf_pool_run_then) */
    atomic_uint then_generation;
    _Atomic(inf_pool_idle_fn) then_fn;
    _Atomic(void *) then_ctx;
};

static void run_tasks(inf_pool *p, int thread) {
    for (;;) {
        const uint64_t c = atomic_fetch_add_explicit(&p->claim, 1, memory_order_acquire);
        const uint32_t n_tasks = (uint32_t)(c >> 32), task = (uint32_t)c;
        if (task >= n_tasks) return;
        p->fn(p->ctx, (int)task, thread);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

/* fn's steps while generation `gen` lasts (an idle job, or a job's then). */
static void run_steps(inf_pool *p, unsigned gen, inf_pool_idle_fn fn, void *ctx, int thread) {
    if (!fn) return;
    for (int step = 0; atomic_load_explicit(&p->generation, memory_order_relaxed) == gen &&
                       !atomic_load_explicit(&p->stop, memory_order_relaxed);
         step++)
        if (!fn(ctx, thread, step)) return;
}

static void *worker_main(void *arg) {
    worker_arg *wa = arg;
    inf_pool *p = wa->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&p->stop, memory_order_acquire) && spins < SPIN_BEFORE_SLEEP) {
            cpu_relax();
            spins++;
        }
        if (gen == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mutex);
            p->sleepers++;
            while ((gen = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
                   !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mutex);
            p->sleepers--;
            pthread_mutex_unlock(&p->mutex);
        }
        if (atomic_load(&p->stop)) break;
        seen = gen;
        if (gen == atomic_load_explicit(&p->idle_generation, memory_order_relaxed)) {
            run_steps(p, gen, atomic_load_explicit(&p->idle_fn, memory_order_relaxed),
                      atomic_load_explicit(&p->idle_ctx, memory_order_relaxed), wa->index);
            continue;
        }
        run_tasks(p, wa->index);
        if (gen == atomic_load_explicit(&p->then_generation, memory_order_relaxed))
            run_steps(p, gen, atomic_load_explicit(&p->then_fn, memory_order_relaxed),
                      atomic_load_explicit(&p->then_ctx, memory_order_relaxed), wa->index);
    }
    return NULL;
}

inf_pool *inf_pool_new(int n_threads) {
    if (n_threads < 1) return NULL;
    inf_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->wake, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->claim, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->idle_generation, 0);
    atomic_init(&p->idle_fn, NULL);
    atomic_init(&p->idle_ctx, NULL);
    atomic_init(&p->then_generation, 0);
    atomic_init(&p->then_fn, NULL);
    atomic_init(&p->then_ctx, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads, sizeof *p->threads);
        p->args = calloc((size_t)n_threads, sizeof *p->args);
        if (!p->threads || !p->args) {
            inf_pool_free(p);
            return NULL;
        }
        for (int i = 1; i < n_threads; i++) {
            p->args[i] = (worker_arg){p, i};
            if (pthread_create(&p->threads[i], NULL, worker_main, &p->args[i]) != 0) {
                p->n_threads = i; /* free joins the ones that started */
                inf_pool_free(p);
                return NULL;
            }
        }
    }
    return p;
}

void inf_pool_free(inf_pool *p) {
    if (!p) return;
    if (p->threads) {
        pthread_mutex_lock(&p->mutex);
        atomic_store(&p->stop, true);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mutex);
        for (int i = 1; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    }
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    free(p->threads);
    free(p->args);
    free(p);
}

int inf_pool_threads(const inf_pool *p) { return p->n_threads; }

void inf_pool_run(inf_pool *p, int n_tasks, inf_pool_fn fn, void *ctx) {
    inf_pool_run_then(p, n_tasks, fn, ctx, NULL, NULL);
}

void inf_pool_run_then(inf_pool *p, int n_tasks, inf_pool_fn fn, void *ctx, inf_pool_idle_fn then, void *then_ctx) {
    if (n_tasks <= 0) return;
    if (p->n_threads == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->claim, (uint64_t)n_tasks << 32, memory_order_release);
    /* not an idle job, even when the counter wraps onto the last one's;
     * one with then steps only if `then` (the caller is the only writer
     * of generation: +1 is this job's) */
    const unsigned last = atomic_load_explicit(&p->generation, memory_order_relaxed);
    atomic_store_explicit(&p->idle_generation, last, memory_order_relaxed);
    atomic_store_explicit(&p->then_fn, then, memory_order_relaxed);
    atomic_store_explicit(&p->then_ctx, then_ctx, memory_order_relaxed);
    atomic_store_explicit(&p->then_generation, then ? last + 1 : last, memory_order_relaxed);
    pthread_mutex_lock(&p->mutex);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    if (p->sleepers) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mutex);
    run_tasks(p, 0);
    bool stepping = then != NULL;
    for (int step = 0; atomic_load_explicit(&p->done, memory_order_acquire) < n_tasks;) {
        if (stepping) stepping = then(then_ctx, 0, step++);
        else cpu_relax();
    }
}

void inf_pool_idle(inf_pool *p, inf_pool_idle_fn fn, void *ctx) {
    if (p->n_threads == 1) return;
    atomic_store_explicit(&p->idle_fn, fn, memory_order_relaxed);
    atomic_store_explicit(&p->idle_ctx, ctx, memory_order_relaxed);
    /* the only writer of generation is this thread: +1 is the next value */
    atomic_store_explicit(&p->idle_generation, atomic_load_explicit(&p->generation, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    pthread_mutex_lock(&p->mutex); /* no wake-up: a sleeping worker has nothing to hurry for */
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_mutex_unlock(&p->mutex);
}

/*
 * pool.h — a persistent thread pool for parallel loops.
 *
 * Threads are created once. inf_pool_run(pool, n_tasks, fn, ctx) calls
 * fn(ctx, task, thread) for every task in 0..n_tasks-1, spread over the
 * pool's threads (the caller is thread 0 and works too), and returns when
 * all are done. Tasks are claimed from a shared counter, so which thread
 * runs a task varies from run to run: a task's result must depend only on
 * the task index (then results do not depend on the thread count).
 *
 * Dispatch costs a few microseconds: workers spin briefly on a generation
 * counter before sleeping on a condition variable, so back-to-back parallel
 * loops (decode runs hundreds per token) do not pay a wake-up each time.
 * Calls to inf_pool_run must not overlap (one caller thread at a time).
 *
 * inf_pool_idle hands the workers something to do while the caller works
 * alone (decode's serial ops between products): each worker calls
 * fn(ctx, thread, step) for step 0, 1, 2, ... until fn returns false, the
 * next inf_pool_run or inf_pool_idle is posted, or the pool is freed; the
 * caller does not wait for it. A step should be short (the next job waits
 * for it), and fn may read ctx after the caller has moved on, so ctx must
 * outlive the pool and hold nothing whose tearing could do harm: meant
 * for hints such as reading ahead into the caches, not for results.
 */
#ifndef INF_POOL_H
#define INF_POOL_H

#include <stdbool.h>

typedef struct inf_pool inf_pool;

typedef void (*inf_pool_fn)(void *ctx, int task, int thread);

/* n_threads >= 1 counts the caller; NULL on failure. */
inf_pool *inf_pool_new(int n_threads);
void inf_pool_free(inf_pool *pool);
int inf_pool_threads(const inf_pool *pool);

void inf_pool_run(inf_pool *pool, int n_tasks, inf_pool_fn fn, void *ctx);

typedef bool (*inf_pool_idle_fn)(void *ctx, int thread, int step);

/* From the caller's thread, as inf_pool_run; a no-op with one thread. */
void inf_pool_idle(inf_pool *pool, inf_pool_idle_fn fn, void *ctx);

/* inf_pool_run, and then each thread that finds no task of the job left
 * calls then(then_ctx, thread, step) for step 0, 1, 2, ... until then
 * returns false: the caller while the other threads finish their tasks
 * (it returns once they have, whatever its step), a worker until the next
 * job is posted, with an idle fn's rules (short steps, hints only,
 * then_ctx read after the call may have returned). then NULL: inf_pool_run;
 * a run that takes the caller alone (one task, or one thread) has none. */
void inf_pool_run_then(inf_pool *pool, int n_tasks, inf_pool_fn fn, void *ctx, inf_pool_idle_fn then,
                       void *then_ctx);

#endif /* INF_POOL_H */

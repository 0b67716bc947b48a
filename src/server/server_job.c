/*
 * server_job.c — the bridge from the engine thread to a connection thread:
 * the engine's event callback copies each event into its job's queue, and
 * the connection thread takes them in order, waiting with a timeout so it
 * can notice a client that went away and cancel.
 */
#include "server/server_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void job_event_free(job_event *ev) {
    free(ev->text);
    free(ev->top);
    ev->text = NULL;
    ev->top = NULL;
}

/* Runs on the engine thread, inside inf_engine_step. */
static void on_event(const inf_event *e, void *user) {
    const job_tag *tag = user;
    server_job *job = tag->job;
    job_event ev = {
        .kind = e->kind, .index = tag->prompt * job->n_per_request + e->index, .token = e->token, .logprob = e->logprob, .finish = e->finish,
        .stop_index = e->stop_index, .n_prompt = e->n_prompt, .n_cached = e->n_cached,
        .n_generated = e->n_generated, .queue_ms = e->queue_ms, .prefill_ms = e->prefill_ms,
        .decode_ms = e->decode_ms, .text_len = e->text_len, .n_top = e->n_top,
    };
    bool ok = true;
    ev.text = malloc(e->text_len + 1);
    if (ev.text) {
        if (e->text_len) memcpy(ev.text, e->text, e->text_len);
        ev.text[e->text_len] = 0;
    } else {
        ok = false;
    }
    if (ok && e->n_top > 0) {
        ev.top = malloc((size_t)e->n_top * sizeof *ev.top);
        if (ev.top) memcpy(ev.top, e->top, (size_t)e->n_top * sizeof *ev.top);
        else ok = false;
    }
    pthread_mutex_lock(&job->mu);
    if (ok && job->n == job->cap) {
        size_t cap = job->cap ? job->cap * 2 : 64;
        /* compact first: taken events sit before head */
        if (job->head > 0) {
            memmove(job->events, job->events + job->head, (job->n - job->head) * sizeof *job->events);
            job->n -= job->head;
            job->head = 0;
        }
        if (job->n == job->cap) {
            job_event *v = realloc(job->events, cap * sizeof *v);
            if (v) {
                job->events = v;
                job->cap = cap;
            } else {
                ok = false;
            }
        }
    }
    if (ok) {
        job->events[job->n++] = ev;
    } else {
        job->lost_event = true;
        job_event_free(&ev);
    }
    if (e->kind == INF_EVENT_DONE) {
        job->n_done++;
        if (job->submitted && job->n_done == job->n_choices) atomic_fetch_sub(&job->srv->in_flight, 1);
    }
    pthread_cond_signal(&job->cv);
    pthread_mutex_unlock(&job->mu);
}

static void job_destroy(server_job *job) {
    for (size_t i = job->head; i < job->n; i++) job_event_free(&job->events[i]);
    free(job->events);
    free(job->ids);
    free(job->tags);
    pthread_cond_destroy(&job->cv);
    pthread_mutex_destroy(&job->mu);
}

/* Cancels the engine requests and waits for the DONE of every completion. */
static void job_stop(server_job *job) {
    pthread_mutex_lock(&job->mu);
    bool running = job->n_done < job->n_choices;
    pthread_mutex_unlock(&job->mu);
    if (running)
        for (int i = 0; i < job->n_requests; i++) inf_engine_cancel(job->srv->engine, job->ids[i]);
    pthread_mutex_lock(&job->mu);
    while (job->n_done < job->n_choices) pthread_cond_wait(&job->cv, &job->mu);
    pthread_mutex_unlock(&job->mu);
}

inf_status job_submit(server *srv, server_job *job, inf_request *reqs, int n_reqs, inf_error *err) {
    memset(job, 0, sizeof *job);
    job->srv = srv;
    job->n_per_request = reqs[0].n > 0 ? reqs[0].n : 1;
    pthread_mutex_init(&job->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&job->cv, &ca);
    pthread_condattr_destroy(&ca);
    job->ids = calloc((size_t)n_reqs, sizeof *job->ids);
    job->tags = calloc((size_t)n_reqs, sizeof *job->tags);
    if (!job->ids || !job->tags) {
        job_destroy(job);
        err->status = INF_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return INF_ERR_NOMEM;
    }
    atomic_fetch_add(&srv->in_flight, 1);
    inf_status st = INF_OK;
    for (int i = 0; i < n_reqs && !st; i++) {
        job->tags[i] = (job_tag){job, i};
        reqs[i].on_event = on_event;
        reqs[i].user = &job->tags[i];
        pthread_mutex_lock(&job->mu);
        job->n_choices += job->n_per_request; /* before the engine can deliver its DONE */
        pthread_mutex_unlock(&job->mu);
        st = inf_engine_submit(srv->engine, &reqs[i], &job->ids[i], err);
        pthread_mutex_lock(&job->mu);
        if (st) job->n_choices -= job->n_per_request;
        else job->n_requests++;
        pthread_mutex_unlock(&job->mu);
    }
    pthread_mutex_lock(&job->mu);
    job->submitted = true;
    if (job->n_done == job->n_choices) atomic_fetch_sub(&srv->in_flight, 1);
    pthread_mutex_unlock(&job->mu);
    if (st) {
        job_stop(job);
        job_destroy(job);
        return st;
    }
    pthread_mutex_lock(&srv->jobs_mu);
    job->next = srv->jobs;
    if (srv->jobs) srv->jobs->prev = job;
    srv->jobs = job;
    pthread_mutex_unlock(&srv->jobs_mu);
    return INF_OK;
}

bool job_next(server_job *job, int timeout_ms, job_event *ev) {
    pthread_mutex_lock(&job->mu);
    if (job->head == job->n && timeout_ms > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        ts.tv_sec += timeout_ms / 1000 + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (job->head == job->n)
            if (pthread_cond_timedwait(&job->cv, &job->mu, &ts) == ETIMEDOUT) break;
    }
    bool got = job->head < job->n;
    if (got) *ev = job->events[job->head++];
    pthread_mutex_unlock(&job->mu);
    return got;
}

bool job_drained(server_job *job) {
    pthread_mutex_lock(&job->mu);
    bool d = job->n_done == job->n_choices && job->head == job->n;
    pthread_mutex_unlock(&job->mu);
    return d;
}

void job_cancel(server_job *job) {
    for (int i = 0; i < job->n_requests; i++) inf_engine_cancel(job->srv->engine, job->ids[i]);
}

void job_finish(server_job *job) {
    server *srv = job->srv;
    job_stop(job);
    pthread_mutex_lock(&srv->jobs_mu);
    if (job->prev) job->prev->next = job->next;
    else srv->jobs = job->next;
    if (job->next) job->next->prev = job->prev;
    pthread_mutex_unlock(&srv->jobs_mu);
    job_destroy(job);
}

void jobs_cancel_all(server *srv) {
    pthread_mutex_lock(&srv->jobs_mu);
    for (server_job *j = srv->jobs; j; j = j->next) job_cancel(j);
    pthread_mutex_unlock(&srv->jobs_mu);
}

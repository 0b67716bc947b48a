/*
 * fresh_kv.c — what writing memory for the first time costs: a session's
 * decode over positions its KV cache holds for the first time, against the
 * same decode again over the same positions (what `inferno bench` and
 * llama-bench time: their repetitions reuse one context), and the cost of
 * a first write to a 4 KiB page that MADV_POPULATE_WRITE has readied. Not
 * a test.
 *
 *   make build/fresh_kv && build/fresh_kv -m MODEL.gguf [-t 2] [-d 17] [-n 64] [-r 5]
 *
 * Some virtual machines (the Firecracker guests this project is measured
 * on) back a guest page with host memory only when the guest first writes
 * it: MADV_POPULATE_WRITE then does the guest's half of the work, and the
 * first store to each page still stops the vCPU for the host's. A session
 * readies its cache rows 64 positions ahead of use (model/session.c); had
 * it only populated them, each decode step would pay for the pages its new
 * K and V rows open, one at a time, so inf_prefault_write (core/common.c)
 * also stores to each page as it readies it. Each round here makes a new
 * session on memory no session used before (the earlier rounds' sessions
 * stay allocated, so their memory is not handed out again), fills -d
 * positions, times -n decode steps, then truncates to -d and times the
 * same steps again: on a machine that backs its memory at once, or with
 * the stores, the two come out level.
 */
#include "inferno.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ROUNDS = 32, PROBE_BYTES = 64 << 20, POPULATE_WRITE = 23 /* MADV_POPULATE_WRITE */ };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* µs per 4 KiB page: readying PROBE_BYTES of new memory (populate: with
 * MADV_POPULATE_WRITE, else nothing), then a first store to each page. */
static int page_probe(bool populate, double *ready_us, double *first_us) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = PROBE_BYTES / page;
    char *p = mmap(NULL, PROBE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    const double t0 = now();
    if (populate && madvise(p, PROBE_BYTES, POPULATE_WRITE) != 0) {
        munmap(p, PROBE_BYTES);
        return -1;
    }
    const double t1 = now();
    for (size_t i = 0; i < pages; i++) ((volatile char *)p)[i * page + 64] = 1;
    const double t2 = now();
    *ready_us = (t1 - t0) * 1e6 / (double)pages;
    *first_us = (t2 - t1) * 1e6 / (double)pages;
    munmap(p, PROBE_BYTES);
    return 0;
}

/* tok/s of n single-token steps from the session's current position. */
static double decode(inf_session *s, const int32_t *tokens, int n, float *logits, inf_error *err) {
    const double t0 = now();
    for (int i = 0; i < n; i++)
        if (inf_session_eval(s, tokens + i, 1, INF_LOGITS_LAST, logits, err)) return -1;
    return n / (now() - t0);
}

static void usage(FILE *f) {
    fprintf(f, "usage: fresh_kv -m MODEL.gguf [-t THREADS] [-d DEPTH] [-n STEPS] [-r ROUNDS]\n"
               "Decode over cache positions written for the first time against the same\n"
               "positions again, and the cost of a first write to readied memory.\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int threads = 2, depth = 17, steps = 64, rounds = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            usage(stderr);
            return 2;
        }
        if (!strcmp(a, "-m")) path = argv[++i];
        else if (!strcmp(a, "-t")) threads = atoi(argv[++i]);
        else if (!strcmp(a, "-d")) depth = atoi(argv[++i]);
        else if (!strcmp(a, "-n")) steps = atoi(argv[++i]);
        else if (!strcmp(a, "-r")) rounds = atoi(argv[++i]);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!path || threads < 1 || depth < 1 || depth > 100000 || steps < 1 || steps > 100000 || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        usage(stderr);
        return 2;
    }

    double ready_pop, first_pop, ready_none, first_none;
    if (page_probe(true, &ready_pop, &first_pop) || page_probe(false, &ready_none, &first_none))
        printf("new memory: the page probe failed (mmap, or MADV_POPULATE_WRITE before Linux 5.14)\n");
    else
        printf("new memory, us per 4 KiB page: MADV_POPULATE_WRITE %.2f then first store %.2f; "
               "first store alone (fault) %.2f\n",
               ready_pop, first_pop, first_none);

    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = threads;
    inf_model *model;
    inf_error err;
    if (inf_model_load(path, &opt, &model, &err)) {
        fprintf(stderr, "fresh_kv: %s\n", err.msg);
        return 1;
    }
    inf_model_info info;
    inf_model_get_info(model, &info);
    float *logits = malloc(sizeof(float) * (size_t)info.n_vocab);
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)(depth + steps));
    inf_session *sessions[MAX_ROUNDS] = {0};
    double fresh[MAX_ROUNDS], again[MAX_ROUNDS];
    int rc = logits && tokens ? 0 : 1;
    uint64_t state = 1234;
    for (int i = 0; i < depth + steps && !rc; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        tokens[i] = (int32_t)((state >> 33) % (uint64_t)(info.n_vocab < 100000 ? info.n_vocab : 100000));
    }
    for (int r = 0; r < rounds && !rc; r++) {
        if (inf_session_new(model, depth + steps, &sessions[r], &err)) {
            fprintf(stderr, "fresh_kv: %s\n", err.msg);
            rc = 1;
            break;
        }
        inf_session *s = sessions[r];
        if (inf_session_eval(s, tokens, depth, INF_LOGITS_LAST, logits, &err) ||
            (fresh[r] = decode(s, tokens + depth, steps, logits, &err)) < 0 || inf_session_truncate(s, depth, &err) ||
            (again[r] = decode(s, tokens + depth, steps, logits, &err)) < 0) {
            fprintf(stderr, "fresh_kv: %s\n", err.msg);
            rc = 1;
            break;
        }
        printf("round %d: decode %d after %d, new positions %.1f tok/s, the same positions again %.1f tok/s\n", r + 1,
               steps, depth, fresh[r], again[r]);
    }
    if (!rc) {
        double ratio[MAX_ROUNDS], extra_us[MAX_ROUNDS]; /* paired within each round */
        for (int r = 0; r < rounds; r++) {
            ratio[r] = again[r] / fresh[r];
            extra_us[r] = (1.0 / fresh[r] - 1.0 / again[r]) * 1e6;
        }
        const double q = median(ratio, rounds), x = median(extra_us, rounds);
        const double f = median(fresh, rounds), a = median(again, rounds);
        printf("median of %d rounds: new positions %.1f tok/s, again %.1f tok/s; paired: again/new %.3f, "
               "%.0f us more a token over new positions\n",
               rounds, f, a, q, x);
    }
    for (int r = 0; r < rounds; r++) inf_session_free(sessions[r]);
    free(tokens);
    free(logits);
    inf_model_free(model);
    return rc;
}

/*
 * test_bandwidth.c — inf_measure_read_bandwidth: a small buffer gives a
 * finite positive figure with one and with several threads; bad arguments
 * are INF_ERR_INVALID with a message; its AVX-512 summing loop gives the C
 * loop's sums at ragged lengths and offsets; the shares it (and the
 * decode products) split reads into hand out every unit exactly once,
 * however threads claim them. (No figure is asserted: tests never assert
 * speed.)
 */
#include "core/common.h"
#include "core/shares.h"
#include "harness.h"
#include "inferno.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

enum { SHARE_THREADS = 3, SHARE_UNITS_MAX = 1000 };

typedef struct share_run {
    inf_share shares[SHARE_THREADS];
    _Atomic int claimed[SHARE_UNITS_MAX]; /* times each unit was handed out */
    pthread_barrier_t start;
} share_run;

typedef struct share_thread {
    share_run *run;
    int index;
} share_thread;

static void count_claimed(void *ctx, uint32_t lo, uint32_t hi, int thread) {
    (void)thread;
    share_run *run = ctx;
    for (uint32_t u = lo; u < hi; u++) atomic_fetch_add(&run->claimed[u], 1);
}

/* As bandwidth.c and cpu.c claim (inf_shares_work): the own share from
 * the front, then the others' from the back. */
static void *claim_all(void *arg) {
    share_thread *t = arg;
    pthread_barrier_wait(&t->run->start);
    inf_shares_work(t->run->shares, SHARE_THREADS, t->index, count_claimed, t->run, t->index);
    return NULL;
}

/* Units [0, units) in SHARE_THREADS shares, claimed by as many threads;
 * true when each unit went out once. */
static bool shares_cover(uint32_t units) {
    static share_run run;
    memset(&run, 0, sizeof run);
    for (int i = 0; i < SHARE_THREADS; i++)
        inf_share_set(&run.shares[i], units * (uint32_t)i / SHARE_THREADS, units * (uint32_t)(i + 1) / SHARE_THREADS);
    pthread_barrier_init(&run.start, NULL, SHARE_THREADS);
    pthread_t threads[SHARE_THREADS];
    share_thread args[SHARE_THREADS];
    for (int i = 1; i < SHARE_THREADS; i++) {
        args[i] = (share_thread){&run, i};
        pthread_create(&threads[i], NULL, claim_all, &args[i]);
    }
    args[0] = (share_thread){&run, 0};
    claim_all(&args[0]);
    for (int i = 1; i < SHARE_THREADS; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&run.start);
    for (uint32_t u = 0; u < SHARE_UNITS_MAX; u++)
        if (atomic_load(&run.claimed[u]) != (u < units ? 1 : 0)) return false;
    return true;
}

int main(void) {
    inf_error err = {0};
    double gb_s = -1;

    test_begin("measures with 1 and 3 threads");
    for (int threads = 1; threads <= 3; threads += 2) {
        inf_status st = inf_measure_read_bandwidth(threads, (size_t)4 << 20, &gb_s, &err);
        TEST_CHECK(st == INF_OK, "%d threads: status %d (%s)", threads, st, err.msg);
        TEST_CHECK(isfinite(gb_s) && gb_s > 0, "%d threads: %g GB/s", threads, gb_s);
    }
    /* a size that is not a whole number of cache lines per thread */
    TEST_CHECK(inf_measure_read_bandwidth(3, ((size_t)1 << 20) + 24, &gb_s, &err) == INF_OK,
               "ragged size: %s", err.msg);

#if defined(__x86_64__)
    test_begin("the AVX-512 summing loop sums as the C loop");
    if (__builtin_cpu_supports("avx512f")) {
        enum { WORDS = 300 };
        uint64_t words[WORDS];
        uint64_t state = 0x9e3779b97f4a7c15u;
        for (int i = 0; i < WORDS; i++) { /* any bits, wrapping sums included */
            state = state * 6364136223846793005u + 1442695040888963407u;
            words[i] = state;
        }
        for (size_t offset = 0; offset < 9; offset++)
            for (size_t n = 0; n + offset <= WORDS; n += n < 40 ? 1 : 37)
                TEST_CHECK(inf_sum_words_avx512(words + offset, n) == inf_sum_words(words + offset, n),
                           "offset %zu, %zu words", offset, n);
    } else {
        printf("  (no AVX-512F here: skipped)\n");
    }
#endif

    test_begin("shares hand out every unit once");
    {
        static const uint32_t units[] = {0, 1, 2, 3, 7, 64, 301, SHARE_UNITS_MAX};
        for (int rep = 0; rep < 20; rep++)
            for (size_t i = 0; i < sizeof units / sizeof *units; i++)
                TEST_CHECK(shares_cover(units[i]), "%u units, round %d", units[i], rep);
        inf_share one;
        uint32_t lo, hi;
        inf_share_set(&one, 10, 17);
        TEST_CHECK(inf_share_claim(&one, true, &lo, &hi) && lo == 10 && hi == 14, "front half rounded up: [%u, %u)", lo,
                   hi);
        TEST_CHECK(inf_share_claim(&one, false, &lo, &hi) && lo == 16 && hi == 17, "back half rounded down: [%u, %u)",
                   lo, hi);
        TEST_CHECK(inf_share_claim(&one, false, &lo, &hi) && lo == 15 && hi == 16, "at least one from the back");
        TEST_CHECK(inf_share_claim(&one, true, &lo, &hi) && lo == 14 && hi == 15, "the last one");
        TEST_CHECK(!inf_share_claim(&one, true, &lo, &hi) && !inf_share_claim(&one, false, &lo, &hi), "then none");
    }

    test_begin("rejects bad arguments");
    memset(&err, 0, sizeof err);
    TEST_CHECK(inf_measure_read_bandwidth(0, (size_t)4 << 20, &gb_s, &err) == INF_ERR_INVALID,
               "0 threads");
    TEST_CHECK(err.msg[0] != 0 && gb_s == 0, "0 threads: message and 0 GB/s");
    memset(&err, 0, sizeof err);
    TEST_CHECK(inf_measure_read_bandwidth(1, 4096, &gb_s, &err) == INF_ERR_INVALID, "4 KiB buffer");
    TEST_CHECK(err.msg[0] != 0, "4 KiB buffer: message");
    TEST_CHECK(inf_measure_read_bandwidth(1, (size_t)4 << 20, &gb_s, NULL) == INF_OK,
               "NULL inf_error is allowed");
    return test_summary();
}

/*
 * test_bandwidth.c — inf_measure_read_bandwidth: a small buffer gives a
 * finite positive figure with one and with several threads; bad arguments
 * are INF_ERR_INVALID with a message; its AVX-512 summing loop gives the C
 * loop's sums at ragged lengths and offsets. (No figure is asserted: tests
 * never assert speed.)
 */
#include "core/common.h"
#include "harness.h"
#include "inferno.h"

#include <math.h>
#include <string.h>

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

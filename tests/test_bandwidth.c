/*
 * test_bandwidth.c — inf_measure_read_bandwidth: a small buffer gives a
 * finite positive figure with one and with several threads; bad arguments
 * are INF_ERR_INVALID with a message. (No figure is asserted: tests never
 * assert speed.)
 */
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

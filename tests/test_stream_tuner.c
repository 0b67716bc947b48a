/*
 * test_stream_tuner.c — the choice of a weight prefetch hint by timed
 * trials (src/backend/stream_tuner.h), on made-up timings: trials
 * alternate the hints, the faster wins and runs alone for its exploit
 * bytes, the next trial follows a change of the faster hint; nothing to
 * choose with one hint; bad timings are ignored.
 */
#include "backend/stream_tuner.h"
#include "harness.h"

#include <math.h>

enum { PRODUCT_BYTES = 4 << 20 };

/* Runs one product with the tuner's hint at rate[hint] bytes a second;
 * returns the hint it ran with. */
static int run_product(stream_tuner *t, const double *rate) {
    const int hint = stream_tuner_hint(t);
    stream_tuner_record(t, PRODUCT_BYTES, PRODUCT_BYTES / rate[hint]);
    return hint;
}

/* Products until a trial ends; checks they alternate from `first`. */
static void run_trial(stream_tuner *t, const double *rate, int first) {
    const int64_t trials = t->trials;
    int expect = first, products = 0;
    while (t->trials == trials && products < 100000) {
        const int hint = run_product(t, rate);
        if (hint != expect) {
            TEST_CHECK(0, "trial product %d ran hint %d, not %d", products, hint, expect);
            return;
        }
        expect = 1 - expect;
        products++;
    }
    const double per_hint = fmax(STREAM_TRIAL_PRODUCTS, STREAM_TRIAL_BYTES / PRODUCT_BYTES);
    TEST_CHECK(products >= 2 * per_hint && products <= 2 * per_hint + 1, "a trial of %d products", products);
}

int main(void) {
    stream_tuner t;

    test_begin("one hint: nothing to choose");
    stream_tuner_init(&t, 1, 0);
    const double one[2] = {1e9, 1e9};
    for (int i = 0; i < 1000; i++) TEST_CHECK(run_product(&t, one) == 0, "product %d", i);
    TEST_CHECK(t.trials == 0, "no trials");

    test_begin("a trial alternates from the initial hint, the faster wins");
    stream_tuner_init(&t, 2, 1);
    const double zero_faster[2] = {2e9, 1e9};
    run_trial(&t, zero_faster, 1);
    TEST_CHECK(t.trials == 1 && t.best == 0 && stream_tuner_hint(&t) == 0, "trials %lld, best %d",
               (long long)t.trials, t.best);

    test_begin("the winner runs alone for its exploit bytes, then a trial from it");
    const double trial_bytes = 2 * fmax(STREAM_TRIAL_PRODUCTS * (double)PRODUCT_BYTES, STREAM_TRIAL_BYTES);
    const int exploit_products = (int)ceil(trial_bytes * STREAM_EXPLOIT_FACTOR / PRODUCT_BYTES);
    for (int i = 0; i < exploit_products; i++) TEST_CHECK(run_product(&t, zero_faster) == 0, "exploit product %d", i);
    const double one_faster[2] = {1e9, 3e9};
    run_trial(&t, one_faster, 0);
    TEST_CHECK(t.trials == 2 && t.best == 1 && stream_tuner_hint(&t) == 1, "trials %lld, best %d",
               (long long)t.trials, t.best);
    TEST_CHECK(t.wins[0] == 1 && t.wins[1] == 1, "trials won: %lld and %lld", (long long)t.wins[0],
               (long long)t.wins[1]);

    test_begin("bad timings are not counted");
    stream_tuner_init(&t, 2, 0);
    stream_tuner_record(&t, PRODUCT_BYTES, 0);
    stream_tuner_record(&t, PRODUCT_BYTES, NAN);
    stream_tuner_record(&t, 0, 1e-3);
    TEST_CHECK(t.trial_products[0] == 0 && stream_tuner_hint(&t) == 0, "nothing recorded");
    return test_summary();
}

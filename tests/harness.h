/*
 * harness.h — a minimal test harness. A test program registers nothing:
 * it calls its checks from main() and ends with test_summary(), which
 * prints "N passed, N failed" and returns the exit code.
 *
 *   TEST_CHECK(cond, "fmt", ...)   one check; failure prints file:line and message
 *   TEST_NEAR(a, b, tol, "what")   |a - b| <= tol
 *   test_begin("name")             names the group the next checks belong to
 *
 * It also owns what several test programs need: reading a whole file, a
 * seeded random stream for test inputs, and a scratch directory.
 *
 * Test data paths are relative to the repository root (the runner's cwd).
 */
#ifndef INF_TEST_HARNESS_H
#define INF_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void test_begin(const char *name);
bool test_check(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int test_summary(void);

/* Reads a whole file (NUL-terminated; len may be NULL); NULL when unreadable. */
char *test_read_file(const char *path, size_t *len);

/* splitmix64: the next value of a deterministic stream whose state (the
 * seed, then advanced by each call) the caller keeps, so a failing input
 * can be reproduced from its seed. */
uint64_t test_rng_next(uint64_t *state);

/* Makes a fresh scratch directory /tmp/inferno-NAME-XXXXXX and returns its
 * path (NULL, with the reason on stderr, when it cannot); one per program.
 * test_tmpdir_remove() deletes it and everything in it. */
const char *test_tmpdir(const char *name);
void test_tmpdir_remove(void);

/* Whether this build runs under AddressSanitizer (scripts/check.sh's
 * second build). The slowest loops there leave out the "ref" ISA (ref.c
 * threaded, ~45% of test_kernels' and test_engine's time under ASan):
 * the plain build runs it, and ref.c's ops still run under ASan as the
 * oracle of every other ISA. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#else
#define TEST_UNDER_ASAN 0
#endif

#define TEST_CHECK(cond, ...) test_check((cond), __FILE__, __LINE__, __VA_ARGS__)
#define TEST_NEAR(a, b, tol, what)                                                           \
    test_check(fabs((double)(a) - (double)(b)) <= (tol), __FILE__, __LINE__,                 \
               "%s: %.9g vs %.9g (tol %g)", (what), (double)(a), (double)(b), (double)(tol))

#endif

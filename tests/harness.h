/*
 * harness.h — a minimal test harness. A test program registers nothing:
 * it calls its checks from main() and ends with test_summary(), which
 * prints "N passed, N failed" and returns the exit code.
 *
 *   TEST_CHECK(cond, "fmt", ...)   one check; failure prints file:line and message
 *   TEST_NEAR(a, b, tol, "what")   |a - b| <= tol
 *   test_begin("name")             names the group the next checks belong to
 *
 * Test data paths are relative to the repository root (the runner's cwd).
 */
#ifndef INF_TEST_HARNESS_H
#define INF_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

void test_begin(const char *name);
bool test_check(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int test_summary(void);

/* Reads a whole file (NUL-terminated); NULL when unreadable. */
char *test_read_file(const char *path, size_t *len);

#define TEST_CHECK(cond, ...) test_check((cond), __FILE__, __LINE__, __VA_ARGS__)
#define TEST_NEAR(a, b, tol, what)                                                           \
    test_check(fabs((double)(a) - (double)(b)) <= (tol), __FILE__, __LINE__,                 \
               "%s: %.9g vs %.9g (tol %g)", (what), (double)(a), (double)(b), (double)(tol))

#endif

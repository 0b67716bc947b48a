/*
 * harness.c — counts checks, prints failures and the closing line; reads
 * files, draws test inputs, and makes and removes the scratch directory.
 * Linked into every test program, the kernel-only ones too, so it uses
 * nothing of the library beyond src/core/.
 */
#include "harness.h"

#include "core/common.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static char current[200]; /* a copy: callers pass names built in their stack frames */
static int n_pass, n_fail;
static int group_failed;
static double group_start_s = -1;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* INFERNO_TEST_TIMES=1: each group's wall time on stderr as it ends
 * (finding what makes a test slow, e.g. under the sanitizers or qemu). */
static void group_end(void) {
    static int enabled = -1;
    if (enabled < 0) enabled = getenv("INFERNO_TEST_TIMES") != NULL;
    const double t = now_s();
    if (enabled && group_start_s >= 0) fprintf(stderr, "time %8.3f s  %s\n", t - group_start_s, current);
    group_start_s = t;
}

void test_begin(const char *name) {
    group_end();
    snprintf(current, sizeof current, "%s", name);
    group_failed = 0;
}

bool test_check(bool ok, const char *file, int line, const char *fmt, ...) {
    if (ok) {
        n_pass++;
        return true;
    }
    n_fail++;
    if (group_failed++ < 20) {
        fprintf(stdout, "FAIL %s (%s:%d): ", current, file, line);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
    }
    return false;
}

int test_summary(void) {
    group_end();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}

char *test_read_file(const char *path, size_t *len) {
    char *text;
    size_t n;
    if (inf_read_file(path, &text, &n, NULL) != INF_OK) return NULL;
    if (len) *len = n;
    return text;
}

uint64_t test_rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static char tmpdir[256];

const char *test_tmpdir(const char *name) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/inferno-%s-XXXXXX", name);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        tmpdir[0] = 0;
        return NULL;
    }
    return tmpdir;
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    if (remove(path) != 0) perror(path);
    return 0;
}

void test_tmpdir_remove(void) {
    if (!tmpdir[0]) return;
    /* depth first, without following links out of the directory */
    nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    tmpdir[0] = 0;
}

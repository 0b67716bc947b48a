/*
 * harness.c — counts checks, prints failures and the closing line.
 */
#include "harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *current = "";
static int n_pass, n_fail;
static int group_failed;

void test_begin(const char *name) {
    current = name;
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
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}

char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

/*
 * cli_util.c — helpers shared by the commands: strict parsing, errors and
 * reading input.
 *
 * The CLI is a client of include/inferno.h only, so it cannot call the
 * library's internal helpers (core/common.h): cli_read_stream/cli_read_file
 * stay here rather than use inf_read_file, and they read to EOF instead of
 * sizing the file first, because their input is often a pipe (stdin).
 */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_fail(int code, const char *cmd, const char *fmt, ...) {
    fprintf(stderr, "inferno %s: ", cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int cli_fail_error(const char *cmd, const inf_error *err) {
    fprintf(stderr, "inferno %s: %s\n", cmd, err->msg);
    return err->status == INF_ERR_INVALID ? EXIT_USAGE : EXIT_RUNTIME;
}

bool cli_parse_int(const char *s, long min, long max, long *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return false;
    *out = v;
    return true;
}

bool cli_parse_float(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

bool cli_parse_ids(const char *s, int32_t **ids, size_t *n) {
    size_t cap = 16, cnt = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return false;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > INT32_MAX) { free(v); return false; }
        if (cnt == cap) {
            int32_t *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) { free(v); return false; }
            v = nv;
            cap *= 2;
        }
        v[cnt++] = (int32_t)x;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') {
            p++;
            if (!*p) { free(v); return false; }
        } else if (*p) {
            free(v);
            return false;
        }
    }
    if (cnt == 0) { free(v); return false; }
    *ids = v;
    *n = cnt;
    return true;
}

const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_fail(EXIT_USAGE, cmd, "option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

char *cli_read_stream(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    if (!buf) return NULL;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) { free(buf); return NULL; }
            buf = nb;
            cap *= 2;
        }
    }
    if (ferror(f)) { free(buf); return NULL; }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

char *cli_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = cli_read_stream(f, len);
    fclose(f);
    return b;
}

/*
 * fuzz_common.h — helpers shared by the libFuzzer targets in tests/fuzz/:
 * a check that aborts with a message (libFuzzer then saves the input as a
 * crash), and an in-memory file (memfd) that lets the file-based parsers
 * read a fuzz input through a path without touching the disk.
 */
#ifndef INF_FUZZ_COMMON_H
#define INF_FUZZ_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* An invariant the library broke: report and abort (a crash for libFuzzer). */
#define FUZZ_CHECK(cond, ...)                                                       \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* One memfd per process, reused by every input: its contents are replaced
 * by fuzz_file_set, and fuzz_file_path names it as /proc/self/fd/N (a
 * regular file that open(), fstat() and mmap() accept). */
typedef struct fuzz_file {
    int fd;
    char path[64];
} fuzz_file;

static inline void fuzz_file_init(fuzz_file *f, const char *name) {
    f->fd = memfd_create(name, MFD_CLOEXEC);
    FUZZ_CHECK(f->fd >= 0, "memfd_create: errno %d", errno);
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
}

static inline void fuzz_file_set(fuzz_file *f, const void *data, size_t len) {
    FUZZ_CHECK(ftruncate(f->fd, 0) == 0, "ftruncate: errno %d", errno);
    const char *p = data;
    for (size_t done = 0; done < len;) {
        ssize_t put = pwrite(f->fd, p + done, len - done, (off_t)done);
        FUZZ_CHECK(put > 0, "pwrite: errno %d", errno);
        done += (size_t)put;
    }
}

#endif /* INF_FUZZ_COMMON_H */

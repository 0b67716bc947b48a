/*
 * common.c — error formatting, status names, aligned allocation, the
 * growable byte buffer, whole-file reads (and threaded reads of a file's
 * range), UTF-8 encoding, JSON's \u hex digits.
 */
#include "core/common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double inf_monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

inf_status inf_errorf(inf_error *err, inf_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* keep the message on one line */
        for (char *p = err->msg; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
        err->status = status;
    }
    return status;
}

const char *inf_status_name(inf_status status) {
    switch (status) {
    case INF_OK: return "ok";
    case INF_ERR_IO: return "io";
    case INF_ERR_FORMAT: return "format";
    case INF_ERR_UNSUPPORTED: return "unsupported";
    case INF_ERR_INVALID: return "invalid";
    case INF_ERR_NOMEM: return "nomem";
    case INF_ERR_CONTEXT_FULL: return "context-full";
    }
    return "unknown";
}

void *inf_alloc_aligned(size_t bytes) {
    if (bytes == 0) bytes = 1;
    size_t rounded;
    if (!inf_add_size(bytes, 63, &rounded)) return NULL;
    rounded &= ~(size_t)63;
    return aligned_alloc(64, rounded);
}

void *inf_alloc_huge(size_t bytes) {
    enum { HUGE_PAGE = 2 << 20 };
    size_t rounded;
    if (bytes == 0 || !inf_add_size(bytes, HUGE_PAGE - 1, &rounded)) return NULL;
    rounded &= ~(size_t)(HUGE_PAGE - 1);
    void *p = aligned_alloc(HUGE_PAGE, rounded);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, rounded, MADV_HUGEPAGE); /* advice only: a failure is ignored */
#endif
    return p;
}

void inf_free_aligned(void *p) { free(p); }

void inf_advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

bool inf_pread_all(int fd, uint64_t offset, void *dst, size_t n) {
    uint8_t *p = dst;
    while (n) {
        const ssize_t got = pread(fd, p, n, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got == 0) errno = 0;
            return false;
        }
        p += got;
        n -= (size_t)got;
        offset += (uint64_t)got;
    }
    return true;
}

enum { READ_THREADS = 4 };
#define READ_CHUNK ((size_t)1 << 25)

typedef struct range_reader {
    int fd;
    uint64_t offset;
    uint8_t *dst;
    size_t bytes;
    atomic_size_t next_chunk;
    atomic_size_t done;    /* bytes read so far */
    atomic_int failed;     /* 0; errno of the first failed read; -1 when the file ended */
    atomic_size_t fail_at; /* offset of that failure into the range */
} range_reader;

/* Reads chunks until none is left or a reader failed, telling progress
 * (NULL: nothing) after each. */
static void read_chunks(range_reader *r, void (*progress)(double, void *), void *user) {
    for (;;) {
        size_t lo = atomic_fetch_add(&r->next_chunk, 1) * READ_CHUNK;
        if (lo >= r->bytes || atomic_load(&r->failed)) return;
        const size_t hi = INF_MIN(r->bytes, lo + READ_CHUNK);
        while (lo < hi) {
            const ssize_t got = pread(r->fd, r->dst + lo, hi - lo, (off_t)(r->offset + lo));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                int expected = 0;
                if (atomic_compare_exchange_strong(&r->failed, &expected, got < 0 ? (errno ? errno : EIO) : -1))
                    atomic_store(&r->fail_at, lo);
                return;
            }
            lo += (size_t)got;
            atomic_fetch_add(&r->done, (size_t)got);
        }
        if (progress) progress((double)atomic_load(&r->done) / (double)r->bytes, user);
    }
}

static void *read_chunks_thread(void *reader) {
    read_chunks(reader, NULL, NULL);
    return NULL;
}

int inf_pread_parallel(int fd, uint64_t offset, void *dst, size_t n, void (*progress)(double fraction, void *user),
                       void *progress_user, size_t *fail_at) {
    range_reader r = {.fd = fd, .offset = offset, .dst = dst, .bytes = n};
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const size_t chunks = (n + READ_CHUNK - 1) / READ_CHUNK;
    const size_t readers = INF_MIN(INF_MIN((size_t)(cpus > 1 ? cpus : 1), (size_t)READ_THREADS), chunks);
    pthread_t helpers[READ_THREADS];
    size_t started = 0;
    /* a helper that cannot be started leaves its share to the others */
    while (started + 1 < readers && pthread_create(&helpers[started], NULL, read_chunks_thread, &r) == 0) started++;
    read_chunks(&r, progress, progress_user);
    for (size_t i = 0; i < started; i++) pthread_join(helpers[i], NULL);
    const int failed = atomic_load(&r.failed);
    if (failed && fail_at) *fail_at = atomic_load(&r.fail_at);
    return failed;
}

void inf_prefault_write(void *p, size_t n) {
#ifdef __linux__
    enum { POPULATE_WRITE = 23 }; /* MADV_POPULATE_WRITE, where the headers predate it */
    if (n == 0) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (uintptr_t)p / page * page, hi = ((uintptr_t)p + n + page - 1) / page * page;
    madvise((void *)lo, hi - lo, POPULATE_WRITE);
    /* a store to each page of the byte it holds: p, then each page's first */
    for (uintptr_t a = (uintptr_t)p; a < (uintptr_t)p + n; a = a / page * page + page) {
        volatile char *c = (volatile char *)a;
        *c = *c;
    }
#else
    (void)p, (void)n;
#endif
}

void inf_release_pages(const void *p, size_t n) {
    const uintptr_t lo = (uintptr_t)p, page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t first = (lo + page - 1) / page * page, end = (lo + n) / page * page;
    if (end > first) madvise((void *)first, end - first, MADV_DONTNEED);
}


/* ------------------------------------------------------------------ buffer */

bool inf_buf_reserve(inf_buf *b, size_t extra) {
    size_t want;
    if (!inf_add_size(b->len, extra, &want)) {
        b->failed = true;
        return false;
    }
    if (want <= b->cap && b->data) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < want) {
        if (!inf_mul_size(cap, 2, &cap)) {
            b->failed = true;
            return false;
        }
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void inf_buf_append(inf_buf *b, const void *p, size_t n) {
    size_t room;
    if (b->failed || !inf_add_size(n, 1, &room) || !inf_buf_reserve(b, room)) {
        b->failed = true;
        return;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

void inf_buf_puts(inf_buf *b, const char *s) { inf_buf_append(b, s, strlen(s)); }

/* ------------------------------------------------------------------ files */

inf_status inf_read_file(const char *path, char **out, size_t *len, inf_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return inf_errorf(err, INF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    inf_status st = INF_OK;
    char *buf = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot determine the file size", path);
    } else if (!(buf = malloc((size_t)size + 1))) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for %ld bytes", path, size);
    } else if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        st = inf_errorf(err, INF_ERR_IO, "%s: short read", path);
        free(buf);
        buf = NULL;
    } else {
        buf[size] = 0;
        *len = (size_t)size;
    }
    fclose(f);
    *out = buf;
    return st;
}

inf_status inf_map_file(const char *path, const char **out, size_t *len, inf_error *err) {
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return inf_errorf(err, INF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    inf_status st = INF_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > SIZE_MAX) {
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot determine the file size", path);
    } else if (sb.st_size == 0) {
        *out = "";
    } else {
        void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            st = inf_errorf(err, INF_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
        } else {
            *out = map;
            *len = (size_t)sb.st_size;
        }
    }
    close(fd);
    return st;
}

void inf_unmap_file(const char *data, size_t len) {
    if (data && len) munmap((void *)(uintptr_t)data, len);
}

/* ------------------------------------------------------------------ UTF-8 */

size_t inf_utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int inf_hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

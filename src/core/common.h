/*
 * common.h — small helpers every stage of the library shares: error
 * reporting into an inf_error, overflow-checked size arithmetic,
 * allocation wrappers, a growable byte buffer, reading a whole file and
 * UTF-8 encoding. Internal; not part of the public API (the CLI keeps its
 * own copies of what it needs, in src/cli/).
 */
#ifndef INF_COMMON_H
#define INF_COMMON_H

#include "inferno.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Fills err (when non-NULL) with a printf-style one-line message and returns status. */
inf_status inf_errorf(inf_error *err, inf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Overflow-checked arithmetic: return false when the result does not fit. */
static inline bool inf_mul_size(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool inf_add_size(size_t a, size_t b, size_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline bool inf_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool inf_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

/* Aligned allocation (64-byte, for SIMD rows); free with inf_free_aligned. NULL on failure or size 0 overflow. */
void *inf_alloc_aligned(size_t bytes);
/* The same, 2 MiB-aligned and advised to be backed by huge pages (fewer
 * TLB misses while streaming it: packed weights); inf_free_aligned. */
void *inf_alloc_huge(size_t bytes);
void inf_free_aligned(void *p);
/* Gives the whole pages inside [p, p + n) back to the system
 * (MADV_DONTNEED): a read-only file mapping reads the file again when they
 * are touched, anonymous memory reads zeros. */
void inf_release_pages(const void *p, size_t n);

/* Seconds on CLOCK_MONOTONIC, for timing spans. Thread-safe. */
double inf_monotonic_s(void);

/* The sum of words p[0 .. n), eight accumulators: a loop that is bound
 * by the reads once p is far larger than the caches (bandwidth.c; the
 * decode_ceiling bench reads weights with it too). */
uint64_t inf_sum_words(const uint64_t *p, size_t n);
#if defined(__x86_64__)
/* The same sum by one 64-byte load and add a step (bandwidth.c's second
 * loop); only where the CPU has AVX-512F. */
uint64_t inf_sum_words_avx512(const uint64_t *p, size_t n);
#endif

/* Advises the whole pages inside [p, p + n) to be backed by huge pages
 * (MADV_HUGEPAGE: fewer page faults while filling them, fewer TLB misses
 * while streaming them); advice only, nothing happens on failure. */
void inf_advise_huge(void *p, size_t n);

/* Maps the pages under [p, p + n) of a private writable mapping now, for
 * writing, in one system call (MADV_POPULATE_WRITE, Linux 5.14): the
 * first writes would otherwise fault them in one at a time, and in a VM a
 * fault cost ~10 µs a page where this cost ~0.6 (Zen 5 VM, 4 KiB pages).
 * Then stores to each page the byte it already holds: a hypervisor may
 * back a guest page with host memory only at the guest's first store to
 * it, and on the Firecracker VM that store cost ~5 µs a page after the
 * call, in a run, and 6-20 µs of a token's time a page when decode steps
 * met their new KV rows' pages one at a time (build/fresh_kv: decode
 * over a session's new positions 2-7% slower than over the same
 * positions again; level with the stores). Contents are unchanged; the
 * caller is the only one to touch [p, p + n) meanwhile. The advice may
 * fail (an older kernel): the stores still map the pages. */
void inf_prefault_write(void *p, size_t n);

/* Reads bytes [offset, offset + n) of the open file fd into dst on the
 * calling thread; false on an error (errno says which) or when the file
 * ends first (errno 0). */
bool inf_pread_all(int fd, uint64_t offset, void *dst, size_t n);

/* Fills dst with bytes [offset, offset + n) of the open file fd, by up to
 * four threads taking 32 MiB chunks in turn (filling anonymous memory is
 * page faults and copies from the page cache: CPU work that scales with
 * the cores). progress (may be NULL) is told the fraction done after each
 * of the calling thread's chunks. Returns 0, or the errno of the first
 * failed read (-1: the file ended early) with *fail_at its offset from
 * `offset`. */
int inf_pread_parallel(int fd, uint64_t offset, void *dst, size_t n, void (*progress)(double fraction, void *user),
                       void *progress_user, size_t *fail_at);

/* A growable byte buffer: data[0..len) in cap bytes; zero-initialize it,
 * free(data) when done. A failed allocation sets failed, which stays set:
 * inf_buf_append then does nothing more, so a writer can append freely and
 * check once at the end. */
typedef struct inf_buf {
    char *data;
    size_t len, cap;
    bool failed;
} inf_buf;

/* Ensures room for extra more bytes (the capacity doubles, from 256);
 * false (and failed set) on allocation failure or overflow. On success data
 * is never NULL, even for extra 0, so data + len is valid. */
bool inf_buf_reserve(inf_buf *b, size_t extra);

/* Appends n bytes and keeps a NUL after them (not counted in len);
 * nothing once failed is set. */
void inf_buf_append(inf_buf *b, const void *p, size_t n);
void inf_buf_puts(inf_buf *b, const char *s);

/* Reads the whole file at path into a malloc'd buffer with a NUL after its
 * *len bytes (*out NULL on failure). Errors name the path: INF_ERR_IO when
 * it cannot be opened, sized or read, INF_ERR_NOMEM. */
inf_status inf_read_file(const char *path, char **out, size_t *len, inf_error *err);

/* The whole file at path mapped read-only (no NUL after it; an empty file
 * is a non-NULL pointer to nothing), for large files read once and in
 * place: no copy, no anonymous pages. Errors as inf_read_file's.
 * inf_unmap_file(*out, *len) releases it. */
inf_status inf_map_file(const char *path, const char **out, size_t *len, inf_error *err);
void inf_unmap_file(const char *data, size_t len);

/* Writes cp (at most U+10FFFF) as UTF-8 to out (room for 4 bytes); returns
 * the length. */
size_t inf_utf8_encode(uint32_t cp, char *out);

/* The value of the 4 hex digits at p (as after a JSON "\u"), 0..0xFFFF;
 * -1 when one is not a hex digit. Reads at most 4 bytes, stopping at the
 * first non-digit (so a NUL ends it safely). */
int inf_hex4(const char *p);

#define INF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define INF_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif /* INF_COMMON_H */

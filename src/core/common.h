/*
 * common.h — small helpers every stage of the library shares: error
 * reporting into an inf_error, overflow-checked size arithmetic, and
 * allocation wrappers. Internal; not part of the public API.
 */
#ifndef INF_COMMON_H
#define INF_COMMON_H

#include "inferno.h"

#include <stdarg.h>
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
void inf_free_aligned(void *p);

#define INF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define INF_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif /* INF_COMMON_H */

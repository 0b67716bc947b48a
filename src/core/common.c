/*
 * common.c — error formatting, status names, aligned allocation.
 */
#include "core/common.h"

#include <stdio.h>
#include <string.h>

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

void inf_free_aligned(void *p) { free(p); }


/*
 * safetensors.h — reader of Hugging Face .safetensors files.
 *
 * Format: an 8-byte little-endian header length N, N bytes of JSON (an
 * object mapping each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]}, plus an optional "__metadata__" object of strings), then
 * the data section. Offsets are relative to the data section.
 *
 * Everything is checked before use, as the reference implementation
 * (huggingface/safetensors) checks it, and a little more: N fits the file
 * and at most 100 MB; the header is one JSON object (trailing spaces, the
 * writer's padding, allowed); names are unique and non-empty; dtype is a
 * known name; shape is a list of at most SAFETENSORS_MAX_DIMS integers;
 * data_offsets are two integers, begin <= end; the product of the shape
 * times the element size equals end - begin (overflow-checked); sorted by
 * begin, the tensors tile the data section exactly (from 0, no gaps, no
 * overlaps, ending at the end of the file). Errors are one line starting
 * with the path and naming the tensor or key.
 *
 * Every dtype of the format is parsed (so sizes can be checked); only F32,
 * F16 and BF16 have an inf_dtype (`supported`): what uses a tensor decides
 * whether another dtype is an error.
 *
 * Ownership: a safetensors_file owns its strings, its tensor table and
 * the storage behind the tensors' data (the mapping or the anonymous copy);
 * it is read-only once open and may be read from any thread.
 */
#ifndef INF_SAFETENSORS_H
#define INF_SAFETENSORS_H

#include "inferno.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAFETENSORS_MAX_DIMS 8
#define SAFETENSORS_MAX_HEADER ((uint64_t)100000000) /* as huggingface/safetensors' MAX_HEADER_SIZE */

typedef struct safetensors_tensor {
    char *name;                          /* owned, NUL-terminated */
    const char *dtype;                   /* the file's name for it ("BF16"), static */
    bool supported;                      /* F32, F16 or BF16: type is valid */
    inf_dtype type;
    size_t elem_bytes;                   /* bytes per element (F8 types: 1; BOOL: 1) */
    uint32_t n_dims;                     /* 0 for a scalar */
    uint64_t shape[SAFETENSORS_MAX_DIMS]; /* slowest-varying first (row-major, PyTorch's order) */
    uint64_t n_elems;
    uint64_t begin, end;                 /* data_offsets, relative to the data section */
    const void *data;                    /* NULL when opened metadata-only */
} safetensors_tensor;

typedef struct safetensors_file {
    char *path;
    uint64_t file_bytes;
    uint64_t header_bytes; /* N */
    uint64_t data_offset;  /* 8 + N */
    uint64_t data_bytes;   /* file_bytes - data_offset */
    size_t n_tensors;
    safetensors_tensor *tensors; /* in header order */
    /* storage behind tensor data */
    void *map;
    size_t map_bytes;
    int map_fd;   /* the mapped file, kept open for pread; only with map */
    void *buffer; /* 64-byte aligned copy of the data section */
} safetensors_file;

typedef enum safetensors_open_mode {
    SAFETENSORS_OPEN_MMAP = 0,          /* map the file; data points into the mapping */
    SAFETENSORS_OPEN_READ = 1,          /* read the data section into anonymous memory */
    SAFETENSORS_OPEN_METADATA_ONLY = 2, /* header only; data is NULL */
} safetensors_open_mode;

/* progress (NULL: none) gets the fraction of the data section read so far
 * in READ mode, every 64 MiB. */
inf_status safetensors_open(const char *path, safetensors_open_mode mode,
                            void (*progress)(double fraction, void *user), void *progress_user,
                            safetensors_file **out, inf_error *err);
void safetensors_close(safetensors_file *f);

const safetensors_tensor *safetensors_find(const safetensors_file *f, const char *name);

#endif /* INF_SAFETENSORS_H */

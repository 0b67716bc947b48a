/*
 * gguf.h — GGUF v2/v3 reader and writer.
 *
 * Reader: parses the header, every metadata value (nested arrays included),
 * and the tensor infos; every count, length, offset and size from the file
 * is checked (overflow-safe) before it is used. Tensor data is either
 * mmap'ed or read into anonymous memory. Only tensor types the engine loads
 * (F32, F16, BF16, Q8_0 and the block types of core/quant.h) are accepted;
 * any other is an error naming the tensor and the type.
 *
 * Writer: builds metadata and tensors in memory and writes a file through
 * a temporary name + rename, so a failure never leaves a partial file.
 */
#ifndef INF_GGUF_H
#define INF_GGUF_H

#include "inferno.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
} gguf_type;

const char *gguf_type_name(gguf_type type);

typedef struct gguf_string {
    uint64_t len;
    char *data; /* owned, NUL-terminated (may contain inner NULs) */
} gguf_string;

typedef struct gguf_value gguf_value;
struct gguf_value {
    gguf_type type;
    union {
        uint64_t u64;  /* UINT8/16/32/64 */
        int64_t i64;   /* INT8/16/32/64 */
        double f64;    /* FLOAT32/64 */
        bool b;        /* BOOL */
        gguf_string str;
        struct {
            gguf_type elem_type;
            uint64_t n;
            /* elements: for numeric/bool element types a packed array in the
             * element's own width (uint8_t[], int32_t[], float[], ...);
             * for STRING gguf_string[]; for ARRAY gguf_value[] */
            void *data;
        } arr;
    };
};

typedef struct gguf_kv {
    gguf_string key;
    gguf_value value;
} gguf_kv;

typedef struct gguf_tensor {
    gguf_string name;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* fastest-varying first; unused dims are 1 */
    inf_dtype type;
    uint64_t offset;  /* relative to the data section */
    uint64_t nbytes;
    const void *data; /* NULL when opened with GGUF_OPEN_METADATA_ONLY */
} gguf_tensor;

typedef struct gguf_file {
    char *path;
    uint32_t version;
    uint64_t alignment;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t data_offset; /* file offset of the data section */
    uint64_t data_bytes;  /* bytes of tensor data (end of the last tensor) */
    /* the files it was read from: 1 (a split set's shards, a Hugging Face
     * directory's safetensors files), and their sizes together */
    int n_files;
    uint64_t file_bytes;
    /* storage behind tensor data */
    void *map;        /* mmap'ed whole file, or NULL */
    size_t map_bytes;
    int map_fd;       /* the mapped file, kept open for pread (gguf_data_source); only with map */
    void *buffer;     /* anonymous copy of the data section, or NULL */
    /* storage that another reader built the file over (a Hugging Face
     * directory's shards, model/hf_checkpoint.c), released by gguf_close
     * with storage_free(storage); NULL for a file gguf_open read.
     * storage_source (may be NULL): whether [p, p + n) lies in a file it
     * mapped, and where (gguf_split.h, gguf_data_source). */
    void (*storage_free)(void *storage);
    bool (*storage_source)(const void *storage, const void *p, size_t n, int *fd, uint64_t *offset);
    void *storage;
} gguf_file;

typedef enum gguf_open_mode {
    GGUF_OPEN_MMAP = 0,          /* map the file; tensor data points into it */
    GGUF_OPEN_READ = 1,          /* read the data section into anonymous memory */
    GGUF_OPEN_METADATA_ONLY = 2, /* header, metadata, tensor infos; no data */
} gguf_open_mode;

inf_status gguf_open(const char *path, gguf_open_mode mode, gguf_file **out, inf_error *err);
/* gguf_open that reports, for GGUF_OPEN_READ, the fraction of the data
 * section read so far to progress (NULL: none), every 64 MiB. */
inf_status gguf_open_progress(const char *path, gguf_open_mode mode, void (*progress)(double fraction, void *user),
                              void *progress_user, gguf_file **out, inf_error *err);
void gguf_close(gguf_file *f);
/* Frees one metadata entry's key and value (for code that edits kv[]). */
void gguf_kv_free(gguf_kv *kv);

/* Drops the metadata entry `key` (absent: nothing happens), freeing its
 * value: for a reader that has copied out what it needs. The entries after
 * it move down one place. */
void gguf_forget(gguf_file *f, const char *key);

const gguf_kv *gguf_find(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters. Each returns INF_ERR_FORMAT naming the file and key when
 * the key is missing (unless optional) or has a type that does not convert
 * (integers convert to other integer widths when the value fits). With
 * optional = true a missing key leaves *out untouched and returns INF_OK. */
inf_status gguf_get_int(const gguf_file *f, const char *key, bool optional, int64_t *out, inf_error *err);
inf_status gguf_get_float(const gguf_file *f, const char *key, bool optional, double *out, inf_error *err);
inf_status gguf_get_bool(const gguf_file *f, const char *key, bool optional, bool *out, inf_error *err);
inf_status gguf_get_string(const gguf_file *f, const char *key, bool optional, const gguf_string **out, inf_error *err);
/* Array of a given element type (GGUF_TYPE_ARRAY elements not accepted here). */
inf_status gguf_get_array(const gguf_file *f, const char *key, gguf_type elem_type, bool optional,
                          const void **data, uint64_t *n, inf_error *err);

/* ------------------------------------------------------------------ writer */

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void); /* NULL on allocation failure */
void gguf_writer_free(gguf_writer *w);

/* Setters copy their arguments. Setting a key twice replaces the value. */
void gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
void gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
void gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
void gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
void gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
void gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
/* Any value, including nested arrays (deep-copied). */
void gguf_writer_set_value(gguf_writer *w, const char *key, const gguf_value *v);
/* Array of numbers/bools packed in the element width. */
void gguf_writer_set_array(gguf_writer *w, const char *key, gguf_type elem_type, const void *data, uint64_t n);
void gguf_writer_set_str_array(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);

/* Adds a tensor; data is borrowed (not copied) and must stay valid until
 * gguf_writer_write returns. ne is fastest-varying first. */
void gguf_writer_add_tensor(gguf_writer *w, const char *name, inf_dtype type, uint32_t n_dims,
                            const uint64_t *ne, const void *data);

/* Writes version 3 to path via path + ".tmp" and rename. The alignment is
 * 32 unless the caller set general.alignment (a u32 power of two); like
 * llama.cpp's converter, the key is written only when set. Reports
 * allocation failures and invalid calls from the setters. */
inf_status gguf_writer_write(gguf_writer *w, const char *path, inf_error *err);

#endif /* INF_GGUF_H */

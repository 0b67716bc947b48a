/*
 * gguf.c — GGUF v2/v3 reader and writer (the contract is in gguf.h).
 *
 * Reader invariants:
 *   - every byte is read through one cursor that checks the read against the
 *     file size first, so a truncated file is an error, never an overrun;
 *   - every count and length from the file is compared with the bytes that
 *     remain before anything is allocated for it (each array element, key
 *     and tensor info needs a known minimum of bytes), so a corrupt file can
 *     make us allocate at most a small multiple of its own size;
 *   - metadata is parsed from the mapping in mmap mode and through a small
 *     pread() window otherwise, so reading into anonymous memory never maps
 *     the file (mapped reads are slow on the VMs this runs on, DESIGN.md);
 *   - the host is little-endian, as GGUF is (checked at compile time).
 *
 * Writer: metadata and tensor infos are serialized into memory, then the
 * header and the tensors (each padded with zeros to the alignment) are
 * written to PATH.tmp, which is renamed to PATH only when all went well.
 * general.alignment is written only if the caller set it, as llama.cpp's
 * converter does; the default alignment is 32.
 */
#include "io/gguf.h"

#include "core/common.h"
#include "core/dtype.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c reads and writes GGUF's little-endian layout in place: a little-endian host is required"
#endif

#define GGUF_MAX_ARRAY_DEPTH 16   /* arrays of arrays nested deeper are rejected */
#define GGUF_READ_WINDOW (1 << 16) /* bytes of the pread() window used to parse metadata */
#define GGUF_KV_MIN_BYTES 13       /* key length (8) + value type (4) + smallest value (1) */
#define GGUF_TENSOR_MIN_BYTES 32   /* name length (8) + n_dims (4) + one dim (8) + type (4) + offset (8) */

typedef unsigned long long ull; /* for printf of uint64_t */

const char *gguf_type_name(gguf_type type) {
    switch (type) {
    case GGUF_TYPE_UINT8: return "u8";
    case GGUF_TYPE_INT8: return "i8";
    case GGUF_TYPE_UINT16: return "u16";
    case GGUF_TYPE_INT16: return "i16";
    case GGUF_TYPE_UINT32: return "u32";
    case GGUF_TYPE_INT32: return "i32";
    case GGUF_TYPE_FLOAT32: return "f32";
    case GGUF_TYPE_BOOL: return "bool";
    case GGUF_TYPE_STRING: return "string";
    case GGUF_TYPE_ARRAY: return "array";
    case GGUF_TYPE_UINT64: return "u64";
    case GGUF_TYPE_INT64: return "i64";
    case GGUF_TYPE_FLOAT64: return "f64";
    }
    return "unknown";
}

static bool type_known(uint32_t t) { return t <= GGUF_TYPE_FLOAT64; }

/* Bytes of a scalar of this type in the file (0 for STRING and ARRAY). */
static size_t type_file_width(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    case GGUF_TYPE_STRING: case GGUF_TYPE_ARRAY: return 0;
    }
    return 0;
}

/* Fewest bytes one array element of this type takes in the file. */
static uint64_t type_min_file_bytes(gguf_type t) {
    if (t == GGUF_TYPE_STRING) return 8;      /* length */
    if (t == GGUF_TYPE_ARRAY) return 12;      /* element type + count */
    return type_file_width(t);
}

/* Bytes of one array element in memory (see gguf_value.arr.data). */
static size_t type_mem_width(gguf_type t) {
    if (t == GGUF_TYPE_STRING) return sizeof(gguf_string);
    if (t == GGUF_TYPE_ARRAY) return sizeof(gguf_value);
    if (t == GGUF_TYPE_BOOL) return sizeof(bool);
    return type_file_width(t);
}

static bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* ------------------------------------------------------------------ values */

static void value_free(gguf_value *v) {
    if (v->type == GGUF_TYPE_STRING) {
        free(v->str.data);
    } else if (v->type == GGUF_TYPE_ARRAY) {
        if (v->arr.elem_type == GGUF_TYPE_STRING) {
            gguf_string *s = v->arr.data;
            for (uint64_t i = 0; i < v->arr.n; i++) free(s[i].data);
        } else if (v->arr.elem_type == GGUF_TYPE_ARRAY) {
            gguf_value *e = v->arr.data;
            for (uint64_t i = 0; i < v->arr.n; i++) value_free(&e[i]);
        }
        free(v->arr.data);
    }
    memset(v, 0, sizeof *v);
}

static bool string_copy(gguf_string *dst, const char *src, uint64_t len) {
    dst->data = malloc((size_t)len + 1);
    if (!dst->data) { dst->len = 0; return false; }
    if (len) memcpy(dst->data, src, (size_t)len);
    dst->data[len] = 0;
    dst->len = len;
    return true;
}

/* Deep copy; on failure dst is left freeable (partially filled) and false returned. */
static bool value_copy(gguf_value *dst, const gguf_value *src) {
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    if (src->type == GGUF_TYPE_STRING) return string_copy(&dst->str, src->str.data, src->str.len);
    if (src->type != GGUF_TYPE_ARRAY) {
        *dst = *src;
        return true;
    }
    dst->arr.elem_type = src->arr.elem_type;
    if (src->arr.n == 0) return true;
    size_t bytes;
    if (!inf_mul_size((size_t)src->arr.n, type_mem_width(src->arr.elem_type), &bytes)) return false;
    void *data = calloc(1, bytes);
    if (!data) return false;
    dst->arr.data = data;
    if (src->arr.elem_type == GGUF_TYPE_STRING) {
        const gguf_string *s = src->arr.data;
        gguf_string *d = data;
        for (uint64_t i = 0; i < src->arr.n; i++, dst->arr.n++)
            if (!string_copy(&d[i], s[i].data, s[i].len)) return false;
    } else if (src->arr.elem_type == GGUF_TYPE_ARRAY) {
        const gguf_value *s = src->arr.data;
        gguf_value *d = data;
        for (uint64_t i = 0; i < src->arr.n; i++) {
            dst->arr.n++;
            if (!value_copy(&d[i], &s[i])) return false;
        }
    } else {
        memcpy(data, src->arr.data, bytes);
        dst->arr.n = src->arr.n;
    }
    return true;
}

/* ------------------------------------------------------------------ reader: cursor */

typedef struct cursor {
    const char *path;
    int fd;
    uint64_t size;       /* file size */
    uint64_t pos;        /* file offset of the next byte */
    const uint8_t *map;  /* the whole file when mapped, else NULL */
    uint8_t *window;     /* pread() window when not mapped: file bytes [window_off, window_off + window_len) */
    uint64_t window_off;
    size_t window_len;
    char what[160];      /* what is being read, for error messages */
    inf_error *err;
    void (*progress)(double fraction, void *user); /* data section read so far; may be NULL */
    void *progress_user;
} cursor;

static uint64_t cur_left(const cursor *c) { return c->size - c->pos; }

static inf_status cur_truncated(cursor *c, uint64_t need) {
    return inf_errorf(c->err, INF_ERR_FORMAT,
                      "%s: truncated: %s needs %llu bytes at offset %llu but the file is %llu bytes",
                      c->path, c->what, (ull)need, (ull)c->pos, (ull)c->size);
}

static inf_status cur_read(cursor *c, void *dst, uint64_t n) {
    if (n > cur_left(c)) return cur_truncated(c, n);
    if (c->map) {
        memcpy(dst, c->map + c->pos, (size_t)n);
        c->pos += n;
        return INF_OK;
    }
    uint8_t *out = dst;
    while (n > 0) {
        if (c->pos < c->window_off || c->pos >= c->window_off + c->window_len) {
            ssize_t got;
            do got = pread(c->fd, c->window, GGUF_READ_WINDOW, (off_t)c->pos);
            while (got < 0 && errno == EINTR);
            if (got <= 0)
                return inf_errorf(c->err, INF_ERR_IO, "%s: read failed at offset %llu: %s", c->path,
                                  (ull)c->pos, got < 0 ? strerror(errno) : "file shrank while reading");
            c->window_off = c->pos;
            c->window_len = (size_t)got;
        }
        size_t at = (size_t)(c->pos - c->window_off);
        size_t take = (size_t)INF_MIN((uint64_t)(c->window_len - at), n);
        memcpy(out, c->window + at, take);
        out += take;
        c->pos += take;
        n -= take;
    }
    return INF_OK;
}

static inf_status cur_u32(cursor *c, uint32_t *v) { return cur_read(c, v, 4); }
static inf_status cur_u64(cursor *c, uint64_t *v) { return cur_read(c, v, 8); }

/* Reads a length-prefixed string; the length is checked against the bytes left first. */
static inf_status cur_string(cursor *c, gguf_string *s) {
    uint64_t len;
    inf_status st = cur_u64(c, &len);
    if (st) return st;
    if (len > cur_left(c))
        return inf_errorf(c->err, INF_ERR_FORMAT,
                          "%s: %s: string length %llu at offset %llu exceeds the %llu bytes left in the file",
                          c->path, c->what, (ull)len, (ull)(c->pos - 8), (ull)cur_left(c));
    s->data = malloc((size_t)len + 1);
    if (!s->data) return inf_errorf(c->err, INF_ERR_NOMEM, "%s: out of memory reading %s", c->path, c->what);
    s->len = len;
    s->data[len] = 0;
    return cur_read(c, s->data, len);
}

/* A key or tensor name: a string without inner NULs (it is looked up with strcmp). */
static inf_status cur_name(cursor *c, gguf_string *s) {
    uint64_t at = c->pos;
    inf_status st = cur_string(c, s);
    if (st) return st;
    if (strlen(s->data) != s->len)
        return inf_errorf(c->err, INF_ERR_FORMAT, "%s: %s at offset %llu contains a NUL byte", c->path,
                          c->what, (ull)at);
    return INF_OK;
}

static void scalar_decode(gguf_type t, const uint8_t *b, gguf_value *v) {
    switch (t) {
    case GGUF_TYPE_UINT8: v->u64 = b[0]; break;
    case GGUF_TYPE_INT8: v->i64 = (int8_t)b[0]; break;
    case GGUF_TYPE_UINT16: { uint16_t x; memcpy(&x, b, 2); v->u64 = x; break; }
    case GGUF_TYPE_INT16: { int16_t x; memcpy(&x, b, 2); v->i64 = x; break; }
    case GGUF_TYPE_UINT32: { uint32_t x; memcpy(&x, b, 4); v->u64 = x; break; }
    case GGUF_TYPE_INT32: { int32_t x; memcpy(&x, b, 4); v->i64 = x; break; }
    case GGUF_TYPE_FLOAT32: { float x; memcpy(&x, b, 4); v->f64 = x; break; }
    case GGUF_TYPE_BOOL: v->b = b[0] != 0; break;
    case GGUF_TYPE_UINT64: memcpy(&v->u64, b, 8); break;
    case GGUF_TYPE_INT64: memcpy(&v->i64, b, 8); break;
    case GGUF_TYPE_FLOAT64: memcpy(&v->f64, b, 8); break;
    case GGUF_TYPE_STRING: case GGUF_TYPE_ARRAY: break;
    }
}

/* Reads a value of a known type. On failure *v is left freeable. */
static inf_status cur_value(cursor *c, gguf_type type, gguf_value *v, int depth) {
    memset(v, 0, sizeof *v);
    v->type = type;
    if (type == GGUF_TYPE_STRING) return cur_string(c, &v->str);
    if (type != GGUF_TYPE_ARRAY) {
        uint8_t b[8];
        inf_status st = cur_read(c, b, type_file_width(type));
        if (!st) scalar_decode(type, b, v);
        return st;
    }

    uint64_t at = c->pos;
    uint32_t elem_type;
    uint64_t n;
    inf_status st = cur_u32(c, &elem_type);
    if (!st) st = cur_u64(c, &n);
    if (st) return st;
    if (!type_known(elem_type))
        return inf_errorf(c->err, INF_ERR_FORMAT, "%s: %s: array at offset %llu has unknown element type %u",
                          c->path, c->what, (ull)at, elem_type);
    if (elem_type == GGUF_TYPE_ARRAY && depth + 1 >= GGUF_MAX_ARRAY_DEPTH)
        return inf_errorf(c->err, INF_ERR_FORMAT, "%s: %s: arrays nested deeper than %d levels at offset %llu",
                          c->path, c->what, GGUF_MAX_ARRAY_DEPTH, (ull)at);
    if (n > cur_left(c) / type_min_file_bytes(elem_type))
        return inf_errorf(c->err, INF_ERR_FORMAT,
                          "%s: %s: array count %llu of %s at offset %llu cannot fit in the %llu bytes left",
                          c->path, c->what, (ull)n, gguf_type_name(elem_type), (ull)at, (ull)cur_left(c));
    v->arr.elem_type = elem_type;
    if (n == 0) return INF_OK;

    /* n * minimum file width <= bytes left, and an element takes at most
     * 32 bytes in memory (a gguf_value for a 12-byte nested array header),
     * so this allocation is bounded by ~3x the file size */
    size_t bytes;
    void *data = NULL;
    if (inf_mul_size((size_t)n, type_mem_width(elem_type), &bytes)) data = calloc(1, bytes);
    if (!data) return inf_errorf(c->err, INF_ERR_NOMEM, "%s: out of memory reading %s", c->path, c->what);
    v->arr.data = data;
    if (elem_type == GGUF_TYPE_STRING) {
        gguf_string *s = data;
        for (uint64_t i = 0; i < n; i++) {
            v->arr.n = i + 1;
            if ((st = cur_string(c, &s[i]))) return st;
        }
    } else if (elem_type == GGUF_TYPE_ARRAY) {
        gguf_value *e = data;
        for (uint64_t i = 0; i < n; i++) {
            v->arr.n = i + 1;
            if ((st = cur_value(c, GGUF_TYPE_ARRAY, &e[i], depth + 1))) return st;
        }
    } else {
        v->arr.n = n;
        if ((st = cur_read(c, data, n * type_file_width(elem_type)))) return st;
        if (elem_type == GGUF_TYPE_BOOL) { /* any nonzero byte is true; store only 0/1 in bool */
            uint8_t *b = data;
            for (uint64_t i = 0; i < n; i++) b[i] = b[i] != 0;
        }
    }
    return INF_OK;
}

/* ------------------------------------------------------------------ reader: file */

void gguf_kv_free(gguf_kv *kv) {
    free(kv->key.data);
    kv->key = (gguf_string){0};
    value_free(&kv->value);
}

static void file_free(gguf_file *f) {
    if (!f) return;
    for (uint64_t i = 0; i < f->n_kv; i++) gguf_kv_free(&f->kv[i]);
    free(f->kv);
    for (uint64_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name.data);
    free(f->tensors);
    if (f->map) {
        munmap(f->map, f->map_bytes);
        close(f->map_fd);
    }
    inf_free_aligned(f->buffer);
    if (f->storage_free) f->storage_free(f->storage);
    free(f->path);
    free(f);
}

void gguf_close(gguf_file *f) { file_free(f); }

/* Returns a name that occurs twice in names[0..n), or NULL (sorts a copy of the pointers). */
static int name_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}
static const char *find_duplicate(const char **names, size_t n) {
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(names[i - 1], names[i])) return names[i];
    return NULL;
}

static inf_status check_duplicates(const char *path, const char *kind, const gguf_string *first, size_t stride,
                                   size_t n, inf_error *err) {
    if (n < 2) return INF_OK;
    const char **names = malloc(n * sizeof *names);
    if (!names) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory checking %s names", path, kind);
    for (size_t i = 0; i < n; i++)
        names[i] = ((const gguf_string *)((const char *)first + i * stride))->data;
    const char *dup = find_duplicate(names, n);
    inf_status st = INF_OK;
    if (dup) st = inf_errorf(err, INF_ERR_FORMAT, "%s: duplicate %s '%s'", path, kind, dup);
    free(names);
    return st;
}

static inf_status read_header(cursor *c, gguf_file *f) {
    char magic[4];
    snprintf(c->what, sizeof c->what, "the header");
    inf_status st = cur_read(c, magic, 4);
    if (st) return st;
    if (memcmp(magic, GGUF_MAGIC, 4) != 0)
        return inf_errorf(c->err, INF_ERR_FORMAT,
                          "%s: not a GGUF file (magic bytes %02x %02x %02x %02x, expected 'GGUF')", c->path,
                          (uint8_t)magic[0], (uint8_t)magic[1], (uint8_t)magic[2], (uint8_t)magic[3]);
    if ((st = cur_u32(c, &f->version))) return st;
    if (f->version == 1)
        return inf_errorf(c->err, INF_ERR_UNSUPPORTED,
                          "%s: GGUF version 1 is not supported (it predates 64-bit counts); re-convert the model "
                          "with a current llama.cpp", c->path);
    if (f->version != 2 && f->version != 3) {
        if (__builtin_bswap32(f->version) >= 1 && __builtin_bswap32(f->version) <= 3)
            return inf_errorf(c->err, INF_ERR_UNSUPPORTED, "%s: big-endian GGUF files are not supported",
                              c->path);
        return inf_errorf(c->err, INF_ERR_UNSUPPORTED,
                          "%s: GGUF version %u is not supported (inferno reads versions 2 and 3)", c->path,
                          f->version);
    }
    uint64_t n_tensors, n_kv;
    if ((st = cur_u64(c, &n_tensors)) || (st = cur_u64(c, &n_kv))) return st;
    if (n_kv > cur_left(c) / GGUF_KV_MIN_BYTES)
        return inf_errorf(c->err, INF_ERR_FORMAT, "%s: metadata count %llu cannot fit in the %llu bytes left",
                          c->path, (ull)n_kv, (ull)cur_left(c));
    if (n_tensors > cur_left(c) / GGUF_TENSOR_MIN_BYTES)
        return inf_errorf(c->err, INF_ERR_FORMAT, "%s: tensor count %llu cannot fit in the %llu bytes left",
                          c->path, (ull)n_tensors, (ull)cur_left(c));
    f->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *f->kv);
    f->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors) return inf_errorf(c->err, INF_ERR_NOMEM, "%s: out of memory", c->path);

    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        f->n_kv = i + 1; /* so that a failure below frees this entry */
        snprintf(c->what, sizeof c->what, "the key of metadata entry %llu", (ull)i);
        if ((st = cur_name(c, &kv->key))) return st;
        snprintf(c->what, sizeof c->what, "metadata key '%.100s'", kv->key.data);
        uint64_t at = c->pos;
        uint32_t type;
        if ((st = cur_u32(c, &type))) return st;
        if (!type_known(type))
            return inf_errorf(c->err, INF_ERR_FORMAT, "%s: metadata key '%s' has unknown value type %u at offset %llu",
                              c->path, kv->key.data, type, (ull)at);
        if ((st = cur_value(c, (gguf_type)type, &kv->value, 0))) return st;
    }
    if ((st = check_duplicates(c->path, "metadata key", &f->kv[0].key, sizeof(gguf_kv), (size_t)f->n_kv, c->err)))
        return st;

    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *align = gguf_find(f, "general.alignment");
    if (align) {
        if (align->value.type != GGUF_TYPE_UINT32)
            return inf_errorf(c->err, INF_ERR_FORMAT, "%s: general.alignment has type %s, expected u32", c->path,
                              gguf_type_name(align->value.type));
        if (!is_pow2(align->value.u64))
            return inf_errorf(c->err, INF_ERR_FORMAT,
                              "%s: general.alignment is %llu, which is not a nonzero power of two", c->path,
                              (ull)align->value.u64);
        f->alignment = align->value.u64;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        f->n_tensors = i + 1;
        snprintf(c->what, sizeof c->what, "the name of tensor %llu", (ull)i);
        if ((st = cur_name(c, &t->name))) return st;
        snprintf(c->what, sizeof c->what, "the info of tensor '%.100s'", t->name.data);
        const char *name = t->name.data;
        if ((st = cur_u32(c, &t->n_dims))) return st;
        if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
            return inf_errorf(c->err, INF_ERR_FORMAT, "%s: tensor '%s' has %u dimensions (must be 1 to %d)",
                              c->path, name, t->n_dims, GGUF_MAX_DIMS);
        uint64_t n_elems = 1;
        for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            if ((st = cur_u64(c, &t->ne[d]))) return st;
            if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
                return inf_errorf(c->err, INF_ERR_FORMAT, "%s: tensor '%s' has dimension %u of size %llu", c->path,
                                  name, d, (ull)t->ne[d]);
            if (!inf_mul_u64(n_elems, t->ne[d], &n_elems) || n_elems > (uint64_t)INT64_MAX)
                return inf_errorf(c->err, INF_ERR_FORMAT, "%s: tensor '%s' element count overflows", c->path, name);
        }
        uint32_t type;
        if ((st = cur_u32(c, &type)) || (st = cur_u64(c, &t->offset))) return st;
        if (!inf_dtype_supported(type)) {
            const char *tn = inf_ggml_type_name(type);
            if (!strcmp(tn, "unknown type"))
                return inf_errorf(c->err, INF_ERR_FORMAT, "%s: tensor '%s' has unknown type id %u", c->path, name,
                                  type);
            return inf_errorf(c->err, INF_ERR_UNSUPPORTED,
                              "%s: tensor '%s' has type %s, which inferno does not load (supported: f32, f16, "
                              "bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k..q6_k, iq4_xs)",
                              c->path, name, tn);
        }
        t->type = (inf_dtype)type;
        uint64_t row_bytes;
        if (t->ne[0] % (uint64_t)inf_dtype_block_elems(t->type) != 0)
            return inf_errorf(c->err, INF_ERR_FORMAT,
                              "%s: tensor '%s' of type %s has rows of %llu elements, not a multiple of %lld",
                              c->path, name, inf_dtype_name(t->type), (ull)t->ne[0],
                              (long long)inf_dtype_block_elems(t->type));
        if (!inf_dtype_row_bytes(t->type, t->ne[0], &row_bytes) || !inf_mul_u64(row_bytes, n_elems / t->ne[0], &t->nbytes))
            return inf_errorf(c->err, INF_ERR_FORMAT, "%s: tensor '%s' byte size overflows", c->path, name);
        if (t->offset % f->alignment != 0)
            return inf_errorf(c->err, INF_ERR_FORMAT,
                              "%s: tensor '%s' offset %llu is not a multiple of the alignment %llu", c->path, name,
                              (ull)t->offset, (ull)f->alignment);
    }
    if ((st = check_duplicates(c->path, "tensor name", &f->tensors[0].name, sizeof(gguf_tensor),
                               (size_t)f->n_tensors, c->err)))
        return st;

    /* the data section starts at the next multiple of the alignment */
    uint64_t pad = (f->alignment - c->pos % f->alignment) % f->alignment;
    if (!inf_add_u64(c->pos, pad, &f->data_offset))
        return inf_errorf(c->err, INF_ERR_FORMAT, "%s: data offset overflows", c->path);
    uint64_t section = f->data_offset <= c->size ? c->size - f->data_offset : 0;
    f->data_bytes = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->offset > section || t->nbytes > section - t->offset)
            return inf_errorf(c->err, INF_ERR_FORMAT,
                              "%s: tensor '%s' data (offset %llu, %llu bytes) lies past the end of the data "
                              "section (%llu bytes from file offset %llu)", c->path, t->name.data, (ull)t->offset,
                              (ull)t->nbytes, (ull)section, (ull)f->data_offset);
        f->data_bytes = INF_MAX(f->data_bytes, t->offset + t->nbytes);
    }
    return INF_OK;
}

/* Reads the data section into one 64-byte aligned anonymous buffer. */
static inf_status read_data(cursor *c, gguf_file *f) {
    if (f->data_bytes == 0) return INF_OK;
    if (f->data_bytes > SIZE_MAX)
        return inf_errorf(c->err, INF_ERR_NOMEM, "%s: %llu bytes of tensor data do not fit in memory", c->path,
                          (ull)f->data_bytes);
    size_t bytes = (size_t)f->data_bytes;
    f->buffer = inf_alloc_aligned(bytes);
    if (!f->buffer)
        return inf_errorf(c->err, INF_ERR_NOMEM, "%s: cannot allocate %llu bytes for tensor data", c->path,
                          (ull)f->data_bytes);
    /* fewer page faults while filling and fewer TLB misses in the matmuls (1-3% decode speed) */
    inf_advise_huge(f->buffer, bytes);
    posix_fadvise(c->fd, (off_t)f->data_offset, (off_t)bytes, POSIX_FADV_SEQUENTIAL);
    size_t fail_at = 0;
    const int failed =
        inf_pread_parallel(c->fd, f->data_offset, f->buffer, bytes, c->progress, c->progress_user, &fail_at);
    if (failed)
        return inf_errorf(c->err, INF_ERR_IO, "%s: reading tensor data at offset %llu failed: %s", c->path,
                          (ull)(f->data_offset + fail_at), failed < 0 ? "file shrank" : strerror(failed));
    return INF_OK;
}

inf_status gguf_open(const char *path, gguf_open_mode mode, gguf_file **out, inf_error *err) {
    return gguf_open_progress(path, mode, NULL, NULL, out, err);
}

inf_status gguf_open_progress(const char *path, gguf_open_mode mode, void (*progress)(double fraction, void *user),
                              void *progress_user, gguf_file **out, inf_error *err) {
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    cursor c = {.path = path, .fd = -1, .err = err, .progress = progress, .progress_user = progress_user};
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
    }
    inf_status st = INF_OK;
    c.fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (c.fd < 0) {
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto done;
    }
    if (fstat(c.fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = inf_errorf(err, INF_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    c.size = (uint64_t)sb.st_size;
    f->n_files = 1;
    f->file_bytes = c.size;
    if (mode == GGUF_OPEN_MMAP && c.size > 0) {
        if (c.size > SIZE_MAX) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: file too large to map", path);
            goto done;
        }
        void *map = mmap(NULL, (size_t)c.size, PROT_READ, MAP_PRIVATE, c.fd, 0);
        if (map == MAP_FAILED) {
            st = inf_errorf(err, INF_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
            goto done;
        }
        f->map = map;
        f->map_bytes = (size_t)c.size;
        f->map_fd = c.fd; /* the file's now: closed with the mapping */
        c.map = map;
    } else {
        c.window = malloc(GGUF_READ_WINDOW);
        if (!c.window) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
    }
    if ((st = read_header(&c, f))) goto done;
    if (mode == GGUF_OPEN_MMAP) {
        /* the header is copied out (keys, values, tensor infos): its pages
         * go (a Qwen3 vocabulary and merges: ~6 MB) */
        inf_release_pages(c.map, (size_t)f->data_offset);
        for (uint64_t i = 0; i < f->n_tensors; i++)
            f->tensors[i].data = c.map + f->data_offset + f->tensors[i].offset;
    } else if (mode == GGUF_OPEN_READ) {
        if ((st = read_data(&c, f))) goto done;
        for (uint64_t i = 0; i < f->n_tensors; i++)
            f->tensors[i].data = (const uint8_t *)f->buffer + f->tensors[i].offset;
    }
done:
    free(c.window);
    if (c.fd >= 0 && !f->map) close(c.fd); /* else f's (map_fd) */
    if (st) {
        file_free(f);
        return st;
    }
    *out = f;
    return INF_OK;
}

void gguf_forget(gguf_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (!strcmp(f->kv[i].key.data, key)) {
            gguf_kv_free(&f->kv[i]);
            memmove(&f->kv[i], &f->kv[i + 1], (size_t)(f->n_kv - i - 1) * sizeof *f->kv);
            f->n_kv--;
            return;
        }
}

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (!strcmp(f->kv[i].key.data, key)) return &f->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i].name.data, name)) return &f->tensors[i];
    return NULL;
}

/* ------------------------------------------------------------------ typed getters */

/* The value of key, NULL with *st set when missing (INF_OK if optional). */
static const gguf_value *get_value(const gguf_file *f, const char *key, bool optional, inf_status *st,
                                   inf_error *err) {
    const gguf_kv *kv = gguf_find(f, key);
    *st = INF_OK;
    if (!kv && !optional) *st = inf_errorf(err, INF_ERR_FORMAT, "%s: missing metadata key '%s'", f->path, key);
    return kv ? &kv->value : NULL;
}

static inf_status wrong_type(const gguf_file *f, const char *key, const gguf_value *v, const char *expected,
                             inf_error *err) {
    return inf_errorf(err, INF_ERR_FORMAT, "%s: metadata key '%s' has type %s, expected %s", f->path, key,
                      gguf_type_name(v->type), expected);
}

inf_status gguf_get_int(const gguf_file *f, const char *key, bool optional, int64_t *out, inf_error *err) {
    inf_status st;
    const gguf_value *v = get_value(f, key, optional, &st, err);
    if (!v) return st;
    switch (v->type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_UINT16: case GGUF_TYPE_UINT32: case GGUF_TYPE_UINT64:
        if (v->u64 > (uint64_t)INT64_MAX)
            return inf_errorf(err, INF_ERR_FORMAT, "%s: metadata key '%s' value %llu is out of range", f->path, key,
                              (ull)v->u64);
        *out = (int64_t)v->u64;
        return INF_OK;
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64:
        *out = v->i64;
        return INF_OK;
    default: return wrong_type(f, key, v, "an integer", err);
    }
}

inf_status gguf_get_float(const gguf_file *f, const char *key, bool optional, double *out, inf_error *err) {
    inf_status st;
    const gguf_value *v = get_value(f, key, optional, &st, err);
    if (!v) return st;
    if (v->type != GGUF_TYPE_FLOAT32 && v->type != GGUF_TYPE_FLOAT64) return wrong_type(f, key, v, "f32 or f64", err);
    *out = v->f64;
    return INF_OK;
}

inf_status gguf_get_bool(const gguf_file *f, const char *key, bool optional, bool *out, inf_error *err) {
    inf_status st;
    const gguf_value *v = get_value(f, key, optional, &st, err);
    if (!v) return st;
    if (v->type != GGUF_TYPE_BOOL) return wrong_type(f, key, v, "bool", err);
    *out = v->b;
    return INF_OK;
}

inf_status gguf_get_string(const gguf_file *f, const char *key, bool optional, const gguf_string **out,
                           inf_error *err) {
    inf_status st;
    const gguf_value *v = get_value(f, key, optional, &st, err);
    if (!v) return st;
    if (v->type != GGUF_TYPE_STRING) return wrong_type(f, key, v, "string", err);
    *out = &v->str;
    return INF_OK;
}

inf_status gguf_get_array(const gguf_file *f, const char *key, gguf_type elem_type, bool optional,
                          const void **data, uint64_t *n, inf_error *err) {
    if (elem_type == GGUF_TYPE_ARRAY)
        return inf_errorf(err, INF_ERR_INVALID, "gguf_get_array: nested arrays are read through gguf_find");
    inf_status st;
    const gguf_value *v = get_value(f, key, optional, &st, err);
    if (!v) return st;
    if (v->type != GGUF_TYPE_ARRAY || v->arr.elem_type != elem_type)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: metadata key '%s' has type %s%s%s, expected array of %s",
                          f->path, key, gguf_type_name(v->type), v->type == GGUF_TYPE_ARRAY ? " of " : "",
                          v->type == GGUF_TYPE_ARRAY ? gguf_type_name(v->arr.elem_type) : "",
                          gguf_type_name(elem_type));
    *data = v->arr.data;
    *n = v->arr.n;
    return INF_OK;
}

/* ------------------------------------------------------------------ writer */

typedef struct writer_tensor {
    char *name;
    inf_dtype type;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS];
    const void *data; /* borrowed */
} writer_tensor;

struct gguf_writer {
    gguf_kv *kv;
    size_t n_kv, cap_kv;
    writer_tensor *tensors;
    size_t n_tensors, cap_tensors;
    bool oom;                /* a setter failed to allocate */
    char misuse[160];        /* first invalid setter call, reported by gguf_writer_write */
};

gguf_writer *gguf_writer_new(void) { return calloc(1, sizeof(gguf_writer)); }

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key.data);
        value_free(&w->kv[i].value);
    }
    free(w->kv);
    for (size_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    free(w);
}

static bool grow(void **items, size_t *cap, size_t n, size_t item_bytes) {
    if (n < *cap) return true;
    size_t new_cap = *cap ? 2 * *cap : 16, bytes;
    if (!inf_mul_size(new_cap, item_bytes, &bytes)) return false;
    void *p = realloc(*items, bytes);
    if (!p) return false;
    *items = p;
    *cap = new_cap;
    return true;
}

/* Stores value (ownership moves to the writer) under key, replacing an
 * existing entry in place so that key order stays that of first setting. */
static void writer_put(gguf_writer *w, const char *key, gguf_value *value) {
    for (size_t i = 0; i < w->n_kv; i++) {
        if (!strcmp(w->kv[i].key.data, key)) {
            value_free(&w->kv[i].value);
            w->kv[i].value = *value;
            return;
        }
    }
    gguf_kv kv = {0};
    if (!grow((void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv) || !string_copy(&kv.key, key, strlen(key))) {
        value_free(value);
        w->oom = true;
        return;
    }
    kv.value = *value;
    w->kv[w->n_kv++] = kv;
}

static void writer_put_scalar(gguf_writer *w, const char *key, gguf_value v) { writer_put(w, key, &v); }

void gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v) {
    writer_put_scalar(w, key, (gguf_value){.type = GGUF_TYPE_UINT32, .u64 = v});
}
void gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v) {
    writer_put_scalar(w, key, (gguf_value){.type = GGUF_TYPE_INT32, .i64 = v});
}
void gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v) {
    writer_put_scalar(w, key, (gguf_value){.type = GGUF_TYPE_UINT64, .u64 = v});
}
void gguf_writer_set_f32(gguf_writer *w, const char *key, float v) {
    writer_put_scalar(w, key, (gguf_value){.type = GGUF_TYPE_FLOAT32, .f64 = v});
}
void gguf_writer_set_bool(gguf_writer *w, const char *key, bool v) {
    writer_put_scalar(w, key, (gguf_value){.type = GGUF_TYPE_BOOL, .b = v});
}

void gguf_writer_set_str(gguf_writer *w, const char *key, const char *v) {
    gguf_value val = {.type = GGUF_TYPE_STRING};
    if (!string_copy(&val.str, v, strlen(v))) { w->oom = true; return; }
    writer_put(w, key, &val);
}

void gguf_writer_set_value(gguf_writer *w, const char *key, const gguf_value *v) {
    gguf_value val;
    if (!value_copy(&val, v)) {
        value_free(&val);
        w->oom = true;
        return;
    }
    writer_put(w, key, &val);
}

void gguf_writer_set_array(gguf_writer *w, const char *key, gguf_type elem_type, const void *data, uint64_t n) {
    if (!type_known(elem_type) || elem_type == GGUF_TYPE_STRING || elem_type == GGUF_TYPE_ARRAY) {
        if (!w->misuse[0])
            snprintf(w->misuse, sizeof w->misuse, "gguf_writer_set_array('%.80s'): element type %s is not a number "
                     "or bool", key, gguf_type_name(elem_type));
        return;
    }
    gguf_value src = {.type = GGUF_TYPE_ARRAY, .arr = {.elem_type = elem_type, .n = n, .data = (void *)data}};
    gguf_writer_set_value(w, key, &src);
}

void gguf_writer_set_str_array(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    gguf_value val = {.type = GGUF_TYPE_ARRAY, .arr = {.elem_type = GGUF_TYPE_STRING}};
    if (n > 0) {
        gguf_string *s = calloc((size_t)n, sizeof *s);
        if (!s) { w->oom = true; return; }
        val.arr.data = s;
        for (uint64_t i = 0; i < n; i++, val.arr.n++) {
            if (!string_copy(&s[i], strs[i], strlen(strs[i]))) {
                value_free(&val);
                w->oom = true;
                return;
            }
        }
    }
    writer_put(w, key, &val);
}

void gguf_writer_add_tensor(gguf_writer *w, const char *name, inf_dtype type, uint32_t n_dims, const uint64_t *ne,
                            const void *data) {
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS) {
        if (!w->misuse[0])
            snprintf(w->misuse, sizeof w->misuse, "tensor '%.80s' has %u dimensions (must be 1 to %d)", name, n_dims,
                     GGUF_MAX_DIMS);
        return;
    }
    writer_tensor t = {.type = type, .n_dims = n_dims, .data = data};
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    if (!grow((void **)&w->tensors, &w->cap_tensors, w->n_tensors, sizeof *w->tensors) ||
        !(t.name = strdup(name))) {
        w->oom = true;
        return;
    }
    w->tensors[w->n_tensors++] = t;
}

/* The header is serialized into an inf_buf; its sticky failed flag is
 * checked once, after the last byte (writer_header). */
static void buf_u32(inf_buf *b, uint32_t v) { inf_buf_append(b, &v, 4); }
static void buf_u64(inf_buf *b, uint64_t v) { inf_buf_append(b, &v, 8); }
static void buf_str(inf_buf *b, const gguf_string *s) {
    buf_u64(b, s->len);
    inf_buf_append(b, s->data, (size_t)s->len);
}

/* Serializes a scalar; false when the value does not fit its type's width. */
static bool buf_scalar(inf_buf *b, gguf_type t, const gguf_value *v) {
    switch (t) {
    case GGUF_TYPE_UINT8: { uint8_t x = (uint8_t)v->u64; inf_buf_append(b, &x, 1); return v->u64 <= UINT8_MAX; }
    case GGUF_TYPE_INT8: { int8_t x = (int8_t)v->i64; inf_buf_append(b, &x, 1); return v->i64 >= INT8_MIN && v->i64 <= INT8_MAX; }
    case GGUF_TYPE_UINT16: { uint16_t x = (uint16_t)v->u64; inf_buf_append(b, &x, 2); return v->u64 <= UINT16_MAX; }
    case GGUF_TYPE_INT16: { int16_t x = (int16_t)v->i64; inf_buf_append(b, &x, 2); return v->i64 >= INT16_MIN && v->i64 <= INT16_MAX; }
    case GGUF_TYPE_UINT32: { uint32_t x = (uint32_t)v->u64; inf_buf_append(b, &x, 4); return v->u64 <= UINT32_MAX; }
    case GGUF_TYPE_INT32: { int32_t x = (int32_t)v->i64; inf_buf_append(b, &x, 4); return v->i64 >= INT32_MIN && v->i64 <= INT32_MAX; }
    case GGUF_TYPE_FLOAT32: { float x = (float)v->f64; inf_buf_append(b, &x, 4); return true; }
    case GGUF_TYPE_BOOL: { uint8_t x = v->b; inf_buf_append(b, &x, 1); return true; }
    case GGUF_TYPE_UINT64: inf_buf_append(b, &v->u64, 8); return true;
    case GGUF_TYPE_INT64: inf_buf_append(b, &v->i64, 8); return true;
    case GGUF_TYPE_FLOAT64: inf_buf_append(b, &v->f64, 8); return true;
    case GGUF_TYPE_STRING: case GGUF_TYPE_ARRAY: break;
    }
    return false;
}

static bool buf_value(inf_buf *b, const gguf_value *v) {
    if (v->type == GGUF_TYPE_STRING) {
        buf_str(b, &v->str);
        return true;
    }
    if (v->type != GGUF_TYPE_ARRAY) return type_known(v->type) && buf_scalar(b, v->type, v);
    if (!type_known(v->arr.elem_type)) return false;
    buf_u32(b, v->arr.elem_type);
    buf_u64(b, v->arr.n);
    if (v->arr.elem_type == GGUF_TYPE_STRING) {
        const gguf_string *s = v->arr.data;
        for (uint64_t i = 0; i < v->arr.n; i++) buf_str(b, &s[i]);
    } else if (v->arr.elem_type == GGUF_TYPE_ARRAY) {
        const gguf_value *e = v->arr.data;
        for (uint64_t i = 0; i < v->arr.n; i++)
            if (e[i].type != GGUF_TYPE_ARRAY || !buf_value(b, &e[i])) return false;
    } else if (v->arr.elem_type == GGUF_TYPE_BOOL) {
        const bool *e = v->arr.data;
        for (uint64_t i = 0; i < v->arr.n; i++) {
            uint8_t x = e[i];
            inf_buf_append(b, &x, 1);
        }
    } else if (v->arr.n > 0) {
        inf_buf_append(b, v->arr.data, (size_t)v->arr.n * type_file_width(v->arr.elem_type));
    }
    return true;
}

static inf_status write_all(int fd, const void *src, size_t n, const char *tmp, inf_error *err) {
    const uint8_t *p = src;
    while (n > 0) {
        ssize_t put = write(fd, p, INF_MIN(n, (size_t)1 << 30));
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return inf_errorf(err, INF_ERR_IO, "%s: write failed: %s", tmp, put < 0 ? strerror(errno) : "no progress");
        p += put;
        n -= (size_t)put;
    }
    return INF_OK;
}

static inf_status write_zeros(int fd, uint64_t n, const char *tmp, inf_error *err) {
    static const uint8_t zeros[4096];
    while (n > 0) {
        size_t k = (size_t)INF_MIN(n, (uint64_t)sizeof zeros);
        inf_status st = write_all(fd, zeros, k, tmp, err);
        if (st) return st;
        n -= k;
    }
    return INF_OK;
}

/* Serializes the header (through the padding before the data section) and
 * computes each tensor's padded size. */
static inf_status writer_header(gguf_writer *w, const char *path, uint64_t alignment, inf_buf *b,
                                uint64_t *tensor_bytes, inf_error *err) {
    const uint32_t version = 3;
    inf_buf_append(b, GGUF_MAGIC, 4);
    buf_u32(b, version);
    buf_u64(b, w->n_tensors);
    buf_u64(b, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        buf_str(b, &w->kv[i].key);
        buf_u32(b, w->kv[i].value.type);
        if (!buf_value(b, &w->kv[i].value))
            return inf_errorf(err, INF_ERR_INVALID, "%s: metadata key '%s': value does not fit its type %s", path,
                              w->kv[i].key.data, gguf_type_name(w->kv[i].value.type));
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const writer_tensor *t = &w->tensors[i];
        uint64_t n_rows = 1, row_bytes, bytes;
        for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
            if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX || (d > 0 && !inf_mul_u64(n_rows, t->ne[d], &n_rows)))
                return inf_errorf(err, INF_ERR_INVALID, "%s: tensor '%s' has an empty or oversized dimension %u",
                                  path, t->name, d);
        if (!inf_dtype_supported(t->type) || !inf_dtype_row_bytes(t->type, t->ne[0], &row_bytes) ||
            !inf_mul_u64(row_bytes, n_rows, &bytes))
            return inf_errorf(err, INF_ERR_INVALID, "%s: tensor '%s' of type %s cannot have rows of %llu elements",
                              path, t->name, inf_dtype_name(t->type), (ull)t->ne[0]);
        gguf_string name = {strlen(t->name), t->name};
        buf_str(b, &name);
        buf_u32(b, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) buf_u64(b, t->ne[d]);
        buf_u32(b, (uint32_t)t->type);
        buf_u64(b, offset);
        tensor_bytes[i] = bytes;
        uint64_t padded = bytes + (alignment - bytes % alignment) % alignment;
        if (padded < bytes || !inf_add_u64(offset, padded, &offset))
            return inf_errorf(err, INF_ERR_INVALID, "%s: tensor data exceeds 2^64 bytes", path);
    }
    static const uint8_t zeros[64];
    for (uint64_t pad = (alignment - b->len % alignment) % alignment; pad > 0;) {
        size_t k = (size_t)INF_MIN(pad, (uint64_t)sizeof zeros);
        inf_buf_append(b, zeros, k);
        pad -= k;
    }
    if (b->failed) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory serializing the header", path);
    return INF_OK;
}

inf_status gguf_writer_write(gguf_writer *w, const char *path, inf_error *err) {
    if (w->oom) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory while building the file", path);
    if (w->misuse[0]) return inf_errorf(err, INF_ERR_INVALID, "%s: %s", path, w->misuse);

    uint64_t alignment = GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key.data, "general.alignment") != 0) continue;
        const gguf_value *v = &w->kv[i].value;
        if (v->type != GGUF_TYPE_UINT32 || !is_pow2(v->u64) || v->u64 > UINT32_MAX)
            return inf_errorf(err, INF_ERR_INVALID, "%s: general.alignment must be a u32 power of two", path);
        alignment = v->u64;
    }
    inf_status st = INF_OK;
    const char **names = malloc((w->n_tensors ? w->n_tensors : 1) * sizeof *names);
    uint64_t *tensor_bytes = malloc((w->n_tensors ? w->n_tensors : 1) * sizeof *tensor_bytes);
    size_t tmp_len = strlen(path) + 5;
    char *tmp = malloc(tmp_len);
    inf_buf b = {0};
    int fd = -1;
    if (!names || !tensor_bytes || !tmp) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < w->n_tensors; i++) names[i] = w->tensors[i].name;
    const char *dup = find_duplicate(names, w->n_tensors);
    if (dup) {
        st = inf_errorf(err, INF_ERR_INVALID, "%s: tensor '%s' added twice", path, dup);
        goto done;
    }
    if ((st = writer_header(w, path, alignment, &b, tensor_bytes, err))) goto done;

    snprintf(tmp, tmp_len, "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        goto done;
    }
    st = write_all(fd, b.data, b.len, tmp, err);
    for (size_t i = 0; i < w->n_tensors && !st; i++) {
        st = write_all(fd, w->tensors[i].data, (size_t)tensor_bytes[i], tmp, err);
        if (!st) st = write_zeros(fd, (alignment - tensor_bytes[i] % alignment) % alignment, tmp, err);
    }
    if (close(fd) != 0 && !st) st = inf_errorf(err, INF_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    fd = -1;
    if (!st && rename(tmp, path) != 0)
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
    if (st) unlink(tmp);
done:
    free(b.data);
    free(tmp);
    free(tensor_bytes);
    free(names);
    return st;
}

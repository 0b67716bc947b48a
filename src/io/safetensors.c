/*
 * safetensors.c — the .safetensors reader (the contract and the list of
 * checks are in safetensors.h).
 *
 * Invariants: the header length is checked against the file size before
 * anything is read or allocated for it (so a corrupt file makes us
 * allocate at most its own header size); every number from the JSON is an
 * exact non-negative integer below 2^53 before it becomes a size; every
 * product and sum of sizes is overflow-checked; tensor data pointers are
 * set only after the tensors have been shown to tile the data section.
 * The host is little-endian, as the format is.
 */
#include "io/safetensors.h"

#include "core/common.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads the little-endian format in place: a little-endian host is required"
#endif

typedef unsigned long long ull;

#define MAX_EXACT 9007199254740992.0 /* 2^53: every integer below it is exact in a double */

/* The format's dtype names (huggingface/safetensors, Dtype) and element sizes. */
static const struct {
    const char *name;
    size_t bytes;
    bool supported;
    inf_dtype type;
} dtypes[] = {
    {"F32", 4, true, INF_DTYPE_F32},   {"F16", 2, true, INF_DTYPE_F16},    {"BF16", 2, true, INF_DTYPE_BF16},
    {"BOOL", 1, false, 0},             {"U8", 1, false, 0},                {"I8", 1, false, 0},
    {"F8_E5M2", 1, false, 0},          {"F8_E4M3", 1, false, 0},           {"F8_E8M0", 1, false, 0},
    {"I16", 2, false, 0},              {"U16", 2, false, 0},               {"I32", 4, false, 0},
    {"U32", 4, false, 0},              {"F64", 8, false, 0},               {"I64", 8, false, 0},
    {"U64", 8, false, 0},              {"C64", 8, false, 0},
};

void safetensors_close(safetensors_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    if (f->map) {
        munmap(f->map, f->map_bytes);
        close(f->map_fd);
    }
    inf_free_aligned(f->buffer);
    free(f->path);
    free(f);
}

const safetensors_tensor *safetensors_find(const safetensors_file *f, const char *name) {
    for (size_t i = 0; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

/* A JSON number that is an exact integer in [0, 2^53). */
static bool json_u64(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0) || d >= MAX_EXACT || d != (double)(uint64_t)d) return false;
    *out = (uint64_t)d;
    return true;
}

static inf_status parse_tensor(const char *path, const cJSON *item, uint64_t data_bytes, safetensors_tensor *t,
                               inf_error *err) {
    const char *name = item->string;
    if (!cJSON_IsObject(item))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s': expected an object", path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s': \"dtype\" is %s", path, name,
                          dtype ? "not a string" : "missing");
    size_t d = 0;
    while (d < sizeof dtypes / sizeof dtypes[0] && strcmp(dtypes[d].name, dtype->valuestring)) d++;
    if (d == sizeof dtypes / sizeof dtypes[0]) {
        bool sub_byte = !strcmp(dtype->valuestring, "F4") || !strncmp(dtype->valuestring, "F6_", 3);
        return inf_errorf(err, sub_byte ? INF_ERR_UNSUPPORTED : INF_ERR_FORMAT,
                          "%s: tensor '%.200s': %s dtype '%.32s'", path, name,
                          sub_byte ? "unsupported sub-byte" : "unknown", dtype->valuestring);
    }
    t->dtype = dtypes[d].name;
    t->supported = dtypes[d].supported;
    t->type = dtypes[d].type;
    t->elem_bytes = dtypes[d].bytes;

    if (!cJSON_IsArray(shape))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s': \"shape\" is %s", path, name,
                          shape ? "not a list" : "missing");
    int n_dims = cJSON_GetArraySize(shape);
    if (n_dims > SAFETENSORS_MAX_DIMS)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' has %d dimensions (at most %d)", path, name,
                          n_dims, SAFETENSORS_MAX_DIMS);
    t->n_dims = (uint32_t)n_dims;
    t->n_elems = 1;
    const cJSON *dim;
    int i = 0;
    cJSON_ArrayForEach(dim, shape) {
        if (!json_u64(dim, &t->shape[i]))
            return inf_errorf(err, INF_ERR_FORMAT,
                              "%s: tensor '%.200s': shape[%d] is not a non-negative integer", path, name, i);
        if (!inf_mul_u64(t->n_elems, t->shape[i], &t->n_elems))
            return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s': the element count overflows", path, name);
        i++;
    }

    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_u64(cJSON_GetArrayItem(offsets, 0), &t->begin) || !json_u64(cJSON_GetArrayItem(offsets, 1), &t->end))
        return inf_errorf(err, INF_ERR_FORMAT,
                          "%s: tensor '%.200s': \"data_offsets\" must be two non-negative integers", path, name);
    if (t->begin > t->end)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s': data_offsets [%llu, %llu] end before they begin",
                          path, name, (ull)t->begin, (ull)t->end);
    if (t->end > data_bytes)
        return inf_errorf(err, INF_ERR_FORMAT,
                          "%s: tensor '%.200s': data_offsets [%llu, %llu] lie past the end of the data (%llu bytes)",
                          path, name, (ull)t->begin, (ull)t->end, (ull)data_bytes);
    uint64_t bytes;
    if (!inf_mul_u64(t->n_elems, t->elem_bytes, &bytes))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s': the byte size overflows", path, name);
    if (bytes != t->end - t->begin)
        return inf_errorf(err, INF_ERR_FORMAT,
                          "%s: tensor '%.200s': %llu elements of %s are %llu bytes, but data_offsets span %llu",
                          path, name, (ull)t->n_elems, t->dtype, (ull)bytes, (ull)(t->end - t->begin));
    return INF_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const safetensors_tensor *)a)->name, ((const safetensors_tensor *)b)->name);
}

static int by_begin(const void *a, const void *b) {
    const safetensors_tensor *x = *(const safetensors_tensor *const *)a, *y = *(const safetensors_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end; /* empty tensors first */
}

/* Names unique; sorted by begin, the tensors tile [0, data_bytes). */
static inf_status check_layout(safetensors_file *f, inf_error *err) {
    size_t n = f->n_tensors;
    if (n == 0) {
        if (f->data_bytes != 0)
            return inf_errorf(err, INF_ERR_FORMAT, "%s: no tensors, but %llu bytes of data follow the header", f->path,
                              (ull)f->data_bytes);
        return INF_OK;
    }
    safetensors_tensor *sorted = malloc(n * sizeof *sorted);
    const safetensors_tensor **order = malloc(n * sizeof *order);
    inf_status st = INF_OK;
    if (!sorted || !order) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", f->path);
        goto done;
    }
    memcpy(sorted, f->tensors, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(sorted[i].name, sorted[i - 1].name)) {
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' appears twice in the header", f->path,
                            sorted[i].name);
            goto done;
        }
    for (size_t i = 0; i < n; i++) order[i] = &f->tensors[i];
    qsort(order, n, sizeof *order, by_begin);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const safetensors_tensor *t = order[i];
        if (t->begin != at) {
            if (t->begin < at)
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%.200s' (data_offsets [%llu, %llu]) overlaps '%.200s'",
                                f->path, t->name, (ull)t->begin, (ull)t->end, order[i - 1]->name);
            else
                st = inf_errorf(err, INF_ERR_FORMAT,
                                "%s: %llu bytes of data at offset %llu, before tensor '%.200s', belong to no tensor",
                                f->path, (ull)(t->begin - at), (ull)at, t->name);
            goto done;
        }
        at = t->end;
    }
    if (at != f->data_bytes)
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: %llu bytes of data after the last tensor belong to no tensor",
                        f->path, (ull)(f->data_bytes - at));
done:
    free(sorted);
    free(order);
    return st;
}

static inf_status parse_header(safetensors_file *f, const char *text, size_t len, inf_error *err) {
    const char *path = f->path;
    size_t lead = 0;
    while (lead < len && (text[lead] == ' ' || text[lead] == '\t' || text[lead] == '\n' || text[lead] == '\r')) lead++;
    if (lead == len || text[lead] != '{')
        return inf_errorf(err, INF_ERR_FORMAT, "%s: the header is not a JSON object (not a safetensors file?)", path);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : 0;
        return inf_errorf(err, INF_ERR_FORMAT, "%s: the JSON header is malformed near byte %zu", path, off);
    }
    inf_status st = INF_OK;
    size_t rest = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
    for (; rest < len; rest++)
        if (text[rest] != ' ' && text[rest] != '\t' && text[rest] != '\n' && text[rest] != '\r') {
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: bytes after the JSON header at byte %zu", path, rest);
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: the header is not a JSON object", path);
        goto done;
    }
    size_t n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) n += strcmp(item->string, "__metadata__") != 0;
    f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
    if (!f->tensors) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for %zu tensors", path, n);
        goto done;
    }
    bool seen_metadata = false;
    cJSON_ArrayForEach(item, root) {
        if (!strcmp(item->string, "__metadata__")) {
            if (seen_metadata) {
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: \"__metadata__\" appears twice", path);
                goto done;
            }
            seen_metadata = true;
            if (!cJSON_IsObject(item)) {
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: \"__metadata__\" is not an object", path);
                goto done;
            }
            const cJSON *m;
            cJSON_ArrayForEach(m, item) if (!cJSON_IsString(m)) {
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: __metadata__ \"%.200s\" is not a string", path, m->string);
                goto done;
            }
            continue;
        }
        if (!item->string[0]) {
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: a tensor has an empty name", path);
            goto done;
        }
        safetensors_tensor *t = &f->tensors[f->n_tensors];
        if ((st = parse_tensor(path, item, f->data_bytes, t, err))) goto done;
        if (!(t->name = strdup(item->string))) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
        f->n_tensors++;
    }
    st = check_layout(f, err);
done:
    cJSON_Delete(root);
    return st;
}

static inf_status read_data(safetensors_file *f, int fd, void (*progress)(double, void *), void *user,
                            inf_error *err) {
    if (f->data_bytes == 0) return INF_OK;
    if (f->data_bytes > SIZE_MAX)
        return inf_errorf(err, INF_ERR_NOMEM, "%s: %llu bytes of tensor data do not fit in memory", f->path,
                          (ull)f->data_bytes);
    size_t bytes = (size_t)f->data_bytes;
    if (!(f->buffer = inf_alloc_aligned(bytes)))
        return inf_errorf(err, INF_ERR_NOMEM, "%s: cannot allocate %llu bytes for tensor data", f->path,
                          (ull)f->data_bytes);
    inf_advise_huge(f->buffer, bytes);
    posix_fadvise(fd, (off_t)f->data_offset, (off_t)bytes, POSIX_FADV_SEQUENTIAL);
    size_t fail_at = 0;
    const int failed = inf_pread_parallel(fd, f->data_offset, f->buffer, bytes, progress, user, &fail_at);
    if (failed)
        return inf_errorf(err, INF_ERR_IO, "%s: reading tensor data at offset %llu failed: %s", f->path,
                          (ull)(f->data_offset + fail_at), failed < 0 ? "file shrank" : strerror(failed));
    return INF_OK;
}

inf_status safetensors_open(const char *path, safetensors_open_mode mode,
                            void (*progress)(double fraction, void *user), void *progress_user,
                            safetensors_file **out, inf_error *err) {
    *out = NULL;
    safetensors_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
    }
    inf_status st = INF_OK;
    char *header = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    uint64_t n = 0;
    if (fd < 0) {
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto done;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = inf_errorf(err, INF_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    f->file_bytes = (uint64_t)sb.st_size;
    if (f->file_bytes < 8) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: %llu bytes, too short for the 8-byte header length", path,
                        (ull)f->file_bytes);
        goto done;
    }
    if (!inf_pread_all(fd, 0, &n, 8)) {
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot read the header length: %s", path,
                        errno ? strerror(errno) : "file shrank");
        goto done;
    }
    if (n > SAFETENSORS_MAX_HEADER) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: header length %llu is over the limit of %llu bytes", path, (ull)n,
                        (ull)SAFETENSORS_MAX_HEADER);
        goto done;
    }
    if (n > f->file_bytes - 8) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%llu bytes)", path,
                        (ull)n, (ull)f->file_bytes);
        goto done;
    }
    if (n < 2) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: header length %llu is too short for a JSON object", path, (ull)n);
        goto done;
    }
    f->header_bytes = n;
    f->data_offset = 8 + n;
    f->data_bytes = f->file_bytes - f->data_offset;
    if (!(header = malloc((size_t)n + 1))) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for a %llu-byte header", path, (ull)n);
        goto done;
    }
    if (!inf_pread_all(fd, 8, header, (size_t)n)) {
        st = inf_errorf(err, INF_ERR_IO, "%s: cannot read the header: %s", path, errno ? strerror(errno) : "file shrank");
        goto done;
    }
    header[n] = 0;
    if ((st = parse_header(f, header, (size_t)n, err))) goto done;

    if (mode == SAFETENSORS_OPEN_MMAP && f->data_bytes > 0) {
        if (f->file_bytes > SIZE_MAX) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: file too large to map", path);
            goto done;
        }
        void *map = mmap(NULL, (size_t)f->file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            st = inf_errorf(err, INF_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
            goto done;
        }
        f->map = map;
        f->map_bytes = (size_t)f->file_bytes;
        f->map_fd = fd; /* f's now: closed with the mapping */
        for (size_t i = 0; i < f->n_tensors; i++)
            f->tensors[i].data = (const uint8_t *)map + f->data_offset + f->tensors[i].begin;
    } else if (mode == SAFETENSORS_OPEN_READ) {
        if ((st = read_data(f, fd, progress, progress_user, err))) goto done;
        for (size_t i = 0; i < f->n_tensors; i++)
            f->tensors[i].data = f->buffer ? (const uint8_t *)f->buffer + f->tensors[i].begin : NULL;
    }
done:
    free(header);
    if (fd >= 0 && !f->map) close(fd); /* else f's (map_fd) */
    if (st) {
        safetensors_close(f);
        return st;
    }
    *out = f;
    return INF_OK;
}

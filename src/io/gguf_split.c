/*
 * gguf_split.c — split GGUF models (the contract is in gguf_split.h).
 *
 * Reading follows llama.cpp's llama_model_loader: the first shard's
 * metadata is the model's, split.count says how many shards there are,
 * split.no which one a file is, and split.tensors.count how many tensors
 * they hold together; a tensor in two shards is an error. Unlike
 * llama.cpp, any shard may be named (llama.cpp wants the first), and every
 * shard is checked to exist before any is read, so a missing last shard
 * is reported at once, not after the first shards' gigabytes.
 *
 * Each shard is opened by gguf_open_progress, so gguf.c's checks apply to
 * each and its errors name the shard. The result moves the first shard's
 * metadata and every shard's tensor infos into one gguf_file and keeps the
 * shards (their mappings or buffers) as its storage.
 *
 * The sibling names are the given path with its shard number replaced,
 * so a folder, a prefix and the "of" keep their spelling (the hub's names
 * are matched case-insensitively, src/hub/hub_names.c).
 */
#include "io/gguf_split.h"

#include "core/common.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef unsigned long long ull;

enum { SPLIT_MAX_SHARDS = 65535 }; /* split.count is a u16 */
#define SPLIT_SUFFIX_LEN 20        /* "-00001-of-00003.gguf" */

/* Where the KKKKK of a name ending in "-KKKKK-of-NNNNN.gguf" starts, with
 * K and N; -1 when the name does not end so. */
static long split_name_parse(const char *path, int *index, int *count) {
    size_t len = strlen(path);
    if (len <= SPLIT_SUFFIX_LEN) return -1;
    const char *s = path + len - SPLIT_SUFFIX_LEN;
    if (s[0] != '-' || s[6] != '-' || tolower((unsigned char)s[7]) != 'o' || tolower((unsigned char)s[8]) != 'f' ||
        s[9] != '-' || strcmp(s + 15, ".gguf") != 0)
        return -1;
    int k = 0, n = 0;
    for (int i = 0; i < 5; i++) {
        if (!isdigit((unsigned char)s[1 + i]) || !isdigit((unsigned char)s[10 + i])) return -1;
        k = 10 * k + (s[1 + i] - '0');
        n = 10 * n + (s[10 + i] - '0');
    }
    *index = k;
    *count = n;
    return (long)(s + 1 - path);
}

/* The integer metadata value key in [0, max] into *v; left untouched when
 * absent and optional. */
static inf_status split_key(const gguf_file *f, const char *key, bool optional, int64_t max, int64_t *v,
                            inf_error *err) {
    if (optional && !gguf_find(f, key)) return INF_OK;
    int64_t x;
    inf_status st = gguf_get_int(f, key, false, &x, err);
    if (st) return st;
    if (x < 0 || x > max)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: metadata key '%s' is %lld, outside 0..%lld", f->path, key,
                          (long long)x, (long long)max);
    *v = x;
    return INF_OK;
}

/* A file that is not a shard, or not under a shard's name. */
static inf_status open_single(const char *path, gguf_open_mode mode, void (*progress)(double, void *), void *user,
                              gguf_file **out, inf_error *err) {
    gguf_file *f = NULL;
    inf_status st = gguf_open_progress(path, mode, progress, user, &f, err);
    if (st) return st;
    int64_t count = 0, no = 0;
    st = split_key(f, "split.count", true, SPLIT_MAX_SHARDS, &count, err);
    if (!st && count > 1) {
        if (split_key(f, "split.no", true, count - 1, &no, err)) no = 0;
        st = inf_errorf(err, INF_ERR_FORMAT,
                        "%s: split.count is %lld, so this is one shard of a split GGUF, but its name does not end "
                        "in -%05lld-of-%05lld.gguf, under which the other shards would be found",
                        path, (long long)count, (long long)no + 1, (long long)count);
    }
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return INF_OK;
}

/* ------------------------------------------------------------------ the shards */

typedef struct split_storage {
    gguf_file **shards; /* [n], with their metadata and tensor names moved out */
    size_t n;
} split_storage;

static void split_storage_free(void *p) {
    split_storage *s = p;
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) gguf_close(s->shards[i]);
    free(s->shards);
    free(s);
}

/* Progress over all shards: the current one's fraction, weighted by its
 * share of the bytes. */
typedef struct split_progress {
    void (*fn)(double fraction, void *user);
    void *user;
    double before, share; /* fractions of all shards' bytes */
} split_progress;

static void split_progress_fn(double fraction, void *p) {
    const split_progress *sp = p;
    sp->fn(sp->before + fraction * sp->share, sp->user);
}

/* Shard i (0-based) of n says so; the first's split.tensors.count goes
 * into *declared, the others' must agree with it. */
static inf_status check_shard(const gguf_file *f, int i, int n, int64_t *declared, inf_error *err) {
    int64_t count = 0, no = 0, tensors = -1;
    inf_status st;
    if ((st = split_key(f, "split.count", false, SPLIT_MAX_SHARDS, &count, err)) ||
        (st = split_key(f, "split.no", false, SPLIT_MAX_SHARDS, &no, err)) ||
        (st = split_key(f, "split.tensors.count", i > 0, INT32_MAX, &tensors, err)))
        return st;
    if (count != n)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: split.count is %lld, but the shard's name says %d shards", f->path,
                          (long long)count, n);
    if (no != i)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: split.no is %lld, but the name makes it shard %d of %d (split.no %d)",
                          f->path, (long long)no, i + 1, n, i);
    if (i == 0) *declared = tensors;
    else if (tensors >= 0 && tensors != *declared)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: split.tensors.count is %lld, but the first shard says %lld",
                          f->path, (long long)tensors, (long long)*declared);
    return INF_OK;
}

typedef struct named_tensor {
    const char *name;
    size_t shard;
} named_tensor;

static int named_tensor_cmp(const void *a, const void *b) {
    const named_tensor *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->shard > y->shard) - (x->shard < y->shard);
}

/* No tensor name in two shards (each shard's own are unique: gguf.c). */
static inf_status check_unique(const split_storage *s, uint64_t total, inf_error *err) {
    if (total < 2) return INF_OK;
    named_tensor *all = malloc((size_t)total * sizeof *all);
    if (!all) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", s->shards[0]->path);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        for (uint64_t t = 0; t < s->shards[i]->n_tensors; t++) all[k++] = (named_tensor){s->shards[i]->tensors[t].name.data, i};
    qsort(all, k, sizeof *all, named_tensor_cmp);
    inf_status st = INF_OK;
    for (size_t j = 1; j < k && !st; j++)
        if (!strcmp(all[j - 1].name, all[j].name))
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: tensor '%s' is also in %s", s->shards[all[j].shard]->path,
                            all[j].name, s->shards[all[j - 1].shard]->path);
    free(all);
    return st;
}

/* One gguf_file over the checked shards; takes s (released on failure too). */
static inf_status merge_shards(split_storage *s, uint64_t total, gguf_file **out, inf_error *err) {
    gguf_file *first = s->shards[0];
    gguf_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(first->path)) || !(f->tensors = calloc(total ? (size_t)total : 1, sizeof *f->tensors))) {
        if (f) free(f->path);
        free(f);
        split_storage_free(s);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", first->path);
    }
    f->storage = s;
    f->storage_free = split_storage_free;
    f->version = first->version;
    f->alignment = first->alignment;
    /* the metadata as the unsplit file has it: split.* dropped (as
     * llama-quantize drops them), so what is written from f is one file */
    f->kv = first->kv;
    for (uint64_t i = 0; i < first->n_kv; i++) {
        if (!strncmp(first->kv[i].key.data, "split.", 6)) {
            gguf_kv_free(&first->kv[i]);
            continue;
        }
        f->kv[f->n_kv++] = first->kv[i];
    }
    first->kv = NULL;
    first->n_kv = 0;
    for (size_t i = 0; i < s->n; i++) {
        gguf_file *shard = s->shards[i];
        for (uint64_t t = 0; t < shard->n_tensors; t++) {
            f->tensors[f->n_tensors++] = shard->tensors[t];
            shard->tensors[t].name = (gguf_string){0}; /* moved */
        }
        f->data_bytes += shard->data_bytes;
        f->file_bytes += shard->file_bytes;
    }
    f->n_files = (int)s->n;
    *out = f;
    return INF_OK;
}

/* Opens the n shards whose names are path with the 5 digits at digits_at
 * replaced by 00001 .. n. */
static inf_status open_shards(const char *path, size_t digits_at, int n, gguf_open_mode mode,
                              void (*progress)(double, void *), void *user, gguf_file **out, inf_error *err) {
    inf_status st = INF_OK;
    split_storage *s = calloc(1, sizeof *s);
    char **paths = calloc((size_t)n, sizeof *paths);
    uint64_t *sizes = calloc((size_t)n, sizeof *sizes);
    if (!s || !paths || !sizes || !(s->shards = calloc((size_t)n, sizeof *s->shards))) {
        st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    uint64_t all_bytes = 0;
    for (int i = 0; i < n; i++) { /* every shard there before any is read */
        char digits[16];
        snprintf(digits, sizeof digits, "%05d", i + 1);
        if (!(paths[i] = strdup(path))) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
        memcpy(paths[i] + digits_at, digits, 5);
        struct stat sb;
        if (stat(paths[i], &sb) != 0) {
            st = inf_errorf(err, INF_ERR_IO, "%s: cannot open shard %d of %d: %s", paths[i], i + 1, n, strerror(errno));
            goto done;
        }
        if (!S_ISREG(sb.st_mode)) {
            st = inf_errorf(err, INF_ERR_IO, "%s: shard %d of %d is not a regular file", paths[i], i + 1, n);
            goto done;
        }
        sizes[i] = (uint64_t)sb.st_size;
        all_bytes += sizes[i];
    }
    if (all_bytes == 0) all_bytes = 1;
    int64_t declared = 0;
    uint64_t before = 0, total = 0;
    for (int i = 0; i < n; i++) {
        split_progress sp = {progress, user, (double)before / (double)all_bytes, (double)sizes[i] / (double)all_bytes};
        st = gguf_open_progress(paths[i], mode, progress ? split_progress_fn : NULL, &sp, &s->shards[i], err);
        if (st) goto done;
        s->n++;
        if ((st = check_shard(s->shards[i], i, n, &declared, err))) goto done;
        before += sizes[i];
        total += s->shards[i]->n_tensors; /* each is bounded by its file's size */
    }
    if ((st = check_unique(s, total, err))) goto done;
    if (total != (uint64_t)declared) {
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: split.tensors.count is %lld, but the %d shards hold %llu tensors",
                        paths[0], (long long)declared, n, (ull)total);
        goto done;
    }
    st = merge_shards(s, total, out, err);
    s = NULL; /* merge_shards took it */
done:
    split_storage_free(s);
    for (int i = 0; paths && i < n; i++) free(paths[i]);
    free(paths);
    free(sizes);
    return st;
}

inf_status gguf_open_split(const char *path, gguf_open_mode mode, void (*progress)(double fraction, void *user),
                           void *progress_user, gguf_file **out, inf_error *err) {
    *out = NULL;
    int index, count;
    long digits_at = split_name_parse(path, &index, &count);
    if (digits_at < 0 || count < 1) return open_single(path, mode, progress, progress_user, out, err);
    /* the name says shard K of N; the file says whether it is one */
    gguf_file *probe = NULL;
    inf_status st = gguf_open(path, GGUF_OPEN_METADATA_ONLY, &probe, err);
    if (st) return st;
    int64_t probe_count = 0, probe_no = -1;
    st = split_key(probe, "split.count", true, SPLIT_MAX_SHARDS, &probe_count, err);
    if (!st && probe_count > 0) st = split_key(probe, "split.no", false, SPLIT_MAX_SHARDS, &probe_no, err);
    gguf_close(probe);
    if (st) return st;
    if (probe_count == 0) return open_single(path, mode, progress, progress_user, out, err); /* a whole model */
    if (probe_count != count || probe_no != index - 1)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: split.no %lld and split.count %lld make it shard %lld of %lld, but "
                          "its name says %d of %d", path, (long long)probe_no, (long long)probe_count,
                          (long long)probe_no + 1, (long long)probe_count, index, count);
    return open_shards(path, (size_t)digits_at, count, mode, progress, progress_user, out, err);
}

static bool within(const void *p, size_t n, const void *base, size_t len) {
    return base && (uintptr_t)p >= (uintptr_t)base && (uintptr_t)p + n <= (uintptr_t)base + len;
}

/* The shards behind a set gguf_open_split made, NULL for any other file. */
static const split_storage *shards_of(const gguf_file *f) {
    return f->storage_free == split_storage_free ? f->storage : NULL;
}

/* [p, p + n) as bytes of the file f mapped itself, if they lie there. */
static bool mapped_file_range(const gguf_file *f, const void *p, size_t n, int *fd, uint64_t *offset) {
    if (!f->map || !within(p, n, f->map, f->map_bytes)) return false;
    *fd = f->map_fd;
    *offset = (uint64_t)((uintptr_t)p - (uintptr_t)f->map);
    return true;
}

bool gguf_data_source(const gguf_file *f, const void *p, size_t n, int *fd, uint64_t *offset) {
    const split_storage *s = shards_of(f);
    if (mapped_file_range(f, p, n, fd, offset)) return true;
    for (size_t i = 0; s && i < s->n; i++)
        if (mapped_file_range(s->shards[i], p, n, fd, offset)) return true;
    return f->storage_source && f->storage_source(f->storage, p, n, fd, offset);
}

bool gguf_data_mapped(const gguf_file *f, const void *p, size_t n) {
    int fd;
    uint64_t offset;
    return gguf_data_source(f, p, n, &fd, &offset);
}

bool gguf_data_owned(const gguf_file *f, const void *p, size_t n) {
    const split_storage *s = shards_of(f);
    if (within(p, n, f->buffer, (size_t)f->data_bytes)) return true;
    for (size_t i = 0; s && i < s->n; i++)
        if (within(p, n, s->shards[i]->buffer, (size_t)s->shards[i]->data_bytes)) return true;
    return false;
}

/* ------------------------------------------------------------------ writer */

static void set_u16(gguf_writer *w, const char *key, uint64_t v) {
    gguf_value value = {.type = GGUF_TYPE_UINT16, .u64 = v};
    gguf_writer_set_value(w, key, &value);
}

inf_status gguf_split_write(const gguf_file *src, uint64_t max_tensors, bool no_tensors_first, const char *prefix,
                            int *n_shards, inf_error *err) {
    if (max_tensors == 0) return inf_errorf(err, INF_ERR_INVALID, "%s: a shard must hold at least one tensor", prefix);
    if (src->n_tensors > INT32_MAX)
        return inf_errorf(err, INF_ERR_INVALID, "%s: %llu tensors do not fit split.tensors.count (i32)", src->path,
                          (ull)src->n_tensors);
    uint64_t n = (src->n_tensors + max_tensors - 1) / max_tensors + (no_tensors_first ? 1 : 0);
    if (n == 0) n = 1;
    if (n > SPLIT_MAX_SHARDS)
        return inf_errorf(err, INF_ERR_INVALID, "%s: %llu shards, but split.count holds at most %d", src->path, (ull)n,
                          SPLIT_MAX_SHARDS);
    for (uint64_t t = 0; t < src->n_tensors; t++)
        if (!src->tensors[t].data)
            return inf_errorf(err, INF_ERR_INVALID, "%s: tensor '%s' has no data (opened for metadata only)", src->path,
                              src->tensors[t].name.data);
    size_t cap = strlen(prefix) + SPLIT_SUFFIX_LEN + 1;
    char *path = malloc(cap);
    if (!path) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", prefix);
    inf_status st = INF_OK;
    uint64_t next = 0;
    for (uint64_t i = 0; i < n && !st; i++) {
        gguf_writer *w = gguf_writer_new();
        if (!w) {
            st = inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", prefix);
            break;
        }
        if (i == 0)
            for (uint64_t k = 0; k < src->n_kv; k++) gguf_writer_set_value(w, src->kv[k].key.data, &src->kv[k].value);
        set_u16(w, "split.no", i);
        set_u16(w, "split.count", n);
        gguf_writer_set_i32(w, "split.tensors.count", (int32_t)src->n_tensors);
        uint64_t take = i == 0 && no_tensors_first ? 0 : INF_MIN(max_tensors, src->n_tensors - next);
        for (uint64_t t = next; t < next + take; t++) {
            const gguf_tensor *g = &src->tensors[t];
            gguf_writer_add_tensor(w, g->name.data, g->type, g->n_dims, g->ne, g->data);
        }
        next += take;
        snprintf(path, cap, "%s-%05llu-of-%05llu.gguf", prefix, (ull)i + 1, (ull)n);
        st = gguf_writer_write(w, path, err);
        gguf_writer_free(w);
    }
    free(path);
    if (!st && n_shards) *n_shards = (int)n;
    return st;
}

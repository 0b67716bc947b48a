/*
 * test_gguf.c — GGUF reader/writer tests.
 *
 *   round trip   every metadata value type (nested, empty and extreme
 *                values included) and a tensor of each supported type go
 *                through the writer and come back equal in all three open
 *                modes; a custom general.alignment is honoured.
 *   writer       invalid calls and I/O failures are errors that leave no
 *                file (or temporary file) behind.
 *   getters      integer widening, type mismatches, optional keys.
 *   corrupt      a small valid file is built byte by byte here (independent
 *                of the writer), then truncated at every offset and patched
 *                into a table of malformed variants; each must fail with a
 *                one-line message that starts with the path, in every mode.
 *   mutations    random byte flips must never crash (run under ASan/UBSan
 *                with `make SAN=1 build-san/tests/test_gguf`).
 *   fuzz seeds   the committed seeds of the GGUF fuzz target
 *                (tests/fuzz/corpus/fuzz_gguf/, written independently of
 *                gguf.c by scripts/gen-fuzz-seeds.py) open alike in all
 *                three modes; the model seeds load; the regress-* inputs,
 *                which once crashed or hit undefined behaviour under the
 *                fuzzer, fail cleanly.
 */
#include "harness.h"

#include "core/dtype.h"
#include "io/gguf.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *tmpdir;

static void tmp_path(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", tmpdir, name); }

static bool write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) { return test_rng_next(&rng_state); }

/* ------------------------------------------------------------------ value equality */

static bool value_equal(const gguf_value *a, const gguf_value *b);

static size_t elem_bytes(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    default: return 8;
    }
}

static bool string_equal(const gguf_string *a, const gguf_string *b) {
    return a->len == b->len && memcmp(a->data, b->data, a->len) == 0 && a->data[a->len] == 0;
}

static bool value_equal(const gguf_value *a, const gguf_value *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_UINT16: case GGUF_TYPE_UINT32: case GGUF_TYPE_UINT64: return a->u64 == b->u64;
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64: return a->i64 == b->i64;
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64: return memcmp(&a->f64, &b->f64, 8) == 0;
    case GGUF_TYPE_BOOL: return a->b == b->b;
    case GGUF_TYPE_STRING: return string_equal(&a->str, &b->str);
    case GGUF_TYPE_ARRAY:
        if (a->arr.elem_type != b->arr.elem_type || a->arr.n != b->arr.n) return false;
        for (uint64_t i = 0; i < a->arr.n; i++) {
            if (a->arr.elem_type == GGUF_TYPE_STRING) {
                if (!string_equal(&((gguf_string *)a->arr.data)[i], &((gguf_string *)b->arr.data)[i])) return false;
            } else if (a->arr.elem_type == GGUF_TYPE_ARRAY) {
                if (!value_equal(&((gguf_value *)a->arr.data)[i], &((gguf_value *)b->arr.data)[i])) return false;
            }
        }
        if (a->arr.elem_type != GGUF_TYPE_STRING && a->arr.elem_type != GGUF_TYPE_ARRAY && a->arr.n)
            return memcmp(a->arr.data, b->arr.data, a->arr.n * elem_bytes(a->arr.elem_type)) == 0;
        return true;
    }
    return false;
}

static gguf_value arr_value(gguf_type elem, void *data, uint64_t n) {
    return (gguf_value){.type = GGUF_TYPE_ARRAY, .arr = {.elem_type = elem, .n = n, .data = data}};
}

/* ------------------------------------------------------------------ round trip */

typedef struct expected_kv {
    const char *key;
    gguf_value value;
} expected_kv;

typedef struct expected_tensor {
    const char *name;
    inf_dtype type;
    uint32_t n_dims;
    uint64_t ne[4];
    void *data;
    size_t nbytes;
} expected_tensor;

static void check_file(const char *path, const expected_kv *kvs, size_t n_kv, const expected_tensor *ts, size_t n_t,
                       uint64_t alignment) {
    for (int mode = 0; mode < 3; mode++) {
        gguf_file *f = NULL;
        inf_error err = {0};
        inf_status st = gguf_open(path, (gguf_open_mode)mode, &f, &err);
        if (!TEST_CHECK(st == INF_OK, "open mode %d: %s", mode, err.msg)) continue;
        TEST_CHECK(f->version == 3, "version %u", f->version);
        TEST_CHECK(f->alignment == alignment, "alignment %llu", (unsigned long long)f->alignment);
        TEST_CHECK(f->data_offset % alignment == 0, "data offset aligned");
        TEST_CHECK(f->n_kv == n_kv, "mode %d: n_kv %llu, expected %zu", mode, (unsigned long long)f->n_kv, n_kv);
        for (size_t i = 0; i < n_kv && i < f->n_kv; i++) {
            TEST_CHECK(!strcmp(f->kv[i].key.data, kvs[i].key), "key %zu is '%s', expected '%s'", i, f->kv[i].key.data,
                       kvs[i].key);
            TEST_CHECK(value_equal(&f->kv[i].value, &kvs[i].value), "value of '%s' differs (mode %d)", kvs[i].key,
                       mode);
            const gguf_kv *found = gguf_find(f, kvs[i].key);
            TEST_CHECK(found == &f->kv[i], "gguf_find('%s')", kvs[i].key);
        }
        TEST_CHECK(f->n_tensors == n_t, "n_tensors");
        for (size_t i = 0; i < n_t && i < f->n_tensors; i++) {
            const gguf_tensor *t = gguf_find_tensor(f, ts[i].name);
            if (!TEST_CHECK(t == &f->tensors[i], "tensor '%s' found in order", ts[i].name)) continue;
            TEST_CHECK(t->type == ts[i].type && t->n_dims == ts[i].n_dims, "tensor '%s' type/dims", ts[i].name);
            for (int d = 0; d < 4; d++)
                TEST_CHECK(t->ne[d] == (d < (int)ts[i].n_dims ? ts[i].ne[d] : 1), "tensor '%s' ne[%d]", ts[i].name, d);
            TEST_CHECK(t->nbytes == ts[i].nbytes, "tensor '%s' nbytes %llu vs %zu", ts[i].name,
                       (unsigned long long)t->nbytes, ts[i].nbytes);
            TEST_CHECK(t->offset % alignment == 0, "tensor '%s' offset aligned", ts[i].name);
            if (mode == GGUF_OPEN_METADATA_ONLY) {
                TEST_CHECK(t->data == NULL, "metadata-only mode has no data");
            } else {
                TEST_CHECK(t->data && memcmp(t->data, ts[i].data, ts[i].nbytes) == 0, "tensor '%s' data (mode %d)",
                           ts[i].name, mode);
            }
            if (mode == GGUF_OPEN_READ)
                TEST_CHECK((uintptr_t)t->data % (alignment < 64 ? alignment : 64) == 0, "read-mode data aligned");
        }
        TEST_CHECK(gguf_find(f, "no.such.key") == NULL && gguf_find_tensor(f, "nope") == NULL, "absent lookups");
        /* forgetting an entry: the others stay, in order; an absent key is no change */
        gguf_forget(f, "no.such.key");
        TEST_CHECK(f->n_kv == n_kv, "forgetting an absent key changes nothing");
        if (n_kv >= 2) {
            gguf_forget(f, kvs[0].key);
            TEST_CHECK(f->n_kv == n_kv - 1 && gguf_find(f, kvs[0].key) == NULL, "mode %d: '%s' forgotten", mode,
                       kvs[0].key);
            for (size_t i = 1; i < n_kv && i - 1 < f->n_kv; i++)
                TEST_CHECK(gguf_find(f, kvs[i].key) == &f->kv[i - 1] && value_equal(&f->kv[i - 1].value, &kvs[i].value),
                           "mode %d: '%s' kept after a forget", mode, kvs[i].key);
        }
        gguf_close(f);
    }
}

static void test_round_trip(void) {
    test_begin("round trip");
    uint8_t u8s[] = {0, 1, 255};
    int8_t i8s[] = {-128, 0, 127};
    uint16_t u16s[] = {0, 65535};
    int16_t i16s[] = {-32768, 32767};
    uint32_t u32s[] = {0, 1, UINT32_MAX};
    int32_t i32s[] = {INT32_MIN, -1, INT32_MAX};
    float f32s[] = {0.0f, -0.0f, 1.5f, -3.25e-38f, INFINITY, 1e-45f};
    bool bools[] = {true, false, true, true};
    uint64_t u64s[] = {0, UINT64_MAX, 1ull << 63};
    int64_t i64s[] = {INT64_MIN, 0, INT64_MAX};
    double f64s[] = {3.141592653589793, -0.0, 4.9e-324, -INFINITY};
    gguf_string strs[] = {{5, "hello"}, {0, ""}, {9, "\xc3\xa9t\xc3\xa9 \xe2\x82\xac"}, {3, "a b"}};
    const char *str_ptrs[] = {"hello", "", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac", "a b"};
    /* nested: [[1,2,3], [], [-7]] of i32; [["x"], []] of strings; [[[1,2]],[[]]] of u8 */
    int32_t in0[] = {1, 2, 3}, in2[] = {-7};
    gguf_value inner_i32[] = {arr_value(GGUF_TYPE_INT32, in0, 3), arr_value(GGUF_TYPE_INT32, NULL, 0),
                              arr_value(GGUF_TYPE_INT32, in2, 1)};
    gguf_string xs[] = {{1, "x"}};
    gguf_value inner_str[] = {arr_value(GGUF_TYPE_STRING, xs, 1), arr_value(GGUF_TYPE_STRING, NULL, 0)};
    uint8_t deep_u8[] = {1, 2};
    gguf_value deep2a[] = {arr_value(GGUF_TYPE_UINT8, deep_u8, 2)};
    gguf_value deep2b[] = {arr_value(GGUF_TYPE_UINT8, NULL, 0)};
    gguf_value deep1[] = {arr_value(GGUF_TYPE_ARRAY, deep2a, 1), arr_value(GGUF_TYPE_ARRAY, deep2b, 1)};

    expected_kv kvs[] = {
        {"general.architecture", {.type = GGUF_TYPE_STRING, .str = {5, "qwen3"}}},
        {"t.u8", {.type = GGUF_TYPE_UINT8, .u64 = 255}},
        {"t.i8", {.type = GGUF_TYPE_INT8, .i64 = -128}},
        {"t.u16", {.type = GGUF_TYPE_UINT16, .u64 = 65535}},
        {"t.i16", {.type = GGUF_TYPE_INT16, .i64 = -32768}},
        {"t.u32", {.type = GGUF_TYPE_UINT32, .u64 = UINT32_MAX}},
        {"t.i32", {.type = GGUF_TYPE_INT32, .i64 = INT32_MIN}},
        {"t.f32", {.type = GGUF_TYPE_FLOAT32, .f64 = (double)1e-6f}},
        {"t.bool_true", {.type = GGUF_TYPE_BOOL, .b = true}},
        {"t.bool_false", {.type = GGUF_TYPE_BOOL, .b = false}},
        {"t.str", {.type = GGUF_TYPE_STRING, .str = {11, "hello\nworld"}}},
        {"t.empty_str", {.type = GGUF_TYPE_STRING, .str = {0, ""}}},
        {"t.u64_max", {.type = GGUF_TYPE_UINT64, .u64 = UINT64_MAX}},
        {"t.i64_min", {.type = GGUF_TYPE_INT64, .i64 = INT64_MIN}},
        {"t.i64_max", {.type = GGUF_TYPE_INT64, .i64 = INT64_MAX}},
        {"t.f64", {.type = GGUF_TYPE_FLOAT64, .f64 = 2.718281828459045}},
        {"t.f64_tiny", {.type = GGUF_TYPE_FLOAT64, .f64 = 4.9e-324}},
        {"t.a_u8", arr_value(GGUF_TYPE_UINT8, u8s, 3)},
        {"t.a_i8", arr_value(GGUF_TYPE_INT8, i8s, 3)},
        {"t.a_u16", arr_value(GGUF_TYPE_UINT16, u16s, 2)},
        {"t.a_i16", arr_value(GGUF_TYPE_INT16, i16s, 2)},
        {"t.a_u32", arr_value(GGUF_TYPE_UINT32, u32s, 3)},
        {"t.a_i32", arr_value(GGUF_TYPE_INT32, i32s, 3)},
        {"t.a_f32", arr_value(GGUF_TYPE_FLOAT32, f32s, 6)},
        {"t.a_bool", arr_value(GGUF_TYPE_BOOL, bools, 4)},
        {"t.a_u64", arr_value(GGUF_TYPE_UINT64, u64s, 3)},
        {"t.a_i64", arr_value(GGUF_TYPE_INT64, i64s, 3)},
        {"t.a_f64", arr_value(GGUF_TYPE_FLOAT64, f64s, 4)},
        {"t.a_str", arr_value(GGUF_TYPE_STRING, strs, 4)},
        {"t.a_empty_u32", arr_value(GGUF_TYPE_UINT32, NULL, 0)},
        {"t.a_empty_str", arr_value(GGUF_TYPE_STRING, NULL, 0)},
        {"t.a_empty_arr", arr_value(GGUF_TYPE_ARRAY, NULL, 0)},
        {"t.nested_i32", arr_value(GGUF_TYPE_ARRAY, inner_i32, 3)},
        {"t.nested_str", arr_value(GGUF_TYPE_ARRAY, inner_str, 2)},
        {"t.nested_deep", arr_value(GGUF_TYPE_ARRAY, deep1, 2)},
        {"t.replaced", {.type = GGUF_TYPE_UINT32, .u64 = 2}},
        {"t.last", {.type = GGUF_TYPE_INT32, .i64 = -5}},
    };
    const size_t n_kv = sizeof kvs / sizeof kvs[0];

    /* tensors: one of each supported type, 1-D to 4-D, sizes that need padding */
    float f32_data[7 * 3];
    inf_f16 f16_data[5];
    inf_bf16 bf16_data[4 * 2 * 3];
    inf_block_q8_0 q8_data[2 * 3];
    float f32_4d[2 * 3 * 4 * 5];
    float src[64 * 3];
    for (size_t i = 0; i < 64 * 3; i++) src[i] = (float)((int64_t)(rng_next() % 2001) - 1000) / 250.0f;
    memcpy(f32_data, src, sizeof f32_data);
    for (size_t i = 0; i < 5; i++) f16_data[i] = inf_f32_to_f16(src[i]);
    for (size_t i = 0; i < 24; i++) bf16_data[i] = inf_f32_to_bf16(src[i]);
    inf_quantize_row_q8_0(src, q8_data, 64 * 3);
    for (size_t i = 0; i < 120; i++) f32_4d[i] = (float)i;
    expected_tensor ts[] = {
        {"tok.f32", INF_DTYPE_F32, 2, {7, 3}, f32_data, sizeof f32_data},
        {"tok.f16", INF_DTYPE_F16, 1, {5}, f16_data, sizeof f16_data},
        {"blk.0.bf16", INF_DTYPE_BF16, 3, {4, 2, 3}, bf16_data, sizeof bf16_data},
        {"blk.0.q8_0", INF_DTYPE_Q8_0, 2, {64, 3}, q8_data, sizeof q8_data},
        {"four.d", INF_DTYPE_F32, 4, {2, 3, 4, 5}, f32_4d, sizeof f32_4d},
    };
    const size_t n_t = sizeof ts / sizeof ts[0];

    for (int variant = 0; variant < 2; variant++) {
        gguf_writer *w = gguf_writer_new();
        TEST_CHECK(w != NULL, "writer");
        gguf_writer_set_str(w, "general.architecture", "qwen3");
        gguf_writer_set_value(w, "t.u8", &kvs[1].value);
        gguf_writer_set_value(w, "t.i8", &kvs[2].value);
        gguf_writer_set_value(w, "t.u16", &kvs[3].value);
        gguf_writer_set_value(w, "t.i16", &kvs[4].value);
        gguf_writer_set_u32(w, "t.u32", UINT32_MAX);
        gguf_writer_set_i32(w, "t.i32", INT32_MIN);
        gguf_writer_set_f32(w, "t.f32", 1e-6f);
        gguf_writer_set_bool(w, "t.bool_true", true);
        gguf_writer_set_bool(w, "t.bool_false", false);
        gguf_writer_set_str(w, "t.str", "hello\nworld");
        gguf_writer_set_str(w, "t.empty_str", "");
        gguf_writer_set_u64(w, "t.u64_max", UINT64_MAX);
        gguf_writer_set_value(w, "t.i64_min", &kvs[13].value);
        gguf_writer_set_value(w, "t.i64_max", &kvs[14].value);
        gguf_writer_set_value(w, "t.f64", &kvs[15].value);
        gguf_writer_set_value(w, "t.f64_tiny", &kvs[16].value);
        gguf_writer_set_array(w, "t.a_u8", GGUF_TYPE_UINT8, u8s, 3);
        gguf_writer_set_array(w, "t.a_i8", GGUF_TYPE_INT8, i8s, 3);
        gguf_writer_set_array(w, "t.a_u16", GGUF_TYPE_UINT16, u16s, 2);
        gguf_writer_set_array(w, "t.a_i16", GGUF_TYPE_INT16, i16s, 2);
        gguf_writer_set_array(w, "t.a_u32", GGUF_TYPE_UINT32, u32s, 3);
        gguf_writer_set_array(w, "t.a_i32", GGUF_TYPE_INT32, i32s, 3);
        gguf_writer_set_array(w, "t.a_f32", GGUF_TYPE_FLOAT32, f32s, 6);
        gguf_writer_set_array(w, "t.a_bool", GGUF_TYPE_BOOL, bools, 4);
        gguf_writer_set_array(w, "t.a_u64", GGUF_TYPE_UINT64, u64s, 3);
        gguf_writer_set_array(w, "t.a_i64", GGUF_TYPE_INT64, i64s, 3);
        gguf_writer_set_array(w, "t.a_f64", GGUF_TYPE_FLOAT64, f64s, 4);
        gguf_writer_set_str_array(w, "t.a_str", str_ptrs, 4);
        gguf_writer_set_array(w, "t.a_empty_u32", GGUF_TYPE_UINT32, NULL, 0);
        gguf_writer_set_str_array(w, "t.a_empty_str", NULL, 0);
        gguf_writer_set_value(w, "t.a_empty_arr", &kvs[31].value);
        gguf_writer_set_value(w, "t.nested_i32", &kvs[32].value);
        gguf_writer_set_value(w, "t.nested_str", &kvs[33].value);
        gguf_writer_set_value(w, "t.nested_deep", &kvs[34].value);
        gguf_writer_set_str(w, "t.replaced", "first");  /* replaced below, keeps its place */
        gguf_writer_set_i32(w, "t.last", -5);
        gguf_writer_set_u32(w, "t.replaced", 2);
        uint64_t alignment = GGUF_DEFAULT_ALIGNMENT;
        if (variant == 1) {
            alignment = 256;
            gguf_writer_set_u32(w, "general.alignment", 256);
        }
        for (size_t i = 0; i < n_t; i++) gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne, ts[i].data);
        char path[128], tmp[160];
        tmp_path(path, sizeof path, variant ? "round-align.gguf" : "round.gguf");
        inf_error err = {0};
        inf_status st = gguf_writer_write(w, path, &err);
        TEST_CHECK(st == INF_OK, "write: %s", err.msg);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        TEST_CHECK(!file_exists(tmp), "no temporary file left");
        gguf_writer_free(w);
        if (variant == 0) {
            check_file(path, kvs, n_kv, ts, n_t, alignment);
            /* the default alignment is not written, as in llama.cpp's converter output */
        } else {
            expected_kv kvs2[sizeof kvs / sizeof kvs[0] + 1];
            memcpy(kvs2, kvs, sizeof kvs);
            kvs2[n_kv] = (expected_kv){"general.alignment", {.type = GGUF_TYPE_UINT32, .u64 = 256}};
            check_file(path, kvs2, n_kv + 1, ts, n_t, alignment);
        }
    }

    /* an empty file: no metadata, no tensors */
    gguf_writer *w = gguf_writer_new();
    char path[128];
    tmp_path(path, sizeof path, "empty.gguf");
    inf_error err = {0};
    TEST_CHECK(gguf_writer_write(w, path, &err) == INF_OK, "write empty: %s", err.msg);
    gguf_writer_free(w);
    check_file(path, NULL, 0, NULL, 0, GGUF_DEFAULT_ALIGNMENT);
}

/* ------------------------------------------------------------------ writer errors */

static void test_writer_errors(void) {
    test_begin("writer errors");
    char path[128], tmp[160];
    float data[32] = {0};
    uint64_t ne[2] = {32, 1};
    inf_error err = {0};
    struct {
        const char *what;
        int kind;
        inf_status expect;
    } cases[] = {
        {"duplicate tensor", 0, INF_ERR_INVALID}, {"alignment 3", 1, INF_ERR_INVALID},
        {"alignment as i32", 2, INF_ERR_INVALID}, {"q8_0 row of 33", 3, INF_ERR_INVALID},
        {"zero dimension", 4, INF_ERR_INVALID},   {"u8 value 300", 5, INF_ERR_INVALID},
        {"5 dims", 6, INF_ERR_INVALID},           {"string array via set_array", 7, INF_ERR_INVALID},
        {"missing directory", 8, INF_ERR_IO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gguf_writer *w = gguf_writer_new();
        gguf_writer_set_str(w, "general.architecture", "qwen3");
        tmp_path(path, sizeof path, "bad-writer.gguf");
        uint64_t ne33[2] = {33, 1}, ne0[2] = {32, 0}, ne5[5] = {1, 1, 1, 1, 1};
        switch (cases[i].kind) {
        case 0:
            gguf_writer_add_tensor(w, "a", INF_DTYPE_F32, 2, ne, data);
            gguf_writer_add_tensor(w, "a", INF_DTYPE_F32, 2, ne, data);
            break;
        case 1: gguf_writer_set_u32(w, "general.alignment", 3); break;
        case 2: gguf_writer_set_i32(w, "general.alignment", 64); break;
        case 3: gguf_writer_add_tensor(w, "a", INF_DTYPE_Q8_0, 2, ne33, data); break;
        case 4: gguf_writer_add_tensor(w, "a", INF_DTYPE_F32, 2, ne0, data); break;
        case 5: {
            gguf_value v = {.type = GGUF_TYPE_UINT8, .u64 = 300};
            gguf_writer_set_value(w, "k", &v);
            break;
        }
        case 6: gguf_writer_add_tensor(w, "a", INF_DTYPE_F32, 5, ne5, data); break;
        case 7: gguf_writer_set_array(w, "k", GGUF_TYPE_STRING, data, 1); break;
        case 8: snprintf(path, sizeof path, "%s/no/such/dir/x.gguf", tmpdir); break;
        }
        inf_status st = gguf_writer_write(w, path, &err);
        TEST_CHECK(st == cases[i].expect, "%s: status %s (%s)", cases[i].what, inf_status_name(st), err.msg);
        TEST_CHECK(strlen(err.msg) > 0 && !strchr(err.msg, '\n'), "%s: one-line message", cases[i].what);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        TEST_CHECK(!file_exists(path) && !file_exists(tmp), "%s: nothing written", cases[i].what);
        gguf_writer_free(w);
    }
}

/* ------------------------------------------------------------------ typed getters */

static void test_getters(void) {
    test_begin("getters");
    gguf_writer *w = gguf_writer_new();
    gguf_value u8 = {.type = GGUF_TYPE_UINT8, .u64 = 200}, big = {.type = GGUF_TYPE_UINT64, .u64 = UINT64_MAX};
    gguf_value i16 = {.type = GGUF_TYPE_INT16, .i64 = -300}, f64 = {.type = GGUF_TYPE_FLOAT64, .f64 = 0.25};
    int32_t ids[] = {4, 5, 6};
    const char *names[] = {"a", "b"};
    gguf_writer_set_value(w, "k.u8", &u8);
    gguf_writer_set_value(w, "k.big", &big);
    gguf_writer_set_value(w, "k.i16", &i16);
    gguf_writer_set_u32(w, "k.u32", 40960);
    gguf_writer_set_f32(w, "k.f32", 1e6f);
    gguf_writer_set_value(w, "k.f64", &f64);
    gguf_writer_set_bool(w, "k.bool", true);
    gguf_writer_set_str(w, "k.str", "gpt2");
    gguf_writer_set_array(w, "k.ids", GGUF_TYPE_INT32, ids, 3);
    gguf_writer_set_str_array(w, "k.names", names, 2);
    char path[128];
    tmp_path(path, sizeof path, "getters.gguf");
    inf_error err = {0};
    TEST_CHECK(gguf_writer_write(w, path, &err) == INF_OK, "write: %s", err.msg);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    if (!TEST_CHECK(gguf_open(path, GGUF_OPEN_METADATA_ONLY, &f, &err) == INF_OK, "open: %s", err.msg)) return;

    int64_t iv = 0;
    double fv = 0;
    bool bv = false;
    const gguf_string *sv = NULL;
    const void *data = NULL;
    uint64_t n = 0;
    TEST_CHECK(gguf_get_int(f, "k.u8", false, &iv, &err) == INF_OK && iv == 200, "u8 as int");
    TEST_CHECK(gguf_get_int(f, "k.i16", false, &iv, &err) == INF_OK && iv == -300, "i16 as int");
    TEST_CHECK(gguf_get_int(f, "k.u32", false, &iv, &err) == INF_OK && iv == 40960, "u32 as int");
    TEST_CHECK(gguf_get_int(f, "k.big", false, &iv, &err) == INF_ERR_FORMAT, "u64 max does not fit int64");
    TEST_CHECK(strstr(err.msg, "k.big") != NULL && strstr(err.msg, path) == err.msg, "message names key: %s", err.msg);
    TEST_CHECK(gguf_get_int(f, "k.f32", false, &iv, &err) == INF_ERR_FORMAT, "f32 is not an int");
    TEST_CHECK(gguf_get_float(f, "k.f32", false, &fv, &err) == INF_OK && fv == 1e6, "f32");
    TEST_CHECK(gguf_get_float(f, "k.f64", false, &fv, &err) == INF_OK && fv == 0.25, "f64");
    TEST_CHECK(gguf_get_float(f, "k.u32", false, &fv, &err) == INF_ERR_FORMAT, "u32 is not a float");
    TEST_CHECK(gguf_get_bool(f, "k.bool", false, &bv, &err) == INF_OK && bv, "bool");
    TEST_CHECK(gguf_get_bool(f, "k.u8", false, &bv, &err) == INF_ERR_FORMAT, "u8 is not a bool");
    TEST_CHECK(gguf_get_string(f, "k.str", false, &sv, &err) == INF_OK && !strcmp(sv->data, "gpt2"), "string");
    TEST_CHECK(gguf_get_string(f, "k.ids", false, &sv, &err) == INF_ERR_FORMAT, "array is not a string");
    TEST_CHECK(gguf_get_array(f, "k.ids", GGUF_TYPE_INT32, false, &data, &n, &err) == INF_OK && n == 3 &&
                   ((const int32_t *)data)[2] == 6, "i32 array");
    TEST_CHECK(gguf_get_array(f, "k.ids", GGUF_TYPE_UINT32, false, &data, &n, &err) == INF_ERR_FORMAT,
               "i32 array is not u32 array");
    TEST_CHECK(strstr(err.msg, "array of i32") != NULL, "message says the type: %s", err.msg);
    TEST_CHECK(gguf_get_array(f, "k.names", GGUF_TYPE_STRING, false, &data, &n, &err) == INF_OK && n == 2 &&
                   !strcmp(((const gguf_string *)data)[1].data, "b"), "string array");
    TEST_CHECK(gguf_get_array(f, "k.str", GGUF_TYPE_STRING, false, &data, &n, &err) == INF_ERR_FORMAT,
               "string is not an array");
    iv = 77;
    TEST_CHECK(gguf_get_int(f, "k.missing", true, &iv, &err) == INF_OK && iv == 77, "optional missing untouched");
    TEST_CHECK(gguf_get_int(f, "k.missing", false, &iv, &err) == INF_ERR_FORMAT &&
                   strstr(err.msg, "missing metadata key 'k.missing'") != NULL, "required missing: %s", err.msg);
    gguf_close(f);
}

/* ------------------------------------------------------------------ corrupt files */

/* A byte builder that remembers where named fields are, to patch them. */
typedef struct builder {
    uint8_t b[1024];
    size_t n;
} builder;

static size_t put(builder *bd, const void *p, size_t n) {
    size_t at = bd->n;
    memcpy(bd->b + bd->n, p, n);
    bd->n += n;
    return at;
}
static size_t put_u32(builder *bd, uint32_t v) { return put(bd, &v, 4); }
static size_t put_u64(builder *bd, uint64_t v) { return put(bd, &v, 8); }
static size_t put_str(builder *bd, const char *s) {
    size_t at = put_u64(bd, strlen(s));
    put(bd, s, strlen(s));
    return at;
}

/* Offsets of the fields the corrupt cases patch. */
typedef struct layout {
    size_t version, n_tensors, n_kv;
    size_t kv_arch_key_len, kv_arch_type, kv_arch_value_len;
    size_t kv_align_type, kv_align_value;
    size_t kv_arr_elem_type, kv_arr_count;
    size_t kv_nested_inner_elem_type, kv_nested_count;
    size_t kv_strarr_count, kv_strarr_first_len;
    size_t kv_aaa_key, kv_bbb_key;
    size_t t0_name, t0_n_dims, t0_ne0, t0_ne1, t0_type, t0_offset;
    size_t t1_name, t1_ne0, t1_type, t1_offset;
    size_t data_offset;
} layout;

/* The base file: 7 metadata entries (string, u32 alignment, u32 array,
 * nested array, string array, two u8 keys of equal length) and two tensors
 * (q8_0 [32, 2] at 0 and f32 [8] at 96). */
static void build_base(builder *bd, layout *L) {
    memset(bd, 0, sizeof *bd);
    put(bd, "GGUF", 4);
    L->version = put_u32(bd, 3);
    L->n_tensors = put_u64(bd, 2);
    L->n_kv = put_u64(bd, 7);

    L->kv_arch_key_len = put_str(bd, "general.architecture");
    L->kv_arch_type = put_u32(bd, GGUF_TYPE_STRING);
    L->kv_arch_value_len = put_str(bd, "qwen3");

    put_str(bd, "general.alignment");
    L->kv_align_type = put_u32(bd, GGUF_TYPE_UINT32);
    L->kv_align_value = put_u32(bd, 32);

    put_str(bd, "test.arr");
    put_u32(bd, GGUF_TYPE_ARRAY);
    L->kv_arr_elem_type = put_u32(bd, GGUF_TYPE_UINT32);
    L->kv_arr_count = put_u64(bd, 3);
    put_u32(bd, 1), put_u32(bd, 2), put_u32(bd, 3);

    put_str(bd, "test.nested"); /* [[1, 2], []] of i8 */
    put_u32(bd, GGUF_TYPE_ARRAY);
    put_u32(bd, GGUF_TYPE_ARRAY);
    L->kv_nested_count = put_u64(bd, 2);
    L->kv_nested_inner_elem_type = put_u32(bd, GGUF_TYPE_INT8);
    put_u64(bd, 2);
    put(bd, "\x01\x02", 2);
    put_u32(bd, GGUF_TYPE_INT8);
    put_u64(bd, 0);

    put_str(bd, "test.strs");
    put_u32(bd, GGUF_TYPE_ARRAY);
    put_u32(bd, GGUF_TYPE_STRING);
    L->kv_strarr_count = put_u64(bd, 2);
    L->kv_strarr_first_len = put_str(bd, "ab");
    put_str(bd, "");

    L->kv_aaa_key = put_str(bd, "test.aaa");
    put_u32(bd, GGUF_TYPE_UINT8);
    put(bd, "\x07", 1);
    L->kv_bbb_key = put_str(bd, "test.bbb");
    put_u32(bd, GGUF_TYPE_BOOL);
    put(bd, "\x02", 1); /* any nonzero byte reads as true */

    L->t0_name = put_str(bd, "a.weight");
    L->t0_n_dims = put_u32(bd, 2);
    L->t0_ne0 = put_u64(bd, 32);
    L->t0_ne1 = put_u64(bd, 2);
    L->t0_type = put_u32(bd, INF_DTYPE_Q8_0);
    L->t0_offset = put_u64(bd, 0);

    L->t1_name = put_str(bd, "b.weight");
    put_u32(bd, 1);
    L->t1_ne0 = put_u64(bd, 8);
    L->t1_type = put_u32(bd, INF_DTYPE_F32);
    L->t1_offset = put_u64(bd, 96);

    while (bd->n % 32) bd->b[bd->n++] = 0;
    L->data_offset = bd->n;
    for (int i = 0; i < 96 + 32; i++) bd->b[bd->n++] = (uint8_t)(i * 7 + 1);
}

static void patch_u32(builder *bd, size_t at, uint32_t v) { memcpy(bd->b + at, &v, 4); }
static void patch_u64(builder *bd, size_t at, uint64_t v) { memcpy(bd->b + at, &v, 8); }

/* Opens path in every mode; each must fail with a one-line message that
 * starts with the path. Returns the status of the mmap mode. */
static inf_status expect_failure(const char *path, const char *what, const char *must_contain) {
    inf_status first = INF_OK;
    for (int mode = 0; mode < 3; mode++) {
        gguf_file *f = NULL;
        inf_error err = {0};
        inf_status st = gguf_open(path, (gguf_open_mode)mode, &f, &err);
        if (mode == 0) first = st;
        if (!TEST_CHECK(st != INF_OK && f == NULL, "%s (mode %d): opened a corrupt file", what, mode)) {
            gguf_close(f);
            continue;
        }
        TEST_CHECK(err.status == st, "%s: err.status", what);
        TEST_CHECK(strncmp(err.msg, path, strlen(path)) == 0 && strlen(err.msg) > strlen(path) + 2,
                   "%s: message starts with the path: '%s'", what, err.msg);
        TEST_CHECK(!strchr(err.msg, '\n') && !strchr(err.msg, '\r'), "%s: one line", what);
        if (must_contain)
            TEST_CHECK(strstr(err.msg, must_contain) != NULL, "%s: message '%s' lacks '%s'", what, err.msg,
                       must_contain);
    }
    return first;
}

typedef enum patch_kind { P_U32, P_U64, P_BYTES, P_TRUNCATE } patch_kind;

typedef struct corrupt_case {
    const char *what;
    size_t layout_field; /* offsetof(layout, ...), or ABS: delta is a file offset */
    size_t delta;        /* added to the field's offset */
    patch_kind kind;
    uint64_t value;      /* P_U32/P_U64 value; P_TRUNCATE: bytes cut from the end */
    const char *bytes;   /* P_BYTES */
    inf_status expect;
    const char *must_contain;
} corrupt_case;

#define AT(field) offsetof(layout, field)
#define ABS SIZE_MAX

static void test_corrupt(void) {
    test_begin("corrupt files");
    builder base;
    layout L;
    build_base(&base, &L);
    char path[128];

    /* the base file itself is valid, in every mode */
    tmp_path(path, sizeof path, "base.gguf");
    TEST_CHECK(write_bytes(path, base.b, base.n), "write base");
    for (int mode = 0; mode < 3; mode++) {
        gguf_file *f = NULL;
        inf_error err = {0};
        if (!TEST_CHECK(gguf_open(path, (gguf_open_mode)mode, &f, &err) == INF_OK, "base opens: %s", err.msg)) continue;
        const gguf_kv *nested = gguf_find(f, "test.nested");
        TEST_CHECK(nested && nested->value.arr.n == 2 &&
                       ((gguf_value *)nested->value.arr.data)[0].arr.n == 2 &&
                       ((int8_t *)((gguf_value *)nested->value.arr.data)[0].arr.data)[1] == 2 &&
                       ((gguf_value *)nested->value.arr.data)[1].arr.n == 0, "nested array parsed");
        bool b = false;
        TEST_CHECK(gguf_get_bool(f, "test.bbb", false, &b, &err) == INF_OK && b, "bool byte 2 reads as true");
        TEST_CHECK(f->data_offset == L.data_offset && f->data_bytes == 128, "data section");
        if (mode != GGUF_OPEN_METADATA_ONLY)
            TEST_CHECK(f->tensors[1].data && memcmp(f->tensors[1].data, base.b + L.data_offset + 96, 32) == 0,
                       "tensor data");
        gguf_close(f);
    }

    /* truncated at every offset */
    int truncation_failures = 0;
    for (size_t cut = 0; cut < base.n; cut++) {
        tmp_path(path, sizeof path, "trunc.gguf");
        write_bytes(path, base.b, cut);
        int before = 0;
        for (int mode = 0; mode < 3; mode++) {
            gguf_file *f = NULL;
            inf_error err = {0};
            inf_status st = gguf_open(path, (gguf_open_mode)mode, &f, &err);
            if (st == INF_OK || f || !err.msg[0] || strchr(err.msg, '\n') || strncmp(err.msg, path, strlen(path))) {
                if (before++ == 0) TEST_CHECK(false, "truncated at %zu (mode %d): status %s '%s'", cut, mode,
                                              inf_status_name(st), err.msg);
                truncation_failures++;
            }
            gguf_close(f);
        }
    }
    TEST_CHECK(truncation_failures == 0, "%d truncations opened or gave a bad message", truncation_failures);
    TEST_CHECK(base.n > 300, "base file has %zu bytes", base.n);

    const uint64_t huge = 1ull << 62;
    const corrupt_case cases[] = {
        {"bad magic", ABS, 0, P_BYTES, 0, "GGUX", INF_ERR_FORMAT, "not a GGUF file"},
        {"magic of a safetensors file", ABS, 0, P_BYTES, 0, "\x10\x00\x00\x00", INF_ERR_FORMAT, "magic"},
        {"version 1", AT(version), 0, P_U32, 1, NULL, INF_ERR_UNSUPPORTED, "version 1"},
        {"version 4", AT(version), 0, P_U32, 4, NULL, INF_ERR_UNSUPPORTED, "version 4"},
        {"version 0", AT(version), 0, P_U32, 0, NULL, INF_ERR_UNSUPPORTED, "version 0"},
        {"big-endian version", AT(version), 0, P_U32, 0x03000000u, NULL, INF_ERR_UNSUPPORTED, "big-endian"},
        {"absurd metadata count", AT(n_kv), 0, P_U64, huge, NULL, INF_ERR_FORMAT, "metadata count"},
        {"metadata count max", AT(n_kv), 0, P_U64, UINT64_MAX, NULL, INF_ERR_FORMAT, "metadata count"},
        {"one metadata entry too many", AT(n_kv), 0, P_U64, 8, NULL, INF_ERR_FORMAT, NULL},
        {"absurd tensor count", AT(n_tensors), 0, P_U64, huge, NULL, INF_ERR_FORMAT, "tensor count"},
        {"one tensor too many", AT(n_tensors), 0, P_U64, 3, NULL, INF_ERR_FORMAT, NULL},
        {"absurd key length", AT(kv_arch_key_len), 0, P_U64, UINT64_MAX, NULL, INF_ERR_FORMAT, "string length"},
        {"absurd string value length", AT(kv_arch_value_len), 0, P_U64, huge, NULL, INF_ERR_FORMAT,
         "string length"},
        {"string length one past the end", AT(kv_arch_value_len), 0, P_U64, 400, NULL, INF_ERR_FORMAT, NULL},
        {"absurd array count", AT(kv_arr_count), 0, P_U64, huge, NULL, INF_ERR_FORMAT, "array count"},
        {"array count max", AT(kv_arr_count), 0, P_U64, UINT64_MAX, NULL, INF_ERR_FORMAT, "array count"},
        {"absurd string array count", AT(kv_strarr_count), 0, P_U64, huge / 4, NULL, INF_ERR_FORMAT, "array count"},
        {"absurd length in string array", AT(kv_strarr_first_len), 0, P_U64, huge, NULL, INF_ERR_FORMAT,
         "string length"},
        {"absurd nested array count", AT(kv_nested_count), 0, P_U64, huge, NULL, INF_ERR_FORMAT, "array count"},
        {"unknown value type 13", AT(kv_arch_type), 0, P_U32, 13, NULL, INF_ERR_FORMAT, "unknown value type 13"},
        {"unknown value type max", AT(kv_arch_type), 0, P_U32, UINT32_MAX, NULL, INF_ERR_FORMAT,
         "unknown value type"},
        {"unknown array element type", AT(kv_arr_elem_type), 0, P_U32, 99, NULL, INF_ERR_FORMAT,
         "unknown element type 99"},
        {"unknown nested element type", AT(kv_nested_inner_elem_type), 0, P_U32, 42, NULL, INF_ERR_FORMAT,
         "unknown element type 42"},
        {"NUL in a key", AT(kv_arch_key_len), 8 + 3, P_BYTES, 0, "\0", INF_ERR_FORMAT, "NUL"},
        {"duplicate key", AT(kv_bbb_key), 8 + 5, P_BYTES, 0, "aaa", INF_ERR_FORMAT, "duplicate metadata key 'test.aaa'"},
        {"alignment 0", AT(kv_align_value), 0, P_U32, 0, NULL, INF_ERR_FORMAT, "general.alignment"},
        {"alignment 3", AT(kv_align_value), 0, P_U32, 3, NULL, INF_ERR_FORMAT, "general.alignment"},
        {"alignment of type i32", AT(kv_align_type), 0, P_U32, GGUF_TYPE_INT32, NULL, INF_ERR_FORMAT,
         "general.alignment"},
        {"n_dims 0", AT(t0_n_dims), 0, P_U32, 0, NULL, INF_ERR_FORMAT, "'a.weight' has 0 dimensions"},
        {"n_dims 5", AT(t0_n_dims), 0, P_U32, 5, NULL, INF_ERR_FORMAT, "'a.weight' has 5 dimensions"},
        {"dimension 0", AT(t0_ne1), 0, P_U64, 0, NULL, INF_ERR_FORMAT, "dimension 1"},
        {"dimension above INT64_MAX", AT(t0_ne0), 0, P_U64, UINT64_MAX - 31, NULL, INF_ERR_FORMAT, "dimension 0"},
        {"dimension product overflow", AT(t0_ne1), 0, P_U64, 1ull << 62, NULL, INF_ERR_FORMAT, "overflow"},
        {"byte size overflow", AT(t1_ne0), 0, P_U64, 1ull << 62, NULL, INF_ERR_FORMAT, "overflow"},
        {"q8_0 row not a multiple of 32", AT(t0_ne0), 0, P_U64, 48, NULL, INF_ERR_FORMAT, "multiple of 32"},
        {"unsupported type iq2_xxs", AT(t1_type), 0, P_U32, 16, NULL, INF_ERR_UNSUPPORTED,
         "tensor 'b.weight' has type iq2_xxs, which inferno does not load (supported: f32, f16, bf16, q8_0, q4_0, "
         "q4_1, q5_0, q5_1, iq4_nl, q2_k..q6_k, iq4_xs)"},
        {"unsupported type mxfp4", AT(t0_type), 0, P_U32, 39, NULL, INF_ERR_UNSUPPORTED, "'a.weight' has type mxfp4"},
        {"unsupported type tq1_0", AT(t0_type), 0, P_U32, 34, NULL, INF_ERR_UNSUPPORTED, "'a.weight' has type tq1_0"},
        {"q4_k row not a multiple of 256", AT(t1_type), 0, P_U32, 12, NULL, INF_ERR_FORMAT, "multiple of 256"},
        {"unknown tensor type 99", AT(t1_type), 0, P_U32, 99, NULL, INF_ERR_FORMAT, "unknown type id 99"},
        {"offset past the end", AT(t1_offset), 0, P_U64, 1 << 20, NULL, INF_ERR_FORMAT, "past the end"},
        {"offset near 2^64", AT(t1_offset), 0, P_U64, UINT64_MAX - 31, NULL, INF_ERR_FORMAT, "past the end"},
        {"misaligned offset", AT(t1_offset), 0, P_U64, 97, NULL, INF_ERR_FORMAT, "not a multiple of the alignment"},
        {"tensor overruns the data by one block", AT(t1_offset), 0, P_U64, 128, NULL, INF_ERR_FORMAT, "past the end"},
        {"duplicate tensor name", AT(t1_name), 8, P_BYTES, 0, "a", INF_ERR_FORMAT, "duplicate tensor name 'a.weight'"},
        {"NUL in a tensor name", AT(t0_name), 8 + 1, P_BYTES, 0, "\0", INF_ERR_FORMAT, "NUL"},
        {"data section shorter than the tensors", ABS, 0, P_TRUNCATE, 4, NULL, INF_ERR_FORMAT, "past the end"},
        {"data section missing", ABS, 0, P_TRUNCATE, 128, NULL, INF_ERR_FORMAT, "past the end"},
    };
    const size_t n_cases = sizeof cases / sizeof cases[0];
    TEST_CHECK(n_cases >= 25, "at least 25 corrupt cases (%zu)", n_cases);
    for (size_t i = 0; i < n_cases; i++) {
        const corrupt_case *c = &cases[i];
        builder bd = base;
        size_t at = c->delta;
        if (c->layout_field != ABS) at += *(const size_t *)((const char *)&L + c->layout_field);
        switch (c->kind) {
        case P_U32: patch_u32(&bd, at, (uint32_t)c->value); break;
        case P_U64: patch_u64(&bd, at, c->value); break;
        case P_BYTES: memcpy(bd.b + at, c->bytes, strlen(c->bytes) ? strlen(c->bytes) : 1); break;
        case P_TRUNCATE: bd.n -= (size_t)c->value; break;
        }
        tmp_path(path, sizeof path, "corrupt.gguf");
        write_bytes(path, bd.b, bd.n);
        inf_status st = expect_failure(path, c->what, c->must_contain);
        TEST_CHECK(st == c->expect, "%s: status %s, expected %s", c->what, inf_status_name(st),
                   inf_status_name(c->expect));
    }

    /* arrays nested deeper than the reader allows */
    builder deep = {0};
    put(&deep, "GGUF", 4);
    put_u32(&deep, 3);
    put_u64(&deep, 0);
    put_u64(&deep, 1);
    put_str(&deep, "deep");
    put_u32(&deep, GGUF_TYPE_ARRAY);
    for (int level = 0; level < 40; level++) {
        put_u32(&deep, GGUF_TYPE_ARRAY);
        put_u64(&deep, 1);
    }
    put_u32(&deep, GGUF_TYPE_UINT8);
    put_u64(&deep, 0);
    tmp_path(path, sizeof path, "deep.gguf");
    write_bytes(path, deep.b, deep.n);
    TEST_CHECK(expect_failure(path, "arrays nested 40 deep", "nested deeper") == INF_ERR_FORMAT, "deep nesting");

    /* not a file at all */
    tmp_path(path, sizeof path, "empty-file.gguf");
    write_bytes(path, "", 0);
    TEST_CHECK(expect_failure(path, "empty file", "truncated") == INF_ERR_FORMAT, "empty file");
    tmp_path(path, sizeof path, "missing.gguf");
    TEST_CHECK(expect_failure(path, "missing file", "cannot open") == INF_ERR_IO, "missing file");
    TEST_CHECK(expect_failure(tmpdir, "a directory", "not a regular file") == INF_ERR_IO, "directory");
}

/* Random byte mutations of the base file: any outcome but a crash or a
 * malformed message is fine. */
static void test_mutations(void) {
    test_begin("random mutations");
    builder base;
    layout L;
    build_base(&base, &L);
    char path[128];
    tmp_path(path, sizeof path, "mutant.gguf");
    int bad = 0, opened = 0;
    const int n_mutants = 10000;
    for (int i = 0; i < n_mutants; i++) {
        builder bd = base;
        int n_flips = 1 + (int)(rng_next() % 4);
        for (int k = 0; k < n_flips; k++) {
            size_t at = (size_t)(rng_next() % L.data_offset); /* the header, where parsing happens */
            uint64_t r = rng_next();
            bd.b[at] = (r & 1) ? (uint8_t)(r >> 8) : (uint8_t)(bd.b[at] ^ (1u << ((r >> 8) % 8)));
        }
        write_bytes(path, bd.b, bd.n);
        gguf_file *f = NULL;
        inf_error err = {0};
        inf_status st = gguf_open(path, (gguf_open_mode)(i % 3), &f, &err);
        if (st == INF_OK) {
            opened++;
            gguf_close(f);
        } else if (!err.msg[0] || strchr(err.msg, '\n') || strncmp(err.msg, path, strlen(path))) {
            if (bad++ == 0) TEST_CHECK(false, "mutant %d: bad message '%s'", i, err.msg);
        }
    }
    TEST_CHECK(bad == 0, "%d mutants gave a malformed message", bad);
    printf("mutations: %d of %d mutants still opened (values changed but valid)\n", opened, n_mutants);
}

static void test_fuzz_seeds(void) {
    test_begin("fuzz seeds");
    static const char dir_path[] = "tests/fuzz/corpus/fuzz_gguf";
    DIR *dir = opendir(dir_path);
    if (!TEST_CHECK(dir != NULL, "cannot open %s (run from the repository root)", dir_path)) return;
    int n_seeds = 0, n_models = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        const char *name = e->d_name;
        size_t len = strlen(name);
        if (len < 5 || strcmp(name + len - 5, ".gguf")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir_path, name);
        n_seeds++;
        inf_status st[3];
        for (int mode = 0; mode < 3; mode++) {
            gguf_file *f = NULL;
            inf_error err = {0};
            st[mode] = gguf_open(path, (gguf_open_mode)mode, &f, &err);
            TEST_CHECK(st[mode] == INF_OK, "%s: mode %d: %s", name, mode, err.msg);
            gguf_close(f);
        }
        TEST_CHECK(st[0] == st[1] && st[1] == st[2], "%s: modes disagree", name);

        inf_tokenizer *tok = NULL;
        inf_error err = {0};
        inf_status tok_st = inf_tokenizer_load(path, &tok, &err);
        inf_tokenizer_free(tok);
        inf_load_options opt;
        inf_load_options_default(&opt);
        opt.n_threads = 1;
        inf_model *model = NULL;
        inf_status model_st = inf_model_load(path, &opt, &model, &err);
        inf_model_free(model);
        if (!strncmp(name, "model-", 6)) {
            n_models++;
            TEST_CHECK(model_st == INF_OK, "%s: the model seed does not load: %s", name, err.msg);
        } else if (!strcmp(name, "regress-empty-merge.gguf")) {
            /* a merge of two empty parts: once arithmetic on a NULL buffer */
            TEST_CHECK(tok_st == INF_ERR_FORMAT, "%s: tokenizer status %s", name, inf_status_name(tok_st));
        }
    }
    closedir(dir);
    TEST_CHECK(n_seeds >= 6 && n_models >= 3, "%d seeds, %d models found", n_seeds, n_models);
}

int main(void) {
    if (!(tmpdir = test_tmpdir("test-gguf"))) return 1;
    test_round_trip();
    test_writer_errors();
    test_getters();
    test_corrupt();
    test_mutations();
    test_fuzz_seeds();
    test_tmpdir_remove();
    return test_summary();
}

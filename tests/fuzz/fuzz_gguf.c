/*
 * fuzz_gguf.c — libFuzzer target for the GGUF reader and everything that
 * reads an opened GGUF: the tokenizer and chat template built from its
 * metadata, the model loader, and a one-token forward pass.
 *
 * The input is a whole file. It is opened in all three modes (mmap, read
 * into memory, metadata only), and the results must agree: the same status,
 * the same metadata and tensor infos, and identical tensor bytes in the two
 * modes that load data. A file that opens is written back with the GGUF
 * writer and read again, and must come back equal. Then the tokenizer and
 * chat template are built from its metadata, and the model loaded; a loaded
 * model evaluates one token and must refuse an id outside its vocabulary.
 * Errors are fine; crashes, leaks, undefined behaviour and disagreements
 * abort.
 *
 * Build and run: scripts/fuzz.sh (seeds: tests/fuzz/corpus/fuzz_gguf/, plus
 * the golden models and tiny synthetic ones made at run time).
 */
#include "fuzz_common.h"

#include "chat/chat_template.h"
#include "inferno.h"
#include "io/gguf.h"
#include "tok/tokenizer.h"

#include <stdint.h>
#include <string.h>

static fuzz_file input;
static char rewrite_path[128]; /* where the writer round trip writes */

static void fuzz_init(void) {
    fuzz_file_init(&input, "fuzz_gguf");
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(rewrite_path, sizeof rewrite_path, "%s/fuzz_gguf.%ld.gguf", dir, (long)getpid());
}

/* ------------------------------------------------------------------ comparing files */

static bool value_equal(const gguf_value *a, const gguf_value *b);

static bool string_equal(const gguf_string *a, const gguf_string *b) {
    return a->len == b->len && !memcmp(a->data, b->data, (size_t)a->len);
}

static size_t packed_width(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: return 1;
    case GGUF_TYPE_BOOL: return sizeof(bool);
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    default: return 8;
    }
}

static bool value_equal(const gguf_value *a, const gguf_value *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case GGUF_TYPE_STRING: return string_equal(&a->str, &b->str);
    case GGUF_TYPE_BOOL: return a->b == b->b;
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64: return !memcmp(&a->f64, &b->f64, sizeof a->f64);
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64: return a->i64 == b->i64;
    case GGUF_TYPE_ARRAY: break;
    default: return a->u64 == b->u64;
    }
    if (a->arr.elem_type != b->arr.elem_type || a->arr.n != b->arr.n) return false;
    for (uint64_t i = 0; i < a->arr.n; i++) {
        if (a->arr.elem_type == GGUF_TYPE_STRING) {
            if (!string_equal(&((const gguf_string *)a->arr.data)[i], &((const gguf_string *)b->arr.data)[i]))
                return false;
        } else if (a->arr.elem_type == GGUF_TYPE_ARRAY) {
            if (!value_equal(&((const gguf_value *)a->arr.data)[i], &((const gguf_value *)b->arr.data)[i]))
                return false;
        }
    }
    if (a->arr.elem_type == GGUF_TYPE_STRING || a->arr.elem_type == GGUF_TYPE_ARRAY || a->arr.n == 0) return true;
    return !memcmp(a->arr.data, b->arr.data, (size_t)a->arr.n * packed_width(a->arr.elem_type));
}

/* Same metadata and tensor infos; tensor bytes too when both hold data. */
static void check_same(const gguf_file *a, const gguf_file *b, const char *what) {
    FUZZ_CHECK(a->n_kv == b->n_kv && a->n_tensors == b->n_tensors, "%s: %llu/%llu keys, %llu/%llu tensors", what,
               (unsigned long long)a->n_kv, (unsigned long long)b->n_kv, (unsigned long long)a->n_tensors,
               (unsigned long long)b->n_tensors);
    FUZZ_CHECK(a->alignment == b->alignment, "%s: alignment", what);
    for (uint64_t i = 0; i < a->n_kv; i++) {
        FUZZ_CHECK(string_equal(&a->kv[i].key, &b->kv[i].key), "%s: key %llu", what, (unsigned long long)i);
        FUZZ_CHECK(value_equal(&a->kv[i].value, &b->kv[i].value), "%s: value of '%s'", what, a->kv[i].key.data);
    }
    for (uint64_t i = 0; i < a->n_tensors; i++) {
        const gguf_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        FUZZ_CHECK(string_equal(&x->name, &y->name) && x->n_dims == y->n_dims && x->type == y->type &&
                       x->nbytes == y->nbytes && !memcmp(x->ne, y->ne, sizeof x->ne),
                   "%s: info of tensor '%s'", what, x->name.data);
        if (x->data && y->data)
            FUZZ_CHECK(!memcmp(x->data, y->data, (size_t)x->nbytes), "%s: data of tensor '%s'", what, x->name.data);
    }
}

/* ------------------------------------------------------------------ the stages */

/* Every typed getter on every key: each either converts or names the key in an error. */
static void exercise_getters(const gguf_file *f) {
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const char *key = f->kv[i].key.data;
        FUZZ_CHECK(gguf_find(f, key) == &f->kv[i], "gguf_find('%s') is not the entry itself", key);
        int64_t iv;
        double dv;
        bool bv;
        const gguf_string *sv;
        const void *av;
        uint64_t an;
        inf_error err;
        (void)gguf_get_int(f, key, false, &iv, &err);
        (void)gguf_get_float(f, key, false, &dv, &err);
        (void)gguf_get_bool(f, key, false, &bv, &err);
        (void)gguf_get_string(f, key, false, &sv, &err);
        for (int t = GGUF_TYPE_UINT8; t <= GGUF_TYPE_FLOAT64; t++)
            if (t != GGUF_TYPE_ARRAY) (void)gguf_get_array(f, key, (gguf_type)t, false, &av, &an, &err);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++)
        FUZZ_CHECK(gguf_find_tensor(f, f->tensors[i].name.data) == &f->tensors[i], "gguf_find_tensor('%s')",
                   f->tensors[i].name.data);
}

/* Writes f back with the writer and checks that the copy reads back equal.
 * Skipped when the copy would be far larger than the input: the writer
 * pads every tensor to the alignment, and tensors may share bytes in the
 * input, so a small file can describe a huge well-formed one. */
static void check_rewrite(const gguf_file *f, size_t input_bytes) {
    uint64_t out_bytes = f->data_offset, limit = 4 * (uint64_t)input_bytes + (1 << 20);
    for (uint64_t i = 0; i < f->n_tensors && out_bytes <= limit; i++)
        out_bytes += f->tensors[i].nbytes + f->alignment;
    if (out_bytes > limit) return;
    gguf_writer *w = gguf_writer_new();
    FUZZ_CHECK(w != NULL, "gguf_writer_new");
    for (uint64_t i = 0; i < f->n_kv; i++) gguf_writer_set_value(w, f->kv[i].key.data, &f->kv[i].value);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        gguf_writer_add_tensor(w, t->name.data, t->type, t->n_dims, t->ne, t->data);
    }
    inf_error err = {0};
    inf_status st = gguf_writer_write(w, rewrite_path, &err);
    gguf_writer_free(w);
    FUZZ_CHECK(st == INF_OK, "the writer refuses what the reader accepted: %s", err.msg);
    gguf_file *copy = NULL;
    st = gguf_open(rewrite_path, GGUF_OPEN_READ, &copy, &err);
    unlink(rewrite_path);
    FUZZ_CHECK(st == INF_OK, "the reader refuses what the writer wrote: %s", err.msg);
    check_same(f, copy, "rewrite");
    gguf_close(copy);
}

static void exercise_tokenizer(const gguf_file *f) {
    inf_tokenizer *tok = NULL;
    inf_error err;
    if (inf_tokenizer_from_gguf(f, &tok, &err) != INF_OK) return;
    static const char text[] = "Hello <|im_start|>w\xC3\xB6rld e\xCC\x81 123\n\n  <think>x";
    for (int flags = 0; flags <= INF_TOKENIZE_NO_SPECIAL; flags += INF_TOKENIZE_NO_SPECIAL) {
        int32_t *ids = NULL;
        size_t n_ids = 0;
        if (inf_tokenize(tok, text, sizeof text - 1, flags, &ids, &n_ids, &err) == INF_OK) {
            char *out = NULL;
            size_t len = 0;
            inf_status st = inf_detokenize(tok, ids, n_ids, &out, &len, &err);
            FUZZ_CHECK(st == INF_OK, "ids from inf_tokenize do not detokenize: %s", err.msg);
            free(out);
        }
        free(ids);
    }
    inf_tokenizer_free(tok);
}

static void exercise_chat_template(const gguf_file *f) {
    inf_chat_template *tmpl = NULL;
    inf_error err;
    if (inf_chat_template_from_gguf(f, &tmpl, &err) != INF_OK) return;
    static const char request[] =
        "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"hi\"}],"
        "\"add_generation_prompt\":true}";
    char *out = NULL;
    size_t len = 0;
    inf_status st = inf_chat_template_render(tmpl, request, sizeof request - 1, &out, &len, &err);
    FUZZ_CHECK(st == INF_OK, "a plain request does not render: %s", err.msg);
    free(out);
    (void)inf_chat_template_describe(tmpl);
    inf_chat_template_free(tmpl);
}

static void exercise_model(const char *path) {
    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = 1;
    opt.use_mmap = false; /* tensor data on the heap, where AddressSanitizer sees overruns */
    inf_model *model = NULL;
    inf_error err;
    if (inf_model_load(path, &opt, &model, &err) != INF_OK) return;

    inf_model_info info;
    inf_model_get_info(model, &info);
    FUZZ_CHECK(info.n_vocab >= 1 && info.n_layer >= 1, "loaded model with %d tokens, %d layers", info.n_vocab,
               info.n_layer);
    size_t n_tensors = inf_model_tensor_count(model);
    for (size_t i = 0; i < n_tensors; i++) {
        inf_tensor_info ti;
        FUZZ_CHECK(inf_model_tensor_info(model, i, &ti), "tensor info %zu of %zu", i, n_tensors);
    }
    const inf_tokenizer *tok = inf_model_tokenizer(model);
    FUZZ_CHECK(!tok || inf_tokenizer_n_vocab(tok) <= info.n_vocab, "tokenizer larger than the embedding");

    inf_session *session = NULL;
    if (inf_session_new(model, info.n_ctx_train < 2 ? 1 : 2, &session, &err) == INF_OK) {
        float *logits = malloc((size_t)info.n_vocab * sizeof *logits);
        FUZZ_CHECK(logits != NULL, "logits");
        int32_t bad = info.n_vocab;
        inf_status st = inf_session_eval(session, &bad, 1, INF_LOGITS_LAST, logits, &err);
        FUZZ_CHECK(st == INF_ERR_INVALID, "id %d past the vocabulary gave status %d", bad, st);
        int32_t token = 0;
        st = inf_session_eval(session, &token, 1, INF_LOGITS_LAST, logits, &err);
        FUZZ_CHECK(st == INF_OK, "one-token eval failed: %s", err.msg);
        FUZZ_CHECK(inf_session_n_past(session) == 1, "n_past %d after one token", inf_session_n_past(session));
        free(logits);
        inf_session_free(session);
    }
    inf_model_free(model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool ready;
    if (!ready) {
        fuzz_init();
        ready = true;
    }
    fuzz_file_set(&input, data, size);

    static const gguf_open_mode modes[3] = {GGUF_OPEN_MMAP, GGUF_OPEN_READ, GGUF_OPEN_METADATA_ONLY};
    gguf_file *files[3] = {0};
    inf_status status[3];
    inf_error err[3];
    for (int m = 0; m < 3; m++) {
        status[m] = gguf_open(input.path, modes[m], &files[m], &err[m]);
        FUZZ_CHECK((status[m] == INF_OK) == (files[m] != NULL), "mode %d: status %d with file %p", m, status[m],
                   (void *)files[m]);
        if (status[m]) FUZZ_CHECK(err[m].status == status[m] && err[m].msg[0], "mode %d: no error message", m);
    }
    FUZZ_CHECK(status[0] == status[1] && status[1] == status[2], "modes disagree: %d (%s) / %d (%s) / %d (%s)",
               status[0], status[0] ? err[0].msg : "ok", status[1], status[1] ? err[1].msg : "ok", status[2],
               status[2] ? err[2].msg : "ok");
    if (status[0] == INF_OK) {
        check_same(files[0], files[1], "mmap vs read");
        check_same(files[0], files[2], "mmap vs metadata");
        for (uint64_t i = 0; i < files[2]->n_tensors; i++)
            FUZZ_CHECK(files[2]->tensors[i].data == NULL, "metadata-only open has tensor data");
        exercise_getters(files[1]);
        check_rewrite(files[1], size);
        exercise_tokenizer(files[2]);
        exercise_chat_template(files[2]);
    }
    for (int m = 0; m < 3; m++) gguf_close(files[m]);
    if (status[0] == INF_OK) exercise_model(input.path);
    return 0;
}

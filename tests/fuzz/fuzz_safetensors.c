/*
 * fuzz_safetensors.c — libFuzzer target for the .safetensors reader.
 *
 * The input is a whole file, opened in all three modes (mmap, read into
 * memory, metadata only). The modes must agree on the status and, when it
 * opens, on every tensor's name, dtype, shape and offsets; the two modes
 * that load data must hold the same bytes; and what opened must satisfy
 * the reader's promises: sizes match shapes, and the tensors tile the data
 * section. Errors are fine; crashes, leaks, undefined behaviour and
 * disagreements abort.
 *
 * Build and run: scripts/fuzz.sh fuzz_safetensors (seeds:
 * tests/fuzz/corpus/fuzz_safetensors/).
 */
#include "fuzz_common.h"

#include "io/safetensors.h"

#include <stdint.h>
#include <string.h>

static fuzz_file input;

static void check_same(const safetensors_file *a, const safetensors_file *b, const char *what) {
    FUZZ_CHECK(a->n_tensors == b->n_tensors && a->data_offset == b->data_offset && a->data_bytes == b->data_bytes,
               "%s: file layout differs", what);
    for (size_t i = 0; i < a->n_tensors; i++) {
        const safetensors_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        FUZZ_CHECK(!strcmp(x->name, y->name) && x->dtype == y->dtype && x->n_dims == y->n_dims && x->begin == y->begin &&
                       x->end == y->end && !memcmp(x->shape, y->shape, sizeof x->shape),
                   "%s: tensor %zu differs", what, i);
        if (x->data && y->data)
            FUZZ_CHECK(!memcmp(x->data, y->data, (size_t)(x->end - x->begin)), "%s: tensor %zu data differs", what, i);
    }
}

static void check_promises(const safetensors_file *f) {
    uint64_t covered = 0;
    for (size_t i = 0; i < f->n_tensors; i++) {
        const safetensors_tensor *t = &f->tensors[i];
        uint64_t n = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) n *= t->shape[d];
        FUZZ_CHECK(n == t->n_elems && n * t->elem_bytes == t->end - t->begin, "tensor '%s' size", t->name);
        FUZZ_CHECK(t->begin <= t->end && t->end <= f->data_bytes, "tensor '%s' bounds", t->name);
        FUZZ_CHECK(t->name[0] && safetensors_find(f, t->name) == t, "tensor '%s' name", t->name);
        covered += t->end - t->begin;
    }
    FUZZ_CHECK(covered == f->data_bytes, "tensors cover %llu of %llu bytes", (unsigned long long)covered,
               (unsigned long long)f->data_bytes);
    FUZZ_CHECK(f->data_offset == 8 + f->header_bytes && f->data_offset + f->data_bytes == f->file_bytes, "layout");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool ready;
    if (!ready) {
        fuzz_file_init(&input, "fuzz_safetensors");
        ready = true;
    }
    fuzz_file_set(&input, data, size);
    safetensors_file *files[3] = {0};
    inf_status status[3];
    inf_error err[3];
    for (int m = 0; m < 3; m++) {
        status[m] = safetensors_open(input.path, (safetensors_open_mode)m, NULL, NULL, &files[m], &err[m]);
        FUZZ_CHECK((status[m] == INF_OK) == (files[m] != NULL), "mode %d: status %d", m, status[m]);
        if (status[m])
            FUZZ_CHECK(err[m].status == status[m] && err[m].msg[0] && !strchr(err[m].msg, '\n'),
                       "mode %d: no one-line error message", m);
    }
    FUZZ_CHECK(status[0] == status[1] && status[1] == status[2], "modes disagree: %d / %d / %d", status[0], status[1],
               status[2]);
    if (status[0] == INF_OK) {
        check_promises(files[0]);
        check_same(files[0], files[1], "mmap vs read");
        check_same(files[0], files[2], "mmap vs metadata");
    }
    for (int m = 0; m < 3; m++) safetensors_close(files[m]);
    return 0;
}

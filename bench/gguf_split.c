/*
 * gguf_split.c — splits a GGUF as llama.cpp's `llama-gguf-split --split`
 * does (the same layout and keys: src/io/gguf_split.h), for testing and
 * measuring inferno's loading of split models without llama.cpp:
 *
 *   build/gguf_split [--split-max-tensors N] [--no-tensor-first-split] IN.gguf OUT_PREFIX
 *
 * writes OUT_PREFIX-00001-of-0000K.gguf ... (N tensors per shard, default
 * 128 as llama-gguf-split's; the first shard with no tensors when asked)
 * and prints their number. Not part of the library: a helper, built by
 * `make tests` because tests/cli/bad_input.sh and pull.sh use it.
 */
#include "inferno.h"
#include "io/gguf_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr, "usage: gguf_split [--split-max-tensors N] [--no-tensor-first-split] IN.gguf OUT_PREFIX\n");
    return 2;
}

int main(int argc, char **argv) {
    unsigned long long max_tensors = 128;
    bool no_tensors_first = false;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--split-max-tensors") && i + 1 < argc) {
            char *end;
            max_tensors = strtoull(argv[++i], &end, 10);
            if (*end || max_tensors == 0) return usage();
        } else if (!strcmp(argv[i], "--no-tensor-first-split")) {
            no_tensors_first = true;
        } else {
            return usage();
        }
    }
    if (argc - i != 2) return usage();
    gguf_file *g = NULL;
    inf_error err = {0};
    int n = 0;
    if (gguf_open_split(argv[i], GGUF_OPEN_MMAP, NULL, NULL, &g, &err) ||
        gguf_split_write(g, max_tensors, no_tensors_first, argv[i + 1], &n, &err)) {
        fprintf(stderr, "gguf_split: %s\n", err.msg);
        gguf_close(g);
        return 1;
    }
    printf("%d\n", n);
    gguf_close(g);
    return 0;
}

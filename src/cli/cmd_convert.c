/*
 * cmd_convert.c — `inferno convert DIR -o OUT.gguf`: a Hugging Face Qwen3
 * checkpoint directory to the GGUF llama.cpp's converter writes for it.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *usage_text =
    "usage: inferno convert DIR -o OUT.gguf [--type f32|f16|bf16|q8_0] [--name NAME]\n"
    "\n"
    "Writes the GGUF that llama.cpp's convert_hf_to_gguf.py writes for a Hugging Face\n"
    "Qwen3 checkpoint directory (config.json, model.safetensors or its shards with\n"
    "model.safetensors.index.json, tokenizer.json, tokenizer_config.json, and\n"
    "generation_config.json for the sampling keys): the same metadata keys, tokenizer\n"
    "arrays, tensor names and shapes. Norms are f32.\n"
    "  --type T    the matrices' type (default: as stored in the checkpoint)\n"
    "  --name NAME general.name (default: the directory's name)\n";

int cmd_convert(int argc, char **argv) {
    inf_convert_options opt;
    inf_convert_options_default(&opt);
    const char *dir = NULL, *out = NULL, *v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(v = cli_flag_value("convert", argc, argv, &i))) return EXIT_USAGE;
            out = v;
        } else if (!strcmp(a, "--type")) {
            if (!(v = cli_flag_value("convert", argc, argv, &i))) return EXIT_USAGE;
            if (!inf_dtype_from_name(v, &opt.type))
                return cli_fail(EXIT_USAGE, "convert", "--type wants f32, f16, bf16 or q8_0, got '%s'", v);
            opt.keep_type = false;
        } else if (!strcmp(a, "--name")) {
            if (!(v = cli_flag_value("convert", argc, argv, &i))) return EXIT_USAGE;
            opt.name = v;
        } else if (a[0] == '-' && a[1]) {
            return cli_fail(EXIT_USAGE, "convert", "unknown option '%s' (see inferno convert --help)", a);
        } else if (dir) {
            return cli_fail(EXIT_USAGE, "convert", "more than one directory ('%s' and '%s')", dir, a);
        } else {
            dir = a;
        }
    }
    if (!dir) return cli_fail(EXIT_USAGE, "convert", "no checkpoint directory (see inferno convert --help)");
    if (!out) return cli_fail(EXIT_USAGE, "convert", "-o OUT.gguf is required");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    inf_error err = {0};
    if (inf_convert_checkpoint(dir, out, &opt, &err) != INF_OK) return cli_fail_error("convert", &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "wrote %s (%.1f s)\n", out, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return 0;
}

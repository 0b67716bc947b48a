/*
 * cmd_info.c — `inferno info`: what a model file holds.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const char *usage_text =
    "usage: inferno info -m MODEL [--no-mmap]\n"
    "\n"
    "Prints the architecture, hyperparameters, parameter count, size, weight type,\n"
    "tokenizer and the CPU kernel path in use.\n";

int cmd_info(int argc, char **argv) {
    cli_model_args a = {0};
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag("info", &a, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        return cli_fail(EXIT_USAGE, "info", "unknown option '%s' (see --help)", argv[i]);
    }
    if (!a.model_path) return cli_fail(EXIT_USAGE, "info", "no model: give -m MODEL.gguf");
    inf_model *m = cli_load_model("info", &a);
    if (!m) return EXIT_RUNTIME;
    inf_model_info in;
    inf_model_get_info(m, &in);
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    printf("file          %s\n", a.model_path);
    printf("name          %s\n", in.name);
    printf("architecture  %s\n", in.architecture);
    printf("layers        %d\n", in.n_layer);
    printf("hidden        %d\n", in.n_embd);
    printf("ffn           %d\n", in.n_ff);
    printf("heads         %d query, %d key/value, head_dim %d\n", in.n_head, in.n_head_kv, in.head_dim);
    printf("vocabulary    %d\n", in.n_vocab);
    printf("context       %d (trained)\n", in.n_ctx_train);
    printf("rope base     %g\n", (double)in.rope_freq_base);
    printf("rms eps       %g\n", (double)in.rms_norm_eps);
    printf("output head   %s\n", in.tied_output ? "tied to token_embd" : "separate");
    printf("weights       %s, %.3f B parameters, %.1f MiB\n", inf_dtype_name(in.weight_type),
           (double)in.n_params / 1e9, (double)in.weight_bytes / (1024.0 * 1024.0));
    if (tok) printf("tokenizer     byte-level BPE, %d tokens, eos %d\n", inf_tokenizer_n_vocab(tok), inf_tokenizer_eos(tok));
    else printf("tokenizer     none\n");
    printf("cpu path      %s, %d threads\n", in.isa, in.n_threads);
    inf_model_free(m);
    return 0;
}

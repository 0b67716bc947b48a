/*
 * cmd_info.c — `inferno info`: what a model file holds: hyperparameters,
 * parameter count and size, the mix of tensor types, the tokenizer, the
 * chat template, the recommended sampling, the CPU path; with --tensors
 * the table of every tensor.
 */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *usage_text =
    "usage: inferno info -m MODEL [--tensors] [--no-mmap] [--no-repack] [--quantize q8_0] [-t THREADS]\n"
    "\n"
    "Prints the architecture, hyperparameters, parameter count, size, the mix of\n"
    "tensor types (bytes per type), the tokenizer, the chat template, the sampling\n"
    "the model recommends, and the CPU kernel path in use.\n"
    "MODEL: a GGUF file, a Hugging Face checkpoint directory, or ORG/NAME[:TAG] from\n"
    "the Hugging Face cache (see inferno pull).\n"
    "  --tensors   also list every tensor: name, type, shape (GGUF order), bytes\n";

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static void print_special(const inf_tokenizer *tok, const char *text, bool *first) {
    int32_t id = inf_tokenizer_find_special(tok, text);
    if (id < 0) return;
    printf("%s%s %d", *first ? "" : ", ", text, id);
    *first = false;
}

static void print_type_mix(const inf_model *m) {
    enum { N_TYPES = 64 };
    uint64_t bytes[N_TYPES] = {0}, count[N_TYPES] = {0}, total = 0;
    size_t n = inf_model_tensor_count(m);
    for (size_t i = 0; i < n; i++) {
        inf_tensor_info t;
        inf_model_tensor_info(m, i, &t);
        if ((unsigned)t.type >= N_TYPES) continue;
        bytes[t.type] += t.n_bytes;
        count[t.type]++;
        total += t.n_bytes;
    }
    printf("type mix     ");
    bool first = true;
    for (int pass = 0; pass < N_TYPES; pass++) {
        /* largest first */
        int best = -1;
        for (int t = 0; t < N_TYPES; t++)
            if (count[t] && (best < 0 || bytes[t] > bytes[best])) best = t;
        if (best < 0) break;
        printf("%s%s %.1f MiB (%.1f%%, %" PRIu64 " tensors)", first ? "" : ", ", inf_dtype_name((inf_dtype)best),
               mib(bytes[best]), total ? 100.0 * (double)bytes[best] / (double)total : 0.0, count[best]);
        count[best] = 0;
        first = false;
    }
    printf("\n");
}

static void print_tensors(const inf_model *m) {
    size_t n = inf_model_tensor_count(m), width = 4;
    for (size_t i = 0; i < n; i++) {
        inf_tensor_info t;
        inf_model_tensor_info(m, i, &t);
        if (strlen(t.name) > width) width = strlen(t.name);
    }
    printf("\n%-*s  %-5s  %-20s  %12s\n", (int)width, "name", "type", "shape", "bytes");
    for (size_t i = 0; i < n; i++) {
        inf_tensor_info t;
        inf_model_tensor_info(m, i, &t);
        char shape[96] = "";
        for (int d = 0; d < t.n_dims; d++) {
            size_t len = strlen(shape);
            snprintf(shape + len, sizeof shape - len, "%s%" PRIu64, d ? " x " : "", t.ne[d]);
        }
        printf("%-*s  %-5s  %-20s  %12" PRIu64 "\n", (int)width, t.name, inf_dtype_name(t.type), shape, t.n_bytes);
    }
}

int cmd_info(int argc, char **argv) {
    cli_model_args a = {0};
    bool tensors = false;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag("info", &a, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--tensors")) {
            tensors = true;
            continue;
        }
        return cli_fail(EXIT_USAGE, "info", "unknown option '%s' (see --help)", argv[i]);
    }
    if (!a.model_path) return cli_fail(EXIT_USAGE, "info", "no model: give -m MODEL.gguf");
    int rc = cli_resolve_model("info", &a.model_path);
    if (rc) return rc;
    if (a.prompt || a.token_list) return cli_fail(EXIT_USAGE, "info", "info takes no prompt");
    inf_model *m = cli_load_model("info", &a);
    if (!m) return EXIT_RUNTIME;
    inf_model_info in;
    inf_model_get_info(m, &in);
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    struct stat sb;
    if (stat(a.model_path, &sb) == 0 && S_ISDIR(sb.st_mode))
        printf("file         %s (Hugging Face checkpoint directory: %.1f MiB in %d safetensors file%s)\n", a.model_path,
               mib(in.file_bytes), in.n_files, in.n_files == 1 ? "" : "s");
    else if (in.n_files > 1) /* a split GGUF, named by any of its shards */
        printf("file         %s (%.1f MiB in %d shards)\n", a.model_path, mib(in.file_bytes), in.n_files);
    else
        printf("file         %s (%.1f MiB)\n", a.model_path, mib(in.file_bytes));
    printf("name         %s\n", in.name);
    printf("architecture %s\n", in.architecture);
    printf("layers       %d\n", in.n_layer);
    printf("hidden       %d\n", in.n_embd);
    printf("ffn          %d\n", in.n_ff);
    printf("heads        %d query, %d key/value, head_dim %d\n", in.n_head, in.n_head_kv, in.head_dim);
    printf("vocabulary   %d\n", in.n_vocab);
    if (in.n_ctx_max > in.n_ctx_train)
        printf("context      %d (trained), up to %d with RoPE scaling\n", in.n_ctx_train, in.n_ctx_max);
    else
        printf("context      %d (trained)\n", in.n_ctx_train);
    printf("rope base    %g\n", (double)in.rope_freq_base);
    if (in.rope_scaling == INF_ROPE_SCALING_YARN)
        printf("rope scaling yarn, factor %g, original context %d, cos/sin scale %.6g\n", (double)in.rope_scale,
               in.rope_orig_ctx, (double)in.rope_attn_factor);
    else if (in.rope_scaling == INF_ROPE_SCALING_LINEAR)
        printf("rope scaling linear, factor %g\n", (double)in.rope_scale);
    else
        printf("rope scaling none\n");
    printf("rms eps      %g\n", (double)in.rms_norm_eps);
    printf("output head  %s\n", in.tied_output ? "tied to token_embd" : "separate");
    printf("parameters   %" PRIu64 " (%.3f B)\n", in.n_params, (double)in.n_params / 1e9);
    printf("weights      %s (most bytes), %.1f MiB of tensor data in %zu tensors\n", inf_dtype_name(in.weight_type),
           mib(in.weight_bytes), inf_model_tensor_count(m));
    print_type_mix(m);
    if (tok) {
        int32_t eos = inf_tokenizer_eos(tok);
        size_t len = 0;
        const char *eos_text = eos >= 0 ? inf_tokenizer_token_bytes(tok, eos, &len) : NULL;
        printf("tokenizer    byte-level BPE, %d tokens, eos %d%s%s%s\n", inf_tokenizer_n_vocab(tok), eos,
               eos_text ? " '" : "", eos_text ? eos_text : "", eos_text ? "'" : "");
        printf("special      ");
        bool first = true;
        const char *specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>"};
        for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) print_special(tok, specials[i], &first);
        printf("%s\n", first ? "none" : "");
    } else {
        printf("tokenizer    none (prompts must be token ids)\n");
    }
    inf_chat_template *tmpl = NULL;
    inf_error err = {0};
    if (inf_chat_template_load(a.model_path, &tmpl, &err) == INF_OK)
        printf("chat         %s\n", inf_chat_template_describe(tmpl));
    else
        printf("chat         unusable: %s\n", err.msg);
    inf_chat_template_free(tmpl);
    for (int thinking = 1; thinking >= 0; thinking--) {
        inf_sampler_params p;
        inf_model_sampling_defaults(m, thinking, &p);
        printf("sampling     %-12s temp %g, top-k %d, top-p %g, min-p %g, repeat penalty %g\n",
               thinking ? "(thinking)" : "(no think)", (double)p.temperature, p.top_k, (double)p.top_p,
               (double)p.min_p, (double)p.repeat_penalty);
    }
    printf("cpu path     %s, %d threads\n", in.isa, in.n_threads);
    if (tensors) print_tensors(m);
    inf_model_free(m);
    return 0;
}

/*
 * cmd_synth.c — `inferno synth`: writes a Qwen3 GGUF with random weights in
 * any geometry and weight type, with the real Qwen3 vocabulary (full or
 * truncated), laid out as llama.cpp's converter writes Qwen3.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *usage_text =
    "usage: inferno synth -o OUT.gguf [--geometry 0.6b|1.7b|4b|8b|14b|32b] [--type f32|f16|bf16|q8_0]\n"
    "                     [--layers N] [--embd N]\n"
    "                     [--ff N] [--heads N] [--kv-heads N] [--head-dim N] [--ctx N]\n"
    "                     [--vocab N] [--untied] [--seed S] [--tokenizer tokenizer.json]\n"
    "                     [--tokenizer-config tokenizer_config.json] [--name NAME]\n"
    "                     [--rope-scaling none|linear|yarn --rope-scale F --yarn-orig-ctx N]\n"
    "\n"
    "Writes a Qwen3 model with RANDOM weights (deterministic for a seed), laid out\n"
    "exactly as llama.cpp's converter writes Qwen3. Defaults: the Qwen3-0.6B geometry\n"
    "(28 layers, hidden 1024, FFN 3072, 16 heads, 8 KV heads, head_dim 128, context\n"
    "40960), q8_0, output head tied to the embedding, seed 1, and the full Qwen3\n"
    "vocabulary from data/qwen3-tokenizer (the chat template from the\n"
    "tokenizer_config.json beside the tokenizer.json).\n"
    "  --vocab N     0 = full (151936 rows, padded as Qwen3's config); else the first\n"
    "                N - 26 BPE tokens, then the 26 added tokens\n"
    "  --untied      write a separate output.weight\n"
    "  --geometry G  the shape of a released Qwen3 model (its config.json): layers, hidden,\n"
    "                FFN, heads, KV heads, tied or not; the other flags change it from there\n"
    "                (e.g. --geometry 8b --layers 1), wherever they stand\n"
    "  --rope-scaling T, --rope-scale F, --yarn-orig-ctx N\n"
    "                write qwen3.rope.scaling.{type, factor, original_context_length} as\n"
    "                llama.cpp's converter writes a config's rope_scaling (Qwen3's YaRN:\n"
    "                yarn, 4, 32768)\n";

/* One integer flag: its name, where it goes and its range. */
typedef struct int_flag {
    const char *name;
    int *dst;
    long min, max;
} int_flag;

int cmd_synth(int argc, char **argv) {
    inf_synth_options opt;
    inf_synth_options_default(&opt);
    const char *out = NULL, *tokenizer = NULL, *tokenizer_config = NULL;
    /* --geometry first, so the flags that change one dimension win wherever they stand */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--geometry") && !inf_synth_geometry(&opt, argv[i + 1]))
            return cli_fail(EXIT_USAGE, "synth", "--geometry wants 0.6b, 1.7b, 4b, 8b, 14b or 32b, got '%s'",
                            argv[i + 1]);
    cli_rope_args rope = {0};
    int_flag ints[] = {
        {"--layers", &opt.n_layer, 1, 4096},     {"--embd", &opt.n_embd, 1, 1 << 20},
        {"--ff", &opt.n_ff, 1, 1 << 22},         {"--heads", &opt.n_head, 1, 1 << 16},
        {"--kv-heads", &opt.n_head_kv, 1, 1 << 16}, {"--head-dim", &opt.head_dim, 1, 1 << 16},
        {"--ctx", &opt.n_ctx_train, 1, INT32_MAX}, {"--vocab", &opt.n_vocab, 0, 1 << 24},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (!strcmp(a, "--untied")) {
            opt.tied_output = false;
            continue;
        }
        if (!strcmp(a, "--geometry")) {
            if (!cli_flag_value("synth", argc, argv, &i)) return EXIT_USAGE;
            continue;
        }
        int r = cli_rope_flag("synth", &rope, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        const int_flag *flag = NULL;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if (!strcmp(a, ints[k].name)) flag = &ints[k];
        bool takes_value = flag || !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--type") ||
                           !strcmp(a, "--seed") || !strcmp(a, "--tokenizer") || !strcmp(a, "--tokenizer-config") ||
                           !strcmp(a, "--name");
        if (!takes_value) return cli_fail(EXIT_USAGE, "synth", "unknown option '%s' (see --help)", a);
        const char *v = cli_flag_value("synth", argc, argv, &i);
        if (!v) return EXIT_USAGE;
        if (flag) {
            long n;
            if (!cli_parse_int(v, flag->min, flag->max, &n))
                return cli_fail(EXIT_USAGE, "synth", "%s wants an integer in [%ld, %ld], got '%s'", flag->name,
                                flag->min, flag->max, v);
            *flag->dst = (int)n;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            out = v;
        } else if (!strcmp(a, "--type")) {
            if (!inf_dtype_from_name(v, &opt.weight_type) ||
                (opt.weight_type != INF_DTYPE_F32 && opt.weight_type != INF_DTYPE_F16 &&
                 opt.weight_type != INF_DTYPE_BF16 && opt.weight_type != INF_DTYPE_Q8_0))
                return cli_fail(EXIT_USAGE, "synth", "--type wants f32, f16, bf16 or q8_0, got '%s'", v);
        } else if (!strcmp(a, "--seed")) {
            char *end;
            unsigned long long s = strtoull(v, &end, 10);
            if (!*v || *end || *v == '-')
                return cli_fail(EXIT_USAGE, "synth", "--seed wants a non-negative integer, got '%s'", v);
            opt.seed = s;
        } else if (!strcmp(a, "--tokenizer")) {
            tokenizer = v;
        } else if (!strcmp(a, "--tokenizer-config")) {
            tokenizer_config = v;
        } else {
            opt.name = v;
        }
    }
    if (!out) return cli_fail(EXIT_USAGE, "synth", "no output file: give -o OUT.gguf");
    opt.rope_scaling = rope.scaling_set ? rope.scaling : rope.scale ? INF_ROPE_SCALING_YARN : INF_ROPE_SCALING_NONE;
    opt.rope_scale = rope.scale;
    opt.rope_orig_ctx = rope.orig_ctx ? rope.orig_ctx : opt.n_ctx_train;
    if (opt.rope_scaling != INF_ROPE_SCALING_NONE && rope.scale == 0)
        return cli_fail(EXIT_USAGE, "synth", "--rope-scaling %s needs --rope-scale F",
                        inf_rope_scaling_name(opt.rope_scaling));
    if (opt.n_head % opt.n_head_kv != 0)
        return cli_fail(EXIT_USAGE, "synth", "--heads %d is not a multiple of --kv-heads %d", opt.n_head,
                        opt.n_head_kv);
    if (opt.weight_type == INF_DTYPE_Q8_0) {
        if (opt.n_embd % 32 || opt.n_ff % 32 || ((long)opt.n_head * opt.head_dim) % 32)
            return cli_fail(EXIT_USAGE, "synth", "--type q8_0 needs --embd, --ff and --heads x --head-dim to be "
                            "multiples of 32 (got %d, %d, %ld)", opt.n_embd, opt.n_ff, (long)opt.n_head * opt.head_dim);
    }

    /* the tokenizer: given, or the project's copy of Qwen3's; its config beside it */
    char *found_tok = NULL, *found_config = NULL;
    if (!tokenizer) {
        found_tok = cli_data_path("qwen3-tokenizer/tokenizer.json");
        if (!found_tok)
            return cli_fail(EXIT_RUNTIME, "synth",
                            "cannot find data/qwen3-tokenizer/tokenizer.json; give --tokenizer PATH");
        tokenizer = found_tok;
    }
    if (!tokenizer_config) {
        const char *slash = strrchr(tokenizer, '/');
        size_t dir_len = slash ? (size_t)(slash - tokenizer + 1) : 0;
        found_config = malloc(dir_len + sizeof "tokenizer_config.json");
        if (found_config) {
            memcpy(found_config, tokenizer, dir_len);
            strcpy(found_config + dir_len, "tokenizer_config.json");
            FILE *f = fopen(found_config, "rb");
            if (f) fclose(f);
            else {
                free(found_config);
                found_config = NULL;
            }
        }
        tokenizer_config = found_config;
    }
    opt.tokenizer_json = tokenizer;
    opt.tokenizer_config_json = tokenizer_config;

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    inf_error err = {0};
    inf_status st = inf_synth_write(&opt, out, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(found_tok);
    free(found_config);
    if (st) return cli_fail_error("synth", &err);
    fprintf(stderr, "inferno synth: wrote %s (%s, %d layers, hidden %d, %s output, %.2f s)\n", out,
            inf_dtype_name(opt.weight_type), opt.n_layer, opt.n_embd, opt.tied_output ? "tied" : "untied",
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return 0;
}

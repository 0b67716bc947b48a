/*
 * cmd_quantize.c — `inferno quantize IN.gguf OUT.gguf TYPE`: the matrices
 * of an F32/F16/BF16 GGUF quantized as llama.cpp's quantizer does it
 * (inf_model_quantize), with a progress bar.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_text =
    "usage: inferno quantize IN.gguf OUT.gguf q8_0|q4_0|q6_k|q4_k_m|q5_k_m [-t THREADS]\n"
    "\n"
    "Quantizes the matrices of IN (f32, f16 or bf16) as llama.cpp's llama-quantize\n"
    "does without an importance matrix, block for block, and writes OUT through a\n"
    "temporary file. TYPE is the mix, as llama-quantize names it:\n"
    "  q8_0   every matrix Q8_0\n"
    "  q4_0   every matrix Q4_0; the output head (or the tied embedding) Q6_K\n"
    "  q6_k   every matrix Q6_K\n"
    "  q4_k_m Q4_K; Q6_K for the output head and for attn_v and ffn_down in the\n"
    "         first and last eighth of the layers and every third in between\n"
    "  q5_k_m the same with Q5_K\n"
    "Rows that are not whole blocks fall back as llama.cpp's do (Q4_K to Q5_0,\n"
    "Q5_K to Q5_1, Q6_K to Q8_0, then F16). Norms and other vectors are copied.\n"
    "  -t THREADS   threads quantizing rows (default 2)\n";

int cmd_quantize(int argc, char **argv) {
    const char *pos[3] = {NULL, NULL, NULL};
    int n_pos = 0, threads = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (!strcmp(a, "-t")) {
            char *end;
            if (i + 1 >= argc) return cli_fail(EXIT_USAGE, "quantize", "-t needs a thread count");
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1024) return cli_fail(EXIT_USAGE, "quantize", "-t wants 1 to 1024, got '%s'", argv[i]);
            threads = (int)v;
            continue;
        }
        if (a[0] == '-' && a[1]) return cli_fail(EXIT_USAGE, "quantize", "unknown option '%s' (see --help)", a);
        if (n_pos == 3) return cli_fail(EXIT_USAGE, "quantize", "too many arguments (see --help)");
        pos[n_pos++] = a;
    }
    if (n_pos != 3) return cli_fail(EXIT_USAGE, "quantize", "give IN.gguf OUT.gguf TYPE (see --help)");
    static const char *const known[] = {"q8_0", "q4_0", "q6_k", "q4_k_m", "q5_k_m"};
    const char *mix = NULL;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(pos[2], known[i])) mix = known[i];
    if (!mix) return cli_fail(EXIT_USAGE, "quantize", "TYPE wants q8_0, q4_0, q6_k, q4_k_m or q5_k_m, got '%s'", pos[2]);
    cli_progress bar;
    cli_progress_begin(&bar, "quantizing");
    inf_error err = {0};
    const double t0 = cli_now_s();
    inf_status st = inf_model_quantize(pos[0], pos[1], mix, threads, cli_progress_callback, &bar, &err);
    cli_progress_end(&bar);
    if (st != INF_OK) return cli_fail_error("quantize", &err);
    fprintf(stderr, "inferno quantize: wrote %s (%s, %.2f s)\n", pos[1], mix, cli_now_s() - t0);
    return 0;
}

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
    "usage: inferno quantize IN.gguf OUT.gguf TYPE [-t THREADS]\n"
    "\n"
    "Quantizes the matrices of IN (f32, f16 or bf16) as llama.cpp's llama-quantize\n"
    "does without an importance matrix, block for block, and writes OUT through a\n"
    "temporary file. TYPE is the mix, as llama-quantize names it; in every mix but\n"
    "q8_0 the output head (or the tied embedding) is Q6_K:\n"
    "  q8_0 q4_0 q4_1 q5_0 q5_1 q6_k   every other matrix of that type\n"
    "  iq4_nl iq4_xs   that type; Q5_K for ffn_down in the first eighth of the\n"
    "                  layers, and for attn_v when 4 or more query heads share a KV head\n"
    "  q2_k     Q2_K; Q3_K for attn_output and ffn_down, and for attn_v (Q4_K when\n"
    "           4 or more query heads share a KV head)\n"
    "  q3_k_s   every other matrix Q3_K\n"
    "  q3_k_m   Q3_K; Q4_K for attn_output and ffn_down (Q5_K in the first\n"
    "           sixteenth of the layers), attn_v Q5_K in layers 0-1, Q4_K after\n"
    "  q3_k_l   Q3_K; Q5_K for attn_v, attn_output and ffn_down\n"
    "  q4_k_s   Q4_K; Q5_K for attn_v in layers 0-3 and ffn_down in the first eighth\n"
    "  q4_k_m   Q4_K; Q6_K for attn_v and ffn_down in the first and last eighth of\n"
    "           the layers and every third in between\n"
    "  q5_k_s   every other matrix Q5_K\n"
    "  q5_k_m   as q4_k_m with Q5_K\n"
    "Rows that are not whole blocks fall back as llama.cpp's do (IQ4_XS to IQ4_NL,\n"
    "Q2_K and Q3_K to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, then F16).\n"
    "Norms and other vectors are copied.\n"
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
    static const char *const known[] = {"q8_0",   "q4_0",   "q4_1",   "q5_0",   "q5_1",   "iq4_nl",
                                        "iq4_xs", "q2_k",   "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s",
                                        "q4_k_m", "q5_k_s", "q5_k_m", "q6_k"};
    const char *mix = NULL;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(pos[2], known[i])) mix = known[i];
    if (!mix)
        return cli_fail(EXIT_USAGE, "quantize",
                        "TYPE wants q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k_s, q3_k_m, q3_k_l, "
                        "q4_k_s, q4_k_m, q5_k_s, q5_k_m or q6_k, got '%s'",
                        pos[2]);
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

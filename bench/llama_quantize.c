/*
 * llama_quantize.c — writes a quantized GGUF with llama.cpp's own quantizer
 * (llama_model_quantize(), what its llama-quantize tool calls), so that the
 * project can make Q4_0 ... IQ4_XS files, with llama.cpp's per-tensor type
 * choices for the _S/_M/_L mixes and its fallbacks for rows whose width is
 * not a multiple of 256, from its synthetic F32 models. Not part of inferno:
 * scripts/install-llama.sh builds it beside llama_bench.
 *
 *   llama_quantize IN.gguf OUT.gguf TYPE [THREADS]
 *   TYPE: q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m
 *         q5_k_s q5_k_m q6_k iq4_nl iq4_xs bf16 f16
 */
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    enum llama_ftype ftype;
} types[] = {
    {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"q2_k", LLAMA_FTYPE_MOSTLY_Q2_K},
    {"q3_k_s", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"q3_k_m", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"q3_k_l", LLAMA_FTYPE_MOSTLY_Q3_K_L}, {"q4_k_s", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"q5_k_s", LLAMA_FTYPE_MOSTLY_Q5_K_S},
    {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K},
    {"iq4_nl", LLAMA_FTYPE_MOSTLY_IQ4_NL}, {"iq4_xs", LLAMA_FTYPE_MOSTLY_IQ4_XS},
    {"bf16", LLAMA_FTYPE_MOSTLY_BF16},     {"f16", LLAMA_FTYPE_MOSTLY_F16},
};

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: llama_quantize IN.gguf OUT.gguf TYPE [THREADS]\n  TYPE:");
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) fprintf(stderr, " %s", types[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    size_t found = sizeof types / sizeof types[0];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(argv[3], types[i].name)) found = i;
    if (found == sizeof types / sizeof types[0]) {
        fprintf(stderr, "llama_quantize: unknown type '%s'\n", argv[3]);
        return 2;
    }
    llama_backend_init();
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = types[found].ftype;
    qp.nthread = argc == 5 ? atoi(argv[4]) : 2;
    const uint32_t rc = llama_model_quantize(argv[1], argv[2], &qp);
    llama_backend_free();
    if (rc) {
        fprintf(stderr, "llama_quantize: llama_model_quantize failed (%u) for %s\n", rc, argv[1]);
        return 1;
    }
    return 0;
}

/*
 * main.c — `inferno COMMAND [options]`: dispatches to one file per command.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "generate text from a prompt (greedy, or sampled)"},
    {"chat", cmd_chat, "chat with a model in the terminal"},
    {"serve", cmd_serve, "an OpenAI- and Anthropic-compatible HTTP server"},
    {"pull", cmd_pull, "download a model from the Hugging Face hub into its cache"},
    {"logits", cmd_logits, "print the top logits of a prompt as JSON"},
    {"info", cmd_info, "describe a model file"},
    {"tokenize", cmd_tokenize, "text to token ids (JSON)"},
    {"detokenize", cmd_detokenize, "token ids to text"},
    {"template", cmd_template, "render a chat request with the model's chat template"},
    {"bench", cmd_bench, "measure prefill and decode speed"},
    {"synth", cmd_synth, "write a synthetic Qwen3 GGUF with random weights"},
    {"quantize", cmd_quantize, "quantize a GGUF as llama.cpp does (its q2_k .. q8_0, iq4_nl, iq4_xs mixes)"},
    {"convert", cmd_convert, "write a Hugging Face checkpoint directory as a GGUF"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: inferno COMMAND [options]   (inferno COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n  --version   print the version\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("inferno %s\n", INFERNO_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "inferno: unknown command '%s' (try inferno --help)\n", argv[1]);
    return EXIT_USAGE;
}

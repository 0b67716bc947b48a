/* cmd_tokenize.c — STUB: `inferno tokenize` and `inferno detokenize`. */
#include "cli/cli.h"
int cmd_tokenize(int argc, char **argv) { (void)argc; (void)argv; return cli_fail(EXIT_RUNTIME, "tokenize", "not implemented yet"); }
int cmd_detokenize(int argc, char **argv) { (void)argc; (void)argv; return cli_fail(EXIT_RUNTIME, "detokenize", "not implemented yet"); }

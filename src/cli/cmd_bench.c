/* cmd_bench.c — STUB: `inferno bench`. */
#include "cli/cli.h"
int cmd_bench(int argc, char **argv) { (void)argc; (void)argv; return cli_fail(EXIT_RUNTIME, "bench", "not implemented yet"); }

/* cmd_synth.c — STUB: `inferno synth`. */
#include "cli/cli.h"
int cmd_synth(int argc, char **argv) { (void)argc; (void)argv; return cli_fail(EXIT_RUNTIME, "synth", "not implemented yet"); }

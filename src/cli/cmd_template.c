/* cmd_template.c — STUB: `inferno template`. */
#include "cli/cli.h"
int cmd_template(int argc, char **argv) { (void)argc; (void)argv; return cli_fail(EXIT_RUNTIME, "template", "not implemented yet"); }

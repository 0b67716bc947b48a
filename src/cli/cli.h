/*
 * cli.h — the inferno command-line tool: command entry points and the small
 * helpers they share (strict number parsing, id lists, error exits).
 * The CLI uses only the public header, inferno.h.
 *
 * Exit codes: 0 success, 1 runtime error, 2 usage error.
 */
#ifndef INF_CLI_H
#define INF_CLI_H

#include "inferno.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Each command gets argv with argv[0] = the command name. */
int cmd_run(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Prints "inferno CMD: message" to stderr; returns code (for `return cli_fail(...)`). */
int cli_fail(int code, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints the error's message as above; exit code 1, or 2 for INF_ERR_INVALID when usage is true. */
int cli_fail_error(const char *cmd, const inf_error *err);

/* Strict parsers: the whole string must be a number in [min, max]. */
bool cli_parse_int(const char *s, long min, long max, long *out);
bool cli_parse_float(const char *s, double *out);
/* "1,2,3" -> malloc'd ids; false on a malformed list. */
bool cli_parse_ids(const char *s, int32_t **ids, size_t *n);

/* Fetches the value of flag argv[*i] (advancing *i); NULL and a usage error
 * printed when missing. */
const char *cli_flag_value(const char *cmd, int argc, char **argv, int *i);

/* Reads all of a stream or file into a malloc'd NUL-terminated buffer. */
char *cli_read_stream(FILE *f, size_t *len);
char *cli_read_file(const char *path, size_t *len);

#endif

/* ---- shared by run / logits / info (cli_model.c) ---- */

typedef struct cli_model_args {
    const char *model_path;   /* -m */
    const char *prompt;       /* -p */
    const char *token_list;   /* --tokens */
    int n_threads;            /* -t, 0 = physical cores */
    int n_ctx;                /* -c, 0 = default */
    bool no_mmap;             /* --no-mmap */
    bool trace;               /* --trace */
    inf_kv_type kv_type;      /* --kv-type */
} cli_model_args;

/* Tries to consume argv[*i] (and its value) as one of the shared model
 * flags. Returns 1 when consumed, 0 when not a shared flag, -1 on a bad
 * value (usage error printed). */
int cli_model_flag(const char *cmd, cli_model_args *a, int argc, char **argv, int *i);

/* Loads the model named by a->model_path; prints the error and returns NULL on failure. */
inf_model *cli_load_model(const char *cmd, const cli_model_args *a);

/* The prompt as ids: --tokens, or -p through the model's tokenizer.
 * Returns 0, or an exit code after printing the error. */
int cli_prompt_ids(const char *cmd, const cli_model_args *a, const inf_model *m, int32_t **ids,
                   size_t *n);

/* Path of a file under the project's data/ folder (next to the executable's
 * build/ folder, or under the current directory); NULL when not found. */
char *cli_data_path(const char *relative);

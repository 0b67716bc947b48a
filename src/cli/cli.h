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

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Each command gets argv with argv[0] = the command name. */
int cmd_run(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_pull(int argc, char **argv);

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

/* ---- shared by run / logits / info (cli_model.c) ---- */

/* --rope-scaling none|linear|yarn, --rope-scale F, --yarn-orig-ctx N: as
 * llama.cpp's flags of those names, over the file's RoPE scaling. */
typedef struct cli_rope_args {
    bool scaling_set;
    inf_rope_scaling scaling;
    float scale;  /* 0: the file's factor */
    int orig_ctx; /* 0: the file's */
} cli_rope_args;

/* Consumes one of the flags above like cli_model_flag (1, 0 or -1). */
int cli_rope_flag(const char *cmd, cli_rope_args *r, int argc, char **argv, int *i);
/* Copies them into load options. */
void cli_rope_apply(const cli_rope_args *r, inf_load_options *opt);
/* The help lines for them. */
#define CLI_ROPE_HELP                                                                                       \
    "  --rope-scaling T      RoPE scaling over the file's: none, linear or yarn (as llama.cpp)\n"           \
    "  --rope-scale F        its factor (YaRN 4 for Qwen3's 131072 tokens)\n"                                \
    "  --yarn-orig-ctx N     the context YaRN stretches (default: the file's, else its context)\n"

typedef struct cli_model_args {
    const char *model_path;   /* -m */
    const char *prompt;       /* -p */
    const char *token_list;   /* --tokens */
    int n_threads;            /* -t, 0 = physical cores */
    int n_ctx;                /* -c, 0 = default */
    bool no_mmap;             /* --no-mmap */
    bool no_repack;           /* --no-repack */
    bool trace;               /* --trace */
    inf_kv_type kv_type;      /* --kv-type */
    bool quantize;            /* --quantize TYPE */
    inf_dtype quantize_type;
    cli_rope_args rope;       /* --rope-scaling, --rope-scale, --yarn-orig-ctx */
} cli_model_args;

/* Parses --quantize's value (q8_0); false after printing a usage error. */
bool cli_parse_quantize(const char *cmd, const char *v, inf_dtype *out);

/* Tries to consume argv[*i] (and its value) as one of the shared model
 * flags. Returns 1 when consumed, 0 when not a shared flag, -1 on a bad
 * value (usage error printed). */
int cli_model_flag(const char *cmd, cli_model_args *a, int argc, char **argv, int *i);

/* -m ORG/NAME[:TAG] (hub_resolve_cached): when *path does not exist on
 * disk but has that shape, it becomes the cached GGUF or checkpoint folder
 * the Hugging Face cache holds for it (offline; `inferno pull` fills the
 * cache). A path that exists wins, and one ending in .gguf, .safetensors or
 * .json is left to the loader. Returns 0, or 1 after printing why the
 * cache cannot give it. The new string lives until exit. */
int cli_resolve_model(const char *cmd, const char **path);

/* Loads the model named by a->model_path; prints the error and returns NULL on failure. */
inf_model *cli_load_model(const char *cmd, const cli_model_args *a);

/* The prompt as ids: --tokens, or -p through the model's tokenizer.
 * Returns 0, or an exit code after printing the error. */
int cli_prompt_ids(const char *cmd, const cli_model_args *a, const inf_model *m, int32_t **ids,
                   size_t *n);

/* The model run and chat use without -m: $INFERNO_MODEL, else a synthetic
 * Qwen3-0.6B-geometry model in the user's cache folder, written on first
 * use (with a notice on stderr). malloc'd; NULL after printing an error. */
char *cli_default_model_path(const char *cmd);

/* Path of a file under the project's data/ folder (next to the executable's
 * build/ folder, or under the current directory); NULL when not found. */
char *cli_data_path(const char *relative);

/* ---- progress, interrupts, sampling flags, generation (cli_progress.c, cli_generate.c) ---- */

/* A one-line progress bar on stderr, drawn only when stderr is a terminal
 * and the wait has lasted a quarter of a second; cleared when done. */
typedef struct cli_progress {
    const char *label;
    double t_start_s;
    bool enabled;   /* stderr is a terminal */
    int drawn_pct;  /* -1 until drawn */
} cli_progress;

void cli_progress_begin(cli_progress *p, const char *label);
void cli_progress_update(cli_progress *p, double fraction);
/* The same bar with "done/total MiB" after it (downloads). */
void cli_progress_update_bytes(cli_progress *p, uint64_t done_bytes, uint64_t total_bytes);
void cli_progress_end(cli_progress *p);
/* inf_load_options.progress adapter (user = a cli_progress). */
void cli_progress_callback(double fraction, void *user);

double cli_now_s(void);

/* Ctrl-C: the first sets cli_interrupted (generation ends cleanly at the
 * next token); a second while it is still set exits at once with 130. */
extern volatile sig_atomic_t cli_interrupted;
void cli_catch_interrupt(void);

/* Sampling flags shared by run and chat; each *_set says the user gave it. */
typedef struct cli_sampling_args {
    float temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
    int top_k, repeat_last_n;
    uint64_t seed;
    bool temperature_set, top_p_set, min_p_set, repeat_penalty_set, presence_penalty_set,
        frequency_penalty_set, top_k_set, repeat_last_n_set, seed_set;
    const char **stops;        /* --stop, [n_stops] */
    size_t n_stops;
    inf_logit_bias *bias;      /* --logit-bias, [n_bias] */
    size_t n_bias;
} cli_sampling_args;

/* Consumes a sampling flag like cli_model_flag (1 consumed, 0 not one, -1 bad value). */
int cli_sampling_flag(const char *cmd, cli_sampling_args *a, int argc, char **argv, int *i);
/* True when a flag that asks for random sampling was given (--temp, --top-k,
 * --top-p, --min-p, --seed). */
bool cli_sampling_asked(const cli_sampling_args *a);
/* base (the model's defaults, or greedy) with the user's flags applied; a
 * seed not given is drawn from the clock (out->seed says which);
 * --repeat-last-n -1 becomes n_ctx. */
void cli_sampling_params(const cli_sampling_args *a, const inf_sampler_params *base, int n_ctx,
                         inf_sampler_params *out);
void cli_sampling_args_free(cli_sampling_args *a);
/* The help text of the sampling flags. */
extern const char *cli_sampling_help;

typedef enum cli_stop_reason {
    CLI_STOP_EOG,       /* an end-of-turn token */
    CLI_STOP_STRING,    /* a stop string */
    CLI_STOP_LENGTH,    /* -n tokens */
    CLI_STOP_CONTEXT,   /* the context is full */
    CLI_STOP_INTERRUPT, /* Ctrl-C */
    CLI_STOP_ERROR,
} cli_stop_reason;

const char *cli_stop_reason_name(cli_stop_reason r); /* "eog", "stop", "length", "context", "interrupt", "error" */

/* An engine for one sequence at a time, as run and chat use it: context
 * n_ctx, the prefix cache on when reuse is true (chat's turns). NULL after
 * printing the error. */
inf_engine *cli_engine_new(const char *cmd, inf_model *m, int n_ctx, bool reuse);

/* One generation: the prompt through the engine, then tokens until an
 * end-of-turn token, a stop string, n_predict tokens, a full context or
 * Ctrl-C (which cancels the request). */
typedef struct cli_generation {
    /* in */
    inf_engine *engine;
    const inf_tokenizer *tok;  /* NULL: ids are emitted as text */
    const int32_t *prompt;
    size_t n_prompt;
    inf_sampler_params sampling;
    const char *const *stops;
    size_t n_stops;
    long n_predict;            /* < 0: until the context is full */
    bool ignore_eos;
    /* receives the released text in order; thinking is true from a <think>
     * token through its </think> */
    void (*emit)(void *user, const char *text, size_t len, bool thinking);
    void *user;
    /* out */
    int32_t *ids;              /* sampled tokens, end-of-turn excluded (malloc'd) */
    size_t n_ids;
    cli_stop_reason stop;
    int stop_index;            /* CLI_STOP_STRING: which stop string */
    int n_cached;              /* prompt tokens the prefix cache gave */
    double t_start_s;          /* submitted */
    double t_first_s;          /* when the first token was sampled */
    double t_end_s;
    long n_decoded;            /* tokens run through the model after the prompt */
    inf_error err;             /* when stop == CLI_STOP_ERROR */
    /* state */
    int32_t think_open, think_close;
    bool thinking, failed;
    size_t cap_ids;
    cli_progress bar;
} cli_generation;

void cli_generate(cli_generation *g);

/* One chat message. */
typedef struct cli_message {
    const char *role; /* "system", "user", "assistant" */
    char *content;    /* owned by whoever holds the list */
} cli_message;

/* Renders messages with the chat template as a prompt ready for the
 * assistant's answer (enable_thinking = thinking) and tokenizes it with
 * inf_chat_template_render_ids: the messages' text never becomes control
 * tokens. *ids is malloc'd. */
inf_status cli_render_chat(const inf_chat_template *tmpl, const inf_tokenizer *tok, const cli_message *msgs,
                           size_t n, bool thinking, int32_t **ids, size_t *n_ids, inf_error *err);

#endif

/*
 * cmd_run.c — `inferno run`: one prompt in, generated text streamed to
 * stdout, a timings line on stderr (or everything as one JSON object).
 * Without -m (and without $INFERNO_MODEL) it runs a synthetic Qwen3-0.6B-
 * geometry model, creating it on first use.
 *
 * Decoding is greedy unless --chat or a sampling flag asks otherwise (see
 * the usage text): `run --tokens ... --ids` stays an exact, reproducible
 * argmax stream, which the golden tests compare against llama.cpp.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *usage_text =
    "usage: inferno run [-m MODEL] [-p TEXT | -f FILE | --tokens ID,ID,... | < stdin] [options]\n"
    "\n"
    "Generates text after the prompt and streams it to stdout; a timings line goes\n"
    "to stderr (prompt tokens, time to first token, prefill and decode tok/s).\n"
    "Stops at an end-of-turn token (<|im_end|>, <|endoftext|>), a --stop string,\n"
    "N tokens, or a full context. Ctrl-C stops generation too: the text so far and\n"
    "the timings line are still printed, and the exit status is 130.\n"
    "\n"
    "  -m, --model PATH      GGUF file, Hugging Face checkpoint directory, or ORG/NAME[:TAG]\n"
    "                        from the Hugging Face cache (see inferno pull)\n"
    "                        (default: $INFERNO_MODEL, else a synthetic model)\n"
    "  -p, --prompt TEXT     the prompt (special tokens like <|im_start|> are parsed)\n"
    "  -f, --file FILE       read the prompt from FILE ('-' = stdin)\n"
    "  --tokens ID,ID,...    the prompt as token ids\n"
    "  -n, --n-predict N     generate at most N tokens (default 128; -1 = until the context is full)\n"
    "  --chat                wrap the prompt in the model's chat template as a user message\n"
    "  --system TEXT         system message (with --chat)\n"
    "  --no-think            with --chat: enable_thinking = false (Qwen3 answers without thinking)\n"
    "  --json                print one JSON object: text, tokens, stop_reason, timings\n"
    "  --ids                 print the generated ids as one JSON array instead of text\n"
    "  --ignore-eos          keep generating past end-of-turn tokens\n"
    "  -t, --threads N       threads (default: physical cores)\n"
    "  -c, --ctx-size N      context length (default: min(model's, 4096))\n"
    "  --no-mmap             read the weights into memory instead of mapping the file\n"
    "  --no-repack           keep the weights in the file's layout (no repacking at load)\n"
    "  --quantize q8_0       convert F32/F16/BF16 matrices to Q8_0 while loading\n"
    "  --kv-type T           KV cache element type: f32, f16 (default, as llama.cpp) or q8_0\n"
    CLI_ROPE_HELP
    "  --trace               print calls and time per op (matmul also per weight)\n"
    "                        at exit, and the weight prefetch hint in use\n"
    "\n"
    "Decoding: greedy (argmax, temperature 0) by default. With --chat, or when any of\n"
    "--temp, --top-k, --top-p, --min-p or --seed is given, it samples, and the model's\n"
    "recommended values fill in what is not given: its general.sampling.* metadata,\n"
    "else Qwen3's (thinking: temp 0.6, top-p 0.95, top-k 20, min-p 0; --no-think:\n"
    "0.7, 0.8, 20, 0). --temp 0 is always greedy.\n"
    "\n";

char *cli_default_model_path(const char *cmd) {
    const char *env = getenv("INFERNO_MODEL");
    if (env && *env) return strdup(env);
    const char *cache = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char dir[4096];
    if (cache && *cache) snprintf(dir, sizeof dir, "%s/inferno", cache);
    else snprintf(dir, sizeof dir, "%s/.cache/inferno", home && *home ? home : "/tmp");
    char path[4200];
    snprintf(path, sizeof path, "%s/qwen3-0.6b-synthetic-q8_0.gguf", dir);
    fprintf(stderr,
            "inferno %s: no model given, so this runs a synthetic model with the Qwen3-0.6B\n"
            "  geometry, the real Qwen3 tokenizer and RANDOM weights: its output is gibberish.\n"
            "  To run a real checkpoint: inferno %s -m Qwen3-0.6B-Q8_0.gguf\n"
            "  (or set INFERNO_MODEL). Model file: %s\n", cmd, cmd, path);
    if (access(path, R_OK) == 0) return strdup(path);

    /* create it: mkdir -p the cache folder, then write */
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(dir, 0755);
        *p = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        cli_fail(EXIT_RUNTIME, cmd, "%s: cannot create the folder (%s)", dir, strerror(errno));
        return NULL;
    }
    inf_synth_options opt;
    inf_synth_options_default(&opt);
    char *tok_json = cli_data_path("qwen3-tokenizer/tokenizer.json");
    char *tok_config = cli_data_path("qwen3-tokenizer/tokenizer_config.json");
    if (!tok_json) {
        cli_fail(EXIT_RUNTIME, cmd, "cannot find data/qwen3-tokenizer/tokenizer.json to build the default model");
        free(tok_config);
        return NULL;
    }
    opt.tokenizer_json = tok_json;
    opt.tokenizer_config_json = tok_config;
    opt.name = "Qwen3-0.6B-geometry synthetic (random weights)";
    fprintf(stderr, "inferno %s: writing the synthetic model (about 0.6 GB, a few seconds)...\n", cmd);
    inf_error err = {0};
    inf_status st = inf_synth_write(&opt, path, &err);
    free(tok_json);
    free(tok_config);
    if (st) {
        cli_fail_error(cmd, &err);
        return NULL;
    }
    return strdup(path);
}

typedef struct run_args {
    cli_model_args model;
    cli_sampling_args sampling;
    const char *prompt_file;
    const char *system;
    long n_predict;
    bool chat, no_think, json, print_ids, ignore_eos;
} run_args;

/* Growable text the generation is collected into (--json, --ids). */
typedef struct text_buf {
    char *data;
    size_t len, cap;
    bool failed;
} text_buf;

static void emit_stdout(void *user, const char *text, size_t len, bool thinking) {
    (void)user;
    (void)thinking;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

static void emit_buffer(void *user, const char *text, size_t len, bool thinking) {
    (void)thinking;
    text_buf *b = user;
    if (b->len + len + 1 > b->cap) {
        size_t cap = 2 * (b->len + len + 1);
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, text, len);
    b->len += len;
    b->data[b->len] = 0;
}

static int parse_args(run_args *a, int argc, char **argv) {
    a->n_predict = 128;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag("run", &a->model, argc, argv, &i);
        if (r == 0) r = cli_sampling_flag("run", &a->sampling, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            fputs(usage_text, stdout);
            fputs(cli_sampling_help, stdout);
            return -1;
        } else if (!strcmp(f, "-n") || !strcmp(f, "--n-predict")) {
            const char *v = cli_flag_value("run", argc, argv, &i);
            if (!v) return EXIT_USAGE;
            if (!cli_parse_int(v, -1, 1 << 24, &a->n_predict))
                return cli_fail(EXIT_USAGE, "run", "-n wants a token count from 0 (or -1 for no limit), got '%s'", v);
        } else if (!strcmp(f, "-f") || !strcmp(f, "--file")) {
            if (!(a->prompt_file = cli_flag_value("run", argc, argv, &i))) return EXIT_USAGE;
        } else if (!strcmp(f, "--system")) {
            if (!(a->system = cli_flag_value("run", argc, argv, &i))) return EXIT_USAGE;
        } else if (!strcmp(f, "--chat")) {
            a->chat = true;
        } else if (!strcmp(f, "--no-think")) {
            a->no_think = true;
        } else if (!strcmp(f, "--json")) {
            a->json = true;
        } else if (!strcmp(f, "--ids")) {
            a->print_ids = true;
        } else if (!strcmp(f, "--ignore-eos")) {
            a->ignore_eos = true;
        } else {
            return cli_fail(EXIT_USAGE, "run", "unknown option '%s' (see --help)", f);
        }
    }
    int sources = !!a->model.prompt + !!a->prompt_file + !!a->model.token_list;
    if (sources > 1) return cli_fail(EXIT_USAGE, "run", "give one of -p, -f and --tokens");
    if ((a->system || a->no_think) && !a->chat)
        return cli_fail(EXIT_USAGE, "run", "--system and --no-think need --chat");
    if (a->chat && a->model.token_list) return cli_fail(EXIT_USAGE, "run", "--chat needs a text prompt, not --tokens");
    if (a->json && a->print_ids) return cli_fail(EXIT_USAGE, "run", "give --json or --ids, not both");
    if (sources == 0 && isatty(STDIN_FILENO))
        return cli_fail(EXIT_USAGE, "run", "no prompt: give -p TEXT, -f FILE or --tokens ID,..., or pipe it to stdin");
    return 0;
}

/* The prompt text from -p, -f or stdin (malloc'd); NULL after printing the error. */
static char *read_prompt(const run_args *a, int *rc) {
    char *text = NULL;
    size_t len = 0;
    if (a->model.prompt) {
        text = strdup(a->model.prompt);
        len = strlen(a->model.prompt);
    } else if (a->prompt_file && strcmp(a->prompt_file, "-") != 0) {
        struct stat sb;
        if (stat(a->prompt_file, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            *rc = cli_fail(EXIT_RUNTIME, "run", "%s: is a directory, not a prompt file", a->prompt_file);
            return NULL;
        }
        if (!(text = cli_read_file(a->prompt_file, &len))) {
            *rc = cli_fail(EXIT_RUNTIME, "run", "%s: cannot read the prompt file: %s", a->prompt_file, strerror(errno));
            return NULL;
        }
    } else {
        if (!(text = cli_read_stream(stdin, &len))) {
            *rc = cli_fail(EXIT_RUNTIME, "run", "cannot read the prompt from stdin");
            return NULL;
        }
    }
    if (!text) {
        *rc = cli_fail(EXIT_RUNTIME, "run", "out of memory");
        return NULL;
    }
    if (strlen(text) != len) {
        free(text);
        *rc = cli_fail(EXIT_RUNTIME, "run", "the prompt contains a NUL byte");
        return NULL;
    }
    if (len == 0) {
        free(text);
        *rc = cli_fail(EXIT_USAGE, "run", "the prompt is empty");
        return NULL;
    }
    return text;
}

/* The prompt as ids: --tokens, or text (wrapped in the chat template with --chat) through the tokenizer. */
static int prompt_ids(const run_args *a, const inf_model *m, int32_t **ids, size_t *n) {
    if (a->model.token_list) {
        if (!cli_parse_ids(a->model.token_list, ids, n))
            return cli_fail(EXIT_USAGE, "run", "--tokens wants a list like 1,2,3, got '%s'", a->model.token_list);
        return 0;
    }
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    if (!tok)
        return cli_fail(EXIT_RUNTIME, "run", "%s has no tokenizer; use --tokens ID,ID,...", a->model.model_path);
    int rc = 0;
    char *text = read_prompt(a, &rc);
    if (!text) return rc;
    inf_error err = {0};
    inf_status st;
    if (a->chat) { /* the prompt is a user message: its text never becomes control tokens */
        inf_chat_template *tmpl = NULL;
        cli_message msgs[2];
        size_t n_msgs = 0;
        if (a->system) msgs[n_msgs++] = (cli_message){"system", (char *)a->system};
        msgs[n_msgs++] = (cli_message){"user", text};
        st = inf_chat_template_load(a->model.model_path, &tmpl, &err);
        if (!st) st = cli_render_chat(tmpl, tok, msgs, n_msgs, !a->no_think, ids, n, &err);
        inf_chat_template_free(tmpl);
    } else { /* a raw prompt: control tokens written in it are meant */
        st = inf_tokenize(tok, text, strlen(text), 0, ids, n, &err);
    }
    free(text);
    if (st) return cli_fail_error("run", &err);
    if (*n == 0) {
        free(*ids);
        return cli_fail(EXIT_USAGE, "run", "the prompt is empty");
    }
    return 0;
}

typedef struct run_timings {
    double load_s, prefill_s, decode_s;
    size_t n_prompt;
} run_timings;

static void print_timings(const run_timings *t, const cli_generation *g) {
    fprintf(stderr,
            "prompt %zu tokens | first token %.1f ms | prefill %.1f tok/s | decode %.1f tok/s (%zu tokens)\n",
            t->n_prompt, 1e3 * t->prefill_s, t->prefill_s > 0 ? (double)t->n_prompt / t->prefill_s : 0.0,
            g->n_decoded > 0 && t->decode_s > 0 ? (double)g->n_decoded / t->decode_s : 0.0, g->n_ids);
}

/* A number with 3 decimals (cJSON would print 17 significant digits). */
static void add_fixed(cJSON *o, const char *key, double v) {
    char text[64];
    snprintf(text, sizeof text, "%.3f", v);
    cJSON_AddRawToObject(o, key, text);
}

static int print_json(const run_args *a, const run_timings *t, const cli_generation *g, const text_buf *text,
                      const inf_sampler_params *sp, bool sampled) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "text", text->data ? text->data : "");
    cJSON *ids = cJSON_AddArrayToObject(o, "tokens");
    for (size_t i = 0; i < g->n_ids; i++) cJSON_AddItemToArray(ids, cJSON_CreateNumber(g->ids[i]));
    cJSON_AddStringToObject(o, "stop_reason", cli_stop_reason_name(g->stop));
    if (g->stop == CLI_STOP_STRING)
        cJSON_AddStringToObject(o, "stop", g->stop_index >= 0 ? a->sampling.stops[g->stop_index] : "");
    cJSON_AddNumberToObject(o, "prompt_tokens", (double)t->n_prompt);
    cJSON_AddNumberToObject(o, "generated_tokens", (double)g->n_ids);
    if (sampled) cJSON_AddNumberToObject(o, "seed", (double)sp->seed);
    cJSON *tm = cJSON_AddObjectToObject(o, "timings");
    add_fixed(tm, "load_ms", 1e3 * t->load_s);
    add_fixed(tm, "prefill_ms", 1e3 * t->prefill_s);
    add_fixed(tm, "prefill_tok_s", t->prefill_s > 0 ? (double)t->n_prompt / t->prefill_s : 0.0);
    add_fixed(tm, "decode_ms", 1e3 * t->decode_s);
    add_fixed(tm, "decode_tok_s", g->n_decoded > 0 && t->decode_s > 0 ? (double)g->n_decoded / t->decode_s : 0.0);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return cli_fail(EXIT_RUNTIME, "run", "out of memory printing JSON");
    printf("%s\n", s);
    free(s);
    return 0;
}

int cmd_run(int argc, char **argv) {
    run_args a = {.model.kv_type = INF_KV_F16};
    int rc = parse_args(&a, argc, argv);
    if (rc) {
        cli_sampling_args_free(&a.sampling);
        return rc < 0 ? 0 : rc;
    }
    if ((rc = cli_resolve_model("run", &a.model.model_path))) {
        cli_sampling_args_free(&a.sampling);
        return rc;
    }
    char *model_path = a.model.model_path ? strdup(a.model.model_path) : cli_default_model_path("run");
    if (!model_path) {
        cli_sampling_args_free(&a.sampling);
        return EXIT_RUNTIME;
    }
    a.model.model_path = model_path;

    run_timings t = {0};
    double t_load = cli_now_s();
    inf_model *m = cli_load_model("run", &a.model);
    t.load_s = cli_now_s() - t_load;
    if (!m) {
        free(model_path);
        cli_sampling_args_free(&a.sampling);
        return EXIT_RUNTIME;
    }
    inf_model_info info;
    inf_model_get_info(m, &info);
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    int n_vocab = info.n_vocab;
    if (tok && inf_tokenizer_n_vocab(tok) < n_vocab) n_vocab = inf_tokenizer_n_vocab(tok);

    int32_t *prompt = NULL;
    inf_engine *engine = NULL;
    inf_error err = {0};
    cli_generation g = {0};
    text_buf text = {0};
    inf_sampler_params sp;
    bool sampled = a.chat || cli_sampling_asked(&a.sampling);
    const int n_ctx = a.model.n_ctx ? a.model.n_ctx : info.n_ctx_train < 4096 ? info.n_ctx_train : 4096;
    rc = prompt_ids(&a, m, &prompt, &t.n_prompt);
    if (!rc && t.n_prompt >= (size_t)n_ctx)
        rc = cli_fail(EXIT_RUNTIME, "run", "the prompt has %zu tokens but the context holds %d (raise it with -c)",
                      t.n_prompt, n_ctx);
    if (!rc && !(engine = cli_engine_new("run", m, n_ctx, false))) rc = EXIT_RUNTIME;
    if (!rc) {
        inf_sampler_params base;
        if (sampled) {
            inf_model_sampling_defaults(m, !a.no_think, &base);
        } else {
            inf_sampler_params_default(&base);
            base.temperature = 0;
        }
        cli_sampling_params(&a.sampling, &base, n_ctx, &sp);
        inf_sampler *probe = NULL;
        if (inf_sampler_new(n_vocab, &sp, &probe, &err)) rc = cli_fail_error("run", &err);
        inf_sampler_free(probe);
    }
    if (!rc) {
        cli_catch_interrupt();
        g = (cli_generation){
            .engine = engine,
            .tok = tok,
            .prompt = prompt,
            .n_prompt = t.n_prompt,
            .sampling = sp,
            .stops = a.sampling.stops,
            .n_stops = a.sampling.n_stops,
            .n_predict = a.n_predict,
            .ignore_eos = a.ignore_eos,
            .emit = a.json || a.print_ids ? emit_buffer : emit_stdout,
            .user = a.json || a.print_ids ? (void *)&text : NULL,
        };
        cli_generate(&g);
        t.prefill_s = g.t_first_s - g.t_start_s;
        t.decode_s = g.t_end_s - g.t_first_s;
        if (g.stop == CLI_STOP_ERROR) {
            rc = cli_fail_error("run", &g.err);
        } else if (a.json) {
            rc = print_json(&a, &t, &g, &text, &sp, sampled);
        } else {
            if (a.print_ids) {
                printf("[");
                for (size_t i = 0; i < g.n_ids; i++) printf("%s%d", i ? ", " : "", g.ids[i]);
                printf("]");
            }
            printf("\n");
            fflush(stdout);
            if (g.stop == CLI_STOP_CONTEXT)
                fprintf(stderr, "inferno run: the context (%d tokens) is full; stopping\n", n_ctx);
            if (g.stop == CLI_STOP_INTERRUPT) fprintf(stderr, "inferno run: interrupted\n");
            print_timings(&t, &g);
        }
        if (!rc && text.failed) rc = cli_fail(EXIT_RUNTIME, "run", "out of memory collecting the output");
        else if (!rc && g.stop == CLI_STOP_INTERRUPT) rc = 130;
    }
    if (a.model.trace) inf_model_print_trace(m, stderr);
    free(g.ids);
    free(text.data);
    free(prompt);
    inf_engine_free(engine);
    inf_model_free(m);
    free(model_path);
    cli_sampling_args_free(&a.sampling);
    return rc;
}

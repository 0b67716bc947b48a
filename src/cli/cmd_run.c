/*
 * cmd_run.c — `inferno run`: greedy generation streamed to stdout, with a
 * timings line on stderr. Without -m (and without $INFERNO_MODEL) it runs a
 * synthetic Qwen3-0.6B-geometry model, creating it on first use.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *usage_text =
    "usage: inferno run [-m MODEL] (-p TEXT | --tokens ID,ID,...) [-n N] [-t THREADS]\n"
    "                   [-c CTX] [--no-mmap] [--ids] [--ignore-eos] [--kv-type f32|f16] [--trace]\n"
    "\n"
    "Generates greedily (argmax) after the prompt and streams the text to stdout;\n"
    "stops after N tokens (default 128) or at an end-of-turn token. A timings line\n"
    "goes to stderr: prompt tokens, time to first token, prefill and decode tok/s.\n"
    "  --ids          print the generated ids as one JSON array instead of text\n"
    "  --ignore-eos   keep generating past end-of-turn tokens\n"
    "  --trace        print calls and time per op at exit\n"
    "Without -m, $INFERNO_MODEL is used; without that, a synthetic model with the\n"
    "Qwen3-0.6B geometry and RANDOM weights (created on first use).\n";

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The default model: a synthetic one in the user's cache folder. */
static char *default_model_path(void) {
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
            "inferno run: no model given, so this runs a synthetic model with the Qwen3-0.6B\n"
            "  geometry, the real Qwen3 tokenizer and RANDOM weights: its output is gibberish.\n"
            "  To run a real checkpoint: inferno run -m Qwen3-0.6B-Q8_0.gguf -p \"...\"\n"
            "  (or set INFERNO_MODEL). Model file: %s\n", path);
    if (access(path, R_OK) == 0) return strdup(path);

    /* create it: mkdir -p the cache folder, then write */
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(dir, 0755);
        *p = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        cli_fail(EXIT_RUNTIME, "run", "%s: cannot create the folder (%s)", dir, strerror(errno));
        return NULL;
    }
    inf_synth_options opt;
    inf_synth_options_default(&opt);
    char *tok_json = cli_data_path("qwen3-tokenizer/tokenizer.json");
    char *tok_config = cli_data_path("qwen3-tokenizer/tokenizer_config.json");
    if (!tok_json) {
        cli_fail(EXIT_RUNTIME, "run", "cannot find data/qwen3-tokenizer/tokenizer.json to build the default model");
        free(tok_config);
        return NULL;
    }
    opt.tokenizer_json = tok_json;
    opt.tokenizer_config_json = tok_config;
    opt.name = "Qwen3-0.6B-geometry synthetic (random weights)";
    fprintf(stderr, "inferno run: writing the synthetic model (about 0.6 GB, a few seconds)...\n");
    inf_error err = {0};
    inf_status st = inf_synth_write(&opt, path, &err);
    free(tok_json);
    free(tok_config);
    if (st) {
        cli_fail_error("run", &err);
        return NULL;
    }
    return strdup(path);
}

int cmd_run(int argc, char **argv) {
    cli_model_args a = {0};
    long n_predict = 128;
    bool print_ids = false, ignore_eos = false;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag("run", &a, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--n-predict")) {
            const char *v = cli_flag_value("run", argc, argv, &i);
            if (!v) return EXIT_USAGE;
            if (!cli_parse_int(v, 0, 1 << 24, &n_predict))
                return cli_fail(EXIT_USAGE, "run", "-n wants a token count from 0, got '%s'", v);
        } else if (!strcmp(argv[i], "--ids")) {
            print_ids = true;
        } else if (!strcmp(argv[i], "--ignore-eos")) {
            ignore_eos = true;
        } else {
            return cli_fail(EXIT_USAGE, "run", "unknown option '%s' (see --help)", argv[i]);
        }
    }
    if (!a.prompt && !a.token_list)
        return cli_fail(EXIT_USAGE, "run", "no prompt: give -p TEXT or --tokens ID,ID,...");
    char *model_path = a.model_path ? strdup(a.model_path) : default_model_path();
    if (!model_path) return EXIT_RUNTIME;
    a.model_path = model_path;

    inf_model *m = cli_load_model("run", &a);
    if (!m) {
        free(model_path);
        return EXIT_RUNTIME;
    }
    inf_model_info info;
    inf_model_get_info(m, &info);
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    int32_t *prompt = NULL, *gen = NULL;
    size_t n_prompt = 0;
    int rc = cli_prompt_ids("run", &a, m, &prompt, &n_prompt);
    inf_session *s = NULL;
    float *logits = NULL;
    inf_error err = {0};
    if (!rc && inf_session_new(m, a.n_ctx, &s, &err)) rc = cli_fail_error("run", &err);
    if (!rc) {
        logits = malloc((size_t)info.n_vocab * sizeof(float));
        gen = malloc(((size_t)n_predict + 1) * sizeof *gen);
        if (!logits || !gen) rc = cli_fail(EXIT_RUNTIME, "run", "out of memory");
    }
    double t0 = now_s(), t_first = t0, t_end = t0;
    long n_gen = 0, n_decoded = 0;
    if (!rc && inf_session_eval(s, prompt, (int)n_prompt, INF_LOGITS_LAST, logits, &err))
        rc = cli_fail_error("run", &err);
    if (!rc) {
        inf_detok_stream stream;
        inf_detok_stream_init(&stream);
        char text[256];
        size_t n_text;
        while (n_gen < n_predict) {
            int32_t id = argmax(logits, info.n_vocab);
            if (n_gen == 0) t_first = now_s();
            if (!ignore_eos && tok && inf_tokenizer_is_eog(tok, id)) break;
            gen[n_gen++] = id;
            if (!print_ids && tok) {
                if (inf_detok_stream_push(tok, &stream, id, text, sizeof text, &n_text, &err)) {
                    rc = cli_fail_error("run", &err);
                    break;
                }
                fwrite(text, 1, n_text, stdout);
                fflush(stdout);
            } else if (!print_ids) {
                printf("%s%d", n_gen > 1 ? " " : "", id);
                fflush(stdout);
            }
            if (n_gen == n_predict) break;
            if (inf_session_eval(s, &id, 1, INF_LOGITS_LAST, logits, &err)) {
                if (err.status == INF_ERR_CONTEXT_FULL) {
                    fprintf(stderr, "\ninferno run: the context (%d tokens) is full; stopping\n",
                            inf_session_n_ctx(s));
                } else {
                    rc = cli_fail_error("run", &err);
                }
                break;
            }
            n_decoded++;
        }
        t_end = now_s();
        if (!print_ids && tok) {
            n_text = inf_detok_stream_flush(&stream, text, sizeof text);
            fwrite(text, 1, n_text, stdout);
        }
        if (print_ids) {
            printf("[");
            for (long i = 0; i < n_gen; i++) printf("%s%d", i ? ", " : "", gen[i]);
            printf("]");
        }
        printf("\n");
        fflush(stdout);
        double prefill_s = t_first - t0, decode_s = t_end - t_first;
        fprintf(stderr,
                "prompt %zu tokens | first token %.1f ms | prefill %.1f tok/s | decode %.1f tok/s "
                "(%ld tokens)\n",
                n_prompt, 1e3 * prefill_s, prefill_s > 0 ? (double)n_prompt / prefill_s : 0.0,
                n_decoded > 0 && decode_s > 0 ? (double)n_decoded / decode_s : 0.0, n_gen);
    }
    if (a.trace) inf_model_print_trace(m, stderr);
    free(gen);
    free(logits);
    free(prompt);
    inf_session_free(s);
    inf_model_free(m);
    free(model_path);
    return rc;
}

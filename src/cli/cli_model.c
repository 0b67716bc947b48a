/*
 * cli_model.c — what run, logits and bench share: the model flags (-m takes
 * a GGUF file, a Hugging Face checkpoint directory, or ORG/NAME[:TAG] from
 * the Hugging Face cache), loading
 * with a one-line error, turning -p / --tokens into ids, finding data files.
 */
#include "cli/cli.h"
#include "hub/hub.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_rope_flag(const char *cmd, cli_rope_args *r, int argc, char **argv, int *i) {
    const char *f = argv[*i];
    const char *v;
    long n;
    if (!strcmp(f, "--rope-scaling")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!inf_rope_scaling_from_name(v, &r->scaling)) {
            cli_fail(EXIT_USAGE, cmd, "--rope-scaling wants none, linear or yarn, got '%s'", v);
            return -1;
        }
        r->scaling_set = true;
        return 1;
    }
    if (!strcmp(f, "--rope-scale")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        char *end;
        double d = strtod(v, &end);
        if (end == v || *end || !(d >= 1 && d <= 1e6)) {
            cli_fail(EXIT_USAGE, cmd, "--rope-scale wants a factor from 1 to 1e6, got '%s'", v);
            return -1;
        }
        r->scale = (float)d;
        return 1;
    }
    if (!strcmp(f, "--yarn-orig-ctx")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!cli_parse_int(v, 1, 1 << 24, &n)) {
            cli_fail(EXIT_USAGE, cmd, "--yarn-orig-ctx wants a context length from 1, got '%s'", v);
            return -1;
        }
        r->orig_ctx = (int)n;
        return 1;
    }
    return 0;
}

void cli_rope_apply(const cli_rope_args *r, inf_load_options *opt) {
    opt->rope_scaling_set = r->scaling_set;
    opt->rope_scaling = r->scaling;
    opt->rope_scale = r->scale;
    opt->yarn_orig_ctx = r->orig_ctx;
}

int cli_model_flag(const char *cmd, cli_model_args *a, int argc, char **argv, int *i) {
    const char *f = argv[*i];
    const char *v;
    long n;
    int r = cli_rope_flag(cmd, &a->rope, argc, argv, i);
    if (r) return r;
    if (!strcmp(f, "--no-mmap")) { a->no_mmap = true; return 1; }
    if (!strcmp(f, "--no-repack")) { a->no_repack = true; return 1; }
    if (!strcmp(f, "--trace")) { a->trace = true; return 1; }
    if (!strcmp(f, "-m") || !strcmp(f, "--model")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        a->model_path = v;
        return 1;
    }
    if (!strcmp(f, "-p") || !strcmp(f, "--prompt")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        a->prompt = v;
        return 1;
    }
    if (!strcmp(f, "--tokens")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        a->token_list = v;
        return 1;
    }
    if (!strcmp(f, "-t") || !strcmp(f, "--threads")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!cli_parse_int(v, 1, 1024, &n)) {
            cli_fail(EXIT_USAGE, cmd, "-t wants a thread count from 1 to 1024, got '%s'", v);
            return -1;
        }
        a->n_threads = (int)n;
        return 1;
    }
    if (!strcmp(f, "-c") || !strcmp(f, "--ctx-size")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!cli_parse_int(v, 1, 1 << 24, &n)) {
            cli_fail(EXIT_USAGE, cmd, "-c wants a context length from 1, got '%s'", v);
            return -1;
        }
        a->n_ctx = (int)n;
        return 1;
    }
    if (!strcmp(f, "--quantize")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i)) || !cli_parse_quantize(cmd, v, &a->quantize_type)) return -1;
        a->quantize = true;
        return 1;
    }
    if (!strcmp(f, "--kv-type")) {
        if (!(v = cli_flag_value(cmd, argc, argv, i))) return -1;
        if (!inf_kv_type_from_name(v, &a->kv_type)) {
            cli_fail(EXIT_USAGE, cmd, "--kv-type wants f32, f16 or q8_0, got '%s'", v);
            return -1;
        }
        return 1;
    }
    return 0;
}

bool cli_parse_quantize(const char *cmd, const char *v, inf_dtype *out) {
    if (!inf_dtype_from_name(v, out) || *out != INF_DTYPE_Q8_0) {
        cli_fail(EXIT_USAGE, cmd, "--quantize wants q8_0, got '%s'", v);
        return false;
    }
    return true;
}

/* The paths cli_resolve_model made, freed at exit. */
enum { MAX_RESOLVED = 8 };
static char *resolved_paths[MAX_RESOLVED];
static int n_resolved;

static void free_resolved(void) {
    for (int i = 0; i < n_resolved; i++) free(resolved_paths[i]);
    n_resolved = 0;
}

int cli_resolve_model(const char *cmd, const char **path) {
    char repo[HUB_REPO_MAX], tag[HUB_TAG_MAX];
    if (!*path || access(*path, F_OK) == 0 || !hub_parse_spec(*path, repo, tag)) return 0;
    /* dir/model.gguf that is not there is a mistyped file, not a repository:
     * the loader's "cannot open" says so better */
    static const char *const file_suffixes[] = {".gguf", ".safetensors", ".json"};
    size_t len = strlen(*path);
    for (size_t i = 0; i < sizeof file_suffixes / sizeof file_suffixes[0]; i++) {
        size_t n = strlen(file_suffixes[i]);
        if (len > n && !strcmp(*path + len - n, file_suffixes[i])) return 0;
    }
    if (n_resolved == MAX_RESOLVED) return cli_fail(EXIT_RUNTIME, cmd, "too many models named");
    hub_error err = {{0}};
    char *found;
    if (!hub_resolve_cached(repo, tag, &found, &err)) return cli_fail(EXIT_RUNTIME, cmd, "%s", err.msg);
    if (n_resolved == 0) atexit(free_resolved);
    resolved_paths[n_resolved++] = found;
    *path = found;
    return 0;
}

inf_model *cli_load_model(const char *cmd, const cli_model_args *a) {
    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = a->n_threads;
    opt.n_ctx = a->n_ctx;
    opt.use_mmap = !a->no_mmap;
    opt.no_repack = a->no_repack;
    opt.trace = a->trace;
    opt.kv_type = a->kv_type;
    opt.quantize = a->quantize;
    opt.quantize_type = a->quantize_type;
    cli_rope_apply(&a->rope, &opt);
    cli_progress bar;
    cli_progress_begin(&bar, "loading");
    opt.progress = cli_progress_callback;
    opt.progress_user = &bar;
    inf_model *m = NULL;
    inf_error err = {0};
    inf_status st = inf_model_load(a->model_path, &opt, &m, &err);
    cli_progress_end(&bar);
    if (st) {
        cli_fail_error(cmd, &err);
        return NULL;
    }
    return m;
}

int cli_prompt_ids(const char *cmd, const cli_model_args *a, const inf_model *m, int32_t **ids,
                   size_t *n) {
    if (a->prompt && a->token_list)
        return cli_fail(EXIT_USAGE, cmd, "give either -p or --tokens, not both");
    if (a->token_list) {
        if (!cli_parse_ids(a->token_list, ids, n))
            return cli_fail(EXIT_USAGE, cmd, "--tokens wants a list like 1,2,3, got '%s'", a->token_list);
        return 0;
    }
    if (!a->prompt) return cli_fail(EXIT_USAGE, cmd, "no prompt: give -p TEXT or --tokens ID,ID,...");
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    if (!tok)
        return cli_fail(EXIT_RUNTIME, cmd, "%s has no tokenizer; use --tokens ID,ID,...", a->model_path);
    inf_error err = {0};
    if (inf_tokenize(tok, a->prompt, strlen(a->prompt), 0, ids, n, &err)) return cli_fail_error(cmd, &err);
    if (*n == 0) {
        free(*ids);
        return cli_fail(EXIT_USAGE, cmd, "the prompt is empty");
    }
    return 0;
}

char *cli_data_path(const char *relative) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char candidate[PATH_MAX + 64];
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0; /* the build folder */
            snprintf(candidate, sizeof candidate, "%s/../data/%s", exe, relative);
            if (access(candidate, R_OK) == 0) return realpath(candidate, NULL);
        }
    }
    snprintf(candidate, sizeof candidate, "data/%s", relative);
    if (access(candidate, R_OK) == 0) return realpath(candidate, NULL);
    return NULL;
}

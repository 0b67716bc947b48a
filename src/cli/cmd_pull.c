/*
 * cmd_pull.c — `inferno pull ORG/NAME[:TAG]`: downloads a GGUF (the file
 * the tag names) or a safetensors checkpoint from the Hugging Face hub into
 * its cache (src/hub/), with a progress bar on a terminal, and prints the
 * path `-m` then loads. The environment is huggingface_hub's: HF_TOKEN (or
 * the token file `hf auth login` writes), HF_ENDPOINT, HF_HOME /
 * HF_HUB_CACHE, HF_HUB_OFFLINE.
 */
#include "cli/cli.h"
#include "hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "usage: inferno pull ORG/NAME[:TAG] [--revision REV] [--quiet]\n"
    "\n"
    "Downloads a model from the Hugging Face hub into its cache (shared with\n"
    "huggingface_hub and llama.cpp's -hf) and prints the path that -m loads.\n"
    "Afterwards -m ORG/NAME[:TAG] finds it there, offline, in every command.\n"
    "\n"
    "  ORG/NAME:TAG    a GGUF repository's file whose name holds TAG (Q8_0, q4_k_m, ...;\n"
    "                  any case), as llama.cpp's -hf picks it; a split GGUF comes whole\n"
    "  ORG/NAME        without a tag: Q4_K_M, else Q8_0, else the first GGUF; a repository\n"
    "                  without GGUFs gives its safetensors checkpoint (config.json,\n"
    "                  generation_config.json, tokenizer*.json, model.safetensors or the\n"
    "                  shards of model.safetensors.index.json)\n"
    "  --revision REV  a branch, tag or commit (default main)\n"
    "  --quiet         no progress bar or file lines, even on a terminal\n"
    "\n"
    "Interrupted downloads resume where they stopped (blobs/<etag>.incomplete);\n"
    "sizes, and the sha256 of LFS files, are checked against the hub's headers.\n"
    "A second pull of the same revision downloads nothing.\n"
    "\n"
    "Environment: HF_TOKEN (a token for private or gated repositories; else the file\n"
    "$HF_TOKEN_PATH or $HF_HOME/token), HF_ENDPOINT (default https://huggingface.co),\n"
    "HF_HUB_CACHE (default $HF_HOME/hub; HF_HOME default ~/.cache/huggingface),\n"
    "HF_HUB_OFFLINE=1 (refuse to reach the network).\n";

typedef struct pull_display {
    bool verbose;        /* a terminal and not --quiet */
    cli_progress bar;
    bool bar_open;
    char label[48];
} pull_display;

static void on_progress(void *user, const char *file, uint64_t done_bytes, uint64_t total_bytes) {
    pull_display *d = user;
    if (!d->verbose) return;
    if (!d->bar_open) {
        const char *slash = strrchr(file, '/');
        const char *name = slash ? slash + 1 : file;
        size_t len = strlen(name);
        /* the end of a long name: the tag and the part number are there */
        if (len > 40) snprintf(d->label, sizeof d->label, "...%s", name + len - 37);
        else snprintf(d->label, sizeof d->label, "%s", name);
        cli_progress_begin(&d->bar, d->label);
        d->bar_open = true;
    }
    cli_progress_update_bytes(&d->bar, done_bytes, total_bytes);
}

static void close_bar(pull_display *d) {
    if (d->bar_open) cli_progress_end(&d->bar);
    d->bar_open = false;
}

static void on_file(void *user, const char *file, bool downloaded, uint64_t size_bytes) {
    pull_display *d = user;
    close_bar(d);
    if (d->verbose)
        fprintf(stderr, "  %-50s %10.1f MiB  %s\n", file, (double)size_bytes / 1048576.0,
                downloaded ? "downloaded" : "cached");
}

/* HF_TOKEN, else the token file huggingface_hub's login writes. malloc'd or NULL. */
static char *read_token(void) {
    const char *env = getenv("HF_TOKEN");
    if (env && *env) return strdup(env);
    char path[4096];
    const char *token_path = getenv("HF_TOKEN_PATH"), *hf_home = getenv("HF_HOME"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    if (token_path && *token_path) snprintf(path, sizeof path, "%s", token_path);
    else if (hf_home && *hf_home) snprintf(path, sizeof path, "%s/token", hf_home);
    else if (xdg && *xdg) snprintf(path, sizeof path, "%s/huggingface/token", xdg);
    else if (home && *home) snprintf(path, sizeof path, "%s/.cache/huggingface/token", home);
    else return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char text[512];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ')) n--;
    text[n] = 0;
    return n ? strdup(text) : NULL;
}

static bool env_true(const char *name) {
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"));
}

int cmd_pull(int argc, char **argv) {
    const char *spec = NULL, *revision = NULL;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
            quiet = true;
        } else if (!strcmp(argv[i], "--revision")) {
            if (!(revision = cli_flag_value("pull", argc, argv, &i))) return EXIT_USAGE;
        } else if (argv[i][0] == '-') {
            return cli_fail(EXIT_USAGE, "pull", "unknown option '%s' (see inferno pull --help)", argv[i]);
        } else if (spec) {
            return cli_fail(EXIT_USAGE, "pull", "one repository at a time (got '%s' and '%s')", spec, argv[i]);
        } else {
            spec = argv[i];
        }
    }
    if (!spec) return cli_fail(EXIT_USAGE, "pull", "no repository: give ORG/NAME[:TAG] (see inferno pull --help)");
    char repo[HUB_REPO_MAX], tag[HUB_TAG_MAX];
    if (!hub_parse_spec(spec, repo, tag))
        return cli_fail(EXIT_USAGE, "pull", "'%s' is not ORG/NAME or ORG/NAME:TAG (a tag is letters, digits and _)", spec);
    if (env_true("HF_HUB_OFFLINE"))
        return cli_fail(EXIT_RUNTIME, "pull", "HF_HUB_OFFLINE is set, so the hub cannot be reached");

    hub_error err = {{0}};
    if (!hub_global_init(&err)) return cli_fail(EXIT_RUNTIME, "pull", "%s", err.msg);
    pull_display display = {.verbose = !quiet && isatty(STDERR_FILENO)};
    char *token = read_token();
    cli_catch_interrupt();
    hub_client_options copt = {
        .endpoint = getenv("HF_ENDPOINT"),
        .token = token,
        .progress = on_progress,
        .progress_user = &display,
        .cancel = &cli_interrupted,
    };
    hub_client *client = hub_client_new(&copt, &err);
    int rc = 0;
    if (!client) {
        rc = cli_fail(EXIT_RUNTIME, "pull", "%s", err.msg);
    } else {
        hub_pull_options o = {.repo = repo, .tag = tag, .revision = revision, .client = client, .on_file = on_file,
                              .user = &display};
        hub_pull_result r;
        if (display.verbose) fprintf(stderr, "pulling %s%s%s\n", repo, *tag ? ":" : "", tag);
        bool ok = hub_pull(&o, &r, &err);
        close_bar(&display);
        if (!ok) {
            rc = cli_fail(cli_interrupted ? 130 : EXIT_RUNTIME, "pull", "%s", err.msg);
        } else {
            if (display.verbose)
                fprintf(stderr, "%s at %.12s: %zu file%s, %zu downloaded (%.1f MiB)%s\n", repo, r.commit, r.n_files,
                        r.n_files == 1 ? "" : "s", r.n_downloaded, (double)r.downloaded_bytes / 1048576.0,
                        r.n_downloaded ? "" : ", up to date");
            printf("%s\n", r.path);
            if (fflush(stdout) != 0) rc = cli_fail(EXIT_RUNTIME, "pull", "cannot write to stdout");
        }
        hub_client_free(client);
    }
    free(token);
    hub_global_cleanup();
    return rc;
}

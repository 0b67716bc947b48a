/*
 * cmd_serve.c — `inferno serve`: reads the flags and runs the HTTP server
 * (src/server/).
 */
#include "cli/cli.h"
#include "server/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "usage: inferno serve -m MODEL [options]\n"
    "\n"
    "An OpenAI- and Anthropic-compatible HTTP server: /v1/chat/completions,\n"
    "/v1/completions, /v1/messages, /v1/models, /tokenize, /detokenize,\n"
    "/health and /metrics. Stops on SIGINT or SIGTERM: new requests are\n"
    "refused, running ones get the grace period, then are cancelled.\n"
    "\n"
    "  -m, --model PATH       GGUF file, Hugging Face checkpoint directory, or ORG/NAME[:TAG]\n"
    "                         from the Hugging Face cache (see inferno pull)\n"
    "                         (default: $INFERNO_MODEL, else the synthetic model)\n"
    "  --host ADDR            address to listen on (default 127.0.0.1)\n"
    "  --port N               port (default 8080; 0 = any free port, printed at startup)\n"
    "  --api-key KEY          require this key (Authorization: Bearer KEY, or x-api-key)\n"
    "  --api-key-file F       read the key from the first line of F\n"
    "  --parallel N           sequences decoded at once (default 4)\n"
    "  -c, --ctx-size N       longest context of one request, prompt included (default: the model's, at most 8192);\n"
    "                         not divided among the parallel sequences\n"
    "  --kv-pool SIZE         the shared KV cache: N tokens, or NMiB / NGiB (default: parallel x ctx tokens,\n"
    "                         capped to the memory available beside the weights)\n"
    "  --kv-type T            KV cache elements: f32, f16 (default) or q8_0\n"
    "  -t, --threads N        compute threads (default: physical cores)\n"
    "  --alias NAME           the model's name in /v1/models (default: ORG/NAME:TAG when -m is one,\n"
    "                         else general.name, else the file name)\n"
    "  --strict-model         answer 404 to a request naming another model (default: answer any name)\n"
    "  --cors-origin ORIGIN   allow browser requests from ORIGIN (or *)\n"
    "  --max-body BYTES       largest request body (default 8388608)\n"
    "  --max-queue N          requests that may wait beyond the running ones before 429 (default 256)\n"
    "  --timeout S            close connections idle for S seconds (default 600)\n"
    "  --grace S              seconds running requests get to finish at shutdown (default 10)\n"
    "  --no-mmap              read the weights into memory instead of mapping the file\n"
    "  --no-repack            keep the weights in the file's layout (no repacking at load)\n"
    "  --quantize q8_0        convert F32/F16/BF16 matrices to Q8_0 while loading\n"
    "  --rope-scaling T, --rope-scale F, --yarn-orig-ctx N\n"
    "                         RoPE scaling over the file's, as llama.cpp's flags (e.g. yarn, 4, 32768)\n"
    "  --quiet                no per-request log lines\n"
    "  --trace                print calls and time per op at shutdown (slows the server)\n"
    "\n"
    "Exit codes: 0 after a clean shutdown, 1 when the model or the address fails, 2 for bad flags.\n";

static int bad(const char *flag, const char *want, const char *v) {
    return cli_fail(EXIT_USAGE, "serve", "%s wants %s, got '%s'", flag, want, v);
}

/* "4096" tokens, "512MiB", "2GiB" (M, MB, G, GB too) */
static bool parse_pool(const char *s, long *tokens, long *mib) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || v <= 0) return false;
    if (!*end) {
        *tokens = v;
        return v <= (1L << 30);
    }
    if (!strcasecmp(end, "m") || !strcasecmp(end, "mb") || !strcasecmp(end, "mib")) *mib = v;
    else if (!strcasecmp(end, "g") || !strcasecmp(end, "gb") || !strcasecmp(end, "gib")) *mib = v * 1024;
    else return false;
    return *mib <= (1L << 24);
}

static char *read_key_file(const char *path) {
    size_t len;
    char *text = cli_read_file(path, &len);
    if (!text) return NULL;
    text[strcspn(text, "\r\n")] = 0;
    return text;
}

int cmd_serve(int argc, char **argv) {
    server_options o;
    server_options_default(&o);
    char *key_file_text = NULL, *default_model = NULL;
    long n;
    int rc = EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            fputs(usage, stdout);
            rc = 0;
            goto out;
        }
        if (!strcmp(f, "--strict-model")) { o.strict_model = true; continue; }
        if (!strcmp(f, "--no-mmap")) { o.no_mmap = true; continue; }
        if (!strcmp(f, "--no-repack")) { o.no_repack = true; continue; }
        if (!strcmp(f, "--quiet")) { o.quiet = true; continue; }
        if (!strcmp(f, "--trace")) { o.trace = true; continue; }
        cli_rope_args rope = {o.rope_scaling_set, o.rope_scaling, o.rope_scale, o.yarn_orig_ctx};
        int r = cli_rope_flag("serve", &rope, argc, argv, &i);
        if (r < 0) goto out;
        if (r > 0) {
            o.rope_scaling_set = rope.scaling_set, o.rope_scaling = rope.scaling;
            o.rope_scale = rope.scale, o.yarn_orig_ctx = rope.orig_ctx;
            continue;
        }
        if (!(v = cli_flag_value("serve", argc, argv, &i))) goto out;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) o.model_path = v;
        else if (!strcmp(f, "--quantize")) {
            if (!cli_parse_quantize("serve", v, &o.quantize_type)) goto out;
            o.quantize = true;
        }
        else if (!strcmp(f, "--host")) o.host = v;
        else if (!strcmp(f, "--port")) {
            if (!cli_parse_int(v, 0, 65535, &n)) { bad(f, "a port from 0 to 65535", v); goto out; }
            o.port = (int)n;
        } else if (!strcmp(f, "--api-key")) o.api_key = v;
        else if (!strcmp(f, "--api-key-file")) {
            free(key_file_text);
            if (!(key_file_text = read_key_file(v))) { cli_fail(EXIT_USAGE, "serve", "--api-key-file: cannot read '%s'", v); goto out; }
            if (!*key_file_text) { cli_fail(EXIT_USAGE, "serve", "--api-key-file: '%s' holds no key", v); goto out; }
            o.api_key = key_file_text;
        } else if (!strcmp(f, "--parallel") || !strcmp(f, "-np")) {
            if (!cli_parse_int(v, 1, 256, &n)) { bad(f, "a count from 1 to 256", v); goto out; }
            o.parallel = (int)n;
        } else if (!strcmp(f, "-c") || !strcmp(f, "--ctx-size")) {
            if (!cli_parse_int(v, 16, 1 << 24, &n)) { bad(f, "a context length from 16", v); goto out; }
            o.n_ctx = (int)n;
        } else if (!strcmp(f, "--kv-pool")) {
            if (!parse_pool(v, &o.kv_pool_tokens, &o.kv_pool_mib)) { bad(f, "N tokens, NMiB or NGiB", v); goto out; }
        } else if (!strcmp(f, "--kv-type")) {
            if (!inf_kv_type_from_name(v, &o.kv_type)) { bad(f, "f32, f16 or q8_0", v); goto out; }
        } else if (!strcmp(f, "-t") || !strcmp(f, "--threads")) {
            if (!cli_parse_int(v, 1, 1024, &n)) { bad(f, "a thread count from 1 to 1024", v); goto out; }
            o.n_threads = (int)n;
        } else if (!strcmp(f, "--alias")) o.alias = v;
        else if (!strcmp(f, "--cors-origin")) o.cors_origin = v;
        else if (!strcmp(f, "--max-body")) {
            if (!cli_parse_int(v, 1024, 1L << 31, &n)) { bad(f, "a byte count from 1024", v); goto out; }
            o.max_body = (size_t)n;
        } else if (!strcmp(f, "--max-queue")) {
            if (!cli_parse_int(v, 0, 1 << 20, &n)) { bad(f, "a count from 0", v); goto out; }
            o.max_queue = (int)n;
        } else if (!strcmp(f, "--timeout")) {
            if (!cli_parse_int(v, 1, 86400, &n)) { bad(f, "seconds from 1 to 86400", v); goto out; }
            o.timeout_s = (int)n;
        } else if (!strcmp(f, "--grace")) {
            if (!cli_parse_int(v, 0, 3600, &n)) { bad(f, "seconds from 0 to 3600", v); goto out; }
            o.grace_s = (int)n;
        } else {
            cli_fail(EXIT_USAGE, "serve", "unknown option '%s' (see inferno serve --help)", f);
            goto out;
        }
    }
    const char *model_spec = o.model_path;
    if ((rc = cli_resolve_model("serve", &o.model_path))) goto out;
    /* -m ORG/NAME:TAG: the model is served under that name */
    if (o.model_path != model_spec && !o.alias) o.alias = model_spec;
    if (!o.model_path) {
        if (!(default_model = cli_default_model_path("serve"))) {
            rc = EXIT_RUNTIME;
            goto out;
        }
        o.model_path = default_model;
    }
    rc = server_run(&o);
out:
    free(key_file_text);
    free(default_model);
    return rc;
}

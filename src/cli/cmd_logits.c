/*
 * cmd_logits.c — `inferno logits`: runs a prompt in one prefill and prints
 * the top-K logits (final position, optionally every position) as one JSON
 * object; --dump writes every final logit as little-endian float32.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_text =
    "usage: inferno logits -m MODEL (-p TEXT | --tokens ID,ID,...) [--top K]\n"
    "                      [--all-positions] [--dump FILE] [-t THREADS] [-c CTX]\n"
    "                      [--no-mmap] [--no-repack] [--kv-type f32|f16|q8_0] [--quantize q8_0] [--trace]\n"
    "                      [--pos0 P] [--rope-scaling T --rope-scale F --yarn-orig-ctx N]\n"
    "\n"
    "Runs the prompt through the model in one pass and prints one JSON object:\n"
    "  {\"prompt_tokens\": [...], \"final\": {\"top\": [{\"id\": i, \"logit\": x}, ...]},\n"
    "   \"positions\": [{\"pos\": p, \"top\": [...]}, ...]}   (positions with --all-positions)\n"
    "top-K by logit, descending, ties to the lower id (K default 20).\n"
    "MODEL: a GGUF file, a Hugging Face checkpoint directory, or ORG/NAME[:TAG] from\n"
    "the Hugging Face cache (see inferno pull).\n"
    "  --dump FILE   write all final-position logits as little-endian float32\n"
    "  --kv-type     KV cache element type (default f32, the exact reference;\n"
    "                run, chat and bench default to f16)\n"
    "  --pos0 P      place the prompt at positions P, P+1, ... with nothing before it\n"
    "                (as a llama.cpp batch starting at P: RoPE far out in a long context)\n";

typedef struct scored { int id; float logit; } scored;

/* Keeps the k best (logit desc, id asc) of row in out[0..k). */
static int top_k(const float *row, int n_vocab, int k, scored *out) {
    int have = 0;
    for (int i = 0; i < n_vocab; i++) {
        float v = row[i];
        if (have == k && !(v > out[k - 1].logit)) continue;
        int j = have < k ? have++ : k - 1;
        while (j > 0 && out[j - 1].logit < v) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = (scored){i, v};
    }
    return have;
}

static void print_top(FILE *o, const float *row, int n_vocab, int k, scored *buf) {
    int n = top_k(row, n_vocab, k, buf);
    fputs("[", o);
    for (int i = 0; i < n; i++)
        fprintf(o, "%s{\"id\": %d, \"logit\": %.9g}", i ? ", " : "", buf[i].id, (double)buf[i].logit);
    fputs("]", o);
}

static int dump_logits(const char *path, const float *row, int n_vocab) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return cli_fail(EXIT_RUNTIME, "logits", "%s: cannot create", tmp);
    /* little-endian float32: this is the host order on every target we build for */
    size_t w = fwrite(row, sizeof(float), (size_t)n_vocab, f);
    if (fclose(f) != 0 || w != (size_t)n_vocab || rename(tmp, path) != 0) {
        remove(tmp);
        return cli_fail(EXIT_RUNTIME, "logits", "%s: write failed", path);
    }
    return 0;
}

int cmd_logits(int argc, char **argv) {
    cli_model_args a = {0};
    long top = 20;
    bool all_positions = false;
    const char *dump = NULL;
    long pos0 = 0;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag("logits", &a, argc, argv, &i);
        if (r < 0) return EXIT_USAGE;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--top")) {
            const char *v = cli_flag_value("logits", argc, argv, &i);
            if (!v) return EXIT_USAGE;
            if (!cli_parse_int(v, 1, 1000000, &top))
                return cli_fail(EXIT_USAGE, "logits", "--top wants a count from 1, got '%s'", v);
        } else if (!strcmp(argv[i], "--pos0")) {
            const char *v = cli_flag_value("logits", argc, argv, &i);
            if (!v) return EXIT_USAGE;
            if (!cli_parse_int(v, 0, 1 << 30, &pos0))
                return cli_fail(EXIT_USAGE, "logits", "--pos0 wants a position from 0, got '%s'", v);
        } else if (!strcmp(argv[i], "--all-positions")) {
            all_positions = true;
        } else if (!strcmp(argv[i], "--dump")) {
            if (!(dump = cli_flag_value("logits", argc, argv, &i))) return EXIT_USAGE;
        } else {
            return cli_fail(EXIT_USAGE, "logits", "unknown option '%s' (see --help)", argv[i]);
        }
    }
    if (!a.model_path) return cli_fail(EXIT_USAGE, "logits", "no model: give -m MODEL.gguf");
    int resolve_rc = cli_resolve_model("logits", &a.model_path);
    if (resolve_rc) return resolve_rc;
    if (!a.prompt && !a.token_list)
        return cli_fail(EXIT_USAGE, "logits", "no prompt: give -p TEXT or --tokens ID,ID,...");

    inf_model *m = cli_load_model("logits", &a);
    if (!m) return EXIT_RUNTIME;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = cli_prompt_ids("logits", &a, m, &ids, &n);
    inf_session *s = NULL;
    float *logits = NULL;
    scored *buf = NULL;
    inf_model_info info;
    inf_model_get_info(m, &info);
    inf_error err = {0};
    /* without -c, a context just large enough for the prompt when it is longer than the default */
    int n_ctx = a.n_ctx ? a.n_ctx : (n > 4096 ? (int)n : 0);
    if (!rc && (inf_session_new(m, n_ctx, &s, &err) || inf_session_set_rope_offset(s, (int)pos0, &err)))
        rc = cli_fail_error("logits", &err);
    if (!rc) {
        size_t rows = all_positions ? n : 1;
        logits = malloc(rows * (size_t)info.n_vocab * sizeof(float));
        buf = malloc((size_t)top * sizeof *buf);
        if (!logits || !buf) rc = cli_fail(EXIT_RUNTIME, "logits", "out of memory");
    }
    if (!rc && inf_session_eval(s, ids, (int)n, all_positions ? INF_LOGITS_ALL : INF_LOGITS_LAST, logits, &err))
        rc = cli_fail_error("logits", &err);
    if (!rc) {
        int k = top < info.n_vocab ? (int)top : info.n_vocab;
        const float *final = logits + (all_positions ? (n - 1) * (size_t)info.n_vocab : 0);
        if (dump) rc = dump_logits(dump, final, info.n_vocab);
        if (!rc) {
            printf("{\"prompt_tokens\": [");
            for (size_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
            printf("],\n \"final\": {\"top\": ");
            print_top(stdout, final, info.n_vocab, k, buf);
            printf("}");
            if (all_positions) {
                printf(",\n \"positions\": [");
                for (size_t p = 0; p < n; p++) {
                    printf("%s\n  {\"pos\": %zu, \"top\": ", p ? "," : "", p);
                    print_top(stdout, logits + p * (size_t)info.n_vocab, info.n_vocab, k, buf);
                    printf("}");
                }
                printf("]");
            }
            printf("}\n");
        }
    }
    if (a.trace) inf_model_print_trace(m, stderr);
    free(buf);
    free(logits);
    free(ids);
    inf_session_free(s);
    inf_model_free(m);
    return rc;
}

/*
 * cmd_bench.c — `inferno bench`: prefill and decode speed, in the manner of
 * llama-bench, next to the machine's measured read bandwidth.
 *
 * One model load (timed), one session sized for the largest case, then per
 * case a warm-up run and -r timed repetitions; the median and the spread
 * (min, max) over the repetitions are reported.
 *   prefill P   one eval of P tokens asking for the last logits, then the
 *               argmax: tok/s = P / time, and that time is the time to
 *               first token.
 *   decode N@D  the KV cache is filled with D tokens (not timed), then N
 *               single-token evals with logits are timed: tok/s = N / time.
 * Decode is memory-bound, so each decode case also reports the bytes read
 * per token (all weights, plus the K and V rows the attention reads at the
 * average context over the N steps) as GB/s, and that as a share of the
 * machine's sequential read bandwidth measured with the same thread count
 * just before and just after the case's runs, the higher of the two
 * (inf_measure_read_bandwidth, in a child process so that its buffer does
 * not count in this process's peak RSS; bw_helper).
 *
 * Token ids are pseudo-random ordinary tokens (never special ones), the
 * same sequence in every repetition; bench/llama_bench.c draws the same
 * ids, so both engines see the same input.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *usage_text =
    "usage: inferno bench -m MODEL [-t THREADS] [-p 17,511,2044] [-n 64] [-d 0,511,2044]\n"
    "                     [-r 5] [-c CTX] [--no-mmap] [--no-repack] [--kv-type f32|f16|q8_0] [--no-warmup]\n"
    "                     [--bw-mib 1024] [--trace] [--json]\n"
    "       inferno bench -m MODEL --parallel 1,2,4,8,16 [-n 32] [-d 64] [-r 3] ...\n"
    "       inferno bench -m MODEL --prefix 1000 [--suffix 20] [-r 3] ...\n"
    "\n"
    "Measures prefill and decode speed. After one warm-up run per case, each case\n"
    "is repeated -r times and the median, min and max tokens/s are reported.\n"
    "MODEL: a GGUF file, a Hugging Face checkpoint directory, or ORG/NAME[:TAG] from\n"
    "the Hugging Face cache (see inferno pull).\n"
    "  -p LIST      prefill cases: tokens per prompt (0 = no prefill cases);\n"
    "               also reports the time to first token\n"
    "  -n N         decode case: N single-token steps (0 = no decode cases)\n"
    "  -d LIST      context depths for the decode case: the KV cache is filled\n"
    "               with that many tokens first (not timed)\n"
    "  -r REPS      timed repetitions per case (default 5)\n"
    "  -t THREADS   threads (default: the physical cores)\n"
    "  --no-mmap    read the weights into anonymous memory instead of mapping\n"
    "               the file (compare engines this way: mapped reads are erratic\n"
    "               on some VMs)\n"
    "  --no-repack  multiply the weights in the file's layout (default: Q8_0\n"
    "               repacked once at load where the kernels have a layout for it)\n"
    "  --kv-type    KV cache element type: f32, f16 (default, as llama.cpp) or q8_0\n"
    "  --quantize q8_0  convert F32/F16/BF16 matrices to Q8_0 while loading\n"
    "  --no-warmup  skip the warm-up runs\n"
    "  --bw-mib N   buffer size for the bandwidth measurement (default 1024;\n"
    "               0 = do not measure)\n"
    "  --trace      print calls and time per op (matmul also per weight) at exit,\n"
    "               and the weight prefetch hint in use (slows the run)\n"
    "  --json       one JSON object per line and case, then a summary object\n"
    "  --parallel LIST  batched decode through the engine instead: N sequences,\n"
    "               each with its own -d token prompt (default 64), decoded\n"
    "               together for -n steps (default 32); aggregate tok/s per N\n"
    "  --prefix P   time to first token of a request whose P-token prefix the\n"
    "               engine's prefix cache holds, against the same request cold\n"
    "  --suffix S   the tokens after the prefix (default 20)\n"
    "Decode cases report GB/s read per token (weights + KV rows) and its share\n"
    "of the sequential read bandwidth the bench measures with the same threads\n"
    "(on huge pages, as the packed weights lie): the higher of two measurements,\n"
    "just before and just after the case's runs.\n"
    "Token ids are pseudo-random ordinary tokens, the same in every repetition.\n";

/* ------------------------------------------------------------------ options */

typedef struct bench_opts {
    cli_model_args model;
    int32_t *prefill; /* [n_prefill] prompt lengths */
    size_t n_prefill;
    int n_decode;
    int32_t *depths; /* [n_depths] decode depths */
    size_t n_depths;
    int reps;
    bool warmup;
    bool json;
    long bw_mib;
    int32_t *streams; /* --parallel: [n_streams] sequence counts */
    size_t n_streams;
    int prefix, suffix; /* --prefix, --suffix */
    bool n_given, d_given;
} bench_opts;

enum { MAX_CASE_TOKENS = 1 << 24, MAX_REPS = 1000 };

/* A comma list of counts in [min, MAX_CASE_TOKENS]; a lone 0 means none
 * when allow_none. */
static bool parse_counts(const char *s, int min, bool allow_none, int32_t **out, size_t *n) {
    if (!cli_parse_ids(s, out, n)) return false;
    if (allow_none && *n == 1 && (*out)[0] == 0) {
        *n = 0;
        return true;
    }
    for (size_t i = 0; i < *n; i++)
        if ((*out)[i] < min || (*out)[i] > MAX_CASE_TOKENS) {
            free(*out);
            *out = NULL;
            return false;
        }
    return true;
}

/* Returns 0, or the exit code after a usage message. */
static int parse_args(int argc, char **argv, bench_opts *o, bool *help) {
    const char *cmd = "bench";
    long v;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *val;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            *help = true;
            return 0;
        } else if (!strcmp(f, "-p") || !strcmp(f, "--n-prompt")) {
            if (!(val = cli_flag_value(cmd, argc, argv, &i))) return EXIT_USAGE;
            free(o->prefill);
            o->prefill = NULL;
            if (!parse_counts(val, 1, true, &o->prefill, &o->n_prefill))
                return cli_fail(EXIT_USAGE, cmd, "-p wants prompt lengths like 17,511 (or 0), got '%s'", val);
        } else if (!strcmp(f, "-n") || !strcmp(f, "--n-gen")) {
            if (!(val = cli_flag_value(cmd, argc, argv, &i))) return EXIT_USAGE;
            if (!cli_parse_int(val, 0, MAX_CASE_TOKENS, &v))
                return cli_fail(EXIT_USAGE, cmd, "-n wants a token count from 0, got '%s'", val);
            o->n_decode = (int)v;
            o->n_given = true;
        } else if (!strcmp(f, "-d") || !strcmp(f, "--depth")) {
            if (!(val = cli_flag_value(cmd, argc, argv, &i))) return EXIT_USAGE;
            free(o->depths);
            o->depths = NULL;
            if (!parse_counts(val, 0, false, &o->depths, &o->n_depths))
                return cli_fail(EXIT_USAGE, cmd, "-d wants context depths like 0,511, got '%s'", val);
            o->d_given = true;
        } else if (!strcmp(f, "--parallel")) {
            if (!(val = cli_flag_value(cmd, argc, argv, &i))) return EXIT_USAGE;
            free(o->streams);
            o->streams = NULL;
            if (!parse_counts(val, 1, false, &o->streams, &o->n_streams))
                return cli_fail(EXIT_USAGE, cmd, "--parallel wants sequence counts like 1,4,16, got '%s'", val);
            for (size_t k = 0; k < o->n_streams; k++)
                if (o->streams[k] > 256) return cli_fail(EXIT_USAGE, cmd, "--parallel: at most 256 sequences, got %d", o->streams[k]);
        } else if (!strcmp(f, "--prefix") || !strcmp(f, "--suffix")) {
            if (!(val = cli_flag_value(cmd, argc, argv, &i))) return EXIT_USAGE;
            if (!cli_parse_int(val, 1, 1 << 20, &v))
                return cli_fail(EXIT_USAGE, cmd, "%s wants a token count from 1, got '%s'", f, val);
            if (f[2] == 'p') o->prefix = (int)v;
            else o->suffix = (int)v;
        } else if (!strcmp(f, "-r") || !strcmp(f, "--repetitions")) {
            if (!(val = cli_flag_value(cmd, argc, argv, &i))) return EXIT_USAGE;
            if (!cli_parse_int(val, 1, MAX_REPS, &v))
                return cli_fail(EXIT_USAGE, cmd, "-r wants a repetition count from 1 to %d, got '%s'", MAX_REPS, val);
            o->reps = (int)v;
        } else if (!strcmp(f, "--bw-mib")) {
            if (!(val = cli_flag_value(cmd, argc, argv, &i))) return EXIT_USAGE;
            if (!cli_parse_int(val, 0, 1 << 20, &v))
                return cli_fail(EXIT_USAGE, cmd, "--bw-mib wants a size in MiB (0 = skip), got '%s'", val);
            o->bw_mib = v;
        } else if (!strcmp(f, "--no-warmup")) {
            o->warmup = false;
        } else if (!strcmp(f, "--json")) {
            o->json = true;
        } else {
            int r = cli_model_flag(cmd, &o->model, argc, argv, &i);
            if (r < 0) return EXIT_USAGE;
            /* -p is ours, so only --tokens can reach the prompt fields */
            if (r == 0 || o->model.token_list)
                return cli_fail(EXIT_USAGE, cmd, "unknown option '%s' (see --help)", f);
        }
    }
    if (!o->model.model_path) return cli_fail(EXIT_USAGE, cmd, "no model: give -m MODEL.gguf");
    int resolve_rc = cli_resolve_model(cmd, &o->model.model_path);
    if (resolve_rc) return resolve_rc;
    if (o->n_prefill == 0 && o->prefill && o->n_decode == 0)
        return cli_fail(EXIT_USAGE, cmd, "nothing to measure: -p 0 and -n 0");
    return 0;
}

/* ------------------------------------------------------------------ measuring */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The benchmark's token ids: a 64-bit LCG (Knuth's MMIX constants) from a
 * fixed seed, the state's top 31 bits modulo the count of ordinary tokens.
 * bench/llama_bench.c implements the same sequence. */
typedef struct token_stream {
    uint64_t state;
    int32_t n_ordinary;
} token_stream;

enum { TOKEN_SEED = 1234 };

static int32_t next_token(token_stream *ts) {
    ts->state = ts->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int32_t)((ts->state >> 33) % (uint64_t)ts->n_ordinary);
}

/* Ids below the first special token of the model's tokenizer (for Qwen3
 * the added tokens follow the BPE vocabulary), else the whole vocabulary. */
static int32_t ordinary_token_count(const inf_model *m, int n_vocab) {
    static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    int32_t count = n_vocab;
    const inf_tokenizer *tok = inf_model_tokenizer(m);
    if (tok)
        for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
            int32_t id = inf_tokenizer_find_special(tok, specials[i]);
            if (id > 0 && id < count) count = id;
        }
    return count;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct spread {
    double median, min, max;
} spread;

/* Sorts v[n] in place. */
static spread spread_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return (spread){median, v[0], v[n - 1]};
}

/* The read bandwidth is measured in a child process (its buffer must not
 * count in this process's peak RSS), forked before the model loads: a
 * process that has no other threads yet (a fork while the thread pool
 * runs can leave a lock held in the child). The child measures whenever
 * the bench asks, before the first case and around each decode case, and
 * exits when the bench closes its end. */
typedef struct bw_helper {
    pid_t pid;   /* 0: none */
    int ask, answer; /* the bench's ends of the two pipes */
} bw_helper;

static void bw_child(int ask, int answer, int n_threads, long mib) {
    char cmd;
    while (read(ask, &cmd, 1) == 1) {
        double gb_s = 0;
        inf_error err = {0};
        if (inf_measure_read_bandwidth(n_threads, (size_t)mib << 20, &gb_s, &err))
            fprintf(stderr, "inferno bench: no bandwidth figure: %s\n", err.msg);
        if (write(answer, &gb_s, sizeof gb_s) != (ssize_t)sizeof gb_s) break;
    }
    _exit(0);
}

/* Starts the helper; false (having said why) when it cannot. */
static bool bw_helper_start(bw_helper *h, int n_threads, long mib) {
    /* ask: the bench writes [1], the child reads [0]; answer: the other way */
    int ask[2] = {-1, -1}, answer[2] = {-1, -1};
    *h = (bw_helper){0};
    const char *failed = pipe(ask) != 0 || pipe(answer) != 0 ? "pipe" : NULL;
    pid_t pid = -1;
    if (!failed) {
        fflush(NULL);
        pid = fork();
        if (pid < 0) failed = "fork";
    }
    if (failed) {
        fprintf(stderr, "inferno bench: no bandwidth figure: %s: %s\n", failed, strerror(errno));
        const int fds[4] = {ask[0], ask[1], answer[0], answer[1]};
        for (int i = 0; i < 4; i++)
            if (fds[i] >= 0) close(fds[i]);
        return false;
    }
    if (pid == 0) {
        close(ask[1]);
        close(answer[0]);
        bw_child(ask[0], answer[1], n_threads, mib);
    }
    close(ask[0]);
    close(answer[1]);
    *h = (bw_helper){.pid = pid, .ask = ask[1], .answer = answer[0]};
    return true;
}

/* A measurement now: GB/s, or 0 on failure (the child said why). */
static double bw_measure(const bw_helper *h) {
    if (!h->pid) return 0;
    const char cmd = 'm';
    ssize_t w;
    do w = write(h->ask, &cmd, 1);
    while (w < 0 && errno == EINTR);
    if (w != 1) return 0;
    double gb_s = 0;
    ssize_t got;
    do got = read(h->answer, &gb_s, sizeof gb_s);
    while (got < 0 && errno == EINTR);
    return got == (ssize_t)sizeof gb_s ? gb_s : 0;
}

static void bw_helper_stop(bw_helper *h) {
    if (!h->pid) return;
    close(h->ask);
    close(h->answer);
    int status;
    while (waitpid(h->pid, &status, 0) < 0 && errno == EINTR) {}
    *h = (bw_helper){0};
}

typedef struct bench_ctx {
    const bench_opts *o;
    inf_model *model;
    inf_model_info info;
    inf_session *session;
    int32_t *tokens; /* [max case tokens] scratch ids */
    float *logits;   /* [n_vocab] */
    int32_t n_ordinary;
    double bw_gb_s;  /* before the first case; 0 = not measured */
    bw_helper bw;    /* measures again around each decode case */
    char bw_notes[1024]; /* those figures, printed under the table */
    bool progress;   /* stderr is a terminal */
    int32_t first_token; /* argmax after a prefill: part of the time to first token */
    size_t kv_pool_max_bytes; /* engine cases: the largest KV pool an engine allocated */
} bench_ctx;

/* "1.23 GB", "456.7 MB", "12.3 kB" into buf. */
static const char *human_bytes(double bytes, char *buf, size_t cap) {
    if (bytes >= 1e9) snprintf(buf, cap, "%.2f GB", bytes * 1e-9);
    else if (bytes >= 1e6) snprintf(buf, cap, "%.1f MB", bytes * 1e-6);
    else snprintf(buf, cap, "%.1f kB", bytes * 1e-3);
    return buf;
}

static void progress(const bench_ctx *b, const char *name, int rep) {
    if (!b->progress) return;
    if (rep < 0) fprintf(stderr, "\r%-72s\r", "");
    else if (rep == 0) fprintf(stderr, "\rinferno bench: %s warm-up          ", name);
    else fprintf(stderr, "\rinferno bench: %s rep %d/%d          ", name, rep, b->o->reps);
    fflush(stderr);
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Clears the session and evaluates n tokens from a fresh stream; returns
 * the seconds from the eval's start to the argmax of its logits (mode LAST)
 * or -1 after printing the error. */
static double timed_prefill(bench_ctx *b, int n, inf_logits_mode mode, token_stream *ts) {
    inf_error err = {0};
    if (inf_session_truncate(b->session, 0, &err)) {
        cli_fail_error("bench", &err);
        return -1;
    }
    for (int i = 0; i < n; i++) b->tokens[i] = next_token(ts);
    double t0 = now_s();
    if (inf_session_eval(b->session, b->tokens, n, mode, b->logits, &err)) {
        cli_fail_error("bench", &err);
        return -1;
    }
    if (mode == INF_LOGITS_LAST) b->first_token = argmax(b->logits, b->info.n_vocab);
    return now_s() - t0;
}

/* n single-token evals with logits, continuing the session; seconds or -1. */
static double timed_decode(bench_ctx *b, int n, token_stream *ts) {
    inf_error err = {0};
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        int32_t id = next_token(ts);
        if (inf_session_eval(b->session, &id, 1, INF_LOGITS_LAST, b->logits, &err)) {
            cli_fail_error("bench", &err);
            return -1;
        }
    }
    return now_s() - t0;
}

static void print_json_head(const bench_ctx *b, const char *kind, int tokens, int depth) {
    printf("{\"engine\": \"inferno\", \"kind\": \"%s\", \"tokens\": %d, \"depth\": %d, "
           "\"threads\": %d, \"reps\": %d, \"model\": \"",
           kind, tokens, depth, b->info.n_threads, b->o->reps);
    for (const char *p = b->o->model.model_path; *p; p++) {
        if (*p == '"' || *p == '\\') putchar('\\');
        if ((unsigned char)*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    printf("\", \"weight_type\": \"%s\", \"isa\": \"%s\", \"kv_type\": \"%s\", \"mmap\": %s",
           inf_dtype_name(b->info.weight_type), b->info.isa,
           inf_kv_type_name(b->o->model.kv_type), b->o->model.no_mmap ? "false" : "true");
}

static void print_json_samples(const double *seconds, int n) {
    printf(", \"samples_s\": [");
    for (int i = 0; i < n; i++) printf("%s%.6f", i ? ", " : "", seconds[i]);
    printf("]");
}

static int bench_prefill(bench_ctx *b, int n) {
    int reps = b->o->reps;
    double seconds[MAX_REPS], tok_s[MAX_REPS];
    char name[32];
    snprintf(name, sizeof name, "pp%d", n);
    token_stream ts = {TOKEN_SEED, b->n_ordinary};
    if (b->o->warmup) {
        progress(b, name, 0);
        if (timed_prefill(b, n, INF_LOGITS_LAST, &ts) < 0) return EXIT_RUNTIME;
    }
    for (int r = 0; r < reps; r++) {
        progress(b, name, r + 1);
        ts.state = TOKEN_SEED;
        if ((seconds[r] = timed_prefill(b, n, INF_LOGITS_LAST, &ts)) < 0) return EXIT_RUNTIME;
        tok_s[r] = seconds[r] > 0 ? n / seconds[r] : 0;
    }
    progress(b, name, -1);
    double sorted_s[MAX_REPS];
    memcpy(sorted_s, seconds, (size_t)reps * sizeof *seconds);
    spread speed = spread_of(tok_s, reps), ttft = spread_of(sorted_s, reps);
    if (b->o->json) {
        print_json_head(b, "prefill", n, 0);
        printf(", \"tok_s_median\": %.3f, \"tok_s_min\": %.3f, \"tok_s_max\": %.3f, "
               "\"ttft_ms_median\": %.3f, \"ttft_ms_min\": %.3f, \"ttft_ms_max\": %.3f",
               speed.median, speed.min, speed.max, 1e3 * ttft.median, 1e3 * ttft.min, 1e3 * ttft.max);
        print_json_samples(seconds, reps);
        printf("}\n");
    } else {
        printf("  %-14s %10.2f %10.2f %10.2f %11.2f %8s %6s\n", name, speed.median, speed.min,
               speed.max, 1e3 * ttft.median, "-", "-");
    }
    fflush(stdout);
    return 0;
}

static int bench_decode(bench_ctx *b, int n, int depth) {
    int reps = b->o->reps;
    double seconds[MAX_REPS], tok_s[MAX_REPS];
    char name[48];
    snprintf(name, sizeof name, "tg%d @ d%d", n, depth);
    token_stream ts = {TOKEN_SEED, b->n_ordinary};
    /* the figure for this case: measured just before and just after its
     * runs, the higher of the two (the machine's bandwidth drifts over
     * minutes on shared hosts, and a figure from the bench's start, before
     * the prefill cases, matched the decode's moment less well) */
    const double bw_before = bw_measure(&b->bw);
    if (b->o->warmup) {
        progress(b, name, 0);
        if (timed_prefill(b, 1, INF_LOGITS_LAST, &ts) < 0) return EXIT_RUNTIME;
    }
    for (int r = 0; r < reps; r++) {
        progress(b, name, r + 1);
        ts.state = TOKEN_SEED;
        inf_error err = {0};
        if (depth > 0) {
            if (timed_prefill(b, depth, INF_LOGITS_NONE, &ts) < 0) return EXIT_RUNTIME;
        } else if (inf_session_truncate(b->session, 0, &err)) {
            return cli_fail_error("bench", &err);
        }
        if ((seconds[r] = timed_decode(b, n, &ts)) < 0) return EXIT_RUNTIME;
        tok_s[r] = seconds[r] > 0 ? n / seconds[r] : 0;
    }
    progress(b, name, -1);
    const double bw_after = bw_measure(&b->bw);
    const double bw_case = bw_before > bw_after ? bw_before : bw_after;
    spread speed = spread_of(tok_s, reps);
    /* Step i (0-based) attends over depth + i + 1 cached positions. */
    double avg_ctx = depth + 0.5 * (n + 1);
    const double kv_elem_bytes = (double)inf_kv_type_bytes(b->o->model.kv_type, 32) / 32; /* 34/32 for q8_0 */
    double kv_bytes = (double)b->info.n_layer * avg_ctx * b->info.n_head_kv * b->info.head_dim * 2.0 * kv_elem_bytes;
    double bytes_per_tok = (double)b->info.weight_bytes + kv_bytes;
    double gb_s = bytes_per_tok * speed.median * 1e-9;
    double bw_pct = bw_before > 0 && bw_after > 0 ? 100.0 * gb_s / bw_case : -1;
    if (b->o->json) {
        print_json_head(b, "decode", n, depth);
        printf(", \"tok_s_median\": %.3f, \"tok_s_min\": %.3f, \"tok_s_max\": %.3f, "
               "\"ms_per_tok_median\": %.3f, \"weight_bytes\": %llu, \"kv_bytes_per_tok\": %.0f, "
               "\"gb_s\": %.3f, \"bw_pct\": ",
               speed.median, speed.min, speed.max, speed.median > 0 ? 1e3 / speed.median : 0.0,
               (unsigned long long)b->info.weight_bytes, kv_bytes, gb_s);
        if (bw_pct >= 0) printf("%.2f, \"bw_gb_s\": %.2f, \"bw_gb_s_before\": %.2f, \"bw_gb_s_after\": %.2f", bw_pct, bw_case, bw_before, bw_after);
        else printf("null");
        print_json_samples(seconds, reps);
        printf("}\n");
    } else {
        char pct[16] = "-";
        if (bw_pct >= 0) snprintf(pct, sizeof pct, "%.1f", bw_pct);
        printf("  %-14s %10.2f %10.2f %10.2f %11s %8.2f %6s\n", name, speed.median, speed.min,
               speed.max, "-", gb_s, pct);
        if (bw_pct >= 0) {
            const size_t used = strlen(b->bw_notes);
            snprintf(b->bw_notes + used, sizeof b->bw_notes - used,
                     "  %% bw of %s: of %.1f GB/s, the higher of %.1f before and %.1f after its runs\n", name,
                     bw_case, bw_before, bw_after);
        }
    }
    fflush(stdout);
    return 0;
}

/* ------------------------------------------------------------------ engine cases */

/* Counts a stream's tokens and notes when its first one came. */
typedef struct stream_state {
    int tokens;
    bool done;
    double t_first;
} stream_state;

static void on_stream_event(const inf_event *ev, void *user) {
    stream_state *s = user;
    if (ev->kind == INF_EVENT_DONE) {
        s->done = true;
    } else {
        if (!s->tokens) s->t_first = now_s();
        s->tokens++;
    }
}

static bool all_started(const stream_state *s, int n) {
    for (int i = 0; i < n; i++)
        if (!s[i].tokens && !s[i].done) return false;
    return true;
}

static int engine_fail(inf_engine *e, const inf_error *err) {
    inf_engine_free(e);
    return cli_fail_error("bench", err);
}

/* Steps until every stream is done (or cancelled). */
static int drain(inf_engine *e, inf_error *err) {
    bool busy = true;
    while (busy)
        if (inf_engine_step(e, &busy, err)) return -1;
    return 0;
}

/* One --parallel case: N streams with D-token prompts (each its own ids),
 * prefilled, then -n steps of one token each, timed; tok/s = N * n / time. */
static int bench_parallel(bench_ctx *b, int n_streams) {
    const bench_opts *o = b->o;
    const int steps = o->n_decode, depth = o->n_depths ? o->depths[0] : 64;
    /* Streams whose prompts are in decode while the later prompts prefill,
     * PREFILL_CHUNK tokens a step: tokens each may make before the timed
     * steps, so that nobody reaches max_tokens inside them */
    enum { PREFILL_CHUNK = 512 };
    const int head_start = (int)(((int64_t)n_streams * depth + PREFILL_CHUNK - 1) / PREFILL_CHUNK) + n_streams + 2;
    inf_engine_options eo;
    inf_engine_options_default(&eo);
    eo.max_seqs = n_streams;
    eo.prefill_chunk = PREFILL_CHUNK;
    eo.n_ctx = depth + steps + head_start + 8;
    eo.no_prefix_cache = true;
    inf_engine *e = NULL;
    inf_error err = {0};
    if (inf_engine_new(b->model, &eo, &e, &err)) return cli_fail_error("bench", &err);
    stream_state *st = calloc((size_t)n_streams, sizeof *st);
    int32_t *prompt = malloc((size_t)depth * sizeof *prompt);
    uint64_t *ids = calloc((size_t)n_streams, sizeof *ids);
    if (!st || !prompt || !ids) {
        free(st), free(prompt), free(ids);
        inf_engine_free(e);
        return cli_fail(EXIT_RUNTIME, "bench", "out of memory");
    }
    const int reps = o->reps + (o->warmup ? 1 : 0);
    double tok_s[MAX_REPS + 1], seconds[MAX_REPS + 1];
    char name[32];
    snprintf(name, sizeof name, "parallel %d", n_streams);
    int rc = 0;
    for (int r = 0; r < reps && !rc; r++) {
        progress(b, name, o->warmup ? r : r + 1);
        memset(st, 0, (size_t)n_streams * sizeof *st);
        for (int i = 0; i < n_streams && !rc; i++) {
            /* stream i's ids: the bench's stream from seed TOKEN_SEED + i, as bench/llama_bench.c draws them */
            token_stream ts = {TOKEN_SEED + (uint64_t)i, b->n_ordinary};
            for (int t = 0; t < depth; t++) prompt[t] = next_token(&ts);
            inf_request req;
            inf_request_default(&req);
            req.prompt = prompt;
            req.n_prompt = (size_t)depth;
            req.sampling.temperature = 0;
            req.ignore_eog = true;
            req.max_tokens = steps + head_start; /* nobody ends inside the timed steps */
            req.on_event = on_stream_event;
            req.user = &st[i];
            if (inf_engine_submit(e, &req, &ids[i], &err)) rc = -1;
        }
        bool busy = true;
        while (!rc && !all_started(st, n_streams))
            if (inf_engine_step(e, &busy, &err)) rc = -1;
        /* tok/s counts the tokens the timed steps made, which is N per
         * step only when all N sequences run in every step */
        int made = 0;
        for (int i = 0; i < n_streams; i++) made -= st[i].tokens;
        const double t0 = now_s();
        for (int k = 0; k < steps && !rc; k++)
            if (inf_engine_step(e, &busy, &err)) rc = -1;
        const double dt = now_s() - t0;
        for (int i = 0; i < n_streams; i++) made += st[i].tokens;
        if (!rc && made != n_streams * steps)
            fprintf(stderr, "bench: parallel %d: %d tokens in %d steps, not %d: not all sequences ran in every step\n",
                    n_streams, made, steps, n_streams * steps);
        for (int i = 0; i < n_streams; i++) inf_engine_cancel(e, ids[i]);
        if (!rc) rc = drain(e, &err);
        seconds[r] = dt;
        tok_s[r] = dt > 0 ? made / dt : 0;
    }
    progress(b, name, -1);
    free(st), free(prompt), free(ids);
    if (rc) return engine_fail(e, &err);
    inf_engine_stats stats;
    inf_engine_get_stats(e, &stats);
    inf_engine_free(e);
    if (stats.kv_bytes > b->kv_pool_max_bytes) b->kv_pool_max_bytes = stats.kv_bytes;
    double *timed = tok_s + (o->warmup ? 1 : 0), *timed_s = seconds + (o->warmup ? 1 : 0);
    double samples[MAX_REPS];
    memcpy(samples, timed_s, (size_t)o->reps * sizeof *samples);
    spread speed = spread_of(timed, o->reps);
    if (o->json) {
        print_json_head(b, "parallel", steps, depth);
        printf(", \"streams\": %d, \"tok_s_median\": %.3f, \"tok_s_min\": %.3f, \"tok_s_max\": %.3f, "
               "\"kv_pool_bytes\": %zu, \"block_size\": %d",
               n_streams, speed.median, speed.min, speed.max, stats.kv_bytes, stats.block_size);
        print_json_samples(samples, o->reps);
        printf("}\n");
    } else {
        char pool[32];
        printf("  %-14s %10.2f %10.2f %10.2f %11s %8s %6s   KV pool %s\n", name, speed.median, speed.min, speed.max, "-",
               "-", "-", human_bytes((double)stats.kv_bytes, pool, sizeof pool));
    }
    fflush(stdout);
    return 0;
}

/* Submits prompt[n] for one token; returns the ms to its first token, or -1. */
static double ttft_ms(inf_engine *e, const int32_t *prompt, int n, inf_error *err) {
    stream_state st = {0};
    inf_request req;
    inf_request_default(&req);
    req.prompt = prompt;
    req.n_prompt = (size_t)n;
    req.sampling.temperature = 0;
    req.max_tokens = 1;
    req.on_event = on_stream_event;
    req.user = &st;
    const double t0 = now_s();
    if (inf_engine_submit(e, &req, NULL, err) || drain(e, err)) return -1;
    return 1e3 * (st.t_first - t0);
}

/* --prefix: per repetition a fresh prefix; the cold request (prefix +
 * suffix) leaves the prefix in the cache, then the cached one (the prefix
 * and another suffix) is timed. */
static int bench_prefix(bench_ctx *b) {
    const bench_opts *o = b->o;
    const int np = o->prefix, ns = o->suffix ? o->suffix : 20;
    inf_engine_options eo;
    inf_engine_options_default(&eo);
    eo.max_seqs = 1;
    eo.n_ctx = np + ns + 8;
    eo.kv_pool_tokens = 4 * eo.n_ctx;
    inf_engine *e = NULL;
    inf_error err = {0};
    if (inf_engine_new(b->model, &eo, &e, &err)) return cli_fail_error("bench", &err);
    int32_t *prompt = malloc((size_t)(np + ns) * sizeof *prompt);
    if (!prompt) {
        inf_engine_free(e);
        return cli_fail(EXIT_RUNTIME, "bench", "out of memory");
    }
    const int reps = o->reps + (o->warmup ? 1 : 0);
    double cold[MAX_REPS + 1], cached[MAX_REPS + 1];
    token_stream ts = {TOKEN_SEED, b->n_ordinary};
    int rc = 0;
    for (int r = 0; r < reps && !rc; r++) {
        progress(b, "prefix cache", o->warmup ? r : r + 1);
        for (int t = 0; t < np + ns; t++) prompt[t] = next_token(&ts);
        cold[r] = ttft_ms(e, prompt, np + ns, &err);
        for (int t = np; t < np + ns; t++) prompt[t] = next_token(&ts);
        cached[r] = cold[r] < 0 ? -1 : ttft_ms(e, prompt, np + ns, &err);
        if (cold[r] < 0 || cached[r] < 0) rc = -1;
    }
    progress(b, "prefix cache", -1);
    free(prompt);
    if (rc) return engine_fail(e, &err);
    inf_engine_stats stats;
    inf_engine_get_stats(e, &stats);
    inf_engine_free(e);
    if (stats.kv_bytes > b->kv_pool_max_bytes) b->kv_pool_max_bytes = stats.kv_bytes;
    const int skip = o->warmup ? 1 : 0;
    spread c = spread_of(cold + skip, o->reps), h = spread_of(cached + skip, o->reps);
    if (o->json) {
        print_json_head(b, "prefix_cache", np + ns, np);
        printf(", \"prefix\": %d, \"suffix\": %d, \"cold_ttft_ms_median\": %.3f, \"cold_ttft_ms_min\": %.3f, "
               "\"cold_ttft_ms_max\": %.3f, \"cached_ttft_ms_median\": %.3f, \"cached_ttft_ms_min\": %.3f, "
               "\"cached_ttft_ms_max\": %.3f, \"speedup\": %.2f, \"hit_tokens\": %llu}\n",
               np, ns, c.median, c.min, c.max, h.median, h.min, h.max, h.median > 0 ? c.median / h.median : 0,
               (unsigned long long)stats.prefix_hit_tokens);
    } else {
        char pool[32];
        printf("  prefix %d + suffix %d: time to first token cold %.2f ms, cached %.2f ms (%.1fx); KV pool %s\n", np,
               ns, c.median, h.median, h.median > 0 ? c.median / h.median : 0,
               human_bytes((double)stats.kv_bytes, pool, sizeof pool));
    }
    fflush(stdout);
    return 0;
}

/* ------------------------------------------------------------------ command */

static int run_cases(bench_ctx *b) {
    const bench_opts *o = b->o;
    if (o->n_streams || o->prefix) {
        for (size_t i = 0; i < o->n_streams; i++) {
            int rc = bench_parallel(b, o->streams[i]);
            if (rc) return rc;
        }
        return o->prefix ? bench_prefix(b) : 0;
    }
    for (size_t i = 0; i < o->n_prefill; i++) {
        int rc = bench_prefill(b, o->prefill[i]);
        if (rc) return rc;
    }
    if (o->n_decode > 0)
        for (size_t i = 0; i < o->n_depths; i++) {
            int rc = bench_decode(b, o->n_decode, o->depths[i]);
            if (rc) return rc;
        }
    return 0;
}

/* Loads the model, measures, prints; need = the session's context. */
static int bench_model(bench_opts *o, int need) {
    bench_ctx b = {.o = o, .progress = isatty(STDERR_FILENO) == 1};
    /* before the model (and its thread pool) exists: bw_helper */
    if (o->bw_mib > 0 &&
        bw_helper_start(&b.bw, o->model.n_threads > 0 ? o->model.n_threads : inf_physical_cores(), o->bw_mib)) {
        if (b.progress) fprintf(stderr, "inferno bench: measuring the read bandwidth...");
        b.bw_gb_s = bw_measure(&b.bw);
        progress(&b, "", -1);
    }
    double t0 = now_s();
    b.model = cli_load_model("bench", &o->model);
    double load_s = now_s() - t0;
    if (!b.model) {
        bw_helper_stop(&b.bw);
        return EXIT_RUNTIME;
    }
    inf_model_get_info(b.model, &b.info);
    b.n_ordinary = ordinary_token_count(b.model, b.info.n_vocab);
    int rc = 0;
    inf_error err = {0};
    b.tokens = malloc((size_t)need * sizeof *b.tokens);
    b.logits = malloc((size_t)b.info.n_vocab * sizeof *b.logits);
    if (!b.tokens || !b.logits) rc = cli_fail(EXIT_RUNTIME, "bench", "out of memory");
    else if (!o->n_streams && !o->prefix && inf_session_new(b.model, need, &b.session, &err))
        rc = cli_fail_error("bench", &err);
    /* The session's K and V: [n_layer][need][n_head_kv * head_dim] each.
     * The engine cases allocate an engine (and its KV pool) per case
     * instead: their header says so, their rows name the pool, and the
     * summary counts the largest. */
    const bool engine_cases = o->n_streams || o->prefix;
    uint64_t kv_cache_bytes = 2u * inf_kv_type_bytes(o->model.kv_type, (size_t)b.info.n_layer * (size_t)need *
                                                          (size_t)b.info.n_head_kv * (size_t)b.info.head_dim);

    if (!rc && !o->json) {
        printf("inferno bench: %s%s%s%s\n", o->model.model_path, *b.info.name ? " (" : "",
               b.info.name, *b.info.name ? ")" : "");
        char weights[32], kv[32];
        printf("  %s weights, %s, %d layers, %.1f M params; ", inf_dtype_name(b.info.weight_type),
               human_bytes((double)b.info.weight_bytes, weights, sizeof weights), b.info.n_layer,
               b.info.n_params * 1e-6);
        if (engine_cases)
            printf("KV cache %s, an engine's pool per case (on its row)\n", inf_kv_type_name(o->model.kv_type));
        else
            printf("KV cache %s, %s for %d tokens\n", inf_kv_type_name(o->model.kv_type),
                   human_bytes((double)kv_cache_bytes, kv, sizeof kv), need);
        printf("  kernels %s, %d threads, weights %s, loaded in %.3f s\n", b.info.isa,
               b.info.n_threads, o->model.no_mmap ? "in anonymous memory" : "mapped from the file",
               load_s);
        if (b.bw_gb_s > 0)
            printf("  read bandwidth %.1f GB/s (measured: %d threads, %ld MiB; again around each decode case)\n",
                   b.bw_gb_s, b.info.n_threads, o->bw_mib);
        printf("  %d repetitions per case%s: median, min, max\n\n", o->reps,
               o->warmup ? " after a warm-up" : "");
        printf("  %-14s %10s %10s %10s %11s %8s %6s\n", "case", "tok/s", "min", "max", "ttft ms",
               "GB/s", "% bw");
        fflush(stdout);
    }
    if (!rc) rc = run_cases(&b);
    if (engine_cases) kv_cache_bytes = b.kv_pool_max_bytes;
    if (!rc) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double peak_rss_mb = (double)ru.ru_maxrss * 1024.0 * 1e-6; /* ru_maxrss is in KiB */
        if (o->json) {
            print_json_head(&b, "summary", 0, 0);
            printf(", \"load_s\": %.4f, \"peak_rss_mb\": %.1f, \"bandwidth_gb_s\": ", load_s, peak_rss_mb);
            if (b.bw_gb_s > 0) printf("%.2f", b.bw_gb_s);
            else printf("null");
            printf(", \"weight_bytes\": %llu, \"kv_cache_bytes\": %llu, \"n_ctx\": %d, "
                   "\"n_params\": %llu, \"n_ordinary_tokens\": %d, \"warmup\": %s}\n",
                   (unsigned long long)b.info.weight_bytes,
                   (unsigned long long)kv_cache_bytes, need, (unsigned long long)b.info.n_params,
                   b.n_ordinary, o->warmup ? "true" : "false");
        } else {
            char weights[32], kv[32];
            if (*b.bw_notes) printf("\n%s", b.bw_notes);
            printf("\n  peak RSS %.1f MB (weights %s + %s %s)\n", peak_rss_mb,
                   human_bytes((double)b.info.weight_bytes, weights, sizeof weights),
                   engine_cases ? "the largest KV pool" : "KV cache", human_bytes((double)kv_cache_bytes, kv, sizeof kv));
        }
        fflush(stdout);
    }
    if (o->model.trace) inf_model_print_trace(b.model, stderr);
    bw_helper_stop(&b.bw);
    inf_session_free(b.session);
    inf_model_free(b.model);
    free(b.tokens);
    free(b.logits);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    static int32_t default_prefill[] = {17, 511, 2044}, default_depths[] = {0, 511, 2044}, engine_depth[] = {64};
    bench_opts o = {.model.kv_type = INF_KV_F16, .n_decode = 64, .reps = 5, .warmup = true, .bw_mib = 1024};
    bool help = false;
    int rc = parse_args(argc, argv, &o, &help);
    if (help) fputs(usage_text, stdout);
    /* -p / -d not given: the cases (-p 0 gives an empty list) */
    bool own_prefill = o.prefill != NULL, own_depths = o.depths != NULL;
    if (!rc && !help) {
        if (!own_prefill) {
            o.prefill = default_prefill;
            o.n_prefill = sizeof default_prefill / sizeof default_prefill[0];
        }
        if (!own_depths) {
            o.depths = default_depths;
            o.n_depths = sizeof default_depths / sizeof default_depths[0];
        }
        if (o.n_streams || o.prefix) { /* engine cases: -n and -d default to 32 and 64 */
            if (!o.n_given) o.n_decode = 32;
            if (!own_depths) o.depths = engine_depth, o.n_depths = 1;
            o.n_prefill = 0;
        }
        /* the session holds the largest case: a prompt, or depth + decode steps */
        int need = 1;
        for (size_t i = 0; i < o.n_prefill; i++)
            if (o.prefill[i] > need) need = o.prefill[i];
        if (o.n_decode > 0)
            for (size_t i = 0; i < o.n_depths; i++)
                if (o.depths[i] + o.n_decode > need) need = o.depths[i] + o.n_decode;
        if (o.model.n_ctx && o.model.n_ctx < need) {
            rc = cli_fail(EXIT_USAGE, "bench", "-c %d is below the %d tokens the largest case needs",
                          o.model.n_ctx, need);
        } else {
            if (!o.model.n_ctx) o.model.n_ctx = need;
            rc = bench_model(&o, need);
        }
    }
    if (own_prefill) free(o.prefill);
    if (own_depths) free(o.depths);
    free(o.streams);
    return rc;
}

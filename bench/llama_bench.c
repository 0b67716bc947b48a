/*
 * llama_bench.c — inferno's measuring harness around llama.cpp, the engine
 * it is compared with. It drives a prebuilt llama.cpp (installed by
 * scripts/install-llama.sh from npm) through llama.cpp's public C API only
 * (llama.h) and prints JSON, so that scripts can compare the two engines
 * on the same GGUF and regenerate the golden files.
 *
 *   llama_bench bench  -m M [-t T] [-p 17,511] [-n 64] [-d 0,511] [-r 5]
 *                      [--load-mode none|mmap|auto] [--kv-type f16|f32]
 *                      [--fa on|off|auto] [--no-warmup]
 *       The cases of `inferno bench`, measured the same way, printed as the
 *       same JSON lines (`engine` is "llama.cpp"): per case kind, tokens,
 *       depth, threads, tok_s_median/min/max (prefill also ttft_ms_*), then
 *       a summary line. Token ids: the same pseudo-random sequence as
 *       inferno's bench (see next_token), below the first special token.
 *   llama_bench parallel -m M [-t T] [--parallel 1,2,4,8,16] [-n 32] [-d 64] [-r 3]
 *                      [--load-mode none|mmap|auto] [--kv-type f16|f32]
 *                      [--fa on|off|auto] [--no-warmup]
 *       Batched decode, as llama-server's continuous batching runs it: for
 *       each N (and each depth D), a context for N sequences (n_seq_max N,
 *       one unified KV cache of N*(D+n) cells plus slack); every sequence
 *       gets D prompt tokens (not timed, packed n_batch tokens per
 *       llama_decode), then n steps each decode one token of every sequence
 *       in one llama_batch of N tokens (N sequence ids, logits for all N).
 *       Sequence s draws its ids from the bench mode's generator seeded
 *       1234 + s (sequence 0 is the bench mode's stream; nothing is shared)
 *       and keeps drawing from it for the tokens it is fed while decoding.
 *       After a warm-up (prompts and 2 steps), -r repetitions, each clearing
 *       the KV cache (llama_memory_clear) and refilling the prompts. One
 *       JSON line per N and D:
 *         {"engine": "llama.cpp", "kind": "parallel", "streams": N,
 *          "tokens": n, "depth": D, "threads": T, "tok_s_median": ...,
 *          "tok_s_min": ..., "tok_s_max": ..., then reps, ms_per_step_median,
 *          n_ctx, the setup fields and the raw samples_s}
 *       tok/s is the aggregate N*n / time of the n steps.
 *   llama_bench logits -m M (-p TEXT | -f FILE | --tokens IDS) [--top 20]
 *                      [--all-pos] [--dump FILE.f32] [--gen N] [-t T]
 *                      [--kv-type f32|f16] [--fa off|on|auto] [--pos0 P]
 *       One JSON object in the layout of the golden files (tests/data/golden): prompt
 *       ids and pieces, top-K logits at every position (--all-pos) and at
 *       the last one with mean / std / logsumexp of all logits, all final
 *       logits as raw float32 (--dump), and a greedy continuation with
 *       per-step margins (--gen). Defaults: f32 KV cache, flash attention
 *       off (llama.cpp's most exact setting), the prompt in one batch.
 *       --pos0 P puts the prompt at positions P, P+1, ... of an empty
 *       cache (RoPE far out in a long context; "pos" fields stay indices).
 *
 * llama.cpp's own log goes to stderr (warnings and errors; all with -v).
 * Exit codes: 0 ok, 1 runtime error, 2 usage error.
 */
#define _POSIX_C_SOURCE 200809L
#include "llama.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifndef LLAMA_LIBDIR
#define LLAMA_LIBDIR "."
#endif
#define LLAMA_CPP_RELEASE "v0.5.0 via @node-llama-cpp/linux-x64@3.22.1"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2, MAX_LIST = 64, MAX_REPS = 1000 };
/* Sequences one context may hold (llama.cpp's LLAMA_MAX_SEQ in this release). */
enum { MAX_STREAMS = 256 };

static const char *usage_text =
    "usage: llama_bench bench  -m MODEL [-t T] [-p 17,511,2044] [-n 64] [-d 0,511,2044] [-r 5]\n"
    "                          [--load-mode none|mmap|auto] [--kv-type f16|f32] [--fa on|off|auto]\n"
    "                          [-b N_BATCH] [-ub N_UBATCH] [--poll 50] [--no-warmup] [-v]\n"
    "       llama_bench parallel -m MODEL [-t T] [--parallel 1,2,4,8,16] [-n 32] [-d 64] [-r 3]\n"
    "                          [--load-mode none|mmap|auto] [--kv-type f16|f32] [--fa on|off|auto]\n"
    "                          [-b N_BATCH] [-ub N_UBATCH] [--poll 50] [--no-warmup] [-v]\n"
    "       llama_bench logits -m MODEL (-p TEXT | -f FILE | --tokens ID,ID,...) [--top 20]\n"
    "                          [--all-pos] [--dump FILE.f32] [--gen N] [-t T] [--pos0 P]\n"
    "                          [--kv-type f32|f16] [--fa off|on|auto] [--load-mode auto] [-v]\n"
    "\n"
    "llama.cpp (prebuilt, " LLAMA_CPP_RELEASE ") measured through its C API.\n"
    "bench:  prefill of P tokens and N decode steps after D context tokens, a warm-up\n"
    "        then -r repetitions; JSON lines with the field names of `inferno bench --json`.\n"
    "        Defaults: 2 threads, f16 KV cache, flash attention auto, a thread pool\n"
    "        that busy-waits at level --poll 50 (all llama-bench's),\n"
    "        load mode auto; compare with inferno using --load-mode none (weights in\n"
    "        anonymous memory, as inferno's --no-mmap).\n"
    "parallel: batched decode (llama-server's continuous batching): per N in --parallel,\n"
    "        N sequences with -d prompt tokens each (not timed), then -n steps that each\n"
    "        decode one token of every sequence in one llama_batch (unified KV cache);\n"
    "        a warm-up, then -r repetitions; one JSON line per N (kind \"parallel\",\n"
    "        streams, tokens, depth, threads, aggregate tok_s_median/min/max = N*n/time).\n"
    "        Other defaults as bench.\n"
    "logits: final / per-position top-K logits, raw final logits, greedy continuation;\n"
    "        JSON in the layout of the files in tests/data/golden. Defaults: 2 threads,\n"
    "        f32 KV cache, flash attention off.\n";

/* ------------------------------------------------------------------ errors */

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...) {
    fprintf(stderr, "llama_bench: ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

/* ------------------------------------------------------------------ options */

typedef struct options {
    const char *mode, *model;
    int threads;
    int load_mode; /* enum llama_load_mode */
    int kv_type;   /* enum ggml_type; -1 = the mode's default */
    int fa;        /* enum llama_flash_attn_type; -2 = the mode's default */
    bool verbose;
    /* bench */
    int prefill[MAX_LIST], n_prefill;
    int depths[MAX_LIST], n_depths;
    int n_decode, reps, n_batch, n_ubatch;
    int poll; /* thread pool busy-wait level, 0..100 (llama-bench: 50) */
    bool warmup;
    /* parallel (also uses depths, n_decode, reps) */
    int streams[MAX_LIST], n_streams;
    /* logits */
    const char *text, *file, *ids, *dump;
    int top, gen;
    int pos0; /* the prompt's first position (a window far out in the context) */
    bool all_pos;
} options;

static bool parse_long(const char *s, long min, long max, long *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return false;
    *out = v;
    return true;
}

/* "17,511" -> counts in [min, max]; "0" alone gives an empty list when allow_none. */
static bool parse_list(const char *s, int min, int max, bool allow_none, int *out, int *n) {
    *n = 0;
    if (allow_none && !strcmp(s, "0")) return true;
    char buf[1024];
    if (strlen(s) >= sizeof buf) return false;
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long v;
        if (*n == MAX_LIST || !parse_long(tok, min, max, &v)) return false;
        out[(*n)++] = (int)v;
    }
    return *n > 0 && s[strlen(s) - 1] != ',';
}

static int parse_kv_type(const char *s) {
    if (!strcmp(s, "f32")) return GGML_TYPE_F32;
    if (!strcmp(s, "f16")) return GGML_TYPE_F16;
    if (!strcmp(s, "bf16")) return GGML_TYPE_BF16;
    if (!strcmp(s, "q8_0")) return GGML_TYPE_Q8_0;
    return -1;
}

static const char *kv_type_name(int t) {
    switch (t) {
    case GGML_TYPE_F32: return "f32";
    case GGML_TYPE_F16: return "f16";
    case GGML_TYPE_BF16: return "bf16";
    case GGML_TYPE_Q8_0: return "q8_0";
    }
    return "?";
}

/* Returns 0, or an exit code after a usage message; *help set for --help. */
static int parse_options(int argc, char **argv, options *o, bool *help) {
    *o = (options){.threads = 2, .load_mode = LLAMA_LOAD_MODE_AUTO, .kv_type = -1, .fa = -2,
                   .n_decode = 64, .reps = 5, .n_batch = 2048, .n_ubatch = 512, .poll = 50, .warmup = true,
                   .top = 20};
    o->n_prefill = 3, o->prefill[0] = 17, o->prefill[1] = 511, o->prefill[2] = 2044;
    o->n_depths = 3, o->depths[0] = 0, o->depths[1] = 511, o->depths[2] = 2044;
    o->n_streams = 5, o->streams[0] = 1, o->streams[1] = 2, o->streams[2] = 4, o->streams[3] = 8, o->streams[4] = 16;
    if (argc < 2) return fail(EXIT_USAGE, "give a mode: bench, parallel or logits (see --help)");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        *help = true;
        return 0;
    }
    o->mode = argv[1];
    bool parallel = !strcmp(o->mode, "parallel"), logits = !strcmp(o->mode, "logits");
    bool bench = parallel || !strcmp(o->mode, "bench"); /* the options the two share */
    if (!bench && !logits) return fail(EXIT_USAGE, "unknown mode '%s' (bench, parallel or logits)", o->mode);
    if (parallel) o->n_decode = 32, o->reps = 3, o->n_depths = 1, o->depths[0] = 64;
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i];
        long v;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            *help = true;
            return 0;
        }
        if (!strcmp(f, "-v")) { o->verbose = true; continue; }
        if (!strcmp(f, "--no-warmup") && bench) { o->warmup = false; continue; }
        if (!strcmp(f, "--all-pos") && logits) { o->all_pos = true; continue; }
        if (i + 1 >= argc) return fail(EXIT_USAGE, "%s: unknown option or missing value (see --help)", f);
        const char *val = argv[++i];
        if (!strcmp(f, "-m")) o->model = val;
        else if (!strcmp(f, "-t")) {
            if (!parse_long(val, 1, 1024, &v)) return fail(EXIT_USAGE, "-t wants 1..1024 threads, got '%s'", val);
            o->threads = (int)v;
        } else if (!strcmp(f, "--load-mode")) {
            if (!strcmp(val, "none")) o->load_mode = LLAMA_LOAD_MODE_NONE;
            else if (!strcmp(val, "mmap")) o->load_mode = LLAMA_LOAD_MODE_MMAP;
            else if (!strcmp(val, "auto")) o->load_mode = LLAMA_LOAD_MODE_AUTO;
            else return fail(EXIT_USAGE, "--load-mode wants none, mmap or auto, got '%s'", val);
        } else if (!strcmp(f, "--kv-type")) {
            if ((o->kv_type = parse_kv_type(val)) < 0)
                return fail(EXIT_USAGE, "--kv-type wants f32, f16, bf16 or q8_0, got '%s'", val);
        } else if (!strcmp(f, "--fa")) {
            if (!strcmp(val, "on")) o->fa = LLAMA_FLASH_ATTN_TYPE_ENABLED;
            else if (!strcmp(val, "off")) o->fa = LLAMA_FLASH_ATTN_TYPE_DISABLED;
            else if (!strcmp(val, "auto")) o->fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
            else return fail(EXIT_USAGE, "--fa wants on, off or auto, got '%s'", val);
        } else if (parallel && !strcmp(f, "--parallel")) {
            if (!parse_list(val, 1, MAX_STREAMS, false, o->streams, &o->n_streams))
                return fail(EXIT_USAGE, "--parallel wants sequence counts (1..%d) like 1,4,8, got '%s'", MAX_STREAMS,
                            val);
        } else if (bench && !parallel && !strcmp(f, "-p")) {
            if (!parse_list(val, 1, 1 << 20, true, o->prefill, &o->n_prefill))
                return fail(EXIT_USAGE, "-p wants prompt lengths like 17,511 (or 0), got '%s'", val);
        } else if (bench && !strcmp(f, "-d")) {
            if (!parse_list(val, 0, 1 << 20, false, o->depths, &o->n_depths))
                return fail(EXIT_USAGE, "-d wants depths like 0,511, got '%s'", val);
        } else if (bench && !strcmp(f, "-n")) {
            if (!parse_long(val, 0, 1 << 20, &v)) return fail(EXIT_USAGE, "-n wants a count from 0, got '%s'", val);
            o->n_decode = (int)v;
        } else if (bench && !strcmp(f, "-r")) {
            if (!parse_long(val, 1, MAX_REPS, &v)) return fail(EXIT_USAGE, "-r wants 1..%d, got '%s'", MAX_REPS, val);
            o->reps = (int)v;
        } else if (bench && !strcmp(f, "-b")) {
            if (!parse_long(val, 1, 1 << 20, &v)) return fail(EXIT_USAGE, "-b wants a batch size, got '%s'", val);
            o->n_batch = (int)v;
        } else if (!strcmp(f, "--poll")) {
            if (!parse_long(val, 0, 100, &v)) return fail(EXIT_USAGE, "--poll wants 0..100, got '%s'", val);
            o->poll = (int)v;
        } else if (bench && !strcmp(f, "-ub")) {
            if (!parse_long(val, 1, 1 << 20, &v)) return fail(EXIT_USAGE, "-ub wants a batch size, got '%s'", val);
            o->n_ubatch = (int)v;
        } else if (logits && !strcmp(f, "-p")) o->text = val;
        else if (logits && !strcmp(f, "-f")) o->file = val;
        else if (logits && !strcmp(f, "--tokens")) o->ids = val;
        else if (logits && !strcmp(f, "--dump")) o->dump = val;
        else if (logits && !strcmp(f, "--top")) {
            if (!parse_long(val, 1, 1000, &v)) return fail(EXIT_USAGE, "--top wants 1..1000, got '%s'", val);
            o->top = (int)v;
        } else if (logits && !strcmp(f, "--pos0")) {
            if (!parse_long(val, 0, 1 << 30, &v)) return fail(EXIT_USAGE, "--pos0 wants a position from 0, got '%s'", val);
            o->pos0 = (int)v;
        } else if (logits && !strcmp(f, "--gen")) {
            if (!parse_long(val, 0, 1 << 16, &v)) return fail(EXIT_USAGE, "--gen wants a count from 0, got '%s'", val);
            o->gen = (int)v;
        } else {
            return fail(EXIT_USAGE, "unknown option '%s' for %s (see --help)", f, o->mode);
        }
    }
    if (!o->model) return fail(EXIT_USAGE, "no model: give -m MODEL.gguf");
    if (logits && (!!o->text + !!o->file + !!o->ids) != 1)
        return fail(EXIT_USAGE, "give exactly one of -p TEXT, -f FILE, --tokens IDS");
    if (bench && !parallel && o->n_prefill == 0 && o->n_decode == 0) return fail(EXIT_USAGE, "nothing to measure");
    if (parallel && o->n_decode == 0) return fail(EXIT_USAGE, "parallel: -n wants at least 1 step");
    return 0;
}

/* ------------------------------------------------------------------ JSON output */

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static int utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    int len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
            : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || (size_t)len > n) return 0;
    for (int i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if (len == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F))) return 0;
    if (len == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F))) return 0;
    return len;
}

/* A JSON string; bytes that are not valid UTF-8 become U+FFFD, one each. */
static void json_string(FILE *out, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            i++;
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
            i++;
        } else {
            int len = utf8_len(p + i, n - i);
            if (len) fwrite(p + i, 1, (size_t)len, out);
            else fputs("\\ufffd", out);
            i += len ? (size_t)len : 1;
        }
    }
    fputc('"', out);
}

static void json_cstring(FILE *out, const char *s) { json_string(out, s, strlen(s)); }

static void json_number(FILE *out, double v) {
    if (isfinite(v)) fprintf(out, "%.9g", v);
    else fputs("null", out);
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ------------------------------------------------------------------ llama.cpp setup */

static bool g_verbose;
static int g_flash_attn_resolved = -1; /* 1 on, 0 off, -1 unknown: llama.cpp logs its choice */

static void on_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (strstr(text, "Flash Attention enabled")) g_flash_attn_resolved = 1;
    if (strstr(text, "Flash Attention not supported")) g_flash_attn_resolved = 0;
    if (g_verbose || level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The ggml CPU variant llama.cpp picked (e.g. libggml-cpu-zen4.so), from our own mappings. */
static void cpu_backend_name(char *out, size_t cap) {
    snprintf(out, cap, "?");
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *lib = strstr(line, "libggml-cpu");
        if (!lib) continue;
        lib[strcspn(lib, "\n")] = 0;
        snprintf(out, cap, "%s", lib);
        break;
    }
    fclose(f);
}

typedef struct engine {
    struct llama_model *model;
    struct llama_context *ctx;
    const struct llama_vocab *vocab;
    struct ggml_threadpool *pool;
    void (*pool_free)(struct ggml_threadpool *);
    int n_vocab;
    int kv_type, fa_requested;
    double load_s;
    char cpu_backend[256];
} engine;

static int engine_load(engine *e, const options *o) {
    llama_log_set(on_log, NULL);
    const char *dir = getenv("LLAMA_BENCH_LIBDIR");
    ggml_backend_load_all_from_path(dir && *dir ? dir : LLAMA_LIBDIR);
    llama_backend_init();
    if (ggml_backend_dev_count() == 0)
        return fail(EXIT_RUNTIME, "no ggml backend found in %s", dir && *dir ? dir : LLAMA_LIBDIR);
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mode = (enum llama_load_mode)o->load_mode;
    double t0 = now_s();
    e->model = llama_model_load_from_file(o->model, mp);
    e->load_s = now_s() - t0;
    if (!e->model) return fail(EXIT_RUNTIME, "%s: llama.cpp could not load the model", o->model);
    cpu_backend_name(e->cpu_backend, sizeof e->cpu_backend);
    e->vocab = llama_model_get_vocab(e->model);
    e->n_vocab = llama_vocab_n_tokens(e->vocab);
    return 0;
}

/* A context of n_ctx tokens for n_seq sequences (more than one: one KV
 * cache they share, kv_unified, as llama-server sets it) with a persistent
 * CPU thread pool attached (as llama-bench attaches one). */
static int engine_context(engine *e, const options *o, int n_ctx, int n_batch, int n_seq, int kv_default,
                          int fa_default) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_seq_max = (uint32_t)n_seq;
    if (n_seq > 1) cp.kv_unified = true;
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)o->n_ubatch;
    cp.n_threads = o->threads;
    cp.n_threads_batch = o->threads;
    e->kv_type = o->kv_type >= 0 ? o->kv_type : kv_default;
    e->fa_requested = o->fa != -2 ? o->fa : fa_default;
    cp.type_k = (enum ggml_type)e->kv_type;
    cp.type_v = (enum ggml_type)e->kv_type;
    cp.flash_attn_type = (enum llama_flash_attn_type)e->fa_requested;
    cp.no_perf = true;
    if (e->fa_requested != LLAMA_FLASH_ATTN_TYPE_AUTO)
        g_flash_attn_resolved = e->fa_requested == LLAMA_FLASH_ATTN_TYPE_ENABLED;
    e->ctx = llama_init_from_model(e->model, cp);
    if (!e->ctx) return fail(EXIT_RUNTIME, "llama.cpp could not create a context of %d tokens", n_ctx);

    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_reg_t reg = cpu ? ggml_backend_dev_backend_reg(cpu) : NULL;
    typedef struct ggml_threadpool *(*pool_new_fn)(struct ggml_threadpool_params *);
    pool_new_fn pool_new = reg ? (pool_new_fn)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new") : NULL;
    e->pool_free = reg ? (void (*)(struct ggml_threadpool *))ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free")
                       : NULL;
    if (!pool_new || !e->pool_free) return fail(EXIT_RUNTIME, "the CPU backend has no thread pool functions");
    struct ggml_threadpool_params tp = ggml_threadpool_params_default(o->threads);
    tp.poll = (uint32_t)o->poll;
    if (!(e->pool = pool_new(&tp))) return fail(EXIT_RUNTIME, "cannot create a thread pool of %d", o->threads);
    llama_attach_threadpool(e->ctx, e->pool, NULL);
    return 0;
}

/* The context and its thread pool; the model stays. */
static void engine_context_free(engine *e) {
    if (e->ctx) llama_free(e->ctx);
    if (e->pool) e->pool_free(e->pool);
    e->ctx = NULL;
    e->pool = NULL;
}

static void engine_free(engine *e) {
    engine_context_free(e);
    if (e->model) llama_model_free(e->model);
    llama_backend_free();
}

/* The fields every output starts with (no braces; with_threads false for
 * the parallel lines, which give the threads earlier). */
static void print_setup(FILE *out, const engine *e, const options *o, bool with_threads) {
    char desc[256];
    llama_model_desc(e->model, desc, sizeof desc);
    fprintf(out, "\"model\": ");
    json_cstring(out, base_name(o->model));
    fprintf(out, ", \"desc\": ");
    json_cstring(out, desc);
    fprintf(out, ", \"n_params\": %llu, \"size_bytes\": %llu", (unsigned long long)llama_model_n_params(e->model),
            (unsigned long long)llama_model_size(e->model));
    if (with_threads) fprintf(out, ", \"threads\": %d", o->threads);
    fprintf(out, ", \"kv_type\": \"%s\"", kv_type_name(e->kv_type));
    fprintf(out, ", \"flash_attn\": \"%s%s\", \"cpu_backend\": ",
            e->fa_requested == LLAMA_FLASH_ATTN_TYPE_AUTO ? "auto->" : "",
            g_flash_attn_resolved == 1 ? "on" : g_flash_attn_resolved == 0 ? "off" : "unknown");
    json_cstring(out, e->cpu_backend);
    fprintf(out, ", \"llama_cpp\": \"%s\", \"threadpool\": true, \"load_mode\": \"%s\"", LLAMA_CPP_RELEASE,
            llama_load_mode_name((enum llama_load_mode)o->load_mode));
    if (strcmp(o->mode, "logits")) fprintf(out, ", \"poll\": %d", o->poll);
}

/* ------------------------------------------------------------------ bench */

/* The benchmark's token ids, as inferno's bench draws them: a 64-bit LCG
 * (Knuth's MMIX constants) from seed 1234, the state's top 31 bits modulo
 * the count of ordinary tokens. */
typedef struct token_stream {
    uint64_t state;
    int32_t n_ordinary;
} token_stream;

enum { TOKEN_SEED = 1234 };

static llama_token next_token(token_stream *ts) {
    ts->state = ts->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (llama_token)((ts->state >> 33) % (uint64_t)ts->n_ordinary);
}

/* Ids below the first of Qwen3's special tokens, found by text exactly as
 * inferno's bench finds them (llama.cpp's token attributes would not do:
 * it marks some ordinary-looking tokens as control), else the vocabulary. */
static int32_t ordinary_token_count(const engine *e) {
    static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    int32_t count = e->n_vocab;
    for (int32_t id = 1; id < count; id++) {
        const char *text = llama_vocab_get_text(e->vocab, id);
        for (size_t i = 0; text && i < sizeof specials / sizeof specials[0]; i++)
            if (!strcmp(text, specials[i])) count = id;
    }
    return count;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void spread(double *v, int n, double *median, double *min, double *max) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *min = v[0];
    *max = v[n - 1];
}

typedef struct bench_state {
    engine *e;
    const options *o;
    llama_token *tokens; /* [max case tokens] */
    int32_t n_ordinary;
    int first_token;     /* argmax after a prefill: part of the time to first token */
} bench_state;

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Clears the KV cache and evaluates n tokens of the stream in batches of
 * n_batch (the last token's logits are computed, as in llama-bench);
 * with want_first, the argmax of those logits is taken. Seconds, or -1. */
static double run_prefill(bench_state *b, int n, token_stream *ts, bool want_first) {
    llama_memory_clear(llama_get_memory(b->e->ctx), false);
    for (int i = 0; i < n; i++) b->tokens[i] = next_token(ts);
    double t0 = now_s();
    for (int done = 0; done < n;) {
        int k = n - done < b->o->n_batch ? n - done : b->o->n_batch;
        if (llama_decode(b->e->ctx, llama_batch_get_one(b->tokens + done, k))) {
            fail(EXIT_RUNTIME, "llama_decode failed on a prompt of %d tokens", n);
            return -1;
        }
        done += k;
    }
    llama_synchronize(b->e->ctx);
    if (want_first) b->first_token = argmax(llama_get_logits_ith(b->e->ctx, -1), b->e->n_vocab);
    return now_s() - t0;
}

static double run_decode(bench_state *b, int n, token_stream *ts) {
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        llama_token id = next_token(ts);
        if (llama_decode(b->e->ctx, llama_batch_get_one(&id, 1))) {
            fail(EXIT_RUNTIME, "llama_decode failed on decode step %d", i);
            return -1;
        }
        llama_synchronize(b->e->ctx);
    }
    return now_s() - t0;
}

static void print_case(bench_state *b, const char *kind, int tokens, int depth, double *seconds) {
    int reps = b->o->reps;
    double tok_s[MAX_REPS], sorted_s[MAX_REPS], med, lo, hi, t_med, t_lo, t_hi;
    for (int r = 0; r < reps; r++) {
        tok_s[r] = seconds[r] > 0 ? tokens / seconds[r] : 0;
        sorted_s[r] = seconds[r];
    }
    spread(tok_s, reps, &med, &lo, &hi);
    spread(sorted_s, reps, &t_med, &t_lo, &t_hi);
    printf("{\"engine\": \"llama.cpp\", \"kind\": \"%s\", \"tokens\": %d, \"depth\": %d, \"reps\": %d, ",
           kind, tokens, depth, reps);
    print_setup(stdout, b->e, b->o, true);
    printf(", \"tok_s_median\": %.3f, \"tok_s_min\": %.3f, \"tok_s_max\": %.3f", med, lo, hi);
    if (!strcmp(kind, "prefill"))
        printf(", \"ttft_ms_median\": %.3f, \"ttft_ms_min\": %.3f, \"ttft_ms_max\": %.3f", 1e3 * t_med,
               1e3 * t_lo, 1e3 * t_hi);
    else
        printf(", \"ms_per_tok_median\": %.3f", med > 0 ? 1e3 / med : 0.0);
    printf(", \"samples_s\": [");
    for (int r = 0; r < reps; r++) printf("%s%.6f", r ? ", " : "", seconds[r]);
    printf("]}\n");
    fflush(stdout);
}

static int mode_bench(const options *o) {
    engine e = {0};
    int rc = engine_load(&e, o);
    int need = 1;
    for (int i = 0; i < o->n_prefill; i++)
        if (o->prefill[i] > need) need = o->prefill[i];
    if (o->n_decode > 0)
        for (int i = 0; i < o->n_depths; i++)
            if (o->depths[i] + o->n_decode > need) need = o->depths[i] + o->n_decode;
    if (!rc) rc = engine_context(&e, o, need, o->n_batch, 1, GGML_TYPE_F16, LLAMA_FLASH_ATTN_TYPE_AUTO);
    bench_state b = {.e = &e, .o = o, .tokens = malloc((size_t)need * sizeof(llama_token))};
    if (!rc && !b.tokens) rc = fail(EXIT_RUNTIME, "out of memory");
    if (!rc) b.n_ordinary = ordinary_token_count(&e);
    double seconds[MAX_REPS];
    for (int i = 0; !rc && i < o->n_prefill; i++) {
        int n = o->prefill[i];
        token_stream ts = {TOKEN_SEED, b.n_ordinary};
        if (o->warmup && run_prefill(&b, n, &ts, true) < 0) rc = EXIT_RUNTIME;
        for (int r = 0; !rc && r < o->reps; r++) {
            ts.state = TOKEN_SEED;
            if ((seconds[r] = run_prefill(&b, n, &ts, true)) < 0) rc = EXIT_RUNTIME;
        }
        if (!rc) print_case(&b, "prefill", n, 0, seconds);
    }
    for (int i = 0; !rc && o->n_decode > 0 && i < o->n_depths; i++) {
        int depth = o->depths[i];
        token_stream ts = {TOKEN_SEED, b.n_ordinary};
        if (o->warmup && run_prefill(&b, 1, &ts, true) < 0) rc = EXIT_RUNTIME;
        for (int r = 0; !rc && r < o->reps; r++) {
            ts.state = TOKEN_SEED;
            if (depth > 0 && run_prefill(&b, depth, &ts, false) < 0) rc = EXIT_RUNTIME;
            else if (depth == 0) llama_memory_clear(llama_get_memory(e.ctx), false);
            if (!rc && (seconds[r] = run_decode(&b, o->n_decode, &ts)) < 0) rc = EXIT_RUNTIME;
        }
        if (!rc) print_case(&b, "decode", o->n_decode, depth, seconds);
    }
    if (!rc) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("{\"engine\": \"llama.cpp\", \"kind\": \"summary\", \"tokens\": 0, \"depth\": 0, "
               "\"reps\": %d, ", o->reps);
        print_setup(stdout, &e, o, true);
        printf(", \"load_s\": %.4f, \"peak_rss_mb\": %.1f, \"n_ctx\": %u, \"n_batch\": %d, "
               "\"n_ubatch\": %d, \"n_ordinary_tokens\": %d, \"warmup\": %s}\n",
               e.load_s, (double)ru.ru_maxrss * 1024.0 * 1e-6, llama_n_ctx(e.ctx), o->n_batch,
               o->n_ubatch, b.n_ordinary, o->warmup ? "true" : "false");
    }
    free(b.tokens);
    engine_free(&e);
    return rc;
}

/* ------------------------------------------------------------------ parallel */

/* Fills the prompts of n_seq sequences, depth tokens each from ts[s], into
 * a cleared KV cache, n_batch tokens per llama_decode (a batch may hold
 * several sequences; each sequence's last token asks for logits, as a
 * server's first sampling needs). 0, or an exit code. */
static int parallel_prompts(engine *e, struct llama_batch *batch, int n_batch, int n_seq, int depth,
                            token_stream *ts) {
    llama_memory_clear(llama_get_memory(e->ctx), false);
    batch->n_tokens = 0;
    for (int s = 0; s < n_seq; s++)
        for (int i = 0; i < depth; i++) {
            int k = batch->n_tokens++;
            batch->token[k] = next_token(&ts[s]);
            batch->pos[k] = i;
            batch->n_seq_id[k] = 1;
            batch->seq_id[k][0] = s;
            batch->logits[k] = (int8_t)(i == depth - 1);
            bool last = s == n_seq - 1 && i == depth - 1;
            if (batch->n_tokens == n_batch || last) {
                if (llama_decode(e->ctx, *batch))
                    return fail(EXIT_RUNTIME, "llama_decode failed on the prompts of %d sequences", n_seq);
                batch->n_tokens = 0;
            }
        }
    llama_synchronize(e->ctx);
    return 0;
}

/* steps batched decode steps after the prompts: each decodes the next
 * token of every sequence (its own stream's next id, at position depth +
 * step), all in one batch with logits for each. Seconds, or -1. */
static double parallel_steps(engine *e, struct llama_batch *batch, int n_seq, int depth, int steps,
                             token_stream *ts) {
    double t0 = now_s();
    for (int g = 0; g < steps; g++) {
        for (int s = 0; s < n_seq; s++) {
            batch->token[s] = next_token(&ts[s]);
            batch->pos[s] = depth + g;
            batch->n_seq_id[s] = 1;
            batch->seq_id[s][0] = s;
            batch->logits[s] = 1;
        }
        batch->n_tokens = n_seq;
        if (llama_decode(e->ctx, *batch)) {
            fail(EXIT_RUNTIME, "llama_decode failed on batched step %d of %d sequences", g, n_seq);
            return -1;
        }
        llama_synchronize(e->ctx);
    }
    return now_s() - t0;
}

static void print_parallel(const engine *e, const options *o, int n_seq, int depth, const double *seconds) {
    int reps = o->reps, n = o->n_decode;
    double tok_s[MAX_REPS], med, lo, hi;
    for (int r = 0; r < reps; r++) tok_s[r] = seconds[r] > 0 ? (double)n_seq * n / seconds[r] : 0;
    spread(tok_s, reps, &med, &lo, &hi);
    printf("{\"engine\": \"llama.cpp\", \"kind\": \"parallel\", \"streams\": %d, \"tokens\": %d, \"depth\": %d, "
           "\"threads\": %d, \"tok_s_median\": %.3f, \"tok_s_min\": %.3f, \"tok_s_max\": %.3f, \"reps\": %d, "
           "\"ms_per_step_median\": %.3f, \"n_ctx\": %u, ",
           n_seq, n, depth, o->threads, med, lo, hi, reps, med > 0 ? 1e3 * n_seq / med : 0.0, llama_n_ctx(e->ctx));
    print_setup(stdout, e, o, false);
    printf(", \"samples_s\": [");
    for (int r = 0; r < reps; r++) printf("%s%.6f", r ? ", " : "", seconds[r]);
    printf("]}\n");
    fflush(stdout);
}

static int mode_parallel(const options *o) {
    engine e = {0};
    int rc = engine_load(&e, o);
    int32_t n_ordinary = rc ? 0 : ordinary_token_count(&e);
    for (int di = 0; !rc && di < o->n_depths; di++)
        for (int si = 0; !rc && si < o->n_streams; si++) {
            int n_seq = o->streams[si], depth = o->depths[di];
            /* the decode step is one batch of n_seq tokens; prompts pack up to n_batch */
            int n_batch = o->n_batch > n_seq ? o->n_batch : n_seq;
            int n_ctx = n_seq * (depth + o->n_decode) + 32;
            rc = engine_context(&e, o, n_ctx, n_batch, n_seq, GGML_TYPE_F16, LLAMA_FLASH_ATTN_TYPE_AUTO);
            struct llama_batch batch = llama_batch_init(n_batch, 0, 1);
            token_stream ts[MAX_STREAMS];
            double seconds[MAX_REPS];
            for (int r = o->warmup ? -1 : 0; !rc && r < o->reps; r++) { /* r = -1: the warm-up */
                for (int s = 0; s < n_seq; s++) ts[s] = (token_stream){TOKEN_SEED + (uint64_t)s, n_ordinary};
                if ((rc = parallel_prompts(&e, &batch, n_batch, n_seq, depth, ts))) break;
                double t = parallel_steps(&e, &batch, n_seq, depth, r < 0 ? 2 : o->n_decode, ts);
                if (t < 0) rc = EXIT_RUNTIME;
                else if (r >= 0) seconds[r] = t;
            }
            if (!rc) print_parallel(&e, o, n_seq, depth, seconds);
            llama_batch_free(batch);
            engine_context_free(&e);
        }
    engine_free(&e);
    return rc;
}

/* ------------------------------------------------------------------ logits */

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (cap - len - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) { free(buf); buf = NULL; break; }
            buf = bigger;
            cap *= 2;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (buf && bad) { free(buf); return NULL; }
    if (buf) buf[len] = 0;
    return buf;
}

/* Text through llama.cpp's tokenizer (special tokens parsed, the model's
 * BOS rule applied); malloc'd ids or NULL. */
static llama_token *tokenize(const engine *e, const char *text, int *n_out) {
    int len = (int)strlen(text), cap = len + 16;
    llama_token *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return NULL;
    int n = llama_tokenize(e->vocab, text, len, ids, cap, true, true);
    if (n < 0) {
        cap = -n;
        llama_token *bigger = realloc(ids, (size_t)cap * sizeof *ids);
        if (!bigger) { free(ids); return NULL; }
        ids = bigger;
        n = llama_tokenize(e->vocab, text, len, ids, cap, true, true);
    }
    if (n < 0) { free(ids); return NULL; }
    *n_out = n;
    return ids;
}

static llama_token *parse_ids(const char *s, int *n_out) {
    int n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    llama_token *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return NULL;
    char *copy = strdup(s);
    int k = 0;
    for (char *save = NULL, *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
        long v;
        while (*tok == ' ') tok++;
        if (!parse_long(tok, 0, INT32_MAX, &v)) { k = -1; break; }
        ids[k++] = (llama_token)v;
    }
    free(copy);
    if (k <= 0) { free(ids); return NULL; }
    *n_out = k;
    return ids;
}

static void print_piece(FILE *out, const engine *e, llama_token id) {
    char buf[512];
    int n = llama_token_to_piece(e->vocab, id, buf, sizeof buf, 0, true);
    json_string(out, buf, n > 0 ? (size_t)n : 0);
}

static void print_ids(FILE *out, const llama_token *ids, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? ", " : "", ids[i]);
    fputc(']', out);
}

/* The k largest logits, largest first; equal logits in id order. */
typedef struct candidate {
    int id;
    float logit;
} candidate;

static int top_k(const float *logits, int n_vocab, int k, candidate *out) {
    int n = 0;
    for (int id = 0; id < n_vocab; id++) {
        float x = logits[id];
        if (n == k && !(x > out[k - 1].logit)) continue;
        int j = n < k ? n++ : k - 1; /* the slot to fill, then bubble up */
        while (j > 0 && out[j - 1].logit < x) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = (candidate){id, x};
    }
    return n;
}

static void print_top(FILE *out, const engine *e, const float *logits, int k, candidate *scratch) {
    int n = top_k(logits, e->n_vocab, k, scratch);
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        fprintf(out, "%s{\"id\": %d, \"logit\": ", i ? ", " : "", scratch[i].id);
        json_number(out, scratch[i].logit);
        fprintf(out, ", \"piece\": ");
        print_piece(out, e, scratch[i].id);
        fputc('}', out);
    }
    fputc(']', out);
}

/* Mean, standard deviation and log-sum-exp of all logits, in double. */
static void logit_stats(const float *l, int n, double *mean, double *std, double *lse) {
    double sum = 0, sum_sq = 0, max = -INFINITY;
    for (int i = 0; i < n; i++) {
        sum += l[i];
        sum_sq += (double)l[i] * l[i];
        if (l[i] > max) max = l[i];
    }
    *mean = sum / n;
    *std = sqrt(fmax(0.0, sum_sq / n - *mean * *mean));
    double z = 0;
    for (int i = 0; i < n; i++) z += exp((double)l[i] - max);
    *lse = max + log(z);
}

static int mode_logits(const options *o) {
    engine e = {0};
    int rc = engine_load(&e, o);
    if (rc) {
        engine_free(&e);
        return rc;
    }
    char *text = NULL;
    llama_token *prompt = NULL;
    int n = 0;
    if (o->file && !(text = read_file(o->file))) rc = fail(EXIT_RUNTIME, "cannot read %s", o->file);
    else if (o->text && !(text = strdup(o->text))) rc = fail(EXIT_RUNTIME, "out of memory");
    if (!rc && o->ids && !(prompt = parse_ids(o->ids, &n)))
        rc = fail(EXIT_USAGE, "--tokens wants ids like 1,2,3, got '%s'", o->ids);
    if (!rc && text && !(prompt = tokenize(&e, text, &n))) rc = fail(EXIT_RUNTIME, "tokenizing failed");
    if (!rc && n < 1) rc = fail(EXIT_USAGE, "the prompt has no tokens");
    for (int i = 0; !rc && i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= e.n_vocab)
            rc = fail(EXIT_USAGE, "token id %d is outside the vocabulary (%d)", prompt[i], e.n_vocab);
    /* the whole prompt in one batch; room for the continuation */
    if (!rc) rc = engine_context(&e, o, n + o->gen + 8, n > 2048 ? n : 2048, 1, GGML_TYPE_F32,
                                 LLAMA_FLASH_ATTN_TYPE_DISABLED);
    struct llama_batch batch = llama_batch_init(n > 0 ? n : 1, 0, 1);
    double prompt_s = 0;
    if (!rc) {
        for (int i = 0; i < n; i++) {
            batch.token[i] = prompt[i];
            batch.pos[i] = o->pos0 + i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = (int8_t)(o->all_pos || i == n - 1);
        }
        batch.n_tokens = n;
        double t0 = now_s();
        if (llama_decode(e.ctx, batch)) rc = fail(EXIT_RUNTIME, "llama_decode failed on the prompt");
        prompt_s = now_s() - t0;
    }
    candidate *top = malloc((size_t)o->top * sizeof *top);
    float *logits = malloc((size_t)e.n_vocab * sizeof *logits);
    if (!rc && (!top || !logits)) rc = fail(EXIT_RUNTIME, "out of memory");
    if (!rc && o->dump) {
        FILE *f = fopen(o->dump, "wb");
        const float *last = llama_get_logits_ith(e.ctx, n - 1);
        bool ok = f && fwrite(last, sizeof *last, (size_t)e.n_vocab, f) == (size_t)e.n_vocab;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) rc = fail(EXIT_RUNTIME, "cannot write %s", o->dump);
    }
    if (rc) goto done;

    FILE *out = stdout;
    double mean, std, lse;
    fputc('{', out);
    print_setup(out, &e, o, true);
    if (o->pos0) fprintf(out, ",\n \"pos0\": %d", o->pos0);
    fprintf(out, ",\n \"n_vocab\": %d, \"prompt_text\": ", e.n_vocab);
    if (text) json_cstring(out, text);
    else fputs("null", out);
    fprintf(out, ",\n \"prompt_tokens\": ");
    print_ids(out, prompt, n);
    fprintf(out, ",\n \"prompt_pieces\": [");
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        print_piece(out, &e, prompt[i]);
    }
    fputc(']', out);
    if (o->all_pos) {
        fprintf(out, ",\n \"positions\": [");
        for (int i = 0; i < n; i++) {
            const float *l = llama_get_logits_ith(e.ctx, i);
            logit_stats(l, e.n_vocab, &mean, &std, &lse);
            fprintf(out, "%s\n  {\"pos\": %d, \"token\": %d, \"argmax\": %d, \"logsumexp\": ", i ? "," : "", i,
                    prompt[i], argmax(l, e.n_vocab));
            json_number(out, lse);
            fprintf(out, ", \"top\": ");
            print_top(out, &e, l, o->top, top);
            fputc('}', out);
        }
        fputc(']', out);
    }
    memcpy(logits, llama_get_logits_ith(e.ctx, n - 1), (size_t)e.n_vocab * sizeof *logits);
    logit_stats(logits, e.n_vocab, &mean, &std, &lse);
    fprintf(out, ",\n \"final\": {\"pos\": %d, \"mean\": ", n - 1);
    json_number(out, mean);
    fprintf(out, ", \"std\": ");
    json_number(out, std);
    fprintf(out, ", \"logsumexp\": ");
    json_number(out, lse);
    fprintf(out, ", \"top\": ");
    print_top(out, &e, logits, o->top, top);
    fputc('}', out);
    if (o->dump) {
        fprintf(out, ",\n \"dump\": ");
        json_cstring(out, base_name(o->dump));
    }
    if (o->gen > 0) {
        /* greedy: argmax (ties to the lowest id), not stopping at end-of-generation */
        llama_token *ids = malloc((size_t)o->gen * sizeof *ids);
        float *chosen = malloc((size_t)o->gen * sizeof *chosen), *margin = malloc((size_t)o->gen * sizeof *margin);
        char *detok = malloc((size_t)o->gen * 64 + 1);
        if (!ids || !chosen || !margin || !detok) {
            rc = fail(EXIT_RUNTIME, "out of memory");
        } else {
            double t0 = now_s();
            int steps = 0;
            for (; steps < o->gen; steps++) {
                candidate best[2];
                top_k(logits, e.n_vocab, 2, best);
                ids[steps] = best[0].id;
                chosen[steps] = best[0].logit;
                margin[steps] = best[0].logit - best[1].logit;
                if (steps == o->gen - 1) {
                    steps++;
                    break;
                }
                if (llama_decode(e.ctx, llama_batch_get_one(&ids[steps], 1))) {
                    rc = fail(EXIT_RUNTIME, "llama_decode failed at greedy step %d", steps);
                    break;
                }
                memcpy(logits, llama_get_logits_ith(e.ctx, -1), (size_t)e.n_vocab * sizeof *logits);
            }
            double gen_s = now_s() - t0;
            fprintf(out, ",\n \"greedy\": {\"n\": %d, \"tokens\": ", steps);
            print_ids(out, ids, steps);
            fprintf(out, ",\n   \"logits\": [");
            for (int i = 0; i < steps; i++) {
                if (i) fputs(", ", out);
                json_number(out, chosen[i]);
            }
            fprintf(out, "],\n   \"margins\": [");
            for (int i = 0; i < steps; i++) {
                if (i) fputs(", ", out);
                json_number(out, margin[i]);
            }
            fprintf(out, "],\n   \"pieces\": [");
            for (int i = 0; i < steps; i++) {
                if (i) fputs(", ", out);
                print_piece(out, &e, ids[i]);
            }
            fprintf(out, "],\n   \"text\": ");
            int len = llama_detokenize(e.vocab, ids, steps, detok, o->gen * 64, false, false);
            json_string(out, detok, len > 0 ? (size_t)len : 0);
            fprintf(out, ", \"seconds\": ");
            json_number(out, gen_s);
            fputc('}', out);
        }
        free(ids);
        free(chosen);
        free(margin);
        free(detok);
    }
    fprintf(out, ",\n \"prompt_seconds\": ");
    json_number(out, prompt_s);
    fputs("}\n", out);
done:
    free(top);
    free(logits);
    llama_batch_free(batch);
    free(prompt);
    free(text);
    engine_free(&e);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    bool help = false;
    int rc = parse_options(argc, argv, &o, &help);
    if (help) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (rc) return rc;
    g_verbose = o.verbose;
    return !strcmp(o.mode, "bench") ? mode_bench(&o) : !strcmp(o.mode, "parallel") ? mode_parallel(&o) : mode_logits(&o);
}

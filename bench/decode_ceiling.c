/*
 * decode_ceiling.c — how close to the read bandwidth can a decode of this
 * model come at all, and how close does the engine's come? Reads the bytes
 * of each weight product of one decoded token, in the forward pass's order
 * and sizes, with the engine's thread pool and one dispatch per product,
 * and does no arithmetic: the time that costs is the floor of any decode
 * that splits its products the way the CPU backend does. In the same
 * rounds the engine itself decodes, so that each of its figures has read
 * figures taken moments before and after. Not a test.
 *
 *   make build/decode_ceiling && build/decode_ceiling -m MODEL.gguf [-t 2] [-r 15] [-n 16] [--sizes]
 *
 * Products of a Qwen3 layer, as the forward pass issues them (one dispatch
 * each, model/qwen3.c): q+k+v, o, gate+up, down; then the output head
 * (output.weight, or token_embd.weight when tied). Their bytes are the
 * GGUF tensors' (a weight packed at load has the same bytes in another
 * order). All products lie one after another in one buffer on huge pages,
 * as packed weights do (inf_alloc_huge).
 *
 * A round times, in an order that turns from round to round, so that a
 * noisy machine slows all alike:
 *   products  every product as one inf_pool_run of t tasks, task i summing
 *             the i-th contiguous 1/t of its bytes (what run_ranges gives
 *             each thread before any stealing), a barrier at each end;
 *   stolen    the same, but split as run_ranges splits: each task claims
 *             half of what is left of its share at a time, then steals
 *             half of what is left of another's from the back, in grains
 *             of 16 KiB, so the threads end together even when one core
 *             reads faster than the other (on this VM it sometimes reads
 *             a third faster, and then `products` is no ceiling);
 *   one pass  the whole buffer as one dispatch of t contiguous parts;
 *   NTA pass  the same with a non-temporal software prefetch 4 KiB ahead
 *             of every line (__builtin_prefetch, locality 0), as the
 *             kernels read weights on AMD: the lines it brings do not
 *             displace the L3, so on a buffer not much larger than the
 *             caches what they held is found there again next pass;
 *   engine products  the engine's own products of a token (its
 *             kernels, split as it splits them, each layer's q+k+v, o,
 *             gate+up and down, then the head), one after another on one
 *             fixed activation row, with nothing between them: no norms,
 *             RoPE, attention or activations of the token before. The
 *             decode against this line is the share of a token that goes
 *             to everything but the products;
 *   decode    the engine: the model loaded as `inferno bench --no-mmap`
 *             loads it, -n tokens decoded after 17, counted as the same
 *             product bytes per token (the KV rows and the embedding row
 *             it also reads are left out).
 * The plain reads sum with the faster of inf_measure_read_bandwidth's two
 * loops here: one 64-byte load and add a step where the CPU has AVX-512
 * (on the Zen 5 VM it read 4-8% faster than the C loop; until 2026-12-07
 * these lines used the C loop, eight 64-bit accumulators, as the NTA pass
 * still does). Printed: medians over -r rounds, and the best round, against
 * the read bandwidth `inferno bench` quotes (inf_measure_read_bandwidth,
 * best of 16 passes over 1 GiB), measured once before and once after the
 * rounds. The figure is a best pass, the lines medians: the best round
 * shows how much of the gap between them is the host's spells (Zen 5 VM,
 * 2026-12-07, Q4_0: `stolen` median 83.0%, best 92.2%; the decode 70.3%
 * and 71.8%); and
 * the median over rounds of the decode's figure over each read line's of
 * the same round (paired: a noisy spell moves both). The `stolen` line
 * leaves out every kernel's arithmetic, attention and the serial ops
 * between products, but it is no hard ceiling: the kernels prefetch in
 * software between their arithmetic, and on one Zen 5 VM host in a busy
 * spell the decode read the same bytes 12-23% faster than it (2026-12-06,
 * paired; on another, quieter, 8% slower).
 *
 * Each kind starts after a 5 ms pause: the workers of the pool that ran
 * the kind before (the model's, or this file's) spin about a millisecond
 * after their last job (core/pool.c), and without the pause they shared
 * the cores with the next kind's threads. Until 2026-12-07 there was none,
 * and the read lines came out low: on the Zen 5 VM one pass over all the
 * bytes read 83-97% of the bandwidth figure then, 87-105% with the pause
 * (Q4_0 and Q4_K_M 0.6B, four runs; the engine's products alone 89-107%,
 * its decode 85-101%, 85-97% of its products alone, paired).
 *
 * --sizes: then the engine's matvec on products of different sizes, cut
 * from the output head (its rows [r0, r0 + rows) as a weight of its own,
 * in the backend's layout), one token each, visited in a scattered order
 * so that no product starts where the one before ended: what a product
 * of that many bytes costs, cold, against one long stream.
 */
#include "backend/ops.h"
#include "core/common.h"
#include "core/pool.h"
#include "core/shares.h"
#include "inferno.h"
#include "io/gguf.h"
#include "model/model.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    MAX_ROUNDS = 101,
    PRODUCTS_PER_LAYER = 4,
    MAX_THREADS = 64,
    GRAIN_WORDS = 16384 / 8,
    NTA_AHEAD_WORDS = 4096 / 8, /* the NTA pass's prefetch distance */
    DECODE_DEPTH = 17,          /* tokens in the cache before each round's decode */
    MAX_DECODE_TOKENS = 1024,
    SETTLE_NS = 5000000, /* before each timed kind: idle pool workers stop spinning (~1 ms) */
};

/* What a round times, in this order in round 0. */
enum { KIND_PRODUCTS, KIND_STOLEN, KIND_WHOLE, KIND_WHOLE_NTA, KIND_ENGINE_PRODUCTS, KIND_DECODE, N_KINDS };

typedef struct read_job {
    const uint64_t *words; /* the product's bytes, as words */
    size_t n_words;
    int tasks;
    bool nta;                   /* prefetch non-temporally ahead of the loads */
    uint64_t sums[MAX_THREADS]; /* per task, kept so the loads stay */
    inf_share shares[MAX_THREADS]; /* stolen: each task's share, in grains */
} read_job;

/* The plain reads' loop (see the header comment), chosen in main. */
static uint64_t (*sum_words)(const uint64_t *p, size_t n) = inf_sum_words;

static void read_task(void *ctx, int task, int thread) {
    (void)thread;
    read_job *j = ctx;
    const size_t lines = j->n_words / 8;
    const size_t lo = lines * (size_t)task / (size_t)j->tasks * 8, hi = lines * (size_t)(task + 1) / (size_t)j->tasks * 8;
    if (!j->nta) {
        j->sums[task] += sum_words(j->words + lo, hi - lo);
        return;
    }
    /* inf_sum_words' loop, the line 4 KiB on prefetched before each line
     * (lo and hi are whole lines, but for the buffer's last word) */
    const uint64_t *w = j->words;
    uint64_t s[8] = {0};
    size_t a = lo;
    for (; a + 8 <= hi; a += 8) {
        __builtin_prefetch(w + INF_MIN(a + NTA_AHEAD_WORDS, j->n_words - 1), 0, 0);
        for (int k = 0; k < 8; k++) s[k] += w[a + (size_t)k];
    }
    for (; a < hi; a++) s[0] += w[a];
    j->sums[task] += s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

/* Sums grains [lo, hi) of the product into the task's sum (`thread`
 * carries the task here). */
static void stolen_grains(void *ctx, uint32_t lo, uint32_t hi, int task) {
    read_job *j = ctx;
    const size_t a = (size_t)lo * GRAIN_WORDS, b = (size_t)hi * GRAIN_WORDS;
    j->sums[task] += sum_words(j->words + a, (b < j->n_words ? b : j->n_words) - a);
}

static void stolen_task(void *ctx, int task, int thread) {
    (void)thread;
    read_job *j = ctx;
    inf_shares_work(j->shares, j->tasks, task, stolen_grains, j, task);
}

/* The engine's products of one token, back to back (KIND_ENGINE_PRODUCTS):
 * x [the widest input], y [n_vocab] (room for any product's rows: Qwen3's
 * q + k + v and gate + up are far fewer), scratch as the model's. */
static void engine_products(const inf_model *m, const float *x, float *y, void *scratch) {
    const inf_ops *ops = m->backend;
    const qwen3_config *c = &m->cfg;
    /* apart, as the forward pass's; the results are not read */
    float *const y_qkv[3] = {y, y + c->q_dim, y + c->q_dim + c->kv_dim}, *const y_gate_up[2] = {y, y + c->n_ff};
    for (int l = 0; l < c->n_layer; l++) {
        const qwen3_layer *L = &m->layers[l];
        const inf_weight *qkv[3] = {&L->wq, &L->wk, &L->wv}, *gate_up[2] = {&L->ffn_gate, &L->ffn_up};
        ops->matmul_group(ops, qkv, 3, x, 1, 1, y_qkv, scratch);
        ops->matmul(ops, &L->wo, x, 1, 1, y, scratch);
        ops->matmul_group(ops, gate_up, 2, x, 1, 1, y_gate_up, scratch);
        ops->matmul(ops, &L->ffn_down, x, 1, 1, y, scratch);
    }
    ops->matmul(ops, &m->output, x, 1, 1, y, scratch);
}

/* Bytes of tensor `name`, 0 when the file lacks it. */
static uint64_t tensor_bytes(const gguf_file *f, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    return t ? t->nbytes : 0;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* --sizes: the head's matvec on slices of each size in turn (see the
 * header comment); the last size is the whole head. */
static int print_product_sizes(const inf_model *m, double bw) {
    static const int64_t slice_rows[] = {256, 512, 1024, 2048, 4096, 16384, 0};
    const inf_ops *ops = m->backend;
    const inf_weight *head = &m->output; /* [n_vocab][n_embd] */
    const size_t packed = head->packed && ops->weight_packed_bytes ? ops->weight_packed_bytes(ops, head) : 0;
    const int64_t rows = head->rows, cols = head->cols;
    if (rows % 16 || (packed && packed % (size_t)(rows / 16))) {
        fprintf(stderr, "decode_ceiling: the head's %lld rows do not cut into groups of 16\n", (long long)rows);
        return 1;
    }
    /* packed layouts hold rows in groups of 8 or 16, each group the same bytes */
    const size_t bytes_per_16_rows = packed ? packed / (size_t)(rows / 16) : 16 * head->row_bytes;
    float *x = inf_alloc_aligned((size_t)cols * sizeof(float));      /* [cols] */
    float *y = inf_alloc_aligned((size_t)rows * sizeof(float));      /* [rows] */
    void *scratch = inf_alloc_aligned((size_t)cols * sizeof(float)); /* one token's rounded row */
    if (!x || !y || !scratch) return 1;
    for (int64_t i = 0; i < cols; i++) x[i] = (float)((i * 37) % 101 - 50) / 50.0f;
    printf("the head's matvec in products of a size, cold, in a scattered order (--sizes):\n");
    for (size_t k = 0; k < sizeof slice_rows / sizeof *slice_rows; k++) {
        const int64_t n = slice_rows[k] ? slice_rows[k] : rows;
        const int64_t count = rows / n; /* slices; the rows past the last are left out */
        inf_weight w = *head;
        w.rows = n;
        const size_t slice_bytes = (size_t)(n / 16) * bytes_per_16_rows;
        double seconds = 0;
        int64_t done = 0;
        for (int pass = 0; pass < 4; pass++)
            for (int64_t i = 0; i < count; i++) {
                const int64_t r0 = (i * 7919) % count * n; /* 7919 is prime: every slice once */
                if (packed) w.packed = (const char *)head->packed + (size_t)(r0 / 16) * bytes_per_16_rows;
                else w.data = (const char *)head->data + (size_t)r0 * head->row_bytes;
                const double t0 = inf_monotonic_s();
                ops->matmul(ops, &w, x, 1, 1, y, scratch);
                seconds += inf_monotonic_s() - t0;
                done++;
            }
        const double gbs = (double)slice_bytes * (double)done / seconds / 1e9;
        printf("  %6lld rows, %7.2f MB: %6.1f GB/s  %5.1f%% of the bandwidth  (%.1f us per product)\n", (long long)n,
               (double)slice_bytes / 1e6, gbs, 100 * gbs / bw, seconds / (double)done * 1e6);
    }
    inf_free_aligned(x);
    inf_free_aligned(y);
    inf_free_aligned(scratch);
    return 0;
}

static void usage(FILE *out) {
    fprintf(out, "usage: decode_ceiling -m MODEL.gguf [-t THREADS] [-r ROUNDS] [-n TOKENS] [--sizes]\n"
                 "Reads one decoded token's weight products with the engine's pool, no arithmetic:\n"
                 "what a decode split as the engine splits could read at; and in the same\n"
                 "rounds decodes TOKENS tokens (default 16; 0 = none) with the engine, and\n"
                 "runs the engine's products of as many tokens back to back, nothing between.\n"
                 "--sizes: then the engine's matvec on slices of the output head of 256 rows\n"
                 "to all of it, cold: what a product costs by its size (needs -n > 0).\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int threads = 2, rounds = 15, decode_tokens = 16;
    bool product_sizes = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 < argc && !strcmp(argv[i], "-m")) path = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "-t")) threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-r")) rounds = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-n")) decode_tokens = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes")) product_sizes = true;
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!path || threads < 1 || threads > MAX_THREADS || rounds < 1 || rounds > MAX_ROUNDS || decode_tokens < 0 ||
        decode_tokens > MAX_DECODE_TOKENS || (product_sizes && decode_tokens == 0)) {
        usage(stderr);
        return 2;
    }
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) sum_words = inf_sum_words_avx512;
#endif
    inf_error err = {0};
    gguf_file *f = NULL;
    if (gguf_open(path, GGUF_OPEN_METADATA_ONLY, &f, &err) != INF_OK) {
        fprintf(stderr, "decode_ceiling: %s\n", err.msg);
        return 1;
    }
    int64_t n_layer = 0;
    if (gguf_get_int(f, "qwen3.block_count", false, &n_layer, &err) != INF_OK || n_layer < 1 || n_layer > 1024) {
        fprintf(stderr, "decode_ceiling: %s: no usable qwen3.block_count\n", path);
        gguf_close(f);
        return 1;
    }
    /* the products' bytes, in order: per layer qkv, o, gate+up, down; then the head */
    const int n_products = (int)n_layer * PRODUCTS_PER_LAYER + 1;
    size_t *bytes = calloc((size_t)n_products, sizeof *bytes);
    if (!bytes) return 1;
    static const char *const parts[PRODUCTS_PER_LAYER][3] = {
        {"attn_q", "attn_k", "attn_v"}, {"attn_output", NULL, NULL}, {"ffn_gate", "ffn_up", NULL}, {"ffn_down", NULL, NULL}};
    size_t total = 0;
    for (int l = 0; l < n_layer; l++)
        for (int p = 0; p < PRODUCTS_PER_LAYER; p++) {
            size_t b = 0;
            for (int k = 0; k < 3 && parts[p][k]; k++) {
                char name[96];
                snprintf(name, sizeof name, "blk.%d.%s.weight", l, parts[p][k]);
                b += tensor_bytes(f, name);
            }
            bytes[l * PRODUCTS_PER_LAYER + p] = b / 64 * 64;
        }
    uint64_t head = tensor_bytes(f, "output.weight");
    if (!head) head = tensor_bytes(f, "token_embd.weight");
    bytes[n_products - 1] = head / 64 * 64;
    gguf_close(f);
    for (int i = 0; i < n_products; i++) total += bytes[i];
    if (total < ((size_t)1 << 20)) {
        fprintf(stderr, "decode_ceiling: %s: only %zu bytes of weight products\n", path, total);
        return 1;
    }

    /* the engine, loaded as `inferno bench --no-mmap` loads it */
    inf_model *model = NULL;
    inf_session *session = NULL;
    float *logits = NULL, *products_x = NULL; /* logits: also the products' rows (engine_products) */
    void *products_scratch = NULL;
    if (decode_tokens > 0) {
        inf_load_options opt;
        inf_load_options_default(&opt);
        opt.n_threads = threads;
        opt.use_mmap = false;
        inf_model_info info;
        int32_t prompt[DECODE_DEPTH];
        for (int i = 0; i < DECODE_DEPTH; i++) prompt[i] = 100 + 7 * i;
        if (inf_model_load(path, &opt, &model, &err) != INF_OK ||
            inf_session_new(model, DECODE_DEPTH + decode_tokens, &session, &err) != INF_OK ||
            inf_session_eval(session, prompt, DECODE_DEPTH, INF_LOGITS_NONE, NULL, &err) != INF_OK) {
            fprintf(stderr, "decode_ceiling: %s\n", err.msg);
            return 1;
        }
        inf_model_get_info(model, &info);
        logits = malloc((size_t)info.n_vocab * sizeof *logits);
        const qwen3_config *c = &model->cfg;
        const size_t widest = (size_t)INF_MAX(INF_MAX(c->n_embd, c->q_dim), c->n_ff);
        products_x = inf_alloc_aligned(widest * sizeof(float));
        products_scratch = inf_alloc_aligned(widest * sizeof(float));
        if (!logits || !products_x || !products_scratch || (size_t)c->n_vocab < (size_t)c->q_dim + 2u * (size_t)c->kv_dim ||
            c->n_vocab < 2 * c->n_ff) {
            fprintf(stderr, "decode_ceiling: out of memory, or a vocabulary too small to hold a product's rows\n");
            return 1;
        }
        for (size_t i = 0; i < widest; i++) products_x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    }

    uint64_t *buf = inf_alloc_huge(total);
    inf_pool *pool = inf_pool_new(threads);
    double *t[N_KINDS];
    bool alloc_ok = buf && pool;
    for (int k = 0; k < N_KINDS; k++) alloc_ok = (t[k] = calloc((size_t)rounds, sizeof(double))) && alloc_ok;
    if (!alloc_ok) {
        fprintf(stderr, "decode_ceiling: cannot allocate %zu bytes\n", total);
        return 1;
    }
    for (size_t i = 0; i < total / 8; i++) buf[i] = i; /* the pages exist before timing */

    double bw_before = 0, bw_after = 0;
    inf_measure_read_bandwidth(threads, (size_t)1 << 30, &bw_before, &err);
    static read_job j; /* static: aligned, and no stack of 64 shares */
    j.tasks = threads;
    const int n_kinds = decode_tokens > 0 ? N_KINDS : KIND_ENGINE_PRODUCTS; /* the last two need the model */
    for (int r = 0; r < rounds; r++) {
        for (int order = 0; order < n_kinds; order++) {
            const int kind = (order + r) % n_kinds;
            /* the other pool's workers (the model's, or this file's) spin a
             * while after their last job (core/pool.c): let them sleep
             * first, or they share the cores with this kind's threads */
            nanosleep(&(struct timespec){.tv_nsec = SETTLE_NS}, NULL);
            double t0 = inf_monotonic_s();
            if (kind == KIND_PRODUCTS || kind == KIND_STOLEN) {
                size_t off = 0;
                j.nta = false;
                for (int i = 0; i < n_products; i++) {
                    j.words = buf + off / 8;
                    j.n_words = bytes[i] / 8;
                    if (kind == KIND_PRODUCTS) {
                        inf_pool_run(pool, threads, read_task, &j);
                    } else {
                        const uint64_t grains = (j.n_words + GRAIN_WORDS - 1) / GRAIN_WORDS;
                        for (int k = 0; k < threads; k++)
                            inf_share_set(&j.shares[k], (uint32_t)(grains * (uint64_t)k / (uint64_t)threads),
                                          (uint32_t)(grains * (uint64_t)(k + 1) / (uint64_t)threads));
                        inf_pool_run(pool, threads, stolen_task, &j);
                    }
                    off += bytes[i];
                }
            } else if (kind == KIND_ENGINE_PRODUCTS) {
                for (int i = 0; i < decode_tokens; i++) engine_products(model, products_x, logits, products_scratch);
            } else if (kind == KIND_WHOLE || kind == KIND_WHOLE_NTA) {
                j.words = buf;
                j.n_words = total / 8;
                j.nta = kind == KIND_WHOLE_NTA;
                inf_pool_run(pool, threads, read_task, &j);
            } else {
                if (inf_session_truncate(session, DECODE_DEPTH, &err) != INF_OK) {
                    fprintf(stderr, "decode_ceiling: %s\n", err.msg);
                    return 1;
                }
                t0 = inf_monotonic_s();
                for (int i = 0; i < decode_tokens; i++) {
                    const int32_t token = 200 + i;
                    if (inf_session_eval(session, &token, 1, INF_LOGITS_LAST, logits, &err) != INF_OK) {
                        fprintf(stderr, "decode_ceiling: %s\n", err.msg);
                        return 1;
                    }
                }
            }
            t[kind][r] = (inf_monotonic_s() - t0) / (kind == KIND_DECODE || kind == KIND_ENGINE_PRODUCTS ? decode_tokens : 1);
        }
    }
    inf_measure_read_bandwidth(threads, (size_t)1 << 30, &bw_after, &err);

    /* paired: the decode's time over each read line's, round by round */
    double paired[N_KINDS] = {0};
    if (decode_tokens > 0) {
        double *ratio = calloc((size_t)rounds, sizeof(double));
        if (!ratio) return 1;
        for (int k = 0; k < KIND_DECODE; k++) {
            for (int r = 0; r < rounds; r++) ratio[r] = t[k][r] / t[KIND_DECODE][r];
            paired[k] = median(ratio, rounds);
        }
        free(ratio);
    }
    double gb[N_KINDS]; /* median() sorts t[k]: after the pairing above */
    double gb_best[N_KINDS];
    for (int k = 0; k < n_kinds; k++) {
        gb[k] = (double)total / median(t[k], rounds) / 1e9;
        gb_best[k] = (double)total / t[k][0] / 1e9; /* median() sorted t[k] */
    }
    const double bw = bw_before > bw_after ? bw_before : bw_after;
    printf("%s: %d products per token (%d layers x %d + head), %.1f MB, %d threads, %d rounds\n", path, n_products,
           (int)n_layer, PRODUCTS_PER_LAYER, (double)total / 1e6, threads, rounds);
    printf("read bandwidth (inferno bench's figure, best of before/after): %.1f GB/s (%.1f, %.1f)\n", bw, bw_before,
           bw_after);
    static const char *const line[N_KINDS] = {
        [KIND_WHOLE] = "one pass over all the bytes:  ",
        [KIND_WHOLE_NTA] = "  the same, NTA prefetch:     ",
        [KIND_PRODUCTS] = "one dispatch per product:     ",
        [KIND_STOLEN] = "  shares stolen as run_ranges:",
        [KIND_ENGINE_PRODUCTS] = "the engine's products alone:  ",
        [KIND_DECODE] = "decode, the engine:           ",
    };
    static const int print_order[N_KINDS] = {KIND_WHOLE,  KIND_WHOLE_NTA,       KIND_PRODUCTS,
                                             KIND_STOLEN, KIND_ENGINE_PRODUCTS, KIND_DECODE};
    for (int i = 0; i < n_kinds; i++) {
        const int k = print_order[i];
        printf("%s %6.1f GB/s  %5.1f%% of it  (%.1f us per token", line[k], gb[k], 100 * gb[k] / bw,
               (double)total / gb[k] / 1e3);
        printf("; best %.1f%%", 100 * gb_best[k] / bw);
        if (k == KIND_STOLEN) printf("; as the engine splits");
        if (k == KIND_ENGINE_PRODUCTS) printf("; back to back, nothing between");
        if (decode_tokens > 0 && k != KIND_DECODE) printf("; decode %.1f%% of it, paired", 100 * paired[k]);
        if (k == KIND_DECODE) printf("; %d tokens after %d, product bytes only", decode_tokens, DECODE_DEPTH);
        printf(")\n");
    }
    printf("checksum %llu\n", (unsigned long long)(j.sums[0] & 0xff));
    if (product_sizes && print_product_sizes(model, bw)) return 1;
    inf_session_free(session);
    inf_model_free(model);
    free(logits);
    inf_free_aligned(products_x);
    inf_free_aligned(products_scratch);
    inf_pool_free(pool);
    inf_free_aligned(buf);
    for (int k = 0; k < N_KINDS; k++) free(t[k]);
    free(bytes);
    return 0;
}

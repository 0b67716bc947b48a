/*
 * decode_ceiling.c — how close to the read bandwidth can a decode of this
 * model come at all? Reads the bytes of each weight product of one decoded
 * token, in the forward pass's order and sizes, with the engine's thread
 * pool and one dispatch per product, and does no arithmetic: the time
 * that costs is the floor of any decode that splits its products the way
 * the CPU backend does. Not a test.
 *
 *   make build/decode_ceiling && build/decode_ceiling -m MODEL.gguf [-t 2] [-r 15]
 *
 * Products of a Qwen3 layer, as the forward pass issues them (one dispatch
 * each, model/qwen3.c): q+k+v, o, gate+up, down; then the output head
 * (output.weight, or token_embd.weight when tied). Their bytes are the
 * GGUF tensors' (a weight packed at load has the same bytes in another
 * order). All products lie one after another in one buffer on huge pages,
 * as packed weights do (inf_alloc_huge).
 *
 * A round times, alternating so that a noisy machine slows all alike:
 *   products  every product as one inf_pool_run of t tasks, task i summing
 *             the i-th contiguous 1/t of its bytes (what run_ranges gives
 *             each thread before any stealing), a barrier at each end;
 *   stolen    the same, but split as run_ranges splits: each task claims
 *             half of what is left of its share at a time, then steals
 *             half of what is left of another's from the back, in grains
 *             of 16 KiB, so the threads end together even when one core
 *             reads faster than the other (on this VM it sometimes reads
 *             a third faster, and then `products` is no ceiling);
 *   one pass  the whole buffer as one dispatch of t contiguous parts.
 * All sum with the loop inf_measure_read_bandwidth uses (eight 64-bit
 * accumulators). Printed: medians over -r rounds, against the read
 * bandwidth `inferno bench` quotes (inf_measure_read_bandwidth, best of 8
 * passes over 1 GiB), measured once before and once after the rounds. A
 * decode's % bw cannot exceed the `stolen` line: that line already leaves
 * out every kernel's arithmetic, attention and the serial ops between
 * products.
 */
#include "core/common.h"
#include "core/pool.h"
#include "io/gguf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_ROUNDS = 101, PRODUCTS_PER_LAYER = 4, MAX_THREADS = 64, GRAIN_WORDS = 16384 / 8 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct read_job {
    const uint64_t *words; /* the product's bytes, as words */
    size_t n_words;
    int tasks;
    uint64_t sums[MAX_THREADS]; /* per task, kept so the loads stay */
    /* stolen: each task's share, next << 32 | end, in grains */
    _Alignas(64) _Atomic uint64_t shares[MAX_THREADS];
} read_job;

static void read_task(void *ctx, int task, int thread) {
    (void)thread;
    read_job *j = ctx;
    const size_t lines = j->n_words / 8;
    const size_t lo = lines * (size_t)task / (size_t)j->tasks * 8, hi = lines * (size_t)(task + 1) / (size_t)j->tasks * 8;
    j->sums[task] += inf_sum_words(j->words + lo, hi - lo);
}

/* Claims grains of a share as run_ranges does (cpu.c claim_grains): half
 * of what is left from the front (its owner), or from the back. */
static bool claim(_Atomic uint64_t *share, bool front, uint32_t *lo, uint32_t *hi) {
    uint64_t v = atomic_load_explicit(share, memory_order_relaxed);
    for (;;) {
        const uint32_t next = (uint32_t)(v >> 32), end = (uint32_t)v;
        if (next >= end) return false;
        const uint32_t left = end - next, take = front ? (left + 1) / 2 : (left / 2 ? left / 2 : 1);
        const uint64_t claimed = front ? (uint64_t)(next + take) << 32 | end : (uint64_t)next << 32 | (end - take);
        if (atomic_compare_exchange_weak_explicit(share, &v, claimed, memory_order_relaxed, memory_order_relaxed)) {
            *lo = front ? next : end - take;
            *hi = front ? next + take : end;
            return true;
        }
    }
}

static void stolen_task(void *ctx, int task, int thread) {
    (void)thread;
    read_job *j = ctx;
    for (int d = 0; d < j->tasks; d++) {
        uint32_t lo, hi;
        while (claim(&j->shares[(task + d) % j->tasks], d == 0, &lo, &hi)) {
            const size_t a = (size_t)lo * GRAIN_WORDS, b = (size_t)hi * GRAIN_WORDS;
            j->sums[task] += inf_sum_words(j->words + a, (b < j->n_words ? b : j->n_words) - a);
        }
    }
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

static void usage(FILE *out) {
    fprintf(out, "usage: decode_ceiling -m MODEL.gguf [-t THREADS] [-r ROUNDS]\n"
                 "Reads one decoded token's weight products with the engine's pool, no arithmetic:\n"
                 "the ceiling of decode GB/s for this model and thread count.\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int threads = 2, rounds = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 < argc && !strcmp(argv[i], "-m")) path = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "-t")) threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-r")) rounds = atoi(argv[++i]);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!path || threads < 1 || threads > MAX_THREADS || rounds < 1 || rounds > MAX_ROUNDS) {
        usage(stderr);
        return 2;
    }
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

    uint64_t *buf = inf_alloc_huge(total);
    inf_pool *pool = inf_pool_new(threads);
    double *t_products = calloc((size_t)rounds, sizeof(double)), *t_whole = calloc((size_t)rounds, sizeof(double));
    double *t_stolen = calloc((size_t)rounds, sizeof(double));
    if (!buf || !pool || !t_products || !t_whole || !t_stolen) {
        fprintf(stderr, "decode_ceiling: cannot allocate %zu bytes\n", total);
        return 1;
    }
    for (size_t i = 0; i < total / 8; i++) buf[i] = i; /* the pages exist before timing */

    double bw_before = 0, bw_after = 0;
    inf_measure_read_bandwidth(threads, (size_t)1 << 30, &bw_before, &err);
    static read_job j; /* static: aligned, and no stack of 64 shares */
    j.tasks = threads;
    for (int r = 0; r < rounds; r++) {
        for (int order = 0; order < 3; order++) {
            const int kind = (order + r) % 3; /* 0 products, 1 stolen, 2 one pass */
            const double t0 = now_s();
            if (kind < 2) {
                size_t off = 0;
                for (int i = 0; i < n_products; i++) {
                    j.words = buf + off / 8;
                    j.n_words = bytes[i] / 8;
                    if (kind == 0) {
                        inf_pool_run(pool, threads, read_task, &j);
                    } else {
                        const uint64_t grains = (j.n_words + GRAIN_WORDS - 1) / GRAIN_WORDS;
                        for (int t = 0; t < threads; t++)
                            atomic_store_explicit(&j.shares[t],
                                                  grains * (uint64_t)t / (uint64_t)threads << 32 |
                                                      grains * (uint64_t)(t + 1) / (uint64_t)threads,
                                                  memory_order_relaxed);
                        inf_pool_run(pool, threads, stolen_task, &j);
                    }
                    off += bytes[i];
                }
                (kind == 0 ? t_products : t_stolen)[r] = now_s() - t0;
            } else {
                j.words = buf;
                j.n_words = total / 8;
                inf_pool_run(pool, threads, read_task, &j);
                t_whole[r] = now_s() - t0;
            }
        }
    }
    inf_measure_read_bandwidth(threads, (size_t)1 << 30, &bw_after, &err);

    const double gb_products = (double)total / median(t_products, rounds) / 1e9;
    const double gb_stolen = (double)total / median(t_stolen, rounds) / 1e9;
    const double gb_whole = (double)total / median(t_whole, rounds) / 1e9;
    const double bw = bw_before > bw_after ? bw_before : bw_after;
    printf("%s: %d products per token (%d layers x %d + head), %.1f MB, %d threads, %d rounds\n", path, n_products,
           (int)n_layer, PRODUCTS_PER_LAYER, (double)total / 1e6, threads, rounds);
    printf("read bandwidth (inferno bench's figure, best of before/after): %.1f GB/s (%.1f, %.1f)\n", bw, bw_before,
           bw_after);
    printf("one pass over all the bytes:   %6.1f GB/s  %5.1f%% of it\n", gb_whole, 100 * gb_whole / bw);
    printf("one dispatch per product:      %6.1f GB/s  %5.1f%% of it  (%.1f us per token)\n", gb_products,
           100 * gb_products / bw, (double)total / gb_products / 1e3);
    printf("  shares stolen as run_ranges: %6.1f GB/s  %5.1f%% of it  (%.1f us per token; the ceiling of decode)\n",
           gb_stolen, 100 * gb_stolen / bw, (double)total / gb_stolen / 1e3);
    printf("checksum %llu\n", (unsigned long long)(j.sums[0] & 0xff));
    inf_pool_free(pool);
    inf_free_aligned(buf);
    free(t_products);
    free(t_whole);
    free(t_stolen);
    free(bytes);
    return 0;
}

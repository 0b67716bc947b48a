/*
 * attn_bench.c — decode attention through the CPU backend (cpu.h) on a
 * contiguous KV cache and on paged ones, at depth: does following a block
 * table cost anything? Not a test; the tests hold the paged results to the
 * contiguous ones bit for bit (tests/test_kernels.c), and this checks it
 * once more on its own caches.
 *
 *   make build/attn_bench && build/attn_bench [-t 2] [-d 2044] [-l 28] [-r 31] [--isa NAME]
 *
 * Geometry of Qwen3-0.6B: 16 query heads, 8 KV heads, head_dim 128, f16 and
 * q8_0 caches. One decode token at position d attends to d + 1 cached
 * positions in each of -l layers, each layer its own K and V caches (so the
 * token streams them from memory as a forward pass does, not from L2).
 * Layouts (per layer, each of K and V):
 *   contiguous  the session's: one block, [n_head_kv][n_pos][head_dim]
 *   paged B     the engine's pool: [block][n_head_kv][B][head_dim], B = 16,
 *               32, 64, the sequence's blocks in shuffled order
 * A sample is one layer's attention on one layout. A round walks the
 * layers, and at each layer the layouts take turns (a different one first
 * each time), so a noisy machine slows them alike, and a sample's caches
 * were last read a round ago (all layers of all layouts in between): they
 * come from DRAM or a cold L3, as in a forward pass whose weights pass
 * through the caches between layers. Printed per layout: median and min
 * microseconds per layer over -r rounds x -l layers, the GB/s of K and V
 * rows read at the median, and the median against the contiguous layout's.
 */
#include "backend/cpu.h"
#include "core/common.h"
#include "core/dtype.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N_HEAD = 16, N_HEAD_KV = 8, HEAD_DIM = 128, KV_DIM = N_HEAD_KV * HEAD_DIM, N_LAYOUTS = 4 };
static const int block_sizes[N_LAYOUTS] = {0 /* contiguous */, 16, 32, 64};

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static float rng_uniform(float lo, float hi) { return lo + (hi - lo) * (float)((double)(rng_next() >> 11) * 0x1p-53); }

static void *xalloc(size_t bytes) {
    void *p = inf_alloc_aligned(bytes);
    if (!p) {
        fprintf(stderr, "attn_bench: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One layout: every layer's K and V views (data owned here, elems each). */
typedef struct layout {
    int block_size;   /* 0: contiguous */
    int32_t *table;   /* [n_blocks] shuffled block ids (paged) */
    inf_kv_view *k, *v; /* [n_layer] */
    double *us;       /* [reps * n_layer] microseconds of each sample */
    size_t elems;
} layout;

static void layout_init(layout *lo, int block_size, inf_kv_type type, int n_pos, int n_layer, int reps) {
    *lo = (layout){.block_size = block_size};
    lo->k = calloc((size_t)n_layer, sizeof *lo->k);
    lo->v = calloc((size_t)n_layer, sizeof *lo->v);
    lo->us = calloc((size_t)reps * (size_t)n_layer, sizeof *lo->us);
    inf_kv_view view = {.type = type, .pos_stride = HEAD_DIM, .head_stride = (size_t)n_pos * HEAD_DIM,
                        .block_size = INF_KV_CONTIGUOUS, .blocks = inf_kv_single_block};
    size_t elems = (size_t)n_pos * KV_DIM;
    if (block_size) {
        const int n_blocks = (n_pos + block_size - 1) / block_size;
        lo->table = malloc((size_t)n_blocks * sizeof *lo->table);
        for (int i = 0; i < n_blocks; i++) lo->table[i] = i;
        for (int i = n_blocks - 1; i > 0; i--) { /* Fisher-Yates */
            const int j = (int)(rng_next() % (uint64_t)(i + 1));
            const int32_t t = lo->table[i];
            lo->table[i] = lo->table[j], lo->table[j] = t;
        }
        view.head_stride = (size_t)block_size * HEAD_DIM;
        view.block_stride = (size_t)N_HEAD_KV * block_size * HEAD_DIM;
        view.block_size = block_size;
        view.blocks = lo->table;
        elems = (size_t)n_blocks * view.block_stride;
    }
    if (!lo->k || !lo->v || !lo->us || (block_size && !lo->table)) {
        fprintf(stderr, "attn_bench: out of memory\n");
        exit(1);
    }
    for (int l = 0; l < n_layer; l++) lo->k[l] = lo->v[l] = view;
    lo->elems = elems;
}

static void layout_free(layout *lo, int n_layer) {
    for (int l = 0; l < n_layer; l++) inf_free_aligned(lo->k[l].data), inf_free_aligned(lo->v[l].data);
    free(lo->k), free(lo->v), free(lo->us), free(lo->table);
}

/* Layer l's attention on one layout; microseconds. */
static double sample(const inf_ops *ops, const inf_attn_shape *sh, const float *q, const layout *lo, int l,
                     float *out) {
    const double t0 = now_us();
    ops->attn_decode(ops, sh, q, &lo->k[l], &lo->v[l], out);
    return now_us() - t0;
}

static void bench_type(const inf_ops *ops, inf_kv_type type, int depth, int n_layer, int reps) {
    const int n_pos = depth + 1;
    float *k = xalloc((size_t)n_pos * KV_DIM * sizeof(float)), *v = xalloc((size_t)n_pos * KV_DIM * sizeof(float));
    float *q = xalloc(N_HEAD * HEAD_DIM * sizeof(float));
    for (size_t i = 0; i < (size_t)n_pos * KV_DIM; i++) k[i] = rng_uniform(-1, 1), v[i] = rng_uniform(-1, 1);
    for (int i = 0; i < N_HEAD * HEAD_DIM; i++) q[i] = rng_uniform(-4, 4);
    layout los[N_LAYOUTS];
    for (int i = 0; i < N_LAYOUTS; i++) layout_init(&los[i], block_sizes[i], type, n_pos, n_layer, reps);
    /* the caches allocated layer by layer, the layouts taking turns, so
     * that none gets all the best (or worst) placed memory */
    for (int l = 0; l < n_layer; l++)
        for (int i = 0; i < N_LAYOUTS; i++) {
            los[i].k[l].data = xalloc(inf_kv_type_bytes(type, los[i].elems));
            los[i].v[l].data = xalloc(inf_kv_type_bytes(type, los[i].elems));
            ops->kv_store(ops, &los[i].k[l], &los[i].v[l], k, v, n_pos, 0, N_HEAD_KV, HEAD_DIM);
        }
    const inf_attn_shape sh = {.n_tok = 1, .pos0 = depth, .n_head = N_HEAD, .n_head_kv = N_HEAD_KV,
                               .head_dim = HEAD_DIM, .scale = 1.0f / sqrtf((float)HEAD_DIM)};
    float out[N_LAYOUTS][N_HEAD * HEAD_DIM];
    bool identical = true;
    for (int l = 0; l < n_layer; l++) /* warm-up */
        for (int i = 0; i < N_LAYOUTS; i++) {
            sample(ops, &sh, q, &los[i], l, out[i]);
            identical &= memcmp(out[i], out[0], sizeof out[0]) == 0;
        }
    const int n_samples = reps * n_layer;
    for (int r = 0; r < reps; r++)
        for (int l = 0; l < n_layer; l++)
            for (int j = 0; j < N_LAYOUTS; j++) {
                const int i = (j + r + l) % N_LAYOUTS; /* a different layout leads each time */
                los[i].us[r * n_layer + l] = sample(ops, &sh, q, &los[i], l, out[i]);
            }
    const double kv_bytes = 2.0 * (double)inf_kv_type_bytes(type, (size_t)n_pos * KV_DIM); /* K and V rows read */
    double base = 0;
    for (int i = 0; i < N_LAYOUTS; i++) {
        qsort(los[i].us, (size_t)n_samples, sizeof(double), cmp_double);
        const double med = los[i].us[n_samples / 2];
        if (i == 0) base = med;
        char name[32];
        if (los[i].block_size) snprintf(name, sizeof name, "paged B=%d", los[i].block_size);
        else snprintf(name, sizeof name, "contiguous");
        printf("%-5s %-12s %9.1f %9.1f %8.1f %+8.1f%%\n", inf_kv_type_name(type), name, med, los[i].us[0],
               kv_bytes / med * 1e-3, (med / base - 1) * 100);
    }
    printf("%-5s outputs of all layouts bit-identical: %s\n", inf_kv_type_name(type), identical ? "yes" : "NO");
    for (int i = 0; i < N_LAYOUTS; i++) layout_free(&los[i], n_layer);
    inf_free_aligned(k), inf_free_aligned(v), inf_free_aligned(q);
}

static void usage(void) {
    fprintf(stderr, "usage: attn_bench [-t THREADS] [-d DEPTH] [-l LAYERS] [-r SAMPLES] [--isa NAME]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int threads = 2, depth = 2044, n_layer = 28, reps = 31;
    inf_isa isa = inf_isa_best();
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        const char *arg = argv[i], *val = argv[++i];
        if (strcmp(arg, "-t") == 0) threads = atoi(val);
        else if (strcmp(arg, "-d") == 0) depth = atoi(val);
        else if (strcmp(arg, "-l") == 0) n_layer = atoi(val);
        else if (strcmp(arg, "-r") == 0) reps = atoi(val);
        else if (strcmp(arg, "--isa") == 0) {
            if (!inf_isa_from_name(val, &isa)) usage();
        } else usage();
    }
    if (threads < 1 || depth < 0 || n_layer < 1 || reps < 1) usage();
    inf_ops *ops = NULL;
    inf_error err = {0};
    if (inf_ops_cpu_new(isa, threads, &ops, &err) != INF_OK) {
        fprintf(stderr, "attn_bench: %s\n", err.msg);
        return 1;
    }
    printf("decode attention, isa %s, %d threads, depth %d (%d keys), %d/%d heads x %d, %d layers, "
           "%d alternating rounds\n",
           ops->name, threads, depth, depth + 1, N_HEAD, N_HEAD_KV, HEAD_DIM, n_layer, reps);
    printf("%-5s %-12s %9s %9s %8s %9s\n", "kv", "layout", "us/layer", "min", "GB/s", "vs contig");
    bench_type(ops, INF_KV_F16, depth, n_layer, reps);
    bench_type(ops, INF_KV_Q8_0, depth, n_layer, reps);
    inf_ops_cpu_free(ops);
    return 0;
}

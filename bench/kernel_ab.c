/*
 * kernel_ab.c — two builds of the AVX-512 decode kernels in one process:
 * this tree's, and another revision's matmul_avx512.o and quant_avx512.o
 * with their global symbols renamed old_* (scripts/kernel-ab.sh builds
 * them and this). On the Zen 5 VM the read bandwidth swings by 2x within
 * minutes, so separate runs of two binaries cannot resolve a few percent;
 * here both builds run the same decode products in alternating passes, and
 * a spell slows both alike. Not a test.
 *
 *   sh scripts/kernel-ab.sh REV MODEL.gguf [PASSES] [HINT]
 *
 * A pass is one token's products of the model's packed layer weights (q,
 * k, v, o, gate, up, down of every layer, each on its own; not the output
 * head), each split by 16-row groups into two halves, one per thread, with
 * a spin barrier after each product. Passes alternate between the builds;
 * the first two are not counted. Each build prepares its own activation
 * row of each weight (gemm_prepare, as cpu.c's prepare_act). The weights
 * are packed at load by this tree, so the other revision must pack them the
 * same way (x86_kernels.h). HINT (0 L2, 1 NTA) fixes the prefetch hint for
 * both; by default the CPU's initial one. Prints each build's GB/s over
 * the weights' bytes and the time ratio old/new (above 1: this tree is
 * faster), and whether the two builds' outputs differ in any bit.
 */
#include "backend/x86/x86_kernels.h"
#include "core/common.h"
#include "core/quant.h"
#include "model/model.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void old_inf_avx512_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                         void *pack);
void old_inf_avx512_gemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);

enum { THREADS = 2, MAX_WEIGHTS = 7 * 256, ACT_BYTES = 1 << 16 };

typedef struct ab_run {
    const inf_weight *w[MAX_WEIGHTS];
    char *act[2][MAX_WEIGHTS]; /* [build][weight] */
    int n_weights;
    int passes;
    float *y[THREADS];
    _Atomic int arrived;
    _Atomic int phase;
    double seconds[2]; /* [build], thread 0's clock */
} ab_run;

/* Both threads: returns when both have called it `target` times. */
static void barrier(ab_run *r, int target) {
    if (atomic_fetch_add(&r->arrived, 1) + 1 == THREADS * target) atomic_store(&r->phase, target);
    while (atomic_load(&r->phase) < target) __builtin_ia32_pause();
}

typedef struct ab_thread {
    ab_run *r;
    int me;
} ab_thread;

static void *run_passes(void *arg) {
    const ab_thread *t = arg;
    ab_run *r = t->r;
    int met = 0;
    for (int p = 0; p < r->passes; p++) {
        barrier(r, ++met);
        const int build = p % 2; /* 0 this tree, 1 the other revision */
        const double t0 = inf_monotonic_s();
        for (int i = 0; i < r->n_weights; i++) {
            const inf_weight *w = r->w[i];
            const int64_t half = (w->rows + 15) / 16 / 2 * 16;
            const int64_t r0 = t->me ? half : 0, r1 = t->me ? w->rows : half;
            const inf_act a = {.data = r->act[build][i], .n = 1};
            if (build) old_inf_avx512_gemm(w, &a, r0, r1, r->y[t->me], (size_t)w->rows, NULL);
            else inf_avx512_gemm(w, &a, r0, r1, r->y[t->me], (size_t)w->rows, NULL);
            barrier(r, ++met);
        }
        if (t->me == 0 && p >= 2) r->seconds[build] += inf_monotonic_s() - t0;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: kernel_ab MODEL.gguf [PASSES] [HINT]  (see scripts/kernel-ab.sh)\n");
        return 2;
    }
    static ab_run r;
    r.passes = argc > 2 ? atoi(argv[2]) : 100;
    r.passes = r.passes < 4 ? 4 : r.passes / 2 * 2; /* as many of each build */
    if (!__builtin_cpu_supports("avx512vnni")) {
        fprintf(stderr, "kernel_ab: this CPU has no AVX-512 VNNI\n");
        return 1;
    }
    inf_error err = {0};
    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = 1;
    opt.use_mmap = false;
    inf_model *m = NULL;
    if (inf_model_load(argv[1], &opt, &m, &err) != INF_OK) {
        fprintf(stderr, "kernel_ab: %s\n", err.msg);
        return 1;
    }
    if (argc > 3) inf_kernels_avx512()->stream_hint_set(atoi(argv[3]));

    float *x = inf_alloc_aligned(ACT_BYTES);
    for (size_t i = 0; i < ACT_BYTES / sizeof(float); i++) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    double bytes = 0;
    for (int l = 0; l < m->cfg.n_layer && r.n_weights + 7 <= MAX_WEIGHTS; l++) {
        const qwen3_layer *L = &m->layers[l];
        const inf_weight *lw[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        for (int k = 0; k < 7; k++) {
            const inf_weight *w = lw[k];
            if (w->packed_format != INF_X86_PACKED_GROUPS || (size_t)w->cols * sizeof(float) > ACT_BYTES) continue;
            /* as cpu.c's prepare_act */
            const bool as_q8_0 = inf_dtype_block_elems(w->type) == INF_QK && inf_quant_act_type(w->type) == INF_ACT_Q8_0;
            const inf_dtype act_type = as_q8_0 || w->type == INF_DTYPE_Q8_0 ? INF_DTYPE_Q8_0 : w->type;
            for (int build = 0; build < 2; build++) {
                r.act[build][r.n_weights] = inf_alloc_aligned(ACT_BYTES);
                if (build) old_inf_avx512_gemm_prepare(act_type, x, w->cols, 1, 0, 1, r.act[build][r.n_weights]);
                else inf_avx512_gemm_prepare(act_type, x, w->cols, 1, 0, 1, r.act[build][r.n_weights]);
            }
            r.w[r.n_weights++] = w;
            bytes += (double)w->rows * (double)w->row_bytes;
        }
    }
    if (r.n_weights == 0) {
        fprintf(stderr, "kernel_ab: %s has no layer weights packed for AVX-512\n", argv[1]);
        return 1;
    }
    for (int t = 0; t < THREADS; t++) r.y[t] = inf_alloc_aligned(sizeof(float) << 20);

    pthread_t other;
    ab_thread args[THREADS] = {{&r, 0}, {&r, 1}};
    if (pthread_create(&other, NULL, run_passes, &args[1]) != 0) {
        fprintf(stderr, "kernel_ab: cannot start a thread\n");
        return 1;
    }
    run_passes(&args[0]);
    pthread_join(other, NULL);
    int differ = 0; /* weights whose rows the builds compute differently */
    for (int i = 0; i < r.n_weights; i++) {
        const inf_weight *w = r.w[i];
        const inf_act a[2] = {{.data = r.act[0][i], .n = 1}, {.data = r.act[1][i], .n = 1}};
        inf_avx512_gemm(w, &a[0], 0, w->rows, r.y[0], (size_t)w->rows, NULL);
        old_inf_avx512_gemm(w, &a[1], 0, w->rows, r.y[1], (size_t)w->rows, NULL);
        differ += memcmp(r.y[0], r.y[1], (size_t)w->rows * sizeof(float)) != 0;
    }
    const double each = (double)((r.passes - 2) / 2);
    printf("%s: %d weights, %.1f MB a pass, %d passes each: this tree %.1f GB/s, other %.1f GB/s, old/new time %.3f\n",
           argv[1], r.n_weights, bytes / 1e6, (int)each, bytes * each / r.seconds[0] / 1e9,
           bytes * each / r.seconds[1] / 1e9, r.seconds[1] / r.seconds[0]);
    if (differ) printf("outputs differ in %d of %d weights\n", differ, r.n_weights);
    return 0;
}

/*
 * bandwidth.c — measures the machine's sequential read bandwidth, the
 * speed of light of memory-bound decode, so that a benchmark can say what
 * share of it an engine reaches.
 *
 * Method: one anonymous buffer of `bytes`, advised to be backed by huge
 * pages as the engine's packed weights are (inf_alloc_huge: on a KVM
 * guest each 4 KiB page's TLB miss walks two page tables, and 4 KiB pages
 * read at 24-25 GB/s where huge pages read at 33-36), cut into grains of
 * 16 KiB and split into one contiguous share per thread. Each thread first
 * writes its own share (so the pages exist before timing, placed by the
 * thread that reads them). In a pass, started together by a barrier, the
 * threads sum the buffer (loops below) as the engine's decode products
 * split their rows (core/shares.h): each claims half of what is left of
 * its own share from the front, then halves of the others' from the back,
 * so that all end together; a pass lasts from the start barrier until the
 * last thread is done. Fixed equal slices measured the slower core
 * twice: on the Zen 5 VM one core sometimes reads a third slower than the
 * other (2026-12-07, 2 threads, 1 GiB: 25.7 against 17.0 ms for the two
 * halves), and then the slices read 41-42 GB/s where the shares read
 * 51-56, and the decode, which splits as the shares do, read 110-120% of
 * the figure. The best of several passes is the figure, in GB/s (1e9
 * bytes per second): the best, not the median, because the question is
 * what the memory system can deliver, and any disturbance only slows a
 * pass down.
 *
 * Two summing loops take turns, pass by pass, and the best pass of either
 * counts: plain C with eight independent accumulators (the compiler may
 * vectorize it or not), and where the CPU has AVX-512 one 64-byte load and
 * add a step in one chain. Both issue loads far faster than DRAM delivers
 * them, so they are read-bound once the buffer is much larger than the
 * caches (use ~1 GiB), yet the hardware does not serve every loop alike:
 * on the Zen 5 VM (2 threads, 1 GiB, best of 8 passes, loops alternating
 * in one process, 2026-12-07) the AVX-512 loop read 4-8% faster than the C
 * loop as GCC 12 builds it for x86-64 (16-byte loads): 72-75 against 68-70
 * GB/s, 63-68 against 59-63 in a slower spell; the same loop with two
 * chains, or four 64-byte loads a step, read 3-20% slower than the C loop.
 * The engine's decode kernels had read their weights faster than the C
 * loop alone did (inferno bench's % of bandwidth above 100), so the figure
 * was below what the memory delivers.
 */
#include "core/common.h"
#include "core/shares.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define BW_HAVE_AVX512_LOOP 1
#endif

enum {
    BW_PASSES = 16,         /* timed passes, the loops taking turns; the best one counts */
    BW_MAX_THREADS = 1024,
    BW_MIN_BYTES = 1 << 20, /* below this the figure is a cache speed */
    BW_GRAIN_WORDS = 2048,  /* 16 KiB of uint64 words: a claim at least (as cpu.c's products) */
};

enum { GATE_WAIT, GATE_GO, GATE_ABORT };

typedef struct bw_shared {
    uint64_t *words;           /* [n_words], the buffer */
    size_t n_words;
    size_t grain_words;        /* words per grain: BW_GRAIN_WORDS, or more for a huge buffer */
    uint32_t n_grains;
    inf_share *shares;         /* [n_threads] what is left of each thread's share, in grains */
    int n_threads;
    pthread_barrier_t barrier; /* n_threads participants */
    pthread_mutex_t gate_lock; /* the start gate: workers wait until */
    pthread_cond_t gate_open;  /* every thread exists (or one failed) */
    int gate;                  /* GATE_WAIT, GATE_GO or GATE_ABORT */
    int n_loops;               /* summing loops taking turns: 1 or 2 */
    double pass_s[BW_PASSES];  /* written by thread 0 only */
    uint64_t sink;             /* keeps the sums alive (atomic adds) */
} bw_shared;

typedef struct bw_worker {
    bw_shared *shared;
    int index;
} bw_worker;

uint64_t inf_sum_words(const uint64_t *p, size_t n) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 += p[i + 0];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
        s4 += p[i + 4];
        s5 += p[i + 5];
        s6 += p[i + 6];
        s7 += p[i + 7];
    }
    for (; i < n; i++) s0 += p[i];
    return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}

#ifdef BW_HAVE_AVX512_LOOP
__attribute__((target("avx512f"))) uint64_t inf_sum_words_avx512(const uint64_t *p, size_t n) {
    __m512i sum = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) sum = _mm512_add_epi64(sum, _mm512_loadu_si512(p + i));
    uint64_t lanes[8], s = 0; /* not _mm512_reduce_add_epi64: it adds signed (UBSan: overflow) */
    _mm512_storeu_si512(lanes, sum);
    for (int lane = 0; lane < 8; lane++) s += lanes[lane];
    for (; i < n; i++) s += p[i];
    return s;
}
#endif

/* Summing loop `loop` (0: the C loop; 1: the AVX-512 one) over p[0 .. n). */
static uint64_t sum_with(int loop, const uint64_t *p, size_t n) {
#ifdef BW_HAVE_AVX512_LOOP
    if (loop == 1) return inf_sum_words_avx512(p, n);
#else
    (void)loop;
#endif
    return inf_sum_words(p, n);
}

/* How many summing loops this CPU runs: the C loop, and the AVX-512 one
 * where the CPU has AVX-512F. */
static int loops_here(void) {
#ifdef BW_HAVE_AVX512_LOOP
    if (__builtin_cpu_supports("avx512f")) return 2;
#endif
    return 1;
}

/* Thread `index`'s share of the grains, [*first, *end). */
static void share_of(const bw_shared *sh, int index, uint32_t *first, uint32_t *end) {
    *first = (uint32_t)((uint64_t)sh->n_grains * (uint64_t)index / (uint64_t)sh->n_threads);
    *end = (uint32_t)((uint64_t)sh->n_grains * (uint64_t)(index + 1) / (uint64_t)sh->n_threads);
}

/* Words of grains [lo, hi): from *begin, *count of them (the last grain may be short). */
static void grain_span(const bw_shared *sh, uint32_t lo, uint32_t hi, size_t *begin, size_t *count) {
    *begin = (size_t)lo * sh->grain_words;
    const size_t end = (size_t)hi * sh->grain_words;
    *count = (end < sh->n_words ? end : sh->n_words) - *begin;
}

/* One thread's pass: the loop it sums with and the sum so far. */
typedef struct bw_pass {
    bw_shared *shared;
    int loop;
    uint64_t total;
} bw_pass;

/* Sums grains [lo, hi) of the buffer (inf_shares_work's piece). */
static void read_grains(void *ctx, uint32_t lo, uint32_t hi, int thread) {
    (void)thread;
    bw_pass *p = ctx;
    size_t begin, count;
    grain_span(p->shared, lo, hi, &begin, &count);
    p->total += sum_with(p->loop, p->shared->words + begin, count);
}

static void set_gate(bw_shared *sh, int state) {
    pthread_mutex_lock(&sh->gate_lock);
    sh->gate = state;
    pthread_cond_broadcast(&sh->gate_open);
    pthread_mutex_unlock(&sh->gate_lock);
}

static void *bw_thread(void *arg) {
    bw_worker *w = arg;
    bw_shared *sh = w->shared;
    pthread_mutex_lock(&sh->gate_lock);
    while (sh->gate == GATE_WAIT) pthread_cond_wait(&sh->gate_open, &sh->gate_lock);
    int gate = sh->gate;
    pthread_mutex_unlock(&sh->gate_lock);
    if (gate == GATE_ABORT) return NULL;
    uint32_t first, end;
    share_of(sh, w->index, &first, &end);
    size_t begin, count;
    grain_span(sh, first, end, &begin, &count);
    for (size_t i = begin; i < begin + count; i++) sh->words[i] = i; /* first touch */
    uint64_t total = 0;
    for (int pass = 0; pass < BW_PASSES; pass++) {
        /* every thread finished the pass before (the barrier below) */
        inf_share_set(&sh->shares[w->index], first, end);
        pthread_barrier_wait(&sh->barrier);
        double t0 = inf_monotonic_s();
        bw_pass p = {.shared = sh, .loop = pass % sh->n_loops};
        inf_shares_work(sh->shares, sh->n_threads, w->index, read_grains, &p, w->index);
        total += p.total;
        pthread_barrier_wait(&sh->barrier);
        if (w->index == 0) sh->pass_s[pass] = inf_monotonic_s() - t0;
    }
    __atomic_fetch_add(&sh->sink, total, __ATOMIC_RELAXED);
    return NULL;
}

inf_status inf_measure_read_bandwidth(int n_threads, size_t bytes, double *gb_s, inf_error *err) {
    *gb_s = 0;
    if (n_threads < 1 || n_threads > BW_MAX_THREADS)
        return inf_errorf(err, INF_ERR_INVALID, "bandwidth: thread count %d is outside 1..%d",
                          n_threads, BW_MAX_THREADS);
    if (bytes < BW_MIN_BYTES)
        return inf_errorf(err, INF_ERR_INVALID, "bandwidth: buffer of %zu bytes is below %d",
                          bytes, BW_MIN_BYTES);
    bw_shared sh = {.n_words = bytes / sizeof(uint64_t), .n_threads = n_threads, .n_loops = loops_here(),
                    .grain_words = BW_GRAIN_WORDS};
    bytes = sh.n_words * sizeof(uint64_t);
    while ((sh.n_words + sh.grain_words - 1) / sh.grain_words > UINT32_MAX) sh.grain_words *= 2;
    sh.n_grains = (uint32_t)((sh.n_words + sh.grain_words - 1) / sh.grain_words);
    void *buf = inf_alloc_huge(bytes);
    if (!buf) return inf_errorf(err, INF_ERR_NOMEM, "bandwidth: cannot allocate %zu bytes", bytes);
    sh.words = buf;
    bw_worker *workers = calloc((size_t)n_threads, sizeof *workers);
    pthread_t *threads = calloc((size_t)n_threads, sizeof *threads);
    sh.shares = inf_alloc_aligned((size_t)n_threads * sizeof *sh.shares);
    inf_status st = INF_OK;
    if (!workers || !threads || !sh.shares) {
        st = inf_errorf(err, INF_ERR_NOMEM, "bandwidth: out of memory for %d threads", n_threads);
        goto done;
    }
    if (pthread_barrier_init(&sh.barrier, NULL, (unsigned)n_threads)) {
        st = inf_errorf(err, INF_ERR_NOMEM, "bandwidth: cannot create a barrier");
        goto done;
    }
    pthread_mutex_init(&sh.gate_lock, NULL);
    pthread_cond_init(&sh.gate_open, NULL);
    /* Thread 0 is the caller; threads 1..n-1 are started here and wait at
     * the gate, so that a thread that cannot start leaves no one blocked
     * in a barrier that would never open. */
    int started = 1;
    for (; started < n_threads; started++) {
        workers[started] = (bw_worker){&sh, started};
        if (pthread_create(&threads[started], NULL, bw_thread, &workers[started])) break;
    }
    set_gate(&sh, started == n_threads ? GATE_GO : GATE_ABORT);
    if (started == n_threads) {
        workers[0] = (bw_worker){&sh, 0};
        bw_thread(&workers[0]);
    }
    for (int i = 1; i < started; i++) pthread_join(threads[i], NULL);
    pthread_cond_destroy(&sh.gate_open);
    pthread_mutex_destroy(&sh.gate_lock);
    pthread_barrier_destroy(&sh.barrier);
    if (started < n_threads) {
        st = inf_errorf(err, INF_ERR_NOMEM, "bandwidth: cannot start thread %d of %d", started + 1,
                        n_threads);
        goto done;
    }
    double best_s = sh.pass_s[0];
    for (int pass = 1; pass < BW_PASSES; pass++)
        if (sh.pass_s[pass] < best_s) best_s = sh.pass_s[pass];
    *gb_s = best_s > 0 ? (double)bytes / best_s * 1e-9 : 0;
done:
    inf_free_aligned(sh.shares);
    free(threads);
    free(workers);
    inf_free_aligned(buf);
    return st;
}

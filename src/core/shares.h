/*
 * shares.h — a range of work split into one share per thread, each
 * claimed in halves from the front by its owner and from the back by a
 * thread whose own share is gone, so that the threads end together even
 * when one core runs slower than another.
 *
 * Users: the CPU backend's decode products (cpu.c run_ranges), the read
 * bandwidth probe (bandwidth.c), which must split its reads as the
 * products do or it measures the slower core twice, and
 * bench/decode_ceiling.c.
 *
 * Thread-safety: a share is one atomic word, claimed lock-free by any
 * number of threads; setting it must happen before the threads that claim
 * from it start (a barrier or the pool's job publication orders it).
 */
#ifndef INFERNO_CORE_SHARES_H
#define INFERNO_CORE_SHARES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Units [next, end) left of one share, as next << 32 | end; a cache line
 * each, so that claims on different shares do not contend. */
typedef struct inf_share {
    _Alignas(64) _Atomic uint64_t range;
} inf_share;

static inline void inf_share_set(inf_share *s, uint32_t first, uint32_t end) {
    atomic_store_explicit(&s->range, (uint64_t)first << 32 | end, memory_order_relaxed);
}

/* Claims [*lo, *hi) from s: half of what is left (rounded up) from the
 * front, or from the back (rounded down, at least one); false when
 * nothing is left. Each unit is claimed exactly once. */
static inline bool inf_share_claim(inf_share *s, bool front, uint32_t *lo, uint32_t *hi) {
    uint64_t v = atomic_load_explicit(&s->range, memory_order_relaxed);
    for (;;) {
        const uint32_t next = (uint32_t)(v >> 32), end = (uint32_t)v;
        if (next >= end) return false;
        const uint32_t left = end - next;
        const uint32_t take = front ? (left + 1) / 2 : (left / 2 ? left / 2 : 1);
        const uint64_t claimed = front ? (uint64_t)(next + take) << 32 | end : (uint64_t)next << 32 | (end - take);
        if (atomic_compare_exchange_weak_explicit(&s->range, &v, claimed, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *lo = front ? next : end - take;
            *hi = front ? next + take : end;
            return true;
        }
    }
}

/* What a claimed piece [lo, hi) is done with, by `thread`. */
typedef void (*inf_share_fn)(void *ctx, uint32_t lo, uint32_t hi, int thread);

/* Works shares[own] from the front, then each other of the n shares from
 * the back, in turn after own, until nothing is left: what every thread
 * taking part runs. */
static inline void inf_shares_work(inf_share *shares, int n, int own, inf_share_fn fn, void *ctx, int thread) {
    for (int d = 0; d < n; d++) {
        uint32_t lo, hi;
        while (inf_share_claim(&shares[(own + d) % n], d == 0, &lo, &hi)) fn(ctx, lo, hi, thread);
    }
}

#endif

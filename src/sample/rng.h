/*
 * rng.h — the sampler's pseudo-random stream: xoshiro256** (Blackman and
 * Vigna), its state filled from a 64-bit seed with splitmix64. Plain integer
 * arithmetic, so a seed gives the same stream on every machine. Internal.
 */
#ifndef INF_SAMPLE_RNG_H
#define INF_SAMPLE_RNG_H

#include <stdint.h>

typedef struct inf_rng {
    uint64_t s[4];
} inf_rng;

static inline uint64_t inf_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void inf_rng_seed(inf_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = inf_splitmix64(&seed);
}

static inline uint64_t inf_rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t inf_rng_next(inf_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = inf_rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = inf_rng_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double inf_rng_uniform(inf_rng *r) {
    return (double)(inf_rng_next(r) >> 11) * 0x1.0p-53;
}

#endif /* INF_SAMPLE_RNG_H */

/*
 * sha256.h — SHA-256 (FIPS 180-4), incremental: what `inferno pull` checks
 * a downloaded LFS blob against (the hub names those blobs by their
 * sha256). Our own ~100 lines rather than libcrypto: the CLI then links one
 * library for the network (libcurl) and nothing for hashing, and the
 * hashing runs while the bytes arrive, so its speed (~0.3-0.5 GB/s scalar)
 * is hidden behind the download. tests/test_hub.c checks NIST's vectors.
 */
#ifndef INF_HUB_SHA256_H
#define INF_HUB_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct hub_sha256 {
    uint32_t state[8];
    uint64_t n_bytes;      /* message length so far */
    uint8_t block[64];     /* a partial block, [n_bytes % 64] filled */
} hub_sha256;

void hub_sha256_init(hub_sha256 *h);
void hub_sha256_update(hub_sha256 *h, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL (hex[65]). */
void hub_sha256_final_hex(hub_sha256 *h, char hex[65]);

#endif

/*
 * kv_cache.h — the engine's KV memory: a pool of fixed-size blocks with
 * reference counts, and the prefix cache, a radix tree over token ids at
 * block granularity whose nodes hold blocks of earlier sequences.
 *
 * A block holds block_size positions of every layer's K and V (model.h,
 * qwen3_kv). Its reference count is the number of holders: each sequence
 * whose block table lists it, plus one when a prefix-tree node holds it.
 * A block at count 0 is free. A sequence writes only into blocks it alone
 * holds; a shared block is copied first (copy on write).
 *
 * Tree nodes hold one block each: a full block (block_size tokens) or, as a
 * leaf, the partial last block of a sequence. A node whose block only the
 * tree holds is evictable; eviction takes the least recently used
 * evictable leaf. Since a sequence that uses a node also holds every node
 * above it, every node at count 1 is evictable (its subtree is too).
 *
 * Not thread-safe: the engine's driving thread owns it.
 */
#ifndef INF_ENGINE_KV_CACHE_H
#define INF_ENGINE_KV_CACHE_H

#include "model/model.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct prefix_node prefix_node;

/* The pool's blocks lie in runs of 2^KV_CACHE_RUN_SHIFT (model.h,
 * qwen3_kv): 16 blocks, 1024 positions at the engine's default block size
 * (256 KiB of each head's rows for the 0.6B's f16 cache). Two engines on
 * the 0.6B Q4_0 in one process (Zen 5 VM), their decode steps alternated
 * (ABBA, 4 rounds of 62 steps), time a token against runs of one block
 * (every layer's rows of a block together, on huge pages as before):
 * after 17 +0.4..+0.9%, 64 +1.0..+2.1%, 512 +0.4..+0.7%, 1000 -3.9..-4.8%,
 * 2044 -8.3%; in a busier spell 64 +0.3..+1.3%, 1000 -0.6..-1.7%, 2044
 * -2.3..-4.4%. The ordinary pages cost the shallow part: runs of one block
 * on them took +0.8..+1.3% after 64 and +2.4..+2.5% after 512; runs of 16
 * on huge pages +0.4..+0.6% after 64, -2.6..-3.4% after 1000 and
 * -6.7..-7.3% after 2044 (their readying, kv_cache.c, rules them out).
 * Runs of 2, 4, 8 and 32 on huge pages: after 1000 -1.1%, -2.5..-2.8%,
 * -2.3..-6.5% and -4.3..-4.5%; of 16 -4.5..-4.7% and after 2044
 * -8.5..-9.4%. */
enum { KV_CACHE_RUN_SHIFT = 4 };

typedef struct kv_cache {
    qwen3_kv kv;            /* the pool's memory */
    const inf_model *model;
    int32_t *ref;           /* [n_blocks] holders of each block */
    prefix_node **node_of;  /* [n_blocks] the tree node holding it, or NULL */
    int32_t *free_list;     /* [n_blocks] stack of free blocks */
    int n_ready;            /* blocks 0 .. n_ready-1 were readied for writing (qwen3_kv_prefault) */
    int n_free;
    int n_evictable;        /* blocks held by the tree alone */
    prefix_node *root;      /* holds no block; its children start sequences */
    prefix_node **heap;     /* [n_heap] evictable leaves, a min-heap on last use */
    int n_heap;
    int n_nodes;
    uint64_t clock;         /* use counter for LRU */
    bool prefix_enabled;
    /* counters */
    uint64_t queries, query_tokens, hit_tokens, evictions;
} kv_cache;

inf_status kv_cache_init(kv_cache *c, const inf_model *m, int block_size, int n_blocks, bool prefix_enabled,
                         inf_error *err);
void kv_cache_free(kv_cache *c);

/* Blocks a new holder can get now: free ones and evictable ones. */
static inline int kv_cache_available(const kv_cache *c) { return c->n_free + c->n_evictable; }

/* A free block with count 1 (evicting the LRU leaf when none is free); -1
 * when every block is held. */
int32_t kv_cache_alloc(kv_cache *c);
void kv_cache_ref(kv_cache *c, int32_t block);
void kv_cache_unref(kv_cache *c, int32_t block);
/* Copies the KV rows of block src into dst (every layer, K and V). */
void kv_cache_copy_block(kv_cache *c, int32_t dst, int32_t src);

/* The longest cached prefix of tokens[0..n): writes its blocks to
 * blocks[] (one per started block; the last may be matched partly) with a
 * reference taken on each, and returns the matched token count. Counts a
 * query. Nothing when the prefix cache is off. */
int kv_cache_match(kv_cache *c, const int32_t *tokens, int n, int32_t *blocks);
/* Tokens a match would reuse, without taking anything (admission). Also
 * tells how many of the matched blocks are evictable now. */
int kv_cache_peek(const kv_cache *c, const int32_t *tokens, int n, int *n_blocks_evictable);
/* Hands the first n tokens' blocks of a sequence to the tree (it takes its
 * own references; blocks whose tokens the tree already has are left). */
void kv_cache_insert(kv_cache *c, const int32_t *tokens, int n, const int32_t *blocks);

/* Walks the whole tree and checks the bookkeeping: every node's block and
 * count, the evictable and free counts, and that the eviction heap holds
 * exactly the evictable leaves in heap order (tests). */
bool kv_cache_check(const kv_cache *c);

#endif /* INF_ENGINE_KV_CACHE_H */

/*
 * kv_cache.c — the KV block pool and the prefix tree (kv_cache.h).
 *
 * Eviction takes the least recently used leaf that only the tree holds.
 * Those leaves sit in a binary min-heap on last_used (unique: one clock
 * tick per use), kept up to date wherever a node's count, children or
 * last use change, so an eviction costs O(log nodes) rather than a walk
 * of the whole tree.
 */
#include "engine/kv_cache.h"

#include "core/common.h"

#include <stdlib.h>
#include <string.h>

struct prefix_node {
    prefix_node *parent, *first_child, *next_sibling;
    int32_t block;    /* -1 for the root */
    int n_tokens;     /* block_size, or fewer in a partial leaf */
    uint64_t last_used;
    int heap_at;      /* index in the eviction heap, or -1 */
    int32_t tokens[]; /* [n_tokens] */
};

inf_status kv_cache_init(kv_cache *c, const inf_model *m, int block_size, int n_blocks, bool prefix_enabled,
                         inf_error *err) {
    memset(c, 0, sizeof *c);
    c->model = m;
    c->prefix_enabled = prefix_enabled;
    c->kv.block_size = block_size;
    c->kv.n_blocks = n_blocks;
    c->kv.run_shift = KV_CACHE_RUN_SHIFT;
    const size_t bytes = qwen3_kv_bytes(m, block_size, n_blocks, c->kv.run_shift);
    const inf_ops *b = m->backend;
    /* Ordinary pages: a block is a range per layer and head of its run, and
     * huge pages would ready every head's rows of the run at its first
     * block: a fresh engine's first request (17 tokens, 0.6B Q4_0) took
     * 200-290 ms instead of 56-57 (61-63 on ordinary pages). They cost
     * decode 1-2.5% (kv_cache.h). */
    c->kv.k = b->buffer_alloc(b, bytes, INF_BUFFER_SCATTERED);
    c->kv.v = b->buffer_alloc(b, bytes, INF_BUFFER_SCATTERED);
    c->ref = calloc((size_t)n_blocks, sizeof *c->ref);
    c->node_of = calloc((size_t)n_blocks, sizeof *c->node_of);
    c->free_list = malloc((size_t)n_blocks * sizeof *c->free_list);
    c->heap = malloc((size_t)n_blocks * sizeof *c->heap);
    c->root = calloc(1, sizeof *c->root);
    if (!c->kv.k || !c->kv.v || !c->ref || !c->node_of || !c->free_list || !c->heap || !c->root) {
        kv_cache_free(c);
        return inf_errorf(err, INF_ERR_NOMEM, "out of memory for a KV pool of %d blocks (%zu bytes)", n_blocks,
                          2 * bytes);
    }
    c->root->block = -1;
    c->root->heap_at = -1;
    for (int i = 0; i < n_blocks; i++) c->free_list[i] = n_blocks - 1 - i; /* block 0 on top */
    c->n_free = n_blocks;
    return INF_OK;
}

static void free_subtree(prefix_node *n) {
    while (n) {
        prefix_node *next = n->next_sibling;
        free_subtree(n->first_child);
        free(n);
        n = next;
    }
}

void kv_cache_free(kv_cache *c) {
    if (c->root) free_subtree(c->root->first_child);
    free(c->root);
    if (c->model) {
        c->model->backend->buffer_free(c->model->backend, c->kv.k);
        c->model->backend->buffer_free(c->model->backend, c->kv.v);
    }
    free(c->ref);
    free(c->node_of);
    free(c->free_list);
    free(c->heap);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ eviction heap */

static void heap_set(kv_cache *c, int i, prefix_node *n) {
    c->heap[i] = n;
    n->heap_at = i;
}

static void heap_sift_up(kv_cache *c, int i) {
    prefix_node *n = c->heap[i];
    while (i > 0 && c->heap[(i - 1) / 2]->last_used > n->last_used) {
        heap_set(c, i, c->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(c, i, n);
}

static void heap_sift_down(kv_cache *c, int i) {
    prefix_node *n = c->heap[i];
    for (;;) {
        int kid = 2 * i + 1;
        if (kid >= c->n_heap) break;
        if (kid + 1 < c->n_heap && c->heap[kid + 1]->last_used < c->heap[kid]->last_used) kid++;
        if (c->heap[kid]->last_used >= n->last_used) break;
        heap_set(c, i, c->heap[kid]);
        i = kid;
    }
    heap_set(c, i, n);
}

/* Puts n in the heap, takes it out or moves it, as its state now says:
 * an evictable leaf (no children, held by the tree alone) belongs there. */
static void heap_update(kv_cache *c, prefix_node *n) {
    const bool belongs = n != c->root && !n->first_child && c->ref[n->block] == 1;
    if (belongs && n->heap_at < 0) {
        heap_set(c, c->n_heap++, n);
        heap_sift_up(c, n->heap_at);
    } else if (belongs) { /* last_used may have changed */
        heap_sift_up(c, n->heap_at);
        heap_sift_down(c, n->heap_at);
    } else if (n->heap_at >= 0) {
        const int i = n->heap_at;
        n->heap_at = -1;
        if (i == --c->n_heap) return;
        prefix_node *moved = c->heap[c->n_heap]; /* the last entry fills the hole */
        heap_set(c, i, moved);
        heap_sift_up(c, i);
        heap_sift_down(c, moved->heap_at);
    }
}

/* ------------------------------------------------------------------ blocks */

void kv_cache_ref(kv_cache *c, int32_t b) {
    if (c->node_of[b] && c->ref[b] == 1) c->n_evictable--;
    c->ref[b]++;
    if (c->node_of[b]) heap_update(c, c->node_of[b]);
}

void kv_cache_unref(kv_cache *c, int32_t b) {
    c->ref[b]--;
    if (c->ref[b] == 0) c->free_list[c->n_free++] = b;
    else if (c->node_of[b] && c->ref[b] == 1) c->n_evictable++;
    if (c->ref[b] > 0 && c->node_of[b]) heap_update(c, c->node_of[b]);
}

static void unlink_node(prefix_node *n) {
    prefix_node **at = &n->parent->first_child;
    while (*at != n) at = &(*at)->next_sibling;
    *at = n->next_sibling;
}

static bool evict_one(kv_cache *c) {
    if (c->n_heap == 0) return false;
    prefix_node *leaf = c->heap[0]; /* the least recently used leaf only the tree holds */
    prefix_node *parent = leaf->parent;
    c->ref[leaf->block] = 0;
    heap_update(c, leaf); /* out */
    unlink_node(leaf);
    heap_update(c, parent); /* it may be a leaf now */
    c->node_of[leaf->block] = NULL;
    c->n_evictable--;
    c->n_nodes--;
    c->evictions++;
    c->free_list[c->n_free++] = leaf->block;
    free(leaf);
    return true;
}

int32_t kv_cache_alloc(kv_cache *c) {
    if (c->n_free == 0 && !evict_one(c)) return -1;
    const int32_t b = c->free_list[--c->n_free];
    c->ref[b] = 1;
    /* Never-used blocks lie at the bottom of the free stack in order (block
     * 0 on top at first; freed blocks go on top), so the first use of each
     * comes in block order. */
    if (b >= c->n_ready) {
        qwen3_kv_prefault(c->model, &c->kv, b, 1);
        c->n_ready = b + 1;
    }
    return b;
}

void kv_cache_copy_block(kv_cache *c, int32_t dst, int32_t src) { qwen3_kv_copy_block(c->model, &c->kv, dst, src); }

/* ------------------------------------------------------------------ prefix tree */

static int common_prefix(const int32_t *a, const int32_t *b, int n) {
    int i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* Walks the tree along tokens[0..n): calls visit for each node used (with
 * the tokens matched in it) and returns the matched count. */
static int walk(const kv_cache *c, const int32_t *tokens, int n, void (*visit)(void *, prefix_node *, int),
                void *ctx) {
    if (!c->prefix_enabled) return 0;
    const int bs = c->kv.block_size;
    int matched = 0;
    const prefix_node *at = c->root;
    while (matched < n) {
        prefix_node *best = NULL;
        int best_len = 0;
        const int want = INF_MIN(bs, n - matched);
        for (prefix_node *ch = at->first_child; ch; ch = ch->next_sibling) {
            const int len = common_prefix(ch->tokens, tokens + matched, INF_MIN(ch->n_tokens, want));
            if (len > best_len) best = ch, best_len = len;
        }
        if (!best) break;
        if (visit) visit(ctx, best, best_len);
        matched += best_len;
        if (best_len < bs) break; /* a partial match or a partial node ends it */
        at = best;
    }
    return matched;
}

typedef struct match_ctx {
    kv_cache *c;
    int32_t *blocks;
    int n_blocks;
    int n_evictable;
} match_ctx;

static void take_node(void *ctx, prefix_node *n, int len) {
    (void)len;
    match_ctx *mc = ctx;
    n->last_used = ++mc->c->clock;
    kv_cache_ref(mc->c, n->block);
    mc->blocks[mc->n_blocks++] = n->block;
}

static void count_node(void *ctx, prefix_node *n, int len) {
    (void)len;
    match_ctx *mc = ctx;
    if (mc->c->ref[n->block] == 1) mc->n_evictable++;
    mc->n_blocks++;
}

int kv_cache_match(kv_cache *c, const int32_t *tokens, int n, int32_t *blocks) {
    match_ctx mc = {.c = c, .blocks = blocks};
    const int matched = walk(c, tokens, n, take_node, &mc);
    if (c->prefix_enabled) {
        c->queries++;
        c->query_tokens += (uint64_t)n;
        c->hit_tokens += (uint64_t)matched;
    }
    return matched;
}

int kv_cache_peek(const kv_cache *c, const int32_t *tokens, int n, int *n_blocks_evictable) {
    match_ctx mc = {.c = (kv_cache *)c};
    const int matched = walk(c, tokens, n, count_node, &mc);
    *n_blocks_evictable = mc.n_evictable;
    return matched;
}

void kv_cache_insert(kv_cache *c, const int32_t *tokens, int n, const int32_t *blocks) {
    if (!c->prefix_enabled) return;
    const int bs = c->kv.block_size;
    prefix_node *at = c->root;
    for (int i = 0; i * bs < n; i++) {
        const int len = INF_MIN(bs, n - i * bs);
        const int32_t *t = tokens + (size_t)i * bs;
        prefix_node *same = NULL;
        for (prefix_node *ch = at->first_child; ch && !same; ch = ch->next_sibling)
            if (ch->n_tokens == len && memcmp(ch->tokens, t, (size_t)len * sizeof *t) == 0) same = ch;
        if (!same) {
            if (c->node_of[blocks[i]]) return; /* the block is another node's already: a shared partial block */
            same = malloc(sizeof *same + (size_t)len * sizeof *t);
            if (!same) return; /* the cache only loses an entry */
            *same = (prefix_node){.parent = at, .next_sibling = at->first_child, .block = blocks[i], .n_tokens = len,
                                  .heap_at = -1};
            memcpy(same->tokens, t, (size_t)len * sizeof *t);
            at->first_child = same;
            heap_update(c, at); /* no longer a leaf */
            c->node_of[blocks[i]] = same;
            c->n_nodes++;
            c->ref[blocks[i]]++; /* the tree's reference; the caller still holds its own */
        }
        same->last_used = ++c->clock;
        heap_update(c, same);
        if (len < bs) return;
        at = same;
    }
}

/* ------------------------------------------------------------------ checking */

typedef struct check_ctx {
    const kv_cache *c;
    int nodes, evictable, leaves;
    bool ok;
} check_ctx;

static void check_subtree(check_ctx *k, const prefix_node *n) {
    for (const prefix_node *ch = n->first_child; ch; ch = ch->next_sibling) {
        const kv_cache *c = k->c;
        k->nodes++;
        k->ok = k->ok && ch->parent == n && c->node_of[ch->block] == ch && c->ref[ch->block] >= 1;
        if (c->ref[ch->block] == 1) k->evictable++;
        const bool evictable_leaf = !ch->first_child && c->ref[ch->block] == 1;
        k->leaves += evictable_leaf;
        k->ok = k->ok && evictable_leaf == (ch->heap_at >= 0) &&
                (ch->heap_at < 0 || (ch->heap_at < c->n_heap && c->heap[ch->heap_at] == ch));
        check_subtree(k, ch);
    }
}

bool kv_cache_check(const kv_cache *c) {
    check_ctx k = {.c = c, .ok = true};
    check_subtree(&k, c->root);
    for (int i = 1; i < c->n_heap && k.ok; i++) k.ok = c->heap[(i - 1) / 2]->last_used < c->heap[i]->last_used;
    int free_blocks = 0;
    for (int b = 0; b < c->kv.n_blocks; b++) free_blocks += c->ref[b] == 0;
    return k.ok && k.nodes == c->n_nodes && k.evictable == c->n_evictable && k.leaves == c->n_heap &&
           free_blocks == c->n_free;
}

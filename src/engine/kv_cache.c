/*
 * kv_cache.c — the KV block pool and the prefix tree (kv_cache.h).
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
    int32_t tokens[]; /* [n_tokens] */
};

inf_status kv_cache_init(kv_cache *c, const inf_model *m, int block_size, int n_blocks, bool prefix_enabled,
                         inf_error *err) {
    memset(c, 0, sizeof *c);
    c->model = m;
    c->prefix_enabled = prefix_enabled;
    c->kv.block_size = block_size;
    c->kv.n_blocks = n_blocks;
    const size_t bytes = qwen3_kv_bytes(m, block_size, n_blocks);
    const inf_ops *b = m->backend;
    c->kv.k = b->buffer_alloc(b, bytes);
    c->kv.v = b->buffer_alloc(b, bytes);
    c->ref = calloc((size_t)n_blocks, sizeof *c->ref);
    c->node_of = calloc((size_t)n_blocks, sizeof *c->node_of);
    c->free_list = malloc((size_t)n_blocks * sizeof *c->free_list);
    c->root = calloc(1, sizeof *c->root);
    if (!c->kv.k || !c->kv.v || !c->ref || !c->node_of || !c->free_list || !c->root) {
        kv_cache_free(c);
        return inf_errorf(err, INF_ERR_NOMEM, "out of memory for a KV pool of %d blocks (%zu bytes)", n_blocks,
                          2 * bytes);
    }
    c->root->block = -1;
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
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ blocks */

void kv_cache_ref(kv_cache *c, int32_t b) {
    if (c->node_of[b] && c->ref[b] == 1) c->n_evictable--;
    c->ref[b]++;
}

void kv_cache_unref(kv_cache *c, int32_t b) {
    c->ref[b]--;
    if (c->ref[b] == 0) c->free_list[c->n_free++] = b;
    else if (c->node_of[b] && c->ref[b] == 1) c->n_evictable++;
}

static void unlink_node(prefix_node *n) {
    prefix_node **at = &n->parent->first_child;
    while (*at != n) at = &(*at)->next_sibling;
    *at = n->next_sibling;
}

/* The least recently used leaf only the tree holds (at count 1), or NULL. */
static prefix_node *lru_evictable(kv_cache *c, prefix_node *n, prefix_node *best) {
    for (prefix_node *ch = n->first_child; ch; ch = ch->next_sibling) {
        if (ch->first_child) best = lru_evictable(c, ch, best);
        else if (c->ref[ch->block] == 1 && (!best || ch->last_used < best->last_used)) best = ch;
    }
    return best;
}

static bool evict_one(kv_cache *c) {
    prefix_node *leaf = lru_evictable(c, c->root, NULL);
    if (!leaf) return false;
    unlink_node(leaf);
    c->node_of[leaf->block] = NULL;
    c->n_evictable--;
    c->n_nodes--;
    c->evictions++;
    c->ref[leaf->block] = 0;
    c->free_list[c->n_free++] = leaf->block;
    free(leaf);
    return true;
}

int32_t kv_cache_alloc(kv_cache *c) {
    if (c->n_free == 0 && !evict_one(c)) return -1;
    const int32_t b = c->free_list[--c->n_free];
    c->ref[b] = 1;
    return b;
}

void kv_cache_copy_block(kv_cache *c, int32_t dst, int32_t src) {
    const inf_model *m = c->model;
    const size_t block_bytes = qwen3_kv_bytes(m, c->kv.block_size, 1) / (size_t)m->cfg.n_layer;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const size_t layer = (size_t)l * (size_t)c->kv.n_blocks * block_bytes;
        memcpy((char *)c->kv.k + layer + (size_t)dst * block_bytes, (char *)c->kv.k + layer + (size_t)src * block_bytes,
               block_bytes);
        memcpy((char *)c->kv.v + layer + (size_t)dst * block_bytes, (char *)c->kv.v + layer + (size_t)src * block_bytes,
               block_bytes);
    }
}

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
            *same = (prefix_node){.parent = at, .next_sibling = at->first_child, .block = blocks[i], .n_tokens = len};
            memcpy(same->tokens, t, (size_t)len * sizeof *t);
            at->first_child = same;
            c->node_of[blocks[i]] = same;
            c->n_nodes++;
            c->ref[blocks[i]]++; /* the tree's reference; the caller still holds its own */
        }
        same->last_used = ++c->clock;
        if (len < bs) return;
        at = same;
    }
}

/*
 * bpe.c — the merge loop of byte-level BPE, the way Hugging Face tokenizers
 * runs it: start from one symbol per byte, repeatedly merge the adjacent pair
 * with the lowest merge rank (the leftmost one on ties), until no adjacent
 * pair has a merge. A min-heap ordered by (rank, position) holds candidate
 * pairs; entries made stale by an earlier merge are skipped when popped, so a
 * word of n bytes costs O(n log n).
 *
 * Encoded words are cached in a direct-mapped table of seqlock slots: readers
 * never block or write, a writer that finds its slot busy simply does not
 * cache, and a slot is overwritten when another word hashes there.
 */
#include "tok/bpe.h"

#include <stdlib.h>
#include <string.h>

bool tok_ids_push(tok_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *ids->v) return false;
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v) return false;
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return true;
}

/* ------------------------------------------------------------------ merge table */

static inline uint64_t merge_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
}

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

bool bpe_model_init(bpe_model *m, size_t n_merges) {
    memset(m, 0, sizeof *m);
    for (int b = 0; b < 256; b++) m->byte_token[b] = -1;
    uint64_t slots = 1024;
    while (slots * 5 < 8 * (uint64_t)n_merges + 1) slots *= 2; /* load factor <= 5/8: 4 MB for Qwen3 */
    if (slots > SIZE_MAX / sizeof(bpe_merge)) return false;
    m->merges = calloc(slots, sizeof(bpe_merge));
    m->merge_mask = slots - 1;
    m->cache = aligned_alloc(64, BPE_CACHE_ENTRIES * sizeof(bpe_cache_entry));
    if (!m->merges || !m->cache) {
        bpe_model_free(m);
        return false;
    }
    for (size_t i = 0; i < BPE_CACHE_ENTRIES; i++) {
        atomic_init(&m->cache[i].seq, 0);
        atomic_init(&m->cache[i].tag, 0);
        for (size_t j = 0; j < BPE_CACHE_KEY_BYTES / 8; j++) atomic_init(&m->cache[i].key[j], 0);
        for (size_t j = 0; j < BPE_CACHE_MAX_IDS / 2; j++) atomic_init(&m->cache[i].ids[j], 0);
    }
    return true;
}

void bpe_model_free(bpe_model *m) {
    free(m->merges);
    free(m->cache);
    m->merges = NULL;
    m->cache = NULL;
}

void bpe_model_add_merge(bpe_model *m, int32_t left, int32_t right, uint32_t rank, int32_t merged) {
    uint64_t key = merge_key(left, right);
    for (uint64_t i = mix64(key) & m->merge_mask;; i = (i + 1) & m->merge_mask) {
        bpe_merge *s = &m->merges[i];
        if (s->key == key || s->key == 0) {
            if (s->key == 0) m->n_merges++;
            s->key = key;
            s->rank = rank;
            s->merged = merged;
            return;
        }
    }
}

static inline const bpe_merge *find_merge(const bpe_model *m, int32_t left, int32_t right) {
    uint64_t key = merge_key(left, right);
    for (uint64_t i = mix64(key) & m->merge_mask;; i = (i + 1) & m->merge_mask) {
        const bpe_merge *s = &m->merges[i];
        if (s->key == key) return s;
        if (s->key == 0) return NULL;
    }
}

/* ------------------------------------------------------------------ cache */

typedef struct cache_key {
    uint64_t words[BPE_CACHE_KEY_BYTES / 8];
    uint64_t tag_base; /* hash << 32 | key length */
    uint64_t hash;
} cache_key;

static void cache_key_make(const unsigned char *word, size_t len, cache_key *k) {
    memset(k->words, 0, sizeof k->words);
    memcpy(k->words, word, len);
    uint64_t h = len;
    for (size_t i = 0; i < BPE_CACHE_KEY_BYTES / 8; i++) h = mix64(h ^ k->words[i]);
    k->hash = h;
    k->tag_base = (h & 0xffffffff00000000ull) | len;
}

/* The seqlock protocol without fences (which ThreadSanitizer cannot model):
 * a reader's slot loads are acquire loads, so its second read of seq cannot
 * move before them; a writer's slot stores are release stores, so they
 * cannot become visible before its odd seq. If a reader sees any byte of a
 * write in progress, it therefore also sees seq changed. On x86 and ARMv8
 * these orders cost nothing over plain loads and stores. */
static bool cache_get(const bpe_model *m, const cache_key *k, tok_ids *out) {
    bpe_cache_entry *e = &m->cache[k->hash & (BPE_CACHE_ENTRIES - 1)];
    uint64_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
    if (seq & 1) return false;
    uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
    if ((tag & ~(uint64_t)0xff00) != k->tag_base) return false;
    for (size_t i = 0; i < BPE_CACHE_KEY_BYTES / 8; i++)
        if (atomic_load_explicit(&e->key[i], memory_order_acquire) != k->words[i]) return false;
    uint64_t packed[BPE_CACHE_MAX_IDS / 2];
    for (size_t i = 0; i < BPE_CACHE_MAX_IDS / 2; i++) packed[i] = atomic_load_explicit(&e->ids[i], memory_order_acquire);
    if (atomic_load_explicit(&e->seq, memory_order_relaxed) != seq) return false;
    size_t n = (tag >> 8) & 0xff;
    for (size_t i = 0; i < n; i++)
        if (!tok_ids_push(out, (int32_t)(uint32_t)(packed[i / 2] >> (32 * (i % 2))))) return false;
    return true;
}

static void cache_put(const bpe_model *m, const cache_key *k, const int32_t *ids, size_t n) {
    bpe_cache_entry *e = &m->cache[k->hash & (BPE_CACHE_ENTRIES - 1)];
    uint64_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
    if ((seq & 1) ||
        !atomic_compare_exchange_strong_explicit(&e->seq, &seq, seq + 1, memory_order_acquire, memory_order_relaxed))
        return; /* another writer holds the slot: skip caching this word */
    uint64_t packed[BPE_CACHE_MAX_IDS / 2] = {0};
    for (size_t i = 0; i < n; i++) packed[i / 2] |= (uint64_t)(uint32_t)ids[i] << (32 * (i % 2));
    atomic_store_explicit(&e->tag, k->tag_base | (uint64_t)n << 8, memory_order_release);
    for (size_t i = 0; i < BPE_CACHE_KEY_BYTES / 8; i++) atomic_store_explicit(&e->key[i], k->words[i], memory_order_release);
    for (size_t i = 0; i < BPE_CACHE_MAX_IDS / 2; i++) atomic_store_explicit(&e->ids[i], packed[i], memory_order_release);
    atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
}

/* ------------------------------------------------------------------ merge loop */

typedef struct bpe_heap_entry {
    uint64_t order;      /* rank << 32 | position of the left symbol */
    int32_t left, right; /* the pair's ids when it was pushed */
    int32_t merged;
} bpe_heap_entry;

void bpe_scratch_free(bpe_scratch *sc) {
    free(sc->sym);
    free(sc->prev);
    free(sc->next);
    free(sc->heap);
    memset(sc, 0, sizeof *sc);
}

static bool scratch_reserve(bpe_scratch *sc, size_t n) {
    if (n <= sc->cap) return true;
    size_t cap = sc->cap ? sc->cap : 64;
    while (cap < n) cap *= 2;
    if (cap > INT32_MAX || cap > SIZE_MAX / sizeof(bpe_heap_entry)) return false;
    int32_t *sym = realloc(sc->sym, cap * sizeof *sym);
    if (sym) sc->sym = sym;
    int32_t *prev = realloc(sc->prev, cap * sizeof *prev);
    if (prev) sc->prev = prev;
    int32_t *next = realloc(sc->next, cap * sizeof *next);
    if (next) sc->next = next;
    bpe_heap_entry *heap = realloc(sc->heap, cap * sizeof *heap);
    if (heap) sc->heap = heap;
    if (!sym || !prev || !next || !heap) return false;
    sc->cap = cap;
    return true;
}

/* A word of n bytes has fewer than n pairs alive at once, and each merge
 * pushes at most two, so the heap never holds more than 3n entries; it is
 * sized n and compacted (stale entries dropped) when it fills. */
typedef struct heap {
    bpe_heap_entry *e;
    size_t n, cap;
} heap;

static void heap_push_unchecked(heap *h, bpe_heap_entry e) {
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->e[parent].order <= e.order) break;
        h->e[i] = h->e[parent];
        i = parent;
    }
    h->e[i] = e;
}

static bpe_heap_entry heap_pop(heap *h) {
    bpe_heap_entry top = h->e[0];
    bpe_heap_entry last = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n) break;
        if (child + 1 < h->n && h->e[child + 1].order < h->e[child].order) child++;
        if (last.order <= h->e[child].order) break;
        h->e[i] = h->e[child];
        i = child;
    }
    if (h->n) h->e[i] = last;
    return top;
}

/* Is this entry still a pair of adjacent live symbols? Hugging Face asks
 * whether the pair now at the position merges to the same id; asking whether
 * it is the same pair of ids is equivalent (a symbol only grows rightwards,
 * so the same merged bytes at the same position mean the same two parts)
 * and needs no lookup. */
static inline bool entry_live(const bpe_scratch *sc, const bpe_heap_entry *e) {
    uint32_t pos = (uint32_t)e->order;
    return sc->sym[pos] == e->left && sc->next[pos] >= 0 && sc->sym[sc->next[pos]] == e->right;
}

static void heap_push(const bpe_scratch *sc, heap *h, bpe_heap_entry e) {
    if (h->n == h->cap) { /* drop stale entries, then re-heapify */
        size_t kept = 0;
        for (size_t i = 0; i < h->n; i++)
            if (entry_live(sc, &h->e[i])) h->e[kept++] = h->e[i];
        size_t n = kept;
        h->n = 0;
        for (size_t i = 0; i < n; i++) heap_push_unchecked(h, h->e[i]);
    }
    heap_push_unchecked(h, e);
}

static inline void push_pair(const bpe_model *m, const bpe_scratch *sc, heap *h, int32_t pos) {
    int32_t left = sc->sym[pos], right = sc->sym[sc->next[pos]];
    const bpe_merge *mg = find_merge(m, left, right);
    if (mg) heap_push(sc, h, (bpe_heap_entry){(uint64_t)mg->rank << 32 | (uint32_t)pos, left, right, mg->merged});
}

bool bpe_encode_word(const bpe_model *m, bpe_scratch *sc, const unsigned char *word, size_t len, tok_ids *out) {
    if (len == 1) return tok_ids_push(out, m->byte_token[word[0]]);
    cache_key key;
    bool cacheable = len <= BPE_CACHE_KEY_BYTES;
    if (cacheable) {
        cache_key_make(word, len, &key);
        if (cache_get(m, &key, out)) return true;
    }
    if (!scratch_reserve(sc, len)) return false;
    for (size_t i = 0; i < len; i++) {
        sc->sym[i] = m->byte_token[word[i]];
        sc->prev[i] = (int32_t)i - 1;
        sc->next[i] = i + 1 < len ? (int32_t)i + 1 : -1;
    }
    /* The heap is compacted when full; n live pairs plus two new ones always
     * fit after compaction because fewer than len pairs are ever alive. */
    heap h = {sc->heap, 0, len};
    for (size_t i = 0; i + 1 < len; i++) push_pair(m, sc, &h, (int32_t)i);
    while (h.n) {
        bpe_heap_entry top = heap_pop(&h);
        if (!entry_live(sc, &top)) continue;
        int32_t pos = (int32_t)(uint32_t)top.order;
        int32_t right = sc->next[pos];
        sc->sym[pos] = top.merged;
        sc->sym[right] = -1;
        sc->next[pos] = sc->next[right];
        if (sc->next[pos] >= 0) sc->prev[sc->next[pos]] = pos;
        if (sc->prev[pos] >= 0) push_pair(m, sc, &h, sc->prev[pos]);
        if (sc->next[pos] >= 0) push_pair(m, sc, &h, pos);
    }
    size_t first = out->n;
    for (int32_t i = 0; i >= 0; i = sc->next[i])
        if (!tok_ids_push(out, sc->sym[i])) return false;
    if (cacheable && out->n - first <= BPE_CACHE_MAX_IDS) cache_put(m, &key, out->v + first, out->n - first);
    return true;
}

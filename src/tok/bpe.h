/*
 * bpe.h — byte-level BPE over one pre-tokenized word: the merge table (pair of
 * ids -> rank and merged id), the merge loop, and a cache of encoded words
 * that concurrent callers share without locks.
 */
#ifndef INF_TOK_BPE_H
#define INF_TOK_BPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable array of token ids. */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids;

bool tok_ids_push(tok_ids *ids, int32_t id);

typedef struct bpe_merge {
    uint64_t key;   /* ((uint64_t)left << 32 | right) + 1; 0 marks an empty slot */
    uint32_t rank;  /* position in the merges list: lower merges first */
    int32_t merged; /* id of left + right */
} bpe_merge;

/* Words of at most BPE_CACHE_KEY_BYTES bytes that encode to at most
 * BPE_CACHE_MAX_IDS ids are cached. */
enum { BPE_CACHE_KEY_BYTES = 24, BPE_CACHE_MAX_IDS = 6, BPE_CACHE_ENTRIES = 8192 };

/* One cache slot, a seqlock: seq is odd while a writer fills the slot, and a
 * reader keeps what it copied only when seq was even and unchanged around the
 * copy. Every field is atomic, so racing readers and writers are well defined
 * (see cache_get in bpe.c for the memory orders). */
typedef struct bpe_cache_entry {
    _Alignas(64) _Atomic uint64_t seq;
    _Atomic uint64_t tag;                                  /* hash << 32 | n_ids << 8 | key length; 0 = empty */
    _Atomic uint64_t key[BPE_CACHE_KEY_BYTES / 8];         /* word bytes, zero padded */
    _Atomic uint64_t ids[BPE_CACHE_MAX_IDS * 4 / 8];       /* ids as uint32, packed two per word */
} bpe_cache_entry;

typedef struct bpe_model {
    int32_t byte_token[256]; /* id of the token that is exactly this byte */
    bpe_merge *merges;       /* open addressing, merge_mask + 1 slots */
    uint64_t merge_mask;
    size_t n_merges;
    bpe_cache_entry *cache;  /* BPE_CACHE_ENTRIES slots */
} bpe_model;

/* Allocates an empty merge table sized for n_merges and the cache. */
bool bpe_model_init(bpe_model *m, size_t n_merges);
void bpe_model_free(bpe_model *m);

/* Adds a merge. A pair listed twice takes its later rank, as Hugging Face's
 * loader (which collects the list into a map) does. At most the n_merges
 * given to bpe_model_init may be added. */
void bpe_model_add_merge(bpe_model *m, int32_t left, int32_t right, uint32_t rank, int32_t merged);

/* Per-call working memory of the merge loop (grown as needed). */
typedef struct bpe_scratch {
    int32_t *sym;   /* [cap] current token id per symbol; -1 once merged away */
    int32_t *prev;  /* [cap] previous live symbol, -1 at the start */
    int32_t *next;  /* [cap] next live symbol, -1 at the end */
    struct bpe_heap_entry *heap; /* [cap] */
    size_t cap;
} bpe_scratch;

void bpe_scratch_free(bpe_scratch *sc);

/* Appends the ids of one word (its raw bytes; the byte-level alphabet is
 * implied by byte_token) to out. False on allocation failure. */
bool bpe_encode_word(const bpe_model *m, bpe_scratch *sc, const unsigned char *word, size_t len, tok_ids *out);

#endif /* INF_TOK_BPE_H */

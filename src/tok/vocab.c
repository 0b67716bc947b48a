/*
 * vocab.c — builds an inf_tokenizer from what a loader read: checks every
 * token and merge, resolves merges to ids through a temporary hash of the BPE
 * vocabulary, and indexes the added tokens for matching in text.
 *
 * Invariants of a built tokenizer: every byte value has a single-byte token;
 * every merge's parts and result are BPE tokens; no token is longer than
 * TOK_MAX_TOKEN_BYTES; eos and bos are -1 or valid ids.
 */
#include "tok/vocab.h"

#include "core/common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ byte-level alphabet */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves; the
 * other 68 bytes (controls, space, DEL, NBSP, soft hyphen ...) are shifted to
 * U+0100.. in byte order. */
static bool byte_is_printable(int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* code point (< 0x144) -> byte, or -1 */
static int16_t char_to_byte[0x144];
static pthread_once_t alphabet_once = PTHREAD_ONCE_INIT;

static void build_alphabet(void) {
    for (size_t i = 0; i < sizeof char_to_byte / sizeof char_to_byte[0]; i++) char_to_byte[i] = -1;
    int shifted = 0;
    for (int b = 0; b < 256; b++) {
        if (byte_is_printable(b)) char_to_byte[b] = (int16_t)b;
        else char_to_byte[0x100 + shifted++] = (int16_t)b;
    }
}

bool bytelevel_decode(const char *text, size_t len, inf_buf *out, bool *bad_alphabet) {
    pthread_once(&alphabet_once, build_alphabet);
    *bad_alphabet = false;
    if (!inf_buf_reserve(out, len)) return false;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        if (s[i] < 0x80) { /* one-byte characters, most of a vocabulary, without the UTF-8 decoder */
            if (char_to_byte[s[i]] < 0) {
                *bad_alphabet = true;
                return false;
            }
            out->data[out->len++] = (char)char_to_byte[s[i++]];
            continue;
        }
        size_t need, k = uni_utf8_prefix(s + i, len - i, &need);
        if (need == 0 || k != need) {
            *bad_alphabet = true;
            return false;
        }
        uint32_t cp = uni_utf8_decode(s + i, &k);
        if (cp >= sizeof char_to_byte / sizeof char_to_byte[0] || char_to_byte[cp] < 0) {
            *bad_alphabet = true;
            return false;
        }
        out->data[out->len++] = (char)char_to_byte[cp];
        i += k;
    }
    return true;
}

/* ------------------------------------------------------------------ builder */

inf_status vocab_builder_init(vocab_builder *b, const char *source, int32_t n_vocab, inf_error *err) {
    memset(b, 0, sizeof *b);
    b->source = source;
    b->eos = b->bos = -1;
    b->nfc = true;
    if (n_vocab <= 0 || n_vocab > (1 << 28))
        return inf_errorf(err, INF_ERR_FORMAT, "%s: vocabulary size %ld out of range", source, (long)n_vocab);
    b->n_vocab = n_vocab;
    b->text_off = calloc((size_t)n_vocab + 1, sizeof *b->text_off);
    b->kind = malloc((size_t)n_vocab);
    if (!b->text_off || !b->kind || !inf_buf_reserve(&b->text, (size_t)n_vocab * 8)) {
        vocab_builder_free(b);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for %ld tokens", source, (long)n_vocab);
    }
    memset(b->kind, TOK_UNUSED, (size_t)n_vocab);
    return INF_OK;
}

void vocab_builder_free(vocab_builder *b) {
    free(b->text.data);
    free(b->text_off);
    free(b->kind);
    free(b->merge_text.data);
    free(b->merge_off);
    memset(b, 0, sizeof *b);
}

/* Ids below `id` that were never set become empty unused tokens. */
static bool fill_until(vocab_builder *b, int32_t id, int32_t *filled) {
    while (*filled < id) {
        if (!inf_buf_reserve(&b->text, 1)) return false;
        b->text_off[*filled] = (uint32_t)b->text.len;
        b->text.data[b->text.len++] = 0;
        ++*filled;
    }
    return true;
}

/* The next id to be set is kept in text_off[n_vocab] until vocab_build. */
inf_status vocab_builder_set(vocab_builder *b, int32_t id, const char *bytes, size_t len, tok_kind kind,
                             inf_error *err) {
    int32_t filled = (int32_t)b->text_off[b->n_vocab];
    if (id < filled || id >= b->n_vocab)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: token id %ld out of order or out of range", b->source, (long)id);
    if (len > TOK_MAX_TOKEN_BYTES)
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: token %ld is %zu bytes long (at most %d supported)",
                          b->source, (long)id, len, TOK_MAX_TOKEN_BYTES);
    if (!fill_until(b, id, &filled) || !inf_buf_reserve(&b->text, len + 1) || b->text.len + len + 1 > UINT32_MAX)
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for token text", b->source);
    b->text_off[id] = (uint32_t)b->text.len;
    memcpy(b->text.data + b->text.len, bytes, len);
    b->text.len += len;
    b->text.data[b->text.len++] = 0;
    b->kind[id] = (uint8_t)kind;
    b->text_off[b->n_vocab] = (uint32_t)id + 1;
    return INF_OK;
}

inf_status vocab_builder_add_merge(vocab_builder *b, const char *left, size_t left_len, const char *right,
                                   size_t right_len, inf_error *err) {
    if (b->n_merges == b->merge_cap) {
        size_t cap = b->merge_cap ? b->merge_cap * 2 : 4096;
        uint32_t *off = cap < SIZE_MAX / 8 ? realloc(b->merge_off, (2 * cap + 1) * sizeof *off) : NULL;
        if (!off) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for merges", b->source);
        if (!b->merge_off) off[0] = 0;
        b->merge_off = off;
        b->merge_cap = cap;
    }
    if (!inf_buf_reserve(&b->merge_text, left_len + right_len) || b->merge_text.len + left_len + right_len > UINT32_MAX)
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for merges", b->source);
    memcpy(b->merge_text.data + b->merge_text.len, left, left_len);
    b->merge_text.len += left_len;
    b->merge_off[2 * b->n_merges + 1] = (uint32_t)b->merge_text.len;
    memcpy(b->merge_text.data + b->merge_text.len, right, right_len);
    b->merge_text.len += right_len;
    b->merge_off[2 * b->n_merges + 2] = (uint32_t)b->merge_text.len;
    b->n_merges++;
    return INF_OK;
}

/* ------------------------------------------------------------------ build */

/* bytes -> id of the BPE (normal) tokens, used while resolving merges. A
 * slot keeps the upper half of the hash beside the id, so a probe compares
 * token bytes only when the hashes agree. */
typedef struct vocab_slot {
    uint32_t hash_hi;
    int32_t id; /* -1 = empty */
} vocab_slot;

typedef struct vocab_index {
    vocab_slot *slot;
    uint64_t mask;
} vocab_index;

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    memcpy(&tail, s + i, len - i);
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int32_t index_find(const vocab_index *ix, const inf_tokenizer *tok, const char *s, size_t len) {
    uint64_t h = hash_bytes(s, len);
    for (uint64_t i = h & ix->mask;; i = (i + 1) & ix->mask) {
        const vocab_slot *slot = &ix->slot[i];
        if (slot->id < 0) return -1;
        if (slot->hash_hi == (uint32_t)(h >> 32) && tok_len(tok, slot->id) == len &&
            !memcmp(tok_text(tok, slot->id), s, len))
            return slot->id;
    }
}

static inf_status index_build(vocab_index *ix, const inf_tokenizer *tok, const char *source, inf_error *err) {
    uint64_t slots = 1024;
    while (slots < 2 * (uint64_t)tok->n_vocab) slots *= 2;
    ix->slot = malloc(slots * sizeof *ix->slot);
    if (!ix->slot) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", source);
    memset(ix->slot, 0xff, slots * sizeof *ix->slot);
    ix->mask = slots - 1;
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        if (tok->kind[id] != TOK_NORMAL) continue;
        const char *s = tok_text(tok, id);
        size_t len = tok_len(tok, id);
        uint64_t h = hash_bytes(s, len);
        uint64_t i = h & ix->mask;
        for (; ix->slot[i].id >= 0; i = (i + 1) & ix->mask) {
            int32_t other = ix->slot[i].id;
            if (ix->slot[i].hash_hi == (uint32_t)(h >> 32) && tok_len(tok, other) == len &&
                !memcmp(tok_text(tok, other), s, len))
                return inf_errorf(err, INF_ERR_FORMAT, "%s: tokens %ld and %ld have the same text", source,
                                  (long)other, (long)id);
        }
        ix->slot[i] = (vocab_slot){(uint32_t)(h >> 32), id};
    }
    return INF_OK;
}

typedef struct added_sort_key {
    unsigned char first;
    uint32_t len;
    int32_t id;
} added_sort_key;

/* by first byte, then longest first, then id */
static int cmp_added(const void *pa, const void *pb) {
    const added_sort_key *a = pa, *b = pb;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static inf_status build_added_index(inf_tokenizer *tok, const char *source, inf_error *err) {
    size_t n = 0;
    for (int32_t id = 0; id < tok->n_vocab; id++)
        if ((tok->kind[id] == TOK_ADDED || tok->kind[id] == TOK_SPECIAL) && tok_len(tok, id) > 0) n++;
    added_sort_key *keys = malloc((n ? n : 1) * sizeof *keys);
    tok->added = malloc((n ? n : 1) * sizeof *tok->added);
    if (!keys || !tok->added) {
        free(keys);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", source);
    }
    for (int32_t id = 0; id < tok->n_vocab; id++)
        if ((tok->kind[id] == TOK_ADDED || tok->kind[id] == TOK_SPECIAL) && tok_len(tok, id) > 0)
            keys[tok->n_added++] = (added_sort_key){(unsigned char)tok_text(tok, id)[0], (uint32_t)tok_len(tok, id), id};
    qsort(keys, tok->n_added, sizeof *keys, cmp_added);
    for (size_t i = 0; i < tok->n_added; i++) tok->added[i] = keys[i].id;
    free(keys);
    size_t i = 0;
    for (int b = 0; b < 256; b++) {
        tok->added_by_byte[b] = (uint32_t)i;
        while (i < tok->n_added && (unsigned char)tok_text(tok, tok->added[i])[0] == b) i++;
    }
    tok->added_by_byte[256] = (uint32_t)tok->n_added;
    return INF_OK;
}

static int32_t find_added(const inf_tokenizer *tok, const char *text) {
    size_t len = strlen(text);
    unsigned char b = (unsigned char)text[0];
    for (uint32_t i = tok->added_by_byte[b]; i < tok->added_by_byte[b + 1]; i++) {
        int32_t id = tok->added[i];
        if (tok_len(tok, id) == len && !memcmp(tok_text(tok, id), text, len)) return id;
    }
    return -1;
}

int32_t inf_tokenizer_find_special(const inf_tokenizer *tok, const char *text) {
    if (!tok || !text || !*text) return -1;
    return find_added(tok, text);
}

static inf_status resolve_merges(inf_tokenizer *tok, const vocab_builder *b, const vocab_index *ix,
                                 inf_error *err) {
    if (b->n_merges > UINT32_MAX) return inf_errorf(err, INF_ERR_FORMAT, "%s: too many merges", b->source);
    if (!bpe_model_init(&tok->bpe, b->n_merges))
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for %zu merges", b->source, b->n_merges);
    for (int c = 0; c < 256; c++) {
        char byte = (char)c;
        tok->bpe.byte_token[c] = index_find(ix, tok, &byte, 1);
        if (tok->bpe.byte_token[c] < 0)
            return inf_errorf(err, INF_ERR_FORMAT, "%s: the vocabulary has no token for byte 0x%02X", b->source, c);
    }
    char joined[2 * TOK_MAX_TOKEN_BYTES];
    for (size_t m = 0; m < b->n_merges; m++) {
        const char *left = b->merge_text.data + b->merge_off[2 * m];
        size_t left_len = b->merge_off[2 * m + 1] - b->merge_off[2 * m];
        const char *right = b->merge_text.data + b->merge_off[2 * m + 1];
        size_t right_len = b->merge_off[2 * m + 2] - b->merge_off[2 * m + 1];
        int32_t l = index_find(ix, tok, left, left_len), r = index_find(ix, tok, right, right_len), merged = -1;
        if (l >= 0 && r >= 0 && left_len + right_len <= sizeof joined) {
            memcpy(joined, left, left_len);
            memcpy(joined + left_len, right, right_len);
            merged = index_find(ix, tok, joined, left_len + right_len);
        }
        if (merged < 0)
            return inf_errorf(err, INF_ERR_FORMAT, "%s: merge %zu: %s is not in the vocabulary", b->source, m,
                              l < 0 ? "its left part" : r < 0 ? "its right part" : "its result");
        bpe_model_add_merge(&tok->bpe, l, r, (uint32_t)m, merged);
    }
    return INF_OK;
}

inf_status vocab_build(vocab_builder *b, inf_tokenizer **out, inf_error *err) {
    *out = NULL;
    int32_t filled = (int32_t)b->text_off[b->n_vocab];
    if (!fill_until(b, b->n_vocab, &filled) || !inf_buf_reserve(&b->text, 0)) {
        vocab_builder_free(b);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", b->source);
    }
    b->text_off[b->n_vocab] = (uint32_t)b->text.len;

    inf_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        vocab_builder_free(b);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", b->source);
    }
    tok->n_vocab = b->n_vocab;
    tok->text = b->text.data;
    tok->text_off = b->text_off;
    tok->kind = b->kind;
    b->text.data = NULL;
    b->text_off = NULL;
    b->kind = NULL;
    tok->nfc = b->nfc;
    tok->add_bos = b->add_bos;
    tok->props = uni_props();

    inf_status st = INF_OK;
    vocab_index ix = {0};
    if (!tok->props) st = inf_errorf(err, INF_ERR_NOMEM, "out of memory for the Unicode tables");
    if (!st) st = index_build(&ix, tok, b->source, err);
    if (!st) st = resolve_merges(tok, b, &ix, err);
    if (!st) st = build_added_index(tok, b->source, err);
    free(ix.slot);
    if (!st) {
        if (b->eos >= tok->n_vocab || b->bos >= tok->n_vocab)
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: eos/bos id (%ld/%ld) outside the vocabulary of %ld", b->source,
                            (long)b->eos, (long)b->bos, (long)tok->n_vocab);
        tok->eos = b->eos < 0 ? -1 : b->eos;
        tok->bos = b->bos < 0 ? -1 : b->bos;
        if (tok->add_bos && tok->bos < 0)
            st = inf_errorf(err, INF_ERR_FORMAT, "%s: add_bos_token is set but there is no bos token", b->source);
        tok->eog[0] = tok->eos;
        tok->eog[1] = find_added(tok, "<|im_end|>");
        tok->eog[2] = find_added(tok, "<|endoftext|>");
    }
    vocab_builder_free(b);
    if (st) {
        inf_tokenizer_free(tok);
        return st;
    }
    *out = tok;
    return INF_OK;
}

void inf_tokenizer_free(inf_tokenizer *tok) {
    if (!tok) return;
    bpe_model_free(&tok->bpe);
    free(tok->text);
    free(tok->text_off);
    free(tok->kind);
    free(tok->added);
    free(tok);
}

/*
 * unicode.h — the Unicode the tokenizer needs, and no more: UTF-8 validation
 * and decoding, the character classes of the Qwen2 split regex (\p{L},
 * \p{N}, \s), and NFC normalization with the tables Hugging Face's normalizer
 * uses (see unicode_tables.c and scripts/gen-unicode-tables.py for why those
 * differ from any single Unicode version).
 */
#ifndef INF_TOK_UNICODE_H
#define INF_TOK_UNICODE_H

#include "core/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- generated tables (unicode_tables.c) */

typedef struct uni_range {
    uint32_t first, last; /* inclusive */
} uni_range;

typedef struct uni_ccc_run {
    uint32_t first, last; /* inclusive; every code point in it has class ccc */
    uint8_t ccc;
} uni_ccc_run;

typedef struct uni_decomposition {
    uint32_t cp;
    uint8_t n;      /* 1..4 */
    uint32_t d[4];  /* full canonical decomposition, canonically ordered */
} uni_decomposition;

typedef struct uni_composition {
    uint32_t first, second, composite;
} uni_composition;

extern const uni_range uni_letter_ranges[];
extern const size_t uni_letter_ranges_count;
extern const uni_range uni_number_ranges[];
extern const size_t uni_number_ranges_count;
extern const uni_range uni_space_ranges[];
extern const size_t uni_space_ranges_count;
extern const uni_ccc_run uni_ccc_runs[];
extern const size_t uni_ccc_runs_count;
extern const uni_decomposition uni_decompositions[];
extern const size_t uni_decompositions_count;
extern const uni_composition uni_compositions[];
extern const size_t uni_compositions_count;

/* ---- per-code-point properties */

enum {
    UNI_OTHER = 0,  /* none of the below ([^\s\p{L}\p{N}]) */
    UNI_LETTER = 1, /* \p{L} */
    UNI_NUMBER = 2, /* \p{N} */
    UNI_SPACE = 3,  /* \s (White_Space, \r and \n included) */
    UNI_CLASS_MASK = 3,
    /* NFC may change text around this code point: a non-zero combining
     * class, no NFC quick-check "yes", or the second half of a composite. */
    UNI_NFC_CHECK = 4,
};

/* One byte of properties per code point (0..0x10FFFF), built on first use
 * (thread-safe); NULL only when the 1.1 MB table cannot be allocated. */
const uint8_t *uni_props(void);

/* ---- UTF-8 */

/* The byte offset of the first byte that does not start a well-formed UTF-8
 * sequence (overlong forms, surrogates and values past U+10FFFF are not
 * well-formed), or len when all of s is valid. */
size_t uni_utf8_invalid_offset(const char *s, size_t len);

/* Decodes the code point at s (valid UTF-8 with at least one byte) and sets *n
 * to its length in bytes. */
static inline uint32_t uni_utf8_decode(const unsigned char *s, size_t *n) {
    unsigned char b = s[0];
    if (b < 0x80) {
        *n = 1;
        return b;
    }
    if (b < 0xE0) {
        *n = 2;
        return ((uint32_t)(b & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (b < 0xF0) {
        *n = 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *n = 4;
    return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
           ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* How many leading bytes of s[0..len) follow the pattern of one well-formed
 * UTF-8 sequence (0 when s[0] cannot start one); *need is the length of the
 * sequence s[0] starts (0 when it starts none). The result equals *need for a
 * complete sequence; a shorter result that equals len is a sequence cut
 * short; any other shorter result is an ill-formed "maximal subpart" that a
 * lossy decoder replaces by one U+FFFD (at least one byte). */
size_t uni_utf8_prefix(const unsigned char *s, size_t len, size_t *need);

/* ---- NFC */

/* True when NFC(s) == s is certain from the quick check (no code point of s
 * has UNI_NFC_CHECK). s is valid UTF-8. */
bool uni_nfc_is_quick_yes(const uint8_t *props, const char *s, size_t len);

/* Appends NFC(s) to out, normalizing only the stretches that need it.
 * s is valid UTF-8. False on allocation failure; on success out->data is
 * not NULL, even for empty s. */
bool uni_nfc_append(const uint8_t *props, const char *s, size_t len, inf_buf *out);

#endif /* INF_TOK_UNICODE_H */

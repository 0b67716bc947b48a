/*
 * pretokenize.c — the Qwen2 split regex as a hand-written matcher.
 *
 * The alternatives are tried in order at each position, as a backtracking
 * engine does; what backtracking would find is computed directly:
 *   1 (?i:'s|'t|'re|'ve|'m|'ll|'d)   case-insensitive, so "'S", "'Ll" match;
 *                                    U+017F (long s) folds to s and matches too
 *   2 [^\r\n\p{L}\p{N}]?\p{L}+        a letter run, with one optional leading
 *                                    character that is no letter, number, CR, LF
 *   3 \p{N}                           one number character
 *   4  ?[^\s\p{L}\p{N}]+[\r\n]*       a run of "other" characters, optionally
 *                                    after one U+0020, then any CR/LF run
 *   5 \s*[\r\n]+                      whitespace up to and including the last
 *                                    CR/LF of the whitespace run
 *   6 \s+(?!\S)                       a whitespace run that ends the text, or
 *                                    all of it but its last character
 *   7 \s+                             a single whitespace character otherwise
 * Each alternative is tried only when the character classes allow it to
 * match, so the whole split is one pass with one table load per character.
 */
#include "tok/pretokenize.h"

#include "tok/unicode.h"

/* The class of the code point at s[pos] (pos < len); sets *n to its byte length. */
static inline int class_at(const uint8_t *props, const unsigned char *s, size_t pos, size_t *n) {
    if (s[pos] < 0x80) {
        *n = 1;
        return props[s[pos]] & UNI_CLASS_MASK;
    }
    return props[uni_utf8_decode(s + pos, n)] & UNI_CLASS_MASK;
}

static inline size_t run_end(const uint8_t *props, const unsigned char *s, size_t len, size_t pos, int cls) {
    size_t n;
    while (pos < len && class_at(props, s, pos, &n) == cls) pos += n;
    return pos;
}

static inline bool is_newline(unsigned char b) {
    return b == '\r' || b == '\n';
}

/* Alternative 1: length of the contraction suffix after the apostrophe, or 0. */
static size_t contraction_len(const unsigned char *t, size_t m) {
    if (m == 0) return 0;
    unsigned char c = t[0] | 0x20; /* ASCII lower case (only letters are compared) */
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 1;
    if (m >= 2 && t[0] == 0xC5 && t[1] == 0xBF) return 2; /* U+017F LATIN SMALL LETTER LONG S */
    if (m < 2) return 0;
    unsigned char c2 = t[1] | 0x20;
    if ((c == 'r' && c2 == 'e') || (c == 'v' && c2 == 'e') || (c == 'l' && c2 == 'l')) return 2;
    return 0;
}

size_t pretok_piece_end(const uint8_t *props, const unsigned char *s, size_t len, size_t pos) {
    unsigned char b = s[pos];
    if (b == '\'') {
        size_t m = contraction_len(s + pos + 1, len - pos - 1);
        if (m) return pos + 1 + m;
    }
    size_t n0;
    int c0 = class_at(props, s, pos, &n0);
    size_t next = pos + n0;

    if (c0 == UNI_LETTER) return run_end(props, s, len, next, UNI_LETTER);
    if (c0 != UNI_NUMBER && !is_newline(b) && next < len) {
        size_t n1;
        if (class_at(props, s, next, &n1) == UNI_LETTER) return run_end(props, s, len, next + n1, UNI_LETTER);
    }
    if (c0 == UNI_NUMBER) return next;

    size_t others = SIZE_MAX; /* where a run of alternative 4 starts */
    if (c0 == UNI_OTHER) {
        others = next;
    } else if (b == ' ' && next < len) {
        size_t n1;
        if (class_at(props, s, next, &n1) == UNI_OTHER) others = next + n1;
    }
    if (others != SIZE_MAX) {
        size_t end = run_end(props, s, len, others, UNI_OTHER);
        while (end < len && is_newline(s[end])) end++;
        return end;
    }

    /* c0 is whitespace: alternatives 5, 6, 7 over the whitespace run */
    size_t last_newline = is_newline(b) ? pos : SIZE_MAX;
    size_t last_start = pos;
    size_t end = next;
    size_t n;
    while (end < len && class_at(props, s, end, &n) == UNI_SPACE) {
        if (is_newline(s[end])) last_newline = end;
        last_start = end;
        end += n;
    }
    if (last_newline != SIZE_MAX) return last_newline + 1;
    if (end == len || last_start == pos) return end;
    return last_start;
}

/*
 * unicode.c — UTF-8 validation, the per-code-point property table, and NFC.
 *
 * The property table is one byte per code point (1.1 MB, built once from the
 * generated ranges): the split regex looks up a class per character, and a
 * flat table makes that one load. NFC runs the textbook algorithm
 * (decompose, order canonically, compose) but only over the stretches that
 * the quick check flags, so text that is already NFC — nearly all text — is
 * copied, not rebuilt.
 */
#include "tok/unicode.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define UNI_MAX_CP 0x10FFFF

/* Hangul syllable arithmetic (Unicode 3.12). */
enum {
    HANGUL_S_BASE = 0xAC00,
    HANGUL_L_BASE = 0x1100,
    HANGUL_V_BASE = 0x1161,
    HANGUL_T_BASE = 0x11A7,
    HANGUL_L_COUNT = 19,
    HANGUL_V_COUNT = 21,
    HANGUL_T_COUNT = 28,
    HANGUL_N_COUNT = HANGUL_V_COUNT * HANGUL_T_COUNT,
    HANGUL_S_COUNT = HANGUL_L_COUNT * HANGUL_N_COUNT,
};

/* ------------------------------------------------------------------ properties */

static uint8_t *props_table; /* [0x110000] */
static pthread_once_t props_once = PTHREAD_ONCE_INIT;

static void mark_ranges(uint8_t *t, const uni_range *r, size_t n, uint8_t cls) {
    for (size_t i = 0; i < n; i++)
        for (uint32_t cp = r[i].first; cp <= r[i].last; cp++) t[cp] = (uint8_t)((t[cp] & ~UNI_CLASS_MASK) | cls);
}

static void build_props(void) {
    uint8_t *t = calloc(UNI_MAX_CP + 1, 1);
    if (!t) return;
    mark_ranges(t, uni_letter_ranges, uni_letter_ranges_count, UNI_LETTER);
    mark_ranges(t, uni_number_ranges, uni_number_ranges_count, UNI_NUMBER);
    mark_ranges(t, uni_space_ranges, uni_space_ranges_count, UNI_SPACE);
    /* NFC quick check: non-zero combining class ... */
    for (size_t i = 0; i < uni_ccc_runs_count; i++)
        for (uint32_t cp = uni_ccc_runs[i].first; cp <= uni_ccc_runs[i].last; cp++) t[cp] |= UNI_NFC_CHECK;
    /* ... second halves of composites (quick check "maybe") ... */
    for (size_t i = 0; i < uni_compositions_count; i++) t[uni_compositions[i].second] |= UNI_NFC_CHECK;
    for (uint32_t cp = HANGUL_V_BASE; cp < HANGUL_V_BASE + HANGUL_V_COUNT; cp++) t[cp] |= UNI_NFC_CHECK;
    for (uint32_t cp = HANGUL_T_BASE + 1; cp < HANGUL_T_BASE + HANGUL_T_COUNT; cp++) t[cp] |= UNI_NFC_CHECK;
    /* ... and decomposable code points that do not recompose to themselves
     * (quick check "no": singletons, exclusions, non-starter decompositions). */
    enum { PRIMARY_COMPOSITE = 0x80 }; /* scratch bit, cleared below */
    for (size_t i = 0; i < uni_compositions_count; i++) t[uni_compositions[i].composite] |= PRIMARY_COMPOSITE;
    for (size_t i = 0; i < uni_decompositions_count; i++)
        if (!(t[uni_decompositions[i].cp] & PRIMARY_COMPOSITE)) t[uni_decompositions[i].cp] |= UNI_NFC_CHECK;
    for (size_t i = 0; i < uni_compositions_count; i++) t[uni_compositions[i].composite] &= ~PRIMARY_COMPOSITE;
    props_table = t;
}

const uint8_t *uni_props(void) {
    pthread_once(&props_once, build_props);
    return props_table;
}

/* ------------------------------------------------------------------ UTF-8 */

size_t uni_utf8_prefix(const unsigned char *s, size_t len, size_t *need) {
    *need = 0;
    if (len == 0) return 0;
    unsigned char b = s[0];
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    size_t n;
    if (b < 0x80) {
        *need = 1;
        return 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0) lo = 0xA0;      /* overlong */
        else if (b == 0xED) hi = 0x9F; /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0) lo = 0x90;      /* overlong */
        else if (b == 0xF4) hi = 0x8F; /* past U+10FFFF */
    } else {
        return 0;
    }
    *need = n;
    size_t k = 1;
    if (k < len && s[k] >= lo && s[k] <= hi) {
        k++;
        while (k < n && k < len && s[k] >= 0x80 && s[k] <= 0xBF) k++;
    }
    return k;
}

size_t uni_utf8_invalid_offset(const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        /* ASCII runs eight bytes at a time */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= len) break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t need;
        size_t k = uni_utf8_prefix(s + i, len - i, &need);
        if (need == 0 || k != need) return i;
        i += need;
    }
    return len;
}

/* ------------------------------------------------------------------ NFC */

static uint8_t ccc_of(const uint8_t *props, uint32_t cp) {
    if (!(props[cp] & UNI_NFC_CHECK)) return 0;
    size_t lo = 0, hi = uni_ccc_runs_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < uni_ccc_runs[mid].first) hi = mid;
        else if (cp > uni_ccc_runs[mid].last) lo = mid + 1;
        else return uni_ccc_runs[mid].ccc;
    }
    return 0;
}

static const uni_decomposition *decomposition_of(uint32_t cp) {
    size_t lo = 0, hi = uni_decompositions_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < uni_decompositions[mid].cp) hi = mid;
        else if (cp > uni_decompositions[mid].cp) lo = mid + 1;
        else return &uni_decompositions[mid];
    }
    return NULL;
}

/* The primary composite of (a, b), or 0. */
static uint32_t compose_pair(uint32_t a, uint32_t b) {
    if (a >= HANGUL_L_BASE && a < HANGUL_L_BASE + HANGUL_L_COUNT && b >= HANGUL_V_BASE &&
        b < HANGUL_V_BASE + HANGUL_V_COUNT)
        return HANGUL_S_BASE + ((a - HANGUL_L_BASE) * HANGUL_V_COUNT + (b - HANGUL_V_BASE)) * HANGUL_T_COUNT;
    if (a >= HANGUL_S_BASE && a < HANGUL_S_BASE + HANGUL_S_COUNT && (a - HANGUL_S_BASE) % HANGUL_T_COUNT == 0 &&
        b > HANGUL_T_BASE && b < HANGUL_T_BASE + HANGUL_T_COUNT)
        return a + (b - HANGUL_T_BASE);
    size_t lo = 0, hi = uni_compositions_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uni_composition *c = &uni_compositions[mid];
        if (a < c->first || (a == c->first && b < c->second)) hi = mid;
        else if (a > c->first || b > c->second) lo = mid + 1;
        else return c->composite;
    }
    return 0;
}

/* Stable sort of one run of non-starters by combining class: insertion sort
 * for short runs, counting sort (linear) for long ones. */
static void order_run(uint32_t *cp, uint8_t *ccc, size_t n, uint32_t *tmp_cp, uint8_t *tmp_ccc) {
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            uint32_t c = cp[i];
            uint8_t k = ccc[i];
            size_t j = i;
            for (; j > 0 && ccc[j - 1] > k; j--) {
                cp[j] = cp[j - 1];
                ccc[j] = ccc[j - 1];
            }
            cp[j] = c;
            ccc[j] = k;
        }
        return;
    }
    size_t start[257] = {0};
    for (size_t i = 0; i < n; i++) start[ccc[i] + 1]++;
    for (size_t k = 1; k <= 256; k++) start[k] += start[k - 1];
    for (size_t i = 0; i < n; i++) {
        size_t at = start[ccc[i]]++;
        tmp_cp[at] = cp[i];
        tmp_ccc[at] = ccc[i];
    }
    memcpy(cp, tmp_cp, n * sizeof *cp);
    memcpy(ccc, tmp_ccc, n);
}

/* Appends NFC of one stretch s[0..len) (valid UTF-8) to out. */
static bool nfc_stretch(const uint8_t *props, const unsigned char *s, size_t len, inf_buf *out) {
    size_t max_cp; /* a code point decomposes to at most 4 */
    if (__builtin_mul_overflow(len, 4, &max_cp)) return false;
    size_t bytes; /* cp + tmp_cp (uint32) and ccc + tmp_ccc (uint8) */
    if (__builtin_mul_overflow(max_cp, 2 * sizeof(uint32_t) + 2, &bytes)) return false;
    uint32_t *cp = malloc(bytes);
    if (!cp) return false;
    uint32_t *tmp_cp = cp + max_cp;
    uint8_t *ccc = (uint8_t *)(tmp_cp + max_cp);
    uint8_t *tmp_ccc = ccc + max_cp;

    /* 1. full canonical decomposition */
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t k;
        uint32_t c = uni_utf8_decode(s + i, &k);
        i += k;
        if (c >= HANGUL_S_BASE && c < HANGUL_S_BASE + HANGUL_S_COUNT) {
            uint32_t si = c - HANGUL_S_BASE;
            cp[n++] = HANGUL_L_BASE + si / HANGUL_N_COUNT;
            cp[n++] = HANGUL_V_BASE + (si % HANGUL_N_COUNT) / HANGUL_T_COUNT;
            if (si % HANGUL_T_COUNT) cp[n++] = HANGUL_T_BASE + si % HANGUL_T_COUNT;
            continue;
        }
        const uni_decomposition *d = c >= 0xC0 ? decomposition_of(c) : NULL; /* none below U+00C0 */
        if (d) {
            for (size_t j = 0; j < d->n; j++) cp[n++] = d->d[j];
        } else {
            cp[n++] = c;
        }
    }
    for (size_t i = 0; i < n; i++) ccc[i] = ccc_of(props, cp[i]);

    /* 2. canonical ordering of each run of non-starters */
    for (size_t i = 0; i < n;) {
        if (!ccc[i]) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && ccc[j]) j++;
        order_run(cp + i, ccc + i, j - i, tmp_cp, tmp_ccc);
        i = j;
    }

    /* 3. canonical composition: each character joins the last starter unless
     * a character between them has a class of 0 or >= its own */
    size_t kept = 0;
    size_t starter = SIZE_MAX;
    int last_ccc = -1; /* class of the last kept character after the starter; -1: none yet */
    for (size_t i = 0; i < n; i++) {
        uint32_t c = cp[i];
        int k = ccc[i];
        if (starter != SIZE_MAX && (last_ccc < 0 || (last_ccc > 0 && last_ccc < k))) {
            uint32_t composite = compose_pair(cp[starter], c);
            if (composite) {
                cp[starter] = composite;
                continue;
            }
        }
        if (k == 0) {
            starter = kept;
            last_ccc = -1;
        } else {
            last_ccc = k;
        }
        cp[kept++] = c;
    }

    bool ok = inf_buf_reserve(out, kept * 4);
    if (ok)
        for (size_t i = 0; i < kept; i++) out->len += inf_utf8_encode(cp[i], out->data + out->len);
    free(cp);
    return ok;
}

bool uni_nfc_is_quick_yes(const uint8_t *props, const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t c = uni_utf8_decode(s + i, &k);
        if (props[c] & UNI_NFC_CHECK) return false;
        i += k;
    }
    return true;
}

bool uni_nfc_append(const uint8_t *props, const char *text, size_t len, inf_buf *out) {
    const unsigned char *s = (const unsigned char *)text;
    if (!inf_buf_reserve(out, len ? len : 1)) return false; /* out->data is never NULL after success */
    if (len == 0) return true;
    size_t copied = 0;     /* s[0..copied) has been dealt with */
    size_t last_start = 0; /* start of the last code point before i */
    for (size_t i = 0; i < len;) {
        if (s[i] < 0x80) {
            last_start = i++;
            continue;
        }
        size_t k;
        uint32_t c = uni_utf8_decode(s + i, &k);
        if (!(props[c] & UNI_NFC_CHECK)) {
            last_start = i;
            i += k;
            continue;
        }
        /* A stretch that needs normalizing: from the starter before the
         * flagged code point (it may compose with what follows) up to the
         * next code point the quick check passes, which can neither change
         * nor join what precedes it. */
        size_t from = i > copied ? last_start : i;
        size_t to = i + k;
        while (to < len) {
            if (s[to] < 0x80) break;
            c = uni_utf8_decode(s + to, &k);
            if (!(props[c] & UNI_NFC_CHECK)) break;
            to += k;
        }
        if (!inf_buf_reserve(out, from - copied)) return false;
        memcpy(out->data + out->len, s + copied, from - copied);
        out->len += from - copied;
        if (!nfc_stretch(props, s + from, to - from, out)) return false;
        copied = to;
        i = to;
    }
    if (!inf_buf_reserve(out, len - copied)) return false;
    memcpy(out->data + out->len, s + copied, len - copied);
    out->len += len - copied;
    return true;
}

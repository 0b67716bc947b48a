/*
 * fuzz_tokenizer.c — libFuzzer target for encoding and decoding with the
 * real Qwen3 tokenizer (data/qwen3-tokenizer/tokenizer.json, loaded once;
 * run from the repository root).
 *
 * The input is text (any bytes). Checks, each against something other than
 * the code under test where one exists:
 *   - UTF-8 validity as the tokenizer judges it equals utf8proc's; invalid
 *     text is INF_ERR_FORMAT, valid text always encodes;
 *   - every id is in the vocabulary, and with INF_TOKENIZE_NO_SPECIAL no id
 *     is an added or special token (untrusted text never becomes control
 *     tokens);
 *   - decode(encode(x)) == NFC(x) with INF_TOKENIZE_NO_SPECIAL, where NFC is
 *     the tokenizer's own (the tables Hugging Face uses), and that NFC equals
 *     utf8proc's whenever every code point of x has the same combining class
 *     and canonical decomposition in both tables (HF's tables leave out ~99
 *     newer combining marks on purpose: see scripts/gen-unicode-tables.py);
 *     with special tokens, NFC(decode(encode(x))) == NFC(x) (added tokens are
 *     split off before normalization, as Hugging Face does);
 *   - the input read as little-endian int32 ids: detokenize succeeds exactly
 *     when every id is in range (else INF_ERR_INVALID); streaming the same ids
 *     through inf_detok_stream_* emits only valid UTF-8, refuses bad ids
 *     without changing its state, and altogether emits what a lossy UTF-8
 *     decoder (one U+FFFD per maximal ill-formed subpart, written here from
 *     the Unicode standard's table 3-7) makes of the concatenated bytes.
 */
#include "fuzz_common.h"

#include "inferno.h"
#include "tok/unicode.h"
#include "tok/vocab.h"

#include <string.h>
#include <utf8proc.h>

static const char TOKENIZER_PATH[] = "data/qwen3-tokenizer/tokenizer.json";

static inf_tokenizer *tok;
static uint8_t *tok_ccc;       /* [0x110000] combining class in the tokenizer's tables */
static uint8_t *tok_decomp;    /* [0x110000] 1 when the tokenizer's tables decompose it */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    inf_error err;
    if (inf_tokenizer_load(TOKENIZER_PATH, &tok, &err) != INF_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s (run from the repository root)\n", err.msg);
        exit(1);
    }
    tok_ccc = calloc(0x110000, 1);
    tok_decomp = calloc(0x110000, 1);
    FUZZ_CHECK(tok_ccc && tok_decomp, "out of memory");
    for (size_t i = 0; i < uni_ccc_runs_count; i++)
        for (uint32_t cp = uni_ccc_runs[i].first; cp <= uni_ccc_runs[i].last; cp++) tok_ccc[cp] = uni_ccc_runs[i].ccc;
    for (size_t i = 0; i < uni_decompositions_count; i++) tok_decomp[uni_decompositions[i].cp] = 1;
    return 0;
}

/* ------------------------------------------------------------------ oracles */

static bool utf8proc_valid(const uint8_t *s, size_t len) {
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(s + i, (utf8proc_ssize_t)(len - i), &cp);
        if (n <= 0) return false;
        i += (size_t)n;
    }
    return true;
}

static bool is_hangul_syllable(utf8proc_int32_t cp) { return cp >= 0xAC00 && cp <= 0xD7A3; }

/* True when both tables agree on every code point of valid UTF-8 s, and
 * utf8proc is not known to be wrong on it: utf8proc 2.8 deletes U+11A7
 * (the jamo just before the trailing consonants) after an LV syllable,
 * where Python's unicodedata and Hugging Face keep it. */
static bool nfc_tables_agree(const uint8_t *s, size_t len) {
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t cp;
        i += (size_t)utf8proc_iterate(s + i, (utf8proc_ssize_t)(len - i), &cp);
        if (cp == 0x11A7) return false;
        const utf8proc_property_t *p = utf8proc_get_property(cp);
        bool decomposes = p->decomp_type == 0 && p->decomp_seqindex != UINT16_MAX && !is_hangul_syllable(cp);
        if (p->combining_class != tok_ccc[cp] || decomposes != (tok_decomp[cp] != 0)) return false;
    }
    return true;
}

/* utf8proc's NFC of valid UTF-8 (NUL bytes included); malloc'd. */
static char *utf8proc_nfc(const uint8_t *s, size_t len, size_t *out_len) {
    utf8proc_uint8_t *out = NULL;
    utf8proc_ssize_t n = utf8proc_map(s, (utf8proc_ssize_t)len, &out, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    FUZZ_CHECK(n >= 0, "utf8proc_map: %s", utf8proc_errmsg(n));
    *out_len = (size_t)n;
    return (char *)out;
}

static const char FFFD[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

/* Lossy UTF-8 decoding: well-formed sequences are copied, each maximal
 * subpart of an ill-formed one becomes U+FFFD (Unicode 15, section 3.9,
 * table 3-7 and "U+FFFD Substitution of Maximal Subparts"). out has room
 * for 3 bytes per input byte. */
static size_t lossy_utf8(const uint8_t *s, size_t len, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint8_t b = s[i];
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF; /* range of the second byte */
        if (b < 0x80) {
            out[o++] = (char)b;
            i++;
            continue;
        } else if (b >= 0xC2 && b <= 0xDF) {
            need = 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            need = 3;
            if (b == 0xE0) lo = 0xA0;
            if (b == 0xED) hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 4;
            if (b == 0xF0) lo = 0x90;
            if (b == 0xF4) hi = 0x8F;
        } else {
            memcpy(out + o, FFFD, 3);
            o += 3;
            i++;
            continue;
        }
        size_t k = 1;
        while (k < need && i + k < len) {
            uint8_t c = s[i + k];
            if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
            k++;
        }
        if (k == need) {
            memcpy(out + o, s + i, need);
            o += need;
        } else {
            memcpy(out + o, FFFD, 3);
            o += 3;
        }
        i += k;
    }
    return o;
}

/* ------------------------------------------------------------------ checks */

/* Equal byte strings (either pointer may be NULL when its length is 0). */
static bool same_bytes(const void *a, size_t a_len, const void *b, size_t b_len) {
    return a_len == b_len && (a_len == 0 || !memcmp(a, b, a_len));
}

static bool is_added(int32_t id) { return tok->kind[id] == TOK_ADDED || tok->kind[id] == TOK_SPECIAL; }

static char *detok(const int32_t *ids, size_t n, size_t *len) {
    char *text = NULL;
    inf_error err;
    inf_status st = inf_detokenize(tok, ids, n, &text, len, &err);
    FUZZ_CHECK(st == INF_OK, "ids from inf_tokenize do not detokenize: %s", err.msg);
    return text;
}

/* Streams ids one by one; returns everything emitted (malloc'd), with the
 * flush, in *len. Ids outside the vocabulary must be refused, changing nothing. */
static char *stream(const int32_t *ids, size_t n, size_t *len) {
    char *all = malloc(n * INF_DETOK_STREAM_MAX_OUT + 3 + 1);
    FUZZ_CHECK(all != NULL, "out of memory");
    size_t total = 0;
    inf_detok_stream st;
    inf_detok_stream_init(&st);
    for (size_t i = 0; i < n; i++) {
        inf_detok_stream before = st;
        size_t got = 1;
        inf_error err;
        inf_status s = inf_detok_stream_push(tok, &st, ids[i], all + total, INF_DETOK_STREAM_MAX_OUT, &got, &err);
        if (ids[i] < 0 || ids[i] >= inf_tokenizer_n_vocab(tok)) {
            FUZZ_CHECK(s == INF_ERR_INVALID && got == 0, "bad id %d: status %d, %zu bytes", ids[i], s, got);
            FUZZ_CHECK(st.n_pending == before.n_pending && !memcmp(st.pending, before.pending, st.n_pending),
                       "a refused id changed the stream");
            continue;
        }
        FUZZ_CHECK(s == INF_OK, "id %d: %s", ids[i], err.msg);
        FUZZ_CHECK(got <= INF_DETOK_STREAM_MAX_OUT, "id %d: %zu bytes", ids[i], got);
        FUZZ_CHECK(uni_utf8_invalid_offset(all + total, got) == got && utf8proc_valid((uint8_t *)all + total, got),
                   "id %d: the stream emitted invalid UTF-8", ids[i]);
        total += got;
    }
    size_t tail = inf_detok_stream_flush(&st, all + total, 3);
    FUZZ_CHECK(tail == 0 || (tail == 3 && !memcmp(all + total, FFFD, 3)), "flush wrote %zu bytes", tail);
    total += tail;
    FUZZ_CHECK(inf_detok_stream_flush(&st, all + total, 3) == 0, "a second flush emitted bytes");
    *len = total;
    return all;
}

static void check_text(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    bool valid = uni_utf8_invalid_offset(text, size) == size;
    FUZZ_CHECK(valid == utf8proc_valid(data, size), "UTF-8 validity: tokenizer %d, utf8proc %d", valid, !valid);

    inf_buf nfc = {0};
    if (valid) FUZZ_CHECK(uni_nfc_append(uni_props(), text, size, &nfc), "out of memory");
    if (valid && nfc_tables_agree(data, size)) {
        size_t ref_len;
        char *ref = utf8proc_nfc(data, size, &ref_len);
        FUZZ_CHECK(same_bytes(ref, ref_len, nfc.data, nfc.len), "NFC differs from utf8proc's");
        free(ref);
    }

    for (int flags = 0; flags <= INF_TOKENIZE_NO_SPECIAL; flags += INF_TOKENIZE_NO_SPECIAL) {
        int32_t *ids = NULL;
        size_t n_ids = 0;
        inf_error err;
        inf_status st = inf_tokenize(tok, text, size, flags, &ids, &n_ids, &err);
        if (!valid) {
            FUZZ_CHECK(st == INF_ERR_FORMAT && !ids && !n_ids, "invalid UTF-8 gave status %d", st);
            continue;
        }
        FUZZ_CHECK(st == INF_OK, "valid text does not encode: %s", err.msg);
        for (size_t i = 0; i < n_ids; i++) {
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < inf_tokenizer_n_vocab(tok), "id %d out of range", ids[i]);
            if (flags & INF_TOKENIZE_NO_SPECIAL)
                FUZZ_CHECK(!is_added(ids[i]), "NO_SPECIAL produced added token %d", ids[i]);
        }
        size_t len;
        char *back = detok(ids, n_ids, &len);
        if (flags & INF_TOKENIZE_NO_SPECIAL) {
            FUZZ_CHECK(same_bytes(back, len, nfc.data, nfc.len), "decode(encode(x)) != NFC(x)");
        } else {
            inf_buf back_nfc = {0};
            FUZZ_CHECK(uni_nfc_append(uni_props(), back, len, &back_nfc), "out of memory");
            FUZZ_CHECK(same_bytes(back_nfc.data, back_nfc.len, nfc.data, nfc.len),
                       "NFC(decode(encode(x))) != NFC(x)");
            free(back_nfc.data);
        }
        size_t streamed_len;
        char *streamed = stream(ids, n_ids, &streamed_len);
        FUZZ_CHECK(same_bytes(streamed, streamed_len, back, len), "streamed text differs from inf_detokenize");
        free(streamed);
        free(back);
        free(ids);
    }
    free(nfc.data);
}

static void check_ids(const uint8_t *data, size_t size) {
    size_t n = size / 4;
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    FUZZ_CHECK(ids != NULL, "out of memory");
    if (n) memcpy(ids, data, n * 4);
    bool in_range = true;
    for (size_t i = 0; i < n; i++) in_range &= ids[i] >= 0 && ids[i] < inf_tokenizer_n_vocab(tok);

    char *text = NULL;
    size_t len = 0;
    inf_error err;
    inf_status st = inf_detokenize(tok, ids, n, &text, &len, &err);
    if (!in_range) {
        FUZZ_CHECK(st == INF_ERR_INVALID && !text, "ids out of range gave status %d", st);
    } else {
        FUZZ_CHECK(st == INF_OK && text && text[len] == 0, "detokenize failed: %s", err.msg);
        size_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            size_t tlen;
            const char *bytes = inf_tokenizer_token_bytes(tok, ids[i], &tlen);
            FUZZ_CHECK(bytes && same_bytes(text + sum, tlen, bytes, tlen), "bytes of id %d", ids[i]);
            sum += tlen;
        }
        FUZZ_CHECK(sum == len, "detokenized %zu bytes, tokens hold %zu", len, sum);
    }

    /* the stream skips refused ids, so its output is the lossy decoding of the in-range ids' bytes */
    size_t raw_len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t tlen = 0;
        if (inf_tokenizer_token_bytes(tok, ids[i], &tlen)) raw_len += tlen;
    }
    uint8_t *raw = malloc(raw_len + 1);
    char *expected = malloc(3 * raw_len + 1);
    FUZZ_CHECK(raw && expected, "out of memory");
    raw_len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t tlen = 0;
        const char *bytes = inf_tokenizer_token_bytes(tok, ids[i], &tlen);
        if (!bytes || !tlen) continue;
        memcpy(raw + raw_len, bytes, tlen);
        raw_len += tlen;
    }
    size_t expected_len = lossy_utf8(raw, raw_len, expected);
    size_t streamed_len;
    char *streamed = stream(ids, n, &streamed_len);
    FUZZ_CHECK(same_bytes(streamed, streamed_len, expected, expected_len),
               "streamed text is not the lossy UTF-8 decoding of the tokens' bytes");
    free(streamed);
    free(expected);
    free(raw);
    free(text);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_text(data, size);
    check_ids(data, size);
    return 0;
}

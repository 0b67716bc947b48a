/*
 * test_tokenizer.c — the tokenizer against Hugging Face tokenizers.
 *
 *   golden      every text of tests/data/tokenizer/corpus.jsonl encodes to
 *               exactly the ids HF produces (ids.jsonl), and with
 *               INF_TOKENIZE_NO_SPECIAL to HF's ids with no added tokens
 *               (ids-no-special.jsonl); decoding gives HF's decoding
 *               (decoded*.jsonl: the NFC text, added tokens kept verbatim).
 *               The files come from scripts/gen-tokenizer-goldens.sh.
 *   gguf        the same corpus through a GGUF vocabulary (the full Qwen3
 *               vocabulary written by inf_synth_write, padded to 151936 as
 *               llama.cpp's converter pads it) gives identical ids; a
 *               truncated 8192-entry vocabulary encodes the golden prompts
 *               to the ids llama.cpp gives for them (tests/data/golden) and
 *               still round-trips the corpus.
 *   stream      token by token decoding equals whole decoding; characters
 *               split across byte tokens are held back until complete;
 *               ill-formed bytes become U+FFFD; bad ids and small buffers
 *               are refused without changing the stream.
 *   errors      invalid UTF-8 (error names the byte offset), ids outside the
 *               vocabulary, malformed or unsupported tokenizer.json / GGUF.
 *   threads     concurrent encoders sharing one tokenizer (and its cache)
 *               agree with the goldens (run under `make TSAN=1` for races).
 */
#include "harness.h"

#include "core/common.h"
#include "inferno.h"
#include "io/gguf.h"
#include "tok/tokenizer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKENIZER_JSON "data/qwen3-tokenizer/tokenizer.json"
#define DATA "tests/data/tokenizer/"

static const char *tmpdir;

/* ------------------------------------------------------------------ golden files */

typedef struct text {
    char *s;
    size_t len;
} text;

typedef struct id_list {
    int32_t *v;
    size_t n;
} id_list;

typedef struct corpus {
    size_t n;
    text *texts, *decoded, *decoded_plain;
    id_list *ids, *ids_plain;
} corpus;

/* Decodes a JSON string line (embedded U+0000 kept, which cJSON cannot). */
static bool parse_string(const char *s, size_t n, text *out) {
    out->s = malloc(n + 1);
    size_t o = 0;
    if (!out->s || n < 2 || s[0] != '"' || s[n - 1] != '"') return false;
    for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] != '\\') {
            out->s[o++] = s[i];
            continue;
        }
        char e = s[++i];
        if (e != 'u') {
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *hit = strchr(from, e);
            if (!e || !hit) return false;
            out->s[o++] = to[hit - from];
            continue;
        }
        int cp = inf_hex4(s + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
            int lo = inf_hex4(s + i + 3);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
        if (cp < 0) return false;
        o += inf_utf8_encode((uint32_t)cp, out->s + o);
    }
    out->s[o] = 0;
    out->len = o;
    return true;
}

static bool parse_ids(const char *s, size_t n, id_list *out) {
    out->v = malloc((n / 2 + 1) * sizeof *out->v);
    out->n = 0;
    if (!out->v || n < 2 || s[0] != '[' || s[n - 1] != ']') return false;
    for (size_t i = 1; i + 1 < n;) {
        char *end;
        long v = strtol(s + i, &end, 10);
        if (end == s + i) return false;
        out->v[out->n++] = (int32_t)v;
        i = (size_t)(end - s);
        if (s[i] == ',') i++;
    }
    return true;
}

/* Calls fn on each line of a file; returns the number of lines, or -1. */
static long for_each_line(const char *path, void *items, size_t item_size, bool (*fn)(const char *, size_t, void *)) {
    size_t len;
    char *buf = test_read_file(path, &len);
    if (!buf) return -1;
    long n = 0;
    for (size_t pos = 0; pos < len;) {
        char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        if (end > pos) {
            if (items && !fn(buf + pos, end - pos, (char *)items + (size_t)n * item_size)) {
                free(buf);
                return -1;
            }
            n++;
        }
        pos = end + 1;
    }
    free(buf);
    return n;
}

static bool line_string(const char *s, size_t n, void *out) { return parse_string(s, n, out); }
static bool line_ids(const char *s, size_t n, void *out) { return parse_ids(s, n, out); }

static bool load_corpus(corpus *c) {
    long n = for_each_line(DATA "corpus.jsonl", NULL, 0, NULL);
    if (n <= 0) return false;
    c->n = (size_t)n;
    c->texts = calloc(c->n, sizeof *c->texts);
    c->decoded = calloc(c->n, sizeof *c->decoded);
    c->decoded_plain = calloc(c->n, sizeof *c->decoded_plain);
    c->ids = calloc(c->n, sizeof *c->ids);
    c->ids_plain = calloc(c->n, sizeof *c->ids_plain);
    return c->texts && c->decoded && c->decoded_plain && c->ids && c->ids_plain &&
           for_each_line(DATA "corpus.jsonl", c->texts, sizeof(text), line_string) == n &&
           for_each_line(DATA "decoded.jsonl", c->decoded, sizeof(text), line_string) == n &&
           for_each_line(DATA "decoded-no-special.jsonl", c->decoded_plain, sizeof(text), line_string) == n &&
           for_each_line(DATA "ids.jsonl", c->ids, sizeof(id_list), line_ids) == n &&
           for_each_line(DATA "ids-no-special.jsonl", c->ids_plain, sizeof(id_list), line_ids) == n;
}

static void free_corpus(corpus *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->texts[i].s);
        free(c->decoded[i].s);
        free(c->decoded_plain[i].s);
        free(c->ids[i].v);
        free(c->ids_plain[i].v);
    }
    free(c->texts);
    free(c->decoded);
    free(c->decoded_plain);
    free(c->ids);
    free(c->ids_plain);
}

/* ------------------------------------------------------------------ comparisons */

/* Checks ids against the expected list; on a mismatch says where, with context. */
static bool check_ids(const char *what, size_t line, const int32_t *got, size_t n_got, const id_list *want) {
    size_t i = 0;
    while (i < n_got && i < want->n && got[i] == want->v[i]) i++;
    if (i == n_got && i == want->n) return TEST_CHECK(true, "ids equal");
    char ctx[256];
    int at = 0;
    at += snprintf(ctx + at, sizeof ctx - (size_t)at, "got [..");
    for (size_t k = i; k < n_got && k < i + 6; k++) at += snprintf(ctx + at, sizeof ctx - (size_t)at, " %d", got[k]);
    at += snprintf(ctx + at, sizeof ctx - (size_t)at, "] want [..");
    for (size_t k = i; k < want->n && k < i + 6; k++)
        at += snprintf(ctx + at, sizeof ctx - (size_t)at, " %d", want->v[k]);
    snprintf(ctx + at, sizeof ctx - (size_t)at, "]");
    return TEST_CHECK(false, "%s: corpus line %zu: ids differ at index %zu of %zu/%zu: %s", what, line + 1, i, n_got,
                      want->n, ctx);
}

static bool encode(const inf_tokenizer *tok, const text *t, int flags, int32_t **ids, size_t *n) {
    inf_error err;
    inf_status st = inf_tokenize(tok, t->s, t->len, flags, ids, n, &err);
    return TEST_CHECK(st == INF_OK, "inf_tokenize: %s", err.msg);
}

static void check_decode(const inf_tokenizer *tok, const char *what, size_t line, const int32_t *ids, size_t n,
                         const text *want) {
    char *out;
    size_t len;
    inf_error err;
    if (!TEST_CHECK(inf_detokenize(tok, ids, n, &out, &len, &err) == INF_OK, "inf_detokenize: %s", err.msg)) return;
    TEST_CHECK(len == want->len && !memcmp(out, want->s, len), "%s: corpus line %zu: decoded text differs", what,
               line + 1);
    free(out);
}

/* Streams ids one by one with a tight buffer; the output must equal want. */
static void check_stream(const inf_tokenizer *tok, size_t line, const int32_t *ids, size_t n, const text *want) {
    char *all = malloc(want->len + INF_DETOK_STREAM_MAX_OUT + 4);
    size_t total = 0;
    bool ok = all != NULL;
    inf_detok_stream st;
    inf_detok_stream_init(&st);
    for (size_t i = 0; ok && i < n; i++) {
        size_t got;
        inf_error err;
        ok = inf_detok_stream_push(tok, &st, ids[i], all + total, INF_DETOK_STREAM_MAX_OUT, &got, &err) == INF_OK &&
             total + got <= want->len;
        total += got;
    }
    if (ok) total += inf_detok_stream_flush(&st, all + total, 3);
    TEST_CHECK(ok && total == want->len && !memcmp(all, want->s, total), "stream: corpus line %zu differs", line + 1);
    free(all);
}

/* ------------------------------------------------------------------ tests */

static void test_basics(const inf_tokenizer *tok) {
    test_begin("basics");
    TEST_CHECK(inf_tokenizer_n_vocab(tok) == 151669, "n_vocab %d", inf_tokenizer_n_vocab(tok));
    TEST_CHECK(inf_tokenizer_eos(tok) == 151645, "eos %d (tokenizer_config.json: <|im_end|>)", inf_tokenizer_eos(tok));
    TEST_CHECK(inf_tokenizer_find_special(tok, "<|endoftext|>") == 151643, "<|endoftext|>");
    TEST_CHECK(inf_tokenizer_find_special(tok, "<|im_start|>") == 151644, "<|im_start|>");
    TEST_CHECK(inf_tokenizer_find_special(tok, "</think>") == 151668, "</think>");
    TEST_CHECK(inf_tokenizer_find_special(tok, "<|im_sta") == -1, "partial name");
    TEST_CHECK(inf_tokenizer_find_special(tok, "hello") == -1, "a BPE token is not special");
    TEST_CHECK(inf_tokenizer_find_special(tok, "") == -1, "empty");
    TEST_CHECK(inf_tokenizer_is_eog(tok, 151645) && inf_tokenizer_is_eog(tok, 151643), "eog: im_end, endoftext");
    TEST_CHECK(!inf_tokenizer_is_eog(tok, 151644) && !inf_tokenizer_is_eog(tok, 0) && !inf_tokenizer_is_eog(tok, -1),
               "not eog");
    size_t len = 0;
    const char *b = inf_tokenizer_token_bytes(tok, 220, &len);
    TEST_CHECK(b && len == 1 && b[0] == ' ', "token 220 is a space");
    b = inf_tokenizer_token_bytes(tok, 151667, &len);
    TEST_CHECK(b && len == 7 && !strcmp(b, "<think>"), "token 151667 is <think>");
    TEST_CHECK(!inf_tokenizer_token_bytes(tok, 151669, &len) && !inf_tokenizer_token_bytes(tok, -1, &len),
               "token bytes out of range");

    int32_t *ids = NULL;
    size_t n = 7;
    inf_error err;
    TEST_CHECK(inf_tokenize(tok, NULL, 0, 0, &ids, &n, &err) == INF_OK && ids && n == 0, "empty text: no ids");
    free(ids);
    TEST_CHECK(inf_tokenize(tok, "Hello world", 11, 0, &ids, &n, &err) == INF_OK && n == 2 && ids[0] == 9707 &&
                   ids[1] == 1879,
               "Hello world");
    free(ids);
}

static void test_golden(const inf_tokenizer *tok, const corpus *c, const char *what) {
    test_begin(what);
    for (size_t i = 0; i < c->n; i++) {
        int32_t *ids;
        size_t n;
        if (encode(tok, &c->texts[i], 0, &ids, &n)) {
            check_ids(what, i, ids, n, &c->ids[i]);
            check_decode(tok, what, i, ids, n, &c->decoded[i]);
            free(ids);
        }
        if (encode(tok, &c->texts[i], INF_TOKENIZE_NO_SPECIAL, &ids, &n)) {
            check_ids(what, i, ids, n, &c->ids_plain[i]);
            check_decode(tok, what, i, ids, n, &c->decoded_plain[i]);
            free(ids);
        }
    }
}

static void test_stream_corpus(const inf_tokenizer *tok, const corpus *c) {
    test_begin("stream: corpus");
    for (size_t i = 0; i < c->n; i++) check_stream(tok, i, c->ids[i].v, c->ids[i].n, &c->decoded[i]);
}

/* The id of the token that is exactly byte b. */
static int32_t id_of_byte(const inf_tokenizer *tok, unsigned char b) {
    for (int32_t id = 0; id < inf_tokenizer_n_vocab(tok); id++) {
        size_t len;
        const char *s = inf_tokenizer_token_bytes(tok, id, &len);
        if (len == 1 && (unsigned char)s[0] == b) return id;
    }
    return -1;
}

/* Pushes one id; checks the output equals want and the status. */
static void push_expect(const inf_tokenizer *tok, inf_detok_stream *st, int32_t id, size_t cap, inf_status want_status,
                        const char *want, const char *what) {
    char out[INF_DETOK_STREAM_MAX_OUT];
    size_t got = 99;
    inf_error err;
    inf_status s = inf_detok_stream_push(tok, st, id, out, cap, &got, &err);
    TEST_CHECK(s == want_status && got == (want ? strlen(want) : 0) && (!want || !memcmp(out, want, got)),
               "%s: status %d, %zu bytes", what, s, got);
}

static void test_stream_cases(const inf_tokenizer *tok) {
    test_begin("stream: cases");
    int32_t c3 = id_of_byte(tok, 0xC3), a9 = id_of_byte(tok, 0xA9), e4 = id_of_byte(tok, 0xE4);
    int32_t b8 = id_of_byte(tok, 0xB8), ad = id_of_byte(tok, 0xAD), x80 = id_of_byte(tok, 0x80);
    int32_t a = id_of_byte(tok, 'a');
    TEST_CHECK(c3 >= 0 && a9 >= 0 && e4 >= 0 && b8 >= 0 && ad >= 0 && x80 >= 0 && a >= 0, "byte tokens found");

    inf_detok_stream st;
    inf_detok_stream_init(&st);
    push_expect(tok, &st, c3, 16, INF_OK, "", "first byte of é is held back");
    push_expect(tok, &st, a9, 16, INF_OK, "\xC3\xA9", "é completes");
    push_expect(tok, &st, e4, 16, INF_OK, "", "中 byte 1");
    push_expect(tok, &st, b8, 16, INF_OK, "", "中 byte 2");
    push_expect(tok, &st, 999999, 16, INF_ERR_INVALID, NULL, "a bad id is refused");
    push_expect(tok, &st, ad, 0, INF_ERR_INVALID, NULL, "a buffer too small is refused");
    TEST_CHECK(st.n_pending == 2, "refusals leave the pending bytes (%zu)", st.n_pending);
    push_expect(tok, &st, ad, 3, INF_OK, "\xE4\xB8\xAD", "中 completes in exactly 3 bytes");
    push_expect(tok, &st, c3, 16, INF_OK, "", "é byte 1 again");
    push_expect(tok, &st, a, 16, INF_OK, "\xEF\xBF\xBD" "a", "interrupted: U+FFFD then a");
    push_expect(tok, &st, x80, 16, INF_OK, "\xEF\xBF\xBD", "a lone continuation byte is U+FFFD");
    push_expect(tok, &st, e4, 16, INF_OK, "", "unfinished at the end");
    char out[8];
    TEST_CHECK(inf_detok_stream_flush(&st, out, sizeof out) == 3 && !memcmp(out, "\xEF\xBF\xBD", 3),
               "flush: U+FFFD for the unfinished character");
    TEST_CHECK(inf_detok_stream_flush(&st, out, sizeof out) == 0, "flush twice: nothing");
    push_expect(tok, &st, inf_tokenizer_find_special(tok, "<|im_end|>"), 16, INF_OK, "<|im_end|>", "an added token");
    push_expect(tok, &st, -1, 16, INF_ERR_INVALID, NULL, "a negative id is refused");
}

static void test_invalid_utf8(const inf_tokenizer *tok) {
    test_begin("errors: invalid UTF-8");
    static const struct {
        const char *s;
        size_t offset;
    } cases[] = {
        {"\xC3", 0},                /* truncated */
        {"ab\xC3(", 2},             /* bad continuation */
        {"\xA0", 0},                /* lone continuation */
        {"x\xE2\x82", 1},           /* truncated 3-byte */
        {"\xF0\x9F\x98", 0},        /* truncated 4-byte */
        {"\xED\xA0\x80", 0},        /* surrogate U+D800 */
        {"\xC0\xAF", 0},            /* overlong '/' */
        {"\xE0\x80\xAF", 0},        /* overlong 3-byte */
        {"\xF4\x90\x80\x80", 0},    /* past U+10FFFF */
        {"\xFF", 0},
        {"hello \xFE world", 6},
        {"<|im_start|>\x80", 12},   /* after an added token */
        {"\xe4\xb8\xad\xe6\x96", 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int flags = 0; flags <= INF_TOKENIZE_NO_SPECIAL; flags++) {
            int32_t *ids = (int32_t *)&ids;
            size_t n = 5;
            inf_error err = {0};
            inf_status st = inf_tokenize(tok, cases[i].s, strlen(cases[i].s), flags, &ids, &n, &err);
            char want[64];
            snprintf(want, sizeof want, "offset %zu ", cases[i].offset);
            TEST_CHECK(st == INF_ERR_FORMAT && !ids && n == 0 && strstr(err.msg, want),
                       "case %zu: status %d, message \"%s\"", i, st, err.msg);
        }
    }
    int32_t *ids;
    size_t n;
    inf_error err;
    TEST_CHECK(inf_tokenize(tok, "a\0b", 3, 0, &ids, &n, &err) == INF_OK && n >= 2, "U+0000 is valid text");
    free(ids);
}

static void test_bad_ids(const inf_tokenizer *tok) {
    test_begin("errors: ids");
    int32_t bad[][2] = {{1, -1}, {1, 151669}, {151669 + 1000, 0}};
    for (size_t i = 0; i < 3; i++) {
        char *text = (char *)&text;
        size_t len = 9;
        inf_error err = {0};
        inf_status st = inf_detokenize(tok, bad[i], 2, &text, &len, &err);
        char want[32];
        snprintf(want, sizeof want, "%d", bad[i][0] == 1 ? bad[i][1] : bad[i][0]);
        TEST_CHECK(st == INF_ERR_INVALID && !text && !len && strstr(err.msg, want), "case %zu: \"%s\"", i, err.msg);
    }
    char *text;
    size_t len;
    inf_error err;
    TEST_CHECK(inf_detokenize(tok, NULL, 0, &text, &len, &err) == INF_OK && text && len == 0 && !text[0],
               "no ids: empty text");
    free(text);
}

/* ---- malformed and unsupported files */

static void write_text(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(s, f);
        fclose(f);
    }
}

/* A small valid tokenizer.json: the 256 byte tokens, then "ab", then one
 * merge; parts of it replaced by the caller's strings to make it wrong. */
static char *small_tokenizer_json(const char *model_type, const char *regex_tail, const char *merge,
                                  const char *added) {
    size_t cap = 64 * 1024;
    char *s = malloc(cap);
    int at = snprintf(s, cap,
                      "{\"version\": \"1.0\", \"added_tokens\": [%s], \"normalizer\": {\"type\": \"NFC\"},\n"
                      "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                      "\"pattern\": {\"Regex\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
                      "\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)%s\"}, "
                      "\"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": "
                      "false, \"trim_offsets\": false, \"use_regex\": false}]},\n"
                      "\"post_processor\": null, \"decoder\": {\"type\": \"ByteLevel\"},\n"
                      "\"model\": {\"type\": \"%s\", \"dropout\": null, \"vocab\": {",
                      added, regex_tail, model_type);
    /* GPT-2 byte-level alphabet, in id order 0..255 by byte value */
    int shifted = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        unsigned cp = printable ? (unsigned)b : 0x100u + (unsigned)shifted++;
        char ch[8];
        if (cp == '"' || cp == '\\') snprintf(ch, sizeof ch, "\\%c", (char)cp);
        else ch[inf_utf8_encode(cp, ch)] = 0;
        at += snprintf(s + at, cap - (size_t)at, "\"%s\": %d, ", ch, b);
    }
    snprintf(s + at, cap - (size_t)at, "\"ab\": 256}, \"merges\": [%s]}}", merge);
    return s;
}

static void expect_load_error(const char *path, inf_status want, const char *needle, const char *what) {
    inf_tokenizer *tok = (inf_tokenizer *)&tok;
    inf_error err = {0};
    inf_status st = inf_tokenizer_load(path, &tok, &err);
    TEST_CHECK(st == want && !tok && strstr(err.msg, needle) && !strchr(err.msg, '\n'),
               "%s: status %d (want %d), \"%s\"", what, st, want, err.msg);
    if (st == INF_OK) inf_tokenizer_free(tok);
}

static void test_bad_json(void) {
    test_begin("errors: tokenizer.json");
    char path[128];
    snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);

    char *good = small_tokenizer_json("BPE", "|\\\\s+", "[\"a\", \"b\"]", "");
    write_text(path, good);
    inf_tokenizer *tok;
    inf_error err;
    if (TEST_CHECK(inf_tokenizer_load(path, &tok, &err) == INF_OK, "small tokenizer.json: %s", err.msg)) {
        int32_t *ids;
        size_t n;
        /* "abab" merges twice; " a" has no merge: its bytes' ids (id = byte value here) */
        TEST_CHECK(inf_tokenize(tok, "abab a", 6, 0, &ids, &n, &err) == INF_OK && n == 4 && ids[0] == 256 &&
                       ids[1] == 256 && ids[2] == ' ' && ids[3] == 'a',
                   "small tokenizer encodes");
        free(ids);
        TEST_CHECK(inf_tokenizer_n_vocab(tok) == 257 && inf_tokenizer_eos(tok) == -1, "no config beside it: no eos");
        inf_tokenizer_free(tok);
    }
    /* the same merge in legacy "a b" form */
    char *legacy = small_tokenizer_json("BPE", "|\\\\s+", "\"a b\"", "");
    write_text(path, legacy);
    if (TEST_CHECK(inf_tokenizer_load(path, &tok, &err) == INF_OK, "legacy merges: %s", err.msg))
        inf_tokenizer_free(tok);
    free(legacy);

    for (size_t cut = 0; cut < strlen(good); cut += strlen(good) / 23 + 1) {
        char *t = strndup(good, cut);
        write_text(path, t);
        char what[48];
        snprintf(what, sizeof what, "truncated at %zu", cut);
        expect_load_error(path, INF_ERR_FORMAT, "tokenizer.json", what);
        free(t);
    }
    free(good);

    struct {
        const char *model, *regex_tail, *merge, *added;
        inf_status want;
        const char *needle;
    } bad[] = {
        {"Unigram", "|\\\\s+", "", "", INF_ERR_UNSUPPORTED, "model.type"},
        {"BPE", "", "", "", INF_ERR_UNSUPPORTED, "pre_tokenizer"},
        {"BPE", "|\\\\s+", "[\"a\", \"qq\"]", "", INF_ERR_FORMAT, "its right part"},
        {"BPE", "|\\\\s+", "[\"b\", \"a\"]", "", INF_ERR_FORMAT, "its result"},
        {"BPE", "|\\\\s+", "\"a b c\"", "", INF_ERR_FORMAT, "merge"},
        {"BPE", "|\\\\s+", "[\"a\", \" \"]", "", INF_ERR_FORMAT, "byte-level alphabet"},
        {"BPE", "|\\\\s+", "",
         "{\"id\": 300, \"content\": \"<x>\", \"lstrip\": true, \"rstrip\": false, \"normalized\": false, "
         "\"special\": true}",
         INF_ERR_UNSUPPORTED, "lstrip"},
        {"BPE", "|\\\\s+", "", "{\"id\": 5, \"content\": \"<x>\", \"special\": true}", INF_ERR_FORMAT, "differs"},
        {"BPE", "|\\\\s+", "", "{\"content\": \"<x>\"}", INF_ERR_FORMAT, "added_tokens[0]"},
        {"BPE", "|\\\\s+", "", "{\"id\": 9000000, \"content\": \"<x>\"}", INF_ERR_FORMAT, "far beyond"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *t = small_tokenizer_json(bad[i].model, bad[i].regex_tail, bad[i].merge, bad[i].added);
        write_text(path, t);
        char what[32];
        snprintf(what, sizeof what, "bad tokenizer.json %zu", i);
        expect_load_error(path, bad[i].want, bad[i].needle, what);
        free(t);
    }
    /* a vocabulary without a token for every byte */
    write_text(path, "{\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Sequence\"}, \"model\": {\"type\": \"BPE\", "
                     "\"vocab\": {\"a\": 0}, \"merges\": []}}");
    expect_load_error(path, INF_ERR_UNSUPPORTED, "pre_tokenizer", "no pre_tokenizer");
    snprintf(path, sizeof path, "%s/missing.json", tmpdir);
    expect_load_error(path, INF_ERR_IO, "missing.json", "missing file");
}

/* A GGUF with a tiny gpt2 vocabulary; model and pre as given (NULL: key absent). */
static void write_small_gguf(const char *path, const char *model, const char *pre, int n_bytes) {
    gguf_writer *w = gguf_writer_new();
    const char *tokens[257];
    char store[256][4];
    int32_t types[257];
    int shifted = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        unsigned cp = printable ? (unsigned)b : 0x100u + (unsigned)shifted++;
        store[b][inf_utf8_encode(cp, store[b])] = 0;
        tokens[b] = store[b];
        types[b] = 1;
    }
    tokens[n_bytes] = "<|im_end|>";
    types[n_bytes] = 3;
    const char *merges[] = {"a b"};
    if (model) gguf_writer_set_str(w, "tokenizer.ggml.model", model);
    if (pre) gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", tokens, (uint64_t)n_bytes + 1);
    gguf_writer_set_array(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)n_bytes + 1);
    gguf_writer_set_str_array(w, "tokenizer.ggml.merges", merges, 1);
    gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)n_bytes);
    inf_error err;
    gguf_writer_write(w, path, &err);
    gguf_writer_free(w);
}

static void test_bad_gguf(void) {
    test_begin("errors: GGUF");
    char path[128];
    snprintf(path, sizeof path, "%s/small.gguf", tmpdir);
    write_small_gguf(path, "gpt2", "qwen2", 256);
    expect_load_error(path, INF_ERR_FORMAT, "merge 0", "merge result missing");
    write_small_gguf(path, "llama", "qwen2", 256);
    expect_load_error(path, INF_ERR_UNSUPPORTED, "tokenizer.ggml.model", "model llama");
    write_small_gguf(path, "gpt2", "llama-bpe", 256);
    expect_load_error(path, INF_ERR_UNSUPPORTED, "llama-bpe", "pre llama-bpe");
    write_small_gguf(path, "gpt2", NULL, 256);
    expect_load_error(path, INF_ERR_UNSUPPORTED, "tokenizer.ggml.pre", "no pre");
    write_small_gguf(path, NULL, "qwen2", 256);
    expect_load_error(path, INF_ERR_FORMAT, "tokenizer.ggml.model", "no model");
    write_small_gguf(path, "gpt2", "qwen2", 200);
    expect_load_error(path, INF_ERR_FORMAT, "byte", "missing byte tokens");
}

/* ---- GGUF vocabularies written by the synthetic model writer */

static bool synth_vocab(const char *path, int n_vocab) {
    inf_synth_options opt;
    inf_synth_options_default(&opt);
    opt.n_layer = 1;
    opt.n_embd = 32;
    opt.n_ff = 32;
    opt.n_head = 2;
    opt.n_head_kv = 1;
    opt.head_dim = 16;
    opt.n_ctx_train = 64;
    opt.weight_type = INF_DTYPE_F32;
    opt.tokenizer_json = TOKENIZER_JSON;
    opt.tokenizer_config_json = "data/qwen3-tokenizer/tokenizer_config.json";
    opt.n_vocab = n_vocab;
    inf_error err;
    return TEST_CHECK(inf_synth_write(&opt, path, &err) == INF_OK, "inf_synth_write: %s", err.msg);
}

static void test_gguf_full(const corpus *c) {
    test_begin("gguf: full vocabulary");
    char path[128];
    snprintf(path, sizeof path, "%s/full.gguf", tmpdir);
    if (!synth_vocab(path, 0)) return;
    inf_tokenizer *tok;
    inf_error err;
    if (!TEST_CHECK(inf_tokenizer_load(path, &tok, &err) == INF_OK, "load: %s", err.msg)) return;
    TEST_CHECK(inf_tokenizer_n_vocab(tok) == 151936, "padded like Qwen3's config: %d", inf_tokenizer_n_vocab(tok));
    TEST_CHECK(inf_tokenizer_eos(tok) == 151645, "eos %d", inf_tokenizer_eos(tok));
    TEST_CHECK(inf_tokenizer_find_special(tok, "<think>") == 151667, "<think>");
    size_t len = 9;
    TEST_CHECK(inf_tokenizer_token_bytes(tok, 151900, &len) && len == 0, "padding ids decode to nothing");
    test_golden(tok, c, "gguf: full vocabulary");
    inf_tokenizer_free(tok);
    unlink(path);
}

static void test_gguf_truncated(const corpus *c) {
    test_begin("gguf: truncated vocabulary");
    char path[128];
    snprintf(path, sizeof path, "%s/small.gguf", tmpdir);
    if (!synth_vocab(path, 8192)) return;
    /* built through the model loader's entry point (an open GGUF) */
    gguf_file *g;
    inf_tokenizer *tok;
    inf_error err;
    if (!TEST_CHECK(gguf_open(path, GGUF_OPEN_METADATA_ONLY, &g, &err) == INF_OK, "open: %s", err.msg)) return;
    inf_status st = inf_tokenizer_from_gguf(g, &tok, &err);
    gguf_close(g);
    if (!TEST_CHECK(st == INF_OK, "inf_tokenizer_from_gguf: %s", err.msg)) return;
    TEST_CHECK(inf_tokenizer_n_vocab(tok) == 8192 && inf_tokenizer_eos(tok) == 8168, "n_vocab %d eos %d",
               inf_tokenizer_n_vocab(tok), inf_tokenizer_eos(tok));

    /* llama.cpp's ids for the golden prompts on this vocabulary (tests/data/golden/tiny-a-f32.p*.json) */
    static const char *prompts[] = {
        "The quick brown fox jumps over the lazy dog.",
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
        ("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nprint(fib(30))  # 832040, caf\xC3\xA9 "
         "na\xC3\xAFve \xE6\x9D\xB1\xE4\xBA\xAC"), /* one text (parentheses: not a missing comma) */
    };
    static const int32_t p1[] = {785, 3974, 293, 4830, 282, 5131, 7784, 82, 916, 279, 1187, 4246, 5562, 13};
    static const int32_t p2[] = {8167, 872, 198, 3838, 374, 279, 6722, 315, 2869, 681, 30, 8168, 198, 8167, 395, 380, 517, 198};
    static const int32_t p3[] = {750,  282, 579, 1445, 982,  262, 470, 308, 421,  308,  366, 220, 17,  770, 282,
                                 579,  1445, 481, 220, 16,   8,   488, 282, 579,  1445, 481, 220, 17,  692, 1350,
                                 955,  579, 7,   18,   15,   593, 220, 671, 220,  23,   18,  17,  15,  19,  15,
                                 11,   2162, 69,  963, 4317, 127, 107, 586, 6567, 251,  109, 6684, 105};
    const id_list want[] = {{(int32_t *)p1, sizeof p1 / 4}, {(int32_t *)p2, sizeof p2 / 4}, {(int32_t *)p3, sizeof p3 / 4}};
    for (size_t i = 0; i < 3; i++) {
        int32_t *ids;
        size_t n;
        text t = {(char *)prompts[i], strlen(prompts[i])};
        if (encode(tok, &t, 0, &ids, &n)) {
            check_ids("llama.cpp prompt", i, ids, n, &want[i]);
            free(ids);
        }
    }
    /* every text still round-trips (every byte has a token) */
    for (size_t i = 0; i < c->n; i++) {
        int32_t *ids;
        size_t n;
        if (encode(tok, &c->texts[i], 0, &ids, &n)) {
            check_decode(tok, "truncated vocabulary", i, ids, n, &c->decoded[i]);
            free(ids);
        }
    }
    inf_tokenizer_free(tok);
    unlink(path);
}

/* ---- threads */

typedef struct thread_arg {
    const inf_tokenizer *tok;
    const corpus *c;
    size_t first, mismatches;
} thread_arg;

static void *encode_all(void *p) {
    thread_arg *a = p;
    for (size_t k = 0; k < a->c->n; k++) {
        size_t i = (a->first + k) % a->c->n;
        int32_t *ids;
        size_t n;
        inf_error err;
        int flags = k % 2 ? INF_TOKENIZE_NO_SPECIAL : 0;
        const id_list *want = flags ? &a->c->ids_plain[i] : &a->c->ids[i];
        if (inf_tokenize(a->tok, a->c->texts[i].s, a->c->texts[i].len, flags, &ids, &n, &err) != INF_OK) {
            a->mismatches++;
            continue;
        }
        if (n != want->n || memcmp(ids, want->v, n * sizeof *ids)) a->mismatches++;
        free(ids);
    }
    return NULL;
}

static void test_threads(const corpus *c) {
    test_begin("threads");
    /* a fresh tokenizer: its word cache starts empty, so threads fill it concurrently */
    inf_tokenizer *tok;
    inf_error err;
    if (!TEST_CHECK(inf_tokenizer_load(TOKENIZER_JSON, &tok, &err) == INF_OK, "load: %s", err.msg)) return;
    enum { N_THREADS = 4 };
    pthread_t th[N_THREADS];
    thread_arg args[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        args[t] = (thread_arg){tok, c, (size_t)t * c->n / N_THREADS, 0};
        pthread_create(&th[t], NULL, encode_all, &args[t]);
    }
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(th[t], NULL);
        TEST_CHECK(args[t].mismatches == 0, "thread %d: %zu texts differ from the goldens", t, args[t].mismatches);
    }
    inf_tokenizer_free(tok);
}

int main(void) {
    if (!(tmpdir = test_tmpdir("test-tokenizer"))) return 1;
    corpus c = {0};
    test_begin("corpus");
    bool have_corpus = TEST_CHECK(load_corpus(&c), "cannot read the goldens in " DATA);
    TEST_CHECK(c.n >= 500, "corpus has %zu texts (at least 500)", c.n);

    inf_tokenizer *tok = NULL;
    inf_error err;
    test_begin("load");
    if (TEST_CHECK(inf_tokenizer_load(TOKENIZER_JSON, &tok, &err) == INF_OK, "load %s: %s", TOKENIZER_JSON, err.msg)) {
        test_basics(tok);
        if (have_corpus) {
            test_golden(tok, &c, "golden: tokenizer.json");
            test_stream_corpus(tok, &c);
        }
        test_stream_cases(tok);
        test_invalid_utf8(tok);
        test_bad_ids(tok);
        inf_tokenizer_free(tok);
    }
    test_bad_json();
    test_bad_gguf();
    if (have_corpus) {
        test_gguf_full(&c);
        test_gguf_truncated(&c);
        test_threads(&c);
    }
    free_corpus(&c);
    test_tmpdir_remove();
    return test_summary();
}

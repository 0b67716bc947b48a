/*
 * tokenizer.c — the tokenizer's public API: loading (GGUF or tokenizer.json),
 * encoding, decoding and the streaming decoder.
 *
 * Encoding runs Hugging Face's pipeline for Qwen2/Qwen3:
 *   1. added tokens are found in the raw text first (leftmost, then longest;
 *      all of Qwen3's are literal: no lstrip/rstrip/normalization),
 *   2. each stretch between them is NFC-normalized,
 *   3. split by the Qwen2 regex (pretokenize.c),
 *   4. each piece's bytes are BPE-merged (bpe.c).
 * With INF_TOKENIZE_NO_SPECIAL step 1 is skipped, so the text of any added
 * token (special or not) is tokenized like any other text. tok_encode_masked
 * skips only the special tokens found inside given byte ranges (the chat
 * prompt's request strings, chat/chat_prompt.c).
 * Invalid UTF-8 is refused up front: Hugging Face only ever sees valid strings.
 */
#include "tok/tokenizer.h"

#include "core/common.h"
#include "io/gguf_split.h"
#include "tok/pretokenize.h"
#include "tok/vocab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ load and query */

inf_status inf_tokenizer_load(const char *path, inf_tokenizer **out, inf_error *err) {
    if (!out) return inf_errorf(err, INF_ERR_INVALID, "inf_tokenizer_load: out is NULL");
    *out = NULL;
    if (!path) return inf_errorf(err, INF_ERR_INVALID, "inf_tokenizer_load: path is NULL");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) { /* a Hugging Face checkpoint: its tokenizer.json */
        size_t n = strlen(path);
        char *json_path = malloc(n + sizeof "/tokenizer.json");
        if (!json_path) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
        snprintf(json_path, n + sizeof "/tokenizer.json", "%s%stokenizer.json", path, n && path[n - 1] == '/' ? "" : "/");
        inf_status st = tokenizer_load_json(json_path, out, err);
        free(json_path);
        return st;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return inf_errorf(err, INF_ERR_IO, "%s: %s", path, strerror(errno));
    char magic[4] = {0};
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    if (got == sizeof magic && !memcmp(magic, GGUF_MAGIC, 4)) {
        gguf_file *g;
        inf_status st = gguf_open_split(path, GGUF_OPEN_METADATA_ONLY, NULL, NULL, &g, err);
        if (st) return st;
        st = inf_tokenizer_from_gguf(g, out, err);
        gguf_close(g);
        return st;
    }
    return tokenizer_load_json(path, out, err);
}

int inf_tokenizer_n_vocab(const inf_tokenizer *tok) {
    return tok ? tok->n_vocab : 0;
}

int32_t inf_tokenizer_eos(const inf_tokenizer *tok) {
    return tok ? tok->eos : -1;
}

bool inf_tokenizer_is_eog(const inf_tokenizer *tok, int32_t id) {
    if (!tok || id < 0) return false;
    for (size_t i = 0; i < sizeof tok->eog / sizeof tok->eog[0]; i++)
        if (tok->eog[i] == id) return true;
    return false;
}

const char *inf_tokenizer_token_bytes(const inf_tokenizer *tok, int32_t id, size_t *len) {
    if (!tok || id < 0 || id >= tok->n_vocab) return NULL;
    if (len) *len = tok_len(tok, id);
    return tok_text(tok, id);
}

/* ------------------------------------------------------------------ encode */

typedef struct encode_ctx {
    const inf_tokenizer *tok;
    tok_ids ids;
    bpe_scratch scratch;
    inf_buf normalized;
} encode_ctx;

/* Steps 2-4 for one stretch of text without added tokens. */
static bool encode_plain(encode_ctx *c, const char *text, size_t len) {
    const inf_tokenizer *tok = c->tok;
    if (tok->nfc && !uni_nfc_is_quick_yes(tok->props, text, len)) {
        c->normalized.len = 0;
        if (!uni_nfc_append(tok->props, text, len, &c->normalized)) return false;
        text = c->normalized.data;
        len = c->normalized.len;
    }
    const unsigned char *s = (const unsigned char *)text;
    for (size_t pos = 0; pos < len;) {
        size_t end = pretok_piece_end(tok->props, s, len, pos);
        if (!bpe_encode_word(&tok->bpe, &c->scratch, s + pos, end - pos, &c->ids)) return false;
        pos = end;
    }
    return true;
}

/* The leftmost added token in text[from..len) (the longest of those starting
 * there): its offset and id, or len when there is none. */
static size_t next_added(const inf_tokenizer *tok, const unsigned char *s, size_t from, size_t len, int32_t *id) {
    for (size_t i = from; i < len; i++) {
        unsigned char b = s[i];
        for (uint32_t k = tok->added_by_byte[b]; k < tok->added_by_byte[b + 1]; k++) {
            int32_t cand = tok->added[k];
            size_t n = tok_len(tok, cand);
            if (n <= len - i && !memcmp(s + i, tok_text(tok, cand), n)) {
                *id = cand;
                return i;
            }
        }
    }
    return len;
}

/* True when [at, end) overlaps one of the sorted, disjoint ranges; *next is
 * the first range that might, advanced as at grows (calls come in
 * increasing order of at). */
static bool overlaps_range(const tok_range *r, size_t n, size_t *next, size_t at, size_t end) {
    while (*next < n && (r[*next].end <= at || r[*next].begin == r[*next].end)) (*next)++; /* past or empty */
    return *next < n && r[*next].begin < end;
}

/* The encoder behind inf_tokenize and tok_encode_masked. A special token
 * that overlaps one of the ranges in plain is skipped the way Hugging Face
 * skips it with encode_special_tokens: its text stays in the stretch of
 * plain text around it, and the search goes on after it. */
static inf_status encode(const inf_tokenizer *tok, const char *text, size_t len, bool match_added,
                         const tok_range *plain, size_t n_plain, int32_t **ids, size_t *n_ids, inf_error *err,
                         const char *fn) {
    if (!ids || !n_ids) return inf_errorf(err, INF_ERR_INVALID, "%s: ids or n_ids is NULL", fn);
    *ids = NULL;
    *n_ids = 0;
    if (!tok || (!text && len)) return inf_errorf(err, INF_ERR_INVALID, "%s: tokenizer or text is NULL", fn);
    if (!plain && n_plain) return inf_errorf(err, INF_ERR_INVALID, "%s: ranges are NULL", fn);
    for (size_t i = 0; i < n_plain; i++)
        if (plain[i].begin > plain[i].end || plain[i].end > len || (i && plain[i].begin < plain[i - 1].end))
            return inf_errorf(err, INF_ERR_INVALID, "%s: range %zu is not sorted, disjoint and inside the text", fn, i);
    size_t bad = uni_utf8_invalid_offset(text, len);
    if (bad < len)
        return inf_errorf(err, INF_ERR_FORMAT, "invalid UTF-8 at byte offset %zu (byte 0x%02X)", bad,
                          (unsigned char)text[bad]);

    encode_ctx c = {.tok = tok};
    bool ok = true;
    if (tok->add_bos) ok = tok_ids_push(&c.ids, tok->bos);
    const unsigned char *s = (const unsigned char *)text;
    match_added = match_added && tok->n_added;
    size_t next_range = 0;
    /* text[pos..scan) is plain text not yet encoded (skipped specials included) */
    for (size_t pos = 0, scan = 0; ok && pos < len;) {
        int32_t id = -1;
        size_t at = match_added ? next_added(tok, s, scan, len, &id) : len;
        if (at < len && tok->kind[id] == TOK_SPECIAL &&
            overlaps_range(plain, n_plain, &next_range, at, at + tok_len(tok, id))) {
            scan = at + tok_len(tok, id);
            continue;
        }
        if (at > pos) ok = encode_plain(&c, text + pos, at - pos);
        if (ok && at < len) {
            ok = tok_ids_push(&c.ids, id);
            at += tok_len(tok, id);
        }
        pos = scan = at;
    }
    if (ok && !c.ids.v) ok = (c.ids.v = malloc(sizeof *c.ids.v)) != NULL; /* a valid pointer even when empty */
    bpe_scratch_free(&c.scratch);
    free(c.normalized.data);
    if (!ok) {
        free(c.ids.v);
        return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory for %zu bytes of text", fn, len);
    }
    *ids = c.ids.v;
    *n_ids = c.ids.n;
    return INF_OK;
}

inf_status inf_tokenize(const inf_tokenizer *tok, const char *text, size_t len, int flags, int32_t **ids,
                        size_t *n_ids, inf_error *err) {
    return encode(tok, text, len, !(flags & INF_TOKENIZE_NO_SPECIAL), NULL, 0, ids, n_ids, err, "inf_tokenize");
}

inf_status tok_encode_masked(const inf_tokenizer *tok, const char *text, size_t len, const tok_range *plain,
                             size_t n_plain, int32_t **ids, size_t *n_ids, inf_error *err) {
    return encode(tok, text, len, true, plain, n_plain, ids, n_ids, err, "tokenize");
}

/* ------------------------------------------------------------------ decode */

static inf_status check_id(const inf_tokenizer *tok, int32_t id, inf_error *err) {
    if (id < 0 || id >= tok->n_vocab)
        return inf_errorf(err, INF_ERR_INVALID, "token id %ld is outside the vocabulary (0..%ld)", (long)id,
                          (long)tok->n_vocab - 1);
    return INF_OK;
}

inf_status inf_detokenize(const inf_tokenizer *tok, const int32_t *ids, size_t n_ids, char **text, size_t *len,
                          inf_error *err) {
    if (!text || !len) return inf_errorf(err, INF_ERR_INVALID, "inf_detokenize: text or len is NULL");
    *text = NULL;
    *len = 0;
    if (!tok || (!ids && n_ids)) return inf_errorf(err, INF_ERR_INVALID, "inf_detokenize: tokenizer or ids is NULL");
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        inf_status st = check_id(tok, ids[i], err);
        if (st) return st;
        total += tok_len(tok, ids[i]); /* <= 256 per id: cannot overflow before memory does */
    }
    char *out = malloc(total + 1);
    if (!out) return inf_errorf(err, INF_ERR_NOMEM, "inf_detokenize: out of memory for %zu bytes", total);
    size_t at = 0;
    for (size_t i = 0; i < n_ids; i++) {
        memcpy(out + at, tok_text(tok, ids[i]), tok_len(tok, ids[i]));
        at += tok_len(tok, ids[i]);
    }
    out[at] = 0;
    *text = out;
    *len = at;
    return INF_OK;
}

/* ------------------------------------------------------------------ streaming decode */

/* Invariant: st->pending holds at most 3 bytes, the unfinished start of one
 * well-formed UTF-8 sequence. */

static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD}; /* U+FFFD */

void inf_detok_stream_init(inf_detok_stream *st) {
    st->n_pending = 0;
}

inf_status inf_detok_stream_push(const inf_tokenizer *tok, inf_detok_stream *st, int32_t id, char *out, size_t cap,
                                 size_t *n_out, inf_error *err) {
    if (n_out) *n_out = 0;
    if (!tok || !st || !n_out || (!out && cap))
        return inf_errorf(err, INF_ERR_INVALID, "inf_detok_stream_push: NULL argument");
    inf_status status = check_id(tok, id, err);
    if (status) return status;

    unsigned char in[3 + TOK_MAX_TOKEN_BYTES];
    size_t n = st->n_pending;
    memcpy(in, st->pending, n);
    memcpy(in + n, tok_text(tok, id), tok_len(tok, id));
    n += tok_len(tok, id);

    char text[3 * sizeof in]; /* every byte may become a U+FFFD */
    size_t o = 0, i = 0;
    while (i < n) {
        size_t need, k = uni_utf8_prefix(in + i, n - i, &need);
        if (need && k == need) { /* a complete character */
            memcpy(text + o, in + i, need);
            o += need;
            i += need;
        } else if (need && k == n - i) { /* unfinished at the end: wait for more */
            break;
        } else { /* ill-formed: one U+FFFD per maximal subpart */
            memcpy(text + o, replacement, 3);
            o += 3;
            i += k ? k : 1;
        }
    }
    if (o > cap)
        return inf_errorf(err, INF_ERR_INVALID, "inf_detok_stream_push: token %ld needs %zu bytes of output, cap is %zu",
                          (long)id, o, cap);
    if (o) memcpy(out, text, o);
    st->n_pending = n - i;
    memcpy(st->pending, in + i, st->n_pending);
    *n_out = o;
    return INF_OK;
}

size_t inf_detok_stream_flush(inf_detok_stream *st, char *out, size_t cap) {
    if (!st || !st->n_pending) {
        if (st) st->n_pending = 0;
        return 0;
    }
    st->n_pending = 0;
    if (!out || cap < sizeof replacement) return 0;
    memcpy(out, replacement, sizeof replacement);
    return sizeof replacement;
}

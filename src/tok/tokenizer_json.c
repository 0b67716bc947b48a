/*
 * tokenizer_json.c — loads a Hugging Face tokenizer.json (+ the
 * tokenizer_config.json beside it, for eos/bos).
 *
 * The file is 11 MB for Qwen3, almost all of it model.vocab (151643 entries)
 * and model.merges (151387 pairs); a general JSON tree of it takes a cJSON
 * parse of ~200 ms. So the file is walked by a small single-pass scanner that
 * decodes the vocabulary and merges straight into the vocab builder, and the
 * few small sections (normalizer, pre_tokenizer, added_tokens ...) are handed
 * to cJSON. Only the pipeline Qwen2/Qwen3 use is accepted: BPE model, NFC
 * normalizer, the Qwen2 split + ByteLevel pre-tokenizer, ByteLevel decoder;
 * anything else is an INF_ERR_UNSUPPORTED naming the field.
 */
#include "core/common.h"
#include "tok/tokenizer.h"
#include "tok/vocab.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QWEN2_SPLIT_REGEX                                                                                          \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|" \
    "\\s+(?!\\S)|\\s+"

/* ------------------------------------------------------------------ scanner */

typedef struct json_scan {
    const char *s;
    size_t len, pos;
    const char *path;
    inf_error *err;
    inf_status status; /* first error, INF_OK while fine */
} json_scan;

static bool scan_fail(json_scan *js, const char *what) {
    if (!js->status)
        js->status = inf_errorf(js->err, INF_ERR_FORMAT, "%s: %s at byte %zu", js->path, what, js->pos);
    return false;
}

static inline void scan_ws(json_scan *js) {
    while (js->pos < js->len) {
        char c = js->s[js->pos];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
        js->pos++;
    }
}

static bool scan_char(json_scan *js, char c) {
    scan_ws(js);
    if (js->pos < js->len && js->s[js->pos] == c) {
        js->pos++;
        return true;
    }
    return false;
}

static bool scan_expect(json_scan *js, char c) {
    if (scan_char(js, c)) return true;
    char what[32];
    snprintf(what, sizeof what, "expected '%c'", c);
    return scan_fail(js, what);
}

/* A JSON string, decoded to UTF-8 into out (replacing its contents). */
static bool scan_string(json_scan *js, inf_buf *out) {
    out->len = 0;
    scan_ws(js);
    if (js->pos >= js->len || js->s[js->pos] != '"') return scan_fail(js, "expected a string");
    size_t i = js->pos + 1;
    for (;;) {
        size_t run = i;
        while (i < js->len && js->s[i] != '"' && js->s[i] != '\\' && (unsigned char)js->s[i] >= 0x20) i++;
        if (!inf_buf_reserve(out, i - run + 4)) return scan_fail(js, "out of memory");
        memcpy(out->data + out->len, js->s + run, i - run);
        out->len += i - run;
        if (i >= js->len || (unsigned char)js->s[i] < 0x20) {
            js->pos = i;
            return scan_fail(js, "unterminated string");
        }
        if (js->s[i] == '"') break;
        /* an escape */
        if (i + 1 >= js->len) return scan_fail(js, "unterminated string");
        char e = js->s[i + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            out->data[out->len++] = decoded[simple - "\"\\/bfnrt"];
            i += 2;
            continue;
        }
        if (e != 'u' || i + 6 > js->len) {
            js->pos = i;
            return scan_fail(js, "invalid escape");
        }
        int cp = inf_hex4(js->s + i + 2);
        i += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) cp = -1;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo = i + 6 <= js->len && js->s[i] == '\\' && js->s[i + 1] == 'u' ? inf_hex4(js->s + i + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) {
                cp = -1;
            } else {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
        }
        if (cp < 0) {
            js->pos = i;
            return scan_fail(js, "invalid \\u escape");
        }
        out->len += inf_utf8_encode((uint32_t)cp, out->data + out->len);
    }
    js->pos = i + 1;
    return true;
}

static bool scan_int(json_scan *js, int64_t *out) {
    scan_ws(js);
    size_t i = js->pos;
    bool neg = i < js->len && js->s[i] == '-';
    if (neg) i++;
    int64_t v = 0;
    size_t digits = 0;
    while (i < js->len && js->s[i] >= '0' && js->s[i] <= '9') {
        if (v > (INT64_MAX - 9) / 10) return scan_fail(js, "integer out of range");
        v = v * 10 + (js->s[i++] - '0');
        digits++;
    }
    if (!digits || (i < js->len && (js->s[i] == '.' || js->s[i] == 'e' || js->s[i] == 'E')))
        return scan_fail(js, "expected an integer");
    js->pos = i;
    *out = neg ? -v : v;
    return true;
}

/* Skips a string whose opening quote is at js->pos. */
static bool skip_string(json_scan *js) {
    size_t i = js->pos + 1;
    while (i < js->len && js->s[i] != '"') i += js->s[i] == '\\' ? 2 : 1;
    if (i >= js->len) return scan_fail(js, "unterminated string");
    js->pos = i + 1;
    return true;
}

/* Skips one value of any type (checking only that brackets balance); *start
 * is where it begins. The value is then parsed for real by cJSON. */
static bool scan_skip(json_scan *js, size_t *start) {
    scan_ws(js);
    *start = js->pos;
    if (js->pos >= js->len) return scan_fail(js, "unexpected end of file");
    char c = js->s[js->pos];
    if (c == '"') return skip_string(js);
    if (c != '{' && c != '[') {
        while (js->pos < js->len && !strchr(",}] \t\r\n", js->s[js->pos])) js->pos++;
        return js->pos > *start || scan_fail(js, "expected a value");
    }
    size_t depth = 0;
    do {
        if (js->pos >= js->len) return scan_fail(js, "unexpected end of file");
        c = js->s[js->pos];
        if (c == '"') {
            if (!skip_string(js)) return false;
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') depth--;
        js->pos++;
    } while (depth);
    return true;
}

/* ------------------------------------------------------------------ sections */

typedef struct vocab_entry {
    int32_t id;
    uint32_t off, len; /* bytes in the entries' text buffer */
} vocab_entry;

typedef struct json_load {
    json_scan js;
    inf_buf str, bytes; /* scratch: a decoded JSON string, its bytes */
    inf_buf vocab_text;
    vocab_entry *vocab;
    size_t n_vocab, vocab_cap;
    bool have_vocab, have_merges;
    /* merges are decoded into merge_text as they are read; merge_off as in vocab_builder */
    vocab_builder merges; /* only its merge fields are used here */
    cJSON *sections;      /* small top-level sections, keyed by name */
} json_load;

static bool read_vocab(json_load *L) {
    json_scan *js = &L->js;
    if (!scan_expect(js, '{')) return false;
    if (scan_char(js, '}')) return true;
    do {
        if (!scan_string(js, &L->str) || !scan_expect(js, ':')) return false;
        int64_t id;
        if (!scan_int(js, &id)) return false;
        if (id < 0 || id >= (1 << 28)) return scan_fail(js, "token id out of range");
        size_t off = L->vocab_text.len;
        bool bad;
        if (!bytelevel_decode(L->str.data, L->str.len, &L->vocab_text, &bad))
            return scan_fail(js, bad ? "vocabulary entry outside the byte-level alphabet" : "out of memory");
        if (L->vocab_text.len > UINT32_MAX) return scan_fail(js, "vocabulary too large");
        if (L->n_vocab == L->vocab_cap) {
            size_t cap = L->vocab_cap ? 2 * L->vocab_cap : 1 << 17;
            vocab_entry *v = realloc(L->vocab, cap * sizeof *v);
            if (!v) return scan_fail(js, "out of memory");
            L->vocab = v;
            L->vocab_cap = cap;
        }
        L->vocab[L->n_vocab++] = (vocab_entry){(int32_t)id, (uint32_t)off, (uint32_t)(L->vocab_text.len - off)};
    } while (scan_char(js, ','));
    return scan_expect(js, '}');
}

/* One part of a merge, as bytes appended to L->bytes; returns its length. */
static bool merge_part(json_load *L, const char *s, size_t len) {
    bool bad;
    if (bytelevel_decode(s, len, &L->bytes, &bad)) return true;
    return scan_fail(&L->js, bad ? "merge outside the byte-level alphabet" : "out of memory");
}

static bool read_merges(json_load *L) {
    json_scan *js = &L->js;
    if (!scan_expect(js, '[')) return false;
    if (scan_char(js, ']')) return true;
    do {
        L->bytes.len = 0;
        size_t left_len;
        if (scan_char(js, '[')) { /* ["left", "right"] */
            if (!scan_string(js, &L->str) || !merge_part(L, L->str.data, L->str.len)) return false;
            left_len = L->bytes.len;
            if (!scan_expect(js, ',') || !scan_string(js, &L->str) || !merge_part(L, L->str.data, L->str.len) ||
                !scan_expect(js, ']'))
                return false;
        } else { /* "left right" */
            if (!scan_string(js, &L->str)) return false;
            const char *space = memchr(L->str.data, ' ', L->str.len);
            if (!space || memchr(space + 1, ' ', L->str.len - (size_t)(space + 1 - L->str.data)))
                return scan_fail(js, "merge is not two space-separated tokens");
            size_t split = (size_t)(space - L->str.data);
            if (!merge_part(L, L->str.data, split)) return false;
            left_len = L->bytes.len;
            if (!merge_part(L, space + 1, L->str.len - split - 1)) return false;
        }
        inf_status st = vocab_builder_add_merge(&L->merges, L->bytes.data, left_len, L->bytes.data + left_len,
                                                L->bytes.len - left_len, js->err);
        if (st) {
            js->status = st;
            return false;
        }
    } while (scan_char(js, ','));
    return scan_expect(js, ']');
}

/* Parses a small value with cJSON and files it under name in L->sections. */
static bool keep_section(json_load *L, const char *name) {
    size_t start;
    if (!scan_skip(&L->js, &start)) return false;
    cJSON *v = cJSON_ParseWithLength(L->js.s + start, L->js.pos - start);
    if (!v) return scan_fail(&L->js, "malformed JSON value");
    cJSON_AddItemToObject(L->sections, name, v);
    return true;
}

static bool read_model(json_load *L) {
    json_scan *js = &L->js;
    if (!scan_expect(js, '{')) return false;
    if (scan_char(js, '}')) return true;
    cJSON *model = cJSON_AddObjectToObject(L->sections, "model");
    if (!model) return scan_fail(js, "out of memory");
    do {
        if (!scan_string(js, &L->str) || !scan_expect(js, ':')) return false;
        if (L->str.len == 5 && !memcmp(L->str.data, "vocab", 5)) {
            if (!read_vocab(L)) return false;
            L->have_vocab = true;
        } else if (L->str.len == 6 && !memcmp(L->str.data, "merges", 6)) {
            if (!read_merges(L)) return false;
            L->have_merges = true;
        } else {
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)INF_MIN(L->str.len, sizeof key - 1), L->str.data);
            size_t start;
            if (!scan_skip(js, &start)) return false;
            cJSON *v = cJSON_ParseWithLength(js->s + start, js->pos - start);
            if (!v) return scan_fail(js, "malformed JSON value");
            cJSON_AddItemToObject(model, key, v);
        }
    } while (scan_char(js, ','));
    return scan_expect(js, '}');
}

static bool read_top(json_load *L) {
    json_scan *js = &L->js;
    if (!scan_expect(js, '{')) return false;
    if (!scan_char(js, '}')) {
        do {
            if (!scan_string(js, &L->str) || !scan_expect(js, ':')) return false;
            if (L->str.len == 5 && !memcmp(L->str.data, "model", 5)) {
                if (!read_model(L)) return false;
            } else {
                char key[64];
                snprintf(key, sizeof key, "%.*s", (int)INF_MIN(L->str.len, sizeof key - 1), L->str.data);
                if (!keep_section(L, key)) return false;
            }
        } while (scan_char(js, ','));
        if (!scan_expect(js, '}')) return false;
    }
    scan_ws(js);
    if (js->pos != js->len) return scan_fail(js, "trailing data after the JSON object");
    return true;
}

/* ------------------------------------------------------------------ checks */

static const char *json_str(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool json_is_false_or_absent(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return !v || cJSON_IsFalse(v) || cJSON_IsNull(v);
}

static bool json_is_empty_or_absent(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return !v || cJSON_IsNull(v) || (cJSON_IsString(v) && !v->valuestring[0]);
}

static bool type_is(const cJSON *obj, const char *type) {
    const char *t = json_str(obj, "type");
    return t && !strcmp(t, type);
}

static inf_status check_pipeline(const cJSON *sec, const char *path, bool *nfc, inf_error *err) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(sec, "model");
    if (!type_is(model, "BPE"))
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: model.type is not \"BPE\" (only byte-level BPE is supported)", path);
    if (!json_is_false_or_absent(model, "byte_fallback") || !json_is_false_or_absent(model, "ignore_merges") ||
        !json_is_empty_or_absent(model, "continuing_subword_prefix") ||
        !json_is_empty_or_absent(model, "end_of_word_suffix") || !json_is_false_or_absent(model, "dropout"))
        return inf_errorf(err, INF_ERR_UNSUPPORTED,
                          "%s: model sets byte_fallback, ignore_merges, a subword prefix/suffix or dropout "
                          "(not supported)", path);

    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(sec, "normalizer");
    if (!norm || cJSON_IsNull(norm)) *nfc = false;
    else if (type_is(norm, "NFC")) *nfc = true;
    else return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: normalizer is not NFC (only NFC is supported)", path);

    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(sec, "pre_tokenizer");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers");
    const cJSON *split = cJSON_GetArrayItem(list, 0), *bytelevel = cJSON_GetArrayItem(list, 1);
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(split, "pattern");
    const char *regex = json_str(pattern, "Regex");
    const char *behavior = json_str(split, "behavior");
    if (!type_is(pre, "Sequence") || cJSON_GetArraySize(list) != 2 || !type_is(split, "Split") || !regex ||
        strcmp(regex, QWEN2_SPLIT_REGEX) || !behavior || strcmp(behavior, "Isolated") ||
        !json_is_false_or_absent(split, "invert") || !type_is(bytelevel, "ByteLevel") ||
        !json_is_false_or_absent(bytelevel, "add_prefix_space") || !json_is_false_or_absent(bytelevel, "use_regex"))
        return inf_errorf(err, INF_ERR_UNSUPPORTED,
                          "%s: pre_tokenizer is not Qwen2's (Split on the Qwen2 regex, then ByteLevel)", path);

    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(sec, "decoder");
    if (!type_is(dec, "ByteLevel"))
        return inf_errorf(err, INF_ERR_UNSUPPORTED, "%s: decoder is not ByteLevel", path);
    const cJSON *post = cJSON_GetObjectItemCaseSensitive(sec, "post_processor");
    if (post && !cJSON_IsNull(post) && !type_is(post, "ByteLevel"))
        return inf_errorf(err, INF_ERR_UNSUPPORTED,
                          "%s: post_processor is not ByteLevel (templates that add tokens are not supported)", path);
    return INF_OK;
}

/* ------------------------------------------------------------------ config beside the file */

/* The text of a token named in tokenizer_config.json: "text" or {"content": "text"}. */
static const char *config_token(const cJSON *config, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Reads tokenizer_config.json beside path, when there is one. */
static inf_status read_config(const char *path, cJSON **config, inf_error *err) {
    *config = NULL;
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path + 1) : 0;
    char *cfg_path = malloc(dir + sizeof "tokenizer_config.json");
    if (!cfg_path) return inf_errorf(err, INF_ERR_NOMEM, "out of memory");
    memcpy(cfg_path, path, dir);
    strcpy(cfg_path + dir, "tokenizer_config.json");
    FILE *probe = fopen(cfg_path, "rb");
    if (!probe) {
        free(cfg_path);
        return INF_OK;
    }
    fclose(probe);
    size_t len;
    char *text;
    inf_status st = inf_read_file(cfg_path, &text, &len, err);
    if (!st && !(*config = cJSON_ParseWithLength(text, len)))
        st = inf_errorf(err, INF_ERR_FORMAT, "%s: malformed JSON", cfg_path);
    free(text);
    free(cfg_path);
    return st;
}

/* ------------------------------------------------------------------ load */

static int cmp_entry_id(const void *a, const void *b) {
    int32_t x = ((const vocab_entry *)a)->id, y = ((const vocab_entry *)b)->id;
    return x < y ? -1 : x > y;
}

typedef struct added_entry {
    int32_t id;
    const char *content;
    bool special;
} added_entry;

static int cmp_added_id(const void *a, const void *b) {
    int32_t x = ((const added_entry *)a)->id, y = ((const added_entry *)b)->id;
    return x < y ? -1 : x > y;
}

static inf_status read_added_tokens(const cJSON *list, const char *path, added_entry **out, size_t *n,
                                    inf_error *err) {
    *out = NULL;
    *n = 0;
    if (!list || cJSON_IsNull(list)) return INF_OK;
    if (!cJSON_IsArray(list)) return inf_errorf(err, INF_ERR_FORMAT, "%s: added_tokens is not an array", path);
    size_t count = (size_t)cJSON_GetArraySize(list);
    added_entry *a = calloc(count ? count : 1, sizeof *a);
    if (!a) return inf_errorf(err, INF_ERR_NOMEM, "out of memory");
    const cJSON *t;
    size_t i = 0;
    cJSON_ArrayForEach(t, list) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "id");
        const char *content = json_str(t, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= (1 << 28) ||
            id->valuedouble != (double)(int32_t)id->valuedouble || !content || !content[0]) {
            free(a);
            return inf_errorf(err, INF_ERR_FORMAT, "%s: added_tokens[%zu] lacks a valid id or content", path, i);
        }
        if (!json_is_false_or_absent(t, "lstrip") || !json_is_false_or_absent(t, "rstrip") ||
            !json_is_false_or_absent(t, "single_word") || !json_is_false_or_absent(t, "normalized")) {
            inf_status st = inf_errorf(err, INF_ERR_UNSUPPORTED,
                                       "%s: added token \"%s\" sets lstrip, rstrip, single_word or normalized "
                                       "(not supported)", path, content);
            free(a);
            return st;
        }
        const cJSON *special = cJSON_GetObjectItemCaseSensitive(t, "special");
        a[i++] = (added_entry){(int32_t)id->valuedouble, content, cJSON_IsTrue(special)};
    }
    qsort(a, count, sizeof *a, cmp_added_id);
    *out = a;
    *n = count;
    return INF_OK;
}

static int32_t id_of_text(const added_entry *added, size_t n_added, const json_load *L, const char *text) {
    if (!text) return -1;
    for (size_t i = 0; i < n_added; i++)
        if (!strcmp(added[i].content, text)) return added[i].id;
    size_t len = strlen(text);
    /* vocabulary entries hold decoded bytes; only plain ASCII names can be compared directly */
    for (size_t i = 0; i < L->n_vocab; i++)
        if (L->vocab[i].len == len && !memcmp(L->vocab_text.data + L->vocab[i].off, text, len)) return L->vocab[i].id;
    return -1;
}

static inf_status build_from_json(json_load *L, const char *path, const cJSON *config, inf_tokenizer **out,
                                  inf_error *err) {
    bool nfc = true;
    inf_status st = check_pipeline(L->sections, path, &nfc, err);
    if (st) return st;
    if (!L->have_vocab || !L->have_merges)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: model.vocab or model.merges is missing", path);

    added_entry *added;
    size_t n_added;
    st = read_added_tokens(cJSON_GetObjectItemCaseSensitive(L->sections, "added_tokens"), path, &added, &n_added, err);
    if (st) return st;

    bool sorted = true; /* tokenizer.json lists the vocabulary in id order, as a rule */
    for (size_t i = 1; i < L->n_vocab && sorted; i++) sorted = L->vocab[i - 1].id < L->vocab[i].id;
    if (!sorted) qsort(L->vocab, L->n_vocab, sizeof *L->vocab, cmp_entry_id);
    int32_t n_vocab = 0;
    if (L->n_vocab) n_vocab = L->vocab[L->n_vocab - 1].id + 1;
    if (n_added && added[n_added - 1].id + 1 > n_vocab) n_vocab = added[n_added - 1].id + 1;
    /* ids may leave holes (they become unused ids), but not so many that a
     * small file could make us allocate gigabytes */
    if ((size_t)n_vocab > L->n_vocab + n_added + 65536) {
        free(added);
        return inf_errorf(err, INF_ERR_FORMAT, "%s: token id %ld is far beyond the %zu tokens listed", path,
                          (long)n_vocab - 1, L->n_vocab + n_added);
    }

    vocab_builder b;
    st = vocab_builder_init(&b, path, n_vocab, err);
    if (st) {
        free(added);
        return st;
    }
    /* the merges were read into L->merges; hand them over */
    b.merge_text = L->merges.merge_text;
    b.merge_off = L->merges.merge_off;
    b.n_merges = L->merges.n_merges;
    b.merge_cap = L->merges.merge_cap;
    memset(&L->merges, 0, sizeof L->merges);
    b.nfc = nfc;

    size_t vi = 0, ai = 0;
    while (!st && (vi < L->n_vocab || ai < n_added)) {
        bool take_added = ai < n_added && (vi >= L->n_vocab || added[ai].id <= L->vocab[vi].id);
        if (take_added) {
            const added_entry *a = &added[ai++];
            if (vi < L->n_vocab && L->vocab[vi].id == a->id) {
                const vocab_entry *v = &L->vocab[vi++];
                if (v->len != strlen(a->content) || memcmp(L->vocab_text.data + v->off, a->content, v->len))
                    st = inf_errorf(err, INF_ERR_FORMAT, "%s: added token %ld differs from vocabulary entry %ld",
                                    path, (long)a->id, (long)a->id);
            }
            if (ai < n_added && added[ai].id == a->id)
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: added token id %ld appears twice", path, (long)a->id);
            if (!st)
                st = vocab_builder_set(&b, a->id, a->content, strlen(a->content), a->special ? TOK_SPECIAL : TOK_ADDED,
                                       err);
        } else {
            const vocab_entry *v = &L->vocab[vi++];
            if (vi < L->n_vocab && L->vocab[vi].id == v->id)
                st = inf_errorf(err, INF_ERR_FORMAT, "%s: vocabulary id %ld appears twice", path, (long)v->id);
            else
                st = vocab_builder_set(&b, v->id, L->vocab_text.data + v->off, v->len, TOK_NORMAL, err);
        }
    }
    if (!st && config) {
        b.eos = id_of_text(added, n_added, L, config_token(config, "eos_token"));
        b.bos = id_of_text(added, n_added, L, config_token(config, "bos_token"));
        b.add_bos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(config, "add_bos_token"));
    }
    free(added);
    if (st) {
        vocab_builder_free(&b);
        return st;
    }
    return vocab_build(&b, out, err);
}

inf_status tokenizer_load_json(const char *path, inf_tokenizer **out, inf_error *err) {
    *out = NULL;
    size_t len;
    const char *text; /* mapped: the scanner reads it once, in place */
    inf_status st = inf_map_file(path, &text, &len, err);
    if (st) return st;
    json_load L = {0};
    L.js = (json_scan){text, len, 0, path, err, INF_OK};
    L.merges.source = path;
    L.sections = cJSON_CreateObject();
    if (!L.sections) st = inf_errorf(err, INF_ERR_NOMEM, "out of memory");
    else if (!read_top(&L)) st = L.js.status ? L.js.status : INF_ERR_FORMAT;
    cJSON *config = NULL;
    if (!st) st = read_config(path, &config, err);
    if (!st) st = build_from_json(&L, path, config, out, err);
    cJSON_Delete(config);
    cJSON_Delete(L.sections);
    vocab_builder_free(&L.merges);
    free(L.str.data);
    free(L.bytes.data);
    free(L.vocab_text.data);
    free(L.vocab);
    inf_unmap_file(text, len);
    return st;
}

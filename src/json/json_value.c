/*
 * json_value.c — JSON reader and `tojson` printer with JavaScript semantics
 * (see json_value.h for why the chat template needs them).
 *
 * Reader: recursive descent over RFC 8259 JSON, as strict as JSON.parse
 * (no comments, no trailing commas, no leading zeros, whitespace is only
 * space/tab/CR/LF). Nesting is bounded by JSON_MAX_DEPTH so untrusted input
 * cannot exhaust the stack. Duplicate keys and the order of keys follow
 * JavaScript's object model; both are settled once per object in
 * O(n log n), so a hostile object with many keys costs no quadratic time.
 */
#include "json/json_value.h"

#include "core/common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ values */

static void json_free_members(json_member *m, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(m[i].key);
        json_free(m[i].value);
    }
    free(m);
}

void json_free(json_value *v) {
    if (!v) return;
    switch (v->type) {
    case JSON_STRING: free(v->str.data); break;
    case JSON_ARRAY:
        for (size_t i = 0; i < v->arr.n; i++) json_free(v->arr.items[i]);
        free(v->arr.items);
        break;
    case JSON_OBJECT: json_free_members(v->obj.members, v->obj.n); break;
    default: break;
    }
    free(v);
}

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    size_t len = strlen(key);
    for (size_t i = 0; i < obj->obj.n; i++)
        if (obj->obj.members[i].key_len == len && !memcmp(obj->obj.members[i].key, key, len))
            return obj->obj.members[i].value;
    return NULL;
}

/* ------------------------------------------------------------------ reader */

typedef struct json_reader {
    const unsigned char *p, *start, *end;
    const char *what; /* names the text in error messages */
    inf_error *err;
    inf_status status; /* first error, INF_OK while none */
} json_reader;

static json_value *reader_fail(json_reader *r, inf_status status, const char *problem) {
    if (r->status == INF_OK)
        r->status = inf_errorf(r->err, status, "%s: %s at byte %zu", r->what, problem,
                               (size_t)(r->p - r->start));
    return NULL;
}

static json_value *reader_nomem(json_reader *r) {
    return reader_fail(r, INF_ERR_NOMEM, "out of memory");
}

static void skip_space(json_reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static json_value *new_value(json_reader *r, json_type type) {
    json_value *v = calloc(1, sizeof *v);
    if (!v) return reader_nomem(r);
    v->type = type;
    return v;
}

static bool match_word(json_reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n)) return false;
    r->p += n;
    return true;
}

/* Reads the 4 hex digits after "\u"; -1 when malformed. */
static long read_hex4(json_reader *r) {
    if (r->end - r->p < 4) return -1;
    long v = inf_hex4((const char *)r->p);
    if (v >= 0) r->p += 4;
    return v;
}

/* Length of the well-formed UTF-8 sequence at p (non-ASCII lead byte), or 0. */
static size_t utf8_sequence_len(const unsigned char *p, const unsigned char *end) {
    size_t avail = (size_t)(end - p);
    unsigned char c = p[0];
    if (c >= 0xC2 && c <= 0xDF) return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (avail < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0; /* UTF-16 surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (avail < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && p[1] >= 0x90) return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

/* Reads a string body after the opening quote into a malloc'd buffer. The
 * decoded text is never longer than the escaped source, which bounds it. */
static bool read_string(json_reader *r, char **out, size_t *out_len) {
    const unsigned char *close = r->p;
    while (close < r->end && *close != '"') close += (*close == '\\' && close + 1 < r->end) ? 2 : 1;
    if (close >= r->end) {
        reader_fail(r, INF_ERR_FORMAT, "unterminated string");
        return false;
    }
    char *buf = malloc((size_t)(close - r->p) + 1);
    if (!buf) {
        reader_nomem(r);
        return false;
    }
    size_t n = 0;
    while (*r->p != '"') {
        unsigned char c = *r->p;
        if (c < 0x20) {
            reader_fail(r, INF_ERR_FORMAT, "control character in string");
            goto fail;
        }
        if (c >= 0x80) {
            size_t seq = utf8_sequence_len(r->p, r->end);
            if (!seq) {
                reader_fail(r, INF_ERR_FORMAT, "invalid UTF-8");
                goto fail;
            }
            memcpy(buf + n, r->p, seq);
            n += seq;
            r->p += seq;
            continue;
        }
        r->p++;
        if (c != '\\') {
            buf[n++] = (char)c;
            continue;
        }
        c = *r->p++;
        switch (c) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            long cp = read_hex4(r);
            if (cp < 0) {
                reader_fail(r, INF_ERR_FORMAT, "malformed \\u escape");
                goto fail;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                reader_fail(r, INF_ERR_FORMAT, "lone UTF-16 surrogate in \\u escape");
                goto fail;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long low = (r->end - r->p >= 2 && r->p[0] == '\\' && r->p[1] == 'u')
                               ? (r->p += 2, read_hex4(r))
                               : -1;
                if (low < 0xDC00 || low > 0xDFFF) {
                    reader_fail(r, INF_ERR_FORMAT, "lone UTF-16 surrogate in \\u escape");
                    goto fail;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            n += inf_utf8_encode((uint32_t)cp, buf + n);
            break;
        }
        default:
            r->p--;
            reader_fail(r, INF_ERR_FORMAT, "invalid escape in string");
            goto fail;
        }
    }
    r->p++; /* closing quote */
    buf[n] = 0;
    *out = buf;
    *out_len = n;
    return true;
fail:
    free(buf);
    return false;
}

static json_value *read_number(json_reader *r) {
    const unsigned char *s = r->p;
    if (r->p < r->end && *r->p == '-') r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return reader_fail(r, INF_ERR_FORMAT, "malformed number");
    if (*r->p == '0') {
        r->p++;
    } else {
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    }
    if (r->p < r->end && *r->p == '.') {
        r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9') return reader_fail(r, INF_ERR_FORMAT, "malformed number");
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9') return reader_fail(r, INF_ERR_FORMAT, "malformed number");
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    }
    /* strtod needs a terminated copy; it rounds correctly, as JSON.parse does
     * (overflow gives infinity, as in JavaScript). */
    size_t n = (size_t)(r->p - s);
    char small[64];
    char *copy = n < sizeof small ? small : malloc(n + 1);
    if (!copy) return reader_nomem(r);
    memcpy(copy, s, n);
    copy[n] = 0;
    double x = strtod(copy, NULL);
    if (copy != small) free(copy);
    json_value *v = new_value(r, JSON_NUMBER);
    if (v) v->number = x;
    return v;
}

static json_value *read_value(json_reader *r, int depth);

static json_value *read_array(json_reader *r, int depth) {
    json_value *v = new_value(r, JSON_ARRAY);
    if (!v) return NULL;
    size_t cap = 0;
    skip_space(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return v;
    }
    for (;;) {
        json_value *item = read_value(r, depth + 1);
        if (!item) goto fail;
        if (v->arr.n == cap) {
            size_t new_cap = cap ? cap * 2 : 4, bytes;
            json_value **grown = inf_mul_size(new_cap, sizeof *grown, &bytes) ? realloc(v->arr.items, bytes) : NULL;
            if (!grown) {
                json_free(item);
                reader_nomem(r);
                goto fail;
            }
            v->arr.items = grown;
            cap = new_cap;
        }
        v->arr.items[v->arr.n++] = item;
        skip_space(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            return v;
        }
        reader_fail(r, INF_ERR_FORMAT, "expected ',' or ']'");
        goto fail;
    }
fail:
    json_free(v);
    return NULL;
}

/* The numeric value of a key that is a JavaScript array index (canonical
 * decimal, at most 4294967294), or -1. */
static int64_t array_index_of_key(const char *key, size_t len) {
    if (len == 0 || len > 10 || (len > 1 && key[0] == '0')) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (key[i] < '0' || key[i] > '9') return -1;
        v = v * 10 + (key[i] - '0');
    }
    return v <= 4294967294LL ? v : -1;
}

typedef struct member_slot {
    const json_member *m;
    size_t position; /* insertion order */
    int64_t index;   /* array index value, or -1 */
} member_slot;

static int compare_by_key(const void *a, const void *b) {
    const member_slot *x = a, *y = b;
    size_t n = INF_MIN(x->m->key_len, y->m->key_len);
    int c = memcmp(x->m->key, y->m->key, n);
    if (c) return c;
    if (x->m->key_len != y->m->key_len) return x->m->key_len < y->m->key_len ? -1 : 1;
    return x->position < y->position ? -1 : (x->position > y->position);
}

/* JavaScript order: array-index keys ascending, then insertion order. */
static int compare_js_order(const void *a, const void *b) {
    const member_slot *x = a, *y = b;
    if ((x->index >= 0) != (y->index >= 0)) return x->index >= 0 ? -1 : 1;
    if (x->index >= 0) return x->index < y->index ? -1 : (x->index > y->index);
    return x->position < y->position ? -1 : (x->position > y->position);
}

/* Rewrites an object's members (insertion order, duplicates included) into
 * JavaScript's: each duplicated key keeps its first position and takes the
 * last value; array-index keys move to the front. */
static bool settle_members(json_reader *r, json_value *obj) {
    size_t n = obj->obj.n;
    if (n < 2) return true;
    member_slot *slots = calloc(n, sizeof *slots);
    json_member *ordered = calloc(n, sizeof *ordered);
    if (!slots || !ordered) {
        free(slots);
        free(ordered);
        reader_nomem(r);
        return false;
    }
    json_member *m = obj->obj.members;
    for (size_t i = 0; i < n; i++) slots[i] = (member_slot){&m[i], i, array_index_of_key(m[i].key, m[i].key_len)};
    qsort(slots, n, sizeof *slots, compare_by_key);
    size_t kept = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && slots[j].m->key_len == slots[i].m->key_len &&
               !memcmp(slots[j].m->key, slots[i].m->key, slots[i].m->key_len))
            j++;
        /* slots[i] is the first occurrence, slots[j-1] the last */
        json_member *first = &m[slots[i].position];
        if (j - i > 1) {
            json_member *last = &m[slots[j - 1].position];
            json_free(first->value);
            first->value = last->value;
            last->value = NULL;
            for (size_t k = i + 1; k < j; k++) {
                json_member *dup = &m[slots[k].position];
                free(dup->key);
                dup->key = NULL;
                json_free(dup->value);
                dup->value = NULL;
            }
        }
        slots[kept++] = (member_slot){first, slots[i].position, slots[i].index};
        i = j;
    }
    qsort(slots, kept, sizeof *slots, compare_js_order);
    for (size_t i = 0; i < kept; i++) ordered[i] = *slots[i].m;
    free(slots);
    free(m);
    obj->obj.members = ordered;
    obj->obj.n = kept;
    return true;
}

static json_value *read_object(json_reader *r, int depth) {
    json_value *v = new_value(r, JSON_OBJECT);
    if (!v) return NULL;
    size_t cap = 0;
    skip_space(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return v;
    }
    for (;;) {
        skip_space(r);
        if (r->p >= r->end || *r->p != '"') {
            reader_fail(r, INF_ERR_FORMAT, "expected a string key");
            goto fail;
        }
        r->p++;
        json_member m = {0};
        if (!read_string(r, &m.key, &m.key_len)) goto fail;
        skip_space(r);
        if (r->p >= r->end || *r->p != ':') {
            free(m.key);
            reader_fail(r, INF_ERR_FORMAT, "expected ':'");
            goto fail;
        }
        r->p++;
        m.value = read_value(r, depth + 1);
        if (!m.value) {
            free(m.key);
            goto fail;
        }
        if (v->obj.n == cap) {
            size_t new_cap = cap ? cap * 2 : 4, bytes;
            json_member *grown = inf_mul_size(new_cap, sizeof *grown, &bytes) ? realloc(v->obj.members, bytes) : NULL;
            if (!grown) {
                free(m.key);
                json_free(m.value);
                reader_nomem(r);
                goto fail;
            }
            v->obj.members = grown;
            cap = new_cap;
        }
        v->obj.members[v->obj.n++] = m;
        skip_space(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == '}') {
            r->p++;
            if (!settle_members(r, v)) goto fail;
            return v;
        }
        reader_fail(r, INF_ERR_FORMAT, "expected ',' or '}'");
        goto fail;
    }
fail:
    json_free(v);
    return NULL;
}

static json_value *read_value(json_reader *r, int depth) {
    if (depth > JSON_MAX_DEPTH) return reader_fail(r, INF_ERR_FORMAT, "nesting too deep");
    skip_space(r);
    if (r->p >= r->end) return reader_fail(r, INF_ERR_FORMAT, "unexpected end of input");
    json_value *v;
    switch (*r->p) {
    case '{': r->p++; return read_object(r, depth);
    case '[': r->p++; return read_array(r, depth);
    case '"':
        r->p++;
        v = new_value(r, JSON_STRING);
        if (v && !read_string(r, &v->str.data, &v->str.len)) {
            free(v);
            return NULL;
        }
        return v;
    case 't':
    case 'f': {
        bool truth = match_word(r, "true");
        if (truth || match_word(r, "false")) {
            v = new_value(r, JSON_BOOL);
            if (v) v->boolean = truth;
            return v;
        }
        break;
    }
    case 'n':
        if (match_word(r, "null")) return new_value(r, JSON_NULL);
        break;
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) return read_number(r);
        break;
    }
    return reader_fail(r, INF_ERR_FORMAT, "unexpected character");
}

inf_status json_parse(const char *text, size_t len, const char *what, json_value **out, inf_error *err) {
    *out = NULL;
    json_reader r = {(const unsigned char *)text, (const unsigned char *)text,
                     (const unsigned char *)text + len, what, err, INF_OK};
    json_value *v = read_value(&r, 0);
    if (!v) return r.status;
    skip_space(&r);
    if (r.p != r.end) {
        json_free(v);
        reader_fail(&r, INF_ERR_FORMAT, "unexpected text after the JSON value");
        return r.status;
    }
    *out = v;
    return INF_OK;
}

/* ------------------------------------------------------------------ numbers */

/* Shortest decimal digits that read back as x (x finite, > 0): the digit
 * string (no trailing zeros) and the decimal point position n, so that
 * x = 0.DIGITS * 10^n. Among the shortest candidates the one nearest x wins,
 * which is the correctly rounded one unless it fails to read back (possible
 * at powers of two, where the gap below x is half the gap above). */
static size_t shortest_digits(double x, char digits[24], int *point) {
    char text[48];
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*e", precision - 1, x);
        char *e = strchr(text, 'e');
        int exp10 = atoi(e + 1);
        uint64_t mantissa = 0;
        for (const char *c = text; c < e; c++)
            if (*c != '.') mantissa = mantissa * 10 + (uint64_t)(*c - '0');
        /* candidates: the correctly rounded mantissa, then its neighbours */
        uint64_t candidates[3] = {mantissa, mantissa + 1, mantissa - 1};
        for (int c = 0; c < 3; c++) {
            if (candidates[c] == 0) continue;
            int scale = exp10 - (precision - 1); /* x ~= candidate * 10^scale */
            char probe[48];
            snprintf(probe, sizeof probe, "%llue%d", (unsigned long long)candidates[c], scale);
            if (strtod(probe, NULL) != x) continue;
            int n = snprintf(digits, 24, "%llu", (unsigned long long)candidates[c]);
            *point = n + scale;
            while (n > 1 && digits[n - 1] == '0') digits[--n] = 0;
            return (size_t)n;
        }
    }
    /* unreachable for finite doubles: 17 significant digits always read back */
    int n = snprintf(digits, 24, "0");
    *point = 1;
    return (size_t)n;
}

size_t json_format_number(double x, char *buf) {
    if (x == 0) return (size_t)sprintf(buf, "0"); /* -0 too */
    if (isnan(x)) return (size_t)sprintf(buf, "NaN");
    if (isinf(x)) return (size_t)sprintf(buf, x < 0 ? "-Infinity" : "Infinity");
    char *out = buf;
    if (x < 0) {
        *out++ = '-';
        x = -x;
    }
    char digits[24];
    int n;
    int k = (int)shortest_digits(x, digits, &n);
    if (k <= n && n <= 21) {
        memcpy(out, digits, (size_t)k);
        out += k;
        for (int i = k; i < n; i++) *out++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(out, digits, (size_t)n);
        out += n;
        *out++ = '.';
        memcpy(out, digits + n, (size_t)(k - n));
        out += k - n;
    } else if (-6 < n && n <= 0) {
        *out++ = '0';
        *out++ = '.';
        for (int i = 0; i < -n; i++) *out++ = '0';
        memcpy(out, digits, (size_t)k);
        out += k;
    } else {
        *out++ = digits[0];
        if (k > 1) {
            *out++ = '.';
            memcpy(out, digits + 1, (size_t)(k - 1));
            out += k - 1;
        }
        out += sprintf(out, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
    *out = 0;
    return (size_t)(out - buf);
}

/* ------------------------------------------------------------------ printer */

/* JSON.stringify's string escaping (non-ASCII stays raw). */
static void write_string(inf_buf *b, const char *s, size_t len) {
    inf_buf_append(b, "\"", 1);
    size_t run = 0; /* start of the pending run of bytes that need no escape */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (c < 0x20) {
                snprintf(hex, sizeof hex, "\\u%04x", c);
                esc = hex;
            }
        }
        if (!esc) continue;
        inf_buf_append(b, s + run, i - run);
        inf_buf_puts(b, esc);
        run = i + 1;
    }
    inf_buf_append(b, s + run, len - run);
    inf_buf_append(b, "\"", 1);
}

void json_write_tojson(inf_buf *b, const json_value *v) {
    char num[32];
    switch (v->type) {
    case JSON_NULL: inf_buf_puts(b, "null"); break;
    case JSON_BOOL: inf_buf_puts(b, v->boolean ? "true" : "false"); break;
    case JSON_NUMBER:
        if (isfinite(v->number)) {
            inf_buf_append(b, num, json_format_number(v->number, num));
        } else {
            inf_buf_puts(b, "null");
        }
        break;
    case JSON_STRING: write_string(b, v->str.data, v->str.len); break;
    case JSON_ARRAY:
        inf_buf_puts(b, "[");
        for (size_t i = 0; i < v->arr.n; i++) {
            if (i) inf_buf_puts(b, ", ");
            json_write_tojson(b, v->arr.items[i]);
        }
        inf_buf_puts(b, "]");
        break;
    case JSON_OBJECT:
        inf_buf_puts(b, "{");
        for (size_t i = 0; i < v->obj.n; i++) {
            if (i) inf_buf_puts(b, ", ");
            write_string(b, v->obj.members[i].key, v->obj.members[i].key_len);
            inf_buf_puts(b, ": ");
            json_write_tojson(b, v->obj.members[i].value);
        }
        inf_buf_puts(b, "}");
        break;
    }
}

/*
 * qwen3_output.c — the incremental Qwen3 output parser (see qwen3_output.h
 * for the formats and the rules it applies).
 *
 * The parser is a four-state machine over the bytes pushed so far:
 *
 *   START      only with reasoning parsed and the output not starting in
 *              it: leading whitespace, then "<think>" or anything else
 *   REASONING  inside a think block, looking for "</think>"
 *   CONTENT    outside, looking for "<think>", "</think>", "<tool_call>"
 *   CALL       inside a tool-call block, looking for "</tool_call>"
 *
 * Invariants between calls:
 *   - in[0, in_len) is text not yet decided: in START the leading
 *     whitespace and a prefix of "<think>"; in REASONING and CONTENT a
 *     proper prefix of a tag the state looks for (nothing else); in CALL
 *     the block's body so far (after "<tool_call>"); body bytes before
 *     call_scanned are known not to start "</tool_call>".
 *   - r_ws holds reasoning whitespace that is trailing so far (dropped if
 *     the block ends before more reasoning text); c_ws holds content
 *     whitespace that may be trimmed before a tool call (tools parsed only).
 *   - a block that is not a call leaves CALL with its "<tool_call>" as
 *     content and its body still in in[], to be scanned again as content:
 *     each pass through CALL consumes a tag, so the scan ends.
 *   - reasoning and content are exactly the concatenation of the text
 *     deltas handed out; calls[] of the TOOL deltas.
 * Tags are ASCII and whitespace is ASCII, so held-back text never splits a
 * UTF-8 character that arrived whole.
 *
 * Deltas are recorded as offsets into the aggregate buffers while the text
 * is processed (the buffers may move when they grow) and turned into
 * pointers at the end of each call.
 */
#include "server/qwen3_output.h"

#include <stdlib.h>
#include <string.h>

#define TAG_THINK      "<think>"
#define TAG_THINK_END  "</think>"
#define TAG_CALL       "<tool_call>"
#define TAG_CALL_END   "</tool_call>"
#define LEN(lit)       (sizeof(lit) - 1)

typedef struct buf {
    char *data; /* [cap], NUL-terminated at len when data != NULL */
    size_t len, cap;
} buf;

typedef enum parse_state { STATE_START, STATE_REASONING, STATE_CONTENT, STATE_CALL } parse_state;

/* A delta while text is processed: offsets, not pointers. */
typedef struct pending_delta {
    qwen3_delta_kind kind;
    size_t off, len;   /* REASONING, CONTENT: range in the aggregate */
    size_t tool_index; /* TOOL_* */
} pending_delta;

struct qwen3_output {
    qwen3_output_options opt;
    parse_state state;
    bool finished, failed;

    buf in;              /* undecided input (see the invariants) */
    size_t call_scanned; /* CALL: body bytes known not to start "</tool_call>" */

    bool r_lead;         /* reasoning: nothing but whitespace yet in this block */
    buf r_ws;            /* reasoning: trailing whitespace held */
    bool c_lead;         /* content: right after "</think>", whitespace dropped */
    bool after_call;     /* content: a call closed, no text since; whitespace dropped */
    buf c_ws;            /* content: whitespace held (tools parsed only) */

    buf reasoning, content; /* aggregates */
    qwen3_tool_call *calls;
    size_t n_calls, cap_calls;
    uint64_t id_state;   /* splitmix64 state */

    pending_delta *pending;
    size_t n_pending, cap_pending;
    qwen3_delta *out;    /* [cap_out] what the last call handed back */
    size_t cap_out;

    buf json_stack;      /* scratch: open containers while validating JSON */
    buf scratch;         /* scratch: decoded keys and strings */
};

/* ------------------------------------------------------------ memory */

static void *mem_realloc(qwen3_output *p, void *ptr, size_t size) {
    if (p->opt.alloc) return p->opt.alloc(p->opt.alloc_user, ptr, size);
    return realloc(ptr, size);
}

static void mem_free(qwen3_output *p, void *ptr) {
    if (!ptr) return;
    if (p->opt.alloc) p->opt.alloc(p->opt.alloc_user, ptr, 0);
    else free(ptr);
}

/* Makes room for n_items of item_size in *arr (capacity *cap); false when
 * out of memory (nothing changed). */
static bool grow(qwen3_output *p, void **arr, size_t *cap, size_t n_items, size_t item_size) {
    if (n_items <= *cap) return true;
    size_t want = *cap ? *cap : 16;
    while (want < n_items) {
        if (want > SIZE_MAX / 2) return false;
        want *= 2;
    }
    if (want > SIZE_MAX / item_size) return false;
    void *q = mem_realloc(p, *arr, want * item_size);
    if (!q) return false;
    *arr = q;
    *cap = want;
    return true;
}

static bool buf_append(qwen3_output *p, buf *b, const char *s, size_t n) {
    if (n > SIZE_MAX - b->len - 1) return false;
    void *data = b->data;
    if (!grow(p, &data, &b->cap, b->len + n + 1, 1)) return false;
    b->data = data;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

static void buf_free(qwen3_output *p, buf *b) {
    mem_free(p, b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Drops the first n bytes. */
static void buf_consume(buf *b, size_t n) {
    if (n == 0) return;
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

/* ------------------------------------------------------------ deltas */

static bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

static bool add_pending(qwen3_output *p, pending_delta d) {
    void *arr = p->pending;
    if (!grow(p, &arr, &p->cap_pending, p->n_pending + 1, sizeof *p->pending)) return false;
    p->pending = arr;
    p->pending[p->n_pending++] = d;
    return true;
}

/* Appends text to the reasoning or content aggregate and reports it,
 * extending the previous delta when it is of the same kind. */
static bool emit_text(qwen3_output *p, qwen3_delta_kind kind, const char *s, size_t n) {
    if (n == 0) return true;
    buf *agg = kind == QWEN3_DELTA_REASONING ? &p->reasoning : &p->content;
    size_t off = agg->len;
    if (!buf_append(p, agg, s, n)) return false;
    if (p->n_pending > 0 && p->pending[p->n_pending - 1].kind == kind) {
        p->pending[p->n_pending - 1].len += n;
        return true;
    }
    if (!add_pending(p, (pending_delta){.kind = kind, .off = off, .len = n})) {
        agg->len = off; /* keep the aggregate equal to the deltas */
        agg->data[off] = '\0';
        return false;
    }
    return true;
}

/* Reasoning text inside a block: leading whitespace dropped, trailing
 * whitespace held in r_ws until more text shows it is not trailing. */
static bool reasoning_text(qwen3_output *p, const char *s, size_t n) {
    size_t i = 0;
    if (p->r_lead) {
        while (i < n && is_ws((unsigned char)s[i])) i++;
        if (i == n) return true;
        p->r_lead = false;
    }
    while (i < n) {
        size_t j = i;
        while (j < n && !is_ws((unsigned char)s[j])) j++;
        if (j > i) {
            if (!emit_text(p, QWEN3_DELTA_REASONING, p->r_ws.data, p->r_ws.len)) return false;
            p->r_ws.len = 0;
            if (!emit_text(p, QWEN3_DELTA_REASONING, s + i, j - i)) return false;
        }
        i = j;
        while (j < n && is_ws((unsigned char)s[j])) j++;
        if (j > i && !buf_append(p, &p->r_ws, s + i, j - i)) return false;
        i = j;
    }
    return true;
}

/* Content text outside blocks: whitespace dropped after "</think>" and after
 * a call; with tools parsed, whitespace held in c_ws until text follows. */
static bool content_text(qwen3_output *p, const char *s, size_t n) {
    size_t i = 0;
    if (p->c_lead || p->after_call) {
        while (i < n && is_ws((unsigned char)s[i])) i++;
        if (i == n) return true;
        p->c_lead = p->after_call = false;
    }
    if (p->opt.disable_tools) return emit_text(p, QWEN3_DELTA_CONTENT, s + i, n - i);
    while (i < n) {
        size_t j = i;
        while (j < n && !is_ws((unsigned char)s[j])) j++;
        if (j > i) {
            if (!emit_text(p, QWEN3_DELTA_CONTENT, p->c_ws.data, p->c_ws.len)) return false;
            p->c_ws.len = 0;
            if (!emit_text(p, QWEN3_DELTA_CONTENT, s + i, j - i)) return false;
        }
        i = j;
        while (j < n && is_ws((unsigned char)s[j])) j++;
        if (j > i && !buf_append(p, &p->c_ws, s + i, j - i)) return false;
        i = j;
    }
    return true;
}

/* Text that goes to content verbatim (a rejected tool-call block): the held
 * whitespace before it first. */
static bool content_raw(qwen3_output *p, const char *s, size_t n) {
    if (!emit_text(p, QWEN3_DELTA_CONTENT, p->c_ws.data, p->c_ws.len)) return false;
    p->c_ws.len = 0;
    p->c_lead = p->after_call = false;
    return emit_text(p, QWEN3_DELTA_CONTENT, s, n);
}

/* ------------------------------------------------------------ JSON */

/* A strict RFC 8259 validator for the tool-call body: iterative, with the
 * open containers on a growable stack, so nesting depth is not limited.
 * UTF-8 inside strings is passed through unchecked, as cJSON does. */

typedef enum json_result { JSON_OK, JSON_BAD, JSON_NOMEM } json_result;

static size_t json_ws(const char *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string starting at s[*i] == '"'; *i moves past its closing quote. */
static bool json_string(const char *s, size_t n, size_t *i) {
    size_t k = *i + 1;
    while (k < n) {
        unsigned char c = (unsigned char)s[k];
        if (c == '"') {
            *i = k + 1;
            return true;
        }
        if (c < 0x20) return false;
        if (c == '\\') {
            if (k + 1 >= n) return false;
            char e = s[k + 1];
            if (e == 'u') {
                if (k + 5 >= n) return false;
                for (int h = 2; h < 6; h++)
                    if (hex_value(s[k + h]) < 0) return false;
                k += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == '\0') return false;
            k += 2;
            continue;
        }
        k++;
    }
    return false;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool json_number(const char *s, size_t n, size_t *i) {
    size_t k = *i;
    if (k < n && s[k] == '-') k++;
    if (k >= n) return false;
    if (s[k] == '0') {
        k++;
    } else if (is_digit(s[k])) {
        while (k < n && is_digit(s[k])) k++;
    } else {
        return false;
    }
    if (k < n && s[k] == '.') {
        k++;
        if (k >= n || !is_digit(s[k])) return false;
        while (k < n && is_digit(s[k])) k++;
    }
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
        k++;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        if (k >= n || !is_digit(s[k])) return false;
        while (k < n && is_digit(s[k])) k++;
    }
    *i = k;
    return true;
}

static bool json_literal(const char *s, size_t n, size_t *i, const char *word) {
    size_t len = strlen(word);
    if (n - *i < len || memcmp(s + *i, word, len) != 0) return false;
    *i += len;
    return true;
}

/* One value starting at s[*i] (no leading whitespace); *i moves past it. */
static json_result json_value(qwen3_output *p, const char *s, size_t n, size_t *i) {
    buf *stack = &p->json_stack;
    stack->len = 0;
    size_t k = *i;
    for (;;) {
        /* a value starts at k */
        k = json_ws(s, n, k);
        if (k >= n) return JSON_BAD;
        char c = s[k];
        if (c == '{' || c == '[') {
            if (!buf_append(p, stack, &c, 1)) return JSON_NOMEM;
            k = json_ws(s, n, k + 1);
            if (k < n && s[k] == (c == '{' ? '}' : ']')) {
                stack->len--; /* an empty container: a complete value */
                k++;
            } else if (c == '{') {
                if (k >= n || s[k] != '"' || !json_string(s, n, &k)) return JSON_BAD;
                k = json_ws(s, n, k);
                if (k >= n || s[k] != ':') return JSON_BAD;
                k++;
                continue;
            } else {
                continue;
            }
        } else if (c == '"') {
            if (!json_string(s, n, &k)) return JSON_BAD;
        } else if (c == '-' || is_digit(c)) {
            if (!json_number(s, n, &k)) return JSON_BAD;
        } else if (!json_literal(s, n, &k, "true") && !json_literal(s, n, &k, "false") &&
                   !json_literal(s, n, &k, "null")) {
            return JSON_BAD;
        }
        /* a value ended before k: close containers or go to the next value */
        for (;;) {
            if (stack->len == 0) {
                *i = k;
                return JSON_OK;
            }
            char top = stack->data[stack->len - 1];
            k = json_ws(s, n, k);
            if (k >= n) return JSON_BAD;
            if (s[k] == ',') {
                k = json_ws(s, n, k + 1);
                if (top == '{') {
                    if (k >= n || s[k] != '"' || !json_string(s, n, &k)) return JSON_BAD;
                    k = json_ws(s, n, k);
                    if (k >= n || s[k] != ':') return JSON_BAD;
                    k++;
                }
                break; /* the next value */
            }
            if (s[k] == (top == '{' ? '}' : ']')) {
                stack->len--;
                k++;
                continue;
            }
            return JSON_BAD;
        }
    }
}

static void put_utf8(char *out, size_t *o, uint32_t cp) {
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xC0 | (cp >> 6));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xE0 | (cp >> 12));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*o)++] = (char)(0xF0 | (cp >> 18));
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static uint32_t hex4(const char *s) {
    uint32_t v = 0;
    for (int h = 0; h < 4; h++) v = v * 16 + (uint32_t)hex_value(s[h]);
    return v;
}

/* Decodes the validated string s[0, n) (quotes included) into p->scratch.
 * JSON_BAD for an unpaired surrogate, which has no UTF-8 form. */
static json_result json_decode_string(qwen3_output *p, const char *s, size_t n) {
    buf *out = &p->scratch;
    out->len = 0;
    /* the decoded form is never longer than the escaped one */
    void *data = out->data;
    if (!grow(p, &data, &out->cap, n + 1, 1)) return JSON_NOMEM;
    out->data = data;
    size_t o = 0;
    for (size_t k = 1; k + 1 < n;) {
        char c = s[k];
        if (c != '\\') {
            out->data[o++] = c;
            k++;
            continue;
        }
        char e = s[k + 1];
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            out->data[o++] = to[strchr(from, e) - from];
            k += 2;
            continue;
        }
        uint32_t cp = hex4(s + k + 2);
        k += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return JSON_BAD;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (k + 6 > n - 1 || s[k] != '\\' || s[k + 1] != 'u') return JSON_BAD;
            uint32_t lo = hex4(s + k + 2);
            if (lo < 0xDC00 || lo > 0xDFFF) return JSON_BAD;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            k += 6;
        }
        put_utf8(out->data, &o, cp);
    }
    out->len = o;
    out->data[o] = '\0';
    return JSON_OK;
}

static char *dup_bytes(qwen3_output *p, const char *s, size_t n) {
    char *d = mem_realloc(p, NULL, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* The validated value s[0, n) without insignificant whitespace. */
static char *json_compact(qwen3_output *p, const char *s, size_t n, size_t *out_len) {
    char *d = mem_realloc(p, NULL, n + 1);
    if (!d) return NULL;
    size_t o = 0;
    bool in_string = false;
    for (size_t k = 0; k < n; k++) {
        char c = s[k];
        if (in_string) {
            d[o++] = c;
            if (c == '\\') d[o++] = s[++k];
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
            d[o++] = c;
        } else if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
            d[o++] = c;
        }
    }
    d[o] = '\0';
    *out_len = o;
    return d;
}

/* ------------------------------------------------------------ tool calls */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void make_call_id(qwen3_output *p, char id[32]) {
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    memcpy(id, "call_", 5);
    size_t n = 5;
    while (n < 5 + 24) {
        uint64_t r = splitmix64(&p->id_state);
        for (int b = 0; b < 8 && n < 5 + 24; b++, r >>= 8) {
            unsigned v = (unsigned)(r & 0xFF);
            if (v < 248) id[n++] = alnum[v % 62]; /* 248 = 4 * 62: no bias */
        }
    }
    id[n] = '\0';
}

/* Parses a block body; on JSON_OK the call is appended to calls[]. */
static json_result parse_call(qwen3_output *p, const char *s, size_t n) {
    size_t k = json_ws(s, n, 0);
    if (k >= n || s[k] != '{') return JSON_BAD;
    size_t start = k;
    json_result r = json_value(p, s, n, &k);
    if (r != JSON_OK) return r;
    if (json_ws(s, n, k) != n) return JSON_BAD; /* one value and nothing after */

    /* Walk the validated object's members; the last of a repeated key wins
     * (as Python's json.loads, which vLLM uses). */
    size_t name_at = 0, name_len = 0, args_at = 0, args_len = 0;
    bool has_name = false, has_args = false;
    k = json_ws(s, n, start + 1);
    while (s[k] != '}') {
        size_t key = k;
        json_string(s, n, &k);
        size_t key_len = k - key;
        k = json_ws(s, n, k) + 1; /* ':' */
        k = json_ws(s, n, k);
        size_t value = k;
        r = json_value(p, s, n, &k);
        if (r != JSON_OK) return r;
        r = json_decode_string(p, s + key, key_len);
        if (r == JSON_NOMEM) return r;
        /* a key with an unpaired surrogate (JSON_BAD) is neither name nor arguments */
        if (r == JSON_OK && p->scratch.len == 4 && memcmp(p->scratch.data, "name", 4) == 0) {
            has_name = true;
            name_at = value;
            name_len = k - value;
        } else if (r == JSON_OK && p->scratch.len == 9 && memcmp(p->scratch.data, "arguments", 9) == 0) {
            has_args = true;
            args_at = value;
            args_len = k - value;
        }
        k = json_ws(s, n, k);
        if (s[k] == ',') k = json_ws(s, n, k + 1);
    }

    if (!has_name || s[name_at] != '"') return JSON_BAD;
    r = json_decode_string(p, s + name_at, name_len);
    if (r != JSON_OK) return r;
    if (p->scratch.len == 0 || memchr(p->scratch.data, '\0', p->scratch.len)) return JSON_BAD;

    void *arr = p->calls;
    if (!grow(p, &arr, &p->cap_calls, p->n_calls + 1, sizeof *p->calls)) return JSON_NOMEM;
    p->calls = arr;
    qwen3_tool_call call = {0};
    call.name = dup_bytes(p, p->scratch.data, p->scratch.len);
    if (!call.name) return JSON_NOMEM;

    if (!has_args || (args_len == 4 && memcmp(s + args_at, "null", 4) == 0)) {
        call.arguments = dup_bytes(p, "{}", 2);
        call.arguments_len = 2;
    } else if (s[args_at] == '"') {
        r = json_decode_string(p, s + args_at, args_len);
        if (r != JSON_OK) {
            mem_free(p, call.name);
            return r;
        }
        call.arguments = dup_bytes(p, p->scratch.data, p->scratch.len);
        call.arguments_len = p->scratch.len;
    } else {
        call.arguments = json_compact(p, s + args_at, args_len, &call.arguments_len);
    }
    if (!call.arguments) {
        mem_free(p, call.name);
        return JSON_NOMEM;
    }
    make_call_id(p, call.id);
    p->calls[p->n_calls++] = call;
    return JSON_OK;
}

/* The call parse_call just appended, reported as BEGIN and ARGS deltas. */
static bool report_call(qwen3_output *p) {
    size_t index = p->n_calls - 1;
    if (!add_pending(p, (pending_delta){.kind = QWEN3_DELTA_TOOL_BEGIN, .tool_index = index}) ||
        !add_pending(p, (pending_delta){.kind = QWEN3_DELTA_TOOL_ARGS, .tool_index = index})) {
        return false;
    }
    p->after_call = true; /* c_ws stays held: trimmed unless text follows */
    p->c_lead = false;
    return true;
}

/* ------------------------------------------------------------ scanning */

/* Length of the longest suffix of s[0, n) that is a proper prefix of tag. */
static size_t partial_suffix(const char *s, size_t n, const char *tag, size_t tag_len) {
    size_t max = n < tag_len - 1 ? n : tag_len - 1;
    for (size_t k = max; k > 0; k--)
        if (memcmp(s + n - k, tag, k) == 0) return k;
    return 0;
}

static bool starts_with(const char *s, size_t n, const char *tag, size_t tag_len) {
    return n >= tag_len && memcmp(s, tag, tag_len) == 0;
}

/* s[0, n) is a proper prefix of tag (n < tag_len). */
static bool is_partial(const char *s, size_t n, const char *tag, size_t tag_len) {
    return n < tag_len && memcmp(s, tag, n) == 0;
}

static void enter_reasoning(qwen3_output *p) {
    p->state = STATE_REASONING;
    p->r_lead = true;
    p->r_ws.len = 0;
}

/* Processes in[] as far as it is decided; consumes what it processed. With
 * at_end, nothing more will come: whatever is held is decided. */
static bool process(qwen3_output *p, bool at_end) {
    for (;;) {
        const char *s = p->in.data;
        size_t n = p->in.len;
        if (n == 0) return true;

        if (p->state == STATE_START) {
            size_t k = 0;
            while (k < n && is_ws((unsigned char)s[k])) k++;
            if (starts_with(s + k, n - k, TAG_THINK, LEN(TAG_THINK))) {
                /* whitespace before "<think>" is dropped */
                buf_consume(&p->in, k + LEN(TAG_THINK));
                enter_reasoning(p);
                continue;
            }
            if (!at_end && is_partial(s + k, n - k, TAG_THINK, LEN(TAG_THINK))) return true;
            p->state = STATE_CONTENT;
            continue;
        }

        if (p->state == STATE_REASONING) {
            const char *end = memmem(s, n, TAG_THINK_END, LEN(TAG_THINK_END));
            if (end) {
                size_t k = (size_t)(end - s);
                if (!reasoning_text(p, s, k)) return false;
                p->r_ws.len = 0; /* trailing whitespace of the block */
                buf_consume(&p->in, k + LEN(TAG_THINK_END));
                p->state = STATE_CONTENT;
                p->c_lead = true;
                continue;
            }
            size_t hold = at_end ? 0 : partial_suffix(s, n, TAG_THINK_END, LEN(TAG_THINK_END));
            if (!reasoning_text(p, s, n - hold)) return false;
            buf_consume(&p->in, n - hold);
            if (at_end) p->r_ws.len = 0;
            return true;
        }

        if (p->state == STATE_CONTENT) {
            bool think = !p->opt.disable_reasoning, tools = !p->opt.disable_tools;
            size_t k = 0;
            bool switched = false;
            while (k < n) {
                const char *lt = memchr(s + k, '<', n - k);
                if (!lt) {
                    k = n;
                    break;
                }
                k = (size_t)(lt - s);
                const char *t = s + k;
                size_t rest = n - k;
                if (think && starts_with(t, rest, TAG_THINK, LEN(TAG_THINK))) {
                    if (!content_text(p, s, k)) return false;
                    buf_consume(&p->in, k + LEN(TAG_THINK));
                    enter_reasoning(p);
                    switched = true;
                    break;
                }
                if (think && starts_with(t, rest, TAG_THINK_END, LEN(TAG_THINK_END))) {
                    /* a stray "</think>" (no block open): the tag is dropped */
                    if (!content_text(p, s, k)) return false;
                    buf_consume(&p->in, k + LEN(TAG_THINK_END));
                    switched = true;
                    break;
                }
                if (tools && starts_with(t, rest, TAG_CALL, LEN(TAG_CALL))) {
                    if (!content_text(p, s, k)) return false;
                    buf_consume(&p->in, k + LEN(TAG_CALL));
                    p->state = STATE_CALL;
                    p->call_scanned = 0;
                    switched = true;
                    break;
                }
                if (!at_end && ((think && (is_partial(t, rest, TAG_THINK, LEN(TAG_THINK)) ||
                                           is_partial(t, rest, TAG_THINK_END, LEN(TAG_THINK_END)))) ||
                                (tools && is_partial(t, rest, TAG_CALL, LEN(TAG_CALL))))) {
                    break; /* hold from k: it may become a tag */
                }
                k++;
            }
            if (switched) continue;
            if (!content_text(p, s, k)) return false;
            buf_consume(&p->in, k);
            return true;
        }

        /* STATE_CALL: the body is in[0, n) */
        size_t from = p->call_scanned;
        const char *end = memmem(s + from, n - from, TAG_CALL_END, LEN(TAG_CALL_END));
        if (!end && !at_end) {
            p->call_scanned = n - partial_suffix(s, n, TAG_CALL_END, LEN(TAG_CALL_END));
            return true;
        }
        {
            /* a block still open at the end of generation is a call when its
             * body is a whole call (vLLM's hermes parser accepts it too) */
            size_t k = end ? (size_t)(end - s) : n;
            json_result r = parse_call(p, s, k);
            if (r == JSON_NOMEM) return false;
            if (r == JSON_OK) {
                if (!report_call(p)) return false;
                buf_consume(&p->in, end ? k + LEN(TAG_CALL_END) : k);
                p->state = STATE_CONTENT;
                continue;
            }
        }
        /* Not a call (malformed, or open at the end without a whole call):
         * "<tool_call>" is content, and the body (with "</tool_call>") is
         * scanned again as content, so that think tags in it are handled as
         * everywhere else and a good block inside it is still a call. */
        if (!content_raw(p, TAG_CALL, LEN(TAG_CALL))) return false;
        p->state = STATE_CONTENT;
    }
}

/* Turns the pending deltas into the array handed back. */
static bool publish(qwen3_output *p, const qwen3_delta **deltas, size_t *n) {
    void *arr = p->out;
    if (!grow(p, &arr, &p->cap_out, p->n_pending ? p->n_pending : 1, sizeof *p->out)) return false;
    p->out = arr;
    for (size_t i = 0; i < p->n_pending; i++) {
        const pending_delta *d = &p->pending[i];
        qwen3_delta *o = &p->out[i];
        *o = (qwen3_delta){.kind = d->kind};
        if (d->kind == QWEN3_DELTA_REASONING || d->kind == QWEN3_DELTA_CONTENT) {
            const buf *agg = d->kind == QWEN3_DELTA_REASONING ? &p->reasoning : &p->content;
            o->text = agg->data + d->off;
            o->len = d->len;
        } else {
            const qwen3_tool_call *c = &p->calls[d->tool_index];
            o->tool_index = d->tool_index;
            o->tool_id = c->id;
            o->tool_name = c->name;
            if (d->kind == QWEN3_DELTA_TOOL_ARGS) {
                o->text = c->arguments;
                o->len = c->arguments_len;
            }
        }
    }
    *deltas = p->out;
    *n = p->n_pending;
    p->n_pending = 0;
    return true;
}

/* ------------------------------------------------------------ API */

bool qwen3_prompt_opens_reasoning(const char *prompt, size_t len) {
    while (len > 0 && is_ws((unsigned char)prompt[len - 1])) len--;
    return len >= LEN(TAG_THINK) && memcmp(prompt + len - LEN(TAG_THINK), TAG_THINK, LEN(TAG_THINK)) == 0;
}

qwen3_output *qwen3_output_new(const qwen3_output_options *opt) {
    qwen3_output_options o = opt ? *opt : (qwen3_output_options){0};
    qwen3_output *p = o.alloc ? o.alloc(o.alloc_user, NULL, sizeof *p) : malloc(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->opt = o;
    p->id_state = o.id_seed;
    if (o.disable_reasoning) p->state = STATE_CONTENT;
    else if (o.starts_in_reasoning) enter_reasoning(p);
    else p->state = STATE_START;
    return p;
}

void qwen3_output_free(qwen3_output *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_calls; i++) {
        mem_free(p, p->calls[i].name);
        mem_free(p, p->calls[i].arguments);
    }
    mem_free(p, p->calls);
    mem_free(p, p->pending);
    mem_free(p, p->out);
    buf *bufs[] = {&p->in, &p->r_ws, &p->c_ws, &p->reasoning, &p->content, &p->json_stack, &p->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) buf_free(p, bufs[i]);
    mem_free(p, p);
}

static inf_status fail(qwen3_output *p, const qwen3_delta **deltas, size_t *n) {
    p->failed = true;
    p->n_pending = 0;
    *deltas = NULL;
    *n = 0;
    return INF_ERR_NOMEM;
}

inf_status qwen3_output_push(qwen3_output *p, const char *text, size_t len, const qwen3_delta **deltas,
                             size_t *n) {
    *deltas = NULL;
    *n = 0;
    if (p->failed) return INF_ERR_NOMEM;
    if (p->finished || (!text && len)) return INF_ERR_INVALID;
    if (!buf_append(p, &p->in, text, len) || !process(p, false) || !publish(p, deltas, n))
        return fail(p, deltas, n);
    return INF_OK;
}

inf_status qwen3_output_finish(qwen3_output *p, const qwen3_delta **deltas, size_t *n) {
    *deltas = NULL;
    *n = 0;
    if (p->failed) return INF_ERR_NOMEM;
    if (p->finished) return INF_ERR_INVALID;
    if (!process(p, true)) return fail(p, deltas, n);
    /* Held whitespace: reasoning's is trailing; content's is trimmed when
     * tool calls came after it, and kept at the end of plain text. */
    p->r_ws.len = 0;
    if (!p->after_call && !emit_text(p, QWEN3_DELTA_CONTENT, p->c_ws.data, p->c_ws.len)) return fail(p, deltas, n);
    p->c_ws.len = 0;
    if (!publish(p, deltas, n)) return fail(p, deltas, n);
    p->finished = true;
    return INF_OK;
}

const char *qwen3_output_reasoning(const qwen3_output *p, size_t *len) {
    if (len) *len = p->reasoning.len;
    return p->reasoning.len ? p->reasoning.data : NULL;
}

const char *qwen3_output_content(const qwen3_output *p, size_t *len) {
    if (len) *len = p->content.len;
    return p->content.len ? p->content.data : NULL;
}

size_t qwen3_output_n_tool_calls(const qwen3_output *p) { return p->n_calls; }

const qwen3_tool_call *qwen3_output_tool_call(const qwen3_output *p, size_t i) {
    return i < p->n_calls ? &p->calls[i] : NULL;
}

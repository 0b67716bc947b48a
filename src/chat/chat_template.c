/*
 * chat_template.c — renders chat requests into prompts: Qwen3's chat
 * template implemented directly in C, and generic ChatML for any other
 * template.
 *
 * Reference: the output is byte-identical to what @huggingface/jinja (the
 * reference Jinja engine named by the project) renders from Qwen3's
 * template, as tests/data/chat/ checks. Where that engine's semantics differ
 * from Python's Jinja they are followed, and said so next to the code:
 *   - `s.strip(chars)`, `lstrip(chars)`, `rstrip(chars)` ignore chars and
 *     remove JavaScript whitespace (String.prototype.trim), not just '\n';
 *   - `tojson` prints as JSON.stringify does, with ", " and ": " separators
 *     and JavaScript's key order and number format (json_value.h).
 * Requests are validated first; a field of the wrong type is an
 * INF_ERR_INVALID error naming it ("messages[2].role: expected a string"),
 * and so is every input the template itself cannot render (it would raise
 * an exception in the reference engine, e.g. null content in a user turn).
 *
 * Provenance: the renderers write the template's own text with put_lit and
 * the request's (its strings, or values printed by `tojson`) with put_span
 * and put_json, which can record where those bytes went; that record is
 * what lets inf_chat_template_render_ids (chat_prompt.c) keep users' text
 * from becoming control tokens. New output must keep to the three.
 *
 * Template detection: a template is Qwen3's when its text equals the
 * published one (qwen3_template.h), allowing the one trailing newline that
 * Jinja engines drop. Anything else is rendered as ChatML, matching the
 * classic ChatML Jinja template byte for byte.
 */
#include "chat/chat_template.h"

#include "chat/qwen3_template.h"
#include "core/common.h"
#include "io/gguf_split.h"
#include "json/json_value.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum chat_format {
    CHAT_FORMAT_QWEN3,
    CHAT_FORMAT_CHATML,
} chat_format;

struct inf_chat_template {
    chat_format format;
    const char *description; /* static text */
};

static const char DESCRIBE_QWEN3[] = "qwen3";
static const char DESCRIBE_BUILTIN[] = "qwen3 (built-in; the model has no chat template)";
static const char DESCRIBE_CHATML[] =
    "unknown template; using generic ChatML (<|im_start|>role ... <|im_end|>; tools and tool calls not rendered)";

/* ------------------------------------------------------------------ construction */

static inf_status template_new(chat_format format, const char *description, inf_chat_template **out,
                               inf_error *err) {
    inf_chat_template *t = malloc(sizeof *t);
    if (!t) return inf_errorf(err, INF_ERR_NOMEM, "chat template: out of memory");
    t->format = format;
    t->description = description;
    *out = t;
    return INF_OK;
}

static bool is_qwen3_source(const char *source, size_t len) {
    size_t known = sizeof QWEN3_CHAT_TEMPLATE - 1;
    if (len == known + 1 && source[known] == '\n') len = known; /* Jinja drops one trailing newline */
    return len == known && !memcmp(source, QWEN3_CHAT_TEMPLATE, known);
}

static inf_status template_from_text(const char *source, size_t len, inf_chat_template **out,
                                     inf_error *err) {
    if (is_qwen3_source(source, len)) return template_new(CHAT_FORMAT_QWEN3, DESCRIBE_QWEN3, out, err);
    return template_new(CHAT_FORMAT_CHATML, DESCRIBE_CHATML, out, err);
}

inf_status inf_chat_template_from_source(const char *source, inf_chat_template **out, inf_error *err) {
    *out = NULL;
    if (!source) return template_new(CHAT_FORMAT_QWEN3, DESCRIBE_QWEN3, out, err);
    return template_from_text(source, strlen(source), out, err);
}

inf_status inf_chat_template_from_gguf(const gguf_file *f, inf_chat_template **out, inf_error *err) {
    *out = NULL;
    const gguf_string *source = NULL;
    inf_status st = gguf_get_string(f, "tokenizer.chat_template", true, &source, err);
    if (st != INF_OK) return st;
    if (!source) return template_new(CHAT_FORMAT_QWEN3, DESCRIBE_BUILTIN, out, err);
    return template_from_text(source->data, (size_t)source->len, out, err);
}

void inf_chat_template_free(inf_chat_template *tmpl) { free(tmpl); }

const char *inf_chat_template_describe(const inf_chat_template *tmpl) {
    return tmpl ? tmpl->description : "none";
}

/* ------------------------------------------------------------------ loading files */

/* dir_of(path) + "/" + name, malloc'd. */
static char *sibling_path(const char *path, const char *name) {
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    char *p = malloc(dir_len + strlen(name) + 1);
    if (!p) return NULL;
    memcpy(p, path, dir_len);
    strcpy(p + dir_len, name);
    return p;
}

static bool file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* The template of a Hugging Face config: "chat_template" is a string, or a
 * list of {"name", "template"} from which "default" is used; newer
 * repositories keep it in chat_template.jinja beside the config instead. */
static inf_status load_from_config(const char *path, const json_value *config, inf_chat_template **out,
                                   inf_error *err) {
    const json_value *source = json_get(config, "chat_template");
    if (source && source->type == JSON_ARRAY) {
        const json_value *named = NULL;
        for (size_t i = 0; i < source->arr.n && !named; i++) {
            const json_value *name = json_get(source->arr.items[i], "name");
            if (name && name->type == JSON_STRING && !strcmp(name->str.data, "default"))
                named = json_get(source->arr.items[i], "template");
        }
        if (!named)
            return inf_errorf(err, INF_ERR_FORMAT, "%s: chat_template: no template named \"default\"", path);
        source = named;
    }
    if (source && source->type == JSON_STRING)
        return template_from_text(source->str.data, source->str.len, out, err);
    if (source && source->type != JSON_NULL)
        return inf_errorf(err, INF_ERR_FORMAT, "%s: chat_template: expected a string", path);

    char *jinja_path = sibling_path(path, "chat_template.jinja");
    if (!jinja_path) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
    inf_status st = INF_OK;
    if (file_exists(jinja_path)) {
        size_t len = 0;
        char *text;
        st = inf_read_file(jinja_path, &text, &len, err);
        if (st == INF_OK) st = template_from_text(text, len, out, err);
        free(text);
    } else {
        st = template_new(CHAT_FORMAT_QWEN3, DESCRIBE_BUILTIN, out, err);
    }
    free(jinja_path);
    return st;
}

static bool is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

inf_status inf_chat_template_load(const char *path, inf_chat_template **out, inf_error *err) {
    *out = NULL;
    if (is_dir(path)) { /* a Hugging Face checkpoint: its tokenizer_config.json */
        size_t n = strlen(path);
        char *config_path = malloc(n + sizeof "/tokenizer_config.json");
        if (!config_path) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
        snprintf(config_path, n + sizeof "/tokenizer_config.json", "%s%stokenizer_config.json", path,
                 n && path[n - 1] == '/' ? "" : "/");
        inf_status st = file_exists(config_path) ? inf_chat_template_load(config_path, out, err)
                                                 : template_new(CHAT_FORMAT_QWEN3, DESCRIBE_BUILTIN, out, err);
        free(config_path);
        return st;
    }
    char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return inf_errorf(err, INF_ERR_IO, "%s: cannot open", path);
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    if (got == sizeof magic && !memcmp(magic, GGUF_MAGIC, 4)) {
        gguf_file *g = NULL;
        inf_status st = gguf_open_split(path, GGUF_OPEN_METADATA_ONLY, NULL, NULL, &g, err);
        if (st != INF_OK) return st;
        st = inf_chat_template_from_gguf(g, out, err);
        gguf_close(g);
        return st;
    }

    size_t len = 0;
    char *text;
    inf_status st = inf_read_file(path, &text, &len, err);
    if (st != INF_OK) return st;
    json_value *doc = NULL;
    st = json_parse(text, len, path, &doc, err);
    free(text);
    if (st != INF_OK) return st;
    if (doc->type != JSON_OBJECT) {
        json_free(doc);
        return inf_errorf(err, INF_ERR_FORMAT, "%s: expected a JSON object (tokenizer_config.json or tokenizer.json)", path);
    }
    bool is_tokenizer_json = json_get(doc, "model") && !json_get(doc, "chat_template");
    if (!is_tokenizer_json) {
        st = load_from_config(path, doc, out, err);
        json_free(doc);
        return st;
    }
    json_free(doc);
    /* tokenizer.json: the template lives in tokenizer_config.json beside it */
    char *config_path = sibling_path(path, "tokenizer_config.json");
    if (!config_path) return inf_errorf(err, INF_ERR_NOMEM, "%s: out of memory", path);
    if (file_exists(config_path)) {
        st = inf_chat_template_load(config_path, out, err);
    } else {
        st = template_new(CHAT_FORMAT_QWEN3, DESCRIBE_BUILTIN, out, err);
    }
    free(config_path);
    return st;
}

/* ------------------------------------------------------------------ request validation */

typedef enum thinking_flag {
    THINKING_UNSET, /* absent or null: the template's `enable_thinking is false` is false */
    THINKING_TRUE,
    THINKING_FALSE,
} thinking_flag;

typedef struct chat_request {
    const json_value *messages; /* array of validated message objects */
    const json_value *tools;    /* non-empty array, or NULL */
    bool add_generation_prompt;
    thinking_flag enable_thinking;
} chat_request;

static const char *type_phrase(const json_value *v) {
    if (!v) return "nothing (missing)";
    switch (v->type) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
    }
    return "?";
}

static bool is_absent(const json_value *v) { return !v || v->type == JSON_NULL; }

static bool string_equals(const json_value *v, const char *s) {
    size_t n = strlen(s);
    return v && v->type == JSON_STRING && v->str.len == n && !memcmp(v->str.data, s, n);
}

/* The template renders content of these roles by concatenation, which
 * fails on null or missing content (ChatML does so for every role). */
static bool content_must_be_string(chat_format format, const json_value *role) {
    return format == CHAT_FORMAT_CHATML || string_equals(role, "system") || string_equals(role, "user") ||
           string_equals(role, "assistant");
}

static inf_status validate_tool_call(const json_value *call, size_t m, size_t c, inf_error *err) {
    if (call->type != JSON_OBJECT)
        return inf_errorf(err, INF_ERR_INVALID, "messages[%zu].tool_calls[%zu]: expected an object, got %s", m, c,
                          type_phrase(call));
    const json_value *function = json_get(call, "function");
    if (!is_absent(function) && function->type != JSON_OBJECT)
        return inf_errorf(err, INF_ERR_INVALID,
                          "messages[%zu].tool_calls[%zu].function: expected an object or null, got %s", m, c,
                          type_phrase(function));
    /* the template reads name and arguments from "function" when it is a
     * non-empty object, else from the tool call itself */
    bool nested = function && function->type == JSON_OBJECT && function->obj.n > 0;
    const json_value *name = json_get(nested ? function : call, "name");
    if (!name || name->type != JSON_STRING)
        return inf_errorf(err, INF_ERR_INVALID, "messages[%zu].tool_calls[%zu]%s.name: expected a string, got %s", m,
                          c, nested ? ".function" : "", type_phrase(name));
    return INF_OK;
}

static inf_status validate_message(chat_format format, const json_value *msg, size_t m, inf_error *err) {
    if (msg->type != JSON_OBJECT)
        return inf_errorf(err, INF_ERR_INVALID, "messages[%zu]: expected an object, got %s", m, type_phrase(msg));
    const json_value *role = json_get(msg, "role");
    if (!role || role->type != JSON_STRING)
        return inf_errorf(err, INF_ERR_INVALID, "messages[%zu].role: expected a string, got %s", m, type_phrase(role));
    const json_value *content = json_get(msg, "content");
    if (content_must_be_string(format, role)) {
        if (!content || content->type != JSON_STRING)
            return inf_errorf(err, INF_ERR_INVALID, "messages[%zu].content: expected a string in a '%s' message, got %s",
                              m, role->str.data, type_phrase(content));
    } else if (!is_absent(content) && content->type != JSON_STRING) {
        return inf_errorf(err, INF_ERR_INVALID, "messages[%zu].content: expected a string or null, got %s", m,
                          type_phrase(content));
    }
    if (format != CHAT_FORMAT_QWEN3 || !string_equals(role, "assistant")) return INF_OK;

    const json_value *reasoning = json_get(msg, "reasoning_content");
    if (!is_absent(reasoning) && reasoning->type != JSON_STRING)
        return inf_errorf(err, INF_ERR_INVALID, "messages[%zu].reasoning_content: expected a string or null, got %s",
                          m, type_phrase(reasoning));
    const json_value *calls = json_get(msg, "tool_calls");
    if (is_absent(calls)) return INF_OK;
    if (calls->type != JSON_ARRAY)
        return inf_errorf(err, INF_ERR_INVALID, "messages[%zu].tool_calls: expected an array or null, got %s", m,
                          type_phrase(calls));
    for (size_t c = 0; c < calls->arr.n; c++) {
        inf_status st = validate_tool_call(calls->arr.items[c], m, c, err);
        if (st != INF_OK) return st;
    }
    return INF_OK;
}

static inf_status validate_request(chat_format format, const json_value *req, chat_request *out, inf_error *err) {
    memset(out, 0, sizeof *out);
    if (req->type != JSON_OBJECT)
        return inf_errorf(err, INF_ERR_INVALID, "request: expected an object, got %s", type_phrase(req));
    const json_value *messages = json_get(req, "messages");
    if (!messages || messages->type != JSON_ARRAY)
        return inf_errorf(err, INF_ERR_INVALID, "messages: expected an array, got %s", type_phrase(messages));
    /* The reference engine would render an empty conversation as nothing
     * (or just the generation prompt); Python's Jinja raises. An empty
     * request is a caller's mistake either way. */
    if (messages->arr.n == 0) return inf_errorf(err, INF_ERR_INVALID, "messages: expected at least one message");
    for (size_t m = 0; m < messages->arr.n; m++) {
        inf_status st = validate_message(format, messages->arr.items[m], m, err);
        if (st != INF_OK) return st;
    }
    out->messages = messages;

    const json_value *tools = json_get(req, "tools");
    if (!is_absent(tools) && tools->type != JSON_ARRAY)
        return inf_errorf(err, INF_ERR_INVALID, "tools: expected an array or null, got %s", type_phrase(tools));
    out->tools = !is_absent(tools) && tools->arr.n > 0 ? tools : NULL; /* `if tools`: empty is false */

    const json_value *gen = json_get(req, "add_generation_prompt");
    if (!is_absent(gen) && gen->type != JSON_BOOL)
        return inf_errorf(err, INF_ERR_INVALID, "add_generation_prompt: expected a boolean, got %s", type_phrase(gen));
    out->add_generation_prompt = gen && gen->type == JSON_BOOL && gen->boolean;

    const json_value *thinking = json_get(req, "enable_thinking");
    if (!is_absent(thinking) && thinking->type != JSON_BOOL)
        return inf_errorf(err, INF_ERR_INVALID, "enable_thinking: expected a boolean, got %s", type_phrase(thinking));
    out->enable_thinking = is_absent(thinking) ? THINKING_UNSET : thinking->boolean ? THINKING_TRUE : THINKING_FALSE;
    return INF_OK;
}

/* ------------------------------------------------------------------ string helpers */

/* A borrowed byte range of a validated (UTF-8) JSON string. */
typedef struct text_span {
    const char *p;
    size_t n;
} text_span;

static text_span span_of(const json_value *v) { return (text_span){v->str.data, v->str.len}; }

/* The prompt being rendered: its text, and (when ranges is set) the byte
 * ranges of it that come from the request (its strings, and the values
 * `tojson` prints), which inf_chat_template_render_ids tokenizes with
 * special tokens off. Every byte the renderers write goes through put_lit
 * (the template's own text) or put_span / put_json (the request's). */
typedef struct prompt_buf {
    inf_buf text;
    tok_range *ranges; /* sorted, disjoint, not adjacent; NULL: not recorded */
    size_t n_ranges, cap_ranges;
    bool track, failed;
} prompt_buf;

static void put_lit(prompt_buf *b, const char *s) { inf_buf_puts(&b->text, s); }

/* Marks text[begin..) (just written from the request) as the request's. */
static void mark_request(prompt_buf *b, size_t begin) {
    size_t end = b->text.len;
    if (!b->track || b->text.failed || end == begin) return;
    if (b->n_ranges && b->ranges[b->n_ranges - 1].end == begin) { /* adjacent: one run */
        b->ranges[b->n_ranges - 1].end = end;
        return;
    }
    if (b->n_ranges == b->cap_ranges) {
        size_t cap = b->cap_ranges ? 2 * b->cap_ranges : 16;
        tok_range *r = cap < SIZE_MAX / sizeof *r ? realloc(b->ranges, cap * sizeof *r) : NULL;
        if (!r) {
            b->failed = true;
            return;
        }
        b->ranges = r;
        b->cap_ranges = cap;
    }
    b->ranges[b->n_ranges++] = (tok_range){begin, end};
}

static void put_span(prompt_buf *b, text_span s) {
    size_t begin = b->text.len;
    inf_buf_append(&b->text, s.p, s.n);
    mark_request(b, begin);
}

static void put_json(prompt_buf *b, const json_value *v) {
    size_t begin = b->text.len;
    json_write_tojson(&b->text, v);
    mark_request(b, begin);
}

/* Offset of the first (or last) occurrence of needle in s, or -1. */
static long long find_first(text_span s, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; k <= s.n && i <= s.n - k; i++)
        if (!memcmp(s.p + i, needle, k)) return (long long)i;
    return -1;
}

static long long find_last(text_span s, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = s.n; k <= s.n && i-- > 0;)
        if (i <= s.n - k && !memcmp(s.p + i, needle, k)) return (long long)i;
    return -1;
}

static bool starts_with(text_span s, const char *prefix) {
    size_t k = strlen(prefix);
    return s.n >= k && !memcmp(s.p, prefix, k);
}

static bool ends_with(text_span s, const char *suffix) {
    size_t k = strlen(suffix);
    return s.n >= k && !memcmp(s.p + s.n - k, suffix, k);
}

/* JavaScript's WhiteSpace and LineTerminator code points, which
 * String.prototype.trim removes. */
static bool is_js_space(uint32_t cp) {
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
    case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
    case 0x205F: case 0x3000: case 0xFEFF:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

/* Decodes the code point of the (valid) UTF-8 sequence starting at p[0]. */
static uint32_t decode_at(const unsigned char *p, size_t *len) {
    if (p[0] < 0x80) {
        *len = 1;
        return p[0];
    }
    if (p[0] < 0xE0) {
        *len = 2;
        return ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    }
    if (p[0] < 0xF0) {
        *len = 3;
        return ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    }
    *len = 4;
    return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) | ((uint32_t)(p[2] & 0x3F) << 6) |
           (p[3] & 0x3F);
}

/* The template's lstrip('\n') and friends as the reference engine runs them:
 * the argument is ignored and all JavaScript whitespace is removed
 * (Python would remove only '\n'). */
static text_span js_trim_start(text_span s) {
    while (s.n > 0) {
        size_t len;
        uint32_t cp = decode_at((const unsigned char *)s.p, &len);
        if (!is_js_space(cp)) break;
        s.p += len;
        s.n -= len;
    }
    return s;
}

static text_span js_trim_end(text_span s) {
    while (s.n > 0) {
        size_t start = s.n - 1;
        while (start > 0 && ((unsigned char)s.p[start] & 0xC0) == 0x80) start--;
        size_t len;
        uint32_t cp = decode_at((const unsigned char *)s.p + start, &len);
        if (!is_js_space(cp)) break;
        s.n = start;
    }
    return s;
}

static text_span js_trim(text_span s) { return js_trim_end(js_trim_start(s)); }

/* ------------------------------------------------------------------ Qwen3 */

static const char QWEN3_TOOLS_INTRO[] =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
static const char QWEN3_TOOLS_OUTRO[] =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

static const json_value *message_at(const chat_request *req, size_t i) { return req->messages->arr.items[i]; }

static bool role_is(const json_value *msg, const char *role) { return string_equals(json_get(msg, "role"), role); }

/* The system preamble: the first message when it is a system message, and
 * the tool signatures when there are tools. */
static void qwen3_preamble(const chat_request *req, prompt_buf *b) {
    const json_value *first = message_at(req, 0);
    bool has_system = role_is(first, "system");
    if (req->tools) {
        put_lit(b, "<|im_start|>system\n");
        if (has_system) {
            put_span(b, span_of(json_get(first, "content")));
            put_lit(b, "\n\n");
        }
        put_lit(b, QWEN3_TOOLS_INTRO);
        for (size_t i = 0; i < req->tools->arr.n; i++) {
            put_lit(b, "\n");
            put_json(b, req->tools->arr.items[i]);
        }
        put_lit(b, QWEN3_TOOLS_OUTRO);
    } else if (has_system) {
        put_lit(b, "<|im_start|>system\n");
        put_span(b, span_of(json_get(first, "content")));
        put_lit(b, "<|im_end|>\n");
    }
}

/* ns.last_query_index: the last user message that is not a tool response
 * wrapped as user text (scanning back only through such wrapped
 * responses); len - 1 when there is none. */
static size_t qwen3_last_query_index(const chat_request *req) {
    size_t n = req->messages->arr.n;
    for (size_t i = n; i-- > 0;) {
        const json_value *msg = message_at(req, i);
        if (!role_is(msg, "user")) continue;
        text_span content = span_of(json_get(msg, "content"));
        if (!(starts_with(content, "<tool_response>") && ends_with(content, "</tool_response>"))) return i;
    }
    return n - 1;
}

static void qwen3_tool_calls(const json_value *calls, text_span content, prompt_buf *b) {
    for (size_t c = 0; c < calls->arr.n; c++) {
        const json_value *call = calls->arr.items[c];
        if (c > 0 || content.n > 0) put_lit(b, "\n");
        const json_value *function = json_get(call, "function");
        if (function && function->type == JSON_OBJECT && function->obj.n > 0) call = function;
        put_lit(b, "<tool_call>\n{\"name\": \"");
        put_span(b, span_of(json_get(call, "name")));
        put_lit(b, "\", \"arguments\": ");
        const json_value *args = json_get(call, "arguments");
        if (args && args->type == JSON_STRING) {
            put_span(b, span_of(args));
        } else if (args) {
            put_json(b, args);
        } else {
            put_lit(b, "null"); /* tojson of an undefined value */
        }
        put_lit(b, "}\n</tool_call>");
    }
}

static void qwen3_assistant(const chat_request *req, size_t i, size_t last_query, prompt_buf *b) {
    const json_value *msg = message_at(req, i);
    text_span content = span_of(json_get(msg, "content"));
    text_span reasoning = {"", 0};
    const json_value *field = json_get(msg, "reasoning_content");
    if (!is_absent(field)) {
        reasoning = span_of(field);
    } else if (find_first(content, "</think>") >= 0) {
        /* content.split('</think>')[-1].lstrip('\n') */
        size_t after = (size_t)find_last(content, "</think>") + strlen("</think>");
        text_span whole = content;
        content = js_trim_start((text_span){whole.p + after, whole.n - after});
        /* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        text_span before = js_trim_end((text_span){whole.p, (size_t)find_first(whole, "</think>")});
        long long open = find_last(before, "<think>");
        if (open >= 0) {
            size_t start = (size_t)open + strlen("<think>");
            before = (text_span){before.p + start, before.n - start};
        }
        reasoning = js_trim_start(before);
    }

    size_t n = req->messages->arr.n;
    put_lit(b, "<|im_start|>assistant\n");
    if (i > last_query && (i == n - 1 || reasoning.n > 0)) {
        put_lit(b, "<think>\n");
        put_span(b, js_trim(reasoning));
        put_lit(b, "\n</think>\n\n");
        put_span(b, js_trim_start(content));
    } else {
        put_span(b, content);
    }
    const json_value *calls = json_get(msg, "tool_calls");
    if (calls && calls->type == JSON_ARRAY && calls->arr.n > 0) qwen3_tool_calls(calls, content, b);
    put_lit(b, "<|im_end|>\n");
}

/* Consecutive tool messages share one user turn of <tool_response> blocks. */
static void qwen3_tool_response(const chat_request *req, size_t i, prompt_buf *b) {
    size_t n = req->messages->arr.n;
    if (i == 0 || !role_is(message_at(req, i - 1), "tool")) put_lit(b, "<|im_start|>user");
    put_lit(b, "\n<tool_response>\n");
    const json_value *content = json_get(message_at(req, i), "content");
    if (!is_absent(content)) put_span(b, span_of(content)); /* null prints as nothing */
    put_lit(b, "\n</tool_response>");
    if (i == n - 1 || !role_is(message_at(req, i + 1), "tool")) put_lit(b, "<|im_end|>\n");
}

static void render_qwen3(const chat_request *req, prompt_buf *b) {
    qwen3_preamble(req, b);
    size_t last_query = qwen3_last_query_index(req);
    for (size_t i = 0; i < req->messages->arr.n; i++) {
        const json_value *msg = message_at(req, i);
        const json_value *role = json_get(msg, "role");
        if (string_equals(role, "user") || (string_equals(role, "system") && i > 0)) {
            put_lit(b, "<|im_start|>");
            put_span(b, span_of(role));
            put_lit(b, "\n");
            put_span(b, span_of(json_get(msg, "content")));
            put_lit(b, "<|im_end|>\n");
        } else if (string_equals(role, "assistant")) {
            qwen3_assistant(req, i, last_query, b);
        } else if (string_equals(role, "tool")) {
            qwen3_tool_response(req, i, b);
        }
        /* any other role is not rendered */
    }
    if (req->add_generation_prompt) {
        put_lit(b, "<|im_start|>assistant\n");
        if (req->enable_thinking == THINKING_FALSE) put_lit(b, "<think>\n\n</think>\n\n");
    }
}

/* ------------------------------------------------------------------ ChatML */

/* The classic ChatML template:
 *   {% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' +
 *   message['content'] + '<|im_end|>' + '\n'}}{% endfor %}
 *   {% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %} */
static void render_chatml(const chat_request *req, prompt_buf *b) {
    for (size_t i = 0; i < req->messages->arr.n; i++) {
        const json_value *msg = message_at(req, i);
        put_lit(b, "<|im_start|>");
        put_span(b, span_of(json_get(msg, "role")));
        put_lit(b, "\n");
        put_span(b, span_of(json_get(msg, "content")));
        put_lit(b, "<|im_end|>\n");
    }
    if (req->add_generation_prompt) put_lit(b, "<|im_start|>assistant\n");
}

/* ------------------------------------------------------------------ render */

static inf_status render(const inf_chat_template *tmpl, const char *request_json, size_t len, bool track,
                         char **out, size_t *out_len, tok_range **ranges, size_t *n_ranges, inf_error *err) {
    *out = NULL;
    *out_len = 0;
    if (track) {
        *ranges = NULL;
        *n_ranges = 0;
    }
    if (!tmpl || !request_json) return inf_errorf(err, INF_ERR_INVALID, "chat template render: NULL argument");
    json_value *doc = NULL;
    inf_status st = json_parse(request_json, len, "request", &doc, err);
    if (st != INF_OK) return st;
    chat_request req;
    st = validate_request(tmpl->format, doc, &req, err);
    if (st == INF_OK) {
        prompt_buf b = {.track = track};
        if (tmpl->format == CHAT_FORMAT_QWEN3) {
            render_qwen3(&req, &b);
        } else {
            render_chatml(&req, &b);
        }
        inf_buf_append(&b.text, "", 0); /* an empty prompt still gets a buffer */
        if (b.text.failed || b.failed) {
            free(b.text.data);
            free(b.ranges);
            st = inf_errorf(err, INF_ERR_NOMEM, "chat template: out of memory rendering the prompt");
        } else {
            *out = b.text.data;
            *out_len = b.text.len;
            if (track) {
                *ranges = b.ranges;
                *n_ranges = b.n_ranges;
            }
        }
    }
    json_free(doc);
    return st;
}

inf_status inf_chat_template_render(const inf_chat_template *tmpl, const char *request_json, size_t len,
                                    char **out, size_t *out_len, inf_error *err) {
    return render(tmpl, request_json, len, false, out, out_len, NULL, NULL, err);
}

inf_status chat_template_render_ranges(const inf_chat_template *tmpl, const char *request_json, size_t len,
                                       char **out, size_t *out_len, tok_range **ranges, size_t *n_ranges,
                                       inf_error *err) {
    return render(tmpl, request_json, len, true, out, out_len, ranges, n_ranges, err);
}

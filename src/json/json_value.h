/*
 * json_value.h — a small JSON reader and printer that behave exactly as
 * JavaScript's JSON.parse and JSON.stringify do, for the chat template.
 *
 * Why not cJSON: the reference renderer of chat templates
 * (@huggingface/jinja) receives the request as JavaScript values, so its
 * `tojson` output depends on JavaScript semantics that cJSON does not keep:
 *   - object keys in JavaScript's own-property order: keys that are array
 *     indices ("0" .. "4294967294", canonical form) first in ascending
 *     numeric order, then the other keys in insertion order;
 *   - a duplicated key keeps its first position and its last value;
 *   - strings are byte strings with a length (may contain U+0000);
 *   - numbers are doubles printed as JavaScript's Number::toString prints
 *     them (shortest round-trip digits, "1e+21", "1e-7", "-0" -> "0").
 * The reader also validates UTF-8 and rejects lone surrogate escapes (they
 * cannot be written as UTF-8), and bounds nesting depth.
 *
 * Its own folder, not the tokenizer's: nothing here tokenizes. Only the
 * chat template needs JavaScript's semantics; the tokenizer reads
 * tokenizer.json with a streaming scanner of its own (tok/tokenizer_json.c),
 * and tokenizer_config.json's token names and generation_config.json are
 * read with cJSON.
 */
#ifndef INF_JSON_VALUE_H
#define INF_JSON_VALUE_H

#include "core/common.h"
#include "inferno.h"

#include <stdbool.h>
#include <stddef.h>

#define JSON_MAX_DEPTH 512

typedef enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_type;

typedef struct json_value json_value;

typedef struct json_member {
    char *key; /* NUL-terminated; key_len bytes (may contain NULs) */
    size_t key_len;
    json_value *value;
} json_member;

struct json_value {
    json_type type;
    union {
        bool boolean;
        double number;
        struct {
            char *data; /* NUL-terminated; len bytes (may contain NULs) */
            size_t len;
        } str;
        struct {
            json_value **items;
            size_t n;
        } arr;
        struct {
            json_member *members; /* JavaScript own-property order */
            size_t n;
        } obj;
    };
};

/* Parses len bytes of JSON text (one value, surrounding whitespace allowed).
 * Errors are INF_ERR_FORMAT naming `what` and the byte offset. */
inf_status json_parse(const char *text, size_t len, const char *what, json_value **out,
                      inf_error *err);
void json_free(json_value *v);

/* The member named key (NUL-terminated, no inner NULs), or NULL. */
const json_value *json_get(const json_value *obj, const char *key);

/* A growable byte buffer. */
/* Appends v as @huggingface/jinja's `tojson` filter prints it:
 * JSON.stringify's escaping and numbers, ", " between items and ": "
 * after keys, no newlines. Infinity prints as null, as JSON.stringify does. */
void json_write_tojson(inf_buf *b, const json_value *v);

/* Writes a finite double as JavaScript's Number::toString does into buf
 * (at least 32 bytes); returns the length. */
size_t json_format_number(double x, char *buf);

#endif /* INF_JSON_VALUE_H */

/*
 * qwen3_output.h — turns the text a Qwen3 model generates (everything after
 * the chat template's "<|im_start|>assistant\n") into OpenAI's
 * reasoning_content, content and tool_calls, incrementally, for streaming.
 *
 * Formats recognized:
 *   reasoning   "<think>\n...\n</think>\n\n" then the answer; with
 *               starts_in_reasoning the output begins inside the reasoning
 *               (the prompt ended with "<think>\n") and has only "</think>"
 *   tool calls  Hermes blocks, as Qwen3's template asks for them, possibly
 *               several in a row:
 *                 <tool_call>\n{"name": "fn", "arguments": {...}}\n</tool_call>
 *
 * What comes out (the aggregate after finish, and the same text as deltas):
 *   reasoning   the text of the think blocks, ASCII whitespace stripped at
 *               both ends (llama.cpp's try_parse_reasoning does string_strip;
 *               vLLM's qwen3 parser does not strip; Qwen3's chat template,
 *               re-reading history, strips only '\n', which is the same for
 *               the "<think>\n...\n</think>\n\n" Qwen3 writes); an unterminated block
 *               stays reasoning; a tool call inside it is reasoning text
 *   content     the rest; whitespace right after "</think>" is dropped, and
 *               so is whitespace next to a tool-call block (before it, after
 *               it, between calls: llama.cpp's consume_spaces), except that
 *               whitespace before a call is kept as the separator when more
 *               text follows the calls. The tags <think> and </think> never
 *               appear in content (a stray "</think>" is dropped; a later
 *               "<think>" opens another reasoning block)
 *   tool calls  name, arguments as a JSON string: the arguments object or
 *               array written compactly (insignificant whitespace removed,
 *               every token kept as the model wrote it, so numbers keep their
 *               digits and strings their escapes); arguments given as a JSON
 *               string are that string, decoded; arguments missing or null
 *               are "{}". A block whose text is not one JSON object with a
 *               non-empty string "name" (no NUL) is not a call (a block still
 *               open at finish is one when its text is a whole call, as
 *               vLLM's hermes parser takes it): its "<tool_call>" is content and the
 *               rest is read again as content (so it is kept, think tags in
 *               it are handled as anywhere, a good block in it is a call).
 *               Each block stands alone: one
 *               bad block does not turn the good ones into content (vLLM and
 *               llama.cpp, parsing the whole text at the end, fall back to
 *               all-content; a stream cannot take back calls it has sent).
 *   with disable_reasoning all text is content (tags included); with
 *   disable_tools "<tool_call>" is plain content.
 *
 * Streaming: push the text in pieces as the engine releases them, split
 * anywhere. After each push the parser hands back deltas the server can
 * send at once. It holds back only what is undecided: a suffix that may be
 * the beginning of a tag, a run of whitespace that may be trimmed, and an
 * open tool-call block (reported when it closes, as a TOOL_BEGIN delta with
 * index, id and name followed by a TOOL_ARGS delta with the whole arguments
 * string: OpenAI's streaming shape). Deltas split UTF-8 characters only
 * where the pushes do. The aggregate always equals the concatenation of the
 * deltas handed out so far.
 *
 * Tool-call ids are "call_" and 24 characters of [A-Za-z0-9], drawn from
 * splitmix64 seeded with options.id_seed: deterministic for a seed, so the
 * server passes a random seed per completion and tests a fixed one.
 *
 * Ownership and threads: one qwen3_output per completion, owned by the
 * caller (qwen3_output_free). Not thread-safe: one thread uses it. Every
 * pointer it returns (deltas, their text, aggregate strings, tool calls)
 * belongs to the parser and stays valid until the next push, finish or
 * free on it. Strings are NUL-terminated and also come with their length
 * (model text may contain NUL bytes).
 *
 * Errors: INF_ERR_NOMEM when an allocation fails, INF_ERR_INVALID for a
 * misuse (push after finish, finish twice). After an INF_ERR_NOMEM the
 * parser has lost text: every later push or finish fails with it again and
 * only free is meaningful. Nothing is bounded: buffers grow as needed.
 */
#ifndef INF_SERVER_QWEN3_OUTPUT_H
#define INF_SERVER_QWEN3_OUTPUT_H

#include "inferno.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct qwen3_output qwen3_output;

/* An allocator in the style of Lua's lua_Alloc: size 0 frees ptr (returns
 * NULL), otherwise it behaves as realloc(ptr, size) and returns NULL when it
 * cannot. Optional; tests use it to fail allocations on purpose. */
typedef void *(*qwen3_output_alloc_fn)(void *user, void *ptr, size_t size);

/* All zero (or a NULL pointer to options) is the default: reasoning and
 * tool calls parsed, output starting outside the reasoning, id seed 0. */
typedef struct qwen3_output_options {
    bool starts_in_reasoning; /* the rendered prompt ended with "<think>\n" */
    bool disable_reasoning;   /* all text is content; no think tags parsed */
    bool disable_tools;       /* tool_choice "none" or no tools: no calls parsed */
    uint64_t id_seed;         /* seed of the tool-call id stream */
    qwen3_output_alloc_fn alloc; /* NULL: the C library's realloc and free */
    void *alloc_user;            /* passed to alloc */
} qwen3_output_options;

typedef enum qwen3_delta_kind {
    QWEN3_DELTA_REASONING,  /* text: more reasoning_content */
    QWEN3_DELTA_CONTENT,    /* text: more content */
    QWEN3_DELTA_TOOL_BEGIN, /* call tool_index begins: tool_id, tool_name (text NULL) */
    QWEN3_DELTA_TOOL_ARGS,  /* text: the whole arguments string of call tool_index */
} qwen3_delta_kind;

typedef struct qwen3_delta {
    qwen3_delta_kind kind;
    const char *text;      /* REASONING, CONTENT, TOOL_ARGS; NULL for TOOL_BEGIN */
    size_t len;            /* bytes of text */
    size_t tool_index;     /* TOOL_*: the call's index, 0, 1, ... in order */
    const char *tool_id;   /* TOOL_*: "call_..." */
    const char *tool_name; /* TOOL_*: the function's name */
} qwen3_delta;

typedef struct qwen3_tool_call {
    char id[32];           /* "call_" + 24 alphanumerics, NUL-terminated */
    char *name;            /* decoded, non-empty, no NUL */
    char *arguments;       /* a JSON string's value (see above), NUL-terminated */
    size_t arguments_len;
} qwen3_tool_call;

/* Whether a rendered prompt leaves the model inside a think block: it ends
 * with "<think>" and optional whitespace (the Qwen3-2507 thinking
 * templates end with "<|im_start|>assistant\n<think>\n"; the hybrid
 * models' template with thinking disabled ends with "</think>\n\n",
 * which does not count). The value for options.starts_in_reasoning. */
bool qwen3_prompt_opens_reasoning(const char *prompt, size_t len);

/* A parser for one completion; NULL when out of memory. opt may be NULL. */
qwen3_output *qwen3_output_new(const qwen3_output_options *opt);
void qwen3_output_free(qwen3_output *p);

/* Feeds len bytes of generated text. On INF_OK *deltas holds *n deltas
 * (possibly none), in the order the text came; on an error *deltas is NULL
 * and *n is 0. */
inf_status qwen3_output_push(qwen3_output *p, const char *text, size_t len, const qwen3_delta **deltas,
                             size_t *n);

/* The end of generation: releases what was held (an open tool-call block
 * becomes content, an open reasoning block stays reasoning) as the last
 * deltas. After it the aggregate is final and push fails. */
inf_status qwen3_output_finish(qwen3_output *p, const qwen3_delta **deltas, size_t *n);

/* The aggregate so far (final after finish). reasoning and content are
 * NULL when empty (len, when not NULL, gets the length). */
const char *qwen3_output_reasoning(const qwen3_output *p, size_t *len);
const char *qwen3_output_content(const qwen3_output *p, size_t *len);
size_t qwen3_output_n_tool_calls(const qwen3_output *p);
const qwen3_tool_call *qwen3_output_tool_call(const qwen3_output *p, size_t i); /* NULL when i >= n */

#endif

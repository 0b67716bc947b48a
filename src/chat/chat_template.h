/*
 * chat_template.h — the chat template's internal entry points: a template
 * from an open GGUF (inf_chat_template_load uses it for .gguf paths, and so
 * does the GGUF fuzz target), and rendering that says which bytes came from
 * the request (inf_chat_template_render_ids, chat_prompt.c, uses it). The public functions
 * (inf_chat_template_load/_from_source/_render) are in inferno.h.
 */
#ifndef INF_CHAT_TEMPLATE_H
#define INF_CHAT_TEMPLATE_H

#include "inferno.h"
#include "io/gguf.h"
#include "tok/tokenizer.h"

/* Builds a chat template from tokenizer.chat_template of an open GGUF
 * (the built-in Qwen3 template when the key is absent). */
inf_status inf_chat_template_from_gguf(const gguf_file *f, inf_chat_template **out, inf_error *err);

/* Renders as inf_chat_template_render does and also returns the byte ranges
 * of *out that come from the request rather than from the template: every
 * string of it copied in (whole, or a part the template cut out: trimmed
 * content, reasoning split at </think>) and every value printed with
 * `tojson` (tools, non-string arguments). Sorted, disjoint, never adjacent
 * (adjacent pieces merge into one run); *ranges is malloc'd (NULL when
 * there are none) and set only on success. */
inf_status chat_template_render_ranges(const inf_chat_template *tmpl, const char *request_json, size_t len,
                                       char **out, size_t *out_len, tok_range **ranges, size_t *n_ranges,
                                       inf_error *err);

#endif

/*
 * chat_template.h — the chat template's internal entry point: a template
 * from an open GGUF (inf_chat_template_load uses it for .gguf paths, and so
 * does the GGUF fuzz target). The public functions
 * (inf_chat_template_load/_from_source/_render) are in inferno.h.
 */
#ifndef INF_CHAT_TEMPLATE_H
#define INF_CHAT_TEMPLATE_H

#include "inferno.h"
#include "io/gguf.h"

/* Builds a chat template from tokenizer.chat_template of an open GGUF
 * (the built-in Qwen3 template when the key is absent). */
inf_status inf_chat_template_from_gguf(const gguf_file *f, inf_chat_template **out, inf_error *err);

#endif

/*
 * tokenizer.h — internal entry points of the tokenizer stage that other
 * stages call (the model loader builds its tokenizer from an open GGUF).
 */
#ifndef INF_TOKENIZER_H
#define INF_TOKENIZER_H

#include "inferno.h"
#include "io/gguf.h"

/* Builds a tokenizer from tokenizer.ggml.* metadata of an open GGUF. */
inf_status inf_tokenizer_from_gguf(const gguf_file *f, inf_tokenizer **out, inf_error *err);

#endif

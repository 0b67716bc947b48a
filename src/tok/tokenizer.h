/*
 * tokenizer.h — internal entry points of the tokenizer stage that other
 * stages call (the model loader builds its tokenizer from an open GGUF; the
 * chat prompt encodes with special tokens masked in the request's strings).
 */
#ifndef INF_TOKENIZER_H
#define INF_TOKENIZER_H

#include "inferno.h"
#include "io/gguf.h"

/* Builds a tokenizer from tokenizer.ggml.* metadata of an open GGUF. */
inf_status inf_tokenizer_from_gguf(const gguf_file *f, inf_tokenizer **out, inf_error *err);

/* A byte range [begin, end) of a text. */
typedef struct tok_range {
    size_t begin, end;
} tok_range;

/* Encodes text as inf_tokenize does with added tokens matched, except that
 * a special (control) token whose text overlaps one of the ranges of plain
 * (sorted, disjoint, inside the text) is not matched: its text is tokenized
 * as plain text together with the text around it, as Hugging Face does
 * with encode_special_tokens (the match is skipped and the search for added
 * tokens resumes after it). Non-special added tokens (<think>, <tool_call>)
 * are matched everywhere, as Hugging Face always matches them. */
inf_status tok_encode_masked(const inf_tokenizer *tok, const char *text, size_t len, const tok_range *plain,
                             size_t n_plain, int32_t **ids, size_t *n_ids, inf_error *err);

#endif

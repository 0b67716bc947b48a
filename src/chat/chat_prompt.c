/*
 * chat_prompt.c — a chat request rendered and tokenized so that users'
 * text never becomes control tokens (inf_chat_template_render_ids).
 *
 * How: the renderer writes every byte either from the template's own text
 * or from the request (chat_template.c's put_lit vs put_span/put_json) and
 * records the byte ranges of the second kind. The tokenizer then matches
 * special tokens only outside those ranges (tok_encode_masked). Nothing in
 * the request is rewritten, so the template's string operations (trim,
 * the split at </think>, the <tool_response> test) run on the original text
 * and the rendered bytes are inf_chat_template_render's.
 *
 * A special token's text that straddles a boundary between template text
 * and request text (a message ending in "<|im_" before template text
 * "end|>") is not matched either: part of it is the user's. The Qwen3 and
 * ChatML renderers never produce one from template text alone.
 */
#include "chat/chat_template.h"

#include "core/common.h"
#include "tok/tokenizer.h"

#include <stdlib.h>

inf_status inf_chat_template_render_ids(const inf_chat_template *tmpl, const inf_tokenizer *tok,
                                        const char *request_json, size_t len, char **text, size_t *text_len,
                                        int32_t **ids, size_t *n_ids, inf_error *err) {
    if (!text || !text_len || !ids || !n_ids)
        return inf_errorf(err, INF_ERR_INVALID, "chat template render_ids: NULL output argument");
    *text = NULL;
    *text_len = 0;
    *ids = NULL;
    *n_ids = 0;
    if (!tok) return inf_errorf(err, INF_ERR_INVALID, "chat template render_ids: tokenizer is NULL");
    tok_range *ranges = NULL;
    size_t n_ranges = 0;
    char *out;
    size_t out_len;
    inf_status st = chat_template_render_ranges(tmpl, request_json, len, &out, &out_len, &ranges, &n_ranges, err);
    if (st != INF_OK) return st;
    st = tok_encode_masked(tok, out, out_len, ranges, n_ranges, ids, n_ids, err);
    free(ranges);
    if (st != INF_OK) {
        free(out);
        return st;
    }
    *text = out;
    *text_len = out_len;
    return INF_OK;
}

/* tokenizer.c — STUB: replaced by the tokenizer implementation. */
#include "core/common.h"
#include "tok/tokenizer.h"

inf_status inf_tokenizer_from_gguf(const gguf_file *f, inf_tokenizer **out, inf_error *err) {
    (void)f; *out = NULL;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "tokenizer not implemented yet");
}
inf_status inf_tokenizer_load(const char *path, inf_tokenizer **out, inf_error *err) {
    (void)path; *out = NULL;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "tokenizer not implemented yet");
}
void inf_tokenizer_free(inf_tokenizer *tok) { (void)tok; }
int inf_tokenizer_n_vocab(const inf_tokenizer *tok) { (void)tok; return 0; }
int32_t inf_tokenizer_eos(const inf_tokenizer *tok) { (void)tok; return -1; }
bool inf_tokenizer_is_eog(const inf_tokenizer *tok, int32_t id) { (void)tok; (void)id; return false; }
int32_t inf_tokenizer_find_special(const inf_tokenizer *tok, const char *text) { (void)tok; (void)text; return -1; }
inf_status inf_tokenize(const inf_tokenizer *tok, const char *text, size_t len, int flags,
                        int32_t **ids, size_t *n_ids, inf_error *err) {
    (void)tok; (void)text; (void)len; (void)flags; *ids = NULL; *n_ids = 0;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "tokenizer not implemented yet");
}
inf_status inf_detokenize(const inf_tokenizer *tok, const int32_t *ids, size_t n_ids,
                          char **text, size_t *len, inf_error *err) {
    (void)tok; (void)ids; (void)n_ids; *text = NULL; *len = 0;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "tokenizer not implemented yet");
}
void inf_detok_stream_init(inf_detok_stream *st) { st->n_pending = 0; }
inf_status inf_detok_stream_push(const inf_tokenizer *tok, inf_detok_stream *st, int32_t id,
                                 char *out, size_t cap, size_t *n_out, inf_error *err) {
    (void)tok; (void)st; (void)id; (void)out; (void)cap; *n_out = 0;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "tokenizer not implemented yet");
}
size_t inf_detok_stream_flush(inf_detok_stream *st, char *out, size_t cap) { (void)st; (void)out; (void)cap; return 0; }

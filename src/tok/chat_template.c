/* chat_template.c — STUB: replaced by the chat template implementation. */
#include "core/common.h"
#include "tok/tokenizer.h"

inf_status inf_chat_template_from_gguf(const gguf_file *f, inf_chat_template **out, inf_error *err) {
    (void)f; *out = NULL;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "chat template not implemented yet");
}
inf_status inf_chat_template_load(const char *path, inf_chat_template **out, inf_error *err) {
    (void)path; *out = NULL;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "chat template not implemented yet");
}
inf_status inf_chat_template_from_source(const char *source, inf_chat_template **out, inf_error *err) {
    (void)source; *out = NULL;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "chat template not implemented yet");
}
void inf_chat_template_free(inf_chat_template *tmpl) { (void)tmpl; }
const char *inf_chat_template_describe(const inf_chat_template *tmpl) { (void)tmpl; return "none"; }
inf_status inf_chat_template_render(const inf_chat_template *tmpl, const char *request_json,
                                    size_t len, char **out, size_t *out_len, inf_error *err) {
    (void)tmpl; (void)request_json; (void)len; *out = NULL; *out_len = 0;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "chat template not implemented yet");
}

/*
 * api_openai.c — OpenAI's endpoints: /v1/chat/completions (reasoning,
 * tool calls, logprobs, n, streaming), /v1/completions (prompt strings or
 * ids, lists of them, echo, logprobs, streaming), /v1/models, and
 * llama-server's /tokenize and /detokenize. Replies have OpenAI's shapes.
 */
#include "server/qwen3_output.h"
#include "server/server_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ shared */

/* The model the request names: a string or absent. With --strict-model an
 * unknown name is a 404. The reply names what the request named. */
bool request_model(server *srv, const cJSON *body, const char **name, param_error *e) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "model");
    *name = srv->model_id;
    if (!m || cJSON_IsNull(m)) return true;
    if (!cJSON_IsString(m)) return reject(e, 400, "model", "invalid_type", "model must be a string");
    if (srv->opt.strict_model && strcmp(m->valuestring, srv->model_id))
        return reject(e, 404, "model", "model_not_found", "the model '%s' does not exist; this server has '%s'",
                      m->valuestring, srv->model_id);
    *name = m->valuestring;
    return true;
}

static const char *finish_reason(const gen_choice *c) {
    if (c->out && qwen3_output_n_tool_calls(c->out) > 0) return "tool_calls";
    return c->finish == INF_FINISH_LENGTH || c->finish == INF_FINISH_CONTEXT ? "length" : "stop";
}

static cJSON *usage_object(const generation *g) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)g->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", g->n_generated);
    cJSON_AddNumberToObject(u, "total_tokens", (double)g->n_prompt + g->n_generated);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", g->n_cached);
    return u;
}

static cJSON *response_head(const generation *g, const char *object) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "id", g->id);
    cJSON_AddStringToObject(r, "object", object);
    cJSON_AddNumberToObject(r, "created", (double)g->created);
    cJSON_AddStringToObject(r, "model", g->model_name);
    cJSON_AddStringToObject(r, "system_fingerprint", g->srv->fingerprint);
    return r;
}

static cJSON *byte_array(const unsigned char *b, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(b[i]));
    return a;
}

/* Chat's logprob entry of one token: token, logprob, bytes, top_logprobs. */
static cJSON *chat_logprob(generation *g, const job_event *ev) {
    cJSON *e = cJSON_CreateObject();
    const unsigned char *bytes;
    size_t nb;
    char *t = token_text(g->srv, ev->token, &bytes, &nb);
    cJSON_AddStringToObject(e, "token", t ? t : "");
    free(t);
    cJSON_AddNumberToObject(e, "logprob", ev->logprob);
    cJSON_AddItemToObject(e, "bytes", byte_array(bytes, nb));
    cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
    for (int i = 0; i < ev->n_top; i++) {
        cJSON *o = cJSON_CreateObject();
        char *tt = token_text(g->srv, ev->top[i].id, &bytes, &nb);
        cJSON_AddStringToObject(o, "token", tt ? tt : "");
        free(tt);
        cJSON_AddNumberToObject(o, "logprob", ev->top[i].logprob);
        cJSON_AddItemToObject(o, "bytes", byte_array(bytes, nb));
        cJSON_AddItemToArray(top, o);
    }
    return e;
}

/* Tokenizes prompt text; ids malloc'd. parse_special: the text's special
 * token markup becomes special tokens (raw completions prompts). */
static bool tokenize_text(server *srv, const char *text, size_t len, bool parse_special, int32_t **ids, size_t *n,
                          param_error *e, const char *param) {
    inf_error err = {0};
    if (inf_tokenize(srv->tok, text, len, parse_special ? 0 : INF_TOKENIZE_NO_SPECIAL, ids, n, &err)) {
        snprintf(e->param, sizeof e->param, "%s", param);
        snprintf(e->msg, sizeof e->msg, "%s: %s", param, err.msg);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ chat: messages to the template */

/* A message's content as the template wants it: a string (text parts
 * joined with newlines, as vLLM joins them), or null. */
static cJSON *content_string(const cJSON *content, const char *where, param_error *e) {
    char param[96];
    if (!content || cJSON_IsNull(content)) return cJSON_CreateNull();
    if (cJSON_IsString(content)) return cJSON_CreateString(content->valuestring);
    if (!cJSON_IsArray(content)) {
        snprintf(param, sizeof param, "%s.content", where);
        reject_field(e, param, "must be a string, an array of text parts, or null");
        return NULL;
    }
    strbuf b = {0};
    int i = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        snprintf(param, sizeof param, "%s.content[%d]", where, i);
        if (!cJSON_IsObject(part) || !cJSON_IsString(type)) {
            sb_free(&b);
            reject_field(e, param, "a content part must be an object with a type");
            return NULL;
        }
        if (strcmp(type->valuestring, "text")) {
            sb_free(&b);
            char msg[160];
            snprintf(msg, sizeof msg, "content parts of type '%.64s' are not supported (only text)", type->valuestring);
            reject_field(e, param, msg);
            return NULL;
        }
        if (!cJSON_IsString(text)) {
            sb_free(&b);
            reject_field(e, param, "a text part needs a string text");
            return NULL;
        }
        if (i > 0) sb_puts(&b, "\n");
        sb_puts(&b, text->valuestring);
        i++;
    }
    cJSON *s = cJSON_CreateString(b.data ? b.data : "");
    sb_free(&b);
    return s;
}

static cJSON *chat_messages(const cJSON *body, param_error *e) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
        reject_field(e, "messages", "must be a non-empty array of messages");
        return NULL;
    }
    cJSON *out = cJSON_CreateArray();
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        char where[64];
        snprintf(where, sizeof where, "messages[%d]", i++);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            reject_field(e, where, "a message must be an object with a string role");
            goto bad;
        }
        const char *r = role->valuestring;
        if (!strcmp(r, "developer")) r = "system";
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool")) {
            char param[80];
            snprintf(param, sizeof param, "%s.role", where);
            reject_field(e, param, "must be system, developer, user, assistant or tool");
            goto bad;
        }
        cJSON *n = cJSON_CreateObject();
        cJSON_AddItemToArray(out, n);
        cJSON_AddStringToObject(n, "role", r);
        cJSON *content = content_string(cJSON_GetObjectItemCaseSensitive(m, "content"), where, e);
        if (!content) goto bad;
        cJSON_AddItemToObject(n, "content", content);
        if (!strcmp(r, "assistant")) {
            const cJSON *rc = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
            if (cJSON_IsString(rc)) cJSON_AddStringToObject(n, "reasoning_content", rc->valuestring);
            const cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
            if (tc && !cJSON_IsNull(tc)) {
                char param[80];
                snprintf(param, sizeof param, "%s.tool_calls", where);
                if (!cJSON_IsArray(tc)) {
                    reject_field(e, param, "must be an array");
                    goto bad;
                }
                const cJSON *call;
                cJSON_ArrayForEach(call, tc) {
                    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
                    if (!cJSON_IsObject(fn) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "name"))) {
                        reject_field(e, param, "each call needs a function with a string name");
                        goto bad;
                    }
                }
                cJSON_AddItemToObject(n, "tool_calls", cJSON_Duplicate(tc, true));
            }
        } else if (!strcmp(r, "tool")) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "tool_call_id");
            if (cJSON_IsString(id)) cJSON_AddStringToObject(n, "tool_call_id", id->valuestring);
        }
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
        if (cJSON_IsString(name)) cJSON_AddStringToObject(n, "name", name->valuestring);
    }
    return out;
bad:
    cJSON_Delete(out);
    return NULL;
}

static bool chat_tools(const cJSON *body, cJSON **tools, param_error *e) {
    *tools = NULL;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "tools");
    if (!t || cJSON_IsNull(t)) return true;
    if (!cJSON_IsArray(t)) return reject_field(e, "tools", "must be an array of tools");
    int i = 0;
    const cJSON *tool;
    cJSON_ArrayForEach(tool, t) {
        char param[48];
        snprintf(param, sizeof param, "tools[%d]", i++);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tool, "function");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(tool, "type");
        if (!cJSON_IsObject(tool) || (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "function"))))
            return reject_field(e, param, "a tool must be an object of type function");
        if (!cJSON_IsObject(fn) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "name")))
            return reject_field(e, param, "a tool needs a function with a string name");
    }
    if (cJSON_GetArraySize(t) > 0) *tools = cJSON_Duplicate(t, true);
    return true;
}

/* tool_choice: "auto" (or absent), "none", "required", or a named function. */
static bool chat_tool_choice(const cJSON *body, const cJSON *tools, tool_mode *mode, const char **name, param_error *e) {
    *mode = TOOLS_AUTO;
    *name = NULL;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
    if (!c || cJSON_IsNull(c)) return true;
    if (cJSON_IsString(c)) {
        if (!strcmp(c->valuestring, "auto")) *mode = TOOLS_AUTO;
        else if (!strcmp(c->valuestring, "none")) *mode = TOOLS_NONE;
        else if (!strcmp(c->valuestring, "required")) *mode = TOOLS_REQUIRED;
        else return reject_field(e, "tool_choice", "must be auto, none, required or a named function");
    } else {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsObject(c) || !cJSON_IsString(n))
            return reject_field(e, "tool_choice", "a named tool choice is {\"type\": \"function\", \"function\": {\"name\": ...}}");
        *mode = TOOLS_NAMED;
        *name = n->valuestring;
    }
    if (*mode == TOOLS_REQUIRED || *mode == TOOLS_NAMED) {
        if (!tools) return reject_field(e, "tool_choice", "needs tools");
        if (*mode == TOOLS_NAMED) {
            bool found = false;
            const cJSON *t;
            cJSON_ArrayForEach(t, tools) {
                const cJSON *tn = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name");
                if (cJSON_IsString(tn) && !strcmp(tn->valuestring, *name)) found = true;
            }
            if (!found) return reject_field(e, "tool_choice", "names a function that is not among the tools");
        }
    }
    return true;
}

/* Appends the ids of text to *ids (flags as inf_tokenize's). */
static bool append_ids(server *srv, const char *text, int flags, int32_t **ids, size_t *n, param_error *e) {
    int32_t *more = NULL;
    size_t n_more = 0;
    inf_error err = {0};
    if (inf_tokenize(srv->tok, text, strlen(text), flags, &more, &n_more, &err)) return reject_field(e, "messages", err.msg);
    int32_t *all = realloc(*ids, (*n + n_more + 1) * sizeof *all);
    if (!all) {
        free(more);
        return reject_field(e, "messages", "out of memory");
    }
    memcpy(all + *n, more, n_more * sizeof *more);
    *ids = all;
    *n += n_more;
    free(more);
    return true;
}

static const char *last_of(const char *text, size_t len, const char *needle) {
    const char *found = NULL;
    size_t n = strlen(needle);
    for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), needle, n)); p++) found = p;
    return found;
}

bool chat_prompt(generation *g, cJSON *messages, cJSON *tools, bool thinking, tool_mode mode, const char *tool_name,
                 bool continue_final, param_error *e) {
    server *srv = g->srv;
    if (continue_final) {
        const cJSON *last = cJSON_GetArrayItem(messages, cJSON_GetArraySize(messages) - 1);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");
        if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant")) {
            cJSON_Delete(messages);
            cJSON_Delete(tools);
            return reject_field(e, "continue_final_message", "needs a last assistant message");
        }
        if (mode != TOOLS_NONE) mode = TOOLS_AUTO;
    }
    cJSON *req = cJSON_CreateObject();
    cJSON_AddItemToObject(req, "messages", messages);
    if (tools && mode != TOOLS_NONE) cJSON_AddItemToObject(req, "tools", tools);
    else cJSON_Delete(tools);
    cJSON_AddBoolToObject(req, "add_generation_prompt", !continue_final);
    cJSON_AddBoolToObject(req, "enable_thinking", thinking);
    char *json = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    if (!json) return reject_field(e, "messages", "out of memory");
    /* request text never becomes control tokens; the template's markup does */
    char *text = NULL;
    size_t len = 0, n_ids = 0;
    int32_t *ids = NULL;
    inf_error err = {0};
    inf_status st = inf_chat_template_render_ids(srv->tmpl, srv->tok, json, strlen(json), &text, &len, &ids, &n_ids,
                                                 &err);
    free(json);
    if (st) return reject_field(e, "messages", err.msg);

    size_t answer_at = len; /* where the answer begins in text */
    bool ok = true;
    if (continue_final) {
        /* the answer goes on from the last message: cut before its
         * <|im_end|> (a control token, so the ids split there too) */
        int32_t im_end = inf_tokenizer_find_special(srv->tok, "<|im_end|>");
        const char *end_text = last_of(text, len, "<|im_end|>");
        const char *turn = end_text ? last_of(text, (size_t)(end_text - text), "<|im_start|>assistant\n") : NULL;
        size_t cut_ids = n_ids;
        while (cut_ids > 0 && ids[cut_ids - 1] != im_end) cut_ids--;
        if (!turn || im_end < 0 || cut_ids == 0) {
            ok = reject_field(e, "continue_final_message", "the chat template does not end the last message with <|im_end|>");
        } else {
            n_ids = cut_ids - 1;
            len = (size_t)(end_text - text);
            answer_at = (size_t)(turn - text) + strlen("<|im_start|>assistant\n");
            g->forced_prefix = strndup(text + answer_at, len - answer_at);
            if (!g->forced_prefix) ok = reject_field(e, "messages", "out of memory");
        }
    }
    g->starts_in_reasoning = qwen3_prompt_opens_reasoning(text, answer_at);
    if (ok && (mode == TOOLS_REQUIRED || mode == TOOLS_NAMED)) {
        /* our own markup, then the name (request text) without control tokens */
        strbuf forced = {0};
        if (thinking && !g->starts_in_reasoning) ok = append_ids(srv, "<think>\n\n</think>\n\n", 0, &ids, &n_ids, e);
        if (ok) ok = append_ids(srv, "<tool_call>\n", 0, &ids, &n_ids, e);
        sb_puts(&forced, "<tool_call>\n");
        if (ok && mode == TOOLS_NAMED) {
            cJSON *n = cJSON_CreateString(tool_name);
            char *quoted = cJSON_PrintUnformatted(n);
            cJSON_Delete(n);
            strbuf call = {0};
            sb_printf(&call, "{\"name\": %s, \"arguments\": ", quoted ? quoted : "\"\"");
            free(quoted);
            ok = !call.failed && append_ids(srv, call.data, INF_TOKENIZE_NO_SPECIAL, &ids, &n_ids, e);
            sb_append(&forced, call.data ? call.data : "", call.len);
            sb_free(&call);
        }
        if (forced.failed) ok = reject_field(e, "messages", "out of memory");
        free(g->forced_prefix);
        g->forced_prefix = forced.data;
    }
    free(text);
    if (!ok) {
        free(ids);
        return false;
    }
    g->prompts[0] = ids;
    g->prompt_lens[0] = n_ids;
    g->n_prompt = n_ids;
    return true;
}

/* ------------------------------------------------------------------ chat: replies */

static cJSON *chunk_with(generation *g, gen_choice *c, cJSON *delta, cJSON *logprobs, const char *finish) {
    cJSON *r = response_head(g, "chat.completion.chunk");
    cJSON *choices = cJSON_AddArrayToObject(r, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", c->index);
    cJSON_AddItemToObject(ch, "delta", delta);
    if (logprobs) {
        cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
        cJSON_AddItemToObject(lp, "content", logprobs);
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    return r;
}

static cJSON *text_delta(const char *key, const char *text, size_t len) {
    cJSON *d = cJSON_CreateObject();
    char *t = utf8_sanitize(text, len);
    cJSON_AddStringToObject(d, key, t ? t : "");
    free(t);
    return d;
}

/* Streams the parser's deltas as chunks; the token's logprobs ride on the first. */
static void chat_stream_deltas(generation *g, gen_choice *c, const qwen3_delta *d, size_t n, cJSON *logprobs) {
    for (size_t i = 0; i < n; i++) {
        cJSON *delta;
        switch (d[i].kind) {
        case QWEN3_DELTA_REASONING: delta = text_delta("reasoning_content", d[i].text, d[i].len); break;
        case QWEN3_DELTA_CONTENT: delta = text_delta("content", d[i].text, d[i].len); break;
        case QWEN3_DELTA_TOOL_BEGIN:
        case QWEN3_DELTA_TOOL_ARGS: {
            delta = cJSON_CreateObject();
            cJSON *calls = cJSON_AddArrayToObject(delta, "tool_calls");
            cJSON *call = cJSON_CreateObject();
            cJSON_AddNumberToObject(call, "index", (double)d[i].tool_index);
            cJSON *fn;
            if (d[i].kind == QWEN3_DELTA_TOOL_BEGIN) {
                cJSON_AddStringToObject(call, "id", d[i].tool_id);
                cJSON_AddStringToObject(call, "type", "function");
                fn = cJSON_AddObjectToObject(call, "function");
                cJSON_AddStringToObject(fn, "name", d[i].tool_name);
                cJSON_AddStringToObject(fn, "arguments", "");
            } else {
                fn = cJSON_AddObjectToObject(call, "function");
                char *t = utf8_sanitize(d[i].text, d[i].len);
                cJSON_AddStringToObject(fn, "arguments", t ? t : "");
                free(t);
            }
            cJSON_AddItemToArray(calls, call);
            break;
        }
        default: continue;
        }
        gen_sse(g, NULL, chunk_with(g, c, delta, logprobs, NULL));
        logprobs = NULL;
    }
    if (logprobs) gen_sse(g, NULL, chunk_with(g, c, cJSON_CreateObject(), logprobs, NULL));
}

static void chat_token(generation *g, gen_choice *c, const job_event *ev) {
    const qwen3_delta *d = NULL;
    size_t n = 0;
    if (qwen3_output_push(c->out, ev->text, ev->text_len, &d, &n)) {
        g->failed = true;
        return;
    }
    cJSON *lp = g->logprobs ? chat_logprob(g, ev) : NULL;
    if (!g->stream) {
        if (lp) cJSON_AddItemToArray(c->logprobs, lp);
        return;
    }
    cJSON *lps = NULL;
    if (lp) {
        lps = cJSON_CreateArray();
        cJSON_AddItemToArray(lps, lp);
    }
    chat_stream_deltas(g, c, d, n, lps);
}

static void chat_done(generation *g, gen_choice *c, const job_event *ev) {
    const qwen3_delta *d = NULL;
    size_t n = 0;
    if (ev->text_len && qwen3_output_push(c->out, ev->text, ev->text_len, &d, &n)) g->failed = true;
    if (g->stream && n) chat_stream_deltas(g, c, d, n, NULL);
    if (qwen3_output_finish(c->out, &d, &n)) {
        g->failed = true;
        return;
    }
    if (!g->stream) return;
    chat_stream_deltas(g, c, d, n, NULL);
    gen_sse(g, NULL, chunk_with(g, c, cJSON_CreateObject(), NULL, finish_reason(c)));
}

static void chat_stream_begin(generation *g) {
    for (int i = 0; i < g->n_choices; i++) {
        cJSON *delta = cJSON_CreateObject();
        cJSON_AddStringToObject(delta, "role", "assistant");
        cJSON_AddStringToObject(delta, "content", "");
        gen_sse(g, NULL, chunk_with(g, &g->choices[i], delta, NULL, NULL));
        /* calls the forced prefix already completed (a continued message
         * holding a whole call): their deltas came before the stream did */
        gen_choice *c = &g->choices[i];
        for (size_t k = 0; k < qwen3_output_n_tool_calls(c->out); k++) {
            const qwen3_tool_call *tc = qwen3_output_tool_call(c->out, k);
            qwen3_delta d[2] = {{.kind = QWEN3_DELTA_TOOL_BEGIN, .tool_index = k, .tool_id = tc->id, .tool_name = tc->name},
                                {.kind = QWEN3_DELTA_TOOL_ARGS, .text = tc->arguments, .len = tc->arguments_len,
                                 .tool_index = k, .tool_id = tc->id, .tool_name = tc->name}};
            chat_stream_deltas(g, c, d, 2, NULL);
        }
    }
}

static void stream_end_usage(generation *g, const char *object) {
    if (g->params.include_usage) {
        cJSON *r = response_head(g, object);
        cJSON_AddArrayToObject(r, "choices");
        cJSON_AddItemToObject(r, "usage", usage_object(g));
        gen_sse(g, NULL, r);
    }
    sb_puts(&g->out, "data: [DONE]\n\n");
}

static void chat_stream_end(generation *g) { stream_end_usage(g, "chat.completion.chunk"); }

static cJSON *string_or_null(const char *s, size_t len) {
    if (!s) return cJSON_CreateNull();
    char *t = utf8_sanitize(s, len);
    cJSON *v = cJSON_CreateString(t ? t : "");
    free(t);
    return v;
}

static int chat_reply(generation *g) {
    cJSON *r = response_head(g, "chat.completion");
    cJSON *choices = cJSON_AddArrayToObject(r, "choices");
    for (int i = 0; i < g->n_choices; i++) {
        gen_choice *c = &g->choices[i];
        cJSON *ch = cJSON_CreateObject();
        cJSON_AddNumberToObject(ch, "index", i);
        cJSON *msg = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        size_t clen = 0, rlen = 0;
        const char *content = gen_content(c, &clen);
        const char *reasoning = gen_reasoning(c, &rlen);
        size_t n_calls = qwen3_output_n_tool_calls(c->out);
        if (!content && !n_calls) content = "", clen = 0;
        cJSON_AddItemToObject(msg, "content", string_or_null(content, clen));
        if (reasoning) cJSON_AddItemToObject(msg, "reasoning_content", string_or_null(reasoning, rlen));
        if (n_calls) {
            cJSON *calls = cJSON_AddArrayToObject(msg, "tool_calls");
            for (size_t k = 0; k < n_calls; k++) {
                const qwen3_tool_call *tc = qwen3_output_tool_call(c->out, k);
                cJSON *call = cJSON_CreateObject();
                cJSON_AddStringToObject(call, "id", tc->id);
                cJSON_AddStringToObject(call, "type", "function");
                cJSON *fn = cJSON_AddObjectToObject(call, "function");
                cJSON_AddItemToObject(fn, "name", string_or_null(tc->name, strlen(tc->name)));
                cJSON_AddItemToObject(fn, "arguments", string_or_null(tc->arguments, tc->arguments_len));
                cJSON_AddItemToArray(calls, call);
            }
        }
        if (g->logprobs) {
            cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
            cJSON_AddItemToObject(lp, "content", c->logprobs);
            c->logprobs = NULL;
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
        cJSON_AddStringToObject(ch, "finish_reason", finish_reason(c));
        cJSON_AddItemToArray(choices, ch);
    }
    cJSON_AddItemToObject(r, "usage", usage_object(g));
    return http_reply_cjson(g->ex, 200, r);
}

static const gen_api chat_api = {chat_token, chat_done, chat_stream_begin, chat_stream_end, chat_reply};

/* vLLM's and SGLang's field first. */
bool request_thinking(const cJSON *body, bool *thinking, param_error *e) {
    *thinking = true;
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(body, "chat_template_kwargs");
    const cJSON *v = NULL;
    if (kw && !cJSON_IsNull(kw)) {
        if (!cJSON_IsObject(kw)) return reject_field(e, "chat_template_kwargs", "must be an object");
        v = cJSON_GetObjectItemCaseSensitive(kw, "enable_thinking");
    }
    if (!v) v = cJSON_GetObjectItemCaseSensitive(body, "enable_thinking");
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsBool(v)) return reject_field(e, "chat_template_kwargs.enable_thinking", "must be true or false");
    *thinking = cJSON_IsTrue(v);
    return true;
}

const char *gen_content(const gen_choice *c, size_t *len) {
    const char *s = qwen3_output_content(c->out, len);
    if (!s || *len <= c->prefix_content) return *len = 0, NULL;
    *len -= c->prefix_content;
    return s + c->prefix_content;
}

const char *gen_reasoning(const gen_choice *c, size_t *len) {
    const char *s = qwen3_output_reasoning(c->out, len);
    if (!s || *len <= c->prefix_reasoning) return *len = 0, NULL;
    *len -= c->prefix_reasoning;
    return s + c->prefix_reasoning;
}

bool gen_parsers(generation *g, bool tools) {
    for (int i = 0; i < g->n_choices; i++) {
        qwen3_output_options o = {.starts_in_reasoning = g->starts_in_reasoning,
                                  .disable_tools = !tools,
                                  .id_seed = g->params.req.sampling.seed * 31 + (uint64_t)i + g->srv->next_id};
        g->choices[i].out = qwen3_output_new(&o);
        if (!g->choices[i].out) return false;
        if (g->forced_prefix) {
            const qwen3_delta *d;
            size_t n;
            if (qwen3_output_push(g->choices[i].out, g->forced_prefix, strlen(g->forced_prefix), &d, &n)) return false;
            qwen3_output_content(g->choices[i].out, &g->choices[i].prefix_content);
            qwen3_output_reasoning(g->choices[i].out, &g->choices[i].prefix_reasoning);
        }
        if (!(g->choices[i].logprobs = cJSON_CreateArray())) return false;
    }
    return true;
}

/* An optional boolean field. */
static bool optional_bool(const cJSON *body, const char *name, bool *out, param_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsBool(v)) return reject(e, 400, name, "invalid_type", "%s must be true or false", name);
    *out = cJSON_IsTrue(v);
    return true;
}

generation *chat_build(server *srv, http_exchange *ex, const cJSON *body, param_error *e) {
    const char *model;
    bool thinking, logprobs = false, continue_final = false;
    int top_logprobs = 0;
    if (!request_model(srv, body, &model, e) || !request_thinking(body, &thinking, e) ||
        !optional_bool(body, "logprobs", &logprobs, e) ||
        !optional_bool(body, "continue_final_message", &continue_final, e))
        return NULL;
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(body, "top_logprobs");
    if (tl && !cJSON_IsNull(tl)) {
        if (!cJSON_IsNumber(tl) || tl->valuedouble < 0 || tl->valuedouble > 20 || tl->valuedouble != floor(tl->valuedouble))
            return reject(e, 400, "top_logprobs", "invalid_value", "top_logprobs must be an integer from 0 to 20"), NULL;
        if (!logprobs && tl->valueint > 0)
            return reject(e, 400, "top_logprobs", "invalid_value", "top_logprobs needs logprobs: true"), NULL;
        top_logprobs = tl->valueint;
    }
    cJSON *messages = chat_messages(body, e);
    if (!messages) return NULL;
    cJSON *tools;
    tool_mode mode;
    const char *tool_name;
    request_params params = {0};
    if (!chat_tools(body, &tools, e) || !chat_tool_choice(body, tools, &mode, &tool_name, e) ||
        !params_parse(srv, body, false, thinking, &params, e)) {
        params_free(&params);
        cJSON_Delete(messages);
        cJSON_Delete(tools);
        return NULL;
    }
    bool with_tools = tools && mode != TOOLS_NONE;
    generation *g = generation_new(srv, ex, &chat_api, 1, params.req.n);
    if (!g) {
        params_free(&params);
        cJSON_Delete(messages);
        cJSON_Delete(tools);
        return reject(e, 500, NULL, NULL, "out of memory"), NULL;
    }
    g->params = params;
    g->model_name = model;
    g->logprobs = logprobs;
    g->top_logprobs = top_logprobs;
    server_make_id(srv, "chatcmpl-", g->id, sizeof g->id);
    if (!chat_prompt(g, messages, tools, thinking, mode, tool_name, continue_final, e) ||
        !params_check_context(srv, g->n_prompt, g->params.req.max_tokens, e)) {
        generation_free(g);
        return NULL;
    }
    if (!gen_parsers(g, with_tools)) {
        generation_free(g);
        return reject(e, 500, NULL, NULL, "out of memory"), NULL;
    }
    return g;
}

int api_chat_completions(http_exchange *ex, const cJSON *body) {
    param_error e = {0};
    generation *g = chat_build(ex->srv, ex, body, &e);
    return g ? generation_run(g) : reply_rejected(ex, &e);
}

/* ------------------------------------------------------------------ completions */

/* logprobs for completions: tokens, token_logprobs, top_logprobs (objects
 * of token text to logprob), text_offset. */
static void completion_logprob(generation *g, const job_event *ev, size_t offset, cJSON **tokens,
                               cJSON **token_lps, cJSON **tops, cJSON **offsets) {
    char *t = token_text(g->srv, ev->token, NULL, NULL);
    *tokens = cJSON_CreateArray();
    *token_lps = cJSON_CreateArray();
    *tops = cJSON_CreateArray();
    *offsets = cJSON_CreateArray();
    cJSON_AddItemToArray(*tokens, cJSON_CreateString(t ? t : ""));
    free(t);
    cJSON_AddItemToArray(*token_lps, cJSON_CreateNumber(ev->logprob));
    cJSON *top = cJSON_CreateObject();
    for (int i = 0; i < ev->n_top; i++) {
        char *tt = token_text(g->srv, ev->top[i].id, NULL, NULL);
        if (tt && !cJSON_GetObjectItemCaseSensitive(top, tt)) cJSON_AddNumberToObject(top, tt, ev->top[i].logprob);
        free(tt);
    }
    cJSON_AddItemToArray(*tops, top);
    cJSON_AddItemToArray(*offsets, cJSON_CreateNumber((double)offset));
}

static void append_all(cJSON *to, cJSON *from) {
    cJSON *item;
    while ((item = cJSON_DetachItemFromArray(from, 0))) cJSON_AddItemToArray(to, item);
    cJSON_Delete(from);
}

static cJSON *completion_choice(gen_choice *c, const char *text, size_t len, cJSON *lp_parts[4], const char *finish) {
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddItemToObject(ch, "text", string_or_null(text ? text : "", len));
    cJSON_AddNumberToObject(ch, "index", c->index);
    if (lp_parts) {
        cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
        cJSON_AddItemToObject(lp, "tokens", lp_parts[0]);
        cJSON_AddItemToObject(lp, "token_logprobs", lp_parts[1]);
        cJSON_AddItemToObject(lp, "top_logprobs", lp_parts[2]);
        cJSON_AddItemToObject(lp, "text_offset", lp_parts[3]);
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    return ch;
}

static void completion_chunk(generation *g, gen_choice *c, const char *text, size_t len, cJSON *lp_parts[4],
                             const char *finish) {
    cJSON *r = response_head(g, "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(r, "choices");
    cJSON_AddItemToArray(choices, completion_choice(c, text, len, lp_parts, finish));
    gen_sse(g, NULL, r);
}

/* Code points in UTF-8 text (its bytes that do not continue a character). */
static size_t utf8_chars(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static void completion_token(generation *g, gen_choice *c, const job_event *ev) {
    /* text_offset: characters from the start of the choice's text, echo
     * included (OpenAI counts characters, not bytes) */
    if (c->text_chars == 0 && g->echo) {
        const char *echo = g->echo[c->index / (g->n_choices / g->n_prompts)];
        c->text_chars = utf8_chars(echo, strlen(echo));
    }
    cJSON *parts[4] = {0};
    if (g->logprobs) completion_logprob(g, ev, c->text_chars, &parts[0], &parts[1], &parts[2], &parts[3]);
    c->text_chars += utf8_chars(ev->text, ev->text_len);
    if (g->stream) {
        completion_chunk(g, c, ev->text, ev->text_len, g->logprobs ? parts : NULL, NULL);
        return;
    }
    sb_append(&c->text, ev->text, ev->text_len);
    if (g->logprobs) {
        append_all(c->lp_tokens, parts[0]);
        append_all(c->lp_token_logprobs, parts[1]);
        append_all(c->lp_top, parts[2]);
        append_all(c->lp_offsets, parts[3]);
    }
}

static void completion_done(generation *g, gen_choice *c, const job_event *ev) {
    if (g->stream) {
        if (ev->text_len) completion_chunk(g, c, ev->text, ev->text_len, NULL, NULL);
        completion_chunk(g, c, "", 0, NULL, finish_reason(c));
        return;
    }
    sb_append(&c->text, ev->text, ev->text_len);
}

static void completion_stream_begin(generation *g) {
    if (!g->echo) return;
    int n = g->n_choices / g->n_prompts;
    for (int i = 0; i < g->n_choices; i++) {
        const char *echo = g->echo[i / n];
        completion_chunk(g, &g->choices[i], echo, strlen(echo), NULL, NULL);
    }
}

static void completion_stream_end(generation *g) { stream_end_usage(g, "text_completion"); }

static int completion_reply(generation *g) {
    cJSON *r = response_head(g, "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(r, "choices");
    int n = g->n_choices / g->n_prompts;
    for (int i = 0; i < g->n_choices; i++) {
        gen_choice *c = &g->choices[i];
        strbuf text = {0};
        if (g->echo) sb_puts(&text, g->echo[i / n]);
        sb_append(&text, c->text.data ? c->text.data : "", c->text.len);
        cJSON *parts[4] = {c->lp_tokens, c->lp_token_logprobs, c->lp_top, c->lp_offsets};
        cJSON_AddItemToArray(choices, completion_choice(c, text.data, text.len, g->logprobs ? parts : NULL,
                                                        finish_reason(c)));
        if (g->logprobs) c->lp_tokens = c->lp_token_logprobs = c->lp_top = c->lp_offsets = NULL;
        sb_free(&text);
    }
    cJSON_AddItemToObject(r, "usage", usage_object(g));
    return http_reply_cjson(g->ex, 200, r);
}

static const gen_api completion_api = {completion_token, completion_done, completion_stream_begin,
                                       completion_stream_end, completion_reply};

/* A prompt item: a string or an array of token ids. */
static bool prompt_item(server *srv, const cJSON *item, int32_t **ids, size_t *n, const char *param, param_error *e) {
    if (cJSON_IsString(item))
        return tokenize_text(srv, item->valuestring, strlen(item->valuestring), true, ids, n, e, param);
    if (!cJSON_IsArray(item)) return reject_field(e, param, "must be a string or an array of token ids");
    int count = cJSON_GetArraySize(item);
    *ids = malloc(((size_t)count + 1) * sizeof **ids);
    if (!*ids) return reject_field(e, param, "out of memory");
    *n = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, item) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble >= srv->n_vocab)
            return reject_field(e, param, "token ids must be integers of the model's vocabulary");
        (*ids)[(*n)++] = (int32_t)t->valuedouble;
    }
    return true;
}

static bool is_id_array(const cJSON *a) {
    return cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0 && cJSON_IsNumber(cJSON_GetArrayItem(a, 0));
}

generation *completions_build(server *srv, http_exchange *ex, const cJSON *body, param_error *e) {
    const char *model;
    if (!request_model(srv, body, &model, e)) return NULL;
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(body, "prompt");
    if (!prompt || !(cJSON_IsString(prompt) || cJSON_IsArray(prompt)) ||
        (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 0))
        return reject(e, 400, "prompt", "invalid_value",
                      "prompt must be a string, an array of token ids, or a non-empty list of them"), NULL;
    bool single = cJSON_IsString(prompt) || is_id_array(prompt);
    int n_prompts = single ? 1 : cJSON_GetArraySize(prompt);
    if (n_prompts > 64) return reject(e, 400, "prompt", "invalid_value", "at most 64 prompts"), NULL;
    int logprobs = -1;
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(body, "logprobs");
    if (lp && !cJSON_IsNull(lp)) {
        if (!cJSON_IsNumber(lp) || lp->valuedouble < 0 || lp->valuedouble > 20 || lp->valuedouble != floor(lp->valuedouble))
            return reject(e, 400, "logprobs", "invalid_value", "logprobs must be an integer from 0 to 20"), NULL;
        logprobs = lp->valueint;
    }
    bool echo = false;
    if (!optional_bool(body, "echo", &echo, e)) return NULL;
    request_params params = {0};
    if (!params_parse(srv, body, false, false, &params, e)) {
        params_free(&params);
        return NULL;
    }
    generation *g = generation_new(srv, ex, &completion_api, n_prompts, params.req.n);
    if (!g || (echo && !(g->echo = calloc((size_t)n_prompts, sizeof *g->echo)))) {
        params_free(&params);
        generation_free(g);
        return reject(e, 500, NULL, NULL, "out of memory"), NULL;
    }
    g->params = params;
    g->model_name = model;
    g->logprobs = logprobs >= 0;
    g->top_logprobs = logprobs > 0 ? logprobs : 0;
    server_make_id(srv, "cmpl-", g->id, sizeof g->id);
    for (int i = 0; i < n_prompts; i++) {
        char param[32];
        snprintf(param, sizeof param, single ? "prompt" : "prompt[%d]", i);
        const cJSON *item = single ? prompt : cJSON_GetArrayItem(prompt, i);
        if (!prompt_item(srv, item, &g->prompts[i], &g->prompt_lens[i], param, e) ||
            !params_check_context(srv, g->prompt_lens[i], g->params.req.max_tokens, e)) {
            snprintf(e->param, sizeof e->param, "%s", param);
            generation_free(g);
            return NULL;
        }
        g->n_prompt += g->prompt_lens[i];
        if (echo) {
            char *text = NULL;
            size_t len = 0;
            inf_error err = {0};
            if (inf_detokenize(srv->tok, g->prompts[i], g->prompt_lens[i], &text, &len, &err)) {
                generation_free(g);
                return reject(e, 400, param, "invalid_value", "%s", err.msg), NULL;
            }
            g->echo[i] = utf8_sanitize(text, len);
            free(text);
            if (!g->echo[i]) {
                generation_free(g);
                return reject(e, 500, NULL, NULL, "out of memory"), NULL;
            }
        }
    }
    for (int i = 0; i < g->n_choices && g->logprobs; i++) {
        gen_choice *c = &g->choices[i];
        c->lp_tokens = cJSON_CreateArray();
        c->lp_token_logprobs = cJSON_CreateArray();
        c->lp_top = cJSON_CreateArray();
        c->lp_offsets = cJSON_CreateArray();
    }
    return g;
}

int api_completions(http_exchange *ex, const cJSON *body) {
    param_error e = {0};
    generation *g = completions_build(ex->srv, ex, body, &e);
    return g ? generation_run(g) : reply_rejected(ex, &e);
}

/* ------------------------------------------------------------------ models, tokenize, detokenize */

int api_models(http_exchange *ex) {
    server *srv = ex->srv;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(r, "data");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", 0);
    cJSON_AddStringToObject(m, "owned_by", "inferno");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddNumberToObject(meta, "n_ctx", srv->n_ctx);
    cJSON_AddNumberToObject(meta, "n_vocab", srv->n_vocab);
    cJSON_AddItemToArray(data, m);
    return http_reply_cjson(ex, 200, r);
}

int api_tokenize(http_exchange *ex, const cJSON *body) {
    server *srv = ex->srv;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(body, "content");
    if (!cJSON_IsString(content)) return http_reply_error(ex, 400, "content", "invalid_type", "content must be a string");
    bool special = false, pieces = false;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "add_special");
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(body, "parse_special");
    const cJSON *wp = cJSON_GetObjectItemCaseSensitive(body, "with_pieces");
    if ((v && !cJSON_IsBool(v)) || (ps && !cJSON_IsBool(ps)) || (wp && !cJSON_IsBool(wp)))
        return http_reply_error(ex, 400, NULL, "invalid_type", "add_special, parse_special and with_pieces are booleans");
    special = ps ? cJSON_IsTrue(ps) : true; /* llama-server parses special markup by default */
    pieces = wp && cJSON_IsTrue(wp);
    int32_t *ids = NULL;
    size_t n = 0;
    param_error e = {0};
    if (!tokenize_text(srv, content->valuestring, strlen(content->valuestring), special, &ids, &n, &e, "content"))
        return reply_rejected(ex, &e);
    cJSON *r = cJSON_CreateObject();
    cJSON *tokens = cJSON_AddArrayToObject(r, "tokens");
    for (size_t i = 0; i < n; i++) {
        if (!pieces) {
            cJSON_AddItemToArray(tokens, cJSON_CreateNumber(ids[i]));
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", ids[i]);
        char *t = token_text(srv, ids[i], NULL, NULL);
        cJSON_AddStringToObject(o, "piece", t ? t : "");
        free(t);
        cJSON_AddItemToArray(tokens, o);
    }
    free(ids);
    return http_reply_cjson(ex, 200, r);
}

int api_detokenize(http_exchange *ex, const cJSON *body) {
    server *srv = ex->srv;
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(body, "tokens");
    if (!cJSON_IsArray(tokens)) return http_reply_error(ex, 400, "tokens", "invalid_type", "tokens must be an array of ids");
    int32_t *ids = NULL;
    size_t n = 0;
    param_error e = {0};
    if (cJSON_GetArraySize(tokens) > 0 && !prompt_item(srv, tokens, &ids, &n, "tokens", &e)) {
        free(ids);
        return reply_rejected(ex, &e);
    }
    char *text = NULL;
    size_t len = 0;
    inf_error err = {0};
    inf_status st = inf_detokenize(srv->tok, ids ? ids : (int32_t[1]){0}, n, &text, &len, &err);
    free(ids);
    if (st) return http_reply_error(ex, 400, "tokens", "invalid_value", "%s", err.msg);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "content", string_or_null(text, len));
    free(text);
    return http_reply_cjson(ex, 200, r);
}

/*
 * api_anthropic.c — Anthropic's Messages API: POST /v1/messages (system,
 * text / tool_use / tool_result / thinking blocks, tools and tool_choice,
 * thinking, stop_sequences, an assistant prefill, streaming with
 * message_start, content_block_start/_delta/_stop, message_delta,
 * message_stop) and POST /v1/messages/count_tokens. Requests become the
 * chat template's messages; the answer goes through the same Qwen3 output
 * parser as chat completions.
 */
#include "server/qwen3_output.h"
#include "server/server_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text of a content that is a string or an array of text blocks. */
static bool text_of(const cJSON *v, const char *param, strbuf *out, param_error *e) {
    if (cJSON_IsString(v)) {
        sb_puts(out, v->valuestring);
        return true;
    }
    if (!cJSON_IsArray(v)) return reject_field(e, param, "must be a string or an array of text blocks");
    const cJSON *b;
    int i = 0;
    cJSON_ArrayForEach(b, v) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(b, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text))
            return reject_field(e, param, "only text blocks are supported here");
        if (i++ > 0) sb_puts(out, "\n");
        sb_puts(out, text->valuestring);
    }
    return true;
}

static cJSON *message(const char *role, const char *content) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content ? content : "");
    return m;
}

/* One Anthropic message as template messages (a user message with
 * tool_result blocks becomes tool messages). */
static bool convert_message(const cJSON *m, int index, cJSON *out, param_error *e) {
    char where[48], param[96];
    snprintf(where, sizeof where, "messages[%d]", index);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsObject(m) || !cJSON_IsString(role) ||
        (strcmp(role->valuestring, "user") && strcmp(role->valuestring, "assistant")))
        return reject_field(e, where, "a message needs role user or assistant");
    bool user = !strcmp(role->valuestring, "user");
    snprintf(param, sizeof param, "%s.content", where);
    if (cJSON_IsString(content)) {
        cJSON_AddItemToArray(out, message(role->valuestring, content->valuestring));
        return true;
    }
    if (!cJSON_IsArray(content)) return reject_field(e, param, "must be a string or an array of content blocks");
    strbuf text = {0}, thinking = {0};
    cJSON *calls = NULL;
    int n_text = 0, i = 0;
    bool ok = true;
    const cJSON *b;
    cJSON_ArrayForEach(b, content) {
        snprintf(param, sizeof param, "%s.content[%d]", where, i++);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        if (!cJSON_IsString(type)) {
            ok = reject_field(e, param, "a content block needs a type");
            break;
        }
        const char *t = type->valuestring;
        if (!strcmp(t, "text")) {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(b, "text");
            if (!cJSON_IsString(s)) {
                ok = reject_field(e, param, "a text block needs a string text");
                break;
            }
            if (n_text++ > 0) sb_puts(&text, "\n");
            sb_puts(&text, s->valuestring);
        } else if (!strcmp(t, "thinking") && !user) {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(b, "thinking");
            if (cJSON_IsString(s)) sb_puts(&thinking, s->valuestring);
        } else if (!strcmp(t, "redacted_thinking") && !user) {
            continue;
        } else if (!strcmp(t, "tool_use") && !user) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(b, "name");
            const cJSON *input = cJSON_GetObjectItemCaseSensitive(b, "input");
            if (!cJSON_IsString(name)) {
                ok = reject_field(e, param, "a tool_use block needs a string name");
                break;
            }
            if (!calls) calls = cJSON_CreateArray();
            cJSON *call = cJSON_CreateObject();
            if (cJSON_IsString(id)) cJSON_AddStringToObject(call, "id", id->valuestring);
            cJSON_AddStringToObject(call, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(call, "function");
            cJSON_AddStringToObject(fn, "name", name->valuestring);
            cJSON_AddItemToObject(fn, "arguments", input ? cJSON_Duplicate(input, true) : cJSON_CreateObject());
            cJSON_AddItemToArray(calls, call);
        } else if (!strcmp(t, "tool_result") && user) {
            /* text gathered so far goes first, as its own user message */
            if (n_text) {
                cJSON_AddItemToArray(out, message("user", text.data));
                sb_free(&text);
                n_text = 0;
            }
            strbuf result = {0};
            const cJSON *rc = cJSON_GetObjectItemCaseSensitive(b, "content");
            if (rc && !cJSON_IsNull(rc) && !text_of(rc, param, &result, e)) {
                sb_free(&result);
                ok = false;
                break;
            }
            cJSON *tm = message("tool", result.data);
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "tool_use_id");
            if (cJSON_IsString(id)) cJSON_AddStringToObject(tm, "tool_call_id", id->valuestring);
            cJSON_AddItemToArray(out, tm);
            sb_free(&result);
        } else {
            char msg[160];
            snprintf(msg, sizeof msg, "content blocks of type '%.64s' are not supported in %s messages", t,
                     role->valuestring);
            ok = reject_field(e, param, msg);
            break;
        }
    }
    if (ok && (n_text || thinking.len || calls || !user)) {
        cJSON *mm = message(role->valuestring, text.data);
        if (thinking.len) cJSON_AddStringToObject(mm, "reasoning_content", thinking.data);
        if (calls) cJSON_AddItemToObject(mm, "tool_calls", calls);
        calls = NULL;
        cJSON_AddItemToArray(out, mm);
    }
    cJSON_Delete(calls);
    sb_free(&text);
    sb_free(&thinking);
    return ok;
}

/* The request as template messages and tools; *prefill is the text of a
 * final assistant message, which the answer continues. */
static bool convert_request(const cJSON *body, cJSON **messages, cJSON **tools, tool_mode *mode, char **tool_name,
                            bool *thinking, char **prefill, param_error *e) {
    *messages = cJSON_CreateArray();
    *tools = NULL;
    *mode = TOOLS_AUTO;
    *tool_name = NULL;
    *thinking = false;
    *prefill = NULL;
    const cJSON *system = cJSON_GetObjectItemCaseSensitive(body, "system");
    if (system && !cJSON_IsNull(system)) {
        strbuf s = {0};
        bool ok = text_of(system, "system", &s, e);
        if (ok) cJSON_AddItemToArray(*messages, message("system", s.data));
        sb_free(&s);
        if (!ok) return false;
    }
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
        return reject_field(e, "messages", "must be a non-empty array of messages");
    int n = cJSON_GetArraySize(msgs), i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        /* a last assistant message of text alone is a prefill */
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (i == n - 1 && n > 1 && cJSON_IsString(role) && !strcmp(role->valuestring, "assistant")) {
            strbuf p = {0};
            param_error ignore;
            if (text_of(cJSON_GetObjectItemCaseSensitive(m, "content"), "prefill", &p, &ignore)) {
                /* Anthropic trims trailing whitespace of a prefill */
                while (p.len && (p.data[p.len - 1] == ' ' || p.data[p.len - 1] == '\n')) p.data[--p.len] = 0;
                *prefill = p.data ? p.data : strdup("");
                break;
            }
            sb_free(&p);
        }
        if (!convert_message(m, i++, *messages, e)) return false;
    }

    const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "tools");
    if (t && !cJSON_IsNull(t)) {
        if (!cJSON_IsArray(t)) return reject_field(e, "tools", "must be an array of tools");
        *tools = cJSON_CreateArray();
        int k = 0;
        const cJSON *tool;
        cJSON_ArrayForEach(tool, t) {
            char param[32];
            snprintf(param, sizeof param, "tools[%d]", k++);
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(tool, "name");
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(tool, "type");
            if (type && cJSON_IsString(type) && strcmp(type->valuestring, "custom"))
                return reject_field(e, param, "server tools are not supported; give name, description and input_schema");
            if (!cJSON_IsString(name)) return reject_field(e, param, "a tool needs a string name");
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(o, "function");
            cJSON_AddStringToObject(fn, "name", name->valuestring);
            const cJSON *desc = cJSON_GetObjectItemCaseSensitive(tool, "description");
            if (cJSON_IsString(desc)) cJSON_AddStringToObject(fn, "description", desc->valuestring);
            const cJSON *schema = cJSON_GetObjectItemCaseSensitive(tool, "input_schema");
            if (schema) cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(schema, true));
            cJSON_AddItemToArray(*tools, o);
        }
        if (cJSON_GetArraySize(*tools) == 0) {
            cJSON_Delete(*tools);
            *tools = NULL;
        }
    }
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
    if (tc && !cJSON_IsNull(tc)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(tc, "type");
        if (!cJSON_IsObject(tc) || !cJSON_IsString(type)) return reject_field(e, "tool_choice", "must be an object with a type");
        const char *ty = type->valuestring;
        if (!strcmp(ty, "auto")) *mode = TOOLS_AUTO;
        else if (!strcmp(ty, "none")) *mode = TOOLS_NONE;
        else if (!strcmp(ty, "any")) *mode = TOOLS_REQUIRED;
        else if (!strcmp(ty, "tool")) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc, "name");
            if (!cJSON_IsString(name)) return reject_field(e, "tool_choice", "type tool needs a name");
            *mode = TOOLS_NAMED;
            *tool_name = strdup(name->valuestring);
        } else {
            return reject_field(e, "tool_choice", "type must be auto, any, tool or none");
        }
        if ((*mode == TOOLS_REQUIRED || *mode == TOOLS_NAMED) && !*tools) return reject_field(e, "tool_choice", "needs tools");
    }
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(body, "thinking");
    if (th && !cJSON_IsNull(th)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(th, "type");
        if (!cJSON_IsObject(th) || !cJSON_IsString(type) ||
            (strcmp(type->valuestring, "enabled") && strcmp(type->valuestring, "disabled")))
            return reject_field(e, "thinking", "must be {\"type\": \"enabled\" or \"disabled\"}");
        *thinking = !strcmp(type->valuestring, "enabled");
    }
    return true;
}

/* ------------------------------------------------------------------ replies */

enum { BLOCK_NONE = -1, BLOCK_THINKING, BLOCK_TEXT, BLOCK_TOOL };

/* Anthropic's usage: input_tokens are those not read from the cache. A
 * stream's message_start goes out before the prefix-cache hit is known, so
 * it counts the whole prompt, and its message_delta carries output_tokens
 * alone (as Anthropic's own streams did). */
typedef enum usage_kind { USAGE_STREAM_START, USAGE_STREAM_DELTA, USAGE_WHOLE } usage_kind;

static cJSON *usage(const generation *g, usage_kind kind) {
    cJSON *u = cJSON_CreateObject();
    if (kind != USAGE_STREAM_DELTA) {
        bool whole = kind == USAGE_WHOLE;
        cJSON_AddNumberToObject(u, "input_tokens", (double)g->n_prompt - (whole ? g->n_cached : 0));
        cJSON_AddNumberToObject(u, "cache_creation_input_tokens", 0);
        cJSON_AddNumberToObject(u, "cache_read_input_tokens", whole ? g->n_cached : 0);
    }
    cJSON_AddNumberToObject(u, "output_tokens", g->n_generated);
    return u;
}

static const char *stop_reason(const generation *g, const gen_choice *c, const char **sequence) {
    *sequence = NULL;
    if (qwen3_output_n_tool_calls(c->out) > 0) return "tool_use";
    if (c->finish == INF_FINISH_LENGTH || c->finish == INF_FINISH_CONTEXT) return "max_tokens";
    if (c->finish == INF_FINISH_STOP && c->stop_index >= 0 && (size_t)c->stop_index < g->params.n_stops) {
        *sequence = g->params.stops[c->stop_index];
        return "stop_sequence";
    }
    return "end_turn";
}

static cJSON *event(const char *type) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *tool_input(const char *args, size_t len) {
    cJSON *v = cJSON_ParseWithLength(args, len);
    if (!v) return cJSON_CreateObject();
    return v;
}

static void close_block(generation *g, gen_choice *c) {
    if (c->block == BLOCK_NONE) return;
    if (c->block == BLOCK_THINKING) {
        cJSON *ev = event("content_block_delta");
        cJSON_AddNumberToObject(ev, "index", c->n_blocks - 1);
        cJSON *d = cJSON_AddObjectToObject(ev, "delta");
        cJSON_AddStringToObject(d, "type", "signature_delta");
        cJSON_AddStringToObject(d, "signature", "");
        gen_sse(g, "content_block_delta", ev);
    }
    cJSON *ev = event("content_block_stop");
    cJSON_AddNumberToObject(ev, "index", c->n_blocks - 1);
    gen_sse(g, "content_block_stop", ev);
    c->block = BLOCK_NONE;
}

static void open_block(generation *g, gen_choice *c, int kind, const qwen3_delta *d) {
    close_block(g, c);
    cJSON *ev = event("content_block_start");
    cJSON_AddNumberToObject(ev, "index", c->n_blocks++);
    cJSON *b = cJSON_AddObjectToObject(ev, "content_block");
    if (kind == BLOCK_THINKING) {
        cJSON_AddStringToObject(b, "type", "thinking");
        cJSON_AddStringToObject(b, "thinking", "");
        cJSON_AddStringToObject(b, "signature", "");
    } else if (kind == BLOCK_TEXT) {
        cJSON_AddStringToObject(b, "type", "text");
        cJSON_AddStringToObject(b, "text", "");
    } else {
        char id[40];
        snprintf(id, sizeof id, "toolu_%s", d->tool_id + (strncmp(d->tool_id, "call_", 5) ? 0 : 5));
        cJSON_AddStringToObject(b, "type", "tool_use");
        cJSON_AddStringToObject(b, "id", id);
        cJSON_AddStringToObject(b, "name", d->tool_name);
        cJSON_AddObjectToObject(b, "input");
    }
    gen_sse(g, "content_block_start", ev);
    c->block = kind;
}

static void stream_deltas(generation *g, gen_choice *c, const qwen3_delta *d, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int kind = d[i].kind == QWEN3_DELTA_REASONING ? BLOCK_THINKING
                   : d[i].kind == QWEN3_DELTA_CONTENT ? BLOCK_TEXT
                                                      : BLOCK_TOOL;
        if (d[i].kind == QWEN3_DELTA_TOOL_BEGIN) {
            open_block(g, c, BLOCK_TOOL, &d[i]);
            continue;
        }
        if (d[i].len == 0) continue;
        if (c->block != kind) open_block(g, c, kind, &d[i]);
        cJSON *ev = event("content_block_delta");
        cJSON_AddNumberToObject(ev, "index", c->n_blocks - 1);
        cJSON *delta = cJSON_AddObjectToObject(ev, "delta");
        char *t = utf8_sanitize(d[i].text, d[i].len);
        if (kind == BLOCK_THINKING) {
            cJSON_AddStringToObject(delta, "type", "thinking_delta");
            cJSON_AddStringToObject(delta, "thinking", t ? t : "");
        } else if (kind == BLOCK_TEXT) {
            cJSON_AddStringToObject(delta, "type", "text_delta");
            cJSON_AddStringToObject(delta, "text", t ? t : "");
        } else {
            cJSON_AddStringToObject(delta, "type", "input_json_delta");
            cJSON_AddStringToObject(delta, "partial_json", t ? t : "");
        }
        free(t);
        gen_sse(g, "content_block_delta", ev);
    }
}

static void messages_token(generation *g, gen_choice *c, const job_event *ev) {
    const qwen3_delta *d = NULL;
    size_t n = 0;
    if (qwen3_output_push(c->out, ev->text, ev->text_len, &d, &n)) {
        g->failed = true;
        return;
    }
    if (g->stream) stream_deltas(g, c, d, n);
}

static void messages_done(generation *g, gen_choice *c, const job_event *ev) {
    const qwen3_delta *d = NULL;
    size_t n = 0;
    if (ev->text_len) {
        if (qwen3_output_push(c->out, ev->text, ev->text_len, &d, &n)) g->failed = true;
        else if (g->stream) stream_deltas(g, c, d, n);
    }
    if (qwen3_output_finish(c->out, &d, &n)) {
        g->failed = true;
        return;
    }
    if (!g->stream) return;
    stream_deltas(g, c, d, n);
    if (c->n_blocks == 0) { /* always one block, as Anthropic's replies have */
        qwen3_delta empty = {.kind = QWEN3_DELTA_CONTENT};
        open_block(g, c, BLOCK_TEXT, &empty);
    }
    close_block(g, c);
}

static void messages_stream_begin(generation *g) {
    cJSON *ev = event("message_start");
    cJSON *m = cJSON_AddObjectToObject(ev, "message");
    cJSON_AddStringToObject(m, "id", g->id);
    cJSON_AddStringToObject(m, "type", "message");
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON_AddStringToObject(m, "model", g->model_name);
    cJSON_AddArrayToObject(m, "content");
    cJSON_AddNullToObject(m, "stop_reason");
    cJSON_AddNullToObject(m, "stop_sequence");
    cJSON_AddItemToObject(m, "usage", usage(g, USAGE_STREAM_START));
    gen_sse(g, "message_start", ev);
    gen_sse(g, "ping", event("ping"));
    /* calls the prefill already completed: their deltas came before the stream did */
    gen_choice *c = &g->choices[0];
    for (size_t k = 0; k < qwen3_output_n_tool_calls(c->out); k++) {
        const qwen3_tool_call *tc = qwen3_output_tool_call(c->out, k);
        qwen3_delta d[2] = {{.kind = QWEN3_DELTA_TOOL_BEGIN, .tool_index = k, .tool_id = tc->id, .tool_name = tc->name},
                            {.kind = QWEN3_DELTA_TOOL_ARGS, .text = tc->arguments, .len = tc->arguments_len,
                             .tool_index = k, .tool_id = tc->id, .tool_name = tc->name}};
        stream_deltas(g, c, d, 2);
    }
}

static void messages_stream_end(generation *g) {
    gen_choice *c = &g->choices[0];
    const char *seq;
    const char *reason = stop_reason(g, c, &seq);
    cJSON *ev = event("message_delta");
    cJSON *d = cJSON_AddObjectToObject(ev, "delta");
    cJSON_AddStringToObject(d, "stop_reason", reason);
    if (seq) cJSON_AddStringToObject(d, "stop_sequence", seq);
    else cJSON_AddNullToObject(d, "stop_sequence");
    cJSON_AddItemToObject(ev, "usage", usage(g, USAGE_STREAM_DELTA));
    gen_sse(g, "message_delta", ev);
    gen_sse(g, "message_stop", event("message_stop"));
}

static cJSON *text_block(const char *type, const char *key, const char *text, size_t len) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", type);
    char *t = utf8_sanitize(text, len);
    cJSON_AddStringToObject(b, key, t ? t : "");
    free(t);
    return b;
}

static int messages_reply(generation *g) {
    gen_choice *c = &g->choices[0];
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "id", g->id);
    cJSON_AddStringToObject(r, "type", "message");
    cJSON_AddStringToObject(r, "role", "assistant");
    cJSON_AddStringToObject(r, "model", g->model_name);
    cJSON *content = cJSON_AddArrayToObject(r, "content");
    size_t rlen = 0, clen = 0;
    const char *reasoning = gen_reasoning(c, &rlen);
    const char *text = gen_content(c, &clen);
    if (reasoning) {
        cJSON *b = text_block("thinking", "thinking", reasoning, rlen);
        cJSON_AddStringToObject(b, "signature", "");
        cJSON_AddItemToArray(content, b);
    }
    size_t n_calls = qwen3_output_n_tool_calls(c->out);
    if (text || (!reasoning && !n_calls)) cJSON_AddItemToArray(content, text_block("text", "text", text ? text : "", clen));
    for (size_t i = 0; i < n_calls; i++) {
        const qwen3_tool_call *tc = qwen3_output_tool_call(c->out, i);
        cJSON *b = cJSON_CreateObject();
        char id[40];
        snprintf(id, sizeof id, "toolu_%s", tc->id + (strncmp(tc->id, "call_", 5) ? 0 : 5));
        cJSON_AddStringToObject(b, "type", "tool_use");
        cJSON_AddStringToObject(b, "id", id);
        cJSON_AddStringToObject(b, "name", tc->name);
        cJSON_AddItemToObject(b, "input", tool_input(tc->arguments, tc->arguments_len));
        cJSON_AddItemToArray(content, b);
    }
    const char *seq;
    cJSON_AddStringToObject(r, "stop_reason", stop_reason(g, c, &seq));
    if (seq) cJSON_AddStringToObject(r, "stop_sequence", seq);
    else cJSON_AddNullToObject(r, "stop_sequence");
    cJSON_AddItemToObject(r, "usage", usage(g, USAGE_WHOLE));
    return http_reply_cjson(g->ex, 200, r);
}

static const gen_api messages_api = {messages_token, messages_done, messages_stream_begin, messages_stream_end,
                                     messages_reply};

/* Builds the prompt of a Messages request into g (prompts[0]). */
static bool messages_prompt(generation *g, const cJSON *body, bool *thinking, bool *with_tools, param_error *e) {
    cJSON *messages, *tools;
    tool_mode mode;
    char *tool_name, *prefill;
    bool ok = convert_request(body, &messages, &tools, &mode, &tool_name, thinking, &prefill, e);
    *with_tools = ok && tools && mode != TOOLS_NONE;
    if (ok) {
        ok = chat_prompt(g, messages, tools, *thinking, prefill ? TOOLS_AUTO : mode, tool_name, false, e);
        messages = tools = NULL;
    }
    if (ok && prefill && *prefill) {
        /* the answer continues the prefill: its ids follow the prompt's */
        int32_t *ids = NULL;
        size_t n = 0;
        inf_error err = {0};
        if (inf_tokenize(g->srv->tok, prefill, strlen(prefill), INF_TOKENIZE_NO_SPECIAL, &ids, &n, &err)) {
            ok = reject_field(e, "messages", err.msg);
        } else {
            int32_t *all = realloc(g->prompts[0], (g->prompt_lens[0] + n) * sizeof *all);
            if (!all) {
                ok = reject_field(e, "messages", "out of memory");
            } else {
                memcpy(all + g->prompt_lens[0], ids, n * sizeof *ids);
                g->prompts[0] = all;
                g->prompt_lens[0] += n;
                g->n_prompt = g->prompt_lens[0];
                /* the parsers read the prefill first, as if generated */
                free(g->forced_prefix);
                g->forced_prefix = prefill;
                prefill = NULL;
            }
            free(ids);
        }
    }
    cJSON_Delete(messages);
    cJSON_Delete(tools);
    free(tool_name);
    free(prefill);
    return ok;
}

generation *messages_build(server *srv, http_exchange *ex, const cJSON *body, bool count_only, param_error *e) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(body, "model");
    if (model && !cJSON_IsString(model)) return reject(e, 400, "model", NULL, "model must be a string"), NULL;
    if (model && srv->opt.strict_model && strcmp(model->valuestring, srv->model_id))
        return reject(e, 404, "model", NULL, "model: '%s' does not exist; this server has '%s'", model->valuestring,
                      srv->model_id), NULL;
    /* thinking first: the sampling defaults are the model's for that mode */
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(body, "thinking");
    const cJSON *th_type = cJSON_GetObjectItemCaseSensitive(th, "type");
    bool thinking = cJSON_IsString(th_type) && !strcmp(th_type->valuestring, "enabled");
    request_params params = {0};
    if (!count_only && !params_parse(srv, body, true, thinking, &params, e)) {
        params_free(&params);
        return NULL;
    }
    generation *g = generation_new(srv, ex, &messages_api, 1, 1);
    if (!g) {
        params_free(&params);
        return reject(e, 500, NULL, NULL, "out of memory"), NULL;
    }
    g->params = params;
    g->model_name = model ? model->valuestring : srv->model_id;
    server_make_id(srv, "msg_", g->id, sizeof g->id);
    bool with_tools;
    if (!messages_prompt(g, body, &thinking, &with_tools, e) ||
        (!count_only && !params_check_context(srv, g->n_prompt, g->params.req.max_tokens, e))) {
        generation_free(g);
        return NULL;
    }
    if (!count_only && !gen_parsers(g, with_tools)) {
        generation_free(g);
        return reject(e, 500, NULL, NULL, "out of memory"), NULL;
    }
    return g;
}

int api_messages(http_exchange *ex, const cJSON *body) {
    param_error e = {0};
    bool count_only = !strcmp(ex->url, "/v1/messages/count_tokens");
    generation *g = messages_build(ex->srv, ex, body, count_only, &e);
    if (!g) return reply_rejected(ex, &e);
    if (!count_only) return generation_run(g);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "input_tokens", (double)g->n_prompt);
    generation_free(g);
    return http_reply_cjson(ex, 200, r);
}

/*
 * fuzz_chat_template.c — libFuzzer target for chat-template rendering: the
 * request JSON parser (json_value.c), request validation, and the two
 * renderers (Qwen3's template in C, generic ChatML) in chat_template.c.
 *
 * The input is a request body ({"messages": [...], "tools": ...,
 * "add_generation_prompt": ..., "enable_thinking": ...}). It is rendered
 * with the built-in Qwen3 template and with the ChatML fallback (any
 * template text that is not Qwen3's). Errors are fine, but both renderers
 * validate the same request, so a request that is not JSON must fail in
 * both, and an error must carry a message; a rendering must be exactly
 * out_len bytes of valid UTF-8 with a NUL after them (the
 * tokenizer refuses anything else). Crashes, leaks and undefined
 * behaviour abort. The input is also tried as template source, which only
 * selects a renderer, and read from an in-memory file as the two small JSON
 * files that sit beside a model: a tokenizer_config.json (its template must
 * then render a plain request) and a generation_config.json (the sampling
 * parameters read from it must be accepted by inf_sampler_new, and the
 * sampler must pick a token in the vocabulary).
 * Each request is also rendered and tokenized with
 * inf_chat_template_render_ids and the real Qwen3 tokenizer
 * (data/qwen3-tokenizer/tokenizer.json; run from the repository root): it
 * must succeed or fail as rendering does, give the very same text, ids in
 * the vocabulary, and the added tokens of inf_tokenize(text) less some
 * special ones (the request's), the non-special ones all kept.
 */
#include "fuzz_common.h"

#include "inferno.h"
#include "tok/unicode.h"
#include "tok/vocab.h"

#include <stdio.h>
#include <string.h>

static inf_chat_template *qwen3, *chatml;
static inf_tokenizer *tok;
static fuzz_file config;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    inf_error err;
    FUZZ_CHECK(inf_chat_template_from_source(NULL, &qwen3, &err) == INF_OK, "built-in template: %s", err.msg);
    FUZZ_CHECK(inf_chat_template_from_source("{% for m in messages %}{{ m.content }}{% endfor %}", &chatml, &err) ==
                   INF_OK,
               "fallback template: %s", err.msg);
    FUZZ_CHECK(strcmp(inf_chat_template_describe(qwen3), inf_chat_template_describe(chatml)) != 0,
               "the fallback template was taken for Qwen3's");
    fuzz_file_init(&config, "config.json");
    if (inf_tokenizer_load("data/qwen3-tokenizer/tokenizer.json", &tok, &err) != INF_OK) {
        fprintf(stderr, "fuzz_chat_template: %s (run from the repository root)\n", err.msg);
        exit(1);
    }
    return 0;
}

static bool is_added(int32_t id) { return tok->kind[id] == TOK_ADDED || tok->kind[id] == TOK_SPECIAL; }
static bool is_special(int32_t id) { return tok->kind[id] == TOK_SPECIAL; }

/* render_ids against the rendering (out, st) of the same request. */
static void render_ids(const inf_chat_template *tmpl, const uint8_t *data, size_t size, inf_status want,
                       const char *want_text, size_t want_len) {
    char *text = NULL;
    size_t len = 0, n = 0;
    int32_t *ids = NULL;
    inf_error err;
    inf_status st = inf_chat_template_render_ids(tmpl, tok, (const char *)data, size, &text, &len, &ids, &n, &err);
    FUZZ_CHECK(st == want, "render_ids status %d, render %d", st, want);
    if (st) {
        FUZZ_CHECK(!text && !ids && err.msg[0] && !strchr(err.msg, '\n'), "render_ids failed without a one-line message");
        return;
    }
    FUZZ_CHECK(len == want_len && !memcmp(text, want_text, len), "render_ids text differs from render's");
    int32_t *all = NULL;
    size_t n_all = 0;
    FUZZ_CHECK(inf_tokenize(tok, text, len, 0, &all, &n_all, &err) == INF_OK, "inf_tokenize: %s", err.msg);
    size_t j = 0; /* the added tokens of ids, in order, are those of all less some special ones */
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < inf_tokenizer_n_vocab(tok), "id %d outside the vocabulary", ids[i]);
        if (!is_added(ids[i])) continue;
        while (j < n_all && all[j] != ids[i]) {
            FUZZ_CHECK(!is_added(all[j]) || is_special(all[j]), "a non-special added token %d was lost", all[j]);
            j++;
        }
        FUZZ_CHECK(j < n_all, "added token %d is not one inf_tokenize finds", ids[i]);
        j++;
    }
    for (; j < n_all; j++)
        FUZZ_CHECK(!is_added(all[j]) || is_special(all[j]), "a non-special added token %d was lost", all[j]);
    free(all);
    free(ids);
    free(text);
}

static inf_status render(const inf_chat_template *tmpl, const uint8_t *data, size_t size) {
    char *out = NULL;
    size_t out_len = 0;
    inf_error err;
    inf_status st = inf_chat_template_render(tmpl, (const char *)data, size, &out, &out_len, &err);
    if (st) {
        FUZZ_CHECK(err.status == st && err.msg[0] && !strchr(err.msg, '\n'), "error %d without a one-line message",
                   st);
    } else {
        FUZZ_CHECK(out && out[out_len] == 0, "rendering not NUL-terminated at out_len");
        FUZZ_CHECK(uni_utf8_invalid_offset(out, out_len) == out_len, "the rendering is not valid UTF-8");
    }
    render_ids(tmpl, data, size, st, out, out_len);
    free(out);
    return st;
}

/* The input as tokenizer_config.json and as generation_config.json. */
static void load_configs(const uint8_t *data, size_t size) {
    fuzz_file_set(&config, data, size);
    inf_chat_template *tmpl = NULL;
    inf_error err;
    if (inf_chat_template_load(config.path, &tmpl, &err) == INF_OK) {
        static const char request[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        char *out = NULL;
        size_t out_len;
        inf_status st = inf_chat_template_render(tmpl, request, sizeof request - 1, &out, &out_len, &err);
        FUZZ_CHECK(st == INF_OK, "a loaded template cannot render a plain request: %s", err.msg);
        free(out);
        inf_chat_template_free(tmpl);
    }

    enum { N_VOCAB = 16 };
    inf_sampler_params params;
    inf_sampler_params_default(&params);
    if (inf_sampler_params_from_generation_config(config.path, &params, &err) != INF_OK) return;
    inf_sampler *sampler = NULL;
    inf_status st = inf_sampler_new(N_VOCAB, &params, &sampler, &err);
    FUZZ_CHECK(st == INF_OK, "parameters read from a generation_config.json are refused: %s", err.msg);
    float logits[N_VOCAB];
    for (int i = 0; i < N_VOCAB; i++) logits[i] = (float)((i * 7) % 5) - 2.0f;
    inf_sampler_accept(sampler, 3);
    int32_t id = inf_sampler_sample(sampler, logits);
    FUZZ_CHECK(id >= 0 && id < N_VOCAB, "sampled id %d", id);
    inf_sampler_free(sampler);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    inf_status q = render(qwen3, data, size);
    inf_status c = render(chatml, data, size);
    FUZZ_CHECK((q == INF_ERR_FORMAT) == (c == INF_ERR_FORMAT), "malformed JSON for one renderer only: %d vs %d", q, c);

    /* as template text: Qwen3's exact source or anything else */
    char *source = malloc(size + 1);
    FUZZ_CHECK(source != NULL, "out of memory");
    memcpy(source, data, size);
    source[size] = 0;
    inf_chat_template *tmpl = NULL;
    inf_error err;
    if (inf_chat_template_from_source(source, &tmpl, &err) == INF_OK) {
        (void)inf_chat_template_describe(tmpl);
        inf_chat_template_free(tmpl);
    }
    free(source);

    load_configs(data, size);
    return 0;
}

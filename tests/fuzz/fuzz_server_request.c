/*
 * fuzz_server_request.c — libFuzzer target for the server's request
 * handling short of the engine: a body (JSON) through the builders of
 * /v1/chat/completions, /v1/completions and /v1/messages (field checks,
 * messages and tools to the chat template, rendering and tokenizing, the
 * sampling parameters, the Qwen3 output parsers). The first byte picks the
 * endpoint; the rest is the body. A request must either be refused with a
 * status and a message, or come out as a generation with a non-empty
 * prompt of ids in the vocabulary that fits the context. Crashes, leaks and
 * undefined behaviour abort. The HTTP layer itself is libmicrohttpd's.
 * Runs from the repository root (the model is synthesized at start-up from
 * data/qwen3-tokenizer).
 */
#include "fuzz_common.h"

#include "server/server_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static server srv;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    inf_synth_options so;
    inf_synth_options_default(&so);
    so.n_layer = 1;
    so.n_embd = 32;
    so.n_ff = 32;
    so.n_head = 2;
    so.n_head_kv = 1;
    so.head_dim = 16;
    so.n_ctx_train = 512;
    so.n_vocab = 400;
    so.tokenizer_json = "data/qwen3-tokenizer/tokenizer.json";
    so.tokenizer_config_json = "data/qwen3-tokenizer/tokenizer_config.json";
    so.name = "fuzz";
    char path[] = "/tmp/fuzz_server_request-XXXXXX";
    int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0, "mkstemp");
    close(fd);
    inf_error err;
    if (inf_synth_write(&so, path, &err)) {
        fprintf(stderr, "fuzz_server_request: %s (run from the repository root)\n", err.msg);
        exit(1);
    }
    inf_load_options lo;
    inf_load_options_default(&lo);
    lo.n_threads = 1;
    FUZZ_CHECK(inf_model_load(path, &lo, &srv.model, &err) == INF_OK, "load: %s", err.msg);
    FUZZ_CHECK(inf_chat_template_load(path, &srv.tmpl, &err) == INF_OK, "template: %s", err.msg);
    unlink(path);
    server_options_default(&srv.opt);
    srv.tok = inf_model_tokenizer(srv.model);
    srv.n_vocab = inf_tokenizer_n_vocab(srv.tok);
    srv.n_ctx = 512;
    srv.model_id = "fuzz";
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int which = data[0] % 4;
    cJSON *body = cJSON_ParseWithLength((const char *)data + 1, size - 1);
    if (!cJSON_IsObject(body)) {
        cJSON_Delete(body);
        return 0;
    }
    srv.opt.strict_model = data[0] & 0x80;
    param_error e = {0};
    generation *g = which == 0   ? chat_build(&srv, NULL, body, &e)
                    : which == 1 ? completions_build(&srv, NULL, body, &e)
                                 : messages_build(&srv, NULL, body, which == 3, &e);
    if (!g) {
        FUZZ_CHECK(e.msg[0], "a refusal without a message");
        FUZZ_CHECK(e.status == 0 || e.status == 400 || e.status == 404 || e.status == 500, "status %d", e.status);
    } else {
        FUZZ_CHECK(g->n_prompts >= 1 && g->n_choices >= g->n_prompts, "%d prompts, %d choices", g->n_prompts,
                   g->n_choices);
        for (int i = 0; i < g->n_prompts; i++) {
            FUZZ_CHECK(g->prompt_lens[i] > 0, "prompt %d is empty", i);
            if (which != 3) FUZZ_CHECK(g->prompt_lens[i] < (size_t)srv.n_ctx, "prompt %d does not fit", i);
            for (size_t k = 0; k < g->prompt_lens[i]; k++)
                FUZZ_CHECK(g->prompts[i][k] >= 0 && g->prompts[i][k] < srv.n_vocab, "id %d", (int)g->prompts[i][k]);
        }
        generation_free(g);
    }
    cJSON_Delete(body);
    return 0;
}

/*
 * fuzz_tokenizer_json.c — libFuzzer target for the tokenizer.json loader
 * (tokenizer_json.c: a hand-written scanner for the vocabulary and merges,
 * cJSON for the small sections) and the vocabulary checks behind it
 * (vocab.c).
 *
 * The input is a whole tokenizer.json, read through inf_tokenizer_load from
 * an in-memory file (there is no tokenizer_config.json beside it). A
 * tokenizer that loads must then encode text into ids inside its
 * vocabulary, never produce an added token with INF_TOKENIZE_NO_SPECIAL,
 * and decode and stream those ids back. Errors are fine; crashes, leaks and
 * undefined behaviour are not.
 */
#include "fuzz_common.h"

#include "inferno.h"
#include "tok/vocab.h"

#include <string.h>

static fuzz_file input;

static void exercise(const inf_tokenizer *tok) {
    static const char text[] = "Hello <|im_start|>user\nw\xC3\xB6rld e\xCC\x81 12345  \t\n<think>x</think>!!";
    int n_vocab = inf_tokenizer_n_vocab(tok);
    FUZZ_CHECK(n_vocab >= 1, "loaded a tokenizer of %d tokens", n_vocab);
    FUZZ_CHECK(inf_tokenizer_eos(tok) < n_vocab, "eos %d outside %d tokens", inf_tokenizer_eos(tok), n_vocab);
    for (int flags = 0; flags <= INF_TOKENIZE_NO_SPECIAL; flags += INF_TOKENIZE_NO_SPECIAL) {
        int32_t *ids = NULL;
        size_t n_ids = 0;
        inf_error err;
        if (inf_tokenize(tok, text, sizeof text - 1, flags, &ids, &n_ids, &err) != INF_OK) continue;
        for (size_t i = 0; i < n_ids; i++) {
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab, "id %d outside %d tokens", ids[i], n_vocab);
            if (flags & INF_TOKENIZE_NO_SPECIAL && !(tok->add_bos && i == 0))
                FUZZ_CHECK(tok->kind[ids[i]] == TOK_NORMAL, "NO_SPECIAL produced token %d of kind %d", ids[i],
                           tok->kind[ids[i]]);
        }
        char *out = NULL;
        size_t len = 0;
        inf_status st = inf_detokenize(tok, ids, n_ids, &out, &len, &err);
        FUZZ_CHECK(st == INF_OK, "ids from inf_tokenize do not detokenize: %s", err.msg);
        inf_detok_stream stream;
        inf_detok_stream_init(&stream);
        char chunk[INF_DETOK_STREAM_MAX_OUT];
        for (size_t i = 0; i < n_ids; i++) {
            size_t got;
            st = inf_detok_stream_push(tok, &stream, ids[i], chunk, sizeof chunk, &got, &err);
            FUZZ_CHECK(st == INF_OK, "stream: %s", err.msg);
        }
        (void)inf_detok_stream_flush(&stream, chunk, sizeof chunk);
        free(out);
        free(ids);
    }
    for (int32_t id = 0; id < n_vocab && id < 4096; id++) {
        size_t len;
        FUZZ_CHECK(inf_tokenizer_token_bytes(tok, id, &len) != NULL, "id %d has no bytes", id);
        FUZZ_CHECK(len <= TOK_MAX_TOKEN_BYTES, "id %d has %zu bytes", id, len);
    }
    (void)inf_tokenizer_find_special(tok, "<|im_end|>");
    (void)inf_tokenizer_is_eog(tok, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool ready;
    if (!ready) {
        fuzz_file_init(&input, "tokenizer.json");
        ready = true;
    }
    fuzz_file_set(&input, data, size);
    inf_tokenizer *tok = NULL;
    inf_error err;
    inf_status st = inf_tokenizer_load(input.path, &tok, &err);
    FUZZ_CHECK((st == INF_OK) == (tok != NULL), "status %d with tokenizer %p", st, (void *)tok);
    if (st) {
        FUZZ_CHECK(err.status == st && err.msg[0], "error without a message");
        return 0;
    }
    exercise(tok);
    inf_tokenizer_free(tok);
    return 0;
}

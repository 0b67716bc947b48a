/*
 * tiny_model.h — the small synthetic Qwen3 that the model-level tests
 * write (test_model, test_engine): 2 layers, hidden 64, FFN 96, 4 query
 * heads over 2 KV heads of 16, F32, the first 512 entries of the real
 * Qwen3 vocabulary, no chat template, seed 7. A test sets what it needs
 * differently (weight type, head_dim, seed) after the call.
 *
 * Header-only: harness.c is linked into the kernel-only tests too, whose
 * library has no synthesizer.
 */
#ifndef INF_TEST_TINY_MODEL_H
#define INF_TEST_TINY_MODEL_H

#include "inferno.h"

#define TEST_TOKENIZER_JSON "data/qwen3-tokenizer/tokenizer.json"

static inline void test_tiny_model_options(inf_synth_options *o) {
    inf_synth_options_default(o);
    o->n_layer = 2;
    o->n_embd = 64;
    o->n_ff = 96;
    o->n_head = 4;
    o->n_head_kv = 2;
    o->head_dim = 16;
    o->n_ctx_train = 1024;
    o->weight_type = INF_DTYPE_F32;
    o->tokenizer_json = TEST_TOKENIZER_JSON;
    o->tokenizer_config_json = NULL;
    o->n_vocab = 512;
    o->seed = 7;
}

#endif

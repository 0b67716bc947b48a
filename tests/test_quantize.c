/*
 * test_quantize.c — inf_model_quantize (`inferno quantize`) against
 * llama.cpp's quantizer: the committed goldens tiny-q-q4_0, tiny-q-q6_k and
 * tiny-b-q6_k were written by llama_model_quantize() (scripts/
 * gen-quant-golden.sh); the same F32 sources quantized here must give every
 * tensor the same type and the same bytes. Also: the refusals (a source
 * that is already quantized, a mix inferno does not write).
 */
#include "harness.h"
#include "inferno.h"

#include "io/gguf.h"

#include <stdio.h>
#include <string.h>

#define GOLDEN_DIR "tests/data/golden/"

/* Every tensor of `got` has the type and bytes of the same tensor of `want`. */
static void same_tensors(const char *got_path, const char *want_path) {
    gguf_file *got = NULL, *want = NULL;
    inf_error err = {0};
    if (!TEST_CHECK(gguf_open(got_path, GGUF_OPEN_READ, &got, &err) == INF_OK, "open %s: %s", got_path, err.msg) ||
        !TEST_CHECK(gguf_open(want_path, GGUF_OPEN_READ, &want, &err) == INF_OK, "open %s: %s", want_path, err.msg))
        goto done;
    TEST_CHECK(got->n_tensors == want->n_tensors, "%llu tensors, llama.cpp's file %llu",
               (unsigned long long)got->n_tensors, (unsigned long long)want->n_tensors);
    int differ = 0;
    for (uint64_t i = 0; i < want->n_tensors; i++) {
        const gguf_tensor *w = &want->tensors[i], *g = gguf_find_tensor(got, w->name.data);
        if (!TEST_CHECK(g != NULL, "%s: no tensor '%s'", got_path, w->name.data)) continue;
        const bool same = g->type == w->type && g->nbytes == w->nbytes && memcmp(g->data, w->data, w->nbytes) == 0;
        if (!same && differ++ < 4)
            TEST_CHECK(false, "%s: tensor '%s' is %s, llama.cpp's %s%s", got_path, w->name.data, inf_dtype_name(g->type),
                       inf_dtype_name(w->type), g->type == w->type ? " (other bytes)" : "");
    }
    TEST_CHECK(differ == 0, "%d tensors differ from llama.cpp's", differ);
    int64_t ft = -1;
    TEST_CHECK(gguf_get_int(got, "general.file_type", false, &ft, &err) == INF_OK, "file_type: %s", err.msg);
    int64_t want_ft = -2;
    gguf_get_int(want, "general.file_type", false, &want_ft, &err);
    TEST_CHECK(ft == want_ft, "general.file_type %lld, llama.cpp's %lld", (long long)ft, (long long)want_ft);
done:
    gguf_close(got);
    gguf_close(want);
}

int main(void) {
    const char *dir = test_tmpdir("quantize");
    if (!dir) return 1;
    char src[512], out[512];
    inf_error err = {0};

    /* tiny-q-f32, exactly as scripts/gen-quant-golden.sh makes it */
    test_begin("synth tiny-q-f32");
    inf_synth_options o;
    inf_synth_options_default(&o);
    o.n_layer = 2, o.n_embd = 256, o.n_ff = 256, o.n_head = 4, o.n_head_kv = 2, o.head_dim = 64;
    o.n_ctx_train = 512, o.n_vocab = 1024, o.seed = 11, o.weight_type = INF_DTYPE_F32, o.name = "tiny-q";
    o.tokenizer_json = "data/qwen3-tokenizer/tokenizer.json";
    o.tokenizer_config_json = "data/qwen3-tokenizer/tokenizer_config.json";
    snprintf(src, sizeof src, "%s/tiny-q-f32.gguf", dir);
    TEST_CHECK(inf_synth_write(&o, src, &err) == INF_OK, "synth: %s", err.msg);

    static const struct {
        const char *src, *mix, *want;
    } cases[] = {
        {NULL, "q4_0", GOLDEN_DIR "tiny-q-q4_0.gguf"}, /* Q4_0, the tied embedding Q6_K */
        {NULL, "q6_k", GOLDEN_DIR "tiny-q-q6_k.gguf"},
        {GOLDEN_DIR "tiny-b-f32.gguf", "q6_k", GOLDEN_DIR "tiny-b-q6_k.gguf"}, /* widths 64, 128: Q8_0 fallbacks */
        {NULL, "q4_k_m", GOLDEN_DIR "tiny-q-q4_k_m.gguf"}, /* Q4_K, Q6_K in layer 1's attn_v and ffn_down */
        {NULL, "q5_k_m", GOLDEN_DIR "tiny-q-q5_k_m.gguf"},
        {GOLDEN_DIR "tiny-b-f32.gguf", "q4_k_m", GOLDEN_DIR "tiny-b-q4_k_m.gguf"}, /* Q5_0 and Q8_0 fallbacks */
        {GOLDEN_DIR "tiny-b-f32.gguf", "q5_k_m", GOLDEN_DIR "tiny-b-q5_k_m.gguf"}, /* Q5_1 and Q8_0 fallbacks */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[128];
        snprintf(label, sizeof label, "quantize %s to %s", cases[i].src ? cases[i].src : "tiny-q-f32", cases[i].mix);
        test_begin(label);
        const char *mix = cases[i].mix;
        snprintf(out, sizeof out, "%s/out-%zu.gguf", dir, i);
        if (!TEST_CHECK(inf_model_quantize(cases[i].src ? cases[i].src : src, out, mix, 2, NULL, NULL, &err) == INF_OK,
                        "quantize: %s", err.msg))
            continue;
        same_tensors(out, cases[i].want);
    }

    test_begin("refusals");
    snprintf(out, sizeof out, "%s/refused.gguf", dir);
    inf_status st = inf_model_quantize(GOLDEN_DIR "tiny-q-q4_0.gguf", out, "q8_0", 1, NULL, NULL, &err);
    TEST_CHECK(st == INF_ERR_UNSUPPORTED && strstr(err.msg, "tensor '") && strstr(err.msg, "already"),
               "a quantized source: %d %s", (int)st, err.msg);
    st = inf_model_quantize(src, out, "q3_k_s", 1, NULL, NULL, &err);
    TEST_CHECK(st == INF_ERR_INVALID && strstr(err.msg, "q3_k_s"), "an unwritten mix: %d %s", (int)st, err.msg);
    FILE *f = fopen(out, "rb");
    TEST_CHECK(f == NULL, "a refused quantization left %s", out);
    if (f) fclose(f);

    test_tmpdir_remove();
    return test_summary();
}

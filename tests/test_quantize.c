/*
 * test_quantize.c — inf_model_quantize (`inferno quantize`) against
 * llama.cpp's quantizer: the committed goldens tiny-{q,b,l}-MIX.gguf were
 * written by llama_model_quantize() (scripts/gen-quant-golden.sh); the same
 * F32 sources (tiny-q and tiny-l made again here, tiny-b committed)
 * quantized here must give every tensor the same type and the same bytes,
 * and the file the same general.file_type. Also: the refusals (a source
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
    char src[512], src_l[512], out[512];
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

    /* tiny-l-f32: 16 layers, so the per-layer rules pick different layers
     * (use_more_bits: 0, 1, 4, 7, 10, 13, 14, 15; n/8 = 2, n/16 = 1; the
     * first 2 and 4 attn_v), and 4 query heads per KV head (the n_gqa >= 4
     * rules); widths 64, so every K-type falls back and the fallback type
     * tells which type a rule chose. */
    test_begin("synth tiny-l-f32");
    o.n_layer = 16, o.n_embd = 64, o.n_ff = 64, o.n_head = 4, o.n_head_kv = 1, o.head_dim = 16;
    o.n_ctx_train = 512, o.n_vocab = 1024, o.seed = 17, o.name = "tiny-l";
    snprintf(src_l, sizeof src_l, "%s/tiny-l-f32.gguf", dir);
    TEST_CHECK(inf_synth_write(&o, src_l, &err) == INF_OK, "synth: %s", err.msg);

    /* src: 'q' tiny-q-f32 (widths 256: the K-types themselves), 'b'
     * tiny-b-f32 (widths 64, 128, 2 layers: fallbacks), 'l' tiny-l-f32 */
    static const struct {
        char src;
        const char *mix, *want;
    } cases[] = {
        {'q', "q4_0", GOLDEN_DIR "tiny-q-q4_0.gguf"}, /* Q4_0, the tied embedding Q6_K */
        {'q', "q4_1", GOLDEN_DIR "tiny-q-q4_1.gguf"},
        {'q', "q5_0", GOLDEN_DIR "tiny-q-q5_0.gguf"},
        {'q', "q5_1", GOLDEN_DIR "tiny-q-q5_1.gguf"},
        {'q', "iq4_nl", GOLDEN_DIR "tiny-q-iq4_nl.gguf"},
        {'q', "iq4_xs", GOLDEN_DIR "tiny-q-iq4_xs.gguf"},
        {'q', "q2_k", GOLDEN_DIR "tiny-q-q2_k.gguf"}, /* Q3_K attn_v, attn_output, ffn_down */
        {'q', "q3_k_s", GOLDEN_DIR "tiny-q-q3_k_s.gguf"},
        {'q', "q3_k_m", GOLDEN_DIR "tiny-q-q3_k_m.gguf"}, /* Q5_K attn_v, Q4_K attn_output, ffn_down */
        {'q', "q3_k_l", GOLDEN_DIR "tiny-q-q3_k_l.gguf"}, /* Q5_K attn_v, attn_output, ffn_down */
        {'q', "q4_k_s", GOLDEN_DIR "tiny-q-q4_k_s.gguf"}, /* Q5_K attn_v */
        {'q', "q4_k_m", GOLDEN_DIR "tiny-q-q4_k_m.gguf"}, /* Q6_K in layer 1's attn_v and ffn_down */
        {'q', "q5_k_s", GOLDEN_DIR "tiny-q-q5_k_s.gguf"},
        {'q', "q5_k_m", GOLDEN_DIR "tiny-q-q5_k_m.gguf"},
        {'q', "q6_k", GOLDEN_DIR "tiny-q-q6_k.gguf"},
        {'b', "q6_k", GOLDEN_DIR "tiny-b-q6_k.gguf"},     /* Q8_0 fallbacks */
        {'b', "q4_k_m", GOLDEN_DIR "tiny-b-q4_k_m.gguf"}, /* Q5_0 and Q8_0 fallbacks */
        {'b', "q5_k_m", GOLDEN_DIR "tiny-b-q5_k_m.gguf"}, /* Q5_1 and Q8_0 fallbacks */
        {'b', "q2_k", GOLDEN_DIR "tiny-b-q2_k.gguf"},     /* Q4_0 fallbacks */
        {'b', "q3_k_l", GOLDEN_DIR "tiny-b-q3_k_l.gguf"}, /* Q4_0 and Q5_1 fallbacks */
        {'b', "iq4_xs", GOLDEN_DIR "tiny-b-iq4_xs.gguf"}, /* IQ4_NL fallbacks */
        {'l', "q2_k", GOLDEN_DIR "tiny-l-q2_k.gguf"},     /* attn_v Q4_K (n_gqa 4): Q5_0 */
        {'l', "q3_k_m", GOLDEN_DIR "tiny-l-q3_k_m.gguf"}, /* attn_v 0-1, ffn_down 0 Q5_K: Q5_1 */
        {'l', "q4_k_s", GOLDEN_DIR "tiny-l-q4_k_s.gguf"}, /* attn_v 0-3, ffn_down 0-1 Q5_K */
        {'l', "q4_k_m", GOLDEN_DIR "tiny-l-q4_k_m.gguf"}, /* use_more_bits: Q6_K, so Q8_0 */
        {'l', "iq4_xs", GOLDEN_DIR "tiny-l-iq4_xs.gguf"}, /* attn_v (n_gqa 4), ffn_down 0-1 Q5_K */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[128];
        const char *from = cases[i].src == 'q' ? src : cases[i].src == 'l' ? src_l : GOLDEN_DIR "tiny-b-f32.gguf";
        snprintf(label, sizeof label, "quantize tiny-%c-f32 to %s", cases[i].src, cases[i].mix);
        test_begin(label);
        const char *mix = cases[i].mix;
        snprintf(out, sizeof out, "%s/out-%zu.gguf", dir, i);
        if (!TEST_CHECK(inf_model_quantize(from, out, mix, 2, NULL, NULL, &err) == INF_OK,
                        "quantize: %s", err.msg))
            continue;
        same_tensors(out, cases[i].want);
    }

    test_begin("refusals");
    snprintf(out, sizeof out, "%s/refused.gguf", dir);
    inf_status st = inf_model_quantize(GOLDEN_DIR "tiny-q-q4_0.gguf", out, "q8_0", 1, NULL, NULL, &err);
    TEST_CHECK(st == INF_ERR_UNSUPPORTED && strstr(err.msg, "tensor '") && strstr(err.msg, "already"),
               "a quantized source: %d %s", (int)st, err.msg);
    st = inf_model_quantize(src, out, "iq2_xs", 1, NULL, NULL, &err);
    TEST_CHECK(st == INF_ERR_INVALID && strstr(err.msg, "iq2_xs"), "an unwritten mix: %d %s", (int)st, err.msg);
    FILE *f = fopen(out, "rb");
    TEST_CHECK(f == NULL, "a refused quantization left %s", out);
    if (f) fclose(f);

    test_tmpdir_remove();
    return test_summary();
}

/*
 * test_threads.c — the whole forward pass gives bit-identical logits with
 * 1, 2 and 3 threads, on every kernel path this CPU can run
 * (INFERNO_ISA), for every weight type and every KV cache type (q8_0 on
 * tiny-b: a Q8_0 row needs head_dim a multiple of 32, tiny-a's is 16): a
 * prefill long enough for the gemm and flash-attention paths, with logits
 * at every position, then single-token decode steps.
 *
 * Small (the tiny golden models) so that it also runs quickly under
 * ThreadSanitizer, which checks the thread pool and the threaded kernels.
 */
#include "harness.h"
#include "inferno.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROMPT = 12, DECODE_STEPS = 3, N_THREAD_COUNTS = 3 };

/* Logits of the prompt (all positions) then of each decode step, in one array. */
static float *run(const char *path, int threads, inf_kv_type kv, int n_vocab) {
    inf_load_options opt;
    inf_load_options_default(&opt);
    opt.n_threads = threads;
    opt.kv_type = kv;
    opt.use_mmap = false;
    inf_model *m = NULL;
    inf_session *s = NULL;
    inf_error err = {0};
    float *logits = malloc((size_t)(PROMPT + DECODE_STEPS) * (size_t)n_vocab * sizeof(float));
    bool ok = TEST_CHECK(inf_model_load(path, &opt, &m, &err) == INF_OK, "load %s: %s", path, err.msg) &&
              TEST_CHECK(inf_session_new(m, 64, &s, &err) == INF_OK, "session: %s", err.msg);
    int32_t ids[PROMPT];
    for (int i = 0; i < PROMPT; i++) ids[i] = (int32_t)((i * 7919 + 13) % n_vocab);
    ok = ok && TEST_CHECK(inf_session_eval(s, ids, PROMPT, INF_LOGITS_ALL, logits, &err) == INF_OK, "prefill: %s", err.msg);
    for (int step = 0; ok && step < DECODE_STEPS; step++) {
        const int32_t id = (int32_t)((step * 104729 + 5) % n_vocab);
        float *row = logits + (size_t)(PROMPT + step) * (size_t)n_vocab;
        ok = TEST_CHECK(inf_session_eval(s, &id, 1, INF_LOGITS_LAST, row, &err) == INF_OK, "decode: %s", err.msg);
    }
    inf_session_free(s);
    inf_model_free(m);
    if (!ok) {
        free(logits);
        return NULL;
    }
    return logits;
}

int main(void) {
    static const char *isas[] = {"ref", "avx2", "avx512", "avx512+amx", "neon"};
    /* tiny-b (head_dim 64) for the q8_0 KV cache, which tiny-a's 16 cannot hold */
    static const char *models[] = {"tiny-a-f32", "tiny-a-f16", "tiny-a-bf16", "tiny-a-q8_0", "tiny-b-f32"};
    static const inf_kv_type kv_types[] = {INF_KV_F32, INF_KV_F16, INF_KV_Q8_0};
    for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
        setenv("INFERNO_ISA", isas[i], 1);
        for (size_t t = 0; t < sizeof models / sizeof *models; t++) {
            char path[128], what[128];
            snprintf(path, sizeof path, "tests/data/golden/%s.gguf", models[t]);
            inf_model *probe = NULL;
            inf_error err = {0};
            if (inf_model_load(path, NULL, &probe, &err) == INF_ERR_UNSUPPORTED) {
                printf("%s: not supported on this CPU, skipped\n", isas[i]);
                break;
            }
            if (!TEST_CHECK(probe != NULL, "load %s: %s", path, err.msg)) continue;
            inf_model_info info;
            inf_model_get_info(probe, &info);
            const int n_vocab = info.n_vocab, head_dim = info.head_dim;
            TEST_CHECK(strcmp(info.isa, isas[i]) == 0, "INFERNO_ISA=%s gave %s", isas[i], info.isa);
            inf_model_free(probe);
            for (size_t kv = 0; kv < sizeof kv_types / sizeof *kv_types; kv++) {
                if (kv_types[kv] == INF_KV_Q8_0 && head_dim % 32 != 0) continue;
                snprintf(what, sizeof what, "%s %s kv=%s", isas[i], models[t], inf_kv_type_name(kv_types[kv]));
                test_begin(what);
                const size_t n = (size_t)(PROMPT + DECODE_STEPS) * (size_t)n_vocab;
                float *one = run(path, 1, kv_types[kv], n_vocab);
                for (int threads = 2; one && threads <= N_THREAD_COUNTS; threads++) {
                    float *other = run(path, threads, kv_types[kv], n_vocab);
                    TEST_CHECK(other && memcmp(one, other, n * sizeof(float)) == 0,
                               "%s: logits with %d threads differ from 1 thread", what, threads);
                    free(other);
                }
                free(one);
            }
        }
    }
    unsetenv("INFERNO_ISA");
    return test_summary();
}

/*
 * model.h — the loaded Qwen3 model (weights bound to GGUF tensors,
 * validated hyperparameters) and the session (one sequence with its
 * contiguous KV cache and scratch buffers). Internal to src/model/.
 */
#ifndef INF_MODEL_H
#define INF_MODEL_H

#include "backend/ops.h"
#include "inferno.h"
#include "io/gguf.h"

typedef struct qwen3_config {
    int n_layer;
    int n_embd;     /* hidden size */
    int n_ff;       /* feed-forward size */
    int n_head;     /* query heads */
    int n_head_kv;  /* key/value heads; divides n_head */
    int head_dim;   /* attention.key_length (== value_length) */
    int n_vocab;    /* rows of token_embd */
    int n_ctx_train;
    float rope_freq_base;
    float rms_norm_eps;
    int q_dim;      /* n_head * head_dim */
    int kv_dim;     /* n_head_kv * head_dim */
} qwen3_config;

typedef struct qwen3_layer {
    float *attn_norm;    /* [n_embd] f32 (owned copy) */
    inf_weight wq;       /* [q_dim][n_embd] */
    inf_weight wk;       /* [kv_dim][n_embd] */
    inf_weight wv;       /* [kv_dim][n_embd] */
    float *q_norm;       /* [head_dim] */
    float *k_norm;       /* [head_dim] */
    inf_weight wo;       /* [n_embd][q_dim] */
    float *ffn_norm;     /* [n_embd] */
    inf_weight ffn_gate; /* [n_ff][n_embd] */
    inf_weight ffn_up;   /* [n_ff][n_embd] */
    inf_weight ffn_down; /* [n_embd][n_ff] */
} qwen3_layer;

struct inf_model {
    char *path;
    gguf_file *file;
    inf_load_options opt;
    qwen3_config cfg;
    inf_weight token_embd; /* [n_vocab][n_embd] */
    float *output_norm;    /* [n_embd] */
    inf_weight output;     /* [n_vocab][n_embd]; a copy of token_embd when tied */
    bool tied_output;
    qwen3_layer *layers;   /* [n_layer] */
    inf_dtype weight_type;
    uint64_t n_params;
    /* Hadamard rotations around a quantized KV cache (ops.h, inf_kv_view),
     * block sizes or 0 when off: q and k after RoPE, v, and the attention
     * output before Wo. */
    int kv_rot_qk;          /* the largest power of two dividing head_dim */
    int kv_rot_v;           /* 64 */
    const inf_ops *backend; /* the kernels in use */
    const inf_ops *ops;    /* what the forward pass calls: backend, or the tracer around it */
    inf_ops *tracer;       /* non-NULL when tracing; wraps the backend */
    inf_tokenizer *tokenizer; /* NULL when the file has none */
};

/* Most tokens one forward pass takes; longer evaluations are split. */
enum { QWEN3_UBATCH = 512 };

struct inf_session {
    inf_model *model;
    int n_ctx;
    int n_past;
    size_t kv_layer_elems;  /* n_ctx * kv_dim */
    void *k_cache;          /* [n_layer][n_head_kv][n_ctx][head_dim] of kv type */
    void *v_cache;          /* [n_layer][n_head_kv][n_ctx][head_dim] */
    /* activations for up to n_cap <= QWEN3_UBATCH tokens (grown by prefill, never by decode) */
    int n_cap;
    float *x;        /* [n_cap][n_embd] residual stream */
    float *xn;       /* [n_cap][n_embd] normed input / projection out */
    float *q;        /* [n_cap][q_dim] */
    float *k;        /* [n_cap][kv_dim] */
    float *v;        /* [n_cap][kv_dim] */
    float *attn;     /* [n_cap][q_dim] */
    float *gate;     /* [n_cap][n_ff] */
    float *up;       /* [n_cap][n_ff] */
    void *scratch;   /* [n_cap][max(n_embd, q_dim, n_ff)] f32: rounded activations */
};

/* Runs n tokens at positions n_past.. through the model (qwen3.c). */
inf_status qwen3_forward(inf_session *s, const int32_t *tokens, int n, inf_logits_mode mode,
                         float *logits, inf_error *err);

#endif /* INF_MODEL_H */

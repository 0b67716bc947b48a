/*
 * model.h — the loaded Qwen3 model (weights bound to GGUF tensors,
 * validated hyperparameters), the forward pass over a batch of sequences
 * with paged KV caches (qwen3.c), and the session (one sequence with a
 * contiguous cache, session.c). Internal to the library.
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
    /* RoPE scaling as the file states it (qwen3.rope.scaling.*), then as
     * used, with the load options' overrides: */
    inf_rope_scaling rope_scaling; /* type; absent with a factor: linear (llama.cpp's default) */
    float rope_scale;              /* factor; 0 when absent */
    int rope_orig_ctx;             /* original_context_length; n_ctx_train when absent */
    float rope_attn_factor;        /* attn_factor; 1 when absent */
    inf_rope rope;                 /* the frequencies every layer's RoPE uses (ops.h) */
    int n_ctx_max;                 /* longest context: n_ctx_train, or rope_orig_ctx * factor if longer */
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
    /* When token_embd's rows lie in a file's mapping: that file (m->file
     * owns the descriptor) and their offset in it; the lookups read them
     * with pread (qwen3.c). Else -1, and the lookups read token_embd.data. */
    int embd_fd;
    uint64_t embd_offset;
    qwen3_layer *layers;   /* [n_layer] */
    inf_dtype weight_type;
    uint64_t n_params;
    uint64_t weight_bytes; /* of the weights in use: the file's, less what quantizing on load replaced */
    void *quant_arena;     /* matrices quantized on load (quantize_load.c), or NULL */
    size_t quant_arena_bytes;
    void *packed_arena;    /* the matrices repacked for the backend (model.c pack_weights), or NULL */
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

/* Quantizing on load to m->opt.quantize_type (INF_DTYPE_Q8_0; quantize_load.c).
 * model_quantizes: whether w is still to be quantized (an F32/F16/BF16
 * matrix, m->opt.quantize set). model_quantized_shape: w as it will be
 * once quantized (itself if it is not to be; data NULL), false when its
 * columns do not fit the type's blocks. model_quantize_packed: w
 * quantized straight into the backend's packed layout at dst (ops.h
 * weight_pack_made, dst weight_packed_bytes of the quantized shape) and
 * rebound packed only (data NULL); false (w unchanged) when the backend
 * cannot. model_quantize_weights: the matrices still to be quantized, and
 * with copy_others the other unpacked ones as they are (token_embd only if
 * it is multiplied: the tied head, not packed), into m->quant_arena, and
 * rebinds them. */
bool model_quantizes(const inf_model *m, const inf_weight *w);
bool model_quantized_shape(const inf_model *m, const inf_weight *w, inf_weight *out);
bool model_quantize_packed(inf_model *m, inf_weight *w, void *dst);
inf_status model_quantize_weights(inf_model *m, bool copy_others, inf_error *err);

/* Most tokens one forward pass takes; longer evaluations are split. */
enum { QWEN3_UBATCH = 512 };

/* A KV store: one pool of blocks, each holding block_size positions of every
 * layer's K and V, allocated by the model's backend. The blocks lie in runs
 * of 2^run_shift; layout of k and v (elements of kv_type; ops.h,
 * inf_kv_view): [n_blocks / run][n_layer][n_head_kv][run][block_size][head_dim],
 * so a head's rows of consecutive blocks of a run lie together and decode
 * attention over them streams one contiguous run per head, as over a
 * session's cache (one block: [n_layer][n_head_kv][n_ctx][head_dim]). The
 * engine's pool hands out its blocks in order (kv_cache.h), so a
 * sequence's blocks are mostly consecutive; with runs of one block the
 * reads broke at every block (16 KiB a head for the 0.6B's f16 cache) and
 * the engine's decode after 2044 took ~9% longer (kv_cache.h).
 * Memory is readied for writing before the kernels first write it (an
 * engine's block when it is first taken, a session's next positions as it
 * reaches them), in a few system calls rather than a page fault per page
 * under the kernels: with faults a fresh 0.6B session's prefill of 511
 * tokens took ~150 ms longer than the same prefill into a used cache (Zen 5
 * VM, 22k faults). */
typedef struct qwen3_kv {
    void *k, *v;
    int block_size;
    int n_blocks;
    int run_shift; /* blocks per run: 2^run_shift */
} qwen3_kv;

/* The layer-`layer` K (or V) view of a sequence with block table `blocks`. */
inf_kv_view qwen3_kv_view(const inf_model *m, const qwen3_kv *kv, void *base, int layer, const int32_t *blocks);
/* Bytes of k (or v) for a pool of n_blocks blocks of block_size positions
 * in runs of 2^run_shift (the last run whole). */
size_t qwen3_kv_bytes(const inf_model *m, int block_size, int n_blocks, int run_shift);
/* Readies blocks [first, first + count) of k and v for writing (ops.h,
 * buffer_prefault): before their first use. */
void qwen3_kv_prefault(const inf_model *m, const qwen3_kv *kv, int first, int count);
/* The same for the rows of positions [p0, p1) of a sequence with block
 * table `blocks`: every layer's and head's (one range each per block). */
void qwen3_kv_prefault_positions(const inf_model *m, const qwen3_kv *kv, const int32_t *blocks, int p0, int p1);
/* Copies block src's rows of every layer, K and V, into block dst. */
void qwen3_kv_copy_block(const inf_model *m, const qwen3_kv *kv, int32_t dst, int32_t src);

/* One sequence's rows in a forward batch: n consecutive rows at positions
 * pos0 .. pos0 + n - 1, its KV rows read and written through its block
 * table (which must cover pos0 + n positions). */
typedef struct qwen3_seq_rows {
    int n;
    int pos0;
    int rope_offset;       /* RoPE positions are pos0 + rope_offset + i (a session's window; else 0) */
    bool decode;           /* a generated token (n == 1): the decode kernels */
    const int32_t *blocks; /* block table */
    int n_logits;          /* rows wanting logits: 0, 1 (the last) or n (all) */
} qwen3_seq_rows;

/* Activations for up to n_cap rows. Owned by one thread at a time. */
typedef struct qwen3_work {
    int n_cap;
    float *x;        /* [n_cap][n_embd] residual stream */
    float *xn;       /* [n_cap][n_embd] normed input / projection out */
    void *phase;     /* the one buffer of q, k, v, attn, and of gate, up (qwen3.c) */
    float *q;        /* [n_cap][q_dim] in phase */
    float *k;        /* [n_cap][kv_dim] in phase */
    float *v;        /* [n_cap][kv_dim] in phase */
    float *attn;     /* [n_cap][q_dim] in phase */
    float *gate;     /* [n_cap][n_ff] in phase, over q, k, v and attn */
    float *up;       /* [n_cap][n_ff] in phase */
    void *scratch;   /* [n_cap][max(n_embd, q_dim, n_ff)] f32: rounded activations */
    int32_t *pos;    /* [n_cap] position of each row */
    int32_t *keep;   /* [n_cap] rows that go on through the last layer */
    /* [n_cap] the leading decode sequences' attention shapes and caches (attn_decode_seqs) */
    inf_attn_shape *dec_shapes;
    inf_kv_view *dec_k, *dec_v;
    void *embd_row;  /* [token_embd.row_bytes] a row read from the file (model.h embd_fd) */
} qwen3_work;

/* Makes room for n rows (grows, never shrinks); the buffers come from the
 * model's backend (ops.h, buffer_alloc). */
inf_status qwen3_work_reserve(const inf_model *m, qwen3_work *w, int n, inf_error *err);
void qwen3_work_free(const inf_model *m, qwen3_work *w);

/* Runs one batch through the model: the rows of n_seqs sequences, the
 * decode sequences first (then the first n_decode rows are decode rows; ops.h,
 * matmul), tokens[sum of n] already checked against the vocabulary, at most
 * w->n_cap rows. Writes logits[sum of n_logits][n_vocab], the sequences'
 * wanted rows in order. In the last layer, a sequence's only logit row runs
 * as a decode row when every kept row before it does (put sequences that
 * keep all their rows last). */
void qwen3_forward(const inf_model *m, qwen3_work *w, const qwen3_kv *kv, const int32_t *tokens,
                   const qwen3_seq_rows *seqs, int n_seqs, float *logits);

/* One sequence with a contiguous cache: a KV store of one block as long as
 * its context (session.c). */
struct inf_session {
    inf_model *model;
    int n_ctx;
    int n_past;
    int rope_offset; /* RoPE position of cache row 0 (inf_session_set_rope_offset) */
    qwen3_kv kv;
    int n_ready;     /* positions readied for writing (qwen3_kv_prefault_positions), from 0 */
    qwen3_work work;
};

#endif /* INF_MODEL_H */

/*
 * ops.h — the backend: a table of operations the Qwen3 forward pass is
 * written against.
 *
 * Every op has a scalar reference implementation (ref.c) that is always
 * compiled and is the correctness oracle. A faster backend starts from the
 * reference table and overrides only what it does better; the model code
 * never changes. Every op receives the table it was called through (self),
 * so a backend can reach its own state (thread pool, ...) and the tracing
 * wrapper (trace.c) can forward to the table it wraps.
 *
 * Numerics follow llama.cpp so logits agree with it: a matrix product
 * first rounds the f32 activations to the weight's dot type — Q8_0 blocks
 * for Q8_0 weights (then an integer dot per block), f16 for F16 weights,
 * bf16 for BF16 weights, and for the GGUF block types (core/quant.h) Q8_0,
 * Q8_1 or Q8_K blocks as llama.cpp pairs them (integer dots per block or
 * super-block) — and accumulates in f32 (the reference sums the
 * f32/f16/bf16 products in double, as ggml's generic path: see ref.c).
 *
 * Layouts (row-major, innermost last):
 *   activations   x[n_tok][dim] f32
 *   weight        W[rows][cols] in its dtype; y = x · W^T gives y[n_tok][rows]
 *   q             [n_tok][n_head][head_dim]
 *   KV cache      rows of head_dim elements per (pos, KV head), f32, f16 or
 *                 Q8_0, placed as inf_kv_view says
 */
#ifndef INF_OPS_H
#define INF_OPS_H

#include "inferno.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* RoPE frequencies as ggml's rope_yarn computes them (llama.cpp's
 * ggml_rope_ext with NeoX pairs). Pair i of a token at position p turns by
 *   theta_e = p * base^(-2i/head_dim)           (extrapolated: the trained angle)
 *   theta_i = freq_scale * theta_e              (interpolated: linear scaling)
 *   theta   = theta_i * (1 - r) + theta_e * r,  r = ramp(i) * ext_factor
 * ramp(i) = 1 - clamp((i - corr_lo) / max(0.001, corr_hi - corr_lo), 0, 1):
 * 1 for the fast-turning pairs below corr_lo (kept as trained), 0 above
 * corr_hi (interpolated). cos and sin are multiplied by mscale, and YaRN
 * (ext_factor != 0) multiplies mscale by 1 + 0.1 ln(1/freq_scale) once more.
 * No scaling: freq_scale 1, ext_factor 0, mscale 1 (the plain rotation, bit
 * for bit). Filled by inf_rope_init from the model's keys. */
typedef struct inf_rope {
    float freq_base;    /* qwen3.rope.freq_base */
    float freq_scale;   /* 1 / rope.scaling.factor; 1 unscaled */
    float ext_factor;   /* YaRN's ramp weight: 1 for yarn, 0 otherwise */
    float mscale;       /* llama.cpp's attn_factor as it passes it to ggml_rope_ext */
    float corr_dims[2]; /* the ramp's bounds in pairs (ggml_rope_yarn_corr_dims) */
} inf_rope;

/* Fills r as llama.cpp's context does for a model (llama_context's
 * constructor and ggml_rope_yarn_corr_dims): kind, factor (>= 1 scales; 0 or
 * 1: none), n_ctx_orig the context the model was trained at
 * (rope.scaling.original_context_length), attn_factor the file's
 * rope.scaling.attn_factor (1 when absent), YaRN's beta_fast 32 and
 * beta_slow 1 (llama.cpp's defaults for Qwen3, which reads no other). */
void inf_rope_init(inf_rope *r, int head_dim, float freq_base, inf_rope_scaling kind, float factor,
                   int n_ctx_orig, float attn_factor);

/* The rope table of one position: cs[0 .. head_dim/2) the cos and
 * cs[head_dim/2 .. head_dim) the sin of each pair's angle, times mscale.
 * theta_e is built as ggml builds it: (float)pos, multiplied by
 * powf(base, -2/head_dim) once per pair, in f32 (at large positions this
 * recurrence is ~1e-3 rad from the exact angle; matching it matches
 * llama.cpp). Every backend's RoPE uses these values (ref.c). */
void inf_rope_angles(const inf_rope *r, int head_dim, int32_t pos, float *cs);

/* A 2-D weight matrix as stored in the file. */
typedef struct inf_weight {
    const char *name;  /* tensor name, for errors and traces */
    inf_dtype type;
    int64_t rows;      /* output features (GGUF ne[1]) */
    int64_t cols;      /* input features  (GGUF ne[0]) */
    size_t row_bytes;  /* bytes of one row */
    const void *data;  /* rows * row_bytes */
    /* NULL, or the same rows repacked once by the backend that will multiply
     * them (inf_ops.weight_pack), in the layout its kernels read fastest;
     * packed_format tags the layout (backend-defined, 0 for none), so that
     * another backend ignores it and reads data. The memory belongs to
     * whoever asked for the packing. */
    const void *packed;
    int packed_format;
} inf_weight;

/* Writes rows [r0, r1) of a weight being made (inf_ops.weight_pack_made)
 * to rows, the weight's row_bytes apart. */
typedef void (*inf_weight_rows_fn)(void *ctx, int64_t r0, int64_t r1, void *rows);

/* One layer's K or V cache of one sequence as the attention ops read it:
 * paged. Positions come in blocks of block_size; the sequence's block table
 * maps its i-th block to block b = blocks[i] of data, and the head_dim
 * elements of (position p, KV head h) start at element
 *   b * block_stride + (b >> run_shift) * run_skip
 *   + (p % block_size) * pos_stride + h * head_stride
 * of data (inf_kv_elem). Blocks come in runs of 2^run_shift, the blocks of
 * a run block_stride apart and each run run_skip further on (0 and 0: one
 * block after another). The engine's pool keeps each head's rows of a run
 * together ([run][layer][n_head_kv][run blocks][block_size][head_dim]:
 * pos_stride = head_dim, block_stride = block_size * head_dim, head_stride
 * = the run's rows of a head; model.h, qwen3_kv), so decode attention over
 * a sequence's consecutive blocks streams one contiguous run per head. A
 * contiguous cache is one block as long as the context (blocks = {0});
 * tests also use [pos][n_head_kv][head_dim] layouts and shuffled tables.
 *
 * Strides count elements for every type. A Q8_0 cache (INF_KV_Q8_0) needs
 * head_dim a multiple of 32: each row is head_dim/32 inf_block_q8_0 blocks,
 * so element e (a multiple of 32 for every row start) lies at byte
 * e / 32 * 34 (inf_kv_type_bytes). kv_store quantizes a row with
 * inf_quantize_row_q8_0, as llama.cpp's f32 -> q8_0 copy does; attention
 * follows llama.cpp's CPU flash attention for it: the query row of a head is
 * quantized the same way and q·k is the Q8_0 x Q8_0 dot (integer per
 * block, times d_k * d_q, blocks summed in f32), and V rows are dequantized
 * to f32 and accumulated in f32.
 *
 * Around a Q8_0 cache the model rotates, as llama.cpp does by default (its
 * attn_rot_k / attn_rot_v, PR 21038), when head_dim is a multiple of 64:
 * q and k after RoPE by the hadamard op over blocks of the largest power of
 * two dividing head_dim (128 for head_dim 128), v by 64-element blocks, and
 * the attention output back by 64-element blocks before Wo. q·k and the
 * softmax-weighted sum of v are unchanged in exact arithmetic; the rotation
 * spreads outlier channels over a block, so the int8 rounding of the cached
 * rows loses less. The ops see rotated rows and know nothing of it. */
typedef struct inf_kv_view {
    void *data;
    inf_kv_type type;
    size_t pos_stride;     /* elements between consecutive positions of a head in a block */
    size_t head_stride;    /* elements between consecutive KV heads at a position */
    size_t block_stride;   /* elements between consecutive blocks of a run */
    int block_size;        /* positions per block, >= 1 */
    const int32_t *blocks; /* block table: position p lies in block blocks[p / block_size] */
    unsigned run_shift;    /* blocks per run: 2^run_shift */
    size_t run_skip;       /* elements added per run (beyond its blocks' block_stride each) */
} inf_kv_view;

/* A contiguous cache as one block: block_size INF_KV_CONTIGUOUS with the
 * block table inf_kv_single_block ({0}). */
enum { INF_KV_CONTIGUOUS = 1 << 30 };
extern const int32_t inf_kv_single_block[1];

/* Element offset of the row of (position p, KV head h) in a view. */
static inline size_t inf_kv_elem(const inf_kv_view *c, int p, int h) {
    const int b = p / c->block_size;
    const size_t block = (size_t)c->blocks[b];
    return block * c->block_stride + (block >> c->run_shift) * c->run_skip +
           (size_t)(p - b * c->block_size) * c->pos_stride + (size_t)h * c->head_stride;
}

/* The largest head_dim the attention ops accept (the loader's bound). */
enum { INF_MAX_HEAD_DIM = 1024 };

/* Geometry of one attention call. Query token i (0-based in this call) sits
 * at position pos0 + i and attends to cached positions 0 ..= pos0 + i. */
typedef struct inf_attn_shape {
    int n_tok;
    int pos0;
    int n_head;
    int n_head_kv;  /* query head h uses KV head h / (n_head / n_head_kv) */
    int head_dim;   /* <= INF_MAX_HEAD_DIM */
    float scale;    /* 1/sqrt(head_dim) */
} inf_attn_shape;

/* How a buffer is written: in runs of megabytes (a pass's activations,
 * an engine KV block of every layer), or a little at a time all over (a
 * session's KV cache: one row of every head of every layer per token,
 * whose memory should grow with the sequence, not at its first token). */
typedef enum inf_buffer_use { INF_BUFFER_RUNS, INF_BUFFER_SCATTERED } inf_buffer_use;

typedef struct inf_ops inf_ops;

struct inf_ops {
    const char *name; /* "ref", "avx2", "avx512", "avx512+amx", "neon", "trace(...)" */

    /* The buffers the kernels read and write (activations, the KV caches)
     * come from here, so that a device backend can place them in its own
     * memory; weights stay where the loader put them. 64-byte aligned;
     * NULL when out of memory. buffer_free takes NULL. `use` says how the
     * buffer is written (host memory puts large INF_BUFFER_RUNS buffers on
     * huge pages). */
    void *(*buffer_alloc)(const inf_ops *self, size_t bytes, inf_buffer_use use);
    void (*buffer_free)(const inf_ops *self, void *p);
    /* Readies bytes [p, p + n) of a buffer for writing now, contents
     * unchanged: host memory maps its pages in one system call and a store
     * to each (inf_prefault_write) instead of a page fault at a time as
     * the kernels first write them: memory about to be written (a KV
     * block, a session's next positions, a pass's activations). NULL where
     * there is nothing to do. */
    void (*buffer_prefault)(const inf_ops *self, void *p, size_t n);

    /* y[n][w->rows] = x[n][w->cols] · W^T. scratch holds the rounded
     * activations: at least n * w->cols * sizeof(float) bytes, 64-aligned.
     *
     * Batch invariance: the first n_decode rows are decode rows, the others
     * prefill rows. A row's result is the same float whatever n and
     * n_decode are, and wherever the row falls among them: the kernel and
     * its summation order depend on the row's kind alone (a backend runs
     * decode rows on its decode kernel and prefill rows on its prefill
     * kernel, however few), so a prompt cut into other chunks (a
     * prefix-cache hit) gives the same floats. Where a weight type's
     * decode and prefill kernels give bit-identical rows, any row may take
     * either, by count. */
    void (*matmul)(const inf_ops *self, const inf_weight *w, const float *x, int n, int n_decode, float *y,
                   void *scratch);

    /* Optional (both NULL: the backend reads every weight as loaded).
     * weight_packed_bytes: the bytes of w repacked for this backend's
     * matmul, 0 when w's type has no packed layout here. weight_pack
     * writes them at dst (64-byte aligned host memory of that size, which
     * the caller keeps while w is used) and sets w->packed and
     * w->packed_format; false (w unchanged) when the type has none or
     * memory ran out. A packed weight's matmul gives the floats of the
     * unpacked one, bit for bit; it no longer reads w->data. */
    size_t (*weight_packed_bytes)(const inf_ops *self, const inf_weight *w);
    bool (*weight_pack)(const inf_ops *self, inf_weight *w, void *dst);
    /* Optional (NULL where weight_pack is): weight_pack for a weight whose
     * rows are made while it is packed (quantized on load), so that the
     * unpacked matrix never exists whole. w gives the type and shape
     * (w->data is not read); make_rows(ctx, r0, r1, rows) writes rows
     * [r0, r1) of it to rows, w->row_bytes apart. The backend calls it for
     * disjoint runs of rows on its threads, concurrently, and packs each run
     * at once; the result is weight_pack's of the whole made weight. */
    bool (*weight_pack_made)(const inf_ops *self, inf_weight *w, inf_weight_rows_fn make_rows, void *ctx,
                             void *dst);
    /* Optional (NULL: call inf_quantize_row_q8_0): x[n], n a multiple of
     * 32, quantized to Q8_0 blocks at y exactly as inf_quantize_row_q8_0
     * quantizes them, on the calling thread (for quantizing weights on
     * load; the ops quantize activations themselves). */
    void (*quantize_q8_0)(const inf_ops *self, const float *x, void *y, int64_t n);

    /* matmul of the same x with `count` weights (Q, K and V; gate and up):
     * y[i][n][w[i]->rows] = x · w[i]^T, each exactly as matmul computes it;
     * a backend may prepare x once and split all the rows in one dispatch. */
    void (*matmul_group)(const inf_ops *self, const inf_weight *const *w, int count, const float *x, int n,
                         int n_decode, float *const *y, void *scratch);
    /* Optional (NULL: no hint): the next matmul_group (count > 1) or matmul
     * is of w[0 .. count) for n decode rows, and the caller runs other ops
     * first. A backend's idle threads may start reading the weights
     * meanwhile. A hint only: nothing computed depends on it. */
    void (*matmul_ahead)(const inf_ops *self, const inf_weight *const *w, int count, int n);
    /* One line on how the kernels read their weights ahead as tuned so far
     * (cpu.c's stream tuner: the hint in use, the trials each hint won),
     * into buf[n]; "" where nothing is tuned. For traces (trace.c prints
     * it). NULL: nothing to report. */
    void (*stream_report)(const inf_ops *self, char *buf, size_t n);

    /* y[r] = x[r] * w / sqrt(mean(x[r]^2) + eps) for each of n_rows rows of
     * length dim; y may alias x. Used for the block norms (dim = n_embd)
     * and for QK-norm (rows = heads, dim = head_dim). */
    void (*rmsnorm)(const inf_ops *self, float *y, const float *x, const float *w, int n_rows,
                    int dim, float eps);

    /* NeoX RoPE in place on x[n_tok][n_heads][head_dim]: dims i and
     * i + head_dim/2 of token t rotate by the angle of pair i at pos[t]
     * (inf_rope_angles: pos[t] * base^(-2i/head_dim), YaRN-scaled when the
     * model says so): x0' = x0*c - x1*s, x1' = x0*s + x1*c with c and s
     * the table's (mscale included). Tokens of several sequences may share
     * a call. */
    void (*rope_neox)(const inf_ops *self, float *x, int n_tok, int n_heads, int head_dim,
                      const int32_t *pos, const inf_rope *rope);

    /* In place on each row of x[n_rows][n], n a power of two: x = H_n · x,
     * H_n the normalized Sylvester-Hadamard matrix, H_n[i][j] =
     * (-1)^popcount(i & j) / sqrt(n), symmetric and its own inverse. Computed
     * as the fast Walsh-Hadamard transform in the order of ggml's CPU fwht
     * (every element times 1/sqrtf(n) first, then the butterflies
     * (a, b) -> (a + b, a - b) at spans 1, 2, 4, ..., n/2), so each result is
     * the same float as llama.cpp's. Rotates q, k, v and the attention output
     * around a Q8_0 KV cache (see inf_kv_view). */
    void (*hadamard)(const inf_ops *self, float *x, int n_rows, int n);

    /* out[i] = silu(gate[i]) * up[i]; out may alias gate. */
    void (*swiglu)(const inf_ops *self, float *out, const float *gate, const float *up, size_t n);

    /* y[i] += x[i] */
    void (*add)(const inf_ops *self, float *y, const float *x, size_t n);

    /* out[t][cols] = row ids[t] of emb, dequantized to f32. */
    void (*embed)(const inf_ops *self, const inf_weight *emb, const int32_t *ids, int n, float *out);

    /* Stores k and v ([n_tok][n_head_kv][head_dim] f32) at positions
     * pos0 .. pos0+n_tok-1 of the caches, converting to the cache type. */
    void (*kv_store)(const inf_ops *self, const inf_kv_view *k_cache, const inf_kv_view *v_cache,
                     const float *k, const float *v, int n_tok, int pos0, int n_head_kv, int head_dim);

    /* Decode attention for one token (shape->n_tok == 1): fused, one pass over
     * the cached rows per head with an online softmax.
     * q[n_head][head_dim] -> out[n_head][head_dim]. */
    void (*attn_decode)(const inf_ops *self, const inf_attn_shape *shape, const float *q,
                        const inf_kv_view *k, const inf_kv_view *v, float *out);

    /* One decode token of each of n_seqs sequences in one call: for each s,
     * kv_store of k[s] and v[s] ([n_head_kv][head_dim]) at shapes[s].pos0
     * of k_caches[s] and v_caches[s], then attn_decode of q[s]
     * ([n_head][head_dim]) into out[s], with the results of those calls bit
     * for bit. q, k, v and out are [n_seqs][...] rows; the shapes differ
     * only in pos0. (The engine's decode rows: one dispatch for all.) */
    void (*attn_decode_seqs)(const inf_ops *self, int n_seqs, const inf_attn_shape *shapes, const float *q,
                             const float *k, const float *v, const inf_kv_view *k_caches,
                             const inf_kv_view *v_caches, float *out);

    /* Prefill attention (flash): keys/values in tiles of 64, running max,
     * sum and output per query row; the causal mask is a loop bound. A query
     * row's result depends only on its position and the cache, never on how
     * the rows of a sequence are split into calls (pos0, n_tok): chunked
     * prefill gives the same floats as one call.
     * q[n_tok][n_head][head_dim] -> out[n_tok][n_head][head_dim]. */
    void (*attn_prefill)(const inf_ops *self, const inf_attn_shape *shape, const float *q,
                         const inf_kv_view *k, const inf_kv_view *v, float *out);
};

/* The scalar reference table (always compiled). */
const inf_ops *inf_ops_ref(void);

/* Materialized attention: the full score matrix, masked, softmaxed, times V.
 * A test reference only; same contract as attn_prefill. Allocates the
 * n_tok x (pos0 + n_tok) score matrix: INF_ERR_NOMEM when that fails. */
inf_status inf_attn_materialized(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                                 const inf_kv_view *v, float *out);

/* ---- The tracing wrapper (trace.c) -------------------------------------
 * A table whose every op forwards to `inner` and records, per op, the calls,
 * the time spent (CLOCK_MONOTONIC) and estimates of the bytes moved and the
 * flops done, so a report can show GB/s and GFLOP/s; matmul also per weight
 * name ("ffn_down", a group's "attn_q+attn_k+attn_v", calls with prompt rows
 * as "ffn_down, prompt"). The counters are relaxed atomics and the weight
 * names are added under a lock: ops may be called from any thread. */

typedef struct inf_op_stats {
    uint64_t calls;
    uint64_t total_ns;
    uint64_t bytes; /* estimated bytes read + written (weights, activations, cache) */
    uint64_t flops; /* estimated floating-point (or integer dot) operations; 0 if not counted */
} inf_op_stats;

/* NULL when out of memory. inner must outlive the wrapper. */
inf_ops *inf_ops_trace_new(const inf_ops *inner);
/* A table sorted by time: op, calls, total ms, share %, ms/call, GB/s, GFLOP/s,
 * matmul's lines per weight under its own. Does nothing when `traced` is
 * not a table from inf_ops_trace_new. */
void inf_ops_trace_print(const inf_ops *traced, FILE *out);
/* Counters of one op by its field name ("matmul", "attn_prefill", ...), or
 * of matmul's calls on one weight as "matmul:NAME" (the name as reported);
 * false when the name is unknown or `traced` is not a trace table. */
bool inf_ops_trace_get(const inf_ops *traced, const char *op, inf_op_stats *out);
/* Zeroes all counters (e.g. after a warm-up). */
void inf_ops_trace_reset(inf_ops *traced);
void inf_ops_trace_free(inf_ops *traced);

#endif /* INF_OPS_H */

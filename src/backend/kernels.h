/*
 * kernels.h — the table of one ISA's kernels, as the CPU backend (cpu.c)
 * calls them. Internal to src/backend/.
 *
 * A kernel computes one task's share of an op: a range of weight rows, of
 * query tokens, of elements; cpu.c splits the op into tasks and runs them
 * on the pool. Every member may be NULL, and the backend then runs the
 * reference op of ref.c (threaded where it can) instead, so an ISA provides
 * only what it does better.
 *
 * Thread-count independence: a kernel must compute each output element by
 * the same operations wherever the element falls in the task's range (no
 * special remainder arithmetic), so any split gives bit-identical results.
 * Token-count independence: each matmul kernel computes a token's row by
 * the same operations however many tokens the call holds and wherever
 * the token falls in a tile (the tile's token count is a compile-time
 * variant of the same sums, or a hardware tile whose rows are
 * independent). The matvec and the gemm sum F32/F16/BF16 (and, on x86,
 * the 32-block types) in different orders, so such a row may differ
 * between the two by rounding (~1e-6 relative): cpu.c runs their decode
 * rows on the matvec and prefill rows on the gemm whatever their count
 * (ops.h, matmul: batch invariance). Q8_0 (matvec_exact_q8_0, every ISA),
 * the super-block types (everywhere) and NEON's 32-block types
 * (matvec_exact_quant) are ref.c's bits in every kernel, so any kernel
 * may take any of their rows.
 *
 * Numerics against ref.c (the budgets tests/test_kernels.c enforces):
 *   - matmul Q8_0: activations quantized exactly as inf_quantize_row_q8_0,
 *     integer block dots exact; matvec and gemm apply the scales and sum
 *     the blocks in ref's order, rounding as ref does (bit-identical).
 *   - matmul of the GGUF block types (core/quant.h): activations rounded
 *     as ref.c rounds them. Q2_K..Q6_K and IQ4_XS: exact super-block
 *     integer sums scaled and summed in ref.c's order, bit-identical on
 *     every kernel (matvec and gemm). Q4_0..Q5_1 and IQ4_NL: the gemms are
 *     bit-identical, and so are NEON's matvecs (matvec_exact_quant); the
 *     x86 matvecs sum their f32 lanes in llama.cpp's vec_dot order (AVX2,
 *     and AVX-512 for Q4_1/Q5_1) or in block pairs, within the matvec
 *     budget below.
 *   - matmul F32/F16/BF16: the same rounded operands and exact products,
 *     summed in f32 lanes instead of a double; VDPBF16PS also flushes bf16
 *     subnormals (below 1e-38) to zero.
 *     Both: |y - ref| <= (cols/8 + 16) * 2^-24 * sum |w_i x_i|. The AMX
 *     bf16 tiles sum each dot in one chain of f32 additions and treat bf16
 *     subnormals as zero; the same budget holds (worst 0.18 of it measured).
 *   - attention: scores and outputs summed in f32 lanes, exp by a
 *     polynomial within 2 ulp of expf, softmax rescaled per tile of 64 keys
 *     (ref's decode rescales per key): |o - ref| <= 2e-6 * max |v|. Q8_0
 *     caches: the same quantized query and integer block dots as ref, so
 *     the scores are ref's bit for bit and the same budget holds. The
 *     AMX bf16 tiles (avx512+amx prefill, f16 cache) carry q and the
 *     weights to 16 bits, three exact products per product of f32
 *     (attention_amx.c): 2e-5 * max |v| at scores of a few units.
 *   - rmsnorm: the same exact double squares summed in another order
 *     (4 * 2^-24 relative, usually identical); swiglu: vector exp
 *     (12 * 2^-24 relative); rope, hadamard, add, kv_store:
 *     bit-identical.
 */
#ifndef INF_BACKEND_KERNELS_H
#define INF_BACKEND_KERNELS_H

#include "backend/cpu.h"
#include "backend/ops.h"
#include "core/dtype.h"

/* The activations of one matmul, prepared once for the weight's dot type. */
typedef struct inf_act {
    const void *data; /* [n][stride] bytes; rows 4-byte aligned */
    size_t stride;    /* bytes between consecutive tokens */
    int n;            /* tokens */
} inf_act;

typedef struct inf_kernels {
    const char *name; /* the ISA's name */

    /* ---- matmul: y[t][r] = x[t] · W[r] */
    /* Bytes of one token's prepared activations: a multiple of 4, at most
     * cols * sizeof(float) (the op's scratch holds n of them). */
    size_t (*act_row_bytes)(inf_dtype type, int64_t cols);
    /* x[cols] f32 -> row, rounded for weights of `type`. */
    void (*act_prepare)(inf_dtype type, const float *x, int64_t cols, void *row);
    /* Weight rows [r0, r1) streamed once for all a->n tokens (any n >= 1;
     * any r0, so that a split may cut anywhere): y[t * y_stride + r]. For
     * few tokens (decode). */
    void (*matvec)(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                   size_t y_stride);
    /* Tokens [t0, t1) of x[n][cols] prepared for gemm into buf (t0 a
     * multiple of 8; n tokens take at most n * cols * sizeof(float) bytes).
     * The super-block types of one activation type (inf_quant_act_type:
     * Q8_K) get the same bytes, so one preparation serves a group of them
     * (cpu.c, matmul_group). */
    void (*gemm_prepare)(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);
    /* Rows [r0, r1), r1 - r0 <= gemm_rows, packed into `pack` (64-aligned,
     * gemm_pack_bytes) then multiplied with all a->n tokens (a->data from
     * gemm_prepare) in register tiles. A weight packed at load (below)
     * takes any range of whole 16-row groups (the end may be the last
     * row), a panel of gemm_rows at a time, and reads it where it lies. Runs every prefill row, however
     * few (cpu.c), and decode rows too where they come out the same as
     * from the matvec, from gemm_min_tokens on. */
    void (*gemm)(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                 size_t y_stride, void *pack);
    size_t (*gemm_pack_bytes)(inf_dtype type, int64_t cols);
    int gemm_rows;       /* weight rows per gemm task, a multiple of 16 */
    int gemm_min_tokens; /* tokens from which gemm beats matvec (when either may run) */
    /* The same for Q8_0 when set (0: gemm_min_tokens). The exact Q8_0
     * matvec reads each group of weight rows from memory once for any
     * token count (its later passes of 8 tokens find the group in cache),
     * so it wins further than the block types' matvecs. */
    int gemm_min_tokens_q8_0;
    /* The Q8_0 matvec's rows are bit-identical to the gemm's (and ref.c's):
     * an exact integer dot per block, block sums added in order. Then decode
     * and prefill rows of Q8_0 weights may share one kernel (ops.h, matmul).
     * Set by every table; test_kernels checks the bits. */
    bool matvec_exact_q8_0;
    /* The same for the 32-block types (Q4_0 ... IQ4_NL); the super-block
     * types' kernels always agree. */
    bool matvec_exact_quant;
    /* Weights packed once at load (ops.h weight_pack; all NULL / 0: none).
     * packed_bytes: the bytes of w's packed copy, 0 when its type has none;
     * pack_rows: rows [r0, r1) of w (r0 a multiple of gemm_rows) into their
     * place in the copy at dst, packed_bytes(w's first r0 rows) into it; a
     * weight of those rows alone packs to the same bytes (which is how
     * ops.h weight_pack_made packs rows as they are made). A weight whose
     * packed_format is this table's runs every token count on the gemm,
     * which then reads w->packed instead of packing rows itself; its rows
     * are the unpacked weight's bit for bit. */
    size_t (*packed_bytes)(const inf_weight *w);
    void (*pack_rows)(const inf_weight *w, int64_t r0, int64_t r1, void *dst);
    int packed_format;
    /* Ways of reading packed weights ahead (software prefetch hints), all
     * with the same results: stream_hints of them (below 2: nothing to
     * choose); stream_hint_initial is the one to start with and
     * stream_hint_set picks one for the products that follow, process-wide
     * (two models tuning at once in one process share it: their results
     * do not change, only how fast they read). cpu.c times decode products
     * under each (stream_tuner.h). */
    int stream_hints;
    const char *const *stream_hint_names; /* [stream_hints], for reports */
    int (*stream_hint_initial)(void);
    void (*stream_hint_set)(int hint);
    /* The GGUF block types (Q4_0 ... IQ4_XS, core/quant.h) this ISA's matvec
     * takes; NULL: none. For those, act_row_bytes / act_prepare give
     * inf_quant_act_bytes rounded up to 64 / inf_quant_act_row (the blocks of
     * the type's dot type, as ref.c rounds them). The others run ref.c's
     * matmul, threaded. A block type's matvec rows do not depend on how
     * many tokens share the call (tests/test_kernels.c checks). */
    bool (*matvec_takes)(inf_dtype type);
    /* The weight types this ISA's gemm takes (set wherever gemm is); the
     * others' prefill rows run on matvec. The super-block types' gemm rows
     * are bit-identical to their matvec's, so their decode and prefill rows
     * share a kernel; the 32-block types' only with matvec_exact_quant
     * (else ops.h: decode rows on matvec, prefill rows on the gemm). */
    bool (*gemm_takes)(inf_dtype type);

    /* ---- attention, one KV head (all the query heads of its group) per task.
     * K and V are read through the views' block tables (inf_kv_rows), in
     * key tiles at absolute positions 0, 64, ...: a query row's floats
     * depend on neither the block size and table nor on t0, pos0 and
     * n_tok (ops.h, attn_prefill). */
    /* Bytes of per-thread scratch the attention kernels need. */
    size_t (*attn_tmp_bytes)(const inf_attn_shape *shape);
    /* Decode (shape->n_tok == 1) for KV head kvh: q and out as in ops.h. */
    void (*attn_decode)(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                        const inf_kv_view *v, float *out, int kvh, void *tmp);
    /* For a decode over at most 64 keys, the K rows of each head (from
     * position 0) that cpu.c requests before the heads' attn_decode calls,
     * where the kernel reads the other rows ahead itself as it computes;
     * 0: cpu.c requests every row of K and V up front. */
    int attn_decode_short_ahead;
    /* Prefill for KV head kvh and query tokens [t0, t1), t1 - t0 <= attn_block. */
    void (*attn_prefill)(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                         const inf_kv_view *v, float *out, int kvh, int t0, int t1, void *tmp);
    int attn_block; /* query tokens per prefill task */

    /* ---- element-wise, on ranges (semantics as the ops of the same name) */
    void (*rmsnorm)(float *y, const float *x, const float *w, int n_rows, int dim, float eps);
    /* x[n_rows][head_dim] rotated by cs = {cos[half], sin[half]}, one table per row. */
    void (*rope_rows)(float *x, int n_rows, int head_dim, const float *cos_sin);
    /* The hadamard op on rows of n >= 8 (smaller n run ref.c's). */
    void (*hadamard)(float *x, int n_rows, int n);
    void (*swiglu)(float *out, const float *gate, const float *up, size_t n);
    void (*add)(float *y, const float *x, size_t n);
    /* dst[n] f16 = src[n] f32, round to nearest even */
    void (*f32_to_f16)(uint16_t *dst, const float *src, size_t n);
    /* inf_quantize_row_q8_0, bit for bit (n a multiple of 32); NULL: that one runs */
    void (*quantize_row_q8_0)(const float *x, inf_block_q8_0 *y, int64_t n);
} inf_kernels;

/* The activation row layout of the AVX2 and NEON matvecs, prepared
 * portably (act_row.c): act_row_bytes for both, act_prepare for all but
 * F16, which each ISA rounds with its own instructions. */
size_t inf_act_row_bytes_common(inf_dtype type, int64_t cols);
void inf_act_prepare_common(inf_dtype type, const float *x, int64_t cols, void *row);
/* The block types' activation rows, as every ISA lays them out. */
size_t inf_act_row_bytes_quant(inf_dtype type, int64_t cols);
void inf_act_prepare_quant(inf_dtype type, const float *x, int64_t cols, void *row);
/* Tokens [t0, t1) of x[][cols] as such rows, each made by prepare_row
 * (inf_act_prepare_quant or an ISA's own, the same bytes), token t at t *
 * the row bytes of buf; flip: each 32-block's quants then flipped to q ^
 * 0x80 (= q + 128 as unsigned), the operand the x86 gemms of the 32-block
 * types broadcast. */
typedef void (*inf_act_row_fn)(inf_dtype type, const float *x, int64_t cols, void *row);
void inf_act_prepare_quant_rows(inf_dtype type, const float *x, int64_t cols, int t0, int t1, void *buf, bool flip,
                                inf_act_row_fn prepare_row);

/* rows[i] = the address of the cached row of (position p0 + i, KV head h),
 * for i < n. The block table is read once per run of consecutive positions
 * in a block, so a key tile that straddles blocks costs a few divisions. */
static inline void inf_kv_rows(const inf_kv_view *c, int h, int p0, int n, const void **rows) {
    const size_t row_step = inf_kv_type_bytes(c->type, c->pos_stride); /* bytes between positions in a block */
    for (int i = 0; i < n;) {
        const int p = p0 + i, in_block = c->block_size - p % c->block_size;
        const char *row = (const char *)c->data + inf_kv_type_bytes(c->type, inf_kv_elem(c, p, h));
        for (const int end = i + (in_block < n - i ? in_block : n - i); i < end; i++, row += row_step) rows[i] = row;
    }
}

/* The tables; NULL when the ISA is not compiled into this build. */
const inf_kernels *inf_kernels_avx2(void);
const inf_kernels *inf_kernels_avx512(void);
const inf_kernels *inf_kernels_avx512_amx(void);
/* dotprod: the CPU has the ARMv8.2 dot product (SDOT). */
const inf_kernels *inf_kernels_neon(bool dotprod);
/* The table the CPU backend runs for isa on this CPU (cpu.c; NULL for
 * "ref" and for ISAs this build lacks), for tests that call kernels directly. */
const inf_kernels *inf_isa_kernels(inf_isa isa);

#endif /* INF_BACKEND_KERNELS_H */

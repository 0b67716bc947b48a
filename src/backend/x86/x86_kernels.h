/*
 * x86_kernels.h — the kernels of the x86 ISAs, one set per ISA, as the
 * tables in tables.c collect them. Each *_avx2.c / *_avx512.c / *_amx.c file is built
 * with its ISA's flags; nothing here is called unless the CPU has the ISA.
 * Semantics: the members of inf_kernels (backend/kernels.h) of the same name.
                                          */
#ifndef INF_X86_KERNELS_H
#define INF_X86_KERNELS_H

#include "backend/kernels.h"
#include "core/quant.h"

/* Whether the CPU is AMD's (cpuid vendor "AuthenticAMD"), for the kernels
 * that tune by vendor; cpuid runs once (in a VM it traps: microseconds),
 * later calls read the kept answer. Thread-safe. */
bool inf_x86_cpu_is_amd(void);

/* How the packed kernels read their weights ahead: non-temporally
 * (PREFETCHNTA) or into L2 (PREFETCHT1), the stream hints of the avx512
 * tables (kernels.h): INF_X86_HINT_NTA or INF_X86_HINT_L2, set by cpu.c's
 * stream tuner; until then NTA on AMD, L2 elsewhere. Thread-safe. */
enum { INF_X86_HINT_L2 = 0, INF_X86_HINT_NTA = 1, INF_X86_HINTS = 2 };
bool inf_x86_weights_nta(void);

/* Weight rows per gemm task and query tokens per prefill attention task. */
enum { INF_X86_GEMM_ROWS = 64, INF_X86_ATTN_BLOCK = 32 };

/* K rows a short decode (at most 64 keys) has in flight ahead of the one
 * it computes with (attention_avx512.c; kernels.h attn_decode_short_ahead). */
enum { INF_X86_DECODE_SHORT_AHEAD = 16 };

/* ---- avx2. Its gemm panels hold int16 quants (Q8_0) or f32, twice
 * avx512's bytes per row for Q8_0, so a task packs half the rows: 32 rows
 * of 3072 Q8_0 columns are 209 KiB, within a 256 KiB L2 (64 rows measured
 * 3% faster on a 1 MiB L2). */
enum { INF_AVX2_GEMM_ROWS = 32 };
void inf_avx2_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row);
void inf_avx2_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                     size_t y_stride);
void inf_avx2_gemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);
void inf_avx2_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                   size_t y_stride, void *pack);
size_t inf_avx2_gemm_pack_bytes(inf_dtype type, int64_t cols);
size_t inf_avx2_attn_tmp_bytes(const inf_attn_shape *shape);
void inf_avx2_attn_decode(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                          const inf_kv_view *v, float *out, int kvh, void *tmp);
void inf_avx2_attn_prefill(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                           const inf_kv_view *v, float *out, int kvh, int t0, int t1, void *tmp);
void inf_avx2_rmsnorm(float *y, const float *x, const float *w, int n_rows, int dim, float eps);
void inf_avx2_rope_rows(float *x, int n_rows, int head_dim, const float *cos_sin);
void inf_avx2_hadamard(float *x, int n_rows, int n);
void inf_avx2_swiglu(float *out, const float *gate, const float *up, size_t n);
void inf_avx2_add(float *y, const float *x, size_t n);
void inf_avx2_f32_to_f16(uint16_t *dst, const float *src, size_t n);
void inf_avx2_quantize_row_q8_0(const float *x, inf_block_q8_0 *y, int64_t n);

/* ---- avx2, the GGUF block types (quant_avx2.c): as avx512's below;
 * inf_avx2_gemm* hand those types to the qgemm functions. */
bool inf_avx2_matvec_takes(inf_dtype type);
void inf_avx2_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                           size_t y_stride);
void inf_avx2_qgemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);
void inf_avx2_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                    void *pack);
size_t inf_avx2_qgemm_pack_bytes(inf_dtype type, int64_t cols);

/* ---- the 32-block types and the super-block types (Q2_K .. Q6_K, IQ4_XS) packed in groups of 16 rows, for
 * the avx512 gemm and the AMX tiles alike (per task by
 * inf_avx512_pack_group, or the whole matrix once at load:
 * inf_avx512_pack_rows). A group of nb = cols / 32 blocks (K-quants:
 * cols / 256 super-blocks) holds
 *   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL: the blocks in pairs: the pair's
 *   two blocks' scales ([16 rows] f16 the rows' d; Q4_1, Q5_1: then [16
 *   rows] f16 their m), then block 2p's quants, then block 2p + 1's
 *   (inf_x86_q32_scales_at, inf_x86_q32_quants_at; an odd last block has
 *   its pair's first scales and quants alone):
 *     Q8_0: [8 quads][16 rows][4] int8, signed: block b's 512 bytes are
 *           the AMX B tile of the block as they are;
 *     Q4_0: [4 units][16 rows][4] bytes, the file's qs bytes 4j..4j+3 as
 *           unit j: low nibbles are quad j (values 4j..4j+3), high nibbles
 *           quad j + 4, each value q + 8 (256 bytes);
 *     Q5_0: Q4_0's 4 units of the low four bits, then the fifth bits as
 *           [8 quads] u64 masks (320 bytes): bit 4r + k of quad q's is the
 *           fifth bit of value 4q + k of row r (qh bit 4q + k), the byte
 *           of the quad's vector that value's low bits take; value q + 16;
 *     IQ4_NL: Q4_0's units, each nibble the index of its value in
 *           inf_iq4nl_values (256 bytes);
 *     Q4_1: Q4_0's units, each value the nibble q (no offset);
 *     Q5_1: Q5_0's units and masks, each value q (no offset);
 *   Q4_K: per super-block, INF_X86_Q4K_BLOCK bytes, scales first:
 *     scales [12][16 rows] at INF_X86_Q4K_SCALES: the file's 12 bytes of
 *           6-bit scales and mins, byte k of every row side by side;
 *     d, dmin [16 rows] f16 at INF_X86_Q4K_D, INF_X86_Q4K_DMIN;
 *     codes [4 pairs][8 units][16 rows][4] bytes at INF_X86_Q4K_CODES: the
 *           file's qs bytes 32p + 4u .. + 3 as unit u of pair p: low
 *           nibbles are elements 64p + 4u .. + 3 (sub-block 2p), high
 *           nibbles elements 64p + 32 + 4u .. + 3 (sub-block 2p + 1);
 *   Q5_K: per super-block, INF_X86_Q5K_BLOCK bytes: Q4_K's scales, d and
 *     dmin, then its codes (INF_X86_Q5K_SCALES, _D, _DMIN, _CODES), then
 *     qh [8 units][16 rows][4] at INF_X86_Q5K_QH (the file's qh bytes
 *     4v .. + 3 as unit v: bit j the fifth bit of element 32j + 4v ..);
 *   IQ4_XS: per super-block, INF_X86_IQ4XS_BLOCK bytes: scales_h [16 rows]
 *     u16, scales_l [4][16 rows], d [16 rows] f16 at INF_X86_IQ4XS_SCALES_H,
 *     _SCALES_L, _D, then codes [32 units][16 rows][4] at
 *     INF_X86_IQ4XS_CODES, the file's qs bytes 4u .. + 3 as unit u (low
 *     nibbles: elements 32 (u / 4) + 4 (u % 4) .. + 3, high nibbles those
 *     + 16);
 *   Q6_K: per super-block, INF_X86_Q6K_BLOCK bytes: scales [16 groups][16
 *     rows] int8 at INF_X86_Q6K_SCALES, then at INF_X86_Q6K_CODES
 *     ql [2 halves][16 units][16 rows][4]: the file's ql bytes 64h + 4u ..
 *           + 3 as unit u of half h: low nibbles are the low bits of
 *           elements 128h + 4u .. + 3, high nibbles of 128h + 64 + 4u ..;
 *     qh [2 halves][8 units][16 rows][4]: qh bytes 32h + 4v .. + 3: bit
 *           pairs 0, 1, 2, 3 the top bits of elements 128h + 4v (+ 32,
 *           + 64, + 96) .. + 3;
 *   then d [nb][16 rows] f16 (inf_x86_q6k_d_at), padded to 64 bytes;
 *   Q3_K: per super-block, INF_X86_Q3K_BLOCK bytes: scales [16 groups][16
 *     rows] int8 at INF_X86_Q3K_SCALES, decoded (the file's 6-bit scale -
 *     32), then
 *     qs [2 halves][8 units][16 rows][4] at INF_X86_Q3K_CODES: the file's
 *           qs bytes 32h + 4v .. + 3 as unit v of half h: bit pair p the
 *           low two bits of elements 128h + 32p + 4v .. + 3;
 *     hmask [8 units][16 rows][4] at INF_X86_Q3K_HMASK: hmask bytes 4v ..
 *           + 3: bit j the third bit of elements 32j + 4v .. + 3;
 *   then d [nb][16 rows] f16 (inf_x86_q3k_d_at), padded to 64 bytes.
 *   (114 bytes a row per super-block against the file's 110: the scales
 *   decoded save the kernel the most work per byte of any type.)
 *   Q2_K: per super-block, INF_X86_Q2K_BLOCK bytes: scales [16 groups][16
 *     rows] at INF_X86_Q2K_SCALES, the file's bytes (scale in the low
 *     nibble, min in the high), then qs as Q3_K's at INF_X86_Q2K_CODES
 *     (bit pair p of unit v of half h: elements 128h + 32p + 4v .. + 3);
 *   then d, dmin [nb][2][16 rows] f16 (inf_x86_q2k_d_at), 64 bytes each.
 * Every block's scales come before its codes: decode reads each group
 * from front to back, which the hardware prefetchers follow (with the
 * scales after the codes, or in a table after the group, decode of one
 * 2 GiB matrix on 2 threads streamed 2-14% slower).
 * As many bytes as the GGUF rows (34, 18, 20, 22, 24 per 32 weights; 144, 176, 210,
 * 136 per 256, 84 Q2_K), up to the padding; Q3_K 4 more (above). Group g of a packed matrix starts at
 * g * inf_x86_packed_group_bytes(type, cols). */
enum {
    INF_X86_PACKED_SCALES_BLOCK = 16 * 2,
    INF_X86_Q4K_SCALES = 0,
    INF_X86_Q4K_D = INF_X86_Q4K_SCALES + 12 * 16,
    INF_X86_Q4K_DMIN = INF_X86_Q4K_D + 32,
    INF_X86_Q4K_CODES = INF_X86_Q4K_DMIN + 32,
    INF_X86_Q4K_BLOCK = INF_X86_Q4K_CODES + 2048, /* 2304 = 16 x 144 */
    INF_X86_Q5K_SCALES = 0,
    INF_X86_Q5K_D = INF_X86_Q5K_SCALES + 12 * 16,
    INF_X86_Q5K_DMIN = INF_X86_Q5K_D + 32,
    INF_X86_Q5K_CODES = INF_X86_Q5K_DMIN + 32,
    INF_X86_Q5K_QH = INF_X86_Q5K_CODES + 2048,
    INF_X86_Q5K_BLOCK = INF_X86_Q5K_QH + 512, /* 2816 = 16 x 176 */
    INF_X86_IQ4XS_SCALES_H = 0,
    INF_X86_IQ4XS_SCALES_L = INF_X86_IQ4XS_SCALES_H + 32,
    INF_X86_IQ4XS_D = INF_X86_IQ4XS_SCALES_L + 64,
    INF_X86_IQ4XS_CODES = INF_X86_IQ4XS_D + 32,
    INF_X86_IQ4XS_BLOCK = INF_X86_IQ4XS_CODES + 2048, /* 2176 = 16 x 136 */
    INF_X86_Q6K_SCALES = 0,
    INF_X86_Q6K_CODES = 256,
    INF_X86_Q6K_BLOCK = INF_X86_Q6K_CODES + 2048 + 1024,
    INF_X86_Q3K_SCALES = 0,
    INF_X86_Q3K_CODES = 256,
    INF_X86_Q3K_HMASK = INF_X86_Q3K_CODES + 1024,
    INF_X86_Q3K_BLOCK = INF_X86_Q3K_HMASK + 512, /* 1792 */
    INF_X86_Q2K_SCALES = 0,
    INF_X86_Q2K_CODES = 256,
    INF_X86_Q2K_BLOCK = INF_X86_Q2K_CODES + 1024, /* 1280 */
};
static inline bool inf_x86_packs(inf_dtype type) { return type == INF_DTYPE_Q8_0 || inf_dtype_is_quant(type); }
enum { INF_X86_Q5_0_MASKS = 256 }; /* where a packed Q5_0 (Q5_1) block's fifth-bit masks follow its units */
static inline size_t inf_x86_packed_quants_block(inf_dtype type) {
    return type == INF_DTYPE_Q8_0                                ? 512
           : type == INF_DTYPE_Q5_0 || type == INF_DTYPE_Q5_1 ? INF_X86_Q5_0_MASKS + 8 * 8
                                                                 : 256;
}
/* A packed block's scales: d, and Q4_1's and Q5_1's m after it. */
static inline size_t inf_x86_packed_scales_block(inf_dtype type) {
    return (type == INF_DTYPE_Q4_1 || type == INF_DTYPE_Q5_1 ? 2 : 1) * INF_X86_PACKED_SCALES_BLOCK;
}
/* Where block b's scales and quants lie in a packed group of a 32-block type. */
static inline size_t inf_x86_q32_pair_bytes(inf_dtype type) {
    return 2 * (inf_x86_packed_scales_block(type) + inf_x86_packed_quants_block(type));
}
static inline size_t inf_x86_q32_scales_at(inf_dtype type, int64_t b) {
    return (size_t)b / 2 * inf_x86_q32_pair_bytes(type) + (size_t)b % 2 * inf_x86_packed_scales_block(type);
}
static inline size_t inf_x86_q32_quants_at(inf_dtype type, int64_t b) {
    return (size_t)b / 2 * inf_x86_q32_pair_bytes(type) + 2 * inf_x86_packed_scales_block(type) +
           (size_t)b % 2 * inf_x86_packed_quants_block(type);
}
static inline size_t inf_x86_q6k_d_at(int64_t nb, int64_t b) {
    return (size_t)nb * INF_X86_Q6K_BLOCK + (size_t)b * 32;
}
static inline size_t inf_x86_q3k_d_at(int64_t nb, int64_t b) {
    return (size_t)nb * INF_X86_Q3K_BLOCK + (size_t)b * 32;
}
static inline size_t inf_x86_q2k_d_at(int64_t nb, int64_t b) { /* dmin 32 bytes on */
    return (size_t)nb * INF_X86_Q2K_BLOCK + (size_t)b * 64;
}
static inline size_t inf_x86_packed_group_bytes(inf_dtype type, int64_t cols) {
    if (type == INF_DTYPE_Q4_K) return (size_t)(cols / 256) * INF_X86_Q4K_BLOCK;
    if (type == INF_DTYPE_Q5_K) return (size_t)(cols / 256) * INF_X86_Q5K_BLOCK;
    if (type == INF_DTYPE_IQ4_XS) return (size_t)(cols / 256) * INF_X86_IQ4XS_BLOCK;
    if (type == INF_DTYPE_Q6_K) return (inf_x86_q6k_d_at(cols / 256, cols / 256) + 63) / 64 * 64;
    if (type == INF_DTYPE_Q3_K) return (inf_x86_q3k_d_at(cols / 256, cols / 256) + 63) / 64 * 64;
    if (type == INF_DTYPE_Q2_K) return inf_x86_q2k_d_at(cols / 256, cols / 256);
    return inf_x86_q32_quants_at(type, cols / 32 - 1) + inf_x86_packed_quants_block(type); /* a multiple of 64 */
}
/* The packed format tag of those matrices (inf_weight.packed_format). */
enum { INF_X86_PACKED_GROUPS = 1 };

/* ---- avx512 */
size_t inf_avx512_act_row_bytes(inf_dtype type, int64_t cols);
void inf_avx512_act_prepare(inf_dtype type, const float *x, int64_t cols, void *row);
void inf_avx512_matvec(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                       size_t y_stride);
void inf_avx512_gemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);
void inf_avx512_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                     size_t y_stride, void *pack);
size_t inf_avx512_gemm_pack_bytes(inf_dtype type, int64_t cols);
/* Weight rows [r, r + nr), nr <= 16, packed into one 64-aligned group of
 * 16 (missing rows are zeros), the 32-bit units of the 16 rows side by side:
 *   the 32-block types: the layout above;
 *   BF16: [pairs][16 rows][2] bf16 (an odd last column padded);
 *   F16, F32: [cols][16 rows] f32.
 * for_tiles (the AMX gemm's B tiles): BF16 pairs are zero-padded to a
 * multiple of 16. */
void inf_avx512_pack_group(const inf_weight *w, int64_t r, int nr, void *dst, bool for_tiles);
/* The packed copy of a whole weight (kernels.h packed_bytes, pack_rows):
 * Q8_0, Q4_0, Q5_0 and IQ4_NL (their activations: Q8_0 blocks, prepared as
 * Q8_0's), Q4_1 and Q5_1 and the super-block types (their own: rows of
 * Q8_1 or Q8_K blocks, inf_avx512_qgemm_prepare). */
size_t inf_avx512_packed_bytes(const inf_weight *w);
void inf_avx512_pack_rows(const inf_weight *w, int64_t r0, int64_t r1, void *dst);
/* A packed Q4_0, Q5_0 or IQ4_NL group of nb blocks (src) as a Q8_0 group (dst, the
 * AMX gemm's int8 tiles): each block's 8 quads of signed values, its f16
 * scales as they are. */
void inf_avx512_unpack_q32_group(inf_dtype type, const char *src, int64_t nb, char *dst);
/* A packed Q4_1 or Q5_1 group of nb blocks (src) as the 32-block gemm's
 * pack of one group (dst, INF_QB_* below; the AMX Q4_1/Q5_1 tiles'). */
void inf_avx512_unpack_q81_group(inf_dtype type, const char *src, int64_t nb, char *dst);
size_t inf_avx512_attn_tmp_bytes(const inf_attn_shape *shape);
void inf_avx512_attn_decode(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                            const inf_kv_view *v, float *out, int kvh, void *tmp);
void inf_avx512_attn_prefill(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                             const inf_kv_view *v, float *out, int kvh, int t0, int t1, void *tmp);
void inf_avx512_rmsnorm(float *y, const float *x, const float *w, int n_rows, int dim, float eps);
void inf_avx512_rope_rows(float *x, int n_rows, int head_dim, const float *cos_sin);
void inf_avx512_swiglu(float *out, const float *gate, const float *up, size_t n);
void inf_avx512_add(float *y, const float *x, size_t n);
void inf_avx512_f32_to_f16(uint16_t *dst, const float *src, size_t n);
void inf_avx512_quantize_row_q8_0(const float *x, inf_block_q8_0 *y, int64_t n);
void inf_avx512_quantize_row_q8_1(const float *x, inf_block_q8_1 *y, int64_t n); /* inf_quantize_row_q8_1's bytes */

/* ---- avx512, the GGUF block types (quant_avx512.c): matvec on the
 * activation rows of inf_act_prepare_quant, every token of a->n. */
bool inf_avx512_matvec_takes(inf_dtype type);
void inf_avx512_matvec_quant(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y,
                             size_t y_stride);
/* The gemm of the block types; inf_avx512_gemm* hand those types to these.
 * The super-block types' (Q2_K .. Q6_K, IQ4_XS) is bit-identical to the
 * matvec and to ref.c. */
void inf_avx512_qgemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);
/* inf_act_prepare_quant by the avx512 quantizers (Q8_0, Q8_1, Q8_K): the
 * same bytes. */
void inf_avx512_act_prepare_quant(inf_dtype type, const float *x, int64_t cols, void *row);
void inf_avx512_quantize_row_q8_K(const float *x, inf_block_q8_K *y, int64_t n);
void inf_avx512_qgemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                      void *pack);
size_t inf_avx512_qgemm_pack_bytes(inf_dtype type, int64_t cols);
/* The 32-block types' part of them (bit-identical to ref.c, not to the matvec). */
void inf_avx512_qgemm32(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t ys,
                        void *pack);
size_t inf_avx512_qgemm32_pack_bytes(int64_t cols);
/* Its pack of rows [r0, r1) (r1 - r0 <= INF_X86_GEMM_ROWS; of a weight
 * packed at load, whole groups), also the AMX Q4_1/Q5_1 tiles': per group
 * of 16 rows (missing rows zeros) and block,
 * INF_QB_BLOCK bytes: [8 quads][16 rows][4] int8 values (the B tile of the
 * block), then [16] int32 128 * Σ values, [16] f32 d, [16] f32 m (the
 * min, 0 but for Q4_1/Q5_1); groups nb blocks apart. */
enum { INF_QB_CORR = 512, INF_QB_D = 576, INF_QB_M = 640, INF_QB_BLOCK = 704 };
void inf_avx512_qgemm32_pack(const inf_weight *w, int64_t r0, int64_t r1, void *pack);
/* The super-block types packed at load (the layout above): rows [r, r + nr) of w
 * into group dst (missing rows zeros); the gemm of such a weight, any
 * range of whole groups and any token count, bit-identical to ref.c; and
 * super-block b of a group of nb unpacked for the gemms' per-task packs:
 * quads [64][16 rows][4] codes (element order), and per 16-element group
 * g scale[g][row] and coef[g][row] (int32; as inf_avx512_unpack_kquant's),
 * then d, dmin (f32) of the rows. */
void inf_avx512_pack_kquant_group(const inf_weight *w, int64_t r, int nr, void *dst);
void inf_avx512_qgemm_packed(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                             void *pack); /* pack: inf_avx512_qgemm_pack_bytes (Q2_K, Q3_K prompts unpack there) */
void inf_avx512_unpack_packed_kquant(inf_dtype type, const char *group, int64_t nb, int64_t b, uint8_t *quads,
                                     int32_t *scale, int32_t *coef, float *d, float *dmin);
/* The super-block gemm's weight unpacker, for the AMX tiles' pack: a
 * super-block (Q2_K .. Q6_K, IQ4_XS): its codes u in element order and,
 * per 16-element group g, scale[g] and coef[g]; element k's value is
 * scale[g] * u[k] - coef[g] for the types without mins (Q3_K, Q6_K,
 * IQ4_XS), scale[g] * u[k] with min coef[g] (Q2_K, Q4_K, Q5_K:
 * w = d * scale * u - dmin * coef); d and dmin (0 without mins) as f32. */
void inf_avx512_unpack_kquant(inf_dtype type, const char *blk, uint8_t codes[256], int32_t scale[16],
                              int32_t coef[16], float *d, float *dmin);

/* ---- avx512+amx: avx512's table with the gemm on AMX tiles (every type
 * but F32 and F16, from a type's token threshold; other products, and
 * BF16 rows under 16 columns, run avx512's gemm). */
void inf_amx_gemm_prepare(inf_dtype type, const float *x, int64_t cols, int n, int t0, int t1, void *buf);
void inf_amx_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                  void *pack);
size_t inf_amx_gemm_pack_bytes(inf_dtype type, int64_t cols);
/* The super-block types' and Q4_1/Q5_1's part of it (quant_amx.c): whether
 * the tiles run an n-token product of the type (of a weight packed at load
 * or not), the gemm, and its pack's bytes. */
bool inf_amx_kquant_takes(inf_dtype type, int n, bool packed);
void inf_amx_kquant_gemm(const inf_weight *w, const inf_act *a, int64_t r0, int64_t r1, float *y, size_t y_stride,
                         void *pack);
size_t inf_amx_kquant_pack_bytes(inf_dtype type, int64_t cols);
/* Prefill attention on bf16 tiles for f16 caches (attention_amx.c; other
 * caches and head_dim not a multiple of 32 run avx512's), in tasks of
 * INF_AMX_ATTN_BLOCK query tokens: a task converts each key tile once for
 * all its rows, which took ~28% of a task of 64 tokens (Qwen3-0.6B, 2044
 * tokens). Decode attention is avx512's. */
enum { INF_AMX_ATTN_BLOCK = 128 };
size_t inf_amx_attn_tmp_bytes(const inf_attn_shape *shape);
void inf_amx_attn_prefill(const inf_attn_shape *shape, const float *q, const inf_kv_view *k,
                          const inf_kv_view *v, float *out, int kvh, int t0, int t1, void *tmp);

#endif /* INF_X86_KERNELS_H */

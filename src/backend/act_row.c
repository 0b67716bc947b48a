/*
 * act_row.c — the activation rows the AVX2 and NEON matvecs read (kernels.h
 * act_row_bytes / act_prepare), prepared portably; those ISAs replace only
 * the F16 rounding loop with their own conversion instructions.
 *   Q8_0: quants [nb][32] int8 (inf_quantize_row_q8_0), then scales [nb]
 *         f32 (the block's f16 scale widened), the row padded to 64 bytes;
 *   BF16, F16: the values rounded to the type, kept as f32 [cols];
 *   F32: a copy;
 *   the GGUF block types (core/quant.h): their dot type's blocks
 *         (inf_quant_act_row), the row padded to 64 bytes.
 */
#include "backend/kernels.h"

#include "core/dtype.h"
#include "core/quant.h"

#include <stddef.h>
#include <string.h>

enum { QK = INF_Q8_0_BLOCK };

size_t inf_act_row_bytes_common(inf_dtype type, int64_t cols) {
    if (type == INF_DTYPE_Q8_0) return ((size_t)(cols / QK) * (QK + 4) + 63) & ~(size_t)63;
    if (inf_dtype_is_quant(type)) return inf_act_row_bytes_quant(type, cols);
    return (size_t)cols * 4;
}

size_t inf_act_row_bytes_quant(inf_dtype type, int64_t cols) {
    return (inf_quant_act_bytes(type, cols) + 63) & ~(size_t)63;
}

void inf_act_prepare_quant(inf_dtype type, const float *x, int64_t cols, void *row) {
    inf_quant_act_row(type, x, cols, row);
}

void inf_act_prepare_quant_rows(inf_dtype type, const float *x, int64_t cols, int t0, int t1, void *buf, bool flip,
                                inf_act_row_fn prepare_row) {
    const size_t stride = inf_act_row_bytes_quant(type, cols);
    const bool q81 = inf_quant_act_type(type) == INF_ACT_Q8_1;
    const size_t xb = q81 ? sizeof(inf_block_q8_1) : sizeof(inf_block_q8_0);
    const size_t xq_at = q81 ? offsetof(inf_block_q8_1, qs) : offsetof(inf_block_q8_0, q);
    for (int t = t0; t < t1; t++) {
        char *row = (char *)buf + (size_t)t * stride;
        prepare_row(type, x + (size_t)t * cols, cols, row);
        if (!flip) continue;
        for (int64_t b = 0; b < cols / INF_QK; b++) /* 8 quants a step */
            for (int i = 0; i < INF_QK; i += 8) {
                uint64_t q;
                memcpy(&q, row + (size_t)b * xb + xq_at + i, 8);
                q ^= 0x8080808080808080u;
                memcpy(row + (size_t)b * xb + xq_at + i, &q, 8);
            }
    }
}

void inf_act_prepare_common(inf_dtype type, const float *x, int64_t cols, void *row) {
    float *xf = row;
    switch (type) {
    case INF_DTYPE_Q8_0: {
        const int64_t nb = cols / QK;
        inf_block_q8_0 blk;
        for (int64_t b = 0; b < nb; b++) {
            inf_quantize_row_q8_0(x + b * QK, &blk, QK);
            memcpy((int8_t *)row + b * QK, blk.q, QK);
            ((float *)((char *)row + nb * QK))[b] = inf_f16_to_f32(blk.d);
        }
        return;
    }
    case INF_DTYPE_BF16:
        for (int64_t i = 0; i < cols; i++) xf[i] = inf_bf16_to_f32(inf_f32_to_bf16(x[i]));
        return;
    case INF_DTYPE_F16:
        for (int64_t i = 0; i < cols; i++) xf[i] = inf_f16_to_f32(inf_f32_to_f16(x[i]));
        return;
    case INF_DTYPE_F32: memcpy(row, x, (size_t)cols * 4); return;
    default: inf_act_prepare_quant(type, x, cols, row); return;
    }
}

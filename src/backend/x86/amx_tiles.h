/*
 * amx_tiles.h — the tile configuration the AMX gemms share (matmul_amx.c,
 * quant_amx.c; included only by *_amx.c files, which are built with the
 * tile flags).
 */
#ifndef INF_AMX_TILES_H
#define INF_AMX_TILES_H

#include <immintrin.h>
#include <stdint.h>

enum { INF_AMX_TILE = 16 }; /* tokens (M) and weight rows (N) of a tile */

/* The LDTILECFG operand (palette 1): bytes per row and rows of each tile. */
typedef struct inf_amx_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} inf_amx_config;
_Static_assert(sizeof(inf_amx_config) == 64, "LDTILECFG reads 64 bytes");

static inline void inf_amx_config_set(inf_amx_config *c, int tile, int rows, int colsb) {
    c->rows[tile] = (uint8_t)rows;
    c->colsb[tile] = (uint16_t)colsb;
}

/* The tiles of the products of 32-element blocks, one block a product
 * (matmul_amx.c's Q8_0 and the 32-blocks with its dot, quant_amx.c's Q4_1
 * and Q5_1): accumulators C0, C1 of nt tokens x 16 rows (int32),
 * activations A0, A1 of nt tokens x 32 bytes, weights B0, B1 of 8 quads x
 * 16 rows x 4 bytes; two of each, for consecutive blocks. (Macros: the
 * tile intrinsics paste the number into the instruction text.) */
#define INF_AMX_B32_C0 0
#define INF_AMX_B32_C1 1
#define INF_AMX_B32_A0 2
#define INF_AMX_B32_A1 3
#define INF_AMX_B32_B0 4
#define INF_AMX_B32_B1 5

static inline void inf_amx_config_b32(int nt) {
    inf_amx_config c = {.palette = 1};
    inf_amx_config_set(&c, INF_AMX_B32_C0, nt, 64);
    inf_amx_config_set(&c, INF_AMX_B32_C1, nt, 64);
    inf_amx_config_set(&c, INF_AMX_B32_A0, nt, 32);
    inf_amx_config_set(&c, INF_AMX_B32_A1, nt, 32);
    inf_amx_config_set(&c, INF_AMX_B32_B0, 8, 64);
    inf_amx_config_set(&c, INF_AMX_B32_B1, 8, 64);
    _tile_loadconfig(&c);
}

#endif /* INF_AMX_TILES_H */

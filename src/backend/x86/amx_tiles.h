/*
 * amx_tiles.h — the tile configuration the AMX gemms share (matmul_amx.c,
 * quant_amx.c; included only by *_amx.c files, which are built with the
 * tile flags).
 */
#ifndef INF_AMX_TILES_H
#define INF_AMX_TILES_H

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

#endif /* INF_AMX_TILES_H */

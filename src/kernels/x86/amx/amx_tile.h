/*
 * amx_tile.h -- the AMX tile configuration (palette 1) of the amx/ files: the 64-byte
 * ldtilecfg operand, filled tile by tile and loaded once per call. Include only from
 * translation units compiled with the amx level's flags. The OS grant of tile state is the
 * platform's business (src/platform/cpu.c): the amx paths are chosen only when it was given.
 */
#ifndef MPL_X86_AMX_TILE_H
#define MPL_X86_AMX_TILE_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16]; /* bytes per row of tile t */
    uint8_t rows[16];   /* rows of tile t */
} __attribute__((packed, aligned(64))) amx_tile_config;

/* An empty palette-1 configuration: every tile unused until amx_tile_shape gives it a shape. */
static inline void amx_tile_init(amx_tile_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->palette_id = 1;
}

/* Tile t: rows rows of colsb bytes each. */
static inline void amx_tile_shape(amx_tile_config *cfg, int t, int rows, int colsb) {
    cfg->rows[t] = (uint8_t)rows;
    cfg->colsb[t] = (uint16_t)colsb;
}

static inline void amx_tile_load(const amx_tile_config *cfg) {
    /* GCC 12 can drop the colsb stores once this is inlined (as if ldtilecfg read only part of
     * the 64 bytes; ldtilecfg then faults on rows without columns): make all 64 bytes used. */
    __asm__ volatile("" : : "m"(*cfg) : "memory");
    _tile_loadconfig(cfg);
}

#endif

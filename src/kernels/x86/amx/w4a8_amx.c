/*
 * w4a8_amx.c -- the AMX-INT8 prefill path of x86_vnni_w4a8 (tdpbsud: s8 x
 * times u8 weight nibbles, int32 tiles), for many rows on CPUs with AMX.
 *
 * Tiles: 0-3 C (32 rows x 32 columns as 2x2 tiles of 16x16 int32), 4-5 A
 * (16 rows of qx x kb bytes), 6-7 B (kb/4 rows x 16 columns x 4 bytes, the
 * VNNI order of the packed layout's unpacked nibbles). kb = 64 (the tile
 * maximum) when the group length allows, else 32.
 *
 * Blocking: a 2-panel column block's nibbles are unpacked once per chunk of
 * rows into a B scratch (k*32 bytes, L2-resident), then every 32-row block
 * of the chunk runs over all K. At each group end the C tiles go to memory
 * and AVX-512 applies the compensation and scale into float accumulators
 * (the same operations, in the same order, as the VNNI variants).
 */
#include "../avx512/w4a8_avx512.h"

typedef struct {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Rows of qx per chunk: about 512 KiB of int8 stays in L2 next to the B scratch. */
#define QX_CHUNK_BYTES (512 * 1024)

size_t mpl_w4a8_amx_scratch(int64_t k) { return (size_t)k * 32 + 4096 + 4096; }

static void unpack_panel(const uint8_t *src, uint8_t *dst, int64_t K) {
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < K / MPL_W4A8_KBLOCK; b++) {
        __m512i raw = _mm512_load_si512((const void *)(src + b * 64));
        _mm512_store_si512((void *)(dst + b * 128), _mm512_and_si512(raw, m0f));
        _mm512_store_si512((void *)(dst + b * 128 + 64), _mm512_and_si512(_mm512_srli_epi16(raw, 4), m0f));
    }
}

/* Float epilogue of one 16x16 C tile (rows r0.., panel pan) for group g. */
static inline void tile_epilogue(const mpl_w4a8_job *j, const int32_t *c, float *facc, int64_t m0, int64_t pan,
                                 int64_t g) {
    const mpl_x86_w4a8 *p = j->p;
    const int64_t G = p->groups;
    const __m512 sc = _mm512_load_ps(p->scales + (pan * G + g) * MPL_W4A8_PANEL);
    const __m512i z = w4a8_zeros16(p, pan, g);
    for (int r = 0; r < 16; r++) {
        __m512i dot = _mm512_load_si512((const void *)(c + r * 16));
        __m512 a = _mm512_load_ps(facc + r * 32);
        _mm512_store_ps(facc + r * 32, w4a8_group_acc(a, dot, z, j->sumq[(m0 + r) * G + g], sc));
    }
}

static void block32(const mpl_w4a8_job *j, int64_t m0, int64_t pan, int np, const uint8_t *bscr, int kb,
                    int32_t *cbuf, float *facc) {
    const mpl_x86_w4a8 *p = j->p;
    const int64_t K = p->k, G = p->groups, gl = p->group_len;
    const uint8_t *b0 = bscr, *b1 = bscr + K * 16;
    const int8_t *a0 = j->qx + m0 * K, *a1 = a0 + 16 * K;
    memset(facc, 0, 32 * 32 * sizeof(float));
    for (int64_t g = 0; g < G; g++) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t k0 = g * gl; k0 < (g + 1) * gl; k0 += kb) {
            _tile_loadd(4, a0 + k0, K);
            _tile_loadd(5, a1 + k0, K);
            _tile_loadd(6, b0 + k0 * 16, 64);
            _tile_dpbsud(0, 4, 6);
            _tile_dpbsud(1, 5, 6);
            if (np == 2) {
                _tile_loadd(7, b1 + k0 * 16, 64);
                _tile_dpbsud(2, 4, 7);
                _tile_dpbsud(3, 5, 7);
            }
        }
        _tile_stored(0, cbuf, 64);
        _tile_stored(1, cbuf + 256, 64);
        tile_epilogue(j, cbuf, facc, m0, pan, g);
        tile_epilogue(j, cbuf + 256, facc + 16 * 32, m0 + 16, pan, g);
        if (np == 2) {
            _tile_stored(2, cbuf + 512, 64);
            _tile_stored(3, cbuf + 768, 64);
            tile_epilogue(j, cbuf + 512, facc + 16, m0, pan + 1, g);
            tile_epilogue(j, cbuf + 768, facc + 16 * 32 + 16, m0 + 16, pan + 1, g);
        }
    }
    for (int r = 0; r < 32 && m0 + r < j->m; r++)
        for (int v = 0; v < np; v++)
            w4a8_finish16(j, m0 + r, (pan + v) * MPL_W4A8_PANEL, _mm512_load_ps(facc + r * 32 + v * 16));
}

void mpl_w4a8_gemm_amx(const mpl_w4a8_job *j, int64_t p0, int64_t p1, void *scratch) {
    const mpl_x86_w4a8 *p = j->p;
    const int64_t K = p->k, M = j->m;
    const int kb = p->group_len % 64 == 0 ? 64 : 32;
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int t = 0; t < 4; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    for (int t = 4; t < 6; t++) {
        cfg.colsb[t] = (uint16_t)kb;
        cfg.rows[t] = 16;
    }
    for (int t = 6; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = (uint8_t)(kb / 4);
    }
    _tile_loadconfig(&cfg);
    uint8_t *bscr = scratch;
    int32_t *cbuf = (int32_t *)(bscr + K * 32);
    float *facc = (float *)(bscr + K * 32 + 4096);
    int64_t mc = QX_CHUNK_BYTES / K / MPL_W4A8_ROW_PAD * MPL_W4A8_ROW_PAD;
    if (mc < MPL_W4A8_ROW_PAD) mc = MPL_W4A8_ROW_PAD;
    for (int64_t c0 = 0; c0 < M; c0 += mc) {
        int64_t c1 = c0 + mc < M ? c0 + mc : M;
        for (int64_t pan = p0; pan < p1; pan += 2) {
            int np = p1 - pan < 2 ? 1 : 2;
            for (int v = 0; v < np; v++)
                unpack_panel(p->nib + (size_t)(pan + v) * (size_t)K * (MPL_W4A8_PANEL / 2), bscr + (size_t)v * (size_t)K * 16, K);
            for (int64_t m = c0; m < c1; m += 32) block32(j, m, pan, np, bscr, kb, cbuf, facc);
        }
    }
    _tile_release();
}

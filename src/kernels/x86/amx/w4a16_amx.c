/*
 * w4a16_amx.c -- AMX-BF16 prefill for x86_avx512_w4a16 (bf16 activations).
 *
 * Why AMX: on Sapphire Rapids vdpbf16ps zmm issues about once every two
 * cycles (measured ~105 GFLOP/s per core) and f32 FMA peaks near 210, below
 * the 300 GFLOP/s per thread this kernel aims at; tdpbf16ps does 16x16x32
 * in ~16 cycles.
 *
 * Per 64-channel block and per segment (one group, at most SEG inputs) the
 * weights are dequantized into a bf16 pair panel (the AMX B layout: a row is
 * 2 inputs x 64 channels), then each 32-row tile of x runs two 32-channel
 * halves with 2 A tiles x 2 B tiles -> 4 C tiles; the C tiles are spilled and
 * folded into c with the group scale, so the result is sum_g scale_g * acc_g
 * as in ref. Tile k-step: 32 inputs, or 16 when the group size is an odd
 * multiple of 16.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../avx512/w4a16_avx512.h"

/* Linux: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) grants the process AMX tile state. */
#define XW_ARCH_REQ_XCOMP_PERM 0x1023
#define XW_XFEATURE_XTILEDATA 18
/* Segment: 256 inputs x 64 channels of bf16 = 32 KiB panel, kept in L1 across row tiles. */
#define SEG_AMX 256

static pthread_once_t g_amx_once = PTHREAD_ONCE_INIT;
static bool g_amx_ok;

static void amx_request(void) {
#ifdef SYS_arch_prctl
    g_amx_ok = syscall(SYS_arch_prctl, XW_ARCH_REQ_XCOMP_PERM, XW_XFEATURE_XTILEDATA) == 0;
#else
    g_amx_ok = false;
#endif
}

bool mpl_xw_amx_available(void) {
    pthread_once(&g_amx_once, amx_request);
    return g_amx_ok;
}

typedef struct {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed, aligned(64))) tile_config;

/* Tiles: 0-3 C (A0B0, A0B1, A1B0, A1B1), 4-5 A (rows 0-15, 16-31), 6-7 B (channels +0, +16). */
static void configure(int kstep) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int t = 0; t < 4; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    for (int t = 4; t < 6; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = (uint16_t)(kstep * 2);
    }
    for (int t = 6; t < 8; t++) {
        cfg.rows[t] = (uint8_t)(kstep / 2);
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
}

/* c[0..31][h*32 .. h*32+31] += s * spilled C tiles (scratch: 4 tiles of 16 x 16 f32). */
static inline void fold(const float *scratch, const __m512 s[4], int h, float *c) {
    for (int t = 0; t < 4; t++) {
        int r0 = (t >> 1) * 16, v = 2 * h + (t & 1);
        for (int r = 0; r < 16; r++) {
            float *cp = c + (r0 + r) * 64 + 16 * v;
            _mm512_store_ps(cp, _mm512_fmadd_ps(_mm512_load_ps(scratch + t * 256 + r * 16), s[v], _mm512_load_ps(cp)));
        }
    }
}

void mpl_xw_gemm_amx(const mpl_xw_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b, void *panel_v,
                     float *c, void *scratch_v) {
    const mpl_xw_layout *l = &kn->l;
    const int64_t kp = kn->kp, gs = l->group_size, K = l->k;
    const uint16_t *xb = (const uint16_t *)xs;
    uint16_t *panel = panel_v;
    float *scratch = scratch_v;
    /* One group (group -1) may end off a 32 boundary: its panel is padded with zero rows up to kp. */
    const int kstep = (l->groups == 1 || gs % 32 == 0) ? 32 : 16;
    const int64_t rows = (m1 - m0 + 31) / 32 * 32;
    memset(c, 0, (size_t)rows * 64 * sizeof(float));
    configure(kstep);
    for (int64_t g = 0; g < l->groups; g++) {
        const uint8_t *grp = mpl_xw_group(l, b, g);
        __m512 s[4];
        for (int v = 0; v < 4; v++) s[v] = xw_load_scales(l, grp, v);
        for (int64_t ks = 0; ks < gs; ks += SEG_AMX) {
            int64_t len = gs - ks < SEG_AMX ? gs - ks : SEG_AMX;
            xw_dequant_bf16_panel(l, b, g, ks / 4, (ks + len) / 4, panel);
            int64_t lenp = (len + kstep - 1) / kstep * kstep;
            if (lenp > len) memset(panel + len * 64, 0, (size_t)(lenp - len) * 64 * 2);
            const uint16_t *xk = xb + g * gs + ks;
            for (int64_t m = m0; m < m0 + rows; m += 32) {
                float *cm = c + (m - m0) * 64;
                for (int h = 0; h < 2; h++) {
                    _tile_zero(0);
                    _tile_zero(1);
                    _tile_zero(2);
                    _tile_zero(3);
                    for (int64_t kk = 0; kk < lenp; kk += kstep) {
                        const uint16_t *a = xk + m * kp + kk;
                        const uint16_t *bp = panel + kk * 64 + h * 64;
                        _tile_loadd(4, a, kp * 2);
                        _tile_loadd(5, a + 16 * kp, kp * 2);
                        _tile_loadd(6, bp, 256);
                        _tile_loadd(7, bp + 32, 256);
                        _tile_dpbf16ps(0, 4, 6);
                        _tile_dpbf16ps(1, 4, 7);
                        _tile_dpbf16ps(2, 5, 6);
                        _tile_dpbf16ps(3, 5, 7);
                    }
                    _tile_stored(0, scratch, 64);
                    _tile_stored(1, scratch + 256, 64);
                    _tile_stored(2, scratch + 512, 64);
                    _tile_stored(3, scratch + 768, 64);
                    fold(scratch, s, h, cm);
                }
            }
        }
    }
    _tile_release();
    (void)K;
}

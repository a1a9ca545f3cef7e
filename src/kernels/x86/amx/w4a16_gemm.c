/*
 * w4a16_gemm.c -- the AMX-BF16 prefill path of x86_avx512_w4a16 (amx level; bf16
 * activations).
 *
 * Why AMX: on Sapphire Rapids vdpbf16ps zmm issues about once every two
 * cycles (measured ~105 GFLOP/s per core) and f32 FMA peaks near 210, below
 * the 300 GFLOP/s per thread this kernel aims at; tdpbf16ps does 16x16x32
 * in ~16 cycles.
 *
 * Per 64-channel block and per segment (one group, at most SEG inputs) the
 * weights are dequantized into a bf16 pair panel (the AMX B layout: a row is
 * 2 inputs x 64 channels), then each 16-row tile of x runs 1 A tile x 4 B
 * tiles -> 4 C tiles (16 rows x 64 channels); the C tiles are spilled and
 * folded into c with the group scale, so the result is sum_g scale_g * acc_g
 * as in ref. A group longer than a segment carries its C tiles from segment
 * to segment in memory (ga, in the panel buffer after the two panels): the
 * scale folds once per group. Tile k-step: 32 inputs, or 16 when the group size is an odd
 * multiple of 16.
 */
#include <string.h>

#include "../common/w4a16_zmm.inc"
#include "amx_tile.h"

/* Segment: 256 inputs x 64 channels of bf16 = 32 KiB panel, kept in L1 across row tiles. */
#define SEG_AMX 256

/* Carried C tiles (per row tile 4 x 16 x 16 f32) start here in the per-thread panel buffer; row
 * tiles per pass. */
#define GA_OFFSET (2 * SEG_AMX * 64 * 2)
#define GA_TILES ((int64_t)((MPL_X86_W4A16_PANEL_BYTES - GA_OFFSET) / (4 * 256 * 4)))

/* Tiles: 0-3 C (channels +0, +16, +32, +48), 4 and 7 A (alternating k-steps, so the next A
 * load need not wait for the tdpbf16ps reading the last one), 5-6 B (alternating likewise).
 * tr = rows per tile. */
static void configure(int kstep, int tr) {
    amx_tile_config cfg;
    amx_tile_init(&cfg);
    for (int t = 0; t < 4; t++) amx_tile_shape(&cfg, t, tr, 64);
    amx_tile_shape(&cfg, 4, tr, kstep * 2);
    amx_tile_shape(&cfg, 7, tr, kstep * 2);
    amx_tile_shape(&cfg, 5, kstep / 2, 64);
    amx_tile_shape(&cfg, 6, kstep / 2, 64);
    amx_tile_load(&cfg);
}

static int kstep_of(const mpl_x86_w4a16_layout *l) {
    /* One group (group -1) may end off a 32 boundary: its panel is padded with zero rows up to kp. */
    return (l->groups == 1 || l->group_size % 32 == 0) ? 32 : 16;
}

void mpl_x86_w4a16_prep_amx(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m,
                            void *xs) {
    uint16_t *xb = xs;
    const int64_t K = kn->l.k, kp = kn->kp, ks = kstep_of(&kn->l);
    const int32_t *perm = kn->l.perm;
    int64_t mpad = m1 == m ? (m + 15) / 16 * 16 : m1;
    for (int64_t r = m0; r < mpad; r++) {
        /* Row r of tile r/16: element (r, k) at tile (r/16, k/ks), offset (r%16)*ks + k%ks. */
        uint16_t *base = xb + (r / 16) * 16 * kp + (r % 16) * ks;
        const uint16_t *src = (const uint16_t *)x + r * K;
        for (int64_t k0 = 0; k0 < kp; k0 += ks) {
            uint16_t *dst = base + k0 * 16;
            if (r < m && !perm && k0 + ks <= K) {
                memcpy(dst, src + k0, (size_t)ks * 2);
                continue;
            }
            for (int64_t k = k0; k < k0 + ks; k++)
                dst[k - k0] = r < m && k < K ? (perm ? src[perm[k]] : src[k]) : 0;
        }
    }
}

/* c[0..tr-1][0..63] += s * spilled C tiles (scratch: tile t at t*256 floats, rows of 16). */
static inline void fold(const float *scratch, const __m512 s[4], int tr, float *c) {
    for (int r = 0; r < tr; r++)
        for (int t = 0; t < 4; t++) {
            float *cp = c + r * 64 + 16 * t;
            _mm512_store_ps(cp, _mm512_fmadd_ps(_mm512_load_ps(scratch + t * 256 + r * 16), s[t], _mm512_load_ps(cp)));
        }
}

/* The next segment's dequantization, spread over the current segment's k-steps. */
typedef struct {
    const mpl_x86_w4a16_layout *l;
    int64_t b, g, c0; /* block, group, first chunk of the segment */
    int64_t nch;      /* chunks to dequantize (0: no next segment) */
    int64_t done, it, iters;
    uint16_t *panel;
} dequant_job;

/* After k-step number j->it of iters: dequantize the chunks due by then. */
static inline void dequant_step(dequant_job *j) {
    int64_t to = j->nch * ++j->it / j->iters;
    if (to > j->done) {
        xw_dequant_bf16_panel(j->l, j->b, j->g, j->c0 + j->done, j->c0 + to, j->panel + j->done * 256);
        j->done = to;
    }
}

/* One segment's row tile: C = x tile (a) . panel (bp) over lenp inputs; after each k-step's
 * tile products are issued, a slice of the next segment is dequantized on the vector units
 * (measured: m=1 0.61 -> 0.45 ms at K = N = 4096: the TMUL's dependent chain and the
 * dequantization now overlap instead of the latter waiting behind the ROB). */
/* C starts from 0, or from the carried tiles gin (tile t at t * 256 floats, rows of 16). */
static inline void tile_product(const uint16_t *a, const uint16_t *bp, int64_t lenp, int kstep, dequant_job *dj,
                                const float *gin) {
    if (gin) {
        _tile_loadd(0, gin, 64);
        _tile_loadd(1, gin + 256, 64);
        _tile_loadd(2, gin + 512, 64);
        _tile_loadd(3, gin + 768, 64);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    int64_t kk = 0;
    for (; kk + 2 * kstep <= lenp; kk += 2 * kstep) {
        const uint16_t *b0 = bp + kk * 64, *b1 = b0 + kstep * 64;
        _tile_loadd(4, a + kk * 16, kstep * 2);
        _tile_loadd(5, b0, 256);
        _tile_dpbf16ps(0, 4, 5);
        _tile_loadd(6, b0 + 32, 256);
        _tile_dpbf16ps(1, 4, 6);
        _tile_loadd(5, b0 + 64, 256);
        _tile_dpbf16ps(2, 4, 5);
        _tile_loadd(6, b0 + 96, 256);
        _tile_dpbf16ps(3, 4, 6);
        dequant_step(dj);
        _tile_loadd(7, a + (kk + kstep) * 16, kstep * 2);
        _tile_loadd(5, b1, 256);
        _tile_dpbf16ps(0, 7, 5);
        _tile_loadd(6, b1 + 32, 256);
        _tile_dpbf16ps(1, 7, 6);
        _tile_loadd(5, b1 + 64, 256);
        _tile_dpbf16ps(2, 7, 5);
        _tile_loadd(6, b1 + 96, 256);
        _tile_dpbf16ps(3, 7, 6);
        dequant_step(dj);
    }
    if (kk < lenp) {
        const uint16_t *b0 = bp + kk * 64;
        _tile_loadd(4, a + kk * 16, kstep * 2);
        _tile_loadd(5, b0, 256);
        _tile_dpbf16ps(0, 4, 5);
        _tile_loadd(6, b0 + 32, 256);
        _tile_dpbf16ps(1, 4, 6);
        _tile_loadd(5, b0 + 64, 256);
        _tile_dpbf16ps(2, 4, 5);
        _tile_loadd(6, b0 + 96, 256);
        _tile_dpbf16ps(3, 4, 6);
        dequant_step(dj);
    }
}

/* Segment (g, ks): length, and its length padded to a k-step multiple. */
static int64_t seg_len(const mpl_x86_w4a16_layout *l, int64_t ks) {
    return l->group_size - ks < SEG_AMX ? l->group_size - ks : SEG_AMX;
}
static int64_t seg_padded(int64_t len, int kstep) { return (len + kstep - 1) / kstep * kstep; }
static void pad_segment(uint16_t *panel, int64_t len, int kstep) {
    int64_t lenp = seg_padded(len, kstep);
    if (lenp > len) memset(panel + len * 64, 0, (size_t)(lenp - len) * 64 * 2);
}

/*
 * Software pipeline (measured on Sapphire Rapids: spilling C tiles and folding them right
 * away left the TMUL idle, ~0.95 TFLOP/s; folding the previous spill while the next tile's
 * tdpbf16ps run, ~1.35): per row tile, issue its tile products with slices of the next
 * segment's dequantization in between, then on the vector units fold the previous spill,
 * then spill.
 */
static void gemm_pass(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                      void *panel_v, float *c, void *scratch_v) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t kp = kn->kp, gs = l->group_size;
    const uint16_t *xb = (const uint16_t *)xs;
    uint16_t *panels[2] = {panel_v, (uint16_t *)panel_v + SEG_AMX * 64};
    float *ga = (float *)((char *)panel_v + GA_OFFSET);
    float *spill[2] = {scratch_v, (float *)scratch_v + 1024};
    const int kstep = kstep_of(l);
    /* 16-row tiles; fewer rows configured when m < 16 (decode-sized calls pay for m rows only).
     * Rows past m1 in the last tile read x's zero padding. */
    const int64_t M = m1 - m0, tiles = (M + 15) / 16;
    const int tr = M < 16 ? (int)M : 16;
    memset(c, 0, (size_t)(tiles * 16) * 64 * sizeof(float));
    configure(kstep, tr);
    int64_t g = 0, ks = 0, len = seg_len(l, 0);
    int cur = 0, q = 0;
    bool pending = false;
    float *pend_c = NULL;
    __m512 pend_s[4], s[4];
    xw_dequant_bf16_panel(l, b, 0, 0, len / 4, panels[0]);
    pad_segment(panels[0], len, kstep);
    while (g < l->groups) {
        const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
        for (int v = 0; v < 4; v++) s[v] = xw_load_scales(l, grp, v);
        int64_t ng = g, nks = ks + SEG_AMX;
        if (nks >= gs) ng++, nks = 0;
        int64_t lenp = seg_padded(len, kstep), nlen = ng < l->groups ? seg_len(l, nks) : 0;
        dequant_job dj = {l, b, ng, nks / 4, nlen / 4, 0, 0, tiles * (lenp / kstep), panels[cur ^ 1]};
        const uint16_t *xk = xb + m0 * kp + (g * gs + ks) * 16;
        const bool first = ks == 0, last = ks + len == gs;
        for (int64_t t = 0; t < tiles; t++) {
            float *gt = ga + t * 1024;
            tile_product(xk + t * 16 * kp, panels[cur], lenp, kstep, &dj, first ? NULL : gt);
            if (!last) { /* carry the group's sums to its next segment */
                _tile_stored(0, gt, 64);
                _tile_stored(1, gt + 256, 64);
                _tile_stored(2, gt + 512, 64);
                _tile_stored(3, gt + 768, 64);
                continue;
            }
            if (pending) fold(spill[q ^ 1], pend_s, tr, pend_c);
            _tile_stored(0, spill[q], 64);
            _tile_stored(1, spill[q] + 256, 64);
            _tile_stored(2, spill[q] + 512, 64);
            _tile_stored(3, spill[q] + 768, 64);
            pending = true;
            pend_c = c + t * 16 * 64;
            for (int v = 0; v < 4; v++) pend_s[v] = s[v];
            q ^= 1;
        }
        if (nlen) pad_segment(panels[cur ^ 1], nlen, kstep);
        g = ng, ks = nks, len = nlen, cur ^= 1;
    }
    if (pending) fold(spill[q ^ 1], pend_s, tr, pend_c);
    _tile_release();
}

void mpl_x86_w4a16_gemm_amx(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                            void *panel_v, float *c, void *scratch_v) {
    /* Rows in passes of GA_TILES row tiles when a group spans segments (the carried tiles must fit);
     * a pass starts on a 16-row tile of x. */
    const int64_t pass = kn->l.group_size > SEG_AMX ? GA_TILES * 16 : m1 - m0;
    for (int64_t p0 = m0; p0 < m1; p0 += pass)
        gemm_pass(kn, xs, p0, m1 - p0 < pass ? m1 : p0 + pass, b, panel_v, c + (p0 - m0) * 64, scratch_v);
}

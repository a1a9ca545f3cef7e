/*
 * w4a16_gemm.c -- the vdpbf16ps prefill path of x86_avx512_w4a16 (avx512bf16 level; bf16
 * activations): per 64-channel block, each segment of inputs (one group, at most SEG_BF16
 * inputs) is dequantized once into an L1-resident bf16 pair panel of exact integers (the
 * layout of a vdpbf16ps operand), then every row tile of bf16 x runs a register-blocked
 * micro-kernel over it (6 rows x 64 channels: 24 fp32 accumulators per group, folded into c
 * with the group scale; a group longer than a segment carries its fp32 sums from segment to segment
 * in memory, ga after the panel, so the scale folds once per group). Worth it where AVX512-BF16
 * runs at twice the FMA rate (Zen 4/5); the f32 twin is avx512/w4a16_gemm.c.
 */
#include <string.h>

#include "../common/w4a16_zmm.inc"

/* Segment length: a 32 KiB panel (256 inputs x 64 bf16) stays in a 48 KiB L1. */
#define SEG_BF16 256
/* Carried group sums (rows x 64 f32) start here in the per-thread panel buffer; rows per pass. */
#define GA_OFFSET (SEG_BF16 * 64 * 2)
#define GA_ROWS ((int64_t)((MPL_X86_W4A16_PANEL_BYTES - GA_OFFSET) / (64 * 4)))
/* Row tile: 6 rows x 4 vectors = 24 accumulators + 4 weight vectors + 1 broadcast of 32 zmm. */
#define MR_MAX 6

/* acc = sum over len input pairs of x[r] * panel for MR rows (MR constant at each call site; one
 * vdpbf16ps does two inputs), from 0 (first) or the carried sums ga; then c[r][..] += scale * acc
 * (last) or acc carried into ga. */
XW_INLINE void micro_bf16(const uint16_t *xr, int64_t ldx, const uint16_t *panel, int64_t len, const __m512 s[4],
                          float *c, float *ga, int MR, bool first, bool last) {
    __m512 acc[MR_MAX][4];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) acc[r][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(ga + r * 64 + 16 * v);
    for (int64_t kp = 0; kp < len; kp++, panel += 128) {
        __m512bh w[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) w[v] = (__m512bh)_mm512_load_si512((const void *)(panel + 32 * v));
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            int32_t pair;
            memcpy(&pair, xr + r * ldx + 2 * kp, 4);
            __m512bh xb = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], w[v], xb);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            float *cp = c + r * 64 + 16 * v;
            if (last)
                _mm512_store_ps(cp, _mm512_fmadd_ps(acc[r][v], s[v], _mm512_load_ps(cp)));
            else
                _mm512_store_ps(ga + r * 64 + 16 * v, acc[r][v]);
        }
}

/* All row tiles of [m0, m1) over one segment of lp input pairs (the flags constant in each instance). */
XW_INLINE void tiles_bf16(const uint16_t *xk, int64_t kp, int64_t m0, int64_t m1, const uint16_t *panel, int64_t lp,
                          const __m512 s[4], float *c, float *ga, bool first, bool last) {
    int64_t m = m0;
    for (; m + MR_MAX <= m1; m += MR_MAX)
        micro_bf16(xk + m * kp, kp, panel, lp, s, c + (m - m0) * 64, ga + (m - m0) * 64, MR_MAX, first, last);
    float *ct = c + (m - m0) * 64, *gt = ga + (m - m0) * 64;
    switch (m1 - m) {
    case 5: micro_bf16(xk + m * kp, kp, panel, lp, s, ct, gt, 5, first, last); break;
    case 4: micro_bf16(xk + m * kp, kp, panel, lp, s, ct, gt, 4, first, last); break;
    case 3: micro_bf16(xk + m * kp, kp, panel, lp, s, ct, gt, 3, first, last); break;
    case 2: micro_bf16(xk + m * kp, kp, panel, lp, s, ct, gt, 2, first, last); break;
    case 1: micro_bf16(xk + m * kp, kp, panel, lp, s, ct, gt, 1, first, last); break;
    default: break;
    }
}

static void run_segment(const uint16_t *xk, int64_t kp, int64_t m0, int64_t m1, const uint16_t *panel, int64_t lp,
                        const __m512 s[4], float *c, float *ga, bool first, bool last) {
    if (first && last)
        tiles_bf16(xk, kp, m0, m1, panel, lp, s, c, ga, true, true);
    else if (first)
        tiles_bf16(xk, kp, m0, m1, panel, lp, s, c, ga, true, false);
    else if (last)
        tiles_bf16(xk, kp, m0, m1, panel, lp, s, c, ga, false, true);
    else
        tiles_bf16(xk, kp, m0, m1, panel, lp, s, c, ga, false, false);
}

void mpl_x86_w4a16_gemm_avx512bf16(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                                   void *panel_v, float *c, void *scratch) {
    (void)scratch;
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t kp = kn->kp, gs = l->group_size;
    const uint16_t *xb = (const uint16_t *)xs;
    uint16_t *panel = panel_v;
    float *ga = (float *)((char *)panel_v + GA_OFFSET);
    memset(c, 0, (size_t)(m1 - m0) * 64 * sizeof(float));
    /* Rows in passes of GA_ROWS when a group spans segments (the carried sums must fit). */
    const int64_t pass = gs > SEG_BF16 ? GA_ROWS : m1 - m0;
    for (int64_t p0 = m0; p0 < m1; p0 += pass) {
        const int64_t p1 = m1 - p0 < pass ? m1 : p0 + pass;
        float *cp = c + (p0 - m0) * 64;
        for (int64_t g = 0; g < l->groups; g++) {
            const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
            __m512 s[4];
            for (int v = 0; v < 4; v++) s[v] = xw_load_scales(l, grp, v);
            for (int64_t ks = 0; ks < gs; ks += SEG_BF16) {
                int64_t len = gs - ks < SEG_BF16 ? gs - ks : SEG_BF16;
                xw_dequant_bf16_panel(l, b, g, ks / 4, (ks + len) / 4, panel);
                run_segment(xb + g * gs + ks, kp, p0, p1, panel, len / 2, s, cp, ga, ks == 0, ks + len == gs);
            }
        }
    }
}

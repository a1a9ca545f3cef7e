/*
 * w4a16_gemm.c -- the prefill path of x86_avx2_w4a16 (avx2 level): per 64-channel block,
 * each segment of inputs (one group, at most SEG_F32) is dequantized once into an L1-resident
 * f32 panel of exact integers, then every row tile of x runs a 6 x 16 FMA micro-kernel over
 * it, four times across the block's channels, folding the group scale into c.
 */
#include <string.h>

#include "w4a16_ymm.h"

/* Prefill segment: 128 inputs x 64 channels of f32 = a 32 KiB panel in L1. */
#define SEG_F32 128
/* Prefill row tile: 6 rows x 2 vectors = 12 accumulators + 2 weights + 1 broadcast of 16 ymm. */
#define MR_MAX 6

static void dequant_f32_panel(const mpl_x86_w4a16_layout *l, int64_t b, int64_t g, int64_t c0, int64_t c1,
                              float *panel) {
    const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
    const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)c0 * 128;
    __m256 z[8];
    for (int h = 0; h < 8; h++) z[h] = load_zeros(l, grp, h);
    for (int64_t c = c0; c < c1; c++, wp += 128, panel += 4 * 64) {
#pragma GCC unroll 8
        for (int h = 0; h < 8; h++) {
            __m256i d = load_dwords(wp, h);
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) {
                __m256 w = _mm256_sub_ps(_mm256_sub_ps(nib_float(d, p), _mm256_set1_ps(nib_base(p))), z[h]);
                _mm256_store_ps(panel + xw_koff(p) * 64 + 8 * h, w);
            }
        }
    }
}

/* c[r][8h0 .. 8h0+15] += s * sum_k x[r][k] * panel[k][..] for MR rows. */
XW_INLINE void micro(const float *xr, int64_t ldx, const float *panel, int64_t len, __m256 s0, __m256 s1, float *c,
                     int MR) {
    __m256 acc[MR_MAX][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < len; k++, panel += 64) {
        __m256 w0 = _mm256_load_ps(panel), w1 = _mm256_load_ps(panel + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m256 xb = _mm256_broadcast_ss(xr + r * ldx + k);
            acc[r][0] = _mm256_fmadd_ps(xb, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xb, w1, acc[r][1]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        _mm256_store_ps(c + r * 64, _mm256_fmadd_ps(acc[r][0], s0, _mm256_load_ps(c + r * 64)));
        _mm256_store_ps(c + r * 64 + 8, _mm256_fmadd_ps(acc[r][1], s1, _mm256_load_ps(c + r * 64 + 8)));
    }
}

void mpl_x86_w4a16_gemm_avx2(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                             void *panel_v, float *c, void *scratch) {
    (void)scratch;
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const float *xf = (const float *)xs;
    float *panel = panel_v;
    memset(c, 0, (size_t)(m1 - m0) * 64 * sizeof(float));
    for (int64_t g = 0; g < l->groups; g++) {
        const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
        for (int64_t ks = 0; ks < gs; ks += SEG_F32) {
            int64_t len = gs - ks < SEG_F32 ? gs - ks : SEG_F32;
            dequant_f32_panel(l, b, g, ks / 4, (ks + len) / 4, panel);
            const float *xk = xf + g * gs + ks;
            for (int q = 0; q < 4; q++) {
                __m256 s0 = load_scales(l, grp, 2 * q), s1 = load_scales(l, grp, 2 * q + 1);
                const float *pq = panel + 16 * q;
                int64_t m = m0;
                for (; m + MR_MAX <= m1; m += MR_MAX)
                    micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, MR_MAX);
                switch (m1 - m) {
                case 5: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 5); break;
                case 4: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 4); break;
                case 3: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 3); break;
                case 2: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 2); break;
                case 1: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 1); break;
                default: break;
                }
            }
        }
    }
}

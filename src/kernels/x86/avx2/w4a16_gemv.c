/*
 * w4a16_gemv.c -- the decode path of x86_avx2_w4a16 (avx2 level): one row at a time, each
 * 64-channel block streamed from memory (or L2 for the rows after the first) and dequantized
 * in registers with the exponent trick of w4a16_ymm.h.
 */
#include "w4a16_ymm.h"

/* Prefetch distance for the decode stream: 1 KiB, as the AVX-512 kernel (see common/w4a16_zmm.inc). */
#define XW_PF_BYTES 1024

/*
 * Decode: c[0..63] for one row, inputs [k0, k1): 8 accumulators (one per 8 channels),
 * 4 broadcasts of the row's inputs per step, then dword, weight and zero registers:
 * 16 ymm. Further rows re-run the block from L2 (decode is taken for small m only).
 */
static void gemv_row(const mpl_x86_w4a16_kernel *kn, const float *xr, int64_t b, int64_t k0, int64_t k1, float *c) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t gs = l->group_size;
    const bool zp = l->zero_points != 0;
    for (int h = 0; h < 8; h++) _mm256_store_ps(c + 8 * h, _mm256_setzero_ps());
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
        const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)((ks - g * gs) / 4) * 128;
        __m256 acc[8];
#pragma GCC unroll 8
        for (int h = 0; h < 8; h++) acc[h] = _mm256_setzero_ps();
        for (int64_t k = ks; k < ke; k += 4, wp += 128) {
            _mm_prefetch((const char *)wp + XW_PF_BYTES, _MM_HINT_T0);
            _mm_prefetch((const char *)wp + XW_PF_BYTES + 64, _MM_HINT_T0);
            __m256 xb[4];
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) xb[p] = _mm256_broadcast_ss(xr + k + xw_koff(p));
#pragma GCC unroll 8
            for (int h = 0; h < 8; h++) {
                __m256i d = load_dwords(wp, h);
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++) {
                    /* Without zero points one subtract yields stored - 8; with them the zero
                     * (per channel) is subtracted after the exponent base (both exact). */
                    __m256 w = _mm256_sub_ps(nib_float(d, p), _mm256_set1_ps(nib_base(p) + (zp ? 0.0f : 8.0f)));
                    if (zp) w = _mm256_sub_ps(w, load_zeros(l, grp, h));
                    acc[h] = _mm256_fmadd_ps(xb[p], w, acc[h]);
                }
            }
        }
#pragma GCC unroll 8
        for (int h = 0; h < 8; h++)
            _mm256_store_ps(c + 8 * h, _mm256_fmadd_ps(acc[h], load_scales(l, grp, h), _mm256_load_ps(c + 8 * h)));
    }
}

void mpl_x86_w4a16_gemv_avx2(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0,
                             int64_t k1, float *c) {
    for (int64_t r = 0; r < m; r++) gemv_row(kn, xf + r * kn->l.k, b, k0, k1, c + r * 64);
}

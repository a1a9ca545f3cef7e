/*
 * w4a16_gemv_widths.c -- the decode path of x86_avx512_w4a16 (avx512 level) for the 8-, 3- and
 * 2-bit layouts (docs/layouts/x86_w4a16.md "Other widths"); w4a16_gemv.c runs the 4-bit one and
 * hands these over.
 *
 * One chunk (16 channels x 4 inputs, 8 * bits bytes) is one vector per input: its fields widened to
 * one dword per channel in channel order (xw_wchunk in common/w4a16_zmm.inc: a vpmovzx and shifts
 * and masks), converted to f32 and the zero subtracted (the bias, or the group's zero points): the
 * exact integer weights stored - zero of 16 channels, then one FMA per row with the broadcast input.
 * Per 16 weights: 1-2 field ops + vcvtdq2ps + vsubps + MR FMAs. The accumulators are in channel
 * order, so unlike the 4-bit line step nothing is reordered at the end.
 *
 * Streams and tiles as the 4-bit decode (w4a16_gemv.c says why): one row runs 4 blocks at once
 * (runs of MPL_X86_W4A16_AVX512_GEMV_BLOCKS from the driver), 2 rows 2 blocks, from 3 rows tiles of
 * up to 4 rows over one block; each group is summed in fp32 on its own and folded into c with its
 * scale once (the contract of include/mplinear.h).
 */
#include "../common/w4a16_zmm.inc"

/* Software prefetch, bytes ahead summed over the streams of a tile (as w4a16_gemv.c). */
#define XW_GEMV_PF_TOTAL 4096

/*
 * Rows xr[r * K ..] (r < MR) x blocks b .. b+NBLK-1 over inputs [k0, k1): row r of block i goes to
 * c + i * ldc + r * 64. MR * NBLK <= 4 (16 accumulators); MR, NBLK and BITS are constants at every
 * call site, so the accumulators stay in registers.
 */
#define A(r, i, v) (((r) * NBLK + (i)) * 4 + (v))
XW_INLINE void tile_w(const mpl_x86_w4a16_kernel *kn, const float *xr, const int MR, const int NBLK, const int BITS,
                      int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const size_t cb = (size_t)BITS * 8, sb = 4 * cb;
    const size_t hdr = l->scale_bytes + l->zero_bytes, pf = XW_GEMV_PF_TOTAL / NBLK;
    for (int i = 0; i < NBLK; i++)
        for (int r = 0; r < MR; r++)
            for (int v = 0; v < 4; v++) _mm512_store_ps(c + i * ldc + r * 64 + 16 * v, _mm512_setzero_ps());
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        __m512 acc[16], z[16];
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++) {
            grp[i] = mpl_x86_w4a16_group(l, b + i, g);
            wp[i] = mpl_x86_w4a16_group_weights(l, b + i, g) + (size_t)((ks - g * gs) / 4) * sb;
            for (size_t o = 0; o < hdr; o += 64) _mm_prefetch((const char *)grp[i] + pf + o, _MM_HINT_T0);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) z[4 * i + v] = xw_load_zeros_f32(l, grp[i], v);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) acc[A(r, i, v)] = _mm512_setzero_ps();
        }
        for (int64_t k = ks; k < ke; k += 4) {
            const float *xk = xr + k;
#pragma GCC unroll 4
            for (int i = 0; i < NBLK; i++) {
                for (size_t o = 0; o < sb; o += 64) _mm_prefetch((const char *)wp[i] + pf + o, _MM_HINT_T0);
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) {
                    __m512i s[4];
                    xw_wchunk(BITS, wp[i] + cb * (size_t)v, s);
#pragma GCC unroll 4
                    for (int e = 0; e < 4; e++) {
                        __m512 w = _mm512_sub_ps(_mm512_cvtepi32_ps(s[e]), z[4 * i + v]);
#pragma GCC unroll 4
                        for (int r = 0; r < MR; r++)
                            acc[A(r, i, v)] = _mm512_fmadd_ps(_mm512_set1_ps(xk[r * K + e]), w, acc[A(r, i, v)]);
                    }
                }
                wp[i] += sb;
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++)
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                __m512 s = xw_load_scales(l, grp[i], v);
#pragma GCC unroll 4
                for (int r = 0; r < MR; r++) {
                    float *cp = c + i * ldc + r * 64 + 16 * v;
                    _mm512_store_ps(cp, _mm512_fmadd_ps(acc[A(r, i, v)], s, _mm512_load_ps(cp)));
                }
            }
    }
}
#undef A

XW_INLINE void gemv_w(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, const int BITS, int64_t b,
                      int64_t nb, int64_t k0, int64_t k1, float *c) {
    const int64_t K = kn->l.k, ldc = m * 64;
    int64_t i = 0;
    if (m == 1) {
        for (; i + 4 <= nb; i += 4) tile_w(kn, xf, 1, 4, BITS, b + i, k0, k1, c + i * ldc, ldc);
        switch (nb - i) {
        case 3: tile_w(kn, xf, 1, 3, BITS, b + i, k0, k1, c + i * ldc, ldc); break;
        case 2: tile_w(kn, xf, 1, 2, BITS, b + i, k0, k1, c + i * ldc, ldc); break;
        case 1: tile_w(kn, xf, 1, 1, BITS, b + i, k0, k1, c + i * ldc, ldc); break;
        default: break;
        }
        return;
    }
    if (m == 2) {
        for (; i + 2 <= nb; i += 2) tile_w(kn, xf, 2, 2, BITS, b + i, k0, k1, c + i * ldc, ldc);
        if (i < nb) tile_w(kn, xf, 2, 1, BITS, b + i, k0, k1, c + i * ldc, ldc);
        return;
    }
    for (; i < nb; i++) {
        float *ci = c + i * ldc;
        int64_t r = 0;
        for (; r + 4 <= m; r += 4) tile_w(kn, xf + r * K, 4, 1, BITS, b + i, k0, k1, ci + r * 64, ldc);
        switch (m - r) {
        case 3: tile_w(kn, xf + r * K, 3, 1, BITS, b + i, k0, k1, ci + r * 64, ldc); break;
        case 2: tile_w(kn, xf + r * K, 2, 1, BITS, b + i, k0, k1, ci + r * 64, ldc); break;
        case 1: tile_w(kn, xf + r * K, 1, 1, BITS, b + i, k0, k1, ci + r * 64, ldc); break;
        default: break;
        }
    }
}

void mpl_x86_w4a16_gemv_widths_avx512(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b,
                                      int64_t nb, int64_t k0, int64_t k1, float *c) {
    switch (kn->l.bits) {
    case 8: gemv_w(kn, xf, m, 8, b, nb, k0, k1, c); break;
    case 3: gemv_w(kn, xf, m, 3, b, nb, k0, k1, c); break;
    default: gemv_w(kn, xf, m, 2, b, nb, k0, k1, c); break;
    }
}

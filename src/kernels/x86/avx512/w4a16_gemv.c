/*
 * w4a16_gemv.c -- the decode path of x86_avx512_w4a16 (avx512 level): streams
 * each 64-channel block once per call and dequantizes in registers.
 *
 * Inner step (4 inputs x 64 channels, 128 bytes of weights): each 32-byte
 * chunk is widened to one dword per channel holding its 4 nibbles; a nibble
 * shifted to bits 0..3 indexes a 16-entry f32 table with vpermps (which reads
 * only those bits), giving the exact integer weight; one FMA per row with the
 * broadcast input (zero points: one more subtract). Four vectors share every
 * broadcast, so per 16 weights the core spends ~1.75 dequant uops + 1 FMA per
 * row: ~19 GB/s of int4 per core from L2 on Sapphire Rapids, above its ~12-14 GB/s
 * of DRAM read bandwidth.
 * (vdpbf16ps was slower there: measured 15 GB/s, it issues about every 2 cycles.)
 */
#include "../common/w4a16_zmm.inc"

/*
 * c[r][0..63] (r < MR) = sum over inputs [k0, k1) of rows xr (stride K), scaled per group.
 * MR (1..4) and ZP are compile-time constants at every call site, so acc stays in registers.
 * Without zero points the table holds stored - 8; with them it holds stored and the
 * group's zero points are subtracted in registers (exact integers either way).
 */
XW_INLINE void gemv_rows(const mpl_x86_w4a16_kernel *kn, const float *xr, int MR, bool ZP, int64_t b, int64_t k0,
                         int64_t k1, float *c) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const __m512 lut = ZP ? _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                          : _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    /* Nibble positions in a channel's dword: bits 0-3 input 0, 4-7 input 2, 8-11 input 1, 12-15 input 3. */
    static const int shift[4] = {0, 4, 8, 12}, koff[4] = {0, 2, 1, 3};
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 4; v++) _mm512_store_ps(c + r * 64 + 16 * v, _mm512_setzero_ps());
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
        const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)((ks - g * gs) / 4) * 128;
        __m512 acc[4][4], z[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) z[v] = ZP ? xw_load_zeros_f32(l, grp, v) : _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();
        for (int64_t k = ks; k < ke; k += 4, wp += 128) {
            _mm_prefetch((const char *)wp + XW_PF_BYTES, _MM_HINT_T0);
            _mm_prefetch((const char *)wp + XW_PF_BYTES + 64, _MM_HINT_T0);
            __m512i d[4];
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) d[v] = _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(wp + 32 * v)));
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) {
                __m512 w[4];
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) {
                    w[v] = _mm512_permutexvar_ps(p ? _mm512_srli_epi32(d[v], shift[p]) : d[v], lut);
                    if (ZP) w[v] = _mm512_sub_ps(w[v], z[v]);
                }
#pragma GCC unroll 4
                for (int r = 0; r < MR; r++) {
                    __m512 xb = _mm512_set1_ps(xr[r * K + k + koff[p]]);
#pragma GCC unroll 4
                    for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(xb, w[v], acc[r][v]);
                }
            }
        }
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            __m512 s = xw_load_scales(l, grp, v);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++) {
                float *cp = c + r * 64 + 16 * v;
                _mm512_store_ps(cp, _mm512_fmadd_ps(acc[r][v], s, _mm512_load_ps(cp)));
            }
        }
    }
}

XW_INLINE void gemv_zp(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, bool ZP, int64_t b, int64_t k0,
                       int64_t k1, float *c) {
    const int64_t K = kn->l.k;
    int64_t r = 0;
    /* Four rows share each dequantized vector; the block (<= 1 MiB) stays in L2 between row tiles. */
    for (; r + 4 <= m; r += 4) gemv_rows(kn, xf + r * K, 4, ZP, b, k0, k1, c + r * 64);
    switch (m - r) {
    case 3: gemv_rows(kn, xf + r * K, 3, ZP, b, k0, k1, c + r * 64); break;
    case 2: gemv_rows(kn, xf + r * K, 2, ZP, b, k0, k1, c + r * 64); break;
    case 1: gemv_rows(kn, xf + r * K, 1, ZP, b, k0, k1, c + r * 64); break;
    default: break;
    }
}

void mpl_x86_w4a16_gemv_avx512(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0,
                               int64_t k1, float *c) {
    if (kn->l.zero_points)
        gemv_zp(kn, xf, m, true, b, k0, k1, c);
    else
        gemv_zp(kn, xf, m, false, b, k0, k1, c);
}

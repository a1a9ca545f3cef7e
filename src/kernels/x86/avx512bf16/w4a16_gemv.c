/*
 * w4a16_gemv.c -- the vdpbf16ps decode path of x86_avx512_w4a16 (avx512bf16 level; bf16 activations,
 * 4-bit layouts): streams each 64-channel block once per call, like the f32 decode
 * (avx512/w4a16_gemv.c), but dequantizes straight into bf16 pairs for vdpbf16ps instead of f32
 * vectors for FMA.
 *
 * A 32-byte chunk v of a step holds channel 16v + i in bytes 2i (inputs j0 low nibble, j0+2 high)
 * and 2i+1 (j0+1, j0+3) (docs/layouts/x86_w4a16.md). Zero-extended to words (vpmovzxbw), dword i is
 * (j0 | j0+2 << 4, j0+1 | j0+3 << 4): vpermw, which reads bits 0-4 of each word, looks both words up
 * in a 32-entry table of bf16 integers at once -- without zero points the table repeats its 16 values
 * (stored - 8), so bit 4 (the high nibble's low bit) does not matter -- giving the bf16 pair (w[j0],
 * w[j0+1]) of channel 16v + i, the operand of one vdpbf16ps with the broadcast pair (x[j0], x[j0+1]).
 * The words shifted right by 4 give (w[j0+2], w[j0+3]). With zero points the nibbles are masked and
 * offset by 16 - z into the -16..15 table (as the bf16 prefill's panel dequantizer does).
 * Per 64 weights at one row: 1 widening load, 1 shift, 2 vpermw, 2 vdpbf16ps (6 uops) against the
 * f32 decode's 11-12 (4 vpermps, 4 FMA, 3-4 shifts); each further row adds 2 vdpbf16ps. The products
 * are exact (integers |w| <= 15 times bf16 x), summed in fp32 two at a time within the group, and the
 * group scale is applied once per group: mplinear.h's W4A16 contract.
 *
 * Streams as the f32 decode: one row runs 4 blocks at once, 2 rows 2 blocks; from 3 rows, tiles of up
 * to 4 rows over one block (the block stays in L2 between row tiles).
 */
#include <string.h>

#include "../common/w4a16_zmm.inc"

/* Software prefetch, bytes ahead summed over the streams of a tile (the f32 decode's distance). */
#define XB_GEMV_PF_TOTAL 4096

/* bf16 bits of (i % 16) - 8 for i = 0..31: stored - 8, index bit 4 ignored. */
XW_INLINE __m512i lut_b8_twice(void) {
    const __m512i t = xw_bf16_b8_lut(); /* entries 0..15: stored - 8 */
    return _mm512_permutexvar_epi16(_mm512_and_si512(
                                        _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
                                                         15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                        _mm512_set1_epi16(15)),
                                    t);
}

XW_INLINE __m512bh bcast_pair(const uint16_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return (__m512bh)_mm512_set1_epi32(v);
}

/* acc + w . (x[0], x[1]), the pair broadcast by the vdpbf16ps itself (m32bcst memory operand): the tiles of
 * 3-4 rows use each pair for 4 vdpbf16ps, and a separate vpbroadcastd per pair measured 1.5-2.5% slower
 * (Zen 4 VM, 4096x4096 hot, 1 thread, thread CPU time: m=64 9.94 vs 9.74 ms, m=256 39.9 vs 39.1). Taller
 * tiles (5-7 rows, free of broadcast registers this way) measured slower still (m=256: 41.0-42.4 ms). */
XW_INLINE __m512 dp_mem(__m512 acc, __m512bh w, const uint16_t *p) {
    __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const uint32_t *)(const void *)p));
    return acc;
}

/*
 * Rows xb[r * kp ..] (r < MR) x blocks b .. b+NBLK-1 over inputs [k0, k1): row r of block i goes to
 * c + i * ldc + r * 64, in channel order. MR * NBLK <= 4 (16 accumulators); MR, NBLK and ZP are
 * constants at every call site.
 */
#define A(r, i, v) (((r) * NBLK + (i)) * 4 + (v))
XW_INLINE void tile(const mpl_x86_w4a16_kernel *kn, const uint16_t *xb, const int MR, const int NBLK, const bool ZP,
                    int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t kp = kn->kp, gs = l->group_size;
    const size_t pf = XB_GEMV_PF_TOTAL / NBLK;
    const __m512i lut = ZP ? xw_bf16_int_lut() : lut_b8_twice(), low = _mm512_set1_epi16(15);
    xw_tile_zero(c, ldc, MR, NBLK);
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        __m512 acc[16];
        __m512i zo[16];
        xw_tile_group(l, b, g, ks, l->step_bytes, pf, NBLK, grp, wp);
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) zo[4 * i + v] = ZP ? xw_zero_offsets_w16(l, grp[i], v) : _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) acc[A(r, i, v)] = _mm512_setzero_ps();
        }
        for (int64_t k = ks; k < ke; k += 4) {
            __m512bh xa[2], xc[2]; /* tiles of 1-2 rows; taller ones broadcast in the vdpbf16ps (dp_mem) */
            if (MR < 3)
                for (int r = 0; r < MR; r++) {
                    xa[r & 1] = bcast_pair(xb + r * kp + k);
                    xc[r & 1] = bcast_pair(xb + r * kp + k + 2);
                }
#pragma GCC unroll 4
            for (int i = 0; i < NBLK; i++) {
                _mm_prefetch((const char *)wp[i] + pf, _MM_HINT_T0);
                _mm_prefetch((const char *)wp[i] + pf + 64, _MM_HINT_T0);
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) {
                    const __m512i by = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(wp[i] + 32 * v)));
                    __m512i lo = by, hi = _mm512_srli_epi16(by, 4);
                    if (ZP) {
                        lo = _mm512_add_epi16(_mm512_and_si512(by, low), zo[4 * i + v]);
                        hi = _mm512_add_epi16(hi, zo[4 * i + v]);
                    }
                    const __m512bh wa = (__m512bh)_mm512_permutexvar_epi16(lo, lut);
                    const __m512bh wc = (__m512bh)_mm512_permutexvar_epi16(hi, lut);
#pragma GCC unroll 4
                    for (int r = 0; r < MR; r++)
                        acc[A(r, i, v)] =
                            MR >= 3 ? dp_mem(dp_mem(acc[A(r, i, v)], wa, xb + r * kp + k), wc, xb + r * kp + k + 2)
                                    : _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc[A(r, i, v)], wa, xa[r & 1]), wc, xc[r & 1]);
                }
                wp[i] += 128;
            }
        }
        xw_tile_fold(l, grp, acc, c, ldc, MR, NBLK);
    }
}
#undef A

XW_INLINE void gemv_zp(const mpl_x86_w4a16_kernel *kn, const uint16_t *xb, int64_t m, bool ZP, int64_t b, int64_t nb,
                       int64_t k0, int64_t k1, float *c) {
#define TILE(xr, MR, NBLK, bb, cc, ldc) tile(kn, xr, MR, NBLK, ZP, bb, k0, k1, cc, ldc)
    XW_GEMV_TILES(TILE, xb, kn->kp, m, b, nb, c);
#undef TILE
}

void mpl_x86_w4a16_gemv_avx512bf16(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b, int64_t nb,
                                   int64_t k0, int64_t k1, float *c) {
    /* 4-bit layouts only (the path's can_implement) */
    if (kn->l.zero_points)
        gemv_zp(kn, xs, m, true, b, nb, k0, k1, c);
    else
        gemv_zp(kn, xs, m, false, b, nb, k0, k1, c);
}

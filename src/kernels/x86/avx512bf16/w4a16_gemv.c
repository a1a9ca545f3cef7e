/*
 * w4a16_gemv.c -- the vdpbf16ps decode path of x86_avx512_w4a16 (avx512bf16 level; bf16 activations,
 * every width: the 4-bit tile, then tile_w for 2 and 3 bits and tile8 for 8): streams each 64-channel
 * block once per call, like the f32 decode (avx512/w4a16_gemv.c), but dequantizes straight into bf16
 * pairs for vdpbf16ps instead of f32 vectors for FMA.
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

/* Software prefetch, bytes ahead summed over the streams of a tile: 8 KiB (2 KiB a stream at one row), twice the
 * f32 decode's. Zen 5 VM, 4096x14336 / 14336x4096 m = 1, 1 thread, cold (mplbench): 4 KiB ran the 2-bit step about
 * 150 ns ahead of its loads and the one core read 26-27 GB/s; 8 KiB: uint2b2 587 / 571 -> 545 / 510 us (73-76% of
 * read BW), uint4b8 922 / 884 -> 785 / 792 us (92-95%), uint8b128 1.70 / 1.61 -> 1.58 / 1.54 ms (93-95%); 16 KiB:
 * 2-bit level with 8, 4-bit back to 913 / 840 us. (Zen 4 not re-measured; it streams at the same distance.) */
#define XB_GEMV_PF_TOTAL 8192

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

/*
 * 8-bit (docs/layouts/x86_w4a16.md "Other widths"): half h of a chunk, widened to words, is already the
 * pair row of inputs (j0 + 2h, j0 + 2h + 1), one word per stored byte. A byte is more than vpermw's 5-bit
 * index, so each weight goes in as two exact parts w = 16 * hi + lo: lo = w & 15 (the word's bits 0-3:
 * vpermw on the word itself through a table repeating 0..15) and hi = w >> 4 (arithmetic: -16..15, or
 * stored >> 4 - 8 without zero points) through a table of 16 * hi, both exact in bf16 and their products
 * with bf16 x exact in fp32 (mplinear.h: "a product as two exact parts"). Per 32 weights at one row: 1
 * widening load, 1 shift (and 1 subtract with zero points), 2 vpermw, 2 vdpbf16ps: the 4-bit chunk's cost
 * per byte, where the f32 decode spends 2 conversions, 2 subtracts and 2 FMAs per 16 weights.
 */
XW_INLINE __m512i bf16_words(__m512 lo, __m512 hi) { /* words 0-15 from lo, 16-31 from hi (exact values) */
    const __m256i a = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(lo), 16));
    const __m256i b = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(hi), 16));
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}
XW_INLINE __m512 iota16(float base, float step) {
    return _mm512_fmadd_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_ps(step),
                           _mm512_set1_ps(base));
}

/* The zero points of vector v of a group, each in both words of its channel's dword. */
XW_INLINE __m512i zero_words(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int v) {
    const __m512i z = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(grp + l->scale_bytes + 16 * (size_t)v)));
    return _mm512_or_si512(z, _mm512_slli_epi32(z, 16));
}

#define A(r, i, v) (((r) * NBLK + (i)) * 4 + (v))
XW_INLINE void tile8(const mpl_x86_w4a16_kernel *kn, const uint16_t *xb, const int MR, const int NBLK, const bool ZP,
                     int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t kp = kn->kp, gs = l->group_size;
    const size_t pf = XB_GEMV_PF_TOTAL / NBLK;
    /* lo: index bits 0-4 = (w & 15) + 16 (bit 4 of w): entries 0..15 twice. hi: without zero points
     * stored >> 4 = 0..15 -> 16 (i - 8); with them the 5-bit two's complement of w >> 4 -> 16 * that. */
    const __m512i lut_lo = bf16_words(iota16(0, 1), iota16(0, 1));
    const __m512i lut_hi = ZP ? bf16_words(iota16(0, 16), iota16(-256, 16)) : bf16_words(iota16(-128, 16), iota16(0, 0));
    xw_tile_zero(c, ldc, MR, NBLK);
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        __m512 acc[16];
        __m512i zw[16];
        xw_tile_group(l, b, g, ks, l->step_bytes, pf, NBLK, grp, wp);
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                zw[4 * i + v] = ZP ? zero_words(l, grp[i], v) : _mm512_setzero_si512();
            }
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) acc[A(r, i, v)] = _mm512_setzero_ps();
        }
        for (int64_t k = ks; k < ke; k += 4) {
#pragma GCC unroll 4
            for (int i = 0; i < NBLK; i++) {
#pragma GCC unroll 4
                for (int o = 0; o < 256; o += 64) _mm_prefetch((const char *)wp[i] + pf + o, _MM_HINT_T0);
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++)
#pragma GCC unroll 2
                    for (int h = 0; h < 2; h++) {
                        __m512i w = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(wp[i] + 64 * v + 32 * h)));
                        __m512i hi;
                        if (ZP) {
                            w = _mm512_sub_epi16(w, zw[4 * i + v]);
                            hi = _mm512_srai_epi16(w, 4);
                        } else {
                            hi = _mm512_srli_epi16(w, 4);
                        }
                        const __m512bh wh = (__m512bh)_mm512_permutexvar_epi16(hi, lut_hi);
                        const __m512bh wl = (__m512bh)_mm512_permutexvar_epi16(w, lut_lo);
#pragma GCC unroll 4
                        for (int r = 0; r < MR; r++) {
                            const uint16_t *xp = xb + r * kp + k + 2 * h;
                            acc[A(r, i, v)] = MR >= 3 ? dp_mem(dp_mem(acc[A(r, i, v)], wh, xp), wl, xp)
                                                      : _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc[A(r, i, v)], wh,
                                                                                          bcast_pair(xp)),
                                                                         wl, bcast_pair(xp));
                        }
                    }
                wp[i] += 256;
            }
        }
        xw_tile_fold(l, grp, acc, c, ldc, MR, NBLK);
    }
}
#undef A

/*
 * 2- and 3-bit (docs/layouts/x86_w4a16.md "Other widths"): a chunk's fields widened to one dword per channel
 * (xw_wchunk's first step), then per pair of inputs one table lookup gives the bf16 pair (w[j], w[j+1]) of
 * 16 channels, the vdpbf16ps operand:
 *   2-bit, no zero points: bits 0-3 of the dword are (s[j0], s[j0+1]): vpermd through 16 dword pairs; the dword
 *     shifted right by 4 gives (s[j0+2], s[j0+3]).
 *   otherwise the dword d is or'ed with d << 16 - f (f = 2 or 3 bits per field), so the low word's bits 0.. hold
 *     s[j0] and the high word's s[j0+1] (and, shifted right by 2f, s[j0+2] and s[j0+3]); vpermw looks each word
 *     up, reading its bits 0-4: without zero points through a table periodic in the field (the bits above it do
 *     not matter); with them the field is masked and the group's zero point or'ed in above it (one vpternlogd),
 *     index field + z << f, through a table of field - z (2-bit: 16 entries, vpermw; 3-bit: 64, vpermt2w).
 * Every value is the exact integer stored - zero; products and sums as the 4-bit tile. Per 64 weights at one
 * row: 2 table lookups, 2 vdpbf16ps and 2-7 field ops (the f32 decode: 4 conversions, 4 subtracts, 4 FMAs and
 * the field ops, or the 2-/3-bit product tables of avx512/w4a16_gemv_widths.c).
 */
XW_INLINE uint16_t bf16_of_int(int v) {
    const float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

#define A(r, i, v) (((r) * NBLK + (i)) * 4 + (v))
XW_INLINE void tile_w(const mpl_x86_w4a16_kernel *kn, const uint16_t *xb, const int MR, const int NBLK, const int BITS,
                      const bool ZP, int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t kp = kn->kp, gs = l->group_size;
    const size_t cb = (size_t)BITS * 8, sb = 4 * cb;
    const size_t pf = XB_GEMV_PF_TOTAL / NBLK;
    const int F = BITS, fm = (1 << BITS) - 1, bias = 1 << (BITS - 1);
    /* the tables: t[0..63] words (3-bit with zero points: 64 entries; vpermw uses t[0..31]) */
    uint16_t t[64] __attribute__((aligned(64)));
    if (BITS == 2 && !ZP) {
        for (int i = 0; i < 16; i++) {
            t[2 * i] = bf16_of_int((i & 3) - bias);
            t[2 * i + 1] = bf16_of_int((i >> 2) - bias);
        }
    } else if (!ZP) {
        for (int i = 0; i < 32; i++) t[i] = bf16_of_int((i & fm) - bias);
    } else {
        for (int i = 0; i < 64; i++) t[i] = bf16_of_int((i & fm) - ((i >> F) & fm));
    }
    const __m512i lut0 = _mm512_load_si512((const void *)t), lut1 = _mm512_load_si512((const void *)(t + 32));
    const __m512i fmask = _mm512_set1_epi32(fm | fm << 16);
    xw_tile_zero(c, ldc, MR, NBLK);
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        __m512 acc[16];
        __m512i zq[16];
        xw_tile_group(l, b, g, ks, sb, pf, NBLK, grp, wp);
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                /* z << F in both words of the channel's dword */
                zq[4 * i + v] = ZP ? _mm512_slli_epi32(zero_words(l, grp[i], v), F) : _mm512_setzero_si512();
            }
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) acc[A(r, i, v)] = _mm512_setzero_ps();
        }
        for (int64_t k = ks; k < ke; k += 4) {
            __m512bh xa[2], xc[2];
            if (MR < 3)
                for (int r = 0; r < MR; r++) {
                    xa[r & 1] = bcast_pair(xb + r * kp + k);
                    xc[r & 1] = bcast_pair(xb + r * kp + k + 2);
                }
#pragma GCC unroll 4
            for (int i = 0; i < NBLK; i++) {
                for (size_t o = 0; o < sb; o += 64) _mm_prefetch((const char *)wp[i] + pf + o, _MM_HINT_T0);
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) {
                    const uint8_t *ch = wp[i] + mpl_x86_w4a16_chunk_lo(BITS, v);
                    __m512i d;
                    if (BITS == 2) {
                        d = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)ch));
                    } else { /* the 12-bit words, as xw_wchunk builds them */
                        const __m512i sh = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
                        const __m512i lo = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)ch));
                        const __m128i h = _mm_loadl_epi64((const __m128i *)(wp[i] + mpl_x86_w4a16_chunk_hi3(v)));
                        const __m512i hi = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi64(h, h)), sh);
                        d = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 8));
                    }
                    __m512i wa, wc;
                    if (BITS == 2 && !ZP) {
                        wa = _mm512_permutexvar_epi32(d, lut0);
                        wc = _mm512_permutexvar_epi32(_mm512_srli_epi32(d, 4), lut0);
                    } else {
                        const __m512i dd = _mm512_or_si512(d, _mm512_slli_epi32(d, 16 - F));
                        __m512i ia = dd, ic = _mm512_srli_epi32(dd, 2 * F);
                        if (ZP) { /* (index & fmask) | zq */
                            ia = _mm512_ternarylogic_epi32(ia, fmask, zq[4 * i + v], 0xEA);
                            ic = _mm512_ternarylogic_epi32(ic, fmask, zq[4 * i + v], 0xEA);
                        }
                        if (BITS == 3 && ZP) {
                            wa = _mm512_permutex2var_epi16(lut0, ia, lut1);
                            wc = _mm512_permutex2var_epi16(lut0, ic, lut1);
                        } else {
                            wa = _mm512_permutexvar_epi16(ia, lut0);
                            wc = _mm512_permutexvar_epi16(ic, lut0);
                        }
                    }
#pragma GCC unroll 4
                    for (int r = 0; r < MR; r++)
                        acc[A(r, i, v)] =
                            MR >= 3 ? dp_mem(dp_mem(acc[A(r, i, v)], (__m512bh)wa, xb + r * kp + k), (__m512bh)wc,
                                             xb + r * kp + k + 2)
                                    : _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc[A(r, i, v)], (__m512bh)wa, xa[r & 1]),
                                                       (__m512bh)wc, xc[r & 1]);
                }
                wp[i] += sb;
            }
        }
        xw_tile_fold(l, grp, acc, c, ldc, MR, NBLK);
    }
}
#undef A

XW_INLINE void gemv_w(const mpl_x86_w4a16_kernel *kn, const uint16_t *xb, int64_t m, const int BITS, const bool ZP,
                      int64_t b, int64_t nb, int64_t k0, int64_t k1, float *c) {
#define TILE(xr, MR, NBLK, bb, cc, ldc) tile_w(kn, xr, MR, NBLK, BITS, ZP, bb, k0, k1, cc, ldc)
    XW_GEMV_TILES(TILE, xb, kn->kp, m, b, nb, c);
#undef TILE
}

XW_INLINE void gemv_zp(const mpl_x86_w4a16_kernel *kn, const uint16_t *xb, int64_t m, bool ZP, int64_t b, int64_t nb,
                       int64_t k0, int64_t k1, float *c) {
#define TILE(xr, MR, NBLK, bb, cc, ldc) tile(kn, xr, MR, NBLK, ZP, bb, k0, k1, cc, ldc)
    XW_GEMV_TILES(TILE, xb, kn->kp, m, b, nb, c);
#undef TILE
}

XW_INLINE void gemv8_zp(const mpl_x86_w4a16_kernel *kn, const uint16_t *xb, int64_t m, bool ZP, int64_t b, int64_t nb,
                        int64_t k0, int64_t k1, float *c) {
#define TILE(xr, MR, NBLK, bb, cc, ldc) tile8(kn, xr, MR, NBLK, ZP, bb, k0, k1, cc, ldc)
    XW_GEMV_TILES(TILE, xb, kn->kp, m, b, nb, c);
#undef TILE
}

void mpl_x86_w4a16_gemv_avx512bf16(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b, int64_t nb,
                                   int64_t k0, int64_t k1, float *c) {
    const bool zp = kn->l.zero_points;
    if (kn->l.bits == 2 && zp)
        gemv_w(kn, xs, m, 2, true, b, nb, k0, k1, c);
    else if (kn->l.bits == 2)
        gemv_w(kn, xs, m, 2, false, b, nb, k0, k1, c);
    else if (kn->l.bits == 3 && zp)
        gemv_w(kn, xs, m, 3, true, b, nb, k0, k1, c);
    else if (kn->l.bits == 3)
        gemv_w(kn, xs, m, 3, false, b, nb, k0, k1, c);
    else if (kn->l.bits == 8 && kn->l.zero_points)
        gemv8_zp(kn, xs, m, true, b, nb, k0, k1, c);
    else if (kn->l.bits == 8)
        gemv8_zp(kn, xs, m, false, b, nb, k0, k1, c);
    else if (kn->l.zero_points)
        gemv_zp(kn, xs, m, true, b, nb, k0, k1, c);
    else
        gemv_zp(kn, xs, m, false, b, nb, k0, k1, c);
}

/*
 * w4a16_gemv.c -- the decode path of x86_avx512_w4a16 (avx512 level): streams each 64-channel
 * block once per call and dequantizes in registers.
 *
 * Line step: a 64-byte line of a 128-byte step holds channels 32h..32h+31 (h = 0, 1) of a block x
 * inputs j0..j0+3; dword i of the line holds channel 32h+2i in its low word and 32h+2i+1 in its
 * high word, each word with its inputs at bits 0-3 (j0), 4-7 (j0+2), 8-11 (j0+1), 12-15 (j0+3)
 * (docs/layouts/x86_w4a16.md). A nibble moved to bits 0-3 of the dword indexes a 16-entry f32
 * table with vpermps (which reads only those bits): the exact integer weights of 16 channels, the
 * even ones (E) or the odd ones (O), and one FMA per row with the broadcast input. The
 * accumulators hold channels in that E/O order; scales and zero points are loaded in it (free for
 * bf16 scales: the even and odd words of one load), and the outputs are put back in channel
 * order once per call. The 8-, 3- and 2-bit layouts run in w4a16_gemv_widths.c.
 *
 * Zero points (uint4: AWQ, asymmetric GPTQ) cost no work per weight: the table holds stored values and
 * the zero parts come once per group (xw_zero_parts in common/w4a16_zmm.inc says how, with the figures).
 *
 * Per 64 weights (half a line) and per row: 4 vpermps + 4 FMA, plus 3-4 shifts that move each byte
 * of the line's dwords to bits 0-7 (and its high nibble to 0-3): 11-12 ALU uops per 64 weights at
 * one row, against 12 before (vpmovzxwd + 3 shifts + 4 vpermps + 4 FMA per 32-byte chunk). Loads
 * at byte offsets 1..3 instead of the shifts (10 uops) were slower: they split cache lines.
 *
 * Streams: one row runs 4 blocks at once (a run of MPL_X86_W4A16_AVX512_GEMV_BLOCKS from the
 * driver), 2 rows 2 blocks, so every broadcast of x feeds 16 FMAs and 4 (2) separate streams of
 * weights are in flight. One stream was the limit before: the weights arrived at ~8 GB/s, about
 * what ~1 KiB in flight gives at DRAM latency (Sapphire Rapids host of the H200 machine, 54-59% of
 * the read bandwidth), while W4A8 decode, reading 4 panels at once, reached 88-91%.
 * From 3 rows the rows run in tiles of 4 over one block at a time (16 accumulators), the block
 * (<= 1 MiB) staying in L2 between row tiles.
 */
#include "../common/w4a16_zmm.inc"

/* Software prefetch, bytes ahead summed over the streams of a tile (4 KiB: 1 KiB a stream at one
 * row, the distance W4A8 decode measured best on Sapphire Rapids: none 82-88% of read BW, 1 KiB
 * 94-109%, 4 KiB no better). */
#define XW_GEMV_PF_TOTAL 4096

/* Scales of group grp, channels 32h + 2i + e (i = 0..15) as f32: the E (e = 0) or O (e = 1) vector. */
XW_INLINE __m512 scales_eo(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int h, int e) {
    if (l->scale_fmt == MPL_X86_W4A16_SCALE_F32) {
        const float *s = (const float *)grp + 32 * h;
        const __m512i idx = e ? _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31)
                              : _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        return _mm512_permutex2var_ps(_mm512_load_ps(s), idx, _mm512_load_ps(s + 16));
    }
    /* dword i: the 16-bit scale of channel 32h+2i in the low word, of 32h+2i+1 in the high word */
    __m512i d = _mm512_load_si512((const void *)(grp + 64 * h));
    if (l->scale_fmt == MPL_X86_W4A16_SCALE_BF16)
        return _mm512_castsi512_ps(e ? _mm512_and_si512(d, _mm512_set1_epi32((int)0xffff0000u)) : _mm512_slli_epi32(d, 16));
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(e ? _mm512_srli_epi32(d, 16) : d));
}

/* Zero points of group grp, channels 32h + 2i + e, in bits 0-7 of dword i (vpermps indexes: it reads bits
 * 0-3 only, and a 4-bit zero point is < 16). */
XW_INLINE __m512i zeros_eo(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int h, int e) {
    /* dword i: the zero point of channel 32h+2i in byte 0, of 32h+2i+1 in byte 1 */
    __m512i d = _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(grp + l->scale_bytes + 32 * (size_t)h)));
    return e ? _mm512_srli_epi32(d, 8) : d;
}

/*
 * Rows xr[r * K ..] (r < MR) x blocks b .. b+NBLK-1 over inputs [k0, k1): row r of block i goes to
 * c + i * ldc + r * 64, in channel order. MR * NBLK <= 4 (16 accumulators); MR, NBLK and ZP are
 * constants at every call site, so the accumulators stay in registers. Without zero points the
 * table holds stored - 8 (exact integers); with them it holds stored, and zt[r] the zero parts
 * (xw_zero_parts). Each group is summed in fp32 on its own and folded into c with its scale once.
 */
#define A(r, i, q) (((r) * NBLK + (i)) * 4 + (q))
XW_INLINE void tile(const mpl_x86_w4a16_kernel *kn, const float *xr, const int MR, const int NBLK, const bool ZP,
                    int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const size_t hdr = l->scale_bytes + l->zero_bytes, pf = XW_GEMV_PF_TOTAL / NBLK;
    const __m512 lut = ZP ? _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                          : _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    for (int i = 0; i < NBLK; i++)
        for (int r = 0; r < MR; r++)
            for (int q = 0; q < 4; q++) _mm512_store_ps(c + i * ldc + r * 64 + 16 * q, _mm512_setzero_ps());
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        /* acc[A(r, i, q)]: row r, block i, vector q = 2h + e (line h, E (e = 0) or O (e = 1)
         * channels). Flat arrays: GCC keeps them in registers more readily. zt[r] lane z: the group's
         * sum of x * (-z) of row r (ZP). */
        __m512 acc[16], zt[4];
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++) {
            grp[i] = mpl_x86_w4a16_group(l, b + i, g);
            wp[i] = mpl_x86_w4a16_group_weights(l, b + i, g) + (size_t)((ks - g * gs) / 4) * 128;
            /* The stream's prefetch runs pf bytes ahead of the weights; the lines it skipped while
             * the weights pointer jumped over this group's scales and zeros: */
            for (size_t o = 0; o < hdr; o += 64) _mm_prefetch((const char *)grp[i] + pf + o, _MM_HINT_T0);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) acc[A(r, i, q)] = _mm512_setzero_ps();
        }
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++) zt[r] = _mm512_setzero_ps();
        for (int64_t k = ks; k < ke; k += 4) {
            const float *xk = xr + k;
            if (ZP) xw_zero_parts(xk, K, MR, zt);
#pragma GCC unroll 4
            for (int i = 0; i < NBLK; i++) {
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
                    const uint8_t *lp = wp[i] + 64 * h;
                    _mm_prefetch((const char *)lp + pf, _MM_HINT_T0);
#pragma GCC unroll 2
                    for (int e = 0; e < 2; e++) {
                        /* a: byte 2e of each dword (input j0 low, j0+2 high nibble) moved to bits 0-7;
                         * o: byte 2e+1 (j0+1 low, j0+3 high); bits above are never read. One aligned
                         * load of the line and shifts: loads at byte offsets 1..3 split cache lines and
                         * measured 10-15% slower (Xeon host, 4096x14336, M = 1: 74% vs 86% of read BW). */
                        const __m512i d = _mm512_load_si512((const void *)lp);
                        __m512i a = e ? _mm512_srli_epi32(d, 16) : d;
                        __m512i o = _mm512_srli_epi32(d, 8 + 16 * e);
                        const __m512i idx[4] = {a, o, _mm512_srli_epi32(a, 4), _mm512_srli_epi32(o, 4)};
#pragma GCC unroll 4
                        for (int u = 0; u < 4; u++) {
                            const __m512 w = _mm512_permutexvar_ps(idx[u], lut);
#pragma GCC unroll 4
                            for (int r = 0; r < MR; r++)
                                acc[A(r, i, 2 * h + e)] =
                                    _mm512_fmadd_ps(_mm512_set1_ps(xk[r * K + u]), w, acc[A(r, i, 2 * h + e)]);
                        }
                    }
                }
                wp[i] += 128;
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++)
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                __m512 s = scales_eo(l, grp[i], q / 2, q % 2);
                const __m512i zi = ZP ? zeros_eo(l, grp[i], q / 2, q % 2) : _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int r = 0; r < MR; r++) {
                    float *cp = c + i * ldc + r * 64 + 16 * q;
                    __m512 a = acc[A(r, i, q)];
                    if (ZP) a = _mm512_add_ps(a, _mm512_permutexvar_ps(zi, zt[r]));
                    _mm512_store_ps(cp, _mm512_fmadd_ps(a, s, _mm512_load_ps(cp)));
                }
            }
    }
    /* E/O order back to channel order: channel 32h + j is E[j/2] for even j, O[j/2] for odd j. */
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    for (int i = 0; i < NBLK; i++)
        for (int r = 0; r < MR; r++)
            for (int h = 0; h < 2; h++) {
                float *cp = c + i * ldc + r * 64 + 32 * h;
                __m512 ev = _mm512_load_ps(cp), od = _mm512_load_ps(cp + 16);
                _mm512_store_ps(cp, _mm512_permutex2var_ps(ev, lo, od));
                _mm512_store_ps(cp + 16, _mm512_permutex2var_ps(ev, hi, od));
            }
}
#undef A

XW_INLINE void gemv_zp(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, bool ZP, int64_t b, int64_t nb,
                       int64_t k0, int64_t k1, float *c) {
#define TILE(xr, MR, NBLK, bb, cc, ldc) tile(kn, xr, MR, NBLK, ZP, bb, k0, k1, cc, ldc)
    XW_GEMV_TILES(TILE, xf, kn->l.k, m, b, nb, c);
#undef TILE
}

void mpl_x86_w4a16_gemv_avx512(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b, int64_t nb,
                               int64_t k0, int64_t k1, float *c) {
    const float *xf = xs;
    if (kn->l.bits != 4)
        mpl_x86_w4a16_gemv_widths_avx512(kn, xf, m, b, nb, k0, k1, c);
    else if (kn->l.zero_points)
        gemv_zp(kn, xf, m, true, b, nb, k0, k1, c);
    else
        gemv_zp(kn, xf, m, false, b, nb, k0, k1, c);
}

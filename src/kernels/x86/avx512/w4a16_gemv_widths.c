/*
 * w4a16_gemv_widths.c -- the decode path of x86_avx512_w4a16 (avx512 level) for the 8-, 3- and
 * 2-bit layouts (docs/layouts/x86_w4a16.md "Other widths"); w4a16_gemv.c runs the 4-bit one and
 * hands these over.
 *
 * 8 bits (tile_w8): one chunk (16 channels x 4 inputs, 64 bytes) is one vector per input, the exact
 * integer weights stored - zero of 16 channels in channel order, then one FMA per row with the broadcast
 * input; tile_w8 says how each vector is made in two uops. The same per-input form at 2 and 3 bits (fields
 * widened, converted, zero subtracted: ~1.1 uops per weight byte) ran at 30-34% of the read bandwidth at
 * one thread (Xeon 4096x14336, M = 1), so the 2- and 3-bit layouts index per-step tables of sums of
 * products of x with whole or split weights (tile_p2, tile_p3): 82% / 82% at one thread, 108% / 104% at
 * two (bench/results/x86-widths-avx512.md); with zero points the same tables and the zero parts of
 * xw_zero_parts (common/w4a16_zmm.inc).
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
 * 8 bits: rows xr[r * K ..] (r < MR) x blocks b .. b+NBLK-1 over inputs [k0, k1): row r of block i goes to
 * c + i * ldc + r * 64. MR * NBLK <= 4 (16 accumulators); MR, NBLK and ZP are constants at every call site,
 * so the accumulators stay in registers.
 * A chunk half (16 channels x inputs 2h, 2h + 1, a word per channel) widened to dwords d (vpmovzxwd) gives the
 * exact integers code - zero of both inputs in 2 uops each (xw_w8_values, common/w4a16_zmm.inc: a byte blend under
 * an exponent, non-destructive, and a vsubps): per 64 weights 2 vpmovzxwd + 4 vpblendmb + 4 vsubps + 4 FMA per row,
 * 14 uops against 18 with the and/shift + vcvtdq2ps + vsubps form it replaces (Intel's two 512-bit ports: ~7 cycles
 * per 64 bytes, the old 9 ran at the read bandwidth's edge). The weights and the FMA order are the same: results are
 * bit-identical.
 */
#define A(r, i, v) (((r) * NBLK + (i)) * 4 + (v))
XW_INLINE void tile_w8(const mpl_x86_w4a16_kernel *kn, const float *xr, const int MR, const int NBLK, const bool ZP,
                       int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const size_t sb = 4 * 64;
    const size_t pf = XW_GEMV_PF_TOTAL / NBLK;
    __m512 blo, bhi; /* the bases of the bias (without zero points) */
    xw_w8_bases(_mm512_set1_ps((float)l->bias), &blo, &bhi);
    xw_tile_zero(c, ldc, MR, NBLK);
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        __m512 acc[16], zlo[16], zhi[16];
        xw_tile_group(l, b, g, ks, sb, pf, NBLK, grp, wp);
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++) {
            if (ZP)
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) xw_w8_bases(xw_load_zeros_f32(l, grp[i], v), &zlo[4 * i + v], &zhi[4 * i + v]);
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
                for (int v = 0; v < 4; v++)
#pragma GCC unroll 2
                    for (int h = 0; h < 2; h++) {
                        const __m512i d = _mm512_cvtepu16_epi32(
                            _mm256_load_si256((const __m256i *)(wp[i] + mpl_x86_w4a16_chunk_lo(8, v) + 32 * (size_t)h)));
                        __m512 w0, w1;
                        xw_w8_values(d, ZP ? zlo[4 * i + v] : blo, ZP ? zhi[4 * i + v] : bhi, &w0, &w1);
#pragma GCC unroll 4
                        for (int r = 0; r < MR; r++) {
                            acc[A(r, i, v)] = _mm512_fmadd_ps(_mm512_set1_ps(xk[r * K + 2 * h]), w0, acc[A(r, i, v)]);
                            acc[A(r, i, v)] = _mm512_fmadd_ps(_mm512_set1_ps(xk[r * K + 2 * h + 1]), w1, acc[A(r, i, v)]);
                        }
                    }
                wp[i] += sb;
            }
        }
        xw_tile_fold(l, grp, acc, c, ldc, MR, NBLK);
    }
}

/*
 * 2-bit without zero points: pair tables. For inputs (j, j+1) of a row, the 16 sums
 * T[a + 4b] = x[j] * (a - bias) + x[j+1] * (b - bias) (a, b = 0..3) fill one zmm (two FMA-unit ops
 * per pair and row, shared by every channel of the tile); a nibble of the layout (inputs j0, j0+1 in
 * the low one, j0+2, j0+3 in the high one: docs/layouts/x86_w4a16.md) indexes it with vpermps, which
 * reads bits 0-3 of each dword only. Each table entry is the sum of two exact products (both weights
 * whole), so a group is still the fp32 sum of x * (stored - bias), two terms at a time.
 * Per 64-byte line (64 channels x 4 inputs): the line's dword j holds channels 4j..4j+3 (byte u of it:
 * channel 4j+u). The line loaded u bytes on (u = 1..3; loads run on the load ports) has byte u of each dword
 * at bits 0-7, so 4 shifts by 4 bring the rest of the nibbles to bits 0-3, then 8 vpermps + 8 adds: 20 vector
 * uops per 256 weights, against ~72 in the per-input form (field ops, vcvtdq2ps, vsubps, FMA per 16
 * weights). Intel runs the shifts on port 0 and vpermps on port 5 (2 ports for 512-bit ops): the 7 shifts
 * of a register-only form (23 uops) made the kernel port-bound at ~12 GB/s per core at 2.1 GHz, below the
 * read bandwidth; the offset loads: Xeon EMR VM, hot 4096x1024 M=1 1 thread, old/new alternating 8x,
 * best call 0.093 -> 0.081 ms (uint2b2), 0.101 -> 0.086 (uint2).
 * The accumulators hold channel 4j+u in lane j of vector u; once per group they are put back in channel
 * order (put_channel_order) and folded with the scales.
 */
XW_INLINE void put_channel_order(__m512 a[4]) {
    /* out[v] lane i = a[i % 4] lane 4v + i / 4: a 4 x 4 transpose of 4-lane blocks, done as two
     * rounds of two-source permutes. */
    const __m512i i0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i i1 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    /* round 1: p lane 2t + s = a[s or s+2] lane t (pairs (0,1) -> lanes of u = 0/1 interleaved) */
    __m512 p0 = _mm512_permutex2var_ps(a[0], i0, a[2]), p1 = _mm512_permutex2var_ps(a[0], i1, a[2]);
    __m512 p2 = _mm512_permutex2var_ps(a[1], i0, a[3]), p3 = _mm512_permutex2var_ps(a[1], i1, a[3]);
    /* p0 lane 2t + s = a[2s] lane t, p1 the same for t + 8; p2, p3 the same of a[2s + 1]. Round 2
     * interleaves p0 with p2 (p1 with p3): lane 4m + 2s + e of out = a[2s + e] lane m (+ 4 for i1,
     * + 8 from p1), that is out[v] lane i = a[i % 4] lane 4v + i / 4. */
    a[0] = _mm512_permutex2var_ps(p0, i0, p2);
    a[1] = _mm512_permutex2var_ps(p0, i1, p2);
    a[2] = _mm512_permutex2var_ps(p1, i0, p3);
    a[3] = _mm512_permutex2var_ps(p1, i1, p3);
}

#define AP(r, i, u) (((r) * NBLK + (i)) * 4 + (u))
/* tile_fold for accumulators in the line order of the table tiles (lane j of accumulator u: channel 4j + u):
 * with zero points (zt: the rows' zero parts, xw_zero_parts; NULL without) each lane first adds its channel's
 * lane of zt -- byte u of dword j of the 64 zero points is that channel's zero --, then the accumulators are put
 * back in channel order and folded with the scales. */
XW_INLINE void tile_fold_lines(const mpl_x86_w4a16_layout *l, const uint8_t *const grp[4], __m512 acc[16],
                               const __m512 *zt, float *c, int64_t ldc, const int MR, const int NBLK) {
    if (zt)
#pragma GCC unroll 4
        for (int i = 0; i < NBLK; i++) {
            const __m512i zd = _mm512_loadu_si512((const void *)(grp[i] + l->scale_bytes));
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) {
                const __m512i zi = u ? _mm512_srli_epi32(zd, (unsigned)(8 * u)) : zd;
#pragma GCC unroll 4
                for (int r = 0; r < MR; r++)
                    acc[AP(r, i, u)] = _mm512_add_ps(acc[AP(r, i, u)], _mm512_permutexvar_ps(zi, zt[r]));
            }
        }
#pragma GCC unroll 4
    for (int j = 0; j < MR * NBLK; j++) put_channel_order(&acc[4 * j]);
    xw_tile_fold(l, grp, acc, c, ldc, MR, NBLK);
}

XW_INLINE void tile_p2(const mpl_x86_w4a16_kernel *kn, const float *xr, const int MR, const int NBLK, const bool ZP,
                       int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const size_t pf = XW_GEMV_PF_TOTAL / NBLK;
    const float bias = ZP ? 0.0f : (float)l->bias;
    const __m512 v0 = _mm512_sub_ps(_mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3), _mm512_set1_ps(bias));
    const __m512 v1 = _mm512_sub_ps(_mm512_setr_ps(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), _mm512_set1_ps(bias));
    xw_tile_zero(c, ldc, MR, NBLK);
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        __m512 acc[16], zt[4];
        xw_tile_group(l, b, g, ks, 64, pf, NBLK, grp, wp);
        for (int j = 0; j < 4 * MR * NBLK; j++) acc[j] = _mm512_setzero_ps();
        for (int r = 0; r < MR; r++) zt[r] = _mm512_setzero_ps();
        for (int64_t k = ks; k < ke; k += 4) {
            __m512 t[4][2];
            if (ZP) xw_zero_parts(xr + k, K, MR, zt);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++) {
                const float *xk = xr + r * K + k;
                t[r][0] = _mm512_fmadd_ps(_mm512_set1_ps(xk[1]), v1, _mm512_mul_ps(_mm512_set1_ps(xk[0]), v0));
                t[r][1] = _mm512_fmadd_ps(_mm512_set1_ps(xk[3]), v1, _mm512_mul_ps(_mm512_set1_ps(xk[2]), v0));
            }
#pragma GCC unroll 4
            for (int i = 0; i < NBLK; i++) {
                _mm_prefetch((const char *)wp[i] + pf, _MM_HINT_T0);
#pragma GCC unroll 4
                for (int u = 0; u < 4; u++) {
                    /* byte u of each dword at bits 0-7: the line loaded u bytes on (over-reading into the
                     * next step or MPL_X86_W4A16_TAIL_BYTES, bits no lane uses) */
                    const __m512i d = _mm512_loadu_si512((const void *)(wp[i] + u));
#pragma GCC unroll 2
                    for (int h = 0; h < 2; h++) {
                        const __m512i idx = h ? _mm512_srli_epi32(d, 4) : d;
#pragma GCC unroll 4
                        for (int r = 0; r < MR; r++)
                            acc[AP(r, i, u)] = _mm512_add_ps(acc[AP(r, i, u)], _mm512_permutexvar_ps(idx, t[r][h]));
                    }
                }
                wp[i] += 64;
            }
        }
        tile_fold_lines(l, grp, acc, ZP ? zt : NULL, c, ldc, MR, NBLK);
    }
}

/*
 * 3-bit: split tables. A channel's 12-bit word (docs/layouts/x86_w4a16.md) is read as three nibbles,
 * each indexing a 16-entry table of one step and row (vpermps):
 *   nA = bits 0-3 (its low byte's low nibble):  e0, bit 0 of e1    TA = x0 * (e0 - bias) + x1 * e1.0
 *   nB = bits 4-7 (the low byte's high nibble):  e1 bits 1-2, e2 bits 0-1   TB = x1 * (2 e1.12 - bias) + x2 * e2.01
 *   nC = bits 8-11 (its nibble in the plane):  e2 bit 2, e3              TC = x2 * (4 e2.2 - bias) + x3 * (e3 - bias)
 * (eN.b: those bits of field eN as an integer). The three entries sum to x0 w0 + x1 w1 + x2 w2 + x3 w3
 * (w = stored - bias) as exact products, so a group is an fp32 sum of exact products of x with parts of
 * the weights (the two that field e1 and e2 are split into have |part| <= 4 |w| + 4, a bigger rounding
 * bound on paper than whole products; tests/test_x86_w4a16.c's tolerance holds with wide margin, and
 * on exact data the result is bit-identical to ref). With zero points the tables have bias 0 and the
 * zero parts come from xw_zero_parts, added once per group.
 * A step of a block is read as lines, like tile_p2: the 64 low bytes are one zmm whose dword j holds
 * channels 4j..4j+3 (byte u: channel 4j+u), loaded u bytes on (as tile_p2) and shifted by 4 to bring nA
 * and nB of channel 4j+u to bits 0-3 of lane j; the 32-byte nibble plane is spread by one vpermd so that
 * lane j holds the plane's dword with the nibbles of channels 4j..4j+3 (low nibbles for j % 4 < 2, high
 * ones, shifted down by 4, otherwise), then shifted by 8u. Per 96-byte step: 1 vpermd, 7 shifts, 12
 * vpermps, 12 adds (32 uops, 0.33 per byte; 35 with the low line shifted in registers, 40 in the
 * chunk-at-a-time form before that, which widened each chunk's bytes and nibbles with two vpmovzxbd, 5 of
 * each 10 uops on port 5 of Intel cores). The accumulators hold
 * channel 4j+u in lane j of vector u, put back in channel order once per group (tile_fold_lines).
 */
XW_INLINE void tile_p3(const mpl_x86_w4a16_kernel *kn, const float *xr, const int MR, const int NBLK, const bool ZP,
                       int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const size_t pf = XW_GEMV_PF_TOTAL / NBLK;
    const __m512 bias = _mm512_set1_ps(ZP ? 0.0f : (float)l->bias);
    const __m512 va0 = _mm512_sub_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7), bias);
    const __m512 va1 = _mm512_setr_ps(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512 vb1 = _mm512_sub_ps(_mm512_setr_ps(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6), bias);
    const __m512 vb2 = _mm512_setr_ps(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512 vc2 = _mm512_sub_ps(_mm512_setr_ps(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4), bias);
    const __m512 vc3 = _mm512_sub_ps(_mm512_setr_ps(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), bias);
    /* lane j: the plane's dword 2 (j / 4) + j % 2 (chunk j / 4, channels 4 (j % 4) .. +3 of it: bytes
     * 4 (j % 2) .. +3 hold them, low nibbles for j % 4 < 2, high nibbles otherwise) */
    const __m512i nidx = _mm512_setr_epi32(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7);
    const __m512i nsh = _mm512_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4);
    xw_tile_zero(c, ldc, MR, NBLK);
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp[4], *wp[4];
        __m512 acc[16], zt[4];
        xw_tile_group(l, b, g, ks, 96, pf, NBLK, grp, wp);
        for (int j = 0; j < 4 * MR * NBLK; j++) acc[j] = _mm512_setzero_ps();
        for (int r = 0; r < MR; r++) zt[r] = _mm512_setzero_ps();
        for (int64_t k = ks; k < ke; k += 4) {
            __m512 t[4][3];
            if (ZP) xw_zero_parts(xr + k, K, MR, zt);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++) {
                const float *xk = xr + r * K + k;
                const __m512 x1 = _mm512_set1_ps(xk[1]), x2 = _mm512_set1_ps(xk[2]);
                t[r][0] = _mm512_fmadd_ps(x1, va1, _mm512_mul_ps(_mm512_set1_ps(xk[0]), va0));
                t[r][1] = _mm512_fmadd_ps(x2, vb2, _mm512_mul_ps(x1, vb1));
                t[r][2] = _mm512_fmadd_ps(_mm512_set1_ps(xk[3]), vc3, _mm512_mul_ps(x2, vc2));
            }
#pragma GCC unroll 4
            for (int i = 0; i < NBLK; i++) {
                for (size_t o = 0; o < 96; o += 64) _mm_prefetch((const char *)wp[i] + pf + o, _MM_HINT_T0);
                const __m512i np = _mm512_srlv_epi32(
                    _mm512_permutexvar_epi32(nidx, _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(wp[i] + 64)))),
                    nsh);
#pragma GCC unroll 4
                for (int u = 0; u < 4; u++) {
                    /* byte u of each dword of the low bytes at bits 0-7, as in tile_p2 */
                    const __m512i na = _mm512_loadu_si512((const void *)(wp[i] + u));
                    const __m512i nb = _mm512_srli_epi32(na, 4);
                    const __m512i nc = u ? _mm512_srli_epi32(np, (unsigned)(8 * u)) : np;
#pragma GCC unroll 4
                    for (int r = 0; r < MR; r++) {
                        __m512 a = _mm512_add_ps(acc[AP(r, i, u)], _mm512_permutexvar_ps(na, t[r][0]));
                        a = _mm512_add_ps(a, _mm512_permutexvar_ps(nb, t[r][1]));
                        acc[AP(r, i, u)] = _mm512_add_ps(a, _mm512_permutexvar_ps(nc, t[r][2]));
                    }
                }
                wp[i] += 96;
            }
        }
        tile_fold_lines(l, grp, acc, ZP ? zt : NULL, c, ldc, MR, NBLK);
    }
}
#undef AP

/* One tile of the decode: the table tiles at 2 and 3 bits, tile_w8 at 8 (ZP: with zero points). */
XW_INLINE void tile_any(const mpl_x86_w4a16_kernel *kn, const float *xr, const int MR, const int NBLK, const int BITS,
                        const bool ZP, int64_t b, int64_t k0, int64_t k1, float *c, int64_t ldc) {
    if (BITS == 2)
        tile_p2(kn, xr, MR, NBLK, ZP, b, k0, k1, c, ldc);
    else if (BITS == 3)
        tile_p3(kn, xr, MR, NBLK, ZP, b, k0, k1, c, ldc);
    else
        tile_w8(kn, xr, MR, NBLK, ZP, b, k0, k1, c, ldc);
}
#undef A

XW_INLINE void gemv_w(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, const int BITS, const bool ZP,
                      int64_t b, int64_t nb, int64_t k0, int64_t k1, float *c) {
#define TILE(xr, MR, NBLK, bb, cc, ldc) tile_any(kn, xr, MR, NBLK, BITS, ZP, bb, k0, k1, cc, ldc)
    XW_GEMV_TILES(TILE, xf, kn->l.k, m, b, nb, c);
#undef TILE
}

/* zero points or not as a constant of the tile */
XW_INLINE void gemv_bits(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, const int BITS, int64_t b,
                         int64_t nb, int64_t k0, int64_t k1, float *c) {
    if (kn->l.zero_points)
        gemv_w(kn, xf, m, BITS, true, b, nb, k0, k1, c);
    else
        gemv_w(kn, xf, m, BITS, false, b, nb, k0, k1, c);
}

void mpl_x86_w4a16_gemv_widths_avx512(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b,
                                      int64_t nb, int64_t k0, int64_t k1, float *c) {
    switch (kn->l.bits) {
    case 8: gemv_bits(kn, xf, m, 8, b, nb, k0, k1, c); break;
    case 3: gemv_bits(kn, xf, m, 3, b, nb, k0, k1, c); break;
    default: gemv_bits(kn, xf, m, 2, b, nb, k0, k1, c); break;
    }
}

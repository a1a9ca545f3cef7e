/*
 * w4a16_gemm.c -- the prefill path of x86_avx2_w4a16 (avx2 level). Per 64-channel block and
 * per group segment, each 16-channel slice of the weights is dequantized once (w4a16_ymm.h)
 * into an 8 KiB f32 panel of exact integers in L1, then every 6-row tile of x runs a 6 x 16
 * FMA micro-kernel over it; the group scale folds into c once per group.
 *
 * Why this shape on Zen 3 (16 ymm, 2 FMA pipes, 2 x 256-bit loads a cycle): 12 accumulators +
 * 2 panel vectors + 1 broadcast; per input 2 panel loads + 6 broadcasts feed 12 FMAs (6 cycles).
 * x comes packed per 6-row tile, input-major, the tiles of a group one after another
 * (prep_tiles in w4a16_ops.c): the broadcasts of all tiles over a slice read one sequential
 * stream instead of 6 rows 4*K bytes apart (4 KiB-aliased on every L1 set at K = 4096). The panel, c and the scales keep the unpacked channel order (w4a16_ymm.h);
 * c returns to channel order once per block.
 */
#include <string.h>

#include "w4a16_ymm.h"

/* Inputs per panel segment: a whole group up to 256 (8-16 KiB panel); longer groups run in
 * segments of 128 whose sums are carried in memory (gacc), so the scale still folds once. */
#define SEG_MAX 256
#define SEG_LONG 128
/* Bytes into the per-thread panel buffer where the carried group sums (gacc) start. */
#define GACC_OFFSET (SEG_MAX * 16 * 4)
/* Rows per x tile (see above); x rows are packed in tiles of this many. */
#define MR MPL_X86_W4A16_AVX2_MTILE
_Static_assert(MPL_X86_W4A16_AVX2_MCHUNK % MR == 0, "chunks hold whole tiles");

/* Dequantize steps [c0, c1) of slice q (channels 16q..16q+15) of group g of block b:
 * panel[(4(c - c0) + koff(p)) * 16 + 0..15] = the lo, hi vectors of input 4c + koff(p). */
XW_INLINE void dequant_slice(const mpl_x86_w4a16_layout *l, int64_t b, int64_t g, int q, int64_t c0, int64_t c1,
                             float *panel, bool ZP) {
    const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
    const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)c0 * 128 + 32 * (size_t)q;
    __m256i mask[4];
    __m256 sub[4][2];
    for (int p = 0; p < 4; p++) {
        mask[p] = xw_mask(p);
        if (ZP)
            xw_subtrahends(l, grp, q, p, sub[p]);
        else
            sub[p][0] = sub[p][1] = _mm256_set1_ps(xw_base(p) + 8.0f);
    }
    const size_t pf = l->group_bytes < 8192 ? l->group_bytes : 8192;
    for (int64_t c = c0; c < c1; c++, wp += 128, panel += 4 * 16) {
        /* Small m streams the weights through here: during slice 0, prefetch the step of the
         * next group, at most 8 KiB on (the three other slices and their tiles' FMAs ahead). */
        if (q == 0) {
            _mm_prefetch((const char *)wp + pf, _MM_HINT_T0);
            _mm_prefetch((const char *)wp + pf + 64, _MM_HINT_T0);
        }
        __m256i ch = _mm256_load_si256((const __m256i *)wp);
        __m256i d[2] = {xw_unpack_lo(ch), xw_unpack_hi(ch)};
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++)
#pragma GCC unroll 2
            for (int e = 0; e < 2; e++)
                _mm256_store_ps(panel + xw_koff(p) * 16 + 8 * e, _mm256_sub_ps(xw_biased(d[e], mask[p]), sub[p][e]));
    }
}

/* The same for the 8-, 3- and 2-bit layouts (w4a16_ymm.h: the fields of each width), the panel in
 * the same unpacked order, so the micro-kernel below runs unchanged. */
XW_INLINE void dequant_slice_w(const mpl_x86_w4a16_layout *l, int64_t b, int64_t g, int q, int64_t c0, int64_t c1,
                               float *panel, const int BITS) {
    const size_t cb = (size_t)BITS * 8, sb = 4 * cb;
    const int NIG = BITS == 8 ? 2 : 1, PER = 4 / NIG;
    const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
    const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)c0 * sb; /* the step; chunk q of it */
    __m256i mask[4];
    __m256 sub[4][2], z[2];
    xw_wzeros(l, grp, q, z);
    for (int e = 0; e < 4; e++) {
        mask[e] = xw_wmask(BITS, e);
        for (int h = 0; h < 2; h++) sub[e][h] = _mm256_add_ps(z[h], _mm256_set1_ps(xw_wbase(BITS, e)));
    }
    const size_t pf = l->group_bytes < 8192 ? l->group_bytes : 8192;
    for (int64_t c = c0; c < c1; c++, wp += sb, panel += 4 * 16) {
        if (q == 0) /* as dequant_slice: the next group's step during slice 0 */
            for (size_t o = 0; o < sb; o += 64) _mm_prefetch((const char *)wp + pf + o, _MM_HINT_T0);
#pragma GCC unroll 2
        for (int ig = 0; ig < NIG; ig++) {
            __m256i d[2];
            xw_wload(BITS, wp, q, ig, d);
#pragma GCC unroll 4
            for (int ee = 0; ee < PER; ee++) {
                const int e = ig * PER + ee;
                __m256 w0 = _mm256_sub_ps(xw_biased(d[0], mask[e]), sub[e][0]);
                __m256 w1 = _mm256_sub_ps(xw_biased(d[1], mask[e]), sub[e][1]);
                if (!xw_wunpacked(BITS)) xw_unpermute(w0, w1, &w0, &w1); /* channel order -> unpacked */
                _mm256_store_ps(panel + e * 16, w0);
                _mm256_store_ps(panel + e * 16 + 8, w1);
            }
        }
    }
}

/*
 * One tile of mr rows x 16 channels over len inputs: xt the tile's packed x at the segment's
 * first input (stride MR floats per input), panel the slice. first: start from 0, else from the
 * carried sums in ga; last: c[r][0..15] += s * acc, else carry acc into ga. c, ga and s are in
 * the panel's channel order; the gemm restores channel order once at the end.
 */
XW_INLINE void micro(const float *xt, const float *panel, int64_t len, int mr, bool first, bool last, __m256 s0,
                     __m256 s1, float *c, float *ga) {
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < mr; r++) {
        acc[r][0] = first ? _mm256_setzero_ps() : _mm256_load_ps(ga + r * 64);
        acc[r][1] = first ? _mm256_setzero_ps() : _mm256_load_ps(ga + r * 64 + 8);
    }
#pragma GCC unroll 2
    for (int64_t k = 0; k < len; k++, panel += 16, xt += MR) {
        __m256 w0 = _mm256_load_ps(panel), w1 = _mm256_load_ps(panel + 8);
#pragma GCC unroll 6
        for (int r = 0; r < mr; r++) {
            __m256 xb = _mm256_broadcast_ss(xt + r);
            acc[r][0] = _mm256_fmadd_ps(xb, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xb, w1, acc[r][1]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < mr; r++) {
        if (last) {
            _mm256_store_ps(c + r * 64, _mm256_fmadd_ps(acc[r][0], s0, _mm256_load_ps(c + r * 64)));
            _mm256_store_ps(c + r * 64 + 8, _mm256_fmadd_ps(acc[r][1], s1, _mm256_load_ps(c + r * 64 + 8)));
        } else {
            _mm256_store_ps(ga + r * 64, acc[r][0]);
            _mm256_store_ps(ga + r * 64 + 8, acc[r][1]);
        }
    }
}

/* All tiles of the chunk's rows (rows of them) over one slice: full tiles, then the tail tile's
 * size. xg: the chunk's x at the segment's first input of tile 0; tiles are xstride apart. */
XW_INLINE void tiles(const float *xg, int64_t xstride, int64_t rows, const float *panel, int64_t len, bool first,
                     bool last, __m256 s0, __m256 s1, float *c, float *ga) {
    int64_t m = 0;
    for (; m + MR <= rows; m += MR)
        micro(xg + m / MR * xstride, panel, len, MR, first, last, s0, s1, c + m * 64, ga + m * 64);
    const float *xt = xg + m / MR * xstride;
    float *ct = c + m * 64, *gt = ga + m * 64;
    switch (rows - m) {
    case 5: micro(xt, panel, len, 5, first, last, s0, s1, ct, gt); break;
    case 4: micro(xt, panel, len, 4, first, last, s0, s1, ct, gt); break;
    case 3: micro(xt, panel, len, 3, first, last, s0, s1, ct, gt); break;
    case 2: micro(xt, panel, len, 2, first, last, s0, s1, ct, gt); break;
    case 1: micro(xt, panel, len, 1, first, last, s0, s1, ct, gt); break;
    default: break;
    }
}

/* The segment flags are compile-time in each instance of tiles (the common case, one segment
 * per group, carries nothing). */
static void run_slice(const float *xg, int64_t xstride, int64_t rows, const float *panel, int64_t len, bool first,
                      bool last, __m256 s0, __m256 s1, float *c, float *ga) {
    if (first && last)
        tiles(xg, xstride, rows, panel, len, true, true, s0, s1, c, ga);
    else if (first)
        tiles(xg, xstride, rows, panel, len, true, false, s0, s1, c, ga);
    else if (last)
        tiles(xg, xstride, rows, panel, len, false, true, s0, s1, c, ga);
    else
        tiles(xg, xstride, rows, panel, len, false, false, s0, s1, c, ga);
}

void mpl_x86_w4a16_gemm_avx2(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                             void *panel_v, float *c, void *scratch) {
    (void)scratch;
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size, seg = gs <= SEG_MAX ? gs : SEG_LONG, rows = m1 - m0;
    /* x of this chunk (m0 starts a chunk): group g, tile t at ((g * T + t) * gs) * MR floats. */
    const int64_t T = (rows + MR - 1) / MR;
    const float *xc = (const float *)xs + m0 * K;
    float *panel = panel_v, *ga = (float *)((char *)panel_v + GACC_OFFSET);
    memset(c, 0, (size_t)(m1 - m0) * 64 * sizeof(float));
    for (int64_t g = 0; g < l->groups; g++) {
        const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
        /* The next group's scales and zero points (dequant_slice prefetches its weights). */
        for (size_t o = 0; o < l->scale_bytes + l->zero_bytes; o += 64)
            _mm_prefetch((const char *)grp + l->group_bytes + o, _MM_HINT_T0);
        for (int64_t ks = 0; ks < gs; ks += seg) {
            int64_t len = gs - ks < seg ? gs - ks : seg;
            bool first = ks == 0, last = ks + len == gs;
            for (int q = 0; q < 4; q++) {
                switch (l->bits) {
                case 8: dequant_slice_w(l, b, g, q, ks / 4, (ks + len) / 4, panel, 8); break;
                case 3: dequant_slice_w(l, b, g, q, ks / 4, (ks + len) / 4, panel, 3); break;
                case 2: dequant_slice_w(l, b, g, q, ks / 4, (ks + len) / 4, panel, 2); break;
                default:
                    if (l->zero_points)
                        dequant_slice(l, b, g, q, ks / 4, (ks + len) / 4, panel, true);
                    else
                        dequant_slice(l, b, g, q, ks / 4, (ks + len) / 4, panel, false);
                    break;
                }
                __m256 s0, s1; /* in the panel's (unpacked) channel order, as c */
                xw_unpermute(xw_load_scales(l, grp, 2 * q), xw_load_scales(l, grp, 2 * q + 1), &s0, &s1);
                run_slice(xc + (g * T * gs + ks) * MR, gs * MR, rows, panel, len, first, last, s0, s1, c + 16 * q,
                          ga + 16 * q);
            }
        }
    }
    /* c back to channel order for the store. */
    for (int64_t r = 0; r < rows; r++)
        for (int q = 0; q < 4; q++) {
            float *cq = c + r * 64 + 16 * q;
            __m256 t0, t1;
            xw_unpermute(_mm256_load_ps(cq), _mm256_load_ps(cq + 8), &t0, &t1);
            _mm256_store_ps(cq, t0);
            _mm256_store_ps(cq + 8, t1);
        }
}

/*
 * w4a16_gemm.c -- the f32 prefill path of x86_avx512_w4a16 (avx512 level), for any
 * activation type (x converted to f32, exact for bf16/f16): per 64-channel block, each
 * segment of inputs (one group, at most SEG_F32 inputs) is dequantized once into an
 * L1-resident f32 panel of exact integers, then every row tile of x runs a register-blocked
 * FMA micro-kernel over it (6 rows x 64 channels: 24 fp32 accumulators per group, folded
 * into c with the group scale). A group longer than a segment carries its fp32 sums from segment to
 * segment in memory (ga, in the panel buffer after the panel), so its scale still folds once per
 * group (the contract of include/mplinear.h). avx512bf16/w4a16_gemm.c is the same over a bf16 panel.
 */
#include <string.h>

#include "../common/w4a16_zmm.inc"

/* Segment length: a 32 KiB panel (128 inputs x 64 f32) stays in a 48 KiB L1. */
#define SEG_F32 128
/* Carried group sums (rows x 64 f32) start here in the per-thread panel buffer; rows per pass. */
#define GA_OFFSET (SEG_F32 * 64 * 4)
#define GA_ROWS ((int64_t)((MPL_X86_W4A16_PANEL_BYTES - GA_OFFSET) / (64 * 4)))
/* Row tile: 6 rows x 4 vectors = 24 accumulators + 4 weight vectors + 1 broadcast of 32 zmm. */
#define MR_MAX 6

/* The same from the 8-, 3- and 2-bit layouts: each chunk's fields are its inputs in order. */
XW_INLINE void dequant_f32_panel_w(const mpl_x86_w4a16_layout *l, int64_t b, int64_t g, int64_t c0, int64_t c1,
                                   float *panel, const int BITS) {
    const size_t cb = (size_t)BITS * 8, sb = 4 * cb;
    const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
    const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)c0 * sb;
    __m512 z[4];
    for (int v = 0; v < 4; v++) z[v] = xw_load_zeros_f32(l, grp, v);
    for (int64_t c = c0; c < c1; c++, wp += sb, panel += 4 * 64) {
        for (size_t o = 0; o < sb; o += 64) _mm_prefetch((const char *)wp + XW_PF_BYTES + o, _MM_HINT_T0);
        for (int v = 0; v < 4; v++) {
            __m512i s[4];
            xw_wchunk(BITS, wp, v, s);
            for (int e = 0; e < 4; e++)
                _mm512_store_ps(panel + e * 64 + 16 * v, _mm512_sub_ps(_mm512_cvtepi32_ps(s[e]), z[v]));
        }
    }
}

static void dequant_f32_panel(const mpl_x86_w4a16_layout *l, int64_t b, int64_t g, int64_t c0, int64_t c1,
                              float *panel) {
    switch (l->bits) {
    case 8: dequant_f32_panel_w(l, b, g, c0, c1, panel, 8); return;
    case 3: dequant_f32_panel_w(l, b, g, c0, c1, panel, 3); return;
    case 2: dequant_f32_panel_w(l, b, g, c0, c1, panel, 2); return;
    default: break;
    }
    const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
    const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)c0 * 128;
    const __m512 lut = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512 z[4];
    for (int v = 0; v < 4; v++) z[v] = xw_load_zeros_f32(l, grp, v);
    for (int64_t c = c0; c < c1; c++, wp += 128, panel += 4 * 64) {
        for (int v = 0; v < 4; v++) {
            __m512i d = _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(wp + 32 * v)));
            /* Nibble order in a channel's dword: inputs 0, 2, 1, 3 (see the layout spec). */
            _mm512_store_ps(panel + 0 * 64 + 16 * v, _mm512_sub_ps(_mm512_permutexvar_ps(d, lut), z[v]));
            _mm512_store_ps(panel + 2 * 64 + 16 * v,
                            _mm512_sub_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d, 4), lut), z[v]));
            _mm512_store_ps(panel + 1 * 64 + 16 * v,
                            _mm512_sub_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d, 8), lut), z[v]));
            _mm512_store_ps(panel + 3 * 64 + 16 * v,
                            _mm512_sub_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d, 12), lut), z[v]));
        }
    }
}

/* acc = sum_k x[r][k] * panel[k][..] for MR rows (MR constant at each call site), starting from 0
 * (first) or the carried sums ga; then c[r][..] += scale * acc (last) or acc carried into ga. */
XW_INLINE void micro_f32(const float *xr, int64_t ldx, const float *panel, int64_t len, const __m512 s[4], float *c,
                         float *ga, int MR, bool first, bool last) {
    __m512 acc[MR_MAX][4];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) acc[r][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(ga + r * 64 + 16 * v);
    for (int64_t k = 0; k < len; k++, panel += 64) {
        __m512 w[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) w[v] = _mm512_load_ps(panel + 16 * v);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m512 xb = _mm512_set1_ps(xr[r * ldx + k]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(xb, w[v], acc[r][v]);
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

/* All row tiles of [m0, m1) over one segment (the flags constant in each instance). */
XW_INLINE void tiles_f32(const float *xk, int64_t K, int64_t m0, int64_t m1, const float *panel, int64_t len,
                         const __m512 s[4], float *c, float *ga, bool first, bool last) {
    int64_t m = m0;
    for (; m + MR_MAX <= m1; m += MR_MAX)
        micro_f32(xk + m * K, K, panel, len, s, c + (m - m0) * 64, ga + (m - m0) * 64, MR_MAX, first, last);
    float *ct = c + (m - m0) * 64, *gt = ga + (m - m0) * 64;
    switch (m1 - m) {
    case 5: micro_f32(xk + m * K, K, panel, len, s, ct, gt, 5, first, last); break;
    case 4: micro_f32(xk + m * K, K, panel, len, s, ct, gt, 4, first, last); break;
    case 3: micro_f32(xk + m * K, K, panel, len, s, ct, gt, 3, first, last); break;
    case 2: micro_f32(xk + m * K, K, panel, len, s, ct, gt, 2, first, last); break;
    case 1: micro_f32(xk + m * K, K, panel, len, s, ct, gt, 1, first, last); break;
    default: break;
    }
}

static void run_segment(const float *xk, int64_t K, int64_t m0, int64_t m1, const float *panel, int64_t len,
                        const __m512 s[4], float *c, float *ga, bool first, bool last) {
    if (first && last)
        tiles_f32(xk, K, m0, m1, panel, len, s, c, ga, true, true);
    else if (first)
        tiles_f32(xk, K, m0, m1, panel, len, s, c, ga, true, false);
    else if (last)
        tiles_f32(xk, K, m0, m1, panel, len, s, c, ga, false, true);
    else
        tiles_f32(xk, K, m0, m1, panel, len, s, c, ga, false, false);
}

static void zero_rows(float *c, int64_t rows) { memset(c, 0, (size_t)rows * 64 * sizeof(float)); }

void mpl_x86_w4a16_gemm_avx512(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                               void *panel_v, float *c, void *scratch) {
    (void)scratch;
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const float *xf = (const float *)xs;
    float *panel = panel_v, *ga = (float *)((char *)panel_v + GA_OFFSET);
    zero_rows(c, m1 - m0);
    /* Rows in passes of GA_ROWS when a group spans segments (the carried sums must fit). */
    const int64_t pass = gs > SEG_F32 ? GA_ROWS : m1 - m0;
    for (int64_t p0 = m0; p0 < m1; p0 += pass) {
        const int64_t p1 = m1 - p0 < pass ? m1 : p0 + pass;
        float *cp = c + (p0 - m0) * 64;
        for (int64_t g = 0; g < l->groups; g++) {
            const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
            __m512 s[4];
            for (int v = 0; v < 4; v++) s[v] = xw_load_scales(l, grp, v);
            for (int64_t ks = 0; ks < gs; ks += SEG_F32) {
                int64_t len = gs - ks < SEG_F32 ? gs - ks : SEG_F32;
                dequant_f32_panel(l, b, g, ks / 4, (ks + len) / 4, panel);
                run_segment(xf + g * gs + ks, K, p0, p1, panel, len, s, cp, ga, ks == 0, ks + len == gs);
            }
        }
    }
}

/*
 * w4a16_gemv_widths.c -- the decode path of x86_avx2_w4a16 (avx2 level) for the 8-, 3- and 2-bit
 * layouts (4-bit: w4a16_gemv.c). Same plan as the 4-bit decode: a 64-channel block streamed once
 * per call, dequantized in registers with the exponent trick of w4a16_ymm.h (vpand + vsubps per
 * 8 weights, then one FMA per row), each group summed in fp32 on its own and folded into c with
 * its scale once.
 *
 *   1 row:    the 4 chunks of a step in two pairs, 8 accumulators for the 64 channels; a pair's
 *             dword vectors (4) stay in registers while its inputs run (15 ymm live).
 *   2-4 rows: a pass per chunk (16 channels), 2 accumulators a row; the group's weights stay in
 *             L1 for the passes after the first (group 128: 8 KiB at 8 bits).
 * Cost per 8 weights at one row: vpand + vsubps + FMA, plus the unpack (8-bit: 1/2 shuffle;
 * 2-bit: 1/4 vpmovzxbd + 1/4 vpor; 3-bit: ~5/8 of a uop to build the 12-bit words).
 */
#include <string.h>

#include "w4a16_ymm.h"

/* Software prefetch distance of the one-row stream, as the 4-bit decode (w4a16_gemv.c: 4 KiB
 * measured best there on Zen 3, 1-8 KiB within noise). */
#define XWW_PF_BYTES 4096

/* Per group: the mask of each input's field and what vsubps takes away (base + zero) per chunk,
 * input and half, in the width's channel order. */
typedef struct {
    __m256i mask[4];
    __m256 sub[4][4][2];
} xww_consts;

static void consts_group(const mpl_x86_w4a16_layout *l, const uint8_t *grp, xww_consts *k, bool first) {
    if (first)
        for (int e = 0; e < 4; e++) k->mask[e] = xw_wmask(l->bits, e);
    if (!first && !l->zero_points) return;
    for (int v = 0; v < 4; v++) {
        __m256 z[2];
        xw_wzeros(l, grp, v, z);
        for (int e = 0; e < 4; e++)
            for (int h = 0; h < 2; h++) k->sub[v][e][h] = _mm256_add_ps(z[h], _mm256_set1_ps(xw_wbase(l->bits, e)));
    }
}

/* c[r][16v + ..] += s * acc for chunk v (lo, hi in the width's order; back to channel order first). */
XW_INLINE void fold(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int v, __m256 lo, __m256 hi, float *c) {
    __m256 t0 = lo, t1 = hi;
    if (xw_wunpacked(l->bits)) xw_unpermute(lo, hi, &t0, &t1);
    float *c0 = c + 16 * v, *c1 = c0 + 8;
    _mm256_store_ps(c0, _mm256_fmadd_ps(t0, xw_load_scales(l, grp, 2 * v), _mm256_load_ps(c0)));
    _mm256_store_ps(c1, _mm256_fmadd_ps(t1, xw_load_scales(l, grp, 2 * v + 1), _mm256_load_ps(c1)));
}

/*
 * The accumulators are named variables, never arrays indexed in loops: gcc's scalar replacement
 * runs before its loop unrolling, so an accumulator array indexed by a loop variable stays in
 * memory (stored back after every FMA; measured 1.5-2x slower at one row).
 */

/* One FMA of each of 4 accumulators: chunks v0 (d0) and v0 + 1 (d1), input e, broadcast xb. */
XW_INLINE void fma_pair(const xww_consts *k, int v0, int e, const __m256i d0[2], const __m256i d1[2], __m256 xb,
                        __m256 *a0, __m256 *a1, __m256 *a2, __m256 *a3) {
    const __m256i m = xw_wmask_load(&k->mask[e]);
    *a0 = _mm256_fmadd_ps(xw_wfield(d0[0], m, &k->sub[v0][e][0]), xb, *a0);
    *a1 = _mm256_fmadd_ps(xw_wfield(d0[1], m, &k->sub[v0][e][1]), xb, *a1);
    *a2 = _mm256_fmadd_ps(xw_wfield(d1[0], m, &k->sub[v0 + 1][e][0]), xb, *a2);
    *a3 = _mm256_fmadd_ps(xw_wfield(d1[1], m, &k->sub[v0 + 1][e][1]), xb, *a3);
}

/* Chunks v0, v0 + 1 of a step (q: the step), all 4 inputs (x: the row at the step). */
XW_INLINE void step_pair(const xww_consts *k, const uint8_t *q, int v0, const float *x, __m256 *a0, __m256 *a1,
                         __m256 *a2, __m256 *a3, const int BITS) {
    __m256i d0[2], d1[2];
    xw_wload(BITS, q, v0, 0, d0);
    xw_wload(BITS, q, v0 + 1, 0, d1);
    fma_pair(k, v0, 0, d0, d1, _mm256_broadcast_ss(x + 0), a0, a1, a2, a3);
    fma_pair(k, v0, 1, d0, d1, _mm256_broadcast_ss(x + 1), a0, a1, a2, a3);
    if (BITS == 8) { /* inputs 2, 3: the second half of each chunk */
        xw_wload(BITS, q, v0, 1, d0);
        xw_wload(BITS, q, v0 + 1, 1, d1);
    }
    fma_pair(k, v0, 2, d0, d1, _mm256_broadcast_ss(x + 2), a0, a1, a2, a3);
    fma_pair(k, v0, 3, d0, d1, _mm256_broadcast_ss(x + 3), a0, a1, a2, a3);
}

/* One row, inputs [0, len) of a group (wp: its weights at the first of them; x: the row there). */
XW_INLINE void run1(const mpl_x86_w4a16_layout *l, const xww_consts *k, const uint8_t *grp, const uint8_t *wp,
                    const float *x, int64_t len, float *c, const int BITS) {
    const size_t sb = (size_t)BITS * 32;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int64_t kk = 0; kk < len; kk += 4, wp += sb) {
        for (size_t o = 0; o < sb; o += 64) _mm_prefetch((const char *)wp + XWW_PF_BYTES + o, _MM_HINT_T0);
        step_pair(k, wp, 0, x + kk, &a0, &a1, &a2, &a3, BITS);
        step_pair(k, wp, 2, x + kk, &a4, &a5, &a6, &a7, BITS);
    }
    fold(l, grp, 0, a0, a1, c);
    fold(l, grp, 1, a2, a3, c);
    fold(l, grp, 2, a4, a5, c);
    fold(l, grp, 3, a6, a7, c);
}

/* Input e of chunk v (d) into rows 0..R-1 (x: row 0 at the step, rows K floats apart). */
XW_INLINE void fma_rows(const xww_consts *k, int v, int e, const __m256i d[2], const float *x, int64_t K, __m256 *a0,
                        __m256 *a1, __m256 *b0, __m256 *b1, __m256 *c0, __m256 *c1, __m256 *e0, __m256 *e1,
                        const int R) {
    const __m256i m = xw_wmask_load(&k->mask[e]);
    const __m256 w0 = xw_wfield(d[0], m, &k->sub[v][e][0]);
    const __m256 w1 = xw_wfield(d[1], m, &k->sub[v][e][1]);
    __m256 xb = _mm256_broadcast_ss(x + e);
    *a0 = _mm256_fmadd_ps(w0, xb, *a0);
    *a1 = _mm256_fmadd_ps(w1, xb, *a1);
    xb = _mm256_broadcast_ss(x + K + e);
    *b0 = _mm256_fmadd_ps(w0, xb, *b0);
    *b1 = _mm256_fmadd_ps(w1, xb, *b1);
    if (R > 2) {
        xb = _mm256_broadcast_ss(x + 2 * K + e);
        *c0 = _mm256_fmadd_ps(w0, xb, *c0);
        *c1 = _mm256_fmadd_ps(w1, xb, *c1);
    }
    if (R > 3) {
        xb = _mm256_broadcast_ss(x + 3 * K + e);
        *e0 = _mm256_fmadd_ps(w0, xb, *e0);
        *e1 = _mm256_fmadd_ps(w1, xb, *e1);
    }
}

/* R rows (2..4, K floats apart), a pass per chunk. */
XW_INLINE void runr(const mpl_x86_w4a16_layout *l, const xww_consts *k, const uint8_t *grp, const uint8_t *wg,
                    const float *x, int64_t K, int64_t len, float *c, const int BITS, const int R) {
    const size_t sb = (size_t)BITS * 32;
    const size_t pf = l->group_bytes < 8192 ? l->group_bytes : 8192; /* the next group (at most 8 KiB) */
    for (int v = 0; v < 4; v++) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, e0 = a0, e1 = a0;
        const uint8_t *wp = wg;
        for (int64_t kk = 0; kk < len; kk += 4, wp += sb) {
            if (v == 0)
                for (size_t o = 0; o < sb; o += 64) _mm_prefetch((const char *)wp + pf + o, _MM_HINT_T0);
            __m256i d[2];
            xw_wload(BITS, wp, v, 0, d);
            fma_rows(k, v, 0, d, x + kk, K, &a0, &a1, &b0, &b1, &c0, &c1, &e0, &e1, R);
            fma_rows(k, v, 1, d, x + kk, K, &a0, &a1, &b0, &b1, &c0, &c1, &e0, &e1, R);
            if (BITS == 8) xw_wload(BITS, wp, v, 1, d);
            fma_rows(k, v, 2, d, x + kk, K, &a0, &a1, &b0, &b1, &c0, &c1, &e0, &e1, R);
            fma_rows(k, v, 3, d, x + kk, K, &a0, &a1, &b0, &b1, &c0, &c1, &e0, &e1, R);
        }
        fold(l, grp, v, a0, a1, c);
        fold(l, grp, v, b0, b1, c + 64);
        if (R > 2) fold(l, grp, v, c0, c1, c + 128);
        if (R > 3) fold(l, grp, v, e0, e1, c + 192);
    }
}

XW_INLINE void gemv_block(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0,
                          int64_t k1, float *c, const int BITS) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t gs = l->group_size, K = l->k;
    xww_consts cst;
    memset(c, 0, (size_t)m * 64 * sizeof(float));
    bool first = true;
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
        const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)((ks - g * gs) / 4) * l->step_bytes;
        consts_group(l, grp, &cst, first);
        first = false;
        /* The next group's scales and zero points: the runs prefetch only its weights. */
        for (size_t o = 0; o < l->scale_bytes + l->zero_bytes; o += 64)
            _mm_prefetch((const char *)grp + l->group_bytes + o, _MM_HINT_T0);
        int64_t r = 0;
        for (; r + 4 <= m; r += 4) runr(l, &cst, grp, wp, xf + r * K + ks, K, ke - ks, c + r * 64, BITS, 4);
        switch (m - r) {
        case 3: runr(l, &cst, grp, wp, xf + r * K + ks, K, ke - ks, c + r * 64, BITS, 3); break;
        case 2: runr(l, &cst, grp, wp, xf + r * K + ks, K, ke - ks, c + r * 64, BITS, 2); break;
        case 1: run1(l, &cst, grp, wp, xf + r * K + ks, ke - ks, c + r * 64, BITS); break;
        default: break;
        }
    }
}

static void gemv_block8(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0, int64_t k1,
                        float *c) {
    gemv_block(kn, xf, m, b, k0, k1, c, 8);
}
static void gemv_block3(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0, int64_t k1,
                        float *c) {
    gemv_block(kn, xf, m, b, k0, k1, c, 3);
}
static void gemv_block2(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0, int64_t k1,
                        float *c) {
    gemv_block(kn, xf, m, b, k0, k1, c, 2);
}

void mpl_x86_w4a16_gemv_widths_avx2(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b,
                                    int64_t nb, int64_t k0, int64_t k1, float *c) {
    for (int64_t i = 0; i < nb; i++) {
        float *ci = c + i * m * 64;
        switch (kn->l.bits) {
        case 8: gemv_block8(kn, xf, m, b + i, k0, k1, ci); break;
        case 3: gemv_block3(kn, xf, m, b + i, k0, k1, ci); break;
        default: gemv_block2(kn, xf, m, b + i, k0, k1, ci); break;
        }
    }
}

/*
 * w4a16_gemv.c -- AVX-512 W4A16 decode (small m): streams each 64-channel
 * block once per call and dequantizes in registers. Also the activation
 * preparation, output conversion and the ops table of the AVX-512 kernel.
 *
 * Inner step (4 inputs x 64 channels, 128 bytes of weights): each 32-byte
 * chunk is widened to one dword per channel holding its 4 nibbles; a nibble
 * shifted to bits 0..3 indexes a 16-entry f32 table with vpermps (which reads
 * only those bits), giving the exact integer weight; one FMA per row with the
 * broadcast input (zero points: one more subtract). Four vectors share every
 * broadcast, so per 16 weights the core spends ~1.75 dequant uops + 1 FMA per
 * row: ~19 GB/s of int4 per core
 * from L2 on Sapphire Rapids, above its ~12-14 GB/s of DRAM read bandwidth.
 * (vdpbf16ps was slower there: measured 15 GB/s, it issues about every 2 cycles.)
 */
#include <string.h>

#include "w4a16_avx512.h"


/*
 * c[r][0..63] (r < MR) = sum over inputs [k0, k1) of rows xr (stride K), scaled per group.
 * MR (1..4) and ZP are compile-time constants at every call site, so acc stays in registers.
 * Without zero points the table holds stored - 8; with them it holds stored and the
 * group's zero points are subtracted in registers (exact integers either way).
 */
XW_INLINE void gemv_rows(const mpl_xw_kernel *kn, const float *xr, int MR, bool ZP, int64_t b, int64_t k0,
                         int64_t k1, float *c) {
    const mpl_xw_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const __m512 lut = ZP ? _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                          : _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    /* Nibble positions in a channel's dword: bits 0-3 input 0, 4-7 input 2, 8-11 input 1, 12-15 input 3. */
    static const int shift[4] = {0, 4, 8, 12}, koff[4] = {0, 2, 1, 3};
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < 4; v++) _mm512_store_ps(c + r * 64 + 16 * v, _mm512_setzero_ps());
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp = mpl_xw_group(l, b, g);
        const uint8_t *wp = mpl_xw_group_weights(l, b, g) + (size_t)((ks - g * gs) / 4) * 128;
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

XW_INLINE void gemv_zp(const mpl_xw_kernel *kn, const float *xf, int64_t m, bool ZP, int64_t b, int64_t k0, int64_t k1,
                       float *c) {
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

static void gemv(const mpl_xw_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0, int64_t k1, float *c) {
    if (kn->l.zero_points)
        gemv_zp(kn, xf, m, true, b, k0, k1, c);
    else
        gemv_zp(kn, xf, m, false, b, k0, k1, c);
}

/* ---- activations in, outputs out ---- */

static void row_to_f32(mpl_act act, const void *src, float *dst, int64_t k) {
    int64_t i = 0;
    if (act == MPL_ACT_F32) {
        memcpy(dst, src, (size_t)k * 4);
        return;
    }
    const uint16_t *s = src;
    if (act == MPL_ACT_BF16) {
        for (; i + 16 <= k; i += 16)
            _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(
                                          _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + i))), 16)));
        for (; i < k; i++) dst[i] = mpl_bf16_to_f32(s[i]);
    } else {
        for (; i + 16 <= k; i += 16) _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
        for (; i < k; i++) dst[i] = mpl_f16_to_f32(s[i]);
    }
}

static void prep_f32(const mpl_xw_kernel *kn, const void *x, int64_t m0, int64_t m1, float *xf) {
    const int64_t K = kn->l.k;
    const mpl_act act = kn->cfg.act;
    const size_t es = mpl_act_size(act);
    for (int64_t m = m0; m < m1; m++) {
        const char *src = (const char *)x + (size_t)m * (size_t)K * es;
        float *dst = xf + m * K;
        if (kn->l.perm)
            for (int64_t j = 0; j < K; j++) dst[j] = mpl_act_load(act, src, kn->l.perm[j]);
        else
            row_to_f32(act, src, dst, K);
    }
}

static void prep_bf16(const mpl_xw_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m, uint16_t *xb) {
    const int64_t K = kn->l.k, kp = kn->kp;
    int64_t mpad = m1 == m ? (m + 31) / 32 * 32 : m1; /* the micro-kernel reads 6-row tiles only up to m */
    for (int64_t r = m0; r < mpad; r++) {
        uint16_t *dst = xb + r * kp;
        if (r >= m) {
            memset(dst, 0, (size_t)kp * 2);
            continue;
        }
        const uint16_t *src = (const uint16_t *)x + r * K;
        if (kn->l.perm)
            for (int64_t j = 0; j < K; j++) dst[j] = src[kn->l.perm[j]];
        else
            memcpy(dst, src, (size_t)K * 2);
        memset(dst + K, 0, (size_t)(kp - K) * 2);
    }
}

/* f32 -> bf16 bits, round to nearest even, NaN kept quiet (as mpl_f32_to_bf16). */
static inline __m256i f32_to_bf16(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                 _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}

static void store(mpl_act act, const float *c, int64_t rows, int ncols, const void *bias, void *y, int64_t ldy) {
    __m512 bv[4];
    for (int v = 0; v < 4; v++) {
        int left = ncols - 16 * v;
        __mmask16 mk = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1u);
        if (!bias)
            bv[v] = _mm512_setzero_ps();
        else if (act == MPL_ACT_F32)
            bv[v] = _mm512_maskz_loadu_ps(mk, (const float *)bias + 16 * v);
        else {
            __m256i h = _mm256_maskz_loadu_epi16(mk, (const uint16_t *)bias + 16 * v);
            bv[v] = act == MPL_ACT_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                                        : _mm512_cvtph_ps(h);
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        for (int v = 0; v < 4; v++) {
            int left = ncols - 16 * v;
            if (left <= 0) break;
            __mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1u);
            __m512 val = _mm512_load_ps(c + r * 64 + 16 * v);
            if (bias) val = _mm512_add_ps(val, bv[v]);
            if (act == MPL_ACT_F32)
                _mm512_mask_storeu_ps((float *)y + r * ldy + 16 * v, mk, val);
            else if (act == MPL_ACT_BF16)
                _mm256_mask_storeu_epi16((uint16_t *)y + r * ldy + 16 * v, mk, f32_to_bf16(val));
            else
                _mm256_mask_storeu_epi16((uint16_t *)y + r * ldy + 16 * v, mk,
                                         _mm512_cvtps_ph(val, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
    }
}

static void add(float *c, const float *p, int64_t rows) {
    for (int64_t i = 0; i < rows * 64; i += 16)
        _mm512_storeu_ps(c + i, _mm512_add_ps(_mm512_loadu_ps(c + i), _mm512_loadu_ps(p + i)));
}

void mpl_xw_gemm_avx512_f32(const mpl_xw_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b, void *panel,
                            float *c, void *scratch);
void mpl_xw_gemm_avx512_bf16(const mpl_xw_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                             void *panel, float *c, void *scratch);

const mpl_xw_ops mpl_xw_ops_avx512 = {
    .prep_f32 = prep_f32,
    .prep_bf16 = prep_bf16,
    .gemv = gemv,
    .gemm = {mpl_xw_gemm_avx512_f32, mpl_xw_gemm_avx512_bf16, mpl_xw_gemm_amx},
    .store = store,
    .add = add,
};

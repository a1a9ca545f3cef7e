/*
 * w4a16_avx2.c -- x86_avx2_w4a16 (AVX2 + FMA + F16C): decode, prefill,
 * activation preparation and output conversion over the x86_w4a16 layout.
 *
 * Dequantization without a 16-entry permute (AVX2's vpermps reads 3 bits): a
 * channel's dword holds its 4 nibbles at bits 0, 4, 8, 12; masking nibble p in
 * place and OR-ing the exponent of 2^(23 - 4p) makes the float 2^(23-4p) + s
 * exactly (the nibble lands on the bits worth 1), and subtracting 2^(23-4p) + 8
 * (or + zero point) leaves the exact integer weight: 3 uops per 8 weights.
 */
#include <immintrin.h>
#include <string.h>

#include "../w4a16_x86.h"

#define XW_INLINE static inline __attribute__((always_inline))
/* Prefetch distance for the decode stream: 1 KiB, as the AVX-512 kernel (see there). */
#define XW_PF_BYTES 1024
/* Prefill segment: 128 inputs x 64 channels of f32 = a 32 KiB panel in L1. */
#define SEG_F32 128
/* Prefill row tile: 6 rows x 2 vectors = 12 accumulators + 2 weights + 1 broadcast of 16 ymm. */
#define MR_MAX 6

static const int koff[4] = {0, 2, 1, 3}; /* input of nibble position p (bits 4p..4p+3) */

XW_INLINE __m256i nib_mask(int p) { return _mm256_set1_epi32(0xF << (4 * p)); }
XW_INLINE __m256i nib_magic(int p) { return _mm256_set1_epi32((150 - 4 * p) << 23); }
XW_INLINE float nib_base(int p) { return (float)(1 << (23 - 4 * p)); }

/* Exact float (stored) + 2^(23-4p) of nibble p of each dword. */
XW_INLINE __m256 nib_float(__m256i d, int p) {
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(d, nib_mask(p)), nib_magic(p)));
}

/* The 8 scales of half-vector h (channels 8h..8h+7) of a group, as f32. */
XW_INLINE __m256 load_scales(const mpl_xw_layout *l, const uint8_t *grp, int h) {
    if (l->scale_fmt == MPL_XW_SCALE_F32) return _mm256_load_ps((const float *)grp + 8 * h);
    __m128i s = _mm_load_si128((const __m128i *)(grp + 16 * h));
    if (l->scale_fmt == MPL_XW_SCALE_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(s), 16));
    return _mm256_cvtph_ps(s);
}

XW_INLINE __m256 load_zeros(const mpl_xw_layout *l, const uint8_t *grp, int h) {
    if (!l->zero_points) return _mm256_set1_ps(8.0f);
    __m128i z = _mm_loadl_epi64((const __m128i *)(grp + l->scale_bytes + 8 * (size_t)h));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(z));
}

/* Channels 8h..8h+7 of a 128-byte step live in bytes 16h..16h+15 (2 bytes per channel). */
XW_INLINE __m256i load_dwords(const uint8_t *wp, int h) {
    return _mm256_cvtepu16_epi32(_mm_load_si128((const __m128i *)(wp + 16 * h)));
}

/*
 * Decode: c[0..63] for one row, inputs [k0, k1): 8 accumulators (one per 8 channels),
 * 4 broadcasts of the row's inputs per step, then dword, weight and zero registers:
 * 16 ymm. Further rows re-run the block from L2 (decode is taken for small m only).
 */
static void gemv_row(const mpl_xw_kernel *kn, const float *xr, int64_t b, int64_t k0, int64_t k1, float *c) {
    const mpl_xw_layout *l = &kn->l;
    const int64_t gs = l->group_size;
    const bool zp = l->zero_points != 0;
    for (int h = 0; h < 8; h++) _mm256_store_ps(c + 8 * h, _mm256_setzero_ps());
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp = mpl_xw_group(l, b, g);
        const uint8_t *wp = mpl_xw_group_weights(l, b, g) + (size_t)((ks - g * gs) / 4) * 128;
        __m256 acc[8];
#pragma GCC unroll 8
        for (int h = 0; h < 8; h++) acc[h] = _mm256_setzero_ps();
        for (int64_t k = ks; k < ke; k += 4, wp += 128) {
            _mm_prefetch((const char *)wp + XW_PF_BYTES, _MM_HINT_T0);
            _mm_prefetch((const char *)wp + XW_PF_BYTES + 64, _MM_HINT_T0);
            __m256 xb[4];
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) xb[p] = _mm256_broadcast_ss(xr + k + koff[p]);
#pragma GCC unroll 8
            for (int h = 0; h < 8; h++) {
                __m256i d = load_dwords(wp, h);
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++) {
                    /* Without zero points one subtract yields stored - 8; with them the zero
                     * (per channel) is subtracted after the exponent base (both exact). */
                    __m256 w = _mm256_sub_ps(nib_float(d, p), _mm256_set1_ps(nib_base(p) + (zp ? 0.0f : 8.0f)));
                    if (zp) w = _mm256_sub_ps(w, load_zeros(l, grp, h));
                    acc[h] = _mm256_fmadd_ps(xb[p], w, acc[h]);
                }
            }
        }
#pragma GCC unroll 8
        for (int h = 0; h < 8; h++)
            _mm256_store_ps(c + 8 * h, _mm256_fmadd_ps(acc[h], load_scales(l, grp, h), _mm256_load_ps(c + 8 * h)));
    }
}

static void gemv(const mpl_xw_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0, int64_t k1, float *c) {
    for (int64_t r = 0; r < m; r++) gemv_row(kn, xf + r * kn->l.k, b, k0, k1, c + r * 64);
}

/* ---- prefill ---- */

static void dequant_f32_panel(const mpl_xw_layout *l, int64_t b, int64_t g, int64_t c0, int64_t c1, float *panel) {
    const uint8_t *grp = mpl_xw_group(l, b, g);
    const uint8_t *wp = mpl_xw_group_weights(l, b, g) + (size_t)c0 * 128;
    __m256 z[8];
    for (int h = 0; h < 8; h++) z[h] = load_zeros(l, grp, h);
    for (int64_t c = c0; c < c1; c++, wp += 128, panel += 4 * 64) {
#pragma GCC unroll 8
        for (int h = 0; h < 8; h++) {
            __m256i d = load_dwords(wp, h);
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) {
                __m256 w = _mm256_sub_ps(_mm256_sub_ps(nib_float(d, p), _mm256_set1_ps(nib_base(p))), z[h]);
                _mm256_store_ps(panel + koff[p] * 64 + 8 * h, w);
            }
        }
    }
}

/* c[r][8h0 .. 8h0+15] += s * sum_k x[r][k] * panel[k][..] for MR rows. */
XW_INLINE void micro(const float *xr, int64_t ldx, const float *panel, int64_t len, __m256 s0, __m256 s1, float *c,
                     int MR) {
    __m256 acc[MR_MAX][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < len; k++, panel += 64) {
        __m256 w0 = _mm256_load_ps(panel), w1 = _mm256_load_ps(panel + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m256 xb = _mm256_broadcast_ss(xr + r * ldx + k);
            acc[r][0] = _mm256_fmadd_ps(xb, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xb, w1, acc[r][1]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        _mm256_store_ps(c + r * 64, _mm256_fmadd_ps(acc[r][0], s0, _mm256_load_ps(c + r * 64)));
        _mm256_store_ps(c + r * 64 + 8, _mm256_fmadd_ps(acc[r][1], s1, _mm256_load_ps(c + r * 64 + 8)));
    }
}

static void gemm_f32(const mpl_xw_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b, void *panel_v,
                     float *c, void *scratch) {
    (void)scratch;
    const mpl_xw_layout *l = &kn->l;
    const int64_t K = l->k, gs = l->group_size;
    const float *xf = (const float *)xs;
    float *panel = panel_v;
    memset(c, 0, (size_t)(m1 - m0) * 64 * sizeof(float));
    for (int64_t g = 0; g < l->groups; g++) {
        const uint8_t *grp = mpl_xw_group(l, b, g);
        for (int64_t ks = 0; ks < gs; ks += SEG_F32) {
            int64_t len = gs - ks < SEG_F32 ? gs - ks : SEG_F32;
            dequant_f32_panel(l, b, g, ks / 4, (ks + len) / 4, panel);
            const float *xk = xf + g * gs + ks;
            for (int q = 0; q < 4; q++) {
                __m256 s0 = load_scales(l, grp, 2 * q), s1 = load_scales(l, grp, 2 * q + 1);
                const float *pq = panel + 16 * q;
                int64_t m = m0;
                for (; m + MR_MAX <= m1; m += MR_MAX)
                    micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, MR_MAX);
                switch (m1 - m) {
                case 5: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 5); break;
                case 4: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 4); break;
                case 3: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 3); break;
                case 2: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 2); break;
                case 1: micro(xk + m * K, K, pq, len, s0, s1, c + (m - m0) * 64 + 16 * q, 1); break;
                default: break;
                }
            }
        }
    }
}

/* ---- activations in, outputs out ---- */

static void prep_f32(const mpl_xw_kernel *kn, const void *x, int64_t m0, int64_t m1, float *xf) {
    const int64_t K = kn->l.k;
    const mpl_act act = kn->cfg.act;
    const size_t es = mpl_act_size(act);
    for (int64_t m = m0; m < m1; m++) {
        const char *src = (const char *)x + (size_t)m * (size_t)K * es;
        float *dst = xf + m * K;
        int64_t i = 0;
        if (kn->l.perm) {
            for (; i < K; i++) dst[i] = mpl_act_load(act, src, kn->l.perm[i]);
        } else if (act == MPL_ACT_F32) {
            memcpy(dst, src, (size_t)K * 4);
        } else if (act == MPL_ACT_BF16) {
            for (; i + 8 <= K; i += 8)
                _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(
                                              _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + 2 * i))), 16)));
            for (; i < K; i++) dst[i] = mpl_act_load(act, src, i);
        } else {
            for (; i + 8 <= K; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * i))));
            for (; i < K; i++) dst[i] = mpl_act_load(act, src, i);
        }
    }
}

/* f32 -> bf16 bits (round to nearest even, NaN kept quiet, as mpl_f32_to_bf16), 8 lanes. */
static inline __m128i f32_to_bf16(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                 _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
    r = _mm256_srli_epi32(r, 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static void store(mpl_act act, const float *c, int64_t rows, int ncols, const void *bias, void *y, int64_t ldy) {
    float bf[64];
    for (int i = 0; i < 64; i++) bf[i] = bias && i < ncols ? mpl_act_load(act, bias, i) : 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        for (int h = 0; h < 8 && 8 * h < ncols; h++) {
            __m256 val = _mm256_add_ps(_mm256_load_ps(c + r * 64 + 8 * h), _mm256_loadu_ps(bf + 8 * h));
            int n = ncols - 8 * h < 8 ? ncols - 8 * h : 8;
            if (act == MPL_ACT_F32) {
                if (n == 8)
                    _mm256_storeu_ps((float *)y + r * ldy + 8 * h, val);
                else {
                    float t[8];
                    _mm256_storeu_ps(t, val);
                    memcpy((float *)y + r * ldy + 8 * h, t, (size_t)n * 4);
                }
            } else {
                __m128i hv = act == MPL_ACT_BF16 ? f32_to_bf16(val)
                                                 : _mm256_cvtps_ph(val, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                uint16_t *dst = (uint16_t *)y + r * ldy + 8 * h;
                if (n == 8)
                    _mm_storeu_si128((__m128i *)dst, hv);
                else {
                    uint16_t t[8];
                    _mm_storeu_si128((__m128i *)t, hv);
                    memcpy(dst, t, (size_t)n * 2);
                }
            }
        }
    }
}

static void add(float *c, const float *p, int64_t rows) {
    for (int64_t i = 0; i < rows * 64; i += 8)
        _mm256_storeu_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(c + i), _mm256_loadu_ps(p + i)));
}

const mpl_xw_ops mpl_xw_ops_avx2 = {
    .prep_f32 = prep_f32,
    .prep_bf16 = NULL,
    .gemv = gemv,
    .gemm = {gemm_f32, NULL, NULL},
    .store = store,
    .add = add,
};

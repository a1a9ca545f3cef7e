/*
 * w4a16_ops.c -- the plumbing of x86_avx2_w4a16 (avx2 level): activations in as f32 rows,
 * outputs out (bias, one rounding to the activation type) and the split-K reduction.
 */
#include <string.h>

#include "w4a16_ymm.h"

void mpl_x86_w4a16_prep_f32_avx2(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1,
                                 int64_t rows, void *xs) {
    (void)rows; /* f32 rows need no padding */
    float *xf = xs;
    const int64_t K = kn->l.k;
    const mpl_act act = kn->cfg.act;
    const size_t es = mpl_act_size(act);
    for (int64_t r = m0; r < m1; r++) {
        const char *src = (const char *)x + (size_t)r * (size_t)K * es;
        float *dst = xf + r * K;
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

const mpl_x86_w4a16_ops mpl_x86_w4a16_ops_avx2 = {
    .store = store,
    .add = add,
};

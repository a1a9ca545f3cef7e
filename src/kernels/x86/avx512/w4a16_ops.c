/*
 * w4a16_ops.c -- the plumbing of x86_avx512_w4a16 (avx512 level): activations in (f32 rows for
 * the decode and f32 prefill paths, bf16 rows for the vdpbf16ps path), outputs out (bias,
 * one rounding to the activation type) and the split-K reduction.
 */
#include <string.h>

#include "../common/w4a16_zmm.inc"

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

void mpl_x86_w4a16_prep_f32_avx512(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1,
                                   int64_t rows, void *xs) {
    (void)rows; /* f32 rows need no padding */
    float *xf = xs;
    const int64_t K = kn->l.k;
    const mpl_act act = kn->cfg.act;
    const size_t es = mpl_act_size(act);
    for (int64_t r = m0; r < m1; r++) {
        const char *src = (const char *)x + (size_t)r * (size_t)K * es;
        float *dst = xf + r * K;
        if (kn->l.perm)
            for (int64_t j = 0; j < K; j++) dst[j] = mpl_act_load(act, src, kn->l.perm[j]);
        else
            row_to_f32(act, src, dst, K);
    }
}

/* Rows [m0, mpad) as bf16 rows of kp: rows of x below m, zero rows from m on. */
static void prep_bf16(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t mpad, int64_t m, void *xs) {
    uint16_t *xb = xs;
    const int64_t K = kn->l.k, kp = kn->kp;
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

void mpl_x86_w4a16_prep_bf16_avx512(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m,
                                    void *xs) {
    /* the workspace holds roundup(m, 32) rows (MPL_X86_W4A16_XS_BF16) */
    prep_bf16(kn, x, m0, m1 == m ? (m + 31) / 32 * 32 : m1, m, xs);
}

/* The decode reads rows < m only: no padding rows to zero (31 rows of kp at m = 1). */
void mpl_x86_w4a16_prep_bf16_rows_avx512(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1,
                                         int64_t m, void *xs) {
    (void)m;
    prep_bf16(kn, x, m0, m1, m1, xs);
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

const mpl_x86_w4a16_ops mpl_x86_w4a16_ops_avx512 = {
    .store = store,
    .add = add,
};

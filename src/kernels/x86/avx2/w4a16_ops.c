/*
 * w4a16_ops.c -- the plumbing of x86_avx2_w4a16 (avx2 level): activations in as f32 rows,
 * outputs out (bias, one rounding to the activation type) and the split-K reduction.
 */
#include <string.h>

#include "w4a16_ymm.h"

/* Inputs [i, i+8) of a row (packed input order) as f32. */
static inline __m256 load8(const mpl_x86_w4a16_kernel *kn, const char *src, int64_t i) {
    const mpl_act act = kn->cfg.act;
    if (kn->l.perm) {
        float t[8];
        for (int e = 0; e < 8; e++) t[e] = mpl_act_load(act, src, kn->l.perm[i + e]);
        return _mm256_loadu_ps(t);
    }
    if (act == MPL_ACT_F32) return _mm256_loadu_ps((const float *)src + i);
    __m128i h = _mm_loadu_si128((const __m128i *)(src + 2 * i));
    if (act == MPL_ACT_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

static inline float load1(const mpl_x86_w4a16_kernel *kn, const char *src, int64_t i) {
    return mpl_act_load(kn->cfg.act, src, kn->l.perm ? kn->l.perm[i] : i);
}

void mpl_x86_w4a16_prep_f32_avx2(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1,
                                 int64_t rows, void *xs) {
    (void)rows; /* f32 rows need no padding */
    const int64_t K = kn->l.k;
    const size_t es = mpl_act_size(kn->cfg.act);
    for (int64_t r = m0; r < m1; r++) {
        const char *src = (const char *)x + (size_t)r * (size_t)K * es;
        float *dst = (float *)xs + r * K;
        int64_t i = 0;
        for (; i + 8 <= K; i += 8) _mm256_storeu_ps(dst + i, load8(kn, src, i));
        for (; i < K; i++) dst[i] = load1(kn, src, i);
    }
}

/*
 * x for the prefill micro-kernel (avx2/w4a16_gemm.c): chunks of MC rows (chunk c at float
 * c * MC * K); in a chunk of T tiles (ceil(rows / MT)), tile t of group g holds its MT rows
 * input-major at ((g * T + t) * gs + kk) * MT + r, kk = input - g * gs. So the tiles of one
 * group follow each other, and the micro-kernel calls over a chunk's tiles read one sequential
 * stream of gs * MT * T floats. Lanes past m in the last tile are never read (the micro-kernel's
 * tail sizes), so they are left alone.
 */
/* In-register transpose of 8 x 8 floats (row i of v -> column i). */
static inline void transpose8(__m256 v[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

void mpl_x86_w4a16_prep_tiles_avx2(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1,
                                   int64_t m, void *xs) {
    enum { MT = MPL_X86_W4A16_AVX2_MTILE, MC = MPL_X86_W4A16_AVX2_MCHUNK };
    const int64_t K = kn->l.k, gs = kn->l.group_size;
    const size_t es = mpl_act_size(kn->cfg.act);
    _Static_assert(MT == 6, "the transpose and stores below hold 6 rows of 8");
    for (int64_t r = m0; r < m1;) {
        const char *src = (const char *)x + (size_t)r * (size_t)K * es;
        int64_t c = r / MC, rows = m - c * MC < MC ? m - c * MC : MC, T = (rows + MT - 1) / MT, t = (r - c * MC) / MT;
        float *dst = (float *)xs + c * MC * K + t * gs * MT + r % MT;
        if (r % MT == 0 && r + MT <= m1) {
            /* A whole tile: 8 inputs of its 6 rows per transpose, stored as 8 rows of 6 lanes
             * (gs is a multiple of 8: K % 8 == 0 and group sizes are multiples of 16). */
            for (int64_t g0 = 0; g0 < K; g0 += gs, dst += T * gs * MT)
                for (int64_t i = 0; i < gs; i += 8) {
                    __m256 v[8];
                    for (int e = 0; e < MT; e++) v[e] = load8(kn, src + (size_t)e * (size_t)K * es, g0 + i);
                    v[6] = v[7] = _mm256_setzero_ps();
                    transpose8(v);
                    for (int e = 0; e < 8; e++) { /* lanes 0-5 as 16 + 8 bytes (vmaskmovps is slow on Zen) */
                        _mm_storeu_ps(dst + (i + e) * MT, _mm256_castps256_ps128(v[e]));
                        _mm_storel_pi((__m64 *)(dst + (i + e) * MT + 4), _mm256_extractf128_ps(v[e], 1));
                    }
                }
            r += MT;
            continue;
        }
        for (int64_t g0 = 0; g0 < K; g0 += gs, dst += T * gs * MT) { /* one row of a split tile */
            int64_t i = 0;
            for (; i + 8 <= gs; i += 8) {
                float v[8];
                _mm256_storeu_ps(v, load8(kn, src, g0 + i));
                for (int e = 0; e < 8; e++) dst[(i + e) * MT] = v[e];
            }
            for (; i < gs; i++) dst[i * MT] = load1(kn, src, g0 + i);
        }
        r++;
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

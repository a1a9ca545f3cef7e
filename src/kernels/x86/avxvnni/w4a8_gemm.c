/*
 * w4a8_gemm.c -- the vnni path of x86_avxvnni_w4a8 (avxvnni level): the 4-byte dot product is
 * the 256-bit VEX vpdpbusd (int32 sums, no saturation: 8-bit codes go in as they are), in the
 * body of common/w4a8_ymm.inc, every weight width.
 */
#include <immintrin.h>

static inline __m256i w4a8_dot2(__m256i acc, __m256i u0, __m256i x0, __m256i u1, __m256i x1) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, u0, x0), u1, x1);
}

static inline __m256i w4a8_dot2_u8(__m256i acc, __m256i u0, __m256i x0, __m256i u1, __m256i x1) {
    return w4a8_dot2(acc, u0, x0, u1, x1);
}

#include "../common/w4a8_ymm.inc"

void mpl_x86_w4a8_gemm_avxvnni(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch) {
    (void)scratch;
    w4a8_gemm_ymm(j, p0, p1);
}

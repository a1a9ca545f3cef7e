/*
 * w4a8_gemm.c -- the madd path of x86_avx2_w4a8 (avx2 level, no VNNI): the 4-byte dot product
 * is vpmaddubsw (u8*s8 pairs -> s16; |15*127*2| < 2^15, so it never saturates) + vpmaddwd by
 * ones (-> s32), in the 256-bit body of common/w4a8_ymm.inc.
 */
#include <immintrin.h>

static inline __m256i w4a8_dot(__m256i acc, __m256i u8, __m256i s8) {
    __m256i pairs = _mm256_maddubs_epi16(u8, s8);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

#include "../common/w4a8_ymm.inc"

void mpl_x86_w4a8_gemm_avx2(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch) {
    (void)scratch;
    w4a8_gemm_ymm(j, p0, p1);
}

/*
 * w4a8_gemm.c -- the madd path of x86_avx2_w4a8 (avx2 level, no VNNI): the 4-byte dot products
 * are vpmaddubsw (u8*s8 pairs -> s16) + vpmaddwd by ones (-> s32), in the 256-bit body of
 * common/w4a8_ymm.inc, every weight width.
 *
 * vpmaddubsw saturates its s16 pair sums, so the operands are kept where it cannot:
 *   codes u <= 15 (2-, 3-, 4-bit): a pair is at most 2 * 15 * 127 = 3810, two planes' pairs added
 *     in s16 at most 7620 < 32767, so two planes share one vpmaddwd;
 *   8-bit codes (u up to 255: 2 * 255 * 127 = 64770 would saturate): u = 16*hi + lo with nibbles
 *     hi, lo <= 15, each summed over two planes in s16 as above (<= 7620), then vpmaddwd by 16 and
 *     by 1 into s32 (|sum| <= 2 * 7620 * 16, far inside int32).
 */
#include <immintrin.h>

static inline __m256i w4a8_dot2(__m256i acc, __m256i u0, __m256i x0, __m256i u1, __m256i x1) {
    __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(u0, x0), _mm256_maddubs_epi16(u1, x1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

static inline __m256i w4a8_dot2_u8(__m256i acc, __m256i u0, __m256i x0, __m256i u1, __m256i x1) {
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(u0, m0f), x0),
                                  _mm256_maddubs_epi16(_mm256_and_si256(u1, m0f), x1));
    __m256i hi = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(u0, 4), m0f), x0),
                                  _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(u1, 4), m0f), x1));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(lo, _mm256_set1_epi16(1)));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(hi, _mm256_set1_epi16(16)));
}

#include "../common/w4a8_ymm.inc"

void mpl_x86_w4a8_gemm_avx2(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch) {
    (void)scratch;
    w4a8_gemm_ymm(j, p0, p1);
}

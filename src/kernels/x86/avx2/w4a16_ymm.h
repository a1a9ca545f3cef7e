/*
 * w4a16_ymm.h -- inline helpers of x86_avx2_w4a16's files (avx2 level): dequantization
 * without a 16-entry permute (AVX2's vpermps reads 3 bits). A channel's dword holds its 4
 * nibbles at bits 0, 4, 8, 12; masking nibble p in place and OR-ing the exponent of
 * 2^(23 - 4p) makes the float 2^(23-4p) + s exactly (the nibble lands on the bits worth 1),
 * and subtracting 2^(23-4p) + 8 (or + zero point) leaves the exact integer weight: 3 uops per
 * 8 weights. Also scale and zero-point loading.
 */
#ifndef MPL_X86_W4A16_YMM_H
#define MPL_X86_W4A16_YMM_H

#include <immintrin.h>

#include "../x86_w4a16_driver.h"

#define XW_INLINE static inline __attribute__((always_inline))

/* Input (of a chunk's 4) held by nibble position p (bits 4p..4p+3): 0, 2, 1, 3. */
XW_INLINE int xw_koff(int p) { return ((p & 1) << 1) | (p >> 1); }

XW_INLINE __m256i nib_mask(int p) { return _mm256_set1_epi32(0xF << (4 * p)); }
XW_INLINE __m256i nib_magic(int p) { return _mm256_set1_epi32((150 - 4 * p) << 23); }
XW_INLINE float nib_base(int p) { return (float)(1 << (23 - 4 * p)); }

/* Exact float (stored) + 2^(23-4p) of nibble p of each dword. */
XW_INLINE __m256 nib_float(__m256i d, int p) {
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(d, nib_mask(p)), nib_magic(p)));
}

/* The 8 scales of half-vector h (channels 8h..8h+7) of a group, as f32. */
XW_INLINE __m256 load_scales(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int h) {
    if (l->scale_fmt == MPL_X86_W4A16_SCALE_F32) return _mm256_load_ps((const float *)grp + 8 * h);
    __m128i s = _mm_load_si128((const __m128i *)(grp + 16 * h));
    if (l->scale_fmt == MPL_X86_W4A16_SCALE_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(s), 16));
    return _mm256_cvtph_ps(s);
}

XW_INLINE __m256 load_zeros(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int h) {
    if (!l->zero_points) return _mm256_set1_ps(8.0f);
    __m128i z = _mm_loadl_epi64((const __m128i *)(grp + l->scale_bytes + 8 * (size_t)h));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(z));
}

/* Channels 8h..8h+7 of a 128-byte step live in bytes 16h..16h+15 (2 bytes per channel). */
XW_INLINE __m256i load_dwords(const uint8_t *wp, int h) {
    return _mm256_cvtepu16_epi32(_mm_load_si128((const __m128i *)(wp + 16 * h)));
}

#endif

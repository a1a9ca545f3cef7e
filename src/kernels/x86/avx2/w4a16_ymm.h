/*
 * w4a16_ymm.h -- inline helpers of x86_avx2_w4a16's files (avx2 level): in-register
 * dequantization of the x86_w4a16 layout in 2 uops per 8 weights, scale and zero-point loading.
 *
 * Dequantization (AVX2 has no 16-entry permute: vpermps reads 3 bits). A 32-byte chunk holds
 * 16 channels x 4 inputs, one 16-bit word per channel with its nibbles at bits 0, 4, 8, 12
 * (inputs j0, j0+2, j0+1, j0+3; docs/layouts/x86_w4a16.md). vpunpck{l,h}wd of the chunk with
 * the constant word 0x4F00 gives one dword per channel, the nibbles in the low half and 0x4F in
 * the top byte (2 shuffles per 64 weights). 0x4F covers the exponent bytes 0x4B, 0x49, 0x47,
 * 0x45 of 2^23, 2^19, 2^15, 2^11, so ONE vpand with the mask of nibble p keeps that nibble in
 * place under the exponent of 2^(23-4p): the float is exactly 2^(23-4p) + s (the nibble lands on
 * the mantissa bits worth 1). One vsubps of 2^(23-4p) + zero then leaves the exact integer s - z.
 * Per 8 weights: vpand + vsubps (+ 1/4 shuffle), then one FMA per row.
 *
 * Channel order after the unpack: the low dword vector of chunk v holds channels 16v + {0-3,
 * 8-11}, the high one 16v + {4-7, 12-15} (the unpacks work per 128-bit lane); xw_unpermute
 * restores 16v + 0..7 and 16v + 8..15 (two vperm2f128) before anything leaves the registers in
 * channel order.
 */
#ifndef MPL_X86_W4A16_YMM_H
#define MPL_X86_W4A16_YMM_H

#include <immintrin.h>

#include "../x86_w4a16_driver.h"

#define XW_INLINE static inline __attribute__((always_inline))

/* Input (of a 4-input step) held by nibble position p (bits 4p..4p+3): 0, 2, 1, 3. */
XW_INLINE int xw_koff(int p) { return ((p & 1) << 1) | (p >> 1); }

/* The high word of every unpacked dword: the union of the 4 exponent bytes below. */
XW_INLINE __m256i xw_hi_word(void) { return _mm256_set1_epi16(0x4F00); }
/* Exponent byte of 2^(23-4p) (biased 150-4p, sign 0, bit 23 clear) and nibble p's bits. */
XW_INLINE __m256i xw_mask(int p) { return _mm256_set1_epi32((int)((0x4Bu - 2u * (unsigned)p) << 24 | 0xFu << (4 * p))); }
/* 2^(23-4p): the float's value with nibble 0. */
XW_INLINE float xw_base(int p) { return (float)(1 << (23 - 4 * p)); }

/* The two dword vectors of a 32-byte chunk (channels {0-3,8-11} and {4-7,12-15}). */
XW_INLINE __m256i xw_unpack_lo(__m256i chunk) { return _mm256_unpacklo_epi16(chunk, xw_hi_word()); }
XW_INLINE __m256i xw_unpack_hi(__m256i chunk) { return _mm256_unpackhi_epi16(chunk, xw_hi_word()); }

/* Exactly 2^(23-4p) + stored nibble p, per lane. */
XW_INLINE __m256 xw_biased(__m256i d, __m256i mask) { return _mm256_castsi256_ps(_mm256_and_si256(d, mask)); }

/* Unpacked (lo, hi) order <-> channel order: {0-3,8-11},{4-7,12-15} <-> {0-7},{8-15}. The map
 * is its own inverse. */
XW_INLINE void xw_unpermute(__m256 lo, __m256 hi, __m256 *c0, __m256 *c1) {
    *c0 = _mm256_permute2f128_ps(lo, hi, 0x20);
    *c1 = _mm256_permute2f128_ps(lo, hi, 0x31);
}

/* The 8 scales of channels 8h..8h+7 of a group, as f32. */
XW_INLINE __m256 xw_load_scales(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int h) {
    if (l->scale_fmt == MPL_X86_W4A16_SCALE_F32) return _mm256_load_ps((const float *)grp + 8 * h);
    __m128i s = _mm_load_si128((const __m128i *)(grp + 16 * h));
    if (l->scale_fmt == MPL_X86_W4A16_SCALE_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(s), 16));
    return _mm256_cvtph_ps(s);
}

/* Zero points of channels 8h..8h+7 as f32 (8 for the types without zero points). */
XW_INLINE __m256 xw_load_zeros(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int h) {
    if (!l->zero_points) return _mm256_set1_ps(8.0f);
    __m128i z = _mm_loadl_epi64((const __m128i *)(grp + l->scale_bytes + 8 * (size_t)h));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(z));
}

/* What vsubps takes away from the biased float of nibble p for the 16 channels of chunk v, in
 * unpacked order: sub[0] for the lo vector, sub[1] for the hi one (2^(23-4p) + zero, exact). */
XW_INLINE void xw_subtrahends(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int v, int p, __m256 sub[2]) {
    __m256 z0 = xw_load_zeros(l, grp, 2 * v), z1 = xw_load_zeros(l, grp, 2 * v + 1), zl, zh;
    xw_unpermute(z0, z1, &zl, &zh);
    sub[0] = _mm256_add_ps(zl, _mm256_set1_ps(xw_base(p)));
    sub[1] = _mm256_add_ps(zh, _mm256_set1_ps(xw_base(p)));
}

/*
 * The other widths (8, 3 and 2 bits; docs/layouts/x86_w4a16.md) use the same exponent trick on
 * dwords that hold one channel's fields: field f of a dword at bits pos(f) under the exponent of
 * 2^(23 - pos(f)), so one vpand with the field's mask gives exactly 2^(23 - pos(f)) + s, and one
 * vsubps of 2^(23 - pos(f)) + zero the integer s - z.
 *   8-bit: half h of a chunk (16 words, word i = channel i, inputs 2h at bits 0-7 and 2h+1 at
 *          8-15) unpacked with the word 0x4F00 as the 4-bit chunk is: dwords in the unpacked
 *          order ({0-3,8-11}, {4-7,12-15}); fields at 0 and 8 (exponent bytes 0x4B, 0x47).
 *   2-bit: vpmovzxbd of bytes 0-7 / 8-15 (channel order), fields at 0, 2, 4, 6 (0x4B..0x48),
 *          the exponent byte 0x4B or'ed in.
 *   3-bit: the 12-bit word of each channel, bits 0-7 from bytes 0-15 and 8-11 from the nibbles of
 *          bytes 16-23, fields at 0, 3, 6, 9 (biased exponents 150, 147, 144, 141: their union
 *          0x9F or'ed in at bit 23); channel order.
 * Each chunk gives two dword vectors per input group (lo: the first 8 channels of the width's
 * order, hi: the other 8); 8-bit has two input groups (inputs 0-1 from half 0, 2-3 from half 1),
 * 2- and 3-bit one (inputs 0-3).
 */
/* Bit position of the field of input e (0..3) in its dword. */
XW_INLINE int xw_wpos(int bits, int e) { return bits == 8 ? 8 * (e & 1) : bits * e; }
/* Exactly 2^(23 - pos): what the masked float is worth with field 0. */
XW_INLINE float xw_wbase(int bits, int e) { return (float)(1 << (23 - xw_wpos(bits, e))); }
/* The mask of input e's field: its biased exponent at bits 23-30 and its bits. */
XW_INLINE __m256i xw_wmask(int bits, int e) {
    unsigned pos = (unsigned)xw_wpos(bits, e), bexp = 150u - pos;
    return _mm256_set1_epi32((int)(bexp << 23 | ((1u << bits) - 1u) << pos));
}
/* Inputs per input group, and the group of input e. */
XW_INLINE int xw_wgroup(int bits, int e) { return bits == 8 ? e >> 1 : 0; }
/* 8-bit keeps the unpacked channel order (as 4-bit), 2- and 3-bit the channel order. */
XW_INLINE bool xw_wunpacked(int bits) { return bits == 8; }

/* The lo and hi dword vectors of input group ig of chunk v of the step at `step`. */
XW_INLINE void xw_wload(int bits, const uint8_t *step, int v, int ig, __m256i d[2]) {
    const uint8_t *q = step + mpl_x86_w4a16_chunk_lo(bits, v);
    if (bits == 8) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(q + 32 * ig));
        d[0] = _mm256_unpacklo_epi16(h, xw_hi_word());
        d[1] = _mm256_unpackhi_epi16(h, xw_hi_word());
    } else if (bits == 2) {
        const __m256i ex = _mm256_set1_epi32(0x4B000000);
        d[0] = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)), ex);
        d[1] = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8))), ex);
    } else {
        const __m256i ex = _mm256_set1_epi32(0x4F800000); /* 0x9F << 23 */
        __m256i hn = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(step + mpl_x86_w4a16_chunk_hi3(v))));
        /* channel t < 8: low nibble of nibble byte t to bits 8-11 (its neighbour's lands at 12-15,
         * which no mask reads); channel t + 8: the high nibble. */
        __m256i h0 = _mm256_or_si256(_mm256_slli_epi32(hn, 8), ex);
        __m256i h1 = _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(hn, 4), 8), ex);
        d[0] = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)), h0);
        d[1] = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8))), h1);
    }
}

/* (d & mask) - *sub: the integer s - z of one field, the subtrahend read from memory (L1) inside the
 * asm. With intrinsics gcc hoists the per-group constants (masks, 32 subtrahends) into registers
 * and spills the accumulators instead (measured 1.5-2x slower at one row). */
XW_INLINE __m256 xw_wfield(__m256i d, __m256i mask, const __m256 *sub) {
    __m256 w;
    __asm__("vpand %[m], %[d], %[w]\n\tvsubps %[s], %[w], %[w]" : [w] "=&x"(w) : [d] "x"(d), [m] "x"(mask), [s] "m"(*sub));
    return w;
}
/* A mask loaded where it is used (volatile: not hoisted out of the loop into a register). */
XW_INLINE __m256i xw_wmask_load(const __m256i *mask) {
    __m256i m;
    __asm__ volatile("vmovdqa %[p], %[m]" : [m] "=x"(m) : [p] "m"(*mask));
    return m;
}

/* Zero points of chunk v's 16 channels as f32 in the width's order (lo, hi); the bias without. */
XW_INLINE void xw_wzeros(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int v, __m256 z[2]) {
    if (!l->zero_points) {
        z[0] = z[1] = _mm256_set1_ps((float)l->bias);
        return;
    }
    const uint8_t *zp = grp + l->scale_bytes + 16 * (size_t)v;
    __m256 z0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)zp)));
    __m256 z1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(zp + 8))));
    if (xw_wunpacked(l->bits))
        xw_unpermute(z0, z1, &z[0], &z[1]);
    else
        z[0] = z0, z[1] = z1;
}

#endif

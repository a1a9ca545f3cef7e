/*
 * w4a16_avx512.h -- inline helpers shared by the AVX-512 (and AMX) W4A16
 * files: scale loading and the bf16 panel dequantizer. Include only from
 * translation units compiled with AVX-512 F/BW/VL flags.
 */
#ifndef MPL_W4A16_AVX512_H
#define MPL_W4A16_AVX512_H

#include <immintrin.h>

#include "../w4a16_x86.h"

#define XW_INLINE static inline __attribute__((always_inline))

/* Prefetch distance of weight streams: 1 KiB = 8 steps of 128 bytes ahead, enough to cover
 * DRAM latency at ~14 GB/s per core without running past the L1 fill buffers
 * (measured: 512 B .. 2 KiB all within noise). */
#define XW_PF_BYTES 1024

/* The 16 scales of vector v (channels 16v..16v+15) of a group, as f32. */
XW_INLINE __m512 xw_load_scales(const mpl_xw_layout *l, const uint8_t *grp, int v) {
    if (l->scale_fmt == MPL_XW_SCALE_F32) return _mm512_load_ps((const float *)grp + 16 * v);
    __m256i h = _mm256_load_si256((const __m256i *)(grp + 32 * v));
    if (l->scale_fmt == MPL_XW_SCALE_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* Zero points of vector v of a group as f32 (8 for types without zero points). */
XW_INLINE __m512 xw_load_zeros_f32(const mpl_xw_layout *l, const uint8_t *grp, int v) {
    if (!l->zero_points) return _mm512_set1_ps(8.0f);
    __m128i z = _mm_load_si128((const __m128i *)(grp + l->scale_bytes + 16 * (size_t)v));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(z));
}

/* bf16 bits of the integers -16..15: entry i holds (float)(i - 16), exact in bf16. */
XW_INLINE __m512i xw_bf16_int_lut(void) {
    return _mm512_set_epi16((short)0x4170, (short)0x4160, (short)0x4150, (short)0x4140, (short)0x4130, (short)0x4120,
                            (short)0x4110, (short)0x4100, (short)0x40e0, (short)0x40c0, (short)0x40a0, (short)0x4080,
                            (short)0x4040, (short)0x4000, (short)0x3f80, (short)0x0000, (short)0xbf80, (short)0xc000,
                            (short)0xc040, (short)0xc080, (short)0xc0a0, (short)0xc0c0, (short)0xc0e0, (short)0xc100,
                            (short)0xc110, (short)0xc120, (short)0xc130, (short)0xc140, (short)0xc150, (short)0xc160,
                            (short)0xc170, (short)0xc180);
}

/* Index offsets (16 - zero) per bf16 word of vector v: both words of a channel's pair share it. */
XW_INLINE __m512i xw_zero_offsets_w16(const mpl_xw_layout *l, const uint8_t *grp, int v) {
    if (!l->zero_points) return _mm512_set1_epi16(8);
    __m128i z = _mm_load_si128((const __m128i *)(grp + l->scale_bytes + 16 * (size_t)v));
    __m512i zw = _mm512_cvtepu8_epi32(z);                          /* one zero per dword */
    zw = _mm512_or_si512(zw, _mm512_slli_epi32(zw, 16));           /* copied into both words */
    return _mm512_sub_epi16(_mm512_set1_epi16(16), zw);
}

/* bf16 bits of stored - 8 for stored = 0..15 (entries 16..31 unused): no zero points. */
XW_INLINE __m512i xw_bf16_b8_lut(void) {
    return _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (short)0x40e0, (short)0x40c0, (short)0x40a0,
                            (short)0x4080, (short)0x4040, (short)0x4000, (short)0x3f80, (short)0x0000, (short)0xbf80,
                            (short)0xc000, (short)0xc040, (short)0xc080, (short)0xc0a0, (short)0xc0c0, (short)0xc0e0,
                            (short)0xc100);
}

/*
 * Dequantize the chunks [c0, c1) of group g of block b into a bf16 pair panel:
 * row r (inputs 2r, 2r+1 counted from chunk c0) holds 64 channels x 2 inputs,
 * 256 bytes, the layout of an AMX B tile row and of a vdpbf16ps operand.
 * Values are the exact integers stored - zero. ZP: the layout has zero points
 * (index stored + 16 - zero into the -16..15 table); else stored indexes stored - 8.
 */
XW_INLINE void xw_dequant_bf16_panel_zp(const mpl_xw_layout *l, int64_t b, int64_t g, int64_t c0, int64_t c1,
                                        uint16_t *panel, bool ZP) {
    const uint8_t *grp = mpl_xw_group(l, b, g);
    const uint8_t *wp = mpl_xw_group_weights(l, b, g) + (size_t)c0 * 128;
    const __m512i lut = ZP ? xw_bf16_int_lut() : xw_bf16_b8_lut(), low = _mm512_set1_epi16(15);
    __m512i zo[4];
    for (int v = 0; v < 4; v++) zo[v] = ZP ? xw_zero_offsets_w16(l, grp, v) : _mm512_setzero_si512();
    for (int64_t c = c0; c < c1; c++, wp += 128, panel += 256) {
        /* Small m streams the weights through here: prefetch as the decode kernel does. */
        _mm_prefetch((const char *)wp + XW_PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)wp + XW_PF_BYTES + 64, _MM_HINT_T0);
        for (int v = 0; v < 4; v++) {
            __m512i by = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(wp + 32 * v)));
            __m512i lo = _mm512_and_si512(by, low), hi = _mm512_srli_epi16(by, 4);
            if (ZP) lo = _mm512_add_epi16(lo, zo[v]), hi = _mm512_add_epi16(hi, zo[v]);
            _mm512_store_si512((__m512i *)(panel + 32 * v), _mm512_permutexvar_epi16(lo, lut));
            _mm512_store_si512((__m512i *)(panel + 128 + 32 * v), _mm512_permutexvar_epi16(hi, lut));
        }
    }
}

XW_INLINE void xw_dequant_bf16_panel(const mpl_xw_layout *l, int64_t b, int64_t g, int64_t c0, int64_t c1,
                                     uint16_t *panel) {
    if (l->zero_points)
        xw_dequant_bf16_panel_zp(l, b, g, c0, c1, panel, true);
    else
        xw_dequant_bf16_panel_zp(l, b, g, c0, c1, panel, false);
}

#endif

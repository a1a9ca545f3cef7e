// w4a8_common.glsl -- bindings, push constants and helpers shared by the vulkan_w4a8 shaders. The weight
// buffers and the push constants are those of w4a16_common.glsl (the same packed image,
// docs/layouts/vulkan_w4a16.md; the same pipeline layout); only x differs: each row of x is the host's int8
// quantization (mpl_quantize_row_i8, bit-identical to ref's) in the packed (act-order sorted) channel order,
// k_pad bytes (zero past k, four per u32, little-endian) followed by one 16-byte slot whose first word is the
// row's sx as f32 (NaN for a row holding inf/NaN). A row is kq * 2 + 1 uvec4.
// y is f32 [m][n], rounded once on the host.

#include "vk_image.glsl"

layout(std430, binding = 3) readonly buffer XQ { uvec4 xq[]; };

const uint FLAG_ZEROS = 2u; // per-group zero points (else zero = 8); bit 0 (bf16) does not matter here
const uint FLAG_BIAS = 4u;

// uvec4 per row of x: k_pad int8 values, then the sx slot.
uint xrow_stride() { return pc.kq * 2u + 1u; }

// The row's activation scale sx.
float sx_of(uint xrow) { return uintBitsToFloat(xq[xrow * xrow_stride() + pc.kq * 2u].x); }

// Byte i (0..3) of u as a signed int8.
int s8(uint u, uint i) { return bitfieldExtract(int(u), int(8u * i), 8); }

// The group of packed position p (positions past k, whose q is 0, clamp into the last group).
uint group_of(uint p) { return min(p / pc.group_size, pc.groups - 1u); }

// The zero point of (row, group): s - zero is the weight's exact integer value.
int zero_of(uint row, uint g) {
    if ((pc.flags & FLAG_ZEROS) == 0u) return 8;
    uint byte_at = row * pc.zstride + g;
    return int((zeros[byte_at >> 2] >> (8u * (byte_at & 3u))) & 255u);
}

// One step of the group fold of mplinear.h, in group order and without contraction into an fma (precise):
// acc + scale * float(isum), each operation rounded as ref rounds it.
float fold(float acc, float scale, int isum) {
    precise float r = acc + scale * float(isum);
    return r;
}

// y = acc * sx (+ bias), as ref computes it.
float finish(float acc, float sx, uint col) {
    precise float v = acc * sx;
    if ((pc.flags & FLAG_BIAS) != 0u) v = v + bias[col];
    return v;
}

// w4a16_common.glsl -- bindings, push constants and helpers shared by the vulkan_w4a16 shaders.
// The buffers follow docs/layouts/vulkan_w4a16.md; x rows are k_pad 16-bit values (f16 or bf16 bits) in
// the packed (act-order sorted) channel order, zero past k; y is f32 [m][n], rounded once on the host.

// One 16-byte load holds 32 weight codes of one row, or 8 activations.
#include "vk_image.glsl"

layout(std430, binding = 3) readonly buffer X { uvec4 xs16[]; };

const uint FLAG_BF16 = 1u;  // activations are bf16 (else f16)
const uint FLAG_ZEROS = 2u; // per-group zero points (else zero = 8)
const uint FLAG_BIAS = 4u;

// Two 16-bit activations of one u32 (low half first), exactly as floats.
vec2 act2(uint u) {
    if ((pc.flags & FLAG_BF16) != 0u) return vec2(uintBitsToFloat(u << 16), uintBitsToFloat(u & 0xffff0000u));
    return unpackHalf2x16(u);
}

// The group of packed position p (positions past k, whose x is 0, clamp into the last group).
uint group_of(uint p) { return min(p / pc.group_size, pc.groups - 1u); }

// The zero point of (row, group) as a float: s - zero is the weight's exact integer value.
float zero_of(uint row, uint g) {
    if ((pc.flags & FLAG_ZEROS) == 0u) return 8.0;
    uint byte_at = row * pc.zstride + g;
    return float((zeros[byte_at >> 2] >> (8u * (byte_at & 3u))) & 255u);
}

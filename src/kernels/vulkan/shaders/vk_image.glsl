// vk_image.glsl -- the pipeline layout every vulkan_w4a16 / vulkan_w4a8 shader shares: the packed image's
// buffers (docs/layouts/vulkan_w4a16.md), bias, y (f32 [m][n], rounded once on the host) and the push
// constants. Binding 3, x, is each kernel's own (w4a16_common.glsl: 16-bit rows; w4a8_common.glsl: int8 rows).

layout(std430, binding = 0) restrict readonly buffer QWeight { uvec4 qweight[]; };
layout(std430, binding = 1) restrict readonly buffer Scales { float scales[]; };
layout(std430, binding = 2) restrict readonly buffer Zeros { uint zeros[]; };
layout(std430, binding = 4) restrict readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) restrict writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint m;          // rows of x in this dispatch
    uint n;          // output channels (the layer's N)
    uint kq;         // 16-byte code loads per weight row: k_pad / 32
    uint groups;
    uint group_size; // effective group size (a multiple of 16, or k)
    uint zstride;    // bytes per row of zeros
    uint flags;      // FLAG_*
    uint n_base;     // first output channel of this dispatch (the grid's x is split when it is too large)
    uint m_base;     // first row of this dispatch within the buffers
} pc;

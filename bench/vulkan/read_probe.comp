#version 450
// read_probe.comp -- the read-bandwidth ceiling of a compute shader on this device (bench_vulkan_w4a16 --probe,
// mpl_vk_read_rate): every invocation has 8 independent 16-byte loads in flight (256 invocations x 8 loads per
// workgroup, each load instruction of a subgroup contiguous), grid-stride over a window of pc.loads uvec4,
// folded with xor into a sink written only on an impossible value (so nothing is dead code). Timed the way
// vulkan_w4a16:gemv is (one dispatch between two timestamps), so the two are comparable.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { uvec4 a[]; };
layout(std430, binding = 5) writeonly buffer Sink { uint sink[]; };
layout(push_constant) uniform Params { uint loads; } pc;

void main() {
    const uint per_wg = 256u * 8u;
    const uint stride = gl_NumWorkGroups.x * per_wg;
    uvec4 acc = uvec4(0u);
    for (uint i = gl_WorkGroupID.x * per_wg + gl_LocalInvocationID.x; i < pc.loads; i += stride) {
        uvec4 v[8];
        for (uint j = 0u; j < 8u; j++) v[j] = a[min(i + j * 256u, pc.loads - 1u)];
        for (uint j = 0u; j < 8u; j++) acc ^= v[j];
    }
    if (acc.x == 0x9e3779b9u && acc.y == 0x7f4a7c15u) sink[0] = acc.z ^ acc.w;
}

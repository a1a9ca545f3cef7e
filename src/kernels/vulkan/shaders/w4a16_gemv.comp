#version 450
// w4a16_gemv.comp -- vulkan_w4a16:gemv, the decode path: y[m][n] = bias[n] + sum_g s[n][g] * sum_{k in g} x*w
// for up to MB rows of x per workgroup and ROWS output channels. The workgroup's threads split K in 16-byte
// code loads (32 channels of one row) and x loads (8 channels), each x load reused by all ROWS rows; every
// 8-channel word lies in one group (group sizes are multiples of 16), whose fp32 sum of exact integer
// weights times x is scaled once. Partial sums are reduced with subgroupAdd, then across the subgroups in
// shared memory in a fixed order (deterministic).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

// 128 threads: 4 NVIDIA warps, 2 AMD wave64s, enough loads in flight per row at K = 4096 (one chunk each).
layout(local_size_x = 128) in;
#define WG 128
// 8 rows per workgroup: each x load serves 8 weight loads, so x adds 1/8 to the weights' cache traffic.
#define ROWS 8
// up to 4 rows of x per workgroup (registers: ROWS * MB accumulators); more rows run more workgroups (grid z)
#define MB 4

#include "w4a16_common.glsl"

shared float partial[ROWS * MB][WG];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = pc.n_base + gl_WorkGroupID.x * ROWS;
    const uint mrow0 = gl_WorkGroupID.z * MB;
    const uint mcount = min(MB, pc.m - mrow0);
    float acc[ROWS][MB];
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < MB; j++) acc[r][j] = 0.0;

    const uint xrow = pc.kq * 4u; // uvec4 loads per row of x
    for (uint c = tid; c < pc.kq; c += WG) {
        uint g[4];
        for (uint w = 0u; w < 4u; w++) g[w] = group_of(c * 32u + w * 8u);
        for (uint j = 0u; j < MB; j++) {
            if (j >= mcount) break;
            vec2 xv[4][4];
            for (uint w = 0u; w < 4u; w++) {
                uvec4 xq = xs16[(pc.m_base + mrow0 + j) * xrow + c * 4u + w];
                xv[w][0] = act2(xq.x), xv[w][1] = act2(xq.y), xv[w][2] = act2(xq.z), xv[w][3] = act2(xq.w);
            }
            for (uint r = 0u; r < ROWS; r++) {
                const uint row = row0 + r;
                uvec4 q = qweight[row * pc.kq + c];
                uint qw[4] = uint[4](q.x, q.y, q.z, q.w);
                float sum = 0.0;
                for (uint w = 0u; w < 4u; w++) {
                    float z = zero_of(row, g[w]);
                    float s8 = 0.0;
                    for (uint e = 0u; e < 4u; e++) {
                        uint b = qw[w] >> (8u * e);
                        s8 += xv[w][e].x * (float(b & 15u) - z);
                        s8 += xv[w][e].y * (float((b >> 4) & 15u) - z);
                    }
                    sum += scales[row * pc.groups + g[w]] * s8;
                }
                acc[r][j] += sum;
            }
        }
    }
    for (uint r = 0u; r < ROWS; r++)
        for (uint j = 0u; j < MB; j++) {
            float v = subgroupAdd(acc[r][j]);
            if (subgroupElect()) partial[r * MB + j][gl_SubgroupID] = v;
        }
    barrier();
    if (tid < ROWS * MB) {
        const uint r = tid / MB, j = tid % MB, row = row0 + r;
        float v = 0.0;
        for (uint sg = 0u; sg < gl_NumSubgroups; sg++) v += partial[tid][sg];
        if (row < pc.n && j < mcount) {
            if ((pc.flags & FLAG_BIAS) != 0u) v += bias[row];
            y[(pc.m_base + mrow0 + j) * pc.n + row] = v;
        }
    }
}

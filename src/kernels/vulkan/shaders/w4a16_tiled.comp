#version 450
// w4a16_tiled.comp -- vulkan_w4a16:tiled, the prefill path on any Vulkan device: a shared-memory tiled GEMM
// of BM rows of x by BN output channels, stepping K by 32 (one 16-byte code load per weight row). Weights
// are decoded once per tile into exact integer floats (s - zero); each half step of 16 channels lies in one
// group (group sizes are multiples of 16), whose fp32 dot product is scaled once, as the GEMV does.
// Each thread owns a 4 x 4 block of outputs strided by 16 (conflict-free shared reads).

#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;
#define BM 64
#define BN 64
#define BK 32

#include "w4a16_common.glsl"

// +1 column: rows of the tiles start in different banks
shared float xt[BM][BK + 1];
shared float wt[BN][BK + 1];
shared float st[BN][2];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint n0 = pc.n_base + gl_WorkGroupID.x * BN;
    const uint m0 = gl_WorkGroupID.y * BM; // within this dispatch
    const uint tx = tid % 16u, ty = tid / 16u;
    const uint xrow = pc.kq * 4u;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0;

    // loaders: x tile, thread -> (row tid / 4, 8 channels (tid % 4)); weight tile, thread -> (row tid / 4, word tid % 4)
    const uint lr = tid / 4u, lq = tid % 4u;
    for (uint c = 0u; c < pc.kq; c++) {
        {
            const uint mrow = m0 + lr;
            uvec4 xq = mrow < pc.m ? xs16[(pc.m_base + mrow) * xrow + c * 4u + lq] : uvec4(0u);
            vec2 a = act2(xq.x), b = act2(xq.y), d = act2(xq.z), e = act2(xq.w);
            const uint k0 = lq * 8u;
            xt[lr][k0 + 0u] = a.x, xt[lr][k0 + 1u] = a.y, xt[lr][k0 + 2u] = b.x, xt[lr][k0 + 3u] = b.y;
            xt[lr][k0 + 4u] = d.x, xt[lr][k0 + 5u] = d.y, xt[lr][k0 + 6u] = e.x, xt[lr][k0 + 7u] = e.y;
        }
        {
            const uint row = n0 + lr; // < n_pad: the layout pads n to the tile
            const uint g = group_of(c * 32u + lq * 8u);
            const float z = zero_of(row, g);
            const uint word = qweight[row * pc.kq + c][lq];
            for (uint i = 0u; i < 8u; i++) wt[lr][lq * 8u + i] = float((word >> (4u * i)) & 15u) - z;
            if ((lq & 1u) == 0u) st[lr][lq / 2u] = scales[row * pc.groups + g];
        }
        barrier();
        for (uint h = 0u; h < 2u; h++) {
            float p[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) p[i][j] = 0.0;
            for (uint kk = h * 16u; kk < h * 16u + 16u; kk++) {
                float xv[4], wv[4];
                for (uint i = 0u; i < 4u; i++) xv[i] = xt[ty + 16u * i][kk];
                for (uint j = 0u; j < 4u; j++) wv[j] = wt[tx + 16u * j][kk];
                for (uint i = 0u; i < 4u; i++)
                    for (uint j = 0u; j < 4u; j++) p[i][j] += xv[i] * wv[j];
            }
            for (uint i = 0u; i < 4u; i++)
                for (uint j = 0u; j < 4u; j++) acc[i][j] += st[tx + 16u * j][h] * p[i][j];
        }
        barrier();
    }
    for (uint i = 0u; i < 4u; i++) {
        const uint mrow = m0 + ty + 16u * i;
        if (mrow >= pc.m) continue;
        for (uint j = 0u; j < 4u; j++) {
            const uint col = n0 + tx + 16u * j;
            if (col >= pc.n) continue;
            float v = acc[i][j];
            if ((pc.flags & FLAG_BIAS) != 0u) v += bias[col];
            y[(pc.m_base + mrow) * pc.n + col] = v;
        }
    }
}

#version 450
// w4a8_tiled.comp -- vulkan_w4a8:tiled, the prefill path on any Vulkan device: a shared-memory tiled GEMM of
// BM rows of x by BN output channels, stepping K by 32 (one 16-byte code load per weight row), the tiling of
// w4a16_tiled.comp with int32 arithmetic: x tiles hold the host's int8 q, weight tiles the exact values
// s - zero. Each thread owns a 4 x 4 block of outputs strided by 16 and keeps, per output, the int32 sum of the
// group in progress (each 16-channel half step lies in one group: group sizes are multiples of 16); when a
// group ends, it is folded into the fp32 sum in ascending group order (acc + scale * float(isum), no fma),
// and at the end y = acc * sx + bias: the operations and order of ref, so exact data gives the same bits.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;
#define BM 64
#define BN 64
#define BK 32

#include "w4a8_common.glsl"

// +1 column: rows of the tiles start in different banks
shared int xt[BM][BK + 1];
shared int wt[BN][BK + 1];
shared float st[BN][2];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint n0 = pc.n_base + gl_WorkGroupID.x * BN;
    const uint m0 = gl_WorkGroupID.y * BM; // within this dispatch
    const uint tx = tid % 16u, ty = tid / 16u;
    const uint xs = xrow_stride();
    float acc[4][4];
    int isum[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0, isum[i][j] = 0;

    // loaders: x tile, thread -> (row tid / 4, 8 channels (tid % 4)); weight tile, thread -> (row tid / 4, word tid % 4)
    const uint lr = tid / 4u, lq = tid % 4u;
    for (uint c = 0u; c < pc.kq; c++) {
        {
            const uint mrow = m0 + lr;
            const uvec4 v = mrow < pc.m ? xq[(pc.m_base + mrow) * xs + 2u * c + lq / 2u] : uvec4(0u);
            const uvec2 u = (lq & 1u) == 0u ? v.xy : v.zw;
            const uint k0 = lq * 8u;
            for (uint i = 0u; i < 4u; i++) xt[lr][k0 + i] = s8(u.x, i), xt[lr][k0 + 4u + i] = s8(u.y, i);
        }
        {
            const uint row = n0 + lr; // < n_pad: the layout pads n to the tile
            const uint g = group_of(c * 32u + lq * 8u);
            const int z = zero_of(row, g);
            const uint word = qweight[row * pc.kq + c][lq];
            for (uint i = 0u; i < 8u; i++) wt[lr][lq * 8u + i] = int((word >> (4u * i)) & 15u) - z;
            if ((lq & 1u) == 0u) st[lr][lq / 2u] = scales[row * pc.groups + g];
        }
        barrier();
        for (uint h = 0u; h < 2u; h++) {
            for (uint kk = h * 16u; kk < h * 16u + 16u; kk++) {
                int xv[4], wv[4];
                for (uint i = 0u; i < 4u; i++) xv[i] = xt[ty + 16u * i][kk];
                for (uint j = 0u; j < 4u; j++) wv[j] = wt[tx + 16u * j][kk];
                for (uint i = 0u; i < 4u; i++)
                    for (uint j = 0u; j < 4u; j++) isum[i][j] += xv[i] * wv[j];
            }
            // the half's group ends here: the next half is in another group, or this is the last half
            const uint p = c * 32u + h * 16u;
            if (p + 16u == pc.kq * 32u || group_of(p + 16u) != group_of(p)) {
                for (uint i = 0u; i < 4u; i++)
                    for (uint j = 0u; j < 4u; j++) {
                        acc[i][j] = fold(acc[i][j], st[tx + 16u * j][h], isum[i][j]);
                        isum[i][j] = 0;
                    }
            }
        }
        barrier();
    }
    for (uint i = 0u; i < 4u; i++) {
        const uint mrow = m0 + ty + 16u * i;
        if (mrow >= pc.m) continue;
        const float sx = sx_of(pc.m_base + mrow);
        for (uint j = 0u; j < 4u; j++) {
            const uint col = n0 + tx + 16u * j;
            if (col >= pc.n) continue;
            y[(pc.m_base + mrow) * pc.n + col] = finish(acc[i][j], sx, col);
        }
    }
}

#version 450
// w4a8_gemv.comp -- vulkan_w4a8:gemv, the decode path: for up to MB rows of x per workgroup and ROWS output
// channels, isum_g = sum over group g of q * (s - zero) (exact int32), then
// y = (sum_g scale[n][g] * float(isum_g)) * sx + bias[n] with the fold in ascending g, the operations and order
// of ref (mplinear.h "W4A8 semantics (exact)"): on exact integer data the result is bit-identical.
//
// The workgroup walks K in segments of WG 16-byte code loads (WG * 32 positions); each thread takes one chunk
// of 32 positions of each of the ROWS rows, whose two 16-position halves each lie in one group (group sizes
// are multiples of 16), and adds their int32 dot products into the segment's per-group sums in shared memory
// (integer atomics: exact, so the order of the adds does not matter and the result is deterministic). Then
// one thread per output channel folds the segment's complete groups in order; a group that runs on into the
// next segment carries its partial sum over (in that thread's register).
// Integer dot products are plain int32 multiply-adds (shaderIntegerDotProduct is not required).
#extension GL_GOOGLE_include_directive : require

// 64 threads, as w4a16_gemv.comp: 2 NVIDIA warps, one AMD wave64.
layout(local_size_x = 64) in;
#define WG 64
// 8 output channels per workgroup (divides the layout's 64-row padding); vk_layer.c's GEMV_ROWS
#define ROWS 8
// up to 4 rows of x per workgroup (one pass each); more rows run more workgroups (grid z); vk_layer.c's GEMV_MB
#define MB 4
// the most groups one segment of WG * 32 = 2048 positions touches: 2048 / 16 (group size 16, aligned)
#define SLOTS 128

#include "w4a8_common.glsl"

shared int gsum[ROWS][SLOTS];

// The int32 dot product of one 8-position word of codes with its 8 int8 x values (x0: positions 0..3, x1: 4..7).
int word_dot(uint w, uint x0, uint x1, int z) {
    int s = 0;
    for (uint i = 0u; i < 4u; i++) s += (int((w >> (4u * i)) & 15u) - z) * s8(x0, i);
    for (uint i = 0u; i < 4u; i++) s += (int((w >> (4u * i + 16u)) & 15u) - z) * s8(x1, i);
    return s;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = pc.n_base + gl_WorkGroupID.x * ROWS;
    const uint mrow0 = gl_WorkGroupID.z * MB;
    const uint mcount = min(MB, pc.m - mrow0);
    const uint xs = xrow_stride();

    for (uint j = 0u; j < MB; j++) {
        if (j >= mcount) break;
        const uint xrow = pc.m_base + mrow0 + j;
        const uint xb = xrow * xs;
        float acc = 0.0;  // thread tid < ROWS: output channel row0 + tid
        int carry = 0;    // its partial sum of a group that continues into the next segment
        for (uint seg = 0u; seg < pc.kq; seg += WG) {
            const uint p1 = min(seg + WG, pc.kq) * 32u; // the segment's positions: [seg * 32, p1)
            const uint ga0 = group_of(seg * 32u);
            const uint nslots = group_of(p1 - 1u) - ga0 + 1u;
            for (uint i = tid; i < ROWS * nslots; i += WG) gsum[i / nslots][i % nslots] = 0;
            barrier();
            const uint c = seg + tid;
            if (c < pc.kq) {
                const uvec4 xa = xq[xb + 2u * c], xc = xq[xb + 2u * c + 1u];
                const uint ga = group_of(c * 32u), gb = group_of(c * 32u + 16u);
                for (uint r = 0u; r < ROWS; r++) {
                    const uvec4 w = qweight[(row0 + r) * pc.kq + c];
                    const int za = zero_of(row0 + r, ga), zb = gb == ga ? za : zero_of(row0 + r, gb);
                    const int ha = word_dot(w.x, xa.x, xa.y, za) + word_dot(w.y, xa.z, xa.w, za);
                    const int hb = word_dot(w.z, xc.x, xc.y, zb) + word_dot(w.w, xc.z, xc.w, zb);
                    if (ga == gb) {
                        atomicAdd(gsum[r][ga - ga0], ha + hb);
                    } else {
                        atomicAdd(gsum[r][ga - ga0], ha);
                        atomicAdd(gsum[r][gb - ga0], hb);
                    }
                }
            }
            barrier();
            if (tid < ROWS) {
                const uint row = row0 + tid;
                for (uint i = 0u; i < nslots; i++) {
                    const uint g = ga0 + i;
                    const int isum = gsum[tid][i] + (i == 0u ? carry : 0);
                    // complete when it ends inside the segment (the last group ends at k <= k_pad, inside the last)
                    if ((g + 1u) * pc.group_size <= p1) {
                        acc = fold(acc, scales[row * pc.groups + g], isum);
                        carry = 0;
                    } else {
                        carry = isum; // only the segment's last group can run on
                    }
                }
            }
            barrier(); // gsum is cleared for the next segment
        }
        if (tid < ROWS && row0 + tid < pc.n) y[xrow * pc.n + row0 + tid] = finish(acc, sx_of(xrow), row0 + tid);
    }
}

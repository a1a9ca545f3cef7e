#version 450
// w4a16_gemv.comp -- vulkan_w4a16:gemv, the decode path: y[m][n] = bias[n] + sum_g s[n][g] * sum_{k in g} x*w
// for up to MB rows of x per workgroup and ROWS output channels. The workgroup's threads split K in 16-byte
// code loads (32 channels of one row); each thread issues the next chunk's loads of all ROWS rows (and their
// scales) before it does this chunk's math (software pipelined), and reuses each converted x chunk for all
// ROWS rows. Rows of x run one pass each over the workgroup's weights (ROWS accumulators live, not ROWS * MB).
//
// Decode without int-to-float conversions (the slow unit on NVIDIA): nibble i of a word (i < 4; the upper
// four come from word >> 16 the same way) is masked in place and or-ed into the float 2^23, which is then
// exactly 2^23 + q * 16^i; subtracting the constant 2^23 + z * 16^i leaves (q - z) * 16^i, an exact integer.
// x at that position is pre-multiplied by 16^-i (exact: a power of two), so each product is exactly
// (q - z) * x, the same fp32 value the plain form gives (one mask, one add, one FMA per weight). The one
// exception is a bf16 x below 2^-114 in magnitude, whose scaled copy leaves fp32's normal range.
//
// Each 16-channel half of a chunk lies in one group (group sizes are multiples of 16): its fp32 sum of exact
// products is scaled once. Partial sums are reduced with subgroupAdd, then across the subgroups in shared
// memory in a fixed order (deterministic).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

// 64 threads: 2 NVIDIA warps, one AMD wave64; K = 4096 gives each thread 2 chunks, K = 8192 four.
layout(local_size_x = 64) in;
#define WG 64
// 8 rows per workgroup: 8 independent 16-byte loads in flight per thread, and each converted x chunk (the
// x loads and conversions) serves 8 rows. Must divide the layout's 64-row padding; vk_layer.c's GEMV_ROWS.
#define ROWS 8
// up to 4 rows of x per workgroup (one pass each); more rows run more workgroups (grid z); vk_layer.c's GEMV_MB
#define MB 4

#include "w4a16_common.glsl"

shared float partial[ROWS][WG];

const float MAGIC = 8388608.0; // 2^23: the float whose low mantissa bits are the or-ed integer
const uint MAGIC_BITS = 0x4B000000u;

// The fp32 sum over one 8-channel word of (q - z) * x: w the codes, xa/xb the word's 8 x values pre-scaled
// by (1, 1/16, 1/256, 1/4096) per position mod 4, c the four constants 2^23 + z * 16^i.
float word_dot(uint w, vec4 xa, vec4 xb, vec4 c, float s) {
    const uint h = w >> 16;
    s = fma(uintBitsToFloat((w & 0x000Fu) | MAGIC_BITS) - c.x, xa.x, s);
    s = fma(uintBitsToFloat((w & 0x00F0u) | MAGIC_BITS) - c.y, xa.y, s);
    s = fma(uintBitsToFloat((w & 0x0F00u) | MAGIC_BITS) - c.z, xa.z, s);
    s = fma(uintBitsToFloat((w & 0xF000u) | MAGIC_BITS) - c.w, xa.w, s);
    s = fma(uintBitsToFloat((h & 0x000Fu) | MAGIC_BITS) - c.x, xb.x, s);
    s = fma(uintBitsToFloat((h & 0x00F0u) | MAGIC_BITS) - c.y, xb.y, s);
    s = fma(uintBitsToFloat((h & 0x0F00u) | MAGIC_BITS) - c.z, xb.z, s);
    s = fma(uintBitsToFloat((h & 0xF000u) | MAGIC_BITS) - c.w, xb.w, s);
    return s;
}

// The four subtraction constants of zero point z.
vec4 zero_consts(float z) {
    return vec4(MAGIC + z, MAGIC + z * 16.0, MAGIC + z * 256.0, MAGIC + z * 4096.0);
}

// The raw zero point of (row, group) as a float (layers with zero points only).
float zero_at(uint row, uint g) {
    uint byte_at = row * pc.zstride + g;
    return float((zeros[byte_at >> 2] >> (8u * (byte_at & 3u))) & 255u);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = pc.n_base + gl_WorkGroupID.x * ROWS;
    const uint mrow0 = gl_WorkGroupID.z * MB;
    const uint mcount = min(MB, pc.m - mrow0);
    const bool has_zeros = (pc.flags & FLAG_ZEROS) != 0u;
    const bool bf16 = (pc.flags & FLAG_BF16) != 0u;
    const bool one_group = (pc.group_size & 31u) == 0u; // both halves of a chunk in one group
    const vec4 c8 = zero_consts(8.0);
    const vec4 pscale = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);
    const uint xrow = pc.kq * 4u; // uvec4 loads per row of x

    // One pass over the workgroup's weight rows per row of x (the later passes mostly hit the cache): only
    // ROWS accumulators live, which keeps the registers per thread, and so the loads in flight per SM, high.
    for (uint j = 0u; j < MB; j++) {
        if (j >= mcount) break;
        const uint xb0 = (pc.m_base + mrow0 + j) * xrow;
        float acc[ROWS];
        for (int r = 0; r < ROWS; r++) acc[r] = 0.0;
        // software pipelined: the next chunk's ROWS code loads and scales are issued before this chunk's math
        uvec4 q[ROWS];
        float sa[ROWS], sb[ROWS];
        uint c = tid, ga = 0u, gb = 0u;
        if (c < pc.kq) {
            ga = group_of(c * 32u);
            gb = one_group ? ga : group_of(c * 32u + 16u);
            for (uint r = 0u; r < ROWS; r++) {
                q[r] = qweight[(row0 + r) * pc.kq + c];
                sa[r] = scales[(row0 + r) * pc.groups + ga];
                sb[r] = scales[(row0 + r) * pc.groups + gb];
            }
        }
        while (c < pc.kq) {
            // this chunk's 32 x values, each pre-scaled by 16^-(position mod 4)
            vec4 xv[8];
            for (uint w = 0u; w < 4u; w++) {
                const uvec4 u = xs16[xb0 + c * 4u + w];
                vec2 a, b, d, e;
                if (bf16) {
                    a = vec2(uintBitsToFloat(u.x << 16), uintBitsToFloat(u.x & 0xffff0000u));
                    b = vec2(uintBitsToFloat(u.y << 16), uintBitsToFloat(u.y & 0xffff0000u));
                    d = vec2(uintBitsToFloat(u.z << 16), uintBitsToFloat(u.z & 0xffff0000u));
                    e = vec2(uintBitsToFloat(u.w << 16), uintBitsToFloat(u.w & 0xffff0000u));
                } else {
                    a = unpackHalf2x16(u.x), b = unpackHalf2x16(u.y);
                    d = unpackHalf2x16(u.z), e = unpackHalf2x16(u.w);
                }
                xv[2u * w] = vec4(a, b) * pscale;
                xv[2u * w + 1u] = vec4(d, e) * pscale;
            }
            uvec4 qc[ROWS];
            float sac[ROWS], sbc[ROWS];
            for (uint r = 0u; r < ROWS; r++) qc[r] = q[r], sac[r] = sa[r], sbc[r] = sb[r];
            const uint gac = ga, gbc = gb;
            const uint cn = c + WG;
            if (cn < pc.kq) {
                ga = group_of(cn * 32u);
                gb = one_group ? ga : group_of(cn * 32u + 16u);
                for (uint r = 0u; r < ROWS; r++) {
                    q[r] = qweight[(row0 + r) * pc.kq + cn];
                    sa[r] = scales[(row0 + r) * pc.groups + ga];
                    sb[r] = scales[(row0 + r) * pc.groups + gb];
                }
            }
            for (uint r = 0u; r < ROWS; r++) {
                vec4 ca = c8, cb = c8;
                if (has_zeros) {
                    ca = zero_consts(zero_at(row0 + r, gac));
                    cb = one_group ? ca : zero_consts(zero_at(row0 + r, gbc));
                }
                float ha = word_dot(qc[r].x, xv[0], xv[1], ca, 0.0);
                ha = word_dot(qc[r].y, xv[2], xv[3], ca, ha);
                float hb = word_dot(qc[r].z, xv[4], xv[5], cb, 0.0);
                hb = word_dot(qc[r].w, xv[6], xv[7], cb, hb);
                acc[r] = fma(sac[r], ha, acc[r]);
                acc[r] = fma(sbc[r], hb, acc[r]);
            }
            c = cn;
        }
        for (uint r = 0u; r < ROWS; r++) {
            float v = subgroupAdd(acc[r]);
            if (subgroupElect()) partial[r][gl_SubgroupID] = v;
        }
        barrier();
        if (tid < ROWS) {
            const uint row = row0 + tid;
            if (row < pc.n) {
                float v = 0.0;
                for (uint sg = 0u; sg < gl_NumSubgroups; sg++) v += partial[tid][sg];
                if ((pc.flags & FLAG_BIAS) != 0u) v += bias[row];
                y[(pc.m_base + mrow0 + j) * pc.n + row] = v;
            }
        }
        barrier(); // partial is reused by the next row of x
    }
}

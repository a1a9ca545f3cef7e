#version 450
// w4a16_gemv.comp -- vulkan_w4a16:gemv, the decode path: y[m][n] = bias[n] + sum_g s[n][g] * sum_{k in g} x*w
// for up to MB rows of x per workgroup and ROWS output channels per workgroup (v13).
//
// Bytes in flight: each invocation issues a step's ROWS x UNROLL independent 16-byte code loads (UNROLL chunks
// of 32 codes, WG chunks apart, for each of its ROWS rows) and their scales before their math; with PREFETCH
// the next step's loads are issued before this step's math, so two steps are in flight. With the default
// shape (vk_runtime.h: 64 x 8 x 1, no prefetch: the fastest measured on the H200; more loads in flight were
// slower there) that is 8 loads, 128 bytes, outstanding per invocation, and every load instruction of a
// 32-wide subgroup reads 512 contiguous bytes of one row. Loads past the row's
// last chunk are clamped to a valid chunk (no predicated loads in the loop) and their math is skipped.
//
// x comes from the host as f32 already multiplied by 16^-(p mod 4) (vk_layer.c, stage_x: exact, a power of
// two), so the inner loop has no activation conversions: a chunk's 32 x values are 8 vec4 loads (L1 hits,
// shared by the ROWS rows). Decode without int-to-float conversions (the slow unit on NVIDIA): nibble i of a
// 16-bit half (i < 4; the upper half comes from word >> 16 the same way) is masked in place and or-ed into the
// float 2^23 (one LOP3), which is then exactly 2^23 + q * 16^i; subtracting the constant 2^23 + z * 16^i leaves
// (q - z) * 16^i, an exact integer, and the FMA with x * 16^-i adds exactly (q - z) * x to a fp32 sum: one
// mask, one add, one FMA per weight, the same fp32 products the plain form gives. The one exception is an x
// whose scaled copy leaves fp32's normal range (a bf16 x below 2^-114 in magnitude), which a device that
// flushes denormals reads as 0.
//
// Each 16-channel half of a chunk lies in one group (group sizes are multiples of 16): its fp32 sum of exact
// products is scaled once. Partial sums are reduced with subgroupAdd, then (workgroups of several subgroups)
// across the subgroups in shared memory in a fixed order: deterministic.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// [[unroll]]: the loops over the specialization constants must unroll fully in the driver's compiler (their
// bounds are constants only after specialization, so glslc cannot), else q[], sa[] and acc[] would be indexed
// dynamically. On the H200 the specialized pipeline times as the same shader compiled with its shape fixed
// (bench_vulkan_w4a16 --fixed, where glslc unrolls), so NVIDIA's driver does unroll them.
#extension GL_EXT_control_flow_attributes : require

// The shape is five specialization constants (vk_instance.c sets them; mpl_vk_test_gemv_shape re-creates
// the pipeline with others for the benchmark's sweep and the tests). The defaults here are only the SPIR-V's.
#ifdef GEMV_FIXED_WG
// bench/vulkan/CMakeLists.txt compiles this file again with the shape fixed at compile time (glslc -D), so that
// the benchmark compares it with the specialized form (glslc then unrolls the loops itself)
layout(local_size_x = GEMV_FIXED_WG) in;
const uint WG = GEMV_FIXED_WG;
const uint ROWS = GEMV_FIXED_ROWS;
const uint UNROLL = GEMV_FIXED_UNROLL;
const uint PREFETCH = GEMV_FIXED_PREFETCH;
const uint BLOCKS = 1;
#else
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;    // invocations per workgroup
layout(constant_id = 1) const uint ROWS = 8;   // output channels per workgroup; divides the layout's 64-row padding
layout(constant_id = 2) const uint UNROLL = 2; // chunks per row per invocation in flight at once
// 0: a step's loads, then its math; 1: the next step's loads are issued before this step's math; 2: "rolled":
// the rows are a loop (not unrolled: a small loop body) over one chunk, two rows' loads ahead, the row sums in
// shared memory (UNROLL must be 1)
layout(constant_id = 3) const uint PREFETCH = 0;
// row blocks per workgroup (v14): each workgroup runs BLOCKS consecutive blocks of ROWS rows, one after another
// (fewer, longer-lived workgroups); 1: one block
layout(constant_id = 4) const uint BLOCKS = 1;
#endif
// up to 4 rows of x per workgroup (one pass each over the weights); more rows run more workgroups (grid z);
// vk_layer.c's GEMV_MB
#define MB 4

#include "vk_image.glsl"

// x: k_pad f32 values per row, pre-scaled by 16^-(p mod 4), zero at p >= k (vk_layer.c)
layout(std430, binding = 3) restrict readonly buffer X { vec4 xs[]; };

const uint FLAG_ZEROS = 2u; // per-group zero points (else zero = 8)
const uint FLAG_BIAS = 4u;

shared float partial[ROWS * WG];
shared float rolled_acc[PREFETCH == 2u ? ROWS * WG : 1u]; // PREFETCH 2: invocation tid's row sums at r * WG + tid

const float MAGIC = 8388608.0; // 2^23: the float whose low mantissa bits are the or-ed integer
const uint MAGIC_BITS = 0x4B000000u;

// The fp32 sum over one 8-channel word of (q - z) * x: w the codes, xa/xb the word's 8 pre-scaled x values,
// c the four constants 2^23 + z * 16^i.
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

// The group of packed position p (positions past k, whose x is 0, clamp into the last group). vk_layer.c puts
// log2 of a power-of-two group size in flags bits 8..15 (0: divide): a shift, not an integer division.
uint group_of(uint p) {
    const uint gshift = (pc.flags >> 8) & 255u;
    if (pc.groups == 1u) return 0u;
    return min(gshift != 0u ? p >> gshift : p / pc.group_size, pc.groups - 1u);
}

// The loads of the step at chunk C0 of this invocation into Q (codes) and S (scales): UNROLL chunks WG apart for
// each of the ROWS rows, clamped to the row's last chunk (a valid address; the math skips those chunks).
#define LOAD_STEP(C0, Q, S)                                                                                     \
    [[unroll]] for (uint u = 0u; u < UNROLL; u++) {                                                             \
        const uint cl = min((C0) + u * WG, pc.kq - 1u);                                                         \
        const uint g = group_of(cl * 32u);                                                                      \
        [[unroll]] for (uint r = 0u; r < ROWS; r++) {                                                           \
            Q[r * UNROLL + u] = qweight[(row0 + r) * pc.kq + cl];                                               \
            S[r * UNROLL + u] = scales[(row0 + r) * pc.groups + g];                                             \
        }                                                                                                       \
    }

// The two 16-channel halves' fp32 sums of exact products (q - z) * x of chunk w of `row` at chunk index c.
vec2 chunk_halves(uvec4 w, vec4 xv[8], uint row, uint c, bool has_zeros, bool one_group, vec4 c8) {
    vec4 ca = c8, cb = c8;
    if (has_zeros) {
        ca = zero_consts(zero_at(row, group_of(c * 32u)));
        cb = one_group ? ca : zero_consts(zero_at(row, group_of(c * 32u + 16u)));
    }
    float ha = word_dot(w.x, xv[0], xv[1], ca, 0.0);
    ha = word_dot(w.y, xv[2], xv[3], ca, ha);
    float hb = word_dot(w.z, xv[4], xv[5], cb, 0.0);
    hb = word_dot(w.w, xv[6], xv[7], cb, hb);
    return vec2(ha, hb);
}

// One block of ROWS output channels from row0 (workgroup-uniform).
void run_block(const uint row0) {
    const uint tid = gl_LocalInvocationID.x;
    const uint mrow0 = gl_WorkGroupID.z * MB;
    const uint mcount = min(MB, pc.m - mrow0);
    const bool has_zeros = (pc.flags & FLAG_ZEROS) != 0u;
    // both 16-channel halves of every chunk in one group: one scale per chunk
    const bool one_group = (pc.group_size & 31u) == 0u || pc.groups == 1u;
    const vec4 c8 = zero_consts(8.0);
    const uint xrow = pc.kq * 8u; // vec4 per row of x
    const uint step = WG * UNROLL;

    // One pass over the workgroup's weight rows per row of x (the later passes mostly hit the cache): only
    // ROWS accumulators live, which keeps the registers per invocation, and so the loads in flight, high.
    [[dont_unroll]] for (uint j = 0u; j < MB; j++) {
        if (j >= mcount) break;
        const uint xb0 = (pc.m_base + mrow0 + j) * xrow;
        float acc[ROWS];
        [[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r] = 0.0;
        if (PREFETCH == 2u) {
            [[unroll]] for (uint r = 0u; r < ROWS; r++) rolled_acc[r * WG + tid] = 0.0;
            [[dont_unroll]] for (uint c = tid; c < pc.kq; c += WG) {
                vec4 xv[8];
                [[unroll]] for (uint i = 0u; i < 8u; i++) xv[i] = xs[xb0 + c * 8u + i];
                const uint g = group_of(c * 32u);
                uvec4 qa = qweight[row0 * pc.kq + c], qb = qa;
                float sa = scales[row0 * pc.groups + g], sb = sa;
                if (ROWS > 1u) {
                    qb = qweight[(row0 + 1u) * pc.kq + c];
                    sb = scales[(row0 + 1u) * pc.groups + g];
                }
                [[dont_unroll]] for (uint r = 0u; r < ROWS; r++) {
                    const uvec4 w = qa;
                    const float s = sa;
                    qa = qb, sa = sb;
                    if (r + 2u < ROWS) { // two rows ahead
                        qb = qweight[(row0 + r + 2u) * pc.kq + c];
                        sb = scales[(row0 + r + 2u) * pc.groups + g];
                    }
                    const vec2 h = chunk_halves(w, xv, row0 + r, c, has_zeros, one_group, c8);
                    float a = rolled_acc[r * WG + tid];
                    if (one_group) {
                        a = fma(s, h.x + h.y, a);
                    } else {
                        a = fma(s, h.x, a);
                        a = fma(scales[(row0 + r) * pc.groups + group_of(c * 32u + 16u)], h.y, a);
                    }
                    rolled_acc[r * WG + tid] = a;
                }
            }
            [[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r] = rolled_acc[r * WG + tid];
        }
        uvec4 qn[ROWS * UNROLL];
        float sn[ROWS * UNROLL];
        if (PREFETCH == 1u && tid < pc.kq) LOAD_STEP(tid, qn, sn);
        [[dont_unroll]] for (uint c0 = PREFETCH == 2u ? pc.kq : tid; c0 < pc.kq; c0 += step) {
            // every load of this step first: ROWS x UNROLL codes and their scales (PREFETCH: they were issued
            // during the last step, and the next step's are issued now, before this step's math)
            uvec4 q[ROWS * UNROLL];
            float sa[ROWS * UNROLL];
            if (PREFETCH == 1u) {
                [[unroll]] for (uint i = 0u; i < ROWS * UNROLL; i++) q[i] = qn[i], sa[i] = sn[i];
                if (c0 + step < pc.kq) LOAD_STEP(c0 + step, qn, sn);
            } else {
                LOAD_STEP(c0, q, sa);
            }
            [[unroll]] for (uint u = 0u; u < UNROLL; u++) {
                const uint c = c0 + u * WG;
                if (c < pc.kq) {
                    vec4 xv[8];
                    [[unroll]] for (uint i = 0u; i < 8u; i++) xv[i] = xs[xb0 + c * 8u + i];
                    [[unroll]] for (uint r = 0u; r < ROWS; r++) {
                        const uvec4 w = q[r * UNROLL + u];
                        vec4 ca = c8, cb = c8;
                        if (has_zeros) {
                            const uint ga = group_of(c * 32u);
                            ca = zero_consts(zero_at(row0 + r, ga));
                            cb = one_group ? ca : zero_consts(zero_at(row0 + r, group_of(c * 32u + 16u)));
                        }
                        float ha = word_dot(w.x, xv[0], xv[1], ca, 0.0);
                        ha = word_dot(w.y, xv[2], xv[3], ca, ha);
                        float hb = word_dot(w.z, xv[4], xv[5], cb, 0.0);
                        hb = word_dot(w.w, xv[6], xv[7], cb, hb);
                        const float s = sa[r * UNROLL + u];
                        if (one_group) {
                            acc[r] = fma(s, ha + hb, acc[r]);
                        } else {
                            acc[r] = fma(s, ha, acc[r]);
                            acc[r] = fma(scales[(row0 + r) * pc.groups + group_of(c * 32u + 16u)], hb, acc[r]);
                        }
                    }
                }
            }
        }
        const uint yrow = (pc.m_base + mrow0 + j) * pc.n;
        if (gl_NumSubgroups == 1u) {
            [[unroll]] for (uint r = 0u; r < ROWS; r++) {
                const float v = subgroupAdd(acc[r]);
                const uint row = row0 + r;
                if (subgroupElect() && row < pc.n) y[yrow + row] = (pc.flags & FLAG_BIAS) != 0u ? v + bias[row] : v;
            }
        } else {
            [[unroll]] for (uint r = 0u; r < ROWS; r++) {
                const float v = subgroupAdd(acc[r]);
                if (subgroupElect()) partial[r * WG + gl_SubgroupID] = v;
            }
            barrier();
            if (tid < ROWS) {
                const uint row = row0 + tid;
                if (row < pc.n) {
                    float v = 0.0;
                    for (uint sg = 0u; sg < gl_NumSubgroups; sg++) v += partial[tid * WG + sg];
                    if ((pc.flags & FLAG_BIAS) != 0u) v += bias[row];
                    y[yrow + row] = v;
                }
            }
            barrier(); // partial is reused by the next row of x
        }
    }
}

void main() {
    // BLOCKS consecutive blocks of ROWS rows per workgroup (vk_layer.c dispatches n_pad / ROWS / BLOCKS
    // workgroups, rounded up; blocks past n_pad = n rounded up to 64 are skipped: uniform control flow)
    const uint n_pad = (pc.n + 63u) & ~63u;
    [[dont_unroll]] for (uint b = 0u; b < BLOCKS; b++) {
        const uint row0 = pc.n_base + (gl_WorkGroupID.x * BLOCKS + b) * ROWS;
        if (row0 >= n_pad) break;
        run_block(row0);
    }
}

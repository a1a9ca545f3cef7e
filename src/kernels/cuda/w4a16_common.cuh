/*
 * w4a16_common.cuh -- device helpers shared by the CUDA W4A16 kernels: activation-type traits
 * (dequantization into MMA fragments, the MMA itself, output conversion), loads, cp.async,
 * group/scale/zero access and the cluster (distributed shared memory) split-K reduction.
 *
 * Exactness: a weight's integer value (code - zero, in [-15, 15]) is exact in f16 and bf16,
 * and so is its product with an f16/bf16 activation in the MMA's fp32 accumulator. Each
 * k16 MMA step therefore sums exact products in fp32; the group scale is applied in fp32
 * to those partial sums ("fold"), never to the weights. See docs/layouts/cuda_w4a16.md.
 * The skinny path uses the offset form (dequant_off: the MMA sums exact (OFF + code) * x, the fold
 * subtracts (OFF + zero) * sum(x)); skinny-rounded (bf16) the subnormal form (ActBF16::nib_sub), which rounds
 * w * s once to bf16 on bf16 scales and is exact otherwise; the dq path (w4a16_dq.cu) and the wg path outside its exact form do
 * round weights * scale to 16 bits.
 * Layout constants and activation / scale-format ids: cuda_w4a16_format.h (through w4a16_launch.h).
 */
#ifndef MPL_CUDA_W4A16_COMMON_CUH
#define MPL_CUDA_W4A16_COMMON_CUH

#include <atomic>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#endif

#include "../../core/internal.h" /* MPL_CUDA_MAX_DEVICES: the per-device setup below */
#include "w4a16_launch.h"

namespace cuda_w4a16 {

/* (a & b) | c in one instruction. */
__device__ __forceinline__ uint32_t and_or(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

/*
 * f16 activations. Codes sit in the low mantissa bits of 1024.0 (0x6400): nibbles 0 and 4 of a
 * word give (1024 + q) directly, nibbles 1 and 5 give (1024 + 16 q), scaled by 1/16 in the same
 * FMA that subtracts (64 + zero). Rows g use the first form, rows g+8 the second, so one
 * FMA per pair of weights does the whole dequantization, exactly.
 */
struct ActF16 {
    static constexpr int id = MPL_CUDA_W4A16_ACT_F16;
    /* Per-row additive constants: row g (first form) and row g+8 (second form). */
    __device__ static __forceinline__ uint32_t add_row_g(uint32_t z) { return (0xE400u + z) * 0x10001u; }
    __device__ static __forceinline__ uint32_t add_row_g8(uint32_t z) { return (0xD400u + 16u * z) * 0x10001u; }
    /* M: the code bits of a nibble (15; 3 for a halves layer's 2-bit code, after a shift of 0 or 2) */
    template <uint32_t M = 15u>
    __device__ static __forceinline__ void dequant(uint32_t w, uint32_t add_g, uint32_t add_g8, uint32_t a[4]) {
        const uint32_t ONE = 0x3C003C00u, SIXTEENTH = 0x2C002C00u, MAGIC = 0x64006400u, L = M * 0x10001u;
        uint32_t w8 = w >> 8;
        uint32_t q0 = and_or(w, L, MAGIC), q1 = and_or(w, L << 4, MAGIC);
        uint32_t q2 = and_or(w8, L, MAGIC), q3 = and_or(w8, L << 4, MAGIC);
        asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(a[0]) : "r"(q0), "r"(ONE), "r"(add_g));
        asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(a[1]) : "r"(q1), "r"(SIXTEENTH), "r"(add_g8));
        asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(a[2]) : "r"(q2), "r"(ONE), "r"(add_g));
        asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(a[3]) : "r"(q3), "r"(SIXTEENTH), "r"(add_g8));
    }
    /*
     * Offset form (skinny path): no FMA at all. Rows g get (1024 + q), rows g+8 (1024 + 16 q); the
     * MMA sums those exact values times x, and the fold subtracts OFF * sum(x) (sum(x) from one
     * extra MMA with an all-ones A fragment, shared by every row tile) and scales rows g+8 by 1/16:
     * 1 shift + 4 lop3 per 8 weights instead of 1 + 4 + 4 FMA.
     */
    static constexpr uint32_t ONES = 0x3C003C00u;
    static constexpr float OFF = 1024.0f; /* the offset of every register (0x6400) */
    static constexpr int G8_MUL = 16;     /* rows g+8's multiplier of the code */
    /* M: a nibble's code bits (15; 7 for thirds, whose bit 3 belongs to another chunk) */
    template <uint32_t M = 15u>
    __device__ static __forceinline__ void dequant_off(uint32_t w, uint32_t a[4]) {
        const uint32_t MAGIC = 0x64006400u;
        uint32_t w8 = w >> 8;
        a[0] = and_or(w, M * 0x00010001u, MAGIC);
        a[1] = and_or(w, M * 0x00100010u, MAGIC);
        a[2] = and_or(w8, M * 0x00010001u, MAGIC);
        a[3] = and_or(w8, M * 0x00100010u, MAGIC);
    }
    __device__ static __forceinline__ void mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    __device__ static __forceinline__ float to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
    __device__ static __forceinline__ uint16_t from_float(float f) { return __half_as_ushort(__float2half_rn(f)); }
};

/*
 * bf16 activations. bf16 has 7 mantissa bits, so only the low nibble of each 16-bit half fits
 * under 128.0 (0x4300): each pair is shifted down, masked and ORed in, then one FMA
 * (x 1.0, + -(128 + zero)) leaves the exact integer value.
 */
struct ActBF16 {
    static constexpr int id = MPL_CUDA_W4A16_ACT_BF16;
    __device__ static __forceinline__ uint32_t add_row_g(uint32_t z) { return (0xC300u + z) * 0x10001u; }
    __device__ static __forceinline__ uint32_t add_row_g8(uint32_t z) { return (0xC300u + z) * 0x10001u; }
    template <uint32_t M = 15u>
    __device__ static __forceinline__ void dequant(uint32_t w, uint32_t add_g, uint32_t add_g8, uint32_t a[4]) {
        const uint32_t ONE = 0x3F803F80u, MAGIC = 0x43004300u, MASK = M * 0x10001u;
        uint32_t q0 = and_or(w, MASK, MAGIC), q1 = and_or(w >> 4, MASK, MAGIC);
        uint32_t q2 = and_or(w >> 8, MASK, MAGIC), q3 = and_or(w >> 12, MASK, MAGIC);
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(a[0]) : "r"(q0), "r"(ONE), "r"(add_g));
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(a[1]) : "r"(q1), "r"(ONE), "r"(add_g8));
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(a[2]) : "r"(q2), "r"(ONE), "r"(add_g));
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(a[3]) : "r"(q3), "r"(ONE), "r"(add_g8));
    }
    /* Offset form (skinny path): every pair (128 + q), 3 shifts + 4 lop3 per 8 weights, no FMA;
     * the fold subtracts (128 + zero) * sum(x) (see ActF16). */
    static constexpr uint32_t ONES = 0x3F803F80u;
    static constexpr float OFF = 128.0f; /* 0x4300 */
    static constexpr int G8_MUL = 1;
    __device__ static __forceinline__ void dequant_off(uint32_t w, uint32_t a[4]) {
        const uint32_t MAGIC = 0x43004300u, MASK = 0x000f000fu;
        a[0] = and_or(w, MASK, MAGIC);
        a[1] = and_or(w >> 4, MASK, MAGIC);
        a[2] = and_or(w >> 8, MASK, MAGIC);
        a[3] = and_or(w >> 12, MASK, MAGIC);
    }
    /*
     * Subnormal form (skinny path, bf16): bf16 values with exponent field 0 or 1 are exactly (bits) * 2^-133,
     * so a nibble anywhere in the low byte of a half is an exact small number without any OR'd constant:
     * w & 0x000f000f = (q0, q4) 2^-133 and w & 0x00f000f0 = (16 q1, 16 q5) 2^-133, and w >> 8 gives pairs 2
     * and 3: 1 shift + 4 lop3 per 8 weights (the offset form needs 3 shifts: a nibble must sit in bits 0-3
     * under a normal constant). One fma.bf16x2 per register then brings the value into the normal range:
     * q 2^-133 * MUL_Q + ADD (registers 0, 2: rows g) and 16 q 2^-133 * MUL_16Q + ADD (1, 3: rows g+8).
     */
    static constexpr uint32_t MUL_Q = 0x7F007F00u;   /* 2^127: (q - 8) 2^-6 with ADD = -8 2^-6 */
    static constexpr uint32_t MUL_16Q = 0x7D007D00u; /* 2^123 */
    static constexpr float SUB_SCALE = 64.0f;        /* the exact sums come out times 2^-6 */
    /* M: a nibble's code bits (15; 7 for thirds) */
    template <uint32_t M = 15u>
    __device__ static __forceinline__ void nib_sub(uint32_t w, uint32_t q[4]) {
        const uint32_t w8 = w >> 8;
        q[0] = w & (M * 0x00010001u);
        q[1] = w & (M * 0x00100010u);
        q[2] = w8 & (M * 0x00010001u);
        q[3] = w8 & (M * 0x00100010u);
    }
    __device__ static __forceinline__ uint32_t fma2(uint32_t a, uint32_t b, uint32_t c) {
        uint32_t d;
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
        return d;
    }
    /* a * b rounded once (fma with -0: mul.bf16x2 needs sm_90, fma.bf16x2 runs on sm_80) */
    __device__ static __forceinline__ uint32_t mul2(uint32_t a, uint32_t b) { return fma2(a, b, 0x80008000u); }
    /* nib_sub's pairs brought to (c - z) 2^-6 by one fma each: add_g / add_g8 = -z 2^-6 of rows g / g + 8 (w8_add) */
    template <uint32_t M = 15u>
    __device__ static __forceinline__ void dequant_sub(uint32_t w, uint32_t add_g, uint32_t add_g8, uint32_t q[4]) {
        nib_sub<M>(w, q);
        q[0] = fma2(q[0], MUL_Q, add_g);
        q[1] = fma2(q[1], MUL_16Q, add_g8);
        q[2] = fma2(q[2], MUL_Q, add_g);
        q[3] = fma2(q[3], MUL_16Q, add_g8);
    }
    __device__ static __forceinline__ void mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    __device__ static __forceinline__ float to_float(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
    __device__ static __forceinline__ uint16_t from_float(float f) {
        return __bfloat16_as_ushort(__float2bfloat16_rn(f));
    }
};

/*
 * Halves (2-bit codes, two per nibble: docs/layouts/cuda_w4a16.md "2-bit: halves"), the offset form of the skinny
 * path with f16 activations (bf16 halves run w4a16_gemv, whose codes enter as subnormals): half H's registers of word
 * w without moving the codes more than needed. In each 16-bit half the codes sit at bits 0-1, 4-5 (nibbles 0, 1: half
 * 0) and 2-3, 6-7 (half 1), and at 8-15 for nibbles 2, 3 (w >> 8); OR'd into the mantissa of 1024 (bits 0-9), a code
 * at bit b reads as 1024 + 2^b c, exactly. Registers 0 and 2 hold rows g, 1 and 3 rows g + 8, each row class with one
 * multiplier, which the fold divides out (halves_mul): half 0 (1, 16), half 1 (4, 64), 1 shift + 8 lop3 per word (16
 * weights).
 */
template <class A, int H>
__device__ __forceinline__ void halves_off(uint32_t w, uint32_t a[4]) {
    static_assert(A::id == MPL_CUDA_W4A16_ACT_F16, "halves offset form: f16");
    constexpr uint32_t MAGIC = 0x64006400u, LO = H ? 0x000c000cu : 0x00030003u;
    const uint32_t w8 = w >> 8;
    a[0] = and_or(w, LO, MAGIC);
    a[2] = and_or(w8, LO, MAGIC);
    a[1] = and_or(w, LO << 4, MAGIC); /* rows g + 8 in place: bits 4-5 (half 0) or 6-7 (half 1) */
    a[3] = and_or(w8, LO << 4, MAGIC);
}
/* The multipliers of halves_off's row classes: G (rows g) or G8 (rows g + 8) of half H. */
template <class A, int H, bool G8>
__device__ __forceinline__ constexpr int halves_mul() {
    static_assert(A::id == MPL_CUDA_W4A16_ACT_F16, "halves offset form: f16");
    return (H ? 4 : 1) * (G8 ? 16 : 1);
}

/* One fma of 16-bit pairs in the activation type act. */
__device__ __forceinline__ uint32_t fma16x2(int act, uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    if (act == MPL_CUDA_W4A16_ACT_F16)
        asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    else
        asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
/*
 * 8-bit weights (two planes: the wg path's PL = 2, the skinny path's FORM_W8): the low-plane word wl and the high-plane word wh of the same lane and k16 step hold the
 * two nibbles of the same eight weights (nibble i of each: row g + 8 (i & 1), the column of the table in
 * docs/layouts/cuda_w4a16.md). Two selects rebuild the byte codes: e = bytes (c0, c2, c4, c6), o = (c1, c3, c5, c7);
 * one prmt per register then places the pair (c_p, c_p+4) of register p in the low bytes of two 16-bit halves:
 *   f16:  high byte 0x64: 1024 + c (exact, 10 mantissa bits), and one fma (x 1, + -(1024 + z)) gives c - z;
 *   bf16: high byte 0: the bf16 pattern c is c 2^-133 exactly (exponent field 0 or 1, as ActBF16::nib_sub), and one
 *         fma (x 2^127, + -z 2^-6) gives (c - z) 2^-6, exact (|c - z| <= 255: 8 significant bits); the scale the
 *         weights are multiplied by (W8_MUL) or the fold's is then 2^6 s, exact (a power of two).
 * So every weight is the exact integer c - z (times 2^-6 for bf16) before its one multiplication by the scale.
 * add_g / add_g8: the rows' additive constants (w8_add). Cost per 8 weights: 2 shifts, 2 selects, 4 prmt, 4 fma.
 */
template <class A>
__device__ __forceinline__ uint32_t w8_add(uint32_t z) {
    if constexpr (A::id == MPL_CUDA_W4A16_ACT_F16) return (0xE400u + z) * 0x10001u; /* -(1024 + z): z <= 255 */
    else return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(-(float)z * 0.015625f)) * 0x10001u; /* -z 2^-6, exact */
}
/* The two rows' additive constants from the low- and high-plane zero points (z = zl + 16 zh; rows g, g + 8 in the
 * low and high byte of each 16-bit word). */
template <class A>
__device__ __forceinline__ void w8_consts(uint32_t zl, uint32_t zh, uint32_t &add_g, uint32_t &add_g8) {
    add_g = w8_add<A>((zl & 0xffu) + 16u * (zh & 0xffu));
    add_g8 = w8_add<A>((zl >> 8) + 16u * (zh >> 8));
}
template <class A>
__device__ __forceinline__ void dequant8(uint32_t wl, uint32_t wh, uint32_t add_g, uint32_t add_g8, uint32_t q[4]) {
    const uint32_t M = 0x0f0f0f0fu;
    const uint32_t e = (wl & M) | ((wh << 4) & ~M), o = ((wl >> 4) & M) | (wh & ~M);
    constexpr uint32_t HI = A::id == MPL_CUDA_W4A16_ACT_F16 ? 0x64646464u : 0u;
    constexpr uint32_t MUL = A::id == MPL_CUDA_W4A16_ACT_F16 ? 0x3C003C00u : 0x7F007F00u; /* 1, or 2^127 */
    q[0] = fma16x2(A::id, __byte_perm(e, HI, 0x4240), MUL, add_g);  /* (c0, c4): row g */
    q[1] = fma16x2(A::id, __byte_perm(o, HI, 0x4240), MUL, add_g8); /* (c1, c5): row g + 8 */
    q[2] = fma16x2(A::id, __byte_perm(e, HI, 0x4341), MUL, add_g);  /* (c2, c6) */
    q[3] = fma16x2(A::id, __byte_perm(o, HI, 0x4341), MUL, add_g8); /* (c3, c7) */
}

/* Zero points of rows g (low byte) and g+8 (high byte) -> the two additive constants (without zero points: 8, the
 * uint4b8 bias, or Z0 = 2 for a halves layer's uint2b2). */
template <class A, bool ZP, uint32_t Z0 = 8u>
__device__ __forceinline__ void zero_consts(uint32_t z16, uint32_t &add_g, uint32_t &add_g8) {
    uint32_t zg = ZP ? (z16 & 0xffu) : Z0, zg8 = ZP ? (z16 >> 8) : Z0;
    add_g = A::add_row_g(zg);
    add_g8 = A::add_row_g8(zg8);
}

/* The exact float scale from the 16-bit plane(s) (mpl_cuda_w4a16_scale_fmt). Branch-free: both
 * conversions and a select, so the callers' unrolled folds are not duplicated per format (the loop
 * body must stay small for the instruction cache). */
__device__ __forceinline__ float scale_value(uint32_t hi, uint32_t lo, int fmt) {
    float h = __half2float(__ushort_as_half((unsigned short)hi));
    float b = __uint_as_float((hi << 16) | (fmt == MPL_CUDA_W4A16_SCALE_F32 ? lo : 0u));
    return fmt == MPL_CUDA_W4A16_SCALE_F16 ? h : b;
}

/* Group of k16 step s (exact for s < 2^20; see docs/layouts/cuda_w4a16.md). */
__device__ __forceinline__ int group_of_step(int s, float inv_gs16) {
    return (int)(((float)s + 0.5f) * inv_gs16);
}

/* Streaming 16-byte load: weights are read once, so keep them out of L1. */
__device__ __forceinline__ uint4 ldg_stream(const uint4 *p) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
}

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
/* 16-byte cp.async through L2 only; src_bytes 0 writes zeros (masked rows / k tail). */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

/* Cluster primitives (sm_90). The host launches clusters only on sm_90, so the sm_80 build
 * never reaches these with more than one block. */
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cooperative_groups::this_cluster().sync();
#endif
}
__device__ __forceinline__ const float *cluster_peer(float *p, int rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return cooperative_groups::this_cluster().map_shared_rank(p, (unsigned)rank);
#else
    (void)rank;
    return p;
#endif
}

/* ---- mbarriers and 1D bulk copies (sm_90: the wg path, and bench/cuda/bw_probe.cu). Empty below sm_90:
 * the hosts launch those kernels on compute capability 9.0 only. ---- */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CUDA_W4A16_SM90_ASM(...) asm volatile(__VA_ARGS__)
#else
#define CUDA_W4A16_SM90_ASM(...) ((void)0)
#endif
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    CUDA_W4A16_SM90_ASM("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    CUDA_W4A16_SM90_ASM("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    CUDA_W4A16_SM90_ASM("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* Wait for the phase of parity `parity` to complete (CTA scope: bulk copies, this block's arrivals). */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    CUDA_W4A16_SM90_ASM("{\n.reg .pred p;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                        "@!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
/* bytes (a multiple of 16, both addresses 16-byte aligned) from global to this block's shared memory */
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
    CUDA_W4A16_SM90_ASM("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                        "l"(src), "r"(bytes), "r"(bar)
                        : "memory");
}

/* Bias of output n as float (0 without bias). */
template <class A>
__device__ __forceinline__ float bias_value(const void *bias, int n) {
    return bias ? A::to_float(((const uint16_t *)bias)[n]) : 0.0f;
}

/* Raster of the tiled paths (tc, wg): tile t of tiles_m x tiles_n output tiles, in bands of RASTER_BAND
 * row tiles of M (m fastest inside a band), so that concurrently running blocks share weights and x
 * through L2. Returns the tile's (row tile of M, tile of N). RASTER_BAND = 8: eight consecutive blocks share
 * one weight tile, and a band's x (8 token tiles) stays in L2 while its weights stream (v1 design value, not swept). */
constexpr int RASTER_BAND = 8;
__device__ __forceinline__ int2 raster_tile(int t, int tiles_m, int tiles_n) {
    const int band = t / (RASTER_BAND * tiles_n);
    const int first_m = band * RASTER_BAND;
    const int band_m = min(tiles_m - first_m, RASTER_BAND);
    const int in_band = t - band * RASTER_BAND * tiles_n;
    return make_int2(first_m + in_band % band_m, in_band / band_m);
}

/*
 * Block epilogue of the tiled paths (tc, wg): sc holds the block's fp32 tile, token-major
 * (sc[ml * LD + nl], BM tokens from m0, BN rows of N from n0), written by the whole block and
 * followed by a __syncthreads. With split-K (S > 1, a cluster along K) each block sums every
 * peer's tile in rank order for its share of the tokens. Then the bias, one rounding, 16-byte stores.
 */
template <class A, int BN, int LD, int NTHREADS>
__device__ __forceinline__ void tile_store(const mpl_cuda_w4a16_args &a, float *sc, int BM, int m0, int n0, int S, int split,
                                           int tid) {
    const int mvalid = min(BM, a.m - m0);
    int r0 = 0, r1 = mvalid;
    if (S > 1) {
        cluster_sync();
        r0 = mvalid * split / S;
        r1 = mvalid * (split + 1) / S;
    }
    constexpr int P = BN / 8;
    for (int v = tid; v < (r1 - r0) * P; v += NTHREADS) {
        int ml = r0 + v / P, nl = (v % P) * 8, n = n0 + nl;
        if (n >= a.n) continue; /* n and N are multiples of 8: the 8 outputs are all in or all out */
        float s[8];
        if (S > 1) {
#pragma unroll
            for (int e = 0; e < 8; e++) s[e] = 0.0f;
            for (int q = 0; q < S; q++) {
                const float *pc = cluster_peer(sc, q) + ml * LD + nl;
                float4 u0 = *reinterpret_cast<const float4 *>(pc), u1 = *reinterpret_cast<const float4 *>(pc + 4);
                s[0] += u0.x, s[1] += u0.y, s[2] += u0.z, s[3] += u0.w;
                s[4] += u1.x, s[5] += u1.y, s[6] += u1.z, s[7] += u1.w;
            }
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++) s[e] = sc[ml * LD + nl + e];
        }
        uint32_t o[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            uint32_t lo16 = A::from_float(s[2 * e] + bias_value<A>(a.bias, n + 2 * e));
            uint32_t hi16 = A::from_float(s[2 * e + 1] + bias_value<A>(a.bias, n + 2 * e + 1));
            o[e] = lo16 | (hi16 << 16);
        }
        *reinterpret_cast<uint4 *>((uint16_t *)a.y + (size_t)(m0 + ml) * a.n + n) = make_uint4(o[0], o[1], o[2], o[3]);
    }
    if (S > 1) cluster_sync(); /* peers may still be reading this block's tile */
}

/*
 * Per kernel instantiation and device, set up on its first launch there: the opt-in to its dynamic shared
 * memory (needed above 48 KB, once per device) and the blocks per SM it keeps resident (the tiled paths'
 * split-K rule). `setup` is the calling launcher's static record for this kernel; device is the current
 * one (mpl_cuda_w4a16_args.device: the descriptor refuses ordinals past MPL_CUDA_MAX_DEVICES at pack).
 */
struct KernelSetup {
    std::atomic<int> occupancy[MPL_CUDA_MAX_DEVICES]; /* 0 until set up on that device */
};
template <class Kern>
static cudaError_t setup_kernel(Kern kern, int device, int threads, int smem, KernelSetup &setup, int *occupancy) {
    if (device < 0 || device >= MPL_CUDA_MAX_DEVICES) return cudaErrorInvalidDevice;
    int occ = setup.occupancy[device].load(std::memory_order_relaxed);
    if (occ == 0) {
        cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return e;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, threads, smem);
        if (e != cudaSuccess) return e;
        if (occ < 1) return cudaErrorInvalidConfiguration;
        setup.occupancy[device].store(occ, std::memory_order_relaxed);
    }
    if (occupancy) *occupancy = occ;
    return cudaSuccess;
}

/*
 * The launch of a grid of (gx, ksplit) blocks; with ksplit > 1 the ksplit blocks of one x form a cluster along y
 * (attr, which cfg points to, holds its dimension).
 */
static inline void ksplit_config(cudaLaunchConfig_t &cfg, cudaLaunchAttribute &attr, unsigned gx, int ksplit, int threads,
                                 int smem, cudaStream_t stream) {
    cfg = cudaLaunchConfig_t{};
    cfg.gridDim = dim3(gx, (unsigned)ksplit, 1);
    cfg.blockDim = dim3((unsigned)threads, 1, 1);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = stream;
    attr = cudaLaunchAttribute{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 1;
    attr.val.clusterDim.y = (unsigned)ksplit;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = ksplit > 1 ? 1 : 0;
}

/*
 * How many clusters of S blocks along y (S 2..8; threads, smem per block) can be resident at once on device
 * (cudaOccupancyMaxActiveClusters), asked once per kernel, device and S and kept in mac (0: not asked yet).
 */
template <class Kern>
static cudaError_t cluster_fit(Kern kern, int device, int threads, int smem, int S,
                               std::atomic<int> (&mac)[MPL_CUDA_MAX_DEVICES][9], int *fit) {
    if (device < 0 || device >= MPL_CUDA_MAX_DEVICES || S < 2 || S > 8) return cudaErrorInvalidValue;
    int n = mac[device][S].load(std::memory_order_relaxed);
    if (n == 0) {
        cudaLaunchConfig_t cfg;
        cudaLaunchAttribute attr;
        ksplit_config(cfg, attr, 1, S, threads, smem, nullptr);
        cudaError_t e = cudaOccupancyMaxActiveClusters(&n, kern, &cfg);
        if (e != cudaSuccess) return e;
        if (n < 1) n = -1; /* none fits: kept as -1 */
        mac[device][S].store(n, std::memory_order_relaxed);
    }
    *fit = n < 0 ? 0 : n;
    return cudaSuccess;
}

/*
 * Launch kern on a grid of (gx, ksplit) blocks; with ksplit > 1 the ksplit blocks of one x form a
 * cluster along y (split-K reduced through distributed shared memory: tile_store, the skinny fold).
 */
template <class Kern, class... Args>
static cudaError_t launch_ksplit(Kern kern, unsigned gx, int ksplit, int threads, int smem, cudaStream_t stream,
                                 Args... args) {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr;
    ksplit_config(cfg, attr, gx, ksplit, threads, smem, stream);
    return cudaLaunchKernelEx(&cfg, kern, args...);
}

/* 3-bit thirds (docs/layouts/cuda_w4a16.md "3-bit: thirds"): the word of x chunk 4u + 3's codes from the same lane's
 * words a, b, c of a run's three blocks (its bits 2, 1, 0 in their bit 3s) into bits 0-2 of each nibble, bit 3 left as
 * junk (every reader masks the code with 7): 3 shifts + 2 lop3 per 8 weights */
__device__ __forceinline__ uint32_t thirds_fourth(uint32_t a, uint32_t b, uint32_t c) {
    const uint32_t K2 = 0x44444444u, K0 = 0x11111111u;
    const uint32_t u = ((a >> 1) & K2) | ((b >> 2) & ~K2); /* bit 2 from a, bit 1 from b (bits 0, 3 junk) */
    return (u & ~K0) | ((c >> 3) & K0);                   /* bit 0 from c */
}

} // namespace cuda_w4a16

#endif

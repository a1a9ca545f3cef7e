/*
 * w4a16_dq.cu -- path cuda_w4a16:dq (dequantize + cuBLAS, large m): a slab of the packed weights
 * expanded to 16-bit weights (code - zero) * scale, which cuBLAS then multiplies (cuda_w4a16.c),
 * and, with a bias, the epilogue that adds it to cuBLAS's fp32 product and rounds once (cuBLAS's own
 * beta * C epilogue into a 16-bit C was measured to round twice: off by one ulp on exact data).
 *
 * One thread per lane of a 512-byte block (16 rows x 64 channels): it reads its 16 bytes (one
 * 16-byte streaming load) and writes, for each of the 4 k16 steps, 4 consecutive channels of its
 * rows g and g + 8 (nibbles 0, 4, 2, 6 and 1, 5, 3, 7: docs/layouts/cuda_w4a16.md) as one 8-byte
 * store each; a warp's stores cover whole 32-byte sectors.
 *
 * Rounding: (code - zero) * scale is formed in fp32 (exact for f16/bf16 scales; one rounding for
 * f32 scales) and rounded once to the activation type. 8-bit layers (two 4-bit planes along K): the
 * thread also reads the high plane's 16 bytes and forms code = low + 16 high, zero = zl + 16 zh, with the
 * low plane's scale, so the 16-bit weight is the 8-bit one rounded once (slab width = the layer's k).
 * Halves (2-bit, HV): the thread's 16 bytes of packed chunk kc hold channel chunks 2 kc (bits 0-1 of each nibble) and
 * 2 kc + 1 (bits 2-3): it writes both (without zero points the zero is 2, uint2b2's).
 * Thirds (3-bit, w4a16_dq_thirds): one thread per lane and k16 step j of a run u (packed chunks 3u .. 3u + 2): it reads
 * word j of the three blocks (A, B, C) and writes channel chunks 4u + s from bits 0-2 of A, B, C and 4u + 3 from their
 * bit 3s (docs/layouts/cuda_w4a16.md "3-bit: thirds"; without zero points the zero is 4, uint3b4's). A group of 128
 * channels covers chunks 4u, 4u + 1 or 4u + 2, 4u + 3, so the scales and zeros are looked up again for 4u + 2 (gs16
 * counts x's k16 steps here, not packed ones as for halves). A thread per lane of a run (three 16-byte loads, 32
 * stores, 46 registers) was latency-bound: ncu, H100 v32, 70B qkv m = 1024, first slab 52.3 us at 37.7% of DRAM
 * against the 4-bit pass's 34.7 us at 57.8%. This form (32 registers, 128 contiguous bytes per warp load and store),
 * H100 v33, uint3b4 bf16, dq layers, medians of 3 turns, us, against the thread per lane: 70B o m = 513 152.3 vs 203.5,
 * m = 1024 235.3 vs 281.5, m = 2048 440.5 vs 454.3; 8B qkv m = 513 61.4 vs 79.8, m = 1024 89.5 vs 101.1, m = 2048
 * 151.1 vs 159.3.
 */
#include "w4a16_common.cuh"

namespace cuda_w4a16 {

template <class A, bool ZP, bool PL, bool HV = false>
__global__ void __launch_bounds__(256) w4a16_dq_slab(const mpl_cuda_w4a16_args a, int nt0, int ntiles,
                                                     uint16_t *__restrict__ w, int ldw) {
    static_assert(!(PL && HV), "8-bit planes or 2-bit halves");
    const int KC = a.k_pad >> MPL_CUDA_W4A16_KC_SHIFT;
    /* PL (8-bit, two planes): chunks of the low plane only; the high plane's chunk kc is KCL + kc */
    const int KCL = PL ? a.planes_k >> MPL_CUDA_W4A16_KC_SHIFT : KC;
    const int kmax = PL ? a.planes_k : a.k;
    const long long total = (long long)ntiles * KCL * 32;
    const uint32_t *sc32 = reinterpret_cast<const uint32_t *>(a.scales);
    const uint32_t *sl32 = reinterpret_cast<const uint32_t *>(a.scales_lo);
    const uint16_t *z16 = reinterpret_cast<const uint16_t *>(a.zeros);
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < total; v += (long long)gridDim.x * blockDim.x) {
        const int lane = (int)(v & 31);
        const long long blk = v >> 5;
        const int kc = (int)(blk % KCL), ntl = (int)(blk / KCL), nt = nt0 + ntl;
        const int g = lane >> 2, t = lane & 3;
        const int row0 = nt * MPL_CUDA_W4A16_NT + g; /* rows row0 and row0 + 8 */
        const uint4 *qp = reinterpret_cast<const uint4 *>(a.qweight) + ((size_t)nt * KC + kc) * 32 + lane;
        const uint4 q = ldg_stream(qp);
        const uint4 qh = PL ? ldg_stream(reinterpret_cast<const uint4 *>(a.qweight) + ((size_t)nt * KC + KCL + kc) * 32 + lane)
                            : make_uint4(0u, 0u, 0u, 0u);
        const bool in0 = row0 < a.n, in1 = row0 + 8 < a.n;
        uint16_t *w0 = w + (size_t)(ntl * MPL_CUDA_W4A16_NT + g) * ldw, *w1 = w0 + (size_t)8 * ldw;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int k = kc * MPL_CUDA_W4A16_KC + 16 * j + 4 * t;
            /* K is a multiple of 8 and k of 4: k < K means k .. k+3 are inside (halves: always, k < k_pad < K) */
            if (k >= kmax) break;
            float s0, s1;
            int z0, z1;
            /* rows g and g + 8's scales and zeros in the group of x's k16 step st */
            auto group_scales = [&](int st) {
                const int grp = group_of_step(st, a.inv_gs16);
                const size_t at = ((size_t)grp * a.n_pad + (size_t)nt * MPL_CUDA_W4A16_NT) / 2 + g; /* rows g, g+8: one word */
                const uint32_t hi = __ldg(sc32 + at), lo = a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32 ? __ldg(sl32 + at) : 0u;
                const uint32_t zz = ZP ? (uint32_t)__ldg(z16 + at) : HV ? 0x0202u : 0x0808u;
                s0 = scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt);
                s1 = scale_value(hi >> 16, lo >> 16, a.scale_fmt);
                z0 = (int)(zz & 0xffu), z1 = (int)(zz >> 8);
            };
            group_scales(kc * 4 + j);
            const uint32_t wd = j == 0 ? q.x : j == 1 ? q.y : j == 2 ? q.z : q.w;
            uint32_t wh = 0;
            if (PL) {
                /* the high plane's zeros (its own groups); the code is low + 16 high, the zero zl + 16 zh,
                 * the low plane's scale s (the high plane holds 16 s) */
                const int grh = group_of_step((KCL + kc) * 4 + j, a.inv_gs16);
                const size_t ath = ((size_t)grh * a.n_pad + (size_t)nt * MPL_CUDA_W4A16_NT) / 2 + g;
                const uint32_t zh = (uint32_t)__ldg(z16 + ath);
                z0 += 16 * (int)(zh & 0xffu), z1 += 16 * (int)(zh >> 8);
                wh = j == 0 ? qh.x : j == 1 ? qh.y : j == 2 ? qh.z : qh.w;
            }
            /* 4-bit: the nibble; 8-bit: low + 16 high; halves: chunk 2 kc + hh's 2-bit code at bits 2 hh of each nibble
             * (exact integers: one rounding of (code - z) s) */
            auto code = [&](int nib, int hh) {
                if constexpr (HV) return (int)((wd >> (4 * nib + 2 * hh)) & 3u);
                return (int)((wd >> (4 * nib)) & 15u) + (PL ? 16 * (int)((wh >> (4 * nib)) & 15u) : 0);
            };
#pragma unroll
            for (int hh = 0; hh < (HV ? 2 : 1); hh++) {
                /* halves: < a.k, k % 128 == 0 */
                const int kk = HV ? (2 * kc + hh) * MPL_CUDA_W4A16_KC + 16 * j + 4 * t : k;
                /* row g: channels 4t + 0, 1, 2, 3 are nibbles 0, 4, 2, 6; row g+8: nibbles 1, 5, 3, 7 */
                uint32_t o0[2], o1[2];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int na = h == 0 ? 0 : 2, nb = h == 0 ? 4 : 6; /* row g, channels 2h and 2h+1 */
                    const float r0a = (float)(code(na, hh) - z0) * s0, r0b = (float)(code(nb, hh) - z0) * s0;
                    const float r1a = (float)(code(na + 1, hh) - z1) * s1, r1b = (float)(code(nb + 1, hh) - z1) * s1;
                    o0[h] = (uint32_t)A::from_float(r0a) | ((uint32_t)A::from_float(r0b) << 16);
                    o1[h] = (uint32_t)A::from_float(r1a) | ((uint32_t)A::from_float(r1b) << 16);
                }
                if (in0) *reinterpret_cast<uint2 *>(w0 + kk) = make_uint2(o0[0], o0[1]);
                if (in1) *reinterpret_cast<uint2 *>(w1 + kk) = make_uint2(o1[0], o1[1]);
            }
        }
    }
}

/* Thirds, a thread per (lane, k16 step j) of a run: 4 bytes of each of the run's three blocks (words A, B, C of step j),
 * four chunks of its rows g and g + 8 written (8 stores of 8 bytes). The four j of a lane are neighbouring threads, so a
 * warp's word loads read 8 lanes' 16 contiguous bytes (128 bytes per block) and each store covers 128 contiguous bytes
 * of two rows (16 threads: 4 t x 4 j). */
__device__ __forceinline__ uint32_t ldg_stream32(const uint32_t *p) {
    uint32_t r;
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(r) : "l"(p));
    return r;
}
template <class A, bool ZP>
__global__ void __launch_bounds__(256) w4a16_dq_thirds(const mpl_cuda_w4a16_args a, int nt0, int ntiles,
                                                       uint16_t *__restrict__ w, int ldw) {
    const int KC = a.k_pad >> MPL_CUDA_W4A16_KC_SHIFT, U = KC / 3;
    const long long total = (long long)ntiles * U * 128;
    const uint32_t *sc32 = reinterpret_cast<const uint32_t *>(a.scales);
    const uint32_t *sl32 = reinterpret_cast<const uint32_t *>(a.scales_lo);
    const uint16_t *z16 = reinterpret_cast<const uint16_t *>(a.zeros);
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < total; v += (long long)gridDim.x * blockDim.x) {
        const int j = (int)(v & 3), lane = (int)((v >> 2) & 31);
        const long long run = v >> 7;
        const int u = (int)(run % U), ntl = (int)(run / U), nt = nt0 + ntl;
        const int g = lane >> 2, t = lane & 3;
        const uint32_t *qp = reinterpret_cast<const uint32_t *>(a.qweight) + (((size_t)nt * KC + 3 * (size_t)u) * 32 + lane) * 4 + j;
        const uint32_t wa = ldg_stream32(qp), wb = ldg_stream32(qp + 128), wc = ldg_stream32(qp + 256);
        const uint32_t w3 = thirds_fourth(wa, wb, wc);
        const int row0 = nt * MPL_CUDA_W4A16_NT + g;
        const bool in0 = row0 < a.n, in1 = row0 + 8 < a.n;
        uint16_t *w0 = w + (size_t)(ntl * MPL_CUDA_W4A16_NT + g) * ldw, *w1 = w0 + (size_t)8 * ldw;
        float s0 = 0.0f, s1 = 0.0f;
        int z0 = 0, z1 = 0;
#pragma unroll
        for (int hh = 0; hh < 4; hh++) {
            /* chunk 4u + hh; a group of 128 channels covers chunks 4u, 4u + 1 or 4u + 2, 4u + 3 */
            if (hh == 0 || hh == 2) {
                const int grp = group_of_step(4 * (4 * u + hh) + j, a.inv_gs16);
                const size_t at = ((size_t)grp * a.n_pad + (size_t)nt * MPL_CUDA_W4A16_NT) / 2 + g;
                const uint32_t hi = __ldg(sc32 + at), lo = a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32 ? __ldg(sl32 + at) : 0u;
                const uint32_t zz = ZP ? (uint32_t)__ldg(z16 + at) : 0x0404u;
                s0 = scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt);
                s1 = scale_value(hi >> 16, lo >> 16, a.scale_fmt);
                z0 = (int)(zz & 0xffu), z1 = (int)(zz >> 8);
            }
            const uint32_t wd = hh == 0 ? wa : hh == 1 ? wb : hh == 2 ? wc : w3;
            const int kk = (4 * u + hh) * MPL_CUDA_W4A16_KC + 16 * j + 4 * t;
            uint32_t o0[2], o1[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int na = h == 0 ? 0 : 2, nb = h == 0 ? 4 : 6; /* row g: nibbles 0, 4, 2, 6; row g + 8: 1, 5, 3, 7 */
                const float r0a = (float)((int)((wd >> (4 * na)) & 7u) - z0) * s0, r0b = (float)((int)((wd >> (4 * nb)) & 7u) - z0) * s0;
                const float r1a = (float)((int)((wd >> (4 * na + 4)) & 7u) - z1) * s1;
                const float r1b = (float)((int)((wd >> (4 * nb + 4)) & 7u) - z1) * s1;
                o0[h] = (uint32_t)A::from_float(r0a) | ((uint32_t)A::from_float(r0b) << 16);
                o1[h] = (uint32_t)A::from_float(r1a) | ((uint32_t)A::from_float(r1b) << 16);
            }
            if (in0) *reinterpret_cast<uint2 *>(w0 + kk) = make_uint2(o0[0], o0[1]);
            if (in1) *reinterpret_cast<uint2 *>(w1 + kk) = make_uint2(o1[0], o1[1]);
        }
    }
}

/* Grid: one thread per lane of each block of the slab (thirds: of each run of three blocks), at most 8 blocks of
 * 256 threads per SM (grid-stride beyond: a memory-bound expansion gains nothing from more resident threads; v5
 * design value). */
template <class A>
static cudaError_t dq_slab_act(const mpl_cuda_w4a16_args *a, int nt0, int ntiles, uint16_t *w, int ldw, cudaStream_t s) {
    const long long units = (a->planes_k ? a->planes_k : a->k_pad) / MPL_CUDA_W4A16_KC / (a->thirds ? 3 : 1);
    long long threads = (long long)ntiles * units * (a->thirds ? 128 : 32);
    long long blocks = (threads + 255) / 256, cap = (long long)a->sms * 8;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    if (a->planes_k)
        w4a16_dq_slab<A, true, true><<<(unsigned)blocks, 256, 0, s>>>(*a, nt0, ntiles, w, ldw);
    else if (a->halves && a->zeros)
        w4a16_dq_slab<A, true, false, true><<<(unsigned)blocks, 256, 0, s>>>(*a, nt0, ntiles, w, ldw);
    else if (a->halves)
        w4a16_dq_slab<A, false, false, true><<<(unsigned)blocks, 256, 0, s>>>(*a, nt0, ntiles, w, ldw);
    else if (a->thirds && a->zeros)
        w4a16_dq_thirds<A, true><<<(unsigned)blocks, 256, 0, s>>>(*a, nt0, ntiles, w, ldw);
    else if (a->thirds)
        w4a16_dq_thirds<A, false><<<(unsigned)blocks, 256, 0, s>>>(*a, nt0, ntiles, w, ldw);
    else if (a->zeros)
        w4a16_dq_slab<A, true, false><<<(unsigned)blocks, 256, 0, s>>>(*a, nt0, ntiles, w, ldw);
    else
        w4a16_dq_slab<A, false, false><<<(unsigned)blocks, 256, 0, s>>>(*a, nt0, ntiles, w, ldw);
    return cudaGetLastError();
}

/* y[i][j] = round16(c[i][j] + bias[j]) for i < m, j < ns (c: fp32, [m][ns]; y row stride ldy): the
 * one rounding of the reference, after cuBLAS's fp32 sums (8 outputs, one 16-byte store, per thread). */
template <class A>
__global__ void w4a16_dq_bias(const float *__restrict__ c, const uint16_t *__restrict__ bias, uint16_t *__restrict__ y,
                                  int m, int ns, int ldy) {
    const int p8 = ns / 8;
    long long total = (long long)m * p8;
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < total; v += (long long)gridDim.x * blockDim.x) {
        const int i = (int)(v / p8), j = (int)(v % p8) * 8;
        const float4 u0 = *reinterpret_cast<const float4 *>(c + (size_t)i * ns + j);
        const float4 u1 = *reinterpret_cast<const float4 *>(c + (size_t)i * ns + j + 4);
        const float f[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
        uint32_t o[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            o[e] = (uint32_t)A::from_float(f[2 * e] + A::to_float(__ldg(bias + j + 2 * e))) |
                   ((uint32_t)A::from_float(f[2 * e + 1] + A::to_float(__ldg(bias + j + 2 * e + 1))) << 16);
        *reinterpret_cast<uint4 *>(y + (size_t)i * ldy + j) = make_uint4(o[0], o[1], o[2], o[3]);
    }
}

} // namespace cuda_w4a16

extern "C" int mpl_cuda_w4a16_launch_dq_bias(const float *c, const void *bias, void *y, int m, int ns, int ldy, int act,
                                             void *stream) {
    long long total = (long long)m * (ns / 8);
    long long blocks = (total + 255) / 256;
    if (blocks > 65535) blocks = 65535; /* grid-stride beyond: an elementwise pass gains nothing from more blocks */
    if (blocks < 1) return 0;
    using namespace cuda_w4a16;
    if (act == MPL_CUDA_W4A16_ACT_F16)
        w4a16_dq_bias<ActF16><<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(c, (const uint16_t *)bias,
                                                                                 (uint16_t *)y, m, ns, ldy);
    else
        w4a16_dq_bias<ActBF16><<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(c, (const uint16_t *)bias,
                                                                                  (uint16_t *)y, m, ns, ldy);
    return (int)cudaGetLastError();
}

extern "C" int mpl_cuda_w4a16_launch_dq_slab(const mpl_cuda_w4a16_args *a, int nt0, int ntiles, void *w, int ldw,
                                             void *stream) {
    using namespace cuda_w4a16;
    cudaStream_t s = (cudaStream_t)stream;
    return (int)(a->act == MPL_CUDA_W4A16_ACT_F16 ? dq_slab_act<ActF16>(a, nt0, ntiles, (uint16_t *)w, ldw, s)
                                                  : dq_slab_act<ActBF16>(a, nt0, ntiles, (uint16_t *)w, ldw, s));
}

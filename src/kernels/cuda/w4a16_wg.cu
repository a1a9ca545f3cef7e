/*
 * w4a16_wg.cu -- the warpgroup (wgmma, sm_90a) path of cuda_w4a16: a tiled GEMM over the same
 * packed buffer as the skinny and mma.sync paths, for M above the decode range. Compiled for
 * sm_90a only (CMakeLists.txt); the descriptor uses it on compute capability 9.0 devices.
 *
 * "Swap AB" as everywhere in this kernel: y^T = W x^T, so the weights are wgmma's A operand
 * (64 rows of N per instruction, from registers) and x is B (the tokens are wgmma's N).
 *
 *  - Block: two warpgroups (256 threads); warpgroup h owns MW sub-tiles of 64 rows of N, so a
 *    block covers R = 128 MW rows of N by BT tokens. Warp q of a warpgroup holds rows
 *    16q .. 16q+15 of each sub-tile: exactly one 16-row tile of the packed layout, whose
 *    per-lane 16-byte piece of a 64-channel chunk is the A fragment of four k16 steps
 *    (docs/layouts/cuda_w4a16.md: the wgmma register-A fragment of a warp is the mma.sync one).
 *  - Each weight is dequantized in registers to round16((code - zero) * scale) -- the dq path's
 *    rounded weight (one rounding, the same bits) -- so no per-group partial sums are kept and
 *    the scale never touches the accumulators. Scales in the activation's own 16-bit type take
 *    one fma.rn.{f16,bf16}x2 per pair (S16); other formats go through fp32 (exactly the same
 *    result: the product of the exact integer and the scale is exact in fp32, then one rounding).
 *  - x tiles are B in shared memory: BT token rows of 128 bytes (64 channels), the 128-byte
 *    swizzle (16-byte unit u of row r at u ^ (r % 8)), 1024-byte aligned stages. The layout's
 *    column order inside a k16 step (channel pair 2t at MMA pair t, pair 2t+1 at pair t+4) is
 *    applied while copying: 4-byte cp.async pieces, one warp per token row (coalesced reads).
 *  - STAGES-deep cp.async pipeline, one barrier per chunk; wgmma groups are committed per chunk
 *    and waited one chunk behind, so a stage is refilled two chunks after its wgmmas were issued.
 *  - Split-K (when there are too few tiles) and the epilogue are the tc path's (cluster, rank order).
 */
#include <atomic>

#include "w4a16_common.cuh"
#include "w4a16_tc.cuh" /* TC_BAND, tc_choose_ksplit */
#include "w4a16_wg_mma.cuh"

namespace cw4 {

constexpr int WG_THREADS = 256;
constexpr int WG_MAX_DEV = 64;

template <int BT, int MW, int STAGES>
struct WgShape {
    static constexpr int R = 128 * MW;     /* rows of N per block */
    static constexpr int B_BYTES = BT * 128; /* x tile (swizzled), a multiple of 1024 */
    static constexpr int W_BYTES = R * 32;   /* R / 16 blocks of 512 bytes */
    static constexpr int S_BYTES = 4 * R * 2; /* four slots (k16 steps) of R 16-bit scales */
    static constexpr int Z_BYTES = 4 * R;
    static constexpr int STAGE = (B_BYTES + W_BYTES + 2 * S_BYTES + Z_BYTES + 1023) / 1024 * 1024;
    static constexpr int LD = R + 4; /* fp32 epilogue tile row (conflict-free fragment writes) */
    static constexpr int C_BYTES = BT * LD * 4;
    static constexpr int SMEM = (STAGES * STAGE > C_BYTES ? STAGES * STAGE : C_BYTES) + 1024; /* + alignment */
    static_assert(BT % 8 == 0 && STAGES >= 3, "tile");
};

__device__ __forceinline__ void cp_async4(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* cp.async writes are generic-proxy writes; wgmma reads through the async proxy. */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* Keep a register's value alive (and in place) up to here: the wgmma that reads it is asynchronous. */
__device__ __forceinline__ void keep(uint32_t &r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void keep(float &r) { asm volatile("" : "+f"(r)::"memory"); }

/* Shared-memory descriptor of a K-major B tile with the 128-byte swizzle: start >> 4, leading
 * byte offset 1 (unused with this swizzle), stride byte offset 1024 >> 4 (8 rows of 128 B), mode 1. */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr) {
    return (uint64_t)((saddr >> 4) & 0x3fff) | ((uint64_t)1 << 16) | ((uint64_t)64 << 32) | ((uint64_t)1 << 62);
}

/* 16-bit pair times a pair of 16-bit scales, one rounding (S16). */
template <class A>
__device__ __forceinline__ uint32_t mul16x2(uint32_t v, uint32_t s);
template <>
__device__ __forceinline__ uint32_t mul16x2<ActF16>(uint32_t v, uint32_t s) {
    uint32_t r;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(v), "r"(s), "r"(0x80008000u));
    return r;
}
template <>
__device__ __forceinline__ uint32_t mul16x2<ActBF16>(uint32_t v, uint32_t s) {
    uint32_t r;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(v), "r"(s), "r"(0x80008000u));
    return r;
}
/* 16-bit pair (exact integers) times an fp32 scale, rounded once to the pair type. */
template <class A>
__device__ __forceinline__ uint32_t mul32(uint32_t v, float s);
template <>
__device__ __forceinline__ uint32_t mul32<ActF16>(uint32_t v, float s) {
    float2 f = __half22float2(*reinterpret_cast<const __half2 *>(&v));
    __half2 h = __floats2half2_rn(f.x * s, f.y * s);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <>
__device__ __forceinline__ uint32_t mul32<ActBF16>(uint32_t v, float s) {
    float lo = __uint_as_float(v << 16), hi = __uint_as_float(v & 0xffff0000u);
    __nv_bfloat162 h = __floats2bfloat162_rn(lo * s, hi * s);
    return *reinterpret_cast<uint32_t *>(&h);
}

template <class A, bool ZP, bool FOLD, bool S16, int BT, int MW, int NACC, int STAGES, int MINB>
__global__ void __launch_bounds__(WG_THREADS, MINB) cw4_wg(const mpl_cw4_args a, int tiles_m, int tiles_n, int nslot) {
    using Sh = WgShape<BT, MW, STAGES>;
    constexpr int R = Sh::R;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw), base = (raw + 1023u) & ~1023u;
    unsigned char *smem = smem_raw + (base - raw);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2;
    const int wgi = warp >> 2, wq = warp & 3;

    const int tile = blockIdx.x;
    const int band = tile / (TC_BAND * tiles_n);
    const int first_m = band * TC_BAND;
    const int band_m = min(tiles_m - first_m, TC_BAND);
    const int in_band = tile - band * TC_BAND * tiles_n;
    const int m0 = (first_m + in_band % band_m) * BT, n0 = (in_band / band_m) * R;

    const int KC = a.k_pad >> 6;
    const int S = gridDim.y, split = blockIdx.y;
    const int c_begin = (int)((long long)KC * split / S), c_end = (int)((long long)KC * (split + 1) / S);
    const uint4 *wq4 = reinterpret_cast<const uint4 *>(a.qweight);
    const uint16_t *x = reinterpret_cast<const uint16_t *>(a.x);

    /* Copy plan. Weights: 16-byte piece p = tid + 256 r is lane p & 31 of block (tile) p >> 5. */
    constexpr int WP = R * 2 / WG_THREADS;
    static_assert(WP * WG_THREADS == R * 2, "weight pieces");
    const uint4 *wbase = wq4 + (size_t)(n0 / 16 + (tid >> 5)) * KC * 32 + (tid & 31);
    const size_t wstride = (size_t)8 * KC * 32;
    /* x: 4-byte piece v = tid + 256 r is token row (v >> 5) = warp + 8 r, logical pair pl = lane
     * (MMA pair p = pl % 8 of k16 step pl / 8 holds channel pair sigma(p) = 2p (p < 4), 2(p-4)+1). */
    constexpr int XP = BT * 32 / WG_THREADS > 0 ? BT * 32 / WG_THREADS : 1;
    const int pl = lane, step = pl >> 3, pp = pl & 7;
    const int xch = 16 * step + 2 * (pp < 4 ? 2 * pp : 2 * (pp - 4) + 1); /* channel within the chunk */
    const uint32_t xdst = (uint32_t)(warp * 128 + ((((pl >> 2) ^ (warp & 7))) << 4) + (pl & 3) * 4);
    unsigned xrows = 0; /* bit r: piece r's token row is inside M */
#pragma unroll
    for (int r = 0; r < XP; r++)
        if (warp + 8 * r < BT && m0 + warp + 8 * r < a.m) xrows |= 1u << r;
    const uint16_t *xbase = x + (size_t)min(m0 + warp, a.m - 1) * a.k + xch;
    const size_t xstride = (size_t)8 * a.k;

    auto load_stage = [&](int c, int buf) {
        unsigned char *st = smem + buf * Sh::STAGE;
        const uint32_t sb = base + (uint32_t)(buf * Sh::STAGE);
        const bool kin = xch < a.k - c * 64; /* K is a multiple of 8: a pair is all in or all out */
#pragma unroll
        for (int r = 0; r < XP; r++) {
            if (BT * 32 >= WG_THREADS || warp + 8 * r < BT) {
                bool ok = kin && (xrows >> r & 1u);
                cp_async4(sb + xdst + r * 1024, ok ? xbase + r * xstride + c * 64 : x, ok ? 4 : 0);
            }
        }
        unsigned char *sw = st + Sh::B_BYTES;
#pragma unroll
        for (int r = 0; r < WP; r++) cp_async16(sw + (tid + r * WG_THREADS) * 16, wbase + r * wstride + c * 32, 16);
        unsigned char *ss = sw + Sh::W_BYTES;
        if (tid < nslot * (R / 8)) {
            int s = tid / (R / 8), q = tid % (R / 8);
            int grp = group_of_step(c * 4 + s, a.inv_gs16);
            size_t at = (size_t)grp * a.n_pad + n0 + q * 8;
            cp_async16(ss + s * R * 2 + q * 16, a.scales + at, 16);
            if (!S16 && a.scale_fmt == 2) cp_async16(ss + Sh::S_BYTES + s * R * 2 + q * 16, a.scales_lo + at, 16);
            if (ZP && q < R / 16) {
                size_t zt = (size_t)grp * a.n_pad + n0 + q * 16;
                cp_async16(ss + 2 * Sh::S_BYTES + s * R + q * 16, a.zeros + zt, 16);
            }
        }
    };

    /* FOLD: acc holds scaled sums; group g's exact partial sums go to accg0 (g even) / accg1 (g odd),
     * folded in with the group's scales once its wgmmas are complete (one chunk later).
     * NACC > 1: k16 step j goes to copy j % NACC of the sums (entry (j % NACC) MW + s), so that the
     * wgmmas of one chunk do not wait for each other; the copies are added at the fold / the end. */
    float acc[NACC * MW][BT / 2], accg0[NACC * MW][BT / 2], accg1[NACC * MW][BT / 2];
#pragma unroll
    for (int s = 0; s < NACC * MW; s++)
#pragma unroll
        for (int e = 0; e < BT / 2; e++) acc[s][e] = accg0[s][e] = accg1[s][e] = 0.0f;
    /* the group of chunk c (FOLD: group sizes are multiples of 64, so a chunk lies in one group) */
    auto group_of_chunk = [&](int c) { return group_of_step(c * 4, a.inv_gs16); };
    auto fold = [&](float (&pg)[NACC * MW][BT / 2], int c) {
        if (FOLD) {
            const unsigned char *ss = smem + ((c - c_begin) % STAGES) * Sh::STAGE + Sh::B_BYTES + Sh::W_BYTES;
#pragma unroll
            for (int s = 0; s < MW; s++) {
                const int lt = (wgi * MW + s) * 4 + wq;
                const int off = lt * 32 + 4 * g; /* slot 0, word g: rows (g, g+8) */
                uint32_t hi = *reinterpret_cast<const uint32_t *>(ss + off);
                uint32_t lo = a.scale_fmt == 2 ? *reinterpret_cast<const uint32_t *>(ss + Sh::S_BYTES + off) : 0u;
                float s_g = scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt);
                float s_g8 = scale_value(hi >> 16, lo >> 16, a.scale_fmt);
#pragma unroll
                for (int e = 0; e < BT / 2; e++) {
                    float v = pg[s][e];
#pragma unroll
                    for (int q = 1; q < NACC; q++) v += pg[q * MW + s][e];
                    acc[s][e] += ((e & 3) >> 1 ? s_g8 : s_g) * v;
                }
            }
        }
    };

#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (c_begin + s < c_end) load_stage(c_begin + s, s);
        cp_async_commit();
    }

    /* A fragments of two chunks: the one whose wgmmas may still run, and the one being built. */
    uint32_t af[2][MW][4][4];
    auto chunk = [&](int c, uint32_t (&cur)[MW][4][4], uint32_t (&prev)[MW][4][4]) {
        cp_async_wait<STAGES - 3>();
        if (!(a.wg_exp & 1)) fence_proxy_async();
        __syncthreads(); /* stage c landed for everyone; chunk c-2's wgmmas are done (waited below) */
        {
            int cn = c + STAGES - 2;
            if (cn < c_end) load_stage(cn, (cn - c_begin) % STAGES);
            cp_async_commit();
        }
        const int buf = (c - c_begin) % STAGES;
        const unsigned char *st = smem + buf * Sh::STAGE;
        const unsigned char *sw = st + Sh::B_BYTES, *ss = sw + Sh::W_BYTES;
#pragma unroll
        for (int s = 0; s < MW; s++) {
            const int lt = (wgi * MW + s) * 4 + wq; /* the warp's 16-row tile within the block */
            uint4 wv = *reinterpret_cast<const uint4 *>(sw + (lt * 32 + lane) * 16);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int slot = nslot == 1 ? 0 : j;
                uint32_t z16 = ZP ? *reinterpret_cast<const uint16_t *>(ss + 2 * Sh::S_BYTES + slot * R + lt * 16 + 2 * g) : 0u;
                uint32_t add_g, add_g8;
                zero_consts<A, ZP>(z16, add_g, add_g8);
                uint32_t w = j == 0 ? wv.x : j == 1 ? wv.y : j == 2 ? wv.z : wv.w;
                if (FOLD) { /* exact integers; the scale is applied at the fold */
                    A::dequant(w, add_g, add_g8, cur[s][j]);
                    continue;
                }
                uint32_t q[4];
                A::dequant(w, add_g, add_g8, q);
                const int off = slot * R * 2 + lt * 32 + 4 * g; /* word g: rows (g, g+8) */
                uint32_t hi = *reinterpret_cast<const uint32_t *>(ss + off);
                if (S16) {
                    uint32_t s_g = __byte_perm(hi, 0, 0x1010), s_g8 = __byte_perm(hi, 0, 0x3232);
                    cur[s][j][0] = mul16x2<A>(q[0], s_g);
                    cur[s][j][1] = mul16x2<A>(q[1], s_g8);
                    cur[s][j][2] = mul16x2<A>(q[2], s_g);
                    cur[s][j][3] = mul16x2<A>(q[3], s_g8);
                } else {
                    uint32_t lo = a.scale_fmt == 2 ? *reinterpret_cast<const uint32_t *>(ss + Sh::S_BYTES + off) : 0u;
                    float s_g = scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt);
                    float s_g8 = scale_value(hi >> 16, lo >> 16, a.scale_fmt);
                    cur[s][j][0] = mul32<A>(q[0], s_g);
                    cur[s][j][1] = mul32<A>(q[1], s_g8);
                    cur[s][j][2] = mul32<A>(q[2], s_g);
                    cur[s][j][3] = mul32<A>(q[3], s_g8);
                }
            }
        }
        const uint32_t sb = base + (uint32_t)(buf * Sh::STAGE);
        const uint64_t d0 = desc_sw128(sb);
        const int grp = FOLD ? group_of_chunk(c) : 0;
        const int first = FOLD && (c == c_begin || group_of_chunk(c - 1) != grp); /* starts a group's sums */
        wg_fence();
        if (!FOLD) {
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int s = 0; s < MW; s++)
                    WgMma<A::id, BT>::run(acc[(j % NACC) * MW + s], cur[s][j], d0 + (uint64_t)(2 * j), 1);
        } else if (grp & 1) {
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int s = 0; s < MW; s++)
                    WgMma<A::id, BT>::run(accg1[(j % NACC) * MW + s], cur[s][j], d0 + (uint64_t)(2 * j), j >= NACC || !first);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int s = 0; s < MW; s++)
                    WgMma<A::id, BT>::run(accg0[(j % NACC) * MW + s], cur[s][j], d0 + (uint64_t)(2 * j), j >= NACC || !first);
        }
        wg_commit();
        wg_wait<1>(); /* chunk c-1's wgmmas are done: its fragments and its stage are free */
#pragma unroll
        for (int s = 0; s < MW; s++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) keep(prev[s][j][e]);
        /* chunk c-1 ended its group: fold that group's sums (its stage is intact until the next chunk) */
        if (FOLD && c > c_begin && first) {
            if (group_of_chunk(c - 1) & 1) fold(accg1, c - 1);
            else fold(accg0, c - 1);
        }
    };
#pragma unroll
    for (int s = 0; s < MW; s++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) af[0][s][j][e] = af[1][s][j][e] = 0u;
    int c = c_begin;
    for (; c + 1 < c_end; c += 2) {
        chunk(c, af[0], af[1]);
        chunk(c + 1, af[1], af[0]);
    }
    if (c < c_end) chunk(c, af[0], af[1]);
    wg_wait<0>();
    if (FOLD && c_end > c_begin) {
        if (group_of_chunk(c_end - 1) & 1) fold(accg1, c_end - 1);
        else fold(accg0, c_end - 1);
    }
#pragma unroll
    for (int s = 0; s < NACC * MW; s++)
#pragma unroll
        for (int e = 0; e < BT / 2; e++) keep(acc[s][e]);
    cp_async_wait<0>();
    __syncthreads();

    /* Accumulator (s, e) of lane (g, t): row of N (wgi MW + s) 64 + 16 wq + g + 8 ((e % 4) / 2),
     * token 8 (e / 4) + 2 t + (e % 2). */
    float *sc = reinterpret_cast<float *>(smem);
    const int t = lane & 3;
#pragma unroll
    for (int s = 0; s < MW; s++)
#pragma unroll
        for (int e = 0; e < BT / 2; e++) {
            int nl = (wgi * MW + s) * 64 + 16 * wq + g + 8 * ((e & 3) >> 1), ml = 8 * (e >> 2) + 2 * t + (e & 1);
            float v = acc[s][e];
#pragma unroll
            for (int q = 1; q < (FOLD ? 1 : NACC); q++) v += acc[q * MW + s][e];
            sc[ml * Sh::LD + nl] = v;
        }
    __syncthreads();
    tile_store<A, R, Sh::LD, WG_THREADS>(a, sc, BT, m0, n0, S, split, tid);
}

template <class A, bool ZP, bool FOLD, bool S16, int BT, int MW, int NACC, int STAGES, int MINB>
static cudaError_t wg_launch(const mpl_cw4_args *a, cudaStream_t stream) {
    using Sh = WgShape<BT, MW, STAGES>;
    auto kern = cw4_wg<A, ZP, FOLD, S16, BT, MW, NACC, STAGES, MINB>;
    static std::atomic<int> occ_cache[WG_MAX_DEV];
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    int occ = dev < WG_MAX_DEV ? occ_cache[dev].load(std::memory_order_relaxed) : 0;
    if (occ == 0) {
        e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, Sh::SMEM);
        if (e != cudaSuccess) return e;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, WG_THREADS, Sh::SMEM);
        if (e != cudaSuccess) return e;
        if (occ < 1) return cudaErrorInvalidConfiguration;
        if (dev < WG_MAX_DEV) occ_cache[dev].store(occ, std::memory_order_relaxed);
    }
    int tiles_m = (a->m + BT - 1) / BT, tiles_n = (a->n + Sh::R - 1) / Sh::R;
    int tiles = tiles_m * tiles_n, kc = a->k_pad / 64;
    int ksplit = a->ksplit > 0 ? a->ksplit : tc_choose_ksplit(tiles, a->sms * occ, kc);
    if (ksplit > 8) ksplit = 8;
    if (ksplit > kc) ksplit = kc;
    if (ksplit < 1) ksplit = 1;
    int nslot = a->gs16 % 4 == 0 ? 1 : 4;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)tiles, (unsigned)ksplit, 1);
    cfg.blockDim = dim3(WG_THREADS, 1, 1);
    cfg.dynamicSmemBytes = Sh::SMEM;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = (unsigned)ksplit;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = ksplit > 1 ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kern, *a, tiles_m, tiles_n, nslot);
}

/* Token tile by M (measured choices: bench/cuda/NOTES.md, v6). FOLD: exact per-group sums, scaled
 * at the fold (group sizes that are multiples of 64, or one group); else rounded scaled weights. */
template <class A, bool ZP, bool FOLD, bool S16>
static cudaError_t wg_dispatch4(const mpl_cw4_args *a, cudaStream_t s) {
    const bool split = a->wg_exp & 2; /* experiment: independent sums per k16 step */
    if (a->m <= 16) return split ? wg_launch<A, ZP, FOLD, S16, 16, 1, 4, 8, 2>(a, s) : wg_launch<A, ZP, FOLD, S16, 16, 1, 1, 8, 2>(a, s);
    if (a->m <= 32) return split ? wg_launch<A, ZP, FOLD, S16, 32, 1, 2, 8, 2>(a, s) : wg_launch<A, ZP, FOLD, S16, 32, 1, 1, 8, 2>(a, s);
    if constexpr (FOLD) { /* the group sums double the accumulators: one block per SM */
        if (a->m <= 64) return wg_launch<A, ZP, FOLD, S16, 64, 1, 1, 10, 1>(a, s);
        return wg_launch<A, ZP, FOLD, S16, 128, 1, 1, 6, 1>(a, s);
    } else {
        if (a->m <= 64) return wg_launch<A, ZP, FOLD, S16, 64, 1, 1, 6, 2>(a, s);
        return wg_launch<A, ZP, FOLD, S16, 128, 2, 1, 5, 1>(a, s);
    }
}

template <class A, bool ZP>
static cudaError_t wg_dispatch_zp(const mpl_cw4_args *a, cudaStream_t s) {
    if (a->gs16 % 4 == 0 && !(a->wg_exp & 4)) return wg_dispatch4<A, ZP, true, false>(a, s);
    const bool s16 = a->scale_fmt == (A::id == 1 ? 0 : 1); /* scales stored in the activation's own type */
    return s16 ? wg_dispatch4<A, ZP, false, true>(a, s) : wg_dispatch4<A, ZP, false, false>(a, s);
}

template <class A>
static cudaError_t wg_dispatch(const mpl_cw4_args *a, cudaStream_t s) {
    return a->zeros ? wg_dispatch_zp<A, true>(a, s) : wg_dispatch_zp<A, false>(a, s);
}

} // namespace cw4

extern "C" int mpl_cw4_launch_wg(const mpl_cw4_args *a, void *stream) {
    if (a->cc != 90) return (int)cudaErrorNoKernelImageForDevice; /* sm_90a code only */
    cudaStream_t s = (cudaStream_t)stream;
    return (int)(a->act == 1 ? cw4::wg_dispatch<cw4::ActF16>(a, s) : cw4::wg_dispatch<cw4::ActBF16>(a, s));
}

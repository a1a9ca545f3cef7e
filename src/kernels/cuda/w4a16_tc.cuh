/*
 * w4a16_tc.cuh -- path cuda_w4a16:tc (mma.sync tiles, any m, compute capability 8.0+): a tiled GEMM over
 * the same packed buffer, instantiated once per activation type in w4a16_tc_f16.cu / w4a16_tc_bf16.cu.
 *
 *  - Block tile BN rows of N x BM rows of M, one 64-channel chunk per pipeline stage. A stage
 *    holds the chunk's weights (BN/16 blocks of 512 B, copied as they lie in memory), its x
 *    rows (BM x 128 B, padded to 160 B a row: the 8-byte fragment reads are conflict-free),
 *    and the group scales / zeros of its k16 steps. STAGES-deep cp.async pipeline, one
 *    __syncthreads per chunk.
 *  - Warps are WN x WM; each dequantizes its NT row tiles once per k16 step (one 16-byte
 *    shared load per row tile per chunk) and runs NT x MTW mma.m16n8k16 (y^T = W x^T).
 *    The x fragment of lane (g, t) is 8 contiguous bytes thanks to the layout's column order,
 *    so a plain 8-byte shared load does what ldmatrix would (docs/layouts/cuda_w4a16.md).
 *  - Group scales are applied in fp32 to each group's partial sums (exact integer weights in
 *    the MMA); the partial-sum registers double the accumulators, hence one block per SM for tiles of
 *    more than 8 MMA tiles per warp, two below (TcMinBlocks).
 *  - Tiles are rasterised in bands of 8 row tiles of M so that concurrently running blocks
 *    share weights and x through L2. Split-K (when there are too few tiles for a wave) goes
 *    through a cluster and distributed shared memory, in a fixed order.
 */
#ifndef MPL_CUDA_W4A16_TC_CUH
#define MPL_CUDA_W4A16_TC_CUH

#include "w4a16_common.cuh"

namespace cuda_w4a16 {

constexpr int TC_THREADS = 256;
constexpr int TC_XS = 160; /* shared bytes per x row: 128 of data + 32 so 8 rows hit 8 bank groups */
/* Pipeline depth of every tile: 4 chunks in flight behind the one computed, 58-115 KB of shared memory per
 * block (within sm_80's 163 KB). v1 design value, not swept since; the 4-stage 128 x 128 tiles it was once
 * compared with lost at every large m (bench/cuda/NOTES.md v2) and are gone (git tag exp/cuda-stream-v7). */
constexpr int TC_STAGES = 5;

template <int BM, int BN, int WN, int WM, int STAGES>
struct TcShape {
    static constexpr int NT = BN / WN / 16; /* 16-row tiles per warp */
    static constexpr int MTW = BM / WM / 8; /* 8-column tiles of M per warp */
    static constexpr int W_BYTES = BN * 32;
    static constexpr int X_BYTES = BM * TC_XS;
    static constexpr int S_BYTES = 4 * BN * 2; /* four slots (k16 steps) of BN 16-bit scales */
    static constexpr int Z_BYTES = 4 * BN;
    static constexpr int STAGE = W_BYTES + X_BYTES + 2 * S_BYTES + Z_BYTES;
    static constexpr int C_BYTES = BM * (BN + 4) * 4; /* fp32 output tile for the epilogue */
    static constexpr int SMEM = STAGES * STAGE > C_BYTES ? STAGES * STAGE : C_BYTES;
    static_assert(NT * WN * 16 == BN && MTW * WM * 8 == BM && WN * WM == TC_THREADS / 32, "warp layout");
    static_assert(MPL_CUDA_W4A16_N_ALIGN % BN == 0, "a tile's rows of N stay inside n_pad (no bounds checks)");
};

/* Blocks per SM the launch bounds ask for: two when a warp holds at most 8 MMA tiles (accumulators
 * and partial sums fit 128 registers, and two blocks hide each other's latency), one for the others
 * (the partial-sum registers double the accumulators). */
template <int BM, int BN, int WN, int WM>
struct TcMinBlocks {
    static constexpr int value = (BN / WN / 16) * (BM / WM / 8) <= 8 ? 2 : 1;
};

/* nslot: 1 when every chunk lies in one group (scales/zeros once per chunk), else 4. */
template <class A, bool ZP, int BM, int BN, int WN, int WM, int STAGES>
__global__ void __launch_bounds__(TC_THREADS, TcMinBlocks<BM, BN, WN, WM>::value)
    w4a16_tc(const mpl_cuda_w4a16_args a, int tiles_m, int tiles_n, int nslot) {
    using Sh = TcShape<BM, BN, WN, WM, STAGES>;
    constexpr int NT = Sh::NT, MTW = Sh::MTW;
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wn = warp % WN, wm = warp / WN;

    const int tile = blockIdx.x;
    const int2 mn = raster_tile(tile, tiles_m, tiles_n);
    const int m0 = mn.x * BM, n0 = mn.y * BN;

    const int KC = a.k_pad >> MPL_CUDA_W4A16_KC_SHIFT;
    const int S = gridDim.y, split = blockIdx.y;
    const int c_begin = (int)((long long)KC * split / S), c_end = (int)((long long)KC * (split + 1) / S);
    const uint4 *wq = reinterpret_cast<const uint4 *>(a.qweight);
    const uint16_t *x = reinterpret_cast<const uint16_t *>(a.x);

    /* Per-thread copy plan, fixed for the whole K loop: compile-time trip counts, one base
     * pointer per operand advancing by a chunk per stage, piece r at a fixed stride from it. */
    constexpr int WPIECES = BN * 2, XPIECES = BM * 8;
    constexpr int WP = (WPIECES + TC_THREADS - 1) / TC_THREADS, XP = (XPIECES + TC_THREADS - 1) / TC_THREADS;
    /* piece p = tid + 256 r: weights row tile (tid >> 5) + 8 r, lane tid & 31; x row (tid >> 3) + 32 r, piece tid & 7 */
    const uint4 *wbase = wq + (size_t)(n0 / 16 + (tid >> 5)) * KC * 32 + (tid & 31);
    const size_t wstride = (size_t)8 * KC * 32;
    const uint16_t *xbase = x + (size_t)min(m0 + (tid >> 3), a.m - 1) * a.k + (tid & 7) * 8;
    const size_t xstride = (size_t)32 * a.k;
    const int xk = (tid & 7) * 8;
    unsigned xrows = 0; /* bit r: piece r's row is inside M */
#pragma unroll
    for (int r = 0; r < XP; r++)
        if (tid + r * TC_THREADS < XPIECES && m0 + (tid >> 3) + 32 * r < a.m) xrows |= 1u << r;
    auto load_stage = [&](int c, int buf) {
        unsigned char *st = smem + buf * Sh::STAGE;
#pragma unroll
        for (int r = 0; r < WP; r++) {
            int p = tid + r * TC_THREADS;
            if (WPIECES % TC_THREADS == 0 || p < WPIECES) cp_async16(st + p * 16, wbase + r * wstride + c * 32, 16);
        }
        unsigned char *sx = st + Sh::W_BYTES;
        const bool kin = xk < a.k - c * 64; /* K is a multiple of 8: a piece is all in or all out */
#pragma unroll
        for (int r = 0; r < XP; r++) {
            int p = tid + r * TC_THREADS;
            if (XPIECES % TC_THREADS == 0 || p < XPIECES) {
                bool ok = kin && (xrows >> r & 1u);
                cp_async16(sx + (p >> 3) * TC_XS + (p & 7) * 16, ok ? xbase + r * xstride + c * 64 : x, ok ? 16 : 0);
            }
        }
        /* scales, scales_lo and zeros of the chunk's k16 steps: a few threads */
        unsigned char *ss = sx + Sh::X_BYTES;
        if (tid < nslot * (BN / 8)) {
            int s = tid / (BN / 8), q = tid % (BN / 8);
            size_t at = (size_t)group_of_step(c * 4 + s, a.inv_gs16) * a.n_pad + n0 + q * 8;
            cp_async16(ss + s * BN * 2 + q * 16, a.scales + at, 16);
            if (a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32) cp_async16(ss + Sh::S_BYTES + s * BN * 2 + q * 16, a.scales_lo + at, 16);
            if (ZP && q < BN / 16) {
                size_t zt = (size_t)group_of_step(c * 4 + s, a.inv_gs16) * a.n_pad + n0 + q * 16;
                cp_async16(ss + 2 * Sh::S_BYTES + s * BN + q * 16, a.zeros + zt, 16);
            }
        }
    };

    float acc[NT][MTW][4], cg[NT][MTW][4];
#pragma unroll
    for (int i = 0; i < NT; i++)
#pragma unroll
        for (int mt = 0; mt < MTW; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][mt][e] = cg[i][mt][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (c_begin + s < c_end) load_stage(c_begin + s, s);
        cp_async_commit();
    }
    int rem = a.gs16 - (c_begin * 4) % a.gs16; /* k16 steps until the current group ends */
    for (int c = c_begin; c < c_end; c++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); /* stage c landed for everyone; stage c-1's buffer is free */
        {
            int cn = c + STAGES - 1;
            if (cn < c_end) load_stage(cn, (cn - c_begin) % STAGES);
            cp_async_commit();
        }
        const unsigned char *st = smem + ((c - c_begin) % STAGES) * Sh::STAGE;
        const unsigned char *sx = st + Sh::W_BYTES, *ss = sx + Sh::X_BYTES;
        uint4 wv[NT];
#pragma unroll
        for (int i = 0; i < NT; i++) wv[i] = *reinterpret_cast<const uint4 *>(st + ((wn * NT + i) * 32 + lane) * 16);
        uint32_t add_g[NT], add_g8[NT];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int slot = nslot == 1 ? 0 : j;
            if (j == 0 || nslot != 1)
#pragma unroll
                for (int i = 0; i < NT; i++) {
                    uint32_t z16 =
                        ZP ? *reinterpret_cast<const uint16_t *>(ss + 2 * Sh::S_BYTES + slot * BN + (wn * NT + i) * 16 + 2 * g)
                           : 0u;
                    zero_consts<A, ZP>(z16, add_g[i], add_g8[i]);
                }
            uint2 xb[MTW];
#pragma unroll
            for (int mt = 0; mt < MTW; mt++)
                xb[mt] = *reinterpret_cast<const uint2 *>(sx + ((wm * MTW + mt) * 8 + g) * TC_XS + (16 * j + 4 * t) * 2);
#pragma unroll
            for (int i = 0; i < NT; i++) {
                uint32_t w = j == 0 ? wv[i].x : j == 1 ? wv[i].y : j == 2 ? wv[i].z : wv[i].w;
                uint32_t af[4];
                A::dequant(w, add_g[i], add_g8[i], af);
#pragma unroll
                for (int mt = 0; mt < MTW; mt++) A::mma(cg[i][mt], af, xb[mt].x, xb[mt].y);
            }
            --rem;
            if (rem == 0 || (c == c_end - 1 && j == 3)) {
                if (rem == 0) rem = a.gs16;
#pragma unroll
                for (int i = 0; i < NT; i++) {
                    int off = slot * BN * 2 + (wn * NT + i) * 32 + 4 * g; /* word g: rows (g, g+8) */
                    uint32_t hi = *reinterpret_cast<const uint32_t *>(ss + off);
                    uint32_t lo = a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32 ? *reinterpret_cast<const uint32_t *>(ss + Sh::S_BYTES + off) : 0u;
                    float s_g = scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt);
                    float s_g8 = scale_value(hi >> 16, lo >> 16, a.scale_fmt);
#pragma unroll
                    for (int mt = 0; mt < MTW; mt++) {
                        acc[i][mt][0] += s_g * cg[i][mt][0];
                        acc[i][mt][1] += s_g * cg[i][mt][1];
                        acc[i][mt][2] += s_g8 * cg[i][mt][2];
                        acc[i][mt][3] += s_g8 * cg[i][mt][3];
#pragma unroll
                        for (int e = 0; e < 4; e++) cg[i][mt][e] = 0.0f;
                    }
                }
            }
        }
    }
    cp_async_wait<0>();
    __syncthreads();

    /* Epilogue: fp32 tile in shared memory (m-major), split-K sum over the cluster in rank
     * order, bias, one rounding, 16-byte stores. */
    float *sc = reinterpret_cast<float *>(smem);
    constexpr int LD = BN + 4; /* (BN+4) % 32 == 4: the fragment writes hit 32 distinct banks */
#pragma unroll
    for (int i = 0; i < NT; i++)
#pragma unroll
        for (int mt = 0; mt < MTW; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int nl = (wn * NT + i) * 16 + g + 8 * (e >> 1), ml = (wm * MTW + mt) * 8 + 2 * t + (e & 1);
                sc[ml * LD + nl] = acc[i][mt][e];
            }
    __syncthreads();
    tile_store<A, BN, LD, TC_THREADS>(a, sc, BM, m0, n0, S, split, tid);
}

/*
 * Split-K choice: with T tiles and `slots` resident blocks, a split s gives waves of
 * ceil(T*s/slots); pick the s (<= 8, >= 4 chunks each) with the best filled fraction of the
 * last wave, less 0.03 per extra split: each costs a cluster reduction of the tile, so a split must fill
 * the waves at least 3 points better to be taken (a tie-breaker set in v1, not swept).
 */
static inline int tc_choose_ksplit(int tiles, int slots, int kc) {
    if (tiles >= 4 * slots) return 1;
    int best = 1;
    double best_score = -1.0;
    for (int s = 1; s <= 8 && s <= (kc / 4 > 1 ? kc / 4 : 1); s++) {
        long long work = (long long)tiles * s;
        long long waves = (work + slots - 1) / slots;
        double score = (double)work / (double)(waves * slots) - 0.03 * (s - 1);
        if (score > best_score) best_score = score, best = s;
    }
    return best;
}

template <class A, bool ZP, int BM, int BN, int WN, int WM>
static cudaError_t tc_launch(const mpl_cuda_w4a16_args *a, cudaStream_t stream) {
    using Sh = TcShape<BM, BN, WN, WM, TC_STAGES>;
    auto kern = w4a16_tc<A, ZP, BM, BN, WN, WM, TC_STAGES>;
    static KernelSetup setup;
    int occ = 0;
    cudaError_t e = setup_kernel(kern, a->device, TC_THREADS, Sh::SMEM, setup, &occ);
    if (e != cudaSuccess) return e;
    int tiles_m = (a->m - 1) / BM + 1, tiles_n = (a->n + BN - 1) / BN; /* m >= 1 (layer.c returns before m = 0) */
    if ((long long)tiles_m * tiles_n > 0x7fffffffLL) return cudaErrorInvalidConfiguration; /* grid x limit */
    int tiles = tiles_m * tiles_n, kc = a->k_pad / MPL_CUDA_W4A16_KC;
    int ksplit = a->ksplit > 0 ? a->ksplit : tc_choose_ksplit(tiles, a->sms * occ, kc);
    if (ksplit > 8) ksplit = 8;
    if (ksplit > kc) ksplit = kc;
    if (ksplit < 1 || a->cc < 90) ksplit = 1;
    int nslot = a->gs16 % 4 == 0 ? 1 : 4;
    return launch_ksplit(kern, (unsigned)tiles, ksplit, TC_THREADS, Sh::SMEM, stream, *a, tiles_m, tiles_n, nslot);
}

/*
 * Tile (BM tokens x BN rows of N, warps WN x WM) by m, measured on the H200 (bench/cuda/NOTES.md):
 *   m <= 32: 256 rows of N per block, so x is re-read from L2 at most 4 m / 256 times the weight bytes;
 *   m = 33..64: 128 x 64 tiles, one row tile per warp, two blocks per SM (v5: 70B down 202.8 vs 225.3 us
 *     with 256 x 64; m = 16/32 much worse with 128-row tiles, 201 vs 112 us on 70B gate_up m = 16);
 *   m > 64: 256 x 64 (v2: beat both 128 x 128 layouts at every large m, 286 vs 269 / 244 TFLOP/s on 70B o,
 *     m = 4096; those were removed, git tag exp/cuda-stream-v7).
 */
template <class A, bool ZP>
static cudaError_t tc_dispatch_zp(const mpl_cuda_w4a16_args *a, cudaStream_t s) {
    if (a->m <= 16) return tc_launch<A, ZP, 16, 256, 8, 1>(a, s);
    if (a->m <= 32) return tc_launch<A, ZP, 32, 256, 8, 1>(a, s);
    if (a->m <= 64) return tc_launch<A, ZP, 64, 128, 8, 1>(a, s);
    return tc_launch<A, ZP, 64, 256, 8, 1>(a, s);
}

template <class A>
static cudaError_t tc_dispatch(const mpl_cuda_w4a16_args *a, cudaStream_t s) {
    return a->zeros ? tc_dispatch_zp<A, true>(a, s) : tc_dispatch_zp<A, false>(a, s);
}

} // namespace cuda_w4a16

#endif

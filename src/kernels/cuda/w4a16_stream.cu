/*
 * w4a16_stream.cu -- the "stream" decode path of cuda_w4a16 (m <= 16, compute capability 9.0 and newer).
 *
 * Decode is a read stream: every byte of the packed weights once, as close to the memory bandwidth as
 * possible. The skinny path (w4a16_skinny.cu) has every lane of every warp copy 16 bytes at a time with
 * cp.async and streams ~3.2 TB/s on the H200; a bulk-copy ring on one SM streams 4.2 TB/s on the same
 * windows (bench/cuda/bw_probe.cu). This path is built around that ring:
 *
 *  - Persistent: one block per SM (grid = the SMs, rounded down to the cluster size), each with a
 *    contiguous share of the layer, so no block starts or drains mid-layer.
 *  - The layer is cut into row groups of NR 16-row tiles (NR = 4, 2 or 1). A cluster of C blocks (C = 1,
 *    2, 4, 8) owns a contiguous run of row groups; block r of the cluster takes K chunks
 *    [KC r / C, KC (r + 1) / C) of every one (split-K, so that few row groups still fill the SMs).
 *  - A producer warp fills a ring of "super-stages": per super-stage NR bulk copies (cp.async.bulk, one
 *    16 KB run of 32 chunks of one row tile each -- the packed layout keeps a row tile's chunks
 *    contiguous) plus one small bulk copy per group for the scales/zeros those chunks need, all on the
 *    stage's mbarrier. Copies of >= 16 KB are what the probe needs to reach the ceiling.
 *  - x (this block's K range, m rows) is copied once into shared memory, rows padded by 32 bytes so the
 *    8-byte fragment loads are conflict-free; every row tile of a row group reuses the fragments.
 *  - CW consumer warps (16 for m <= 8, 8 above): warp w takes a contiguous 1/CW of each super-stage's
 *    chunks for all NR row tiles; MMA y^T = W x^T in the offset form of the skinny path (w4a16_common.cuh: the MMA sums
 *    exact (OFF + code) * x, an all-ones MMA sums x, the fold removes (OFF + zero) * sum(x) and applies the
 *    group scale in fp32) -- the same arithmetic, so the same error bound, no weight rounding.
 *  - Row group end: the CW warps' partial sums reduce through shared memory in warp order; with C > 1
 *    each block leaves its partial in one of two slots and arrives on the owner block's "ready" mbarrier
 *    (owner = row group index mod C); the owner sums the C slots in rank order over distributed shared
 *    memory, adds the bias, rounds once and stores, then frees the slots (remote arrive on each block's
 *    "free" mbarrier). Fixed order everywhere: deterministic; no workspace, no atomics, no grid sync.
 *
 * Group sizes that are multiples of 64 (and one group), where every 64-channel chunk lies in one group.
 * Layout: docs/layouts/cuda_w4a16.md (unchanged).
 *
 * Status: MPL_CUDA_W4A16_PATH=stream only. Measured on the H200 (bench/cuda/NOTES.md v7): at best as fast as
 * the skinny path (70B gate_up m = 1: 75.5-77 us with NR 4, C 1; skinny 76), slower with smaller row groups
 * (NR 1: 155 us, whatever the ring depth or the number of consumer warps) and with clusters (C 2: 100-150 us).
 * Both kernels are limited by the consumers' integer/logic pipe (ncu: "math pipe throttle" the top stall,
 * 119 LOP3 + 66 SHF per chunk body for the bf16 offset dequant and bookkeeping), not by bytes in flight.
 */
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "w4a16_common.cuh"

namespace cw4 {

/* Consumer warps: 16 for m <= 8 (one 8-token MMA tile; <= 120 registers), 8 for m = 9..16 (two tiles, ~155
 * registers). The measured limit at m = 1 is the consumers' latency, not the bytes in flight (NOTES.md v7). */
template <int MT>
struct StWarps {
    static constexpr int CW = MT == 1 ? 16 : 8;
    static constexpr int CONSUMERS = CW * 32;
    static constexpr int THREADS = CONSUMERS + 32; /* + the producer warp */
};
constexpr int ST_SC = 32;                    /* chunks per row tile per super-stage: 16 KB copies */
constexpr int ST_MAX_STAGES = 12;

/* Shared-memory image (byte offsets from a 128-aligned base): barriers | x | scratch | slots | ring */
template <int NR, int MT>
struct StShape {
    static constexpr int W = NR * ST_SC * 512;                 /* weights of one super-stage */
    static constexpr int OFF_S = W;                            /* scales: [group - g0][NR x 16] 16-bit */
    static constexpr int OFF_L = OFF_S + ST_SC * NR * 32;      /* scales_lo (f32 scales) */
    static constexpr int OFF_Z = OFF_L + ST_SC * NR * 32;      /* zeros: [group - g0][NR x 16] bytes */
    static constexpr int STAGE = OFF_Z + ST_SC * NR * 16;
    static constexpr int SCRATCH = 8 * NR * MT * 4 * 32 * 4;   /* [warp < 8][NR MT 4][lane] floats */
    static constexpr int SLOT = NR * 16 * 16 * 4;              /* [NR x 16 rows][16 tokens] floats */
    static constexpr int BARS = 256;                           /* full[12], empty[12], ready[2], free[2], xbar */
    static_assert(STAGE % 128 == 0, "stage alignment");
};

/* The plan the host picked (mpl_cw4_launch_stream). */
struct StPlan {
    int C;        /* blocks per cluster along K */
    int ncl;      /* clusters */
    int rg_count; /* row groups of NR tiles covering n */
    int stages;   /* super-stages in the ring */
    int xs;       /* x row stride in shared memory, bytes */
    int x_bytes;  /* x region, bytes (multiple of 128) */
};

__device__ __forceinline__ uint2 lds64(uint32_t addr) {
    uint2 v;
    asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
    return v;
}
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}
template <int N>
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;" ::"n"(N) : "memory"); }

template <class A, bool ZP, int MT, int NR>
__global__ void __launch_bounds__(StWarps<MT>::THREADS, 1) cw4_stream(const mpl_cw4_args a, const StPlan p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    using Sh = StShape<NR, MT>;
    constexpr int CW = StWarps<MT>::CW, ST_CONSUMERS = StWarps<MT>::CONSUMERS;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    unsigned char *smem = smem_raw;
    const uint32_t base = smem_addr(smem);
    const uint32_t bar_full = base, bar_empty = base + 8 * ST_MAX_STAGES, bar_ready = base + 16 * ST_MAX_STAGES,
                   bar_free = bar_ready + 16, bar_x = bar_free + 16;
    const uint32_t xs_base = base + Sh::BARS;
    float *scratch = reinterpret_cast<float *>(smem + Sh::BARS + p.x_bytes);
    float *slots = reinterpret_cast<float *>(smem + Sh::BARS + p.x_bytes + Sh::SCRATCH);
    const uint32_t ring = base + Sh::BARS + p.x_bytes + Sh::SCRATCH + 2 * Sh::SLOT;
    unsigned char *ring_g = smem + Sh::BARS + p.x_bytes + Sh::SCRATCH + 2 * Sh::SLOT;

    /* launch_ksplit: blockIdx.x the cluster, blockIdx.y the rank in it (clusters of C blocks along y) */
    const int C = p.C, rank = (int)blockIdx.y, cl = (int)blockIdx.x;
    const int KC = a.k_pad >> 6;
    const int c0 = (int)((long long)KC * rank / C), c1 = (int)((long long)KC * (rank + 1) / C);
    const int rg0 = (int)((long long)p.rg_count * cl / p.ncl), rg1 = (int)((long long)p.rg_count * (cl + 1) / p.ncl);
    const int nss_rg = (c1 - c0 + ST_SC - 1) / ST_SC; /* super-stages per row group */
    const int gch = a.gs16 >> 2;                      /* chunks per group (huge with one group) */
    const int S = p.stages;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) mbar_init(bar_full + 8 * s, 1), mbar_init(bar_empty + 8 * s, CW);
        mbar_init(bar_ready, C), mbar_init(bar_ready + 8, C);
        mbar_init(bar_free, 1), mbar_init(bar_free + 8, 1);
        mbar_init(bar_x, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    /* x's K tail (past k, or past this block's range inside k_pad) as zeros, by the consumers */
    const int kb = c0 * 64, kx = min(a.k, c1 * 64); /* x columns [kb, kx) come from memory */
    const int xrow = (c1 - c0) * 64;                /* columns per row in shared memory */
    if (warp < CW) {
        const int tail = xrow - max(kx - kb, 0); /* elements, a multiple of 8 */
        for (int v = threadIdx.x; v < a.m * (tail / 8); v += ST_CONSUMERS) {
            int r = v / (tail / 8), q = v % (tail / 8);
            *reinterpret_cast<uint4 *>(smem + Sh::BARS + r * p.xs + (xrow - tail + q * 8) * 2) = make_uint4(0, 0, 0, 0);
        }
    }
    if (C > 1)
        cluster_sync(); /* barriers initialized cluster-wide before any remote arrive */
    else
        __syncthreads();

    if (warp == CW) {
        /* ---------------- producer ---------------- */
        const unsigned char *wq = reinterpret_cast<const unsigned char *>(a.qweight);
        if (lane == 0 && kx > kb) {
            mbar_expect_tx(bar_x, (uint32_t)(a.m * (kx - kb) * 2));
            for (int r = 0; r < a.m; r++)
                bulk_g2s(xs_base + r * p.xs, (const uint16_t *)a.x + (size_t)r * a.k + kb, (uint32_t)((kx - kb) * 2), bar_x);
        } else if (lane == 0) {
            mbar_arrive(bar_x);
        }
        int q = 0;
        uint32_t ph = 0;
        int issued = 0;
        for (int rg = rg0; rg < rg1; rg++) {
            const int nt0 = rg * NR;
            for (int cs = c0; cs < c1; cs += ST_SC) {
                const int ce = min(cs + ST_SC, c1), nch = ce - cs;
                if (issued >= S) mbar_wait(bar_empty + 8 * q, ph ^ 1);
                const uint32_t st = ring + q * Sh::STAGE;
                const uint32_t full = bar_full + 8 * q;
                /* the groups of chunks [cs, ce): per group NR x 32 bytes of scales, the same of scales_lo (f32
                 * scales), NR x 16 bytes of zeros -- contiguous in their planes, so one bulk copy each, issued by
                 * lane gi for group g0 + gi. Bulk copies only: a cp.async + cp.async.mbarrier.arrive here made the
                 * producer wait for each stage's scales (measured: one stage in flight, NOTES.md v7). */
                const int g0 = cs / gch, ng = (ce - 1) / gch - g0 + 1; /* ng <= ST_SC <= 32 */
                const int gbytes = NR * 32 * (a.scale_fmt == 2 ? 2 : 1) + (ZP ? NR * 16 : 0);
                if (lane == 0) mbar_expect_tx(full, (uint32_t)(NR * nch * 512 + ng * gbytes));
                __syncwarp();
                if (lane < NR)
                    bulk_g2s(st + lane * ST_SC * 512, wq + ((size_t)(nt0 + lane) * KC + cs) * 512, (uint32_t)(nch * 512), full);
                if (lane < ng) {
                    const size_t row0 = (size_t)(g0 + lane) * a.n_pad + (size_t)nt0 * 16;
                    bulk_g2s(st + Sh::OFF_S + lane * NR * 32, a.scales + row0, NR * 32, full);
                    if (a.scale_fmt == 2) bulk_g2s(st + Sh::OFF_L + lane * NR * 32, a.scales_lo + row0, NR * 32, full);
                    if (ZP) bulk_g2s(st + Sh::OFF_Z + lane * NR * 16, a.zeros + row0, NR * 16, full);
                }
                issued++;
                if (++q == S) q = 0, ph ^= 1;
            }
        }
    } else {
        /* ---------------- consumers ---------------- */
        const int g = lane >> 2, t = lane & 3;
        /* this lane's x fragment rows: token mt*8+g (zeros past m) */
        uint32_t xrow_addr[MT];
        bool xrow_ok[MT];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            xrow_ok[mt] = mt * 8 + g < a.m;
            xrow_addr[mt] = xs_base + (mt * 8 + g) * p.xs + 8 * t;
        }
        mbar_wait(bar_x, 0);
        int q = 0;
        uint32_t ph = 0;
        for (int rg = rg0; rg < rg1; rg++) {
            const int j = rg - rg0; /* row group index within the cluster's run */
            float acc[NR][MT][4];
#pragma unroll
            for (int i = 0; i < NR; i++)
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[i][mt][e] = 0.0f;
            for (int ss = 0; ss < nss_rg; ss++) {
                const int cs = c0 + ss * ST_SC, ce = min(cs + ST_SC, c1), nch = ce - cs;
                const int per_w = (nch + CW - 1) / CW;
                const int wa = cs + warp * per_w, wb = min(wa + per_w, ce); /* this warp's chunks */
                mbar_wait(bar_full + 8 * q, ph);
                const uint32_t st = ring + q * Sh::STAGE;
                const int g0 = cs / gch;
                float cg[NR][MT][4], c1s[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        c1s[mt][e] = 0.0f;
#pragma unroll
                        for (int i = 0; i < NR; i++) cg[i][mt][e] = 0.0f;
                    }
                for (int c = wa; c < wb; c++) {
                    uint4 wv[NR];
#pragma unroll
                    for (int i = 0; i < NR; i++) wv[i] = lds128(st + (i * ST_SC + (c - cs)) * 512 + lane * 16);
                    const uint32_t xo = (uint32_t)(c - c0) * 128;
#pragma unroll
                    for (int jj = 0; jj < 4; jj++) {
                        uint2 xf[MT];
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) {
                            xf[mt] = make_uint2(0u, 0u);
                            if (xrow_ok[mt]) xf[mt] = lds64(xrow_addr[mt] + xo + 32 * jj);
                        }
                        offset_step<A, NR, MT>(cg, c1s, wv, jj, xf);
                    }
                    /* fold at the end of a group and at the end of this warp's run */
                    if ((c + 1) % gch == 0 || c + 1 == wb) {
                        const int gi = c / gch - g0;
#pragma unroll
                        for (int i = 0; i < NR; i++) {
                            const unsigned char *sg = ring_g + q * Sh::STAGE;
                            uint32_t hi = *reinterpret_cast<const uint32_t *>(sg + Sh::OFF_S + (gi * NR + i) * 32 + 4 * g);
                            uint32_t lo = 0u, zz = 0x0808u;
                            if (a.scale_fmt == 2) lo = *reinterpret_cast<const uint32_t *>(sg + Sh::OFF_L + (gi * NR + i) * 32 + 4 * g);
                            if (ZP) zz = *reinterpret_cast<const uint16_t *>(sg + Sh::OFF_Z + (gi * NR + i) * 16 + 2 * g);
                            fold_offset<A, MT>(acc[i], cg[i], c1s, hi, lo, zz, a.scale_fmt);
                        }
#pragma unroll
                        for (int mt = 0; mt < MT; mt++)
#pragma unroll
                            for (int e = 0; e < 4; e++) c1s[mt][e] = 0.0f;
                    }
                }
                __syncwarp();
                if (lane == 0) mbar_arrive(bar_empty + 8 * q);
                if (++q == S) q = 0, ph ^= 1;
            }

            /* ---- row group end: reduce the CW warps (fixed order) into slot j & 1 ---- */
            constexpr int R = NR * MT * 4;
            /* acc <-> the scratch row of warp sw (< 8): store, or add into acc */
            auto scratch_io = [&](int sw, bool add) {
#pragma unroll
                for (int i = 0; i < NR; i++)
#pragma unroll
                    for (int mt = 0; mt < MT; mt++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            float &cell = scratch[(sw * R + (i * MT + mt) * 4 + e) * 32 + lane];
                            if (add)
                                acc[i][mt][e] += cell;
                            else
                                cell = acc[i][mt][e];
                        }
            };
            if (CW > 8) { /* 16 warps through an 8-warp scratch: warp w + 8 adds into warp w first */
                if (warp >= 8) scratch_io(warp - 8, false);
                consumers_sync<ST_CONSUMERS>();
                if (warp < 8) scratch_io(warp, true);
                consumers_sync<ST_CONSUMERS>();
            }
            if (warp < 8) scratch_io(warp, false);
            const int sl = j & 1;
            /* the slot's previous user (row group j - 2) must have been read by its owner */
            if (C > 1 && j >= 2) mbar_wait<true>(bar_free + 8 * sl, (uint32_t)(((j >> 1) - 1) & 1));
            consumers_sync<ST_CONSUMERS>();
            float *slot = slots + sl * (Sh::SLOT / 4);
            for (int v = threadIdx.x; v < R * 32; v += ST_CONSUMERS) {
                const int r = v >> 5, l = v & 31;
                const int e = r & 3, mt = (r >> 2) % MT, i = (r >> 2) / MT;
                const int nl = i * 16 + (l >> 2) + 8 * (e >> 1), ml = mt * 8 + 2 * (l & 3) + (e & 1);
                if (ml >= a.m) continue;
                float s = 0.0f;
#pragma unroll
                for (int w = 0; w < 8; w++) s += scratch[(w * R + r) * 32 + l];
                slot[nl * 16 + ml] = s;
            }
            if (C > 1) asm volatile("fence.acq_rel.cluster;" ::: "memory");
            consumers_sync<ST_CONSUMERS>(); /* the slot is complete; the scratch is free again */
            const int owner = j % C;
            if (C > 1 && threadIdx.x == 0) mbar_arrive_remote(bar_ready + 8 * sl, owner);
            if (rank == owner) {
                if (C > 1) mbar_wait<true>(bar_ready + 8 * sl, (uint32_t)((C == 1 ? (j >> 1) : (j / C)) & 1));
                const int n0 = rg * NR * 16;
                for (int v = threadIdx.x; v < a.m * NR * 16; v += ST_CONSUMERS) {
                    const int ml = v / (NR * 16), nl = v % (NR * 16), n = n0 + nl;
                    if (n >= a.n) continue;
                    float s = 0.0f;
                    if (C > 1) {
                        for (int r = 0; r < C; r++) s += cluster_peer(slot, r)[nl * 16 + ml];
                    } else {
                        s = slot[nl * 16 + ml];
                    }
                    s += bias_value<A>(a.bias, n);
                    ((uint16_t *)a.y)[(size_t)ml * a.n + n] = A::from_float(s);
                }
                if (C > 1) {
                    consumers_sync<ST_CONSUMERS>(); /* every peer slot read */
                    if (threadIdx.x < C) mbar_arrive_remote(bar_free + 8 * sl, threadIdx.x);
                }
            }
        }
    }
    if (C > 1) cluster_sync(); /* no block leaves while a peer may still read its slots or arrive on it */
#else
    (void)a, (void)p;
#endif
}

template <int NR, int MT>
static int st_smem(const StPlan &p) {
    using Sh = StShape<NR, MT>;
    return Sh::BARS + p.x_bytes + Sh::SCRATCH + 2 * Sh::SLOT + p.stages * Sh::STAGE;
}

template <class A, bool ZP, int MT, int NR>
static cudaError_t st_launch(const mpl_cw4_args *a, const StPlan &p, int smem_optin, cudaStream_t stream) {
    /* opt in to the device's whole shared memory once: plans differ in size */
    static std::atomic<unsigned long long> opted{0};
    cudaError_t e = opt_in_smem(cw4_stream<A, ZP, MT, NR>, smem_optin, opted);
    if (e != cudaSuccess) return e;
    return launch_ksplit(cw4_stream<A, ZP, MT, NR>, (unsigned)p.ncl, p.C, StWarps<MT>::THREADS, st_smem<NR, MT>(p),
                         stream, *a, p);
}

/*
 * The plan: for NR in {4, 2, 1} and C in {1, 2, 4, 8}, the shared memory must hold the barriers, x (m rows
 * of this block's K range), the reduction scratch, two slots and at least two super-stages (up to 8);
 * among the plans that fit, the one with the least work on the busiest block (tiles of 512 bytes, plus
 * 8 tiles' worth per row group for its reduction), ties to larger NR (x reuse) and smaller C.
 */
struct StChoice {
    int nr;
    StPlan p;
    int smem_optin; /* the device's per-block shared memory limit (opt-in) */
};

/*
 * Clusters of C blocks (one block per SM: the plans use most of the shared memory) that can be resident at
 * once: a cluster must fit in one GPC, so on 132 SMs fewer than 132 / C clusters of 8 may fit, and a
 * cluster that waits for a second wave doubles the time. Queried once per device and C.
 */
static int st_max_clusters(const mpl_cw4_args *a, int C, int smem_max) {
    static std::atomic<int> cache[8][4];
    int dev = 0;
    if (C == 1 || cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 8) return a->sms / C;
    const int ci = C == 2 ? 1 : C == 4 ? 2 : 3;
    int n = cache[dev][ci].load(std::memory_order_relaxed);
    if (n > 0) return n;
    /* the launch shape of launch_ksplit: (clusters, C) blocks, clusters of C along y */
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[1];
    ksplit_config(cfg, attr, (unsigned)(a->sms / C), C, StWarps<1>::THREADS, smem_max, nullptr);
    static std::atomic<unsigned long long> opted{0};
    const auto kern = cw4_stream<ActBF16, false, 1, 4>;
    if (opt_in_smem(kern, smem_max, opted) != cudaSuccess ||
        cudaOccupancyMaxActiveClusters(&n, kern, &cfg) != cudaSuccess || n <= 0) {
        (void)cudaGetLastError(); /* clear: the plan just assumes every cluster fits */
        n = a->sms / C;
    }
    if (n > a->sms / C) n = a->sms / C;
    cache[dev][ci].store(n, std::memory_order_relaxed);
    return n;
}

template <int NR, int MT>
static bool st_fit(const mpl_cw4_args *a, int C, int smem_max, StPlan *out, double *cost) {
    const int KC = a->k_pad >> 6, ntiles = (a->n + 15) / 16;
    if (C > KC || a->sms < C) return false;
    StPlan p = {};
    p.C = C;
    p.ncl = st_max_clusters(a, C, smem_max);
    p.rg_count = (ntiles + NR - 1) / NR;
    const int kcr = (KC + C - 1) / C; /* most chunks of one block */
    p.xs = kcr * 128 + 32;
    p.x_bytes = (a->m * p.xs + 127) / 128 * 128;
    using Sh = StShape<NR, MT>;
    const int fixed = Sh::BARS + p.x_bytes + Sh::SCRATCH + 2 * Sh::SLOT;
    int stages = (smem_max - fixed) / Sh::STAGE;
    if (stages > ST_MAX_STAGES) stages = ST_MAX_STAGES;
    if (stages < 2) return false;
    p.stages = stages;
    const long long rg_per = (p.rg_count + p.ncl - 1) / p.ncl;
    /* tiles on the busiest block, 8 tiles' worth per row-group reduction, and a small charge for the x
     * fragment reads from shared memory (per weight tile MT x 1 KB, shared by the NR row tiles) */
    *cost = (double)rg_per * ((double)NR * kcr * (1.0 + 0.1 * MT / NR) + 8.0);
    /* bytes in flight: the stage being consumed is not; below ~96 KB the stream slows (bench/cuda/bw_probe.cu) */
    const double inflight = (double)(stages - 1) * Sh::W;
    if (inflight < 96.0 * 1024) *cost *= 96.0 * 1024 / inflight;
    /* clusters: measured 1.3-2x slower than one block per row group wherever both fit (NOTES.md v7: the
     * row-group handshakes and fewer resident clusters); used when x does not fit otherwise */
    if (C > 1) *cost *= 1.5;
    *out = p;
    return true;
}

template <int MT>
static bool st_choose(const mpl_cw4_args *a, int smem_max, int force_c, int nr, StChoice *ch) {
    double best = -1;
    for (int C = 1; C <= 8; C *= 2) {
        if (force_c > 0 && C != force_c) continue;
        StPlan p;
        double cost;
        if ((nr == 0 || nr == 4) && st_fit<4, MT>(a, C, smem_max, &p, &cost) && (best < 0 || cost < best))
            best = cost, ch->nr = 4, ch->p = p;
        if ((nr == 0 || nr == 2) && st_fit<2, MT>(a, C, smem_max, &p, &cost) && (best < 0 || cost < best))
            best = cost, ch->nr = 2, ch->p = p;
        if ((nr == 0 || nr == 1) && st_fit<1, MT>(a, C, smem_max, &p, &cost) && (best < 0 || cost < best))
            best = cost, ch->nr = 1, ch->p = p;
    }
    static const bool debug = getenv("MPL_CUDA_W4A16_STREAM_DEBUG") != nullptr; /* read once */
    if (best >= 0 && debug)
        fprintf(stderr, "stream plan: m %d k %d n %d: NR %d C %d clusters %d row groups %d stages %d x %d B smem %d B\n",
                a->m, a->k, a->n, ch->nr, ch->p.C, ch->p.ncl, ch->p.rg_count, ch->p.stages, ch->p.x_bytes,
                ch->nr == 4 ? st_smem<4, MT>(ch->p) : ch->nr == 2 ? st_smem<2, MT>(ch->p) : st_smem<1, MT>(ch->p));
    return best >= 0;
}

template <class A, bool ZP, int MT>
static cudaError_t st_dispatch(const mpl_cw4_args *a, const StChoice &ch, cudaStream_t s) {
    switch (ch.nr) {
    case 4: return st_launch<A, ZP, MT, 4>(a, ch.p, ch.smem_optin, s);
    case 2: return st_launch<A, ZP, MT, 2>(a, ch.p, ch.smem_optin, s);
    default: return st_launch<A, ZP, MT, 1>(a, ch.p, ch.smem_optin, s);
    }
}

template <class A>
static cudaError_t st_act(const mpl_cw4_args *a, const StChoice &ch, cudaStream_t s) {
    const bool zp = a->zeros != nullptr, two = a->m > 8;
    if (zp) return two ? st_dispatch<A, true, 2>(a, ch, s) : st_dispatch<A, true, 1>(a, ch, s);
    return two ? st_dispatch<A, false, 2>(a, ch, s) : st_dispatch<A, false, 1>(a, ch, s);
}

} // namespace cw4

/* mpl_cw4_stream_applies on the launch arguments (gs16 % 4 == 0: groups of 64k channels, or one group) */
static int stream_ok(const mpl_cw4_args *a) {
    return a->cc >= 90 && a->m >= 1 && a->m <= MPL_CW4_SKINNY_MAX_M && a->gs16 % 4 == 0;
}

extern "C" int mpl_cw4_launch_stream(const mpl_cw4_args *a, void *stream) {
    if (!stream_ok(a)) return (int)cudaErrorNotSupported;
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess) return (int)e;
    /* MPL_CUDA_W4A16_KSPLIT forces the cluster size (1, 2, 4 or 8) where a plan with it fits */
    const int force_c = a->ksplit == 1 || a->ksplit == 2 || a->ksplit == 4 || a->ksplit == 8 ? a->ksplit : 0;
    /* MPL_CUDA_W4A16_STREAM_NR forces the row group (1, 2 or 4); forced choices that do not fit are dropped */
    const int force_nr = a->stream_nr == 1 || a->stream_nr == 2 || a->stream_nr == 4 ? a->stream_nr : 0;
    cw4::StChoice ch = {};
    bool ok = false;
    const int tries[3][2] = {{force_c, force_nr}, {0, force_nr}, {0, 0}};
    for (int t = 0; t < 3 && !ok; t++)
        ok = a->m > 8 ? cw4::st_choose<2>(a, optin, tries[t][0], tries[t][1], &ch)
                      : cw4::st_choose<1>(a, optin, tries[t][0], tries[t][1], &ch);
    if (!ok) return (int)cudaErrorNotSupported;
    ch.smem_optin = optin;
    cudaStream_t s = (cudaStream_t)stream;
    return (int)(a->act == 1 ? cw4::st_act<cw4::ActF16>(a, ch, s) : cw4::st_act<cw4::ActBF16>(a, ch, s));
}

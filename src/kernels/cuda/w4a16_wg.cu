/*
 * w4a16_wg.cu -- path cuda_w4a16:wg (warpgroup wgmma, sm_90a): a tiled GEMM over the same packed buffer as
 * the skinny and mma.sync paths. Compiled for sm_90a only (CMakeLists.txt); its path row runs it on compute
 * capability 9.0 only (min_cc = max_cc = 90).
 *
 * "Swap AB" as everywhere in this kernel: y^T = W x^T, so the weights are wgmma's A operand
 * (64 rows of N per instruction, from registers) and x is B (the tokens are wgmma's N).
 *
 *  - x is first rearranged by w4a16_xtile into the exact shared-memory image of each B tile
 *    (BT tokens x 64 channels, 128-byte rows, 128-byte swizzle: 16-byte unit u of row r at
 *    u ^ (r % 8), and the layout's column order inside a k16 step: channel pair 2t at MMA pair t,
 *    pair 2t+1 at pair t+4), zero-padded past M and K. Every stage is then three or four bulk
 *    copies (the async proxy: no proxy fence before wgmma reads them): the x tile, the chunk of all
 *    R/16 weight tiles as ONE 2D tensor copy (tensor map over the packed weights: rows of 16-row
 *    tiles, KC 512-byte chunks each), the group scales (and zeros). Few, large requests: with one
 *    512-byte request per weight tile the copy engine's outstanding requests, not DRAM, set the pace.
 *  - Block: WG_NWG = 2 consumer warpgroups + one producer warpgroup whose first thread fills a
 *    STAGES-deep ring (per 64-channel chunk: the x tile, the weights as one 2D tensor copy, the
 *    group scales and zeros), each stage completing on its
 *    "full" mbarrier; consumer warps release a stage on its "empty" mbarrier once the wgmmas that
 *    read it are complete. In the SPLIT form the producer warpgroup's second warp splits each stage's f16 scales into
 *    the bf16 halves the consumers multiply by (scale_split, the stage's "split" mbarrier). setmaxnreg moves the
 *    producer's registers to the consumers (WgRegs).
 *  - Consumer warpgroup h owns WG_MW = 2 sub-tiles of 64 rows of N (R = 64 WG_NWG WG_MW = 256 rows per block);
 *    warp q of it holds rows 16q .. 16q+15 of each: one 16-row tile of the packed layout, whose
 *    per-lane 16-byte piece of a 64-channel chunk is the register-A fragment of four k16 steps.
 *  - FOLD (mpl_cuda_w4a16_wg_exact: group size a multiple of 64, or one group; m <= 32): the wgmmas sum
 *    exact integer weights (code - zero) times x per group into accg0 / accg1 (by group parity); a group's
 *    sums are scaled in fp32 and added to acc one chunk later, when its wgmmas are complete:
 *    the same arithmetic as the tc and skinny paths. Otherwise each weight is dequantized to
 *    round16((code - zero) * scale) -- the dq path's rounded weight, bit for bit (a zero weight's
 *    sign aside) -- with one fma per pair when the scales are in the activation's own type (S16), two when bf16
 *    activations meet f16 scales (SPLIT: s = hi + lo, hi = bf16(s), lo exact in bf16, so
 *    fma(v, hi, v * lo) rounds the exact product once), else through fp32 (F32_ONE / F32); the 16-bit forms
 *    take layers whose 64-channel chunks each lie in one group and read a chunk's scale constants once.
 *  - wgmma groups are committed per chunk and waited one chunk behind, so the fragments of two
 *    chunks are live. (Two groups per chunk, waited two behind, lost: 2-10% slower, H100 v27.)
 *  - Two forms of one kernel template (SK): the split-K form (path wg) runs a block per tile and K range,
 *    split-K through a cluster and the tc path's epilogue; the stream-K form (path wg-streamk, rounded
 *    weights, BT 64 / 128) runs a persistent grid of G <= SMs blocks (wg_plan): whole tiles in data-parallel
 *    waves first (block b takes tiles b, b + G, ...), then the chunks of the remaining tiles split evenly over
 *    the G blocks. A block runs its units (tile, chunk range: wg_unit) back to back through one ring (the
 *    producer runs ahead into the next unit) in ONE chunk loop. A unit that covers a tile's whole K writes y
 *    from the accumulators; a partial one stores its fp32 tile to scratch, and the tile's last block to
 *    arrive (an atomic counter per tile, zeroed by w4a16_xtile) sums all parts in the order of K
 *    (deterministic: the same bits whichever block arrives last) and writes y.
 *  - Layer forms beside 4-bit codes: 8-bit (PL = 2: a stage holds both planes' chunks), 2-bit halves (HV: a stage holds
 *    a packed chunk and its two x tiles) and 3-bit thirds (TH: a stage holds a run of three packed chunks and its four x
 *    tiles, and the ring counts runs: four chunk steps per stage, the fourth chunk's codes gathered from the three
 *    blocks' bit 3s; docs/layouts/cuda_w4a16.md).
 */
#include <atomic>
#include <cstring>
#include <mutex>

#include <cuda.h> /* CUtensorMap (the map is encoded through the runtime's driver entry point: no libcuda link) */
#include <cudaTypedefs.h>

#include "w4a16_common.cuh"
#include "w4a16_wg_mma.cuh"

namespace cuda_w4a16 {

/* Block shape: WG_NWG consumer warpgroups of WG_MW 64-row sub-tiles each = 256 rows of N, the weight tensor
 * map's box (16 row tiles). The one alternative measured, four warpgroups of one sub-tile, was 2-4% faster at
 * m <= 32 (where tc runs by default) and 2-7% slower at m = 64 (bench/cuda/NOTES.md v6): removed, git tag
 * exp/cuda-stream-v7. */
constexpr int WG_NWG = 2, WG_MW = 2;

/* WG_NWG consumer warpgroups + the producer warpgroup (one thread of it works). Registers per thread:
 * ENTRY = 65536 / threads at entry; the producer gives most of its share to the consumers
 * (setmaxnreg: 128 PRODUCER + 128 WG_NWG CONSUMER <= ENTRY x threads), and both return to ENTRY for the epilogue. */
struct WgRegs {
    static constexpr int CONSUMERS = WG_NWG * 128, THREADS = CONSUMERS + 128;
    static constexpr int ENTRY = 65536 / THREADS / 8 * 8;
    /* the producer thread only computes copy addresses: 40, as CUTLASS's warp-specialized sm90 GEMMs
     * (LoadRegisterRequirement), leaves the consumers 232 each */
    static constexpr int PRODUCER = 40;
    /* setmaxnreg.inc waits until the block's own pool (ENTRY x THREADS, fixed at launch) has the registers:
     * a request beyond it never returns */
    static constexpr int CONSUMER = (ENTRY * THREADS - 128 * PRODUCER) / CONSUMERS / 8 * 8;
    static_assert(128 * PRODUCER + CONSUMERS * CONSUMER <= ENTRY * THREADS && CONSUMER >= ENTRY, "register split");
};

/* PL: planes per weight, 1 (4-bit codes) or 2 (8-bit layers: the low- and high-nibble plane's chunks of the same
 * channels in one stage, docs/layouts/cuda_w4a16.md "8-bit: two planes") */
/* HV: a halves layer (2-bit, two x chunks per packed chunk): a stage carries the two x tiles of the packed chunk */
/* TH: a thirds layer (3-bit, four x chunks per run of three packed chunks): a stage carries the run (its three packed
 * chunks' blocks) and the four x tiles; "chunk" c of the ring is then run c */
template <int BT, int STAGES, int PL = 1, bool HV = false, bool TH = false>
struct WgShape {
    static constexpr int R = WG_NWG * WG_MW * 64; /* rows of N per block */
    static constexpr int B_BYTES = BT * 128;  /* one x tile (swizzled), a multiple of 1024 */
    /* the stage's x tiles (halves: chunks 2c, 2c + 1; thirds: 4c .. 4c + 3) */
    static constexpr int X_BYTES = (TH ? 4 : HV ? 2 : 1) * B_BYTES;
    /* per plane (thirds: per packed chunk of the run) R / 16 blocks of 512 bytes (low plane, or packed chunk 3c, first) */
    static constexpr int W_BYTES = (TH ? 3 : PL) * R * 32;
    static constexpr int S_BYTES = 4 * R * 2; /* four slots (k16 steps) of R 16-bit scales */
    static constexpr int Z_BYTES = PL * 4 * R; /* per plane four slots of R zero bytes (low plane first) */
    static constexpr int STAGE = (X_BYTES + W_BYTES + 2 * S_BYTES + Z_BYTES + 1023) / 1024 * 1024;
    /* The SPLIT form's scales split into bf16 halves (scale_split in the kernel): 8 bytes per f16 scale word, the slots
     * as the scales', in the region of the fp32 scales' low halves (SPLIT runs f16 scales only: the copy leaves it) */
    static constexpr int SP_OFF = X_BYTES + W_BYTES + S_BYTES;
    static_assert((TH ? 2 : 1) * R * 4 <= S_BYTES, "the split scales of a stage's slots");
    static constexpr int LD = R + 4; /* fp32 epilogue tile row (conflict-free fragment writes) */
    static constexpr int C_BYTES = BT * LD * 4;
    /* stream-K: a partial tile in scratch, per consumer thread its MW x BT / 2 accumulators as float4 runs */
    static constexpr int PART = WG_NWG * 128 * WG_MW * BT / 2;
    /* 1024 alignment slack + 1024 for the mbarriers + the ring (the epilogue tile reuses it) */
    static constexpr int SMEM = 2048 + (STAGES * STAGE > C_BYTES ? STAGES * STAGE : C_BYTES);
    static_assert(BT % 8 == 0 && STAGES >= 2 && STAGES <= 64 && (PL == 1 || PL == 2) && !(HV && PL == 2) &&
                      !(TH && (HV || PL == 2)),
                  "tile");
    static_assert(SMEM <= 227 * 1024, "a block's opt-in shared memory");
    static_assert(MPL_CUDA_W4A16_N_ALIGN % R == 0, "a block's rows of N stay inside n_pad (no bounds checks)");
};

/* mbarriers and 1D bulk copies: w4a16_common.cuh */
/* 2D tensor copy of the box at (x0, y0) (elements) to this block's shared memory */
__device__ __forceinline__ void tensor_g2s(uint32_t dst, const CUtensorMap *map, int x0, int y0, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(x0), "r"(y0), "r"(bar)
        : "memory");
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* Keep a register's value alive (and in place) up to here: the wgmma that reads it is asynchronous. */
__device__ __forceinline__ void keep(uint32_t &r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void keep(float &r) { asm volatile("" : "+f"(r)::"memory"); }

/* Shared-memory descriptor of a K-major B tile with the 128-byte swizzle: start >> 4, leading
 * byte offset 1 (unused with this swizzle), stride byte offset 1024 >> 4 (8 rows of 128 B), mode 1. */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr) {
    return (uint64_t)((saddr >> 4) & 0x3fff) | ((uint64_t)1 << 16) | ((uint64_t)64 << 32) | ((uint64_t)1 << 62);
}

/* ---- dequantization to rounded 16-bit weights (not FOLD) ---- */
enum { SC_F32 = 0, SC_S16 = 1, SC_SPLIT = 2, SC_F32_ONE = 3 }; /* SC_F32_ONE: SC_F32 on layers whose chunks lie in one group */

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
/* f16 scale h -> bf16 pairs (hi, hi) and (lo, lo) with hi + lo == h exactly (f16 has 11 significant
 * bits, bf16 8: the remainder has at most 3 and the bf16 exponent range holds it). */
__device__ __forceinline__ void split_f16_scale(uint32_t h, uint32_t &hi2, uint32_t &lo2, float mul = 1.0f) {
    float f = __half2float(__ushort_as_half((unsigned short)h)) * mul; /* mul: a power of two, exact */
    uint32_t hb = __bfloat16_as_ushort(__float2bfloat16_rn(f));
    float lo = f - __uint_as_float(hb << 16); /* exact */
    uint32_t lb = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
    hi2 = hb * 0x10001u;
    lo2 = lb * 0x10001u;
}

/* ---- thirds (3-bit: docs/layouts/cuda_w4a16.md "3-bit: thirds"; the fourth chunk's codes: thirds_fourth) ---- */
/* Lane's four words (k16 steps) of x chunk 4u + h of the run at p (this lane's 16 bytes of block 0; block s R / 16
 * blocks further): block h's as they lie (bits 0-2 the code, bit 3 the fourth chunk's), or for h = 3 thirds_fourth of
 * all three. Either way only bits 0-2 of each nibble are code bits. */
template <int R>
__device__ __forceinline__ uint4 thirds_words(const unsigned char *p, int h) {
    const uint4 a = *reinterpret_cast<const uint4 *>(p + (h < 3 ? h : 0) * R * 32);
    if (h < 3) return a;
    const uint4 b = *reinterpret_cast<const uint4 *>(p + R * 32), c = *reinterpret_cast<const uint4 *>(p + 2 * R * 32);
    return make_uint4(thirds_fourth(a.x, b.x, c.x), thirds_fourth(a.y, b.y, c.y), thirds_fourth(a.z, b.z, c.z),
                      thirds_fourth(a.w, b.w, c.w));
}

/* The persistent schedule of the stream-K form (file comment; the host's plan, wg_plan, as the kernel reads it). */
struct WgSched {
    int G;              /* blocks */
    int dp_tiles;       /* tiles [0, dp_tiles): whole, block b takes b, b + G, ... */
    long long sk_iters; /* chunks of tiles [dp_tiles, tiles); block b takes [b sk_iters / G, (b + 1) sk_iters / G) */
    float *ws;          /* partial tiles: slot 0 (a block's first stream-K unit) and 1 (its last) per block */
    int *cnt;           /* arrivals per stream-K tile, zero at launch */
};

/* Unit u of this block: (tile, chunks [c0, c1), slot), slot -1 for a whole tile; false past the last. A function
 * of u alone (and the kernel parameters), so that the consumers' one chunk loop carries only u and its chunk range
 * and recomputes the rest at the unit's end (bench/cuda/NOTES.md v13). */
__device__ __forceinline__ bool wg_unit(const WgSched &s, int kc, int u, int &tile, int &c0, int &c1, int &slot) {
    const int b = (int)blockIdx.x, ndp = b < s.dp_tiles ? (s.dp_tiles - b + s.G - 1) / s.G : 0;
    if (u < ndp) {
        tile = b + u * s.G, c0 = 0, c1 = kc, slot = -1;
        return true;
    }
    const long long first = (long long)b * s.sk_iters / s.G, end = (long long)(b + 1) * s.sk_iters / s.G;
    const long long t = first / kc + (u - ndp);
    const long long lo = u == ndp ? first : t * kc, hi = min(end, (t + 1) * kc);
    if (lo >= hi) return false;
    tile = s.dp_tiles + (int)t, c0 = (int)(lo - t * kc), c1 = (int)(hi - t * kc);
    slot = c0 == 0 && c1 == kc ? -1 : lo == first ? 0 : 1;
    return true;
}

template <class A, bool ZP, bool FOLD, int SC, int BT, int STAGES, bool SK, int PL, bool HV, bool TH>
__global__ void __launch_bounds__(WgRegs::THREADS, 1)
    w4a16_wg(const mpl_cuda_w4a16_args a, const __grid_constant__ CUtensorMap wmap, const unsigned char *__restrict__ xt,
             int tiles_m, int tiles_n, int nslot, const WgSched sk) {
    /* SPL: the SPLIT form's scales are split once per stage by the producer warpgroup's second warp (scale_split), not by
     * every consumer thread for its rows at every chunk: that split (8 instructions per scale, 4 scales per thread and
     * chunk) was ~1 instruction per weight pair of the consumers' ~5.8 (ncu, H100, 70B gate_up M = 256: 120.8 M
     * instructions against Humming's 93.4 M; bench/cuda/NOTES.md v40) */
    constexpr bool SPL = SC == SC_SPLIT;
    using Sh = WgShape<BT, STAGES, PL, HV, TH>;
    using Rg = WgRegs;
    constexpr int R = Sh::R, MW = WG_MW;
    static_assert(!(SK && FOLD), "the stream-K form runs rounded weights only");
    static_assert(PL == 1 || ZP, "8-bit layers carry zero points (both planes')");
    /* SUB: the SPLIT form on 4-bit codes (bf16 activations, f16 scales; not halves) takes the subnormal
     * dequantization: a nibble masked in place is the bf16 pattern c 2^-133 (rows g + 8: 16 c 2^-133; exponent field
     * 0 or 1, so exact), and one fma (x 2^127 or 2^123, + -z 2^-6) gives (c - z) 2^-6 -- 1 shift + 4 lop3 + 4 fma per
     * 8 weights instead of 3 shifts (the skinny path's nib_sub) -- against the split of 2^6 s (exact for every f16
     * scale: tests/test_cuda_w4a16.c wg_split_scale_exact). Static SASS per chunk (split-K form, BT 128): 238 -> 225
     * instructions. The bf16- and f32-scale forms keep the 128-offset form: their 2^6 s would overflow from
     * |s| >= 2^122. Thirds take it too, with 3-bit masks (dequant_sub<7>). */
    constexpr bool SUB = A::id == MPL_CUDA_W4A16_ACT_BF16 && PL == 1 && !HV && SC == SC_SPLIT;
    /* bf16 8-bit weights (dequant8) and SUB's come out as (c - z) 2^-6: their scale is 2^6 s (exact: a power of two) */
    constexpr float W8_MUL = (PL == 2 || SUB) && A::id == MPL_CUDA_W4A16_ACT_BF16 ? 64.0f : 1.0f;
    /* the S16, SPLIT and F32_ONE forms run layers whose chunks each lie in one group (nslot 1, wg_dispatch_zp): their
     * scale constants, like the zero terms, are read once per chunk. Static SASS, split-K form, BT 128, bf16: SPLIT 2840
     * -> 2136 instructions, S16 2328 -> 1968, 8-bit F32 with zeros 4560 -> 3864; H100 v27 (bench/cuda/NOTES.md), forced,
     * against reading them per k16 step: 4-bit 0.95-1.00x of the time at m = 256 / 1024, 8-bit 0.89-0.98x */
    constexpr bool ONE_SLOT = !FOLD && (SC == SC_S16 || SC == SC_SPLIT || SC == SC_F32_ONE);
    extern __shared__ unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw), base = (raw + 1023u) & ~1023u;
    unsigned char *smem = smem_raw + (base - raw) + 1024; /* the ring; mbarriers just below */
    const uint32_t ring = base + 1024;
    auto full_bar = [&](int s) { return base + 8u * (uint32_t)s; };
    auto empty_bar = [&](int s) { return base + 8u * (uint32_t)(STAGES + s); };
    auto split_bar = [&](int s) { return base + 8u * (uint32_t)(2 * STAGES + s); }; /* SPL: the stage's scales split */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2;

    /* split-K form: one tile (blockIdx.x) and one K range (blockIdx.y of gridDim.y) per block */
    const int tile = blockIdx.x;
    const int2 mn = raster_tile(tile, tiles_m, tiles_n);
    const int mt = mn.x, m0 = mt * BT, n0 = mn.y * R;

    /* chunks along K: of the packed K, or (PL = 2) of one plane, the high plane's chunk c being KCL + c; thirds: runs of
     * three packed chunks (k_pad / 192 = k / 256) */
    const int KC = TH ? a.k_pad / (3 * MPL_CUDA_W4A16_KC) : (PL == 2 ? a.planes_k : a.k_pad) >> MPL_CUDA_W4A16_KC_SHIFT;
    const int S = gridDim.y, split = blockIdx.y;
    const int c_begin = (int)((long long)KC * split / S), c_end = (int)((long long)KC * (split + 1) / S);
    volatile int *arrived = reinterpret_cast<volatile int *>(smem - 512); /* SK: in the mbarriers' KB, past 2 x 64 */

    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full_bar(s), 1);
            mbar_init(empty_bar(s), TH ? Rg::CONSUMERS : Rg::CONSUMERS / 32); /* arrivals: warps, thirds threads (chunk) */
            if (SPL) mbar_init(split_bar(s), 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    float acc[MW][BT / 2];
#pragma unroll
    for (int s = 0; s < MW; s++)
#pragma unroll
        for (int e = 0; e < BT / 2; e++) acc[s][e] = 0.0f;

    float *sc = reinterpret_cast<float *>(smem); /* split-K form: epilogue tile, over the ring */
    if (warp >= Rg::CONSUMERS / 32) {
        /* ---- producer ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Rg::PRODUCER));
        /* the block's chunk ranges in the consumers' order, f(token tile, first row of N, first chunk, end): the producer
         * and scale_split walk the ring with it, stage for stage */
        auto each_range = [&](auto &&f) {
            if constexpr (SK) {
                int ut, u0, u1, uslot;
                for (int u = 0; wg_unit(sk, KC, u, ut, u0, u1, uslot); u++) {
                    const int2 umn = raster_tile(ut, tiles_m, tiles_n);
                    f(umn.x, umn.y * R, u0, u1); /* the producer runs ahead into the next unit */
                }
            } else {
                f(mt, n0, c_begin, c_end);
            }
        };
        if (warp == Rg::CONSUMERS / 32 && lane == 0) {
            const uint32_t bytes =
                Sh::X_BYTES + Sh::W_BYTES + nslot * R * 2 * (a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32 ? 2 : 1) + (ZP ? PL * nslot * R : 0);
            int s = 0, use = 0;
            auto produce = [&](int pmt, int pn0, int cb, int ce) {
                /* halves: 2 KC x tiles per token tile; thirds: 4 KC (KC runs) */
                const unsigned char *xsrc = xt + (size_t)pmt * KC * Sh::X_BYTES;
                for (int c = cb; c < ce; c++) {
                    if (use > 0) mbar_wait(empty_bar(s), (uint32_t)(use - 1) & 1u);
                    const uint32_t st = ring + (uint32_t)(s * Sh::STAGE), fb = full_bar(s);
                    mbar_expect_tx(fb, bytes);
                    bulk_g2s(st, xsrc + (size_t)c * Sh::X_BYTES, Sh::X_BYTES, fb);
                    if constexpr (TH) { /* run c: packed chunks 3c .. 3c + 2, each the map's box */
                        for (int b = 0; b < 3; b++)
                            tensor_g2s(st + Sh::X_BYTES + b * R * 32, &wmap, (3 * c + b) * 128, pn0 / 16, fb);
                    } else {
                        tensor_g2s(st + Sh::X_BYTES, &wmap, c * 128, pn0 / 16, fb); /* R/16 tiles x 512 bytes */
                    }
                    if constexpr (PL == 2) tensor_g2s(st + Sh::X_BYTES + R * 32, &wmap, (KC + c) * 128, pn0 / 16, fb);
                    const uint32_t ss = st + Sh::X_BYTES + Sh::W_BYTES;
                    /* slot q: k16 step q of the chunk; thirds: x chunks 4c + 2q, 4c + 2q + 1 (one group: gs16 % 8 == 0), from
                     * x's k16 step 16 c + 8 q (gs16 counts x's steps) */
                    for (int q = 0; q < nslot; q++) {
                        size_t at = (size_t)group_of_step(TH ? 16 * c + 8 * q : c * 4 + q, a.inv_gs16) * a.n_pad + pn0;
                        bulk_g2s(ss + q * R * 2, a.scales + at, R * 2, fb);
                        if (a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32) bulk_g2s(ss + Sh::S_BYTES + q * R * 2, a.scales_lo + at, R * 2, fb);
                        if (ZP) bulk_g2s(ss + 2 * Sh::S_BYTES + q * R, a.zeros + at, R, fb);
                        if constexpr (PL == 2) { /* the high plane's zeros (its groups follow the low plane's) */
                            size_t ath = (size_t)group_of_step((KC + c) * 4 + q, a.inv_gs16) * a.n_pad + pn0;
                            bulk_g2s(ss + 2 * Sh::S_BYTES + 4 * R + q * R, a.zeros + ath, R, fb);
                        }
                    }
                    if (++s == STAGES) s = 0, use++;
                }
            };
            each_range(produce);
        }
        if constexpr (SPL) {
            if (warp == Rg::CONSUMERS / 32 + 1) {
                /* scale_split: each stage's f16 scale words (rows g, g + 8 of a 16-row tile) as the bf16 halves hi, lo of
                 * row g, then of row g + 8 (split_f16_scale), in the stage order of the producer; the consumers wait for
                 * the stage's split_bar as well as its full_bar */
                int s = 0, use = 0;
                each_range([&](int, int, int cb, int ce) {
                    for (int c = cb; c < ce; c++) {
                        mbar_wait(full_bar(s), (uint32_t)use & 1u);
                        unsigned char *st = smem + s * Sh::STAGE;
                        const uint32_t *sw = reinterpret_cast<const uint32_t *>(st + Sh::X_BYTES + Sh::W_BYTES);
                        uint2 *sp = reinterpret_cast<uint2 *>(st + Sh::SP_OFF);
                        for (int i = lane; i < nslot * R / 2; i += 32) {
                            const uint32_t w = sw[i];
                            uint32_t h0, l0, h8, l8;
                            split_f16_scale(w & 0xffffu, h0, l0, W8_MUL);
                            split_f16_scale(w >> 16, h8, l8, W8_MUL);
                            sp[i] = make_uint2(__byte_perm(h0, l0, 0x5410), __byte_perm(h8, l8, 0x5410));
                        }
                        __syncwarp();
                        if (lane == 0) mbar_arrive(split_bar(s));
                        if (++s == STAGES) s = 0, use++;
                    }
                });
            }
        }
        if constexpr (!SK) {
            __syncwarp();
            asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Rg::ENTRY));
        }
    } else {
        /* ---- consumers ---- */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Rg::CONSUMER));
        const int wgi = warp >> 2, wq = warp & 3;
        /* FOLD: group g's exact partial sums go to accg0 (g even) / accg1 (g odd) */
        float accg0[FOLD ? MW : 1][FOLD ? BT / 2 : 1], accg1[FOLD ? MW : 1][FOLD ? BT / 2 : 1];
#pragma unroll
        for (int s = 0; s < (FOLD ? MW : 1); s++)
#pragma unroll
            for (int e = 0; e < (FOLD ? BT / 2 : 1); e++) accg0[s][e] = accg1[s][e] = 0.0f;
        /* thirds: of x chunk c (gs16 counts x's k16 steps) */
        auto group_of_chunk = [&](int c) { return group_of_step(c * 4, a.inv_gs16); };
        /* slot: the stage's scale slot of the group (thirds: 1 for x chunks 4c + 2, 4c + 3 when nslot is 2) */
        auto fold = [&](float (&pg)[FOLD ? MW : 1][FOLD ? BT / 2 : 1], int stage, int slot) {
            if constexpr (FOLD) {
                const unsigned char *ss = smem + stage * Sh::STAGE + Sh::X_BYTES + Sh::W_BYTES + slot * R * 2;
#pragma unroll
                for (int s = 0; s < MW; s++) {
                    const int off = ((wgi * MW + s) * 4 + wq) * 32 + 4 * g; /* the slot's word g: rows (g, g+8) */
                    uint32_t hi = *reinterpret_cast<const uint32_t *>(ss + off);
                    uint32_t lo = a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32 ? *reinterpret_cast<const uint32_t *>(ss + Sh::S_BYTES + off) : 0u;
                    float s_g = scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt) * W8_MUL;
                    float s_g8 = scale_value(hi >> 16, lo >> 16, a.scale_fmt) * W8_MUL;
#pragma unroll
                    for (int e = 0; e < BT / 2; e++) acc[s][e] += ((e & 3) >> 1 ? s_g8 : s_g) * pg[s][e];
                }
            }
        };

        uint32_t af[2][MW][4][4];
#pragma unroll
        for (int s = 0; s < MW; s++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) af[0][s][j][e] = af[1][s][j][e] = 0u;
        int stage = 0, use = 0, prev_stage = 0;
        /* chunk c of a run that started at chunk cb (its first chunk frees no stage). Halves (HV): called twice per
         * packed chunk, h = 0 then 1: the 2-bit codes in bits 2h, 2h + 1 of each nibble against x tile h of the stage
         * (chunk 2c + h); the stage is waited for at h = 0 and freed when the next chunk's h = 0 has waited out
         * this chunk's h = 1 wgmmas. Thirds (TH): four times per run c, h = 0 .. 3, x chunk 4c + h against x tile h
         * (thirds_words), the stage waited for at h = 0 and freed by the next run's h = 0; a group of 128 channels
         * ends after h = 1 or h = 3, so FOLD folds at h = 2 too (slot 0 of this stage) and at the next run's h = 0
         * (slot nslot - 1 of the previous stage). Otherwise h = 0. */
        constexpr uint32_t CODE = TH ? 7u : HV ? 3u : 15u; /* a nibble's code bits */
        constexpr uint32_t Z0 = TH ? 4u : HV ? 2u : 8u;     /* the zero without zero points (uint3b4, uint2b2, uint4b8) */
        auto chunk = [&](int c, int cb, uint32_t (&cur)[MW][4][4], uint32_t (&prev)[MW][4][4], int h) {
            if (h == 0) {
                mbar_wait(full_bar(stage), (uint32_t)use & 1u);
                if (SPL) mbar_wait(split_bar(stage), (uint32_t)use & 1u);
            }
            const unsigned char *st = smem + stage * Sh::STAGE;
            const unsigned char *sw = st + Sh::X_BYTES, *ss = sw + Sh::W_BYTES;
            const int tslot = nslot == 1 ? 0 : h >> 1; /* thirds: the chunk's scale slot (the producer's q) */
            (void)tslot;
#pragma unroll
            for (int s = 0; s < MW; s++) {
                const int lt = (wgi * MW + s) * 4 + wq; /* the warp's 16-row tile within the block */
                uint4 wv;
                if constexpr (TH) wv = thirds_words<R>(sw + (lt * 32 + lane) * 16, h);
                else wv = *reinterpret_cast<const uint4 *>(sw + (lt * 32 + lane) * 16);
                uint4 wvh = make_uint4(0u, 0u, 0u, 0u); /* PL = 2: the high plane's words */
                if constexpr (PL == 2) wvh = *reinterpret_cast<const uint4 *>(sw + R * 32 + (lt * 32 + lane) * 16);
                /* The slot's constants: the zero terms, and in the ONE_SLOT forms the scale's (S16: the pairs (s, s) of
                 * rows g and g + 8; SPLIT: their bf16 pairs hi and lo; F32_ONE: the two fp32 scales), set at step 0 and,
                 * unless the chunk's four steps share a group (nslot 1; always so in the ONE_SLOT forms: wg_dispatch_zp),
                 * at every step. */
                uint32_t add_g, add_g8, k0 = 0u, k1 = 0u, k2 = 0u, k3 = 0u;
                (void)k0, (void)k1, (void)k2, (void)k3;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    /* thirds: every step of an x chunk in its group's slot (nslot 1 or 2 per run) */
                    const int slot = TH ? tslot : nslot == 1 ? 0 : j;
                    if (j == 0 || (!TH && !ONE_SLOT && nslot != 1)) {
                        const unsigned char *zs = ss + 2 * Sh::S_BYTES + slot * R + lt * 16 + 2 * g;
                        uint32_t z16 = ZP ? *reinterpret_cast<const uint16_t *>(zs) : 0u;
                        if constexpr (PL == 2) /* z = zl + 16 zh per row (rows g, g + 8: the two bytes) */
                            w8_consts<A>(z16, *reinterpret_cast<const uint16_t *>(zs + 4 * R), add_g, add_g8);
                        else if constexpr (SUB) { /* -z 2^-6 per row (uint4b8: z = 8; uint3b4: 4) */
                            add_g = w8_add<A>(ZP ? (z16 & 0xffu) : Z0);
                            add_g8 = w8_add<A>(ZP ? (z16 >> 8) : Z0);
                        } else {
                            zero_consts<A, ZP, Z0>(z16, add_g, add_g8);
                        }
                        const uint32_t hi = *reinterpret_cast<const uint32_t *>(ss + slot * R * 2 + lt * 32 + 4 * g); /* word g: rows (g, g+8) */
                        if constexpr (SC == SC_S16) {
                            k0 = __byte_perm(hi, 0, 0x1010), k1 = __byte_perm(hi, 0, 0x3232);
                            if constexpr (W8_MUL != 1.0f) { /* 2^6 s: exact below bf16's 2^122 (docs: 8-bit on wg) */
                                k0 = fma16x2(A::id, k0, 0x42804280u, 0x80008000u);
                                k1 = fma16x2(A::id, k1, 0x42804280u, 0x80008000u);
                            }
                        } else if constexpr (SC == SC_SPLIT) { /* scale_split's halves of rows (g, g + 8) as pairs */
                            const uint2 k = *reinterpret_cast<const uint2 *>(st + Sh::SP_OFF + (slot * R / 2 + lt * 8 + g) * 8);
                            k0 = __byte_perm(k.x, 0u, 0x1010), k1 = __byte_perm(k.x, 0u, 0x3232);
                            k2 = __byte_perm(k.y, 0u, 0x1010), k3 = __byte_perm(k.y, 0u, 0x3232);
                        } else if constexpr (SC == SC_F32_ONE) {
                            const uint32_t lo = a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32
                                                    ? *reinterpret_cast<const uint32_t *>(ss + Sh::S_BYTES + slot * R * 2 + lt * 32 + 4 * g)
                                                    : 0u;
                            k0 = __float_as_uint(scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt) * W8_MUL);
                            k1 = __float_as_uint(scale_value(hi >> 16, lo >> 16, a.scale_fmt) * W8_MUL);
                        }
                    }
                    uint32_t w = j == 0 ? wv.x : j == 1 ? wv.y : j == 2 ? wv.z : wv.w;
                    if (HV && h) w >>= 2;
                    uint32_t wh = j == 0 ? wvh.x : j == 1 ? wvh.y : j == 2 ? wvh.z : wvh.w;
                    (void)wh;
                    if constexpr (FOLD) { /* exact integers; the scale is applied at the fold */
                        if constexpr (PL == 2) dequant8<A>(w, wh, add_g, add_g8, cur[s][j]);
                        else A::template dequant<CODE>(w, add_g, add_g8, cur[s][j]);
                    } else {
                        uint32_t q[4];
                        if constexpr (PL == 2) dequant8<A>(w, wh, add_g, add_g8, q);
                        else if constexpr (SUB) ActBF16::dequant_sub<CODE>(w, add_g, add_g8, q); /* thirds: 3-bit masks */
                        else A::template dequant<CODE>(w, add_g, add_g8, q);
                        if constexpr (SC == SC_S16) {
                            cur[s][j][0] = fma16x2(A::id, q[0], k0, 0x80008000u);
                            cur[s][j][1] = fma16x2(A::id, q[1], k1, 0x80008000u);
                            cur[s][j][2] = fma16x2(A::id, q[2], k0, 0x80008000u);
                            cur[s][j][3] = fma16x2(A::id, q[3], k1, 0x80008000u);
                        } else if constexpr (SC == SC_SPLIT) {
                            constexpr int BF16 = MPL_CUDA_W4A16_ACT_BF16;
                            cur[s][j][0] = fma16x2(BF16, q[0], k0, fma16x2(BF16, q[0], k1, 0x80008000u));
                            cur[s][j][1] = fma16x2(BF16, q[1], k2, fma16x2(BF16, q[1], k3, 0x80008000u));
                            cur[s][j][2] = fma16x2(BF16, q[2], k0, fma16x2(BF16, q[2], k1, 0x80008000u));
                            cur[s][j][3] = fma16x2(BF16, q[3], k2, fma16x2(BF16, q[3], k3, 0x80008000u));
                        } else if constexpr (SC == SC_F32_ONE) {
                            cur[s][j][0] = mul32<A>(q[0], __uint_as_float(k0));
                            cur[s][j][1] = mul32<A>(q[1], __uint_as_float(k1));
                            cur[s][j][2] = mul32<A>(q[2], __uint_as_float(k0));
                            cur[s][j][3] = mul32<A>(q[3], __uint_as_float(k1));
                        } else {
                            const int off = slot * R * 2 + lt * 32 + 4 * g; /* word g: rows (g, g+8) */
                            const uint32_t hi = *reinterpret_cast<const uint32_t *>(ss + off);
                            uint32_t lo = a.scale_fmt == MPL_CUDA_W4A16_SCALE_F32 ? *reinterpret_cast<const uint32_t *>(ss + Sh::S_BYTES + off) : 0u;
                            float s_g = scale_value(hi & 0xffffu, lo & 0xffffu, a.scale_fmt) * W8_MUL;
                            float s_g8 = scale_value(hi >> 16, lo >> 16, a.scale_fmt) * W8_MUL;
                            cur[s][j][0] = mul32<A>(q[0], s_g);
                            cur[s][j][1] = mul32<A>(q[1], s_g8);
                            cur[s][j][2] = mul32<A>(q[2], s_g);
                            cur[s][j][3] = mul32<A>(q[3], s_g8);
                        }
                    }
                }
            }
            const uint64_t d0 = desc_sw128(ring + (uint32_t)(stage * Sh::STAGE + h * Sh::B_BYTES));
            const int xc = TH ? 4 * c + h : c; /* thirds: the x chunk, whose group FOLD sums */
            const int grp = FOLD ? group_of_chunk(xc) : 0;
            /* starts a group's sums */
            const int first = FOLD && (TH ? xc == 4 * cb || group_of_chunk(xc - 1) != grp
                                          : h == 0 && (c == cb || group_of_chunk(c - 1) != grp));
            wg_fence();
            if constexpr (!FOLD) {
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int s = 0; s < MW; s++) WgMma<A::id, BT>::run(acc[s], cur[s][j], d0 + (uint64_t)(2 * j), 1);
            } else {
                if (grp & 1) {
#pragma unroll
                    for (int j = 0; j < 4; j++)
#pragma unroll
                        for (int s = 0; s < MW; s++)
                            WgMma<A::id, BT>::run(accg1[s], cur[s][j], d0 + (uint64_t)(2 * j), j > 0 || !first);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++)
#pragma unroll
                        for (int s = 0; s < MW; s++)
                            WgMma<A::id, BT>::run(accg0[s], cur[s][j], d0 + (uint64_t)(2 * j), j > 0 || !first);
                }
            }
            wg_commit();
            wg_wait<1>(); /* chunk c-1's wgmmas are done: its fragments and its stage are free */
#pragma unroll
            for (int s = 0; s < MW; s++)
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) keep(prev[s][j][e]);
            if (h == 0 && c > cb) {
                /* chunk c-1 ended its group: fold that group's sums (its stage is still held) */
                if (FOLD && first) {
                    if (group_of_chunk(xc - 1) & 1) fold(accg1, prev_stage, TH ? nslot - 1 : 0);
                    else fold(accg0, prev_stage, TH ? nslot - 1 : 0);
                }
                /* Thirds: every consumer thread arrives, each arrival releasing its own reads of the stage, instead of
                 * __syncwarp and lane 0: with four wgmma groups per loop iteration that pair made ptxas serialize every
                 * wgmma of the non-FOLD forms (C7513: each waited out before the next; either half alone did not) */
                if constexpr (TH) {
                    mbar_arrive(empty_bar(prev_stage));
                } else {
                    __syncwarp();
                    if (lane == 0) mbar_arrive(empty_bar(prev_stage));
                }
            }
            if constexpr (TH) { /* x chunk 4c + 1 ended its group (groups of 128 channels): fold it from slot 0 */
                if (FOLD && h == 2 && first) {
                    if (group_of_chunk(xc - 1) & 1) fold(accg1, stage, 0);
                    else fold(accg0, stage, 0);
                }
            }
            if (h == (TH ? 3 : HV ? 1 : 0)) {
                prev_stage = stage;
                if (++stage == STAGES) stage = 0, use++;
            }
        };
        /* chunks [cb, ce) into acc, every wgmma complete on return */
        auto run = [&](int cb, int ce) {
            if constexpr (TH) {
                for (int c = cb; c < ce; c++) {
                    chunk(c, cb, af[0], af[1], 0);
                    chunk(c, cb, af[1], af[0], 1);
                    chunk(c, cb, af[0], af[1], 2);
                    chunk(c, cb, af[1], af[0], 3);
                }
            } else if constexpr (HV) {
                for (int c = cb; c < ce; c++) {
                    chunk(c, cb, af[0], af[1], 0);
                    chunk(c, cb, af[1], af[0], 1);
                }
            } else {
                int c = cb;
                for (; c + 1 < ce; c += 2) {
                    chunk(c, cb, af[0], af[1], 0);
                    chunk(c + 1, cb, af[1], af[0], 0);
                }
                if (c < ce) chunk(c, cb, af[0], af[1], 0);
            }
            wg_wait<0>();
        };
        if constexpr (!SK) {
            run(c_begin, c_end);
            if (FOLD && c_end > c_begin) { /* thirds: the group of x chunk 4 c_end - 1, slot nslot - 1 */
                if (group_of_chunk(TH ? 4 * c_end - 1 : c_end - 1) & 1) fold(accg1, prev_stage, TH ? nslot - 1 : 0);
                else fold(accg0, prev_stage, TH ? nslot - 1 : 0);
            }
#pragma unroll
            for (int s = 0; s < MW; s++)
#pragma unroll
                for (int e = 0; e < BT / 2; e++) keep(acc[s][e]);
            /* every consumer is done with the ring (all bulk copies landed: each chunk was waited for) */
            asm volatile("bar.sync 1, %0;" ::"n"(Rg::CONSUMERS) : "memory");
            /* Accumulator (s, e) of lane (g, t): row of N (wgi MW + s) 64 + 16 wq + g + 8 ((e % 4) / 2),
             * token 8 (e / 4) + 2 t + (e % 2). */
            const int t = lane & 3;
#pragma unroll
            for (int s = 0; s < MW; s++)
#pragma unroll
                for (int e = 0; e < BT / 2; e++) {
                    int nl = (wgi * MW + s) * 64 + 16 * wq + g + 8 * ((e & 3) >> 1), ml = 8 * (e >> 2) + 2 * t + (e & 1);
                    sc[ml * Sh::LD + nl] = acc[s][e];
                }
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Rg::ENTRY));
        } else {
            /* One chunk loop over all of the block's units (a loop of units around run() made ptxas serialize the
             * wgmmas at BT 128 for lack of registers, C7512: bench/cuda/NOTES.md v13); a unit's end is handled
             * where its last chunk is, then the next unit starts on af[0] again. Live across the loop: u, its chunk
             * range and c; the rest of the unit is recomputed from u (wg_unit). */
            int ut, u0, u1, uslot, u = 0;
            /* the unit's end: its partial tile to scratch (and the sums if this block is the tile's last), or y */
            auto unit_end = [&]() {
                wg_wait<0>();
                /* the unit's last stage is free (its wgmmas are done): the producer may be ahead (thirds: every thread
                 * arrives, as in chunk) */
                if constexpr (TH) {
                    mbar_arrive(empty_bar(prev_stage));
                } else {
                    __syncwarp();
                    if (lane == 0) mbar_arrive(empty_bar(prev_stage));
                }
#pragma unroll
                for (int s = 0; s < MW; s++)
#pragma unroll
                    for (int e = 0; e < BT / 2; e++) keep(acc[s][e]);
                wg_unit(sk, KC, u, ut, u0, u1, uslot);
                bool write = true;
                if (uslot >= 0) {
                    /* a partial tile: store it; the tile's last block to arrive sums them all in K order */
                    const int ti = ut - sk.dp_tiles;
                    float4 *mine = reinterpret_cast<float4 *>(sk.ws + (size_t)(blockIdx.x * 2 + uslot) * Sh::PART);
#pragma unroll
                    for (int s = 0; s < MW; s++)
#pragma unroll
                        for (int q = 0; q < BT / 8; q++)
                            __stcg(mine + (s * (BT / 8) + q) * Rg::CONSUMERS + tid,
                                   make_float4(acc[s][4 * q], acc[s][4 * q + 1], acc[s][4 * q + 2], acc[s][4 * q + 3]));
                    __threadfence();
                    asm volatile("bar.sync 1, %0;" ::"n"(Rg::CONSUMERS) : "memory");
                    if (tid == 0) *arrived = atomicAdd(sk.cnt + ti, 1);
                    asm volatile("bar.sync 1, %0;" ::"n"(Rg::CONSUMERS) : "memory");
                    /* the blocks holding the tile's first and last chunk (block of chunk i: ((i + 1) G - 1) / sk_iters) */
                    const long long t0 = (long long)ti * KC, t1 = t0 + KC - 1;
                    const int b_lo = (int)(((t0 + 1) * sk.G - 1) / sk.sk_iters), b_hi = (int)(((t1 + 1) * sk.G - 1) / sk.sk_iters);
                    write = *arrived == b_hi - b_lo; /* else not the last: another block writes y */
                    if (write) {
                        __threadfence();
                        /* b_lo's part is its last unit (slot 1) unless its range starts at the tile; the others' is their first */
                        const int lo_slot = (long long)b_lo * sk.sk_iters / sk.G < t0 ? 1 : 0;
                        /* QB float4 loads in flight per part: all of a 64-row sub-tile's at BT <= 64, half at 128 */
                        constexpr int QB = BT / 8 < 8 ? BT / 8 : 8;
#pragma unroll
                        for (int s = 0; s < MW; s++)
#pragma unroll
                            for (int q0 = 0; q0 < BT / 8; q0 += QB)
                                for (int b = b_lo; b <= b_hi; b++) {
                                    const float4 *part =
                                        reinterpret_cast<const float4 *>(sk.ws + (size_t)(b * 2 + (b == b_lo ? lo_slot : 0)) * Sh::PART) + tid;
                                    float4 v[QB];
#pragma unroll
                                    for (int q = 0; q < QB; q++) v[q] = __ldcg(part + (s * (BT / 8) + q0 + q) * Rg::CONSUMERS);
#pragma unroll
                                    for (int q = 0; q < QB; q++) {
                                        float *d = &acc[s][4 * (q0 + q)];
                                        if (b == b_lo) d[0] = v[q].x, d[1] = v[q].y, d[2] = v[q].z, d[3] = v[q].w;
                                        else d[0] += v[q].x, d[1] += v[q].y, d[2] += v[q].z, d[3] += v[q].w;
                                    }
                                }
                    }
                }
                if (write) {
                    /* y from the accumulators: (s, e) of lane (g, t) is row of N (wgi MW + s) 64 + 16 wq + g + 8 ((e % 4) / 2),
                     * token 8 (e / 4) + 2 t + (e % 2) */
                    const int2 umn = raster_tile(ut, tiles_m, tiles_n);
                    const int um0 = umn.x * BT, un0 = umn.y * R, t = lane & 3;
#pragma unroll
                    for (int s = 0; s < MW; s++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            const int n = un0 + (wgi * MW + s) * 64 + 16 * wq + g + 8 * h;
                            if (n >= a.n) continue;
                            const float bv = bias_value<A>(a.bias, n);
                            uint16_t *yn = (uint16_t *)a.y + n;
#pragma unroll
                            for (int e = 0; e < BT / 2; e++) {
                                if (((e & 3) >> 1) != h) continue;
                                const int mrow = um0 + 8 * (e >> 2) + 2 * t + (e & 1);
                                if (mrow < a.m) yn[(size_t)mrow * a.n] = A::from_float(acc[s][e] + bv);
                            }
                        }
                }
#pragma unroll
                for (int s = 0; s < MW; s++)
#pragma unroll
                    for (int e = 0; e < BT / 2; e++) acc[s][e] = 0.0f;
                return wg_unit(sk, KC, ++u, ut, u0, u1, uslot);
            };
            if (wg_unit(sk, KC, u, ut, u0, u1, uslot)) { /* every block has a unit (wg_plan: G <= chunks) */
                int c = u0;
                if constexpr (TH) {
                    for (;;) {
                        chunk(c, u0, af[0], af[1], 0);
                        chunk(c, u0, af[1], af[0], 1);
                        chunk(c, u0, af[0], af[1], 2);
                        chunk(c, u0, af[1], af[0], 3);
                        if (++c == u1) {
                            if (!unit_end()) break;
                            c = u0;
                        }
                    }
                } else if constexpr (HV) {
                    for (;;) {
                        chunk(c, u0, af[0], af[1], 0);
                        chunk(c, u0, af[1], af[0], 1);
                        if (++c == u1) {
                            if (!unit_end()) break;
                            c = u0;
                        }
                    }
                } else {
                    for (;;) {
                        chunk(c, u0, af[0], af[1], 0);
                        if (++c == u1) {
                            if (!unit_end()) break;
                            c = u0;
                            continue;
                        }
                        chunk(c, u0, af[1], af[0], 0);
                        if (++c == u1) {
                            if (!unit_end()) break;
                            c = u0;
                        }
                    }
                }
            }
        }
    }
    if constexpr (!SK) {
        __syncthreads();
        tile_store<A, R, Sh::LD, Rg::THREADS>(a, sc, BT, m0, n0, S, split, tid);
    }
}

/*
 * x -> the shared-memory images of its B tiles: tile (mt, c) (BT tokens from mt BT, channels
 * 64 c .. 64 c + 63) at xt + (mt KC + c) BT 128; 16-byte unit u of token row r holds the logical
 * 16-byte unit u ^ (r % 8), whose 4-byte pair p (p = 4 (u ^ (r % 8)) + i) is MMA pair p % 8 of k16
 * step p / 8, i.e. channels 16 (p / 8) + 2 sigma(p % 8) + (0, 1), sigma = (0 2 4 6 1 3 5 7).
 */
/* x rows of ld elements, channels [0, k) of each read (8-bit layers: the low plane's k of the gathered 2k) */
__global__ void w4a16_xtile(const uint32_t *__restrict__ x, uint4 *__restrict__ xt, int m, int k, int ld, int kc, int bt,
                          long long units, int *cnt, int ncnt) {
    /* the stream-K arrival counters of the wg kernel that follows on the stream (none in the split-K form) */
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < ncnt; i += gridDim.x * blockDim.x) cnt[i] = 0;
    for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < units; u += (long long)gridDim.x * blockDim.x) {
        long long tile = u / (bt * 8);
        int in = (int)(u - tile * (bt * 8)), r = in >> 3, lu = (in & 7) ^ (r & 7);
        int mt = (int)(tile / kc), c = (int)(tile - (long long)mt * kc), tok = mt * bt + r;
        uint32_t o[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int p = 4 * lu + i, pp = p & 7;
            int ch = c * 64 + 16 * (p >> 3) + 2 * (pp < 4 ? 2 * pp : 2 * (pp - 4) + 1);
            o[i] = tok < m && ch < k ? x[((size_t)tok * ld + ch) >> 1] : 0u;
        }
        xt[u] = make_uint4(o[0], o[1], o[2], o[3]);
    }
}

/* Token tile by M (bench/cuda/NOTES.md, v6); the stream-K form runs rounded weights only, 64 tokens and up (its
 * kernels are instantiated for BT 64 and 128 alone: a forced call with m <= 32 pads x to 64 tokens). */
static inline int wg_bt(int m, int sk) {
    const int bt = m <= 16 ? 16 : m <= 32 ? 32 : m <= 64 ? 64 : 128;
    return sk && bt < 64 ? 64 : bt;
}

/*
 * The stream-K form's schedule, computed the same way for the scratch size and the launch. G = one block per
 * SM (a->wg_blocks when forced), fewer when the blocks would get under WG_MIN_CHUNKS chunks each (a partial
 * tile costs an fp32 tile store and, for the last block, a read of every part). Whole tiles in data-parallel
 * waves while at least one more full wave remains for stream-K (so stream-K spreads between 1 and 2 tiles'
 * chunks over every block), all of them when the tiles fill whole waves.
 */
constexpr int WG_MIN_CHUNKS = 8;
struct WgPlan {
    int bt, tiles_m, tiles_n, kc, G, dp_tiles;
    long long sk_iters;
    size_t xt_bytes, ws_bytes, cnt_bytes;
};
static WgPlan wg_plan(const mpl_cuda_w4a16_args *a, int sk) {
    WgPlan p;
    p.bt = wg_bt(a->m, sk);
    p.tiles_m = (a->m - 1) / p.bt + 1; /* m >= 1 */
    p.tiles_n = (a->n + WG_NWG * WG_MW * 64 - 1) / (WG_NWG * WG_MW * 64);
    /* 8-bit: one plane's chunks; halves: packed; thirds: runs of three packed chunks (the kernel's KC) */
    p.kc = (a->planes_k ? a->planes_k : a->k_pad) / MPL_CUDA_W4A16_KC / (a->thirds ? 3 : 1);
    /* halves: 2 x tiles a chunk; thirds: 4 a run */
    p.xt_bytes = ((size_t)p.tiles_m * p.kc * (a->thirds ? 4 : a->halves ? 2 : 1) * p.bt * 128 + 255) / 256 * 256;
    p.G = 0, p.dp_tiles = 0, p.sk_iters = 0, p.ws_bytes = 0, p.cnt_bytes = 0;
    if (!sk) return p;
    const long long tiles = (long long)p.tiles_m * p.tiles_n, total = tiles * p.kc;
    long long G = a->sms > 0 ? a->sms : 132;
    if (a->wg_blocks > 0) G = a->wg_blocks;
    else if (G > (total + WG_MIN_CHUNKS - 1) / WG_MIN_CHUNKS) G = (total + WG_MIN_CHUNKS - 1) / WG_MIN_CHUNKS;
    if (G > total) G = total;
    if (G < 1) G = 1;
    p.G = (int)G;
    const long long dp = tiles < G ? 0 : tiles % G == 0 ? tiles : (tiles / G - 1) * G;
    p.dp_tiles = (int)dp;
    p.sk_iters = (tiles - dp) * p.kc;
    p.ws_bytes = p.sk_iters ? (size_t)p.G * 2 * (size_t)(WG_NWG * 128 * WG_MW * p.bt / 2) * 4 : 0;
    p.cnt_bytes = ((size_t)(tiles - dp) * 4 + 255) / 256 * 256;
    return p;
}

template <class A, bool ZP, bool FOLD, int SC, int BT, int STAGES, bool SK, int PL, bool HV, bool TH>
static cudaError_t wg_launch(const mpl_cuda_w4a16_args *a, const CUtensorMap *wmap, const void *xt, const WgPlan &p,
                             cudaStream_t stream) {
    using Sh = WgShape<BT, STAGES, PL, HV, TH>;
    static_assert(Sh::R == 256, "the weight tensor map's box is 16 tiles");
    auto kern = w4a16_wg<A, ZP, FOLD, SC, BT, STAGES, SK, PL, HV, TH>;
    static KernelSetup setup;
    cudaError_t e = setup_kernel(kern, a->device, WgRegs::THREADS, Sh::SMEM, setup, nullptr);
    if (e != cudaSuccess) return e;
    const int tiles_m = p.tiles_m, tiles_n = p.tiles_n, kc = p.kc;
    if ((long long)tiles_m * tiles_n > 0x7fffffffLL) return cudaErrorInvalidConfiguration; /* grid x limit */
    /* scale slots per stage: one per k16 step unless the chunk lies in one group; thirds (x chunks in one group, pairs
     * 4c, 4c + 1 and 4c + 2, 4c + 3 too: mpl_cuda_w4a16_launch_wg) one per pair unless the run lies in one group */
    const int tiles = tiles_m * tiles_n, nslot = TH ? (a->gs16 % 16 == 0 ? 1 : 2) : a->gs16 % 4 == 0 ? 1 : 4;
    if constexpr (SK) {
        unsigned char *scr = (unsigned char *)xt;
        const WgSched sk = {p.G, p.dp_tiles, p.sk_iters, (float *)(scr + p.xt_bytes), (int *)(scr + p.xt_bytes + p.ws_bytes)};
        kern<<<(unsigned)p.G, WgRegs::THREADS, Sh::SMEM, stream>>>(*a, *wmap, (const unsigned char *)xt, tiles_m, tiles_n,
                                                                   nslot, sk);
        return cudaGetLastError();
    }
    /* Split-K (a cluster along K), powers of two only (a cluster of 5 ran at half speed: clusters must fit a
     * GPC; bench/cuda/NOTES.md v6), by tiles per SM (one block per SM): 1 from 0.7 x the SMs, 2 from 0.2 x, else 4.
     * Measured (NOTES.md v10, every factor forced, bf16): the old rule's 2 up to 1024 tiles lost to 1 in 10 of 11
     * cells from 96 tiles up (8B gate_up m = 64, 112 tiles: 41.0 vs 47.0 us; 70B gate_up m = 64, 224 tiles: 144.9
     * vs 157.2; 70B o m = 512: 107.1 vs 120.6; the exception 70B gate_up m = 256, 448 tiles: 439.5 vs 411.7);
     * 2 is best at 32-64 tiles (70B o m = 128: 54.6 vs 67.8 with 4), 4 at 24 (8B qkv m = 64: 18.1 vs 24.0 with 2).
     * A wave-quantization model (waves(k) / k) picked 8 on 8B qkv m = 256 (83.4 vs 33.0 us): the cluster
     * reduction costs more than the waves it saves. (The same rule, as chunks per SM, sets the stream-K path's
     * range: mpl_cuda_w4a16_wg_chunks_per_sm.) */
    int ksplit = a->ksplit;
    if (ksplit <= 0) ksplit = mpl_cuda_w4a16_wg_ksplit_rule(tiles, a->sms > 0 ? a->sms : 132);
    while (ksplit > 1 && kc / ksplit < 4) ksplit /= 2;
    if (ksplit > 8) ksplit = 8;
    if (ksplit > kc) ksplit = kc;
    if (ksplit < 1) ksplit = 1;
    const WgSched none = {0, 0, 0, nullptr, nullptr};
    return launch_ksplit(kern, (unsigned)tiles, ksplit, WgRegs::THREADS, Sh::SMEM, stream, *a, *wmap,
                         (const unsigned char *)xt, tiles_m, tiles_n, nslot, none);
}

/*
 * Ring depth by token tile: stage bytes are BT x 128 (x) + 13 KB (weights, scales, zeros), so 12 x 15 KB
 * (BT 16), 10 x 17 KB (32), 8 x 21 KB (64) keep ~170-180 KB in flight per SM, within the 227 KB a block may
 * opt in to; 5 x 29 KB at BT 128, where each chunk's wgmmas take longest, so fewer chunks cover the copy
 * latency. v6 design values (bench/cuda/NOTES.md), not swept one by one.
 */
/* 8-bit (PL = 2): stages carry two planes' weights and zeros (+ 8 KB and 1 KB), so the rings are shallower for the
 * same ~180-190 KB in flight: 8 x 24 KB (BT 16), 7 x 26 KB (32), 6 x 30 KB (64), 5 x 38 KB (128); design values,
 * not swept. */
/* Halves (HV, 2-bit): stages carry two x tiles (+ BT x 128 bytes), so BT 64 takes 7 x 29 KB; the others keep the 4-bit
 * depths (12 x 17 KB, 10 x 21 KB, 5 x 45 KB); design values, not swept. */
/* Thirds (TH, 3-bit): a stage is a run, four x tiles (4 BT x 128 bytes) + three weight chunks (24 KB) + two scale planes'
 * four slots (4 KB) + zeros (1 KB), rounded up to 1 KB: 37 KB (BT 16), 45 (32), 61 (64), 93 (128). Each takes the
 * deepest ring that fits the 227 KB a block may opt in to, with the 2 KB of alignment slack and mbarriers (WgShape::SMEM):
 * 6 x 37 = 222 KB, 5 x 45 = 225 (the limit exactly, as halves at BT 128), 3 x 61 = 183, 2 x 93 = 186 -- about the
 * 4-bit bytes in flight, but in fewer, larger stages: at BT 128 one run (four x chunks) is copied while the other is
 * computed. Design values, not run on a device. */
template <class A, bool ZP, bool FOLD, int SC, int PL, bool HV, bool TH>
static cudaError_t wg_dispatch_bt(const mpl_cuda_w4a16_args *a, const CUtensorMap *wmap, const void *xt, const WgPlan &p,
                                  int sk, cudaStream_t s) {
    if constexpr (TH) {
        if (sk) {
            if constexpr (!FOLD) {
                if (p.bt == 64) return wg_launch<A, ZP, false, SC, 64, 3, true, 1, false, true>(a, wmap, xt, p, s);
                return wg_launch<A, ZP, false, SC, 128, 2, true, 1, false, true>(a, wmap, xt, p, s);
            }
            return cudaErrorInvalidValue; /* wg_dispatch_zp never asks for FOLD with sk */
        }
        switch (p.bt) {
        case 16: return wg_launch<A, ZP, FOLD, SC, 16, 6, false, 1, false, true>(a, wmap, xt, p, s);
        case 32: return wg_launch<A, ZP, FOLD, SC, 32, 5, false, 1, false, true>(a, wmap, xt, p, s);
        }
        if constexpr (FOLD) return cudaErrorInvalidValue; /* FOLD is m <= 32 (mpl_cuda_w4a16_wg_exact): BT 16 or 32 */
        else if (p.bt == 64) return wg_launch<A, ZP, false, SC, 64, 3, false, 1, false, true>(a, wmap, xt, p, s);
        else return wg_launch<A, ZP, false, SC, 128, 2, false, 1, false, true>(a, wmap, xt, p, s);
    }
    if (sk) {
        if constexpr (!FOLD && PL == 1) {
            if (p.bt == 64) return wg_launch<A, ZP, false, SC, 64, HV ? 7 : 8, true, 1, HV, false>(a, wmap, xt, p, s);
            return wg_launch<A, ZP, false, SC, 128, 5, true, 1, HV, false>(a, wmap, xt, p, s);
        }
        if constexpr (!FOLD && PL == 2) { /* 8-bit: the split-K form's rings (two planes per stage) */
            if (p.bt == 64) return wg_launch<A, ZP, false, SC, 64, 6, true, 2, false, false>(a, wmap, xt, p, s);
            return wg_launch<A, ZP, false, SC, 128, 5, true, 2, false, false>(a, wmap, xt, p, s);
        }
        return cudaErrorInvalidValue; /* wg_dispatch_zp never asks for FOLD with sk */
    }
    if constexpr (PL == 2) {
        switch (p.bt) {
        case 16: return wg_launch<A, ZP, FOLD, SC, 16, 8, false, 2, false, false>(a, wmap, xt, p, s);
        case 32: return wg_launch<A, ZP, FOLD, SC, 32, 7, false, 2, false, false>(a, wmap, xt, p, s);
        case 64: return wg_launch<A, ZP, false, SC, 64, 6, false, 2, false, false>(a, wmap, xt, p, s);
        default: return wg_launch<A, ZP, false, SC, 128, 5, false, 2, false, false>(a, wmap, xt, p, s);
        }
    }
    switch (p.bt) {
    case 16: return wg_launch<A, ZP, FOLD, SC, 16, 12, false, 1, HV, false>(a, wmap, xt, p, s);
    case 32: return wg_launch<A, ZP, FOLD, SC, 32, 10, false, 1, HV, false>(a, wmap, xt, p, s);
    case 64: return wg_launch<A, ZP, false, SC, 64, HV ? 7 : 8, false, 1, HV, false>(a, wmap, xt, p, s);
    default: return wg_launch<A, ZP, false, SC, 128, 5, false, 1, HV, false>(a, wmap, xt, p, s);
    }
}

/* The dequantization form: FOLD (exact group sums) where mpl_cuda_w4a16_wg_exact holds (split-K form only),
 * else rounded weights with the cheapest exact-product form for the scale format (S16, SPLIT, F32: file comment). */
template <class A, bool ZP, int PL, bool HV, bool TH>
static cudaError_t wg_dispatch_zp(const mpl_cuda_w4a16_args *a, const CUtensorMap *wmap, const void *xt, const WgPlan &p,
                                  int sk, cudaStream_t s) {
    const int own = A::id == MPL_CUDA_W4A16_ACT_F16 ? MPL_CUDA_W4A16_SCALE_F16 : MPL_CUDA_W4A16_SCALE_BF16;
    if (!sk && mpl_cuda_w4a16_wg_exact(a->m, a->gs16)) return wg_dispatch_bt<A, ZP, true, SC_F32, PL, HV, TH>(a, wmap, xt, p, sk, s);
    /* S16, SPLIT and F32_ONE read a chunk's scales once (ONE_SLOT): groups of 64k channels (or one); other group sizes
     * take the F32 form, whose products round the same way (once, from the exact product) */
    const bool one_slot = a->gs16 % 4 == 0;
    if (a->scale_fmt == own && one_slot) return wg_dispatch_bt<A, ZP, false, SC_S16, PL, HV, TH>(a, wmap, xt, p, sk, s);
    /* bf16 activations, f16 scales: the common GPTQ / AWQ case for bf16 models. Not for 8-bit: v lo (v = c - z up to
     * 8 bits, lo up to 3) is not exact in bf16, so 8-bit weights take the fp32 form (v s exact in fp32: 8 + 11 bits). */
    if constexpr (A::id == MPL_CUDA_W4A16_ACT_BF16 && PL == 1)
        if (a->scale_fmt == MPL_CUDA_W4A16_SCALE_F16 && one_slot) return wg_dispatch_bt<A, ZP, false, SC_SPLIT, PL, HV, TH>(a, wmap, xt, p, sk, s);
    /* thirds: one_slot always (gs16 % 8 == 0: mpl_cuda_w4a16_launch_wg), so no F32 form is built for them */
    if constexpr (TH) return wg_dispatch_bt<A, ZP, false, SC_F32_ONE, PL, HV, TH>(a, wmap, xt, p, sk, s);
    else
        return one_slot ? wg_dispatch_bt<A, ZP, false, SC_F32_ONE, PL, HV, TH>(a, wmap, xt, p, sk, s)
                        : wg_dispatch_bt<A, ZP, false, SC_F32, PL, HV, TH>(a, wmap, xt, p, sk, s);
}

template <class A>
static cudaError_t wg_dispatch(const mpl_cuda_w4a16_args *a, const CUtensorMap *wmap, const void *xt, const WgPlan &p, int sk,
                               cudaStream_t s) {
    if (a->planes_k) return wg_dispatch_zp<A, true, 2, false, false>(a, wmap, xt, p, sk, s); /* checked by mpl_cuda_w4a16_launch_wg */
    if (a->halves)
        return a->zeros ? wg_dispatch_zp<A, true, 1, true, false>(a, wmap, xt, p, sk, s)
                        : wg_dispatch_zp<A, false, 1, true, false>(a, wmap, xt, p, sk, s);
    if (a->thirds) /* checked by mpl_cuda_w4a16_launch_wg */
        return a->zeros ? wg_dispatch_zp<A, true, 1, false, true>(a, wmap, xt, p, sk, s)
                        : wg_dispatch_zp<A, false, 1, false, true>(a, wmap, xt, p, sk, s);
    return a->zeros ? wg_dispatch_zp<A, true, 1, false, false>(a, wmap, xt, p, sk, s)
                    : wg_dispatch_zp<A, false, 1, false, false>(a, wmap, xt, p, sk, s);
}

} // namespace cuda_w4a16

/* x tiles | stream-K partial tiles | arrival counters: wg_plan */
extern "C" size_t mpl_cuda_w4a16_wg_scratch_bytes(const mpl_cuda_w4a16_args *a, int streamk) {
    const cuda_w4a16::WgPlan p = cuda_w4a16::wg_plan(a, streamk);
    return p.xt_bytes + p.ws_bytes + p.cnt_bytes;
}

/* The weight tensor map: a 2D array of 32-bit words, dim 0 = KC * 128 words (one row of 16-row
 * tiles: KC chunks of 512 bytes), dim 1 = n_pad / 16 rows; box = one chunk (128 words) of R / 16 = 16
 * rows (R = 256 for every tile). Encoded once per layer, at pack time. */
extern "C" int mpl_cuda_w4a16_wg_weight_map(const uint32_t *qweight, int k_pad, int n_pad, void *map) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        void *fn = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    });
    if (!encode) return (int)cudaErrorNotSupported;
    static_assert(sizeof(CUtensorMap) == MPL_CUDA_W4A16_WG_MAP_BYTES, "tensor map size");
    const int kc = k_pad / MPL_CUDA_W4A16_KC;
    cuuint64_t dims[2] = {(cuuint64_t)kc * 128, (cuuint64_t)(n_pad / MPL_CUDA_W4A16_NT)};
    cuuint64_t strides[1] = {(cuuint64_t)kc * MPL_CUDA_W4A16_BLOCK_BYTES};
    cuuint32_t box[2] = {128, 16}, estr[2] = {1, 1};
    CUtensorMap m; /* aligned here; the caller's bytes need not be */
    CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, (void *)qweight, dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return (int)cudaErrorInvalidValue;
    memcpy(map, &m, sizeof m);
    return 0;
}

extern "C" int mpl_cuda_w4a16_launch_wg(const mpl_cuda_w4a16_args *a, int streamk, void *xt, void *stream) {
    if (a->cc != 90) return (int)cudaErrorNoKernelImageForDevice; /* sm_90a code only */
    if (!a->wg_map) return (int)cudaErrorNotSupported;
    /* 8-bit (two planes): zero points always, the high plane on a chunk (k % 64 == 0) */
    if (a->planes_k && (!a->zeros || a->planes_k % MPL_CUDA_W4A16_KC != 0 || 2 * a->planes_k != a->k_pad))
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    CUtensorMap wmap;
    memcpy(&wmap, a->wg_map, sizeof wmap);
    const cuda_w4a16::WgPlan p = cuda_w4a16::wg_plan(a, streamk);
    /* x tiles per token tile: halves read two per packed chunk, thirds four per run (k / 64) */
    const int xkc = p.kc * (a->thirds ? 4 : a->halves ? 2 : 1);
    /* halves: every packed chunk lies in one group (wg's nslot 1: gs16, in packed k16 steps, a multiple of 4) */
    if (a->halves && (a->planes_k || a->gs16 % 4 != 0)) return (int)cudaErrorInvalidValue;
    /* thirds: whole runs (k % 256 == 0, k_pad = 3 k / 4), and x chunks 4u, 4u + 1 (and 4u + 2, 4u + 3) in one group, as
     * the stage's two scale slots assume: gs16, in x's k16 steps, a multiple of 8 (groups of 128k, or one) */
    if (a->thirds && (a->planes_k || a->halves || a->k % (4 * MPL_CUDA_W4A16_KC) != 0 || 4LL * a->k_pad != 3LL * a->k ||
                      a->gs16 % 8 != 0))
        return (int)cudaErrorInvalidValue;
    long long units = (long long)p.tiles_m * xkc * p.bt * 8;
    long long blocks = (units + 255) / 256;
    if (blocks > 4096) blocks = 4096; /* grid-stride beyond ~31 blocks per SM: a copy pass gains nothing more */
    int *cnt = (int *)((unsigned char *)xt + p.xt_bytes + p.ws_bytes);
    const int ncnt = streamk ? (int)((long long)p.tiles_m * p.tiles_n - p.dp_tiles) : 0;
    /* 8-bit: x is the gathered 2k columns (both planes read channel j at j and k + j); the tiles take the first k */
    cuda_w4a16::w4a16_xtile<<<(unsigned)blocks, 256, 0, s>>>((const uint32_t *)a->x, (uint4 *)xt, a->m,
                                                           a->planes_k ? a->planes_k : a->k, a->k, xkc, p.bt, units, cnt, ncnt);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return (int)e;
    return (int)(a->act == MPL_CUDA_W4A16_ACT_F16 ? cuda_w4a16::wg_dispatch<cuda_w4a16::ActF16>(a, &wmap, xt, p, streamk, s)
                                                  : cuda_w4a16::wg_dispatch<cuda_w4a16::ActBF16>(a, &wmap, xt, p, streamk, s));
}

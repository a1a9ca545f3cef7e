/*
 * w4a16_skinny.cu -- path cuda_w4a16:skinny (decode): m <= 16 rows.
 *
 * Memory-bound: the whole point is to stream the packed weights at the copy bandwidth.
 *  - Each warp streams whole 512-byte blocks (16 rows x 64 channels): every lane copies 16 bytes
 *    per block with cp.async (L2 only) into its warp's own shared-memory ring, STAGES - 1
 *    chunks ahead (6-7 KB in flight per warp, ~100 KB per SM), and reads them back itself.
 *  - K is split across the 8 warps of a block (warp w takes chunks w, w+8, ...: the block
 *    reads 4 KB contiguous per row tile per step) and, when there are too few row tiles to
 *    fill the GPU, across the blocks of a cluster (sm_90), reduced through distributed shared
 *    memory in a fixed order (deterministic, no workspace, no atomics).
 *  - The MMA computes y^T = W x^T (weights are the 16-row A operand, x the 8-column B
 *    operand), so m <= 8 wastes 7/8 of an MMA instead of 15/16; tensor-core work is far
 *    below its ceiling here, what matters is bytes in flight.
 *  - x fragments are 8-byte loads (L1-resident: every block reads the same x).
 *  - Dequantization in offset form (w4a16_common.cuh, docs/layouts/cuda_w4a16.md): the MMA gets
 *    (OFF + code) straight from the lop3s, one all-ones MMA per k16 step sums x, and the fold takes
 *    (OFF + zero) * sum(x) off before applying the scale -- no FMA per weight pair. (Measured in v5:
 *    ~30% fewer inner-loop instructions bought ~1.5% at M = 1, so this path is not issue-bound.)
 *  - 8-bit layers (two 4-bit planes, k % 64 == 0): FORM_W8 copies the low and the high plane's block of the same
 *    channels into one ring stage and rebuilds the byte codes (dequant8), exact like the offset form: one MMA
 *    per 8 weights instead of two, and x read once per channel (bench/cuda/NOTES.md v19).
 *  - 2-bit layers in halves (FORM_HALVES, two x chunks per packed chunk) have an m = 1 form (FORM_HALVES_M1): the MMA
 *    columns past token 0 are never stored, so every lane loads token 0 and lane 1 swaps its two chunks, one all-ones MMA
 *    per k16 step sums both chunks' x (columns 0 and 1), each row's offset term starts its MMA sums and the fold is one
 *    fma per row: 397 -> 348 SASS instructions per packed chunk (f16); H100 v25 M = 1 0.92-0.97x of the time on the 70B
 *    layers (f16 70B gate_up 1.01x). These forms serve f16: bf16 halves layers run w4a16_gemv at every m skinny takes
 *    (v30; the bf16 forms of v24-v25 were removed with it).
 *  - The 4-bit offset form has the same m = 1 form (FORM_OFFSET_M1: f16 activations, and bf16 with zero points): token 0
 *    in every lane, lane 1 holding k16 steps 1 and 3, so two all-ones MMAs per chunk sum the group's x, and the fold takes
 *    column 0 alone; and every form whose groups are whole chunks but FORM_W8 tests for a fold after step 3 only (one
 *    fold in the loop instead of four). v26 (bench/cuda/NOTES.md), M = 1 against the tree before, in turns: f16 uint4b8
 *    0.94-0.99x (H200) and 0.95-1.00x (H100), bf16 f16-scale uint4b8 (skinny-rounded's exact form) 0.93-0.99x (H200);
 *    FORM_W8 with the one-fold test ran 70B qkv 1.28x slower on both cards, so it keeps the per-step test.
 *  - m <= 16 on sm_90 with K % 128 == 0 and groups of 128-channel multiples (or one) runs w4a16_gemv: 4-bit codes,
 *    8-bit planes and bf16 halves; two chunks per ring stage, x in the ring, advancing copy pointers, bf16 codes as
 *    raw subnormals into the MMA: 182 SASS instructions per 2 KB chunk where FORM_EXACT took 390; H100 v29, M = 1
 *    against the tree before: bf16 0.79-0.97x (70B gate_up 93.4 -> 84.3 us, 93% of read16), f16 0.80-0.98x. v30
 *    (H100, against the tree before v29, in turns): 8-bit M = 1 0.86-0.97x (70B qkv 1.02x), 2-bit 0.81-0.93x (70B
 *    down 1.01x); m = 2..8 (every MMA column kept) 0.76-0.95x; m = 9..16 (two token tiles, one block per SM)
 *    0.69-0.97x on the layers skinny ran before (70B gate_up m = 16 119.9 -> 99.0 us).
 */
#include <type_traits>

#include "w4a16_common.cuh"

namespace cuda_w4a16 {

constexpr int SK_THREADS = 256;
constexpr int SK_WARPS = 8; /* warps along K within a block: 8 x 16 bytes x 32 lanes = 4 KB contiguous per row tile */
/* Per-warp shape: NW 16-row tiles per warp (4: 2 KB per chunk, so per-chunk overheads amortize; 2 for
 * layers with few row tiles, where 4 would leave too few blocks) and a ring of the same 75 KB per block
 * either way (NW 4: 3 chunks = 6 KB in flight per warp; NW 2: 7 chunks = 7 KB). PL: blocks per tile and
 * chunk, 1, or 2 for the 8-bit form (FORM_W8: the low and the high plane's block of the same channels), whose
 * shapes are those of NW PL blocks per chunk. */
template <int NW_, int PL_ = 1>
struct SkShape {
    static constexpr int NW = NW_, PL = PL_;
    static constexpr int STAGES = NW_ * PL_ == 4 ? 4 : 8; /* 5 for NW 4: no faster (rounded form), 2% slower (exact form) */
    /* one ring stage: weights (PL x NW x 512 B, low plane first) | scales (NW x 32 B) | scales_lo (NW x 32 B) |
     * zeros (PL x NW x 16 B, low plane first) */
    static constexpr int OFF_S = PL * NW * MPL_CUDA_W4A16_BLOCK_BYTES, OFF_L = OFF_S + NW * 32, OFF_Z = OFF_L + NW * 32;
    static constexpr int STAGE = OFF_Z + PL * NW * 16;
    static constexpr int SMEM = SK_WARPS * STAGES * STAGE;
    static_assert(STAGE % 16 == 0, "stage alignment");
    static_assert(MPL_CUDA_W4A16_N_ALIGN % (NW * MPL_CUDA_W4A16_NT) == 0, "a block's row tiles stay inside n_pad");
};

/*
 * One k16 step j of the offset form for N row tiles sharing the x fragments xf (MT tiles of 8 tokens):
 * cg[i] += (OFF + code) x from word j of tile i's 16 bytes wv[i], and c1 += sum x (an all-ones A fragment).
 */
template <class A, int N, int MT>
__device__ __forceinline__ void offset_step(float cg[N][MT][4], float c1[MT][4], const uint4 wv[N], int j,
                                            const uint2 xf[MT], bool sumx = true) {
    const uint32_t ones[4] = {A::ONES, A::ONES, A::ONES, A::ONES};
#pragma unroll
    for (int i = 0; i < N; i++) {
        const uint32_t w = j == 0 ? wv[i].x : j == 1 ? wv[i].y : j == 2 ? wv[i].z : wv[i].w;
        uint32_t af[4];
        A::dequant_off(w, af);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) A::mma(cg[i][mt], af, xf[mt].x, xf[mt].y);
    }
    if (sumx)
#pragma unroll
        for (int mt = 0; mt < MT; mt++) A::mma(c1[mt], ones, xf[mt].x, xf[mt].y);
}

/*
 * The offset form on a halves layer (FORM_HALVES): word j of each tile carries k16 step j of two chunks, the 2-bit
 * codes in bits 0-1 (chunk 2v, half H = 0) and 2-3 (chunk 2v + 1, H = 1) of each nibble; halves_off makes half H's
 * registers (OFF + multiplier x code, exact) against that chunk's x fragments xf, and the all-ones MMA sums its x;
 * fold_offset divides the multipliers out. Per 8 weights: the 4-bit form's MMAs, fewer logic ops (no mask of 4).
 */
template <class A, int N, int MT, int H, bool SUMX = true>
__device__ __forceinline__ void half_step(float cg[N][MT][4], float c1[MT][4], const uint4 wv[N], int j,
                                          const uint2 xf[MT]) {
    const uint32_t ones[4] = {A::ONES, A::ONES, A::ONES, A::ONES};
#pragma unroll
    for (int i = 0; i < N; i++) {
        const uint32_t w = j == 0 ? wv[i].x : j == 1 ? wv[i].y : j == 2 ? wv[i].z : wv[i].w;
        uint32_t af[4];
        halves_off<A, H>(w, af);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) A::mma(cg[i][mt], af, xf[mt].x, xf[mt].y);
    }
    if (SUMX)
#pragma unroll
        for (int mt = 0; mt < MT; mt++) A::mma(c1[mt], ones, xf[mt].x, xf[mt].y);
}

/* FORM_HALVES_M1: c1 = the sums of x chunks 2c (column 0, e 0) and 2c + 1 (column 1, e 1) of lane t = 0, one all-ones
 * MMA per k16 step on load_x_halves_m1's fragments xd[0..3]. */
template <class A>
__device__ __forceinline__ void sum_x_m1(float c1[4], uint2 (*xd)[1]) {
    const uint32_t ones[4] = {A::ONES, A::ONES, A::ONES, A::ONES};
#pragma unroll
    for (int e = 0; e < 4; e++) c1[e] = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; j++) A::mma(c1, ones, xd[j][0].x, xd[j][0].y);
}

/* A row tile's group scales for lane rows g (s_g) and g + 8 (s_g8) from the pair hi / lo (scale_value's formats). */
__device__ __forceinline__ void row_scales(uint32_t hi, uint32_t lo, int fmt, float &s_g, float &s_g8) {
    s_g = scale_value(hi & 0xffffu, lo & 0xffffu, fmt);
    s_g8 = scale_value(hi >> 16, lo >> 16, fmt);
}

/*
 * The offset form's fold of one row tile: cg holds sum (OFF + M code) x over the group's k16 steps, c1 the
 * same steps' sum x (columns 2t, 2t + 1); (sum (OFF + M code) x) - (OFF + M zero) sum x = M sum (code - zero) x,
 * then the group scale over M, into acc for rows g (e 0, 1, multiplier MG) and g + 8 (e 2, 3, MG8). The 4-bit form's
 * multipliers are 1 and 16 (f16: nibbles 1 and 5 read in place) or 1 (bf16); a halves chunk's are halves_mul's, so
 * its half H folds with fold_offset<A, MT, halves_mul<A, H, false>(), halves_mul<A, H, true>()> (powers of two:
 * exact). hi/lo: the two rows' scales (scale_value), zz: their zero points (low byte row g), cg is reset.
 */
template <class A, int MT, int MG = 1, int MG8 = A::G8_MUL>
__device__ __forceinline__ void fold_offset(float acc[MT][4], float cg[MT][4], const float c1[MT][4], uint32_t hi,
                                            uint32_t lo, uint32_t zz, int fmt) {
    float s_g, s_g8;
    row_scales(hi, lo, fmt, s_g, s_g8);
    s_g *= 1.0f / (float)MG;
    s_g8 *= 1.0f / (float)MG8;
    const float z_g = (float)(zz & 0xffu), z_g8 = (float)(zz >> 8);
    const float o_g = A::OFF + (float)MG * z_g, o_g8 = A::OFF + (float)MG8 * z_g8;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float d[4] = {fmaf(-o_g, c1[mt][0], cg[mt][0]), fmaf(-o_g, c1[mt][1], cg[mt][1]), fmaf(-o_g8, c1[mt][0], cg[mt][2]),
                      fmaf(-o_g8, c1[mt][1], cg[mt][3])};
        acc[mt][0] = fmaf(s_g, d[0], acc[mt][0]);
        acc[mt][1] = fmaf(s_g, d[1], acc[mt][1]);
        acc[mt][2] = fmaf(s_g8, d[2], acc[mt][2]);
        acc[mt][3] = fmaf(s_g8, d[3], acc[mt][3]);
#pragma unroll
        for (int e = 0; e < 4; e++) cg[mt][e] = 0.0f;
    }
}

/* The offset form's fold at m = 1 (FORM_OFFSET_M1): column 0 alone (e 0: row g, e 2: row g + 8), sx the group's sum of
 * x (c1's columns 0 and 1 added: load_x_chunk_m1); otherwise fold_offset's arithmetic. */
template <class A>
__device__ __forceinline__ void fold_offset_m1(float acc[4], float cg[4], float sx, uint32_t hi, uint32_t lo, uint32_t zz, int fmt) {
    float s_g, s_g8;
    row_scales(hi, lo, fmt, s_g, s_g8);
    s_g8 *= 1.0f / (float)A::G8_MUL;
    const float z_g = (float)(zz & 0xffu), z_g8 = (float)(zz >> 8);
    acc[0] = fmaf(s_g, fmaf(-(A::OFF + z_g), sx, cg[0]), acc[0]);
    acc[2] = fmaf(s_g8, fmaf(-(A::OFF + (float)A::G8_MUL * z_g8), sx, cg[2]), acc[2]);
#pragma unroll
    for (int e = 0; e < 4; e++) cg[e] = 0.0f;
}

/*
 * Subnormal-form step (bf16, A::nib_sub): N row tiles, word j of each tile's 16 bytes, one fma.bf16x2 per
 * register with the tile's constants (rows g: mul_q / add_g, rows g+8: mul_16q / add_g8), then the MMA into
 * d. Exact form (FORM_EXACT): mul = 2^127 / 2^123, add = -8 2^-6, so d sums (code - 8) 2^-6 x exactly and
 * the fold applies 64 s. Rounded form (FORM_ROUNDED): mul = s 2^(133 - KR) / s 2^(129 - KR), add = -8 s
 * 2^-KR, so each register is round((code - 8) s) 2^-KR (one rounding) and d is the output times 2^-KR.
 */
template <class A, int N, int MT>
__device__ __forceinline__ void sub_step(float d[N][MT][4], const uint4 wv[N], int j, const uint2 xf[MT],
                                         const uint32_t mul_q[N], const uint32_t mul_16q[N], const uint32_t add_g[N],
                                         const uint32_t add_g8[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) {
        const uint32_t w = j == 0 ? wv[i].x : j == 1 ? wv[i].y : j == 2 ? wv[i].z : wv[i].w;
        uint32_t af[4];
        ActBF16::nib_sub(w, af);
        af[0] = ActBF16::fma2(af[0], mul_q[i], add_g[i]);
        af[1] = ActBF16::fma2(af[1], mul_16q[i], add_g8[i]);
        af[2] = ActBF16::fma2(af[2], mul_q[i], add_g[i]);
        af[3] = ActBF16::fma2(af[3], mul_16q[i], add_g8[i]);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) A::mma(d[i][mt], af, xf[mt].x, xf[mt].y);
    }
}

/*
 * 8-bit step (FORM_W8): N row tiles, word j of each tile's low-plane (wv) and high-plane (wh) 16 bytes, rebuilt
 * into the byte codes and made c - z exactly (times 2^-6 for bf16) by dequant8 (one prmt and one fma per register,
 * the fma on the FMA pipe), then one MMA per tile: one MMA and 8 logic-pipe ops per 8 weights, where the two planes
 * as 4-bit codes (the offset form) take two MMAs and 14.
 */
template <class A, int N, int MT>
__device__ __forceinline__ void w8_step(float d[N][MT][4], const uint4 wv[N], const uint4 wh[N], int j, const uint2 xf[MT],
                                        const uint32_t add_g[N], const uint32_t add_g8[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) {
        const uint32_t w = j == 0 ? wv[i].x : j == 1 ? wv[i].y : j == 2 ? wv[i].z : wv[i].w;
        const uint32_t h = j == 0 ? wh[i].x : j == 1 ? wh[i].y : j == 2 ? wh[i].z : wh[i].w;
        uint32_t af[4];
        dequant8<A>(w, h, add_g[i], add_g8[i], af);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) A::mma(d[i][mt], af, xf[mt].x, xf[mt].y);
    }
}

/* The fold of the exact forms for one row tile: acc += (MUL s) cg, cg reset (hi/lo as fold_offset; MUL: 64 for the
 * subnormal form and bf16 FORM_W8, whose sums come out times 2^-6; 1 for f16 FORM_W8). */
template <class A, int MT>
__device__ __forceinline__ void fold_sub(float acc[MT][4], float cg[MT][4], uint32_t hi, uint32_t lo, int fmt, float mul) {
    float s_g, s_g8;
    row_scales(hi, lo, fmt, s_g, s_g8);
    s_g *= mul;
    s_g8 *= mul;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        acc[mt][0] = fmaf(s_g, cg[mt][0], acc[mt][0]);
        acc[mt][1] = fmaf(s_g, cg[mt][1], acc[mt][1]);
        acc[mt][2] = fmaf(s_g8, cg[mt][2], acc[mt][2]);
        acc[mt][3] = fmaf(s_g8, cg[mt][3], acc[mt][3]);
#pragma unroll
        for (int e = 0; e < 4; e++) cg[mt][e] = 0.0f;
    }
}

/* Rounded form: the bf16 scale pair hi = (s_g, s_g8) -> the tile's fma constants (KR = 20: scales below 2^15
 * in magnitude keep s 2^113 finite; weights |w s| >= 2^-106 stay normal, so the rounding is round-to-bf16 of
 * w s exactly). */
constexpr int KR = 20;
__device__ __forceinline__ void rounded_consts(uint32_t hi, uint32_t &mq, uint32_t &m16, uint32_t &ag, uint32_t &ag8) {
    const uint32_t sg = __byte_perm(hi, 0u, 0x1010), sg8 = __byte_perm(hi, 0u, 0x3232);
    mq = ActBF16::mul2(sg, 0x78007800u);   /* s_g 2^113 */
    m16 = ActBF16::mul2(sg8, 0x76007600u); /* s_g8 2^109 */
    ag = ActBF16::mul2(sg, 0xB700B700u);   /* -8 s_g 2^-20 */
    ag8 = ActBF16::mul2(sg8, 0xB700B700u);
}

/* x fragments of one chunk: for each k16 step j and m tile, lane (g, t) holds
 * x[mt*8 + g][c*64 + 16j + 4t .. +3] (zeros past m or k). */
template <int MT>
__device__ __forceinline__ void load_x_chunk(const mpl_cuda_w4a16_args &a, int c, int g, int t, uint2 (*xf)[MT]) {
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            int m = mt * 8 + g, k = c * MPL_CUDA_W4A16_KC + 16 * j + 4 * t;
            xf[j][mt] = make_uint2(0u, 0u);
            /* k is a multiple of 4 and K of 8, so k < K means all four are inside. */
            if (m < a.m && k < a.k)
                xf[j][mt] = *reinterpret_cast<const uint2 *>((const uint16_t *)a.x + (size_t)m * a.k + k);
        }
}

/* FORM_OFFSET_M1 (m = 1): every lane takes token 0 (load_x_chunk's bounds), lane g = 1 holds k16 steps 1 and 3 in
 * xd[0] and xd[2], so the all-ones MMAs on xd[0] and xd[2] sum steps 0 and 2 in column 0 and steps 1 and 3 in column 1
 * (two per chunk instead of four). Columns 1..7 of the weight MMAs are never stored (m = 1). */
__device__ __forceinline__ void load_x_chunk_m1(const mpl_cuda_w4a16_args &a, int c, int g, int t, uint2 (*xd)[1]) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int k = c * MPL_CUDA_W4A16_KC + 16 * (g == 1 ? j | 1 : j) + 4 * t;
        xd[j][0] = k < a.k ? *reinterpret_cast<const uint2 *>((const uint16_t *)a.x + k) : make_uint2(0u, 0u);
    }
}

/* x fragments of packed chunk c of a halves layer: x chunks 2c (xd[0..3]) and 2c + 1 (xd[4..7]) as load_x_chunk.
 * K % 128 == 0 (mpl_cuda_w4a16_halves_fits), so a packed chunk below k / 128 has both inside K: one bound per row. */
template <int MT>
__device__ __forceinline__ void load_x_halves(const mpl_cuda_w4a16_args &a, int c, int g, int t, uint2 (*xd)[MT]) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int m = mt * 8 + g;
        const bool in = m < a.m && c < (a.k >> 7);
        const uint2 *p = reinterpret_cast<const uint2 *>((const uint16_t *)a.x + (in ? (size_t)m * a.k + (size_t)c * 128 + 4 * t : 0));
#pragma unroll
        for (int j = 0; j < 8; j++) xd[j][mt] = in ? p[(j >> 2) * 16 + (j & 3) * 4] : make_uint2(0u, 0u);
    }
}

/* FORM_HALVES_M1 (m = 1): every lane takes token 0, lane g = 1 with its two chunks swapped: xd[0..3] of lane 1 hold x chunk
 * 2c + 1, so B column 1 of the all-ones MMA on xd[0..3] sums chunk 2c + 1 while column 0 sums chunk 2c (one all-ones MMA
 * per k16 step for both halves). Columns 1..7 of the weight MMAs are never stored (m = 1). */
__device__ __forceinline__ void load_x_halves_m1(const mpl_cuda_w4a16_args &a, int c, int g, int t, uint2 (*xd)[1]) {
    const bool in = c < (a.k >> 7);
    const uint2 *p = reinterpret_cast<const uint2 *>((const uint16_t *)a.x + (in ? (size_t)c * 128 + 4 * t : 0));
    const uint2 *p0 = p + (g == 1 ? 16 : 0), *p1 = p + (g == 1 ? 0 : 16);
#pragma unroll
    for (int j = 0; j < 4; j++) {
        xd[j][0] = in ? p0[4 * j] : make_uint2(0u, 0u);
        xd[4 + j][0] = in ? p1[4 * j] : make_uint2(0u, 0u);
    }
}

/* Copies of chunk c into one ring stage: each lane its own 16 bytes of each block (it alone reads
 * them back), and with CHUNK_GROUP a few lanes the group's scales and zeros for the whole warp. */
template <int NW, int PL, bool ZP, bool CHUNK_GROUP>
__device__ __forceinline__ void sk_issue(const mpl_cuda_w4a16_args &a, int fmt, int nt0, int KC, int KL, int c, int lane,
                                         unsigned char *st) {
    using Sh = SkShape<NW, PL>;
    const uint4 *wq = reinterpret_cast<const uint4 *>(a.qweight);
#pragma unroll
    for (int p = 0; p < PL; p++) /* PL = 2: the high plane's chunk of the same channels is KL + c */
#pragma unroll
        for (int i = 0; i < NW; i++)
            cp_async16(st + (p * NW + i) * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16, wq + ((size_t)(nt0 + i) * KC + p * KL + c) * 32 + lane, 16);
    if (CHUNK_GROUP && lane < (4 + PL) * NW) {
        size_t row0 = (size_t)group_of_step(c * 4, a.inv_gs16) * a.n_pad + (size_t)nt0 * 16;
        if (lane < 2 * NW) /* scales: 32 bytes per row tile */
            cp_async16(st + Sh::OFF_S + lane * 16, a.scales + row0 + lane * 8, 16);
        else if (lane < 4 * NW) {
            if (fmt == MPL_CUDA_W4A16_SCALE_F32) cp_async16(st + Sh::OFF_L + (lane - 2 * NW) * 16, a.scales_lo + row0 + (lane - 2 * NW) * 8, 16);
        } else if (ZP) { /* zeros: 16 bytes per row tile (PL = 2: then the high plane's, whose groups follow) */
            const int zi = lane - 4 * NW;
            if (zi >= NW) row0 = (size_t)group_of_step((KL + c) * 4, a.inv_gs16) * a.n_pad + (size_t)nt0 * 16;
            cp_async16(st + Sh::OFF_Z + zi * 16, a.zeros + row0 + (zi % NW) * 16, 16);
        }
    }
}

/* Slot i's zero points in ring stage st, rows g (low byte) and g + 8 (FORM_W8: slot NW + i holds the high plane's). */
template <class Sh>
__device__ __forceinline__ uint32_t stage_zero(const unsigned char *st, int i, int g) {
    return *reinterpret_cast<const uint16_t *>(st + Sh::OFF_Z + i * 16 + 2 * g);
}

/* Row tile i's group constants for lane row g from ring stage st: the scales (hi: rows g and g + 8; lo: their low
 * halves with f32 scales, else 0) and, with ZP, the zero points (low byte row g); else zz keeps the caller's default. */
template <class Sh, bool ZP>
__device__ __forceinline__ void stage_group(const unsigned char *st, int i, int g, int fmt, uint32_t &hi, uint32_t &lo,
                                            uint32_t &zz) {
    hi = *reinterpret_cast<const uint32_t *>(st + Sh::OFF_S + i * 32 + 4 * g);
    lo = fmt == MPL_CUDA_W4A16_SCALE_F32 ? *reinterpret_cast<const uint32_t *>(st + Sh::OFF_L + i * 32 + 4 * g) : 0u;
    if (ZP) zz = stage_zero<Sh>(st, i, g);
}
/* row tile i's two group scales from its ring stage (stage_group, row_scales) */
template <class Sh>
__device__ __forceinline__ void stage_scales(const unsigned char *st, int i, int g, int fmt, float &s_g, float &s_g8) {
    uint32_t hi, lo, zz;
    stage_group<Sh, false>(st, i, g, fmt, hi, lo, zz);
    row_scales(hi, lo, fmt, s_g, s_g8);
}

/*
 * The end of a skinny-path block (w4a16_skinny, w4a16_gemv): every warp's ring drained, the 8 warps' accumulators
 * reduced in a fixed order through the ring's shared memory (smem, SMEM bytes), then the cluster's blocks (split-K
 * over gridDim.y, fixed order over distributed shared memory), bias added and y stored for the block's NW row tiles.
 */
template <class A, int NW, int MT, int SMEM>
__device__ __forceinline__ void sk_reduce_store(const mpl_cuda_w4a16_args &a, const float (&acc)[NW][MT][4], unsigned char *smem,
                                                int nt0, int S, int split) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    cp_async_wait<0>();
    __syncthreads(); /* every ring drained: the shared memory is reused below */

    /* Reduce the 8 warps (fixed order), then the cluster's blocks (fixed order), then store. */
    constexpr int R = NW * MT * 4;           /* accumulators per lane */
    constexpr int TN = NW * 16, TM = MT * 8; /* block tile: rows of N x columns of M */
    static_assert(SK_WARPS * R * 32 * 4 <= SMEM, "reduction fits in the ring");
    float *red = reinterpret_cast<float *>(smem); /* [warp][R][32] */
    __shared__ float tile[TM][TN + 1];
#pragma unroll
    for (int i = 0; i < NW; i++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) red[(warp * R + (i * MT + mt) * 4 + e) * 32 + lane] = acc[i][mt][e];
    __syncthreads();
    for (int v = threadIdx.x; v < R * 32; v += SK_THREADS) {
        int r = v >> 5, l = v & 31;
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < SK_WARPS; w++) s += red[(w * R + r) * 32 + l];
        int e = r & 3, mt = (r >> 2) % MT, i = (r >> 2) / MT;
        int nl = i * 16 + (l >> 2) + 8 * (e >> 1), ml = mt * 8 + 2 * (l & 3) + (e & 1);
        tile[ml][nl] = s;
    }
    __syncthreads();
    const int E = TM * TN;
    int e0 = 0, e1 = E;
    if (S > 1) {
        cluster_sync();
        e0 = E * split / S;
        e1 = E * (split + 1) / S;
    }
    for (int e = e0 + threadIdx.x; e < e1; e += SK_THREADS) {
        int ml = e / TN, nl = e % TN;
        int n = nt0 * 16 + nl;
        if (ml >= a.m || n >= a.n) continue;
        float s;
        if (S > 1) {
            s = 0.0f;
            for (int q = 0; q < S; q++) s += cluster_peer(&tile[0][0], q)[ml * (TN + 1) + nl];
        } else {
            s = tile[ml][nl];
        }
        s += bias_value<A>(a.bias, n);
        ((uint16_t *)a.y)[(size_t)ml * a.n + n] = A::from_float(s);
    }
    if (S > 1) cluster_sync(); /* keep this block's shared memory alive while peers read it */
}

/*
 * The end of a w4a16_gemv block with a block-shared x (BX): each warp holds the sums of its own NW row tiles over the
 * block's whole K range, so nothing is reduced across warps: the accumulators go into the block's token-major tile in
 * the drained rings (LD floats per token row, 8 NW row tiles from row tile n0 / 16), then tile_store (split-K over the
 * cluster in rank order, bias, 16-byte stores).
 */
template <class A, int NW, int MT, int LD>
__device__ __forceinline__ void sk_bx_store(const mpl_cuda_w4a16_args &a, const float (&acc)[NW][MT][4], unsigned char *smem,
                                            int n0, int S, int split) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    cp_async_wait<0>();
    __syncthreads(); /* every ring drained: the tile reuses them */
    float *tile = reinterpret_cast<float *>(smem);
#pragma unroll
    for (int i = 0; i < NW; i++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                tile[(mt * 8 + 2 * t + (e & 1)) * LD + (warp * NW + i) * 16 + g + 8 * (e >> 1)] = acc[i][mt][e];
    __syncthreads();
    tile_store<A, SK_WARPS * NW * 16, LD, SK_THREADS>(a, tile, MT * 8, 0, n0 * MPL_CUDA_W4A16_NT, S, split, threadIdx.x);
}

/*
 * CHUNK_GROUP: every 64-channel chunk lies in one group (group size a multiple of 64, or one
 * group), so scales and zeros ride in the ring with the weights; otherwise they are fetched per
 * k16 step from global memory, at the cost of exposed latency (uncommon group sizes).
 *
 * Each warp runs its own cp.async ring over its chunks (c = first, first + 8, ...): no block
 * barrier in the loop, and STAGES - 1 chunks stay in flight while one is computed.
 */
/* Inner-loop forms (see sub_step, w8_step, half_step): the offset form (f16, and bf16 with zero points), the exact
 * subnormal form (bf16), the rounded subnormal form (bf16, uint4b8, bf16 scales: path cuda_w4a16:skinny-rounded), the
 * 8-bit form (both planes of a chunk, PL = 2; exact), the offset form on a halves layer (2-bit: two x chunks per
 * packed chunk; exact; f16: bf16 halves run w4a16_gemv) and its m = 1 form. */
enum { FORM_OFFSET = 0, FORM_EXACT = 1, FORM_ROUNDED = 2, FORM_W8 = 3, FORM_HALVES = 4, FORM_HALVES_M1 = 5, FORM_OFFSET_M1 = 6 };

template <class A, bool ZP, int MT, bool CHUNK_GROUP, int NW, int FORM, int SF>
__global__ void __launch_bounds__(SK_THREADS, 2) w4a16_skinny(const mpl_cuda_w4a16_args a) {
    /* the scale format: SF, or a.scale_fmt where SF < 0 (launch_one) */
    const int fmt = SF >= 0 ? SF : a.scale_fmt;
    constexpr int PL = FORM == FORM_W8 ? 2 : 1;
    using Sh = SkShape<NW, PL>;
    constexpr bool HV = FORM == FORM_HALVES || FORM == FORM_HALVES_M1; /* a halves layer */
    constexpr bool M1 = FORM == FORM_HALVES_M1;
    static_assert(!M1 || MT == 1, "FORM_HALVES_M1: m = 1");
    constexpr bool OM1 = FORM == FORM_OFFSET_M1; /* the offset form at m = 1 (groups of whole chunks) */
    static_assert(!OM1 || (MT == 1 && CHUNK_GROUP), "FORM_OFFSET_M1: m = 1, groups of whole chunks");
    constexpr bool OFF = FORM == FORM_OFFSET || OM1 || HV; /* the offset form's fold (sum x, zero offset) */
    /* halves: f16 (bf16 halves layers run w4a16_gemv) */
    static_assert(!HV || A::id == MPL_CUDA_W4A16_ACT_F16, "halves forms: f16");
    /* x fragments kept: 4 k16 steps; halves prefetched: both x chunks of the packed chunk (else loaded per half) */
    constexpr int XS = HV && MT == 1 ? 8 : 4;
    static_assert(OFF || FORM == FORM_W8 || A::id == MPL_CUDA_W4A16_ACT_BF16, "subnormal forms: bf16 only");
    static_assert(OFF || FORM == FORM_W8 || !ZP, "subnormal forms: uint4b8 only (skinny-rounded refuses zero points)");
    static_assert(FORM != FORM_W8 || ZP, "8-bit layers carry zero points (both planes')");
    /* bf16 8-bit weights come out of dequant8 as (c - z) 2^-6: their scale is 2^6 s */
    constexpr float W8_MUL = A::id == MPL_CUDA_W4A16_ACT_BF16 ? 64.0f : 1.0f;
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int KC = a.k_pad >> MPL_CUDA_W4A16_KC_SHIFT;             /* chunks per row tile */
    const int KL = PL == 2 ? a.planes_k >> MPL_CUDA_W4A16_KC_SHIFT : KC; /* chunks the loop runs (PL = 2: one plane's) */
    const int S = gridDim.y, split = blockIdx.y;
    const int c_begin = (int)((long long)KL * split / S), c_end = (int)((long long)KL * (split + 1) / S);
    const int nt0 = blockIdx.x * Sh::NW;
    const uint32_t *sc32 = reinterpret_cast<const uint32_t *>(a.scales);
    const uint32_t *sl32 = reinterpret_cast<const uint32_t *>(a.scales_lo);
    const uint16_t *z16 = reinterpret_cast<const uint16_t *>(a.zeros);
    unsigned char *ring = smem + warp * (Sh::STAGES * Sh::STAGE);

    float acc[Sh::NW][MT][4];
#pragma unroll
    for (int i = 0; i < Sh::NW; i++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][mt][e] = 0.0f;

    /* each warp a contiguous run of chunks: groups end inside a run, so most chunks need no fold */
    const int first = c_begin + (c_end - c_begin) * warp / SK_WARPS;
    const int count = c_begin + (c_end - c_begin) * (warp + 1) / SK_WARPS - first;
#pragma unroll
    for (int s = 0; s < Sh::STAGES - 1; s++) {
        if (s < count) sk_issue<NW, PL, ZP, CHUNK_GROUP>(a, fmt, nt0, KC, KL, first + s, lane, ring + s * Sh::STAGE);
        cp_async_commit();
    }
    float cg[Sh::NW][MT][4]; /* the current group's partial sums (offset form: of (OFF + code) * x) */
    float c1[MT][4];         /* offset form: the same steps' sums of x (all-ones A fragment): e 0/2 column 2t, 1/3 column 2t+1 */
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            c1[mt][e] = 0.0f;
#pragma unroll
            for (int i = 0; i < Sh::NW; i++) cg[i][mt][e] = 0.0f;
        }
    /* subnormal forms: the fma constants of each row tile */
    uint32_t mq[Sh::NW], m16[Sh::NW], ag[Sh::NW], ag8[Sh::NW];
#pragma unroll
    for (int i = 0; i < Sh::NW; i++) mq[i] = ActBF16::MUL_Q, m16[i] = ActBF16::MUL_16Q, ag[i] = ag8[i] = 0xBE00BE00u; /* -8 2^-6 */
    /* x one chunk ahead (its latency hides behind this chunk's MMAs): m <= 8, and m <= 16 in the rounded
     * form (94 registers without the second copy); the m > 8 offset and exact forms would spill (125-128). */
    constexpr bool PREFETCH_X = MT == 1 || FORM == FORM_ROUNDED;
    static_assert(!HV || PREFETCH_X == (XS == 8), "halves: x for both chunks, or per half");
    /* halves (XS 8): packed chunk c reads x chunks 2c (xf[0..3]) and 2c + 1 (xf[4..7]) */
    auto load_x = [&](int c, uint2 (*xd)[MT]) {
        if constexpr (M1)
            load_x_halves_m1(a, c, g, t, xd);
        else if constexpr (OM1)
            load_x_chunk_m1(a, c, g, t, xd);
        else if constexpr (XS == 8)
            load_x_halves<MT>(a, c, g, t, xd);
        else
            load_x_chunk<MT>(a, c, g, t, xd);
    };
    uint2 xf[XS][MT];
    if (PREFETCH_X) {
        load_x(first, xf);
        if constexpr (M1) sum_x_m1<A>(c1[0], xf);
    }
    int rem = a.gs16 - (first * 4) % a.gs16; /* k16 steps until the current group ends */
    for (int it = 0; it < count; it++) {
        cp_async_wait<Sh::STAGES - 2>();
        __syncwarp(); /* stage `it` visible to the warp; the stage read last iteration is free */
        {
            int s = it + Sh::STAGES - 1;
            if (s < count) sk_issue<NW, PL, ZP, CHUNK_GROUP>(a, fmt, nt0, KC, KL, first + s, lane, ring + (s % Sh::STAGES) * Sh::STAGE);
            cp_async_commit();
        }
        const int c = first + it;
        const unsigned char *st = ring + (it % Sh::STAGES) * Sh::STAGE;
        /* PREFETCH_X: the next chunk's x now (masked past k); else this chunk's, here */
        uint2 xn[XS][MT];
        if (PREFETCH_X) {
            load_x(c + 1, xn);
        } else if (!HV) {
            load_x(c, xf);
        }
        uint4 wv[Sh::NW], wh[PL == 2 ? Sh::NW : 1];
#pragma unroll
        for (int i = 0; i < Sh::NW; i++) wv[i] = *reinterpret_cast<const uint4 *>(st + i * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
        if constexpr (PL == 2) {
#pragma unroll
            for (int i = 0; i < Sh::NW; i++) wh[i] = *reinterpret_cast<const uint4 *>(st + (Sh::NW + i) * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
            if (CHUNK_GROUP && (it == 0 || rem == a.gs16)) /* the rows' zero constants, where this chunk starts a group */
#pragma unroll
                for (int i = 0; i < Sh::NW; i++)
                    w8_consts<A>(stage_zero<Sh>(st, i, g), stage_zero<Sh>(st, Sh::NW + i, g), ag[i], ag8[i]);
        }
        if (FORM == FORM_ROUNDED && CHUNK_GROUP) {
#pragma unroll
            for (int i = 0; i < Sh::NW; i++) {
                if (FORM == FORM_ROUNDED)
                    rounded_consts(*reinterpret_cast<const uint32_t *>(st + Sh::OFF_S + i * 32 + 4 * g), mq[i], m16[i], ag[i], ag8[i]);
            }
        }
        if constexpr (HV) {
            /* the packed chunk lies in one group: its scales and zeros are in the stage */
            auto fold = [&](auto hc) {
                constexpr int H = decltype(hc)::value;
#pragma unroll
                for (int i = 0; i < Sh::NW; i++) {
                    uint32_t hi, lo, zz = 0x0202u; /* uint2b2: 2 */
                    stage_group<Sh, ZP>(st, i, g, fmt, hi, lo, zz);
                    fold_offset<A, MT, halves_mul<A, H, false>(), halves_mul<A, H, true>()>(acc[i], cg[i], c1, hi, lo, zz, fmt);
                }
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) c1[mt][e] = 0.0f;
            };
            if constexpr (M1) {
                /* m = 1: each row's offset term -(OFF + M z) sum x_H starts its MMA sums (c1 from sum_x_m1: column H sums
                 * x chunk 2c + H, unscaled), so the fold is acc += (s / M) cg for column 0 alone (e 0: row g, e 2: row
                 * g + 8): one pass per half */
                auto pass = [&](auto pc) {
                    constexpr int P = decltype(pc)::value;
#pragma unroll
                    for (int i = 0; i < Sh::NW; i++) {
                        uint32_t zz = 0x0202u; /* uint2b2: 2 */
                        if (ZP) zz = stage_zero<Sh>(st, i, g);
                        const float z_g = (float)(zz & 0xffu), z_g8 = (float)(zz >> 8);
                        cg[i][0][0] = -(A::OFF + (float)halves_mul<A, P, false>() * z_g) * c1[0][P];
                        cg[i][0][2] = -(A::OFF + (float)halves_mul<A, P, true>() * z_g8) * c1[0][P];
                    }
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        if (P == 0) half_step<A, Sh::NW, MT, 0, false>(cg, c1, wv, j, xf[j]);
                        if (P == 1) half_step<A, Sh::NW, MT, 1, false>(cg, c1, wv, j, xf[4 + j]);
                    }
                    constexpr float R_G = 1.0f / (float)halves_mul<A, P, false>(), R_G8 = 1.0f / (float)halves_mul<A, P, true>();
#pragma unroll
                    for (int i = 0; i < Sh::NW; i++) {
                        float s_g, s_g8;
                        stage_scales<Sh>(st, i, g, fmt, s_g, s_g8);
                        acc[i][0][0] = fmaf(s_g * R_G, cg[i][0][0], acc[i][0][0]);
                        acc[i][0][2] = fmaf(s_g8 * R_G8, cg[i][0][2], acc[i][0][2]);
#pragma unroll
                        for (int e = 0; e < 4; e++) cg[i][0][e] = 0.0f;
                    }
                };
                pass(std::integral_constant<int, 0>());
                pass(std::integral_constant<int, 1>());
            } else {
                /* x chunk 2c (half 0), then 2c + 1 (half 1), each folded at once */
                auto half = [&](auto hc) {
                    constexpr int H = decltype(hc)::value;
                    if (!PREFETCH_X) load_x_chunk<MT>(a, 2 * c + H, g, t, xf);
#pragma unroll
                    for (int j = 0; j < 4; j++) half_step<A, Sh::NW, MT, H>(cg, c1, wv, j, xf[PREFETCH_X ? 4 * H + j : j]);
                    fold(hc);
                };
                half(std::integral_constant<int, 0>());
                half(std::integral_constant<int, 1>());
            }
        }
#pragma unroll
        for (int j = 0; j < 4 && !HV; j++) {
            const int grp = CHUNK_GROUP ? 0 : group_of_step(c * 4 + j, a.inv_gs16);
            if (FORM == FORM_ROUNDED) {
                /* no fold: the scales are in the weights */
                if (!CHUNK_GROUP)
#pragma unroll
                    for (int i = 0; i < Sh::NW; i++)
                        rounded_consts(__ldg(sc32 + ((size_t)grp * a.n_pad + (size_t)(nt0 + i) * 16) / 2 + g), mq[i], m16[i], ag[i], ag8[i]);
                sub_step<A, Sh::NW, MT>(acc, wv, j, xf[j], mq, m16, ag, ag8);
                continue;
            }
            if constexpr (FORM == FORM_W8) {
                if (!CHUNK_GROUP) /* this step's group's zero constants (low plane group grp, high plane's after it) */
#pragma unroll
                    for (int i = 0; i < Sh::NW; i++) {
                        const int gh = group_of_step((KL + c) * 4 + j, a.inv_gs16);
                        const size_t row = (size_t)(nt0 + i) * 16;
                        w8_consts<A>(__ldg(z16 + ((size_t)grp * a.n_pad + row) / 2 + g), __ldg(z16 + ((size_t)gh * a.n_pad + row) / 2 + g),
                                     ag[i], ag8[i]);
                    }
                w8_step<A, Sh::NW, MT>(cg, wv, wh, j, xf[j], ag, ag8);
            } else if (FORM == FORM_EXACT) {
                sub_step<A, Sh::NW, MT>(cg, wv, j, xf[j], mq, m16, ag, ag8);
            } else {
                /* m = 1: the x sums of steps 0 and 2 (column 0) and 1 and 3 (column 1: load_x_chunk_m1) */
                offset_step<A, Sh::NW, MT>(cg, c1, wv, j, xf[j], !OM1 || j % 2 == 0);
            }
            /* Fold the finished partial sums into acc with the group scale where a group
             * ends, and at the end of the warp's run. */
            bool fold;
            /* rem stays a multiple of 4 (gs16 % 4 == 0, runs start on chunks): groups end after step 3. Not FORM_W8: its
             * 70B qkv (M = 1) ran 1.28x slower so, on both the H200 and the H100 (bench/cuda/NOTES.md v26) */
            if (CHUNK_GROUP && FORM != FORM_W8)
                fold = j == 3 && ((rem -= 4) == 0 || it == count - 1);
            else
                fold = --rem == 0 || (j == 3 && it == count - 1);
            if (rem == 0) rem = a.gs16;
            if (fold) {
#pragma unroll
                for (int i = 0; i < Sh::NW; i++) {
                    uint32_t hi, lo = 0u, zz = 0x0808u;
                    if (CHUNK_GROUP) {
                        stage_group<Sh, ZP && OFF>(st, i, g, fmt, hi, lo, zz);
                    } else {
                        size_t at = ((size_t)grp * a.n_pad + (size_t)(nt0 + i) * 16) / 2 + g;
                        hi = __ldg(sc32 + at);
                        if (fmt == MPL_CUDA_W4A16_SCALE_F32) lo = __ldg(sl32 + at);
                        if (ZP && OFF) zz = __ldg(z16 + at);
                    }
                    if constexpr (OM1)
                        fold_offset_m1<A>(acc[i][0], cg[i][0], c1[0][0] + c1[0][1], hi, lo, zz, fmt);
                    else if (FORM == FORM_EXACT)
                        fold_sub<A, MT>(acc[i], cg[i], hi, lo, fmt, ActBF16::SUB_SCALE);
                    else if (FORM == FORM_W8)
                        fold_sub<A, MT>(acc[i], cg[i], hi, lo, fmt, W8_MUL);
                    else
                        fold_offset<A, MT>(acc[i], cg[i], c1, hi, lo, zz, fmt);
                }
                if (OFF)
#pragma unroll
                    for (int mt = 0; mt < MT; mt++)
#pragma unroll
                        for (int e = 0; e < 4; e++) c1[mt][e] = 0.0f;
            }
        }
        if (PREFETCH_X) {
#pragma unroll
            for (int j = 0; j < XS; j++)
#pragma unroll
                for (int mt = 0; mt < MT; mt++) xf[j][mt] = xn[j][mt];
            if constexpr (M1) sum_x_m1<A>(c1[0], xf);
        }
    }
    if (FORM == FORM_ROUNDED)
#pragma unroll
        for (int i = 0; i < Sh::NW; i++)
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][mt][e] *= (float)(1 << KR); /* exact */
    sk_reduce_store<A, Sh::NW, MT, Sh::SMEM>(a, acc, smem, nt0, S, split);
}

/*
 * m <= 16 (w4a16_gemv, the skinny paths' kernel at m <= 16 where the groups are 128-channel multiples or one and K a
 * multiple of 128; 8-bit planes and bf16 halves layers too): the skinny block (8 warps along K, NW row tiles, split-K
 * over a cluster, sk_reduce_store) with a loop cut to what a few tokens need (MX: 1 token, up to 8 -- every column of
 * the m16n8k16 MMA at the cost of one -- or 16, two token tiles at one block per SM), because at m = 1 the consumer
 * warps' instruction stream is the limit, not the
 * memory pattern: the skinny pattern alone (bench_cuda_bw --patterns, no arithmetic) reads 98% of read16 on the 70B
 * MLP layers, while skinny-rounded ran them at 72-76% of read16 on an H200 with 390 SASS instructions per 2 KB chunk
 * (bench/cuda/NOTES.md v29). Per warp and ring stage: two 64-channel chunks of its NW tiles (4 KB at NW 4), so the copy
 * issue, the group's scales and the fold come once per 128 channels; x for both chunks in the stage (no bounds:
 * K % 128 == 0); per 8 weights 1 shift + 4 lop3 + 1 MMA:
 *   bf16: the codes as raw bf16 subnormals (ActBF16::nib_sub: q 2^-133 for rows g, 16 q 2^-133 for rows g + 8), which
 *         mma.sync takes exactly (bench_cuda_bw --mma-sub: 512 products, none flushed, error 0), against x 2^64 (one
 *         mul per x register, exact for |x| < 2^64) so that the products stay normal in f32: no fma per weight pair;
 *   f16:  ActF16::dequant_off (1024 + q, 1024 + 16 q).
 * The sums of x (c1) in the products' scale: MX > 1 one MMA per k16 step with the constant A = SUM (every column
 * counts: lane (g, t) reads token row g, and g + 8 for the second tile, and the sum MMA's columns are the tokens' sums);
 * MX = 1 (column 0 alone: e 0 row g, e 2 row g + 8) ONE MMA per stage's 128 x elements (x_sum_m1: each lane's four raw
 * elements in B once, A = 2^-69 (bf16) or 1 (f16), so column n holds the sum of 16 of them and the fold adds the 8
 * columns across the lane quad): 33 MMAs per stage at NW 4 instead of 40, the 32 weight MMAs being the floor (256
 * weights each). The fold takes (OFF + M z) c1 off each row's sum before the group scale: d = sum (q - z) x exactly up
 * to f32 accumulation, rows g + 8 times 16 (M), divided out with the 2^69 (bf16) at the end.
 * Halves layers (GV_HALVES, bf16: two 2-bit codes per nibble, one packed chunk = 128 channels per stage) take the same
 * loop with both halves' codes as subnormals (Gv::dequant_half: 1 shift + 8 lop3 and 2 MMAs per 16 weights), half 1
 * against x 2^62 so that both halves add into one accumulator at one scale. 8-bit layers (GV_W8: two planes, 2 row
 * tiles of both planes per stage, 4 KB as the 4-bit stage) rebuild the byte codes (gv_bytes: 2 shifts, 2 lop3, 4 prmt
 * and 1 MMA per 8 weights), both rows at 1 c, z = zl + 16 zh from the two planes' zero points.
 * H100 v30 (bench/cuda/NOTES.md), M = 1 against the loop before: 8-bit 70B gate_up 168.3 -> 158.0 us (98% of read16),
 * 2-bit 52.3 -> 49.2 (82% of read16 counted at 2 bits).
 * Block-shared x (BX; thirds at m 2..16, the other forms at m 9..16): with the warps along K every warp stages the x of its own k range, M / (bits x NW)
 * bytes of x per byte of weights (thirds at M = 16, NW 2: 2.7), and 16 token rows leave a thirds warp two stages. With
 * BX the block's 8 warps take 8 x NW row tiles (NW <= 2: n_pad, a multiple of 16 tiles, holds them) over the same k
 * range: x is staged once per block (each warp copies MX / 8 of its token rows), a __syncthreads per stage replaces the
 * __syncwarp (the slot the issue refills was read at the iteration before), and sk_bx_store writes each warp's sums
 * with no reduction across warps; split-K through clusters fills the SMs.
 */
/* The layer kinds w4a16_gemv reads: 4-bit codes, halves (bf16 2-bit), two 8-bit planes, thirds (3-bit) */
enum { GV_NIB = 0, GV_HALVES = 1, GV_W8 = 2, GV_THIRDS = 3 };
/* 8-bit: the low-plane word wl and the high-plane word wh of the same eight weights rebuilt into their byte codes c
 * (dequant8's selects and prmt, without its fma), placed under the high byte HI: bf16 HI = 0, c 2^-133 exactly
 * (exponent field 0 or 1); f16 HI = 0x64, 1024 + c. Rows g and g + 8 both at 1 c: 2 shifts + 2 lop3 + 4 prmt per 8. */
template <uint32_t HI>
__device__ __forceinline__ void gv_bytes(uint32_t wl, uint32_t wh, uint32_t a[4]) {
    const uint32_t M = 0x0f0f0f0fu;
    const uint32_t e = (wl & M) | ((wh << 4) & ~M), o = ((wl >> 4) & M) | (wh & ~M);
    a[0] = __byte_perm(e, HI, 0x4240); /* (c0, c4): row g */
    a[1] = __byte_perm(o, HI, 0x4240); /* (c1, c5): row g + 8 */
    a[2] = __byte_perm(e, HI, 0x4341); /* (c2, c6) */
    a[3] = __byte_perm(o, HI, 0x4341); /* (c3, c7) */
}
template <class A>
struct Gv;
template <>
struct Gv<ActBF16> {
    static constexpr uint32_t HI8 = 0u;
    static constexpr uint32_t SUM = 0x00010001u;   /* 2^-133: the codes' scale */
    static constexpr uint32_t SUMX = 0x1D001D00u;  /* 2^-69 = 2^-133 2^64: raw x summed at the products' scale (MX = 1) */
    static constexpr uint32_t XMUL = 0x5F805F80u;  /* 2^64 */
    static constexpr float OFF = 0.0f;
    static constexpr float OUT = 590295810358705651712.0f; /* 2^69 = 2^133 / 2^64 */
    static constexpr bool SCALE_X = true;
    /* M: a nibble's code bits (7 for thirds: bit 3 is the fourth chunk's) */
    template <uint32_t M = 15u>
    __device__ static __forceinline__ void dequant(uint32_t w, uint32_t a[4]) { ActBF16::nib_sub<M>(w, a); }
    /* halves: half H's 2-bit codes as subnormals, rows g at 4^H c 2^-133 and rows g + 8 at 16 4^H c 2^-133 (the f16
     * halves_off masks, no constant OR'd): 1 shift + 8 lop3 per 16 weights */
    template <int H>
    __device__ static __forceinline__ void dequant_half(uint32_t w, uint32_t w8, uint32_t a[4]) {
        constexpr uint32_t LO = H ? 0x000c000cu : 0x00030003u;
        a[0] = w & LO;
        a[1] = w & (LO << 4);
        a[2] = w8 & LO;
        a[3] = w8 & (LO << 4);
    }
};
template <>
struct Gv<ActF16> {
    static constexpr uint32_t SUM = 0x3C003C00u; /* 1 */
    static constexpr uint32_t SUMX = 0x3C003C00u; /* 1: raw x summed (MX = 1) */
    static constexpr uint32_t HI8 = 0x64646464u;
    static constexpr uint32_t XMUL = 0u;
    static constexpr float OFF = 1024.0f;
    static constexpr float OUT = 1.0f;
    static constexpr bool SCALE_X = false;
    template <uint32_t M = 15u>
    __device__ static __forceinline__ void dequant(uint32_t w, uint32_t a[4]) { ActF16::dequant_off<M>(w, a); }
};
static_assert(ActF16::G8_MUL == 16, "w4a16_gemv: rows g + 8 read at 16 times the code in both types");

/* One ring stage of w4a16_gemv: weights (chunk c's NW blocks, then chunk c + 1's; 8-bit: each chunk's low- then
 * high-plane blocks) | x of both chunks (MX token rows of 256 B, 288 B apart when MX > 1) | scales (NW x 32 B) | with
 * f32 scales their low halves (NW x 32 B) | with zero points the zeros (NW x 16 B per plane). At MX = 1: 3 stages of
 * 4.4-4.7 KB per warp at NW 4 (two in flight: 8 KB), 5 of 2.4-2.5 KB at NW 2: at most 112 KB per block, two blocks per
 * SM; MX = 8 keeps two blocks with 2 stages of 6.5-6.8 KB at NW 4; MX = 16 (9 KB stages) one block with 3. x rides in the ring because from registers loaded a stage ahead its L2 latency showed (ncu, H100, 70B gate_up:
 * long-scoreboard stalls 6.45 per issue, bench/cuda/NOTES.md v29) and the second register set cost 16 registers. */
template <int NW_, int SF, bool ZP, int V = GV_NIB, int MX = 1, bool BX = false>
struct GvShape {
    static constexpr int NW = NW_;
    /* chunks per stage: a halves chunk holds 128 channels, as two 4-bit chunks do; thirds: a run, 3 packed chunks = 256 */
    static constexpr int CPS = V == GV_HALVES ? 1 : V == GV_THIRDS ? 3 : 2;
    static constexpr int PL = V == GV_W8 ? 2 : 1;      /* planes: 8-bit stages hold the low and the high plane's blocks */
    /* group slots per stage: a run's 256 channels may span two groups of 128 (thirds fold after each half) */
    static constexpr int GS = V == GV_THIRDS ? 2 : 1;
    /* x: MX token rows of 128 channels (thirds: 256); 8 rows 288 (544) bytes apart, so that the 8 rows' 32-byte pieces a
     * k16 step reads fall in different bank quarters (two wavefronts per 8-byte load, as for one row) */
    static constexpr int XR = (V == GV_THIRDS ? 2 : 1) * 256 + (MX == 1 ? 0 : 32);
    /* x of a stage: MX rows in each warp's stage, or (BX: a block-shared x) once per block, after the warps' rings */
    static constexpr int XS = MX * XR;
    static constexpr int OFF_X = CPS * PL * NW * MPL_CUDA_W4A16_BLOCK_BYTES, OFF_S = OFF_X + (BX ? 0 : XS);
    static constexpr int OFF_L = OFF_S + NW * 32, OFF_Z = OFF_L + (SF == MPL_CUDA_W4A16_SCALE_F32 ? NW * 32 : 0);
    static constexpr int GSLOT = OFF_Z + (ZP ? PL * NW * 16 : 0) - OFF_S; /* one group's constants; slot 1 GSLOT on */
    static constexpr int STAGE = OFF_S + GS * GSLOT;
    /* the measured depth at m = 1 (3 stages of 4 KB of weights, 5 of 2 KB, 5 / 8 halves stages of 2 / 1 KB), fewer where
     * 8 token rows of x would leave no room for two blocks per SM; thirds: as many as fit (not measured) */
    static constexpr int DEPTH = BX ? 8 : V == GV_THIRDS ? 5 : V == GV_HALVES ? (NW_ == 4 ? 5 : 8) : (PL * NW_ == 4 ? 3 : 5);
    /* blocks per SM: two, or one with 16 token rows (their 4.5 KB of x per stage would leave one stage per warp); thirds
     * one from m = 2 (512 bytes of x per token row and stage: at 2 blocks 8 rows leave one stage) */
    static constexpr int BPS = BX || MX == 16 || (V == GV_THIRDS && MX > 1) ? 1 : 2;
    static constexpr int BSTAGE = SK_WARPS * STAGE + (BX ? XS : 0); /* a block's bytes per stage */
    static constexpr int FIT = (228 * 1024 / BPS - 2080 - 1024) / BSTAGE;
    static constexpr int STAGES = DEPTH < FIT ? DEPTH : FIT;
    /* thirds at NW = 4 with 16 token rows, or with f32 scales and zero points at m = 1, leave one stage per warp: the
     * launcher runs those at NW = 2 (launch_gv_mx) */
    static constexpr bool FITS = STAGES >= 2;
    static constexpr int SMEM = STAGES * BSTAGE;
    /* BX: the block's output tile (sk_bx_store: MX token rows of 8 NW row tiles, LD floats apart) reuses the rings */
    static constexpr int BX_LD = SK_WARPS * NW * 16 + 4;
    static_assert(STAGE % 16 == 0 && XS % 16 == 0, "stage alignment");
    static_assert(!BX || (MX > 1 && NW <= 2 && MX * BX_LD * 4 <= SMEM), "BX: token tiles, 8 NW row tiles within n_pad");
    /* BPS blocks per SM (__launch_bounds__(SK_THREADS, BPS)): the rings, sk_reduce_store's 2080-byte tile and the 1 KB
     * the hardware reserves per block, BPS times, within sm_90's 228 KB */
    static_assert(!FITS || BPS * (SMEM + 2080 + 1024) <= 228 * 1024, "BPS w4a16_gemv blocks per SM");
};

template <class A, bool ZP, int NW, int SF, int V, int MX, bool BX>
__global__ void __launch_bounds__(SK_THREADS, GvShape<NW, SF, ZP, V, MX, BX>::BPS) w4a16_gemv(const mpl_cuda_w4a16_args a) {
    using Sh = GvShape<NW, SF, ZP, V, MX, BX>;
    static_assert(Sh::FITS, "two ring stages per warp");
    static_assert(MX == 1 || MX == 8 || MX == 16, "one token, up to 8 (every column of the MMA) or 16 (two token tiles)");
    constexpr int MT = MX == 16 ? 2 : 1; /* token tiles */
    constexpr bool HV = V == GV_HALVES, W8 = V == GV_W8, TH = V == GV_THIRDS;
    constexpr int PL = Sh::PL;
    static_assert(!W8 || ZP, "8-bit layers carry zero points (both planes')");
    static_assert(!HV || A::id == MPL_CUDA_W4A16_ACT_BF16, "halves: bf16 (f16 would need x / 4, inexact below 2^-12)");
    /* chunks and k16 steps per stage (packed ones for halves; x's for thirds, whose gs16 counts them: a run's 16) */
    constexpr int CPS = Sh::CPS, STEPS = TH ? 16 : 4 * CPS;
    using G = Gv<A>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    /* chunks per row tile, per plane (8-bit: the high plane's chunk c is KL + c), stages' worth per row tile */
    const int KC = a.k_pad >> MPL_CUDA_W4A16_KC_SHIFT, KL = KC / PL, KP = KL / CPS;
    const int S = gridDim.y, split = blockIdx.y;
    const int p_begin = (int)((long long)KP * split / S), p_end = (int)((long long)KP * (split + 1) / S);
    /* this warp's first row tile and stages: the block's NW tiles and a K share (warps along K), or (BX) its own NW of
     * the block's 8 NW tiles over the block's whole K range, every warp the same stages */
    const int nt0 = (BX ? blockIdx.x * SK_WARPS + warp : blockIdx.x) * NW;
    const int first = BX ? p_begin : p_begin + (p_end - p_begin) * warp / SK_WARPS;
    const int count = BX ? p_end - p_begin : p_begin + (p_end - p_begin) * (warp + 1) / SK_WARPS - first;
    unsigned char *const ring = smem + warp * (Sh::STAGES * Sh::STAGE), *const ring_end = ring + Sh::STAGES * Sh::STAGE;
    /* BX: the block's x ring after the 8 warps' rings, a stage of MX token rows each */
    unsigned char *const xring = smem + SK_WARPS * Sh::STAGES * Sh::STAGE, *const xring_end = xring + (BX ? Sh::STAGES * Sh::XS : 0);
    /*
     * The copies, from pointers that advance (the loop's address arithmetic was ~95 of ~430 SASS instructions per pair
     * when recomputed from the pair index): this lane's 16 bytes of tile 0's block of the next pair to issue (tile i
     * tstride bytes on, the second chunk 512 bytes on), and the one 16-byte copy of the group's constants it makes, if
     * any (lanes 0 .. 2 NW - 1 the scales, then the f32 scales' low halves, then the zeros; gstride bytes per group).
     */
    const unsigned char *wsrc = reinterpret_cast<const unsigned char *>(a.qweight) +
                                (((size_t)nt0 * KC + CPS * (size_t)first) * 32 + lane) * 16;
    const size_t tstride = (size_t)KC * MPL_CUDA_W4A16_BLOCK_BYTES, pstride = (size_t)KL * MPL_CUDA_W4A16_BLOCK_BYTES;
    const unsigned char *gsrc = nullptr;
    size_t gstride = 0;
    int gdst = -1;
    {
        const size_t row0 = (size_t)group_of_step(first * STEPS, a.inv_gs16) * a.n_pad + (size_t)nt0 * 16;
        if (lane < 2 * NW) {
            gdst = Sh::OFF_S + lane * 16, gsrc = reinterpret_cast<const unsigned char *>(a.scales + row0 + lane * 8), gstride = (size_t)a.n_pad * 2;
        } else if (SF == MPL_CUDA_W4A16_SCALE_F32 && lane < 4 * NW) {
            const int l = lane - 2 * NW;
            gdst = Sh::OFF_L + l * 16, gsrc = reinterpret_cast<const unsigned char *>(a.scales_lo + row0 + l * 8), gstride = (size_t)a.n_pad * 2;
        } else if (ZP && lane >= 4 * NW && lane < (4 + PL) * NW) {
            /* the zeros (8-bit: then the high plane's, whose groups follow the low plane's) */
            const int l = lane - 4 * NW;
            const size_t rz = l < NW ? row0 : (size_t)group_of_step(KL * 4 + first * STEPS, a.inv_gs16) * a.n_pad + (size_t)nt0 * 16;
            gdst = Sh::OFF_Z + l * 16, gsrc = a.zeros + rz + (l % NW) * 16, gstride = (size_t)a.n_pad;
        }
    }
    /* x: MX = 1: lanes 0..15 16 bytes each of the stage's 128 elements; MX = 8 / 16: each lane 16 bytes of rows
     * lane / 16 + 2 q (q < MX / 2), rows past m zero-filled (their MMA columns are never stored); BX: the stage's
     * first element of token row 0 (the lanes' offsets below) */
    const size_t xrow = (size_t)a.k * 2;
    constexpr int RB = TH ? 512 : 256; /* bytes of x per token row and stage */
    const unsigned char *xsrc = reinterpret_cast<const unsigned char *>(a.x) +
                                (BX ? (size_t)first * RB
                                    : ((size_t)first * (TH ? 256 : 128) + (TH && MX == 1 ? lane : lane & 15) * 8) * 2 +
                                          (MX == 1 ? 0 : (size_t)(lane >> 4) * xrow));
    /* BX: the warp copies token rows warp MX / 8 .. + MX / 8 - 1 of each stage's x (RB bytes each): XPL 16-byte copies per
     * lane at most, lane + 32 j of the warp's XPW; xd the destination in the x stage (-1: none), xo the offset from xsrc
     * (rows past m zero-filled: their MMA columns are never stored) */
    constexpr int XPW = BX ? MX / 8 * RB / 16 : 1, XPL = (XPW + 31) / 32;
    int xd[XPL];
    size_t xo[XPL];
    bool xin[XPL];
#pragma unroll
    for (int j = 0; j < XPL; j++) {
        const int c = lane + 32 * j, r = warp * (MX / 8) + c / (RB / 16), col = (c % (RB / 16)) * 16;
        xd[j] = c < XPW ? r * Sh::XR + col : -1;
        xin[j] = r < a.m;
        xo[j] = (size_t)r * xrow + col;
    }
    int irem = a.gs16 - (first * STEPS) % a.gs16; /* k16 steps until the next stage to issue ends its group */
    unsigned char *wst = ring, *wxs = xring;
    auto issue_bx = [&]() {
#pragma unroll
        for (int j = 0; j < XPL; j++)
            if (xd[j] >= 0) cp_async16(wxs + xd[j], xin[j] ? xsrc + xo[j] : xsrc, xin[j] ? 16 : 0);
        wxs = wxs + Sh::XS == xring_end ? xring : wxs + Sh::XS;
    };
    auto issue = [&]() {
        const unsigned char *src = wsrc;
#pragma unroll
        for (int i = 0; i < NW; i++, src += tstride)
#pragma unroll
            for (int h = 0; h < CPS; h++)
#pragma unroll
                for (int p = 0; p < PL; p++) /* block (h PL + p) NW + i: chunk h of the stage, plane p, tile i */
                    cp_async16(wst + ((h * PL + p) * NW + i) * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16,
                               src + h * MPL_CUDA_W4A16_BLOCK_BYTES + p * pstride, 16);
        if constexpr (TH) {
            /* both halves' group constants (slot 1 GSLOT on: the same group unless one ends at the half) and 512 bytes of
             * each token row of x */
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                if (gdst >= 0) cp_async16(wst + gdst + hh * Sh::GSLOT, gsrc, 16);
                if ((irem -= STEPS / 2) == 0) irem = a.gs16, gsrc += gstride;
            }
            if constexpr (BX) {
                issue_bx();
            } else if constexpr (MX == 1) {
                cp_async16(wst + Sh::OFF_X + lane * 16, xsrc, 16);
            } else {
#pragma unroll
                for (int q = 0; q < MX / 2; q++)
#pragma unroll
                    for (int p = 0; p < 2; p++) {
                        const int r = (lane >> 4) + 2 * q;
                        cp_async16(wst + Sh::OFF_X + r * Sh::XR + p * 256 + (lane & 15) * 16,
                                   r < a.m ? xsrc + q * 2 * xrow + p * 256 : xsrc, r < a.m ? 16 : 0);
                    }
            }
            xsrc += 512;
            wsrc += CPS * MPL_CUDA_W4A16_BLOCK_BYTES;
        } else {
        if (gdst >= 0) cp_async16(wst + gdst, gsrc, 16);
        if constexpr (BX) {
            issue_bx();
        } else if constexpr (MX == 1) {
            if (lane < 16) cp_async16(wst + Sh::OFF_X + lane * 16, xsrc, 16);
        } else {
#pragma unroll
            for (int q = 0; q < MX / 2; q++) {
                const int r = (lane >> 4) + 2 * q;
                cp_async16(wst + Sh::OFF_X + r * Sh::XR + (lane & 15) * 16, r < a.m ? xsrc + q * 2 * xrow : xsrc, r < a.m ? 16 : 0);
            }
        }
        xsrc += 256;
        wsrc += CPS * MPL_CUDA_W4A16_BLOCK_BYTES;
        if ((irem -= STEPS) == 0) irem = a.gs16, gsrc += gstride;
        }
        wst = wst + Sh::STAGE == ring_end ? ring : wst + Sh::STAGE;
    };
#pragma unroll
    for (int s = 0; s < Sh::STAGES - 1; s++) {
        if (s < count) issue();
        cp_async_commit();
    }
    float acc[NW][MT][4], cg[NW][MT][4], c1[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            c1[mt][e] = 0.0f;
#pragma unroll
            for (int i = 0; i < NW; i++) acc[i][mt][e] = cg[i][mt][e] = 0.0f;
        }
    /* The fold of the current group's sums with the group constants of stage slot gst (acc += s ((OFF + M z) c1 + cg)) */
    auto fold = [&](const unsigned char *gst) {
            /* MX = 1: the group's sum of x is spread over c1's columns (x_sum_m1): lane t holds columns 2t and 2t + 1 */
            if constexpr (MX == 1) {
                float s1 = c1[0][0] + c1[0][1];
                s1 += __shfl_xor_sync(0xffffffffu, s1, 1);
                c1[0][0] = s1 + __shfl_xor_sync(0xffffffffu, s1, 2);
            }
#pragma unroll
            for (int i = 0; i < NW; i++) {
                uint32_t hi, lo = 0u, zz = HV ? 0x0202u : TH ? 0x0404u : 0x0808u; /* uint4b8: 8; uint2b2 (halves): 2; uint3b4: 4 */
                stage_group<Sh, ZP>(gst, i, g, SF, hi, lo, zz);
                float s_g, s_g8; /* 8-bit: the low plane's scales (the high plane's are 16 s) */
                row_scales(hi, lo, SF, s_g, s_g8);
                float z_g = (float)(zz & 0xffu), z_g8 = (float)(zz >> 8);
                if constexpr (W8) { /* z = zl + 16 zh, rows g + 8 at 1 c (M8 = 1) */
                    const uint32_t zh = stage_zero<Sh>(gst, NW + i, g);
                    z_g += 16.0f * (float)(zh & 0xffu), z_g8 += 16.0f * (float)(zh >> 8);
                }
                constexpr float M8 = W8 ? 1.0f : 16.0f; /* rows g + 8 read at M8 times the code */
                const float o_g = -(G::OFF + z_g), o_g8 = -(G::OFF + M8 * z_g8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    acc[i][mt][0] = fmaf(s_g, fmaf(o_g, c1[mt][0], cg[i][mt][0]), acc[i][mt][0]);
                    acc[i][mt][2] = fmaf(s_g8, fmaf(o_g8, c1[mt][0], cg[i][mt][2]), acc[i][mt][2]);
                    if constexpr (MX > 1) { /* column 2t + 1 (c1[mt][1]: its sum of x) */
                        acc[i][mt][1] = fmaf(s_g, fmaf(o_g, c1[mt][1], cg[i][mt][1]), acc[i][mt][1]);
                        acc[i][mt][3] = fmaf(s_g8, fmaf(o_g8, c1[mt][1], cg[i][mt][3]), acc[i][mt][3]);
                    }
#pragma unroll
                    for (int e = 0; e < 4; e++) cg[i][mt][e] = 0.0f;
                }
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int e = 0; e < 4; e++) c1[mt][e] = 0.0f;
    };
    int rem = a.gs16 - (first * STEPS) % a.gs16; /* k16 steps until the current group ends (gs16 % STEPS == 0) */
    const unsigned char *rst = ring, *rxs = xring; /* the stage computed next (and its x with BX) */
    const int XG = MX == 1 ? 0 : g * Sh::XR;  /* this lane's token row of x (MX > 1: token g, token tile 1: g + 8) */
    for (int it = 0; it < count; it++) {
        cp_async_wait<Sh::STAGES - 2>();
        /* BX: every warp's copies of stage it landed (x is the block's), and every warp done with stage it - 1, whose
         * slots the issue below refills */
        if constexpr (BX) __syncthreads();
        else __syncwarp();
        if (it + Sh::STAGES - 1 < count) issue();
        cp_async_commit();
        const unsigned char *st = rst, *const xs = BX ? rxs : st + Sh::OFF_X;
        rst = rst + Sh::STAGE == ring_end ? ring : rst + Sh::STAGE;
        if constexpr (BX) rxs = rxs + Sh::XS == xring_end ? xring : rxs + Sh::XS;
        const uint32_t sum[4] = {G::SUM, G::SUM, G::SUM, G::SUM};
        /* MX = 1: the sum of the 128 raw x elements at xq in ONE MMA (instead of one per k16 step and x chunk: at m = 1
         * only column 0 of those is read): every lane's 4 elements lie in B once (lane 4 g + t: b0 column g rows 2t, 2t + 1,
         * b1 rows 2t + 8, 2t + 9), so column n sums 16 of them, and the fold adds the 8 columns (lane t holds 2t, 2t + 1) */
        auto x_sum_m1 = [&](const unsigned char *xq) {
            const uint32_t ones[4] = {G::SUMX, G::SUMX, G::SUMX, G::SUMX};
            const uint2 xv = *reinterpret_cast<const uint2 *>(xq + lane * 8);
            A::mma(c1[0], ones, xv.x, xv.y);
        };
        if constexpr (TH) {
            /* thirds: the run's blocks are packed chunks 3u, 3u + 1, 3u + 2 (words a, b, c of each tile); half hh is x
             * chunks 2 hh and 2 hh + 1: chunk 0 = a, 1 = b (half 0), 2 = c, 3 = thirds_fourth(a, b, c) (half 1), each
             * folded after its half (a group of 128 channels ends there). Per half: the x fragments of its 8 k16 steps
             * first, then tile by tile its words (one 16-byte read per block) */
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                uint32_t b[2][4][MT][2];
#pragma unroll
                for (int c = 0; c < 2; c++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) {
                            const uint2 xv = *reinterpret_cast<const uint2 *>(xs + XG + mt * 8 * Sh::XR +
                                                                              (16 * (4 * (2 * hh + c) + j) + 4 * t) * 2);
                            b[c][j][mt][0] = xv.x, b[c][j][mt][1] = xv.y;
                            if (G::SCALE_X)
                                b[c][j][mt][0] = ActBF16::mul2(xv.x, G::XMUL), b[c][j][mt][1] = ActBF16::mul2(xv.y, G::XMUL);
                        }
#pragma unroll
                for (int i = 0; i < NW; i++) {
                    const uint4 wa = *reinterpret_cast<const uint4 *>(st + i * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
                    const uint4 wb = *reinterpret_cast<const uint4 *>(st + (NW + i) * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
                    uint4 wc = wa;
                    if (hh == 1) wc = *reinterpret_cast<const uint4 *>(st + (2 * NW + i) * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const uint32_t a0 = j == 0 ? wa.x : j == 1 ? wa.y : j == 2 ? wa.z : wa.w;
                        const uint32_t b0 = j == 0 ? wb.x : j == 1 ? wb.y : j == 2 ? wb.z : wb.w;
                        const uint32_t c0 = j == 0 ? wc.x : j == 1 ? wc.y : j == 2 ? wc.z : wc.w;
                        uint32_t af[4];
                        G::template dequant<7u>(hh == 0 ? a0 : c0, af);
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) A::mma(cg[i][mt], af, b[0][j][mt][0], b[0][j][mt][1]);
                        G::template dequant<7u>(hh == 0 ? b0 : thirds_fourth(a0, b0, c0), af);
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) A::mma(cg[i][mt], af, b[1][j][mt][0], b[1][j][mt][1]);
                    }
                }
                if constexpr (MX == 1) {
                    x_sum_m1(xs + hh * 256);
                } else {
#pragma unroll
                    for (int c = 0; c < 2; c++)
#pragma unroll
                        for (int j = 0; j < 4; j++)
#pragma unroll
                            for (int mt = 0; mt < MT; mt++) A::mma(c1[mt], sum, b[c][j][mt][0], b[c][j][mt][1]);
                }
                if ((rem -= STEPS / 2) == 0 || (hh == 1 && it == count - 1)) fold(st + hh * Sh::GSLOT);
                if (rem == 0) rem = a.gs16;
            }
        } else if constexpr (HV) {
            /* halves: word j of each tile holds k16 step j of x chunks 2v (half 0, against x 2^64) and 2v + 1 (half 1,
             * against x 2^62: its codes read 4 times larger, so both halves add into cg at one scale); the sums of x
             * with A = 2^-133 (half 0) and 4 2^-133 (half 1) into c1 */
            const uint32_t sum1[4] = {0x00040004u, 0x00040004u, 0x00040004u, 0x00040004u};
            uint4 wv[NW];
#pragma unroll
            for (int i = 0; i < NW; i++) wv[i] = *reinterpret_cast<const uint4 *>(st + i * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                uint32_t b[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    const unsigned char *xr = xs + XG + mt * 8 * Sh::XR;
                    const uint2 x0 = *reinterpret_cast<const uint2 *>(xr + (16 * j + 4 * t) * 2);
                    const uint2 x1 = *reinterpret_cast<const uint2 *>(xr + (64 + 16 * j + 4 * t) * 2);
                    b[mt][0] = ActBF16::mul2(x0.x, 0x5F805F80u), b[mt][1] = ActBF16::mul2(x0.y, 0x5F805F80u); /* 2^64 */
                    b[mt][2] = ActBF16::mul2(x1.x, 0x5E805E80u), b[mt][3] = ActBF16::mul2(x1.y, 0x5E805E80u); /* 2^62 */
                }
#pragma unroll
                for (int i = 0; i < NW; i++) {
                    const uint32_t w = j == 0 ? wv[i].x : j == 1 ? wv[i].y : j == 2 ? wv[i].z : wv[i].w, w8 = w >> 8;
                    uint32_t af[4];
                    Gv<ActBF16>::dequant_half<0>(w, w8, af);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) A::mma(cg[i][mt], af, b[mt][0], b[mt][1]);
                    Gv<ActBF16>::dequant_half<1>(w, w8, af);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) A::mma(cg[i][mt], af, b[mt][2], b[mt][3]);
                }
                if constexpr (MX > 1)
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        A::mma(c1[mt], sum, b[mt][0], b[mt][1]);
                        A::mma(c1[mt], sum1, b[mt][2], b[mt][3]);
                    }
            }
            if constexpr (MX == 1) x_sum_m1(xs);
        } else {
            /* 4-bit codes, and 8-bit planes: per chunk h of the stage the words of each tile (wv; 8-bit: the low plane's,
             * and wh the high plane's of the same weights, one MMA per 8 weights on their byte codes, gv_bytes) */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                uint4 wv[NW], wh[NW];
#pragma unroll
                for (int i = 0; i < NW; i++) {
                    wv[i] = *reinterpret_cast<const uint4 *>(st + (h * PL * NW + i) * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
                    if constexpr (W8) wh[i] = *reinterpret_cast<const uint4 *>(st + ((2 * h + 1) * NW + i) * MPL_CUDA_W4A16_BLOCK_BYTES + lane * 16);
                }
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    /* x elements 16 (4 h + j) + 4 t .. + 3 of the pair, token row g (MX = 1: token 0 in every lane, the MMA
                     * columns past 0 never stored), then g + 8 for the second token tile */
                    uint32_t b[MT][2];
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        const uint2 xv = *reinterpret_cast<const uint2 *>(xs + XG + mt * 8 * Sh::XR + (16 * (4 * h + j) + 4 * t) * 2);
                        b[mt][0] = xv.x, b[mt][1] = xv.y;
                        if (G::SCALE_X) b[mt][0] = ActBF16::mul2(b[mt][0], G::XMUL), b[mt][1] = ActBF16::mul2(b[mt][1], G::XMUL);
                    }
#pragma unroll
                    for (int i = 0; i < NW; i++) {
                        const uint32_t w = j == 0 ? wv[i].x : j == 1 ? wv[i].y : j == 2 ? wv[i].z : wv[i].w;
                        uint32_t af[4];
                        if constexpr (W8) {
                            const uint32_t wu = j == 0 ? wh[i].x : j == 1 ? wh[i].y : j == 2 ? wh[i].z : wh[i].w;
                            gv_bytes<G::HI8>(w, wu, af);
                        } else {
                            G::dequant(w, af);
                        }
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) A::mma(cg[i][mt], af, b[mt][0], b[mt][1]);
                    }
                    if constexpr (MX > 1)
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) A::mma(c1[mt], sum, b[mt][0], b[mt][1]);
                }
            }
            if constexpr (MX == 1) x_sum_m1(xs);
        }
        if constexpr (!TH) {
            if ((rem -= STEPS) == 0 || it == count - 1) fold(st);
            if (rem == 0) rem = a.gs16;
        }
    }
#pragma unroll
    for (int i = 0; i < NW; i++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            acc[i][mt][0] *= G::OUT;
            acc[i][mt][2] *= G::OUT * (W8 ? 1.0f : 1.0f / 16.0f);
            if constexpr (MX == 1) {
                acc[i][mt][1] = acc[i][mt][3] = 0.0f;
            } else {
                acc[i][mt][1] *= G::OUT;
                acc[i][mt][3] *= G::OUT * (W8 ? 1.0f : 1.0f / 16.0f);
            }
        }
    if constexpr (BX) sk_bx_store<A, NW, MT, Sh::BX_LD>(a, acc, smem, blockIdx.x * SK_WARPS * NW, S, split);
    else sk_reduce_store<A, NW, MT, Sh::SMEM>(a, acc, smem, nt0, S, split);
}

/* Whether w4a16_gemv takes the layer (m = 1, 4-bit codes, groups of 128-channel multiples or one, k a multiple of 128),
 * on sm_90, where it was measured and where mma.sync's exactness on subnormal bf16 operands was checked (--mma-sub);
 * sm_80 (164 KB of shared memory per SM: one such block per SM) keeps the loop it was measured with. */
static bool gemv_fits(const mpl_cuda_w4a16_args *a) {
    /* k == k_pad: x has every channel the pairs read (a K tail would read past x's row) */
    return a->cc >= 90 && a->m <= 16 && !a->halves && !a->thirds && !a->planes_k && a->gs16 % 8 == 0 && a->k == a->k_pad &&
           a->k % 128 == 0;
}
/* ... and a thirds layer (k % 256 == 0, k_pad = 3 k / 4, groups of 128-channel multiples or one, counted in x's k16
 * steps: mpl_cuda_w4a16_thirds_fits); the only skinny kernel that reads thirds */
static bool gemv_fits_thirds(const mpl_cuda_w4a16_args *a) {
    return a->cc >= 90 && a->m <= 16 && a->thirds && !a->halves && !a->planes_k && a->gs16 % 8 == 0 && a->k % 256 == 0 &&
           4 * a->k_pad == 3 * a->k;
}
/* ... and a halves layer (bf16; K % 128 == 0 and one group per packed chunk: mpl_cuda_w4a16_halves_fits) */
static bool gemv_fits_halves(const mpl_cuda_w4a16_args *a) {
    return a->cc >= 90 && a->m <= 16 && a->halves && a->act == MPL_CUDA_W4A16_ACT_BF16 && a->gs16 % 4 == 0 && 2 * a->k_pad == a->k;
}
/* ... and an 8-bit layer of two planes (FORM_W8's condition: the high plane starts on a chunk) whose planes are
 * 128-channel multiples; x's first planes_k channels (the low plane's: x gathered to 2 planes_k with act-order, else
 * x itself) are those the stages read */
static bool gemv_fits_w8(const mpl_cuda_w4a16_args *a) {
    return a->cc >= 90 && a->m <= 16 && a->planes_k && a->zeros && a->planes_k % 128 == 0 && 2 * a->planes_k == a->k_pad &&
           a->k >= a->planes_k && a->gs16 % 8 == 0;
}

template <class A, bool ZP, int NW, int SF, int V, int MX, bool BX = false>
static cudaError_t launch_gv_mx(const mpl_cuda_w4a16_args *a, cudaStream_t stream, int ksplit) {
    if constexpr (!GvShape<NW, SF, ZP, V, MX, BX>::FITS) { /* thirds whose NW = 4 stages leave one per warp: NW = 2 */
        if constexpr (NW == 4) return launch_gv_mx<A, ZP, 2, SF, V, MX, BX>(a, stream, ksplit);
        else return cudaErrorInvalidValue;
    } else {
        const int ntiles = (a->n + MPL_CUDA_W4A16_NT - 1) / MPL_CUDA_W4A16_NT;
        constexpr int SMEM = GvShape<NW, SF, ZP, V, MX, BX>::SMEM;
        static KernelSetup setup;
        cudaError_t e = setup_kernel(w4a16_gemv<A, ZP, NW, SF, V, MX, BX>, a->device, SK_THREADS, SMEM, setup, nullptr);
        if (e != cudaSuccess) return e;
        /* BX: 8 NW row tiles per block (n_pad is a multiple of 16 tiles: within it at NW <= 2) */
        const int tiles = BX ? SK_WARPS * NW : NW, blocks = (ntiles + tiles - 1) / tiles;
        if (BX && ksplit == 0) {
            /* BX with the launcher's split-K: the largest S (2..8, 8 chunks or more per split) whose clusters all fit at
             * once (blocks clusters of S, blocks x S within one block per SM), else 1. Clusters of 4 / 3 / 5 that did
             * not all fit ran a second wave (H100 v33: 70B down 1.5-2x). H200 v34, bf16, us, this choice vs split-K 2 /
             * 4 forced: 3-bit 70B o m = 16 20.86 vs 27.47 / 30.63 (S 3), 8B qkv 10.64 vs 15.74 / 10.65 (S 4); 4-bit 70B
             * down 62.90 vs 90.91 / 94.44 (S 3: still 1.5x own x's 42.41, so the deep layers stay on own x) */
            static std::atomic<int> mac[MPL_CUDA_MAX_DEVICES][9];
            ksplit = 1;
            const int KC = a->k_pad / MPL_CUDA_W4A16_KC;
            for (int S = 8; S >= 2; S--) {
                if (blocks * S > a->sms || KC / S < 8) continue;
                int fit = 0;
                e = cluster_fit(w4a16_gemv<A, ZP, NW, SF, V, MX, BX>, a->device, SK_THREADS, SMEM, S, mac, &fit);
                if (e != cudaSuccess) return e;
                if (fit >= blocks) {
                    ksplit = S;
                    break;
                }
            }
        }
        return launch_ksplit(w4a16_gemv<A, ZP, NW, SF, V, MX, BX>, (unsigned)blocks, ksplit, SK_THREADS, SMEM, stream, *a);
    }
}
template <class A, bool ZP, int NW, int SF, int V>
static cudaError_t launch_gv_sf(const mpl_cuda_w4a16_args *a, cudaStream_t stream, int ksplit, bool bx) {
    if (a->m == 1) return launch_gv_mx<A, ZP, NW, SF, V, 1>(a, stream, ksplit);
    /* a block-shared x: two row tiles per warp (or one where the launcher asked for one: 8-bit's NW 1); at m <= 8 for
     * thirds only (the other forms lost there on every layer measured, H100 v33: 8B gate_up m = 8 4-bit 26.88 vs 26.03,
     * 2-bit 18.80 vs 18.60, 8-bit 46.70 vs 46.18 us; launch_skinny) */
    constexpr int NB = NW > 2 ? 2 : NW;
    if (bx && a->m > 8) return launch_gv_mx<A, ZP, NB, SF, V, 16, true>(a, stream, ksplit);
    if constexpr (V == GV_THIRDS)
        if (bx) return launch_gv_mx<A, ZP, NB, SF, V, 8, true>(a, stream, ksplit);
    return a->m <= 8 ? launch_gv_mx<A, ZP, NW, SF, V, 8>(a, stream, ksplit) : launch_gv_mx<A, ZP, NW, SF, V, 16>(a, stream, ksplit);
}
template <class A, bool ZP, int NW, int V = GV_NIB>
static cudaError_t launch_gv(const mpl_cuda_w4a16_args *a, cudaStream_t stream, int ksplit, bool bx) {
    switch (a->scale_fmt) {
    case MPL_CUDA_W4A16_SCALE_F16: return launch_gv_sf<A, ZP, NW, MPL_CUDA_W4A16_SCALE_F16, V>(a, stream, ksplit, bx);
    case MPL_CUDA_W4A16_SCALE_BF16: return launch_gv_sf<A, ZP, NW, MPL_CUDA_W4A16_SCALE_BF16, V>(a, stream, ksplit, bx);
    case MPL_CUDA_W4A16_SCALE_F32: return launch_gv_sf<A, ZP, NW, MPL_CUDA_W4A16_SCALE_F32, V>(a, stream, ksplit, bx);
    default: return cudaErrorInvalidValue;
    }
}

template <class A, bool ZP, int MT, bool CG, int NW, int FORM, int SF>
static cudaError_t launch_sf(const mpl_cuda_w4a16_args *a, cudaStream_t stream, int ksplit) {
    int ntiles = (a->n + MPL_CUDA_W4A16_NT - 1) / MPL_CUDA_W4A16_NT;
    constexpr int SMEM = SkShape<NW, FORM == FORM_W8 ? 2 : 1>::SMEM;
    static KernelSetup setup;
    cudaError_t e = setup_kernel(w4a16_skinny<A, ZP, MT, CG, NW, FORM, SF>, a->device, SK_THREADS, SMEM, setup, nullptr);
    if (e != cudaSuccess) return e;
    return launch_ksplit(w4a16_skinny<A, ZP, MT, CG, NW, FORM, SF>, (unsigned)((ntiles + NW - 1) / NW), ksplit, SK_THREADS,
                         SMEM, stream, *a);
}

/* The offset forms (4-bit and halves) with the scale format a template parameter: the fold's conversion and the F32
 * scales' second plane without selects (the halves loop, bf16 M = 1: 417 instructions per packed chunk instead of
 * 466, SASS); the other forms read it at run time. */
template <class A, bool ZP, int MT, bool CG, int NW, int FORM>
static cudaError_t launch_one(const mpl_cuda_w4a16_args *a, cudaStream_t stream, int ksplit) {
    if constexpr (FORM == FORM_OFFSET || FORM == FORM_OFFSET_M1 || FORM == FORM_HALVES || FORM == FORM_HALVES_M1) {
        switch (a->scale_fmt) {
        case MPL_CUDA_W4A16_SCALE_F16: return launch_sf<A, ZP, MT, CG, NW, FORM, MPL_CUDA_W4A16_SCALE_F16>(a, stream, ksplit);
        case MPL_CUDA_W4A16_SCALE_BF16: return launch_sf<A, ZP, MT, CG, NW, FORM, MPL_CUDA_W4A16_SCALE_BF16>(a, stream, ksplit);
        case MPL_CUDA_W4A16_SCALE_F32: return launch_sf<A, ZP, MT, CG, NW, FORM, MPL_CUDA_W4A16_SCALE_F32>(a, stream, ksplit);
        default: return cudaErrorInvalidValue;
        }
    } else {
        return launch_sf<A, ZP, MT, CG, NW, FORM, -1>(a, stream, ksplit);
    }
}

template <class A, bool ZP, int NW, int FORM>
static cudaError_t launch_zp(const mpl_cuda_w4a16_args *a, cudaStream_t stream, int ksplit, bool bx) {
    bool cg = a->gs16 % 4 == 0; /* one group per chunk (also with one group: MPL_CUDA_W4A16_ONE_GROUP) */
    if constexpr (FORM == FORM_HALVES) { /* always one group per packed chunk (mpl_cuda_w4a16_halves_fits) */
        if (!cg) return cudaErrorInvalidValue;
        /* bf16: w4a16_gemv (halves are packed on cc 9.0 only, k % 128 == 0, k_pad = k / 2, and skinny stops at m = 16:
         * it always fits) */
        if constexpr (A::id == MPL_CUDA_W4A16_ACT_BF16) {
            return gemv_fits_halves(a) ? launch_gv<A, ZP, NW, GV_HALVES>(a, stream, ksplit, bx) : cudaErrorInvalidValue;
        } else {
            if (a->m == 1) return launch_one<A, ZP, 1, true, NW, FORM_HALVES_M1>(a, stream, ksplit);
            return a->m > 8 ? launch_one<A, ZP, 2, true, NW, FORM>(a, stream, ksplit) : launch_one<A, ZP, 1, true, NW, FORM>(a, stream, ksplit);
        }
    } else {
        if constexpr (FORM == FORM_W8) {
            if (gemv_fits_w8(a)) return launch_gv<A, true, NW, GV_W8>(a, stream, ksplit, bx);
        } else if (gemv_fits(a)) {
            return launch_gv<A, ZP, NW>(a, stream, ksplit, bx);
        }
        if (a->m > 8) return cg ? launch_one<A, ZP, 2, true, NW, FORM>(a, stream, ksplit) : launch_one<A, ZP, 2, false, NW, FORM>(a, stream, ksplit);
        if constexpr (FORM == FORM_OFFSET)
            if (cg && a->m == 1) return launch_one<A, ZP, 1, true, NW, FORM_OFFSET_M1>(a, stream, ksplit);
        return cg ? launch_one<A, ZP, 1, true, NW, FORM>(a, stream, ksplit) : launch_one<A, ZP, 1, false, NW, FORM>(a, stream, ksplit);
    }
}

/* Whether an 8-bit layer runs FORM_W8 (both planes of a chunk per ring stage): the high plane starts on a chunk.
 * Otherwise (k % 64 != 0) the offset form runs its two planes as the 4-bit layer of 2k channels. */
static bool skinny_w8(const mpl_cuda_w4a16_args *a) {
    return a->planes_k && a->zeros && a->planes_k % MPL_CUDA_W4A16_KC == 0 && 2 * a->planes_k == a->k_pad;
}

/* Whether w4a16_gemv runs the layer (the fits above, as launch_zp dispatches them) */
static bool gemv_takes(const mpl_cuda_w4a16_args *a) {
    if (a->halves) return gemv_fits_halves(a);
    if (a->thirds) return gemv_fits_thirds(a);
    return skinny_w8(a) ? gemv_fits_w8(a) : gemv_fits(a);
}

/* skinny: the offset form (f16 and bf16, as measured through v8); 8-bit layers FORM_W8 (NW: blocks per chunk, so
 * NW / 2 row tiles of two planes). skinny-rounded (bf16, uint4b8; the path refuses the rest): the rounded subnormal
 * form on bf16 scales, the exact subnormal form on other scale formats. */
template <int NW>
static cudaError_t launch_act(const mpl_cuda_w4a16_args *a, cudaStream_t stream, int ksplit, bool rounded, bool bx) {
    const bool zp = a->zeros != nullptr;
    if (a->thirds) { /* w4a16_gemv only (the descriptor packs thirds where it fits: cc 9.0, m <= 16) */
        if (!gemv_fits_thirds(a)) return cudaErrorInvalidValue;
        if (a->act == MPL_CUDA_W4A16_ACT_F16)
            return zp ? launch_gv<ActF16, true, NW, GV_THIRDS>(a, stream, ksplit, bx) : launch_gv<ActF16, false, NW, GV_THIRDS>(a, stream, ksplit, bx);
        return zp ? launch_gv<ActBF16, true, NW, GV_THIRDS>(a, stream, ksplit, bx) : launch_gv<ActBF16, false, NW, GV_THIRDS>(a, stream, ksplit, bx);
    }
    if (a->halves) {
        if (a->act == MPL_CUDA_W4A16_ACT_F16)
            return zp ? launch_zp<ActF16, true, NW, FORM_HALVES>(a, stream, ksplit, bx) : launch_zp<ActF16, false, NW, FORM_HALVES>(a, stream, ksplit, bx);
        return zp ? launch_zp<ActBF16, true, NW, FORM_HALVES>(a, stream, ksplit, bx) : launch_zp<ActBF16, false, NW, FORM_HALVES>(a, stream, ksplit, bx);
    }
    if (skinny_w8(a))
        return a->act == MPL_CUDA_W4A16_ACT_F16 ? launch_zp<ActF16, true, NW / 2, FORM_W8>(a, stream, ksplit, bx)
                                                : launch_zp<ActBF16, true, NW / 2, FORM_W8>(a, stream, ksplit, bx);
    if (a->act == MPL_CUDA_W4A16_ACT_F16)
        return zp ? launch_zp<ActF16, true, NW, FORM_OFFSET>(a, stream, ksplit, bx) : launch_zp<ActF16, false, NW, FORM_OFFSET>(a, stream, ksplit, bx);
    if (rounded && !zp)
        return a->scale_fmt == MPL_CUDA_W4A16_SCALE_BF16 ? launch_zp<ActBF16, false, NW, FORM_ROUNDED>(a, stream, ksplit, bx)
                                                         : launch_zp<ActBF16, false, NW, FORM_EXACT>(a, stream, ksplit, bx);
    return zp ? launch_zp<ActBF16, true, NW, FORM_OFFSET>(a, stream, ksplit, bx) : launch_zp<ActBF16, false, NW, FORM_OFFSET>(a, stream, ksplit, bx);
}

} // namespace cuda_w4a16

/*
 * Row tiles per warp: 4, unless that leaves fewer blocks than 3/4 of the SMs (layers with N below
 * ~6400), where 2 gives twice the blocks (measured: N = 4096 layers 7.4 vs 10.9 us at M = 1,
 * bench/cuda/NOTES.md). FORM_W8 (8-bit): always 4 blocks per chunk (2 row tiles x 2 planes): H100 v19, M = 1,
 * uint8b128, 4 vs 2 blocks: 8B qkv (N 6144, where the 4-bit rule picks 2) 14.8 vs 16.2 us, 70B qkv 36.5 vs 42.6,
 * 70B down 88.8 vs 120.9, 8B gate_up 51.8 vs 54.0, 70B gate_up 175.4 vs 178.5.
 * Split-K: one wave holds sms * 2 blocks (two per SM: launch bounds and the rings' shared
 * memory; sms with w4a16_gemv's two token tiles, one block per SM, and for halves and thirds layers, where
 * w4a16_gemv splits only to one block per SM: below). A memory-bound kernel wants every SM busy but no second, partial wave, so K is split
 * by the largest factor that keeps blocks * split within one wave (at most 8, the portable
 * cluster size, and at least 8 chunks -- one per warp -- per split). Clusters need sm_90.
 */
static int launch_skinny(const mpl_cuda_w4a16_args *a, void *stream, bool rounded) {
    int KC = a->k_pad / MPL_CUDA_W4A16_KC, ntiles = (a->n + MPL_CUDA_W4A16_NT - 1) / MPL_CUDA_W4A16_NT;
    /* w4a16_gemv with two token tiles (m 9..16) holds one block per SM (its rings), the other forms two: the threshold
     * scales with it (H100 v30, uint4b8 m = 9, us, NW 4 vs 2: 8B qkv (384 tiles) 9.59 vs 11.77, 70B qkv (640) 28.37
     * vs 26.98, 70B o (512) 17.09 vs 19.11) */
    const bool gemv = cuda_w4a16::gemv_takes(a);
    const int bps = (a->m > 8 || (a->thirds && a->m > 1)) && gemv ? 1 : 2; /* GvShape::BPS */
    int nw = 4 * ((ntiles + 3) / 4) < 3 * a->sms * bps / 2 ? 2 : 4;
    /* thirds at m = 1 with at least 2048 row tiles (N >= 32768): NW 2, twice the blocks (~6.8 waves against 3.4) for a
     * shorter last wave. H100, bf16 uint3b4, forced NW 2 vs 4, us: 70B gate_up (3584 tiles) 67.97 vs 69.54 (v31), 65.72
     * vs 67.45 (v32); 8B gate_up (1792 tiles) 22.31 vs 22.23, 70B qkv (640) 19.66 vs 18.48 (v32) stay at the rule's */
    if (a->thirds && a->m == 1 && ntiles >= 2048) nw = 2;
    const int tuned_nw = a->skinny_nw & MPL_CUDA_W4A16_NW_TILES;
    if (tuned_nw == 2 || tuned_nw == 4) nw = tuned_nw; /* tuning (mpl_cuda_w4a16_tuning) */
    const bool w8 = cuda_w4a16::skinny_w8(a);
    if (w8 && tuned_nw != 2) nw = 4;
    /* f16 halves with two token tiles: two row tiles per warp unless tuned to four (which spill ~200 bytes); bf16 halves
     * run w4a16_gemv with the rule above */
    if (a->halves && a->m > 8 && a->act == MPL_CUDA_W4A16_ACT_F16 && tuned_nw != 4) nw = 2;
    if (w8) KC = a->planes_k / MPL_CUDA_W4A16_KC; /* the loop's chunks: one plane's */
    const int tiles = w8 ? nw / 2 : nw;          /* row tiles per warp (FORM_W8: nw blocks = nw / 2 tiles x 2 planes) */
    /* w4a16_gemv with a block-shared x (8 warps, 8 x min(tiles, 2) row tiles at the same k, one block per SM): where its
     * blocks fill one wave without split-K (mpl_cuda_w4a16_shared_x_fills, with the measurements), or as the tuning
     * forces; thirds from m = 2, the other forms from m = 9 */
    bool bx = mpl_cuda_w4a16_shared_x_fills(a->n, a->sms);
    /* ... and at m 9..16 on the forms that stage the most x per weight byte (thirds: 512 bytes of x per token row and
     * 256 channels, 8-bit planes: 256 bytes per 128 channels of two planes) where K is short: own-x warps split K in 8,
     * so at k <= 8192 (thirds) / 4096 (8-bit) each gets 4 stages or fewer, while the shared x's warps run the whole K
     * of their split-K share (clusters that fit, launch_gv_mx). H200 v34 (bench/cuda/NOTES.md), bf16, group 128, us,
     * shared x by this rule vs own x: 3-bit 8B qkv (k 4096) m = 9 10.37 vs 12.62, m = 16 10.64 vs 13.23; 70B qkv (k 8192)
     * 27.43 vs 28.27, 27.68 vs 29.29; 70B o (k 8192) 20.50 vs 20.20, 20.86 vs 20.78 (the one loss taken); 8-bit 8B qkv
     * 13.25 vs 15.30, 13.63 vs 15.99. Left on own x: 3-bit 70B down (k 28672) 59.76 vs 53.65; 8-bit 70B qkv / o (k 8192)
     * 37.48 vs 37.38, 28.04 vs 26.34; 4- and 2-bit everywhere (8B qkv 4-bit 10.63 vs 9.36, 2-bit 9.98 vs 8.78) */
    if ((a->thirds || w8) && a->m > 8 && a->k <= (a->thirds ? 8192 : 4096)) bx = true;
    if (a->skinny_nw & MPL_CUDA_W4A16_NW_SHARED_X) bx = true;
    if (a->skinny_nw & MPL_CUDA_W4A16_NW_OWN_X) bx = false;
    bx = bx && gemv && (a->thirds ? a->m > 1 : a->m > 8); /* the forms it has (launch_gv_sf) */
    const int per_block = bx ? cuda_w4a16::SK_WARPS * (tiles > 2 ? 2 : tiles) : tiles; /* row tiles per block */
    int blocks = (ntiles + per_block - 1) / per_block;
    int ksplit = a->ksplit;
    if (ksplit <= 0) {
        /* w4a16_gemv on a layer below 4 bits (halves, thirds): split K only while blocks fill fewer than one per SM. At
         * 3/8 or 1/4 byte per weight a block's share is short, and the second block per SM (split-K 2 through clusters)
         * cost more than it hid. H100 v32, bf16, forced, us, split-K 1 vs the rule below (2): 70B down M = 1 3-bit 35.25
         * vs 37.01, 2-bit 26.01 vs 28.86; 70B o 3-bit 13.05 vs 14.88, 2-bit 10.38 vs 12.20; 2-bit m = 2 70B down 25.19
         * vs 26.56, 70B o 9.93 vs 11.31 (128 blocks of four row tiles on 132 SMs) */
        int slots = a->sms * (((a->halves || a->thirds) && gemv) || bx ? 1 : bps);
        ksplit = blocks >= slots ? 1 : slots / blocks;
        if (ksplit > KC / 8) ksplit = KC / 8;
    }
    const bool bx_fit = bx && a->ksplit <= 0 && ksplit > 1; /* BX: launch_gv_mx asks which clusters fit */
    if (ksplit > 8) ksplit = 8;
    if (ksplit > KC) ksplit = KC;
    if (ksplit < 1 || a->cc < 90) ksplit = 1;
    if (bx_fit) ksplit = 0;
    cudaStream_t s = (cudaStream_t)stream;
    using namespace cuda_w4a16;
    return (int)(nw == 2 ? launch_act<2>(a, s, ksplit, rounded, bx) : launch_act<4>(a, s, ksplit, rounded, bx));
}

extern "C" int mpl_cuda_w4a16_launch_skinny(const mpl_cuda_w4a16_args *a, void *stream) { return launch_skinny(a, stream, false); }

/* Path cuda_w4a16:skinny-rounded: the rounded form where mpl_cuda_w4a16_skinny_rounds holds, else the exact one. */
extern "C" int mpl_cuda_w4a16_launch_skinny_rounded(const mpl_cuda_w4a16_args *a, void *stream) {
    return launch_skinny(a, stream, true);
}

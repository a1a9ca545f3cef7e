/*
 * x86_avx512_w4a16.c -- kernel x86_avx512_w4a16 (the avx512 level): decode in registers with
 * vpermps tables + FMA; prefill on AMX-BF16 tiles, vdpbf16ps (AVX512-BF16) or f32 FMA, each a
 * path row with its own ISA level. Layout: x86_w4a16 (docs/layouts/x86_w4a16.md). Plain flags:
 * this file runs before the ISA is known to exist.
 *
 * Default ranges (the decode/prefill switch). Measured on Sapphire Rapids (K = N = 4096 and
 * K = 4096, N = 28672): CPU time per call with hot weights, and bench/x86/mplbench --sweep with
 * cold weights, the paths taking turns call by call (bench/results/x86-Intel-R-Xeon-R-Processor.md):
 *   AMX prefill: decode ahead at m=1 (cold 11.5 vs 11.9 ms, 2 threads 5.25 vs 5.82); m=2..3
 *     within +-10% either way (1 thread favours decode, 2 threads AMX; hot, AMX 0.57 vs 0.65
 *     ms at m=2); AMX ahead from m=4 on (cold m=8: 11.5 vs 18.7 ms). The time rises
 *     smoothly across the switch.
 *   f32 prefill (f16/f32 activations): decode ahead up to m=8 (hot 1.9 vs 2.2 ms), behind at 16.
 * On AMD with AVX512-BF16 (Zen 4) the vdpbf16ps decode runs 4-bit bf16 at every m (faster than the
 * vdpbf16ps panel prefill at every m swept there: machine_switch below) and 8-bit bf16 to m = 8; the
 * vdpbf16ps prefill stays the AMD default above that and for the other widths. On Intel it measured slower than the f32 prefill (Sapphire
 * Rapids, and an Emerald Rapids VM without AMX).
 */
#include "x86_w4a16_driver.h"

enum { DECODE_BF16, DECODE, PREFILL_AMX, PREFILL_BF16, PREFILL_F32, NPATHS };

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    /* Every width of the layout (2, 3, 4, 8 bits): the 4-bit chunk in avx512/w4a16_gemv.c and
     * common/w4a16_zmm.inc's bf16 panel, the others in avx512/w4a16_gemv_widths.c and the _w panel
     * dequantizers; every path reads the same bytes. */
    return mpl_x86_w4a16_can_implement("x86_avx512_w4a16", c, msg, cap);
}

static mpl_reason amx_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a16_needs_bf16("x86_avx512_w4a16:prefill-amx", c, msg, cap);
}

/* The vdpbf16ps decode: bf16 activations, the 4- and 8-bit layouts (one vpermw per nibble plane). */
static mpl_reason decode_bf16_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    mpl_reason r = mpl_x86_w4a16_needs_bf16("x86_avx512_w4a16:decode-bf16", c, msg, cap);
    if (r != MPL_REASON_OK) return r;
    if (mpl_wtype_width(c->wtype) != 4 && mpl_wtype_width(c->wtype) != 8)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE, "x86_avx512_w4a16:decode-bf16 takes 4- and 8-bit weights only (%s is %d-bit)",
                          mpl_wtype_name(c->wtype), mpl_wtype_width(c->wtype));
    return MPL_REASON_OK;
}

static mpl_reason bf16_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a16_needs_bf16("x86_avx512_w4a16:prefill-bf16", c, msg, cap);
}

/*
 * The decode/prefill switch per machine class (bench/x86/mplbench --sweep, cold weights, the paths
 * taking turns call by call; K = 4096, N = 14336 unless said):
 *   AMX granted (Sapphire Rapids): bf16 -> AMX from m = 2; f16/f32 -> f32 prefill from m = 9.
 *   Intel with AVX512-BF16 but no AMX (an Emerald Rapids VM whose AMX the hypervisor hides;
 *     bench/results/x86-intel-noamx.md): vdpbf16ps prefill slower than f32 prefill at every m
 *     (m = 64: 105.8 vs 76.7 ms), so it is never the default there; decode ahead of f32 prefill
 *     up to m = 12 at 4 bits (16.7 vs 17.8 ms; m = 16: 21.7 vs 21.0), 16 at 2 bits (15.4 vs 15.6;
 *     m = 20: 19.4 vs 19.0), 8 at 8 bits (11.3 vs 12.4; m = 10: 15.4 vs 13.6), 4 at 3 bits (6.2 vs
 *     7.1; m = 5: 8.3 vs 8.1).
 *   AMD with AVX512-BF16 (Zen 4, a 2-vCPU EPYC VM; 1 thread): bf16 4-bit -> the vdpbf16ps decode at every
 *     m, ahead of the vdpbf16ps prefill at every m swept (m = 2..2048: m = 4 2.42 vs 5.08 ms, 16 9.49 vs
 *     12.11, 64 35.84 vs 38.23, 512 287.6 vs 289.6, 2048 1167 vs 1199; from m = 512 only with the decode's
 *     row chunks, x in L2); the other widths bf16 -> vdpbf16ps prefill from m = 5 (not swept: set between
 *     the AMX (1) and f32 (8) cases); f16/f32 -> f32 from m = 9.
 *   Other AVX-512 CPUs (Ice Lake, Skylake-X: not swept): f32 prefill from m = 9 (the SPR f32 case).
 *   2-bit with zero points: decode to m = 2 at most (machine_switch).
 */
typedef struct {
    int64_t decode_max; /* the decode path serves m = 1..decode_max */
    int prefill;        /* the prefill path from decode_max + 1 (-1: none, the decode serves every m) */
    int decode;         /* DECODE (f32 FMA) or DECODE_BF16 (vdpbf16ps) */
} switch_point;

static switch_point machine_switch_isa(const mpl_config *c, const mpl_platform *p) {
    const bool bf16 = c->act == MPL_ACT_BF16, amx = (p->isa & MPL_X86_LEVEL_AMX) == MPL_X86_LEVEL_AMX;
    const bool avx512bf16 = (p->isa & MPL_X86_LEVEL_AVX512BF16) == MPL_X86_LEVEL_AVX512BF16;
    if (amx) return bf16 ? (switch_point){1, PREFILL_AMX, DECODE} : (switch_point){8, PREFILL_F32, DECODE};
    if (p->cpu_vendor == MPL_CPU_VENDOR_INTEL && avx512bf16) {
        switch (mpl_wtype_width(c->wtype)) {
        case 2: return (switch_point){16, PREFILL_F32, DECODE};
        case 3: return (switch_point){4, PREFILL_F32, DECODE};
        case 8: return (switch_point){8, PREFILL_F32, DECODE};
        default: return (switch_point){12, PREFILL_F32, DECODE};
        }
    }
    /* AMD (and others) with AVX512-BF16: 4-bit bf16 runs the vdpbf16ps decode at every m (no prefill path);
     * 8-bit the vdpbf16ps decode to m = 8, then the vdpbf16ps prefill (Zen 4 sweep, 4096x14336 uint8b128, 1
     * thread, cold: m=8 9.94 vs 10.52 ms, m=16 19.12 vs 15.10); 2- and 3-bit switch from the f32 decode to the
     * vdpbf16ps prefill at 5 (not swept). */
    if (bf16 && avx512bf16) {
        switch (mpl_wtype_width(c->wtype)) {
        case 4: return (switch_point){MPL_M_ANY, -1, DECODE_BF16};
        case 8: return (switch_point){8, PREFILL_BF16, DECODE_BF16};
        default: return (switch_point){4, PREFILL_BF16, DECODE};
        }
    }
    return (switch_point){8, PREFILL_F32, DECODE};
}

/* 2-bit with zero points decodes one row per pass (tile_p2z: each further row costs about what the
 * first does), so decode ends at m = 2 on every machine (Intel without AMX, 4096x14336, 1 thread:
 * m = 2 6.42 vs 10.67 ms f32 prefill, m = 3 10.05 vs 9.55). */
static switch_point machine_switch(const mpl_config *c, const mpl_platform *p) {
    switch_point sp = machine_switch_isa(c, p);
    if (c->zero_points && mpl_wtype_width(c->wtype) == 2 && sp.decode_max > 2) sp.decode_max = 2;
    return sp;
}

/* A decode path's default range: m = 1..decode_max where it is the machine's decode, else none
 * (m_min > m_max: chosen only when forced, or when no other path can run the config). */
static void decode_path_m_range(const mpl_config *c, const mpl_platform *p, int path, int64_t *m_min,
                                int64_t *m_max) {
    switch_point sp = machine_switch(c, p);
    if (sp.decode == path) {
        *m_max = sp.decode_max;
    } else {
        *m_min = 2;
        *m_max = 1;
    }
}
static void decode_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    decode_path_m_range(c, p, DECODE, m_min, m_max);
}
static void decode_bf16_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    decode_path_m_range(c, p, DECODE_BF16, m_min, m_max);
}

/* A prefill path's default range: from the switch on where it is the machine's prefill, else none. */
static void prefill_m_range(const mpl_config *c, const mpl_platform *p, int path, int64_t *m_min, int64_t *m_max) {
    switch_point sp = machine_switch(c, p);
    if (sp.prefill == path) {
        *m_min = sp.decode_max + 1;
    } else {
        *m_min = 2;
        *m_max = 1;
    }
}
static void amx_m_range(const mpl_config *c, const mpl_platform *p, int64_t *lo, int64_t *hi) {
    prefill_m_range(c, p, PREFILL_AMX, lo, hi);
}
static void bf16_m_range(const mpl_config *c, const mpl_platform *p, int64_t *lo, int64_t *hi) {
    prefill_m_range(c, p, PREFILL_BF16, lo, hi);
}
static void f32_m_range(const mpl_config *c, const mpl_platform *p, int64_t *lo, int64_t *hi) {
    prefill_m_range(c, p, PREFILL_F32, lo, hi);
}

static const mpl_path_desc paths[NPATHS] = {
    [DECODE_BF16] = {.name = "x86_avx512_w4a16:decode-bf16",
                     .requires = "avx512bf16 level; bf16 activations, 4- or 8-bit weights",
                     .isa = MPL_X86_LEVEL_AVX512BF16 & ~MPL_X86_LEVEL_AVX512,
                     .m_min = 1,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "default on AMD with AVX512-BF16, every m. Zen 4 (2-vCPU EPYC VM), 4096x14336 bf16, cold (mplbench): m=1 91-100% of read BW at 1 thread vs the f32 decode 53%; --sweep vs the vdpbf16ps prefill, 1 thread: m=16 9.49 vs 12.11 ms, 64 35.84 vs 38.23, 512 287.6 vs 289.6, 2048 1167 vs 1199. 8-bit: m=1..8 (same VM, --sweep --wtype uint8b128/uint8, cold, 1 thread: m=1 within noise of the f32 decode, 2.73-4.54 vs 2.58-4.29 ms; hot 4096x4096 0.727 vs 0.820 ms; m=4 4.42-4.91 vs 5.66-5.91; m=8 9.08-9.48 vs prefill-bf16 9.39-10.18; m=12 13.1-13.9 vs prefill-bf16 11.3-12.5)",
                     .can_implement = decode_bf16_can_implement,
                     .m_range = decode_bf16_m_range},
    [DECODE] = {.name = "x86_avx512_w4a16:decode",
                .requires = "",
                .m_min = 1,
                .m_max = 8,
                .m_limit = MPL_M_ANY,
                .why = "per machine (cold sweeps, 4096x14336): AMX (SPR): decode ahead of AMX at m=1 only, of f32 "
                       "prefill to m=8; Intel without AMX: to m=12 (4-bit), 16 (2-bit), 8 (8-bit), 4 (3-bit); "
                       "AMD bf16: none at 4 and 8 bits (decode-bf16), 4 at 2 and 3 bits (not swept); else 8; 2-bit with zero "
                       "points at most 2 (one row per pass)",
                .m_range = decode_m_range},
    [PREFILL_AMX] = {.name = "x86_avx512_w4a16:prefill-amx",
                     .requires = "amx level (AMX tile state granted by the OS); bf16 activations",
                     .isa = MPL_X86_LEVEL_AMX & ~MPL_X86_LEVEL_AVX512,
                     .m_min = 2,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "SPR sweep, cold: m=2..3 within 10% of decode, AMX ahead from m=4 (m=8 11.5 vs 18.7 ms)",
                     .can_implement = amx_can_implement,
                     .m_range = amx_m_range},
    [PREFILL_BF16] = {.name = "x86_avx512_w4a16:prefill-bf16",
                      .requires = "avx512bf16 level; bf16 activations",
                      .isa = MPL_X86_LEVEL_AVX512BF16 & ~MPL_X86_LEVEL_AVX512,
                      .m_min = 5,
                      .m_max = MPL_M_ANY,
                      .m_limit = MPL_M_ANY,
                      .why = "default on AMD for 8-bit from m=9 (decode-bf16's why), 2- and 3-bit from m=5 (not swept; 4-bit: the vdpbf16ps decode is "
                             "faster at every m on Zen 4); slower than f32 prefill at every m on Intel without AMX (m=64: "
                             "105.8 vs 76.7 ms)",
                      .can_implement = bf16_can_implement,
                      .m_range = bf16_m_range},
    [PREFILL_F32] = {.name = "x86_avx512_w4a16:prefill-f32",
                     .requires = "",
                     .m_min = 9,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "from the decode switch where neither AMX nor (on AMD) vdpbf16ps takes bf16 prefill; SPR, "
                            "hot weights: decode ahead to m=8 (1.9 vs 2.2 ms), behind at 16",
                     .m_range = f32_m_range},
};

static const mpl_x86_w4a16_path_impl impls[NPATHS] = {
    [DECODE_BF16] = {.xs = MPL_X86_W4A16_XS_BF16,
                     .prep = mpl_x86_w4a16_prep_bf16_rows_avx512,
                     .gemv = mpl_x86_w4a16_gemv_avx512bf16,
                     .gemv_blocks = MPL_X86_W4A16_AVX512_GEMV_BLOCKS,
                     /* half of Zen 4's 1 MiB L2 per core */
                     .gemv_chunk_bytes = 512u << 10},
    [DECODE] = {.xs = MPL_X86_W4A16_XS_F32,
                .prep = mpl_x86_w4a16_prep_f32_avx512,
                .gemv = mpl_x86_w4a16_gemv_avx512,
                .gemv_blocks = MPL_X86_W4A16_AVX512_GEMV_BLOCKS},
    [PREFILL_AMX] = {.xs = MPL_X86_W4A16_XS_BF16,
                     .prep = mpl_x86_w4a16_prep_amx,
                     .gemm = mpl_x86_w4a16_gemm_amx,
                     .scratch_bytes = MPL_X86_W4A16_AMX_SCRATCH_BYTES},
    [PREFILL_BF16] = {.xs = MPL_X86_W4A16_XS_BF16,
                      .prep = mpl_x86_w4a16_prep_bf16_avx512,
                      .gemm = mpl_x86_w4a16_gemm_avx512bf16},
    [PREFILL_F32] = {.xs = MPL_X86_W4A16_XS_F32,
                     .prep = mpl_x86_w4a16_prep_f32_avx512,
                     .gemm = mpl_x86_w4a16_gemm_avx512},
};

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *p, uint32_t enabled,
                       void **out) {
    (void)p;
    (void)enabled;
    return mpl_x86_w4a16_create(c, w, &mpl_x86_w4a16_ops_avx512, impls, NPATHS, out);
}

const mpl_kernel_desc mpl_kernel_x86_avx512_w4a16 = {
    .name = "x86_avx512_w4a16",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a16",
    .requires = "avx512 level (avx2 fma f16c avx512f avx512bw avx512vl avx512dq)",
    .isa = MPL_X86_LEVEL_AVX512,
    .irregular_act_order = false,
    .can_implement = can_implement,
    .paths = paths,
    .npaths = NPATHS,
    .pack = pack,
    .destroy = mpl_x86_w4a16_destroy,
    .workspace_size = mpl_x86_w4a16_workspace_size,
    .apply = mpl_x86_w4a16_apply,
    .weight_bytes = mpl_x86_w4a16_weight_bytes,
};

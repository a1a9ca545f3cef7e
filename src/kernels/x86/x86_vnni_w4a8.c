/*
 * x86_vnni_w4a8.c -- kernel x86_vnni_w4a8: W4A8 (int8 activations quantized
 * per row on the fly, 4-bit weights, integer inner products) for x86.
 *
 * This file is compiled with plain flags: descriptor, can_implement, pack
 * glue, workspace and the run-time dispatch among the ISA variants
 *   avx512/w4a8_vnni.c     vpdpbusd zmm        (AVX512F+BW+VL+VNNI)
 *   amx/w4a8_amx.c         tdpbsud tiles       (AMX-INT8, >= AMX_MIN_ROWS rows)
 *   avxvnni/w4a8_avxvnni.c vpdpbusd ymm (VEX)  (AVX-VNNI)
 *   avx2/w4a8_avx2.c       vpmaddubsw+vpmaddwd (AVX2 floor)
 * read from mpl_platform_current() at apply time (MPL_MAX_ISA caps it; tests
 * override it). Every variant computes the same integer group sums and the
 * same float operations in the same order, so all give identical bits, and
 * the same bits as the reference kernel (see tests/test_x86_w4a8.c).
 */
#define _DEFAULT_SOURCE /* syscall() for arch_prctl */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../kernels.h"
#include "w4a8.h"

/* AMX pays off from two row tiles up; below that, the VNNI micro-kernel streams the weights once. */
#define AMX_MIN_ROWS 32

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    if (c->mode != MPL_MODE_W4A8)
        return mpl_refuse(msg, cap, MPL_REASON_MODE,
                          "mode W4A16: x86_vnni_w4a8 runs only W4A8 configs (activations quantized to int8); "
                          "W4A16 configs use the W4A16 kernels");
    if (mpl_wtype_bits(c->wtype) != 4)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE, "weight type %s: must be a 4-bit type (uint4b8, int4, uint4)",
                          mpl_wtype_name(c->wtype));
    if (c->zero_points && c->wtype != MPL_WTYPE_UINT4)
        return mpl_refuse(msg, cap, MPL_REASON_ZERO_POINTS, "zero points with %s: only uint4 takes zero points",
                          mpl_wtype_name(c->wtype));
    if (c->group_size != -1 && (c->group_size % 32 != 0 || c->k % c->group_size != 0))
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 32 that divides k = %lld",
                          (long long)c->group_size, (long long)c->k);
    if (c->k % MPL_W4A8_KBLOCK != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE, "k = %lld: must be a multiple of %d", (long long)c->k,
                          MPL_W4A8_KBLOCK);
    return MPL_REASON_OK;
}

/* The kernel's packed state: the layout plus the activation type. */
typedef struct {
    mpl_x86_w4a8 *w;
    mpl_act act;
} vnni_packed;

static void destroy(void *packed) {
    vnni_packed *k = packed;
    if (!k) return;
    mpl_x86_w4a8_free(k->w);
    free(k);
}

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, void **out) {
    *out = NULL;
    vnni_packed *k = calloc(1, sizeof *k);
    if (!k) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86_vnni_w4a8 pack: out of memory");
    k->act = c->act;
    mpl_status st = mpl_x86_w4a8_pack(c, w, &k->w);
    if (st != MPL_OK) {
        free(k);
        return st;
    }
    *out = k;
    return MPL_OK;
}

static size_t weight_bytes(const void *packed) { return mpl_x86_w4a8_bytes(((const vnni_packed *)packed)->w); }

/* ---- AMX permission (Linux asks each process to request the tile state once) ---- */

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static bool amx_ok;

static void amx_request(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    amx_ok = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    amx_ok = false;
#endif
}

bool mpl_w4a8_amx_enable(void) {
    pthread_once(&amx_once, amx_request);
    return amx_ok;
}

/* ---- dispatch ---- */

static mpl_w4a8_variant pick_variant(const mpl_x86_w4a8 *p, int64_t m) {
    const uint32_t isa = mpl_platform_current()->isa;
    const uint32_t avx512 = MPL_ISA_AVX512F | MPL_ISA_AVX512BW | MPL_ISA_AVX512VL | MPL_ISA_AVX512_VNNI;
    const uint32_t amx = MPL_ISA_AMX_TILE | MPL_ISA_AMX_INT8;
    if ((isa & avx512) == avx512) {
        if ((isa & amx) == amx && m >= AMX_MIN_ROWS && p->group_len % 32 == 0 && mpl_w4a8_amx_enable())
            return MPL_W4A8_AMX;
        return MPL_W4A8_AVX512;
    }
    if (isa & MPL_ISA_AVX_VNNI) return MPL_W4A8_AVXVNNI;
    return MPL_W4A8_AVX2;
}

static size_t round64(size_t b) { return (b + 63) & ~(size_t)63; }

/* Row stride of qx: k rounded up to 64 bytes plus one line, so the 16 rows of an AMX A tile (or the
 * rows of a VNNI micro-tile) never share one L1 set (a 4 KiB stride would map them all to one). */
static int64_t qx_stride(int64_t k) { return (k + 63) / 64 * 64 + 64; }

/* Workspace: qx [m_pad][qx_stride] | sumq [m_pad][groups] | sx [m_pad] | per thread: max(f32 row, AMX scratch). */
static size_t scratch_stride(int64_t k) {
    size_t row = (size_t)k * sizeof(float), amx = mpl_w4a8_amx_scratch(k);
    return round64(row > amx ? row : amx);
}

static size_t workspace_size(const void *packed, int64_t m, int threads) {
    const mpl_x86_w4a8 *p = ((const vnni_packed *)packed)->w;
    if (threads < 1) threads = 1;
    if (m < 0 || m > INT64_MAX - MPL_W4A8_ROW_PAD) return SIZE_MAX;
    int64_t mp = (m + MPL_W4A8_ROW_PAD - 1) / MPL_W4A8_ROW_PAD * MPL_W4A8_ROW_PAD;
    size_t qx, sq, sx, per;
    if (!mpl_size_mul3(mp, qx_stride(p->k), 1, &qx) || !mpl_size_mul3(mp, p->groups, 4, &sq) || !mpl_size_mul3(mp, 4, 1, &sx) ||
        mpl_mul_overflow_sz(scratch_stride(p->k), (size_t)threads, &per))
        return SIZE_MAX;
    size_t total = round64(qx);
    if (mpl_add_overflow_sz(total, round64(sq), &total) || mpl_add_overflow_sz(total, round64(sx), &total) ||
        mpl_add_overflow_sz(total, per, &total) || total > SIZE_MAX - 64)
        return SIZE_MAX;
    return total;
}

static void quant_task(void *ctx, int tid, int nt) {
    const mpl_w4a8_job *j = ctx;
    /* The AMX path reads whole 32-row blocks: its padding rows get q = 0. */
    int64_t rows = j->variant == MPL_W4A8_AMX ? (j->m + MPL_W4A8_ROW_PAD - 1) / MPL_W4A8_ROW_PAD * MPL_W4A8_ROW_PAD
                                              : j->m;
    int64_t m0 = rows * tid / nt, m1 = rows * (tid + 1) / nt;
    float *fbuf = (float *)(j->scratch + (size_t)tid * j->scratch_stride);
    if (j->variant >= MPL_W4A8_AVX512)
        mpl_w4a8_quant_rows_avx512(j, m0, m1, fbuf);
    else
        mpl_w4a8_quant_rows_avx2(j, m0, m1, fbuf);
}

static void gemm_task(void *ctx, int tid, int nt) {
    const mpl_w4a8_job *j = ctx;
    const int64_t P = j->p->panels;
    /* AMX works on 2-panel column blocks: split on even panel boundaries. */
    const int64_t unit = j->variant == MPL_W4A8_AMX ? 2 : 1, units = (P + unit - 1) / unit;
    int64_t p0 = units * tid / nt * unit, p1 = units * (tid + 1) / nt * unit;
    if (p1 > P) p1 = P;
    if (p0 >= p1) return;
    switch ((mpl_w4a8_variant)j->variant) {
    case MPL_W4A8_AMX: mpl_w4a8_gemm_amx(j, p0, p1, j->scratch + (size_t)tid * j->scratch_stride); break;
    case MPL_W4A8_AVX512: mpl_w4a8_gemm_avx512(j, p0, p1); break;
    case MPL_W4A8_AVXVNNI: mpl_w4a8_gemm_avxvnni(j, p0, p1); break;
    case MPL_W4A8_AVX2: mpl_w4a8_gemm_avx2(j, p0, p1); break;
    }
}

/* Rows below which quantizing on the calling thread beats waking the pool (a row is ~1 us). */
#define QUANT_PARALLEL_ROWS 8

static mpl_status apply(const void *packed, const mpl_apply_args *a) {
    const vnni_packed *kp = packed;
    const mpl_x86_w4a8 *p = kp->w;
    const int threads = a->threads < 1 ? 1 : a->threads;
    mpl_w4a8_job j;
    memset(&j, 0, sizeof j);
    j.p = p;
    j.act = kp->act;
    j.m = a->m;
    j.x = a->x;
    j.bias = a->bias;
    j.y = a->y;
    j.variant = pick_variant(p, a->m);
    const int64_t mp = (a->m + MPL_W4A8_ROW_PAD - 1) / MPL_W4A8_ROW_PAD * MPL_W4A8_ROW_PAD;
    char *ws = a->workspace;
    j.qx = (int8_t *)ws;
    j.lda = qx_stride(p->k);
    ws += round64((size_t)mp * (size_t)j.lda);
    j.sumq = (int32_t *)ws;
    ws += round64((size_t)mp * (size_t)p->groups * 4);
    j.sx = (float *)ws;
    ws += round64((size_t)mp * 4);
    j.scratch = ws;
    j.scratch_stride = scratch_stride(p->k);
    mpl_parallel_run(a->m < QUANT_PARALLEL_ROWS ? 1 : threads, quant_task, &j);
    mpl_parallel_run(threads, gemm_task, &j);
    return MPL_OK;
}

const mpl_kernel_desc mpl_kernel_x86_vnni_w4a8 = {
    .name = "x86_vnni_w4a8",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a8",
    .requires = "avx2+fma+f16c (runs avx512_vnni, amx_int8 or avx_vnni when present)",
    .isa = MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C,
    .min_cc = 0,
    .irregular_act_order = false,
    .can_implement = can_implement,
    .pack = pack,
    .destroy = destroy,
    .workspace_size = workspace_size,
    .apply = apply,
    .weight_bytes = weight_bytes,
};

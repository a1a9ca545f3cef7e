/*
 * w4a16_x86.c -- the plain-C driver of the x86 W4A16 kernels: can_implement,
 * pack glue, workspace plan, threads, and the decode/prefill choice. The
 * arithmetic lives in the ISA files behind mpl_xw_ops (see w4a16_x86.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "w4a16_x86.h"

static atomic_int g_force_path;

void mpl_xw_force_path(int path) { atomic_store(&g_force_path, path); }

mpl_reason mpl_xw_can_implement(const char *kernel, const mpl_config *c, char *msg, size_t cap) {
    if (c->mode != MPL_MODE_W4A16)
        return mpl_refuse(msg, cap, MPL_REASON_MODE, "mode W4A8: %s runs W4A16 only (activations used as given)",
                          kernel);
    if (mpl_wtype_bits(c->wtype) != 4)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE, "weight type %s: %s takes 4-bit types (uint4b8, uint4, int4)",
                          mpl_wtype_name(c->wtype), kernel);
    if (c->group_size != -1 && c->group_size % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 16 (the kernels step 16 inputs at a time)",
                          (long long)c->group_size);
    return MPL_REASON_OK;
}

/*
 * Decode/prefill switch: the largest m that takes the decode path. Measured on Sapphire
 * Rapids (K = N = 4096 and K = 4096, N = 28672): CPU time per call with hot weights, and
 * bench/x86/mplbench --sweep with cold weights, the paths taking turns call by call
 * (results in bench/results/x86-*.md):
 *   AMX prefill: decode ahead at m=1 (cold 11.5 vs 11.9 ms, 2 threads 5.25 vs 5.82); m=2..3
 *     within +-10% either way (1 thread favours decode, 2 threads AMX; hot, AMX 0.57 vs 0.65
 *     ms at m=2); AMX ahead from m=4 on (cold m=8: 11.5 vs 18.7 ms). The time rises
 *     smoothly across the switch.
 *   f32 prefill (f16/f32 activations): decode ahead up to m=8 (hot 1.9 vs 2.2 ms), behind at 16;
 *   AVX2: decode ahead at m=1 (1.0 vs 2.2 ms), equal at 2, prefill ahead from 4 (2.6 vs 4.3).
 *   vdpbf16ps prefill (Zen 4/5) was not measurable here: 4, between the two AVX-512 cases.
 */
static int64_t default_m_switch(const mpl_xw_ops *ops, mpl_xw_gemm_kind kind) {
    if (ops == &mpl_xw_ops_avx2) return 2;
    if (kind == MPL_XW_GEMM_AMX) return 1;
    if (kind == MPL_XW_GEMM_F32) return 8;
    return 4;
}

mpl_status mpl_xw_kernel_pack(const mpl_config *c, const mpl_canonical *w, const mpl_xw_ops *ops,
                              mpl_xw_gemm_kind gemm_kind, void **out) {
    mpl_xw_kernel *kn = calloc(1, sizeof *kn);
    if (!kn) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86 w4a16: out of memory");
    kn->cfg = *c;
    kn->ops = ops;
    kn->gemm_kind = gemm_kind;
    kn->kp = (w->k + 31) / 32 * 32;
    kn->m_switch = default_m_switch(ops, gemm_kind);
    mpl_status st = mpl_xw_pack(c, w, &kn->l);
    if (st != MPL_OK) {
        free(kn);
        return st;
    }
    *out = kn;
    return MPL_OK;
}

void mpl_xw_kernel_destroy(void *p) {
    mpl_xw_kernel *kn = p;
    if (!kn) return;
    mpl_xw_free(&kn->l);
    free(kn);
}

size_t mpl_xw_weight_bytes(const void *p) { return mpl_xw_bytes(&((const mpl_xw_kernel *)p)->l); }
int64_t mpl_xw_m_switch(const void *p) { return ((const mpl_xw_kernel *)p)->m_switch; }

static bool use_decode(const mpl_xw_kernel *kn, int64_t m) {
    int f = atomic_load(&g_force_path);
    return f == 1 || (f == 0 && m <= kn->m_switch);
}

/* Number of K splits for decode: split K only when N blocks cannot be shared evenly. */
static int64_t decode_splits(const mpl_xw_kernel *kn, int threads) {
    int64_t nb = kn->l.nblocks, t = threads;
    if (t <= 1 || nb >= 4 * t || nb % t == 0) return 1;
    return t;
}

/* Workspace plan; every piece 64-byte aligned. */
typedef struct {
    size_t xf, xb, part, cbuf, panel, scratch; /* offsets */
    size_t cbuf_stride, total;
} ws_plan;

static size_t al64(size_t v) { return (v + 63) & ~(size_t)63; }

/* Rows per prefill chunk: x rows of the chunk fill at most half of a 2 MiB L2 (multiple of 32). */
static int64_t prefill_mchunk(const mpl_xw_kernel *kn) {
    size_t row = kn->gemm_kind == MPL_XW_GEMM_F32 ? (size_t)kn->l.k * 4 : (size_t)kn->kp * 2;
    int64_t rows = (int64_t)((1u << 20) / row) / 32 * 32;
    return rows < 32 ? 32 : rows;
}

static void plan(const mpl_xw_kernel *kn, int64_t m, int threads, bool decode, ws_plan *p) {
    size_t M = (size_t)m, K = (size_t)kn->l.k, T = (size_t)(threads > 0 ? threads : 1);
    size_t Mp = (M + 31) / 32 * 32;
    bool f32x = decode || kn->gemm_kind == MPL_XW_GEMM_F32;
    size_t off = 0;
    p->xf = off;
    off += f32x ? al64(M * K * 4) : 0;
    p->xb = off;
    off += !f32x ? al64(Mp * (size_t)kn->kp * 2) : 0;
    p->part = off;
    off += decode && decode_splits(kn, threads) > 1 ? al64(T * M * (size_t)kn->l.np * 4) : 0;
    p->cbuf = off;
    size_t crows = decode ? M : Mp < (size_t)prefill_mchunk(kn) ? Mp : (size_t)prefill_mchunk(kn);
    p->cbuf_stride = al64(crows * MPL_XW_NB * 4);
    off += T * p->cbuf_stride;
    p->panel = off;
    off += decode ? 0 : T * (size_t)MPL_XW_PANEL_BYTES;
    p->scratch = off;
    off += decode ? 0 : T * al64(MPL_XW_SCRATCH_BYTES);
    p->total = off;
}

size_t mpl_xw_workspace_size(const void *pp, int64_t m, int threads) {
    const mpl_xw_kernel *kn = pp;
    ws_plan p;
    plan(kn, m, threads, use_decode(kn, m), &p);
    return p.total;
}

typedef struct {
    const mpl_xw_kernel *kn;
    const mpl_apply_args *a;
    char *ws;
    ws_plan p;
    int64_t splits;
    int64_t mchunk;
} xw_job;

static int ncols_of(const mpl_xw_kernel *kn, int64_t b) {
    int64_t left = kn->l.n - b * MPL_XW_NB;
    return left < MPL_XW_NB ? (int)left : MPL_XW_NB;
}

static const void *bias_of(const xw_job *j, int64_t b) {
    if (!j->a->bias) return NULL;
    return (const char *)j->a->bias + (size_t)(b * MPL_XW_NB) * mpl_act_size(j->kn->cfg.act);
}

static void *y_of(const xw_job *j, int64_t m0, int64_t b) {
    size_t es = mpl_act_size(j->kn->cfg.act);
    return (char *)j->a->y + ((size_t)m0 * (size_t)j->kn->l.n + (size_t)(b * MPL_XW_NB)) * es;
}

static void decode_task(void *ctx, int tid, int nt) {
    xw_job *j = ctx;
    const mpl_xw_kernel *kn = j->kn;
    int64_t M = j->a->m, S = j->splits, K = kn->l.k;
    int64_t items = kn->l.nblocks * S;
    int64_t i0 = items * tid / nt, i1 = items * (tid + 1) / nt;
    const float *xf = (const float *)(j->ws + j->p.xf);
    float *c = (float *)(j->ws + j->p.cbuf + (size_t)tid * j->p.cbuf_stride);
    for (int64_t it = i0; it < i1; it++) {
        int64_t b = it / S, s = it % S;
        /* Split points on 64-input boundaries keep whole 4-input chunks and most groups intact. */
        int64_t k0 = K * s / S / 64 * 64, k1 = s + 1 == S ? K : K * (s + 1) / S / 64 * 64;
        if (S == 1) {
            kn->ops->gemv(kn, xf, M, b, k0, k1, c);
            kn->ops->store(kn->cfg.act, c, M, ncols_of(kn, b), bias_of(j, b), y_of(j, 0, b), kn->l.n);
        } else {
            float *part = (float *)(j->ws + j->p.part) + (size_t)s * (size_t)M * (size_t)kn->l.np;
            kn->ops->gemv(kn, xf, M, b, k0, k1, c);
            for (int64_t m = 0; m < M; m++)
                memcpy(part + (size_t)m * (size_t)kn->l.np + (size_t)(b * MPL_XW_NB), c + m * MPL_XW_NB,
                       MPL_XW_NB * sizeof(float));
        }
    }
}

static void reduce_task(void *ctx, int tid, int nt) {
    xw_job *j = ctx;
    const mpl_xw_kernel *kn = j->kn;
    int64_t M = j->a->m, S = j->splits, np = kn->l.np;
    int64_t b0 = kn->l.nblocks * tid / nt, b1 = kn->l.nblocks * (tid + 1) / nt;
    const float *part = (const float *)(j->ws + j->p.part);
    float *c = (float *)(j->ws + j->p.cbuf + (size_t)tid * j->p.cbuf_stride);
    for (int64_t b = b0; b < b1; b++) {
        for (int64_t m = 0; m < M; m++)
            memcpy(c + m * MPL_XW_NB, part + (size_t)m * (size_t)np + (size_t)(b * MPL_XW_NB), MPL_XW_NB * 4);
        for (int64_t s = 1; s < S; s++)
            for (int64_t m = 0; m < M; m++)
                kn->ops->add(c + m * MPL_XW_NB, part + ((size_t)s * (size_t)M + (size_t)m) * (size_t)np +
                                                    (size_t)(b * MPL_XW_NB), 1);
        kn->ops->store(kn->cfg.act, c, M, ncols_of(kn, b), bias_of(j, b), y_of(j, 0, b), kn->l.n);
    }
}

static void prep_task(void *ctx, int tid, int nt) {
    xw_job *j = ctx;
    const mpl_xw_kernel *kn = j->kn;
    int64_t M = j->a->m;
    int64_t m0 = M * tid / nt, m1 = M * (tid + 1) / nt;
    if (kn->gemm_kind == MPL_XW_GEMM_F32)
        kn->ops->prep_f32(kn, j->a->x, m0, m1, (float *)(j->ws + j->p.xf));
    else if (kn->gemm_kind == MPL_XW_GEMM_AMX)
        mpl_xw_prep_amx(kn, j->a->x, m0, m1, M, (uint16_t *)(j->ws + j->p.xb));
    else
        kn->ops->prep_bf16(kn, j->a->x, m0, m1, M, (uint16_t *)(j->ws + j->p.xb));
}

/*
 * Prefill: threads form a grid of tn block ranges x tm row ranges (rows split only when blocks
 * are fewer than threads). Each thread walks its rows in chunks whose x fits half of L2, and
 * inside a chunk all its blocks, so x is read from L2 once per block instead of streaming the
 * whole of x from L3 for every block (measured: 2x at M=512, K=4096 on AMX).
 */
static void prefill_task(void *ctx, int tid, int nt) {
    xw_job *j = ctx;
    const mpl_xw_kernel *kn = j->kn;
    int64_t M = j->a->m, nb = kn->l.nblocks;
    int64_t tn = nb < nt ? nb : nt, tm = nt / tn;
    if (tid >= tn * tm) return;
    int64_t bi = tid % tn, mi = tid / tn;
    int64_t b0 = nb * bi / tn, b1 = nb * (bi + 1) / tn;
    int64_t tiles = (M + 31) / 32;
    int64_t r0 = tiles * mi / tm * 32, r1 = tiles * (mi + 1) / tm * 32;
    if (r1 > M) r1 = M;
    const void *xs = kn->gemm_kind == MPL_XW_GEMM_F32 ? (const void *)(j->ws + j->p.xf) : (const void *)(j->ws + j->p.xb);
    float *c = (float *)(j->ws + j->p.cbuf + (size_t)tid * j->p.cbuf_stride);
    void *panel = j->ws + j->p.panel + (size_t)tid * MPL_XW_PANEL_BYTES;
    void *scratch = j->ws + j->p.scratch + (size_t)tid * al64(MPL_XW_SCRATCH_BYTES);
    for (int64_t m0 = r0; m0 < r1; m0 += j->mchunk) {
        int64_t m1 = m0 + j->mchunk < r1 ? m0 + j->mchunk : r1;
        for (int64_t b = b0; b < b1; b++) {
            kn->ops->gemm[kn->gemm_kind](kn, xs, m0, m1, b, panel, c, scratch);
            kn->ops->store(kn->cfg.act, c, m1 - m0, ncols_of(kn, b), bias_of(j, b), y_of(j, m0, b), kn->l.n);
        }
    }
}

mpl_status mpl_xw_apply(const void *pp, const mpl_apply_args *a) {
    const mpl_xw_kernel *kn = pp;
    int T = a->threads > 0 ? a->threads : 1;
    bool decode = use_decode(kn, a->m);
    xw_job j = {.kn = kn, .a = a, .ws = a->workspace};
    plan(kn, a->m, T, decode, &j.p);
    if (decode) {
        j.splits = decode_splits(kn, T);
        kn->ops->prep_f32(kn, a->x, 0, a->m, (float *)(j.ws + j.p.xf));
        mpl_parallel_run(T, decode_task, &j);
        if (j.splits > 1) mpl_parallel_run(T, reduce_task, &j);
        return MPL_OK;
    }
    j.mchunk = prefill_mchunk(kn);
    mpl_parallel_run(T, prep_task, &j);
    mpl_parallel_run(T, prefill_task, &j);
    return MPL_OK;
}

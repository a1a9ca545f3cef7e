/*
 * x86_w4a16_driver.c -- the plain-flag driver of the x86 W4A16 kernels: the shared
 * can_implement rules, pack glue, workspace plan and threads. apply runs the path the layer
 * chose (a->path, a row of the descriptor's table); the arithmetic lives in the ISA files
 * behind mpl_x86_w4a16_path_impl and mpl_x86_w4a16_ops (see x86_w4a16_driver.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "x86_w4a16_driver.h"

mpl_reason mpl_x86_w4a16_can_implement(const char *kernel, const mpl_config *c, char *msg, size_t cap) {
    if (c->mode != MPL_MODE_W4A16)
        return mpl_refuse(msg, cap, MPL_REASON_MODE, "mode W4A8: %s runs W4A16 only (activations used as given)",
                          kernel);
    const int bits = mpl_wtype_bits(c->wtype);
    if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE,
                          "weight type %s (%d bits): %s takes 2-, 3-, 4- and 8-bit types (uint2b2, uint2, uint3b4, "
                          "uint3, uint4b8, uint4, int4, uint8b128, uint8)",
                          mpl_wtype_name(c->wtype), bits, kernel);
    if (c->group_size != -1 && c->group_size % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 16 (the kernels step 16 inputs at a time)",
                          (long long)c->group_size);
    return MPL_REASON_OK;
}

mpl_reason mpl_x86_w4a16_needs_bf16(const char *path, const mpl_config *c, char *msg, size_t cap) {
    if (c->act != MPL_ACT_BF16)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_TYPE,
                          "activations %s: %s multiplies bf16 x by a bf16 weight panel, so it takes bf16 "
                          "activations only (f16/f32 run the f32 paths)",
                          mpl_act_name(c->act), path);
    return MPL_REASON_OK;
}

/* The layout is the same for every path, so the set of enabled paths changes nothing here. */
mpl_status mpl_x86_w4a16_create(const mpl_config *c, const mpl_canonical *w, const mpl_x86_w4a16_ops *ops,
                                const mpl_x86_w4a16_path_impl *paths, int npaths, void **out) {
    mpl_x86_w4a16_kernel *kn = calloc(1, sizeof *kn);
    if (!kn) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86 w4a16: out of memory");
    kn->cfg = *c;
    kn->ops = ops;
    kn->paths = paths;
    kn->npaths = npaths;
    kn->kp = (w->k + 31) / 32 * 32;
    mpl_status st = mpl_x86_w4a16_pack(c, w, &kn->l);
    if (st != MPL_OK) {
        free(kn);
        return st;
    }
    *out = kn;
    return MPL_OK;
}

void mpl_x86_w4a16_destroy(void *p) {
    mpl_x86_w4a16_kernel *kn = p;
    if (!kn) return;
    mpl_x86_w4a16_free(&kn->l);
    free(kn);
}

size_t mpl_x86_w4a16_weight_bytes(const void *p) {
    return mpl_x86_w4a16_bytes(&((const mpl_x86_w4a16_kernel *)p)->l);
}

/* Blocks per decode gemv call (the path's run length). */
static int64_t gemv_blocks(const mpl_x86_w4a16_path_impl *pi) { return pi->gemv_blocks > 0 ? pi->gemv_blocks : 1; }

/* Number of K splits for decode: split K only when the runs of blocks cannot be shared evenly. */
static int64_t decode_splits(const mpl_x86_w4a16_kernel *kn, const mpl_x86_w4a16_path_impl *pi, int threads) {
    int64_t R = gemv_blocks(pi), runs = (kn->l.nblocks + R - 1) / R, t = threads;
    if (t <= 1 || runs >= 4 * t || runs % t == 0) return 1;
    return t;
}

/* Workspace plan; every piece 64-byte aligned. */
typedef struct {
    size_t xf, xb, part, cbuf, panel, scratch; /* offsets */
    size_t cbuf_stride, scratch_stride, total;
} ws_plan;

static size_t al64(size_t v) { return (v + 63) & ~(size_t)63; }

/* Rows per decode chunk: m itself unless the path chunks and x of m rows exceeds twice its chunk bytes. */
static int64_t decode_mchunk(const mpl_x86_w4a16_kernel *kn, const mpl_x86_w4a16_path_impl *pi, int64_t m) {
    if (!pi->gemv_chunk_bytes) return m;
    size_t row = pi->xs == MPL_X86_W4A16_XS_BF16 ? (size_t)kn->kp * 2 : (size_t)kn->l.k * 4;
    if ((size_t)m * row <= 2 * pi->gemv_chunk_bytes) return m;
    int64_t rows = (int64_t)(pi->gemv_chunk_bytes / row) / 4 * 4;
    return rows < 4 ? 4 : rows;
}

/* Rows per prefill chunk: x rows of the chunk fill at most half of a 2 MiB L2 (multiple of 32, at least 32);
 * with the path's mchunk_spill, at least that many rows where 128 rows of K inputs at 2 bytes each overflow that half
 * (K > 4096: the L2 rule's chunks are then 32-64 rows, and each chunk dequantizes and streams all the weights once;
 * x streams from L3 block after block whatever the chunk) or, with mchunk_spill_w8, where the weights are 8 bits
 * wide (twice the bytes per pass). */
static int64_t prefill_mchunk(const mpl_x86_w4a16_kernel *kn, const mpl_x86_w4a16_path_impl *pi) {
    if (pi->mchunk) return pi->mchunk;
    size_t row = pi->xs == MPL_X86_W4A16_XS_F32 ? (size_t)kn->l.k * 4 : (size_t)kn->kp * 2;
    int64_t rows = (int64_t)((1u << 20) / row) / 32 * 32;
    const bool long_k = (size_t)128 * (size_t)kn->kp * 2 > (1u << 20);
    if (pi->mchunk_spill && (long_k || (pi->mchunk_spill_w8 && kn->l.bits == 8)))
        return rows > pi->mchunk_spill ? rows : pi->mchunk_spill;
    return rows < 32 ? 32 : rows;
}

static void plan(const mpl_x86_w4a16_kernel *kn, const mpl_x86_w4a16_path_impl *pi, int64_t m, int threads,
                 ws_plan *p) {
    size_t M = (size_t)m, K = (size_t)kn->l.k, T = (size_t)(threads > 0 ? threads : 1);
    size_t Mp = (M + 31) / 32 * 32;
    const bool decode = pi->gemv != NULL, f32x = pi->xs != MPL_X86_W4A16_XS_BF16;
    size_t Mx = pi->xs == MPL_X86_W4A16_XS_F32_TILES ? (M + (size_t)pi->mtile - 1) / (size_t)pi->mtile * (size_t)pi->mtile : M;
    size_t off = 0;
    p->xf = off;
    off += f32x ? al64(Mx * K * 4) : 0;
    p->xb = off;
    off += !f32x ? al64(Mp * (size_t)kn->kp * 2) : 0;
    const size_t dchunk = decode ? (size_t)decode_mchunk(kn, pi, m) : 0;
    p->part = off;
    off += decode && dchunk == M && decode_splits(kn, pi, threads) > 1 ? al64(T * M * (size_t)kn->l.np * 4) : 0;
    p->cbuf = off;
    size_t crows = decode ? dchunk * (size_t)gemv_blocks(pi)
                          : Mp < (size_t)prefill_mchunk(kn, pi) ? Mp : (size_t)prefill_mchunk(kn, pi);
    p->cbuf_stride = al64(crows * MPL_X86_W4A16_NB * 4);
    off += T * p->cbuf_stride;
    p->panel = off;
    off += decode ? 0 : T * (size_t)MPL_X86_W4A16_PANEL_BYTES;
    p->scratch = off;
    p->scratch_stride = decode ? 0 : al64(pi->scratch_bytes);
    off += T * p->scratch_stride;
    p->total = off;
}

size_t mpl_x86_w4a16_workspace_size(const void *pp, int64_t m, int threads, int path) {
    const mpl_x86_w4a16_kernel *kn = pp;
    if (path < 0 || path >= kn->npaths) return 0; /* apply refuses such a path */
    ws_plan p;
    plan(kn, &kn->paths[path], m, threads, &p);
    return p.total;
}

typedef struct {
    const mpl_x86_w4a16_kernel *kn;
    const mpl_x86_w4a16_path_impl *pi;
    const mpl_apply_args *a;
    char *ws;
    ws_plan p;
    int64_t splits;
    int64_t mchunk; /* prefill: rows per chunk; decode: rows per chunk (m when not chunked) */
    atomic_llong next; /* the next unclaimed work item of the running task */
} xw_job;

/*
 * Work items are claimed from a shared counter, `per` at a time, rather than split up front:
 * a worker of the pool can start tens of microseconds after the caller (it sleeps between calls
 * and the CPUs are shared; measured on a 2-vCPU Zen 3 VM: 32-600 us to wake for a 3 us job),
 * and a static half would leave the caller waiting that long for it at the end. Items run in
 * order, so each claim is one contiguous stretch of the packed weights.
 */
static bool claim(xw_job *j, int64_t items, int64_t per, int64_t *i0, int64_t *i1) {
    int64_t i = atomic_fetch_add_explicit(&j->next, per, memory_order_relaxed);
    if (i >= items) return false;
    *i0 = i;
    *i1 = i + per < items ? i + per : items;
    return true;
}

static int ncols_of(const mpl_x86_w4a16_kernel *kn, int64_t b) {
    int64_t left = kn->l.n - b * MPL_X86_W4A16_NB;
    return left < MPL_X86_W4A16_NB ? (int)left : MPL_X86_W4A16_NB;
}

static const void *bias_of(const xw_job *j, int64_t b) {
    if (!j->a->bias) return NULL;
    return (const char *)j->a->bias + (size_t)(b * MPL_X86_W4A16_NB) * mpl_act_size(j->kn->cfg.act);
}

static void *y_of(const xw_job *j, int64_t m0, int64_t b) {
    size_t es = mpl_act_size(j->kn->cfg.act);
    return (char *)j->a->y + ((size_t)m0 * (size_t)j->kn->l.n + (size_t)(b * MPL_X86_W4A16_NB)) * es;
}

/* Decode claims: whole runs of blocks (gemv_blocks each) worth >= 256 KiB of weights (a stretch
 * the prefetchers stream well, a few per thread), single items when K is split. */
static int64_t decode_per(const mpl_x86_w4a16_kernel *kn, int64_t splits, int64_t run) {
    if (splits > 1) return 1;
    size_t run_bytes = kn->l.block_bytes * (size_t)run;
    int64_t per = (int64_t)((256u << 10) / (run_bytes ? run_bytes : 1));
    return per < 1 ? 1 : per;
}

static void *xs_of(const xw_job *j) {
    return j->ws + (j->pi->xs != MPL_X86_W4A16_XS_BF16 ? j->p.xf : j->p.xb);
}

/* Work items: (row chunk, run of up to gemv_blocks consecutive blocks, K split), chunk-major, then
 * run-major (K is split only when the rows are one chunk). */
static void decode_task(void *ctx, int tid, int nt) {
    (void)nt;
    xw_job *j = ctx;
    const mpl_x86_w4a16_kernel *kn = j->kn;
    const int64_t NB = MPL_X86_W4A16_NB;
    int64_t M = j->a->m, S = j->splits, K = kn->l.k, R = gemv_blocks(j->pi), MC = j->mchunk;
    int64_t runs = (kn->l.nblocks + R - 1) / R, per_chunk = runs * S, items = (M + MC - 1) / MC * per_chunk;
    int64_t per = decode_per(kn, S, R), i0, i1;
    const size_t xrow = j->pi->xs == MPL_X86_W4A16_XS_BF16 ? (size_t)kn->kp * 2 : (size_t)K * 4;
    float *c = (float *)(j->ws + j->p.cbuf + (size_t)tid * j->p.cbuf_stride);
    while (claim(j, items, per, &i0, &i1)) {
        for (int64_t it = i0; it < i1; it++) {
            int64_t m0 = it / per_chunk * MC, mc = M - m0 < MC ? M - m0 : MC, r = it % per_chunk;
            int64_t b0 = r / S * R, s = r % S;
            int64_t nb = kn->l.nblocks - b0 < R ? kn->l.nblocks - b0 : R;
            const void *xs = (const char *)xs_of(j) + (size_t)m0 * xrow;
            /* Split points on 64-input boundaries keep whole 4-input chunks and most groups intact. */
            int64_t k0 = K * s / S / 64 * 64, k1 = s + 1 == S ? K : K * (s + 1) / S / 64 * 64;
            j->pi->gemv(kn, xs, mc, b0, nb, k0, k1, c);
            for (int64_t i = 0; i < nb; i++) {
                const float *ci = c + i * mc * NB;
                int64_t b = b0 + i;
                if (S == 1) {
                    kn->ops->store(kn->cfg.act, ci, mc, ncols_of(kn, b), bias_of(j, b), y_of(j, m0, b), kn->l.n);
                } else {
                    float *part = (float *)(j->ws + j->p.part) + (size_t)s * (size_t)M * (size_t)kn->l.np;
                    for (int64_t m = 0; m < M; m++)
                        memcpy(part + (size_t)m * (size_t)kn->l.np + (size_t)(b * NB), ci + m * NB, NB * sizeof(float));
                }
            }
        }
    }
}

static void reduce_task(void *ctx, int tid, int nt) {
    xw_job *j = ctx;
    const mpl_x86_w4a16_kernel *kn = j->kn;
    const int64_t NB = MPL_X86_W4A16_NB;
    int64_t M = j->a->m, S = j->splits, np = kn->l.np;
    int64_t b0 = kn->l.nblocks * tid / nt, b1 = kn->l.nblocks * (tid + 1) / nt;
    const float *part = (const float *)(j->ws + j->p.part);
    float *c = (float *)(j->ws + j->p.cbuf + (size_t)tid * j->p.cbuf_stride);
    for (int64_t b = b0; b < b1; b++) {
        for (int64_t m = 0; m < M; m++)
            memcpy(c + m * NB, part + (size_t)m * (size_t)np + (size_t)(b * NB), NB * sizeof(float));
        for (int64_t s = 1; s < S; s++)
            for (int64_t m = 0; m < M; m++)
                kn->ops->add(c + m * NB, part + ((size_t)s * (size_t)M + (size_t)m) * (size_t)np + (size_t)(b * NB), 1);
        kn->ops->store(kn->cfg.act, c, M, ncols_of(kn, b), bias_of(j, b), y_of(j, 0, b), kn->l.n);
    }
}

static void prep_task(void *ctx, int tid, int nt) {
    xw_job *j = ctx;
    int64_t M = j->a->m;
    j->pi->prep(j->kn, j->a->x, M * tid / nt, M * (tid + 1) / nt, M, xs_of(j));
}

/*
 * Prefill: the work items are (row chunk, block) pairs, chunk-major, claimed one at a time (see
 * claim). Rows go in chunks whose x fits half of L2 (or the path's mchunk) and a chunk's blocks
 * come before the next chunk's, so each thread reads x of its chunk from L2 for block after
 * block instead of streaming the whole of x from L3 for every block (measured: 2x at M=512,
 * K=4096 on AMX). Chunks start at multiples of mchunk (the avx2 prep packs x per chunk).
 */
static void prefill_task(void *ctx, int tid, int nt) {
    (void)nt;
    xw_job *j = ctx;
    const mpl_x86_w4a16_kernel *kn = j->kn;
    int64_t M = j->a->m, nb = kn->l.nblocks, chunks = (M + j->mchunk - 1) / j->mchunk, i0, i1;
    const void *xs = xs_of(j);
    float *c = (float *)(j->ws + j->p.cbuf + (size_t)tid * j->p.cbuf_stride);
    void *panel = j->ws + j->p.panel + (size_t)tid * MPL_X86_W4A16_PANEL_BYTES;
    void *scratch = j->ws + j->p.scratch + (size_t)tid * j->p.scratch_stride;
    while (claim(j, chunks * nb, 1, &i0, &i1)) {
        int64_t m0 = i0 / nb * j->mchunk, b = i0 % nb;
        int64_t m1 = m0 + j->mchunk < M ? m0 + j->mchunk : M;
        j->pi->gemm(kn, xs, m0, m1, b, panel, c, scratch);
        kn->ops->store(kn->cfg.act, c, m1 - m0, ncols_of(kn, b), bias_of(j, b), y_of(j, m0, b), kn->l.n);
    }
}

mpl_status mpl_x86_w4a16_apply(const void *pp, const mpl_apply_args *a) {
    const mpl_x86_w4a16_kernel *kn = pp;
    if (a->path < 0 || a->path >= kn->npaths)
        return mpl_set_error(MPL_ERR_INTERNAL, "x86 w4a16 apply: path %d: the kernel has paths 0..%d", a->path,
                             kn->npaths - 1);
    const int T = a->threads > 0 ? a->threads : 1;
    xw_job j = {.kn = kn, .pi = &kn->paths[a->path], .a = a, .ws = a->workspace};
    plan(kn, j.pi, a->m, T, &j.p);
    if (j.pi->gemv) {
        j.mchunk = decode_mchunk(kn, j.pi, a->m);
        j.splits = j.mchunk == a->m ? decode_splits(kn, j.pi, T) : 1;
        if (j.mchunk == a->m)
            j.pi->prep(kn, a->x, 0, a->m, a->m, xs_of(&j));
        else
            mpl_parallel_run(T, prep_task, &j); /* many rows: prepared by every thread */
        atomic_init(&j.next, 0);
        mpl_parallel_run(T, decode_task, &j);
        if (j.splits > 1) mpl_parallel_run(T, reduce_task, &j);
        return MPL_OK;
    }
    j.mchunk = prefill_mchunk(kn, j.pi);
    mpl_parallel_run(T, prep_task, &j);
    atomic_init(&j.next, 0);
    mpl_parallel_run(T, prefill_task, &j);
    return MPL_OK;
}

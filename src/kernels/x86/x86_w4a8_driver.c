/*
 * x86_w4a8_driver.c -- the plain-flag driver of the x86 W4A8 kernels (W4A8: int8 activations
 * quantized per row on the fly, 2-, 3-, 4- or 8-bit weights, integer inner products): the shared
 * can_implement rules, pack glue, workspace plan and the two phases of apply over the thread
 * pool. apply runs the path the layer chose (a->path, a row of the descriptor's table); the
 * arithmetic lives in the ISA files behind mpl_x86_w4a8_path_impl (x86_w4a8_driver.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "x86_w4a8_driver.h"

mpl_reason mpl_x86_w4a8_can_implement(const char *kernel, const mpl_config *c, char *msg, size_t cap) {
    if (c->mode != MPL_MODE_W4A8)
        return mpl_refuse(msg, cap, MPL_REASON_MODE,
                          "mode W4A16: %s runs only W4A8 configs (activations quantized to int8); "
                          "W4A16 configs use the W4A16 kernels",
                          kernel);
    /* Every width (2, 3, 4, 8 bits), with or without zero points: the layout holds each as its stored
     * code u and the integer sums subtract z * sum(q) (docs/layouts/x86_w4a8.md). */
    const int bits = mpl_wtype_bits(c->wtype);
    if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE, "weight type %s: must be a 2-, 3-, 4- or 8-bit type",
                          mpl_wtype_name(c->wtype));
    if (!c->zero_points != !mpl_wtype_needs_zeros(c->wtype))
        return mpl_refuse(msg, cap, MPL_REASON_ZERO_POINTS,
                          "zero points %s with %s: only uint2, uint3, uint4 and uint8 take (and need) zero points",
                          c->zero_points ? "on" : "off", mpl_wtype_name(c->wtype));
    if (c->group_size != -1 && (c->group_size % 32 != 0 || c->k % c->group_size != 0))
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 32 that divides k = %lld",
                          (long long)c->group_size, (long long)c->k);
    const int kmul = mpl_x86_w4a8_kstep(bits) > MPL_X86_W4A8_KBLOCK ? mpl_x86_w4a8_kstep(bits) : MPL_X86_W4A8_KBLOCK;
    if (c->k % kmul != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE, "k = %lld: must be a multiple of %d for %d-bit weights",
                          (long long)c->k, kmul, bits);
    return MPL_REASON_OK;
}

/* The kernel's packed state: the layout, the activation type and the descriptor's path table. */
typedef struct {
    mpl_x86_w4a8_layout *w;
    mpl_act act;
    const mpl_x86_w4a8_path_impl *paths;
    int npaths;
} w4a8_packed;

void mpl_x86_w4a8_destroy(void *packed) {
    w4a8_packed *k = packed;
    if (!k) return;
    mpl_x86_w4a8_free(k->w);
    free(k);
}

/* The layout is the same for every path, so the set of enabled paths changes nothing here. */
mpl_status mpl_x86_w4a8_create(const char *kernel, const mpl_config *c, const mpl_canonical *w,
                               const mpl_x86_w4a8_path_impl *paths, int npaths, void **out) {
    *out = NULL;
    w4a8_packed *k = calloc(1, sizeof *k);
    if (!k) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s pack: out of memory", kernel);
    k->act = c->act;
    k->paths = paths;
    k->npaths = npaths;
    mpl_status st = mpl_x86_w4a8_pack(c, w, &k->w);
    if (st != MPL_OK) {
        free(k);
        return st;
    }
    *out = k;
    return MPL_OK;
}

size_t mpl_x86_w4a8_weight_bytes(const void *packed) { return mpl_x86_w4a8_bytes(((const w4a8_packed *)packed)->w); }

static size_t round64(size_t b) { return (b + 63) & ~(size_t)63; }

/* Row stride of qx: k rounded up to 64 bytes plus one line, so the 16 rows of an AMX A tile (or the
 * rows of a VNNI micro-tile) never share one L1 set (a 4 KiB stride would map them all to one). */
static int64_t qx_stride(int64_t k) { return (k + 63) / 64 * 64 + 64; }

/* Rows of qx the path reads: m rounded up to its row block (its padding rows quantized to zero). */
static int64_t rows_of(const mpl_x86_w4a8_path_impl *pi, int64_t m) {
    return (m + pi->row_block - 1) / pi->row_block * pi->row_block;
}

/* Per thread: an f32 row for quantization, then (AMX) the tile scratch. */
static size_t scratch_stride(const mpl_x86_w4a8_path_impl *pi, int64_t k) {
    size_t row = (size_t)k * sizeof(float), tiles = pi->tiles ? mpl_x86_w4a8_tile_scratch(k) : 0;
    return round64(row > tiles ? row : tiles);
}

/* Workspace: qx [rows][qx_stride] | sumq [rows][groups] | sx [rows] | per thread: scratch_stride. */
size_t mpl_x86_w4a8_workspace_size(const void *packed, int64_t m, int threads, int path) {
    const w4a8_packed *kp = packed;
    const mpl_x86_w4a8_layout *p = kp->w;
    if (path < 0 || path >= kp->npaths) return 0; /* apply refuses such a path */
    const mpl_x86_w4a8_path_impl *pi = &kp->paths[path];
    if (threads < 1) threads = 1;
    if (m < 0 || m > INT64_MAX - MPL_X86_W4A8_ROW_PAD) return SIZE_MAX;
    int64_t rows = rows_of(pi, m);
    size_t qx, sq, sx, per;
    if (!mpl_size_mul3(rows, qx_stride(p->k), 1, &qx) || !mpl_size_mul3(rows, p->groups, 4, &sq) ||
        !mpl_size_mul3(rows, 4, 1, &sx) || mpl_mul_overflow_sz(scratch_stride(pi, p->k), (size_t)threads, &per))
        return SIZE_MAX;
    size_t total = round64(qx);
    if (mpl_add_overflow_sz(total, round64(sq), &total) || mpl_add_overflow_sz(total, round64(sx), &total) ||
        mpl_add_overflow_sz(total, per, &total) || total > SIZE_MAX - 64)
        return SIZE_MAX;
    return total;
}

typedef struct {
    mpl_x86_w4a8_job j;
    const mpl_x86_w4a8_path_impl *pi;
    int64_t per;       /* decode: units per claim (0: prefill, static shares) */
    atomic_llong next; /* decode: the next unclaimed unit */
} w4a8_run;

static void quant_task(void *ctx, int tid, int nt) {
    const w4a8_run *r = ctx;
    const int64_t rows = rows_of(r->pi, r->j.m);
    float *fbuf = (float *)(r->j.scratch + (size_t)tid * r->j.scratch_stride);
    r->pi->quant(&r->j, rows * tid / nt, rows * (tid + 1) / nt, fbuf);
}

/*
 * Prefill: each thread a static share of the panels. Decode: units claimed from a shared counter, per
 * at a time, as the W4A16 driver does (x86_w4a16_driver.c, claim): a pool worker can start tens to
 * hundreds of microseconds after the caller, and with static halves the caller then waited for it.
 * Zen 4 VM, 4096x14336 and 14336x4096 m=1, 2 threads (zen_peers.py): 1215 / 1498 us with static
 * halves, 70-81% of the read bandwidth against 93-102% at one thread.
 */
static void gemm_task(void *ctx, int tid, int nt) {
    w4a8_run *r = ctx;
    const int64_t P = r->j.p->panels, unit = r->pi->panel_block, units = (P + unit - 1) / unit;
    void *scratch = r->j.scratch + (size_t)tid * r->j.scratch_stride;
    if (r->per == 0) {
        int64_t p0 = units * tid / nt * unit, p1 = units * (tid + 1) / nt * unit;
        if (p1 > P) p1 = P;
        if (p0 < p1) r->pi->gemm(&r->j, p0, p1, scratch);
        return;
    }
    for (;;) {
        int64_t u0 = atomic_fetch_add_explicit(&r->next, r->per, memory_order_relaxed);
        if (u0 >= units) return;
        int64_t p0 = u0 * unit, p1 = (u0 + r->per) * unit;
        r->pi->gemm(&r->j, p0, p1 < P ? p1 : P, scratch);
    }
}

/* Rows up to which the panels are claimed in stretches of about 256 KiB of weights (decode). */
#define CLAIM_MAX_ROWS 4

/* Rows below which quantizing on the calling thread beats waking the pool (a row is ~1 us). */
#define QUANT_PARALLEL_ROWS 8

mpl_status mpl_x86_w4a8_apply(const void *packed, const mpl_apply_args *a) {
    const w4a8_packed *kp = packed;
    const mpl_x86_w4a8_layout *p = kp->w;
    if (a->path < 0 || a->path >= kp->npaths)
        return mpl_set_error(MPL_ERR_INTERNAL, "x86 w4a8 apply: path %d: the kernel has paths 0..%d", a->path,
                             kp->npaths - 1);
    const int threads = a->threads < 1 ? 1 : a->threads;
    w4a8_run r;
    memset(&r, 0, sizeof r);
    r.pi = &kp->paths[a->path];
    mpl_x86_w4a8_job *j = &r.j;
    j->p = p;
    j->act = kp->act;
    j->m = a->m;
    j->x = a->x;
    j->bias = a->bias;
    j->y = a->y;
    const int64_t rows = rows_of(r.pi, a->m);
    char *ws = a->workspace;
    j->qx = (int8_t *)ws;
    j->lda = qx_stride(p->k);
    ws += round64((size_t)rows * (size_t)j->lda);
    j->sumq = (int32_t *)ws;
    ws += round64((size_t)rows * (size_t)p->groups * 4);
    j->sx = (float *)ws;
    ws += round64((size_t)rows * 4);
    j->scratch = ws;
    j->scratch_stride = scratch_stride(r.pi, p->k);
    if (threads > 1 && a->m <= CLAIM_MAX_ROWS) {
        size_t unit_bytes = p->panel_bytes * (size_t)r.pi->panel_block;
        r.per = (int64_t)((256u << 10) / (unit_bytes ? unit_bytes : 1));
        if (r.per < 1) r.per = 1;
    }
    atomic_init(&r.next, 0);
    mpl_parallel_run(a->m < QUANT_PARALLEL_ROWS ? 1 : threads, quant_task, &r);
    mpl_parallel_run(threads, gemm_task, &r);
    return MPL_OK;
}

/*
 * ref.c -- the reference kernel: portable scalar C, the executable
 * specification of every weight type, group size, zero point, act-order and
 * activation mode (see mplinear.h for the exact semantics).
 *
 * W4A16: y[m,n] = bias[n] + sum_g scale[n,g] * acc_g, acc_g = sum over k in
 *   group g (ascending k) of x[m,k] * w[n,k] in fp32; groups summed in
 *   ascending g; output rounded once to the activation type.
 * W4A8: x rows quantized by mpl_quantize_row_i8; isum_g exact (int64 here,
 *   bounded below 2^31 by config validation); y = (sum_g scale * isum_g) * sx + bias.
 *
 * It keeps the canonical form as its packed layout ("canonical").
 * Rows of N are spread over the thread pool; each output element is computed
 * by one thread with the same order, so results do not depend on threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels.h"

typedef struct {
    mpl_config cfg;
    mpl_canonical w;
    int16_t *values; /* [n][k] integer weight values (code - zero or - bias) */
} ref_packed;

static mpl_reason ref_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)c;
    (void)p;
    (void)msg;
    (void)cap;
    return MPL_REASON_OK;
}

static void ref_destroy(void *pp) {
    ref_packed *r = pp;
    if (!r) return;
    mpl_canonical_free(&r->w);
    free(r->values);
    free(r);
}

static mpl_status ref_pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *p, uint32_t enabled,
                           void **out) {
    (void)p, (void)enabled;
    ref_packed *r = calloc(1, sizeof *r);
    if (!r) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "ref: out of memory");
    r->cfg = *c;
    mpl_status st = mpl_canonical_alloc_groups(&r->w, c, w->groups); /* w's count: a row shard's may differ */
    if (st != MPL_OK) {
        free(r);
        return st;
    }
    size_t nk = (size_t)w->n * (size_t)w->k;
    r->values = malloc(nk * sizeof(int16_t));
    if (!r->values) {
        ref_destroy(r);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "ref: cannot allocate %zu weight values", nk);
    }
    memcpy(r->w.scales, w->scales, (size_t)w->n * (size_t)w->groups * sizeof(float));
    if (w->zeros) memcpy(r->w.zeros, w->zeros, (size_t)w->n * (size_t)w->groups);
    if (w->g_idx) memcpy(r->w.g_idx, w->g_idx, (size_t)w->k * sizeof(int32_t));
    memcpy(r->w.codes, w->codes, nk);
    for (int64_t n = 0; n < w->n; n++)
        for (int64_t k = 0; k < w->k; k++) r->values[n * w->k + k] = (int16_t)mpl_weight_value(w, n, k);
    /* The codes are kept only for unpack-style inspection; values drive apply. */
    *out = r;
    return MPL_OK;
}

static size_t ref_weight_bytes(const void *pp) {
    const ref_packed *r = pp;
    size_t b = (size_t)r->w.n * (size_t)r->w.k * sizeof(int16_t) + (size_t)r->w.n * (size_t)r->w.groups * 4;
    return b;
}

/* Workspace: x as f32 [m][k] | W4A8: q [m][k] int8 + sx [m] + bad [m] | per-thread group accumulators. */
typedef struct {
    const ref_packed *r;
    const mpl_apply_args *a;
    float *xf;
    int8_t *xq;
    float *sx;
    int *bad;
    char *acc_base; /* per thread: groups floats (W4A16) or int64 (W4A8) */
    size_t acc_stride;
} ref_job;

static size_t ref_workspace_size(const void *pp, int64_t m, int threads, int path) {
    (void)path;
    const ref_packed *r = pp;
    size_t k = (size_t)r->w.k, mm = (size_t)m;
    size_t per_thread = ((size_t)r->w.groups * 8 + 63) & ~(size_t)63;
    return ((mm * k * 4 + 63) & ~(size_t)63) + ((mm * k + 63) & ~(size_t)63) + ((mm * 8 + 63) & ~(size_t)63) +
           ((mm * sizeof(int) + 63) & ~(size_t)63) + per_thread * (size_t)(threads > 0 ? threads : 1);
}

static void ref_rows(void *ctx, int tid, int nt) {
    ref_job *j = ctx;
    const ref_packed *r = j->r;
    const mpl_apply_args *a = j->a;
    const mpl_canonical *w = &r->w;
    int64_t K = w->k, N = w->n, G = w->groups;
    int64_t n0 = N * tid / nt, n1 = N * (tid + 1) / nt;
    mpl_act act = r->cfg.act;
    float *facc = (float *)(j->acc_base + (size_t)tid * j->acc_stride);
    int64_t *iacc = (int64_t *)facc;
    for (int64_t m = 0; m < a->m; m++) {
        for (int64_t n = n0; n < n1; n++) {
            const int16_t *v = r->values + n * K;
            const float *sc = w->scales + n * G;
            float y;
            if (r->cfg.mode == MPL_MODE_W4A16) {
                const float *x = j->xf + m * K;
                memset(facc, 0, (size_t)G * sizeof(float));
                for (int64_t k = 0; k < K; k++) facc[mpl_group_of(w, k)] += x[k] * (float)v[k];
                y = 0.0f;
                for (int64_t g = 0; g < G; g++) y += sc[g] * facc[g];
            } else if (j->bad[m]) {
                y = NAN;
            } else {
                const int8_t *q = j->xq + m * K;
                memset(iacc, 0, (size_t)G * sizeof(int64_t));
                for (int64_t k = 0; k < K; k++) iacc[mpl_group_of(w, k)] += (int64_t)q[k] * v[k];
                float s = 0.0f;
                for (int64_t g = 0; g < G; g++) s += sc[g] * (float)iacc[g];
                y = s * j->sx[m];
            }
            if (a->bias) y += mpl_act_load(act, a->bias, n);
            mpl_f32_to_act(act, &y, (char *)a->y + (size_t)(m * N + n) * mpl_act_size(act), 1);
        }
    }
}

static mpl_status ref_apply(const void *pp, const mpl_apply_args *a) {
    const ref_packed *r = pp;
    size_t k = (size_t)r->w.k, mm = (size_t)a->m;
    char *ws = a->workspace;
    ref_job j = {.r = r, .a = a};
    j.xf = (float *)ws;
    ws += (mm * k * 4 + 63) & ~(size_t)63;
    j.xq = (int8_t *)ws;
    ws += (mm * k + 63) & ~(size_t)63;
    j.sx = (float *)ws;
    ws += (mm * 8 + 63) & ~(size_t)63;
    j.bad = (int *)ws;
    ws += (mm * sizeof(int) + 63) & ~(size_t)63;
    j.acc_base = ws;
    j.acc_stride = ((size_t)r->w.groups * 8 + 63) & ~(size_t)63;
    mpl_act_to_f32(r->cfg.act, a->x, j.xf, a->m * r->w.k);
    if (r->cfg.mode == MPL_MODE_W4A8)
        for (int64_t m = 0; m < a->m; m++)
            j.sx[m] = mpl_quantize_row_i8(j.xf + m * r->w.k, r->w.k, j.xq + m * r->w.k, &j.bad[m]);
    mpl_parallel_run(a->threads, ref_rows, &j);
    return MPL_OK;
}

/* One path: the specification has no alternatives. */
static const mpl_path_desc ref_paths[] = {
    {.name = "ref:scalar",
     .requires = "",
     .m_min = 1,
     .m_max = MPL_M_ANY,
     .m_limit = MPL_M_ANY,
     .why = "the only path of the reference kernel"},
};

const mpl_kernel_desc mpl_kernel_ref = {
    .name = "ref",
    .backend = MPL_BACKEND_CPU,
    .layout = "canonical",
    .requires = "any CPU",
    .isa = 0,
    .min_cc = 0,
    .irregular_act_order = true,
    .can_implement = ref_can_implement,
    .paths = ref_paths,
    .npaths = 1,
    .pack = ref_pack,
    .destroy = ref_destroy,
    .workspace_size = ref_workspace_size,
    .apply = ref_apply,
    .weight_bytes = ref_weight_bytes,
};

/* layer.c -- layer life cycle: create (validate, choose, decode, pack), apply on the path for m, destroy. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../decode/decode.h"
#include "internal.h"
#include "../platform/platform.h"

struct mpl_layer {
    mpl_config cfg;
    const mpl_kernel_desc *kernel;
    mpl_plan plan; /* the paths it may run and their m ranges (registry.c) */
    void *packed;
    int threads;
};

/* Paths whose state is only known after pack (path_ready) leave the plan when refused; a forced one
 * that is refused, or a plan left with no path, fails the create with the path's reason. */
static mpl_status check_ready(mpl_layer *l) {
    const mpl_kernel_desc *d = l->kernel;
    if (!d->path_ready) return MPL_OK;
    char first[320] = "";
    const char *first_name = NULL;
    for (int i = 0; i < d->npaths; i++) {
        if (!(l->plan.enabled >> i & 1)) continue;
        char msg[256];
        mpl_reason r = d->path_ready(l->packed, i, msg, sizeof msg);
        if (r == MPL_REASON_OK) continue;
        l->plan.enabled &= ~(1u << i);
        if (!first_name) {
            first_name = d->paths[i].name;
            snprintf(first, sizeof first, "%s: %s", mpl_reason_name(r), msg);
        }
    }
    if (l->plan.enabled) return MPL_OK;
    return mpl_set_error(MPL_ERR_UNSUPPORTED, "%s '%s' cannot run this layer: %s", l->plan.forced_path >= 0 ? "path" : "kernel",
                         l->plan.forced_path >= 0 ? first_name : d->name, first);
}

mpl_status mpl_layer_create(const mpl_config *cfg, const mpl_checkpoint_tensors *ckpt, const mpl_options *opt,
                            mpl_layer **out) {
    mpl_clear_error();
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_layer_create: out is NULL");
    *out = NULL;
    if (!cfg || !ckpt) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_layer_create: config or checkpoint is NULL");
    mpl_options defaults;
    mpl_options_init(&defaults);
    if (!opt) opt = &defaults;
    if (opt->threads < 0)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "options threads = %d: must be 0 (all cores) or positive",
                             opt->threads);
    mpl_status st = mpl_config_validate(cfg);
    if (st != MPL_OK) return st;
    /* Choose on the static config first: a refusal costs no decoding. */
    mpl_plan plan;
    st = mpl_choose_plan(cfg, opt, 0, &plan, NULL, 0, NULL);
    if (st != MPL_OK) return st;
    mpl_canonical w;
    st = mpl_decode_checkpoint(cfg, ckpt, &w);
    if (st != MPL_OK) return st;
    return mpl_layer_create_canonical(cfg, opt, &plan, &w, out);
}

mpl_status mpl_layer_create_canonical(const mpl_config *cfg, const mpl_options *opt, const mpl_plan *static_plan,
                                      mpl_canonical *wp, mpl_layer **out) {
    mpl_canonical w = *wp;
    memset(wp, 0, sizeof *wp);
    mpl_plan plan = *static_plan;
    mpl_status st = mpl_canonical_resolve_act_order(&w);
    if (st != MPL_OK) {
        mpl_canonical_free(&w);
        return st;
    }
    if (cfg->act_order && !w.act_order_uniform) {
        st = mpl_choose_plan(cfg, opt, 1, &plan, NULL, 0, NULL);
        if (st != MPL_OK) {
            mpl_canonical_free(&w);
            return st;
        }
    }
    mpl_layer *l = calloc(1, sizeof *l);
    if (!l) {
        mpl_canonical_free(&w);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "mpl_layer_create: out of memory");
    }
    l->cfg = *cfg;
    if (l->cfg.full_k == 0) l->cfg.full_k = cfg->k;
    if (l->cfg.full_n == 0) l->cfg.full_n = cfg->n;
    l->kernel = plan.kernel;
    l->plan = plan;
    /* CPU layers on more than one thread create the pool here (its workers pinned, pool.c), so the
     * first apply does not pay for thread creation. */
    int pool = plan.kernel->backend == MPL_BACKEND_CPU && opt->threads != 1 ? mpl_pool_size() : 1;
    l->threads = opt->threads == 0 || opt->threads > pool ? pool : opt->threads;
    st = l->kernel->pack(&l->cfg, &w, &plan.platform, plan.enabled, &l->packed);
    mpl_canonical_free(&w);
    if (st == MPL_OK) st = check_ready(l);
    if (st != MPL_OK) {
        mpl_layer_destroy(l);
        return st;
    }
    *out = l;
    return MPL_OK;
}

void mpl_layer_destroy(mpl_layer *l) {
    if (!l) return;
    if (l->packed) l->kernel->destroy(l->packed);
    free(l);
}

const char *mpl_layer_kernel(const mpl_layer *l) { return l ? l->kernel->name : NULL; }
const char *mpl_layer_path(const mpl_layer *l, int64_t m) {
    int i = l ? mpl_plan_path(&l->plan, m) : -1;
    return i < 0 ? NULL : l->kernel->paths[i].name;
}
const mpl_config *mpl_layer_config(const mpl_layer *l) { return l ? &l->cfg : NULL; }
int mpl_layer_threads(const mpl_layer *l) { return l ? l->threads : 0; }
size_t mpl_layer_weight_bytes(const mpl_layer *l) {
    return (l && l->kernel->weight_bytes) ? l->kernel->weight_bytes(l->packed) : 0;
}
double mpl_layer_weight_rounding(const mpl_layer *l, int64_t m) {
    int path = l ? mpl_plan_path(&l->plan, m) : -1;
    return (path >= 0 && l->kernel->weight_rounding) ? l->kernel->weight_rounding(l->packed, m, path) : 0.0;
}

/* Per-thread workspace: grows to the largest size seen on the thread, so a
 * steady-state apply allocates nothing. It is also registered under a pthread
 * key whose destructor frees it when the thread exits (a _Thread_local pointer
 * alone leaks one workspace per thread that ever called apply). */
static _Thread_local void *tls_ws;
static _Thread_local size_t tls_ws_size;
static pthread_key_t ws_key;
static pthread_once_t ws_key_once = PTHREAD_ONCE_INIT;
static int ws_key_ok;

static void ws_key_create(void) { ws_key_ok = pthread_key_create(&ws_key, mpl_aligned_free) == 0; }

static void *thread_workspace(size_t bytes) {
    if (bytes <= tls_ws_size) return tls_ws;
    void *p = mpl_aligned_alloc(bytes);
    if (!p) return NULL;
    mpl_aligned_free(tls_ws);
    tls_ws = p;
    tls_ws_size = bytes;
    pthread_once(&ws_key_once, ws_key_create);
    if (ws_key_ok) pthread_setspecific(ws_key, p);
    return p;
}

static mpl_status check_apply_args(const mpl_layer *l, int64_t m, const void *x, void *y) {
    if (!l) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "apply: layer is NULL");
    if (m < 0 || m > MPL_MAX_M)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "apply: m = %lld: must be in 0..%lld", (long long)m,
                             (long long)MPL_MAX_M);
    if (m > 0 && (!x || !y)) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "apply: x or y is NULL");
    size_t bx, by;
    if (!mpl_size_mul3(m, l->cfg.k, (int64_t)mpl_act_size(l->cfg.act), &bx) ||
        !mpl_size_mul3(m, l->cfg.n, (int64_t)mpl_act_size(l->cfg.act), &by))
        return mpl_set_error(MPL_ERR_OVERFLOW, "apply: m = %lld rows: byte count overflows", (long long)m);
    return MPL_OK;
}

/* The path for m rows, or an error naming why none can run them. */
static mpl_status apply_path(const mpl_layer *l, int64_t m, int *path) {
    *path = mpl_plan_path(&l->plan, m);
    if (*path >= 0) return MPL_OK;
    const mpl_kernel_desc *d = l->kernel;
    if (l->plan.forced_path >= 0)
        return mpl_set_error(MPL_ERR_UNSUPPORTED, "apply: m = %lld rows: forced path %s runs at most %lld rows",
                             (long long)m, d->paths[l->plan.forced_path].name,
                             (long long)d->paths[l->plan.forced_path].m_limit);
    return mpl_set_error(MPL_ERR_UNSUPPORTED, "apply: m = %lld rows: no path of %s allowed for this layer runs that many",
                         (long long)m, d->name);
}

mpl_status mpl_layer_apply(mpl_layer *l, int64_t m, const void *x, const void *bias, void *y) {
    mpl_status st = check_apply_args(l, m, x, y);
    if (st != MPL_OK || m == 0) return st;
    int path;
    if ((st = apply_path(l, m, &path)) != MPL_OK) return st;
    mpl_apply_args a = {.m = m, .x = x, .bias = bias, .y = y, .threads = l->threads, .path = path};
    size_t ws = l->kernel->workspace_size ? l->kernel->workspace_size(l->packed, m, l->threads, path) : 0;
    if (ws) {
        a.workspace = thread_workspace(ws);
        if (!a.workspace)
            return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "apply: cannot allocate %zu bytes of workspace", ws);
    }
    return l->kernel->apply(l->packed, &a);
}

mpl_status mpl_layer_apply_device(mpl_layer *l, int64_t m, const void *x, const void *bias, void *y, void *stream) {
    mpl_status st = check_apply_args(l, m, x, y);
    if (st != MPL_OK) return st;
    if (l->kernel->backend != MPL_BACKEND_CUDA)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "apply_device: layer runs kernel '%s' on the CPU; device pointers need a CUDA layer",
                             l->kernel->name);
    if (m == 0) return MPL_OK;
    /* A pointer the layer's device cannot use would fault the kernel and leave a sticky error in the
     * context: refuse it with what CUDA says it is (src/platform/cuda_rt.c). */
    const int dev = l->plan.platform.cuda_device;
    if ((st = mpl_cuda_check_pointer(x, dev, "x")) != MPL_OK ||
        (bias && (st = mpl_cuda_check_pointer(bias, dev, "bias")) != MPL_OK) ||
        (st = mpl_cuda_check_pointer(y, dev, "y")) != MPL_OK)
        return st;
    int path;
    if ((st = apply_path(l, m, &path)) != MPL_OK) return st;
    mpl_apply_args a = {.m = m, .x = x, .bias = bias, .y = y, .threads = l->threads, .path = path, .stream = stream,
                        .device_pointers = 1};
    return l->kernel->apply(l->packed, &a);
}

/*
 * registry.c -- the kernel tables (data, in priority order, reference last)
 * and the chooser.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "internal.h"

/* CPU: W4A8 first (it refuses W4A16 configs, and W4A16 kernels refuse W4A8),
 * then the widest ISA first; ref implements everything. */
static const mpl_kernel_desc *const cpu_table[] = {
#if defined(__x86_64__)
    &mpl_kernel_x86_vnni_w4a8,
    &mpl_kernel_x86_avx512_w4a16,
    &mpl_kernel_x86_avx2_w4a16,
#endif
    &mpl_kernel_ref,
};

#ifdef MPL_HAVE_CUDA
static const mpl_kernel_desc *const cuda_table[] = {
    &mpl_kernel_cuda_w4a16,
};
#endif

const mpl_kernel_desc *const *mpl_registry(mpl_backend b, int *count) {
    if (b == MPL_BACKEND_CPU) {
        *count = (int)(sizeof cpu_table / sizeof cpu_table[0]);
        return cpu_table;
    }
#ifdef MPL_HAVE_CUDA
    *count = (int)(sizeof cuda_table / sizeof cuda_table[0]);
    return cuda_table;
#else
    *count = 0;
    return NULL;
#endif
}

const mpl_kernel_desc *mpl_registry_find(const char *name) {
    for (int b = 0; b < 2; b++) {
        int n;
        const mpl_kernel_desc *const *t = mpl_registry((mpl_backend)b, &n);
        for (int i = 0; i < n; i++)
            if (strcmp(t[i]->name, name) == 0) return t[i];
    }
    return NULL;
}

int mpl_kernel_count(void) {
    int a, b;
    mpl_registry(MPL_BACKEND_CPU, &a);
    mpl_registry(MPL_BACKEND_CUDA, &b);
    return a + b;
}

mpl_status mpl_kernel_get(int i, mpl_kernel_info *out) {
    int a, b;
    const mpl_kernel_desc *const *ta = mpl_registry(MPL_BACKEND_CPU, &a);
    const mpl_kernel_desc *const *tb = mpl_registry(MPL_BACKEND_CUDA, &b);
    if (!out || i < 0 || i >= a + b)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "kernel index %d: must be in 0..%d", i, a + b - 1);
    const mpl_kernel_desc *d = i < a ? ta[i] : tb[i - a];
    out->name = d->name;
    out->backend = d->backend == MPL_BACKEND_CPU ? "cpu" : "cuda";
    out->layout = d->layout;
    out->requires = d->requires;
    return MPL_OK;
}

/* Is name in the comma-separated MPL_DISABLED_KERNELS list (whitespace trimmed)? */
static bool disabled_by_env(const char *name) {
    const char *env = getenv("MPL_DISABLED_KERNELS");
    if (!env) return false;
    size_t nl = strlen(name);
    const char *p = env;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p)) p++;
        const char *s = p;
        while (*p && *p != ',') p++;
        const char *e = p;
        while (e > s && isspace((unsigned char)e[-1])) e--;
        if ((size_t)(e - s) == nl && strncmp(s, name, nl) == 0) return true;
    }
    return false;
}

static bool is_hardware_reason(mpl_reason r) {
    return r == MPL_REASON_ISA_MISSING || r == MPL_REASON_DEVICE || r == MPL_REASON_NOT_BUILT;
}

/* One kernel's verdict: DISABLED, the ISA/capability floor, irregular act-order, then can_implement. */
mpl_reason mpl_kernel_check(const mpl_kernel_desc *d, const mpl_config *cfg, const mpl_platform *p,
                            int irregular_act_order, char *msg, size_t cap) {
    if (disabled_by_env(d->name))
        return mpl_refuse(msg, cap, MPL_REASON_DISABLED, "%s disabled by MPL_DISABLED_KERNELS", d->name);
    if (d->backend == MPL_BACKEND_CPU && (p->isa & d->isa) != d->isa) {
        char have[256], need[256];
        mpl_isa_string(d->isa & ~p->isa, need, sizeof need);
        mpl_isa_string(p->isa, have, sizeof have);
        return mpl_refuse(msg, cap, MPL_REASON_ISA_MISSING, "needs %s (missing: %s; usable: %s)", d->requires, need,
                          have);
    }
    if (cfg->act_order && irregular_act_order && !d->irregular_act_order)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_ORDER,
                          "g_idx groups differ in size (not group_size = %lld members each); only kernels that "
                          "take irregular act-order (ref) can run it",
                          (long long)cfg->group_size);
    return d->can_implement(cfg, p, msg, cap);
}

mpl_status mpl_choose_internal(const mpl_config *cfg, const mpl_options *opt, int irregular_act_order,
                               const mpl_kernel_desc **chosen, mpl_choice_entry *entries, int cap, int *count) {
    mpl_status st = mpl_config_validate(cfg);
    *chosen = NULL;
    if (count) *count = 0;
    if (st != MPL_OK) return st;
    mpl_backend be = (opt && opt->device == MPL_DEVICE_CUDA) ? MPL_BACKEND_CUDA : MPL_BACKEND_CPU;
    const char *force = (opt && opt->kernel && opt->kernel[0]) ? opt->kernel : NULL;
    const mpl_platform *p = mpl_platform_current();
    int n;
    const mpl_kernel_desc *const *table = mpl_registry(be, &n);
    const mpl_kernel_desc *d = NULL; /* the forced kernel: table points at it, so it must outlive the block */
    if (force) {
        d = mpl_registry_find(force);
        if (!d) {
            char names[512] = "";
            for (int i = 0; i < mpl_kernel_count(); i++) {
                mpl_kernel_info ki;
                mpl_kernel_get(i, &ki);
                size_t l = strlen(names);
                snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", ki.name);
            }
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "unknown kernel '%s': known kernels are %s%s", force, names,
#ifdef MPL_HAVE_CUDA
                                 ""
#else
                                 " (cuda_w4a16 needs a CUDA build)"
#endif
            );
        }
        if (d->backend != be)
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "kernel '%s' is a %s kernel but device %s was asked for",
                                 force, d->backend == MPL_BACKEND_CPU ? "cpu" : "cuda",
                                 be == MPL_BACKEND_CPU ? "cpu" : "cuda");
        table = &d;
        n = 1;
    }
    if (n == 0)
        return mpl_set_error(MPL_ERR_NO_HARDWARE, "no %s kernels: %s", be == MPL_BACKEND_CUDA ? "CUDA" : "CPU",
                             be == MPL_BACKEND_CUDA ? "library built without CUDA (MPLINEAR_CUDA=OFF or no nvcc)"
                                                    : "empty table");
    char all[4096];
    size_t used = 0;
    all[0] = 0;
    bool any_param_reason = false;
    int written = 0;
    for (int i = 0; i < n; i++) {
        char msg[256];
        mpl_reason r = mpl_kernel_check(table[i], cfg, p, irregular_act_order, msg, sizeof msg);
        if (r == MPL_REASON_OK) msg[0] = 0;
        if (entries && written < cap) {
            entries[written].kernel = table[i]->name;
            entries[written].reason = r;
            snprintf(entries[written].message, sizeof entries[written].message, "%s", msg);
            written++;
        }
        if (r == MPL_REASON_OK) {
            *chosen = table[i];
            if (count) *count = written;
            return MPL_OK;
        }
        if (!is_hardware_reason(r)) any_param_reason = true; /* DISABLED is a choice, not hardware */
        int w = snprintf(all + used, sizeof all - used, "\n  %s: %s: %s", table[i]->name, mpl_reason_name(r), msg);
        if (w > 0 && (size_t)w < sizeof all - used) used += (size_t)w;
    }
    if (count) *count = written;
    if (force)
        return mpl_set_error(any_param_reason ? MPL_ERR_UNSUPPORTED : MPL_ERR_NO_HARDWARE,
                             "kernel '%s' cannot implement this config:%s", force, all);
    return mpl_set_error(any_param_reason ? MPL_ERR_UNSUPPORTED : MPL_ERR_NO_HARDWARE,
                         "no kernel can implement this config (k=%lld n=%lld %s %s group %lld%s%s%s). Reasons:%s",
                         (long long)cfg->k, (long long)cfg->n, mpl_wtype_name(cfg->wtype), mpl_act_name(cfg->act),
                         (long long)cfg->group_size, cfg->zero_points ? " zp" : "", cfg->act_order ? " act-order" : "",
                         cfg->mode == MPL_MODE_W4A8 ? " w4a8" : "", all);
}

mpl_status mpl_choose(const mpl_config *cfg, const mpl_options *opt, const char **chosen, mpl_choice_entry *entries,
                      int cap, int *count) {
    const mpl_kernel_desc *d = NULL;
    mpl_status st = mpl_choose_internal(cfg, opt, 0, &d, entries, cap, count);
    if (chosen) *chosen = d ? d->name : NULL;
    return st;
}

/*
 * registry.c -- the kernel tables (data, in priority order, reference last), each kernel's path
 * rows below it (mpl_kernel_desc.paths), and the chooser: which kernel a config gets and which of
 * its paths it may run. Names follow docs/naming.md ("<kernel>", "<kernel>:<path>").
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
    &mpl_kernel_x86_avx512vnni_w4a8,
    &mpl_kernel_x86_avxvnni_w4a8,
    &mpl_kernel_x86_avx2_w4a8,
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

/* Vulkan: always listed; without the module (MPLINEAR_VULKAN=OFF) the rows refuse NOT_BUILT. vulkan_w4a16
 * refuses W4A8 configs and vulkan_w4a8 refuses W4A16, so the order only sets what `mplinear info` lists first. */
static const mpl_kernel_desc *const vulkan_table[] = {
    &mpl_kernel_vulkan_w4a16,
    &mpl_kernel_vulkan_w4a8,
};

const mpl_kernel_desc *const *mpl_registry(mpl_backend b, int *count) {
    if (b == MPL_BACKEND_CPU) {
        *count = (int)(sizeof cpu_table / sizeof cpu_table[0]);
        return cpu_table;
    }
    if (b == MPL_BACKEND_VULKAN) {
        *count = (int)(sizeof vulkan_table / sizeof vulkan_table[0]);
        return vulkan_table;
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
    if (!name) return NULL;
    for (int b = 0; b < MPL_BACKENDS; b++) {
        int n;
        const mpl_kernel_desc *const *t = mpl_registry((mpl_backend)b, &n);
        for (int i = 0; i < n; i++)
            if (strcmp(t[i]->name, name) == 0) return t[i];
    }
    return NULL;
}

const mpl_kernel_desc *mpl_registry_find_path(const char *name, int *path) {
    *path = -1;
    if (!name) return NULL;
    const char *colon = strchr(name, ':');
    if (!colon) return mpl_registry_find(name);
    char kname[64];
    size_t kl = (size_t)(colon - name);
    if (kl >= sizeof kname) return NULL;
    memcpy(kname, name, kl);
    kname[kl] = 0;
    const mpl_kernel_desc *d = mpl_registry_find(kname);
    if (!d) return NULL;
    for (int i = 0; i < d->npaths; i++)
        if (strcmp(d->paths[i].name, name) == 0) {
            *path = i;
            return d;
        }
    return NULL;
}

static const mpl_kernel_desc *kernel_at(int i) {
    if (i < 0) return NULL;
    for (int b = 0; b < MPL_BACKENDS; b++) { /* cpu, cuda, vulkan */
        int n;
        const mpl_kernel_desc *const *t = mpl_registry((mpl_backend)b, &n);
        if (i < n) return t[i];
        i -= n;
    }
    return NULL;
}

int mpl_kernel_count(void) {
    int total = 0;
    for (int b = 0; b < MPL_BACKENDS; b++) {
        int n;
        mpl_registry((mpl_backend)b, &n);
        total += n;
    }
    return total;
}

static const char *backend_name(mpl_backend b) {
    return b == MPL_BACKEND_CPU ? "cpu" : b == MPL_BACKEND_CUDA ? "cuda" : "vulkan";
}

mpl_status mpl_kernel_get(int i, mpl_kernel_info *out) {
    const mpl_kernel_desc *d = kernel_at(i);
    if (!out || !d)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "kernel index %d: must be in 0..%d", i, mpl_kernel_count() - 1);
    out->name = d->name;
    out->backend = backend_name(d->backend);
    out->layout = d->layout;
    out->requires = d->requires;
    out->paths = d->npaths;
    return MPL_OK;
}

mpl_status mpl_path_get(int kernel, int path, mpl_path_info *out) {
    const mpl_kernel_desc *d = kernel_at(kernel);
    if (!out || !d)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "kernel index %d: must be in 0..%d", kernel,
                             mpl_kernel_count() - 1);
    if (path < 0 || path >= d->npaths)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "path index %d of kernel %s: must be in 0..%d", path, d->name,
                             d->npaths - 1);
    const mpl_path_desc *pd = &d->paths[path];
    out->name = pd->name;
    out->kernel = d->name;
    out->requires = pd->requires ? pd->requires : "";
    out->m_min = pd->m_min;
    out->m_max = pd->m_max;
    out->m_limit = pd->m_limit;
    out->why = pd->why ? pd->why : "";
    return MPL_OK;
}

/* Is name in the comma-separated MPL_DISABLED_KERNELS list (whitespace trimmed)? */
static bool disabled_by_env(const char *name) {
    const char *env = mpl_env_disabled_kernels();
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

static mpl_reason isa_refusal(const char *what, const char *requires, uint32_t need, const mpl_platform *p, char *msg,
                              size_t cap) {
    char have[256], miss[256];
    mpl_isa_string(need & ~p->isa, miss, sizeof miss);
    mpl_isa_string(p->isa, have, sizeof have);
    return mpl_refuse(msg, cap, MPL_REASON_ISA_MISSING, "%s needs %s (missing: %s; usable: %s)", what, requires, miss,
                      have);
}

/* The Vulkan device a choice is made for (mpl_platform_for: opt->vulkan_device or vulkan_device_name). */
static mpl_reason vk_refusal(const char *what, const mpl_platform *p, char *msg, size_t cap) {
    if (p->vulkan_devices == 0) {
        char note[128];
        mpl_vulkan_devices(note, sizeof note);
        return mpl_refuse(msg, cap, mpl_vulkan_built() ? MPL_REASON_DEVICE : MPL_REASON_NOT_BUILT,
                          "%s needs a Vulkan device: %s", what, note);
    }
    if (p->vulkan_device < 0 || p->vulkan_device >= p->vulkan_devices)
        return mpl_refuse(msg, cap, MPL_REASON_DEVICE, "%s: Vulkan device %d does not exist or the name matched none "
                          "(devices: 0..%d, mplinear info lists them)", what, p->vulkan_device, p->vulkan_devices - 1);
    if (!(p->vulkan_caps & MPL_VK_CAP_USABLE))
        return mpl_refuse(msg, cap, MPL_REASON_DEVICE, "%s: Vulkan device %d lacks Vulkan 1.1 with subgroup arithmetic "
                          "in compute shaders and a compute queue", what, p->vulkan_device);
    return MPL_REASON_OK;
}

static mpl_reason cc_refusal(const char *what, int min_cc, int max_cc, const mpl_platform *p, char *msg, size_t cap) {
    if (p->cuda_devices == 0)
        return mpl_refuse(msg, cap, MPL_REASON_DEVICE, "%s needs a CUDA device: none found", what);
    if (p->cuda_device < 0 || p->cuda_device >= p->cuda_devices)
        return mpl_refuse(msg, cap, MPL_REASON_DEVICE, "%s: CUDA device %d does not exist (devices: 0..%d)", what,
                          p->cuda_device, p->cuda_devices - 1);
    if ((min_cc && p->cuda_cc < min_cc) || (max_cc && p->cuda_cc > max_cc)) {
        char range[48];
        if (min_cc && max_cc == min_cc)
            snprintf(range, sizeof range, "exactly %d.%d", min_cc / 10, min_cc % 10);
        else if (max_cc)
            snprintf(range, sizeof range, "%d.%d..%d.%d", min_cc / 10, min_cc % 10, max_cc / 10, max_cc % 10);
        else
            snprintf(range, sizeof range, "%d.%d or newer", min_cc / 10, min_cc % 10);
        return mpl_refuse(msg, cap, MPL_REASON_DEVICE, "%s needs compute capability %s; CUDA device %d has %d.%d", what,
                          range, p->cuda_device, p->cuda_cc / 10, p->cuda_cc % 10);
    }
    return MPL_REASON_OK;
}

mpl_reason mpl_path_check(const mpl_kernel_desc *d, int i, const mpl_config *cfg, const mpl_platform *p, char *msg,
                          size_t cap) {
    const mpl_path_desc *pd = &d->paths[i];
    if (disabled_by_env(pd->name))
        return mpl_refuse(msg, cap, MPL_REASON_DISABLED, "%s disabled by MPL_DISABLED_KERNELS", pd->name);
    if (d->backend == MPL_BACKEND_CPU && (p->isa & (d->isa | pd->isa)) != (d->isa | pd->isa))
        return isa_refusal(pd->name, pd->requires && pd->requires[0] ? pd->requires : d->requires, d->isa | pd->isa, p,
                           msg, cap);
    if (d->backend == MPL_BACKEND_CUDA && (pd->min_cc || pd->max_cc)) {
        mpl_reason r = cc_refusal(pd->name, pd->min_cc, pd->max_cc, p, msg, cap);
        if (r != MPL_REASON_OK) return r;
    }
    return pd->can_implement ? pd->can_implement(cfg, p, msg, cap) : MPL_REASON_OK;
}

/* The kernel's own checks, without its paths. */
static mpl_reason kernel_check_own(const mpl_kernel_desc *d, const mpl_config *cfg, const mpl_platform *p,
                                   int irregular_act_order, char *msg, size_t cap) {
    if (disabled_by_env(d->name))
        return mpl_refuse(msg, cap, MPL_REASON_DISABLED, "%s disabled by MPL_DISABLED_KERNELS", d->name);
    if (d->backend == MPL_BACKEND_CPU && (p->isa & d->isa) != d->isa)
        return isa_refusal(d->name, d->requires, d->isa, p, msg, cap);
    if (d->backend == MPL_BACKEND_CUDA) {
        mpl_reason r = cc_refusal(d->name, d->min_cc, 0, p, msg, cap);
        if (r != MPL_REASON_OK) return r;
    }
    if (d->backend == MPL_BACKEND_VULKAN) {
        mpl_reason r = vk_refusal(d->name, p, msg, cap);
        if (r != MPL_REASON_OK) return r;
    }
    if (cfg->act_order && irregular_act_order && !d->irregular_act_order)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_ORDER,
                          "g_idx groups differ in size (not group_size = %lld members each); only kernels that "
                          "take irregular act-order (ref) can run it",
                          (long long)cfg->group_size);
    return d->can_implement(cfg, p, msg, cap);
}

mpl_reason mpl_kernel_check(const mpl_kernel_desc *d, const mpl_config *cfg, const mpl_platform *p,
                            int irregular_act_order, char *msg, size_t cap) {
    mpl_reason r = kernel_check_own(d, cfg, p, irregular_act_order, msg, cap);
    if (r != MPL_REASON_OK || d->npaths == 0) return r;
    char first[256] = "";
    mpl_reason first_r = MPL_REASON_OK;
    for (int i = 0; i < d->npaths; i++) {
        char pm[256];
        mpl_reason pr = mpl_path_check(d, i, cfg, p, pm, sizeof pm);
        if (pr == MPL_REASON_OK) return MPL_REASON_OK;
        if (i == 0) {
            first_r = pr;
            snprintf(first, sizeof first, "%s", pm);
        }
    }
    return mpl_refuse(msg, cap, first_r, "no path of %s can run it (first: %s)", d->name, first);
}

static void path_range(const mpl_kernel_desc *d, int i, const mpl_config *cfg, const mpl_platform *p, int64_t *lo,
                       int64_t *hi) {
    *lo = d->paths[i].m_min;
    *hi = d->paths[i].m_max;
    if (d->paths[i].m_range) d->paths[i].m_range(cfg, p, lo, hi);
}

/* The kernel's paths for a config: all that pass, or only the forced one (which must pass). */
static mpl_status plan_paths(const mpl_kernel_desc *d, const mpl_config *cfg, const mpl_platform *p, int forced,
                             mpl_plan *plan) {
    plan->kernel = d;
    plan->forced_path = forced;
    plan->enabled = 0;
    for (int i = 0; i < d->npaths && i < MPL_MAX_PATHS; i++) {
        path_range(d, i, cfg, p, &plan->m_min[i], &plan->m_max[i]);
        if (forced >= 0 && i != forced) continue;
        char msg[256];
        mpl_reason r = mpl_path_check(d, i, cfg, p, msg, sizeof msg);
        if (r == MPL_REASON_OK) {
            plan->enabled |= 1u << i;
        } else if (i == forced) {
            return mpl_set_error(is_hardware_reason(r) ? MPL_ERR_NO_HARDWARE : MPL_ERR_UNSUPPORTED,
                                 "path '%s' cannot implement this config: %s: %s", d->paths[i].name,
                                 mpl_reason_name(r), msg);
        }
    }
    return MPL_OK;
}

int mpl_plan_path(const mpl_plan *plan, int64_t m) {
    const mpl_kernel_desc *d = plan->kernel;
    if (!d || m < 1) return -1;
    if (plan->forced_path >= 0) return m <= d->paths[plan->forced_path].m_limit ? plan->forced_path : -1;
    for (int i = 0; i < d->npaths; i++)
        if ((plan->enabled >> i & 1) && m >= plan->m_min[i] && m <= plan->m_max[i] && m <= d->paths[i].m_limit)
            return i;
    for (int i = 0; i < d->npaths; i++)
        if ((plan->enabled >> i & 1) && m <= d->paths[i].m_limit) return i;
    return -1;
}

static void list_names(char *names, size_t cap) {
    names[0] = 0;
    for (int i = 0; i < mpl_kernel_count(); i++) {
        size_t l = strlen(names);
        snprintf(names + l, cap - l, "%s%s", i ? ", " : "", kernel_at(i)->name);
    }
}

static mpl_backend backend_of(const mpl_options *opt) {
    if (opt && opt->device == MPL_DEVICE_VULKAN) return MPL_BACKEND_VULKAN;
    return (opt && opt->device == MPL_DEVICE_CUDA) ? MPL_BACKEND_CUDA : MPL_BACKEND_CPU;
}

/* The kernel (and path) opt->kernel names, or an error naming the known ones. */
static mpl_status find_forced(const char *force, mpl_backend be, const mpl_kernel_desc **d, int *path) {
    *d = mpl_registry_find_path(force, path);
    if (!*d) {
        char names[512];
        list_names(names, sizeof names);
        int kp = -1;
        const char *colon = strchr(force, ':');
        if (colon) {
            char kname[64];
            snprintf(kname, sizeof kname, "%.*s", (int)(colon - force), force);
            const mpl_kernel_desc *k = mpl_registry_find_path(kname, &kp);
            if (k) {
                char paths[512] = "";
                for (int i = 0; i < k->npaths; i++) {
                    size_t l = strlen(paths);
                    snprintf(paths + l, sizeof paths - l, "%s%s", i ? ", " : "", k->paths[i].name);
                }
                return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "unknown path '%s': kernel %s has paths %s", force,
                                     kname, paths);
            }
        }
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "unknown kernel '%s': known kernels are %s%s", force, names,
#ifdef MPL_HAVE_CUDA
                             ""
#else
                             " (cuda_w4a16 needs a CUDA build)"
#endif
        );
    }
    if ((*d)->backend != be)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "kernel '%s' is a %s kernel but device %s was asked for", force,
                             backend_name((*d)->backend), backend_name(be));
    return MPL_OK;
}

mpl_status mpl_choose_plan(const mpl_config *cfg, const mpl_options *opt, int irregular_act_order, mpl_plan *plan,
                           mpl_choice_entry *entries, int cap, int *count) {
    memset(plan, 0, sizeof *plan);
    plan->forced_path = -1;
    if (count) *count = 0;
    mpl_status st = mpl_config_validate(cfg);
    if (st != MPL_OK) return st;
    mpl_backend be = backend_of(opt);
    const char *force = (opt && opt->kernel && opt->kernel[0]) ? opt->kernel : NULL;
    mpl_platform_for(opt, &plan->platform);
    const mpl_platform *p = &plan->platform;
    int n;
    const mpl_kernel_desc *const *table = mpl_registry(be, &n);
    const mpl_kernel_desc *d = NULL; /* the forced kernel: table points at it, so it must outlive the block */
    int forced_path = -1;
    if (force) {
        st = find_forced(force, be, &d, &forced_path);
        if (st != MPL_OK) return st;
        table = &d;
        n = 1;
    }
    if (n == 0)
        return mpl_set_error(MPL_ERR_NO_HARDWARE, "no %s kernels: %s", be == MPL_BACKEND_CUDA ? "CUDA" : "CPU",
                             be == MPL_BACKEND_CUDA ? "backend unavailable: library built without CUDA "
                                                      "(MPLINEAR_CUDA=OFF or no nvcc)"
                                                    : "empty table");
    char all[4096];
    size_t used = 0;
    all[0] = 0;
    bool any_param_reason = false;
    int written = 0;
    for (int i = 0; i < n; i++) {
        char msg[256];
        /* A forced path is judged alone: its kernel's own checks, then that path (not "any path"). */
        mpl_reason r = forced_path >= 0 ? kernel_check_own(table[i], cfg, p, irregular_act_order, msg, sizeof msg)
                                        : mpl_kernel_check(table[i], cfg, p, irregular_act_order, msg, sizeof msg);
        if (r == MPL_REASON_OK && forced_path >= 0)
            r = mpl_path_check(table[i], forced_path, cfg, p, msg, sizeof msg);
        if (r == MPL_REASON_OK) msg[0] = 0;
        if (entries && written < cap) {
            entries[written].kernel = table[i]->name;
            entries[written].reason = r;
            snprintf(entries[written].message, sizeof entries[written].message, "%s", msg);
            written++;
        }
        if (r == MPL_REASON_OK) {
            if (count) *count = written;
            return plan_paths(table[i], cfg, p, forced_path, plan);
        }
        if (!is_hardware_reason(r)) any_param_reason = true; /* DISABLED is a choice, not hardware */
        int w = snprintf(all + used, sizeof all - used, "\n  %s: %s: %s", table[i]->name, mpl_reason_name(r), msg);
        if (w > 0 && (size_t)w < sizeof all - used) used += (size_t)w;
    }
    if (count) *count = written;
    if (force)
        return mpl_set_error(any_param_reason ? MPL_ERR_UNSUPPORTED : MPL_ERR_NO_HARDWARE,
                             "%s '%s' cannot implement this config:%s", forced_path >= 0 ? "path" : "kernel", force,
                             all);
    return mpl_set_error(any_param_reason ? MPL_ERR_UNSUPPORTED : MPL_ERR_NO_HARDWARE,
                         "no kernel can implement this config (k=%lld n=%lld %s %s group %lld%s%s%s). Reasons:%s",
                         (long long)cfg->k, (long long)cfg->n, mpl_wtype_name(cfg->wtype), mpl_act_name(cfg->act),
                         (long long)cfg->group_size, cfg->zero_points ? " zp" : "", cfg->act_order ? " act-order" : "",
                         cfg->mode == MPL_MODE_W4A8 ? " w4a8" : "", all);
}

mpl_status mpl_choose_internal(const mpl_config *cfg, const mpl_options *opt, int irregular_act_order,
                               const mpl_kernel_desc **chosen, mpl_choice_entry *entries, int cap, int *count) {
    mpl_plan plan;
    mpl_status st = mpl_choose_plan(cfg, opt, irregular_act_order, &plan, entries, cap, count);
    *chosen = st == MPL_OK ? plan.kernel : NULL;
    return st;
}

mpl_status mpl_choose(const mpl_config *cfg, const mpl_options *opt, const char **chosen, mpl_choice_entry *entries,
                      int cap, int *count) {
    const mpl_kernel_desc *d = NULL;
    mpl_status st = mpl_choose_internal(cfg, opt, 0, &d, entries, cap, count);
    if (chosen) *chosen = d ? d->name : NULL;
    return st;
}

/* The hardware part of the verdict alone (no config): disabled, ISA floor, device and compute capability. */
static mpl_reason platform_check(const mpl_kernel_desc *d, int path, const mpl_platform *p, char *msg, size_t cap) {
    if (disabled_by_env(d->name))
        return mpl_refuse(msg, cap, MPL_REASON_DISABLED, "%s disabled by MPL_DISABLED_KERNELS", d->name);
    uint32_t isa = d->isa | (path >= 0 ? d->paths[path].isa : 0);
    const char *req = path >= 0 && d->paths[path].requires && d->paths[path].requires[0] ? d->paths[path].requires
                                                                                          : d->requires;
    if (d->backend == MPL_BACKEND_CPU && (p->isa & isa) != isa)
        return isa_refusal(path >= 0 ? d->paths[path].name : d->name, req, isa, p, msg, cap);
    if (d->backend == MPL_BACKEND_VULKAN) {
        mpl_reason r = vk_refusal(d->name, p, msg, cap);
        if (r != MPL_REASON_OK) return r;
    }
    if (d->backend == MPL_BACKEND_CUDA) {
        mpl_reason r = cc_refusal(d->name, d->min_cc, 0, p, msg, cap);
        if (r == MPL_REASON_OK && path >= 0 && (d->paths[path].min_cc || d->paths[path].max_cc))
            r = cc_refusal(d->paths[path].name, d->paths[path].min_cc, d->paths[path].max_cc, p, msg, cap);
        if (r != MPL_REASON_OK) return r;
    }
    if (path >= 0 && disabled_by_env(d->paths[path].name))
        return mpl_refuse(msg, cap, MPL_REASON_DISABLED, "%s disabled by MPL_DISABLED_KERNELS", d->paths[path].name);
    return MPL_REASON_OK;
}

mpl_status mpl_check(const mpl_config *cfg, const mpl_options *opt, const char *name, mpl_verdict *out) {
    if (!name || !out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_check: name or out is NULL");
    memset(out, 0, sizeof *out);
    mpl_status st = cfg ? mpl_config_validate(cfg) : MPL_OK;
    if (st != MPL_OK) return st;
    int path;
    const mpl_kernel_desc *d = NULL;
    st = find_forced(name, MPL_BACKEND_CPU, &d, &path);
    if (st != MPL_OK && !d) return st;
    mpl_clear_error();
    mpl_options o;
    mpl_options_init(&o);
    if (opt) o = *opt;
    o.device = d->backend == MPL_BACKEND_CUDA     ? MPL_DEVICE_CUDA
               : d->backend == MPL_BACKEND_VULKAN ? MPL_DEVICE_VULKAN
                                                  : MPL_DEVICE_CPU;
    mpl_platform p;
    mpl_platform_for(&o, &p);
    out->m_min = 1;
    out->m_max = MPL_M_ANY;
    if (!cfg) {
        out->reason = platform_check(d, path, &p, out->message, sizeof out->message);
        if (path >= 0) {
            out->m_min = d->paths[path].m_min;
            out->m_max = d->paths[path].m_max;
        }
    } else if (path < 0) {
        out->reason = mpl_kernel_check(d, cfg, &p, 0, out->message, sizeof out->message);
    } else {
        out->reason = kernel_check_own(d, cfg, &p, 0, out->message, sizeof out->message);
        if (out->reason == MPL_REASON_OK) out->reason = mpl_path_check(d, path, cfg, &p, out->message, sizeof out->message);
        path_range(d, path, cfg, &p, &out->m_min, &out->m_max);
    }
    if (out->reason == MPL_REASON_OK) out->message[0] = 0;
    return MPL_OK;
}

mpl_status mpl_choose_path(const mpl_config *cfg, const mpl_options *opt, int64_t m, const char **path) {
    if (!path) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_choose_path: path is NULL");
    *path = NULL;
    if (!cfg) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_choose_path: config is NULL");
    mpl_plan plan;
    mpl_status st = mpl_choose_plan(cfg, opt, 0, &plan, NULL, 0, NULL);
    if (st != MPL_OK) return st;
    int i = mpl_plan_path(&plan, m);
    if (i >= 0) *path = plan.kernel->paths[i].name;
    return MPL_OK;
}

/* cmd_info.c -- `mplinear info`: platform, the kernel table with every kernel's paths, and the
 * chooser's verdicts (per kernel and per path) for a config; as text or one JSON object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("Usage: mplinear info [config flags] [--json]\n"
           "\n"
           "Prints the platform (CPU model, usable ISA features, threads, CUDA devices) and the kernel\n"
           "table in priority order, each kernel with its paths (\"<kernel>:<path>\": the m range it serves\n"
           "by default and the measurement that set it, and whether this machine can run it). With --k and\n"
           "--n: the chooser's verdict on every kernel and every path for that config, the kernel it picks,\n"
           "and the path an apply of --m rows takes.\n"
           "  --json   one JSON object: {\"version\", \"platform\", \"kernels\": [{\"name\", \"backend\", \"layout\",\n"
           "           \"requires\", \"available\", \"reason\", \"paths\": [{\"name\", \"requires\", \"m_min\", \"m_max\",\n"
           "           \"m_limit\", \"why\", \"available\", \"reason\"}]}]}; with a config also \"config\", \"chosen\",\n"
           "           \"path\", and per kernel and path a \"verdict\" {\"reason\", \"message\"} (paths also their\n"
           "           m range for the config). m_max/m_limit null: no bound.\n"
           "Exit 0 even when no kernel implements the config (the refusals are the answer);\n"
           "exit 3 when the config itself breaks a rule.\n"
           "\n");
    cli_print_config_help(stdout, 1, NULL, NULL);
    printf("\nEnvironment: MPL_DISABLED_KERNELS=a,b:path refuses those kernels or paths; MPL_MAX_ISA=scalar|avx2|\n"
           "avx512|... caps the ISA the chooser may use.\n");
}

/* ---- what is printed, gathered once for both formats ---- */

typedef struct {
    mpl_path_info info;
    mpl_verdict hw;  /* platform alone */
    mpl_verdict cfg; /* for the config (when given) */
} path_row;

typedef struct {
    mpl_kernel_info info;
    mpl_verdict hw, cfg;
    path_row *paths;
} kernel_row;

typedef struct {
    int nk;
    kernel_row *k;
    int have_cfg;
    mpl_status choose_st;
    const char *chosen, *path;
    char choose_msg[1024];
} info_data;

static int gather(info_data *d, const cli_setup *s, int have_cfg) {
    memset(d, 0, sizeof *d);
    d->nk = mpl_kernel_count();
    d->k = calloc((size_t)(d->nk > 0 ? d->nk : 1), sizeof *d->k);
    if (!d->k) return -1;
    mpl_options hw_opt;
    mpl_options_init(&hw_opt);
    if (have_cfg) hw_opt.cuda_device = s->opt.cuda_device;
    if (have_cfg) hw_opt.vulkan_device = s->opt.vulkan_device, hw_opt.vulkan_device_name = s->opt.vulkan_device_name;
    d->have_cfg = have_cfg;
    for (int i = 0; i < d->nk; i++) {
        kernel_row *k = &d->k[i];
        if (mpl_kernel_get(i, &k->info) != MPL_OK) return -1;
        mpl_check(NULL, &hw_opt, k->info.name, &k->hw);
        if (have_cfg) mpl_check(&s->cfg, &s->opt, k->info.name, &k->cfg);
        k->paths = calloc((size_t)(k->info.paths > 0 ? k->info.paths : 1), sizeof *k->paths);
        if (!k->paths) return -1;
        for (int j = 0; j < k->info.paths; j++) {
            path_row *p = &k->paths[j];
            if (mpl_path_get(i, j, &p->info) != MPL_OK) return -1;
            mpl_check(NULL, &hw_opt, p->info.name, &p->hw);
            if (have_cfg) mpl_check(&s->cfg, &s->opt, p->info.name, &p->cfg);
        }
    }
    if (have_cfg) {
        d->choose_st = mpl_choose(&s->cfg, &s->opt, &d->chosen, NULL, 0, NULL);
        if (d->choose_st == MPL_OK)
            mpl_choose_path(&s->cfg, &s->opt, s->m, &d->path);
        else
            snprintf(d->choose_msg, sizeof d->choose_msg, "%s", mpl_last_error());
    }
    return 0;
}

static void release(info_data *d) {
    for (int i = 0; i < d->nk && d->k; i++) free(d->k[i].paths);
    free(d->k);
}

/* ---- text ---- */

static void range_str(int64_t lo, int64_t hi, char *buf, size_t cap) {
    if (lo > hi)
        snprintf(buf, cap, "forced only");
    else if (hi == INT64_MAX)
        snprintf(buf, cap, "m >= %lld", (long long)lo);
    else if (lo == hi)
        snprintf(buf, cap, "m = %lld", (long long)lo);
    else
        snprintf(buf, cap, "m %lld..%lld", (long long)lo, (long long)hi);
}

/* The Vulkan devices (--device vulkan:INDEX or vulkan:NAME picks one). */
static void print_vulkan(void) {
    char note[128];
    int n = mpl_vulkan_devices(note, sizeof note);
    if (n == 0) {
        printf("  vulkan:     no device (%s)\n", note);
        return;
    }
    printf("  vulkan:     %d device%s (tested on lavapipe and NVIDIA; RADV and ANV written for, not run)\n", n,
           n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        mpl_vulkan_device_info v;
        if (mpl_vulkan_device_get(i, &v) != MPL_OK) continue;
        printf("    %d: %s (%s), Vulkan %u.%u, driver %s\n", i, v.name, v.type, v.api_version >> 22 & 0x7f,
               v.api_version >> 12 & 0x3ff, v.driver);
        printf("       subgroup %d%s, shaderFloat16 %s, 16-bit storage %s, maxStorageBufferRange %llu%s%s\n",
               v.subgroup_size, v.subgroup_arithmetic ? " (arithmetic)" : " (no arithmetic)",
               v.shader_float16 ? "yes" : "no", v.storage_16bit ? "yes" : "no",
               (unsigned long long)v.max_storage_buffer_range, v.usable ? "" : "; unusable: ", v.usable ? "" : v.note);
        printf("       cooperative matrix: %s\n", v.coopmat[0] ? v.coopmat : "none (VK_KHR_cooperative_matrix absent)");
    }
}

static void print_platform(void) {
    mpl_platform_info p;
    if (mpl_platform_get(&p) != MPL_OK) {
        printf("platform: unavailable (%s)\n", mpl_last_error());
        return;
    }
    char isa[512];
    mpl_isa_string(p.isa, isa, sizeof isa);
    printf("platform\n");
    printf("  cpu:        %s\n", p.cpu_model);
    printf("  isa:        %s\n", isa);
    if (p.isa_cap[0] || p.isa != p.isa_cpuid) {
        char raw[512];
        mpl_isa_string(p.isa_cpuid, raw, sizeof raw);
        printf("  isa (cpuid, before MPL_MAX_ISA=%s and the OS's AMX grant): %s\n", p.isa_cap[0] ? p.isa_cap : "(unset)",
               raw);
    }
    printf("  threads:    %d\n", p.cpu_threads);
    if (!p.cuda_built)
        printf("  cuda:       not built (%s)\n", p.cuda_note);
    else if (p.cuda_devices == 0)
        printf("  cuda:       built, no device (%s)\n", p.cuda_note[0] ? p.cuda_note : "none found");
    else
        printf("  cuda:       %d device%s; device 0: %s, compute capability %d.%d\n", p.cuda_devices,
               p.cuda_devices == 1 ? "" : "s", p.cuda_name, p.cuda_cc / 10, p.cuda_cc % 10);
    print_vulkan();
}

static void print_verdict(const mpl_verdict *v, const char *ok) {
    printf("%-12s %s\n", mpl_reason_name(v->reason), v->reason == MPL_REASON_OK ? ok : v->message);
}

static void print_text(const info_data *d, const cli_setup *s) {
    printf("mplinear %s\n", mpl_version());
    print_platform();
    printf("kernels (priority order per backend; ref is the reference), each with its paths in priority order\n");
    for (int i = 0; i < d->nk; i++) {
        const kernel_row *k = &d->k[i];
        printf("  %-5s %-22s layout %-11s requires %s\n", k->info.backend, k->info.name, k->info.layout,
               k->info.requires);
        for (int j = 0; j < k->info.paths; j++) {
            const path_row *p = &k->paths[j];
            char r[64];
            range_str(p->info.m_min, p->info.m_max, r, sizeof r);
            printf("        %-32s %-14s %s%s\n", p->info.name, r,
                   p->hw.reason == MPL_REASON_OK ? "available" : "unavailable: ",
                   p->hw.reason == MPL_REASON_OK ? "" : p->hw.message);
            if (p->info.requires[0]) printf("          requires %s\n", p->info.requires);
            if (p->info.why[0]) printf("          why: %s\n", p->info.why);
        }
    }
    if (!d->have_cfg) return;
    char desc[256];
    cli_config_string(&s->cfg, desc, sizeof desc);
    printf("config %s, m %lld, device %s%s%s\n", desc, (long long)s->m,
           s->opt.device == MPL_DEVICE_CUDA ? "cuda" : s->opt.device == MPL_DEVICE_VULKAN ? "vulkan" : "cpu",
           s->kernel ? ", forced " : "",
           s->kernel ? s->kernel : "");
    const char *backend = s->opt.device == MPL_DEVICE_CUDA ? "cuda" : s->opt.device == MPL_DEVICE_VULKAN ? "vulkan" : "cpu";
    for (int i = 0; i < d->nk; i++) {
        const kernel_row *k = &d->k[i];
        if (strcmp(k->info.backend, backend) != 0) continue;
        printf("  %-32s ", k->info.name);
        print_verdict(&k->cfg, d->chosen && !strcmp(d->chosen, k->info.name) ? "chosen" : "can implement");
        for (int j = 0; j < k->info.paths; j++) {
            const path_row *p = &k->paths[j];
            char r[64];
            range_str(p->cfg.m_min, p->cfg.m_max, r, sizeof r);
            printf("    %-30s %-14s ", p->info.name, r);
            print_verdict(&p->cfg, d->path && !strcmp(d->path, p->info.name) ? "takes --m" : "allowed");
        }
    }
    if (d->choose_st == MPL_OK)
        printf("chosen: %s; path for m = %lld: %s\n", d->chosen, (long long)s->m,
               d->path ? d->path : "(none: no allowed path runs that many rows)");
    else
        printf("chosen: (none: %s)\n", d->choose_msg);
}

/* ---- JSON ---- */

static void json_int_or_null(int64_t v) {
    if (v == INT64_MAX)
        printf("null");
    else
        printf("%lld", (long long)v);
}

static void json_kv_str(const char *k, const char *v, int comma) {
    printf("%s\"%s\": ", comma ? ", " : "", k);
    cli_json_string(stdout, v);
}

static void json_verdict(const mpl_verdict *v, int with_range) {
    printf("{\"reason\": ");
    cli_json_string(stdout, mpl_reason_name(v->reason));
    json_kv_str("message", v->message, 1);
    if (with_range) {
        printf(", \"m_min\": %lld, \"m_max\": ", (long long)v->m_min);
        json_int_or_null(v->m_max);
    }
    printf("}");
}

static void json_platform(void) {
    mpl_platform_info p;
    if (mpl_platform_get(&p) != MPL_OK) {
        printf("null");
        return;
    }
    char isa[512], raw[512];
    mpl_isa_string(p.isa, isa, sizeof isa);
    mpl_isa_string(p.isa_cpuid, raw, sizeof raw);
    printf("{");
    json_kv_str("cpu", p.cpu_model, 0);
    json_kv_str("isa", isa, 1);
    json_kv_str("isa_cpuid", raw, 1);
    json_kv_str("max_isa", p.isa_cap, 1);
    printf(", \"threads\": %d, \"cuda_built\": %s, \"cuda_devices\": %d", p.cpu_threads, p.cuda_built ? "true" : "false",
           p.cuda_devices);
    json_kv_str("cuda_device0", p.cuda_name, 1);
    printf(", \"cuda_cc\": %d", p.cuda_cc);
    json_kv_str("cuda_note", p.cuda_note, 1);
    printf("}");
}

static void print_json(const info_data *d, const cli_setup *s) {
    printf("{");
    json_kv_str("version", mpl_version(), 0);
    printf(", \"platform\": ");
    json_platform();
    if (d->have_cfg) {
        char desc[256];
        cli_config_string(&s->cfg, desc, sizeof desc);
        printf(", \"config\": {");
        json_kv_str("desc", desc, 0);
        printf(", \"m\": %lld", (long long)s->m);
        json_kv_str("device", s->opt.device == MPL_DEVICE_CUDA ? "cuda" : s->opt.device == MPL_DEVICE_VULKAN ? "vulkan" : "cpu", 1);
        json_kv_str("forced", s->kernel ? s->kernel : "", 1);
        printf("}, \"chosen\": ");
        if (d->chosen)
            cli_json_string(stdout, d->chosen);
        else
            printf("null");
        printf(", \"path\": ");
        if (d->path)
            cli_json_string(stdout, d->path);
        else
            printf("null");
        if (d->choose_st != MPL_OK) json_kv_str("refusal", d->choose_msg, 1);
    }
    printf(", \"kernels\": [");
    for (int i = 0; i < d->nk; i++) {
        const kernel_row *k = &d->k[i];
        printf("%s{", i ? ", " : "");
        json_kv_str("name", k->info.name, 0);
        json_kv_str("backend", k->info.backend, 1);
        json_kv_str("layout", k->info.layout, 1);
        json_kv_str("requires", k->info.requires, 1);
        printf(", \"available\": %s", k->hw.reason == MPL_REASON_OK ? "true" : "false");
        json_kv_str("reason", k->hw.message, 1);
        if (d->have_cfg) {
            printf(", \"verdict\": ");
            json_verdict(&k->cfg, 0);
        }
        printf(", \"paths\": [");
        for (int j = 0; j < k->info.paths; j++) {
            const path_row *p = &k->paths[j];
            printf("%s{", j ? ", " : "");
            json_kv_str("name", p->info.name, 0);
            json_kv_str("requires", p->info.requires, 1);
            printf(", \"m_min\": %lld, \"m_max\": ", (long long)p->info.m_min);
            json_int_or_null(p->info.m_max);
            printf(", \"m_limit\": ");
            json_int_or_null(p->info.m_limit);
            json_kv_str("why", p->info.why, 1);
            printf(", \"available\": %s", p->hw.reason == MPL_REASON_OK ? "true" : "false");
            json_kv_str("reason", p->hw.message, 1);
            if (d->have_cfg) {
                printf(", \"verdict\": ");
                json_verdict(&p->cfg, 1);
            }
            printf("}");
        }
        printf("]}");
    }
    printf("]}\n");
}

int cli_info(int argc, char **argv) {
    const char *cmd = "info";
    cli_opt opts[] = {CLI_CONFIG_OPTS, {"json", 0, 0, 0}};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help_flag, rc;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help_flag))) return rc;
    if (help_flag) {
        help();
        return CLI_EXIT_OK;
    }
    int json = cli_has(opts, nopts, "json");
    int want_config = cli_has(opts, nopts, "k") || cli_has(opts, nopts, "n");
    cli_setup s;
    memset(&s, 0, sizeof s);
    if (want_config && (rc = cli_setup_from_opts(cmd, opts, nopts, 1, 0, 0, &s))) return rc;
    if (!want_config) {
        /* Config flags other than --k/--n are meaningless without a shape; say so rather than ignore them. */
        for (int i = 0; i < nopts; i++)
            if (opts[i].present && strcmp(opts[i].name, "json") != 0) {
                cli_error(cmd, "--%s needs a config: give --k and --n too", opts[i].name);
                return CLI_EXIT_USAGE;
            }
    }
    if (want_config && (rc = cli_validate(cmd, &s.cfg))) return rc;
    if (want_config && s.kernel) {
        /* A forced name that does not exist (or runs on the other backend) is a usage error, said once. */
        const char *chosen;
        mpl_status st = mpl_choose(&s.cfg, &s.opt, &chosen, NULL, 0, NULL);
        if (st == MPL_ERR_INVALID_ARGUMENT) return cli_lib_error(cmd, st, NULL);
    }
    info_data d;
    if (gather(&d, &s, want_config) != 0) {
        release(&d);
        cli_error(cmd, "out of memory");
        return CLI_EXIT_RESOURCE;
    }
    if (json)
        print_json(&d, &s);
    else
        print_text(&d, &s);
    release(&d);
    return CLI_EXIT_OK;
}

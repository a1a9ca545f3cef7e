/* cmd_info.c -- `mplinear info`: platform, kernel table, and the chooser's verdicts for a config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("Usage: mplinear info [config flags]\n"
           "\n"
           "Prints the platform (CPU model, usable ISA features, threads, CUDA devices), the kernel\n"
           "table in priority order, and -- when --k and --n are given -- the kernel the chooser picks\n"
           "for that config and the reason every kernel before it refused.\n"
           "Exit 0 even when no kernel implements the config (the refusals are the answer);\n"
           "exit 3 when the config itself breaks a rule.\n"
           "\n");
    cli_print_config_help(stdout, 1, NULL, NULL);
    printf("\nEnvironment: MPL_DISABLED_KERNELS=a,b refuses those kernels; MPL_MAX_ISA=scalar|avx2|avx512|... caps\n"
           "the ISA the chooser may use.\n");
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
        printf("  isa (cpuid, before MPL_MAX_ISA=%s): %s\n", p.isa_cap[0] ? p.isa_cap : "(unset)", raw);
    }
    printf("  threads:    %d\n", p.cpu_threads);
    if (!p.cuda_built)
        printf("  cuda:       not built (%s)\n", p.cuda_note);
    else if (p.cuda_devices == 0)
        printf("  cuda:       built, no device (%s)\n", p.cuda_note[0] ? p.cuda_note : "none found");
    else
        printf("  cuda:       %d device%s; device 0: %s, compute capability %d.%d\n", p.cuda_devices,
               p.cuda_devices == 1 ? "" : "s", p.cuda_name, p.cuda_cc / 10, p.cuda_cc % 10);
    const char *dis = getenv("MPL_DISABLED_KERNELS");
    if (dis && *dis) printf("  MPL_DISABLED_KERNELS=%s\n", dis);
}

static void print_kernels(void) {
    int n = mpl_kernel_count();
    printf("kernels (priority order per backend; ref is the reference)\n");
    printf("  %-7s %-22s %-16s %s\n", "backend", "name", "packed layout", "requires");
    for (int i = 0; i < n; i++) {
        mpl_kernel_info k;
        if (mpl_kernel_get(i, &k) != MPL_OK) continue;
        printf("  %-7s %-22s %-16s %s\n", k.backend, k.name, k.layout, k.requires);
    }
}

int cli_info(int argc, char **argv) {
    const char *cmd = "info";
    cli_opt opts[] = {CLI_CONFIG_OPTS};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help_flag, rc;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help_flag))) return rc;
    if (help_flag) {
        help();
        return CLI_EXIT_OK;
    }
    int want_config = cli_has(opts, nopts, "k") || cli_has(opts, nopts, "n");
    cli_setup s;
    if (want_config && (rc = cli_setup_from_opts(cmd, opts, nopts, 1, 0, 0, &s))) return rc;
    if (!want_config) {
        /* Config flags other than --k/--n are meaningless without a shape; say so rather than ignore them. */
        for (int i = 0; i < nopts; i++)
            if (opts[i].present) {
                cli_error(cmd, "--%s needs a config: give --k and --n too", opts[i].name);
                return CLI_EXIT_USAGE;
            }
    }
    if (want_config && (rc = cli_validate(cmd, &s.cfg))) return rc;
    printf("mplinear %s\n", mpl_version());
    print_platform();
    print_kernels();
    if (!want_config) return CLI_EXIT_OK;
    int cap = mpl_kernel_count();
    mpl_choice_entry *e = calloc((size_t)(cap > 0 ? cap : 1), sizeof *e);
    if (!e) {
        cli_error(cmd, "out of memory");
        return CLI_EXIT_RESOURCE;
    }
    const char *chosen = NULL;
    int count = 0;
    mpl_status st = mpl_choose(&s.cfg, &s.opt, &chosen, e, cap, &count);
    char desc[256];
    cli_config_string(&s.cfg, desc, sizeof desc);
    printf("config %s, device %s%s%s\n", desc, s.opt.device == MPL_DEVICE_CUDA ? "cuda" : "cpu",
           s.kernel ? ", forced kernel " : "", s.kernel ? s.kernel : "");
    if (count == 0 && st != MPL_OK) {
        /* Nothing was examined (unknown or wrong-backend kernel, no CUDA): the message says why. */
        free(e);
        return cli_lib_error(cmd, st, NULL);
    }
    for (int i = 0; i < count; i++)
        printf("  %-22s %-12s %s\n", e[i].kernel, mpl_reason_name(e[i].reason),
               e[i].reason == MPL_REASON_OK ? "chosen" : e[i].message);
    printf("chosen: %s\n", chosen ? chosen : "(none: no kernel implements this config)");
    free(e);
    return CLI_EXIT_OK;
}

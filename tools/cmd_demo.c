/*
 * cmd_demo.c -- `mplinear demo`: the whole job in one command for a real
 * layer shape: which kernel this machine picks for a Llama-3-8B MLP
 * projection (K = 4096, N = 14336, GPTQ-style uint4b8 weights, group 128,
 * bf16 activations, M = 1), its error against the reference kernel, and its
 * speed with cold weights. Every config flag can override the defaults.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("Usage: mplinear demo [config flags] [--layout L] [--seed S] [--reps R]\n"
           "                     [--cold-bytes B] [--max-bytes B] [--max-copies C]\n"
           "\n"
           "Runs the chosen kernel for a Llama-3-8B mlp.gate_proj layer (K=4096, N=14336, uint4b8,\n"
           "group 128, bf16, M=1): prints the platform, the kernel chosen and why faster ones refused,\n"
           "the error against the ref kernel (as mplinear verify) and the speed with cold weights\n"
           "(as mplinear bench). Exit 1 if the error is outside the tolerance.\n"
           "\n");
    cli_print_config_help(stdout, 1, "4096", "14336");
    printf("  (demo defaults: --wtype uint4b8 --act bf16 --group-size 128 --layout gptq; gptq holds every\n"
           "  weight type, e.g. --wtype uint8b128, uint3b4 or uint2b2)\n"
           "  --reps R, --cold-bytes B, --max-bytes B, --max-copies C: as in mplinear bench --help\n");
}

int cli_demo(int argc, char **argv) {
    const char *cmd = "demo";
    cli_opt opts[] = {CLI_CONFIG_OPTS,         {"layout", 1, 0, 0},     {"seed", 1, 0, 0},
                      {"reps", 1, 0, 0},       {"cold-bytes", 1, 0, 0}, {"max-bytes", 1, 0, 0},
                      {"max-copies", 1, 0, 0}};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help_flag, rc;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help_flag))) return rc;
    if (help_flag) {
        help();
        return CLI_EXIT_OK;
    }
    cli_setup s;
    if ((rc = cli_setup_from_opts(cmd, opts, nopts, 1, 4096, 14336, &s))) return rc;
    if (!cli_has(opts, nopts, "group-size")) s.cfg.group_size = 128;
    mpl_layout layout = MPL_LAYOUT_GPTQ;
    const char *t;
    int64_t v;
    if ((t = cli_value(opts, nopts, "layout")) && mpl_layout_parse(t, &layout) != MPL_OK) {
        cli_error(cmd, "--layout: %s", mpl_last_error());
        return CLI_EXIT_USAGE;
    }
    cli_bench_params p = {.reps = 20, .seed = 1};
    if ((t = cli_value(opts, nopts, "seed"))) {
        if ((rc = cli_int(cmd, "seed", t, 0, INT64_MAX, &v))) return rc;
        p.seed = (uint64_t)v;
    }
    if ((t = cli_value(opts, nopts, "reps"))) {
        if ((rc = cli_int(cmd, "reps", t, 1, 1000000, &v))) return rc;
        p.reps = (int)v;
    }
    if ((t = cli_value(opts, nopts, "max-copies"))) {
        if ((rc = cli_int(cmd, "max-copies", t, 1, INT32_MAX, &v))) return rc;
        p.max_copies = v;
    }
    if ((t = cli_value(opts, nopts, "cold-bytes")) && (rc = cli_bytes(cmd, "cold-bytes", t, &p.cold_bytes))) return rc;
    if ((t = cli_value(opts, nopts, "max-bytes")) && (rc = cli_bytes(cmd, "max-bytes", t, &p.max_bytes))) return rc;
    if ((rc = cli_validate(cmd, &s.cfg))) return rc;

    char desc[256];
    cli_config_string(&s.cfg, desc, sizeof desc);
    int is_llama = s.cfg.k == 4096 && s.cfg.n == 14336;
    printf("mplinear %s demo: %s%s, m=%lld, checkpoint layout %s\n", mpl_version(),
           is_llama ? "Llama-3-8B mlp.gate_proj, " : "", desc, (long long)s.m, mpl_layout_name(layout));
    mpl_platform_info pi;
    if (mpl_platform_get(&pi) == MPL_OK) {
        char isa[512];
        mpl_isa_string(pi.isa, isa, sizeof isa);
        printf("platform: %s; %d threads; %s\n", pi.cpu_model, pi.cpu_threads, isa);
    }
    /* The chooser's verdicts: why the kernels ahead of the chosen one refused. */
    int cap = mpl_kernel_count();
    mpl_choice_entry *e = calloc((size_t)(cap > 0 ? cap : 1), sizeof *e);
    if (!e) {
        cli_error(cmd, "out of memory");
        return CLI_EXIT_RESOURCE;
    }
    const char *chosen = NULL;
    int count = 0;
    mpl_status st = mpl_choose(&s.cfg, &s.opt, &chosen, e, cap, &count);
    if (st != MPL_OK) {
        free(e);
        return cli_lib_error(cmd, st, NULL);
    }
    const char *path = NULL;
    mpl_choose_path(&s.cfg, &s.opt, s.m, &path);
    printf("kernel: %s, path for m = %lld: %s\n", chosen, (long long)s.m, path ? path : "(none)");
    for (int i = 0; i < count; i++)
        if (e[i].reason != MPL_REASON_OK)
            printf("  (passed over %s: %s: %s)\n", e[i].kernel, mpl_reason_name(e[i].reason), e[i].message);
    free(e);
    fflush(stdout);

    cli_verify_result vr;
    if ((rc = cli_verify_run(cmd, &s, layout, p.seed, &vr))) return rc;
    printf("accuracy vs ref: max abs error %.3e, relative (Frobenius) error %.3e, tolerance %.3e: %s\n", vr.max_abs,
           vr.rel_fro, vr.rel_fro_tol, vr.pass ? "PASS" : "FAIL");
    fflush(stdout);
    if (!vr.pass) {
        cli_error(cmd, "kernel %s differs from ref beyond tolerance: |y - y_ref| = %.3e at (m=%lld, n=%lld), bound %.3e",
                  vr.kernel, vr.worst_abs, (long long)vr.worst_m, (long long)vr.worst_n, vr.worst_bound);
        return CLI_EXIT_CHECK;
    }
    cli_bench_result br;
    if ((rc = cli_bench_run(cmd, &s, &p, &br))) return rc;
    uint64_t rotated = (uint64_t)br.copies * br.weight_bytes;
    int cuda = s.opt.device == MPL_DEVICE_CUDA;
    char llc[64], thr[32] = "";
    if (br.llc_bytes)
        snprintf(llc, sizeof llc, "%s %.0f MiB", cuda ? "GPU L2" : "LLC", (double)br.llc_bytes / 1048576.0);
    else
        snprintf(llc, sizeof llc, "%s size unknown", cuda ? "GPU L2" : "LLC");
    if (!cuda) snprintf(thr, sizeof thr, ", %d threads", br.threads);
    printf("speed: median %.4f ms per apply (%d reps%s; %lld copies = %.1f MiB of weights rotated, %s): "
           "%.2f GB/s of weights, %.2f GFLOP/s\n",
           br.seconds * 1e3, p.reps, thr, (long long)br.copies, (double)rotated / 1048576.0, llc, br.gbps, br.gflops);
    if (br.capped)
        printf("  (copies capped: %.1f MiB rotated < target %.1f MiB; weights may be partly cache-resident)\n",
               (double)rotated / 1048576.0, (double)br.target_bytes / 1048576.0);
    return CLI_EXIT_OK;
}

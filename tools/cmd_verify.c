/*
 * cmd_verify.c -- `mplinear verify`: a random layer through the chosen (or
 * forced) kernel and through the reference kernel, compared element by
 * element against an error bound derived from K, the group count and the
 * activation precision.
 *
 * Tolerance derivation. Both kernels compute in fp32 (unit roundoff
 * u = 2^-24) a sum of K products x*w (w a small integer, scaled per group),
 * then G group terms, the bias, and round once to the activation type
 * (unit roundoff u_act: 2^-11 f16, 2^-8 bf16, 2^-24 f32). The standard
 * summation bound gives, for each kernel, |y_kernel - y_exact| <=
 * (K + G + 4) u S + u_act |y|, where S = sum_k |x_k w_k s_g(k)| + |b| (K
 * additions and at most 4 further roundings for scale, bias and
 * conversions; any summation order). The difference of two kernels is
 * bounded by twice that:
 *   |y - y_ref| <= 2 (K + G + 4) u S + 2 u_act |y_ref| (+ 2^-24 for f16 subnormals).
 * A kernel path that multiplies rounded scaled weights (mpl_layer_weight_rounding: u_w > 0, e.g.
 * cuda_w4a16's dq and wg paths) adds u_w S (+ 2^-25 sum |x_k| for f16 subnormal weights).
 * In W4A8 mode x is first quantized to q * sx (the same q in both kernels by
 * the header's exact definition); S then uses |x_k| + sx, which bounds |q_k sx|.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tp_cli.h"

static void help(void) {
    printf("Usage: mplinear verify [config flags] [--kernel NAME] [--seed S] [--layout L]\n"
           "\n"
           "Builds a random layer (random codes, scales, zero points, act-order g_idx permutation,\n"
           "bias, Gaussian x), encodes it in checkpoint layout L (ct by default; gptq, gptq-v2, awq,\n"
           "ct-int), runs the chosen kernel (or --kernel NAME or NAME:PATH) and the ref kernel, and prints the\n"
           "max abs error, the relative (Frobenius) error and the tolerance. Exit 1 when any element\n"
           "is outside its bound 2(K+G+4)*2^-24*sum|x*w*s| + 2*u_act*|y_ref|.\n"
           "\n");
    cli_print_config_help(stdout, 1, NULL, NULL);
    printf("  --seed S            random seed (default 1)\n"
           "  --layout L          checkpoint layout the random layer is encoded in (default ct): ct, gptq and\n"
           "                      gptq-v2 hold every weight type; awq 4- and 8-bit ones; ct-int int4 only\n");
    cli_tp_print_help(stdout);
}

int cli_verify_run(const char *cmd, const cli_setup *s, mpl_layout layout, uint64_t seed, cli_verify_result *r) {
    const mpl_config *c = &s->cfg;
    int rc;
    memset(r, 0, sizeof *r);
    if ((rc = cli_validate(cmd, c))) return rc;
    cli_synth syn;
    if ((rc = cli_synth_or_exit(cmd, c, layout, seed, &syn))) return rc;
    mpl_status st = MPL_OK;
    mpl_layer *lk = NULL, *lr = NULL;
    void *x = NULL, *b = NULL, *y = NULL, *yr = NULL;
    float *xf = NULL, *yf = NULL, *yrf = NULL, *bf = NULL;
    double *ws = NULL, *sx = NULL;
    int64_t M = s->m, K = c->k, N = c->n;
    size_t es = c->act == MPL_ACT_F32 ? 4 : 2;
    size_t mk = (size_t)M * (size_t)K, mn = (size_t)M * (size_t)N;
    if ((uint64_t)M * (uint64_t)(K > N ? K : N) > (uint64_t)SIZE_MAX / 8) {
        cli_error(cmd, "m = %lld rows of k = %lld, n = %lld: byte count overflows", (long long)M, (long long)K,
                  (long long)N);
        rc = CLI_EXIT_INPUT;
        goto out;
    }
    st = mpl_layer_create(c, &syn.ckpt, &s->opt, &lk);
    if (st != MPL_OK) {
        rc = cli_lib_error(cmd, st, NULL);
        goto out;
    }
    mpl_options ro = s->opt;
    ro.kernel = "ref";
    ro.device = MPL_DEVICE_CPU;
    st = mpl_layer_create(c, &syn.ckpt, &ro, &lr);
    if (st != MPL_OK) {
        rc = cli_lib_error(cmd, st, "reference layer");
        goto out;
    }
    x = malloc(mk * es);
    xf = malloc(mk * sizeof(float));
    b = malloc((size_t)N * es);
    bf = malloc((size_t)N * sizeof(float));
    y = malloc(mn * es);
    yr = malloc(mn * es);
    yf = malloc(mn * sizeof(float));
    yrf = malloc(mn * sizeof(float));
    ws = malloc((size_t)K * sizeof(double));
    sx = malloc((size_t)M * sizeof(double));
    if (!x || !xf || !b || !bf || !y || !yr || !yf || !yrf || !ws || !sx) {
        cli_error(cmd, "out of memory for m = %lld rows", (long long)M);
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    cli_verify_inputs(c->act, seed, mk, syn.bias, (size_t)N, x, xf, b, bf);
    /* Sentinels: an output a kernel forgets to write shows up as NaN. */
    memset(y, 0xff, mn * es);
    memset(yr, 0xff, mn * es);
    if ((st = mpl_layer_apply(lk, M, x, b, y)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, mpl_layer_kernel(lk));
        goto out;
    }
    if ((st = mpl_layer_apply(lr, M, x, b, yr)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, "ref");
        goto out;
    }
    cli_act_to_f32(c->act, y, yf, mn);
    cli_act_to_f32(c->act, yr, yrf, mn);

    const double u = 0x1.0p-24, ua = cli_act_unit_roundoff(c->act);
    const double floor_abs = c->act == MPL_ACT_F16 ? 0x1.0p-24 : 0.0;
    const int64_t G = syn.groups, gs = c->group_size == -1 ? K : c->group_size;
    const double coef = 2.0 * (double)(K + G + 4) * u;
    const double uw = mpl_layer_weight_rounding(lk, M); /* 0 unless the kernel's path rounds the weights */
    double sum_d2 = 0, sum_r2 = 0, sum_b2 = 0;
    r->pass = 1;
    r->worst_ratio = -1;
    /* sx per row (W4A8), then per output row n the weights' |w * s| once, reused for every m. */
    for (int64_t m = 0; m < M; m++) {
        double amax = 0;
        if (c->mode == MPL_MODE_W4A8)
            for (int64_t k = 0; k < K; k++) amax = fmax(amax, fabs((double)xf[m * K + k]));
        sx[m] = amax / 127.0;
    }
    for (int64_t n = 0; n < N; n++) {
        for (int64_t k = 0; k < K; k++) {
            int64_t g = syn.g_idx ? syn.g_idx[k] : k / gs;
            ws[k] = fabs((double)cli_synth_value(c, &syn, n, k)) * (double)syn.scales[n * G + g];
        }
        for (int64_t m = 0; m < M; m++) {
            const float *xr = xf + m * K;
            double S = fabs((double)bf[n]), X = 0;
            for (int64_t k = 0; k < K; k++) S += (fabs((double)xr[k]) + sx[m]) * ws[k], X += fabs((double)xr[k]);
            double yv = yf[m * N + n], rv = yrf[m * N + n];
            double bound = (coef + uw) * S + 2.0 * ua * fabs(rv) + floor_abs;
            if (uw > 0 && c->act == MPL_ACT_F16) bound += 0x1.0p-25 * X;
            /* NaN on one side only (or an unwritten output) is an infinite error. */
            double d = (isnan(yv) && isnan(rv)) ? 0.0 : (isnan(yv) || isnan(rv)) ? INFINITY : fabs(yv - rv);
            double ratio = d == 0 ? 0 : bound > 0 ? d / bound : INFINITY;
            if (!(d <= bound)) r->pass = 0;
            if (d > r->max_abs) r->max_abs = d;
            if (ratio > r->worst_ratio) {
                r->worst_ratio = ratio;
                r->worst_abs = d;
                r->worst_bound = bound;
                r->worst_m = m;
                r->worst_n = n;
            }
            sum_d2 += d * d;
            sum_r2 += rv * rv;
            sum_b2 += bound * bound;
        }
    }
    r->rel_fro = sum_r2 > 0 ? sqrt(sum_d2 / sum_r2) : sqrt(sum_d2);
    r->rel_fro_tol = sum_r2 > 0 ? sqrt(sum_b2 / sum_r2) : sqrt(sum_b2);
    r->kernel = mpl_layer_kernel(lk);
    r->path = mpl_layer_path(lk, M);
    r->weight_rounding = uw;
    rc = CLI_EXIT_OK;
out:
    mpl_layer_destroy(lk);
    mpl_layer_destroy(lr);
    free(x);
    free(xf);
    free(b);
    free(bf);
    free(y);
    free(yr);
    free(yf);
    free(yrf);
    free(ws);
    free(sx);
    cli_synth_free(&syn);
    return rc;
}

int cli_verify(int argc, char **argv) {
    const char *cmd = "verify";
    cli_opt opts[] = {CLI_CONFIG_OPTS, {"seed", 1, 0, 0}, {"layout", 1, 0, 0}, CLI_TP_OPTS};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help_flag, rc;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help_flag))) return rc;
    if (help_flag) {
        help();
        return CLI_EXIT_OK;
    }
    cli_setup s;
    if ((rc = cli_setup_from_opts(cmd, opts, nopts, 1, 0, 0, &s))) return rc;
    int64_t seed = 1;
    const char *t;
    if ((t = cli_value(opts, nopts, "seed")) && (rc = cli_int(cmd, "seed", t, 0, INT64_MAX, &seed))) return rc;
    mpl_layout layout = MPL_LAYOUT_CT;
    if ((t = cli_value(opts, nopts, "layout")) && mpl_layout_parse(t, &layout) != MPL_OK) {
        cli_error(cmd, "--layout: %s", mpl_last_error());
        return CLI_EXIT_USAGE;
    }
    int tp_ranks;
    mpl_tp_mode tp_mode;
    if ((rc = cli_tp_options(cmd, opts, nopts, &tp_ranks, &tp_mode))) return rc;
    char desc[256];
    cli_config_string(&s.cfg, desc, sizeof desc);
    printf("verify %s, m=%lld, layout %s, seed %lld\n", desc, (long long)s.m, mpl_layout_name(layout),
           (long long)seed);
    fflush(stdout);
    if (tp_ranks) return cli_tp_verify(cmd, &s, layout, (uint64_t)seed, tp_ranks, tp_mode); /* tools/tp_cli.c */
    cli_verify_result r;
    if ((rc = cli_verify_run(cmd, &s, layout, (uint64_t)seed, &r))) return rc;
    printf("kernel: %s path: %s (reference: ref)\n", r.kernel, r.path ? r.path : "(none)");
    printf("max abs error: %.3e\n", r.max_abs);
    printf("relative error (Frobenius): %.3e; tolerance %.3e\n", r.rel_fro, r.rel_fro_tol);
    printf("worst element: (m=%lld, n=%lld) |y - y_ref| = %.3e, bound %.3e (ratio %.3g)\n", (long long)r.worst_m,
           (long long)r.worst_n, r.worst_abs, r.worst_bound, r.worst_ratio);
    printf("tolerance: per element 2(K+G+4)*2^-24*sum|x*w*s| + 2*u_act*|y_ref|, u_act = %s for %s\n",
           s.cfg.act == MPL_ACT_F16 ? "2^-11" : s.cfg.act == MPL_ACT_BF16 ? "2^-8" : "2^-24", mpl_act_name(s.cfg.act));
    if (r.weight_rounding > 0)
        printf("  + u_w*sum|x*w*s|, u_w = 2^%d: this kernel path multiplies weights rounded to %s\n",
               (int)lround(log2(r.weight_rounding)), mpl_act_name(s.cfg.act));
    if (!r.pass) {
        printf("FAIL\n");
        cli_error(cmd, "path %s differs from ref beyond tolerance: |y - y_ref| = %.3e at (m=%lld, n=%lld), bound %.3e",
                  r.path ? r.path : r.kernel, r.worst_abs, (long long)r.worst_m, (long long)r.worst_n, r.worst_bound);
        return CLI_EXIT_CHECK;
    }
    printf("PASS\n");
    return CLI_EXIT_OK;
}

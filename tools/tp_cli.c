/*
 * tp_cli.c -- `verify --tp R --tp-mode M` and `bench --tp R --tp-mode M` (docs/tensor-parallel.md).
 *
 * The random layer of verify/bench is built whole (config flags = the whole layer), sharded over R
 * ranks by mpl_layer_create_shards, and run on the CPU stand-in (--device cpu: mpl_tp_apply_host,
 * the ranks one after another in this process, row partials summed in fp32 on the host) or on R
 * GPUs through NCCL (--device cuda: tools/tp_nccl.c, partials all-reduced in the activation type).
 *
 * verify tolerance. The unsharded bound of cmd_verify.c, 2(K+G+4) u S + 2 u_act |y_ref| (+ u_w S
 * for weight-rounding GPU paths), holds for column shards: each output is one rank's, computed as the
 * unsharded kernel would (any order). Row shards add, with S = sum |x w s| + |b| over the whole K:
 *   - each rank's partial rounded to the activation type: u_act S_r, summed: u_act S (+ R f16 floors);
 *   - the sum of R partials: CPU stand-in in fp32, gamma_R S (R u); NCCL in the activation type,
 *     each of the R - 1 additions rounded: (R - 1) u_act (1 + u_act) S;
 *   - W4A8: each rank quantizes its slice of x with its own amax (sx_r <= sx), so the quantized
 *     inputs differ from the whole row's by at most sx (1 + 2^-13) per element (both sides' rounding
 *     steps, plus fp32 slack): + sx (1 + 2^-13) sum_k |w s|.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_cli.h"

/* H200's L2 is 60 MB (STYLE.md): rotate copies over twice that per GPU unless --cold-bytes says. */
#define CLI_TP_COLD_DEFAULT ((uint64_t)120 << 20)

void cli_tp_print_help(FILE *f) {
    fprintf(f, "  --tp R              shard the layer over R ranks (tensor parallel; the config flags give the\n"
               "                      whole layer): --device cpu runs the ranks one after another in this process\n"
               "                      (the CPU stand-in), --device cuda on R GPUs through NCCL (built with NCCL)\n"
               "  --tp-mode M         column (N split, outputs gathered) or row (K split, partials all-reduced)\n");
}

int cli_tp_options(const char *cmd, cli_opt *opts, int nopts, int *ranks, mpl_tp_mode *mode) {
    *ranks = 0;
    *mode = MPL_TP_COLUMN;
    const char *t = cli_value(opts, nopts, "tp"), *tm = cli_value(opts, nopts, "tp-mode");
    if (!t) {
        if (tm) {
            cli_error(cmd, "--tp-mode needs --tp R");
            return CLI_EXIT_USAGE;
        }
        return 0;
    }
    int64_t v;
    int rc = cli_int(cmd, "tp", t, 1, MPL_TP_MAX_RANKS, &v);
    if (rc) return rc;
    if (!tm) {
        cli_error(cmd, "--tp needs --tp-mode column or row");
        return CLI_EXIT_USAGE;
    }
    if (mpl_tp_mode_parse(tm, mode) != MPL_OK) {
        cli_error(cmd, "--tp-mode: %s", mpl_last_error());
        return CLI_EXIT_USAGE;
    }
    *ranks = (int)v;
    return 0;
}

static int check_device(const char *cmd, const cli_setup *s) {
    if (s->opt.device == MPL_DEVICE_CPU) return 0;
    if (s->opt.device == MPL_DEVICE_CUDA) {
        if (cli_tp_nccl_built()) return 0;
        cli_error(cmd, "--tp with --device cuda needs the NCCL runner: this mplinear was built without CUDA or "
                       "without NCCL (nccl.h and libnccl next to the CUDA toolkit)");
        return CLI_EXIT_NO_HARDWARE;
    }
    cli_error(cmd, "--tp runs on --device cpu (the stand-in) or cuda (NCCL)");
    return CLI_EXIT_UNSUPPORTED;
}

/* Rank r's options: the command's, on CUDA device r (tp_nccl.c drives devices 0..R-1). */
static void rank_options(const cli_setup *s, int ranks, mpl_options *o) {
    for (int r = 0; r < ranks; r++) {
        o[r] = s->opt;
        if (s->opt.device == MPL_DEVICE_CUDA) o[r].cuda_device = r;
    }
}

static int make_shards(const char *cmd, const cli_setup *s, const cli_synth *syn, int ranks, mpl_tp_mode mode,
                       mpl_layer **layers) {
    mpl_options *o = calloc((size_t)ranks, sizeof *o);
    if (!o) {
        cli_error(cmd, "out of memory for %d ranks", ranks);
        return CLI_EXIT_RESOURCE;
    }
    rank_options(s, ranks, o);
    mpl_status st = mpl_layer_create_shards(&s->cfg, &syn->ckpt, mode, ranks, o, layers);
    free(o);
    return st == MPL_OK ? 0 : cli_lib_error(cmd, st, "sharding");
}

static void destroy_all(mpl_layer **layers, int64_t count) {
    if (!layers) return;
    for (int64_t i = 0; i < count; i++) mpl_layer_destroy(layers[i]);
}

static int run_tp(const char *cmd, const cli_setup *s, mpl_layer *const *layers, int ranks, mpl_tp_mode mode,
                  const void *x, const void *b, void *y) {
    if (s->opt.device == MPL_DEVICE_CUDA) return cli_tp_nccl_apply(cmd, layers, ranks, mode, s->m, x, b, y);
    mpl_status st = mpl_tp_apply_host(layers, ranks, mode, s->m, x, b, y);
    return st == MPL_OK ? 0 : cli_lib_error(cmd, st, "tensor-parallel apply");
}

int cli_tp_verify(const char *cmd, const cli_setup *s, mpl_layout layout, uint64_t seed, int ranks, mpl_tp_mode mode) {
    const mpl_config *c = &s->cfg;
    int rc;
    if ((rc = cli_validate(cmd, c)) || (rc = check_device(cmd, s))) return rc;
    cli_synth syn;
    if ((rc = cli_synth_or_exit(cmd, c, layout, seed, &syn))) return rc;
    mpl_status st = MPL_OK;
    const int64_t M = s->m, K = c->k, N = c->n;
    mpl_layer **layers = calloc((size_t)ranks, sizeof *layers), *lr = NULL;
    void *x = NULL, *b = NULL, *y = NULL, *y2 = NULL, *yr = NULL;
    float *xf = NULL, *bf = NULL, *yf = NULL, *yrf = NULL;
    double *ws = NULL;
    const size_t es = c->act == MPL_ACT_F32 ? 4 : 2, mk = (size_t)M * (size_t)K, mn = (size_t)M * (size_t)N;
    if ((uint64_t)M * (uint64_t)(K > N ? K : N) > (uint64_t)SIZE_MAX / 8) {
        cli_error(cmd, "m = %lld rows of k = %lld, n = %lld: byte count overflows", (long long)M, (long long)K,
                  (long long)N);
        rc = CLI_EXIT_INPUT;
        goto out;
    }
    if (!layers) {
        rc = CLI_EXIT_RESOURCE;
        cli_error(cmd, "out of memory");
        goto out;
    }
    if ((rc = make_shards(cmd, s, &syn, ranks, mode, layers))) goto out;
    mpl_options ro = s->opt;
    ro.kernel = "ref";
    ro.device = MPL_DEVICE_CPU;
    if ((st = mpl_layer_create(c, &syn.ckpt, &ro, &lr)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, "reference layer");
        goto out;
    }
    x = malloc(mk * es), xf = malloc(mk * sizeof(float)), b = malloc((size_t)N * es), bf = malloc((size_t)N * 4);
    y = malloc(mn * es), y2 = malloc(mn * es), yr = malloc(mn * es), yf = malloc(mn * 4), yrf = malloc(mn * 4);
    ws = malloc((size_t)K * sizeof(double));
    if (!x || !xf || !b || !bf || !y || !y2 || !yr || !yf || !yrf || !ws) {
        cli_error(cmd, "out of memory for m = %lld rows", (long long)M);
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    cli_verify_inputs(c->act, seed, mk, syn.bias, (size_t)N, x, xf, b, bf); /* the same x as verify without --tp */
    memset(y, 0xff, mn * es);
    memset(y2, 0xff, mn * es);
    if ((rc = run_tp(cmd, s, layers, ranks, mode, x, b, y)) || (rc = run_tp(cmd, s, layers, ranks, mode, x, b, y2)))
        goto out;
    if ((st = mpl_layer_apply(lr, M, x, b, yr)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, "ref");
        goto out;
    }
    int deterministic = memcmp(y, y2, mn * es) == 0;
    cli_act_to_f32(c->act, y, yf, mn);
    cli_act_to_f32(c->act, yr, yrf, mn);

    const double u = 0x1.0p-24, ua = cli_act_unit_roundoff(c->act), R = ranks;
    const double floor_abs = c->act == MPL_ACT_F16 ? 0x1.0p-24 : 0.0;
    const int64_t G = syn.groups, gs = c->group_size == -1 ? K : c->group_size;
    double uw = 0;
    for (int r = 0; r < ranks; r++) uw = fmax(uw, mpl_layer_weight_rounding(layers[r], M));
    double coef = 2.0 * (double)(K + G + 4) * u + uw, floors = floor_abs;
    if (mode == MPL_TP_ROW) {
        coef += ua * (1 + 0x1.0p-20);
        coef += s->opt.device == MPL_DEVICE_CUDA ? (R - 1) * ua * (1 + ua) * (1 + 0x1.0p-20) : R * u * 1.01;
        floors += R * floor_abs;
    }
    double worst_ratio = -1, worst_abs = 0, worst_bound = 0, max_abs = 0;
    int64_t worst_m = 0, worst_n = 0;
    int pass = 1;
    for (int64_t n = 0; n < N; n++) {
        double W = 0;
        for (int64_t k = 0; k < K; k++) {
            int64_t g = syn.g_idx ? syn.g_idx[k] : k / gs;
            ws[k] = fabs((double)cli_synth_value(c, &syn, n, k)) * (double)syn.scales[n * G + g];
            W += ws[k];
        }
        for (int64_t m = 0; m < M; m++) {
            const float *xr = xf + m * K;
            double amax = 0;
            if (c->mode == MPL_MODE_W4A8)
                for (int64_t k = 0; k < K; k++) amax = fmax(amax, fabs((double)xr[k]));
            double sx = amax / 127.0, S = fabs((double)bf[n]);
            for (int64_t k = 0; k < K; k++) S += (fabs((double)xr[k]) + sx) * ws[k];
            double yv = yf[m * N + n], rv = yrf[m * N + n];
            double bound = coef * S + 2.0 * ua * fabs(rv) + floors;
            if (uw > 0 && c->act == MPL_ACT_F16) for (int64_t k = 0; k < K; k++) bound += 0x1.0p-25 * fabs((double)xr[k]);
            if (mode == MPL_TP_ROW && c->mode == MPL_MODE_W4A8) bound += sx * (1 + 0x1.0p-13) * W;
            double d = (isnan(yv) && isnan(rv)) ? 0.0 : (isnan(yv) || isnan(rv)) ? INFINITY : fabs(yv - rv);
            double ratio = d == 0 ? 0 : bound > 0 ? d / bound : INFINITY;
            if (!(d <= bound)) pass = 0;
            if (d > max_abs) max_abs = d;
            if (ratio > worst_ratio) {
                worst_ratio = ratio, worst_abs = d, worst_bound = bound;
                worst_m = m, worst_n = n;
            }
        }
    }
    printf("tensor parallel: %d ranks, %s-parallel, %s; rank 0 runs %s (k=%lld n=%lld), reference: unsharded ref\n",
           ranks, mpl_tp_mode_name(mode), s->opt.device == MPL_DEVICE_CUDA ? "NCCL on CUDA devices" : "CPU stand-in",
           mpl_layer_kernel(layers[0]), (long long)mpl_layer_config(layers[0])->k,
           (long long)mpl_layer_config(layers[0])->n);
    printf("max abs error: %.3e\n", max_abs);
    printf("worst element: (m=%lld, n=%lld) |y - y_ref| = %.3e, bound %.3e (ratio %.3g)\n", (long long)worst_m,
           (long long)worst_n, worst_abs, worst_bound, worst_ratio);
    printf("two runs: %s\n", deterministic ? "bit-identical" : "DIFFER");
    if (!pass || !deterministic) {
        printf("FAIL\n");
        if (!deterministic)
            cli_error(cmd, "tensor-parallel apply is not deterministic: two runs differ");
        else
            cli_error(cmd, "%s-parallel over %d ranks differs from ref beyond tolerance: |y - y_ref| = %.3e at (m=%lld, "
                           "n=%lld), bound %.3e",
                      mpl_tp_mode_name(mode), ranks, worst_abs, (long long)worst_m, (long long)worst_n, worst_bound);
        rc = CLI_EXIT_CHECK;
        goto out;
    }
    printf("PASS\n");
    rc = CLI_EXIT_OK;
out:
    destroy_all(layers, layers ? ranks : 0);
    free(layers);
    mpl_layer_destroy(lr);
    free(x), free(xf), free(b), free(bf), free(y), free(y2), free(yr), free(yf), free(yrf), free(ws);
    cli_synth_free(&syn);
    return rc;
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cli_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

int cli_tp_bench(const char *cmd, const cli_setup *s, const cli_bench_params *p, int ranks, mpl_tp_mode mode,
                 int json) {
    const mpl_config *c = &s->cfg;
    int rc;
    if ((rc = cli_validate(cmd, c)) || (rc = check_device(cmd, s))) return rc;
    cli_synth syn;
    if ((rc = cli_synth_or_exit(cmd, c, MPL_LAYOUT_GPTQ_V2, p->seed, &syn))) return rc;
    mpl_status st = MPL_OK;
    const int cuda = s->opt.device == MPL_DEVICE_CUDA;
    const int reps = p->reps > 0 ? p->reps : 20;
    mpl_layer **layers = NULL;
    int64_t copies = 1, made = 0;
    void *x = NULL, *y = NULL;
    float *xf = NULL;
    double *times = malloc((size_t)reps * sizeof(double));
    const size_t es = c->act == MPL_ACT_F32 ? 4 : 2, mk = (size_t)s->m * (size_t)c->k, mn = (size_t)s->m * (size_t)c->n;
    mpl_layer *first[MPL_TP_MAX_RANKS];
    if (!times) {
        rc = CLI_EXIT_RESOURCE;
        cli_error(cmd, "out of memory");
        goto out;
    }
    if ((rc = make_shards(cmd, s, &syn, ranks, mode, first))) goto out;
    size_t wb = mpl_layer_weight_bytes(first[0]);
    if (cuda) {
        /* Cold weights per GPU: copies of every rank's layer rotated (the CPU stand-in runs warm: it
         * checks the sharding, it does not measure scaling). */
        uint64_t target = p->cold_bytes ? p->cold_bytes : CLI_TP_COLD_DEFAULT;
        copies = (int64_t)((target + (wb ? wb : 1) - 1) / (wb ? wb : 1));
        if (copies < 2) copies = 2;
        if (p->max_copies > 0 && copies > p->max_copies) copies = p->max_copies;
        uint64_t max_bytes = p->max_bytes ? p->max_bytes : (uint64_t)8 << 30;
        if ((uint64_t)copies * wb > max_bytes) copies = wb ? (int64_t)(max_bytes / wb) : 1;
        if (copies < 1) copies = 1;
    }
    layers = calloc((size_t)(copies * ranks), sizeof *layers);
    if (!layers) {
        destroy_all(first, ranks);
        rc = CLI_EXIT_RESOURCE;
        cli_error(cmd, "out of memory for %lld copies", (long long)copies);
        goto out;
    }
    memcpy(layers, first, (size_t)ranks * sizeof *layers);
    made = 1;
    for (; made < copies; made++)
        if ((rc = make_shards(cmd, s, &syn, ranks, mode, layers + made * ranks))) goto out;
    x = malloc(mk * es), xf = malloc(mk * sizeof(float)), y = malloc(mn * es);
    if (!x || !xf || !y) {
        rc = CLI_EXIT_RESOURCE;
        cli_error(cmd, "out of memory for m = %lld rows", (long long)s->m);
        goto out;
    }
    cli_rng rng;
    cli_rng_seed(&rng, p->seed + 17);
    for (size_t i = 0; i < mk; i++) xf[i] = (float)cli_rng_gauss(&rng);
    cli_f32_to_act(c->act, xf, x, mk);
    cli_tp_times t = {0, 0, 0, copies};
    if (cuda) {
        if ((rc = cli_tp_nccl_bench(cmd, layers, copies, ranks, mode, s->m, x, reps, &t))) goto out;
    } else {
        if ((st = mpl_tp_apply_host(layers, ranks, mode, s->m, x, NULL, y)) != MPL_OK) { /* warm-up */
            rc = cli_lib_error(cmd, st, "tensor-parallel apply");
            goto out;
        }
        for (int i = 0; i < reps; i++) {
            double t0 = cli_now_seconds();
            st = mpl_tp_apply_host(layers, ranks, mode, s->m, x, NULL, y);
            times[i] = cli_now_seconds() - t0;
            if (st != MPL_OK) {
                rc = cli_lib_error(cmd, st, "tensor-parallel apply");
                goto out;
            }
        }
        t.total_s = median(times, reps);
        t.gemm_s = t.total_s; /* ranks run one after another: all of it is the layers' applies and the host sum */
    }
    double sec = t.total_s > 0 ? t.total_s : 1e-12;
    double gflops = 2.0 * (double)s->m * (double)c->n * (double)c->k / sec / 1e9;
    const mpl_config *rc0 = mpl_layer_config(layers[0]);
    if (json) {
        printf("{\"kernel\": ");
        cli_json_string(stdout, mpl_layer_kernel(layers[0]));
        printf(", \"tp\": %d, \"tp_mode\": \"%s\", \"device\": \"%s\", \"m\": %lld, \"k\": %lld, \"n\": %lld, "
               "\"rank_k\": %lld, \"rank_n\": %lld, \"seconds\": %.9g, \"gemm_seconds\": %.9g, "
               "\"allreduce_seconds\": %.9g, \"gflops\": %.6g, \"rank_weight_bytes\": %zu, \"copies\": %lld, "
               "\"wtype\": \"%s\", \"act\": \"%s\", \"group_size\": %lld, \"act_order\": %s, \"reps\": %d}\n",
               ranks, mpl_tp_mode_name(mode), cuda ? "cuda" : "cpu", (long long)s->m, (long long)c->k,
               (long long)c->n, (long long)rc0->k, (long long)rc0->n, t.total_s, t.gemm_s, t.allreduce_s, gflops, wb,
               (long long)t.copies, mpl_wtype_name(c->wtype), mpl_act_name(c->act), (long long)c->group_size,
               c->act_order ? "true" : "false", reps);
    } else {
        char desc[256];
        cli_config_string(c, desc, sizeof desc);
        printf("bench %s, m=%lld, tp %d %s-parallel (rank: k=%lld n=%lld), device %s\n", desc, (long long)s->m, ranks,
               mpl_tp_mode_name(mode), (long long)rc0->k, (long long)rc0->n,
               cuda ? "cuda (NCCL)" : "cpu (stand-in: ranks one after another)");
        printf("kernel %s: %.2f MiB of weights per rank, %lld copies\n", mpl_layer_kernel(layers[0]),
               (double)wb / 1048576.0, (long long)t.copies);
        printf("median %.4f ms per layer (GEMM %.4f ms, all-reduce %.4f ms) over %d reps: %.2f GFLOP/s\n",
               t.total_s * 1e3, t.gemm_s * 1e3, t.allreduce_s * 1e3, reps, gflops);
    }
    rc = CLI_EXIT_OK;
out:
    destroy_all(layers, made * ranks);
    free(layers);
    free(times), free(x), free(xf), free(y);
    cli_synth_free(&syn);
    return rc;
}

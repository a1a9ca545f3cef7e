/*
 * cmd_checkpoint.c -- subcommands on a quantized checkpoint folder
 * (config.json + *.safetensors; see docs/checkpoints.md):
 *   mplinear inspect DIR [--json]                     one line per quantized linear layer
 *   mplinear apply --checkpoint DIR --layer NAME ...  y = x W^T + b for one layer
 *   mplinear bench --checkpoint DIR [--m M] ...       every layer, and the time per token
 * Everything goes through the public checkpoint API (mpl_model_*).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "npy.h"

/* ---- shared ---- */

static int open_model(const char *cmd, const char *dir, mpl_model **m) {
    mpl_status st = mpl_model_open(dir, m);
    if (st != MPL_OK) return cli_lib_error(cmd, st, NULL);
    return 0;
}

/* --device, --kernel and --threads into o. */
static int parse_run_options(const char *cmd, cli_opt *opts, int nopts, mpl_options *o) {
    mpl_options_init(o);
    const char *d = cli_value(opts, nopts, "device");
    if (d) {
        if (strcmp(d, "cpu") == 0)
            o->device = MPL_DEVICE_CPU;
        else if (strcmp(d, "cuda") == 0)
            o->device = MPL_DEVICE_CUDA;
        else {
            cli_error(cmd, "--device '%s': must be cpu or cuda", d);
            return CLI_EXIT_USAGE;
        }
    }
    o->kernel = cli_value(opts, nopts, "kernel");
    const char *t = cli_value(opts, nopts, "threads");
    if (t) {
        int64_t v;
        int rc = cli_int(cmd, "threads", t, 0, 1 << 16, &v);
        if (rc) return rc;
        o->threads = (int)v;
    }
    return 0;
}

static int parse_act(const char *cmd, cli_opt *opts, int nopts, mpl_act *act) {
    *act = (mpl_act)0;
    const char *a = cli_value(opts, nopts, "act");
    if (a && mpl_act_parse(a, act) != MPL_OK) {
        cli_error(cmd, "--act: %s", mpl_last_error());
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Writes s as a JSON string (quotes and escapes). */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* ---- inspect ---- */

static void inspect_help(void) {
    printf("Usage: mplinear inspect DIR [--json] [--device cpu|cuda] [--act A]\n"
           "\n"
           "Lists the quantized linear layers of a checkpoint folder (config.json + *.safetensors,\n"
           "one file or shards with model.safetensors.index.json; GPTQ, AWQ or compressed-tensors;\n"
           "2-, 3-, 4- and 8-bit weights).\n"
           "One line per layer: name, k (in), n (out), weight type, group size, zero points,\n"
           "act-order, W4A8, checkpoint layout, bias, and the kernel the chooser picks on this\n"
           "machine for the checkpoint's activation type (or --act): the kernel apply runs, after\n"
           "the same checks (a g_idx or an int4 value apply would refuse is an error here too).\n"
           "A kernel followed by [i] was chosen after faster ones refused: after the table, block [i]\n"
           "names each kernel ahead of it in priority order and why it refused (reason code and\n"
           "message; layers with the same refusals share one block).\n"
           "Layers are listed in forward order; the header line says by which rule. Layers that\n"
           "are not quantized (embeddings, norms, ignored modules) are not listed.\n"
           "  --json   one JSON object per line instead: name, k, n, wtype, group_size, zero_points,\n"
           "           act_order, mode, layout, act, bias, kernel (null when none can run it), file,\n"
           "           refused: [{kernel, reason, message}] (the kernels ahead of the chosen one, or\n"
           "           every kernel when none can run it; [] when the first kernel runs it)\n");
}

/* The kernels ahead of a layer's choice, each with why it refused (one inspect row's [i] block). */
typedef struct {
    int count;
    mpl_choice_entry *e;
} refusals;

/*
 * The refusals behind layer i's choice `chosen` (NULL: none runs it): the chooser's entries for
 * its config, less the chosen one. The model can pick a later kernel than the config alone would
 * (act-order groups of unequal size, which only ref runs: mpl_model_layer_choose); the kernel the
 * config alone gets is then listed as refusing for that reason.
 */
static int layer_refusals(const mpl_config *c, const mpl_options *o, const char *chosen, mpl_choice_entry *buf,
                          int cap, refusals *out) {
    int count = 0;
    const char *cfg_chosen = NULL;
    mpl_choose(c, o, &cfg_chosen, buf, cap, &count);
    out->e = buf;
    out->count = 0;
    for (int j = 0; j < count; j++) {
        if (buf[j].reason == MPL_REASON_OK) {
            if (chosen && strcmp(buf[j].kernel, chosen) == 0) break;
            buf[j].reason = MPL_REASON_ACT_ORDER;
            snprintf(buf[j].message, sizeof buf[j].message,
                     "the checkpoint's g_idx gives act-order groups of unequal size: only %s runs them",
                     chosen ? chosen : "the reference kernel");
        }
        buf[out->count++] = buf[j];
    }
    return out->count;
}

static int same_refusals(const refusals *a, const refusals *b) {
    if (a->count != b->count) return 0;
    for (int j = 0; j < a->count; j++)
        if (strcmp(a->e[j].kernel, b->e[j].kernel) || a->e[j].reason != b->e[j].reason ||
            strcmp(a->e[j].message, b->e[j].message))
            return 0;
    return 1;
}

static void json_refusals(const refusals *r) {
    printf("[");
    for (int j = 0; j < r->count; j++) {
        printf("%s{\"kernel\": ", j ? ", " : "");
        json_string(stdout, r->e[j].kernel);
        printf(", \"reason\": \"%s\", \"message\": ", mpl_reason_name(r->e[j].reason));
        json_string(stdout, r->e[j].message);
        printf("}");
    }
    printf("]");
}

int cli_inspect(int argc, char **argv) {
    const char *cmd = "inspect";
    cli_opt opts[] = {{"json", 0, 0, 0}, {"device", 1, 0, 0}, {"act", 1, 0, 0}};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int npos = 0, help, rc;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, pos, 1, &npos, &help))) return rc;
    if (help) {
        inspect_help();
        return CLI_EXIT_OK;
    }
    if (npos != 1) {
        cli_error(cmd, "missing the checkpoint folder: mplinear inspect DIR [--json]");
        return CLI_EXIT_USAGE;
    }
    mpl_options o;
    mpl_act act;
    if ((rc = parse_run_options(cmd, opts, nopts, &o)) || (rc = parse_act(cmd, opts, nopts, &act))) return rc;
    mpl_model *m = NULL;
    if ((rc = open_model(cmd, pos[0], &m))) return rc;
    int json = cli_has(opts, nopts, "json");
    int n = mpl_model_layer_count(m);
    /* Distinct refusal sets (text: printed once after the table); every entry array holds one per kernel. */
    const int cap = mpl_kernel_count() > 0 ? mpl_kernel_count() : 1;
    refusals *sets = calloc((size_t)(n > 0 ? n : 1), sizeof *sets);
    const char **set_for = calloc((size_t)(n > 0 ? n : 1), sizeof *set_for);
    int *set_layers = calloc((size_t)(n > 0 ? n : 1), sizeof *set_layers);
    mpl_choice_entry *cur = calloc((size_t)cap, sizeof *cur);
    int nsets = 0;
    if (!sets || !set_for || !set_layers || !cur) {
        cli_error(cmd, "out of memory for %d layers", n);
        rc = CLI_EXIT_RESOURCE;
        goto done;
    }
    if (!json) {
        printf("# %s: %s, activations %s, %d quantized linear layer%s\n", pos[0], mpl_model_quant_method(m),
               mpl_act_name(act ? act : mpl_model_act(m)), n, n == 1 ? "" : "s");
        printf("# layers in %s\n", mpl_model_layer_order(m));
        printf("%-48s %6s %6s %-9s %5s %3s %9s %5s %-7s %4s %s\n", "name", "k", "n", "wtype", "group", "zp", "act_order",
               "w4a8", "layout", "bias", "kernel");
    }
    for (int i = 0; i < n; i++) {
        mpl_model_layer_info li;
        mpl_status st = mpl_model_layer_get(m, i, &li);
        if (st != MPL_OK) {
            rc = cli_lib_error(cmd, st, NULL);
            break;
        }
        mpl_config c = li.config;
        if (act) c.act = act;
        /* The verdict create would give: the same checks (g_idx, int4 values, act-order groups). */
        const char *chosen = NULL;
        st = mpl_model_layer_choose(m, i, &o, act, &chosen);
        if (st == MPL_ERR_INVALID_ARGUMENT || st == MPL_ERR_FORMAT || st == MPL_ERR_OVERFLOW) {
            rc = cli_lib_error(cmd, st, NULL);
            break;
        }
        refusals r;
        layer_refusals(&c, &o, chosen, cur, cap, &r);
        int set = -1;
        if (r.count && !json) {
            for (int j = 0; j < nsets && set < 0; j++)
                if (same_refusals(&sets[j], &r) && ((!chosen && !set_for[j]) || (chosen && set_for[j] && strcmp(chosen, set_for[j]) == 0)))
                    set = j;
            if (set < 0) {
                mpl_choice_entry *keep = malloc((size_t)r.count * sizeof *keep);
                if (!keep) {
                    cli_error(cmd, "out of memory");
                    rc = CLI_EXIT_RESOURCE;
                    break;
                }
                memcpy(keep, r.e, (size_t)r.count * sizeof *keep);
                sets[nsets] = (refusals){r.count, keep};
                set_for[nsets] = chosen;
                set = nsets++;
            }
            set_layers[set]++;
        }
        if (json) {
            printf("{\"name\": ");
            json_string(stdout, li.name);
            printf(", \"k\": %lld, \"n\": %lld, \"wtype\": \"%s\", \"group_size\": %lld, \"zero_points\": %s, "
                   "\"act_order\": %s, \"mode\": \"%s\", \"layout\": \"%s\", \"act\": \"%s\", \"bias\": %s, \"kernel\": ",
                   (long long)c.k, (long long)c.n, mpl_wtype_name(c.wtype), (long long)c.group_size,
                   c.zero_points ? "true" : "false", c.act_order ? "true" : "false",
                   c.mode == MPL_MODE_W4A8 ? "w4a8" : "w4a16", mpl_layout_name(li.layout), mpl_act_name(c.act),
                   li.has_bias ? "true" : "false");
            if (chosen)
                json_string(stdout, chosen);
            else
                printf("null");
            printf(", \"file\": ");
            json_string(stdout, li.file);
            printf(", \"refused\": ");
            json_refusals(&r);
            printf("}\n");
        } else {
            char kcol[96];
            if (set >= 0)
                snprintf(kcol, sizeof kcol, "%s [%d]", chosen ? chosen : "(none)", set + 1);
            else
                snprintf(kcol, sizeof kcol, "%s", chosen ? chosen : "(none)");
            printf("%-48s %6lld %6lld %-9s %5lld %3s %9s %5s %-7s %4s %s\n", li.name, (long long)c.k, (long long)c.n,
                   mpl_wtype_name(c.wtype), (long long)c.group_size, c.zero_points ? "yes" : "no",
                   c.act_order ? "yes" : "no", c.mode == MPL_MODE_W4A8 ? "yes" : "no", mpl_layout_name(li.layout),
                   li.has_bias ? "yes" : "no", kcol);
        }
    }
    if (!json && rc == 0 && nsets) {
        printf("# why the kernels ahead in priority order refused ([i] after a kernel above):\n");
        for (int j = 0; j < nsets; j++) {
            printf("[%d] %s, %d layer%s; refused:\n", j + 1, set_for[j] ? set_for[j] : "no kernel runs it",
                   set_layers[j], set_layers[j] == 1 ? "" : "s");
            for (int e = 0; e < sets[j].count; e++)
                printf("    %-22s %-12s %s\n", sets[j].e[e].kernel, mpl_reason_name(sets[j].e[e].reason),
                       sets[j].e[e].message);
        }
    }
done:
    if (sets)
        for (int j = 0; j < nsets; j++) free(sets[j].e);
    free(sets);
    free(set_for);
    free(set_layers);
    free(cur);
    mpl_model_close(m);
    return rc;
}

/* ---- apply ---- */

static void apply_help(void) {
    printf("Usage: mplinear apply --checkpoint DIR --layer NAME --input X.npy --output Y.npy\n"
           "                      [--act A] [--kernel NAME] [--threads N] [--device cpu|cuda]\n"
           "                      [--stream-timeout S]\n"
           "\n"
           "Runs one quantized linear layer of a checkpoint folder: Y = X W^T + b (the module's bias\n"
           "when it has one). NAME is the module prefix as `mplinear inspect DIR` lists it.\n"
           "--input: [M, K] (or [K] for M = 1) float32, float16 or bfloat16 ('<u2').\n"
           "--act: activation type f16, bf16 or f32 (default: the checkpoint's torch_dtype); X and\n"
           "the bias are rounded to it. Y is written as float32 [M, N] (through a temporary file:\n"
           "after an error no output file exists). The last line on stderr names the kernel.\n"
           CLI_STREAM_HELP);
}

static float load_float(const npy_array *a, size_t i) {
    switch (a->dtype) {
    case MPL_DTYPE_F16: return mpl_f16_to_f32(((const uint16_t *)a->data)[i]);
    case MPL_DTYPE_BF16: return mpl_bf16_to_f32(((const uint16_t *)a->data)[i]);
    default: return ((const float *)a->data)[i];
    }
}

int cli_apply_checkpoint(int argc, char **argv) {
    const char *cmd = "apply";
    cli_opt opts[] = {{"checkpoint", 1, 0, 0}, {"layer", 1, 0, 0},  {"input", 1, 0, 0},   {"output", 1, 0, 0},
                      {"act", 1, 0, 0},        {"kernel", 1, 0, 0}, {"threads", 1, 0, 0}, {"device", 1, 0, 0},
                      {"stream-timeout", 1, 0, 0}};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help, rc, timeout_ms, to_stdout = 0;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help))) return rc;
    if (help) {
        apply_help();
        return CLI_EXIT_OK;
    }
    static const char *const required[] = {"checkpoint", "layer", "input", "output"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!cli_has(opts, nopts, required[i])) {
            cli_error(cmd, "missing --%s (see mplinear apply --checkpoint DIR --help)", required[i]);
            return CLI_EXIT_USAGE;
        }
    mpl_options o;
    mpl_act act;
    if ((rc = parse_run_options(cmd, opts, nopts, &o)) || (rc = parse_act(cmd, opts, nopts, &act)) ||
        (rc = cli_stream_timeout(cmd, opts, nopts, &timeout_ms)))
        return rc;
    const char *in = cli_value(opts, nopts, "input"), *outpath = cli_value(opts, nopts, "output");
    mpl_model *m = NULL;
    mpl_layer *l = NULL;
    npy_array xa;
    memset(&xa, 0, sizeof xa);
    void *x = NULL, *bias = NULL, *y = NULL;
    float *yf = NULL;
    if ((rc = open_model(cmd, cli_value(opts, nopts, "checkpoint"), &m))) return rc;
    int idx;
    mpl_model_layer_info li;
    mpl_status st = mpl_model_find_layer(m, cli_value(opts, nopts, "layer"), &idx);
    if (st == MPL_OK) st = mpl_model_layer_get(m, idx, &li);
    if (st != MPL_OK) {
        rc = cli_lib_error(cmd, st, "--layer");
        goto out;
    }
    if (!act) act = mpl_model_act(m);
    const int64_t K = li.config.k, N = li.config.n;
    char err[1024];
    if ((st = npy_read_timeout(in, &xa, timeout_ms, err, sizeof err)) != MPL_OK) {
        cli_error(cmd, "--input %s", err);
        rc = cli_exit_for(st);
        goto out;
    }
    int64_t M;
    {
        char sh[256];
        npy_shape_string(xa.ndim, xa.shape, sh, sizeof sh);
        if (xa.dtype != MPL_DTYPE_F32 && xa.dtype != MPL_DTYPE_F16 && xa.dtype != MPL_DTYPE_BF16) {
            cli_error(cmd, "--input %s: dtype %s: expected float32, float16 or bfloat16 ('<u2')", in,
                      mpl_dtype_name(xa.dtype));
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        if (xa.ndim == 1 && xa.shape[0] == K)
            M = 1;
        else if (xa.ndim == 2 && xa.shape[1] == K)
            M = xa.shape[0];
        else {
            cli_error(cmd, "--input %s: shape %s: expected [M, %lld] (layer %s has k = %lld)", in, sh, (long long)K,
                      li.name, (long long)K);
            rc = CLI_EXIT_INPUT;
            goto out;
        }
    }
    if ((st = mpl_model_layer_create(m, idx, &o, act, &l)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, NULL);
        goto out;
    }
    size_t es = act == MPL_ACT_F32 ? 4 : 2, mn, xbytes, ybytes;
    if (__builtin_mul_overflow((size_t)M, (size_t)N, &mn) || __builtin_mul_overflow(mn, es, &ybytes) ||
        __builtin_mul_overflow(xa.count, es, &xbytes)) {
        cli_error(cmd, "output of [%lld, %lld]: byte count overflows", (long long)M, (long long)N);
        rc = CLI_EXIT_INPUT;
        goto out;
    }
    x = malloc(xbytes ? xbytes : 1);
    y = malloc(ybytes ? ybytes : 1);
    yf = malloc(mn ? mn * sizeof(float) : 1);
    bias = li.has_bias ? malloc((size_t)N * es) : NULL;
    if (!x || !y || !yf || (li.has_bias && !bias)) {
        cli_error(cmd, "out of memory for x [%lld, %lld] and y [%lld, %lld]", (long long)M, (long long)K, (long long)M,
                  (long long)N);
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    for (size_t i = 0; i < xa.count; i++) {
        float v = load_float(&xa, i);
        cli_f32_to_act(act, &v, (char *)x + i * es, 1);
    }
    if (bias && (st = mpl_model_layer_bias(m, idx, act, bias)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, "bias");
        goto out;
    }
    if ((st = mpl_layer_apply(l, M, x, bias, y)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, "apply");
        goto out;
    }
    cli_act_to_f32(act, y, yf, mn);
    {
        int64_t shape[2] = {M, N};
        to_stdout = npy_is_stdout(outpath);
        if ((st = npy_write_output(outpath, MPL_DTYPE_F32, 2, shape, yf, timeout_ms, err, sizeof err)) != MPL_OK) {
            cli_error(cmd, "--output %s", err);
            rc = cli_exit_for(st);
            goto out;
        }
    }
    fprintf(to_stdout ? stderr : stdout, "wrote %s: [%lld, %lld] float32 (%s: %s %s, k = %lld, group %lld%s%s%s%s, act %s)\n", outpath, (long long)M,
           (long long)N, li.name, mpl_layout_name(li.layout), mpl_wtype_name(li.config.wtype), (long long)K,
           (long long)li.config.group_size, li.config.zero_points ? ", zp" : "", li.config.act_order ? ", act-order" : "",
           li.config.mode == MPL_MODE_W4A8 ? ", w4a8" : "", li.has_bias ? ", bias" : "", mpl_act_name(act));
    fflush(stdout);
    fprintf(stderr, "kernel: %s path: %s\n", mpl_layer_kernel(l), mpl_layer_path(l, M));
    rc = CLI_EXIT_OK;
out:
    mpl_layer_destroy(l);
    mpl_model_close(m);
    npy_free(&xa);
    free(x);
    free(y);
    free(yf);
    free(bias);
    return rc;
}

/* ---- bench ---- */

static void bench_help(void) {
    printf("Usage: mplinear bench --checkpoint DIR [--m M] [--reps R] [--act A] [--kernel NAME]\n"
           "                      [--threads N] [--device cpu|cuda] [--json] [--seed S] [--quiet]\n"
           "\n"
           "Creates every quantized linear layer of the checkpoint, then runs R rounds (default 20)\n"
           "of one apply per layer in model order, as a forward pass does (so each layer's weights\n"
           "are as cold as the rest of the model leaves them), on seeded Gaussian activations of\n"
           "M rows (default 1). Prints one row per layer: median seconds per apply, GB/s of\n"
           "weight traffic and GFLOP/s; then the total: the sum of the medians, and per token\n"
           "(the total divided by M). With --json: one JSON object per layer, then one for the total\n"
           "(its \"order\" says by which rule the layers are in forward order).\n"
           "On a terminal, stderr shows progress while the layers are packed and timed (layers done,\n"
           "weights per second, ETA); --quiet turns it off. Nothing extra when stderr is not a terminal.\n");
}

int cli_bench_checkpoint(int argc, char **argv) {
    const char *cmd = "bench";
    cli_opt opts[] = {{"checkpoint", 1, 0, 0}, {"m", 1, 0, 0},      {"reps", 1, 0, 0},   {"act", 1, 0, 0},
                      {"kernel", 1, 0, 0},     {"threads", 1, 0, 0}, {"device", 1, 0, 0}, {"json", 0, 0, 0},
                      {"seed", 1, 0, 0},       {"quiet", 0, 0, 0}};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help, rc;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help))) return rc;
    if (help) {
        bench_help();
        return CLI_EXIT_OK;
    }
    if (!cli_has(opts, nopts, "checkpoint")) {
        cli_error(cmd, "missing --checkpoint DIR");
        return CLI_EXIT_USAGE;
    }
    int64_t M = 1, reps = 20, seed = 1;
    const char *t;
    if ((t = cli_value(opts, nopts, "m")) && (rc = cli_int(cmd, "m", t, 1, 1 << 20, &M))) return rc;
    if ((t = cli_value(opts, nopts, "reps")) && (rc = cli_int(cmd, "reps", t, 1, 100000, &reps))) return rc;
    if ((t = cli_value(opts, nopts, "seed")) && (rc = cli_int(cmd, "seed", t, 0, INT64_MAX, &seed))) return rc;
    mpl_options o;
    mpl_act act;
    if ((rc = parse_run_options(cmd, opts, nopts, &o)) || (rc = parse_act(cmd, opts, nopts, &act))) return rc;
    int json = cli_has(opts, nopts, "json"), quiet = cli_has(opts, nopts, "quiet");
    mpl_model *m = NULL;
    cli_progress prog = {0};
    if ((rc = open_model(cmd, cli_value(opts, nopts, "checkpoint"), &m))) return rc;
    if (!act) act = mpl_model_act(m);
    int n = mpl_model_layer_count(m);
    mpl_layer **layers = calloc((size_t)n, sizeof *layers);
    void **bias = calloc((size_t)n, sizeof *bias);
    double *times = calloc((size_t)(n * reps), sizeof *times);
    void *x = NULL, *y = NULL;
    int64_t kmax = 0, nmax = 0;
    size_t es = act == MPL_ACT_F32 ? 4 : 2;
    if (!layers || !bias || !times) {
        cli_error(cmd, "out of memory");
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    /* Packing a large checkpoint takes minutes: say how far it is (on a terminal). */
    double wtotal = 0, wdone = 0;
    for (int i = 0; i < n; i++) {
        mpl_model_layer_info li;
        if (mpl_model_layer_get(m, i, &li) == MPL_OK) wtotal += (double)li.config.k * (double)li.config.n;
    }
    cli_progress_start(&prog, quiet, "packing", "layers", n, wtotal, "weights");
    for (int i = 0; i < n; i++) {
        mpl_model_layer_info li;
        mpl_status st = mpl_model_layer_get(m, i, &li);
        if (st == MPL_OK) st = mpl_model_layer_create(m, i, &o, act, &layers[i]);
        if (st != MPL_OK) {
            cli_progress_clear(&prog);
            rc = cli_lib_error(cmd, st, NULL);
            goto out;
        }
        wdone += (double)li.config.k * (double)li.config.n;
        cli_progress_step(&prog, i + 1, wdone);
        if (li.config.k > kmax) kmax = li.config.k;
        if (li.config.n > nmax) nmax = li.config.n;
        if (li.has_bias) {
            bias[i] = malloc((size_t)li.config.n * es);
            if (!bias[i] || mpl_model_layer_bias(m, i, act, bias[i]) != MPL_OK) {
                cli_progress_clear(&prog);
                rc = cli_lib_error(cmd, MPL_ERR_OUT_OF_MEMORY, "bias");
                goto out;
            }
        }
    }
    cli_progress_end(&prog, n);
    x = malloc((size_t)(M * kmax) * es);
    y = malloc((size_t)(M * nmax) * es);
    if (!x || !y) {
        cli_error(cmd, "out of memory for activations of %lld rows", (long long)M);
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    {
        cli_rng r;
        cli_rng_seed(&r, (uint64_t)seed);
        for (int64_t i = 0; i < M * kmax; i++) {
            float v = (float)cli_rng_gauss(&r);
            cli_f32_to_act(act, &v, (char *)x + (size_t)i * es, 1);
        }
    }
    /* One untimed round first: per-thread workspaces grow to size, pages fault in. */
    cli_progress_start(&prog, quiet, "timing", "rounds", reps + 1, (double)(reps + 1), "rounds");
    for (int64_t rep = -1; rep < reps; rep++) {
        cli_progress_step(&prog, rep + 1, (double)(rep + 1));
        for (int i = 0; i < n; i++) {
            double t0 = cli_now_seconds();
            mpl_status st = mpl_layer_apply(layers[i], M, x, bias[i], y);
            double t1 = cli_now_seconds();
            if (st != MPL_OK) {
                cli_progress_clear(&prog);
                rc = cli_lib_error(cmd, st, "apply");
                goto out;
            }
            if (rep >= 0) times[(size_t)i * (size_t)reps + (size_t)rep] = t1 - t0;
        }
    }
    cli_progress_end(&prog, reps + 1);
    double total = 0, total_bytes = 0, total_flops = 0;
    if (!json) {
        printf("# layers in %s\n", mpl_model_layer_order(m));
        printf("%-48s %6s %6s %-22s %11s %9s %9s\n", "layer", "k", "n", "kernel", "median_us", "GB/s", "GFLOP/s");
    }
    for (int i = 0; i < n; i++) {
        double *ti = times + (size_t)i * (size_t)reps;
        qsort(ti, (size_t)reps, sizeof *ti, cli_cmp_double);
        double med = reps % 2 ? ti[reps / 2] : 0.5 * (ti[reps / 2 - 1] + ti[reps / 2]);
        mpl_model_layer_info li;
        mpl_model_layer_get(m, i, &li);
        double wb = (double)mpl_layer_weight_bytes(layers[i]);
        double fl = 2.0 * (double)M * (double)li.config.k * (double)li.config.n;
        double s = med > 0 ? med : 1e-12;
        total += med;
        total_bytes += wb;
        total_flops += fl;
        if (json) {
            printf("{\"layer\": ");
            json_string(stdout, li.name);
            printf(", \"k\": %lld, \"n\": %lld, \"m\": %lld, \"kernel\": \"%s\", \"seconds\": %.9g, \"weight_bytes\": %.0f, "
                   "\"gbps\": %.4g, \"gflops\": %.4g}\n",
                   (long long)li.config.k, (long long)li.config.n, (long long)M, mpl_layer_kernel(layers[i]), med, wb,
                   wb / s * 1e-9, fl / s * 1e-9);
        } else {
            printf("%-48s %6lld %6lld %-22s %11.2f %9.2f %9.2f\n", li.name, (long long)li.config.k,
                   (long long)li.config.n, mpl_layer_kernel(layers[i]), med * 1e6, wb / s * 1e-9, fl / s * 1e-9);
        }
    }
    {
        double s = total > 0 ? total : 1e-12;
        if (json)
        {
            printf("{\"total\": true, \"layers\": %d, \"m\": %lld, \"act\": \"%s\", \"seconds\": %.9g, "
                   "\"seconds_per_token\": %.9g, \"weight_bytes\": %.0f, \"gbps\": %.4g, \"gflops\": %.4g, \"order\": ",
                   n, (long long)M, mpl_act_name(act), total, total / (double)M, total_bytes, total_bytes / s * 1e-9,
                   total_flops / s * 1e-9);
            json_string(stdout, mpl_model_layer_order(m));
            printf("}\n");
        }
        else
            printf("total: %d layers, m = %lld, %s: %.2f us per pass, %.2f us per token, %.2f GB/s, %.2f GFLOP/s "
                   "(medians of %lld rounds)\n",
                   n, (long long)M, mpl_act_name(act), total * 1e6, total / (double)M * 1e6, total_bytes / s * 1e-9,
                   total_flops / s * 1e-9, (long long)reps);
    }
    rc = CLI_EXIT_OK;
out:
    if (layers)
        for (int i = 0; i < n; i++) mpl_layer_destroy(layers[i]);
    if (bias)
        for (int i = 0; i < n; i++) free(bias[i]);
    free(layers);
    free(bias);
    free(times);
    free(x);
    free(y);
    mpl_model_close(m);
    return rc;
}

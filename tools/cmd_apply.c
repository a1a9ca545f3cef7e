/*
 * cmd_apply.c -- `mplinear apply`: y = x W^T + b from checkpoint tensors in .npy files.
 *
 * K and N come from the weight tensor's shape in its layout (the shapes are
 * those of docs/layouts/checkpoints.md and src/decode/); every
 * other file is then checked against K, N and the group count before the
 * library sees it, so an error names the file. Y is written through a
 * temporary file renamed at the end: after any error no output file exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "npy.h"

static void help(void) {
    printf("Usage: mplinear apply --layout L --weight W.npy --scales S.npy [--zeros Z.npy] [--g-idx G.npy]\n"
           "                      [--bias B.npy] --group-size G --wtype T --act A [--w4a8]\n"
           "                      --input X.npy --output Y.npy [--kernel NAME] [--threads N] [--device cpu|cuda]\n"
           "                      [--stream-timeout S]\n"
           "       mplinear apply --checkpoint DIR --layer NAME ...   (checkpoint directories; see its --help)\n"
           "\n"
           "Tensors are .npy files in the checkpoint's own shapes and dtypes (pf = 32 / bits values per int32:\n"
           "16 for 2-bit, 8 for 4-bit, 4 for 8-bit; 3-bit: 32 values per 3 words, a dense bit stream;\n"
           "G = K / group_size groups, 1 for group size -1):\n"
           "  layout   --weight                --scales   --zeros (uint2/uint3/uint4/uint8)\n"
           "  ct       [N, K/pf] int32         [N, G]     [ceil(N/pf), G] int32\n"
           "  gptq     [K/pf, N] int32         [G, N]     [G, ceil(N/pf)] int32, stores zero-1\n"
           "  gptq-v2  [K/pf, N] int32         [G, N]     [G, ceil(N/pf)] int32, stores the zero\n"
           "  awq      [K, N/pf] int32 (AWQ order) [G, N] [G, N/pf] int32   (4- and 8-bit; N a multiple of pf)\n"
           "  ct-int   [N, K] int8 (int4 values -8..7)  [N, G]   (wtype int4 only)\n"
           "Scales and bias: float16, float32, or bfloat16 stored as uint16 bits ('<u2').\n"
           "--g-idx: [K] int32 or int64 (act-order; the group of every input channel).\n"
           "--bias: [N]. --input: [M, K] (or [K] for M = 1) float32, float16 or bfloat16 ('<u2').\n"
           "x and bias are rounded to the activation type --act; Y is written as float32 [M, N].\n"
           "K and N are derived from --weight; --k/--n/--m, if given, must agree.\n"
           "--zp and --act-order are implied by --zeros and --g-idx.\n"
           CLI_STREAM_HELP
           "The last line on stderr names the kernel that ran. Exit codes: see mplinear --help.\n");
}

typedef struct {
    const char *flag, *path;
    npy_array a;
    int loaded;
} input_file;

static int load(const char *cmd, input_file *f, int timeout_ms) {
    char err[1024];
    mpl_status st = npy_read_timeout(f->path, &f->a, timeout_ms, err, sizeof err);
    if (st != MPL_OK) {
        cli_error(cmd, "--%s %s", f->flag, err);
        return cli_exit_for(st);
    }
    f->loaded = 1;
    return 0;
}

static int dtype_in(mpl_dtype d, const mpl_dtype *ok, int n) {
    for (int i = 0; i < n; i++)
        if (d == ok[i]) return 1;
    return 0;
}

/* Checks dtype and shape of a loaded file. d1 < 0: expect 1-D [d0]; alt_1d: [d0] also accepted for [d0, 1]. */
static int check(const char *cmd, const input_file *f, const mpl_dtype *ok, int nok, const char *dtypes, int64_t d0,
                 int64_t d1, int alt_1d, const char *what) {
    char s[256];
    npy_shape_string(f->a.ndim, f->a.shape, s, sizeof s);
    if (!dtype_in(f->a.dtype, ok, nok)) {
        cli_error(cmd, "--%s %s: dtype %s: expected %s", f->flag, f->path, mpl_dtype_name(f->a.dtype), dtypes);
        return CLI_EXIT_INPUT;
    }
    int good;
    if (d1 < 0)
        good = f->a.ndim == 1 && f->a.shape[0] == d0;
    else
        good = (f->a.ndim == 2 && f->a.shape[0] == d0 && f->a.shape[1] == d1) ||
               (alt_1d && d1 == 1 && f->a.ndim == 1 && f->a.shape[0] == d0);
    if (!good) {
        if (d1 < 0)
            cli_error(cmd, "--%s %s: shape %s: expected [%lld] (%s)", f->flag, f->path, s, (long long)d0, what);
        else
            cli_error(cmd, "--%s %s: shape %s: expected [%lld, %lld] (%s)", f->flag, f->path, s, (long long)d0,
                      (long long)d1, what);
        return CLI_EXIT_INPUT;
    }
    return 0;
}

static mpl_tensor as_tensor(const input_file *f) {
    mpl_tensor t;
    memset(&t, 0, sizeof t);
    if (!f->loaded) return t;
    t.data = f->a.data;
    t.dtype = f->a.dtype;
    t.ndim = f->a.ndim;
    for (int i = 0; i < f->a.ndim && i < MPL_MAX_DIMS; i++) t.shape[i] = f->a.shape[i];
    return t;
}

/* Element i of a float16/bfloat16/float32 array as float (exact). */
static float load_float(const npy_array *a, size_t i) {
    switch (a->dtype) {
    case MPL_DTYPE_F16: return mpl_f16_to_f32(((const uint16_t *)a->data)[i]);
    case MPL_DTYPE_BF16: return mpl_bf16_to_f32(((const uint16_t *)a->data)[i]);
    default: return ((const float *)a->data)[i];
    }
}

/* Converts a float array file to the activation type; NULL on out of memory. */
static void *to_act(const npy_array *a, mpl_act act) {
    size_t es = act == MPL_ACT_F32 ? 4 : 2, bytes;
    if (__builtin_mul_overflow(a->count, es, &bytes)) return NULL;
    void *out = malloc(bytes ? bytes : 1);
    if (!out) return NULL;
    for (size_t i = 0; i < a->count; i++) {
        float v = load_float(a, i);
        cli_f32_to_act(act, &v, (char *)out + i * es, 1);
    }
    return out;
}

/*
 * The file a library message is about, from the tensor it names (the decoder's
 * messages start with the checkpoint tensor's name: "g_idx[5] = ...",
 * "weight[0, 17] = ...", "tensor qzeros has ..."); NULL if none.
 */
static const input_file *blame(const char *msg, const input_file *w, const input_file *s, const input_file *z,
                               const input_file *g) {
    static const struct {
        const char *prefix;
        int which; /* 0 weight, 1 scales, 2 zeros, 3 g_idx */
    } map[] = {
        {"tensor weight_packed", 0}, {"tensor qweight", 0}, {"tensor weight_scale", 1}, {"tensor weight_zero_point", 2},
        {"tensor weight ", 0},       {"tensor scales", 1},  {"tensor qzeros", 2},       {"tensor g_idx", 3},
        {"weight[", 0},              {"qweight[", 0},       {"g_idx[", 3},
    };
    const input_file *f[4] = {w, s, z, g};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strncmp(msg, map[i].prefix, strlen(map[i].prefix)) == 0) return f[map[i].which]->loaded ? f[map[i].which] : NULL;
    return NULL;
}

int cli_apply(int argc, char **argv) {
    const char *cmd = "apply";
    cli_opt opts[] = {CLI_CONFIG_OPTS,       {"layout", 1, 0, 0}, {"weight", 1, 0, 0}, {"scales", 1, 0, 0},
                      {"zeros", 1, 0, 0},    {"g-idx", 1, 0, 0},  {"bias", 1, 0, 0},   {"input", 1, 0, 0},
                      {"output", 1, 0, 0},   {"stream-timeout", 1, 0, 0}};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help_flag, rc, timeout_ms;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help_flag))) return rc;
    if (help_flag) {
        help();
        return CLI_EXIT_OK;
    }
    static const char *const required[] = {"layout", "weight", "scales", "group-size", "wtype", "act", "input", "output"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!cli_has(opts, nopts, required[i])) {
            cli_error(cmd, "missing --%s (see mplinear apply --help)", required[i]);
            return CLI_EXIT_USAGE;
        }
    mpl_layout layout;
    if (mpl_layout_parse(cli_value(opts, nopts, "layout"), &layout) != MPL_OK) {
        cli_error(cmd, "--layout: %s", mpl_last_error());
        return CLI_EXIT_USAGE;
    }
    if ((rc = cli_stream_timeout(cmd, opts, nopts, &timeout_ms))) return rc;
    /* Types, group size and options first (k, n placeholders until the weight is read). */
    cli_setup s;
    if ((rc = cli_setup_from_opts(cmd, opts, nopts, 1, 1, 1, &s))) return rc;
    const char *outpath = cli_value(opts, nopts, "output");
    input_file fw = {"weight", cli_value(opts, nopts, "weight"), {0}, 0};
    input_file fs = {"scales", cli_value(opts, nopts, "scales"), {0}, 0};
    input_file fz = {"zeros", cli_value(opts, nopts, "zeros"), {0}, 0};
    input_file fg = {"g-idx", cli_value(opts, nopts, "g-idx"), {0}, 0};
    input_file fb = {"bias", cli_value(opts, nopts, "bias"), {0}, 0};
    input_file fx = {"input", cli_value(opts, nopts, "input"), {0}, 0};
    void *x = NULL, *bias = NULL, *y = NULL;
    float *yf = NULL;
    mpl_layer *layer = NULL;
    mpl_config *c = &s.cfg;
    int to_stdout = 0;
    c->zero_points = fz.path != NULL;
    c->act_order = fg.path != NULL;
    if (cli_has(opts, nopts, "zp") && !fz.path) {
        cli_error(cmd, "--zp given without --zeros Z.npy (apply reads zero points from a file)");
        return CLI_EXIT_USAGE;
    }
    if (cli_has(opts, nopts, "act-order") && !fg.path) {
        cli_error(cmd, "--act-order given without --g-idx G.npy (apply reads g_idx from a file)");
        return CLI_EXIT_USAGE;
    }
    if (mpl_wtype_zero_points(c->wtype) && !fz.path) {
        cli_error(cmd, "--wtype %s stores s - z and needs zero points: pass --zeros Z.npy", mpl_wtype_name(c->wtype));
        return CLI_EXIT_INPUT;
    }
    if (fz.path && !mpl_wtype_zero_points(c->wtype)) {
        cli_error(cmd, "--zeros given but --wtype %s has no zero points (only uint2, uint3, uint4 and uint8 do)",
                  mpl_wtype_name(c->wtype));
        return CLI_EXIT_INPUT;
    }
    if (layout == MPL_LAYOUT_CT_INT && c->wtype != MPL_WTYPE_INT4) {
        cli_error(cmd, "--layout ct-int holds signed int4 values: it needs --wtype int4, not %s",
                  mpl_wtype_name(c->wtype));
        return CLI_EXIT_INPUT;
    }
    if (layout == MPL_LAYOUT_AWQ && mpl_wtype_width(c->wtype) != 4 && mpl_wtype_width(c->wtype) != 8) {
        cli_error(cmd, "--layout awq with --wtype %s: AWQ's interleaved packing is defined for 4- and 8-bit weights",
                  mpl_wtype_name(c->wtype));
        return CLI_EXIT_INPUT;
    }
    if (layout == MPL_LAYOUT_AWQ && fg.path) {
        cli_error(cmd, "--layout awq has no g_idx: --g-idx is not allowed with it");
        return CLI_EXIT_INPUT;
    }

    const int bits = mpl_wtype_width(c->wtype);
    /* 1. The weight: its shape gives K and N. */
    if ((rc = load(cmd, &fw, timeout_ms))) goto out;
    {
        char sh[256];
        npy_shape_string(fw.a.ndim, fw.a.shape, sh, sizeof sh);
        mpl_dtype want = layout == MPL_LAYOUT_CT_INT ? MPL_DTYPE_I8 : MPL_DTYPE_I32;
        if (fw.a.dtype != want) {
            cli_error(cmd, "--weight %s: dtype %s: layout %s stores weights as %s", fw.path, mpl_dtype_name(fw.a.dtype),
                      mpl_layout_name(layout), mpl_dtype_name(want));
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        if (fw.a.ndim != 2 || fw.a.shape[0] == 0 || fw.a.shape[1] == 0) {
            cli_error(cmd, "--weight %s: shape %s: layout %s weights are a non-empty 2-D array", fw.path, sh,
                      mpl_layout_name(layout));
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        /* Bounded by what the file holds (< 2^63 bytes) and by the int32 cap below; no overflow in *pf. */
        const int64_t lim = ((int64_t)1 << 31) - 1;
        int64_t a0 = fw.a.shape[0], a1 = fw.a.shape[1];
        if (a0 > lim || a1 > lim) {
            cli_error(cmd, "--weight %s: shape %s: dimensions must be below 2^31", fw.path, sh);
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        /* Words along the packed dimension hold 32 / bits values (3-bit: 32 per 3 words). */
        const int64_t words = (layout == MPL_LAYOUT_GPTQ || layout == MPL_LAYOUT_GPTQ_V2) ? a0 : a1;
        if (layout != MPL_LAYOUT_CT_INT && (words * 32) % bits != 0) {
            cli_error(cmd, "--weight %s: shape %s: %d-bit values pack 32 per %d words, so its packed dimension (%lld "
                      "words) must be a multiple of %d",
                      fw.path, sh, bits, bits, (long long)words, bits);
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        const int64_t vals = words * 32 / bits;
        switch (layout) {
        case MPL_LAYOUT_CT: c->n = a0, c->k = vals; break;
        case MPL_LAYOUT_GPTQ:
        case MPL_LAYOUT_GPTQ_V2: c->k = vals, c->n = a1; break;
        case MPL_LAYOUT_AWQ: c->k = a0, c->n = vals; break;
        case MPL_LAYOUT_CT_INT: c->n = a0, c->k = a1; break;
        }
    }
    const int64_t K = c->k, N = c->n;
    int64_t v;
    const char *t;
    if ((t = cli_value(opts, nopts, "k")) && (cli_int(cmd, "k", t, 1, INT64_MAX, &v) == 0) && v != K) {
        cli_error(cmd, "--k %lld contradicts --weight %s (layout %s gives K = %lld)", (long long)v, fw.path,
                  mpl_layout_name(layout), (long long)K);
        rc = CLI_EXIT_INPUT;
        goto out;
    }
    if ((t = cli_value(opts, nopts, "n")) && (cli_int(cmd, "n", t, 1, INT64_MAX, &v) == 0) && v != N) {
        cli_error(cmd, "--n %lld contradicts --weight %s (layout %s gives N = %lld)", (long long)v, fw.path,
                  mpl_layout_name(layout), (long long)N);
        rc = CLI_EXIT_INPUT;
        goto out;
    }
    {
        mpl_status st = mpl_config_validate(c);
        if (st != MPL_OK) {
            char ctx[512];
            snprintf(ctx, sizeof ctx, "K = %lld, N = %lld from --weight %s", (long long)K, (long long)N, fw.path);
            cli_error(cmd, "%s (%s)", mpl_last_error(), ctx);
            rc = cli_exit_for(st);
            goto out;
        }
    }
    const int64_t G = c->group_size == -1 ? 1 : K / c->group_size;
    const int64_t Np = (N * bits + 31) / 32; /* words along N, the last one padded */
    const int ng = layout == MPL_LAYOUT_CT || layout == MPL_LAYOUT_CT_INT;
    char what[160];
    snprintf(what, sizeof what, "%s: K = %lld, N = %lld, %lld group%s", mpl_layout_name(layout), (long long)K,
             (long long)N, (long long)G, G == 1 ? "" : "s");
    static const mpl_dtype float_types[] = {MPL_DTYPE_F16, MPL_DTYPE_BF16, MPL_DTYPE_F32};
    static const mpl_dtype i32[] = {MPL_DTYPE_I32};
    static const mpl_dtype idx_types[] = {MPL_DTYPE_I32, MPL_DTYPE_I64};
    const char *float_names = "float16, bfloat16 ('<u2') or float32";
    /* 2. Scales, zeros, g_idx, bias, x: each checked against K, N, G. */
    if ((rc = load(cmd, &fs, timeout_ms)) ||
        (rc = check(cmd, &fs, float_types, 3, float_names, ng ? N : G, ng ? G : N, ng, what)))
        goto out;
    if (fz.path) {
        int64_t z0 = layout == MPL_LAYOUT_CT ? Np : G;
        int64_t z1 = layout == MPL_LAYOUT_CT ? G : layout == MPL_LAYOUT_AWQ ? N * bits / 32 : Np;
        if ((rc = load(cmd, &fz, timeout_ms)) || (rc = check(cmd, &fz, i32, 1, "int32", z0, z1, layout == MPL_LAYOUT_CT, what)))
            goto out;
    }
    if (fg.path) {
        if ((rc = load(cmd, &fg, timeout_ms)) || (rc = check(cmd, &fg, idx_types, 2, "int32 or int64", K, -1, 0, what))) goto out;
    }
    if (fb.path) {
        if ((rc = load(cmd, &fb, timeout_ms)) || (rc = check(cmd, &fb, float_types, 3, float_names, N, -1, 0, what))) goto out;
    }
    if ((rc = load(cmd, &fx, timeout_ms))) goto out;
    int64_t M;
    {
        char sh[256];
        npy_shape_string(fx.a.ndim, fx.a.shape, sh, sizeof sh);
        if (!dtype_in(fx.a.dtype, float_types, 3)) {
            cli_error(cmd, "--input %s: dtype %s: expected float32, float16 or bfloat16 ('<u2')", fx.path,
                      mpl_dtype_name(fx.a.dtype));
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        if (fx.a.ndim == 1 && fx.a.shape[0] == K)
            M = 1;
        else if (fx.a.ndim == 2 && fx.a.shape[1] == K)
            M = fx.a.shape[0];
        else {
            cli_error(cmd, "--input %s: shape %s: expected [M, %lld] (K = %lld from --weight %s)", fx.path, sh,
                      (long long)K, (long long)K, fw.path);
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        if ((t = cli_value(opts, nopts, "m")) && (cli_int(cmd, "m", t, 0, INT64_MAX, &v) == 0) && v != M) {
            cli_error(cmd, "--m %lld contradicts --input %s (shape %s gives M = %lld)", (long long)v, fx.path, sh,
                      (long long)M);
            rc = CLI_EXIT_INPUT;
            goto out;
        }
    }
    /* 3. The layer (the library checks the rest: g_idx values, ct-int value range, kernel support). */
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.layout = layout;
    ck.weight = as_tensor(&fw);
    ck.scales = as_tensor(&fs);
    ck.zeros = as_tensor(&fz);
    ck.g_idx = as_tensor(&fg);
    mpl_status st = mpl_layer_create(c, &ck, &s.opt, &layer);
    if (st != MPL_OK) {
        const input_file *culprit = blame(mpl_last_error(), &fw, &fs, &fz, &fg);
        char ctx[1100] = "";
        if (culprit) snprintf(ctx, sizeof ctx, "--%s %s", culprit->flag, culprit->path);
        rc = cli_lib_error(cmd, st, ctx);
        goto out;
    }
    /* 4. Apply. */
    size_t mn, ybytes;
    size_t es = c->act == MPL_ACT_F32 ? 4 : 2;
    if (__builtin_mul_overflow((size_t)M, (size_t)N, &mn) || __builtin_mul_overflow(mn, es, &ybytes)) {
        cli_error(cmd, "output of [%lld, %lld]: byte count overflows", (long long)M, (long long)N);
        rc = CLI_EXIT_INPUT;
        goto out;
    }
    x = to_act(&fx.a, c->act);
    bias = fb.loaded ? to_act(&fb.a, c->act) : NULL;
    y = malloc(ybytes ? ybytes : 1);
    yf = malloc(mn ? mn * sizeof(float) : 1);
    if (!x || (fb.loaded && !bias) || !y || !yf) {
        cli_error(cmd, "out of memory for x [%lld, %lld] and y [%lld, %lld]", (long long)M, (long long)K, (long long)M,
                  (long long)N);
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    st = mpl_layer_apply(layer, M, x, bias, y);
    if (st != MPL_OK) {
        rc = cli_lib_error(cmd, st, "apply");
        goto out;
    }
    cli_act_to_f32(c->act, y, yf, mn);
    {
        char err[1024];
        int64_t shape[2] = {M, N};
        to_stdout = npy_is_stdout(outpath);
        st = npy_write_output(outpath, MPL_DTYPE_F32, 2, shape, yf, timeout_ms, err, sizeof err);
        if (st != MPL_OK) {
            cli_error(cmd, "--output %s", err);
            rc = cli_exit_for(st);
            goto out;
        }
    }
    /* With --output /dev/stdout the array is on stdout: the summary goes to stderr. */
    fprintf(to_stdout ? stderr : stdout, "wrote %s: [%lld, %lld] float32 (%s %s, K = %lld, group %lld%s%s%s)\n", outpath, (long long)M, (long long)N,
           mpl_layout_name(layout), mpl_wtype_name(c->wtype), (long long)K, (long long)c->group_size,
           c->zero_points ? ", zp" : "", c->act_order ? ", act-order" : "", c->mode == MPL_MODE_W4A8 ? ", w4a8" : "");
    fflush(stdout);
    fprintf(stderr, "kernel: %s path: %s\n", mpl_layer_kernel(layer), mpl_layer_path(layer, M));
    rc = CLI_EXIT_OK;
out:
    mpl_layer_destroy(layer);
    free(x);
    free(bias);
    free(y);
    free(yf);
    npy_free(&fw.a);
    npy_free(&fs.a);
    npy_free(&fz.a);
    npy_free(&fg.a);
    npy_free(&fb.a);
    npy_free(&fx.a);
    return rc;
}

/*
 * consumer.c -- a program outside the tree, built against an installed mplinear by run.sh (pkg-config
 * and find_package, shared and static). Public API only: for each checkpoint layout, random codes,
 * scales and zero points are encoded with mpl_checkpoint_encode, a layer is created from them and
 * applied, and y is compared with a float64 computation of y = x . W^T + b.
 *
 * The data are exact by construction: x in -4..4 and bias in -10..10 are integers, weights (code - zero)
 * in -15..15, scales 1/8, 1/4, 1/2 or 1. Every product and partial sum, in any order, is a multiple of
 * 1/8 below K * 4 * 15 + 10 = 15370 in magnitude (< 2^17 eighths), so exact in fp32; y is that sum
 * rounded once to f16, so it must equal the float64 result rounded to f16 bit for bit, whichever
 * kernel runs.
 *
 * Usage: consumer [cpu|cuda] (default cpu; cuda skips ct-int, whose int4 type cuda_w4a16 does not take).
 * Exit 0 and one line "mplinear <version> (<number>): <layouts> match float64 (kernel <name>)" on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mplinear.h>

enum { K = 256, N = 24, M = 3, GROUP = 64, G = K / GROUP };

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t rng_below(uint32_t n) { /* xorshift64*: any fixed sequence will do */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1du) >> 32) % n;
}

static int fail(const char *what, mpl_status st) {
    fprintf(stderr, "consumer: %s: %s: %s\n", what, mpl_status_string(st), mpl_last_error());
    return 1;
}

/* One layout: encode, create, apply, compare. Returns 0 when y matches. */
static int run_layout(mpl_layout layout, mpl_device device, const char **kernel) {
    mpl_config cfg;
    mpl_config_init(&cfg, K, N);
    cfg.act = MPL_ACT_F16;
    cfg.group_size = GROUP;
    /* ct-int holds signed int4 values without zero points; the others uint4 with zero points. */
    int zp = layout != MPL_LAYOUT_CT_INT;
    cfg.wtype = zp ? MPL_WTYPE_UINT4 : MPL_WTYPE_INT4;
    cfg.zero_points = zp;

    static uint8_t codes[N * K], zeros[N * G];
    static float scales[N * G], xf[M * K], bf[N];
    static uint16_t x[M * K], bias[N], y[M * N];
    for (int i = 0; i < N * K; i++) codes[i] = (uint8_t)rng_below(16);
    for (int i = 0; i < N * G; i++) {
        zeros[i] = (uint8_t)rng_below(16);
        scales[i] = (float)(1u << rng_below(4)) / 8.0f; /* 1/8 .. 1 */
    }
    for (int i = 0; i < M * K; i++) x[i] = mpl_f32_to_f16(xf[i] = (float)((int)rng_below(9) - 4));
    for (int i = 0; i < N; i++) bias[i] = mpl_f32_to_f16(bf[i] = (float)((int)rng_below(21) - 10));

    mpl_checkpoint_tensors ck;
    mpl_status st = mpl_checkpoint_encode(&cfg, layout, codes, scales, MPL_DTYPE_F16, zp ? zeros : NULL, NULL, &ck);
    if (st != MPL_OK) return fail("mpl_checkpoint_encode", st);
    mpl_options opt;
    mpl_options_init(&opt);
    opt.device = device;
    mpl_layer *layer = NULL;
    st = mpl_layer_create(&cfg, &ck, &opt, &layer);
    mpl_checkpoint_tensors_free(&ck);
    if (st != MPL_OK) return fail("mpl_layer_create", st);
    st = mpl_layer_apply(layer, M, x, bias, y);
    if (st != MPL_OK) {
        mpl_layer_destroy(layer);
        return fail("mpl_layer_apply", st);
    }
    *kernel = mpl_layer_kernel(layer);

    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double want = bf[n];
            for (int k = 0; k < K; k++) {
                int g = k / GROUP, c = codes[n * K + k];
                int w = zp ? c - zeros[n * G + g] : (c >= 8 ? c - 16 : c);
                want += (double)xf[m * K + k] * w * scales[n * G + g];
            }
            uint16_t want16 = mpl_f32_to_f16((float)want); /* (float)want is exact: see the top */
            if (y[m * N + n] != want16 && bad++ < 5)
                fprintf(stderr, "consumer: layout %s, kernel %s: y[%d][%d] = %.9g, float64 gives %.9g\n",
                        mpl_layout_name(layout), *kernel, m, n, (double)mpl_f16_to_f32(y[m * N + n]), want);
        }
    mpl_layer_destroy(layer);
    return bad != 0;
}

int main(int argc, char **argv) {
    mpl_device device = MPL_DEVICE_CPU;
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "cpu") != 0 && strcmp(argv[1], "cuda") != 0)) {
        fprintf(stderr, "usage: consumer [cpu|cuda]\n");
        return 2;
    }
    if (argc == 2 && strcmp(argv[1], "cuda") == 0) device = MPL_DEVICE_CUDA;
    /* The header this program was compiled with and the library it runs with are the same release. */
    if (mpl_version_number() != MPL_VERSION_NUMBER || strcmp(mpl_version(), MPL_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: header %s (%d), library %s (%d)\n", MPL_VERSION_STRING, MPL_VERSION_NUMBER,
                mpl_version(), mpl_version_number());
        return 1;
    }
    static const mpl_layout layouts[] = {MPL_LAYOUT_GPTQ, MPL_LAYOUT_GPTQ_V2, MPL_LAYOUT_AWQ, MPL_LAYOUT_CT,
                                         MPL_LAYOUT_CT_INT};
    const char *kernel = "";
    char ran[64] = "";
    int failed = 0;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        if (device == MPL_DEVICE_CUDA && layouts[i] == MPL_LAYOUT_CT_INT) continue;
        failed |= run_layout(layouts[i], device, &kernel);
        strcat(strcat(ran, *ran ? " " : ""), mpl_layout_name(layouts[i]));
    }
    if (failed) return 1;
    printf("mplinear %s (%d): %s match float64 (kernel %s)\n", mpl_version(), mpl_version_number(), ran, kernel);
    return 0;
}

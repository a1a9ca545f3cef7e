/* test_smoke.c -- a layer through the public API end to end (ref kernel vs float64). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "mplinear.h"

static void smoke(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 64, 24);
    c.group_size = 32;
    c.act = MPL_ACT_F32;
    uint8_t codes[24 * 64];
    float scales[24 * 2];
    for (int i = 0; i < 24 * 64; i++) codes[i] = (uint8_t)((i * 7 + 3) % 16);
    for (int i = 0; i < 48; i++) scales[i] = 0.25f * (float)(1 + i % 5);
    mpl_checkpoint_tensors ck;
    assert_int_equal(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, scales, MPL_DTYPE_F16, NULL, NULL, &ck), MPL_OK);
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = "ref";
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_OK);
    mpl_checkpoint_tensors_free(&ck);
    float x[3 * 64], y[3 * 24];
    for (int i = 0; i < 3 * 64; i++) x[i] = (float)((i % 9) - 4);
    assert_int_equal(mpl_layer_apply(l, 3, x, NULL, y), MPL_OK);
    for (int m = 0; m < 3; m++)
        for (int n = 0; n < 24; n++) {
            double s = 0;
            for (int k = 0; k < 64; k++) s += (double)x[m * 64 + k] * (codes[n * 64 + k] - 8) * scales[n * 2 + k / 32];
            assert_float_equal(y[m * 24 + n], s, 1e-4);
        }
    mpl_layer_destroy(l);
    mpl_layer_destroy(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(smoke)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_version.c -- the version macros of include/mplinear.h against the library linked:
 * MPL_VERSION_NUMBER == mpl_version_number(), MPL_VERSION_STRING == mpl_version(), and the
 * number, the string and the MAJOR/MINOR/PATCH macros all say the same release.
 * (CMakeLists.txt checks at configure time that the macros equal project(VERSION).)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mplinear.h"

static void number_matches_library(void **state) {
    (void)state;
    assert_int_equal(mpl_version_number(), MPL_VERSION_NUMBER);
    assert_string_equal(mpl_version(), MPL_VERSION_STRING);
}

static void number_matches_string(void **state) {
    (void)state;
    assert_int_equal(MPL_VERSION_NUMBER, MPL_VERSION_MAJOR * 10000 + MPL_VERSION_MINOR * 100 + MPL_VERSION_PATCH);
    char s[32];
    snprintf(s, sizeof s, "%d.%d.%d", MPL_VERSION_MAJOR, MPL_VERSION_MINOR, MPL_VERSION_PATCH);
    assert_string_equal(s, MPL_VERSION_STRING);
    int major, minor, patch;
    char tail;
    assert_int_equal(sscanf(mpl_version(), "%d.%d.%d%c", &major, &minor, &patch, &tail), 3);
    assert_int_equal(major * 10000 + minor * 100 + patch, mpl_version_number());
    /* Two digits each for MINOR and PATCH keep the number's order the releases' order. */
    assert_true(MPL_VERSION_MINOR >= 0 && MPL_VERSION_MINOR < 100);
    assert_true(MPL_VERSION_PATCH >= 0 && MPL_VERSION_PATCH < 100);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(number_matches_library),
        cmocka_unit_test(number_matches_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

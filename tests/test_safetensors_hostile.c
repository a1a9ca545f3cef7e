/*
 * test_safetensors_hostile.c -- malformed safetensors files, configs and
 * checkpoint folders: each must give a clear error (status, file and problem
 * named), never a crash or a read outside the file (run under ASan too).
 * Issue 17: named pipes in place of any file the folder is read from (refused at once, never
 * waited on), g_idx values checked at open (so inspect's verdict is apply's; groups of unequal
 * size choose the reference kernel in both), and the forward layer order with the rule it used.
 */
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "model/hfconfig.h"
#include "model/safetensors.h"
#include "mplinear.h"

/* ---- building files ---- */

/* A whole safetensors image: 8-byte length, header, data (data_len bytes of a pattern). */
static uint8_t *image(const char *header, size_t data_len, size_t *size) {
    size_t hl = strlen(header);
    *size = 8 + hl + data_len;
    uint8_t *b = malloc(*size);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    for (size_t i = 0; i < data_len; i++) b[8 + hl + i] = (uint8_t)(i * 7 + 1);
    return b;
}

/* Parses an image from an exactly-sized heap copy (so ASan sees any overread). */
static mpl_status parse(const uint8_t *b, size_t n, mpl_st_file **f) {
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, b, n);
    mpl_status st = mpl_st_parse("t.safetensors", copy, n, f);
    if (st == MPL_OK) {
        /* Touch every tensor's bytes: all must lie inside the copy. */
        unsigned sum = 0;
        for (size_t i = 0; i < (*f)->count; i++)
            for (uint64_t j = 0; j < (*f)->tensors[i].end - (*f)->tensors[i].begin; j++)
                sum += ((const uint8_t *)(*f)->tensors[i].data)[j];
        (void)sum;
        mpl_st_close(*f);
        *f = NULL;
    }
    free(copy);
    return st;
}

static void expect_bad_header(const char *header, size_t data_len, const char *needle) {
    size_t n;
    uint8_t *b = image(header, data_len, &n);
    mpl_st_file *f = NULL;
    mpl_status st = parse(b, n, &f);
    free(b);
    if (st != MPL_ERR_FORMAT)
        fail_msg("header %s: status %d (want MPL_ERR_FORMAT), message '%s'", header, (int)st, mpl_last_error());
    assert_null(f);
    if (!strstr(mpl_last_error(), "t.safetensors") || !strstr(mpl_last_error(), needle))
        fail_msg("header %s: message '%s' lacks the file name or '%s'", header, mpl_last_error(), needle);
}

static void valid_file(void **state) {
    (void)state;
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[16,22]},"
                    "\"a\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                    "\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[22,22]},"
                    "\"q\":{\"dtype\":\"F4\",\"shape\":[4],\"data_offsets\":[22,24]}}  ";
    size_t n;
    uint8_t *b = image(h, 24, &n);
    mpl_st_file *f = NULL;
    assert_int_equal(mpl_st_parse("ok.safetensors", b, n, &f), MPL_OK);
    assert_int_equal(f->count, 4);
    const mpl_st_tensor *t = mpl_st_find(f, "a");
    assert_non_null(t);
    assert_int_equal(t->dtype, MPL_DTYPE_I32);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(mpl_st_numel(t), 4);
    assert_ptr_equal(t->data, b + 8 + strlen(h));
    assert_int_equal(mpl_st_find(f, "b")->dtype, MPL_DTYPE_F16);
    assert_int_equal(mpl_st_find(f, "q")->dtype, MPL_DTYPE_NONE);
    assert_int_equal(mpl_st_numel(mpl_st_find(f, "z")), 0);
    assert_null(mpl_st_find(f, "missing"));
    mpl_st_close(f);
    mpl_st_close(NULL);
    free(b);
    /* Only metadata, no tensors, no data: valid. */
    b = image("{\"__metadata__\":{}}", 0, &n);
    assert_int_equal(mpl_st_parse("e.safetensors", b, n, &f), MPL_OK);
    assert_int_equal(f->count, 0);
    mpl_st_close(f);
    free(b);
}

static void length_field(void **state) {
    (void)state;
    mpl_st_file *f = NULL;
    uint8_t tiny[5] = {1, 0, 0, 0, 0};
    assert_int_equal(parse(tiny, 0, &f), MPL_ERR_FORMAT);
    assert_non_null(strstr(mpl_last_error(), "too short"));
    assert_int_equal(parse(tiny, 5, &f), MPL_ERR_FORMAT);
    /* A huge header length: refused by the bound before any allocation. */
    uint8_t huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'};
    assert_int_equal(parse(huge, sizeof huge, &f), MPL_ERR_FORMAT);
    assert_non_null(strstr(mpl_last_error(), "exceeds the limit"));
    uint8_t big[16] = {0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'}; /* 100,000,000: within the limit, past the end */
    assert_int_equal(parse(big, sizeof big, &f), MPL_ERR_FORMAT);
    assert_non_null(strstr(mpl_last_error(), "runs past the end"));
    uint8_t past[16] = {9, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
    assert_int_equal(parse(past, sizeof past, &f), MPL_ERR_FORMAT);
    uint8_t one[9] = {1, 0, 0, 0, 0, 0, 0, 0, '{'};
    assert_int_equal(parse(one, sizeof one, &f), MPL_ERR_FORMAT);
}

static void json_level(void **state) {
    (void)state;
    expect_bad_header("[1,2]  ", 0, "start with '{'");
    expect_bad_header("{\"a\":1", 0, "not valid JSON");
    expect_bad_header("{\"a\":{}} x", 0, "after the JSON object");
    expect_bad_header("{} {}", 0, "after the JSON object");
    expect_bad_header("{\"a\xff\":1}", 0, "not valid UTF-8");
    expect_bad_header("{\"\xc0\x80\":1}", 0, "not valid UTF-8"); /* overlong NUL */
    expect_bad_header("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8"); /* surrogate */
    expect_bad_header("{\"a\\u0000b\":1}", 0, "escaped NUL");
    {
        /* A raw NUL inside the header. */
        size_t n;
        uint8_t *b = image("{\"aXb\":1}", 0, &n);
        b[8 + 3] = 0;
        mpl_st_file *f = NULL;
        assert_int_equal(parse(b, n, &f), MPL_ERR_FORMAT);
        assert_non_null(strstr(mpl_last_error(), "NUL"));
        free(b);
    }
    /* Nesting deeper than any valid header. */
    char deep[256] = "{\"a\":";
    for (int i = 0; i < 40; i++) strcat(deep, "[");
    for (int i = 0; i < 40; i++) strcat(deep, "]");
    strcat(deep, "}");
    expect_bad_header(deep, 0, "not valid JSON");
    expect_bad_header("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__['k']");
    expect_bad_header("{\"__metadata__\":[]}", 0, "__metadata__ is a JSON array");
    expect_bad_header("{\"\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, "empty name");
}

static void tensor_entries(void **state) {
    (void)state;
    expect_bad_header("{\"w\":5}", 0, "tensor 'w'");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2]}}", 4, "missing field 'data_offsets'");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"data_offsets\":[0,4]}}", 4, "missing field 'shape'");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4],\"x\":1}}", 4, "unknown field 'x'");
    expect_bad_header("{\"w\":{\"dtype\":\"F17\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'F17'");
    expect_bad_header("{\"w\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "dtype is not a string");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[-2],\"data_offsets\":[0,4]}}", 4, "negative");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2.0],\"data_offsets\":[0,4]}}", 4, "not an integer");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":2,\"data_offsets\":[0,4]}}", 4, "shape is not an array");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}",
                      4, "overflows");
    expect_bad_header("{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,4]}}", 4,
                      "overflows");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[99999999999999999999999],\"data_offsets\":[0,4]}}", 4,
                      "overflows");
    expect_bad_header("{\"w\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, "whole bytes");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0]}}", 4, "[begin, end]");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,-4]}}", 4, "non-negative");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,0]}}", 4, "begin is past end");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 3, "run past the data section");
    expect_bad_header("{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,18446744073709551615]}}", 4,
                      "run past the data section");
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "need 8");
    expect_bad_header("{\"w\":{\"dtype\":\"I32\",\"shape\":[3,2],\"data_offsets\":[0,16]}}", 16, "need 24");
}

static void tiling(void **state) {
    (void)state;
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
                      6, "overlap");
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                      4, "overlap");
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[6,8]}}",
                      8, "belong to no tensor");
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 9, "trailing bytes");
    expect_bad_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                      "\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,2]}}",
                      4, "overlap");
}

/* ---- files and folders ---- */

static char tmpdir[256];

static int setup_dir(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mpl-hostile-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *name, const void *data, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void write_text(const char *name, const char *text) { write_file(name, text, strlen(text)); }

static void remove_file(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    unlink(p);
}

/* A small, valid GPTQ layer "m.l" (k 64, n 8, group 32, f16 scales) as a safetensors image. */
static uint8_t *gptq_image(size_t *n, const char *scales_dtype, const char *qweight_shape) {
    char h[1024];
    snprintf(h, sizeof h,
             "{\"m.l.qweight\":{\"dtype\":\"I32\",\"shape\":%s,\"data_offsets\":[0,256]},"
             "\"m.l.scales\":{\"dtype\":\"%s\",\"shape\":[2,8],\"data_offsets\":[256,288]},"
             "\"m.l.qzeros\":{\"dtype\":\"I32\",\"shape\":[2,1],\"data_offsets\":[288,296]}}",
             qweight_shape, scales_dtype);
    uint8_t *b = image(h, 296, n);
    /* Scales: f16 1.0 (0x3c00), so the layer's values are plain. */
    size_t d = *n - 296;
    for (int i = 0; i < 16; i++) b[d + 256 + 2 * i] = 0x00, b[d + 256 + 2 * i + 1] = 0x3c;
    return b;
}

static const char *gptq_config =
    "{\"torch_dtype\":\"float16\",\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,"
    "\"desc_act\":false,\"sym\":true}}";

static void expect_open(mpl_status want, const char *needle1, const char *needle2) {
    mpl_model *m = NULL;
    mpl_status st = mpl_model_open(tmpdir, &m);
    if (st != want)
        fail_msg("open: status %d (%s), want %d; message '%s'", (int)st, mpl_status_string(st), (int)want,
                 mpl_last_error());
    if (st == MPL_OK) {
        mpl_model_close(m);
        return;
    }
    assert_null(m);
    if ((needle1 && !strstr(mpl_last_error(), needle1)) || (needle2 && !strstr(mpl_last_error(), needle2)))
        fail_msg("open: message '%s' lacks '%s' / '%s'", mpl_last_error(), needle1 ? needle1 : "",
                 needle2 ? needle2 : "");
}

static void folder_baseline(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = gptq_image(&n, "F16", "[8,8]");
    write_file("model.safetensors", b, n);
    write_text("config.json", gptq_config);
    expect_open(MPL_OK, NULL, NULL);
    mpl_model *m;
    assert_int_equal(mpl_model_open(tmpdir, &m), MPL_OK);
    assert_int_equal(mpl_model_layer_count(m), 1);
    mpl_layer *l;
    assert_int_equal(mpl_model_layer_create(m, 0, NULL, MPL_ACT_F32, &l), MPL_OK);
    mpl_layer_destroy(l);
    mpl_model_close(m);
    /* Truncated by one byte, by half, to the header only. */
    write_file("model.safetensors", b, n - 1);
    expect_open(MPL_ERR_FORMAT, "model.safetensors", "truncated");
    write_file("model.safetensors", b, n / 2);
    expect_open(MPL_ERR_FORMAT, "model.safetensors", NULL);
    write_file("model.safetensors", b, 4);
    expect_open(MPL_ERR_FORMAT, "model.safetensors", "too short");
    free(b);
    /* Dtype and shape mismatches against the config. */
    b = gptq_image(&n, "U8", "[8,8]");
    /* U8 [2,8] is 16 bytes but the range is 32: a header-level size error. */
    write_file("model.safetensors", b, n);
    expect_open(MPL_ERR_FORMAT, "model.safetensors", "m.l.scales");
    free(b);
    {
        const char *h = "{\"m.l.qweight\":{\"dtype\":\"I32\",\"shape\":[8,8],\"data_offsets\":[0,256]},"
                        "\"m.l.scales\":{\"dtype\":\"I32\",\"shape\":[2,4],\"data_offsets\":[256,288]}}";
        uint8_t *c = image(h, 288, &n);
        write_file("model.safetensors", c, n);
        free(c);
        expect_open(MPL_ERR_FORMAT, "m.l.scales", "dtype I32");
    }
    b = gptq_image(&n, "F16", "[4,16]"); /* qweight [4,16]: k 32, n 16; scales [2,8] do not fit */
    write_file("model.safetensors", b, n);
    expect_open(MPL_ERR_FORMAT, "m.l.scales", "expected [1, 16]");
    free(b);
    {
        const char *h = "{\"m.l.qweight\":{\"dtype\":\"I32\",\"shape\":[8,8],\"data_offsets\":[0,256]}}";
        uint8_t *c = image(h, 256, &n);
        write_file("model.safetensors", c, n);
        free(c);
        expect_open(MPL_ERR_FORMAT, "m.l.scales", "missing");
    }
    {
        const char *h = "{\"m.l.qweight\":{\"dtype\":\"I32\",\"shape\":[8,8,1],\"data_offsets\":[0,256]}}";
        uint8_t *c = image(h, 256, &n);
        write_file("model.safetensors", c, n);
        free(c);
        expect_open(MPL_ERR_FORMAT, "m.l.qweight", "2-D");
    }
    {
        const char *h = "{\"x.weight\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";
        uint8_t *c = image(h, 4, &n);
        write_file("model.safetensors", c, n);
        free(c);
        expect_open(MPL_ERR_FORMAT, "no quantized linear layer", NULL);
    }
    remove_file("model.safetensors");
    expect_open(MPL_ERR_IO, "no *.safetensors", NULL);
}

static void folder_configs(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = gptq_image(&n, "F16", "[8,8]");
    write_file("model.safetensors", b, n);
    free(b);
    remove_file("config.json");
    expect_open(MPL_ERR_IO, "config.json", "cannot open");
    write_text("config.json", "{\"torch_dtype\":\"float16\",");
    expect_open(MPL_ERR_FORMAT, "config.json", "not valid JSON");
    write_text("config.json", "[]");
    expect_open(MPL_ERR_FORMAT, "config.json", "must be an object");
    write_text("config.json", "{\"torch_dtype\":\"float16\"}");
    expect_open(MPL_ERR_FORMAT, "config.json", "not a quantized checkpoint");
    write_text("config.json", "{\"quantization_config\":{\"quant_method\":\"bitsandbytes\"}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "'bitsandbytes'");
    write_text("config.json", "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":5,\"group_size\":32}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "bits = 5");
    write_text("config.json", "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":\"4\",\"group_size\":32}}");
    expect_open(MPL_ERR_FORMAT, "config.json", "quantization_config.bits");
    write_text("config.json", "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":0}}");
    expect_open(MPL_ERR_FORMAT, "config.json", "group_size = 0");
    write_text("config.json",
               "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,\"checkpoint_format\":"
               "\"marlin\"}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "'marlin'");
    write_text("config.json", "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":48}}");
    expect_open(MPL_ERR_FORMAT, "m.l", "group_size 48");
    write_text("config.json", "{\"quantization_config\":{\"quant_method\":\"awq\",\"bits\":4,\"group_size\":32,"
                              "\"version\":\"gemv\"}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "'gemv'");
    write_text("config.json", "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":"
                              "\"pack-quantized\",\"config_groups\":{}}}");
    expect_open(MPL_ERR_FORMAT, "config.json", "config_groups");
    write_text("config.json",
               "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\","
               "\"config_groups\":{\"g\":{\"targets\":[\"Linear\"],\"weights\":{\"num_bits\":8,\"type\":\"float\"}}}}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "float-quantized");
    write_text("config.json",
               "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\","
               "\"config_groups\":{\"g\":{\"targets\":[\"Linear\"],\"weights\":{\"num_bits\":4,\"strategy\":\"tensor\"}}}}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "strategy 'tensor'");
    write_text("config.json",
               "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\","
               "\"config_groups\":{\"g\":{\"targets\":[\"re:[\"],\"weights\":{\"num_bits\":4,\"group_size\":32}}}}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "re:[");
    /* Patterns that could make regcomp/regexec slow (found by fuzz_hfconfig) are refused. */
    write_text("config.json",
               "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\","
               "\"config_groups\":{\"g\":{\"targets\":[\"re:.*\\\\*******.gate$\"],\"weights\":{\"num_bits\":4,"
               "\"group_size\":32}}}}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "quantifier right after another");
    write_text("config.json",
               "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\","
               "\"config_groups\":{\"g\":{\"targets\":[\"re:(a*)\\\\1\"],\"weights\":{\"num_bits\":4,"
               "\"group_size\":32}}}}}");
    expect_open(MPL_ERR_UNSUPPORTED, "config.json", "back-reference");
    write_text("config.json",
               "{\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\","
               "\"config_groups\":{\"g\":{\"targets\":[\"Linear\"],\"weights\":{\"num_bits\":4,\"group_size\":32},"
               "\"input_activations\":{\"num_bits\":8,\"type\":\"float\",\"dynamic\":true}}}}}");
    expect_open(MPL_ERR_UNSUPPORTED, "input_activations", "W4A8");
    /* quantize_config.json beside a config.json without quantization_config (AutoGPTQ). */
    write_text("config.json", "{\"torch_dtype\":\"float16\"}");
    write_text("quantize_config.json", "{\"bits\":4,\"group_size\":32,\"desc_act\":false,\"sym\":true}");
    expect_open(MPL_OK, NULL, NULL);
    write_text("quantize_config.json", "{\"bits\":4}");
    expect_open(MPL_ERR_FORMAT, "quantize_config.json", "group_size is missing");
    remove_file("quantize_config.json");
}

static void folder_shards(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = gptq_image(&n, "F16", "[8,8]");
    remove_file("model.safetensors");
    write_file("model-00001-of-00001.safetensors", b, n);
    free(b);
    write_text("config.json", gptq_config);
    const char *idx_ok = "{\"metadata\":{},\"weight_map\":{\"m.l.qweight\":\"model-00001-of-00001.safetensors\","
                         "\"m.l.scales\":\"model-00001-of-00001.safetensors\","
                         "\"m.l.qzeros\":\"model-00001-of-00001.safetensors\"}}";
    write_text("model.safetensors.index.json", idx_ok);
    expect_open(MPL_OK, NULL, NULL);
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"m.l.qweight\":\"model-00001-of-00002.safetensors\",\"m.l.scales\":"
               "\"model-00002-of-00002.safetensors\"}}");
    expect_open(MPL_ERR_IO, "-of-00002.safetensors", "is missing");
    write_text("model.safetensors.index.json", "{\"weight_map\":{\"m.l.qweight\":\"../x.safetensors\"}}");
    expect_open(MPL_ERR_FORMAT, "../x.safetensors", "plain");
    write_text("model.safetensors.index.json", "{\"weight_map\":{\"m.l.nope\":\"model-00001-of-00001.safetensors\"}}");
    expect_open(MPL_ERR_FORMAT, "m.l.nope", "no such tensor");
    write_text("model.safetensors.index.json", "{\"weight_map\":[]}");
    expect_open(MPL_ERR_FORMAT, "index.json", "weight_map");
    write_text("model.safetensors.index.json", "{\"weight_map\":{\"m.l.qweight\":5}}");
    expect_open(MPL_ERR_FORMAT, "index.json", "not a string");
    /* The same tensor in two shards. */
    remove_file("model.safetensors.index.json");
    b = gptq_image(&n, "F16", "[8,8]");
    write_file("model-b.safetensors", b, n);
    free(b);
    expect_open(MPL_ERR_FORMAT, "m.l.qweight", "one shard");
    remove_file("model-b.safetensors");
    remove_file("model-00001-of-00001.safetensors");
}

static void config_parser(void **state) {
    (void)state;
    mpl_hf_config c;
    int hq;
    const char *ct = "{\"dtype\":\"bfloat16\",\"quantization_config\":{\"quant_method\":\"compressed-tensors\","
                     "\"format\":\"mixed-precision\",\"quantization_status\":\"compressed\",\"config_groups\":{"
                     "\"a\":{\"format\":\"pack-quantized\",\"targets\":[\"re:.*\\\\.mlp\\\\.\\\\d+$\",\"x.y\"],"
                     "\"weights\":{\"num_bits\":4,\"type\":\"int\",\"symmetric\":false,\"strategy\":\"group\","
                     "\"group_size\":64,\"actorder\":\"group\"}},"
                     "\"b\":{\"format\":\"int-quantized\",\"targets\":[\"Linear\"],\"weights\":{\"num_bits\":4,"
                     "\"strategy\":\"channel\"},\"input_activations\":{\"num_bits\":8,\"type\":\"int\",\"symmetric\":true,"
                     "\"dynamic\":true,\"strategy\":\"token\"}}},\"ignore\":[\"lm_head\",\"re:.*gate$\"]}}";
    assert_int_equal(mpl_hf_config_parse("c.json", ct, strlen(ct), &c, &hq), MPL_OK);
    assert_int_equal(hq, 1);
    assert_int_equal(c.act, MPL_ACT_BF16);
    assert_int_equal(c.ngroups, 2);
    const mpl_hf_scheme *s = mpl_hf_config_match(&c, "m.mlp.12");
    assert_non_null(s);
    assert_int_equal(s->wtype, MPL_WTYPE_UINT4);
    assert_int_equal(s->group_size, 64);
    assert_int_equal(s->act_order, 1);
    assert_int_equal(s->layout, MPL_LAYOUT_CT);
    s = mpl_hf_config_match(&c, "x.y"); /* exact name beats the class target */
    assert_int_equal(s->layout, MPL_LAYOUT_CT);
    s = mpl_hf_config_match(&c, "m.mlp.12x"); /* regex needs the end; the class target takes it */
    assert_int_equal(s->layout, MPL_LAYOUT_CT_INT);
    assert_int_equal(s->mode, MPL_MODE_W4A8);
    assert_int_equal(s->wtype, MPL_WTYPE_INT4);
    assert_null(mpl_hf_config_match(&c, "lm_head"));
    assert_null(mpl_hf_config_match(&c, "a.b.gate"));
    mpl_hf_config_free(&c);
    mpl_hf_config_free(&c);
    const char *awq = "{\"quantization_config\":{\"quant_method\":\"awq\",\"bits\":4,\"group_size\":128,"
                      "\"zero_point\":true,\"version\":\"GEMM\",\"modules_to_not_convert\":[\"visual\"]}}";
    assert_int_equal(mpl_hf_config_parse("c.json", awq, strlen(awq), &c, &hq), MPL_OK);
    assert_int_equal(c.act, 0);
    assert_null(mpl_hf_config_match(&c, "model.visual.proj"));
    assert_int_equal(mpl_hf_config_match(&c, "model.layers.0.q")->wtype, MPL_WTYPE_UINT4);
    mpl_hf_config_free(&c);
    const char *legacy = "{\"w_bit\":4,\"q_group_size\":64,\"zero_point\":true,\"version\":\"gemm\"}";
    memset(&c, 0, sizeof c);
    c.act = MPL_ACT_F16;
    assert_int_equal(mpl_hf_quantize_config_parse("quant_config.json", legacy, strlen(legacy), &c), MPL_OK);
    assert_int_equal(c.method, MPL_HF_AWQ);
    assert_int_equal(c.scheme.group_size, 64);
    assert_int_equal(c.act, MPL_ACT_F16);
    mpl_hf_config_free(&c);
    const char *gq = "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":8,\"group_size\":-1,"
                     "\"desc_act\":true,\"sym\":false,\"checkpoint_format\":\"gptq_v2\"}}";
    assert_int_equal(mpl_hf_config_parse("c.json", gq, strlen(gq), &c, &hq), MPL_OK);
    assert_int_equal(c.scheme.wtype, MPL_WTYPE_UINT8);
    assert_int_equal(c.scheme.act_order, 0); /* desc_act with one group is normalised away */
    assert_int_equal(c.scheme.layout, MPL_LAYOUT_GPTQ_V2);
    mpl_hf_config_free(&c);
}

/* ---- issue 17: named pipes never hang an open; g_idx checked at open; forward layer order ---- */

static void alarm_fired(int sig) {
    (void)sig;
    static const char msg[] = "test_safetensors_hostile: an open blocked on a named pipe for 20 s\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
}

static void make_fifo(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
}

/* Every file the model module reads may be a named pipe nobody writes to: open must refuse it at once
 * (before the fix, open() on the pipe waited for a writer forever). */
static void folder_fifos(void **state) {
    (void)state;
    signal(SIGALRM, alarm_fired);
    alarm(20);
    size_t n;
    uint8_t *b = gptq_image(&n, "F16", "[8,8]");
    write_text("config.json", gptq_config);
    make_fifo("model.safetensors");
    expect_open(MPL_ERR_IO, "model.safetensors", "named pipe");
    remove_file("model.safetensors");
    write_file("model.safetensors", b, n);
    expect_open(MPL_OK, NULL, NULL);
    make_fifo("config.json");
    expect_open(MPL_ERR_IO, "config.json", "not a regular file");
    remove_file("config.json");
    /* config.json without quantization_config: quantize_config.json beside it is read, and may be a pipe */
    write_text("config.json", "{\"torch_dtype\":\"float16\"}");
    make_fifo("quantize_config.json");
    expect_open(MPL_ERR_IO, "quantize_config.json", "not a regular file");
    remove_file("quantize_config.json");
    write_text("config.json", gptq_config);
    make_fifo("model.safetensors.index.json");
    expect_open(MPL_ERR_IO, "model.safetensors.index.json", "not a regular file");
    remove_file("model.safetensors.index.json");
    /* a shard named by the index that is a pipe */
    remove_file("model.safetensors");
    make_fifo("model-00001-of-00001.safetensors");
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"m.l.qweight\":\"model-00001-of-00001.safetensors\"}}");
    expect_open(MPL_ERR_IO, "model-00001-of-00001.safetensors", "named pipe");
    remove_file("model.safetensors.index.json");
    remove_file("model-00001-of-00001.safetensors");
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    free(b);
}

/*
 * A GPTQ image with one small layer (k 64, n 8, group 32: qweight [8,8], f16 scales 1.0 [2,8],
 * qzeros [2,1]) per name, in the order given, plus g_idx [64] (int32, or int64 when wide) when
 * gidx is not NULL.
 */
static uint8_t *layers_image(const char *const *names, int count, const int64_t *gidx, int wide, size_t *n) {
    size_t gbytes = gidx ? (wide ? 512 : 256) : 0, per = 296 + gbytes;
    char *h = malloc(4096 + (size_t)count * 512);
    size_t u = (size_t)sprintf(h, "{");
    for (int i = 0; i < count; i++) {
        size_t o = (size_t)i * per;
        u += (size_t)sprintf(h + u,
                             "%s\"%s.qweight\":{\"dtype\":\"I32\",\"shape\":[8,8],\"data_offsets\":[%zu,%zu]},"
                             "\"%s.scales\":{\"dtype\":\"F16\",\"shape\":[2,8],\"data_offsets\":[%zu,%zu]},"
                             "\"%s.qzeros\":{\"dtype\":\"I32\",\"shape\":[2,1],\"data_offsets\":[%zu,%zu]}",
                             i ? "," : "", names[i], o, o + 256, names[i], o + 256, o + 288, names[i], o + 288, o + 296);
        if (gidx)
            u += (size_t)sprintf(h + u, ",\"%s.g_idx\":{\"dtype\":\"%s\",\"shape\":[64],\"data_offsets\":[%zu,%zu]}",
                                 names[i], wide ? "I64" : "I32", o + 296, o + 296 + gbytes);
    }
    sprintf(h + u, "}");
    uint8_t *b = image(h, per * (size_t)count, n);
    size_t d = *n - per * (size_t)count;
    for (int i = 0; i < count; i++) {
        uint8_t *L = b + d + (size_t)i * per;
        for (int j = 0; j < 16; j++) L[256 + 2 * j] = 0x00, L[256 + 2 * j + 1] = 0x3c;
        for (int j = 0; gidx && j < 64; j++) {
            if (wide) {
                memcpy(L + 296 + 8 * j, &gidx[j], 8);
            } else {
                int32_t v = (int32_t)gidx[j];
                memcpy(L + 296 + 4 * j, &v, 4);
            }
        }
    }
    free(h);
    return b;
}

static const char *gptq_actorder_config =
    "{\"torch_dtype\":\"float16\",\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,"
    "\"desc_act\":true,\"sym\":true}}";

/* mpl_model_layer_choose (what inspect prints) must name the kernel create runs, or fail as create does. */
static void expect_choose_matches_create(int i) {
    mpl_model *m;
    assert_int_equal(mpl_model_open(tmpdir, &m), MPL_OK);
    const char *chosen = NULL;
    assert_int_equal(mpl_model_layer_choose(m, i, NULL, 0, &chosen), MPL_OK);
    mpl_layer *l = NULL;
    assert_int_equal(mpl_model_layer_create(m, i, NULL, 0, &l), MPL_OK);
    assert_string_equal(chosen, mpl_layer_kernel(l));
    mpl_layer_destroy(l);
    mpl_model_close(m);
}

/* inspect said OK for g_idx values apply refused (issue 17, item 3): now open refuses them. */
static void folder_g_idx(void **state) {
    (void)state;
    const char *name[] = {"model.layers.0.mlp.down_proj"};
    int64_t g[64];
    size_t n;
    write_text("config.json", gptq_actorder_config);
    for (int wide = 0; wide < 2; wide++) {
        /* valid and uniform (32 channels per group, shuffled) */
        for (int j = 0; j < 64; j++) g[j] = (j * 37 % 64) / 32;
        uint8_t *b = layers_image(name, 1, g, wide, &n);
        write_file("model.safetensors", b, n);
        free(b);
        expect_open(MPL_OK, NULL, NULL);
        expect_choose_matches_create(0);
        /* negative */
        g[5] = -1;
        b = layers_image(name, 1, g, wide, &n);
        write_file("model.safetensors", b, n);
        free(b);
        expect_open(MPL_ERR_FORMAT, "g_idx[5] = -1", "must be in 0..1");
        /* past the last group */
        g[5] = 0;
        g[63] = 2;
        b = layers_image(name, 1, g, wide, &n);
        write_file("model.safetensors", b, n);
        free(b);
        expect_open(MPL_ERR_FORMAT, "g_idx[63] = 2", "model.layers.0.mlp.down_proj.g_idx");
        /* groups of unequal size (63 + 1): valid, but only the reference kernel runs it, and inspect must say so */
        for (int j = 0; j < 64; j++) g[j] = j == 63;
        b = layers_image(name, 1, g, wide, &n);
        write_file("model.safetensors", b, n);
        free(b);
        expect_open(MPL_OK, NULL, NULL);
        expect_choose_matches_create(0);
        mpl_model *m;
        assert_int_equal(mpl_model_open(tmpdir, &m), MPL_OK);
        const char *chosen = NULL;
        assert_int_equal(mpl_model_layer_choose(m, 0, NULL, 0, &chosen), MPL_OK);
        assert_string_equal(chosen, "ref");
        mpl_model_close(m);
    }
    remove_file("model.safetensors");
}

static void expect_order(const char *const *want, int count, const char *rule) {
    mpl_model *m;
    assert_int_equal(mpl_model_open(tmpdir, &m), MPL_OK);
    assert_int_equal(mpl_model_layer_count(m), count);
    for (int i = 0; i < count; i++) {
        mpl_model_layer_info li;
        assert_int_equal(mpl_model_layer_get(m, i, &li), MPL_OK);
        if (strcmp(li.name, want[i]) != 0)
            fail_msg("layer %d is '%s', want '%s' (rule: %s)", i, li.name, want[i], mpl_model_layer_order(m));
    }
    if (!strstr(mpl_model_layer_order(m), rule))
        fail_msg("order rule '%s' lacks '%s'", mpl_model_layer_order(m), rule);
    mpl_model_close(m);
}

/* "Model order" was alphabetical (issue 17, item 4): now the forward pass's. */
static void folder_layer_order(void **state) {
    (void)state;
    size_t n;
    /* Stored alphabetically, as safetensors and the index usually are. */
    const char *llama[] = {"lm_head",
                           "model.layers.10.mlp.down_proj",
                           "model.layers.10.self_attn.q_proj",
                           "model.layers.2.mlp.down_proj",
                           "model.layers.2.mlp.gate_proj",
                           "model.layers.2.mlp.up_proj",
                           "model.layers.2.self_attn.k_proj",
                           "model.layers.2.self_attn.o_proj",
                           "model.layers.2.self_attn.q_proj",
                           "model.layers.2.self_attn.v_proj"};
    const char *llama_fwd[] = {"model.layers.2.self_attn.q_proj",  "model.layers.2.self_attn.k_proj",
                               "model.layers.2.self_attn.v_proj",  "model.layers.2.self_attn.o_proj",
                               "model.layers.2.mlp.gate_proj",     "model.layers.2.mlp.up_proj",
                               "model.layers.2.mlp.down_proj",     "model.layers.10.self_attn.q_proj",
                               "model.layers.10.mlp.down_proj",    "lm_head"};
    uint8_t *b = layers_image(llama, 10, NULL, 0, &n);
    write_file("model.safetensors", b, n);
    free(b);
    write_text("config.json", "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"torch_dtype\":"
                              "\"float16\",\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,"
                              "\"group_size\":32,\"desc_act\":false,\"sym\":true}}");
    expect_order(llama_fwd, 10, "LlamaForCausalLM");
    /* model_type alone names the family too */
    write_text("config.json", "{\"model_type\":\"qwen2\",\"torch_dtype\":\"float16\",\"quantization_config\":{"
                              "\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,\"desc_act\":false,\"sym\":true}}");
    expect_order(llama_fwd, 10, "model_type 'qwen2'");
    /* Mixtral experts: each expert's w1, w3, w2 together, experts in index order, attention first */
    const char *moe[] = {"model.layers.0.block_sparse_moe.experts.1.w1", "model.layers.0.block_sparse_moe.experts.0.w2",
                         "model.layers.0.block_sparse_moe.experts.0.w3", "model.layers.0.block_sparse_moe.experts.0.w1",
                         "model.layers.0.self_attn.o_proj"};
    const char *moe_fwd[] = {"model.layers.0.self_attn.o_proj", "model.layers.0.block_sparse_moe.experts.0.w1",
                             "model.layers.0.block_sparse_moe.experts.0.w3",
                             "model.layers.0.block_sparse_moe.experts.0.w2",
                             "model.layers.0.block_sparse_moe.experts.1.w1"};
    b = layers_image(moe, 5, NULL, 0, &n);
    write_file("model.safetensors", b, n);
    free(b);
    write_text("config.json", "{\"architectures\":[\"MixtralForCausalLM\"],\"torch_dtype\":\"float16\","
                              "\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,"
                              "\"desc_act\":false,\"sym\":true}}");
    expect_order(moe_fwd, 5, "llama family");
    /* BERT: attention.output.dense before intermediate.dense before output.dense */
    const char *bert[] = {"encoder.layer.0.attention.output.dense", "encoder.layer.0.attention.self.key",
                          "encoder.layer.0.attention.self.query", "encoder.layer.0.intermediate.dense",
                          "encoder.layer.0.output.dense"};
    const char *bert_fwd[] = {"encoder.layer.0.attention.self.query", "encoder.layer.0.attention.self.key",
                              "encoder.layer.0.attention.output.dense", "encoder.layer.0.intermediate.dense",
                              "encoder.layer.0.output.dense"};
    b = layers_image(bert, 5, NULL, 0, &n);
    write_file("model.safetensors", b, n);
    free(b);
    write_text("config.json", "{\"architectures\":[\"BertModel\"],\"torch_dtype\":\"float16\",\"quantization_config\":"
                              "{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,\"desc_act\":false,\"sym\":true}}");
    expect_order(bert_fwd, 5, "bert family");
    /* Unknown architecture: the index's order within a block (block index still first) */
    remove_file("model.safetensors");
    const char *odd[] = {"net.blocks.1.zeta", "net.blocks.0.beta", "net.blocks.0.alpha"};
    b = layers_image(odd, 3, NULL, 0, &n);
    write_file("model-00001-of-00001.safetensors", b, n);
    free(b);
    char idx[2048];
    size_t u = (size_t)snprintf(idx, sizeof idx, "{\"weight_map\":{");
    const char *in_index[] = {"net.blocks.1.zeta", "net.blocks.0.beta", "net.blocks.0.alpha"};
    for (int i = 0; i < 3; i++)
        u += (size_t)snprintf(idx + u, sizeof idx - u,
                              "%s\"%s.qweight\":\"model-00001-of-00001.safetensors\",\"%s.scales\":\"model-00001-of-"
                              "00001.safetensors\",\"%s.qzeros\":\"model-00001-of-00001.safetensors\"",
                              i ? "," : "", in_index[i], in_index[i], in_index[i]);
    snprintf(idx + u, sizeof idx - u, "}}");
    write_text("model.safetensors.index.json", idx);
    write_text("config.json", "{\"architectures\":[\"NovelForCausalLM\"],\"torch_dtype\":\"float16\","
                              "\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,"
                              "\"desc_act\":false,\"sym\":true}}");
    const char *odd_idx[] = {"net.blocks.0.beta", "net.blocks.0.alpha", "net.blocks.1.zeta"};
    expect_order(odd_idx, 3, "model.safetensors.index.json");
    /* Neither: natural name order */
    remove_file("model.safetensors.index.json");
    const char *odd_nat[] = {"net.blocks.0.alpha", "net.blocks.0.beta", "net.blocks.1.zeta"};
    expect_order(odd_nat, 3, "natural name order");
    remove_file("model-00001-of-00001.safetensors");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_file),
        cmocka_unit_test(length_field),
        cmocka_unit_test(json_level),
        cmocka_unit_test(tensor_entries),
        cmocka_unit_test(tiling),
        cmocka_unit_test(config_parser),
        cmocka_unit_test(folder_baseline),
        cmocka_unit_test(folder_configs),
        cmocka_unit_test(folder_shards),
        cmocka_unit_test(folder_fifos),
        cmocka_unit_test(folder_g_idx),
        cmocka_unit_test(folder_layer_order),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}

/*
 * hfconfig.c -- config.json's quantization_config -> mpl_hf_scheme per layer.
 * Every field that changes how weights are stored or computed is read and
 * checked; a valid setting mplinear does not handle is MPL_ERR_UNSUPPORTED,
 * a malformed one MPL_ERR_FORMAT; both name the file, the field and the value.
 */
#include "hfconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/internal.h"
#include "safetensors.h"

#define FMT(...) mpl_set_error(MPL_ERR_FORMAT, __VA_ARGS__)
#define UNSUP(...) mpl_set_error(MPL_ERR_UNSUPPORTED, __VA_ARGS__)

/* config.json nests a few levels (config_groups.G.weights.field); 32 bounds json-c's recursion. */
#define HF_JSON_DEPTH 32

const char *mpl_hf_method_name(mpl_hf_method m) {
    switch (m) {
    case MPL_HF_GPTQ: return "gptq";
    case MPL_HF_AWQ: return "awq";
    case MPL_HF_CT: return "compressed-tensors";
    }
    return "unknown";
}

mpl_status mpl_read_small_file(const char *path, size_t max, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    /* O_NONBLOCK: a named pipe must not make open() wait for a writer; only regular files are read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return mpl_set_error(MPL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return mpl_set_error(MPL_ERR_IO, "%s: not a regular file (a named pipe, device or folder is not read)", path);
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        return FMT("%s: %lld bytes: larger than the %zu-byte limit for this file", path, (long long)sb.st_size, max);
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    size_t got = 0;
    int err = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r > 0) {
            got += (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else {
            err = r < 0 ? errno : 0;
            break;
        }
    }
    close(fd);
    if (got != n || err) {
        free(buf);
        return mpl_set_error(MPL_ERR_IO, "%s: read %zu of %zu bytes%s%s", path, got, n, err ? ": " : "",
                             err ? strerror(err) : "");
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return MPL_OK;
}

mpl_status mpl_json_parse_object(const char *label, const char *text, size_t len, json_object **out) {
    *out = NULL;
    if (len > MPL_HF_MAX_JSON) return FMT("%s: %zu bytes: larger than the %zu-byte limit", label, len, MPL_HF_MAX_JSON);
    size_t bad = mpl_utf8_check((const uint8_t *)text, len);
    if (bad != len)
        return FMT("%s: byte %zu (0x%02x) is %s", label, bad, (unsigned char)text[bad],
                   text[bad] == 0 ? "NUL: JSON text holds none" : "not valid UTF-8");
    json_tokener *tok = json_tokener_new_ex(HF_JSON_DEPTH);
    if (!tok) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    json_object *root = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!root || je != json_tokener_success) {
        json_object_put(root);
        return FMT("%s: not valid JSON: %s (near byte %zu)", label,
                   je == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(je), end);
    }
    for (size_t i = end; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') {
            json_object_put(root);
            return FMT("%s: data after the JSON value (byte %zu)", label, i);
        }
    if (json_object_get_type(root) != json_type_object) {
        json_object_put(root);
        return FMT("%s: top level is a JSON %s: must be an object", label,
                   json_type_to_name(json_object_get_type(root)));
    }
    *out = root;
    return MPL_OK;
}

/* ---- typed field access: absent (or null) fields keep the default ---- */

static json_object *field(json_object *o, const char *key) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v)) return NULL;
    return json_object_get_type(v) == json_type_null ? NULL : v;
}

static mpl_status get_int(const char *label, const char *ctx, json_object *o, const char *key, int64_t *out,
                          int *present) {
    json_object *v = field(o, key);
    if (present) *present = v != NULL;
    if (!v) return MPL_OK;
    if (json_object_get_type(v) != json_type_int)
        return FMT("%s: %s%s is a JSON %s: must be an integer", label, ctx, key,
                   json_type_to_name(json_object_get_type(v)));
    *out = json_object_get_int64(v);
    return MPL_OK;
}

static mpl_status get_bool(const char *label, const char *ctx, json_object *o, const char *key, int *out) {
    json_object *v = field(o, key);
    if (!v) return MPL_OK;
    if (json_object_get_type(v) != json_type_boolean)
        return FMT("%s: %s%s is a JSON %s: must be true or false", label, ctx, key,
                   json_type_to_name(json_object_get_type(v)));
    *out = json_object_get_boolean(v) ? 1 : 0;
    return MPL_OK;
}

/* *out = the string or NULL when absent. */
static mpl_status get_str(const char *label, const char *ctx, json_object *o, const char *key, const char **out) {
    json_object *v = field(o, key);
    *out = NULL;
    if (!v) return MPL_OK;
    if (json_object_get_type(v) != json_type_string)
        return FMT("%s: %s%s is a JSON %s: must be a string", label, ctx, key,
                   json_type_to_name(json_object_get_type(v)));
    *out = json_object_get_string(v);
    return MPL_OK;
}

static mpl_act act_from_dtype(const char *s) {
    if (!s) return (mpl_act)0;
    if (strcmp(s, "float16") == 0 || strcmp(s, "half") == 0) return MPL_ACT_F16;
    if (strcmp(s, "bfloat16") == 0) return MPL_ACT_BF16;
    if (strcmp(s, "float32") == 0 || strcmp(s, "float") == 0) return MPL_ACT_F32;
    return (mpl_act)0;
}

/* Fills wtype from bits and symmetry; the caller has checked bits. */
static void finish_scheme(mpl_hf_scheme *s) {
    switch (s->bits) {
    case 2: s->wtype = s->symmetric ? MPL_WTYPE_UINT2B2 : MPL_WTYPE_UINT2; break;
    case 3: s->wtype = s->symmetric ? MPL_WTYPE_UINT3B4 : MPL_WTYPE_UINT3; break;
    case 4: s->wtype = s->symmetric ? MPL_WTYPE_UINT4B8 : MPL_WTYPE_UINT4; break;
    default: s->wtype = s->symmetric ? MPL_WTYPE_UINT8B128 : MPL_WTYPE_UINT8; break;
    }
    if (s->layout == MPL_LAYOUT_CT_INT) s->wtype = MPL_WTYPE_INT4;
    /* desc_act with one group is meaningless (vLLM normalises it away too). */
    if (s->group_size == -1) s->act_order = 0;
}

static mpl_status check_group_size(const char *label, const char *ctx, int64_t g) {
    if (g == -1 || g > 0) return MPL_OK;
    return FMT("%s: %sgroup_size = %lld: must be -1 (one group per row) or positive", label, ctx, (long long)g);
}

/* ---- GPTQ ---- */

/* meta.quantizer (a string or an array of strings) names GPTQModel ("gptqmodel:7.7.0"). Anything else,
 * or no meta, is read as AutoGPTQ wrote it. */
static int written_by_gptqmodel(json_object *q) {
    json_object *meta = field(q, "meta"), *qz = meta && json_object_get_type(meta) == json_type_object
                                                     ? field(meta, "quantizer")
                                                     : NULL;
    if (!qz) return 0;
    if (json_object_get_type(qz) == json_type_string)
        return strncasecmp(json_object_get_string(qz), "gptqmodel", 9) == 0;
    if (json_object_get_type(qz) != json_type_array) return 0;
    for (size_t i = 0; i < json_object_array_length(qz); i++) {
        json_object *e = json_object_array_get_idx(qz, i);
        if (e && json_object_get_type(e) == json_type_string &&
            strncasecmp(json_object_get_string(e), "gptqmodel", 9) == 0)
            return 1;
    }
    return 0;
}

static mpl_status parse_gptq(const char *label, json_object *q, mpl_hf_config *c) {
    mpl_status st;
    const char *ctx = "quantization_config.";
    int64_t bits = 4, group = 128;
    int have_bits, have_group, desc = 0, sym = 1;
    if ((st = get_int(label, ctx, q, "bits", &bits, &have_bits)) ||
        (st = get_int(label, ctx, q, "group_size", &group, &have_group)) ||
        (st = get_bool(label, ctx, q, "desc_act", &desc)) || (st = get_bool(label, ctx, q, "sym", &sym)))
        return st;
    if (!have_bits) return FMT("%s: %sbits is missing", label, ctx);
    if (!have_group) return FMT("%s: %sgroup_size is missing", label, ctx);
    if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
        return UNSUP("%s: %sbits = %lld: mplinear reads 2-, 3-, 4- and 8-bit GPTQ checkpoints", label, ctx,
                     (long long)bits);
    if ((st = check_group_size(label, ctx, group))) return st;
    const char *fmt = NULL, *fmt2 = NULL;
    if ((st = get_str(label, ctx, q, "checkpoint_format", &fmt)) || (st = get_str(label, ctx, q, "format", &fmt2)))
        return st;
    if (!fmt) fmt = fmt2;
    mpl_layout layout = MPL_LAYOUT_GPTQ;
    if (fmt && strcmp(fmt, "gptq_v2") == 0)
        layout = MPL_LAYOUT_GPTQ_V2;
    else if (fmt && strcmp(fmt, "gptq") != 0)
        return UNSUP("%s: %scheckpoint_format = '%s': mplinear reads 'gptq' and 'gptq_v2'", label, ctx, fmt);
    json_object *dyn = field(q, "dynamic");
    if (dyn && !(json_object_get_type(dyn) == json_type_object && json_object_object_length(dyn) == 0))
        return UNSUP("%s: %sdynamic (per-module overrides) is not supported", label, ctx);
    c->method = MPL_HF_GPTQ;
    c->scheme = (mpl_hf_scheme){.bits = (int)bits, .symmetric = sym, .group_size = group, .act_order = desc,
                                .layout = layout, .mode = MPL_MODE_W4A16, .gptqmodel = written_by_gptqmodel(q)};
    finish_scheme(&c->scheme);
    return MPL_OK;
}

/* ---- AWQ ---- */

static mpl_status parse_awq(const char *label, json_object *q, mpl_hf_config *c) {
    mpl_status st;
    const char *ctx = "quantization_config.";
    int64_t bits = 4, group = 128;
    int have_bits, have_wbit, have_group, have_qg, zp = 1;
    if ((st = get_int(label, ctx, q, "bits", &bits, &have_bits)) ||
        (st = get_int(label, ctx, q, "w_bit", &bits, &have_wbit)) ||
        (st = get_int(label, ctx, q, "group_size", &group, &have_group)) ||
        (st = get_int(label, ctx, q, "q_group_size", &group, &have_qg)) ||
        (st = get_bool(label, ctx, q, "zero_point", &zp)))
        return st;
    if (!have_bits && !have_wbit) return FMT("%s: %sbits is missing", label, ctx);
    if (!have_group && !have_qg) return FMT("%s: %sgroup_size is missing", label, ctx);
    if (bits != 4) return UNSUP("%s: %sbits = %lld: AWQ checkpoints are 4-bit", label, ctx, (long long)bits);
    if ((st = check_group_size(label, ctx, group))) return st;
    if (!zp)
        return UNSUP("%s: %szero_point = false: AWQ GEMM checkpoints mplinear reads store zero points", label, ctx);
    const char *ver = NULL;
    if ((st = get_str(label, ctx, q, "version", &ver))) return st;
    if (ver && strcasecmp(ver, "gemm") != 0)
        return UNSUP("%s: %sversion = '%s': mplinear reads the AWQ 'gemm' layout only", label, ctx, ver);
    json_object *nc = field(q, "modules_to_not_convert");
    if (nc) {
        if (json_object_get_type(nc) != json_type_array)
            return FMT("%s: %smodules_to_not_convert must be an array of strings", label, ctx);
        size_t n = json_object_array_length(nc);
        c->not_convert = calloc(n ? n : 1, sizeof(char *));
        if (!c->not_convert) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(nc, i);
            if (json_object_get_type(e) != json_type_string)
                return FMT("%s: %smodules_to_not_convert[%zu] is not a string", label, ctx, i);
            if (!(c->not_convert[c->nnot_convert++] = strdup(json_object_get_string(e))))
                return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        }
    }
    c->method = MPL_HF_AWQ;
    c->scheme = (mpl_hf_scheme){.bits = 4, .symmetric = 0, .group_size = group, .layout = MPL_LAYOUT_AWQ,
                                .mode = MPL_MODE_W4A16};
    finish_scheme(&c->scheme);
    return MPL_OK;
}

/* ---- compressed-tensors ---- */

/*
 * Patterns come from the file: keep them to what module-name patterns need, so
 * that neither regcomp nor regexec can be made to take exponential time.
 * Refused: more than 512 bytes, more than 32 quantifiers, a quantifier right
 * after another ("a**", undefined in POSIX), back-references (a GNU extension
 * whose matching is NP-hard).
 */
static const char *regex_untame(const char *p) {
    size_t n = strlen(p), quants = 0;
    if (n > 512) return "longer than 512 bytes";
    int prev_quant = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n) {
            if (p[i + 1] >= '1' && p[i + 1] <= '9') return "a back-reference";
            i++;
            prev_quant = 0;
            continue;
        }
        int q = p[i] == '*' || p[i] == '+' || p[i] == '?' || p[i] == '{';
        if (q && prev_quant) return "a quantifier right after another";
        if (q && ++quants > 32) return "more than 32 quantifiers";
        if (p[i] == '{') /* skip the bound's digits */
            while (i + 1 < n && p[i] != '}') i++;
        prev_quant = q;
    }
    return NULL;
}

/* Python's re.match semantics on POSIX ERE: anchored at the start; \d becomes [0-9]. */
static mpl_status compile_target(const char *label, const char *ctx, const char *s, mpl_hf_target *t) {
    t->text = strdup(s);
    if (!t->text) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    if (strncmp(s, "re:", 3) == 0) {
        const char *p = s + 3;
        const char *why = regex_untame(p);
        if (why) return UNSUP("%s: %s'%.80s': pattern refused (%s)", label, ctx, s, why);
        size_t n = strlen(p);
        char *pat = malloc(n * 5 + 8); /* "\d" -> "[0-9]" at most 5/2 longer; plus "^(" ")" */
        if (!pat) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        size_t o = 0;
        pat[o++] = '^';
        pat[o++] = '(';
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '\\' && i + 1 < n && p[i + 1] == 'd') {
                memcpy(pat + o, "[0-9]", 5);
                o += 5;
                i++;
            } else if (p[i] == '\\' && i + 1 < n) {
                pat[o++] = p[i++];
                pat[o++] = p[i];
            } else {
                pat[o++] = p[i];
            }
        }
        pat[o++] = ')';
        pat[o] = '\0';
        int rc = regcomp(&t->re, pat, REG_EXTENDED | REG_NOSUB);
        free(pat);
        if (rc != 0)
            return UNSUP("%s: %s'%s': not a regular expression mplinear can compile (POSIX extended syntax)", label,
                         ctx, s);
        t->kind = 1;
    } else {
        /* A bare word without dots that names a class ("Linear") matches by module type. */
        t->kind = (strchr(s, '.') == NULL && s[0] >= 'A' && s[0] <= 'Z') ? 2 : 0;
    }
    return MPL_OK;
}

static void free_targets(mpl_hf_target *t, int n) {
    for (int i = 0; i < n; i++) {
        if (t[i].kind == 1) regfree(&t[i].re);
        free(t[i].text);
    }
    free(t);
}

static mpl_status parse_targets(const char *label, const char *ctx, json_object *arr, mpl_hf_target **out, int *n) {
    *out = NULL;
    *n = 0;
    if (!arr) return MPL_OK;
    if (json_object_get_type(arr) == json_type_string) { /* a single target written as a string */
        *out = calloc(1, sizeof **out);
        if (!*out) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        *n = 1;
        return compile_target(label, ctx, json_object_get_string(arr), *out);
    }
    if (json_object_get_type(arr) != json_type_array) return FMT("%s: %s must be an array of strings", label, ctx);
    size_t len = json_object_array_length(arr);
    if (len > 100000) return FMT("%s: %s has %zu entries (at most 100000)", label, ctx, len);
    *out = calloc(len ? len : 1, sizeof **out);
    if (!*out) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    for (size_t i = 0; i < len; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (json_object_get_type(e) != json_type_string) return FMT("%s: %s[%zu] is not a string", label, ctx, i);
        mpl_status st = compile_target(label, ctx, json_object_get_string(e), &(*out)[*n]);
        (*n)++;
        if (st != MPL_OK) return st;
    }
    return MPL_OK;
}

/* One config group's weights / input_activations / format -> scheme. */
static mpl_status parse_ct_group(const char *label, const char *gname, json_object *g, const char *top_format,
                                 mpl_hf_scheme *s) {
    char ctx[192];
    mpl_status st;
    if (json_object_get_type(g) != json_type_object)
        return FMT("%s: config_groups.%s must be an object", label, gname);
    const char *fmt = NULL;
    snprintf(ctx, sizeof ctx, "config_groups.%.100s.", gname);
    if ((st = get_str(label, ctx, g, "format", &fmt))) return st;
    if (!fmt) fmt = top_format;
    if (!fmt) return FMT("%s: quantization_config.format is missing (and %sformat too)", label, ctx);
    if (strcmp(fmt, "pack-quantized") == 0)
        s->layout = MPL_LAYOUT_CT;
    else if (strcmp(fmt, "int-quantized") == 0)
        s->layout = MPL_LAYOUT_CT_INT;
    else
        return UNSUP("%s: %sformat '%s': mplinear reads 'pack-quantized' and 'int-quantized'", label, ctx, fmt);
    json_object *w = field(g, "weights");
    if (!w) return UNSUP("%s: %sweights is null: a group without weight quantization has no packed layers", label, ctx);
    if (json_object_get_type(w) != json_type_object) return FMT("%s: %sweights must be an object", label, ctx);
    snprintf(ctx, sizeof ctx, "config_groups.%.100s.weights.", gname);
    int64_t bits = 0, group = -1;
    int have_bits, have_group, sym = 1, dyn = 0;
    const char *type = NULL, *strat = NULL;
    if ((st = get_int(label, ctx, w, "num_bits", &bits, &have_bits)) ||
        (st = get_int(label, ctx, w, "group_size", &group, &have_group)) ||
        (st = get_bool(label, ctx, w, "symmetric", &sym)) || (st = get_str(label, ctx, w, "type", &type)) ||
        (st = get_str(label, ctx, w, "strategy", &strat)))
        return st;
    json_object *jd = field(w, "dynamic");
    if (jd && json_object_get_type(jd) == json_type_boolean) dyn = json_object_get_boolean(jd);
    else if (jd) return UNSUP("%s: %sdynamic = %s: weights must be statically quantized", label, ctx,
                              json_object_to_json_string(jd));
    if (!have_bits) return FMT("%s: %snum_bits is missing", label, ctx);
    if (type && strcmp(type, "int") != 0)
        return UNSUP("%s: %stype '%s': mplinear reads integer weights", label, ctx, type);
    if (dyn) return UNSUP("%s: %sdynamic = true: weights must be statically quantized", label, ctx);
    if (s->layout == MPL_LAYOUT_CT_INT) {
        if (bits != 4)
            return UNSUP("%s: %snum_bits = %lld with int-quantized: mplinear reads int4 values stored in int8", label,
                         ctx, (long long)bits);
        if (!sym) return UNSUP("%s: %ssymmetric = false with int-quantized: int4 weights have no zero points", label, ctx);
    } else if (bits != 2 && bits != 3 && bits != 4 && bits != 8) {
        return UNSUP("%s: %snum_bits = %lld: mplinear reads 2-, 3-, 4- and 8-bit weights", label, ctx, (long long)bits);
    }
    if (!strat || strcmp(strat, "group") == 0) {
        if (!have_group) return FMT("%s: %sstrategy group needs group_size", label, ctx);
        if (group <= 0) return FMT("%s: %sgroup_size = %lld: must be positive", label, ctx, (long long)group);
    } else if (strcmp(strat, "channel") == 0) {
        group = -1;
    } else {
        return UNSUP("%s: %sstrategy '%s': mplinear reads 'group' and 'channel'", label, ctx, strat);
    }
    /* actorder: "group" stores weight_g_idx; "weight"/"static" only reorders calibration. */
    int act_order = 0;
    json_object *ao = field(w, "actorder");
    if (ao && json_object_get_type(ao) == json_type_boolean) {
        act_order = json_object_get_boolean(ao);
    } else if (ao && json_object_get_type(ao) == json_type_string) {
        const char *a = json_object_get_string(ao);
        if (strcmp(a, "group") == 0 || strcmp(a, "dynamic") == 0)
            act_order = 1;
        else if (strcmp(a, "weight") != 0 && strcmp(a, "static") != 0)
            return UNSUP("%s: %sactorder '%s': must be group, weight, static or null", label, ctx, a);
    } else if (ao) {
        return FMT("%s: %sactorder must be a string, a boolean or null", label, ctx);
    }
    s->bits = (int)bits;
    s->symmetric = sym;
    s->group_size = group;
    s->act_order = act_order;
    s->mode = MPL_MODE_W4A16;
    json_object *ia = field(g, "input_activations");
    if (ia) {
        snprintf(ctx, sizeof ctx, "config_groups.%.100s.input_activations.", gname);
        if (json_object_get_type(ia) != json_type_object) return FMT("%s: %s must be an object", label, ctx);
        int64_t ab = 0;
        int have_ab, asym = 1;
        const char *at = NULL, *as = NULL;
        json_object *ad = field(ia, "dynamic");
        if ((st = get_int(label, ctx, ia, "num_bits", &ab, &have_ab)) || (st = get_str(label, ctx, ia, "type", &at)) ||
            (st = get_str(label, ctx, ia, "strategy", &as)) || (st = get_bool(label, ctx, ia, "symmetric", &asym)))
            return st;
        int is_dyn = ad && json_object_get_type(ad) == json_type_boolean && json_object_get_boolean(ad);
        if (ab != 8 || (at && strcmp(at, "int") != 0) || !asym || !is_dyn || (as && strcmp(as, "token") != 0))
            return UNSUP("%s: %s{num_bits %lld, type %s, symmetric %s, dynamic %s, strategy %s}: mplinear runs "
                         "activations as given or as dynamic per-token symmetric int8 (W4A8)",
                         label, ctx, (long long)ab, at ? at : "?", asym ? "true" : "false",
                         ad ? json_object_to_json_string(ad) : "?", as ? as : "?");
        s->mode = MPL_MODE_W4A8;
    }
    if (field(g, "output_activations"))
        return UNSUP("%s: config_groups.%s.output_activations: output quantization is not supported", label, gname);
    finish_scheme(s);
    return MPL_OK;
}

static mpl_status parse_ct(const char *label, json_object *q, mpl_hf_config *c) {
    mpl_status st;
    const char *ctx = "quantization_config.";
    const char *fmt = NULL, *status = NULL;
    if ((st = get_str(label, ctx, q, "format", &fmt)) || (st = get_str(label, ctx, q, "quantization_status", &status)))
        return st;
    if (status && strcmp(status, "compressed") != 0)
        return UNSUP("%s: %squantization_status '%s': weights are stored compressed only in status 'compressed'",
                     label, ctx, status);
    if (fmt && strcmp(fmt, "mixed-precision") == 0) fmt = NULL; /* each group names its own */
    json_object *sp = field(q, "sparsity_config");
    if (sp) {
        const char *sf = NULL;
        if (json_object_get_type(sp) != json_type_object) return FMT("%s: %ssparsity_config must be an object", label, ctx);
        if ((st = get_str(label, "quantization_config.sparsity_config.", sp, "format", &sf))) return st;
        if (sf && strcmp(sf, "dense") != 0)
            return UNSUP("%s: %ssparsity_config.format '%s': sparse checkpoints are not supported", label, ctx, sf);
    }
    json_object *tc = field(q, "transform_config");
    if (tc && !(json_object_get_type(tc) == json_type_object && json_object_object_length(tc) == 0))
        return UNSUP("%s: %stransform_config: weight transforms (rotations) are not supported", label, ctx);
    json_object *groups = field(q, "config_groups");
    if (!groups || json_object_get_type(groups) != json_type_object || json_object_object_length(groups) == 0)
        return FMT("%s: %sconfig_groups must be a non-empty object", label, ctx);
    size_t ng = (size_t)json_object_object_length(groups);
    c->groups = calloc(ng, sizeof *c->groups);
    if (!c->groups) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    c->method = MPL_HF_CT;
    json_object_object_foreach(groups, gname, g) {
        mpl_hf_group *hg = &c->groups[c->ngroups++];
        if (!(hg->name = strdup(gname))) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        if ((st = parse_ct_group(label, gname, g, fmt, &hg->scheme))) return st;
        char tctx[160];
        snprintf(tctx, sizeof tctx, "config_groups.%.100s.targets", gname);
        json_object *tg = field(g, "targets");
        if (!tg) return FMT("%s: %s is missing", label, tctx);
        if ((st = parse_targets(label, tctx, tg, &hg->targets, &hg->ntargets))) return st;
    }
    return parse_targets(label, "quantization_config.ignore", field(q, "ignore"), &c->ignore, &c->nignore);
}

/* quantization_config object (or a standalone quantize_config.json) -> c. */
static mpl_status parse_quant(const char *label, json_object *q, const char *implied_method, mpl_hf_config *c) {
    const char *m = NULL;
    mpl_status st = get_str(label, "quantization_config.", q, "quant_method", &m);
    if (st) return st;
    if (!m) m = implied_method;
    if (!m) return FMT("%s: quantization_config.quant_method is missing", label);
    if (strcmp(m, "gptq") == 0) return parse_gptq(label, q, c);
    if (strcmp(m, "awq") == 0) return parse_awq(label, q, c);
    if (strcmp(m, "compressed-tensors") == 0) return parse_ct(label, q, c);
    return UNSUP("%s: quantization_config.quant_method '%s': mplinear reads gptq, awq and compressed-tensors", label,
                 m);
}

mpl_status mpl_hf_config_parse(const char *label, const char *text, size_t len, mpl_hf_config *out, int *has_quant) {
    memset(out, 0, sizeof *out);
    *has_quant = 0;
    json_object *root;
    mpl_status st = mpl_json_parse_object(label, text, len, &root);
    if (st) return st;
    const char *dt = NULL, *dt2 = NULL;
    if (!(st = get_str(label, "", root, "torch_dtype", &dt)) && !(st = get_str(label, "", root, "dtype", &dt2))) {
        out->act = act_from_dtype(dt ? dt : dt2);
        json_object *q = field(root, "quantization_config");
        if (q && json_object_get_type(q) != json_type_object)
            st = FMT("%s: quantization_config must be an object", label);
        else if (q) {
            *has_quant = 1;
            st = parse_quant(label, q, NULL, out);
        }
    }
    json_object_put(root);
    if (st) mpl_hf_config_free(out);
    return st;
}

mpl_status mpl_hf_quantize_config_parse(const char *label, const char *text, size_t len, mpl_hf_config *out) {
    mpl_act act = out->act;
    mpl_hf_config_free(out);
    out->act = act;
    json_object *root;
    mpl_status st = mpl_json_parse_object(label, text, len, &root);
    if (st) return st;
    /* AutoAWQ's quant_config.json says w_bit/version; AutoGPTQ's quantize_config.json has no quant_method. */
    const char *implied = json_object_object_get_ex(root, "w_bit", NULL) ||
                                  json_object_object_get_ex(root, "version", NULL)
                              ? "awq"
                              : "gptq";
    st = parse_quant(label, root, implied, out);
    json_object_put(root);
    if (st) {
        mpl_hf_config_free(out);
        out->act = act;
    }
    return st;
}

/* Match strength of t against a module: 3 exact name, 2 regex, 1 class, 0 none. */
static int target_match(const mpl_hf_target *t, const char *module) {
    switch (t->kind) {
    case 0: return strcmp(t->text, module) == 0 ? 3 : 0;
    case 1: return regexec(&t->re, module, 0, NULL, 0) == 0 ? 2 : 0;
    default: {
        /* Only linear modules carry packed weights: any *Linear class names them. */
        size_t n = strlen(t->text);
        return n >= 6 && strcmp(t->text + n - 6, "Linear") == 0 ? 1 : 0;
    }
    }
}

const mpl_hf_scheme *mpl_hf_config_match(const mpl_hf_config *c, const char *module) {
    if (c->method == MPL_HF_GPTQ) return &c->scheme;
    if (c->method == MPL_HF_AWQ) {
        for (int i = 0; i < c->nnot_convert; i++)
            if (strstr(module, c->not_convert[i])) return NULL;
        return &c->scheme;
    }
    for (int i = 0; i < c->nignore; i++)
        if (target_match(&c->ignore[i], module)) return NULL;
    /* vLLM's rule: the most specific target wins (name, then regex, then class); ties go to the first group. */
    const mpl_hf_scheme *best = NULL;
    int best_level = 0;
    for (int g = 0; g < c->ngroups; g++)
        for (int t = 0; t < c->groups[g].ntargets; t++) {
            int l = target_match(&c->groups[g].targets[t], module);
            if (l > best_level) {
                best_level = l;
                best = &c->groups[g].scheme;
            }
        }
    return best;
}

void mpl_hf_config_free(mpl_hf_config *c) {
    if (!c) return;
    for (int g = 0; g < c->ngroups; g++) {
        free(c->groups[g].name);
        free_targets(c->groups[g].targets, c->groups[g].ntargets);
    }
    free(c->groups);
    free_targets(c->ignore, c->nignore);
    for (int i = 0; i < c->nnot_convert; i++) free(c->not_convert[i]);
    free(c->not_convert);
    memset(c, 0, sizeof *c);
}

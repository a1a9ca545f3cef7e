/*
 * fuzz_hfconfig.c -- libFuzzer target: the input is a config.json (and, in
 * a second pass, a standalone quantize_config.json). A parse that succeeds
 * must give schemes with valid fields; matching module names against the
 * targets and ignore list must not crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h" /* mpl_wtype_bits (inline: the fuzzer links only the parsers) */
#include "model/hfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_scheme(const mpl_hf_scheme *s) {
    if (!s) return;
    if (s->bits != 2 && s->bits != 3 && s->bits != 4 && s->bits != 8) __builtin_trap();
    if (s->group_size != -1 && s->group_size <= 0) __builtin_trap();
    if (s->layout < MPL_LAYOUT_CT || s->layout > MPL_LAYOUT_CT_INT) __builtin_trap();
    if (s->wtype < MPL_WTYPE_UINT4B8 || s->wtype > MPL_WTYPE_UINT3) __builtin_trap();
    if (mpl_wtype_bits(s->wtype) != s->bits) __builtin_trap(); /* the type's width is the scheme's bits */
    if (s->layout == MPL_LAYOUT_AWQ && s->bits != 4) __builtin_trap();
}

static const char *const modules[] = {"model.layers.0.self_attn.q_proj", "model.layers.11.mlp.down_proj", "lm_head",
                                      "", "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z"};

static void exercise(const mpl_hf_config *c) {
    if (c->method != MPL_HF_CT) check_scheme(&c->scheme); /* compressed-tensors keeps its schemes per group */
    for (int g = 0; g < c->ngroups; g++) check_scheme(&c->groups[g].scheme);
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) check_scheme(mpl_hf_config_match(c, modules[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mpl_hf_config c;
    int has_quant = 0;
    if (mpl_hf_config_parse("fuzz/config.json", text, size, &c, &has_quant) == MPL_OK) {
        if (has_quant) exercise(&c);
        mpl_hf_config_free(&c);
    }
    memset(&c, 0, sizeof c);
    if (mpl_hf_quantize_config_parse("fuzz/quantize_config.json", text, size, &c) == MPL_OK) exercise(&c);
    mpl_hf_config_free(&c);
    free(text);
    return 0;
}

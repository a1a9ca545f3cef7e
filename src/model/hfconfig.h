/*
 * hfconfig.h -- config.json's quantization_config -> a per-layer scheme.
 * Methods: GPTQ (gptq, gptq_v2), AWQ (gemm), compressed-tensors
 * (pack-quantized / int-quantized, config_groups targets, ignore list).
 * Rules and field meanings: docs/checkpoints.md. Internal (not installed).
 */
#ifndef MPL_HFCONFIG_H
#define MPL_HFCONFIG_H

#include <regex.h>
#include <stddef.h>

#include "mplinear.h"

/* config.json and its neighbours are small; anything larger is refused before parsing. */
#define MPL_HF_MAX_JSON ((size_t)64 << 20)

typedef enum mpl_hf_method { MPL_HF_GPTQ = 1, MPL_HF_AWQ = 2, MPL_HF_CT = 3 } mpl_hf_method;

/* How one layer is quantized and stored. */
typedef struct mpl_hf_scheme {
    int bits;           /* 4 or 8 */
    int symmetric;      /* 0: per-group zero points */
    int64_t group_size; /* -1: one group spanning K */
    int act_order;      /* 1: the checkpoint's g_idx gives each input channel's group */
    mpl_layout layout;
    mpl_mode mode;      /* W4A8: dynamic per-token int8 activations (compressed-tensors) */
    mpl_wtype wtype;
    /* GPTQ written by GPTQModel (meta.quantizer "gptqmodel:..."): its v1 qzeros at 2, 4 and 8 bits are the
     * packed zeros minus one constant per int32 word (a zero of 0 borrows from the next field), so the model
     * module adds the constant back word-wise and reads them as gptq-v2 (docs/layouts/checkpoints.md). */
    int gptqmodel;
} mpl_hf_scheme;

/* A name pattern: exact module name, "re:" regex (Python re.match: anchored at the start) or class name. */
typedef struct mpl_hf_target {
    char *text;
    int kind; /* 0 name, 1 regex, 2 class */
    regex_t re;
} mpl_hf_target;

typedef struct mpl_hf_group {
    char *name;
    mpl_hf_target *targets;
    int ntargets;
    mpl_hf_scheme scheme;
} mpl_hf_group;

typedef struct mpl_hf_config {
    mpl_hf_method method;
    mpl_act act;             /* torch_dtype / dtype; 0 when absent or not f16/bf16/f32 */
    mpl_hf_scheme scheme;    /* GPTQ and AWQ: every quantized module */
    mpl_hf_group *groups;    /* compressed-tensors config_groups, in file order */
    int ngroups;
    mpl_hf_target *ignore;   /* compressed-tensors ignore list */
    int nignore;
    char **not_convert;      /* AWQ modules_to_not_convert (substring match, as AutoAWQ) */
    int nnot_convert;
} mpl_hf_config;

/*
 * Parses config.json text. *has_quant = 0 when it has no quantization_config
 * (the caller then tries quantize_config.json). label names the file.
 */
mpl_status mpl_hf_config_parse(const char *label, const char *text, size_t len, mpl_hf_config *out, int *has_quant);
/*
 * Parses a standalone quantize_config.json (GPTQ) or quant_config.json (AWQ:
 * w_bit, q_group_size, zero_point, version) into out's method and scheme,
 * keeping out->act.
 */
mpl_status mpl_hf_quantize_config_parse(const char *label, const char *text, size_t len, mpl_hf_config *out);
/* The scheme that applies to module (NULL: ignored or targeted by no group). */
const mpl_hf_scheme *mpl_hf_config_match(const mpl_hf_config *c, const char *module);
void mpl_hf_config_free(mpl_hf_config *c);
const char *mpl_hf_method_name(mpl_hf_method m);

/* Parses text (len bytes, NUL-terminated) as one strict UTF-8 JSON object; release with json_object_put. */
struct json_object;
mpl_status mpl_json_parse_object(const char *label, const char *text, size_t len, struct json_object **out);

/* Reads a whole small file (at most max bytes) into a NUL-terminated buffer. */
mpl_status mpl_read_small_file(const char *path, size_t max, char **text, size_t *len);

#endif /* MPL_HFCONFIG_H */

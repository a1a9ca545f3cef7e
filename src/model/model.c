/*
 * model.c -- a quantized checkpoint directory: config.json + safetensors
 * shards -> a list of quantized linear layers, each created on demand
 * through mpl_layer_create. See docs/checkpoints.md.
 *
 * The optional model module of libmplinear (CMake MPLINEAR_MODEL; the only
 * code that needs json-c); model_none.c stands in for it when it is not built.
 *
 * Open does all the checking that needs no weight bytes: the safetensors
 * headers (safetensors.c), the quantization config (hfconfig.c), and each
 * layer's tensor dtypes and shapes against its config. Creating a layer
 * decodes its bytes (src/decode/) and packs them for the chosen kernel.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/internal.h"
#include "../decode/decode.h"
#include "hfconfig.h"
#include "safetensors.h"

#define FMT(...) mpl_set_error(MPL_ERR_FORMAT, __VA_ARGS__)

/* A tensor of the model: where it lives. */
typedef struct tref {
    const char *name;
    const mpl_st_tensor *t;
    const mpl_st_file *f;
    size_t index_pos; /* position of its entry in model.safetensors.index.json's weight_map (SIZE_MAX: none) */
} tref;

typedef struct layer_rec {
    char *name;
    mpl_config cfg; /* act = model default */
    mpl_layout layout;
    const tref *weight, *scales, *zeros, *g_idx, *bias;
    int irregular; /* act-order with groups of unequal size (from g_idx): only the reference kernel runs it */
    /* GPTQModel's v1 qzeros (2, 4, 8 bits): this constant is added to every int32 word, which makes them
     * gptq-v2 zeros (GPTQModel's own loading; a zero of 0 borrowed from the next field). 0: none. */
    uint32_t zero_word_add;
    /* sort key (layer_key) */
    size_t pfx_len;
    int64_t block, k1, k2, k3;
} layer_rec;

struct mpl_model {
    char *dir;
    mpl_st_file **files;
    int nfiles;
    tref *index; /* every tensor of every shard, sorted by name */
    size_t nindex;
    mpl_hf_config hf;
    mpl_act act;
    layer_rec *layers;
    int nlayers;
    char arch[128];   /* config.json architectures[0] ("" when absent) */
    char mtype[64];   /* config.json model_type ("" when absent) */
    const struct arch_order *family; /* the forward order of arch / model_type, NULL when unknown */
    int has_index;    /* the shards came from model.safetensors.index.json */
    char order[256];  /* the rule the layers are ordered by (mpl_model_layer_order) */
};

/* ---- helpers ---- */

static char *path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t o = a;
    if (a && dir[a - 1] != '/') p[o++] = '/';
    memcpy(p + o, name, b + 1);
    return p;
}

/* Whether something is at path (never opens it: opening a named pipe would wait for a writer). */
static int file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static int cmp_tref(const void *a, const void *b) { return strcmp(((const tref *)a)->name, ((const tref *)b)->name); }

static const tref *find(const mpl_model *m, const char *name) {
    tref key = {.name = name};
    return bsearch(&key, m->index, m->nindex, sizeof key, cmp_tref);
}

/* Natural order: digit runs compare as numbers, so layers.2 precedes layers.10. */
static int natural_cmp(const char *a, const char *b) {
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            const char *x = a, *y = b;
            while (*x == '0') x++;
            while (*y == '0') y++;
            size_t lx = 0, ly = 0;
            while (x[lx] >= '0' && x[lx] <= '9') lx++;
            while (y[ly] >= '0' && y[ly] <= '9') ly++;
            if (lx != ly) return lx < ly ? -1 : 1;
            int c = strncmp(x, y, lx);
            if (c) return c;
            a = x + lx;
            b = y + ly;
            continue;
        }
        if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++, b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Puts "<context>: " in front of the current error message. */
static mpl_status prefix_error(mpl_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static mpl_status prefix_error(mpl_status st, const char *fmt, ...) {
    char old[768], ctx[512];
    snprintf(old, sizeof old, "%s", mpl_last_error());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    return mpl_set_error(st, "%s: %s", ctx, old);
}

/* ---- layer order: as a forward pass runs the layers ---- */

/*
 * One architecture family's projections in the order its forward pass runs them, named by what
 * follows the block index ("model.layers.<i>." / "encoder.layer.<i>." / "transformer.h.<i>."),
 * an inner index (an expert) written '#'. Sources: the modeling code of each family in Hugging Face
 * transformers (attention before the MLP; q, k, v, then the output projection; gate and up before
 * down; routed experts, each one's projections together, before the shared expert).
 */
typedef struct arch_order {
    const char *family;
    const char *const *archs;       /* prefixes of config.json architectures[0] */
    const char *const *model_types; /* exact config.json model_type values */
    const char *const *order;       /* NULL-terminated */
} arch_order;

static const char *const llama_archs[] = {"Llama", "Mistral", "Mixtral", "Qwen2", "Qwen3", "Gemma", "Phi3",
                                          "Deepseek", "Granite", "Olmo", "Cohere", "InternLM", "Starcoder2", NULL};
static const char *const llama_types[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                                          "gemma", "gemma2", "gemma3_text", "phi3", "deepseek_v2", "deepseek_v3",
                                          "granite", "olmo", "olmo2", "cohere", "starcoder2", NULL};
static const char *const llama_order[] = {
    "self_attn.q_proj", "self_attn.q_a_proj", "self_attn.q_b_proj", "self_attn.k_proj", "self_attn.v_proj",
    "self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj", "self_attn.qkv_proj", "self_attn.o_proj",
    "mlp.gate_proj", "mlp.up_proj", "mlp.gate_up_proj", "mlp.c_fc", "mlp.down_proj", "mlp.c_proj",
    "mlp.experts.#.gate_proj", "mlp.experts.#.up_proj", "mlp.experts.#.down_proj",
    "block_sparse_moe.experts.#.w1", "block_sparse_moe.experts.#.w3", "block_sparse_moe.experts.#.w2",
    "mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj", "mlp.shared_expert.down_proj",
    "mlp.shared_experts.gate_proj", "mlp.shared_experts.up_proj", "mlp.shared_experts.down_proj", NULL};
static const char *const bert_archs[] = {"Bert", "Roberta", "XLMRoberta", "Electra", NULL};
static const char *const bert_types[] = {"bert", "roberta", "xlm-roberta", "electra", NULL};
static const char *const bert_order[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                                         "attention.output.dense", "intermediate.dense", "output.dense", NULL};
static const char *const neox_archs[] = {"GPTNeoX", NULL};
static const char *const neox_types[] = {"gpt_neox", NULL};
static const char *const neox_order[] = {"attention.query_key_value", "attention.dense", "mlp.dense_h_to_4h",
                                         "mlp.dense_4h_to_h", NULL};
static const char *const falcon_archs[] = {"Falcon", "RW", NULL};
static const char *const falcon_types[] = {"falcon", NULL};
static const char *const falcon_order[] = {"self_attention.query_key_value", "self_attention.dense",
                                           "mlp.dense_h_to_4h", "mlp.dense_4h_to_h", NULL};
static const char *const gpt2_archs[] = {"GPT2", "GPTBigCode", NULL};
static const char *const gpt2_types[] = {"gpt2", "gpt_bigcode", NULL};
static const char *const gpt2_order[] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj", NULL};
static const char *const opt_archs[] = {"OPT", NULL};
static const char *const opt_types[] = {"opt", NULL};
static const char *const opt_order[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                        "self_attn.out_proj", "fc1", "fc2", NULL};

static const arch_order arch_orders[] = {
    {"llama", llama_archs, llama_types, llama_order},    {"bert", bert_archs, bert_types, bert_order},
    {"gpt-neox", neox_archs, neox_types, neox_order},    {"falcon", falcon_archs, falcon_types, falcon_order},
    {"gpt2", gpt2_archs, gpt2_types, gpt2_order},        {"opt", opt_archs, opt_types, opt_order},
};

static const arch_order *find_family(const char *arch, const char *mtype) {
    for (size_t i = 0; i < sizeof arch_orders / sizeof arch_orders[0]; i++) {
        const arch_order *a = &arch_orders[i];
        for (const char *const *p = a->archs; *arch && *p; p++)
            if (strncmp(arch, *p, strlen(*p)) == 0) return a;
    }
    for (size_t i = 0; i < sizeof arch_orders / sizeof arch_orders[0]; i++) {
        const arch_order *a = &arch_orders[i];
        for (const char *const *p = a->model_types; *mtype && *p; p++)
            if (strcmp(mtype, *p) == 0) return a;
    }
    return NULL;
}

/* config.json's architectures[0] and model_type (both optional; anything odd leaves them ""). */
static void read_arch(mpl_model *m, const char *label, const char *text, size_t len) {
    json_object *root = NULL, *v = NULL;
    if (mpl_json_parse_object(label, text, len, &root) != MPL_OK) {
        mpl_clear_error();
        return;
    }
    if (json_object_object_get_ex(root, "architectures", &v) && json_object_get_type(v) == json_type_array &&
        json_object_array_length(v) > 0) {
        json_object *a0 = json_object_array_get_idx(v, 0);
        if (json_object_get_type(a0) == json_type_string)
            snprintf(m->arch, sizeof m->arch, "%s", json_object_get_string(a0));
    }
    if (json_object_object_get_ex(root, "model_type", &v) && json_object_get_type(v) == json_type_string)
        snprintf(m->mtype, sizeof m->mtype, "%s", json_object_get_string(v));
    json_object_put(root);
}

static int all_digits(const char *s, size_t n) {
    if (n == 0 || n > 18) return 0; /* 18 digits fit an int64 */
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

static int64_t parse_digits(const char *s, size_t n) {
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
    return v;
}

/*
 * The sort key of a layer: the prefix before its block index ("model.layers"), the block index
 * (the first all-digit component; -1 without one), then k1..k3 by the model's rule: a known
 * family -> (stage, inner index, rank) from its table; else the index position of the weight
 * tensor; else nothing (natural name order decides).
 */
static void layer_key(const mpl_model *m, layer_rec *L) {
    const char *name = L->name;
    L->pfx_len = 0;
    L->block = -1;
    L->k1 = L->k2 = L->k3 = 0;
    const char *rest = NULL;
    for (const char *c = name; *c;) {
        const char *e = strchr(c, '.');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (c != name && all_digits(c, n)) {
            L->pfx_len = (size_t)(c - name) - 1;
            L->block = parse_digits(c, n);
            rest = e ? e + 1 : c + n;
            break;
        }
        c = e ? e + 1 : c + n;
    }
    if (m->family) {
        /* rest with inner indices written '#'; the first inner index kept */
        char norm[1024];
        size_t u = 0;
        int64_t inner = -1;
        for (const char *c = rest ? rest : name; *c && u + 2 < sizeof norm;) {
            const char *e = strchr(c, '.');
            size_t n = e ? (size_t)(e - c) : strlen(c);
            if (all_digits(c, n)) {
                if (inner < 0) inner = parse_digits(c, n);
                norm[u++] = '#';
            } else {
                size_t take = n < sizeof norm - u - 2 ? n : sizeof norm - u - 2;
                memcpy(norm + u, c, take);
                u += take;
            }
            if (e) norm[u++] = '.';
            c = e ? e + 1 : c + n;
        }
        norm[u] = 0;
        int64_t unknown = 1 << 20;
        L->k1 = L->k3 = unknown; /* names the table does not know: after those it does, by name */
        for (int r = 0; m->family->order[r]; r++) {
            if (strcmp(m->family->order[r], norm) != 0) continue;
            const char *hash = strchr(norm, '#');
            int stage = r;
            if (hash) /* the first row sharing the text before '#': one expert's projections stay together */
                for (int q = 0; q < r; q++)
                    if (strncmp(m->family->order[q], norm, (size_t)(hash - norm) + 1) == 0) {
                        stage = q;
                        break;
                    }
            L->k1 = stage;
            L->k2 = hash ? inner : -1;
            L->k3 = r;
            break;
        }
    } else {
        L->k1 = L->weight->index_pos == SIZE_MAX ? 0 : (int64_t)L->weight->index_pos;
    }
}

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int cmp_layer(const void *pa, const void *pb) {
    const layer_rec *a = pa, *b = pb;
    /* Layers outside the numbered blocks (lm_head) run after them. */
    if ((a->block < 0) != (b->block < 0)) return a->block < 0 ? 1 : -1;
    if (a->block >= 0) {
        char x[1024], y[1024];
        snprintf(x, sizeof x, "%.*s", (int)a->pfx_len, a->name);
        snprintf(y, sizeof y, "%.*s", (int)b->pfx_len, b->name);
        int c = natural_cmp(x, y);
        if (c) return c;
        if ((c = cmp_i64(a->block, b->block))) return c;
    }
    int c;
    if ((c = cmp_i64(a->k1, b->k1)) || (c = cmp_i64(a->k2, b->k2)) || (c = cmp_i64(a->k3, b->k3))) return c;
    c = natural_cmp(a->name, b->name);
    return c ? c : strcmp(a->name, b->name);
}

/* Sorts the layers by the first rule that applies, and records which. */
static void order_layers(mpl_model *m, int have_index) {
    m->family = find_family(m->arch, m->mtype);
    for (int i = 0; i < m->nlayers; i++) layer_key(m, &m->layers[i]);
    qsort(m->layers, (size_t)m->nlayers, sizeof *m->layers, cmp_layer);
    if (m->family)
        snprintf(m->order, sizeof m->order,
                 "forward order: block index, then the %s family's projection order (config.json %s '%s')",
                 m->family->family, m->arch[0] && find_family(m->arch, "") ? "architectures" : "model_type",
                 m->arch[0] && find_family(m->arch, "") ? m->arch : m->mtype);
    else if (have_index)
        snprintf(m->order, sizeof m->order,
                 "block index, then the order of model.safetensors.index.json (architecture '%s' not known)",
                 m->arch[0] ? m->arch : m->mtype[0] ? m->mtype : "unnamed");
    else
        snprintf(m->order, sizeof m->order,
                 "natural name order (architecture '%s' not known, no model.safetensors.index.json)",
                 m->arch[0] ? m->arch : m->mtype[0] ? m->mtype : "unnamed");
}

/* ---- opening the shards ---- */

static mpl_status add_file(mpl_model *m, const char *path) {
    mpl_st_file *f;
    mpl_status st = mpl_st_open(path, &f);
    if (st) return st;
    mpl_st_file **nf = realloc(m->files, (size_t)(m->nfiles + 1) * sizeof *nf);
    if (!nf) {
        mpl_st_close(f);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    m->files = nf;
    m->files[m->nfiles++] = f;
    return MPL_OK;
}

static int shard_name_ok(const char *s) {
    return s[0] && s[0] != '.' && !strchr(s, '/') && !strchr(s, '\\') && ends_with(s, ".safetensors");
}

/* model.safetensors.index.json: open each shard it names; check every mapped tensor is there. */
static mpl_status open_index(mpl_model *m, const char *ipath, json_object **wm_out) {
    char *text;
    size_t len;
    mpl_status st = mpl_read_small_file(ipath, MPL_HF_MAX_JSON, &text, &len);
    if (st) return st;
    json_object *root = NULL;
    st = mpl_json_parse_object(ipath, text, len, &root);
    free(text);
    if (st) return st;
    json_object *wm = NULL;
    if (!json_object_object_get_ex(root, "weight_map", &wm) || json_object_get_type(wm) != json_type_object) {
        json_object_put(root);
        return FMT("%s: weight_map is missing or not an object", ipath);
    }
    size_t n = (size_t)json_object_object_length(wm);
    char **names = calloc(n ? n : 1, sizeof *names);
    size_t nn = 0;
    if (!names) st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", ipath);
    json_object_object_foreach(wm, tname, shard) {
        if (st) break;
        if (json_object_get_type(shard) != json_type_string) {
            st = FMT("%s: weight_map['%s'] is not a string", ipath, tname);
            break;
        }
        const char *s = json_object_get_string(shard);
        if (!shard_name_ok(s)) {
            st = FMT("%s: weight_map['%s'] = '%s': a shard must be a plain *.safetensors file name in the same folder",
                     ipath, tname, s);
            break;
        }
        names[nn++] = (char *)s;
    }
    if (!st) {
        qsort(names, nn, sizeof *names, cmp_str);
        for (size_t i = 0; i < nn && !st; i++) {
            if (i && strcmp(names[i], names[i - 1]) == 0) continue;
            char *p = path_join(m->dir, names[i]);
            if (!p) {
                st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            if (!file_exists(p))
                st = mpl_set_error(MPL_ERR_IO, "%s: shard '%s' named by %s is missing: %s", p, names[i], ipath,
                                   strerror(errno));
            else
                st = add_file(m, p);
            free(p);
        }
    }
    free(names);
    if (st) {
        json_object_put(root);
        return st;
    }
    *wm_out = root;
    return MPL_OK;
}

static mpl_status open_files(mpl_model *m) {
    mpl_status st;
    char *ipath = path_join(m->dir, "model.safetensors.index.json");
    if (!ipath) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
    json_object *index_root = NULL;
    if (file_exists(ipath)) {
        m->has_index = 1;
        st = open_index(m, ipath, &index_root);
    } else {
        /* No index: every *.safetensors in the folder (AutoGPTQ names its file after the scheme). */
        DIR *d = opendir(m->dir);
        if (!d) {
            free(ipath);
            return mpl_set_error(MPL_ERR_IO, "%s: cannot open folder: %s", m->dir, strerror(errno));
        }
        char **names = NULL;
        size_t nn = 0;
        st = MPL_OK;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!shard_name_ok(e->d_name)) continue;
            char **nb = realloc(names, (nn + 1) * sizeof *nb);
            if (!nb || !(nb[nn] = strdup(e->d_name))) {
                names = nb ? nb : names;
                st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            names = nb;
            nn++;
        }
        closedir(d);
        if (!st && nn == 0) st = mpl_set_error(MPL_ERR_IO, "%s: no *.safetensors file in the folder", m->dir);
        if (!st) qsort(names, nn, sizeof *names, cmp_str);
        for (size_t i = 0; i < nn && !st; i++) {
            char *p = path_join(m->dir, names[i]);
            st = p ? add_file(m, p) : mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
            free(p);
        }
        for (size_t i = 0; i < nn; i++) free(names[i]);
        free(names);
    }
    /* The global index: names must be unique across shards. */
    size_t total = 0;
    for (int i = 0; i < m->nfiles; i++) total += m->files[i]->count;
    if (!st) {
        m->index = calloc(total ? total : 1, sizeof *m->index);
        if (!m->index) st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < m->nfiles && !st; i++)
        for (size_t j = 0; j < m->files[i]->count; j++)
            m->index[m->nindex++] =
                (tref){m->files[i]->tensors[j].name, &m->files[i]->tensors[j], m->files[i], SIZE_MAX};
    if (!st) {
        qsort(m->index, m->nindex, sizeof *m->index, cmp_tref);
        for (size_t i = 1; i < m->nindex && !st; i++)
            if (strcmp(m->index[i].name, m->index[i - 1].name) == 0)
                st = FMT("%s: tensor '%s' is also in %s: a tensor must live in one shard", m->index[i].f->path,
                         m->index[i].name, m->index[i - 1].f->path);
    }
    if (!st && index_root) {
        json_object *wm = NULL;
        json_object_object_get_ex(index_root, "weight_map", &wm);
        size_t pos = 0;
        json_object_object_foreach(wm, tname, shard) {
            tref *r = (tref *)find(m, tname);
            if (r) r->index_pos = pos++;
            const char *sn = json_object_get_string(shard);
            const char *base = r ? strrchr(r->f->path, '/') : NULL;
            base = base ? base + 1 : r ? r->f->path : NULL;
            if (!r) {
                st = FMT("%s: weight_map names tensor '%s' in '%s', but that shard has no such tensor", ipath, tname, sn);
                break;
            }
            if (strcmp(base, sn) != 0) {
                st = FMT("%s: weight_map puts tensor '%s' in '%s', but it is in '%s'", ipath, tname, sn, base);
                break;
            }
        }
    }
    json_object_put(index_root);
    free(ipath);
    return st;
}

/* ---- config ---- */

static mpl_status read_config(mpl_model *m) {
    char *p = path_join(m->dir, "config.json");
    if (!p) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
    char *text;
    size_t len;
    mpl_status st = mpl_read_small_file(p, MPL_HF_MAX_JSON, &text, &len);
    if (st) {
        free(p);
        return st;
    }
    int has_quant = 0;
    st = mpl_hf_config_parse(p, text, len, &m->hf, &has_quant);
    if (!st) read_arch(m, p, text, len);
    free(text);
    if (!st && !has_quant) {
        /* AutoGPTQ writes quantize_config.json, AutoAWQ (old) quant_config.json. */
        static const char *const alt[] = {"quantize_config.json", "quant_config.json"};
        int found = 0;
        for (int i = 0; i < 2 && !found && !st; i++) {
            char *q = path_join(m->dir, alt[i]);
            if (!q) {
                st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            if (file_exists(q)) {
                found = 1;
                st = mpl_read_small_file(q, MPL_HF_MAX_JSON, &text, &len);
                if (!st) {
                    st = mpl_hf_quantize_config_parse(q, text, len, &m->hf);
                    free(text);
                }
            }
            free(q);
        }
        if (!st && !found)
            st = FMT("%s: no quantization_config (and no quantize_config.json or quant_config.json beside it): "
                     "not a quantized checkpoint",
                     p);
    }
    free(p);
    return st;
}

/* ---- layers ---- */

/* Checks tensor r of a layer: dtype among d1/d2/d3 and shape [d0] or [d0, d1] (d1 < 0: 1-D). */
static mpl_status expect(const char *layer, const char *what, const tref *r, mpl_dtype a, mpl_dtype b, mpl_dtype c,
                         int64_t d0, int64_t d1, int allow_1d) {
    char sh[128];
    if (!r) return FMT("layer '%s': tensor '%s.%s' is missing", layer, layer, what);
    const mpl_st_tensor *t = r->t;
    if (t->dtype == MPL_DTYPE_NONE || (t->dtype != a && t->dtype != b && t->dtype != c))
        return FMT("%s: tensor '%s' has dtype %s: expected %s%s%s%s%s", r->f->path, r->name, t->dtype_name,
                   mpl_dtype_name(a), b ? " or " : "", b ? mpl_dtype_name(b) : "", c ? " or " : "",
                   c ? mpl_dtype_name(c) : "");
    int ok = d1 < 0 ? (t->ndim == 1 && t->shape[0] == d0)
                    : ((t->ndim == 2 && t->shape[0] == d0 && t->shape[1] == d1) ||
                       (allow_1d && d1 == 1 && t->ndim == 1 && t->shape[0] == d0));
    if (!ok) {
        mpl_shape_str(t->shape, t->ndim, sh, sizeof sh);
        if (d1 < 0) return FMT("%s: tensor '%s' has shape %s: expected [%lld]", r->f->path, r->name, sh, (long long)d0);
        return FMT("%s: tensor '%s' has shape %s: expected [%lld, %lld]", r->f->path, r->name, sh, (long long)d0,
                   (long long)d1);
    }
    return MPL_OK;
}

static const tref *find_suffix(const mpl_model *m, const char *prefix, const char *suffix) {
    char buf[1024];
    if ((size_t)snprintf(buf, sizeof buf, "%s.%s", prefix, suffix) >= sizeof buf) return NULL;
    return find(m, buf);
}

/* The packed tensor's 2-D shape gives K and N (pf values per int32 along the packed dimension). */
static mpl_status dims_of(const char *layer, const tref *w, mpl_layout layout, int bits, int64_t *k, int64_t *n) {
    const mpl_st_tensor *t = w->t;
    char sh[128];
    mpl_dtype want = layout == MPL_LAYOUT_CT_INT ? MPL_DTYPE_I8 : MPL_DTYPE_I32;
    if (t->dtype != want)
        return FMT("%s: tensor '%s' has dtype %s: expected %s", w->f->path, w->name, t->dtype_name, mpl_dtype_name(want));
    if (t->ndim != 2) {
        mpl_shape_str(t->shape, t->ndim, sh, sizeof sh);
        return FMT("%s: tensor '%s' has shape %s: a linear layer's weight is 2-D", w->f->path, w->name, sh);
    }
    int64_t s0 = t->shape[0], s1 = t->shape[1];
    if (s0 < 1 || s1 < 1 || s0 > MPL_MAX_DIM || s1 > MPL_MAX_DIM)
        return FMT("%s: tensor '%s' has shape [%lld, %lld]: each dimension must be in 1..%lld", w->f->path, w->name,
                   (long long)s0, (long long)s1, (long long)MPL_MAX_DIM);
    /* Words along the packed dimension hold 32 / bits values each (3-bit: 32 values per 3 words). */
    const int64_t words = layout == MPL_LAYOUT_CT ? s1 : layout == MPL_LAYOUT_AWQ ? s1 : s0;
    /* (ct: weight_shape, when present, gives k exactly; the last word may be padded) */
    if (layout != MPL_LAYOUT_CT_INT && layout != MPL_LAYOUT_CT && (words * 32) % bits != 0)
        return FMT("%s: tensor '%s' has %lld words along its packed dimension: %d-bit values pack 32 per %d words, "
                   "so it must be a multiple of %d",
                   w->f->path, w->name, (long long)words, bits, bits, bits);
    const int64_t vals = words * 32 / bits;
    switch (layout) {
    case MPL_LAYOUT_CT: *n = s0, *k = vals; break;
    case MPL_LAYOUT_CT_INT: *n = s0, *k = s1; break;
    case MPL_LAYOUT_GPTQ:
    case MPL_LAYOUT_GPTQ_V2: *k = vals, *n = s1; break;
    case MPL_LAYOUT_AWQ: *k = s0, *n = vals; break;
    }
    (void)layer;
    return MPL_OK;
}

/*
 * g_idx's values, checked at open by the rule mpl_layer_create applies (src/decode/decode.c,
 * src/core/canonical.c): every entry in 0..G-1. Reading K values costs nothing next to the weights,
 * and it makes inspect's verdict the one apply gives. *irregular: some group does not hold exactly
 * group_size channels, which only the reference kernel runs (as create decides).
 */
static mpl_status check_g_idx(const tref *r, int64_t K, int64_t G, int64_t group_size, int *irregular) {
    int64_t *count = calloc((size_t)G, sizeof *count);
    if (!count) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory checking '%s'", r->f->path, r->name);
    const unsigned char *p = r->t->data;
    int wide = r->t->dtype == MPL_DTYPE_I64;
    for (int64_t i = 0; i < K; i++) {
        int64_t g;
        if (wide) {
            memcpy(&g, p + 8 * (size_t)i, 8);
        } else {
            int32_t v;
            memcpy(&v, p + 4 * (size_t)i, 4);
            g = v;
        }
        if (g < 0 || g >= G) {
            free(count);
            return FMT("%s: tensor '%s': g_idx[%lld] = %lld: must be in 0..%lld (k / group_size groups)", r->f->path,
                       r->name, (long long)i, (long long)g, (long long)G - 1);
        }
        count[g]++;
    }
    *irregular = 0;
    for (int64_t g = 0; g < G; g++)
        if (count[g] != group_size) *irregular = 1;
    free(count);
    return MPL_OK;
}

static mpl_status build_layer(mpl_model *m, const char *prefix, const mpl_hf_scheme *s, const tref *w, layer_rec *L) {
    mpl_status st;
    int64_t K = 0, N = 0;
    if ((st = dims_of(prefix, w, s->layout, s->bits, &K, &N))) return st;
    const int pf = 32 / s->bits;                  /* whole values per int32 (AWQ's packing along N) */
    const int kmult = s->bits == 3 ? 32 : pf;     /* k must be a multiple of this (mpl_config_validate) */
    const int64_t kwords = (int64_t)w->t->shape[1]; /* ct: words along K */
    int ct = s->layout == MPL_LAYOUT_CT || s->layout == MPL_LAYOUT_CT_INT;
    L->layout = s->layout;
    L->zero_word_add = 0;
    if (s->gptqmodel && s->layout == MPL_LAYOUT_GPTQ && !s->symmetric && s->bits != 3)
        L->zero_word_add = s->bits == 2 ? 0x55555555u : s->bits == 4 ? 0x11111111u : 0x01010101u;
    L->weight = w;
    L->scales = find_suffix(m, prefix, ct ? "weight_scale" : "scales");
    L->zeros = s->symmetric ? NULL : find_suffix(m, prefix, ct ? "weight_zero_point" : "qzeros");
    L->g_idx = s->act_order ? find_suffix(m, prefix, ct ? "weight_g_idx" : "g_idx") : NULL;
    L->bias = find_suffix(m, prefix, "bias");
    /* compressed-tensors records the unpacked [N, K]; K must be exact (packing pads the last word). */
    const tref *ws = ct ? find_suffix(m, prefix, "weight_shape") : NULL;
    if (ws) {
        if ((st = expect(prefix, "weight_shape", ws, MPL_DTYPE_I64, MPL_DTYPE_I32, 0, 2, -1, 0))) return st;
        int64_t v[2];
        if (ws->t->dtype == MPL_DTYPE_I64) {
            memcpy(v, ws->t->data, sizeof v);
        } else {
            int32_t v32[2];
            memcpy(v32, ws->t->data, sizeof v32);
            v[0] = v32[0], v[1] = v32[1];
        }
        if (v[0] != N || v[1] < 1 || v[1] > MPL_MAX_DIM || (v[1] * s->bits + 31) / 32 != kwords)
            return FMT("%s: tensor '%s' = [%lld, %lld] does not match '%s' (n = %lld, %lld words of %d-bit values "
                       "along k)",
                       ws->f->path, ws->name, (long long)v[0], (long long)v[1], w->name, (long long)N,
                       (long long)kwords, s->bits);
        if (v[1] % kmult != 0)
            return mpl_set_error(MPL_ERR_UNSUPPORTED,
                                 "%s: layer '%s': in_features %lld is not a multiple of %d (the last packed word is "
                                 "padded); mplinear needs k %% %d == 0 for %d-bit weights",
                                 ws->f->path, prefix, (long long)v[1], kmult, kmult, s->bits);
        K = v[1];
    }
    mpl_config *c = &L->cfg;
    mpl_config_init(c, K, N);
    c->wtype = s->wtype;
    c->group_size = s->group_size;
    c->zero_points = !s->symmetric;
    c->act_order = s->act_order;
    c->mode = s->mode;
    c->act = MPL_ACT_BF16;
    if (c->group_size != -1 && (K % c->group_size != 0))
        return FMT("%s: layer '%s': k = %lld is not a multiple of the config's group_size %lld", w->f->path, prefix,
                   (long long)K, (long long)c->group_size);
    if ((st = mpl_config_validate(c))) return prefix_error(st, "%s: layer '%s'", w->f->path, prefix);
    int64_t G = c->group_size == -1 ? 1 : K / c->group_size;
    int64_t Np = (N * s->bits + 31) / 32;
    mpl_dtype f16 = MPL_DTYPE_F16, bf16 = MPL_DTYPE_BF16, f32 = MPL_DTYPE_F32;
    if (ct) {
        if ((st = expect(prefix, "weight_scale", L->scales, f16, bf16, f32, N, G, 1))) return st;
        if (c->zero_points &&
            (st = expect(prefix, "weight_zero_point", L->zeros, MPL_DTYPE_I32, 0, 0, Np, G, 1)))
            return st;
    } else {
        if ((st = expect(prefix, "scales", L->scales, f16, bf16, f32, G, N, 0))) return st;
        if (c->zero_points) {
            if (s->layout == MPL_LAYOUT_AWQ && N % pf)
                return FMT("%s: layer '%s': AWQ with n = %lld: n must be a multiple of %d", w->f->path, prefix,
                           (long long)N, pf);
            if ((st = expect(prefix, "qzeros", L->zeros, MPL_DTYPE_I32, 0, 0, G, s->layout == MPL_LAYOUT_AWQ ? N / pf : Np, 0)))
                return st;
        }
    }
    if (c->act_order && (st = expect(prefix, ct ? "weight_g_idx" : "g_idx", L->g_idx, MPL_DTYPE_I32, MPL_DTYPE_I64, 0, K, -1, 0)))
        return st;
    if (c->act_order && (st = check_g_idx(L->g_idx, K, G, c->group_size, &L->irregular))) return st;
    if (L->bias && (st = expect(prefix, "bias", L->bias, f16, bf16, f32, N, -1, 0))) return st;
    return MPL_OK;
}

static mpl_status add_layer(mpl_model *m, const char *prefix, const tref *w, int *cap) {
    const mpl_hf_scheme *s = mpl_hf_config_match(&m->hf, prefix);
    if (!s) {
        if (m->hf.method == MPL_HF_CT)
            return FMT("%s: module '%s' holds quantized tensor '%s' but config.json's config_groups do not target "
                       "it (or its ignore list names it)",
                       w->f->path, prefix, w->name);
        return MPL_OK; /* AWQ modules_to_not_convert */
    }
    int want_int = s->layout == MPL_LAYOUT_CT_INT;
    int have_int = ends_with(w->name, ".weight");
    if (m->hf.method == MPL_HF_CT && want_int != have_int)
        return FMT("%s: module '%s' is stored %s but its config group's format is %s", w->f->path, prefix,
                   have_int ? "int-quantized (weight + weight_scale)" : "pack-quantized (weight_packed)",
                   want_int ? "int-quantized" : "pack-quantized");
    if (m->nlayers == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        layer_rec *nl = realloc(m->layers, (size_t)nc * sizeof *nl);
        if (!nl) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
        m->layers = nl;
        *cap = nc;
    }
    layer_rec *L = &m->layers[m->nlayers];
    memset(L, 0, sizeof *L);
    if (!(L->name = strdup(prefix))) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "out of memory");
    m->nlayers++;
    return build_layer(m, prefix, s, w, L);
}

static mpl_status find_layers(mpl_model *m) {
    int cap = 0;
    char prefix[1024];
    for (size_t i = 0; i < m->nindex; i++) {
        const tref *r = &m->index[i];
        const char *suffix = NULL;
        if (m->hf.method == MPL_HF_CT) {
            if (ends_with(r->name, ".weight_packed"))
                suffix = ".weight_packed";
            else if (ends_with(r->name, ".weight") && r->t->dtype == MPL_DTYPE_I8)
                suffix = ".weight"; /* int-quantized: int8 values beside weight_scale */
        } else if (ends_with(r->name, ".qweight")) {
            suffix = ".qweight";
        }
        if (!suffix) continue;
        size_t pl = strlen(r->name) - strlen(suffix);
        if (pl == 0 || pl >= sizeof prefix)
            return FMT("%s: tensor '%s': module name empty or longer than %zu bytes", r->f->path, r->name,
                       sizeof prefix - 1);
        memcpy(prefix, r->name, pl);
        prefix[pl] = '\0';
        if (strcmp(suffix, ".weight") == 0 && !find_suffix(m, prefix, "weight_scale")) continue;
        mpl_status st = add_layer(m, prefix, r, &cap);
        if (st) return st;
    }
    if (m->nlayers == 0)
        return FMT("%s: no quantized linear layer found (%s checkpoint: looked for %s)", m->dir,
                   mpl_hf_method_name(m->hf.method),
                   m->hf.method == MPL_HF_CT ? "'*.weight_packed' or int8 '*.weight' with '*.weight_scale'"
                                             : "'*.qweight'");
    order_layers(m, m->has_index);
    /* The activation type: torch_dtype, else the first layer's scale type. */
    m->act = m->hf.act;
    if (!m->act) {
        mpl_dtype d = m->layers[0].scales->t->dtype;
        m->act = d == MPL_DTYPE_F16 ? MPL_ACT_F16 : d == MPL_DTYPE_F32 ? MPL_ACT_F32 : MPL_ACT_BF16;
    }
    for (int i = 0; i < m->nlayers; i++) m->layers[i].cfg.act = m->act;
    return MPL_OK;
}

/* ---- public API ---- */

void mpl_model_close(mpl_model *m) {
    if (!m) return;
    for (int i = 0; i < m->nlayers; i++) free(m->layers[i].name);
    free(m->layers);
    free(m->index);
    for (int i = 0; i < m->nfiles; i++) mpl_st_close(m->files[i]);
    free(m->files);
    mpl_hf_config_free(&m->hf);
    free(m->dir);
    free(m);
}

mpl_status mpl_model_open(const char *dir, mpl_model **out) {
    mpl_clear_error();
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_open: out is NULL");
    *out = NULL;
    if (!dir || !*dir) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_open: dir is NULL or empty");
    mpl_model *m = calloc(1, sizeof *m);
    if (!m || !(m->dir = strdup(dir))) {
        free(m);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "mpl_model_open: out of memory");
    }
    mpl_status st = read_config(m);
    if (!st) st = open_files(m);
    if (!st) st = find_layers(m);
    if (st) {
        mpl_model_close(m);
        return st;
    }
    *out = m;
    return MPL_OK;
}

const char *mpl_model_quant_method(const mpl_model *m) { return m ? mpl_hf_method_name(m->hf.method) : NULL; }
mpl_act mpl_model_act(const mpl_model *m) { return m ? m->act : (mpl_act)0; }
int mpl_model_layer_count(const mpl_model *m) { return m ? m->nlayers : 0; }

static mpl_status check_index(const mpl_model *m, int i, const char *fn) {
    if (!m) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "%s: model is NULL", fn);
    if (i < 0 || i >= m->nlayers)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "%s: layer index %d: must be in 0..%d", fn, i, m->nlayers - 1);
    return MPL_OK;
}

mpl_status mpl_model_layer_get(const mpl_model *m, int i, mpl_model_layer_info *out) {
    mpl_status st = check_index(m, i, "mpl_model_layer_get");
    if (st) return st;
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_layer_get: out is NULL");
    const layer_rec *L = &m->layers[i];
    out->name = L->name;
    out->config = L->cfg;
    out->layout = L->layout;
    out->zeros_word_add = L->zero_word_add;
    out->has_bias = L->bias != NULL;
    out->file = L->weight->f->path;
    return MPL_OK;
}

mpl_status mpl_model_find_layer(const mpl_model *m, const char *name, int *index) {
    if (!m || !name || !index) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_find_layer: NULL argument");
    for (int i = 0; i < m->nlayers; i++)
        if (strcmp(m->layers[i].name, name) == 0) {
            *index = i;
            return MPL_OK;
        }
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "%s: no quantized linear layer named '%s' (%d layers; see inspect)",
                         m->dir, name, m->nlayers);
}

/*
 * A borrowed view of a tensor for the decoder. The decoders read elements
 * through typed pointers, so a tensor whose bytes are not aligned to its
 * element size (legal in safetensors) is copied into *copy first.
 */
static mpl_status view(const tref *r, mpl_tensor *t, void **copy) {
    *copy = NULL;
    memset(t, 0, sizeof *t);
    if (!r) return MPL_OK;
    size_t es = mpl_dtype_size(r->t->dtype);
    size_t bytes = (size_t)(r->t->end - r->t->begin);
    const void *p = r->t->data;
    if (es > 1 && ((uintptr_t)p % es) != 0) {
        *copy = malloc(bytes ? bytes : 1);
        if (!*copy) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory copying '%s'", r->f->path, r->name);
        memcpy(*copy, p, bytes);
        p = *copy;
    }
    t->data = p;
    t->dtype = r->t->dtype;
    t->ndim = r->t->ndim;
    for (int d = 0; d < r->t->ndim && d < MPL_MAX_DIMS; d++) t->shape[d] = r->t->shape[d];
    return MPL_OK;
}

/* GPTQModel's v1 zeros -> gptq-v2 zeros: each int32 word of qzeros plus L->zero_word_add (mod 2^32), in a copy
 * (*copy: the view's own copy, if it made one, is reused). */
static mpl_status gptqmodel_zeros(const layer_rec *L, mpl_checkpoint_tensors *ck, void **copy) {
    if (!L->zero_word_add || !ck->zeros.data) return MPL_OK;
    size_t words = (size_t)(L->zeros->t->end - L->zeros->t->begin) / 4;
    uint32_t *w = *copy;
    if (!w) {
        w = malloc(words ? words * 4 : 4);
        if (!w) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory copying '%s'", L->zeros->f->path,
                                     L->zeros->name);
        memcpy(w, ck->zeros.data, words * 4);
        *copy = w;
    }
    for (size_t j = 0; j < words; j++) w[j] += L->zero_word_add;
    ck->zeros.data = w;
    ck->layout = MPL_LAYOUT_GPTQ_V2;
    return MPL_OK;
}

mpl_status mpl_model_layer_create(const mpl_model *m, int i, const mpl_options *opt, mpl_act act, mpl_layer **out) {
    mpl_clear_error();
    if (out) *out = NULL;
    mpl_status st = check_index(m, i, "mpl_model_layer_create");
    if (st) return st;
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_layer_create: out is NULL");
    const layer_rec *L = &m->layers[i];
    mpl_config c = L->cfg;
    if (act) c.act = act;
    mpl_checkpoint_tensors ck = {.layout = L->layout};
    void *copies[4] = {0};
    if (!(st = view(L->weight, &ck.weight, &copies[0])) && !(st = view(L->scales, &ck.scales, &copies[1])) &&
        !(st = view(L->zeros, &ck.zeros, &copies[2])) && !(st = view(L->g_idx, &ck.g_idx, &copies[3])) &&
        !(st = gptqmodel_zeros(L, &ck, &copies[2]))) {
        st = mpl_layer_create(&c, &ck, opt, out);
        if (st) st = prefix_error(st, "layer '%s' (%s)", L->name, L->weight->f->path);
    }
    for (int j = 0; j < 4; j++) free(copies[j]);
    return st;
}

mpl_status mpl_model_layer_bias(const mpl_model *m, int i, mpl_act act, void *out) {
    mpl_status st = check_index(m, i, "mpl_model_layer_bias");
    if (st) return st;
    const layer_rec *L = &m->layers[i];
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_layer_bias: out is NULL");
    if (!L->bias) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "layer '%s' has no bias", L->name);
    if (!act) act = m->act;
    if (act < MPL_ACT_F16 || act > MPL_ACT_F32)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_layer_bias: act = %d: not f16, bf16 or f32", (int)act);
    const uint8_t *src = L->bias->t->data;
    for (int64_t n = 0; n < L->cfg.n; n++) {
        float v;
        if (L->bias->t->dtype == MPL_DTYPE_F32) {
            memcpy(&v, src + 4 * n, 4);
        } else {
            uint16_t h;
            memcpy(&h, src + 2 * n, 2);
            v = L->bias->t->dtype == MPL_DTYPE_F16 ? mpl_f16_to_f32(h) : mpl_bf16_to_f32(h);
        }
        mpl_f32_to_act(act, &v, (uint8_t *)out + (size_t)n * mpl_act_size(act), 1);
    }
    return MPL_OK;
}

const char *mpl_model_layer_order(const mpl_model *m) { return m ? m->order : NULL; }

mpl_status mpl_model_layer_choose(const mpl_model *m, int i, const mpl_options *opt, mpl_act act, const char **chosen) {
    mpl_clear_error();
    if (chosen) *chosen = NULL;
    mpl_status st = check_index(m, i, "mpl_model_layer_choose");
    if (st) return st;
    if (!chosen) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_model_layer_choose: chosen is NULL");
    const layer_rec *L = &m->layers[i];
    mpl_config c = L->cfg;
    if (act) c.act = act;
    mpl_options defaults;
    mpl_options_init(&defaults);
    if (!opt) opt = &defaults;
    /* What mpl_layer_create checks, in its order, short of decoding and packing the weights. */
    if (opt->threads < 0)
        st = mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "options threads = %d: must be 0 (all cores) or positive",
                           opt->threads);
    if (!st) st = mpl_config_validate(&c);
    const mpl_kernel_desc *d = NULL;
    if (!st) st = mpl_choose_internal(&c, opt, 0, &d, NULL, 0, NULL);
    /* The one layout whose values decoding range-checks (src/decode/ct.c): int8 storage of int4. */
    if (!st && L->layout == MPL_LAYOUT_CT_INT) {
        const int8_t *v = L->weight->t->data;
        for (int64_t n = 0; n < c.n && !st; n++)
            for (int64_t k = 0; k < c.k; k++) {
                int x = v[n * c.k + k];
                if (x < -8 || x > 7) {
                    st = mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                                       "weight[%lld, %lld] = %d: int-quantized int4 values must be in -8..7",
                                       (long long)n, (long long)k, x);
                    break;
                }
            }
    }
    if (!st && L->irregular) st = mpl_choose_internal(&c, opt, 1, &d, NULL, 0, NULL);
    if (st) return prefix_error(st, "layer '%s' (%s)", L->name, L->weight->f->path);
    *chosen = d->name;
    return MPL_OK;
}

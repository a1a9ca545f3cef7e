/*
 * shard.c -- tensor parallelism: the shard rules, the slice of the canonical form that one rank
 * holds, and the host stand-in that runs R ranks in one process (docs/tensor-parallel.md).
 *
 * Sharding is a slice of the canonical (decoded) form, not of the checkpoint tensors: one
 * implementation covers every layout the decoders read (gptq, gptq-v2, awq, ct, ct-int). The
 * whole checkpoint is decoded with the whole layer's config, the rank's slice is cut out of the
 * canonical codes, scales, zeros and g_idx, and the slice goes through the second half of
 * mpl_layer_create (resolve act-order, choose, pack) like any decoded layer.
 *
 * The rules live in mpl_shard_config (the public header lists them); every refusal names the rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../decode/decode.h"
#include "internal.h"

const char *mpl_tp_mode_name(mpl_tp_mode m) {
    return m == MPL_TP_COLUMN ? "column" : m == MPL_TP_ROW ? "row" : "unknown";
}

mpl_status mpl_tp_mode_parse(const char *s, mpl_tp_mode *out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_tp_mode_parse: out is NULL");
    if (s && strcmp(s, "column") == 0) *out = MPL_TP_COLUMN;
    else if (s && strcmp(s, "row") == 0) *out = MPL_TP_ROW;
    else
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "unknown tensor-parallel mode '%s': must be column or row",
                             s ? s : "(null)");
    return MPL_OK;
}

#define REFUSE(...) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, __VA_ARGS__)

/* One group over K: group_size -1, or a group_size equal to K (then g_idx, if any, is all 0). */
static int one_group(const mpl_config *c) { return c->group_size == -1 || c->group_size == c->k; }

mpl_status mpl_shard_config(const mpl_config *full, mpl_layout layout, const mpl_shard *sh, mpl_config *out,
                            int64_t *offset) {
    if (!full || !sh || !out) REFUSE("mpl_shard_config: config, shard or out is NULL");
    mpl_status st = mpl_config_validate(full);
    if (st != MPL_OK) return st;
    if ((full->full_k != 0 && full->full_k != full->k) || (full->full_n != 0 && full->full_n != full->n))
        REFUSE("tensor parallel: config full_k = %lld, full_n = %lld with k = %lld, n = %lld is already a slice: "
               "shard the whole layer (full_k, full_n 0 or equal to k, n)",
               (long long)full->full_k, (long long)full->full_n, (long long)full->k, (long long)full->n);
    if (sh->mode != MPL_TP_COLUMN && sh->mode != MPL_TP_ROW)
        REFUSE("tensor parallel: mode %d: must be column (%d) or row (%d)", (int)sh->mode, (int)MPL_TP_COLUMN,
               (int)MPL_TP_ROW);
    if (sh->ranks < 1 || sh->ranks > MPL_TP_MAX_RANKS)
        REFUSE("tensor parallel: ranks = %d: must be in 1..%d", sh->ranks, MPL_TP_MAX_RANKS);
    if (sh->rank < 0 || sh->rank >= sh->ranks)
        REFUSE("tensor parallel: rank = %d: must be in 0..%d (ranks = %d)", sh->rank, sh->ranks - 1, sh->ranks);
    const char *mode = mpl_tp_mode_name(sh->mode);
    const int64_t K = full->k, N = full->n, R = sh->ranks, gs = full->group_size;
    const int pf = 32 / mpl_wtype_bits(full->wtype);
    /* The layout's own rules on the whole layer (the decoder checks them again with the tensors). */
    if (!strcmp(mpl_layout_name(layout), "unknown"))
        REFUSE("checkpoint layout %d: not a known layout (ct, gptq, gptq-v2, awq, ct-int)", (int)layout);
    if (layout == MPL_LAYOUT_AWQ && (N % pf != 0 || full->act_order))
        REFUSE("layout awq with n = %lld%s: AWQ needs n a multiple of %d and has no g_idx", (long long)N,
               full->act_order ? " and act_order" : "", pf);
    if (layout == MPL_LAYOUT_CT_INT && full->wtype != MPL_WTYPE_INT4)
        REFUSE("layout ct-int with wtype %s: int-quantized checkpoints hold int4", mpl_wtype_name(full->wtype));

    mpl_config c = *full;
    c.full_k = K;
    c.full_n = N;
    int64_t first;
    if (sh->mode == MPL_TP_COLUMN) {
        if (N % R != 0)
            REFUSE("tensor parallel %s: n = %lld over %d ranks: n must be a multiple of the ranks (each holds n / ranks "
                   "output channels)",
                   mode, (long long)N, sh->ranks);
        const int64_t nl = N / R;
        if (layout == MPL_LAYOUT_AWQ && nl % pf != 0)
            REFUSE("tensor parallel %s: n / ranks = %lld with layout awq: AWQ packs %d output channels per int32 along "
                   "N, so n / ranks must be a multiple of %d (no shard boundary inside a word)",
                   mode, (long long)nl, pf, pf);
        if (full->zero_points && nl % pf != 0)
            REFUSE("tensor parallel %s: n / ranks = %lld with zero points: zero points are packed %d per int32 along "
                   "N, so n / ranks must be a multiple of %d (no shard boundary inside a word)",
                   mode, (long long)nl, pf, pf);
        c.n = nl;
        first = (int64_t)sh->rank * nl;
    } else {
        if (K % R != 0)
            REFUSE("tensor parallel %s: k = %lld over %d ranks: k must be a multiple of the ranks (each holds k / ranks "
                   "input channels)",
                   mode, (long long)K, sh->ranks);
        const int64_t kl = K / R;
        if (kl % pf != 0)
            REFUSE("tensor parallel %s: k / ranks = %lld with %s weights: weights are packed %d per int32 along K, so "
                   "k / ranks must be a multiple of %d (no shard boundary inside a word)",
                   mode, (long long)kl, mpl_wtype_name(full->wtype), pf, pf);
        if (one_group(full)) {
            /* Every rank keeps the per-channel scales of the one group; act-order with one group is trivial. */
            c.group_size = -1;
            c.act_order = 0;
        } else if (!full->act_order && kl % gs != 0) {
            REFUSE("tensor parallel %s: k / ranks = %lld with group_size %lld and no act-order: group %lld "
                   "(input channels %lld..%lld) straddles ranks 0 and 1; k / ranks must be a multiple of group_size",
                   mode, (long long)kl, (long long)gs, (long long)(kl / gs), (long long)(kl / gs * gs),
                   (long long)(kl / gs * gs + gs - 1));
        }
        c.k = kl;
        first = (int64_t)sh->rank * kl;
    }
    if ((st = mpl_config_validate(&c)) != MPL_OK) return st;
    *out = c;
    if (offset) *offset = first;
    return MPL_OK;
}

/* Column shard: rows n0..n0+n-1 of every [n][...] array; g_idx (over the whole K) as it is. */
static mpl_status slice_column(const mpl_canonical *fw, const mpl_config *sc, int64_t n0, mpl_canonical *w) {
    mpl_status st = mpl_canonical_alloc_groups(w, sc, fw->groups);
    if (st != MPL_OK) return st;
    const int64_t K = fw->k, G = fw->groups, n = sc->n;
    memcpy(w->codes, fw->codes + n0 * K, (size_t)n * (size_t)K);
    memcpy(w->scales, fw->scales + n0 * G, (size_t)n * (size_t)G * sizeof(float));
    if (w->zeros) memcpy(w->zeros, fw->zeros + n0 * G, (size_t)n * (size_t)G);
    if (w->g_idx) memcpy(w->g_idx, fw->g_idx, (size_t)K * sizeof(int32_t));
    return MPL_OK;
}

/*
 * Row shard: columns k0..k0+k-1 of the codes. Without act-order the groups are contiguous: groups
 * k0/gs.. of the scales and zeros (or the one group). With act-order: the groups the slice's g_idx
 * entries name, in ascending order, renumbered 0..; their scales and zeros.
 */
static mpl_status slice_row(const mpl_canonical *fw, const mpl_config *full, const mpl_config *sc, int64_t k0,
                            mpl_canonical *w) {
    const int64_t K = fw->k, G = fw->groups, N = fw->n, kl = sc->k;
    int32_t *map = NULL; /* act-order: full group -> shard group, -1 when unnamed */
    int64_t gl, g0 = 0;
    if (sc->act_order) {
        map = malloc((size_t)G * sizeof(int32_t));
        if (!map) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "tensor parallel: cannot allocate %lld group indices",
                                       (long long)G);
        for (int64_t g = 0; g < G; g++) map[g] = -1;
        for (int64_t k = 0; k < kl; k++) map[fw->g_idx[k0 + k]] = 0;
        gl = 0;
        for (int64_t g = 0; g < G; g++)
            if (map[g] == 0) map[g] = (int32_t)gl++;
            else map[g] = -1;
    } else if (sc->group_size == -1) {
        gl = 1; /* the one group of the whole layer (full->group_size is -1 or K) */
    } else {
        gl = kl / full->group_size;
        g0 = k0 / full->group_size;
    }
    mpl_status st = mpl_canonical_alloc_groups(w, sc, gl);
    if (st != MPL_OK) {
        free(map);
        return st;
    }
    for (int64_t n = 0; n < N; n++) memcpy(w->codes + n * kl, fw->codes + n * K + k0, (size_t)kl);
    if (map) {
        for (int64_t k = 0; k < kl; k++) w->g_idx[k] = map[fw->g_idx[k0 + k]];
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++) {
                if (map[g] < 0) continue;
                w->scales[n * gl + map[g]] = fw->scales[n * G + g];
                if (w->zeros) w->zeros[n * gl + map[g]] = fw->zeros[n * G + g];
            }
        free(map);
    } else {
        for (int64_t n = 0; n < N; n++) {
            memcpy(w->scales + n * gl, fw->scales + n * G + g0, (size_t)gl * sizeof(float));
            if (w->zeros) memcpy(w->zeros + n * gl, fw->zeros + n * G + g0, (size_t)gl);
        }
    }
    return MPL_OK;
}

/* Rank r's layer from the decoded whole layer fw: its config and static plan, then the slice. */
static mpl_status create_rank(const mpl_config *full, const mpl_canonical *fw, mpl_layout layout, const mpl_shard *sh,
                              const mpl_options *opt, mpl_layer **out) {
    mpl_config sc;
    int64_t first;
    mpl_plan plan;
    mpl_canonical w;
    mpl_status st = mpl_shard_config(full, layout, sh, &sc, &first);
    if (st == MPL_OK) st = mpl_choose_plan(&sc, opt, 0, &plan, NULL, 0, NULL);
    if (st == MPL_OK)
        st = sh->mode == MPL_TP_COLUMN ? slice_column(fw, &sc, first, &w) : slice_row(fw, full, &sc, first, &w);
    if (st != MPL_OK) return st;
    return mpl_layer_create_canonical(&sc, opt, &plan, &w, out);
}

static mpl_status check_options(const mpl_options *opt) {
    if (opt->threads < 0) REFUSE("options threads = %d: must be 0 (all cores) or positive", opt->threads);
    return MPL_OK;
}

mpl_status mpl_layer_create_shard(const mpl_config *full, const mpl_checkpoint_tensors *ckpt, const mpl_shard *sh,
                                  const mpl_options *opt, mpl_layer **out) {
    mpl_clear_error();
    if (!out) REFUSE("mpl_layer_create_shard: out is NULL");
    *out = NULL;
    if (!full || !ckpt || !sh) REFUSE("mpl_layer_create_shard: config, checkpoint or shard is NULL");
    mpl_options defaults;
    mpl_options_init(&defaults);
    if (!opt) opt = &defaults;
    mpl_config sc;
    mpl_plan plan;
    mpl_status st = check_options(opt);
    /* The rules and a static choice first: a refusal costs no decoding. */
    if (st == MPL_OK) st = mpl_shard_config(full, ckpt->layout, sh, &sc, NULL);
    if (st == MPL_OK) st = mpl_choose_plan(&sc, opt, 0, &plan, NULL, 0, NULL);
    if (st != MPL_OK) return st;
    mpl_canonical fw;
    if ((st = mpl_decode_checkpoint(full, ckpt, &fw)) != MPL_OK) return st;
    st = create_rank(full, &fw, ckpt->layout, sh, opt, out);
    mpl_canonical_free(&fw);
    return st;
}

mpl_status mpl_layer_create_shards(const mpl_config *full, const mpl_checkpoint_tensors *ckpt, mpl_tp_mode mode,
                                   int ranks, const mpl_options *opts, mpl_layer **layers) {
    mpl_clear_error();
    if (!layers) REFUSE("mpl_layer_create_shards: layers is NULL");
    if (ranks < 1 || ranks > MPL_TP_MAX_RANKS)
        REFUSE("tensor parallel: ranks = %d: must be in 1..%d", ranks, MPL_TP_MAX_RANKS);
    for (int r = 0; r < ranks; r++) layers[r] = NULL;
    if (!full || !ckpt) REFUSE("mpl_layer_create_shards: config or checkpoint is NULL");
    mpl_options defaults;
    mpl_options_init(&defaults);
    mpl_status st = MPL_OK;
    for (int r = 0; r < ranks && st == MPL_OK; r++) {
        mpl_shard sh = {mode, r, ranks};
        mpl_config sc;
        mpl_plan plan;
        const mpl_options *o = opts ? &opts[r] : &defaults;
        st = check_options(o);
        if (st == MPL_OK) st = mpl_shard_config(full, ckpt->layout, &sh, &sc, NULL);
        if (st == MPL_OK) st = mpl_choose_plan(&sc, o, 0, &plan, NULL, 0, NULL);
    }
    if (st != MPL_OK) return st;
    mpl_canonical fw;
    if ((st = mpl_decode_checkpoint(full, ckpt, &fw)) != MPL_OK) return st;
    for (int r = 0; r < ranks && st == MPL_OK; r++) {
        mpl_shard sh = {mode, r, ranks};
        st = create_rank(full, &fw, ckpt->layout, &sh, opts ? &opts[r] : &defaults, &layers[r]);
        if (st != MPL_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", mpl_last_error());
            st = mpl_set_error(st, "rank %d of %d: %s", r, ranks, msg);
        }
    }
    mpl_canonical_free(&fw);
    if (st != MPL_OK)
        for (int r = 0; r < ranks; r++) {
            mpl_layer_destroy(layers[r]);
            layers[r] = NULL;
        }
    return st;
}

/* ---- the host stand-in ---- */

mpl_status mpl_tp_apply_host(mpl_layer *const *layers, int ranks, mpl_tp_mode mode, int64_t m, const void *x,
                             const void *bias, void *y) {
    if (!layers) REFUSE("tp apply: layers is NULL");
    if (ranks < 1 || ranks > MPL_TP_MAX_RANKS) REFUSE("tp apply: ranks = %d: must be in 1..%d", ranks, MPL_TP_MAX_RANKS);
    if (mode != MPL_TP_COLUMN && mode != MPL_TP_ROW) REFUSE("tp apply: mode %d: must be column or row", (int)mode);
    if (m < 0 || m > MPL_MAX_M) REFUSE("tp apply: m = %lld: must be in 0..%lld", (long long)m, (long long)MPL_MAX_M);
    for (int r = 0; r < ranks; r++)
        if (!layers[r]) REFUSE("tp apply: layers[%d] is NULL", r);
    const mpl_config *c0 = mpl_layer_config(layers[0]);
    const int64_t K = c0->full_k, N = c0->full_n, R = ranks;
    const mpl_act act = c0->act;
    for (int r = 0; r < ranks; r++) {
        const mpl_config *c = mpl_layer_config(layers[r]);
        int ok = c->act == act && c->full_k == K && c->full_n == N &&
                 (mode == MPL_TP_COLUMN ? c->k == K && c->n * R == N : c->n == N && c->k * R == K);
        if (!ok)
            REFUSE("tp apply: layers[%d] (k = %lld, n = %lld, full_k = %lld, full_n = %lld, %s) is not a %s shard of "
                   "the %lld x %lld %s layer over %d ranks",
                   r, (long long)c->k, (long long)c->n, (long long)c->full_k, (long long)c->full_n,
                   mpl_act_name(c->act), mpl_tp_mode_name(mode), (long long)K, (long long)N, mpl_act_name(act), ranks);
    }
    if (m == 0) return MPL_OK;
    if (!x || !y) REFUSE("tp apply: x or y is NULL");
    const size_t es = mpl_act_size(act);
    const int64_t kl = mode == MPL_TP_ROW ? K / R : K, nl = mode == MPL_TP_COLUMN ? N / R : N;
    size_t bx, bp, bacc;
    if (!mpl_size_mul3(m, kl, (int64_t)es, &bx) || !mpl_size_mul3(m, nl, (int64_t)es, &bp) ||
        !mpl_size_mul3(m, N, (int64_t)sizeof(float), &bacc))
        return mpl_set_error(MPL_ERR_OVERFLOW, "tp apply: m = %lld rows: byte count overflows", (long long)m);
    char *xr = mode == MPL_TP_ROW ? malloc(bx) : NULL;
    char *part = malloc(bp);
    float *acc = mode == MPL_TP_ROW ? malloc(bacc) : NULL, *pf = mode == MPL_TP_ROW ? malloc(bacc) : NULL;
    mpl_status st = MPL_OK;
    if (!part || (mode == MPL_TP_ROW && (!xr || !acc || !pf))) {
        st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "tp apply: cannot allocate temporaries for m = %lld rows",
                           (long long)m);
        goto out;
    }
    const char *xc = x, *bc = bias;
    char *yc = y;
    for (int r = 0; r < ranks && st == MPL_OK; r++) {
        if (mode == MPL_TP_COLUMN) {
            /* Rank r: all of x, its bias slice, outputs [r*nl, (r+1)*nl) of every row. */
            st = mpl_layer_apply(layers[r], m, x, bc ? bc + (size_t)(r * nl) * es : NULL, part);
            if (st != MPL_OK) break;
            for (int64_t i = 0; i < m; i++)
                memcpy(yc + ((size_t)i * (size_t)N + (size_t)(r * nl)) * es, part + (size_t)i * (size_t)nl * es,
                       (size_t)nl * es);
        } else {
            /* Rank r: its K slice of every row of x; the bias on rank 0 only; partial in the activation type. */
            for (int64_t i = 0; i < m; i++)
                memcpy(xr + (size_t)i * (size_t)kl * es, xc + ((size_t)i * (size_t)K + (size_t)(r * kl)) * es,
                       (size_t)kl * es);
            st = mpl_layer_apply(layers[r], m, xr, r == 0 ? bias : NULL, part);
            if (st != MPL_OK) break;
            mpl_act_to_f32(act, part, r == 0 ? acc : pf, m * N);
            if (r > 0)
                for (size_t i = 0; i < (size_t)(m * N); i++) acc[i] += pf[i]; /* fp32, rank order */
        }
    }
    if (st == MPL_OK && mode == MPL_TP_ROW) mpl_f32_to_act(act, acc, y, m * N);
out:
    free(xr);
    free(part);
    free(acc);
    free(pf);
    return st;
}

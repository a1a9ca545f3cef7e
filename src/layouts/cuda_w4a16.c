/* cuda_w4a16.c -- canonical <-> the CUDA W4A16 packed layout (docs/layouts/cuda_w4a16.md), on the host. */
#include "cuda_w4a16.h"

#include <stdlib.h>
#include <string.h>

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

size_t mpl_cuda_w4a16_qweight_bytes(const mpl_cuda_w4a16_layout *l) { return (size_t)l->n_pad * (size_t)l->k_pad / 2; }
size_t mpl_cuda_w4a16_scales_bytes(const mpl_cuda_w4a16_layout *l) {
    return (size_t)l->groups * (size_t)l->n_pad * 2 * (l->scale_fmt == MPL_CUDA_W4A16_SCALE_F32 ? 2 : 1);
}
size_t mpl_cuda_w4a16_zeros_bytes(const mpl_cuda_w4a16_layout *l) { return l->zeros ? (size_t)l->groups * (size_t)l->n_pad : 0; }

void mpl_cuda_w4a16_layout_free(mpl_cuda_w4a16_layout *l) {
    if (!l) return;
    free(l->qweight);
    free(l->scales);
    free(l->scales_lo);
    free(l->zeros);
    free(l->perm);
    memset(l, 0, sizeof *l);
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Is every scale exactly representable in the 16-bit format (bitwise round trip)? */
static bool all_exact(const float *s, size_t n, int fmt) {
    for (size_t i = 0; i < n; i++) {
        float back = fmt == MPL_CUDA_W4A16_SCALE_F16 ? mpl_f16_to_f32(mpl_f32_to_f16(s[i]))
                                              : mpl_bf16_to_f32(mpl_f32_to_bf16(s[i]));
        if (f32_bits(back) != f32_bits(s[i])) return false;
    }
    return true;
}

typedef struct {
    mpl_cuda_w4a16_layout *l;
    const mpl_canonical *w;
} pack_job;

/* The nibble of row n at packed position p. Codes of every 2-, 3- and 4-bit type go in as the 4-bit code the kernels
 * read (mpl_code4, core/internal.h; docs/layouts/cuda_w4a16.md, "Widths below 4 bits, and int4"): exact, so every
 * 4-bit path serves them unchanged. Halves: the 2-bit codes of channels 128 v + p % 64 (bits 0-1) and 128 v + 64 +
 * p % 64 (bits 2-3) of chunk v = p / 64, after the act-order sort; padding rows hold code 2 twice (uint2b2's zero).
 * Thirds: packed chunk 3u + s holds the 3-bit code of channel 256 u + 64 s + p % 64 (bits 0-2) and bit 2 - s of channel
 * 256 u + 192 + p % 64's (bit 3); padding rows hold code 4 (uint3b4's zero) in all four chunks. */
static uint32_t packed_nibble(const mpl_cuda_w4a16_layout *l, const mpl_canonical *w, int64_t n, int64_t p) {
    if (l->thirds) {
        const int64_t pc = p / MPL_CUDA_W4A16_KC, u = pc / 3, s = pc % 3, j = p % MPL_CUDA_W4A16_KC;
        if (n >= w->n) return s == 0 ? 0xcu : 0x4u;
        const uint8_t *row = w->codes + n * w->k;
        const int64_t lo = 4 * u * MPL_CUDA_W4A16_KC + s * MPL_CUDA_W4A16_KC + j, hi = (4 * u + 3) * MPL_CUDA_W4A16_KC + j;
        return (uint32_t)(row[w->perm ? w->perm[lo] : lo] & 7u) |
               ((uint32_t)(row[w->perm ? w->perm[hi] : hi] >> (2 - s)) & 1u) << 3;
    }
    if (l->halves) {
        if (n >= w->n) return 0xau;
        const uint8_t *row = w->codes + n * w->k;
        const int64_t lo = p / MPL_CUDA_W4A16_KC * 2 * MPL_CUDA_W4A16_KC + p % MPL_CUDA_W4A16_KC, hi = lo + MPL_CUDA_W4A16_KC;
        return (uint32_t)(row[w->perm ? w->perm[lo] : lo] & 3u) | (uint32_t)(row[w->perm ? w->perm[hi] : hi] & 3u) << 2;
    }
    if (n >= w->n || p >= w->k) return MPL_CUDA_W4A16_PAD_CODE;
    return mpl_code4(w->wtype, w->codes[n * w->k + (w->perm ? w->perm[p] : p)]) & 15u;
}

static void pack_rows(void *ctx, int tid, int nthreads) {
    const pack_job *job = ctx;
    mpl_cuda_w4a16_layout *l = job->l;
    int64_t NT = l->n_pad / MPL_CUDA_W4A16_NT, KC = l->k_pad / MPL_CUDA_W4A16_KC;
    for (int64_t nt = NT * tid / nthreads; nt < NT * (tid + 1) / nthreads; nt++)
        for (int64_t kc = 0; kc < KC; kc++)
            for (int lane = 0; lane < 32; lane++)
                for (int j = 0; j < 4; j++) {
                    uint32_t word = 0;
                    for (int i = 0; i < 8; i++) {
                        int64_t n = nt * MPL_CUDA_W4A16_NT + mpl_cuda_w4a16_nibble_row(lane, i);
                        int64_t p = kc * MPL_CUDA_W4A16_KC + 16 * j + mpl_cuda_w4a16_nibble_col(lane, i);
                        word |= packed_nibble(l, job->w, n, p) << (4 * i);
                    }
                    l->qweight[mpl_cuda_w4a16_word_index(l, nt, kc, lane, j)] = word;
                }
}

/* One plane of nibbles: 4-bit codes, (halves) 2-bit codes two per nibble, or (thirds) 3-bit codes four chunks in three. */
enum { FORM_NIB, FORM_HALVES, FORM_THIRDS };
static mpl_status pack_one(const mpl_config *c, const mpl_canonical *w, int form, mpl_cuda_w4a16_layout *out);
static mpl_status pack4(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out) {
    return pack_one(c, w, FORM_NIB, out);
}

mpl_status mpl_cuda_w4a16_pack_halves(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out) {
    memset(out, 0, sizeof *out);
    if (!mpl_cuda_w4a16_halves_fits(c) || w->k != c->k ||
        (w->groups > 1 && w->group_size % (2 * MPL_CUDA_W4A16_KC) != 0))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16 pack (halves): weight type %s, k = %lld, group size %lld: needs uint2b2 or "
                             "uint2, k a multiple of 128 and group size -1 or a multiple of 128",
                             mpl_wtype_name(w->wtype), (long long)w->k, (long long)w->group_size);
    return pack_one(c, w, FORM_HALVES, out); /* scales, zeros and perm as the 4-bit layer of the same K */
}

mpl_status mpl_cuda_w4a16_pack_thirds(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out) {
    memset(out, 0, sizeof *out);
    if (!mpl_cuda_w4a16_thirds_fits(c) || w->k != c->k ||
        (w->groups > 1 && w->group_size % (2 * MPL_CUDA_W4A16_KC) != 0))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16 pack (thirds): weight type %s, k = %lld, group size %lld: needs uint3b4 or "
                             "uint3, k a multiple of 256 and group size -1 or a multiple of 128",
                             mpl_wtype_name(w->wtype), (long long)w->k, (long long)w->group_size);
    return pack_one(c, w, FORM_THIRDS, out); /* scales, zeros and perm as the 4-bit layer of the same K */
}

/*
 * 8-bit as two 4-bit planes: the canonical form of the 2k-channel uint4 layer (mpl_canonical_planes, shared with
 * vulkan_w4a16; codes already in packed order, so it carries no perm of its own), packed as 4-bit, then the layout's
 * perm set to the duplicating one and the 8-bit identity restored.
 */
static mpl_status pack8(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out) {
    const int64_t K = w->k;
    if (K % 16 != 0)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16 pack: 8-bit weights with k = %lld: k must be a multiple of 16 (the high "
                             "plane starts on a k16 step)",
                             (long long)K);
    if (w->g_idx && !w->act_order_uniform)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16 pack: act-order groups differ in size: must hold group_size channels each");
    mpl_config c2;
    mpl_canonical w2;
    int32_t *perm2;
    mpl_status st = mpl_canonical_planes(c, w, &c2, &w2, &perm2);
    if (st != MPL_OK) return st;
    st = pack4(&c2, &w2, out);
    mpl_canonical_free(&w2);
    if (st != MPL_OK) {
        free(perm2);
        return st;
    }
    free(out->perm);
    out->perm = perm2;
    out->k_in = K;
    out->planes = 2;
    out->wtype = w->wtype;
    out->cfg_group_size = c->group_size;
    return MPL_OK; /* uint8b128 keeps the planes' zeros (0 and 8): the kernels read them; unpack drops them */
}

mpl_status mpl_cuda_w4a16_pack(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out) {
    memset(out, 0, sizeof *out);
    if (w->wtype == MPL_WTYPE_UINT8B128 || w->wtype == MPL_WTYPE_UINT8) return pack8(c, w, out);
    return pack4(c, w, out);
}

static mpl_status pack_one(const mpl_config *c, const mpl_canonical *w, int form, mpl_cuda_w4a16_layout *out) {
    memset(out, 0, sizeof *out);
    if (mpl_wtype_bits(w->wtype) > 4)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16 pack: weight type %s: must be a 2-, 3-, 4- or 8-bit type",
                             mpl_wtype_name(w->wtype));
    if (w->g_idx && !w->act_order_uniform)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16 pack: act-order groups differ in size: must hold group_size channels each");
    if (w->groups > 1 && w->group_size % 16 != 0)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "cuda_w4a16 pack: group size %lld: must be a multiple of 16",
                             (long long)w->group_size);
    mpl_cuda_w4a16_layout *l = out;
    l->k_in = w->k;
    l->planes = 1;
    l->halves = form == FORM_HALVES;
    l->thirds = form == FORM_THIRDS;
    l->k = w->k;
    l->n = w->n;
    /* halves: k % 128 == 0, thirds: k % 256 == 0 (the callers check) */
    l->k_pad = l->halves ? w->k / 2 : l->thirds ? w->k / 4 * 3 : round_up(w->k, MPL_CUDA_W4A16_KC);
    l->n_pad = round_up(w->n, MPL_CUDA_W4A16_N_ALIGN);
    l->cfg_group_size = c->group_size;
    l->group_size = w->group_size;
    l->groups = w->groups;
    l->wtype = w->wtype;
    size_t ng;
    if (!mpl_size_mul3(l->n_pad, l->k_pad, 1, &ng) || !mpl_size_mul3(l->groups, l->n_pad, 4, &ng))
        return mpl_set_error(MPL_ERR_OVERFLOW, "cuda_w4a16 pack: n = %lld, k = %lld: byte count overflows",
                             (long long)w->n, (long long)w->k);
    size_t nscale = (size_t)w->n * (size_t)w->groups;
    int first = c->act == MPL_ACT_BF16 ? MPL_CUDA_W4A16_SCALE_BF16 : MPL_CUDA_W4A16_SCALE_F16;
    int second = first == MPL_CUDA_W4A16_SCALE_F16 ? MPL_CUDA_W4A16_SCALE_BF16 : MPL_CUDA_W4A16_SCALE_F16;
    l->scale_fmt = all_exact(w->scales, nscale, first)    ? first
                   : all_exact(w->scales, nscale, second) ? second
                                                          : MPL_CUDA_W4A16_SCALE_F32;
    size_t plane = (size_t)l->groups * (size_t)l->n_pad;
    l->qweight = malloc(mpl_cuda_w4a16_qweight_bytes(l));
    l->scales = calloc(plane, 2);
    if (l->scale_fmt == MPL_CUDA_W4A16_SCALE_F32) l->scales_lo = calloc(plane, 2);
    if (w->zeros) l->zeros = malloc(plane);
    if (w->perm) l->perm = malloc((size_t)l->k * sizeof(int32_t));
    if (!l->qweight || !l->scales || (l->scale_fmt == MPL_CUDA_W4A16_SCALE_F32 && !l->scales_lo) ||
        (w->zeros && !l->zeros) || (w->perm && !l->perm)) {
        mpl_cuda_w4a16_layout_free(l);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "cuda_w4a16 pack: cannot allocate %zu bytes of packed weights",
                             (size_t)(l->n_pad * l->k_pad / 2));
    }
    if (w->perm) memcpy(l->perm, w->perm, (size_t)l->k * sizeof(int32_t));

    /* Weights: lane (g = lane/4, t = lane%4) of block (nt, kc) holds, in word j, the eight
     * codes of rows g and g+8 at columns 16j + 4t .. 16j + 4t + 3 (mpl_cuda_w4a16_nibble_row/col).
     * Row tiles are independent: spread over the thread pool (a 70B MLP layer is 470M codes). */
    pack_job job = {.l = l, .w = w};
    int64_t NT = l->n_pad / MPL_CUDA_W4A16_NT;
    int threads = mpl_pool_size();
    mpl_parallel_run(threads < NT ? threads : (int)NT, pack_rows, &job);
    /* Scales and zeros: [group][n], padding rows get scale 0 and zero 8. */
    if (l->zeros) memset(l->zeros, MPL_CUDA_W4A16_PAD_CODE, plane);
    for (int64_t n = 0; n < w->n; n++)
        for (int64_t g = 0; g < w->groups; g++) {
            float s = w->scales[n * w->groups + g];
            size_t at = mpl_cuda_w4a16_plane_index(l, g, n);
            if (l->scale_fmt == MPL_CUDA_W4A16_SCALE_F16)
                l->scales[at] = mpl_f32_to_f16(s);
            else if (l->scale_fmt == MPL_CUDA_W4A16_SCALE_BF16)
                l->scales[at] = mpl_f32_to_bf16(s);
            else {
                l->scales[at] = (uint16_t)(f32_bits(s) >> 16);
                l->scales_lo[at] = (uint16_t)(f32_bits(s) & 0xffffu);
            }
            if (l->zeros) l->zeros[at] = w->zeros[n * w->groups + g];
        }
    return MPL_OK;
}

/* The nibble of row n at packed position p (the inverse of pack_rows' placement). */
static unsigned nibble_at(const mpl_cuda_w4a16_layout *l, int64_t n, int64_t p) {
    const int r = (int)(n % MPL_CUDA_W4A16_NT), c = (int)(p % MPL_CUDA_W4A16_KC), col = c % 16, rem = col & 3;
    const int lane = (r & 7) * 4 + (col >> 2), i = (r >> 3) | ((rem >> 1) << 1) | ((rem & 1) << 2);
    uint32_t word = l->qweight[mpl_cuda_w4a16_word_index(l, n / MPL_CUDA_W4A16_NT, p / MPL_CUDA_W4A16_KC, lane, c / 16)];
    return (word >> (4 * i)) & 15u;
}

static float scale_at(const mpl_cuda_w4a16_layout *l, size_t at) {
    if (l->scale_fmt == MPL_CUDA_W4A16_SCALE_F16) return mpl_f16_to_f32(l->scales[at]);
    if (l->scale_fmt == MPL_CUDA_W4A16_SCALE_BF16) return mpl_bf16_to_f32(l->scales[at]);
    return bits_f32(((uint32_t)l->scales[at] << 16) | l->scales_lo[at]);
}

/* Two planes back to 8-bit codes: code = low | high << 4, the low plane's scales and groups. */
static mpl_status unpack8(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out) {
    const int64_t K = l->k_in, G = l->groups / 2;
    mpl_config c;
    mpl_config_init(&c, K, l->n);
    c.wtype = l->wtype;
    c.group_size = l->cfg_group_size;
    c.zero_points = l->wtype == MPL_WTYPE_UINT8;
    c.act_order = act_order;
    mpl_status st = mpl_canonical_alloc(out, &c);
    if (st != MPL_OK) return st;
    for (int64_t n = 0; n < l->n; n++) {
        for (int64_t j = 0; j < K; j++)
            out->codes[n * K + l->perm[j]] = (uint8_t)(nibble_at(l, n, j) | nibble_at(l, n, K + j) << 4);
        for (int64_t g = 0; g < G; g++) {
            out->scales[n * G + g] = scale_at(l, mpl_cuda_w4a16_plane_index(l, g, n));
            if (c.zero_points)
                out->zeros[n * G + g] = (uint8_t)(l->zeros[mpl_cuda_w4a16_plane_index(l, g, n)] |
                                                  l->zeros[mpl_cuda_w4a16_plane_index(l, G + g, n)] << 4);
        }
    }
    return act_order ? mpl_canonical_restore_act_order(out, l->perm) : MPL_OK;
}

static mpl_status unpack_common(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out);

/* The canonical form a one-plane layout (4-bit codes, halves or thirds) unpacks into, allocated: k = x's row length. */
static mpl_status alloc_one_plane(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out) {
    mpl_config c;
    mpl_config_init(&c, l->k, l->n);
    c.wtype = l->wtype;
    c.group_size = l->cfg_group_size;
    c.zero_points = l->zeros != NULL;
    c.act_order = act_order;
    return mpl_canonical_alloc(out, &c);
}

/* Halves back to 2-bit codes: channel ch (sorted) is bits 2 ((ch / 64) & 1) of packed position 64 (ch / 128) + ch % 64. */
static mpl_status unpack_halves(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out) {
    mpl_status st = alloc_one_plane(l, act_order, out);
    if (st != MPL_OK) return st;
    for (int64_t n = 0; n < l->n; n++)
        for (int64_t ch = 0; ch < l->k; ch++) {
            const int64_t p = ch / (2 * MPL_CUDA_W4A16_KC) * MPL_CUDA_W4A16_KC + ch % MPL_CUDA_W4A16_KC;
            const unsigned code = (nibble_at(l, n, p) >> (2 * ((ch / MPL_CUDA_W4A16_KC) & 1))) & 3u;
            out->codes[n * l->k + (l->perm ? l->perm[ch] : ch)] = (uint8_t)code;
        }
    return unpack_common(l, act_order, out);
}

/* Thirds back to 3-bit codes: channel ch (sorted) of run u = ch / 256, chunk i = (ch / 64) % 4, slot j = ch % 64 is bits 0-2
 * of packed position 64 (3u + i) + j for i < 3; for i = 3 its bit 2 - s is bit 3 of packed position 64 (3u + s) + j. */
static mpl_status unpack_thirds(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out) {
    mpl_status st = alloc_one_plane(l, act_order, out);
    if (st != MPL_OK) return st;
    for (int64_t n = 0; n < l->n; n++)
        for (int64_t ch = 0; ch < l->k; ch++) {
            const int64_t u = ch / (4 * MPL_CUDA_W4A16_KC), i = (ch / MPL_CUDA_W4A16_KC) % 4, j = ch % MPL_CUDA_W4A16_KC;
            const int64_t p0 = 3 * u * MPL_CUDA_W4A16_KC + j;
            unsigned code = 0;
            if (i < 3)
                code = nibble_at(l, n, p0 + i * MPL_CUDA_W4A16_KC) & 7u;
            else
                for (int s = 0; s < 3; s++) code |= (nibble_at(l, n, p0 + s * MPL_CUDA_W4A16_KC) >> 3) << (2 - s);
            out->codes[n * l->k + (l->perm ? l->perm[ch] : ch)] = (uint8_t)code;
        }
    return unpack_common(l, act_order, out);
}

mpl_status mpl_cuda_w4a16_unpack(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out) {
    if (l->planes == 2) return unpack8(l, act_order, out);
    if (l->halves) return unpack_halves(l, act_order, out);
    if (l->thirds) return unpack_thirds(l, act_order, out);
    mpl_status st = alloc_one_plane(l, act_order, out);
    if (st != MPL_OK) return st;
    int64_t KC = l->k_pad / MPL_CUDA_W4A16_KC;
    for (int64_t nt = 0; nt < l->n_pad / MPL_CUDA_W4A16_NT; nt++)
        for (int64_t kc = 0; kc < KC; kc++)
            for (int lane = 0; lane < 32; lane++)
                for (int j = 0; j < 4; j++) {
                    uint32_t word = l->qweight[mpl_cuda_w4a16_word_index(l, nt, kc, lane, j)];
                    for (int i = 0; i < 8; i++) {
                        int64_t n = nt * MPL_CUDA_W4A16_NT + mpl_cuda_w4a16_nibble_row(lane, i);
                        int64_t p = kc * MPL_CUDA_W4A16_KC + 16 * j + mpl_cuda_w4a16_nibble_col(lane, i);
                        if (n >= l->n || p >= l->k) continue;
                        int64_t kk = l->perm ? l->perm[p] : p;
                        out->codes[n * l->k + kk] = (uint8_t)mpl_code4_back(l->wtype, (word >> (4 * i)) & 15u);
                    }
                }
    return unpack_common(l, act_order, out);
}

/* Scales, zeros and the act-order restore of a one-plane layout (4-bit codes or halves), codes already in out. */
static mpl_status unpack_common(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out) {
    for (int64_t n = 0; n < l->n; n++)
        for (int64_t g = 0; g < l->groups; g++) {
            size_t at = mpl_cuda_w4a16_plane_index(l, g, n);
            out->scales[n * l->groups + g] = scale_at(l, at);
            if (l->zeros) out->zeros[n * l->groups + g] = l->zeros[at];
        }
    if (act_order) {
        if (!l->perm) {
            mpl_canonical_free(out);
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "cuda_w4a16 unpack: act-order asked but no permutation");
        }
        return mpl_canonical_restore_act_order(out, l->perm);
    }
    return MPL_OK;
}

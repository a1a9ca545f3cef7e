/*
 * x86_w4a16.c -- canonical <-> the x86 W4A16 packed layout (spec:
 * docs/layouts/x86_w4a16.md). pack() and unpack() are exact inverses.
 */
#include <stdlib.h>
#include <string.h>

#include "x86_w4a16.h"

static bool scales_fit(const float *s, size_t count, mpl_x86_w4a16_scale_fmt fmt) {
    for (size_t i = 0; i < count; i++) {
        float back = fmt == MPL_X86_W4A16_SCALE_BF16 ? mpl_bf16_to_f32(mpl_f32_to_bf16(s[i]))
                                                     : mpl_f16_to_f32(mpl_f32_to_f16(s[i]));
        if (memcmp(&back, &s[i], sizeof back) != 0) return false;
    }
    return true;
}

typedef struct {
    const mpl_canonical *w;
    mpl_x86_w4a16_layout *l;
} pack_job;

/* Stored value of logical weight (n, packed input position j); see the header. */
static inline uint8_t stored_code(const mpl_canonical *w, const mpl_x86_w4a16_layout *l, int64_t n, int64_t j) {
    if (n >= w->n) return l->zero_points ? 0 : (uint8_t)l->bias; /* padding: value 0 */
    int64_t kk = l->perm ? l->perm[j] : j;
    uint8_t c = w->codes[n * w->k + kk];
    return w->wtype == MPL_WTYPE_INT4 ? (uint8_t)(c ^ 8u) : c;
}

/*
 * The chunk formats (docs/layouts/x86_w4a16.md), s[i][e] = channel 16v + i, input j0 + e; q = the step:
 *   4-bit (32 B at 32v): byte 2i + f = s[i][f] | s[i][2 + f] << 4.
 *   8-bit (64 B at 64v): byte 32h + 2i + f = s[i][2h + f] (half h: the bf16 pair row of inputs 2h, 2h+1).
 *   2-bit (16 B at 16v): byte i = s[i][0] | s[i][1] << 2 | s[i][2] << 4 | s[i][3] << 6.
 *   3-bit (16 B at 16v + 8 B at 64 + 8v): the 12-bit word w_i = s[i][0] | s[i][1] << 3 | s[i][2] << 6 |
 *                 s[i][3] << 9 of each channel; byte 16v + i = w_i & 255, byte 64 + 8v + t =
 *                 (w_t >> 8) | (w_{t+8} >> 8) << 4 (t < 8).
 */
void mpl_x86_w4a16_chunk_encode(int bits, int v, const uint8_t s[16][4], uint8_t *step) {
    uint8_t *q = step + mpl_x86_w4a16_chunk_lo(bits, v);
    switch (bits) {
    case 8:
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 16; i++)
                for (int f = 0; f < 2; f++) q[32 * h + 2 * i + f] = s[i][2 * h + f];
        break;
    case 2:
        for (int i = 0; i < 16; i++) q[i] = (uint8_t)(s[i][0] | s[i][1] << 2 | s[i][2] << 4 | s[i][3] << 6);
        break;
    case 3: {
        unsigned wd[16];
        uint8_t *hq = step + mpl_x86_w4a16_chunk_hi3(v);
        for (int i = 0; i < 16; i++) {
            wd[i] = (unsigned)s[i][0] | (unsigned)s[i][1] << 3 | (unsigned)s[i][2] << 6 | (unsigned)s[i][3] << 9;
            q[i] = (uint8_t)(wd[i] & 255u);
        }
        for (int t = 0; t < 8; t++) hq[t] = (uint8_t)((wd[t] >> 8) | (wd[t + 8] >> 8) << 4);
        break;
    }
    default:
        for (int i = 0; i < 16; i++)
            for (int f = 0; f < 2; f++) q[2 * i + f] = (uint8_t)(s[i][f] | s[i][2 + f] << 4);
        break;
    }
}

void mpl_x86_w4a16_chunk_decode(int bits, int v, const uint8_t *step, uint8_t s[16][4]) {
    const uint8_t *q = step + mpl_x86_w4a16_chunk_lo(bits, v);
    switch (bits) {
    case 8:
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 16; i++)
                for (int f = 0; f < 2; f++) s[i][2 * h + f] = q[32 * h + 2 * i + f];
        break;
    case 2:
        for (int i = 0; i < 16; i++)
            for (int e = 0; e < 4; e++) s[i][e] = (uint8_t)((q[i] >> (2 * e)) & 3u);
        break;
    case 3: {
        const uint8_t *hq = step + mpl_x86_w4a16_chunk_hi3(v);
        for (int i = 0; i < 16; i++) {
            unsigned hi = (unsigned)(hq[i & 7] >> (i < 8 ? 0 : 4)) & 15u;
            unsigned wd = q[i] | hi << 8;
            for (int e = 0; e < 4; e++) s[i][e] = (uint8_t)((wd >> (3 * e)) & 7u);
        }
        break;
    }
    default:
        for (int i = 0; i < 16; i++)
            for (int f = 0; f < 2; f++) {
                s[i][f] = (uint8_t)(q[2 * i + f] & 15u);
                s[i][2 + f] = (uint8_t)(q[2 * i + f] >> 4);
            }
        break;
    }
}

static void pack_blocks(void *ctx, int tid, int nt) {
    pack_job *pj = ctx;
    const mpl_canonical *w = pj->w;
    mpl_x86_w4a16_layout *l = pj->l;
    int64_t b0 = l->nblocks * tid / nt, b1 = l->nblocks * (tid + 1) / nt;
    int64_t gs = l->group_size;
    for (int64_t b = b0; b < b1; b++) {
        for (int64_t g = 0; g < l->groups; g++) {
            uint8_t *p = (uint8_t *)mpl_x86_w4a16_group(l, b, g);
            for (int i = 0; i < MPL_X86_W4A16_NB; i++) {
                int64_t n = b * MPL_X86_W4A16_NB + i;
                float s = n < w->n ? w->scales[n * w->groups + g] : 0.0f;
                if (l->scale_fmt == MPL_X86_W4A16_SCALE_F32)
                    memcpy(p + 4 * i, &s, 4);
                else {
                    uint16_t h = l->scale_fmt == MPL_X86_W4A16_SCALE_BF16 ? mpl_f32_to_bf16(s) : mpl_f32_to_f16(s);
                    memcpy(p + 2 * i, &h, 2);
                }
            }
            p += l->scale_bytes;
            if (l->zero_points) {
                for (int i = 0; i < MPL_X86_W4A16_NB; i++) {
                    int64_t n = b * MPL_X86_W4A16_NB + i;
                    p[i] = n < w->n ? w->zeros[n * w->groups + g] : 0;
                }
                p += l->zero_bytes;
            }
            for (int64_t c = 0; c < gs / MPL_X86_W4A16_CK; c++) {
                int64_t j0 = g * gs + c * MPL_X86_W4A16_CK;
                for (int v = 0; v < MPL_X86_W4A16_NB / 16; v++) {
                    uint8_t sv[16][4];
                    for (int i = 0; i < 16; i++)
                        for (int e = 0; e < 4; e++) sv[i][e] = stored_code(w, l, b * MPL_X86_W4A16_NB + 16 * v + i, j0 + e);
                    mpl_x86_w4a16_chunk_encode(l->bits, v, sv, p);
                }
                p += l->step_bytes;
            }
        }
    }
}

mpl_status mpl_x86_w4a16_pack(const mpl_config *cfg, const mpl_canonical *w, mpl_x86_w4a16_layout *out) {
    memset(out, 0, sizeof *out);
    const int bits = mpl_wtype_bits(w->wtype);
    if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "x86_w4a16 layout: weight type %s: width %d: must be 2, 3, 4 or 8 bits",
                             mpl_wtype_name(w->wtype), bits);
    if (w->k % MPL_X86_W4A16_CK != 0 || w->group_size % MPL_X86_W4A16_CK != 0)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "x86_w4a16 layout: k = %lld, group size %lld: both must be multiples of %d",
                             (long long)w->k, (long long)w->group_size, MPL_X86_W4A16_CK);
    if (w->g_idx && (!w->perm || !w->act_order_uniform))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "x86_w4a16 layout: act-order groups must each hold group_size = %lld inputs",
                             (long long)w->group_size);
    out->k = w->k;
    out->n = w->n;
    out->np = (w->n + MPL_X86_W4A16_NB - 1) / MPL_X86_W4A16_NB * MPL_X86_W4A16_NB;
    out->nblocks = out->np / MPL_X86_W4A16_NB;
    out->group_size = w->group_size;
    out->groups = w->groups;
    out->wtype = w->wtype;
    out->bits = bits;
    out->bias = 1 << (bits - 1);
    out->chunk_bytes = 8u * (size_t)bits;
    out->step_bytes = 4u * out->chunk_bytes;
    out->zero_points = cfg->zero_points && w->zeros ? 1 : 0;
    size_t nsc = (size_t)w->n * (size_t)w->groups;
    if (scales_fit(w->scales, nsc, MPL_X86_W4A16_SCALE_BF16))
        out->scale_fmt = MPL_X86_W4A16_SCALE_BF16;
    else if (scales_fit(w->scales, nsc, MPL_X86_W4A16_SCALE_F16))
        out->scale_fmt = MPL_X86_W4A16_SCALE_F16;
    else
        out->scale_fmt = MPL_X86_W4A16_SCALE_F32;
    out->scale_bytes = MPL_X86_W4A16_NB * (out->scale_fmt == MPL_X86_W4A16_SCALE_F32 ? 4u : 2u);
    out->zero_bytes = out->zero_points ? MPL_X86_W4A16_NB : 0;
    size_t wbytes, total;
    /* group_size / 4 steps of step_bytes; all factors are bounded by MPL_MAX_DIM, checked anyway. */
    if (!mpl_size_mul3(w->group_size / MPL_X86_W4A16_CK, (int64_t)out->step_bytes, 1, &wbytes) ||
        mpl_add_overflow_sz(wbytes, out->scale_bytes + out->zero_bytes, &out->group_bytes) ||
        !mpl_size_mul3(w->groups, (int64_t)out->group_bytes, 1, &out->block_bytes) ||
        !mpl_size_mul3(out->nblocks, (int64_t)out->block_bytes, 1, &total) ||
        mpl_add_overflow_sz(total, MPL_X86_W4A16_TAIL_BYTES, &total))
        return mpl_set_error(MPL_ERR_OVERFLOW, "x86_w4a16 layout: k = %lld, n = %lld: byte count overflows",
                             (long long)w->k, (long long)w->n);
    out->data = mpl_aligned_alloc(total);
    if (!out->data) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86_w4a16 layout: cannot allocate %zu bytes", total);
    if (w->g_idx) {
        out->perm = malloc((size_t)w->k * sizeof(int32_t));
        out->g_idx = malloc((size_t)w->k * sizeof(int32_t));
        if (!out->perm || !out->g_idx) {
            mpl_x86_w4a16_free(out);
            return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86_w4a16 layout: cannot allocate act-order tables");
        }
        memcpy(out->perm, w->perm, (size_t)w->k * sizeof(int32_t));
        memcpy(out->g_idx, w->g_idx, (size_t)w->k * sizeof(int32_t));
    }
    pack_job pj = {.w = w, .l = out};
    mpl_parallel_run(mpl_platform_current()->cpu_threads, pack_blocks, &pj);
    return MPL_OK;
}

mpl_status mpl_x86_w4a16_unpack(const mpl_x86_w4a16_layout *l, mpl_canonical *out) {
    mpl_config c;
    mpl_config_init(&c, l->k, l->n);
    c.wtype = l->wtype;
    c.group_size = l->group_size == l->k && l->groups == 1 && !l->g_idx ? -1 : l->group_size;
    c.zero_points = l->zero_points;
    c.act_order = l->g_idx != NULL;
    mpl_status st = mpl_canonical_alloc(out, &c);
    if (st != MPL_OK) return st;
    for (int64_t b = 0; b < l->nblocks; b++) {
        for (int64_t g = 0; g < l->groups; g++) {
            const uint8_t *p = mpl_x86_w4a16_group(l, b, g);
            for (int i = 0; i < MPL_X86_W4A16_NB; i++) {
                int64_t n = b * MPL_X86_W4A16_NB + i;
                if (n >= l->n) break;
                float s;
                if (l->scale_fmt == MPL_X86_W4A16_SCALE_F32)
                    memcpy(&s, p + 4 * i, 4);
                else {
                    uint16_t h;
                    memcpy(&h, p + 2 * i, 2);
                    s = l->scale_fmt == MPL_X86_W4A16_SCALE_BF16 ? mpl_bf16_to_f32(h) : mpl_f16_to_f32(h);
                }
                out->scales[n * l->groups + g] = s;
                if (l->zero_points) out->zeros[n * l->groups + g] = p[l->scale_bytes + (size_t)i];
            }
            const uint8_t *q = mpl_x86_w4a16_group_weights(l, b, g);
            for (int64_t cch = 0; cch < l->group_size / MPL_X86_W4A16_CK; cch++, q += l->step_bytes) {
                int64_t j0 = g * l->group_size + cch * MPL_X86_W4A16_CK;
                for (int v = 0; v < MPL_X86_W4A16_NB / 16; v++) {
                    uint8_t sv[16][4];
                    mpl_x86_w4a16_chunk_decode(l->bits, v, q, sv);
                    for (int i = 0; i < 16; i++) {
                        int64_t n = b * MPL_X86_W4A16_NB + 16 * v + i;
                        if (n >= l->n) break;
                        for (int e = 0; e < 4; e++) {
                            int64_t kk = l->perm ? l->perm[j0 + e] : j0 + e;
                            out->codes[n * l->k + kk] = l->wtype == MPL_WTYPE_INT4 ? (uint8_t)(sv[i][e] ^ 8u) : sv[i][e];
                        }
                    }
                }
            }
        }
    }
    if (l->g_idx) {
        memcpy(out->g_idx, l->g_idx, (size_t)l->k * sizeof(int32_t));
        st = mpl_canonical_resolve_act_order(out);
        if (st != MPL_OK) {
            mpl_canonical_free(out);
            return st;
        }
    }
    return MPL_OK;
}

void mpl_x86_w4a16_free(mpl_x86_w4a16_layout *l) {
    if (!l) return;
    mpl_aligned_free(l->data);
    free(l->perm);
    free(l->g_idx);
    memset(l, 0, sizeof *l);
}

size_t mpl_x86_w4a16_bytes(const mpl_x86_w4a16_layout *l) { return (size_t)l->nblocks * l->block_bytes; }

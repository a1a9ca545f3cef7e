/* convert.c -- fp16/bf16 <-> fp32 conversions (round to nearest even) and activation helpers. */
#include <math.h>
#include <string.h>

#include "internal.h"

uint16_t mpl_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float mpl_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t mpl_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow (incl. inf) */
    if (a < 0x38800000u) {                                    /* subnormal or zero in f16 */
        if (a < 0x33000000u) return (uint16_t)sign;           /* < half the smallest subnormal */
        uint32_t e = a >> 23;
        uint32_t mant = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t r = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

float mpl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    uint32_t u;
    if (e == 0) {
        if (m == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int sh = 0;
            while (!(m & 0x400u)) {
                m <<= 1;
                sh++;
            }
            m &= 0x3ffu;
            u = sign | ((uint32_t)(113 - sh) << 23) | (m << 13);
        }
    } else if (e == 31) {
        u = sign | 0x7f800000u | (m << 13);
    } else {
        u = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void mpl_act_to_f32(mpl_act a, const void *src, float *dst, int64_t n) {
    if (a == MPL_ACT_F32) {
        memcpy(dst, src, (size_t)n * 4);
        return;
    }
    const uint16_t *s = src;
    if (a == MPL_ACT_F16)
        for (int64_t i = 0; i < n; i++) dst[i] = mpl_f16_to_f32(s[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = mpl_bf16_to_f32(s[i]);
}

void mpl_f32_to_act(mpl_act a, const float *src, void *dst, int64_t n) {
    if (a == MPL_ACT_F32) {
        memcpy(dst, src, (size_t)n * 4);
        return;
    }
    uint16_t *d = dst;
    if (a == MPL_ACT_F16)
        for (int64_t i = 0; i < n; i++) d[i] = mpl_f32_to_f16(src[i]);
    else
        for (int64_t i = 0; i < n; i++) d[i] = mpl_f32_to_bf16(src[i]);
}

float mpl_quantize_row_i8(const float *x, int64_t k, int8_t *q, int *nonfinite) {
    float amax = 0.0f;
    int bad = 0;
    for (int64_t i = 0; i < k; i++) {
        float v = x[i];
        if (!isfinite(v)) bad = 1;
        float av = fabsf(v);
        if (av > amax) amax = av;
    }
    *nonfinite = bad;
    /* amax < 127/FLT_MAX makes inv inf and 0 * inf NaN (an undefined int8 conversion): such a
     * row is quantized as a zero row, as mplinear.h says. */
    float inv = (bad || amax == 0.0f) ? 0.0f : 127.0f / amax;
    if (bad || amax == 0.0f || isinf(inv)) {
        for (int64_t i = 0; i < k; i++) q[i] = 0;
        return bad ? NAN : 0.0f;
    }
    for (int64_t i = 0; i < k; i++) {
        float r = nearbyintf(x[i] * inv);
        if (r > 127.0f) r = 127.0f;
        if (r < -127.0f) r = -127.0f;
        q[i] = (int8_t)r;
    }
    return amax / 127.0f;
}

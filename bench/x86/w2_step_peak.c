/*
 * w2_step_peak.c -- the 2-bit vdpbf16ps decode step's own rate, from a 16 KiB L1-resident buffer (no memory in
 * the way): tile_w of avx512bf16/w4a16_gemv.c at one row and 4 blocks of 64 channels, 4 inputs per step, 16
 * accumulators. A: as the kernel does it (per 16-byte chunk: vpmovzxbd, one shift, 2 vpermd, 2 vdpbf16ps);
 * B: one 64-byte load per block and a shift per lookup instead (its lanes would hold channels out of order: a
 * timing experiment only). The best of 5 passes each; the weight rate bounds what one core's 2-bit decode can
 * stream whatever the memory gives (bench/results/x86-widths.md, Zen 5).
 *
 *   cc -O2 -mavx512f -mavx512bw -mavx512vl -mavx512bf16 bench/x86/w2_step_peak.c -o w2_step_peak && ./w2_step_peak
 */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define BUF (16 * 1024)
static uint8_t buf[BUF] __attribute__((aligned(64)));
static uint16_t xs[256] __attribute__((aligned(64)));

static __m512bh bcast_pair(const uint16_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return (__m512bh)_mm512_set1_epi32(v);
}

/* One pass over the buffer, RAW a constant at each call site (the loops unroll fully: accumulators in registers,
 * shifts by constants, as in the kernel). */
static inline __attribute__((always_inline)) __m512 pass_over(long iters, __m512i lut, const int RAW) {
    __m512 acc[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    for (long it = 0; it < iters; it++) {
        const uint8_t *wp = buf;
        for (int s = 0; s < BUF / 256; s++, wp += 256) {
            const __m512bh xa = bcast_pair(xs + 4 * (s & 63)), xc = bcast_pair(xs + 4 * (s & 63) + 2);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                const __m512i r = _mm512_load_si512((const void *)(wp + 64 * i));
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++) {
                    __m512i wa, wc;
                    if (RAW) {
                        wa = _mm512_permutexvar_epi32(v ? _mm512_srli_epi32(r, 8 * v) : r, lut);
                        wc = _mm512_permutexvar_epi32(_mm512_srli_epi32(r, 8 * v + 4), lut);
                    } else {
                        const __m512i d = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(wp + 64 * i + 16 * v)));
                        wa = _mm512_permutexvar_epi32(d, lut);
                        wc = _mm512_permutexvar_epi32(_mm512_srli_epi32(d, 4), lut);
                    }
                    acc[4 * i + v] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc[4 * i + v], (__m512bh)wa, xa), (__m512bh)wc, xc);
                }
            }
        }
    }
#pragma GCC unroll 16
    for (int i = 1; i < 16; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    return acc[0];
}
__attribute__((noinline)) static __m512 run_a(long iters, __m512i lut) { return pass_over(iters, lut, 0); }
__attribute__((noinline)) static __m512 run_b(long iters, __m512i lut) { return pass_over(iters, lut, 1); }

int main(void) {
    for (int i = 0; i < BUF; i++) buf[i] = (uint8_t)(i * 37 + 11);
    for (int i = 0; i < 256; i++) xs[i] = 0x3f80;
    const __m512i lut = _mm512_set1_epi32(0x3f803f80);
    const long iters = 20000;
    double best[2] = {1e30, 1e30};
    for (int pass = 0; pass < 5; pass++)
        for (int raw = 0; raw < 2; raw++) {
            const double t0 = now();
            const __m512 a = raw ? run_b(iters, lut) : run_a(iters, lut);
            const double t = now() - t0;
            volatile float keep = _mm512_reduce_add_ps(a);
            (void)keep;
            if (t < best[raw]) best[raw] = t;
        }
    const double w = (double)iters * BUF * 4; /* 4 weights per byte */
    for (int raw = 0; raw < 2; raw++)
        printf("%s: %.1f G weights/s = %.1f GB/s of 2-bit codes\n",
               raw ? "B (64-byte load, shift per lookup)" : "A (tile_w: vpmovzxbd per chunk)", w / best[raw] / 1e9,
               w / best[raw] / 4e9);
    return 0;
}

/*
 * isa_peak.c -- the instruction-rate ceilings the x86 tables compare against: zmm vdpbf16ps (bf16 pairs,
 * 64 FLOP each), vpdpbusd (u8 x s8 quads, 128 int8 ops each) and vfmadd231ps (32 FLOP each), one thread,
 * 12 independent accumulators (enough for these latencies), the best of 5 timed passes. A W4A16 kernel
 * with bf16 activations cannot do better than the vdpbf16ps rate (its exact arithmetic has no faster
 * instruction on AVX-512 without AMX), a W4A8 one than the vpdpbusd rate. Then the rates of the decodes'
 * dequantizing ops (vpermw / vpermd table lookups, vpshufb, vpternlogd, a shift), same method, and pairs of
 * them (half the chains each) to see which share ports.
 *
 *   cc -O2 -mavx512f -mavx512bw -mavx512vnni -mavx512bf16 bench/x86/isa_peak.c -o isa_peak && ./isa_peak
 */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define N_ITER 20000000L
#define ACC 12

#define PEAK(NAME, TYPE, INIT, OP, OPS_PER_INSN, SINK)                                                         \
    do {                                                                                                        \
        double best = 0;                                                                                        \
        for (int pass = 0; pass < 5; pass++) {                                                                  \
            TYPE a[ACC];                                                                                        \
            for (int i = 0; i < ACC; i++) a[i] = INIT;                                                          \
            double t0 = now();                                                                                  \
            for (long n = 0; n < N_ITER; n++) {                                                                 \
                _Pragma("GCC unroll 12") for (int i = 0; i < ACC; i++) a[i] = OP;                               \
                __asm__ volatile("" : "+v"(w), "+v"(x));                                                        \
            }                                                                                                   \
            double t = now() - t0, rate = (double)N_ITER * ACC / t;                                             \
            for (int i = 1; i < ACC; i++) a[0] = SINK;                                                          \
            volatile TYPE keep = a[0];                                                                          \
            (void)keep;                                                                                         \
            if (rate > best) best = rate;                                                                       \
        }                                                                                                       \
        if (OPS_PER_INSN)                                                                                       \
            printf("%-12s %.2f G instructions/s = %.1f G%s/s\n", NAME, best / 1e9, best * (OPS_PER_INSN) / 1e9, \
                   (OPS_PER_INSN) == 128 ? "OP" : "FLOP");                                                      \
        else                                                                                                    \
            printf("%-12s %.2f G instructions/s\n", NAME, best / 1e9);                                          \
    } while (0)

int main(void) {
    {
        __m512bh w = (__m512bh)_mm512_set1_epi32(0x3f803f80), x = (__m512bh)_mm512_set1_epi32(0x3c003c00);
        PEAK("vdpbf16ps", __m512, _mm512_setzero_ps(), _mm512_dpbf16_ps(a[i], w, x), 64, _mm512_add_ps(a[0], a[i]));
    }
    {
        __m512i w = _mm512_set1_epi32(0x01010101), x = _mm512_set1_epi32(0x02020202);
        PEAK("vpdpbusd", __m512i, _mm512_setzero_si512(), _mm512_dpbusd_epi32(a[i], w, x), 128,
             _mm512_add_epi32(a[0], a[i]));
    }
    {
        __m512 w = _mm512_set1_ps(1.0f), x = _mm512_set1_ps(0.0f);
        PEAK("vfmadd231ps", __m512, _mm512_setzero_ps(), _mm512_fmadd_ps(a[i], w, x), 32, _mm512_add_ps(a[0], a[i]));
    }
    /* The dequantizing ops of the decodes (zmm, independent chains): what one table lookup or field op costs. */
    {
        __m512i w = _mm512_set1_epi16(3), x = _mm512_set1_epi16(1);
        PEAK("vpermw", __m512i, _mm512_set1_epi16(1), _mm512_permutexvar_epi16(a[i], w), 0, _mm512_add_epi16(a[0], a[i]));
        PEAK("vpermd", __m512i, _mm512_set1_epi32(1), _mm512_permutexvar_epi32(a[i], w), 0, _mm512_add_epi32(a[0], a[i]));
        PEAK("vpshufb", __m512i, _mm512_set1_epi8(1), _mm512_shuffle_epi8(w, a[i]), 0, _mm512_add_epi32(a[0], a[i]));
        PEAK("vpternlogd", __m512i, _mm512_set1_epi32(1), _mm512_ternarylogic_epi32(a[i], w, x, 0xe8), 0,
             _mm512_add_epi32(a[0], a[i]));
        PEAK("vpsrlw", __m512i, _mm512_set1_epi16(1), _mm512_srli_epi16(a[i], 1), 0, _mm512_add_epi32(a[0], a[i]));
    }
    /* Pairs of them, half the chains each: whether they share execution ports (a decode step issues both). */
    {
        __m512i w = _mm512_set1_epi16(3), x = _mm512_set1_epi16(1);
#define DP(v) _mm512_castps_si512(_mm512_dpbf16_ps(_mm512_castsi512_ps(v), (__m512bh)w, (__m512bh)x))
        PEAK("vpermw+vdpbf16ps", __m512i, _mm512_set1_epi16(1), (i & 1) ? _mm512_permutexvar_epi16(a[i], w) : DP(a[i]),
             0, _mm512_add_epi16(a[0], a[i]));
        PEAK("vpermw+vaddps", __m512i, _mm512_set1_epi16(1),
             (i & 1) ? _mm512_permutexvar_epi16(a[i], w)
                     : _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a[i]), _mm512_castsi512_ps(x))),
             0, _mm512_add_epi16(a[0], a[i]));
        PEAK("vpsrlw+vdpbf16ps", __m512i, _mm512_set1_epi16(1), (i & 1) ? _mm512_srli_epi16(a[i], 1) : DP(a[i]), 0,
             _mm512_add_epi16(a[0], a[i]));
        PEAK("vpermw+vpsrlw", __m512i, _mm512_set1_epi16(1),
             (i & 1) ? _mm512_permutexvar_epi16(a[i], w) : _mm512_srli_epi16(a[i], 1), 0, _mm512_add_epi16(a[0], a[i]));
#undef DP
    }
    return 0;
}

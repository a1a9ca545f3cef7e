/*
 * peak_fma.c -- the single-core arithmetic ceilings the x86 prefill paths are measured against: the
 * throughput of AVX-512 vfmadd231ps (fp32 FMA, 32 flops per instruction) and of vdpbf16ps (AVX512-BF16,
 * 16 lanes x 2 bf16 products accumulated in fp32: counted as 64 flops per instruction), each over 24
 * independent accumulators (more than latency x ports on any core here), best of 3 passes of 2e8 operations.
 * Not part of the CMake build (it needs -mavx512bf16 for the whole file):
 *   gcc -O2 -mavx512f -mavx512bf16 -o /tmp/peak_fma bench/x86/peak_fma.c && taskset -c 0 /tmp/peak_fma
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define ACC 24
#define OPS 200000000L

int main(void) {
    double best_fma = 0, best_dp = 0;
    float sink = 0;
    for (int pass = 0; pass < 3; pass++) {
        __m512 a[ACC];
        for (int j = 0; j < ACC; j++) a[j] = _mm512_set1_ps((float)j * 1e-3f);
        const __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-6f);
        const long n = OPS / ACC;
        double t0 = now();
        for (long i = 0; i < n; i++)
#pragma GCC unroll 24
            for (int j = 0; j < ACC; j++) a[j] = _mm512_fmadd_ps(a[j], b, c);
        double t = now() - t0;
        for (int j = 0; j < ACC; j++) sink += _mm512_reduce_add_ps(a[j]);
        if (n * ACC * 32.0 / t / 1e9 > best_fma) best_fma = n * ACC * 32.0 / t / 1e9;

        const __m512bh wb = (__m512bh)_mm512_set1_epi16(0x3f80), xb = (__m512bh)_mm512_set1_epi16(0x3f00);
        for (int j = 0; j < ACC; j++) a[j] = _mm512_setzero_ps();
        t0 = now();
        for (long i = 0; i < n; i++)
#pragma GCC unroll 24
            for (int j = 0; j < ACC; j++) a[j] = _mm512_dpbf16_ps(a[j], wb, xb);
        t = now() - t0;
        for (int j = 0; j < ACC; j++) sink += _mm512_reduce_add_ps(a[j]);
        if (n * ACC * 64.0 / t / 1e9 > best_dp) best_dp = n * ACC * 64.0 / t / 1e9;
    }
    printf("fp32 FMA (vfmadd231ps zmm): %.1f GFLOP/s\n", best_fma);
    printf("vdpbf16ps zmm:              %.1f GFLOP/s (%.2fx the FMA rate)\n", best_dp, best_dp / best_fma);
    return sink == 12345.0f; /* keeps the sums alive */
}

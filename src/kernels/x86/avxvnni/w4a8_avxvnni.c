/* w4a8_avxvnni.c -- the AVX-VNNI (256-bit VEX vpdpbusd) variant of x86_vnni_w4a8. */
#include <immintrin.h>

static inline __m256i w4a8_dot(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }

#include "../avx2/w4a8_ymm.h"

void mpl_w4a8_gemm_avxvnni(const mpl_w4a8_job *j, int64_t p0, int64_t p1) { w4a8_gemm_ymm(j, p0, p1); }

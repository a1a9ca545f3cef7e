/*
 * bw_probe.cu -- how fast can the SMs READ device memory, and by which mechanism?  (bench_cuda_bw)
 *
 * The decode target of cuda_w4a16 is stated against the copy bandwidth (read + write), but a GEMV only
 * reads. This probe measures, in one run, on a buffer far larger than the 60 MB L2:
 *   copy16      the copy kernel of bench_cuda_w4a16 (the issue's ceiling), bytes read + written
 *   read16      every thread 8 independent 16-byte loads in flight, grid-stride (the plain-load ceiling)
 *   bulk S x B  a persistent grid (one or two blocks per SM), each block streaming its contiguous share
 *               of the window through a ring of S stages of B bytes filled by cp.async.bulk (one thread
 *               issues, an mbarrier per stage completes), 256 consumer threads reading every byte from
 *               shared memory -- the mechanism of the stream path, measured no faster than skinny and
 *               removed (git tag exp/cuda-stream-v7, bench/cuda/NOTES.md v7)
 * over windows of 121 MB and 242 MB (the Llama-3-70B down and gate_up int4 layers) rotated over a 1 GiB
 * buffer (cold L2), so the per-launch start and drain are in the figure as they are in a layer's GEMV.
 * Every figure: median of 15 timed repetitions of 8 launches (cudaEvent), in TB/s (1e12 B/s).
 *
 *   bench_cuda_bw [--quick]
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "../../src/kernels/cuda/w4a16_common.cuh" /* the kernels' mbarrier, bulk-copy and load helpers */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

/* copy_kernel.cu: the copy kernel of bench_cuda_w4a16 (the issue's ceiling) */
extern "C" int bench_copy_launch(const void *src, void *dst, size_t bytes, int sms, void *stream);

using cuda_w4a16::ldg_stream;

/* 8 loads in flight per thread; the xor of everything goes to out (never 0 in practice: keeps the loads). */
__global__ void probe_read16(const uint4 *__restrict__ src, size_t n, uint32_t *out) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t x = 0;
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) v[u] = ldg_stream(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < 8; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n; i += stride) {
        uint4 v = ldg_stream(src + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) out[0] = x;
}

/* One block per share of the window; thread 0 of warp 8 (the 257th thread) is the producer. */
__global__ void __launch_bounds__(288) probe_bulk(const unsigned char *src, size_t bytes, int S, int B, uint32_t *out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) uint64_t full[16], empty[16];
    const size_t units = bytes / B;
    const size_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) cuda_w4a16::mbar_init(cuda_w4a16::smem_addr(&full[s]), 1), cuda_w4a16::mbar_init(cuda_w4a16::smem_addr(&empty[s]), 8);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const int warp = threadIdx.x >> 5;
    if (warp == 8) {
        if (threadIdx.x == 256) {
            for (size_t u = u0; u < u1; u++) {
                int s = (int)((u - u0) % S);
                uint32_t ph = (uint32_t)(((u - u0) / S) & 1);
                if (u - u0 >= (size_t)S) cuda_w4a16::mbar_wait(cuda_w4a16::smem_addr(&empty[s]), ph ^ 1);
                cuda_w4a16::mbar_expect_tx(cuda_w4a16::smem_addr(&full[s]), (uint32_t)B);
                cuda_w4a16::bulk_g2s(cuda_w4a16::smem_addr(ring + (size_t)s * B), src + u * B, (uint32_t)B, cuda_w4a16::smem_addr(&full[s]));
            }
        }
        return;
    }
    uint32_t x = 0;
    for (size_t u = u0; u < u1; u++) {
        int s = (int)((u - u0) % S);
        uint32_t ph = (uint32_t)(((u - u0) / S) & 1);
        cuda_w4a16::mbar_wait(cuda_w4a16::smem_addr(&full[s]), ph);
        const uint4 *p = reinterpret_cast<const uint4 *>(ring + (size_t)s * B);
        for (int i = threadIdx.x; i < B / 16; i += 256) {
            uint4 v = p[i];
            x ^= v.x ^ v.y ^ v.z ^ v.w;
        }
        __syncwarp();
        if ((threadIdx.x & 31) == 0) cuda_w4a16::mbar_arrive(cuda_w4a16::smem_addr(&empty[s]));
    }
    if (x == 0x9e3779b9u) out[0] = x;
#else
    (void)src, (void)bytes, (void)S, (void)B, (void)out;
#endif
}

static int cmpf(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

enum { K_COPY, K_READ, K_BULK };

/* median TB/s of kernel k over windows of `win` bytes rotating through the buffer */
static double measure(int k, unsigned char *buf, size_t total, size_t win, int sms, int S, int B, int bps, uint32_t *out,
                      int reps) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    size_t nwin = total / (k == K_COPY ? 2 * win : win);
    float t[64];
    const int calls = 8;
    for (int r = -2; r < reps; r++) {
        CK(cudaEventRecord(e0));
        for (int c = 0; c < calls; c++) {
            size_t w = ((size_t)(r + 2) * calls + c) % nwin;
            if (k == K_COPY) {
                unsigned char *s = buf + 2 * w * win;
                CK((cudaError_t)bench_copy_launch(s, s + win, win, sms, NULL));
            } else if (k == K_READ) {
                probe_read16<<<sms * 4, 512>>>((const uint4 *)(buf + w * win), win / 16, out);
            } else {
                probe_bulk<<<sms * bps, 288, (size_t)S * B>>>(buf + w * win, win, S, B, out);
            }
        }
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0) t[r] = ms / calls;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmpf);
    double ms = t[reps / 2];
    double moved = (double)win * (k == K_COPY ? 2.0 : 1.0);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return moved / (ms * 1e-3) / 1e12;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    int sms = 0, dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, dev));
    printf("# bench_cuda_bw: %s, %d SMs; TB/s = 1e12 B/s; median of 15 x 8 launches\n", pr.name, sms);
    const size_t total = (size_t)1 << 30;
    unsigned char *buf;
    uint32_t *out;
    CK(cudaMalloc(&buf, total));
    CK(cudaMalloc(&out, 64));
    CK(cudaMemset(buf, 0x5a, total));
    CK(cudaFuncSetAttribute(probe_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    const size_t wins[2] = {121634816, 243269632}; /* 70B down, gate_up int4 weights: K * N / 2 */
    const int reps = 15;
    for (int wi = 0; wi < 2; wi++) {
        size_t win = wins[wi];
        printf("window %.1f MB:\n", win / 1e6);
        printf("  copy16 (read + write)            %.3f TB/s\n", measure(K_COPY, buf, total, win, sms, 0, 0, 0, out, reps));
        printf("  read16                           %.3f TB/s\n", measure(K_READ, buf, total, win, sms, 0, 0, 0, out, reps));
        const int cfg[][3] = {{4, 16384, 1}, {8, 16384, 1}, {4, 32768, 1}, {6, 32768, 1}, {12, 16384, 1}, {8, 8192, 1},
                              {16, 8192, 1}, {4, 16384, 2}, {6, 16384, 2}, {3, 32768, 2}, {8, 4096, 2}, {16, 4096, 1}};
        int nc = quick ? 4 : (int)(sizeof cfg / sizeof cfg[0]);
        for (int c = 0; c < nc; c++) {
            int S = cfg[c][0], B = cfg[c][1], bps = cfg[c][2];
            if ((size_t)S * B * bps > 220 * 1024) continue;
            printf("  bulk %2d stages x %5d B, %d/SM    %.3f TB/s  (%d KB in flight per SM)\n", S, B, bps,
                   measure(K_BULK, buf, total, win, sms, S, B, bps, out, reps), S * B * bps / 1024);
        }
    }
    CK(cudaFree(buf));
    CK(cudaFree(out));
    return 0;
}

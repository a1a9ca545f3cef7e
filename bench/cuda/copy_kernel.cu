/* copy_kernel.cu -- the bandwidth ceiling for bench_cuda_w4a16: a device-to-device copy on the SMs
 * (16-byte loads and stores, grid-stride), the way framework copies run; cudaMemcpy nodes in a graph
 * may go to the copy engines, which are slower. */
#include <cuda_runtime.h>
#include <stdint.h>

/* Four 16-byte loads in flight per thread before the stores. */
__global__ void bench_copy16(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a, dst[i + stride] = b, dst[i + 2 * stride] = c, dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

extern "C" int bench_copy_launch(const void *src, void *dst, size_t bytes, int sms, void *stream) {
    bench_copy16<<<sms * 4, 512, 0, (cudaStream_t)stream>>>((const uint4 *)src, (uint4 *)dst, bytes / 16);
    return (int)cudaGetLastError();
}

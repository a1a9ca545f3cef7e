/* w4a16_permute.cu -- act-order for every path of cuda_w4a16: x permuted into packed channel order (the
 * layout sorts K by group at pack time, docs/layouts/cuda_w4a16.md "Act-order"). */
#include "w4a16_common.cuh"

namespace cuda_w4a16 {

/* xp[i][j] = x[i][perm[j]] (x rows of k_in, xp rows of k: 8-bit layers' two planes read every channel
 * twice): each thread writes 8 consecutive outputs (one 16-byte store; k is a multiple of 8), gathering
 * from the L2-resident row. */
__global__ void w4a16_permute(const uint16_t *__restrict__ x, const int32_t *__restrict__ perm,
                              uint16_t *__restrict__ xp, int m, int k_in, int k) {
    int pieces = k / 8;
    long long total = (long long)m * pieces;
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < total;
         v += (long long)gridDim.x * blockDim.x) {
        int i = (int)(v / pieces), j = (int)(v % pieces) * 8;
        const uint16_t *row = x + (size_t)i * k_in;
        uint32_t o[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            o[e] = (uint32_t)row[__ldg(perm + j + 2 * e)] | ((uint32_t)row[__ldg(perm + j + 2 * e + 1)] << 16);
        *reinterpret_cast<uint4 *>(xp + (size_t)i * k + j) = make_uint4(o[0], o[1], o[2], o[3]);
    }
}

} // namespace cuda_w4a16

extern "C" int mpl_cuda_w4a16_launch_permute(const void *x, const int32_t *perm, void *xp, int m, int k_in, int k,
                                             void *stream) {
    long long total = (long long)m * (k / 8);
    long long blocks = (total + 255) / 256;
    if (blocks > 65535) blocks = 65535; /* grid-stride beyond: a gather pass gains nothing from more blocks */
    cuda_w4a16::w4a16_permute<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>((const uint16_t *)x, perm,
                                                                                  (uint16_t *)xp, m, k_in, k);
    return (int)cudaGetLastError();
}

/* w4a16_tc_bf16.cu -- path cuda_w4a16:tc for bf16 activations (one file per type: parallel builds). */
#include "w4a16_tc.cuh"

extern "C" int mpl_cuda_w4a16_launch_tc_bf16(const mpl_cuda_w4a16_args *a, void *stream) {
    return (int)cuda_w4a16::tc_dispatch<cuda_w4a16::ActBF16>(a, (cudaStream_t)stream);
}

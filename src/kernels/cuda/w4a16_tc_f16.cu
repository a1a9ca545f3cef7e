/* w4a16_tc_f16.cu -- path cuda_w4a16:tc for f16 activations (one file per type: parallel builds). */
#include "w4a16_tc.cuh"

extern "C" int mpl_cuda_w4a16_launch_tc_f16(const mpl_cuda_w4a16_args *a, void *stream) {
    return (int)cuda_w4a16::tc_dispatch<cuda_w4a16::ActF16>(a, (cudaStream_t)stream);
}

/* w4a16_tc_f16.cu -- the tensor-core path for f16 activations (one file per type: parallel builds). */
#include "w4a16_tc.cuh"

extern "C" int mpl_cw4_launch_tc_f16(const mpl_cw4_args *a, void *stream) {
    return (int)cw4::tc_dispatch<cw4::ActF16>(a, (cudaStream_t)stream);
}

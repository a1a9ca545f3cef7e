#!/usr/bin/env bash
# bench/vulkan/h200_bins.sh -- on the H200 device machine, in one call, with the binaries built here
# (bench/vulkan/pack_h200_bins.sh, carried as .vkdeps):
#   run(kind="nvidia-h200", carry=[".vkdeps"], timeout_s=420, command="bash bench/vulkan/h200_bins.sh")
# 1. test_vulkan through NVIDIA's Vulkan driver, validation layer on (every path vs ref, every GEMV shape);
# 2. bench_vulkan_w4a16 --path gemv --m 1 on 70B gate_up (8192 x 57344), 8B gate_up (4096 x 28672) and 8B
#    gate_proj (4096 x 14336), uint4b8 group 128, cold copies, each over the GEMV shapes of SHAPES (the same list
#    as tests/test_vulkan.c's g_gemv_shapes, default first) beside the copy rate and the read probe in the
#    same process, and (--fixed 1) the same shader compiled with fixed shapes (bench/vulkan/CMakeLists.txt);
# 3. cuda_w4a16 on the same shapes (bench_cuda_w4a16: CUDA-graph replays over rotated copies; the CLI for
#    4096 x 14336) and bench_cuda_bw --quick (read16: the CUDA read ceiling).
# Logs to $OUT: steps.txt, nvidia-smi.txt, test.log, bench_vk.log, cuda.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-h200-vulkan}
mkdir -p "$OUT"
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/steps.txt"; }
D=$PWD/.vkdeps
mkdir -p .vkbin && tar -C .vkbin -xJf "$D/bins.tar.xz" || { echo "no .vkdeps/bins.tar.xz"; exit 1; }
export LD_LIBRARY_PATH=$PWD/.vkbin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=.vkbin
if ! ldconfig -p | grep -q 'libvulkan.so.1'; then
    stamp "no libvulkan.so.1: unpacking the carried libvulkan1"
    for f in "$D"/deb/libvulkan1_*.deb; do dpkg -x "$f" /; done
fi
ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1 ||
    for f in "$D"/deb/vulkan-validationlayers_*.deb; do dpkg -x "$f" /; done
ldconfig -p | grep -q 'libGLdispatch.so.0' ||
    for f in "$D"/deb/lib{glvnd0,egl1,opengl0,gl1,glx0,gles2}_*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
[ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ] &&
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
icd=""
for j in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
         /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$j" ] && { icd=$j; break; }
done
[ -n "$icd" ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
stamp "ICD: ${icd:-none}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu \
    --format=csv > "$OUT/nvidia-smi.txt" 2>&1

stamp "bench (Vulkan)"
SHAPES=${SHAPES:-0:0:0,64:8:1:0,64:8:2:0,32:8:1:1,128:8:1:1,64:4:2:1,64:4:1:1,64:16:1:1,32:8:2:1,64:8:4:0,128:4:2:0,256:1:4:1,64:32:1:0,64:8:1:2,32:8:1:2,128:8:1:2,64:16:1:2,64:1:1:2,128:16:1:2}
bv() { timeout 100 "$B/bench_vulkan_w4a16" "$@" 2>&1 | tee -a "$OUT/bench_vk.log"; }
bv --path gemv --m 1 --k 8192 --n 57344 --copies 2 --reps 30 --probe 1 --fixed 1 --shapes "$SHAPES"   # 235 MB of codes per copy
bv --path gemv --m 1 --k 4096 --n 28672 --copies 4 --reps 30 --probe 1 --fixed 1 --shapes "$SHAPES"   # 59 MB per copy
bv --path gemv --m 1 --k 4096 --n 14336 --copies 8 --reps 30 --probe 1 --fixed 1 --shapes "$SHAPES"   # 29 MB per copy
stamp "70B again (the spread between two timings of one shape)"
bv --path gemv --m 1 --k 8192 --n 57344 --copies 2 --reps 30 --probe 1 --shapes 0:0:0,64:8:1:0,64:8:2:0,64:8:1:2,64:16:1:2

stamp "cuda_w4a16 and the CUDA read ceiling"
{ timeout 60 "$B/bench_cuda_bw" --quick
  timeout 90 "$B/bench_cuda_w4a16" --m 1 --shapes 70B.gate_up,8B.gate_up --reps 20
  timeout 60 "$B/mplinear_cuda" bench --device cuda --m 1 --k 4096 --n 14336 --group-size 128 --wtype uint4b8 --reps 50
} > "$OUT/cuda.log" 2>&1
cat "$OUT/cuda.log" | tail -40

stamp "tests (validation layer on)"
timeout 200 "$B/test_vulkan" > "$OUT/test.log" 2>&1
echo "test exit $?" >> "$OUT/test.log"
grep -E "Vulkan device|NOTE|PASSED|FAILED|cases|^FAIL|VALIDATION|test exit" "$OUT/test.log" | head -40
stamp "done"

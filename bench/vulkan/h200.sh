#!/usr/bin/env bash
# bench/vulkan/h200.sh -- build, test and benchmark vulkan_w4a16 through NVIDIA's Vulkan driver on the H200
# device machine, in one call. First, HERE: bench/vulkan/pack_h200.sh (gathers .vkdeps/), then
#   run(kind="nvidia-h200", carry=[".vkdeps"], timeout_s=600,
#       command="OUT=$OUT bash bench/vulkan/h200.sh")
# H200_CUDA=1 also builds cuda_w4a16 (sm_90) and times it on the same shapes with `mplinear bench --device
# cuda` for the "within 1.3x of cuda_w4a16" comparison (adds a few minutes of build).
# Logs to $OUT: steps.txt, vulkaninfo.txt, build.log, test.log, info.log, bench.log (one line per case:
# median GPU time, GB/s of weights, GFLOP/s, and the copy rate measured in the same run).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-h200-vulkan}
mkdir -p "$OUT"
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/steps.txt"; }
D=$PWD/.vkdeps
[ -d "$D" ] || { echo "no .vkdeps/: run bench/vulkan/pack_h200.sh here first and carry .vkdeps"; exit 1; }

# ---- the loader and the validation layer: the image may lack them (unpack the carried Debian packages) ----
if ! ldconfig -p | grep -q 'libvulkan.so.1'; then
    stamp "no libvulkan.so.1: unpacking the carried libvulkan1"
    for f in "$D"/deb/libvulkan1_*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if ! ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1; then
    stamp "unpacking the carried vulkan-validationlayers"
    for f in "$D"/deb/vulkan-validationlayers_*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
# ---- NVIDIA's ICD: the loader finds it in the standard folders; else point it at the driver's json ----
# NVIDIA's Vulkan ICD (libGLX_nvidia.so.0) needs libglvnd: without it vkCreateInstance finds no driver
# ("Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr'"). The device notes' recipe.
if ! ldconfig -p | grep -q 'libGLdispatch.so.0'; then
    stamp "unpacking the carried libglvnd packages"
    for f in "$D"/deb/lib{glvnd0,egl1,opengl0,gl1,glx0,gles2}_*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
    ldconfig
fi
[ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ] &&
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
icd=""
for j in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
         /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$j" ] && { icd=$j; break; }
done
if [ -n "$icd" ] && [ "$icd" != /usr/share/vulkan/icd.d/nvidia_icd.json ] && [ "$icd" != /etc/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd   # VK_ICD_FILENAMES: loaders older than 1.3.207
fi
stamp "ICD: ${icd:-none found (the test will say no device)}; VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1

# ---- build: Vulkan headers, cmocka and the SPIR-V from .vkdeps (no GLSL compiler there) ----
stamp "build"
cuda=(-DMPLINEAR_CUDA=OFF)
targets=(test_vulkan bench_vulkan_w4a16 mplinear-cli)
[ "${H200_CUDA:-0}" = 1 ] && cuda=(-DMPLINEAR_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
{ cmake -S . -B build-h200vk -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" -DMPLINEAR_VULKAN=ON \
      -DMPL_VULKAN_INCLUDE="$D/include" -DMPLINEAR_VULKAN_SPIRV_DIR="$D/spirv" \
      -DCMOCKA_INCLUDE="$D/include" -DCMOCKA_LIB="$D/lib/libcmocka.so" -DMPLINEAR_MODEL=OFF &&
  cmake --build build-h200vk -j16 --target "${targets[@]}"; } > "$OUT/build.log" 2>&1 ||
    { stamp "build failed"; tail -30 "$OUT/build.log"; exit 1; }
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
B=build-h200vk

stamp "info"
"$B/mplinear" info > "$OUT/info.log" 2>&1
"$B/mplinear" info --device vulkan --k 8192 --n 57344 --group-size 128 >> "$OUT/info.log" 2>&1
grep -A4 "vulkan:" "$OUT/info.log" | head -12

# ---- the tests: every path against ref, validation layer on (device 0 = the first the loader lists) ----
stamp "tests"
timeout 240 "$B/tests/test_vulkan" > "$OUT/test.log" 2>&1
echo "test exit $?" >> "$OUT/test.log"
grep -E "Vulkan device|NOTE|PASSED|FAILED|cases|^FAIL|VALIDATION|test exit" "$OUT/test.log" | head -30

# ---- the benchmark: cold weights (copies > 60 MB L2), GPU time by timestamps ----
stamp "bench"
bv() { timeout 120 "$B/bench/vulkan/bench_vulkan_w4a16" "$@" 2>&1 | tee -a "$OUT/bench.log"; }
bv --path gemv --m 1 --k 8192 --n 57344 --copies 2 --reps 30     # 70B gate_up, 235 MB of codes per copy
bv --path gemv --m 1 --k 4096 --n 28672 --copies 4 --reps 30     # 8B gate_up, 59 MB per copy
for m in 512 4096; do
    bv --path tiled --m $m --k 4096 --n 28672 --copies 2 --reps 5
    bv --path tiled --m $m --k 8192 --n 57344 --copies 2 --reps 3
done
if [ "${H200_CUDA:-0}" = 1 ]; then
    stamp "cuda_w4a16 on the same shapes (mplinear bench --device cuda)"
    for args in "--m 1 --k 8192 --n 57344" "--m 1 --k 4096 --n 28672" "--m 512 --k 4096 --n 28672" \
                "--m 512 --k 8192 --n 57344" "--m 4096 --k 4096 --n 28672"; do
        timeout 120 "$B/mplinear" bench --device cuda $args --group-size 128 --reps 10 2>&1 | tail -2 | tee -a "$OUT/bench.log"
    done
fi
stamp "done"

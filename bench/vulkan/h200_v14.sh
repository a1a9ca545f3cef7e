#!/usr/bin/env bash
# bench/vulkan/h200_v14.sh -- v14 on the H200 device machine, with the binaries built here (pack_h200_bins.sh,
# carried as .vkdeps):
#   run(kind="nvidia-h200", carry=[".vkdeps"], timeout_s=150, command="MODE=sweep bash bench/vulkan/h200_v14.sh")
#   run(kind="nvidia-h200", carry=[".vkdeps"], timeout_s=150, command="MODE=final bash bench/vulkan/h200_v14.sh")
#   run(kind="nvidia-h200", carry=[".vkdeps"], timeout_s=200, command="MODE=all bash bench/vulkan/h200_v14.sh")
# sweep: bench_vulkan_w4a16 --path gemv --m 1 on 70B gate_up and 8B gate_up over the GEMV forms of SWEEP
#        (WG:ROWS:UNROLL:PREFETCH:BLOCKS), a few forms per process (v13 saw later forms of a long process slow
#        down), each line followed by the pipeline's statistics (VK_KHR_pipeline_executable_properties).
# all:   both in one call (about 80 s of wall time after the machine's start).
# final: the default and FINAL forms on the three shapes with the read probe, cuda_w4a16 + CUDA read16, and
#        test_vulkan through NVIDIA's driver with the validation layer.
# Logs to $OUT: steps.txt, nvidia-smi.txt, bench_vk.log, cuda.log, test.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-h200-vulkan}
MODE=${MODE:-sweep}
mkdir -p "$OUT"
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/steps.txt"; }
D=$PWD/.vkdeps
mkdir -p .vkbin && tar -C .vkbin -xJf "$D/bins.tar.xz" || { echo "no .vkdeps/bins.tar.xz"; exit 1; }
export LD_LIBRARY_PATH=$PWD/.vkbin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=.vkbin
ldconfig -p | grep -q 'libvulkan.so.1' || for f in "$D"/deb/libvulkan1_*.deb; do dpkg -x "$f" /; done
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
bv() { timeout 60 "$B/bench_vulkan_w4a16" "$@" 2>&1 | tee -a "$OUT/bench_vk.log"; }
S70="--path gemv --m 1 --k 8192 --n 57344 --copies 2 --reps 30"   # 235 MB of codes per copy
S8="--path gemv --m 1 --k 4096 --n 28672 --copies 4 --reps 30"    # 59 MB per copy
S8p="--path gemv --m 1 --k 4096 --n 14336 --copies 8 --reps 30"   # 29 MB per copy
if [ "$MODE" = sweep ] || [ "$MODE" = all ]; then
    SWEEP=${SWEEP:-"0:0:0,64:8:1:0:2,64:8:1:0:4,64:8:1:0:16 32:8:1:0:1,32:8:1:0:4,128:8:1:0:1,128:8:1:0:4 64:4:1:0:1,64:4:1:0:4,128:4:1:0:1,32:4:1:0:1 256:4:1:0:1,64:2:1:0:1,32:16:1:0:1,64:16:1:0:1 64:8:1:2:1,64:8:1:2:4,32:8:1:0:3,64:8:2:0:1"}
    first=1
    for g in $SWEEP; do
        stamp "sweep $g"
        bv $S70 --probe $first --shapes "$g"
        bv $S8 --probe $first --shapes "$g"
        first=0
    done
fi
if [ "$MODE" = final ] || [ "$MODE" = all ]; then
    FINAL=${FINAL:-0:0:0}
    stamp "final forms $FINAL"
    bv $S70 --probe 1 --shapes "$FINAL"
    bv $S8 --probe 1 --shapes "$FINAL"
    bv $S8p --probe 1 --shapes "$FINAL"
    stamp "70B again, fresh process"
    bv $S70 --shapes "$FINAL"
    stamp "cuda_w4a16 and the CUDA read ceiling"
    { timeout 60 "$B/bench_cuda_bw" --quick
      timeout 90 "$B/bench_cuda_w4a16" --m 1 --shapes 70B.gate_up,8B.gate_up --reps 20
      timeout 60 "$B/mplinear_cuda" bench --device cuda --m 1 --k 4096 --n 14336 --group-size 128 --wtype uint4b8 --reps 50
    } > "$OUT/cuda.log" 2>&1
    tail -30 "$OUT/cuda.log"
    stamp "tests (validation layer on)"
    timeout 200 "$B/test_vulkan" > "$OUT/test.log" 2>&1
    echo "test exit $?" >> "$OUT/test.log"
    grep -E "Vulkan device|statistics|PASSED|FAILED|^FAIL|VALIDATION|test exit" "$OUT/test.log" | head -40
fi
stamp "done"

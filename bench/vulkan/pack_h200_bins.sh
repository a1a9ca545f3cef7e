#!/usr/bin/env bash
# bench/vulkan/pack_h200_bins.sh VKBUILD CUDABUILD -- run HERE: gathers what bench/vulkan/h200_bins.sh needs on
# the H200 device machine into .vkdeps/ (git-ignored through .git/info/exclude; carry it), so that the device
# builds nothing (device time is the scarce part):
#   .vkdeps/bins.tar.xz   test_vulkan, bench_vulkan_w4a16 (from VKBUILD: -DMPLINEAR_VULKAN=ON, CUDA off) and
#                         bench_cuda_w4a16, bench_cuda_bw, mplinear (from CUDABUILD: -DMPLINEAR_CUDA=ON
#                         -DCMAKE_CUDA_ARCHITECTURES=90), stripped, with libcmocka inside
#   .vkdeps/deb/*.deb     libvulkan1 (the loader), vulkan-validationlayers and libglvnd (NVIDIA's ICD needs it),
#                         amd64, unpacked there with dpkg -x only when the machine lacks them
# v13 (bench/results/vulkan/h200-v13.md): VKBUILD=/tmp/vkbuild from the working tree, CUDABUILD=/tmp/cudabuild
# from `git archive HEAD` (the committed cuda_w4a16 that the Vulkan figures are compared with).
set -euo pipefail
cd "$(dirname "$0")/../.."
VK=${1:?VKBUILD}
CU=${2:?CUDABUILD}
mkdir -p .git/info
grep -qx '/.vkdeps/' .git/info/exclude 2>/dev/null || echo '/.vkdeps/' >> .git/info/exclude
rm -rf .vkdeps && mkdir -p .vkdeps/deb /tmp/vkbins/lib
rm -rf /tmp/vkbins/* && mkdir -p /tmp/vkbins/lib
cp "$VK"/tests/test_vulkan "$VK"/bench/vulkan/bench_vulkan_w4a16 /tmp/vkbins/
cp "$CU"/bench/cuda/bench_cuda_w4a16 "$CU"/bench/cuda/bench_cuda_bw /tmp/vkbins/
cp "$CU"/mplinear /tmp/vkbins/mplinear_cuda
strip /tmp/vkbins/test_vulkan /tmp/vkbins/bench_vulkan_w4a16 /tmp/vkbins/bench_cuda_w4a16 /tmp/vkbins/bench_cuda_bw \
      /tmp/vkbins/mplinear_cuda
cp -L "$(ldconfig -p | awk '$1 == "libcmocka.so.0" {print $NF; exit}')" /tmp/vkbins/lib/
tar -C /tmp/vkbins -cf - . | xz -T0 -6 > .vkdeps/bins.tar.xz
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
mkdir -p /tmp/amd64/partial
apt-get $o update -qq
(cd .vkdeps/deb && apt-get $o download libvulkan1 vulkan-validationlayers libglvnd0 libegl1 libopengl0 libgl1 libglx0 libgles2)
du -sh .vkdeps

#!/usr/bin/env bash
# bench/vulkan/pack_h200.sh -- run HERE (Debian 12, after a build with the Vulkan module in BUILD, default
# build-h14): gathers what bench/vulkan/h200.sh needs on the H200 machine, which has no network, no Vulkan
# headers, no GLSL compiler and possibly no Vulkan loader, into .vkdeps/ (git-ignored through
# .git/info/exclude; carry it: run(carry=[".vkdeps"])):
#   .vkdeps/include/{vulkan,vk_video}/  the Vulkan headers (the build needs them; the library dlopens the loader)
#   .vkdeps/include/cmocka.h, .vkdeps/lib/libcmocka.so*   the test framework
#   .vkdeps/spirv/*.spv                 the shaders, compiled here (MPLINEAR_VULKAN_SPIRV_DIR there)
#   .vkdeps/deb/*.deb                   libvulkan1 (the loader) and vulkan-validationlayers, amd64, unpacked
#                                       there with dpkg -x only when the machine lacks them
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-h14}
grep -qx '/.vkdeps/' .git/info/exclude 2>/dev/null || echo '/.vkdeps/' >> .git/info/exclude
rm -rf .vkdeps && mkdir -p .vkdeps/include .vkdeps/lib .vkdeps/spirv .vkdeps/deb
cp -r /usr/include/vulkan /usr/include/vk_video .vkdeps/include/
cp /usr/include/cmocka.h .vkdeps/include/
cp -P /usr/lib/x86_64-linux-gnu/libcmocka.so* .vkdeps/lib/
cp "$BUILD"/vulkan_spirv/*.spv .vkdeps/spirv/
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
mkdir -p /tmp/amd64/partial
apt-get $o update -qq
(cd .vkdeps/deb && apt-get $o download libvulkan1 vulkan-validationlayers libglvnd0 libegl1 libopengl0 libgl1 libglx0 libgles2)
du -sh .vkdeps

#!/usr/bin/env bash
# bench/cuda/pack_h200.sh -- build the CUDA test, benchmark and CLI here (sm_90 + the sm_90a wg object) and pack
# them for the device machine: .h200pack/bins.tar.xz plus .h200pack/lib (libcmocka.so.0, libjson-c.so.5, which
# the device image lacks). The packed binaries are ~9 MB (the three unpacked ones exceed the device tool's
# 64 MiB transfer). On the device:  . bench/cuda/dev_unpack.sh && H200_PREBUILT=.h200 bash bench/cuda/h200.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-h200x -DMPLINEAR_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > /dev/null
cmake --build build-h200x -j"$(nproc)" --target test_cuda_w4a16 bench_cuda_w4a16 bench_cuda_bw mplinear-cli
mkdir -p .h200 .h200pack/lib
cp build-h200x/tests/test_cuda_w4a16 build-h200x/bench/cuda/bench_cuda_w4a16 build-h200x/bench/cuda/bench_cuda_bw build-h200x/mplinear .h200/
strip .h200/test_cuda_w4a16 .h200/bench_cuda_w4a16 .h200/bench_cuda_bw .h200/mplinear
tar -C .h200 -cf - bench_cuda_w4a16 bench_cuda_bw test_cuda_w4a16 mplinear | xz -T0 -3 > .h200pack/bins.tar.xz
for l in libcmocka.so.0 libjson-c.so.5; do
    p=$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')
    [ -n "$p" ] && cp -L "$p" .h200pack/lib/
done
ls -la .h200pack .h200pack/lib

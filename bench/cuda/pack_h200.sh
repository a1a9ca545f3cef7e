#!/usr/bin/env bash
# bench/cuda/pack_h200.sh -- build the CUDA test, benchmark and CLI here (sm_90 + the sm_90a wg object) and pack
# them for the device machine: .h200pack/bins.tar.xz, with lib/ inside (libcmocka, json-c, oneDNN, OpenBLAS, which
# the device image lacks). The packed binaries are ~9 MB (the three unpacked ones exceed the device tool's
# 64 MiB transfer). On the device:  . bench/cuda/dev_unpack.sh && H200_PREBUILT=.h200 bash bench/cuda/h200.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-h200x -DMPLINEAR_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > /dev/null
# Also the CPU-side suites that exercise paths the device host has and this machine may not (its Xeon
# has AMX and AVX-512), the CLI test (every path forced from the CLI, CUDA ones included) and mplbench.
cmake --build build-h200x -j"$(nproc)" --target test_cuda_w4a16 test_cuda_faults bench_cuda_w4a16 bench_cuda_bw bench_cuda_threads mplinear-cli \
    test_cli test_paths test_x86_w4a16 test_x86_w4a8 test_chooser mplbench
mkdir -p .h200 .h200pack/lib
bins="test_cuda_w4a16 test_cuda_faults bench_cuda_w4a16 bench_cuda_bw bench_cuda_threads mplinear test_cli test_paths test_x86_w4a16 test_x86_w4a8 test_chooser mplbench"
cp build-h200x/tests/test_cuda_w4a16 build-h200x/tests/test_cuda_faults build-h200x/bench/cuda/bench_cuda_w4a16 build-h200x/bench/cuda/bench_cuda_bw build-h200x/bench/cuda/bench_cuda_threads build-h200x/mplinear \
   build-h200x/tests/test_cli build-h200x/tests/test_paths build-h200x/tests/test_x86_w4a16 build-h200x/tests/test_x86_w4a8 \
   build-h200x/tests/test_chooser build-h200x/bench/x86/mplbench .h200/
(cd .h200 && strip $bins)
# Shared libraries the device image lacks go inside the archive (oneDNN alone is ~40 MB unpacked; the
# device tool carries 64 MiB in all).
rm -rf .h200/lib .h200pack/lib && mkdir -p .h200/lib
for l in libcmocka.so.0 libjson-c.so.5 libdnnl.so.2 libopenblas.so.0 libgomp.so.1 libgfortran.so.5; do
    p=$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')
    [ -n "$p" ] && cp -L "$p" .h200/lib/
done
tar -C .h200 -cf - $bins lib | xz -T0 -6 > .h200pack/bins.tar.xz
ls -la .h200pack

#!/usr/bin/env bash
# bench/cuda/v20_h200.sh -- on the device machine (bench/cuda/NOTES.md v20, prepared, not yet run): the stream-K form
# for 8-bit layers (bench/results/v20/wg8-streamk.patch) and the device-matrix rounds added in v19 that no GPU has
# run yet (skinny with 4 row tiles per warp on small 4-bit layers, FORM_W8 with 1). Build with the patch applied:
#   git apply bench/results/v20/wg8-streamk.patch, build test_cuda_w4a16 test_cuda_faults bench_cuda_w4a16 bench_cuda_bw
#   in build-h200x, pack them into .h200pack/bins.tar.xz as in v19 (bench/cuda/dev_unpack.sh), run with carry .h200pack.
# One call: device tests; 8-bit wg vs wg-streamk forced at m 33..256 on the 70B and 8B shapes (group 128 and -1).
# Land the patch only if the matrix passes; give 8-bit wg-streamk a default range only where the sweep puts it ahead.
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
stamp tests
dev_tests "$R"
stamp "8-bit wg vs wg-streamk"
for g in 128 -1; do
  timeout 120 stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets wg,wg-streamk --shapes 70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up \
    --m 33,64,65,128,129,256 --wtype uint8b128 --group $g --reps 10 > "$R/sweep_w8sk_g$g.log" 2>&1
done
stamp done
tar -C "$R" -czf "${OUT:-/tmp}/v20.tar.gz" .
for g in 128 -1; do echo "-- group $g"; grep -E "^sweep" "$R/sweep_w8sk_g$g.log" | grep -E " wg | wg-streamk " | awk '{print $2, $3, $4, $5}' | paste - - ; done

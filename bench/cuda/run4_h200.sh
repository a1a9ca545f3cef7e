#!/usr/bin/env bash
# bench/cuda/run4_h200.sh -- on the device machine: the CUDA suites after the 8-bit skinny range change, the 8-bit
# skinny-vs-tc sweep at m 9..16 on the K = 4096 layers, and on the host Xeon the x86 suites and width decode
# figures (mplbench, W4A16 and W4A8, every width, 1 and 2 threads). Results under $OUT.
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
( time timeout 240 $B/test_cuda_w4a16 ) > "$R/test_cuda_w4a16.txt" 2>&1; echo "rc=$?" >> "$R/test_cuda_w4a16.txt"
( timeout 60 $B/test_cuda_faults ) > "$R/test_cuda_faults.txt" 2>&1; echo "rc=$?" >> "$R/test_cuda_faults.txt"
grep -E "device matrix|FAIL|rc=" "$R/test_cuda_w4a16.txt" | head; tail -2 "$R/test_cuda_faults.txt"
for set in skinny tc; do
  timeout 60 $B/bench_cuda_w4a16 --sweep --sets $set --shapes 8B.gate_up,8B.qkv --m 9,12,16 --wtype uint8b128 \
      > "$R/w8-m16-$set.txt" 2>&1
done
grep -h "M=" "$R"/w8-m16-*.txt | grep -v "cuBLAS\|default" | head -20
for t in test_x86_w4a16 test_x86_w4a8 test_paths test_chooser test_cli; do
  ( MPL_BUILD_DIR=$PWD/$B timeout 150 $B/$t ) > "$R/$t.txt" 2>&1; echo "$t rc=$?" | tee -a "$R/x86-tests.txt"
done
lscpu | grep -E "Model name|^CPU\(s\)" > "$R/cpu.txt"
for wt in uint4b8 uint8b128 uint3b4 uint2b2; do
  timeout 60 $B/mplbench --wtype $wt --m 1 --threads 1,2 --shapes 4096x14336 --reps 9 --no-dense >> "$R/xeon-w4a16.txt" 2>&1
  timeout 60 $B/mplbench --w4a8 --wtype $wt --m 1,512 --threads 1 --shapes 4096x14336 --reps 5 --no-dense >> "$R/xeon-w4a8.txt" 2>&1
done
grep -E "config|x86_|readbw|read" "$R/xeon-w4a16.txt" | head -40

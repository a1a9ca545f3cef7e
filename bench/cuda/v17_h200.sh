#!/usr/bin/env bash
# bench/cuda/v17_h200.sh -- on the device machine: land issue 18's 8-bit wg path (bench/cuda/NOTES.md v16, v17).
# Binaries built here by bench/cuda/pack_h200.sh (carried as .h200pack); the Humming wheel carried in .whl. One call:
#   device tests (the matrix with the 8-bit wg round, test_cuda_faults); read ceiling; uint8b128 sweep with skinny,
#   wg, tc and dq forced at M 4..1024 on six shapes (bf16 activations, f16 scales, group 128, cold weights) to set
#   the 8-bit ranges; uint4b8 default beside (the 4-bit paths, same call); Humming 0.1.19 int8 beside.
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
S=${SHAPES:-70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up}
MS=${MS:-4,8,12,16,24,32,64,128,256,512,1024}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$R/nvidia-smi.txt" 2>&1
stamp tests
( time timeout ${TEST_S:-330} $B/test_cuda_w4a16 ) > "$R/test_cuda_w4a16.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_w4a16.log"
( timeout 60 $B/test_cuda_faults ) > "$R/test_cuda_faults.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_faults.log"
grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_cuda_w4a16.log" "$R/test_cuda_faults.log" | head -20
timeout 30 $B/bench_cuda_bw --quick > "$R/bw.log" 2>&1
stamp "sweep 8-bit"
timeout ${SWEEP_S:-150} stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets skinny,wg,tc,dq --shapes $S --m $MS --wtype uint8b128 --reps 10 \
    > "$R/sweep_w8.log" 2>&1
stamp "4-bit default"
timeout 60 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m $MS --wtype uint4b8 --reps 10 > "$R/bench_w4.log" 2>&1
stamp "humming 8"
[ "${HUMMING:-1}" = 1 ] && dev_humming 8 "$R/humming8"
stamp done
grep -iE "read16" "$R/bw.log" | head -2
grep -E "M=" "$R/sweep_w8.log" | awk '{print $2, $3, $4, $5}' | paste - - - - - | head -80

#!/usr/bin/env bash
# bench/cuda/v16_h200.sh -- on the device machine: issue 18's 8-bit wg path (bench/cuda/NOTES.md v16). Binaries
# built here (test_cuda_w4a16, test_cuda_faults, bench_cuda_w4a16, bench_cuda_bw + lib/), carried as .h200pack as
# in v13 (bench/cuda/v13_h200.sh's header); logs under $OUT. One call:
#   device tests (the matrix with the 8-bit wg round, test_cuda_faults); read ceiling; uint8b128 sweep with wg, tc
#   and dq forced at M 16..1024 on the four issue-18 shapes (bf16 activations, f16 scales, group 128, cold weights);
#   uint4b8 wg forced at the same M (the 4-bit regression check, same call); Humming 0.1.19 int8 beside (.whl).
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
S=70B.gate_up,70B.down,8B.qkv,8B.gate_up
MS=16,32,64,128,256,512,1024
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$R/nvidia-smi.txt" 2>&1
stamp tests
( time timeout ${TEST_S:-150} $B/test_cuda_w4a16 ) > "$R/test_cuda_w4a16.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_w4a16.log"
( timeout 60 $B/test_cuda_faults ) > "$R/test_cuda_faults.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_faults.log"
grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_cuda_w4a16.log" "$R/test_cuda_faults.log" | head -20
timeout 30 $B/bench_cuda_bw --quick > "$R/bw.log" 2>&1
stamp "sweep 8-bit"
timeout ${SWEEP_S:-200} stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets wg,tc,dq --shapes $S --m $MS --wtype uint8b128 --reps 10 \
    > "$R/sweep_w8.log" 2>&1
stamp "sweep 4-bit wg"
timeout 80 stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets wg --shapes $S --m $MS --wtype uint4b8 --reps 10 > "$R/sweep_w4.log" 2>&1
stamp "humming 8"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
mkdir -p "$R/humming8"
OUT="$R/humming8" PEER_SECONDS=${PEER_SECONDS:-100} HUMMING_PEER_PROBE=0 HUMMING_PEER_BITS=8 HUMMING_PEER_MS=16,64,256,1024 \
    PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 120 python3 bench/cuda/humming_peer.py > "$R/humming8/stdout.log" 2>&1
tail -20 "$R/humming8/stdout.log"
stamp done
grep -iE "read16" "$R/bw.log" | head -2
grep -E "^ *(8B|70B)" "$R/sweep_w8.log" | head -80
grep -E "^ *(8B|70B)" "$R/sweep_w4.log" | head -40

#!/usr/bin/env bash
# bench/cuda/v13_h200.sh MODE -- on the device machine (binaries from bench/cuda/pack_h200.sh, carried as
# .h200pack): the v13 rounds (bench/cuda/NOTES.md v13: path cuda_w4a16:wg-streamk). Logs under $OUT.
# The full pack was 61 MB (12.5 MB per binary with the wg path's instantiations): v13 carried only what this script
# runs, repacked here with
#   tar -C .h200 -cf - test_cuda_w4a16 test_cuda_faults bench_cuda_w4a16 bench_cuda_bw mplinear \
#       lib/libcmocka.so.0 lib/libjson-c.so.5 | xz -T2 -6 > .h200pack/bins.tar.xz          (17.7 MB)
#   probe  device tests (test_cuda_w4a16 matrix, test_cuda_faults); sweep default / wg (the split-K form: the
#          committed kernel, same SASS) / wg-streamk at M 64, 128, 256 on the 8 shapes, bf16 and f16 (scales in the
#          activation's type), cuBLAS bf16 beside; ncu of the stream-K kernel at 70B down M = 64
#   final  bench bf16 + f16 at M 64, 256 on the 8 shapes, read ceiling; Humming 0.1.19 beside (.whl carried:
#          the wheel; bench/cuda/humming_peer.py with HUMMING_PEER_MS)
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
MODE=${1:-probe}
S=70B.down,70B.gate_up,70B.o,70B.qkv,8B.qkv,8B.gate_up,8B.o,8B.down
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$R/nvidia-smi.txt" 2>&1
if [ "$MODE" = probe ]; then
  stamp tests
  ( time timeout 280 $B/test_cuda_w4a16 ) > "$R/test_cuda_w4a16.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_w4a16.log"
  ( timeout 60 $B/test_cuda_faults ) > "$R/test_cuda_faults.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_faults.log"
  grep -E "device matrix|FAIL|PASSED|rc=|default paths" "$R/test_cuda_w4a16.log" "$R/test_cuda_faults.log" | head -20
  stamp sweep
  timeout 150 $B/bench_cuda_w4a16 --sweep --sets wg,wg-streamk --m 64,128,256 --shapes $S --reps 10 --act bf16 --scales bf16 \
      > "$R/sweep_bf16.log" 2>&1
  timeout 100 $B/bench_cuda_w4a16 --sweep --sets wg,wg-streamk --m 64,256 --shapes $S --reps 10 --act f16 --scales f16 \
      > "$R/sweep_f16.log" 2>&1
  stamp ncu
  timeout 90 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section ComputeWorkloadAnalysis -k regex:w4a16_wg -c 1 $B/bench_cuda_w4a16 --shapes 70B.down --m 64 --reps 1 \
      > "$R/ncu_sk_70Bdown_m64.txt" 2>&1
  stamp done
  grep -E "M=.*(default|wg)" "$R/sweep_bf16.log" | awk '{print $2, $3, $4, $5}' | paste - - - | head -40
  grep -E "M=.*(default|wg)" "$R/sweep_f16.log" | awk '{print $2, $3, $4, $5}' | paste - - - | head -20
  grep -E "Duration|Throughput|Issue Slots|No Eligible|Eligible Warps|Pipe" "$R/ncu_sk_70Bdown_m64.txt" | head -14
fi
if [ "$MODE" = final ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  stamp bench
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw.log" 2>&1
  timeout 120 $B/bench_cuda_w4a16 --m 64,256 --shapes $S --reps 10 --act bf16 --scales bf16 > "$R/bench_bf16.log" 2>&1
  timeout 120 $B/bench_cuda_w4a16 --m 64,256 --shapes $S --reps 10 --act f16 --scales f16 > "$R/bench_f16.log" 2>&1
  # the same cells again, split-K form (the committed kernel) and stream-K forced, twice, to see the run-to-run spread
  for i in 1 2; do
    timeout 60 $B/bench_cuda_w4a16 --sweep --sets wg,wg-streamk --m 64,256 --shapes $S --reps 10 --act bf16 --scales bf16
    timeout 60 $B/bench_cuda_w4a16 --sweep --sets wg,wg-streamk --m 64,256 --shapes $S --reps 10 --act f16 --scales f16
  done > "$R/sweep_repeat.log" 2>&1
  stamp humming
  OUT=$R PEER_SECONDS=${PEER_SECONDS:-170} HUMMING_PEER_PROBE=0 HUMMING_PEER_MS=64,256 PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 \
      timeout 280 python3 bench/cuda/humming_peer.py > "$R/humming_stdout.log" 2>&1
  stamp done
  grep -E "^(8B|70B)" "$R/bench_bf16.log" "$R/bench_f16.log" | head -40
  tail -15 "$R/humming_stdout.log"
fi

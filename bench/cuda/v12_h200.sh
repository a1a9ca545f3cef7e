#!/usr/bin/env bash
# bench/cuda/v12_h200.sh MODE -- on the device machine (binaries from bench/cuda/pack_h200.sh, carried as
# .h200pack; the v11 bench as $B/bench_old when comparing): the v12 rounds (bench/cuda/NOTES.md v12).
#   probe  tests; old vs new wg at M 16..256 (same run); ncu of the wg kernel at 70B down M = 64; cuBLAS duty cycle
#          (ran once, 2026-12-02, with bench/results/v12/wg_streamk.patch applied: its sweep sets "wg blocks66/100"
#          exist only with that patch; bench_old = the committed tree's bench)
#   final  tests; bench bf16 + f16 (M 1..4096, 8 shapes); Humming beside (.whl: wheel + humming_peer.py)
# Logs under $OUT.
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
MODE=${1:-probe}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$R/nvidia-smi.txt" 2>&1
( time timeout 240 $B/test_cuda_w4a16 ) > "$R/test_cuda_w4a16.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_w4a16.log"
grep -E "device matrix|FAIL|rc=" "$R/test_cuda_w4a16.log" | head -20
if [ "$MODE" = probe ]; then
  S=70B.down,70B.gate_up,70B.o,70B.qkv,8B.qkv,8B.gate_up,8B.o,8B.down
  timeout 200 $B/bench_cuda_w4a16 --sweep --sets wg --m 16,32,64,128,256 --shapes $S --reps 10 > "$R/sweep_new.log" 2>&1
  if [ -x $B/bench_old ]; then
    timeout 120 $B/bench_old --m 64,256 --shapes $S --reps 10 > "$R/bench_old.log" 2>&1
  fi
  ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section ComputeWorkloadAnalysis -k regex:w4a16_wg -c 1 $B/bench_cuda_w4a16 --shapes 70B.down --m 64 --reps 1 \
      > "$R/ncu_wg_70Bdown_m64.txt" 2>&1
  timeout 60 python3 bench/cuda/cublas_duty.py 1024,4096 > "$R/cublas_duty.log" 2>&1
  grep -E "M=(16|32|64|128|256) .*(default|wg )" "$R/sweep_new.log" | head -80
  grep -E "^(8B|70B)" "$R/bench_old.log"
  grep -E "Duration|Throughput|Issue Slots|No Eligible|Eligible Warps|Stall|Pipe|Executed Ipc" "$R/ncu_wg_70Bdown_m64.txt" | head -30
  cat "$R/cublas_duty.log"
fi

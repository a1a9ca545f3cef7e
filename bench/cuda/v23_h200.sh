#!/usr/bin/env bash
# bench/cuda/v23_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v23): 2-bit layers in halves.
#   tests: the device matrix (with the halves rounds) and test_cuda_faults, then the 2-bit defaults at M = 1.
#   bench: uint2b2 and uint4b8 defaults at M 1..1024 on the 70B and 8B shapes (bf16, group 128, f16 scales, cold
#          weights, graph replay, median of 10), the uint2b2 sweep of every path that takes halves (the ranges), and
#          Humming 0.1.19 int2 in the same call (the wheel carried in .whl/).
#   all:   tests (the matrix, faults), then the uint2b2 and uint4b8 defaults at M 1..1024 and the uint2b2 skinny / wg
#          sweep at M 1..32 (the second kernel of the session: halves_off, bench/cuda/NOTES.md v23).
#   nw:    the halves rounds of the matrix alone (MPL_CUDA_W4A16_TEST_HALVES, with four row tiles per warp forced at
#          m = 9 and 16) and skinny with two vs four row tiles per warp at m = 9 and 16 beside wg.
#   persist: the halves rounds (with the persistent skinny form's cases) and an A/B of the bench built before the
#          persistent form (.h200/bench_cuda_w4a16_old) and after, taking turns, at M = 1 and 8 (default, skinny with two
#          and four row tiles per warp). The persistent form was measured slower and is not in the tree: to rerun,
#          apply bench/results/v23/persist.patch first.
#   prof:  ncu (--clock-control none) of skinny at M = 1 on 70B gate_up: halves (uint2b2), the 4-bit offset form
#          (uint4b8 forced skinny, the same form) and skinny-rounded (the 4-bit default).
# Binaries packed as in bench/cuda/dev_unpack.sh; every log in one tar ($OUT/v23_MODE.tar.gz).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
S=70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up
case "${1:-tests}" in
tests)
  TEST_S=450 dev_tests "$R"
  stamp "m1"
  timeout 60 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1 --wtype uint2b2 --reps 10 > "$R/m1_uint2b2.log" 2>&1
  grep -E "cuda_w4a16" "$R/m1_uint2b2.log" | head -12
  ;;
bench)
  dev_card "$R"
  for w in uint2b2 uint4b8; do
    stamp "defaults $w"
    timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
  done
  stamp "sweep uint2b2"
  timeout 200 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,4,8,9,12,16,32,33,64,128,256,512,1024 --wtype uint2b2 --reps 5 \
      --sweep --sets "default,skinny,skinny nw2,skinny nw4,skinny ksplit2,wg,wg-streamk,dq" > "$R/sweep_uint2b2.log" 2>&1
  stamp "humming 2"
  PEER_SECONDS=${PEER_SECONDS:-80} dev_humming 2 "$R/humming2" | tail -12
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw_end.log" 2>&1
  for w in uint2b2 uint4b8; do echo "-- $w"; grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done
  ;;
all)
  TEST_S=400 dev_tests "$R"
  for w in uint2b2 uint4b8; do
    stamp "defaults $w"
    timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
  done
  stamp "sweep uint2b2 (small m)"
  timeout 120 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,8,9,16,17,32 --wtype uint2b2 --reps 5 \
      --sweep --sets "default,skinny,skinny nw4,wg,wg-streamk" > "$R/sweep_uint2b2.log" 2>&1
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw_end.log" 2>&1
  for w in uint2b2 uint4b8; do echo "-- $w"; grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done
  ;;
nw)
  ( time MPL_CUDA_W4A16_TEST_HALVES=1 timeout 200 $B/test_cuda_w4a16 ) > "$R/test_halves.log" 2>&1; echo "rc=$?" >> "$R/test_halves.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_halves.log" | head -20
  stamp "skinny nw2 / nw4 / wg at m 9, 16"
  timeout 90 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 9,16 --wtype uint2b2 --reps 5 \
      --sweep --sets "default,skinny,skinny nw4,wg,wg-streamk" > "$R/sweep_nw.log" 2>&1
  grep -E "^sweep" "$R/sweep_nw.log" | grep -v "cuBLAS bf16" | awk '{print $2, $3, $4, $5, $6}' | paste - - - - - -
  dev_card "$R"
  ;;
persist)
  ( time MPL_CUDA_W4A16_TEST_HALVES=1 timeout 200 $B/test_cuda_w4a16 ) > "$R/test_halves.log" 2>&1; echo "rc=$?" >> "$R/test_halves.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_halves.log" | head -20
  stamp "A/B"
  dev_ab 2 "$R" --sweep --sets "default,skinny nw2,skinny nw4" --shapes 70B.gate_up,8B.gate_up,70B.qkv,70B.down --m 1,8 --wtype uint2b2 --reps 10
  python3 bench/cuda/ab_table.py "$R"/ab_*.log
  dev_card "$R"
  ;;
prof)
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  sec="--section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats --section Occupancy --section LaunchStats"
  met="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,dram__bytes_read.sum"
  prof() { # NAME WTYPE SET M
    stamp "$1"
    timeout 100 "$NCU" --clock-control none $sec $met -k "regex:w4a16_skinny" -c 1 $B/bench_cuda_w4a16 --sweep --sets "$3,_" --shapes 70B.gate_up --m "$4" --wtype "$2" --reps 1 > "$R/ncu_$1.txt" 2>&1
    grep -E "^    (Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Executed Ipc Active|Registers Per|Achieved Occupancy|Executed Instructions )|pipe_tensor|pipe_alu|pipe_fma|pipe_lsu|dram__bytes" "$R/ncu_$1.txt" | head -16
    grep -E "stalled_.*ratio" "$R/ncu_$1.txt" | sort -k3 -nr | head -6
  }
  prof hv_m1 uint2b2 skinny 1
  prof w4off_m1 uint4b8 skinny 1
  prof w4r_m1 uint4b8 skinny-rounded 1
  ;;
esac
stamp done
grep -iE "read16" "$R/bw.log" | head -2
tar -C "$R" -czf "${OUT:-/tmp}/v23_${1:-tests}.tar.gz" .

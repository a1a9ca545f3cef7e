#!/usr/bin/env bash
# bench/cuda/v26_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v26): wg's 256-token tile, the 4-bit
# offset form's m = 1 form, wg at large M, wg's scale constants once per chunk.
#   probe: (binaries built with bench/results/v26/bt256.patch applied: its tuning field, sweep sets and test filter)
#          the 256-token tile's test rounds (MPL_CUDA_W4A16_TEST_BT256: 4- and 8-bit) and the halves rounds (they run
#          it too); an A/B of the bench before this session (.h200/bench_cuda_w4a16_old) and after FORM_OFFSET_M1 (the
#          4-bit offset form at m = 1, bench/results/v25/offset_m1.patch), one turn each at M = 1: uint4b8 f16 (the
#          offset form), uint4b8 bf16 (skinny-rounded's exact form), uint8b128 bf16 (FORM_W8: chunk-group folds);
#          then --sweep of wg and wg-streamk at 128 and 256 tokens beside dq and cuBLAS at M 256..2048, uint4b8 and
#          uint8b128 (call 1).
#   ncu:   the FORM_OFFSET_M1 A/B again (2 turns: f16 uint4b8, uint8b128), ncu of wg (split-K form, 128 tokens) on 70B
#          gate_up at M = 1024, the whole device matrix and test_cuda_faults (call 2).
#   wg2:   (binaries with bench/results/v26/wg_one_slot.patch applied) an A/B of forced wg / wg-streamk at M 256 and
#          1024 (bf16 with f16 scales: SPLIT; bf16 scales: S16) and of the defaults at M = 512 (wg-streamk's 257..512
#          bucket), then the whole device matrix; wg3: the A/Bs alone. Logs straight to $OUT. Not run: no device.
#   final: the whole device matrix and test_cuda_faults, the defaults at M 1..2048 (uint4b8, uint8b128, uint2b2) and
#          Humming 0.1.19 int4 / int8 / int2 (the wheel carried in .whl/) in the same call. Not run: no device.
# Binaries packed as in bench/cuda/dev_unpack.sh; every log in one tar ($OUT/v26_MODE.tar.gz) but wg2 / wg3's.
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
case "${1:-}" in wg2 | wg3) [ -n "${OUT:-}" ] && R=$OUT/v26_$1 && mkdir -p "$R" ;; esac # logs straight to $OUT: kept if the call is cut
B=.h200
S=70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up
case "${1:-probe}" in
probe)
  dev_card "$R"
  stamp "bt256 rounds"
  ( time MPL_CUDA_W4A16_TEST_BT256=1 timeout 150 $B/test_cuda_w4a16 ) > "$R/test_bt256.log" 2>&1; echo "rc=$?" >> "$R/test_bt256.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_bt256.log" | head -20
  stamp "halves rounds"
  dev_halves "$R"
  stamp "A/B om1"
  dev_m1_ab "$R" 1 hf4 bf4 bf8
  for w in uint4b8 uint8b128; do
    stamp "sweep $w"
    timeout 150 stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets "wg bt128,wg bt256,wg-streamk bt128,wg-streamk bt256,dq" \
      --shapes $S --m 256,512,1024,2048 --wtype $w --reps 10 > "$R/sweep_$w.log" 2>&1
    python3 bench/cuda/sweep_compact.py "$R/sweep_$w.log"
  done
  ;;
ncu)
  dev_card "$R"
  stamp "A/B om1 (2 turns)"
  dev_m1_ab "$R" 2 hf4 bf8
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for bt in 128; do
    stamp "ncu wg (bt$bt) 70B.gate_up m 1024"
    timeout 120 "$ncu" --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section ComputeWorkloadAnalysis --section Occupancy \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active" \
      -k "regex:w4a16_wg" -c 1 $B/bench_cuda_w4a16 --sweep --sets wg,dq --shapes 70B.gate_up --m 1024 --reps 1 > "$R/ncu_wg_bt$bt.txt" 2>&1
    grep -E "^    (Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy|Registers Per)|gmma|hmma|lts__|pipe_alu" "$R/ncu_wg_bt$bt.txt" | head -20
    grep -E "stalled_.*ratio" "$R/ncu_wg_bt$bt.txt" | sort -k3 -nr | head -6
  done
  stamp "tests"
  TEST_S=420 dev_tests "$R"
  ;;
wg2 | wg3)
  dev_card "$R"
  stamp "A/B wg: scale constants once per chunk (SPLIT: bf16 x, f16 scales; S16: bf16 scales on two layers)"
  for v in old new; do
    bin=$(bench_of $v)
    timeout 60 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes $S --m 256,1024 --wtype uint4b8 --reps 10 > "$R/w_${v}_split_1.log" 2>&1
    timeout 40 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes 70B.gate_up,8B.gate_up --m 256,1024 --wtype uint4b8 --scales bf16 --reps 10 > "$R/w_${v}_s16_1.log" 2>&1
  done
  python3 bench/cuda/ab_table.py "$R"/w_*.log
  stamp "A/B defaults at M = 512 (wg-streamk's 257..512 bucket)"
  for v in old new; do
    timeout 30 stdbuf -oL $(bench_of $v) --shapes $S --m 512 --wtype uint4b8 --reps 10 > "$R/d_${v}_bf4_1.log" 2>&1
  done
  python3 bench/cuda/ab_table.py "$R"/d_*.log
  [ "$1" = wg3 ] && { stamp done; exit 0; } # wg3: the A/Bs alone
  stamp "tests"
  TEST_S=300 dev_tests "$R"
  ;;
final)
  TEST_S=450 dev_tests "$R"
  dev_final "$R" $S
  ;;
esac
stamp done
grep -iE "read16" "$R/bw.log" | head -2
case "${1:-}" in wg2 | wg3) ;; *) tar -C "$R" -czf "${OUT:-/tmp}/v26_${1:-probe}.tar.gz" . ;; esac

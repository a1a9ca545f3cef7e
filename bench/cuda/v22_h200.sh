#!/usr/bin/env bash
# bench/cuda/v22_h200.sh -- on the device machine (bench/cuda/NOTES.md v22): what limits the 8-bit wg forms where they
# trail 4-bit and Humming int8 (v21: 70B down m = 256 8-bit wg 310 us vs 4-bit 204, Humming int8 213; m = 64 8-bit
# wg-streamk 134.5 vs 4-bit 83.7, Humming 94.9) and 4-bit skinny-rounded at m = 16 (70B gate_up 121 us vs Humming
# int4 92). One ncu launch each (--clock-control none: the clocks the benchmarks run at), the 4-bit twin beside.
# Binaries packed as in bench/cuda/dev_unpack.sh; logs in one tar ($OUT/v22.tar.gz).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200/bench_cuda_w4a16
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
sec="--section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats --section Occupancy"
met="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active"
prof() { # NAME KERNEL_REGEX WTYPE SET SHAPE M
  stamp "$1"
  timeout 100 "$NCU" --clock-control none $sec $met -k "regex:$2" -c 1 $B --sweep --sets "$4,_" --shapes "$5" --m "$6" --wtype "$3" --reps 1 > "$R/ncu_$1.txt" 2>&1
  grep -E "^    (Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Executed Ipc Active|Registers Per|Achieved Occupancy)|gmma_cycles|pipe_alu|pipe_fma" "$R/ncu_$1.txt" | head -14
  grep -E "stalled_.*ratio" "$R/ncu_$1.txt" | sort -k3 -nr | head -5
}
prof w8_wg_down256 w4a16_wg uint8b128 wg 70B.down 256
prof w4_wg_down256 w4a16_wg uint4b8 wg 70B.down 256
prof w8_sk_down64 w4a16_wg uint8b128 wg-streamk 70B.down 64
prof w4_sk_down64 w4a16_wg uint4b8 wg-streamk 70B.down 64
prof w4_skr_gu16 w4a16_skinny uint4b8 skinny-rounded 70B.gate_up 16
stamp "4-bit skinny-rounded variants (row tiles, split-K) at M = 1 and 16"
timeout 90 stdbuf -oL $B --sweep --sets skinny-rounded --shapes 70B.gate_up,70B.down,70B.qkv,70B.o,8B.gate_up --m 1,16 --wtype uint4b8 --reps 10 > "$R/skr_variants.log" 2>&1
grep -E "^sweep" "$R/skr_variants.log" | grep -v cuBLAS | awk '{print $2, $3, $4, $5, $6, $7}' | head -80
stamp "8-bit defaults (the v20 range) and the read ceiling"
timeout 60 stdbuf -oL $B --shapes 70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up --m 64,128,256 --wtype uint8b128 --reps 10 > "$R/default_w8.log" 2>&1
timeout 30 .h200/bench_cuda_bw --quick > "$R/bw.log" 2>&1
grep -E "cuda_w4a16" "$R/default_w8.log" | awk '{print $1, $2, $4, $5}' | paste - - -
stamp done
tar -C "$R" -czf "${OUT:-/tmp}/v22.tar.gz" .

#!/usr/bin/env bash
# bench/cuda/v32_tune.sh MODE -- on the device machine (bench/cuda/NOTES.md v32: the 3-bit thirds' grid at m = 1, 2 and
# wg's upper end for thirds; the 2-bit halves' grid at m = 1, 2).
#   a:  the thirds rounds of the device matrix (MPL_CUDA_W4A16_TEST_THIRDS: the wg and dq thirds kernels changed in the
#       review mend a284449 and had not run); forced sweeps at m = 1, 2 of skinny's split-K (1..4) and row tiles (2, 4)
#       for uint3b4, then wg against dq for uint3b4 at m = 1024 (and uint4b8's default beside), the m = 1, 2 sweep for uint2b2, ncu of the dq slab kernel
#       at m = 1024 on 70B qkv for thirds and 4-bit codes (thirds' dq ran 1.20x the codes' in v31), forced sweeps of
#       uint3b4 at m 256, 512 (wg, wg-streamk, dq): in that order, so that a call cut short keeps the first.
#   b:  the whole device matrix and test_cuda_faults (TEST_S, default 400), after a change of the defaults.
# Binaries packed as in bench/cuda/dev_unpack.sh. Logs come back as one tar ($OUT/v32_MODE.tgz).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v32 "${1:-a}"
B=.h200/bench_cuda_w4a16
# sweep_m1 TYPE: skinny's split-K and row tiles forced at m = 1, 2 on the four 70B layers, one line per (layer, m)
sweep_m1() {
  stamp "sweep m = 1, 2 ($1): split-K and row tiles"
  timeout 80 $B --sweep --sets "default,skinny ksplit1,skinny ksplit2,skinny ksplit3,skinny ksplit4,skinny nw2,skinny nw4,skinny nw2 ksplit1,skinny nw2 ksplit2,skinny nw2 ksplit4" \
      --shapes 70B.gate_up,70B.down,70B.o,70B.qkv --m 1,2 --wtype "$1" --reps 10 > "$R/sweep_m1_$1.log" 2>&1
  grep -h "^sweep" "$R/sweep_m1_$1.log" | grep -v "cuBLAS bf16" | sed 's/ us .*//; s/^sweep //' | awk '{$1=$1; print}' | paste -d'|' - - - - - - - - - -
}
case "${1:-a}" in
a)
  dev_card "$R"
  stamp "thirds rounds"
  dev_rounds "$R" thirds
  sweep_m1 uint3b4
  stamp "sweep m = 1024 (thirds: wg against dq)"
  timeout 100 $B --sweep --sets "default,wg,dq" --shapes 70B.gate_up,70B.down,8B.gate_up,70B.qkv --m 1024 --wtype uint3b4 \
      --reps 10 > "$R/sweep3_1024.log" 2>&1
  grep -h "^sweep" "$R/sweep3_1024.log" | grep -v "cuBLAS bf16" | sed 's/ us .*//; s/^sweep //' | awk '{$1=$1; print}' | paste -d'|' - - -
  timeout 40 $B --shapes 70B.gate_up,70B.down,8B.gate_up,70B.qkv --m 1024 --wtype uint4b8 --reps 10 > "$R/default4_1024.log" 2>&1
  grep -E "cuda_w4a16" "$R/default4_1024.log" | awk '{print $1, $2, $4, $5}' | paste - - - -
  sweep_m1 uint2b2
  stamp "ncu dq slab, 70B qkv m = 1024: thirds, then 4-bit codes"
  dev_ncu "$R/ncu_dq_thirds.txt" $B w4a16_dq_slab --shapes 70B.qkv --m 1024 --wtype uint3b4 --reps 1
  dev_ncu "$R/ncu_dq_codes.txt" $B w4a16_dq_slab --shapes 70B.qkv --m 1024 --wtype uint4b8 --reps 1
  stamp "sweep m 256, 512"
  timeout 120 $B --sweep --sets "default,wg,wg-streamk,dq" --shapes 70B.gate_up,70B.down,70B.qkv,8B.gate_up --m 256,512 \
      --wtype uint3b4 --reps 10 > "$R/sweep3_large.log" 2>&1
  grep -h "^sweep" "$R/sweep3_large.log" | grep -v "cuBLAS bf16" | sed 's/ us .*//; s/^sweep //' | awk '{$1=$1; print}' | paste -d'|' - - - -
  ;;
b)
  TEST_S=${TEST_S:-400} dev_tests "$R"
  ;;
esac
dev_end v32 "${1:-a}"

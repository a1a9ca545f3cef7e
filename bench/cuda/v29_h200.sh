#!/usr/bin/env bash
# bench/cuda/v29_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v29): what limits M = 1 (issue 18's 85%).
#   probe: (call 1) the skinny path's access pattern without its arithmetic and three other assignments of the same
#          blocks (bench_cuda_bw --patterns), whether mma.sync takes subnormal bf16 A operands exactly (--mma-sub), ncu
#          of skinny-rounded at 70B gate_up M = 1, the defaults at M = 1; then the whole device matrix and
#          test_cuda_faults of the tree (v28's SPLIT subnormal form was verified only in part).
#   gemv:  (call 2) w4a16_gemv (the m = 1 kernel) against the tree before (old), in turns, M = 1 on the six layers: bf16
#          uint4b8 with f16 scales (skinny-rounded), f16 uint4b8 (skinny), bf16 with bf16 scales (skinny-rounded's rounded
#          form before), bf16 uint3b4 (4-bit codes); then the whole device matrix and test_cuda_faults.
#   final: (call 3) the kept form (x through the ring, k % 128 == 0) against the tree before: M = 1, bf16 uint4b8 (f16
#          scales) and f16 uint4b8 on the six layers, two rounds in turns; then the whole device matrix and
#          test_cuda_faults.
# Binaries packed as in bench/cuda/dev_unpack.sh. Logs come back as one tar ($OUT/v29_MODE.tgz).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v29 "${1:-probe}"
case "${1:-probe}" in
probe)
  dev_card "$R"
  stamp "mma-sub"
  timeout 20 .h200/bench_cuda_bw --mma-sub 2>&1 | tee "$R/mma_sub.log"
  stamp "patterns"
  timeout 120 .h200/bench_cuda_bw --patterns 2>&1 | tee "$R/patterns.log"
  stamp "defaults M = 1"
  timeout 40 stdbuf -oL .h200/bench_cuda_w4a16 --shapes "$S" --m 1 --wtype uint4b8 --reps 10 > "$R/m1_bf4.log" 2>&1
  grep -E "cuda_w4a16" "$R/m1_bf4.log" | awk '{print $1, $2, $4, $5, $NF}'
  stamp "ncu"
  dev_ncu "$R/ncu_m1.txt" .h200/bench_cuda_w4a16 w4a16_skinny --shapes 70B.gate_up --m 1 --wtype uint4b8 --reps 1
  stamp "tests"
  TEST_S=${TEST_S:-380} dev_tests "$R"
  ;;
gemv)
  dev_card "$R"
  dev_m1_ab "$R" 2 bf4 hf4 bs4 bf3 | tee "$R/ab_table.txt"
  stamp "ncu"
  dev_ncu "$R/ncu_gemv.txt" .h200/bench_cuda_w4a16 w4a16_gemv --shapes 70B.gate_up --m 1 --wtype uint4b8 --reps 1
  stamp "tests"
  TEST_S=${TEST_S:-330} dev_tests "$R"
  ;;
final)
  dev_card "$R"
  dev_m1_ab "$R" 2 bf4 hf4 | tee "$R/ab_table.txt"
  stamp "tests"
  TEST_S=${TEST_S:-440} dev_tests "$R"
  ;;
esac
dev_end v29 "${1:-probe}"

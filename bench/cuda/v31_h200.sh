#!/usr/bin/env bash
# bench/cuda/v31_h200.sh MODE -- on the device machine, planned after v30 (bench/cuda/NOTES.md v30; nothing here has run yet).
#   h200:  (ask for kind nvidia-h200) w4a16_gemv at m = 1, 8, 16 against the tree before v29 (old: a bench built from commit
#          53b15d2, packed as .h200/bench_cuda_w4a16_old) on the six layers, bf16 / f16 uint4b8, bf16 uint2b2 and uint8b128,
#          two rounds in turns; then the defaults at M 1..2048 for uint4b8, uint8b128 and uint2b2 with Humming 0.1.19 int4 /
#          int8 / int2 beside them (dev_final; the wheel carried in .whl/).
#   ncu:   what limits the two forms still short of their targets: bf16 uint2b2 M = 1 on 70B down (70% of read16 on an H100)
#          and bf16 uint4b8 m = 16 on 70B gate_up (+16% over m = 1; Humming +5%), one launch each under ncu.
#   tests: the whole device matrix with the gemv rounds in it, and test_cuda_faults (TEST_S 560).
# Binaries packed as in bench/cuda/dev_unpack.sh. Logs come back as one tar ($OUT/v31_MODE.tgz).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v31 "${1:-h200}"
case "${1:-h200}" in
h200)
  dev_card "$R"
  MS=1,8,16 dev_m1_ab "$R" 2 bf4 hf4 bf2 bf8 | tee "$R/ab_table.txt"
  dev_final "$R" 70B.gate_up,70B.down,8B.qkv,8B.gate_up
  ;;
ncu)
  dev_card "$R"
  dev_ncu "$R/ncu_2bit_down.txt" .h200/bench_cuda_w4a16 w4a16_gemv --shapes 70B.down --m 1 --wtype uint2b2 --reps 1
  dev_ncu "$R/ncu_m16_gate_up.txt" .h200/bench_cuda_w4a16 w4a16_gemv --shapes 70B.gate_up --m 16 --wtype uint4b8 --reps 1
  ;;
tests)
  TEST_S=${TEST_S:-560} dev_tests "$R"
  ;;
esac
dev_end v31 "${1:-h200}"

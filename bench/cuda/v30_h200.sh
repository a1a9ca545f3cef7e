#!/usr/bin/env bash
# bench/cuda/v30_h200.sh MODE -- on the device machine, planned after v29 (bench/cuda/NOTES.md v29; nothing here has run yet).
#   h200:  on an H200 (ask for kind nvidia-h200): w4a16_gemv against the tree before v29 (old: a bench built from commit
#          53b15d2, packed as .h200/bench_cuda_w4a16_old) at M = 1 on the six layers, bf16 and f16 uint4b8, two rounds in
#          turns; the read ceilings; then the defaults at M 1..2048 for uint4b8, uint8b128 and uint2b2 with Humming 0.1.19
#          int4 / int8 / int2 beside them (dev_final; the wheel carried in .whl/, 120 s each).
#   halves: bench/results/v29/halves_gemv.patch applied (new) against the tree (old): its halves rounds first
#          (MPL_CUDA_W4A16_TEST_HALVES), then bf16 uint2b2 at M = 1 on the six layers, two rounds in turns.
#   tests: the whole device matrix and test_cuda_faults (TEST_S 420 by default: 5m22-6m03 on an H100 in v29).
# Binaries packed as in bench/cuda/dev_unpack.sh. Logs come back as one tar ($OUT/v30_MODE.tgz).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v30 "${1:-h200}"
case "${1:-h200}" in
h200)
  dev_card "$R"
  dev_m1_ab "$R" 2 bf4 hf4 | tee "$R/ab_table.txt"
  dev_final "$R" 70B.gate_up,70B.down,8B.qkv,8B.gate_up
  ;;
halves)
  dev_card "$R"
  stamp "halves rounds"
  dev_halves "$R"
  dev_m1_ab "$R" 2 bf2 | tee "$R/ab_table.txt"
  ;;
tests)
  TEST_S=${TEST_S:-420} dev_tests "$R"
  ;;
esac
dev_end v30 "${1:-h200}"

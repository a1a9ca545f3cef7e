#!/usr/bin/env bash
# bench/cuda/v30_h200.sh MODE -- on the device machine (session 37; bench/cuda/NOTES.md v30).
#   m1:    the halves and the 8-bit rounds of the device matrix (w4a16_gemv's new halves and 8-bit forms); then M = 1 on
#          the six layers against the tree before v29 (old: a bench built from commit 53b15d2, packed as
#          .h200/bench_cuda_w4a16_old), bf16 / f16 uint4b8, bf16 uint2b2, bf16 / f16 uint8b128, two rounds in turns; then
#          Humming 0.1.19 int4 at M 1..2048 beside our defaults (the wheel carried in .whl/).
#   mx:    w4a16_gemv at m <= 8 (the 8 MMA columns kept): the gemv rounds of the device matrix
#          (MPL_CUDA_W4A16_TEST_GEMV), then m = 1, 2, 4, 8, 16 on the six layers against the tree before v29 (as m1),
#          bf16 / f16 uint4b8, bf16 uint2b2, bf16 uint8b128, two rounds in turns.
#   mt:    w4a16_gemv at m 9..16 (two token tiles, one block per SM): the gemv rounds; the A/B against the tree before
#          v29 at m = 1, 8, 9, 12, 16 (as mx); forced sweeps for the switch points: uint4b8 skinny (both NW) / tc / wg at
#          m 9, 12, 16 on the six layers, uint8b128 skinny / wg at m 4..16 on the n > k layers, uint2b2 skinny / wg.
#   tests: the whole device matrix and test_cuda_faults (TEST_S 500 by default: 5m22-6m03 on an H100 in v29, before the
#          gemv rounds' 84 s), then the defaults at m 1, 4, 8, 12, 16 for uint4b8, uint8b128 and uint2b2 on four layers.
#   peers: our defaults at M 1..2048 for uint4b8, uint8b128 and uint2b2, Humming int4 / int8 / int2 beside (dev_final).
# Binaries packed as in bench/cuda/dev_unpack.sh. Logs come back as one tar ($OUT/v30_MODE.tgz).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v30 "${1:-m1}"
case "${1:-m1}" in
m1)
  dev_card "$R"
  stamp "halves rounds"
  dev_halves "$R"
  stamp "8-bit rounds"
  dev_rounds "$R" w8
  stamp "M = 1 A/B"
  dev_m1_ab "$R" 2 bf4 hf4 bf2 bf8 hf8 | tee "$R/ab_table.txt"
  stamp "defaults uint4b8"
  timeout 60 stdbuf -oL .h200/bench_cuda_w4a16 --shapes 70B.gate_up,70B.down,8B.qkv,8B.gate_up --m 1,16,64,256,1024,2048 \
      --wtype uint4b8 --reps 10 > "$R/default_uint4b8.log" 2>&1
  grep -E "cuda_w4a16" "$R/default_uint4b8.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - -
  stamp "humming 4"
  HMS=1,16,64,256,1024,2048 PEER_SECONDS=${PEER_SECONDS:-130} dev_humming 4 "$R/humming4" | tail -14
  ;;
mx)
  dev_card "$R"
  stamp "gemv rounds"
  dev_rounds "$R" gemv
  stamp "m <= 8 A/B"
  MS=1,2,4,8,16 dev_m1_ab "$R" 2 bf4 hf4 bf2 bf8 | tee "$R/ab_table.txt"
  ;;
mt)
  dev_card "$R"
  stamp "gemv rounds"
  dev_rounds "$R" gemv
  stamp "A/B"
  MS=1,8,9,12,16 dev_m1_ab "$R" 2 bf4 hf4 bf2 bf8 | tee "$R/ab_table.txt"
  stamp "sweeps"
  B=.h200/bench_cuda_w4a16
  timeout 100 $B --sweep --sets "default,skinny,skinny nw2,skinny nw4,skinny-rounded,tc,wg" --shapes "$S" --m 9,12,16 \
      --wtype uint4b8 --reps 10 > "$R/sweep4.log" 2>&1
  timeout 80 $B --sweep --sets "default,skinny,wg" --shapes 70B.gate_up,8B.gate_up,70B.qkv,8B.qkv --m 4,8,12,16 \
      --wtype uint8b128 --reps 10 > "$R/sweep8.log" 2>&1
  timeout 60 $B --sweep --sets "default,skinny,wg" --shapes 70B.gate_up,8B.gate_up,8B.qkv --m 9,16 --wtype uint2b2 --reps 10 \
      > "$R/sweep2.log" 2>&1
  grep -h "^sweep" "$R"/sweep*.log | head -150
  ;;
tests)
  TEST_S=${TEST_S:-500} dev_tests "$R"
  for w in uint4b8 uint8b128 uint2b2; do
    timeout 30 stdbuf -oL .h200/bench_cuda_w4a16 --shapes 70B.gate_up,70B.down,8B.qkv,8B.gate_up --m 1,4,8,12,16 --wtype $w \
        --reps 10 > "$R/default_$w.log" 2>&1
    grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - -
  done
  ;;
peers)
  dev_card "$R"
  dev_final "$R" 70B.gate_up,70B.down,8B.qkv,8B.gate_up
  ;;
esac
dev_end v30 "${1:-m1}"

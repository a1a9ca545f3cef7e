#!/usr/bin/env bash
# bench/cuda/v28_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v28): what limits wg at M >= 256.
#   ab:    binaries: new = the tree; mid = the tree with bench/results/v28/halfx.patch (half of each x tile copied:
#          WRONG results, timing only -- what halving x's L2 reads, as a 2-CTA multicast of the x tile would, could buy);
#          old = the tree with bench/results/v28/st7.patch (7 stages instead of 5 at 128 tokens, 4-bit codes); alt = the
#          tree with bench/results/v27/nodq.patch and halfx.patch (neither dequantization nor half of x: the pipeline's
#          ceiling with a multicast). Forced wg / wg-streamk at M 256 and 1024, two rounds in turns: uint4b8 bf16 with
#          f16 scales (SPLIT), uint8b128; then ncu of wg (split-K form) on 70B gate_up M = 1024, new and mid.
#   mc:    (call 2) the x multicast (bench/results/v28/multicast.patch, NOT in the tree: 1.3-1.8x slower) and the SPLIT
#          form's subnormal dequantization against the tree before (below; binaries built with the patch applied: its
#          bench has the "mc-off" sets and its test the multicast rounds).
#   sub:   (call 3) the subnormal dequantization alone against the tree before, the tests, uint4b8 defaults and Humming int4.
#   peers: (not run) the defaults at three widths and Humming int4 / int8 / int2 (dev_final) without the tests.
#   final: the whole device matrix and test_cuda_faults, the defaults at M 1..2048 (uint4b8, uint8b128, uint2b2) and
#          Humming 0.1.19 int4 / int8 / int2 (the wheel carried in .whl/) in the same call.
# Binaries packed as in bench/cuda/dev_unpack.sh. Logs come back as one tar ($OUT/v28_MODE.tgz) beside the A/B table.
set -u
. bench/cuda/dev_unpack.sh
dev_begin v28 "${1:-ab}"
case "${1:-ab}" in
ab)
  dev_card "$R"
  for r in 1 2; do
    stamp "round $r: forced wg, wg-streamk (new, mid = half x, old = 7 stages, alt = no dequantization + half x)"
    for v in new mid old alt; do
      bin=$(bench_of $v)
      timeout 60 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes 70B.gate_up,70B.down,8B.gate_up --m 256,1024 --wtype uint4b8 --reps 10 > "$R/w_${v}_split_$r.log" 2>&1
      timeout 60 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes 70B.gate_up,8B.gate_up --m 256,1024 --wtype uint8b128 --reps 10 > "$R/w_${v}_w8_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/w_*.log | tee "$R/ab_table.txt"
  for v in new mid; do
    stamp "ncu wg $v uint4b8"
    dev_ncu "$R/ncu_${v}.txt" "$(bench_of $v)" w4a16_wg --sweep --sets wg --shapes 70B.gate_up --m 1024 --wtype uint4b8 --reps 1
  done
  ;;
mc)
  # new = the tree (the x multicast by the rule at 128 tokens; the SPLIT form's subnormal dequantization); old = the tree
  # before this session. The multicast rounds alone first, then A/B in turns: forced wg / wg-streamk with the
  # multicast by rule and off ("mc-off" sets: what the multicast alone buys) at M 256 / 1024 (uint4b8, bf16, f16
  # scales: SPLIT; bf16 scales: S16; uint8b128), the defaults at M 128..2048; then the device matrix and test_cuda_faults.
  dev_card "$R"
  stamp "multicast rounds"
  ( MPL_CUDA_W4A16_TEST_MULTICAST=1 timeout 100 .h200/test_cuda_w4a16 ) > "$R/test_multicast.log" 2>&1; echo "rc=$?" >> "$R/test_multicast.log"
  grep -E "device matrix|FAIL|rc=" "$R/test_multicast.log" | head -8
  for r in 1 2; do
    stamp "round $r"
    for v in new old; do
      bin=$(bench_of $v); sets="wg,wg-streamk"; [ $v = new ] && sets="wg,wg-streamk,wg mc-off,wg-streamk mc-off"
      timeout 80 stdbuf -oL $bin --sweep --sets "$sets" --shapes $S --m 256,1024 --wtype uint4b8 --reps 10 > "$R/w_${v}_split_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --sweep --sets "$sets" --shapes 70B.gate_up,8B.gate_up --m 256,1024 --wtype uint4b8 --scales bf16 --reps 10 > "$R/w_${v}_s16_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --sweep --sets "$sets" --shapes 70B.gate_up,8B.gate_up --m 256,1024 --wtype uint8b128 --reps 10 > "$R/w_${v}_w8_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/w_*.log > "$R/ab_table.txt"; grep -E " (wg|wg-streamk|wg mc-off|wg-streamk mc-off) " "$R/ab_table.txt" | head -80
  stamp "defaults"
  for v in new old; do
    timeout 60 stdbuf -oL "$(bench_of $v)" --shapes $S --m 128,256,512,1024,2048 --wtype uint4b8 --reps 10 > "$R/d_${v}_bf4_1.log" 2>&1
  done
  python3 bench/cuda/ab_table.py "$R"/d_*.log | tee "$R/ab_defaults.txt"
  stamp "tests"
  TEST_S=300 dev_tests "$R"
  ;;
sub)
  # (call 3) new = the tree (the SPLIT form's subnormal dequantization, without the multicast); old = the tree before
  # this session. A/B in turns (two rounds): forced wg / wg-streamk at M 256 / 1024, uint4b8, bf16, f16 scales (SPLIT);
  # the device matrix and test_cuda_faults; then the defaults (uint4b8) and Humming int4 in the same call.
  dev_card "$R"
  for r in 1 2; do
    stamp "round $r"
    for v in new old; do
      timeout 60 stdbuf -oL "$(bench_of $v)" --sweep --sets "wg,wg-streamk" --shapes $S --m 256,1024 --wtype uint4b8 --reps 10 > "$R/w_${v}_split_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/w_*.log | grep -v default | tee "$R/ab_table.txt"
  stamp "tests"
  TEST_S=280 dev_tests "$R"
  stamp "defaults uint4b8"
  timeout 60 stdbuf -oL .h200/bench_cuda_w4a16 --shapes "$S" --m 1,16,64,256,1024,2048 --wtype uint4b8 --reps 10 > "$R/default_uint4b8.log" 2>&1
  grep -E "cuda_w4a16" "$R/default_uint4b8.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - -
  stamp "humming 4"
  HMS=1,16,64,256,1024,2048 PEER_SECONDS=45 dev_humming 4 "$R/humming4" | tail -14
  ;;
final)
  dev_card "$R"
  TEST_S=330 dev_tests "$R"
  dev_final "$R" $S
  ;;
peers)
  # the defaults at three widths and Humming int4 / int8 / int2 (no tests: run in mode mc on the same binaries)
  dev_card "$R"
  dev_final "$R" $S
  ;;
esac
dev_end v28 "${1:-ab}"

#!/usr/bin/env bash
# bench/cuda/v27_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v27): wg's scale constants once per chunk
# (bench/results/v26/wg_one_slot.patch, in the tree since v27), and what the wg pipeline runs at without its dequantization.
#   ab:    (call 1) binaries: old = the tree before this session (.h200/bench_cuda_w4a16_old); new = the tree with
#          bench/results/v26/wg_one_slot.patch (the S16 / SPLIT / F32_ONE forms read a chunk's scale constants once)
#          and each 64-row sub-tile's four wgmmas committed as one group, waited two groups behind (deep.patch; the next sub-tile
#          is dequantized while a chunk's work is in flight); mid = wg_one_slot alone with MPL_WG_EXP_NODQ
#          (bench/results/v27/nodq.patch: every weight fragment is the raw packed word masked to small 16-bit
#          values, no scales, no zero points: WRONG results, the pipeline's ceiling without the consumers'
#          dequantization). Forced wg / wg-streamk at M 256 and 1024 in turns (new: dq beside): uint4b8 bf16 with
#          f16 scales (SPLIT), bf16 scales (S16), uint8b128 with f16 scales (F32_ONE); the defaults at M = 512; then
#          the whole device matrix and test_cuda_faults of new. Logs straight to $OUT/v27_ab.
#   ab2:   (call 2) old as in ab; new = wg_one_slot alone; mid = new with two commit groups per chunk (k16 steps 0-1,
#          then 2-3, of both sub-tiles: consecutive wgmmas alternate accumulators; bench/results/v27/halves_groups.patch),
#          waited two groups behind. Forced wg / wg-streamk at M 256 and 1024 in turns, then the device matrix and
#          test_cuda_faults of new. Logs straight to $OUT/v27_ab2.
#   ncu:   (not run) binaries: new = the tree, mid = the tree with bench/results/v27/nodq.patch: ncu of wg (split-K form,
#          128 tokens) on 70B gate_up at M = 1024, uint4b8 and uint8b128, for each -- what the pipeline loses beside
#          the dequantization (NOTES v27, next step 1). Reports to $OUT/v27_ncu.
#   final: the whole device matrix and test_cuda_faults, the defaults at M 1..2048 (uint4b8, uint8b128, uint2b2) and
#          Humming 0.1.19 int4 / int8 / int2 (the wheel carried in .whl/) in the same call; logs to $OUT/v27_final.
# Binaries packed as in bench/cuda/dev_unpack.sh.
set -u
. bench/cuda/dev_unpack.sh
dev_begin v27 "${1:-ab}"
case "${1:-ab}" in
ab)
  dev_card "$R"
  stamp "A/B/C forced wg, wg-streamk (old, mid = no dequantization, new)"
  for v in old mid new; do
    bin=$(bench_of $v)
    sets="wg,wg-streamk"; [ $v = new ] && sets="wg,wg-streamk,dq" # dq beside: where wg's range should end
    timeout 60 stdbuf -oL $bin --sweep --sets "$sets" --shapes $S --m 256,1024 --wtype uint4b8 --reps 10 > "$R/w_${v}_split_1.log" 2>&1
    timeout 40 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes 70B.gate_up,8B.gate_up --m 256,1024 --wtype uint4b8 --scales bf16 --reps 10 > "$R/w_${v}_s16_1.log" 2>&1
    timeout 60 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes $S --m 256,1024 --wtype uint8b128 --reps 10 > "$R/w_${v}_w8_1.log" 2>&1
  done
  python3 bench/cuda/ab_table.py "$R"/w_*.log | tee "$R/ab_table.txt"
  stamp "A/B defaults at M = 512"
  for v in old new; do
    timeout 30 stdbuf -oL "$(bench_of $v)" --shapes $S --m 512 --wtype uint4b8 --reps 10 > "$R/d_${v}_bf4_1.log" 2>&1
  done
  python3 bench/cuda/ab_table.py "$R"/d_*.log
  stamp "tests"
  TEST_S=330 dev_tests "$R"
  ;;
ab2)
  dev_card "$R"
  stamp "A/B/C forced wg, wg-streamk (old, mid = two groups per chunk, new = one_slot)"
  for v in old mid new; do
    bin=$(bench_of $v)
    timeout 60 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes 70B.gate_up,70B.down,8B.qkv --m 256,1024 --wtype uint4b8 --reps 10 > "$R/w_${v}_split_1.log" 2>&1
    timeout 40 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes 70B.gate_up --m 256,1024 --wtype uint4b8 --scales bf16 --reps 10 > "$R/w_${v}_s16_1.log" 2>&1
    timeout 60 stdbuf -oL $bin --sweep --sets "wg,wg-streamk" --shapes 70B.gate_up,8B.gate_up --m 256,1024 --wtype uint8b128 --reps 10 > "$R/w_${v}_w8_1.log" 2>&1
  done
  python3 bench/cuda/ab_table.py "$R"/w_*.log | tee "$R/ab_table.txt"
  stamp "tests"
  TEST_S=300 dev_tests "$R"
  ;;
ncu)
  dev_card "$R"
  for v in new mid; do
    for w in uint4b8 uint8b128; do
      stamp "ncu wg $v $w"
      dev_ncu "$R/ncu_${v}_$w.txt" "$(bench_of $v)" w4a16_wg --sweep --sets wg --shapes 70B.gate_up --m 1024 --wtype $w --reps 1
    done
  done
  ;;
final)
  dev_card "$R"
  TEST_S=330 dev_tests "$R"
  dev_final "$R" $S
  ;;
esac
dev_end v27 "${1:-ab}"

#!/usr/bin/env bash
# bench/cuda/v24_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v24): the halves skinny loop's diet (bf16:
# one fold per packed chunk, half 1 against x / 4; both types: x loads with one bound per row).
#   ab:    the halves rounds of the device matrix, then an A/B of the bench built from the tree before the change
#          (.h200/bench_cuda_w4a16_old) and after, taking turns (2 rounds): uint2b2 defaults and forced skinny with two
#          and four row tiles at M 1, 8, 16 on the 70B and 8B shapes (bf16), and at M 1 with f16 activations; then ncu
#          of the new skinny at M = 1 on 70B gate_up (bf16).
#   hi:    the halves rounds, then an A/B of the bench of the tree before (_old) and after the halves shifts became
#          IMAD.HI (uint2b2 bf16 M 1 and 16, f16 M 1), taking turns (bench/cuda/NOTES.md v24). Not in the tree and not
#          run yet (no device was lent after call 5): apply bench/results/v24/imadhi.patch and build first.
#   ab2:   the device matrix, then an A/B/C of the bench before this session (_old), after the bf16 one-fold change
#          (_mid) and with the scale format a template parameter of the offset forms (new): defaults at M 1 and 16,
#          uint2b2 bf16 / f16 and uint4b8 f16 (the 4-bit offset form), taking turns.
#   peers: uint2b2 defaults at M 1..1024 (before and after) and Humming 0.1.19 int2 (the wheel carried in .whl/), then
#          uint4b8 defaults.
#   tests: the whole device matrix and test_cuda_faults, then the uint2b2 and uint4b8 defaults at M 1..1024 and the
#          uint2b2 sweep at m 9, 16, 17 (skinny with two and four row tiles, wg) for bf16 and f16.
# Binaries packed as in bench/cuda/dev_unpack.sh; every log in one tar ($OUT/v24_MODE.tar.gz).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
S=70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up
case "${1:-ab}" in
ab)
  dev_card "$R"
  dev_halves "$R"
  stamp "A/B bf16"
  for r in 1 2; do
    for v in old new; do
      bin=$(bench_of $v)
      timeout 80 stdbuf -oL $bin --sweep --sets "default,skinny,skinny nw4" --shapes $S --m 1,8,16 --wtype uint2b2 --reps 10 > "$R/bf_${v}_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --sweep --sets "default,skinny" --shapes $S --m 1 --act f16 --wtype uint2b2 --reps 10 > "$R/hf_${v}_$r.log" 2>&1
    done
  done
  echo "-- bf16"; python3 bench/cuda/ab_table.py "$R"/bf_*.log
  echo "-- f16"; python3 bench/cuda/ab_table.py "$R"/hf_*.log
  stamp "ncu"
  for v in new old; do
    echo "-- ncu $v"
    dev_ncu "$R/ncu_$v.txt" "$(bench_of $v)" w4a16_skinny --sweep --sets "skinny,_" --shapes 70B.gate_up --m 1 --wtype uint2b2 --reps 1
  done
  ;;
hi)
  dev_halves "$R"
  dev_card "$R"
  stamp "A/B"
  for r in 1 2; do
    for v in old new; do
      bin=$(bench_of $v)
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --wtype uint2b2 --reps 10 > "$R/h_${v}_bf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1 --act f16 --wtype uint2b2 --reps 10 > "$R/h_${v}_hf2_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/h_*.log
  ;;
ab2)
  TEST_S=400 dev_tests "$R"
  stamp "A/B/C"
  for r in 1 2; do
    for v in old mid new; do
      bin=$(bench_of $v)
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --wtype uint2b2 --reps 10 > "$R/c_${v}_bf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --act f16 --wtype uint2b2 --reps 10 > "$R/c_${v}_hf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --act f16 --wtype uint4b8 --reps 10 > "$R/c_${v}_hf4_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/c_*.log
  ;;
peers)
  dev_card "$R"
  stamp "defaults uint2b2"
  timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype uint2b2 --reps 10 > "$R/default_uint2b2.log" 2>&1
  stamp "humming 2"
  PEER_SECONDS=${PEER_SECONDS:-90} dev_humming 2 "$R/humming2" | tail -14
  stamp "defaults uint2b2 again, uint4b8"
  timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype uint2b2 --reps 10 > "$R/default_uint2b2_2.log" 2>&1
  timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype uint4b8 --reps 10 > "$R/default_uint4b8.log" 2>&1
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw_end.log" 2>&1
  for f in default_uint2b2 default_uint2b2_2 default_uint4b8; do echo "-- $f"; grep -E "cuda_w4a16" "$R/$f.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done
  ;;
tests)
  TEST_S=450 dev_tests "$R"
  for w in uint2b2 uint4b8; do
    stamp "defaults $w"
    timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
  done
  stamp "sweep m 9..17"
  for act in bf16 f16; do
    timeout 60 stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets "default,skinny,skinny nw4,wg" --shapes $S --m 9,16,17 --act $act --wtype uint2b2 --reps 5 > "$R/sweep_$act.log" 2>&1
  done
  for w in uint2b2 uint4b8; do echo "-- $w"; grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done
  for act in bf16 f16; do echo "-- sweep $act"; grep -E "^sweep" "$R/sweep_$act.log" | grep -v "cuBLAS" | awk '{print $2, $3, $4, $5, $6, $7}' | paste - - - - ; done
  ;;
esac
stamp done
grep -iE "read16" "$R/bw.log" | head -2
tar -C "$R" -czf "${OUT:-/tmp}/v24_${1:-ab}.tar.gz" .

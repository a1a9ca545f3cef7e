#!/usr/bin/env bash
# bench/cuda/v25_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v25): the halves skinny at M = 1 with more
# warps per scheduler.
#   b3:    the halves rounds of the device matrix, then an A/B/C of the bench built from the tree before this session
#          (.h200/bench_cuda_w4a16_old), with the halves shifts as IMAD.HI (_mid) and with three blocks per SM for
#          halves at m <= 8 (new), taking turns (2 rounds): uint2b2 defaults at M 1 and 8 (bf16, f16 scales; bf16 with
#          bf16 scales; f16), and uint4b8 at M 1 (a control: its kernels did not change); then ncu of new at M = 1.
#   m1:    the halves rounds, then an A/B of the bench before (_old) and after FORM_HALVES_M1 (the halves skinny at m = 1:
#          token 0 in every lane, one all-ones MMA per k16 step for both halves, the offset term starting the MMA sums, the
#          fold on column 0 alone), taking turns (3 rounds): uint2b2 M 1 and 2 (2: unchanged, a control) bf16 with f16
#          and bf16 scales, f16; then ncu of the new kernel at M = 1 (70B gate_up, bf16).
#   final: the whole device matrix and test_cuda_faults; an A/B of the bench before (_old: with FORM_HALVES_M1) and after
#          the uint2b2 offset-weighted x sums (bf16 halves without zero points: the sum MMAs' A is OFF + 2 and OFF + 8,
#          one accumulator, the fold acc += s (cg - c1)) at M 2, 8, 16, taking turns (2 rounds); then the uint2b2
#          defaults at M 1..1024 and Humming 0.1.19 int2 (the wheel carried in .whl/) in the same call.
#   om1:   an A/B of the bench before (_old) and after the 4-bit offset form's m = 1 form (FORM_OFFSET_M1: token 0 in
#          every lane, lane 1 holding steps 1 and 3 for the x sums, two all-ones MMAs per chunk, the fold on column 0) and
#          the chunk-group forms folding after step 3 only (bench/results/v25/offset_m1.patch, not in the tree), one turn
#          each: M = 1 uint4b8 f16 (the offset form), uint4b8 bf16 (skinny-rounded's exact form), uint8b128 bf16
#          (FORM_W8). The patch needs the whole device matrix (tests) before it may land.
#   tests: the whole device matrix and test_cuda_faults, then uint2b2 / uint4b8 defaults at M 1..1024.
# Binaries packed as in bench/cuda/dev_unpack.sh; every log in one tar ($OUT/v25_MODE.tar.gz).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
S=70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up
case "${1:-m1}" in
b3)
  dev_halves "$R"
  dev_card "$R"
  stamp "A/B/C"
  for r in 1 2; do
    for v in old mid new; do
      bin=$(bench_of $v)
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,8 --wtype uint2b2 --reps 10 > "$R/c_${v}_bf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1 --scales bf16 --wtype uint2b2 --reps 10 > "$R/c_${v}_bfb2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1 --act f16 --wtype uint2b2 --reps 10 > "$R/c_${v}_hf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1 --wtype uint4b8 --reps 10 > "$R/c_${v}_bf4_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/c_*.log
  stamp "ncu"
  for v in new mid; do
    echo "-- ncu $v"
    dev_ncu "$R/ncu_$v.txt" "$(bench_of $v)" w4a16_skinny --sweep --sets "skinny,_" --shapes 70B.gate_up --m 1 --wtype uint2b2 --reps 1
  done
  ;;
m1)
  dev_halves "$R"
  dev_card "$R"
  stamp "A/B"
  for r in 1 2 3; do
    for v in old new; do
      bin=$(bench_of $v)
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,2 --wtype uint2b2 --reps 10 > "$R/m_${v}_bf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1 --scales bf16 --wtype uint2b2 --reps 10 > "$R/m_${v}_bfb2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,2 --act f16 --wtype uint2b2 --reps 10 > "$R/m_${v}_hf2_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/m_*.log
  stamp "ncu"
  dev_ncu "$R/ncu_new.txt" $B/bench_cuda_w4a16 w4a16_skinny --sweep --sets "skinny,_" --shapes 70B.gate_up --m 1 --wtype uint2b2 --reps 1
  ;;
final)
  TEST_S=330 dev_tests "$R"
  stamp "A/B"
  for r in 1 2; do
    for v in old new; do
      timeout 40 stdbuf -oL $(bench_of $v) --shapes $S --m 2,8,16 --wtype uint2b2 --reps 10 > "$R/u_${v}_bf2_$r.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/u_*.log
  stamp "defaults uint2b2"
  timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype uint2b2 --reps 10 > "$R/default_uint2b2.log" 2>&1
  grep -E "cuda_w4a16" "$R/default_uint2b2.log" | awk '{print $1, $2, $4, $5}' | paste - - - - -
  stamp "humming 2"
  PEER_SECONDS=${PEER_SECONDS:-110} dev_humming 2 "$R/humming2" | tail -14
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw_end.log" 2>&1
  ;;
om1)
  dev_card "$R"
  stamp "A/B"
  dev_m1_ab "$R" 1 hf4 bf4 bf8
  ;;
tests)
  TEST_S=450 dev_tests "$R"
  for w in uint2b2 uint4b8; do
    stamp "defaults $w"
    timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
  done
  for w in uint2b2 uint4b8; do echo "-- $w"; grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done
  ;;
esac
stamp done
grep -iE "read16" "$R/bw.log" | head -2
tar -C "$R" -czf "${OUT:-/tmp}/v25_${1:-b3}.tar.gz" .

#!/usr/bin/env bash
# bench/cuda/v35_next.sh MODE -- on the device machine; prepared in session 41 (bench/cuda/NOTES.md v34), run in session
# 45 (NOTES v38, raw files bench/results/v38/: m1, then peers, wide and confirm on the unpatched tree). m1: build here
# with bench/results/v34/m1_warps_n.patch applied (w4a16_gemv's warps along N at M = 1: the block-shared x structure
# without the shared x, each warp over its split's whole K; forced by the tuning's skinny_shared_x = 1 at
# m = 1, the "skinny sx" sweep sets) and pack those binaries.
#   m1:    the sweep at M = 1 / 2 on the six layers at every width (own x, the warps along N by the launcher's split-K
#          and at split-K 1 / 2), then the thirds and gemv rounds (which now force it at m = 1 too). Where "skinny sx"
#          beats the default at M = 1 on the 70B layers, a default rule for it follows (2-bit 70B gate_up 44.12 us and
#          3-bit 59.16 us on the H200 in v34: 69.6% / 71.7% of read16).
#          Between the two, ncu of the 2-, 3- and 4-bit M = 1 kernels on 70B gate_up (the defaults).
#   m1s:   the same sweep, ncu and the thirds rounds only (~300 s, a short call when little device time is left).
#   peers: (session 45) our defaults and Humming int2 / int3 / int4 / int8 at M 1, 16, 64, 256, 1024 on 70B gate_up /
#          down, 8B qkv / gate_up (~520 s), so that every width has its peer row from one machine.
#   wide:  (session 45) forced wg / wg-streamk / dq and the default at m 257..2048 for 2-, 3-, 4- and 8-bit, two turns.
#   confirm: (session 45) the defaults at m 257 / 512 / 1024 after the wide call's rules, the halves and 8-bit rounds (~250 s).
#   m1t:   2- and 3-bit at M = 1 on 70B gate_up / down (own x, the warps along N at the launcher's split-K and at 1)
#          and ncu of the 2-bit default (~120 s): what a nearly spent budget can still answer; no verification.
set -u
. bench/cuda/dev_unpack.sh
dev_begin v35 "${1:-m1}"
B=.h200/bench_cuda_w4a16
t0=$(date +%s)
case "${1:-m1}" in
m1t)
  # the least that answers the question (~120 s): 2- and 3-bit on the two 70B layers of the target, and ncu of the
  # default 2-bit kernel
  dev_card "$R"
  for w in uint2b2 uint3b4; do
    stamp "sweep $w"
    timeout 50 stdbuf -oL $B --sweep --sets "skinny ox,skinny sx,skinny sx ksplit1" --shapes 70B.gate_up,70B.down --m 1 --wtype $w --reps 10 > "$R/m1_$w.log" 2>&1
    grep -E "70B" "$R/m1_$w.log" | head -4
  done
  stamp "ncu"
  dev_ncu "$R/ncu_uint2b2_m1.txt" $B w4a16_gemv --shapes 70B.gate_up --m 1 --wtype uint2b2 --reps 1
  ;;
m1|m1s)
  dev_card "$R"
  X="skinny ox,skinny sx,skinny sx ksplit1,skinny sx ksplit2"
  for w in uint2b2 uint3b4 uint8b128 uint4b8; do
    stamp "sweep $w"
    timeout 60 stdbuf -oL $B --sweep --sets "$X" --shapes 70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up --m 1,2 --wtype $w --reps 10 > "$R/m1_$w.log" 2>&1
  done
  # what holds the halves / thirds loops at M = 1 on the H200 (v34: ~2.8 / 3.2 TB/s of weights), the default form (the sweep
  # times the warps along N) beside 4-bit (87% of read16): stall reasons per issue, issue slots, DRAM throughput
  stamp "ncu"
  for w in uint2b2 uint3b4 uint4b8; do
    dev_ncu "$R/ncu_${w}_m1.txt" $B w4a16_gemv --shapes 70B.gate_up --m 1 --wtype $w --reps 1
  done
  stamp "thirds rounds"
  ( time env MPL_CUDA_W4A16_TEST_THIRDS=1 timeout 150 .h200/test_cuda_w4a16 ) > "$R/test_thirds.log" 2>&1; echo "rc=$?" >> "$R/test_thirds.log"
  [ "${1:-m1}" = m1s ] && { grep -E "device matrix|FAIL|rc=|real" "$R/test_thirds.log" | head; dev_end v35 m1s; exit 0; }
  left=$((560 - ($(date +%s) - t0)))
  stamp "gemv rounds ($left s)"
  ( time env MPL_CUDA_W4A16_TEST_GEMV=1 timeout $left .h200/test_cuda_w4a16 ) > "$R/test_gemv.log" 2>&1; echo "rc=$?" >> "$R/test_gemv.log"
  grep -E "device matrix|FAIL|rc=|real" "$R/test_thirds.log" "$R/test_gemv.log" | head -20
  ;;
peers)
  # (session 45) Humming 0.1.19 int2 / int3 / int4 / int8 beside our defaults at every width, one machine, one call
  dev_card "$R"
  FINAL_TYPES="uint2b2 uint3b4 uint4b8 uint8b128" FINAL_MS=1,16,64,256,1024 PEER_SECONDS=${PEER_SECONDS:-95} \
      dev_final "$R" 70B.gate_up,70B.down,8B.qkv,8B.gate_up
  ;;
wide)
  # (session 45) halves (and 8-bit) at m 512..2048: forced wg / wg-streamk / dq beside the default, two turns each, with
  # the 4-bit default beside (issue 18's "M >= 256 within 3% of the 4-bit path": 2-bit 70B gate_up / down m = 1024 run dq,
  # 1670 / 893 us against 4-bit wg's 1572 / 790 on the H100 in the peers call)
  dev_card "$R"
  L=70B.gate_up,70B.down,70B.qkv,70B.o,8B.gate_up,8B.qkv
  for r in 1 2; do
    for w in uint2b2 uint8b128 uint4b8 uint3b4; do
      stamp "wide $w turn $r"
      timeout 90 stdbuf -oL $B --sweep --sets "wg,wg-streamk,dq" --shapes $L --m 257,512,1024,2048 --wtype $w --reps 10 > "$R/wide_${w}_$r.log" 2>&1
    done
  done
  ;;
confirm)
  # (session 45) the wide call's rules in the tree (8-bit wg to 512 on >= 2^26 weights, stream-K's 257..512 bucket at every
  # width, halves wg to 1024 on >= 2^27 weights): the defaults where they moved, beside 4-bit, then the device tests
  dev_card "$R"
  for w in uint8b128 uint2b2 uint4b8 uint3b4; do
    stamp "defaults $w"
    timeout 60 stdbuf -oL $B --shapes 70B.gate_up,70B.down,70B.qkv,70B.o,8B.gate_up,8B.qkv --m 257,512,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
    grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - -
  done
  stamp "halves rounds"; dev_rounds "$R" halves
  stamp "8-bit rounds"; dev_rounds "$R" w8
  ;;
esac
dev_end v35 "${1:-m1}"

#!/usr/bin/env bash
# bench/cuda/v33_next.sh MODE -- on the device machine; prepared in session 39 (bench/cuda/NOTES.md v32), extended in 40.
#   dq:   the thread-per-(lane, step) thirds dq pass (bench/results/v32/dq_thirds.patch, 32 registers, coalesced stores),
#         and (session 40) w4a16_gemv's block-shared x at m 2..16: the thirds and gemv rounds (forced on and off), and a
#         sweep of it (forced, split-K 1 / 2 / 4 and the rule's) against each warp's own x at m 2, 8, 9, 16 at every width.
#         Build here with the patch applied (git apply bench/results/v32/dq_thirds.patch), pack those binaries as usual and
#         the unpatched tree's bench_cuda_w4a16 beside them as .h200/bench_cuda_w4a16_old (bench/cuda/dev_unpack.sh
#         bench_of). Runs: the thirds rounds of the device matrix (the new kernel's correctness: dq slabs, zero points,
#         both activation types), ncu of the dq slab kernel on 70B qkv m = 1024 (52.3 us at 37.7% of DRAM before), then
#         old / new in turns at m = 513, 1024, 2048 on the layers that keep dq (70B o, 8B qkv; and 70B qkv at 2048).
#   peers: Humming 0.1.19 int2 / int3 / int8 beside the current 2-bit halves, 3-bit thirds and 8-bit planes (v21's int2 /
#         int8 figures predate the w4a16_gemv forms), M 1, 16, 64, 256, 1024, with our defaults at the same M, and ncu of
#         w4a16_gemv on 70B gate_up M = 1 at 2 bits (82% of the 243 MB window, not profiled).
# Logs come back as one tar ($OUT/v33_MODE.tgz).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v33 "${1:-dq}"
B=.h200/bench_cuda_w4a16
case "${1:-dq}" in
dq)
  # the dq thirds patch and the block-shared x of w4a16_gemv (m 2..16), both verified and timed; priorities first
  dev_card "$R"
  stamp "thirds rounds (dq thirds pass, shared x)"
  dev_rounds "$R" thirds
  stamp "shared x sweep, 3-bit"
  X="skinny ox,skinny sx,skinny sx ksplit1,skinny sx ksplit2,skinny sx ksplit4"
  L=70B.down,70B.o,70B.qkv,8B.qkv,8B.gate_up
  sx_sweep() {
    timeout 90 stdbuf -oL $B --sweep --sets "$X" --shapes $L --m 2,8,9,16 --wtype $1 --reps 10 > "$R/sx_$1.log" 2>&1
    grep -E "^sweep" "$R/sx_$1.log" | grep -v cuBLAS | sed -e 's/  */ /g' -e 's/ us .*//' > "$R/sx_$1.short"
  }
  sx_sweep uint3b4
  stamp "old / new, dq layers"
  S=70B.o,8B.qkv,70B.qkv
  for r in 1 2 3; do
    for v in old new; do
      timeout 60 stdbuf -oL "$(bench_of $v)" --shapes "$S" --m 513,1024,2048 --wtype uint3b4 --reps 10 > "$R/ab_${v}_$r.log" 2>&1
    done
  done
  grep -h "cuda_w4a16" "$R"/ab_*_1.log | awk '{print $1, $2, $4, $5}'
  stamp "gemv rounds (4-bit, 8-bit, halves; shared x)"
  dev_rounds "$R" gemv
  for w in uint4b8 uint2b2 uint8b128; do stamp "shared x sweep $w"; sx_sweep $w; done
  stamp "humming int3 at M 2, 8, 16 (beside the sweep)"
  HMS=2,8,16 PEER_SECONDS=${PEER_SECONDS:-90} dev_humming 3 "$R/humming3" | tail -14
  ;;
peers)
  dev_card "$R"
  for w in uint2b2 uint3b4 uint8b128; do
    stamp "defaults $w"
    timeout 60 stdbuf -oL $B --shapes 70B.gate_up,70B.down,8B.qkv,8B.gate_up --m 1,16,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
    grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - -
  done
  for b in 2 3 8; do
    stamp "humming $b"
    HMS=1,16,64,256,1024 PEER_SECONDS=${PEER_SECONDS:-100} dev_humming $b "$R/humming$b" | tail -14
  done
  stamp "ncu 2-bit 70B gate_up M = 1"
  dev_ncu "$R/ncu_halves_m1.txt" $B w4a16_gemv --shapes 70B.gate_up --m 1 --wtype uint2b2 --reps 1
  ;;
esac
dev_end v33 "${1:-dq}"

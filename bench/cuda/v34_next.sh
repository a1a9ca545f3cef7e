#!/usr/bin/env bash
# bench/cuda/v34_next.sh MODE -- on the device machine; prepared in session 40 (bench/cuda/NOTES.md v33), run in session 41
# (v34: `mini` was call 1; calls 2-4 were one-line sweeps and defaults: bench/cuda/NOTES.md v34).
# The binaries were built with bench/results/v33/bx_clusters.patch applied: its "skinny sx nw1 ..." sweep sets and the
# nw1 rounds exist only there (the landed tree kept the cluster choice, not the one-row-tile form).
#   fit:   the block-shared x's split-K by clusters that fit (launch_gv_mx asks cudaOccupancyMaxActiveClusters for S = 8
#          .. 2 and takes the largest whose clusters are all resident at once) and its one-row-tile-per-warp form: the 3-
#          and 4-bit sweeps, the thirds and gemv rounds, the 2- and 8-bit sweeps in what the call has left.
#   mini:  what a short budget allows (call 1 of v34).
#   fit2:  the thirds rounds alone.
#   peers: Humming int2 / int3 / int8 beside our defaults at M 1, 16, 64, 256, 1024 (v33_next.sh peers).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v34 "${1:-fit}"
B=.h200/bench_cuda_w4a16
# rounds T END: the thirds rounds (T s at most), then the gemv rounds until END s after t0
rounds() {
  stamp "thirds rounds"
  ( time env MPL_CUDA_W4A16_TEST_THIRDS=1 timeout $1 .h200/test_cuda_w4a16 ) > "$R/test_thirds.log" 2>&1; echo "rc=$?" >> "$R/test_thirds.log"
  grep -E "device matrix|FAIL|rc=|real" "$R/test_thirds.log" | head -10
  local left=$(($2 - ($(date +%s) - t0)))
  stamp "gemv rounds ($left s)"
  ( time env MPL_CUDA_W4A16_TEST_GEMV=1 timeout $left .h200/test_cuda_w4a16 ) > "$R/test_gemv.log" 2>&1; echo "rc=$?" >> "$R/test_gemv.log"
  grep -E "device matrix|FAIL|rc=|real" "$R/test_gemv.log" | head -10
}
case "${1:-fit}" in
fit)
  # One call: the 3- and 4-bit sweeps (they decide), the thirds and gemv rounds (the forced shared x takes the new
  # split-K; both needed to land it), then the 2- and 8-bit sweeps in what the call has left.
  t0=$(date +%s)
  dev_card "$R"
  X="skinny ox,skinny sx,skinny sx ksplit1,skinny sx ksplit2,skinny sx ksplit4,skinny sx nw1,skinny sx nw1 ksplit2,skinny sx nw1 ksplit4"
  sweep() {
    stamp "sweep $1"
    timeout $2 stdbuf -oL $B --sweep --sets "$X" --shapes 70B.down,70B.o,70B.qkv,8B.qkv,8B.gate_up --m 2,8,9,16 --wtype $1 --reps 10 > "$R/sx_$1.log" 2>&1
  }
  sweep uint3b4 80
  sweep uint4b8 80
  rounds 150 470
  for w in uint2b2 uint8b128; do
    left=$((480 - ($(date +%s) - t0)))
    [ "$left" -gt 30 ] && sweep $w $left
  done
  ;;
mini)
  # What a short budget allows: the deep narrow layers at m 9 / 16 (3- and 4-bit), the thirds rounds, the gemv rounds cut
  # at the call's 380 s.
  t0=$(date +%s)
  dev_card "$R"
  X="skinny ox,skinny sx,skinny sx ksplit2,skinny sx ksplit4,skinny sx nw1,skinny sx nw1 ksplit2,skinny sx nw1 ksplit4"
  for w in uint3b4 uint4b8; do
    stamp "sweep $w"
    timeout 50 stdbuf -oL $B --sweep --sets "$X" --shapes 70B.down,70B.o,70B.qkv,8B.qkv --m 9,16 --wtype $w --reps 10 > "$R/sx_$w.log" 2>&1
  done
  rounds 130 380
  ;;
fit2)
  stamp "thirds rounds"
  dev_rounds "$R" thirds
  ;;
peers)
  bash bench/cuda/v33_next.sh peers
  ;;
esac
dev_end v34 "${1:-fit}"

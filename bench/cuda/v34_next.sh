#!/usr/bin/env bash
# bench/cuda/v34_next.sh MODE -- on the device machine; prepared in session 40 (bench/cuda/NOTES.md v33), not yet run.
#   fit:   the block-shared x's split-K by clusters that fit (bench/results/v33/bx_clusters.patch: launch_gv_mx asks
#          cudaOccupancyMaxActiveClusters for S = 8 .. 2 and takes the largest whose clusters are all resident at once),
#          and its one-row-tile-per-warp form (the tuning's skinny_nw 1: twice the blocks, so clusters of 2 fill 70B down).
#          Build here with the patch applied (git apply bench/results/v33/bx_clusters.patch) and pack those binaries.
#          Runs: the thirds and gemv rounds (the forced shared x now takes the new split-K: S 3, 5, 6 ... reach the
#          wide layer), then v33's sweep (own x, shared x by the new rule, forced split-K 1 / 2 / 4) at m 2, 8, 9, 16 on
#          70B down / o / qkv, 8B qkv / gate_up at every width. Where "skinny sx" now beats own x on the deep layers, the
#          default rule (mpl_cuda_w4a16_shared_x_fills) can widen to them.
#   peers: Humming int2 / int3 / int8 beside our defaults at M 1, 16, 64, 256, 1024 (v33_next.sh peers).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v34 "${1:-fit}"
B=.h200/bench_cuda_w4a16
case "${1:-fit}" in
fit)
  dev_card "$R"
  stamp "thirds rounds"
  dev_rounds "$R" thirds
  stamp "sweeps"
  X="skinny ox,skinny sx,skinny sx ksplit1,skinny sx ksplit2,skinny sx ksplit4,skinny sx nw1,skinny sx nw1 ksplit2,skinny sx nw1 ksplit4"
  for w in uint3b4 uint4b8 uint2b2 uint8b128; do
    stamp "sweep $w"
    timeout 120 stdbuf -oL $B --sweep --sets "$X" --shapes 70B.down,70B.o,70B.qkv,8B.qkv,8B.gate_up --m 2,8,9,16 --wtype $w --reps 10 > "$R/sx_$w.log" 2>&1
  done
  stamp "gemv rounds"
  ( time env MPL_CUDA_W4A16_TEST_GEMV=1 timeout 300 .h200/test_cuda_w4a16 ) > "$R/test_gemv.log" 2>&1; echo "rc=$?" >> "$R/test_gemv.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_gemv.log" | head -20
  ;;
peers)
  bash bench/cuda/v33_next.sh peers
  ;;
esac
dev_end v34 "${1:-fit}"

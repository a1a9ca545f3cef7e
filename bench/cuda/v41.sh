#!/usr/bin/env bash
# bench/cuda/v41.sh MODE -- on the device machine; session 48 (bench/cuda/NOTES.md v41, raw files bench/results/v41/).
# Binaries built here and carried packed (.h200pack/bins.tar.xz), the Humming wheel carried in .whl/.
#   mat:   the full device matrix (test_cuda_w4a16 without a selector, test_cuda_faults) on the tree's kernels -- not run
#          since the producer warpgroup's scale split (v40 ran only its wg rounds); on an H200 first the defaults at M = 1
#          on the six layers at every width (issue 18's M = 1 target).
#   bt:    new = the tree, alt = the tree with bench/results/v41/bt176.patch built with -DMPL_WG_BT176=512 (176-
#          token tiles with per-step fragments in the split-K form from m = 512, 4-bit codes): the wg rounds on alt;
#          the defaults and wg / wg-streamk forced, both builds, at M 512 / 1024 / 2048 on the six layers, bf16 (SPLIT)
#          and f16 (S16); a second bf16 turn; the full device matrix on new (sharded) last. The one bt call (H100,
#          194 s: all the device budget left) finished the wg rounds and the first turn.
#          The rule's build (bench/results/v41/bt176_rule.patch) ran in session 49: bench/cuda/v42.sh rule.
#   peers: the defaults at M 1..1024 on the six layers at every width, then Humming int2 / int3 / int4 / int8 beside them.
set -u
. bench/cuda/dev_unpack.sh
dev_begin v41 "${1:-mat}"
B=.h200/bench_cuda_w4a16
case "${1:-mat}" in
mat)
  card
  h200_m1
  stamp "device matrix"
  TEST_S=400 dev_tests "$R"
  for w in uint2b2 uint3b4 uint4b8 uint8b128; do
    stamp "defaults $w"
    timeout 60 stdbuf -oL $B --shapes "$S" --m 1,16,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
  done
  ;;
bt)
  card
  h200_m1
  dev_wg_alt
  dev_turn 1 bf16 f16
  head -80 "$R/ab_table.txt"
  dev_turn 2 bf16
  stamp "device matrix (new)"
  TEST_S=200 dev_tests "$R"
  ;;
peers)
  dev_peers
  ;;
esac
dev_end v41 "${1:-mat}"

#!/usr/bin/env bash
# bench/cuda/v42.sh MODE -- on the device machine; session 49 (bench/cuda/NOTES.md v42, raw files bench/results/v42/).
# Binaries built here and carried packed (.h200pack/bins.tar.xz: new = the tree, alt = the tree with
# bench/results/v41/bt176_rule.patch built with -DMPL_WG_BT176: 176-token tiles in wg's split-K form where the waves
# model of NOTES v41 says >= 5%), the Humming wheel carried in .whl/.
#   rule:  on an H200 first the defaults at M = 1 on the six layers at every width (issue 18's M = 1 target); the wg
#          rounds on alt; three A/B turns (bf16 and f16, then bf16 twice) of new and alt at M 512 / 1024 / 2048; the
#          device matrix on new (sharded) last.
#   peers: the defaults at M 1..1024 on the six layers at every width, then Humming int2 / int3 / int4 / int8 beside them.
set -u
. bench/cuda/dev_unpack.sh
dev_begin v42 "${1:-rule}"
case "${1:-rule}" in
rule)
  card
  h200_m1
  dev_wg_alt
  dev_turn 1 bf16 f16
  dev_turn 2 bf16
  dev_turn 3 bf16
  cat "$R/ab_table.txt"
  stamp "device matrix (new)"
  TEST_S=150 dev_tests "$R"
  ;;
peers)
  dev_peers
  ;;
esac
dev_end v42 "${1:-rule}"

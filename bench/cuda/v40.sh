#!/usr/bin/env bash
# bench/cuda/v40.sh MODE -- on the device machine; prepared in session 47 (bench/cuda/NOTES.md v40, raw files
# bench/results/v40/: one folder per mode). Binaries built here and carried packed (.h200pack/bins.tar.xz), the
# Humming wheel carried in .whl/.
#   prof: where wg's time goes at M >= 256 beside Humming's kernel of the same tile (v38: Humming picks 128 tokens x 256
#         rows x 64 channels at M = 256, our wg tile, and runs 70B gate_up 4-bit in 325 us to our 436). On an H200 first
#         the defaults at M = 1 on the six layers at every width (issue 18's M = 1 target, not yet measured there since
#         2d2ff4a). Then ncu (full set, per-instruction stall samples) of our wg kernel at 70B gate_up M = 256 / 1024,
#         4-bit, and of Humming's int4 kernel at M = 256 / 1024 on the same layer; each report's details page and
#         its SASS with the samples per instruction (CSV). In the v40 call (H100) the M = 1024 wg launch did not finish
#         under ncu's replay (the tool gave up); the other three reports are in bench/results/v40/prof.
#   ord:  new = the tree, alt = -DMPL_WG_ORDER=1 (bench/results/v40/ord.patch), mid = -DMPL_WG_SPLIT_TRUNC=1
#         (split_trunc.patch); the defaults in turns, the wg rounds of alt and mid.
#   m1:   on an H200, the defaults at M = 1 on the six layers at every width (h200_m1).
#   spl:  new = the tree with the producer warpgroup's scale split, old = the tree before it; the wg rounds, two turns.
set -u
. bench/cuda/dev_unpack.sh
dev_begin v40 "${1:-prof}"
B=.h200/bench_cuda_w4a16
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
# nprof NAME TIMEOUT KERNEL_REGEX COUNT CMD...: ncu's full set over COUNT launches of the kernels matching the regex,
# report R/NAME.ncu-rep, its details page R/NAME.txt and SASS page with per-instruction samples R/NAME_sass.csv
nprof() {
  local name=$1 to=$2 kern=$3 cnt=$4
  shift 4
  timeout "$to" "$ncu" --clock-control none --set full --import-source no -k "regex:$kern" -c "$cnt" -f -o "$R/$name" "$@" \
      > "$R/$name.log" 2>&1
  "$ncu" --import "$R/$name.ncu-rep" --page details > "$R/$name.txt" 2>&1
  "$ncu" --import "$R/$name.ncu-rep" --page source --print-source sass --csv > "$R/$name""_sass.csv" 2>&1
  grep -E "^  [a-zA-Z_].*\(|^    (Duration|Executed Instructions |Issue Slots Busy|Registers Per|Block Size|Grid Size|Cluster Size|Dynamic Shared)" "$R/$name.txt" | head -24
  rm -f "$R/$name.ncu-rep"
}
# ab TURN: the defaults of the versions in AB_V (default "new alt mid"; new = .h200/bench_cuda_w4a16, the others
# bench_of's) at M 64 / 256 / 1024 on the six layers, at the widths in AB_W (default 4-, 2- and 8-bit)
ab() {
  local w v
  for w in ${AB_W:-uint4b8 uint2b2 uint8b128}; do
    for v in ${AB_V:-new alt mid}; do
      timeout 90 stdbuf -oL "$(bench_of $v)" --shapes "$S" --m 64,256,1024 --wtype $w --reps 10 > "$R/o_${v}_${w}_$1.log" 2>&1
    done
  done
}
case "${1:-prof}" in
m1)
  # the M = 1 figures of issue 18 on whatever card comes (asked for when the tool lent H200s only)
  card
  grep -q H200 "$R/nvidia-smi.txt" && h200_m1
  ;;
spl)
  # new = the SPLIT form's scales split once per stage by the producer warpgroup's second warp; old = the tree before
  card
  stamp "wg rounds"
  dev_rounds "$R" wg
  export AB_V="old new" AB_W="uint4b8 uint2b2 uint3b4"
  stamp "old / new turn 1"
  ab 1
  python3 bench/cuda/ab_table.py "$R"/o_*.log | head -60
  stamp "old / new turn 2"
  ab 2
  python3 bench/cuda/ab_table.py "$R"/o_*.log > "$R/ab_table.txt" 2>&1
  h200_m1
  ;;
ord)
  # alt = this tree built with -DMPL_WG_ORDER=1: the two consumer warpgroups issue their chunks' wgmmas in turns;
  # mid = built with -DMPL_WG_SPLIT_TRUNC=1: the SPLIT form's f16 scale split by truncation (no F2F)
  card
  h200_m1
  stamp "new / alt turn 1"
  ab 1
  python3 bench/cuda/ab_table.py "$R"/o_*.log | head -70
  stamp "alt wg rounds"
  ( time env MPL_CUDA_W4A16_TEST_WG=1 timeout 150 .h200/test_cuda_w4a16_alt ) > "$R/test_wg_alt.log" 2>&1; echo "rc=$?" >> "$R/test_wg_alt.log"
  grep -E "device matrix|FAIL|rc=|real" "$R/test_wg_alt.log" | head
  ( time env MPL_CUDA_W4A16_TEST_WG=1 timeout 150 .h200/test_cuda_w4a16_mid ) > "$R/test_wg_mid.log" 2>&1; echo "rc=$?" >> "$R/test_wg_mid.log"
  grep -E "device matrix|FAIL|rc=|real" "$R/test_wg_mid.log" | head
  stamp "new / alt turn 2"
  ab 2
  python3 bench/cuda/ab_table.py "$R"/o_*.log > "$R/ab_table.txt" 2>&1
  ;;
prof)
  card
  h200_m1
  stamp "ncu wg 4-bit"
  nprof wg4_m256 120 w4a16_wg 1 $B --shapes 70B.gate_up --m 256 --wtype uint4b8 --reps 1
  nprof wg4_m1024 120 w4a16_wg 1 $B --shapes 70B.gate_up --m 1024 --wtype uint4b8 --reps 1
  stamp "ncu Humming int4"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  for m in 256 1024; do
    OUT="$R" PEER_SECONDS=100 HUMMING_PEER_PROBE=0 HUMMING_PEER_BITS=4 HUMMING_PEER_MS=$m HUMMING_PEER_SHAPES="L3-70B gate_up" \
        PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 nprof hum4_m$m 200 humming 2 python3 bench/cuda/humming_peer.py
  done
  ;;
esac
dev_end v40 "${1:-prof}"

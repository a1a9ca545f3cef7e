#!/usr/bin/env bash
# bench/cuda/v18_h200.sh -- on the device machine: verify 8-bit wg with one group per channel (bench/cuda/NOTES.md
# v17's open item) and re-measure M = 1 per width. Binaries built here, from a tree with the patch applied:
#   git apply bench/results/v18/wg8-group1.patch && bash bench/cuda/pack_h200.sh   (then repack, NOTES v17)
# One call: device tests (the matrix now runs the group -1 8-bit case through wg); read ceiling; uint8b128 group -1
# sweep with skinny, wg, tc and dq forced at M 1..1024 on the 70B shapes (the ranges of the patch: wg from 4 where
# n > k, else from 17, to 256); M = 1 default of every width (uint4b8, uint8b128, uint3b4, uint2b2, group 128) beside
# the read ceiling (issue 18's M = 1 target).
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
S=${SHAPES:-70B.gate_up,70B.down,70B.qkv,70B.o}
MS=${MS:-1,4,8,16,17,32,64,128,256,257,512,1024}
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*"; }
stamp tests
dev_tests "$R"
stamp "sweep 8-bit group -1"
timeout ${SWEEP_S:-150} stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets skinny,wg,tc,dq --shapes $S --m $MS --wtype uint8b128 \
    --group -1 --reps 10 > "$R/sweep_w8_g1.log" 2>&1
stamp "M = 1 per width"
for w in uint4b8 uint8b128 uint3b4 uint2b2; do
  timeout 40 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1 --wtype $w --reps 20 > "$R/m1_$w.log" 2>&1
done
stamp done
grep -iE "read16" "$R/bw.log" | head -2
grep -E "M=" "$R/sweep_w8_g1.log" | awk '{print $2, $3, $4, $5}' | paste - - - - | head -60
for w in uint4b8 uint8b128 uint3b4 uint2b2; do echo "-- $w"; grep -E "^\|" "$R/m1_$w.log" | tail -4; done

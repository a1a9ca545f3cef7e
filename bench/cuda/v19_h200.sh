#!/usr/bin/env bash
# bench/cuda/v19_h200.sh -- on the device machine: v18 (8-bit wg with one group per channel, bench/results/v18) and
# the 8-bit skinny form FORM_W8 (both planes of a chunk per ring stage, dequant8: bench/cuda/NOTES.md v19) in one call.
# Binaries built here from a tree with both (bench/cuda/dev_unpack.sh's pack), plus .h200/bench_cuda_w4a16_old: the
# bench built without FORM_W8 (8-bit skinny = the offset form over the two planes as 4-bit codes), for the A/B.
# One call: device tests; A/B of skinny forced, old and new taking turns (2 rounds), uint8b128 group 128, M 1..16;
# the v18 group -1 sweep (skinny, wg, tc, dq forced, M 1..1024, 70B shapes); M = 1 default of every width.
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
S=${SHAPES:-70B.gate_up,70B.down,70B.qkv,70B.o}
stamp tests
dev_tests "$R"
stamp "A/B skinny 8-bit (old = offset form over two 4-bit planes, new = FORM_W8)"
dev_ab 2 "$R" --sweep --sets skinny --shapes 70B.gate_up,70B.down,70B.qkv,8B.qkv --m 1,4,16 --wtype uint8b128 --reps 10
stamp "sweep 8-bit group -1"
timeout ${SWEEP_S:-110} stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets skinny,wg,tc,dq --shapes $S --m ${MS:-1,4,8,16,17,32,64,128,256,257,512,1024} \
    --wtype uint8b128 --group -1 --reps 10 > "$R/sweep_w8_g1.log" 2>&1
stamp "M = 1 per width"
for w in uint4b8 uint8b128 uint3b4 uint2b2; do
  timeout 40 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1 --wtype $w --reps 20 > "$R/m1_$w.log" 2>&1
done
stamp done
grep -iE "read16" "$R/bw.log" | head -2
for f in "$R"/ab_*.log; do echo "-- $f"; grep -E "  skinny " "$f" | awk '{print $2, $3, $5}' | paste - - - - - - - - - - - - ; done
grep -E "M=" "$R/sweep_w8_g1.log" | awk '{print $2, $3, $4, $5}' | paste - - - - | head -60
for w in uint4b8 uint8b128 uint3b4 uint2b2; do echo "-- $w"; grep -E "^\|" "$R/m1_$w.log" | tail -4; done

#!/usr/bin/env bash
# bench/cuda/v21_h200.sh -- on the device machine (bench/cuda/NOTES.md v21): the per-width table of issue 18 on the card
# the tool lends, every width's default path beside Humming in the same call: mplinear uint8b128, uint4b8, uint3b4,
# uint2b2 (bf16, group 128, f16 scales, cold weights, graph replay, median of 10) at M 1..1024 on the 70B and 8B
# shapes, the read ceiling, and Humming 0.1.19 int8, int4 and int2 (the wheel carried in .whl/). Binaries packed as in
# bench/cuda/dev_unpack.sh. Every log in one tar ($OUT/v21.tar.gz).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
dev_card "$R"
for w in uint8b128 uint4b8 uint3b4 uint2b2; do
  stamp "defaults $w"
  timeout 60 stdbuf -oL $B/bench_cuda_w4a16 --shapes 70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up --m 1,16,64,256,1024 \
      --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
done
for b in 8 4 2; do
  stamp "humming $b"
  PEER_SECONDS=${PEER_SECONDS:-80} dev_humming $b "$R/humming$b" | tail -12
done
timeout 30 $B/bench_cuda_bw --quick > "$R/bw_end.log" 2>&1
stamp done
tar -C "$R" -czf "${OUT:-/tmp}/v21.tar.gz" .
grep -iE "read16" "$R/bw.log" "$R/bw_end.log" | head -4
for w in uint8b128 uint4b8 uint3b4 uint2b2; do echo "-- $w"; grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done

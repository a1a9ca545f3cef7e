#!/usr/bin/env bash
# bench/cuda/v19b_h200.sh -- on the device machine, v19's second call (bench/cuda/NOTES.md v19): the binaries of
# commit 3b748f6 (FORM_W8 + wg group -1, verified by the first call's device matrix). Measures what sets the 8-bit
# skinny range (skinny vs wg forced, group 128, M 1..16), the 8-bit and 4-bit defaults at M 1..1024 and Humming
# int8 beside (same call, same card). Every log goes into one tar ($OUT/v19b.tar.gz: the device tool brings back a
# limited number of files).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$R/nvidia-smi.txt" 2>&1
timeout 30 $B/bench_cuda_bw --quick > "$R/bw.log" 2>&1
stamp "sweep 8-bit skinny vs wg"
timeout 90 stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets skinny,wg --shapes 70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up \
    --m 1,4,8,12,16 --wtype uint8b128 --reps 10 > "$R/sweep_w8_small.log" 2>&1
stamp "defaults 8-bit and 4-bit"
for w in uint8b128 uint4b8; do
  timeout 60 stdbuf -oL $B/bench_cuda_w4a16 --shapes 70B.gate_up,70B.down,8B.qkv,8B.gate_up,70B.qkv,70B.o --m 1,16,64,256,1024 \
      --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
done
stamp "humming 8"
[ "${HUMMING:-1}" = 1 ] && dev_humming 8 "$R/humming8"
stamp done
tar -C "$R" -czf "${OUT:-/tmp}/v19b.tar.gz" .
grep -iE "read16" "$R/bw.log" | head -2
grep -E "M=" "$R/sweep_w8_small.log" | grep -v cuBLAS | awk '{print $2, $3, $4, $5}' | paste - - - | head -40
for w in uint8b128 uint4b8; do echo "-- $w"; grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done

#!/usr/bin/env bash
# bench/cuda/v31_thirds.sh MODE -- on the device machine (bench/cuda/NOTES.md v31: 3-bit thirds).
#   t1:    the thirds rounds of the device matrix (MPL_CUDA_W4A16_TEST_THIRDS); the defaults at M 1..1024 for uint3b4 (thirds)
#          and uint4b8 (the time 3-bit layers had as 4-bit codes: the same kernels on the same bytes, v15) on the six layers,
#          bf16; forced sweeps of uint3b4 (skinny at NW 2 / 4, wg, wg-streamk) at m 1..32 for the switch points; Humming
#          0.1.19 int3 beside (dev_humming 3, the wheel carried in .whl/); ncu of w4a16_gemv on 70B gate_up at M = 1, 3-bit.
#   t2:    the whole device matrix (thirds rounds in it) and test_cuda_faults (TEST_S, default 420).
#   t3:    after t1's switch point (thirds skinny to 8 on the wide layers): the thirds rounds again, the uint3b4 defaults at
#          M 1..1024, forced sweeps of uint3b4 at m 256..1024 (wg, wg-streamk, dq) for wg's upper end, and at m = 1, 2 of
#          skinny's split-K (1, 2) and row tiles (2, 4) for uint3b4 and uint4b8 on the 70B layers.
#   t4:    t3 without the thirds rounds (call 1 ran them on the same kernels).
#   t5:    only the m = 1024 sweep of uint3b4 (wg against dq), for the device time left.
# Binaries packed as in bench/cuda/dev_unpack.sh. Logs come back as one tar ($OUT/v31_MODE.tgz).
set -u
. bench/cuda/dev_unpack.sh
dev_begin v31 "${1:-t1}"
B=.h200/bench_cuda_w4a16
case "${1:-t1}" in
t1)
  dev_card "$R"
  stamp "thirds rounds"
  dev_rounds "$R" thirds
  for w in uint3b4 uint4b8; do
    stamp "defaults $w"
    timeout 90 stdbuf -oL $B --shapes "$S" --m 1,2,8,16,17,32,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
    grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5, $7, $8}' | paste - - -
  done
  stamp "sweep"
  timeout 120 $B --sweep --sets "default,skinny nw2,skinny nw4,wg,wg-streamk" --shapes "$S" --m 1,8,9,16,17,32 \
      --wtype uint3b4 --reps 10 > "$R/sweep3.log" 2>&1
  grep -h "^sweep" "$R/sweep3.log" | head -80
  stamp "humming 3"
  HMS=1,16,64,256,1024 PEER_SECONDS=${PEER_SECONDS:-100} dev_humming 3 "$R/humming3" | tail -14
  stamp "ncu"
  dev_ncu "$R/ncu_thirds_m1.txt" $B w4a16_gemv --shapes 70B.gate_up --m 1 --wtype uint3b4 --reps 1
  ;;
t2)
  TEST_S=${TEST_S:-420} dev_tests "$R"
  ;;
t3 | t4)
  dev_card "$R"
  if [ "$1" = t3 ]; then stamp "thirds rounds"; dev_rounds "$R" thirds; fi
  stamp "defaults uint3b4"
  timeout 90 stdbuf -oL $B --shapes "$S" --m 1,2,8,9,16,17,64,256,1024 --wtype uint3b4 --reps 10 > "$R/default_uint3b4.log" 2>&1
  grep -E "cuda_w4a16" "$R/default_uint3b4.log" | awk '{print $1, $2, $4, $5}' | paste - - -
  stamp "sweep large m"
  timeout 150 $B --sweep --sets "default,wg,wg-streamk,dq" --shapes 70B.gate_up,70B.down,70B.qkv,8B.gate_up --m 256,512,1024 \
      --wtype uint3b4 --reps 10 > "$R/sweep3_large.log" 2>&1
  grep -h "^sweep" "$R/sweep3_large.log" | grep -v "cuBLAS bf16" | awk '{print $2, $3, $4, $5}' | paste - - - -
  stamp "sweep m = 1, 2: split-K and row tiles"
  for w in uint3b4 uint4b8; do
    timeout 60 $B --sweep --sets "default,skinny ksplit1,skinny ksplit2,skinny nw2,skinny nw4,skinny nw2 ksplit1" \
        --shapes 70B.gate_up,70B.down,70B.o,70B.qkv --m 1,2 --wtype $w --reps 10 > "$R/sweep_m1_$w.log" 2>&1
  done
  grep -h "^sweep" "$R"/sweep_m1_*.log | grep -v "cuBLAS bf16" | awk '{print $2, $3, $4, $5, $6}' | paste - - - - - -
  ;;
t5)
  stamp "sweep m = 1024"
  timeout 100 $B --sweep --sets "default,wg,dq" --shapes 70B.gate_up,70B.down,8B.gate_up,70B.qkv --m 1024 --wtype uint3b4 \
      --reps 10 > "$R/sweep3_1024.log" 2>&1
  grep -h "^sweep" "$R/sweep3_1024.log" | grep -v "cuBLAS bf16" | awk '{print $2, $3, $4, $5}' | paste - - -
  ;;
esac
dev_end v31 "${1:-t1}"

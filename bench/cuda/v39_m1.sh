#!/usr/bin/env bash
# bench/cuda/v39_m1.sh MODE -- on the device machine; prepared and run in session 46 (bench/cuda/NOTES.md v39, raw files
# bench/results/v39/: one folder per mode). All three calls ran on an H100 (no H200 came). Binaries built here and
# carried packed (.h200pack/bins.tar.xz; the pack of each call is described below, "old" being the tree before it).
#   m1:  new = 2d2ff4a (w4a16_gemv's x sums at m = 1 in one MMA per stage), old = 432e2dd, alt = new with
#        bench/results/v39/bps3.patch (three blocks per SM at m = 1 with two row tiles per warp). The m = 1 rounds of the
#        device matrix (new), the defaults old / new at M = 1 on the six layers at every width in turns (two rounds),
#        new / alt with two and four row tiles per warp forced (2-, 3- and 4-bit), ncu of the new 2-bit default.
#   m64: (the m1 pack) where M = 64..256 goes on the smaller layers (Humming 0.69-0.92x of our time there, v38): the
#        split-K factors, stream-K and tc forced at M 64 / 128 / 256 on 8B qkv, 8B gate_up, 70B down (4- and 2-bit),
#        ncu of every kernel of the default 8B qkv M = 64 call (w4a16_xtile and w4a16_wg); 8B gate_up 8-bit m = 512
#        forced, two turns.
#   pdl: new = 2d2ff4a + bench/results/v39/pdl.patch (the wg kernel as w4a16_xtile's programmatic dependent launch),
#        old = 2d2ff4a, alt = new + bench/results/v39/wg_dw2.patch (two wgmma groups in flight per warpgroup). The wg
#        rounds of new and alt, the m = 1 and quick rounds, old / new defaults at M 17 / 64 / 256 (4- and 2-bit) and new
#        / alt wg forced at M 33 / 64 (two turns each), ncu of new's wg kernel at 8B qkv M = 64. Neither patch is kept.
set -u
. bench/cuda/dev_unpack.sh
dev_begin v39 "${1:-m1}"
B=.h200/bench_cuda_w4a16
case "${1:-m1}" in
m1)
  dev_card "$R"
  stamp "m1 rounds"
  dev_rounds "$R" m1
  stamp "old / new at M = 1"
  dev_m1_ab "$R" 2 bf2 bf3 bf4 bf8 hf4
  for w in uint2b2 uint3b4 uint4b8; do
    for v in new alt; do
      stamp "$v nw2 / nw4 $w"
      timeout 60 stdbuf -oL "$(bench_of $v)" --sweep --sets "skinny nw2,skinny nw4" --shapes "$S" --m 1 --wtype $w --reps 10 > "$R/s_${v}_$w.log" 2>&1
    done
  done
  grep -h "cuda_w4a16" "$R"/s_*_uint2b2.log | head -30
  stamp "ncu"
  dev_ncu "$R/ncu_uint2b2_new.txt" $B w4a16_gemv --shapes 70B.gate_up --m 1 --wtype uint2b2 --reps 1
  ;;
m64)
  dev_card "$R"
  for w in uint4b8 uint2b2; do
    stamp "m64 $w"
    timeout 120 stdbuf -oL $B --sweep --sets "wg,wg-streamk,wg ksplit1,wg ksplit2,wg ksplit4,wg ksplit8,tc" \
        --shapes 8B.qkv,8B.gate_up,70B.down --m 64,128,256 --wtype $w --reps 10 > "$R/m64_$w.log" 2>&1
  done
  # session 45's open cell: 8B gate_up 8-bit at m = 512, stream-K (the default since v38) against wg and dq, two turns
  for r in 1 2; do
    timeout 60 stdbuf -oL $B --sweep --sets "wg-streamk,wg,dq" --shapes 8B.gate_up --m 512 --wtype uint8b128 --reps 10 > "$R/w8_512_$r.log" 2>&1
  done
  grep -h "8B.gate_up" "$R"/w8_512_*.log | head
  stamp "ncu"
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 120 "$ncu" --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
      --section WarpStateStats --section SchedulerStats -k "regex:w4a16_(xtile|wg)" -c 4 \
      $B --shapes 8B.qkv --m 64 --wtype uint4b8 --reps 1 > "$R/ncu_8Bqkv_m64.txt" 2>&1
  grep -E "w4a16_|Duration|Grid Size|Block Size|Cluster|Issue Slots|DRAM Through|Registers Per" "$R/ncu_8Bqkv_m64.txt" | head -40
  ;;
pdl)
  # in order of need (the call may be cut short): the wg rounds of new, the m = 1 and quick rounds (the launch helper's
  # change reaches skinny's split-K clusters), old / new and new / alt one turn, alt's wg rounds, second turns, ncu
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv > "$R/nvidia-smi.txt" 2>&1
  stamp "wg rounds"
  dev_rounds "$R" wg
  stamp "m1 / quick rounds"
  dev_rounds "$R" m1
  dev_rounds "$R" quick
  dw() { timeout 60 stdbuf -oL "$(bench_of $1)" --sweep --sets "wg" --shapes "$S" --m 33,64 --wtype uint4b8 --reps 10 > "$R/dw_$1_$2.log" 2>&1; }
  stamp "old / new at M 17 / 64 / 256, new / alt wg at M 33 / 64: turn 1"
  MS=17,64,256 dev_m1_ab "$R" 1 bf4 bf2 | tail -40
  dw new 1; dw alt 1
  grep -h "M=64 .* wg " "$R"/dw_*_1.log | head -12
  stamp "alt wg rounds"
  ( time env MPL_CUDA_W4A16_TEST_WG=1 timeout 150 .h200/test_cuda_w4a16_alt ) > "$R/test_wg_alt.log" 2>&1; echo "rc=$?" >> "$R/test_wg_alt.log"
  grep -E "device matrix|FAIL|rc=|real" "$R/test_wg_alt.log" | head
  stamp "turn 2"
  for c in bf4 bf2; do
    for v in old new; do
      a="--wtype uint4b8"; [ $c = bf2 ] && a="--wtype uint2b2"
      timeout 60 stdbuf -oL "$(bench_of $v)" --shapes "$S" --m 17,64,256 $a --reps 10 > "$R/o_${v}_${c}_2.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/o_*.log > "$R/ab_table.txt" 2>&1
  dw new 2; dw alt 2
  stamp "ncu"
  timeout 25 .h200/bench_cuda_bw --quick > "$R/bw.log" 2>&1
  dev_ncu "$R/ncu_wg_8Bqkv_m64.txt" $B w4a16_wg --shapes 8B.qkv --m 64 --wtype uint4b8 --reps 1
  ;;
esac
dev_end v39 "${1:-m1}"

#!/usr/bin/env bash
# bench/cuda/v15_h200.sh MODE -- on the device machine: issue 18's widths (bench/cuda/NOTES.md v15). Binaries built
# here and packed as in v13 (bench/cuda/v13_h200.sh's header), carried as .h200pack; logs under $OUT.
#   tests  device tests (test_cuda_w4a16 matrix with the 2-, 3-bit and int4 rounds, test_cuda_faults), read ceiling,
#          bench_cuda_w4a16 at M 1..4096 on the four issue-18 shapes for uint4b8, uint2b2 and uint3b4 in the same call
#          (bf16 activations, f16 scales, group 128, cold weights)
#   peers  read ceiling, uint8b128 and uint4b8 again, then Humming 0.1.19 (.whl carried) at 2 and 8 bits beside
#          (HUMMING_PEER_BITS; the peer script packs 2, 4 or 8 bits whole per int32: no 3-bit)
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
MODE=${1:-tests}
S=70B.gate_up,70B.down,8B.qkv,8B.gate_up
MS=1,16,64,256,1024,4096
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$R/nvidia-smi_$MODE.txt" 2>&1
if [ "$MODE" = tests ]; then
  stamp tests
  ( time timeout 300 $B/test_cuda_w4a16 ) > "$R/test_cuda_w4a16.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_w4a16.log"
  ( timeout 60 $B/test_cuda_faults ) > "$R/test_cuda_faults.log" 2>&1; echo "rc=$?" >> "$R/test_cuda_faults.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_cuda_w4a16.log" "$R/test_cuda_faults.log" | head -20
  stamp bench
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw.log" 2>&1
  for wt in uint4b8 uint2b2 uint3b4; do
    stamp "bench $wt"
    timeout 100 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m $MS --wtype $wt > "$R/bench_$wt.log" 2>&1
  done
  stamp done
  grep -iE "read16|copy16" "$R/bw.log" | head -4
  for wt in uint4b8 uint2b2 uint3b4; do echo "# $wt"; grep -E "^ *(8B|70B)" "$R/bench_$wt.log" | head -24; done
fi
if [ "$MODE" = peers ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw_peers.log" 2>&1
  for wt in uint8b128 uint4b8; do
    stamp "bench $wt"
    timeout 130 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m $MS --wtype $wt > "$R/bench2_$wt.log" 2>&1
  done
  for bits in 2 8; do
    stamp "humming $bits"
    mkdir -p "$R/humming$bits"
    OUT="$R/humming$bits" PEER_SECONDS=${PEER_SECONDS:-130} HUMMING_PEER_PROBE=0 HUMMING_PEER_BITS=$bits PYTHONPATH=/tmp/site \
        PYTHONUNBUFFERED=1 timeout 150 python3 bench/cuda/humming_peer.py > "$R/humming$bits/stdout.log" 2>&1
    tail -28 "$R/humming$bits/stdout.log"
  done
  stamp done
  for wt in uint8b128 uint4b8; do echo "# $wt"; grep -E "^ *(8B|70B)" "$R/bench2_$wt.log" | head -24; done
fi

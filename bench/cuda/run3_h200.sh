#!/usr/bin/env bash
# bench/cuda/run3_h200.sh -- on the device machine: 8-bit tc vs dq forced at m 64..1024 (where does dq win for
# the two-plane layers?) and Humming int8 beside (HUMMING_PEER_BITS=8). Results under $OUT (Humming's tarred).
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
S=70B.gate_up,70B.down,8B.gate_up
for set in tc dq; do
  timeout 150 $B/bench_cuda_w4a16 --sweep --sets $set --shapes $S --m 64,128,256,512,1024 --wtype uint8b128 \
      > "$R/w8-sweep-$set.txt" 2>&1
done
python3 -m pip install -q --no-index --no-deps --target /tmp/site .peerpack/humming_kernels-*.whl > /dev/null 2>&1
mkdir -p /tmp/h8
(cd .peerpack && OUT=/tmp/h8 PEER_SECONDS=150 HUMMING_PEER_PROBE=0 HUMMING_PEER_BITS=8 PYTHONPATH=/tmp/site \
    timeout 170 python3 humming_peer.py > /tmp/h8/stdout.txt 2>&1)
tar -C /tmp -cJf "$R/humming8.tar.xz" h8
grep -h "default\|sweep" "$R"/w8-sweep-*.txt | grep -v cuBLAS | head -40; tail -3 /tmp/h8/stdout.txt

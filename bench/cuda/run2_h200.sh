#!/usr/bin/env bash
# bench/cuda/run2_h200.sh -- on the device machine: 8-bit (uint8b128, two 4-bit planes) beside 4-bit in one run
# (bench_cuda_w4a16 --wtype, read bandwidth from bench_cuda_bw), the 8-bit path sweep at m 17..160, Humming
# int8 and int4 (bench/cuda/humming_peer.py, HUMMING_PEER_BITS) and small-layer concurrent applies. Results under $OUT.
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
S=70B.gate_up,70B.down,8B.qkv,8B.gate_up
timeout 60 $B/bench_cuda_bw > "$R/bw.txt" 2>&1
timeout 200 $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024,4096 --wtype uint8b128 --md "$R/w8.md" > "$R/w8.txt" 2>&1
timeout 120 $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024,4096 --md "$R/w4.md" > "$R/w4.txt" 2>&1
timeout 120 $B/bench_cuda_w4a16 --sweep --sets zzz --shapes 70B.gate_up,8B.gate_up --m 17,32,33,64,128,160 --wtype uint8b128 \
    --md "$R/w8-sweep.md" > "$R/w8-sweep.txt" 2>&1
[ -f .h200pack/old.tar.xz ] && tar -C $B -xJf .h200pack/old.tar.xz
for bin in bench_cuda_threads bench_cuda_threads_old; do
  [ -x $B/$bin ] || continue
  echo "## $bin --k 1024 --n 1024 --m 256 --path cuda_w4a16:dq" >> "$R/threads-small.md"
  timeout 40 $B/$bin --k 1024 --n 1024 --m 256 --path cuda_w4a16:dq --threads 1,2,4,8 --reps 50 >> "$R/threads-small.md" 2>&1
done
python3 -m pip install -q --no-index --no-deps --target /tmp/site .peerpack/humming_kernels-*.whl > /dev/null 2>&1
for bits in ${HUMMING_BITS:-8}; do
  mkdir -p "$R/humming$bits"
  (cd .peerpack && OUT="$R/humming$bits" PEER_SECONDS=150 HUMMING_PEER_PROBE=0 HUMMING_PEER_BITS=$bits PYTHONPATH=/tmp/site \
      timeout 170 python3 humming_peer.py > "$R/humming$bits/stdout.txt" 2>&1)
done
tail -2 "$R/humming8/stdout.txt"; cat "$R/threads-small.md"; grep -v "^#" "$R/w8.txt" | head -40

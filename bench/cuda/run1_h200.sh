#!/usr/bin/env bash
# bench/cuda/run1_h200.sh -- on the device machine (after bench/cuda/pack_h200.sh here): the CUDA test suites,
# then concurrent applies from 1-8 host threads (bench_cuda_threads) with this tree's library and, when
# .h200pack/old.tar.xz holds it, the same benchmark linked against the previous library (one dq lock).
# Results under $OUT.
set -u
. bench/cuda/dev_unpack.sh
R=${OUT:-/tmp}
B=.h200
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$R/gpu.txt" 2>&1
lscpu | grep -E "Model name|^CPU\(s\)" > "$R/cpu.txt"
( time timeout 300 $B/test_cuda_w4a16 ) > "$R/test_cuda_w4a16.txt" 2>&1; echo "rc=$?" >> "$R/test_cuda_w4a16.txt"
( time timeout 60 $B/test_cuda_faults ) > "$R/test_cuda_faults.txt" 2>&1; echo "rc=$?" >> "$R/test_cuda_faults.txt"
tail -3 "$R/test_cuda_w4a16.txt"; grep -E "device matrix|FAIL" "$R/test_cuda_w4a16.txt" | head -20; tail -3 "$R/test_cuda_faults.txt"
[ -f .h200pack/old.tar.xz ] && tar -C $B -xJf .h200pack/old.tar.xz
for cfg in "--m 256 --path cuda_w4a16:dq" "--m 64 --path cuda_w4a16:dq" "--m 1 --path cuda_w4a16:skinny-rounded"; do
  for bin in bench_cuda_threads bench_cuda_threads_old; do
    [ -x $B/$bin ] || continue
    echo "## $bin $cfg" | tee -a "$R/threads.md"
    timeout 60 $B/$bin $cfg --threads 1,2,4,8 --reps 20 2>&1 | tee -a "$R/threads.md"
  done
done

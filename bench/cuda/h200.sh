#!/usr/bin/env bash
# bench/cuda/h200.sh -- build, test and benchmark cuda_w4a16 in one go on the H200 device machine.
#
#   OUT=/some/dir bench/cuda/h200.sh [quick]
#
# Builds with CMake into build-h200 (sm_90 only, to keep the build short) unless H200_PREBUILT names a
# folder holding binaries built elsewhere (test_cuda_w4a16, bench_cuda_w4a16, mplinear, and lib/ with
# any shared libraries the device image lacks, e.g. libcmocka.so.0). H200_DEPS may name a folder with
# include/cmocka.h and lib/libcmocka.so for the build. Logs and the results table go to $OUT:
#   nvidia-smi.txt, build.log, test.log, cli.log, bench.log, h200.md (table), sweep.log (every path of the table,
#   forced by name, and split-K variant, by M next to cuBLAS), crossover.log (H200_OLD=1), ncu_*.txt (H200_NCU=1),
#   sanitizer.log (H200_SANITIZE=1)
# "quick" runs a reduced benchmark (M = 1 and 16 on the two Llama-3-70B MLP shapes).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-h200}
mkdir -p "$OUT"
QUICK=${1:-}
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/steps.txt"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$OUT/nvidia-smi.txt" 2>&1

if [ -n "${H200_PREBUILT:-}" ]; then
    T=$H200_PREBUILT/test_cuda_w4a16; B=$H200_PREBUILT/bench_cuda_w4a16; C=$H200_PREBUILT/mplinear
    export LD_LIBRARY_PATH=$PWD/$H200_PREBUILT/lib:${LD_LIBRARY_PATH:-}
    stamp "prebuilt binaries from $H200_PREBUILT"
else
    stamp "build"
    extra=()
    if [ -n "${H200_DEPS:-}" ]; then
        extra+=(-DCMOCKA_INCLUDE="$PWD/$H200_DEPS/include" -DCMOCKA_LIB="$PWD/$H200_DEPS/lib/libcmocka.so")
        export LD_LIBRARY_PATH=$PWD/$H200_DEPS/lib:${LD_LIBRARY_PATH:-}
    fi
    { cmake -S . -B build-h200 -DMPLINEAR_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${extra[@]}" &&
      cmake --build build-h200 -j16 --target test_cuda_w4a16 bench_cuda_w4a16 mplinear-cli; } > "$OUT/build.log" 2>&1 ||
        { stamp "build failed"; tail -30 "$OUT/build.log"; exit 1; }
    T=build-h200/tests/test_cuda_w4a16; B=build-h200/bench/cuda/bench_cuda_w4a16; C=build-h200/mplinear
fi
# cuBLAS: the toolkit's, else the one PyTorch's wheels carry.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
done

stamp "tests"
timeout 150 "$T" > "$OUT/test.log" 2>&1
echo "test exit $?" >> "$OUT/test.log"
grep -E "PASSED|FAILED|SKIPPED|device matrix|^FAIL" "$OUT/test.log" | head -40

stamp "cli"
{ "$C" info --device cuda --k 8192 --n 57344 --group-size 128
  "$C" info --device cuda --k 4096 --n 14336 --group-size 128 --m 48
  "$C" verify --device cuda --k 7392 --n 1408 --m 16 --group-size 32 --act f16
  "$C" verify --device cuda --k 4096 --n 10944 --m 33 --wtype uint4 --group-size 64 --act-order
  "$C" verify --device cuda --k 4096 --n 1408 --m 300 --group-size 128; } > "$OUT/cli.log" 2>&1
echo "cli exit $?" >> "$OUT/cli.log"
tail -5 "$OUT/cli.log"

stamp "bench"
if [ "$QUICK" = quick ]; then
    timeout 300 "$B" --m 1,16 --shapes 70B.gate_up,70B.down --md "$OUT/h200.md" 2>&1 | tee "$OUT/bench.log"
else
    timeout 240 "$B" --md "$OUT/h200.md" 2>&1 | tee "$OUT/bench.log"
    stamp "sweep (paths and split-K by M, next to cuBLAS)"
    timeout 300 "$B" --sweep --m ${H200_SWEEP_M:-1,16,32,64,128,256,1024,4096} \
        --shapes ${H200_SWEEP_SHAPES:-70B.gate_up,70B.down,70B.o,8B.qkv} 2>&1 | tee "$OUT/sweep.log"
    if [ -n "${H200_OLD:-}" ]; then
        stamp "crossover (cuda_w4a16:skinny vs cuda_w4a16:tc)"
        timeout 100 "$B" --crossover --m 1,2,4,8,12,16,24,32,48,64 --shapes 8B.qkv,8B.gate_up,70B.down 2>&1 | tee "$OUT/crossover.log"
    fi
fi

if [ -n "${H200_NCU:-}" ] && command -v ncu > /dev/null; then
    stamp "ncu (one launch: tensor-core M=4096 70B.o and/or skinny M=1 70B.gate_up)"
    sec="--section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy"
    # H200_NCU=tc, skinny or both (any other value)
    if [ "$H200_NCU" != skinny ] && [ "$H200_NCU" != wg ]; then
        timeout 120 ncu --clock-control none $sec -k regex:w4a16_tc -c 1 "$B" --shapes 70B.o --m 4096 --reps 1 > "$OUT/ncu_tc.txt" 2>&1
        grep -E "Duration|Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy" "$OUT/ncu_tc.txt" | head -12
    fi
    if [ "$H200_NCU" = wg ]; then
        timeout 120 ncu --clock-control none $sec --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
            -k regex:w4a16_wg -c 1 "$B" --sweep --shapes 70B.gate_up --m 1024 --reps 1 > "$OUT/ncu_wg.txt" 2>&1
        grep -E "Duration|Throughput|Issue Slots Busy|Issued Warp|No Eligible|stalled" "$OUT/ncu_wg.txt" | sort -k3 -nr | head -24
    fi
    if [ "$H200_NCU" != tc ] && [ "$H200_NCU" != wg ]; then
        timeout 90 ncu --clock-control none $sec -k regex:w4a16_skinny -c 1 "$B" --shapes 70B.gate_up --m 1 --reps 1 > "$OUT/ncu_skinny.txt" 2>&1
        grep -E "Duration|DRAM Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy" "$OUT/ncu_skinny.txt" | head -12
    fi
fi

if [ -n "${H200_SANITIZE:-}" ] && command -v compute-sanitizer > /dev/null; then
    stamp "compute-sanitizer (quick test matrix)"
    MPL_CUDA_W4A16_TEST_QUICK=1 timeout 240 compute-sanitizer --tool memcheck --print-limit 5 "$T" > "$OUT/sanitizer.log" 2>&1
    echo "sanitizer exit $?" >> "$OUT/sanitizer.log"
    tail -6 "$OUT/sanitizer.log"
fi
stamp "done"

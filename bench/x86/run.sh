#!/bin/sh
# bench/x86/run.sh -- the x86 W4A16 table: every shape of /work/shared/reference/anchors.md
# (Llama-3-8B and -70B, plus the tensor-parallel slices), M in {1, 4, 16, 64, 512}, 1 and 2
# threads, each row beside oneDNN/OpenBLAS dense baselines and the read bandwidth measured in
# the same run. Writes bench/results/x86-<cpu>.md (lscpu summary, load, command, table).
#
#   bench/x86/run.sh [build-dir] [extra mplbench options]      e.g. bench/x86/run.sh build --shapes 8b
#
# The machine is shared: every row waits (up to 2 min) until no other task is runnable, rows that
# could not are marked "(busy)", and `uptime` is recorded before and after.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
bin=$build/bench/x86/mplbench
[ -x "$bin" ] || { echo "no $bin: cmake -S $root -B $build && cmake --build $build --target mplbench" >&2; exit 1; }
# Other thread pools must sleep while ours runs: OpenMP (oneDNN) and OpenBLAS threads spin by default.
export OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1 | tr -c 'A-Za-z0-9\n' '-' | sed 's/--*/-/g; s/-$//')
out=$root/bench/results/x86-$cpu.md
args="--shapes 8b,70b,tp --m 1,4,16,64,512 --threads 1,2 --wait-quiet $*"
tmp=$(mktemp)
{
    echo "# x86 W4A16 benchmark: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    echo
    echo '```'
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|Hypervisor)'
    echo "ISA flags: $(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx_vnni|avx512.*|amx.*)$' | tr '\n' ' ')"
    echo "load before: $(uptime)"
    echo '```'
    echo
    echo "Command: \`OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 $bin $args\` ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$root" rev-parse --short HEAD))"
    echo
    "$bin" $args
    echo
    echo "load after table: $(uptime)"
    echo
    echo "## Path switch (every path of the kernel forced in turn, weights cold)"
    echo
    echo "Command: \`$bin --sweep --wait-quiet --shapes 4096x4096,4096x28672 --threads 1,2 --no-dense --reps 15\`"
    echo
    "$bin" --sweep --wait-quiet --shapes 4096x4096,4096x28672 --threads 1,2 --no-dense --reps 15 | tail -n +4
    echo
    echo "load after: $(uptime)"
} | tee "$tmp"
mv "$tmp" "$out"
echo "wrote $out" >&2

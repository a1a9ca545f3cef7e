#!/bin/bash
# fuzz/run_short.sh -- build the libFuzzer targets with clang (ASan + UBSan) and run each
# for a short while (default 30 s each, ~2 min in all) from the committed seed corpus.
# Usage: fuzz/run_short.sh [seconds-per-target]   (env BUILD_DIR, default build-fuzz)
# Everything it writes -- the build, its configure log, the working corpora, reproducers --
# stays under $BUILD_DIR (git ignores build*/): the clone itself is left as it was.
# Exits non-zero if a target crashes, leaks or trips a sanitizer; the reproducer is
# left in $BUILD_DIR/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
build=${BUILD_DIR:-build-fuzz}
mkdir -p "$build"
CC=clang cmake -S . -B "$build" -DMPLINEAR_FUZZ=ON -DMPLINEAR_TESTS=OFF -DMPLINEAR_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j2 --target fuzz_safetensors fuzz_hfconfig fuzz_npy fuzz_decode
mkdir -p "$build/artifacts"
for t in safetensors hfconfig npy decode; do
  work="$build/corpus-$t"
  rm -rf "$work" && mkdir -p "$work"
  cp fuzz/corpus/$t/* "$work/"
  echo "== fuzz_$t: ${secs}s"
  "$build/fuzz/fuzz_$t" "$work" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 2>&1 | tail -n 12
done

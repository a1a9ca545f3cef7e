#!/usr/bin/env bash
# bench/x86/ab_runs.sh -- A/B of mplbench builds on a shared machine: the builds take turns, N rounds, and every
# (shape, m, threads, build) row collects one median-of-reps time per round, printed side by side (ms).
# Compare the best of a row's rounds (the least disturbed: on the 2-vCPU VMs here another tenant can halve a core's
# AMX or vector rate for tens of seconds) and check the spread.
#   usage: bench/x86/ab_runs.sh N "label:path/to/mplbench label:path/to/mplbench ..." MPLBENCH_ARGS...
#   e.g.   bench/x86/ab_runs.sh 5 "old:/tmp/old/build/bench/x86/mplbench new:build/bench/x86/mplbench" \
#              --wtype uint8b128 --shapes 14336x4096 --m 512 --threads 1,2 --reps 3 --cold-gib 0.5 --no-dense
set -u
N=$1; shift; BINS=$1; shift
for i in $(seq "$N"); do
  for lb in $BINS; do
    "${lb#*:}" "$@" 2>&1 | grep "^| custom" | awk -F'|' -v b="${lb%%:*}" '{
      gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4); t = $6; gsub(/^ +| +$/, "", t); split(t, a, " ")
      v = a[1]; if (a[2] == "µs") v = v / 1000; print b, $2, "m=" $3, "T=" $4, v }'
  done
done | awk '{ k = $2 " " $3 " " $4 " " $1; L[k] = L[k] " " $5 } END { for (k in L) print k, L[k] }' | sort

#!/usr/bin/env bash
# bench/cuda/tp_h200.sh -- tensor parallelism on a multi-GPU H200 machine (docs/tensor-parallel.md):
# build with CUDA + NCCL, check every sharding rule on the GPUs against the unsharded ref, then time
# the Llama-3-70B MLP (gate_up column-parallel, down row-parallel) on R = 1, 2, 4, 8 GPUs.
#
#   OUT=/some/dir bench/cuda/tp_h200.sh [quick]        (nvidia-h200-x8: all of it; x2/x4: R up to the GPUs)
#
# Writes to $OUT: nvidia-smi.txt, topo.txt, build.log, verify.log, bench.jsonl, tp_h200.md (the table).
# "quick": M = 1 and 16 only, and the verify matrix at R = 2 only.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-tp-h200}
mkdir -p "$OUT"
QUICK=${1:-}
# NVLink multicast (NVLS) is not available on the lent machines: keep NCCL off it.
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/steps.txt"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
stamp "$GPUS GPUs"

stamp "build"
{ cmake -S . -B build-tp -DMPLINEAR_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DMPLINEAR_TESTS=OFF &&
  cmake --build build-tp -j16 --target mplinear-cli; } > "$OUT/build.log" 2>&1 ||
    { stamp "build failed"; tail -30 "$OUT/build.log"; exit 1; }
grep -q "NCCL found" "$OUT/build.log" || { stamp "NCCL not found at configure: no runner"; exit 1; }
C=build-tp/mplinear

RANKS=()
for r in 2 4 8; do [ "$r" -le "$GPUS" ] && RANKS+=("$r"); done
[ -n "$QUICK" ] && RANKS=(2)

# ---- correctness: every mode x R x act-order x zero points x group size, odd per-rank sizes ----
stamp "verify matrix (ranks ${RANKS[*]})"
fails=0
for R in "${RANKS[@]}"; do
  for mode in column row; do
    for per in 1408 7392 10944; do
      for g in -1 32 128; do
        for ao in "" --act-order; do
          for zp in "" "--wtype uint4 --zp"; do
            [ -n "$ao" ] && [ "$g" = -1 ] && continue
            if [ "$mode" = row ]; then k=$((R * per)); n=1024; else k=4096; n=$((R * per)); fi
            [ "$g" != -1 ] && [ $((k % g)) -ne 0 ] && continue
            args=(verify --device cuda --tp "$R" --tp-mode "$mode" --k "$k" --n "$n" --group-size "$g" --m 16 --layout gptq $ao $zp)
            out=$("$C" "${args[@]}" 2>&1); rc=$?
            echo "rc=$rc ${args[*]}" >> "$OUT/verify.log"; echo "$out" | tail -4 >> "$OUT/verify.log"
            # 3: a sharding rule refused the split (named in the message); 4: no CUDA kernel (irregular act-order row shards)
            case $rc in 0|3|4) ;; *) fails=$((fails + 1)); echo "FAIL rc=$rc ${args[*]}" | tee -a "$OUT/steps.txt" ;; esac
          done
        done
      done
    done
  done
done
stamp "verify done: $fails failures"

# ---- Llama-3-70B MLP: gate_up (K 8192, N 2 x 28672) column, down (K 28672, N 8192) row ----
MS=(1 16 256 4096)
[ -n "$QUICK" ] && MS=(1 16)
: > "$OUT/bench.jsonl"
stamp "bench"
for m in "${MS[@]}"; do
  for R in 1 "${RANKS[@]}"; do
    "$C" bench --device cuda --tp "$R" --tp-mode column --k 8192 --n 57344 --group-size 128 --m "$m" --reps 50 --json \
      >> "$OUT/bench.jsonl" 2>> "$OUT/steps.txt"
    "$C" bench --device cuda --tp "$R" --tp-mode row --k 28672 --n 8192 --group-size 128 --m "$m" --reps 50 --json \
      >> "$OUT/bench.jsonl" 2>> "$OUT/steps.txt"
  done
done

python3 - "$OUT/bench.jsonl" > "$OUT/tp_h200.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
t = {(r["m"], r["tp"], r["tp_mode"]): r for r in rows}
print("| M | R | gate_up GEMM ms | down GEMM ms | down all-reduce ms | pair ms | efficiency |")
print("|---|---|---|---|---|---|---|")
for m in sorted({r["m"] for r in rows}):
    base = None
    for R in sorted({r["tp"] for r in rows}):
        gu, dn = t.get((m, R, "column")), t.get((m, R, "row"))
        if not gu or not dn: continue
        pair = gu["seconds"] + dn["seconds"]
        if R == 1: base = pair
        eff = base / (R * pair) if base else float("nan")
        print(f"| {m} | {R} | {gu['gemm_seconds']*1e3:.4f} | {dn['gemm_seconds']*1e3:.4f} | "
              f"{dn['allreduce_seconds']*1e3:.4f} | {pair*1e3:.4f} | {eff:.2f} |")
PY
cat "$OUT/tp_h200.md"
stamp "done"

#!/usr/bin/env bash
# bench/cuda/v19c_h200.sh -- on the device machine, v19's third call (bench/cuda/NOTES.md v19): 8-bit layers without
# act-order skip the x gather on the paths that read both planes at once (skinny FORM_W8, wg, dq). Device tests, then
# an A/B of those paths forced (old = .h200/bench_cuda_w4a16_old, built at 3b748f6, with the gather; new = this
# tree), 2 rounds taking turns, uint8b128 group 128, bf16. Logs in one tar ($OUT/v19c.tar.gz).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
stamp tests
dev_tests "$R"
stamp "A/B gather vs none"
dev_ab 2 "$R" --sweep --sets skinny,wg,dq --shapes 70B.qkv,70B.o,8B.qkv,70B.gate_up --m 1,4,16,64,512 --wtype uint8b128 --reps 10
stamp "8-bit skinny row tiles and split-K"
timeout 60 stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets "skinny,skinny nw2,skinny nw4,skinny ksplit2" \
  --shapes 70B.gate_up,70B.down,70B.qkv,8B.qkv,8B.gate_up --m 1,4 --wtype uint8b128 --reps 10 > "$R/skinny_tune.log" 2>&1
grep -E "^sweep" "$R/skinny_tune.log" | grep -v "cuBLAS\|default" | awk '{print $2, $3, $4, $5, $6}'
stamp done
tar -C "$R" -czf "${OUT:-/tmp}/v19c.tar.gz" .
python3 - "$R" <<'PY'
import sys, collections
d = collections.defaultdict(list)
for v in ("old", "new"):
    for r in (1, 2):
        for l in open(f"{sys.argv[1]}/ab_{v}_{r}.log"):
            f = l.split()
            if len(f) > 5 and f[0] == "sweep" and f[3] in ("skinny", "wg", "dq"):
                d[(f[1], f[2], f[3], v)].append(float(f[4]))
keys = sorted({k[:3] for k in d})
for k in keys:
    o, n = min(d[k + ("old",)]), min(d[k + ("new",)])
    print(f"{k[0]:12s} {k[1]:6s} {k[2]:7s} old {o:8.2f} new {n:8.2f}  {n / o:.3f}")
PY

#!/usr/bin/env python3
"""bench/results/v25/make_table_v25.py -- the v25 tables of bench/results/h200-widths.md from the raw logs here: call 3
(H100: the final kernels' uint2b2 defaults and Humming 0.1.19 int2 in one call) and the A/B logs of calls 2 (the m = 1
halves form) and 3 (the uint2b2 offset-weighted x sums), best of the turns. Prints markdown."""
import glob, os, sys
D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from table_logs import ab_best, defaults, humming, pct_read16, read16  # noqa: E402

# ideal bytes at 2 bits: weights k n / 4, f16 scales n k / 128 * 2, x and y (bf16)
SH = {"70B.gate_up": (8192, 57344), "70B.down": (28672, 8192), "70B.qkv": (8192, 10240), "70B.o": (8192, 8192),
      "8B.qkv": (4096, 6144), "8B.gate_up": (4096, 28672)}
C3 = os.path.join(D, "call3")
w2 = defaults(os.path.join(C3, "default_uint2b2.log"))
hum = humming(os.path.join(C3, "humming2/stdout.log"))
r16 = read16(os.path.join(C3, "bw.log"))
print("read16 %.3f TB/s" % r16)
print()
print("| shape | M | 2-bit halves (path) | M = 1: % of read16 | Humming int2 bf16 | Humming / ours |")
print("|---|---|---|---|---|---|")
for s in SH:
    for m in (1, 16, 64, 256, 1024):
        if (s, m) not in w2:
            continue
        t2, p2, _ = w2[(s, m)]
        k, n = SH[s]
        pct = pct_read16(k, n, 2, t2, r16) if m == 1 else ""
        h = hum.get((s, m))
        print("| %s | %d | %.1f (%s) | %s | %s | %s |" % (
            s, m, t2, p2, pct, "%.1f" % h if h else "-", "%.2fx" % (h / t2) if h else "-"))

# A/B: best of the turns per version
for call, pat, title in (("call2", "m_*.log", "m = 1 form (call 2)"), ("call3", "u_*.log", "offset-weighted x sums (call 3)")):
    best = ab_best(glob.glob(os.path.join(D, call, pat)))
    if not best:
        continue
    print()
    print("%s, us:" % title)
    print()
    print("| weights, activations | shape | M | before | after (path) | after / before |")
    print("|---|---|---|---|---|---|")
    CFG = {"bf2": "uint2b2, bf16 (f16 scales)", "bfb2": "uint2b2, bf16 (bf16 scales)", "hf2": "uint2b2, f16"}
    for k in sorted(best, key=lambda k: (list(CFG).index(k[0]), list(SH).index(k[1]), k[2])):
        d = best[k]
        print("| %s | %s | %d | %.2f | %.2f (%s) | %.3fx |" % (CFG[k[0]], k[1], k[2], d["old"], d["new"], d["path"],
                                                              d["new"] / d["old"]))

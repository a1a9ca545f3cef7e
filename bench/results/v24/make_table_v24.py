#!/usr/bin/env python3
"""bench/results/v24/make_table_v24.py -- the v24 table of bench/results/h200-widths.md from the raw logs here: call 5
(H100: the final kernels' uint2b2 defaults before and after Humming 0.1.19 int2, and uint4b8, in one call) and call 4
(H100: the A/B/C of the tree before the session, after the bf16 one-fold change and after the scale-format template,
best of two turns). Prints markdown."""
import glob, os, sys
D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from table_logs import ab_best, defaults, humming, pct_read16, read16  # noqa: E402

# ideal bytes at 2 bits: weights k n / 4, f16 scales n k / 128 * 2, x and y (bf16)
SH = {"70B.gate_up": (8192, 57344), "70B.down": (28672, 8192), "70B.qkv": (8192, 10240), "70B.o": (8192, 8192),
      "8B.qkv": (4096, 6144), "8B.gate_up": (4096, 28672)}
C5 = os.path.join(D, "call5_peers")
w2 = defaults(os.path.join(C5, "default_uint2b2.log"), os.path.join(C5, "default_uint2b2_2.log"))
w4 = defaults(os.path.join(C5, "default_uint4b8.log"))
hum = humming(os.path.join(C5, "humming2/stdout.log"))
r16 = read16(os.path.join(C5, "bw.log"))
print("| shape | M | 2-bit halves (path) | M = 1: % of read16 | 4-bit default (path) | 2-bit / 4-bit | Humming int2 bf16 |"
      " Humming / ours |")
print("|---|---|---|---|---|---|---|---|")
for s in SH:
    for m in (1, 16, 64, 256, 1024):
        t2, p2, _ = w2[(s, m)]
        t4, p4, _ = w4[(s, m)]
        k, n = SH[s]
        pct = pct_read16(k, n, 2, t2, r16) if m == 1 else ""
        h = hum.get((s, m))
        print("| %s | %d | %.1f (%s) | %s | %.1f (%s) | %.2fx | %s | %s |" % (
            s, m, t2, p2, pct, t4, p4, t2 / t4, "%.1f" % h if h else "-", "%.2fx" % (h / t2) if h else "-"))

# call 4: A/B/C, best of two turns per version
print()
print("| weights, activations | shape | M | before the session | bf16 one fold | + scale format template | after / before |")
print("|---|---|---|---|---|---|---|")
best = ab_best(glob.glob(os.path.join(D, "call4_ab2", "c_*.log")))
CFG = {"bf2": "uint2b2, bf16", "hf2": "uint2b2, f16", "hf4": "uint4b8, f16"}
for k in sorted(best, key=lambda k: (list(CFG).index(k[0]), list(SH).index(k[1]), k[2])):
    d = best[k]
    print("| %s | %s | %d | %.1f | %.1f | %.1f (%s) | %.2fx |" % (CFG[k[0]], k[1], k[2], d["old"], d["mid"], d["new"], d["path"],
                                                                  d["new"] / d["old"]))

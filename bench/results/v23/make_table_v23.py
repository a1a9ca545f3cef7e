#!/usr/bin/env python3
"""bench/results/v23/make_table_v23.py -- the v23 table of bench/results/h200-widths.md from the raw logs here:
call 4 (the kept halves kernel: uint2b2 and uint4b8 defaults in one call) and call 2 (the first halves form beside
Humming int2 in one call). Prints markdown."""
import os, sys
D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from table_logs import defaults, humming, pct_read16, read16  # noqa: E402

# ideal bytes at 2 bits: weights k n / 4, f16 scales n k / 128 * 2, x and y (bf16)
SH = {"70B.gate_up": (8192, 57344), "70B.down": (28672, 8192), "70B.qkv": (8192, 10240), "70B.o": (8192, 8192),
      "8B.qkv": (4096, 6144), "8B.gate_up": (4096, 28672)}
c4w2 = defaults(os.path.join(D, "call4_all/default_uint2b2.log"))
c4w4 = defaults(os.path.join(D, "call4_all/default_uint4b8.log"))
c2w2 = defaults(os.path.join(D, "call2_bench/default_uint2b2.log"))
hum = humming(os.path.join(D, "call2_bench/humming2/stdout.log"))
r16 = read16(os.path.join(D, "call4_all/bw.log"))
print("| shape | M | 2-bit halves, call 4 (path) | 4-bit default, call 4 (path) | 2-bit / 4-bit | M = 1: % of read16 |"
      " 2-bit halves first form, call 2 | Humming int2 bf16, call 2 | Humming / ours (call 2) |")
print("|---|---|---|---|---|---|---|---|---|")
for s in SH:
    for m in (1, 16, 64, 256, 1024):
        t2, p2, _ = c4w2[(s, m)]
        t4, p4, _ = c4w4[(s, m)]
        k, n = SH[s]
        pct = pct_read16(k, n, 2, t2, r16) if m == 1 else ""
        f2 = c2w2.get((s, m))
        h = hum.get((s, m))
        print("| %s | %d | %.1f (%s) | %.1f (%s) | %.2fx | %s | %s | %s | %s |" % (
            s, m, t2, p2, t4, p4, t2 / t4, pct, "%.1f (%s)" % (f2[0], f2[1]) if f2 else "-",
            "%.1f" % h if h else "-", "%.2fx" % (h / f2[0]) if h and f2 else "-"))

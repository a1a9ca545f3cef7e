#!/usr/bin/env python3
"""bench/results/v26/make_table_v26.py: the v26 tables of bench/results/h200-widths.md from call 1's sweeps (H200):
per layer and M, the defaults of 4-bit (uint4b8) and 8-bit (uint8b128) with their paths, the 8-bit / 4-bit ratio,
the fastest forced path of each and cuBLAS bf16."""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROW = re.compile(r"^sweep (\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us(?:.*\((\S+)\))?")


def cells(path):
    out = {}
    for line in open(path):
        m = ROW.match(line)
        if m:
            out[(m.group(1), int(m.group(2)), m.group(3).strip())] = (float(m.group(4)), m.group(5))
    return out


a = cells(os.path.join(HERE, "call1", "sweep_uint4b8.log"))
b = cells(os.path.join(HERE, "call1", "sweep_uint8b128.log"))
print("| shape | M | 4-bit default (path) | 8-bit default (path) | 8-bit / 4-bit | best forced 4-bit / 8-bit | cuBLAS bf16 |")
print("|---|---|---|---|---|---|---|")
for (sh, m, lab), (t4, p4) in a.items():
    if lab != "default":
        continue
    t8, p8 = b[(sh, m, "default")]
    best = lambda d: min((v[0], k[2]) for k, v in d.items() if k[0] == sh and k[1] == m and k[2] != "cuBLAS bf16")
    b4, b8 = best(a), best(b)
    print("| %s | %d | %.1f (%s) | %.1f (%s) | %.2fx | %.1f (%s) / %.1f (%s) | %.1f |" % (
        sh, m, t4, p4.split(":")[1], t8, p8.split(":")[1], t8 / t4, b4[0], b4[1], b8[0], b8[1], a[(sh, m, "cuBLAS bf16")][0]))

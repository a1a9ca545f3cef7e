#!/usr/bin/env python3
"""bench/cuda/sweep_compact.py LOG...: one line per (shape, M) of bench_cuda_w4a16 --sweep logs, each set's time (us)
in the log's order, the fastest of ours marked with *. (A/B of sweep logs taken in turns: bench/cuda/ab_table.py.)"""
import re
import sys

ROW = re.compile(r"^sweep (\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us")
for path in sys.argv[1:]:
    cells = {}
    for line in open(path, errors="replace"):
        m = ROW.match(line)
        if m:
            cells.setdefault((m.group(1), int(m.group(2))), []).append((m.group(3).strip(), float(m.group(4))))
    print("--", path.rsplit("/", 1)[-1])
    for (shape, mm), sets in cells.items():
        ours = [t for lab, t in sets if lab != "cuBLAS bf16"]
        best = min(ours) if ours else None
        print("%-12s M=%-5d " % (shape, mm) + " | ".join("%s %.1f%s" % (lab, t, "*" if t == best else "") for lab, t in sets))

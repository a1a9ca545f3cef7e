#!/usr/bin/env python3
"""bench/cuda/sweep_compact.py LOG...: one line per (shape, M) of bench_cuda_w4a16 --sweep logs, each set's time (us)
in the log's order, the fastest of ours marked with *.
bench/cuda/sweep_compact.py --ab OLD_LOG NEW_LOG [OLD_LOG NEW_LOG ...]: per (shape, M, set) old and new us and new / old
(cuBLAS's row too: the run-to-run noise of the pair)."""
import re
import sys

ROW = re.compile(r"^sweep (\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us")


def cells(path):
    out = {}
    for line in open(path, errors="replace"):
        m = ROW.match(line)
        if m:
            out.setdefault((m.group(1), int(m.group(2))), []).append((m.group(3).strip(), float(m.group(4))))
    return out


if len(sys.argv) > 1 and sys.argv[1] == "--ab":
    logs = sys.argv[2:]
    for old_path, new_path in zip(logs[0::2], logs[1::2]):
        old, new = cells(old_path), cells(new_path)
        print("-- %s -> %s" % (old_path.rsplit("/", 1)[-1], new_path.rsplit("/", 1)[-1]))
        for key, sets in old.items():
            newd = dict(new.get(key, []))
            for label, t in sets:
                if label in newd:
                    print("%-12s M=%-5d %-14s old %9.1f new %9.1f new/old %.3f" % (key[0], key[1], label, t, newd[label], newd[label] / t))
    sys.exit(0)
for path in sys.argv[1:]:
    print("--", path.rsplit("/", 1)[-1])
    for (shape, mm), sets in cells(path).items():
        ours = [t for lab, t in sets if lab != "cuBLAS bf16"]
        best = min(ours) if ours else None
        print("%-12s M=%-5d " % (shape, mm) + " | ".join("%s %.1f%s" % (lab, t, "*" if t == best else "") for lab, t in sets))

#!/usr/bin/env python3
"""bench/cuda/ab_table.py LOG... -- the best time of each cell per version over A/B logs of bench_cuda_w4a16 taken in
turns (bench/cuda/v23_h200.sh persist, v24_h200.sh ab / hi / ab2). A log's name is PREFIX_VERSION[_CONFIG]_ROUND.log
with VERSION old, mid, alt or new; its lines are sweep lines (`sweep SHAPE M=m SET T us`) or default lines (`SHAPE M
CUBLAS T cuda_w4a16:PATH ...`). Prints one line per (config, shape, M, set or path): each version's best, and new over
the others."""
import os, re, sys

VERSIONS = ("old", "mid", "alt", "new")
best = {}
for path in sys.argv[1:]:
    fields = os.path.basename(path)[:-4].split("_")
    v = next(f for f in fields if f in VERSIONS)
    cfg = "_".join(f for f in fields[1:-1] if f != v)
    for line in open(path):
        sw = re.match(r"sweep\s+(\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us", line)
        df = re.match(r"(\S+)\s+(\d+)\s+\S+\s+([\d.]+)\s+cuda_w4a16:(\S+)", line)
        if sw and sw.group(3) != "cuBLAS bf16":
            k, t, path_ = (cfg, sw.group(1), int(sw.group(2)), sw.group(3)), float(sw.group(4)), None
        elif df:
            k, t, path_ = (cfg, df.group(1), int(df.group(2)), ""), float(df.group(3)), df.group(4)
        else:
            continue
        d = best.setdefault(k, {})
        d[v] = min(d.get(v, 1e9), t)
        if path_ and v == "new":  # the path the new build's default took
            d["path"] = path_
for k in sorted(best):
    d = best[k]
    times = " ".join("%s %.2f" % (v, d[v]) for v in VERSIONS if v in d)
    ratios = " ".join("new/%s %.3f" % (v, d["new"] / d[v]) for v in VERSIONS[:-1] if v in d and "new" in d)
    print(" ".join(x for x in (k[0], k[1], str(k[2]), k[3] or d.get("path", "")) if x), times, ratios)

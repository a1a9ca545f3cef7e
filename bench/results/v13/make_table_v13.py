#!/usr/bin/env python3
"""bench/results/v13/make_table_v13.py -- the v13 table of bench/results/h200.md and its JSON lines, from the v13 device
run's raw files in this folder (bench_bf16.log / bench_f16.log: the default path, bench_cuda_w4a16; sweep_repeat.log:
the committed wg kernel (forced "wg") and the stream-K path (forced "wg-streamk"), two passes per activation type;
bw.log; humming_peer.json: Humming 0.1.19 and torch cuBLAS bf16, the same device call).

    python3 bench/results/v13/make_table_v13.py            # prints the markdown table
    python3 bench/results/v13/make_table_v13.py --append   # also appends JSON lines to bench/results/h200-peers.jsonl
"""
import json, os, re, statistics, sys

here = os.path.dirname(os.path.abspath(__file__))
SHAPE = {  # bench_cuda_w4a16 name -> (humming_peer name or None, K, N)
    "8B.qkv": ("L3-8B qkv", 4096, 6144), "8B.o": (None, 4096, 4096), "8B.gate_up": ("L3-8B gate_up", 4096, 28672),
    "8B.down": (None, 14336, 4096), "70B.qkv": (None, 8192, 10240), "70B.o": (None, 8192, 8192),
    "70B.gate_up": ("L3-70B gate_up", 8192, 57344), "70B.down": ("L3-70B down", 28672, 8192)}
row = re.compile(r"^(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s")
ours, cublas = {}, {}
for act in ("bf16", "f16"):
    for line in open(os.path.join(here, "bench_%s.log" % act)):
        m = row.match(line)
        if m and m.group(1) in SHAPE:
            ours[(m.group(1), int(m.group(2)), act)] = (float(m.group(4)), m.group(5))
            if act == "bf16":
                cublas[(m.group(1), int(m.group(2)))] = float(m.group(3))
forced = {}  # (shape, M, act, set) -> [us, ...]
act = None
sw = re.compile(r"^sweep (\S+)\s+M=(\d+)\s+(wg-streamk|wg)\s+([\d.]+) us")
for line in open(os.path.join(here, "sweep_repeat.log")):
    if line.startswith("device:"):
        act = line.split("our activations")[1].strip()
    m = sw.match(line)
    if m:
        forced.setdefault((m.group(1), int(m.group(2)), act, m.group(3)), []).append(float(m.group(4)))
read = max(float(x) for x in re.findall(r"read16\s+([\d.]+) TB/s", open(os.path.join(here, "bw.log")).read()))
hm = json.load(open(os.path.join(here, "humming_peer.json")))
peer = {}
for t in hm["timings"]:
    meth, _, a = t["method"].partition("_")
    peer[(t["shape"], t["M"], meth, {"fp16": "f16"}.get(a, a))] = t["us"]

def ideal(s, m):  # int4 + f16 group-128 scales + x + y at the read ceiling, or 2MNK at 775 TFLOP/s
    k, n = SHAPE[s][1], SHAPE[s][2]
    return max((n * k / 2 + n * k / 128 * 2 + 2 * m * (k + n)) / (read * 1e12), 2 * m * n * k / 775e12) * 1e6

med = lambda v: statistics.median(v) if v else None
f = lambda v: "%.1f" % v if v else "-"
print("| shape | M | wg before (committed kernel, forced) bf16 / f16 | wg-streamk forced bf16 / f16 | mplinear bf16 (path) | Humming bf16 | ratio | "
      "mplinear f16 | Humming f16 | ratio | cuBLAS bf16 (ours / peer run) | best cuBLAS / mplinear bf16 | ideal |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
lines = []
for s in SHAPE:
    for m in (64, 256):
        ob, pb = ours[(s, m, "bf16")]
        of, pf = ours[(s, m, "f16")]
        wb, wf = med(forced.get((s, m, "bf16", "wg"))), med(forced.get((s, m, "f16", "wg")))
        kb, kf = med(forced.get((s, m, "bf16", "wg-streamk"))), med(forced.get((s, m, "f16", "wg-streamk")))
        hs = SHAPE[s][0]
        hb = peer.get((hs, m, "humming", "bf16")) if hs else None
        hf = peer.get((hs, m, "humming", "f16")) if hs else None
        cb, cp = cublas[(s, m)], (peer.get((hs, m, "cublas", "bf16")) if hs else None)
        best = min(cb, cp) if cp else cb
        r = lambda h, o: ("**%.2f**" % (h / o) if h / o < (1.15 if m <= 64 else 1.0) else "%.2f" % (h / o)) if h else "-"
        print("| %s | %d | %s / %s | %s / %s | %.1f (%s) | %s | %s | %.1f (%s) | %s | %s | %.1f / %s | %.2f | %.1f |" % (
            s, m, f(wb), f(wf), f(kb), f(kf), ob, pb.replace("cuda_w4a16:", ""), f(hb), r(hb, ob), of, pf.replace("cuda_w4a16:", ""), f(hf),
            r(hf, of), cb, f(cp), best / ob, ideal(s, m)))
        K, N = SHAPE[s][1], SHAPE[s][2]
        for a, (us, path) in (("bf16", (ob, pb)), ("f16", (of, pf))):
            lines.append(dict(shape=s, K=K, N=N, M=m, act=a, method="mplinear", path=path, us=us, run="v13"))
        lines.append(dict(shape=s, K=K, N=N, M=m, act="bf16", method="cublas_bf16 (bench_cuda_w4a16)", us=cb, run="v13"))
        for a in ("bf16", "f16"):
            h = peer.get((hs, m, "humming", a)) if hs else None
            if h:
                lines.append(dict(shape=s, K=K, N=N, M=m, act=a, method="humming_%s (humming_peer.py)" % a, us=h, run="v13"))
        if cp:
            lines.append(dict(shape=s, K=K, N=N, M=m, act="bf16", method="cublas_bf16 (humming_peer.py)", us=cp, run="v13"))
if "--append" in sys.argv:
    with open(os.path.join(here, "..", "h200-peers.jsonl"), "a") as out:
        for d in lines:
            d["us"] = round(d["us"], 2)
            out.write(json.dumps(d) + "\n")

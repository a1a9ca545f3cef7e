#!/usr/bin/env python3
"""bench/results/make_h200_table.py -- bench/results/h200-peers.jsonl and the tables of bench/results/h200.md
from one device run's raw files (bench_cuda_w4a16 logs for bf16 and f16 activations, bench_cuda_bw, and
../shared/peers/humming_peer.py's humming_peer.json), all from the same run on the H200.

    python3 bench/results/make_h200_table.py bench/results/v10 > tables.md   # also writes bench/results/h200-peers.jsonl
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from table_logs import read16_windows  # noqa: E402

run = sys.argv[1]
SHAPE = {  # bench_cuda_w4a16 name -> (humming_peer name or None, K, N)
    "8B.qkv": ("L3-8B qkv", 4096, 6144), "8B.o": (None, 4096, 4096), "8B.gate_up": ("L3-8B gate_up", 4096, 28672),
    "8B.down": (None, 14336, 4096), "70B.qkv": (None, 8192, 10240), "70B.o": (None, 8192, 8192),
    "70B.gate_up": ("L3-70B gate_up", 8192, 57344), "70B.down": ("L3-70B down", 28672, 8192)}
row = re.compile(r"^(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s")
ours, cublas = {}, {}
for act in ("bf16", "f16"):
    for line in open(os.path.join(run, "bench_%s.log" % act)):
        m = row.match(line)
        if m and m.group(1) in SHAPE:
            key = (m.group(1), int(m.group(2)), act)
            ours[key] = (float(m.group(4)), m.group(5))
            if act == "bf16":
                cublas[(m.group(1), int(m.group(2)))] = float(m.group(3))
read = read16_windows(os.path.join(run, "bw.log"))
hm = json.load(open(os.path.join(run, "humming_peer.json")))
peer = {}
for t in hm["timings"]:
    meth, _, act = t["method"].partition("_")  # humming_bf16, humming_fp16, cublas_bf16
    peer[(t["shape"], t["M"], meth, {"fp16": "f16"}.get(act, act))] = t["us"]

out = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "h200-peers.jsonl"), "w")
for (s, m, act), (us, path) in sorted(ours.items()):
    out.write(json.dumps(dict(shape=s, K=SHAPE[s][1], N=SHAPE[s][2], M=m, act=act, method="mplinear", path=path, us=us)) + "\n")
for (s, m), us in sorted(cublas.items()):
    out.write(json.dumps(dict(shape=s, K=SHAPE[s][1], N=SHAPE[s][2], M=m, act="bf16", method="cublas_bf16 (bench_cuda_w4a16)", us=us)) + "\n")
for (ps, m, meth, act), us in sorted(peer.items()):
    s = next(k for k, v in SHAPE.items() if v[0] == ps)
    out.write(json.dumps(dict(shape=s, K=SHAPE[s][1], N=SHAPE[s][2], M=m, act=act, method=meth + "_" + act + " (humming_peer.py)", us=us)) + "\n")
out.close()

def ideal(s, m):  # int4 + f16 group-128 scales + x + y at the read ceiling, or 2MNK at 775 TFLOP/s
    k, n = SHAPE[s][1], SHAPE[s][2]
    b = n * k / 2 + n * k / 128 * 2 + 2 * m * (k + n)
    bw = read[max(read)] * 1e12
    return max(b / bw, 2 * m * n * k / 775e12) * 1e6

print("| shape | M | mplinear bf16 | Humming bf16 | ratio | mplinear f16 | Humming f16 | ratio | cuBLAS bf16 (ours / peer run) | best cuBLAS / mplinear bf16 | ideal |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for s in SHAPE:
    for m in (1, 16, 64, 256, 1024, 4096):
        if (s, m, "bf16") not in ours:
            continue
        ob, pb = ours[(s, m, "bf16")]
        of, pf = ours[(s, m, "f16")]
        hs = SHAPE[s][0]
        hb = peer.get((hs, m, "humming", "bf16")) if hs else None
        hf = peer.get((hs, m, "humming", "f16")) if hs else None
        cb = cublas[(s, m)]
        cp = peer.get((hs, m, "cublas", "bf16")) if hs else None
        best_c = min(cb, cp) if cp else cb
        f = lambda v: "%.1f" % v if v else "-"
        r = lambda h, o: "**%.2f**" % (h / o) if h and h / o < 1.15 and m <= 64 else ("%.2f" % (h / o) if h else "-")
        print("| %s | %d | %.1f (%s) | %s | %s | %.1f (%s) | %s | %s | %.1f / %s | %.2f | %.1f |" % (
            s, m, ob, pb.replace("cuda_w4a16:", ""), f(hb), r(hb, ob), of, pf.replace("cuda_w4a16:", ""), f(hf), r(hf, of),
            cb, f(cp), best_c / ob, ideal(s, m)))

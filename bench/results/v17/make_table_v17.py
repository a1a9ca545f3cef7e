# make_table_v17.py -- bench/results/h200-widths.md's v17 table from this folder's raw files (bench/cuda/v17_h200.sh):
# 8-bit (uint8b128, bf16, f16 scales, group 128) per path from sweep_w8.log, the default before (skinny to 16, tc,
# dq from 65) and after (cuda_w4a16.c: skinny to 3 where n > k else 16/8, wg to 256, dq), the 4-bit default
# (bench_w4.log, same call), Humming 0.1.19 int8 bf16 and cuBLAS bf16 (humming8_peer.json, same call).
import json, re, collections, os
here = os.path.dirname(os.path.abspath(__file__))
KN = {"70B.gate_up": (8192, 57344), "70B.down": (28672, 8192), "70B.qkv": (8192, 10240), "70B.o": (8192, 8192),
      "8B.qkv": (4096, 6144), "8B.gate_up": (4096, 28672)}
HNAME = {"70B.gate_up": "L3-70B gate_up", "70B.down": "L3-70B down", "8B.qkv": "L3-8B qkv", "8B.gate_up": "L3-8B gate_up"}
sw = collections.defaultdict(dict)
for l in open(os.path.join(here, "sweep_w8.log")):
    m = re.match(r"sweep (\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us", l)
    if m: sw[(m.group(1), int(m.group(2)))][m.group(3).strip()] = float(m.group(4))
w4 = {}
for l in open(os.path.join(here, "bench_w4.log")):
    f = l.split()
    if len(f) > 4 and f[0] in KN and f[1].isdigit(): w4[(f[0], int(f[1]))] = (float(f[3]), f[4].split(":")[1])
hum = {(t["shape"], t["M"], t["method"]): t["us"] for t in json.load(open(os.path.join(here, "humming8_peer.json")))["timings"]}
def new_default(s, M):
    k, n = KN[s]; top = 3 if n > k else (16 if 2 * k >= 8192 else 8)
    p = sw[(s, M)]
    return ("skinny", p.get("skinny")) if M <= top else ("wg", p["wg"]) if M <= 256 else ("dq", p["dq"])
print("| shape | M | 8-bit before (path) | 8-bit now (path) | 4-bit default (path) | 8-bit now / 4-bit | Humming int8 bf16 | cuBLAS bf16 | Humming / 8-bit now |")
print("|---|---|---|---|---|---|---|---|---|")
for s in KN:
    for M in (4, 16, 24, 64, 128, 256, 512, 1024):
        if (s, M) not in sw: continue
        p = sw[(s, M)]; d = p["default"]
        before = "skinny" if "skinny" in p and abs(p["skinny"] - d) < 0.02 * d else "tc" if "tc" in p and abs(p.get("tc", 0) - d) < 0.02 * d else "dq"
        nm, nv = new_default(s, M); b4 = w4.get((s, M)); h = hum.get((HNAME.get(s), M, "humming_bf16")); cb = hum.get((HNAME.get(s), M, "cublas_bf16"))
        print(f"| {s} | {M} | {d:.1f} ({before}) | {nv:.1f} ({nm}) | {b4[0]:.1f} ({b4[1]}) | {nv / b4[0]:.2f}x | "
              f"{'%.1f' % h if h else '-'} | {'%.1f' % cb if cb else '-'} | {'%.2fx' % (h / nv) if h else '-'} |")

#!/usr/bin/env python3
"""bench/results/v21/make_table_v21.py -- the v21 per-width table (bench/results/h200-widths.md): every width's default
path (default_<wtype>.log: uint8b128, uint4b8, uint3b4, uint2b2; bf16, group 128) beside Humming int8 / int4 / int2
(humming<bits>/humming_peer.log, its SUMMARY; no int3: the peer script packs 2, 4 or 8 bits whole per int32) and the
bench's cuBLAS bf16, all from one device call (v21, H100), plus M = 1 as a share of read16 (bw.log, 243.3 MB window:
every layer here is colder than L2 many times over), counting the bytes an ideal kernel at the layer's width moves:
weights at 2 / 3 / 4 / 8 bits, one f16 scale per 128 weights, x and y. Run from this directory."""
import re

SHAPES = ["70B.gate_up", "70B.down", "70B.qkv", "70B.o", "8B.qkv", "8B.gate_up"]
KN = {"70B.gate_up": (8192, 57344), "70B.down": (28672, 8192), "70B.qkv": (8192, 10240), "70B.o": (8192, 8192),
      "8B.qkv": (4096, 6144), "8B.gate_up": (4096, 28672)}
HNAMES = {"L3-70B gate_up": "70B.gate_up", "L3-70B down": "70B.down", "L3-8B qkv": "8B.qkv", "L3-8B gate_up": "8B.gate_up"}


def ours(path):
    t = {}
    for l in open(path):
        f = l.split()
        if len(f) >= 5 and f[4].startswith("cuda_w4a16:"):
            t[(f[0], int(f[1]))] = (float(f[3]), f[4].split(":")[1], float(f[2]))
    return t


def humming(bits):
    h = {}
    try:
        lines = open(f"humming{bits}/humming_peer.log").read().split("SUMMARY")[-1].splitlines()
    except OSError:
        return h
    for l in lines:
        m = re.match(r"(L3-\S+ \S+)\s+\d+\s+\d+\s+(\d+)\s+([\d.]+)", l)
        if m:
            h[(HNAMES[m.group(1)], int(m.group(2)))] = float(m.group(3))
    return h


read16 = [float(l.split()[1]) for l in open("bw.log") if l.strip().startswith("read16")][-1]
print(f"read16 (243.3 MB window, same call): {read16:.3f} TB/s\n")
for wt, bits in (("uint8b128", 8), ("uint4b8", 4), ("uint3b4", 3), ("uint2b2", 2)):
    o, h = ours(f"default_{wt}.log"), humming(bits)
    print(f"#### {wt} ({bits}-bit){'' if h else ' -- no Humming int3 (see above)'}\n")
    print(f"| shape | M | mplinear (path) | Humming int{bits} bf16 | Humming / mplinear | cuBLAS bf16 | M = 1: % of read16 |")
    print("|---|---|---|---|---|---|---|")
    for s in SHAPES:
        for m in (1, 16, 64, 256, 1024):
            if (s, m) not in o:
                continue
            t, p, cb = o[(s, m)]
            hv = h.get((s, m))
            pct = ""
            if m == 1:
                k, n = KN[s]
                ideal = n * k * bits / 8 + n * k / 128 * 2 + 2 * k + 2 * n
                pct = f"{ideal / (t * 1e-6) / (read16 * 1e12) * 100:.0f}%"
            print(f"| {s} | {m} | {t:.1f} ({p}) | {hv:.1f} | {hv / t:.2f}x | {cb:.1f} | {pct} |" if hv else
                  f"| {s} | {m} | {t:.1f} ({p}) | - | - | {cb:.1f} | {pct} |")
    print()

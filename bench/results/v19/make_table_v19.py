#!/usr/bin/env python3
"""bench/results/v19/make_table_v19.py -- the v19 table (bench/results/h200-widths.md): 8-bit and 4-bit defaults
(default_uint8b128.log, default_uint4b8.log) beside Humming int8 (humming8/humming_peer.log, its SUMMARY) and cuBLAS
bf16, all from v19's second device call (H100). Run from this directory."""
import re

def ours(path):
    t = {}
    for l in open(path):
        f = l.split()
        if len(f) >= 5 and f[4].startswith("cuda_w4a16:"):
            t[(f[0], int(f[1]))] = (float(f[3]), f[4].split(":")[1], float(f[2]))
    return t

w8, w4 = ours("default_uint8b128.log"), ours("default_uint4b8.log")
hum = {}
names = {"L3-70B gate_up": "70B.gate_up", "L3-70B down": "70B.down", "L3-8B qkv": "8B.qkv", "L3-8B gate_up": "8B.gate_up"}
lines = open("humming8/humming_peer.log").read().split("SUMMARY")[-1].splitlines()
for l in lines:
    m = re.match(r"(L3-\S+ \S+)\s+\d+\s+\d+\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", l)
    if m:
        hum[(names[m.group(1)], int(m.group(2)))] = float(m.group(3))
print("| shape | M | 8-bit (path) | 4-bit (path) | 8-bit / 4-bit | Humming int8 bf16 | Humming / 8-bit | cuBLAS bf16 |")
print("|---|---|---|---|---|---|---|---|")
for (shape, m) in sorted(w8, key=lambda k: (["70B.gate_up", "70B.down", "70B.qkv", "70B.o", "8B.qkv", "8B.gate_up"].index(k[0]), k[1])):
    t8, p8, cb = w8[(shape, m)]
    t4, p4, _ = w4[(shape, m)]
    h = hum.get((shape, m))
    hs = f"{h:.1f}" if h else "-"
    hr = f"{h / t8:.2f}x" if h else "-"
    print(f"| {shape} | {m} | {t8:.1f} ({p8}) | {t4:.1f} ({p4}) | {t8 / t4:.2f}x | {hs} | {hr} | {cb:.1f} |")

#!/usr/bin/env python3
"""bench/results/v15/make_table_v15.py -- the tables of bench/results/h200-widths.md (v15) from this folder's raw files:
bench_<wtype>.log (call 1: uint4b8, uint2b2, uint3b4; bw.log), bench2_<wtype>.log (call 2: uint8b128, uint4b8;
bw_peers.log), humming<bits>/humming_peer.json (call 2). % read BW = the bytes an ideal kernel at the layer's width
moves (weights at `bits` per weight + group-128 f16 scales + x + y) over the time, against read16 (plain 16-byte
loads, 243 MB window) of bench_cuda_bw in the same call."""
import json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {"70B.gate_up": (8192, 57344), "70B.down": (28672, 8192), "8B.qkv": (4096, 6144), "8B.gate_up": (4096, 28672)}
HNAME = {"70B.gate_up": "L3-70B gate_up", "70B.down": "L3-70B down", "8B.qkv": "L3-8B qkv", "8B.gate_up": "L3-8B gate_up"}
MS = [1, 16, 64, 256, 1024, 4096]


def bench(name):
    rows = {}
    for line in open(os.path.join(HERE, name)):
        f = line.split()
        if len(f) >= 9 and f[0] in SHAPES:
            rows[(f[0], int(f[1]))] = (float(f[2]), float(f[3]), f[4].replace("cuda_w4a16:", ""))
    return rows


def read16(name):
    txt = open(os.path.join(HERE, name)).read()
    return float(re.findall(r"read16\s+([\d.]+) TB/s", txt)[-1])  # the 243 MB window


def humming(bits):
    p = os.path.join(HERE, f"humming{bits}", "humming_peer.json")
    if not os.path.exists(p):
        return {}
    d = json.load(open(p))
    return {(t["shape"], t["M"]): t["us"] for t in d["timings"] if t["method"] == "humming_bf16"}


def ideal(shape, m, bits):
    k, n = SHAPES[shape]
    return n * k * bits / 8 + n * (k // 128) * 2 + m * k * 2 + m * n * 2


def table(bits, wt, ours, four, bw, hm, call):
    out = [f"### {bits}-bit ({wt}), {call}; read ceiling {bw:.3f} TB/s (read16, same call)", ""]
    for shape in SHAPES:
        out += [f"**{shape}** (K {SHAPES[shape][0]}, N {SHAPES[shape][1]})", "",
                f"| M | mplinear {bits}-bit us (path) | % read BW | Humming int{bits} bf16 us | Humming / mplinear "
                f"| mplinear 4-bit us (same call) | {bits}-bit / 4-bit | cuBLAS bf16 us |",
                "|---|---|---|---|---|---|---|---|"]
        for m in MS:
            if (shape, m) not in ours:
                continue
            b, us, path = ours[(shape, m)]
            pct = ideal(shape, m, bits) / (us * 1e-6) / (bw * 1e12) * 100
            h = hm.get((HNAME[shape], m))
            f4 = four.get((shape, m))
            hs = f"{h:.1f}" if h else "n/a"
            hr = f"{h / us:.2f}" if h else "n/a"
            out.append(f"| {m} | {us:.1f} ({path}) | {pct:.0f}% | {hs} | {hr} | "
                       f"{f4[1]:.1f} ({f4[2]}) | {us / f4[1]:.3f} | {b:.1f} |")
        out.append("")
    return out


def main():
    lines = []
    four1, bw1 = bench("bench_uint4b8.log"), read16("bw.log")
    four2, bw2 = bench("bench2_uint4b8.log"), read16("bw_peers.log")
    h2, h8 = humming(2), humming(8)
    lines += table(8, "uint8b128", bench("bench2_uint8b128.log"), four2, bw2, h8, "call 2 (Humming int8 in the same call)")
    lines += table(2, "uint2b2", bench("bench_uint2b2.log"), four1, bw1, h2, "call 1 (Humming int2 from call 2)")
    lines += table(3, "uint3b4", bench("bench_uint3b4.log"), four1, bw1, {}, "call 1 (no Humming int3: the peer script packs 2, 4, 8 bits)")
    lines += table(4, "uint4b8", four1, four2, bw1, {}, "call 1 (the 4-bit column: call 2's 4-bit run, for the spread)")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

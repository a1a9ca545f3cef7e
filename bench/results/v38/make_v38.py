#!/usr/bin/env python3
"""bench/results/v38/make_v38.py -- the v38 tables (session 45, one H100) from this folder's raw logs:
  peers: our defaults (peers/default_W.log) beside Humming 0.1.19 (peers/hummingB/stdout.log) at M 1..1024;
  wide:  forced wg / wg-streamk / dq and the default at m 257..2048, two turns (wide/wide_W_R.log);
  m1:    M = 1 defaults on the 70B layers against read16 of the same call (m1/m1_W.log, m1/bw.log).
Run: python3 bench/results/v38/make_v38.py [peers|wide|m1]"""
import collections, os, re, sys

D = os.path.dirname(os.path.abspath(__file__))
WIDTHS = [("uint2b2", 2), ("uint3b4", 3), ("uint4b8", 4), ("uint8b128", 8)]
HNAME = {"70B.gate_up": "L3-70B gate_up", "70B.down": "L3-70B down", "8B.qkv": "L3-8B qkv", "8B.gate_up": "L3-8B gate_up"}


def ours_defaults(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) > 5 and f[0] in HNAME and "cuda_w4a16" in line:
            p = next(x for x in f if x.startswith("cuda_w4a16"))
            out[(f[0], int(f[1]))] = (float(f[3]), p.replace("cuda_w4a16:", ""))
    return out


def humming(path):
    out = {}
    for line in open(path).read().split("SUMMARY")[1].splitlines():
        m = re.match(r"(L3-\S+ \S+)\s+\d+\s+\d+\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            out[(m.group(1), int(m.group(2)))] = (float(m.group(3)), float(m.group(4)), float(m.group(5)))
    return out


def peers():
    print("| layer | M | width | mplinear us (path) | Humming bf16 us | Humming fp16 us | cuBLAS bf16 us | Humming best / mplinear |")
    print("|---|---|---|---|---|---|---|---|")
    for w, b in WIDTHS:
        ours = ours_defaults(f"{D}/peers/default_{w}.log")
        hum = humming(f"{D}/peers/humming{b}/stdout.log")
        for (layer, m), (t, p) in ours.items():
            h = hum.get((HNAME[layer], m))
            if not h:
                continue
            best = min(h[0], h[1])
            mark = "**" if best / t >= 1 else ""
            print(f"| {layer} | {m} | {b}-bit | {t:.2f} ({p}) | {h[0]:.1f} | {h[1]:.1f} | {h[2]:.1f} | {mark}{best / t:.2f}{mark} |")


def wide():
    d, path = collections.defaultdict(list), {}
    for w, _ in WIDTHS:
        for r in (1, 2):
            for line in open(f"{D}/wide/wide_{w}_{r}.log"):
                m = re.match(r"sweep (\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us(.*)", line)
                if not m or "cuBLAS" in m.group(3):
                    continue
                k = (w, m.group(1), int(m.group(2)), m.group(3).strip())
                d[k].append(float(m.group(4)))
                pm = re.search(r"\((cuda_w4a16:[^)]*)\)", m.group(5))
                if pm:
                    path[k] = pm.group(1).replace("cuda_w4a16:", "")
    print("| width | layer | M | default (path) | wg | wg-streamk | dq | default / 4-bit default |")
    print("|---|---|---|---|---|---|---|---|")
    for w, b in WIDTHS:
        for layer in ["70B.gate_up", "70B.down", "70B.qkv", "70B.o", "8B.gate_up", "8B.qkv"]:
            for m in [257, 512, 1024, 2048]:
                cells = []
                for s in ["default", "wg", "wg-streamk", "dq"]:
                    v = d.get((w, layer, m, s))
                    cells.append(" / ".join(f"{x:.1f}" for x in v) if v else "-")
                cells[0] += f" ({path.get((w, layer, m, 'default'), '?')})"
                f4 = d.get(("uint4b8", layer, m, "default"))
                r = min(d[(w, layer, m, "default")]) / min(f4)
                print(f"| {b}-bit | {layer} | {m} | " + " | ".join(cells) + f" | {r:.3f} |")


def m1():
    bw = [float(x) for x in re.findall(r"read16\s+([\d.]+) TB/s", open(f"{D}/m1/bw.log").read())]
    windows = [121.6, 243.3, 60.8]  # bench_cuda_bw --quick's order
    copy = 2.88  # the bench's copy bandwidth (its header), which its % copyBW column counts against
    print("| width | layer | M = 1 us | MB moved | TB/s | % of read16 (nearest window) |")
    print("|---|---|---|---|---|---|")
    for w, b in WIDTHS:
        for line in open(f"{D}/m1/m1_{w}.log"):
            m = re.match(r"sweep (70B\.\S+)\s+M=1\s+default\s+([\d.]+) us.*?([\d.]+)% copyBW", line)
            if not m:
                continue
            t, pct = float(m.group(2)), float(m.group(3))
            mb = pct / 100 * copy * 1e12 * t * 1e-6 / 1e6
            wi = min(range(3), key=lambda i: abs(windows[i] - mb))
            tbs = mb / t
            print(f"| {b}-bit | {m.group(1)} | {t:.2f} | {mb:.1f} | {tbs:.3f} | {100 * tbs / bw[wi]:.1f}% ({windows[wi]} MB: {bw[wi]:.3f}) |")


{"peers": peers, "wide": wide, "m1": m1}[sys.argv[1] if len(sys.argv) > 1 else "peers"]()

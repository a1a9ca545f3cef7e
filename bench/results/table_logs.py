"""bench/results/table_logs.py -- readers of the raw device logs that the make_table_v*.py scripts under bench/results/
share: bench_cuda_w4a16 default and --sweep lines, Humming's peer summary (bench/cuda/humming_peer.py) and bench_cuda_bw's
read16; and the share of read16 an M = 1 time reaches."""
import collections
import os
import re


def defaults(*paths):
    """{(shape, M): (us, path, cuBLAS us)} from bench_cuda_w4a16's default lines, the fastest over the logs given."""
    out = {}
    for path in paths:
        for line in open(path):
            f = line.split()
            if len(f) >= 5 and f[4].startswith("cuda_w4a16:"):
                k, t = (f[0], int(f[1])), float(f[3])
                if k not in out or t < out[k][0]:
                    out[k] = (t, f[4].split(":")[1], float(f[2]))
    return out


def sweep(path):
    """{(shape, M): {set: us}} from bench_cuda_w4a16 --sweep lines (cuBLAS lines left out), in the log's order."""
    out = collections.OrderedDict()
    for line in open(path):
        m = re.match(r"sweep (\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us", line)
        if m and "cuBLAS" not in m.group(3):
            out.setdefault((m.group(1), int(m.group(2))), {})[m.group(3).strip()] = float(m.group(4))
    return out


def humming(path):
    """{(shape, M): us} of Humming bf16 from the SUMMARY table of humming_peer.py's stdout."""
    out, on = {}, False
    for line in open(path):
        if line.startswith("SUMMARY"):
            on = True
            continue
        m = re.match(r"L3-(\S+) (\S+)\s+\d+\s+\d+\s+(\d+)\s+([\d.]+)", line) if on else None
        if m:
            out[(m.group(1) + "." + m.group(2), int(m.group(3)))] = float(m.group(4))
    return out


def read16(path):
    """The best read16 figure (TB/s) in a bench_cuda_bw log."""
    return max(float(x) for x in re.findall(r"read16\s+([\d.]+) TB/s", open(path).read()))


def read16_windows(path):
    """{window MB: read16 TB/s} of a bench_cuda_bw log."""
    out, win = {}, None
    for line in open(path):
        m = re.match(r"window ([\d.]+) MB", line)
        if m:
            win = float(m.group(1))
        m = re.match(r"\s+read16\s+([\d.]+) TB/s", line)
        if m:
            out[win] = float(m.group(1))
    return out


def ideal_bytes(k, n, bits):
    """The bytes an ideal kernel moves at M = 1: weights at `bits`, one f16 scale per 128 weights, bf16 x and y."""
    return k * n * bits / 8 + n * k / 128 * 2 + 2 * k + 2 * n


def pct_read16(k, n, bits, us, r16):
    """An M = 1 time's share of read16 (TB/s), as "74%": ideal_bytes over the time."""
    return "%.0f%%" % (100 * ideal_bytes(k, n, bits) / (us * 1e-6) / (r16 * 1e12))


def ab_best(paths):
    """{(config, shape, M): {version: best us, "path": the new build's path}} over A/B logs named
    PREFIX_VERSION_CONFIG_ROUND.log (bench/cuda/ab_table.py's naming), the best of the turns per version."""
    best = {}
    for f in paths:
        _, v, cfg, _r = os.path.basename(f)[:-4].split("_")
        for k, (t, p, _) in defaults(f).items():
            d = best.setdefault((cfg,) + k, {})
            d[v] = min(d.get(v, 1e9), t)
            if v == "new":
                d["path"] = p
    return best

"""bench/results/table_logs.py -- readers of the raw device logs that the make_table_v*.py scripts under bench/results/
share: bench_cuda_w4a16 default lines, Humming's peer summary (bench/cuda/humming_peer.py) and bench_cuda_bw's read16."""
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

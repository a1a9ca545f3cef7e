"""What a Python apply costs over the C call: one 4096 x 4096 layer (uint4b8, group 128, bf16), M = 1.

    python python/bench/overhead.py [--k 4096] [--n 4096] [--reps 2000] [--rounds 3] [--threads 1]

Builds apply_c.c (beside this file) with cc against the header and libmplinear.so of the installed
package, so both sides run the same library, config and kernel. Each side times every call alone on
the monotonic clock (C: clock_gettime; Python: time.perf_counter_ns around the call) and reports the
median; C and Python runs alternate for --rounds rounds and the median of the round medians is
printed. m = 0 (an apply that returns at once) isolates the fixed cost of the binding; m = 1 is the
decode call the issue's 5 us budget is about. Weights are warm (one layer): this measures call
overhead, not bandwidth (`mplinear bench` does that with cold weights).
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

import mplinear


def build_c(tmp):
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(tmp, "apply_c")
    lib = mplinear.library_path()
    # The packaged file keeps the library's SONAME (libmplinear.so.<major>.<minor>), which the program
    # then asks for: a link of that name beside it, found through the rpath.
    soname = subprocess.run(["objdump", "-p", lib], capture_output=True, text=True).stdout.split("SONAME")[1].split()[0]
    os.symlink(lib, os.path.join(tmp, soname))
    subprocess.run(["cc", "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-I", os.path.dirname(mplinear.header_path()),
                    os.path.join(here, "apply_c.c"), "-o", exe, lib, f"-Wl,-rpath,{tmp}"], check=True)
    return exe


def c_median(exe, k, n, m, reps, threads):
    out = subprocess.run([exe, str(k), str(n), str(m), str(reps), str(threads)], check=True, capture_output=True,
                         text=True).stdout.split()
    return out[0], float(out[1]) / 1e3


def py_median(fn, reps):
    for _ in range(50):
        fn()
    t = []
    clock = time.perf_counter_ns
    for _ in range(reps):
        t0 = clock()
        fn()
        t.append(clock() - t0)
    return statistics.median(t) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    k, n = a.k, a.n
    rng = np.random.default_rng(0)
    cfg = mplinear.Config(k=k, n=n, wtype="uint4b8", act="bf16", group_size=128)
    tensors = {"layout": "gptq", "weight": rng.integers(-2 ** 31, 2 ** 31, size=(k // 8, n), dtype=np.int64).astype(np.int32),
               "scales": np.full((k // 128, n), 0x3C24, np.uint16)}  # bf16 0.01 as raw bits
    layer = mplinear.Layer(cfg, tensors, threads=a.threads)
    x1 = (np.arange(k) % 7).astype(np.uint16).reshape(1, k) | np.uint16(0x3F80)  # bf16 values in [1, 2)
    x0 = np.zeros((0, k), np.uint16)
    cases = {"numpy m=1": lambda: layer.apply(x1), "numpy m=0": lambda: layer.apply(x0)}
    out1 = np.empty((1, n), np.uint16)
    cases["numpy m=1 out="] = lambda: layer.apply(x1, out=out1)
    try:
        import torch

        import mplinear.torch as mt

        t1 = torch.from_numpy(x1.view(np.int16)).view(torch.bfloat16)
        lin = mt.QuantLinear(layer)
        cases["torch m=1"] = lambda: layer.apply(t1)
        cases["torch.ops.mplinear.apply m=1"] = lambda: torch.ops.mplinear.apply(t1, lin.layer_id, n, None)
        cases["QuantLinear m=1"] = lambda: lin(t1)
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_c(tmp)
        res = {"C m=1": [], "C m=0": [], **{c: [] for c in cases}}
        for _ in range(a.rounds):
            kern, t = c_median(exe, k, n, 1, a.reps, a.threads)
            res["C m=1"].append(t)
            res["C m=0"].append(c_median(exe, k, n, 0, a.reps, a.threads)[1])
            for c, fn in cases.items():
                res[c].append(py_median(fn, a.reps))
    med = {c: statistics.median(v) for c, v in res.items()}
    print(f"layer {k} x {n} uint4b8 g128 bf16, kernel {kern} (path {layer.path(1)}), threads {layer.threads}, "
          f"{a.reps} calls x {a.rounds} rounds, median of round medians")
    print(f"{'call':34s} {'median us':>10s} {'over C us':>10s}")
    for c, v in med.items():
        base = med["C m=0"] if "m=0" in c else med["C m=1"]
        over = "" if c.startswith("C ") else f"{v - base:10.2f}"
        print(f"{c:34s} {v:10.2f} {over:>10s}")


if __name__ == "__main__":
    main()

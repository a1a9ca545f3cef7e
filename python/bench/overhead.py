"""What a Python apply costs over the C call: one 4096 x 4096 layer (uint4b8, group 128, bf16), M = 1.

    python python/bench/overhead.py [--k 4096] [--n 4096] [--m 1] [--reps 2000] [--threads 1] [--json FILE]

The C side runs in this same process: apply_c.c (beside this file) is compiled with cc into a small
shared object and loaded with ctypes; its mplb_time_apply times one mpl_layer_apply on the monotonic
clock, called through the address of the very mpl_layer_apply the package loaded, on the very layer
handle, input and output buffers the Python calls use. Each rep is one round: the C call and every Python
path once, in an order shuffled anew each round, each timed alone (C: clock_gettime inside C; Python:
time.perf_counter_ns around the call). Interleaving puts slow drifts of the kernel's own time (other work
on the machine, clock frequency, cache state) on both sides alike. Printed per path: the median of its
times, and the median of its per-round difference to that round's C call (the overhead; the issue's
budget is 5 us at M = 1).

Paths: numpy Layer.apply (output allocated; and with out=), torch Layer.apply (CPU tensor; and with out=),
torch.ops.mplinear.apply, QuantLinear.forward (through nn.Module.__call__) and the vLLM plugin's
apply_weights (its kernel class over a stand-in of vLLM's base class; the same call vLLM makes).
The header line says whether Layer.apply is the compiled mplinear._fast or the ctypes path
(MPLINEAR_NO_EXT=1 forces the latter). --m 0 isolates the binding's fixed cost (an apply that returns at
once). Weights stay warm (one layer): this measures call overhead, not bandwidth (`mplinear bench` does that with cold weights).
"""
import argparse
import ctypes
import json
import os
import platform
import random
import statistics
import subprocess
import tempfile
import time

import numpy as np

import mplinear
from mplinear import _lib


def build_c(tmp):
    """apply_c.c -> a shared object loaded into this process (no link against libmplinear: the C side calls
    the library the package loaded, through the function address it is given)."""
    here = os.path.dirname(os.path.abspath(__file__))
    so = os.path.join(tmp, "apply_c.so")
    subprocess.run(["cc", "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-shared", "-fPIC", "-I",
                    os.path.dirname(mplinear.header_path()), os.path.join(here, "apply_c.c"), "-o", so], check=True)
    c = ctypes.CDLL(so)
    f = c.mplb_time_apply
    f.restype = ctypes.c_int64
    f.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] + [ctypes.c_void_p] * 3
    return c, f


def cases_for(layer, k, n, m):
    x = ((np.arange(max(m, 1) * k) % 7).astype(np.uint16).reshape(max(m, 1), k) | np.uint16(0x3F80))[:m]  # bf16 [1, 2)
    raw, h = layer._apply_fn, layer._h
    xp = x.ctypes.data
    cases = {}
    out = np.empty((m, n), np.uint16)
    yp = out.ctypes.data
    # the ctypes call alone, addresses precomputed: the floor of any Python path
    cases["ctypes mpl_layer_apply"] = lambda: raw(h, m, xp, None, yp)
    cases["numpy Layer.apply"] = lambda: layer.apply(x)
    cases["numpy Layer.apply(out=)"] = lambda: layer.apply(x, out=out)
    keep = [x, out]
    try:
        import torch

        import mplinear.torch as mt
        from mplinear import vllm_plugin
    except ImportError:
        return x, out, cases, keep
    t = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    lin = mt.QuantLinear(layer)
    lid = lin.layer_id
    op = torch.ops.mplinear.apply
    tout = t.new_empty(m, n)
    cases["torch Layer.apply"] = lambda: layer.apply(t)
    cases["torch Layer.apply(out=)"] = lambda: layer.apply(t, out=tout)
    cases["torch.ops.mplinear.apply"] = lambda: op(t, lid, n, None)
    cases["QuantLinear.forward"] = lambda: lin(t)

    class Base:  # the two attributes of vLLM's MPLinearKernel that apply_weights reads
        def __init__(self, c, w_q_param_name, w_s_param_name, w_zp_param_name=None):
            self.config, self.w_q_name, self.w_s_name = c, w_q_param_name, w_s_param_name
            self.w_zp_name = w_zp_param_name

    kern = vllm_plugin.make_kernel_class(Base)(None, "weight_packed", "weight_scale")
    vlayer = torch.nn.Module()
    vlayer.mplinear_layer, vlayer.mplinear_id = layer, lid
    cases["vLLM apply_weights"] = lambda: kern.apply_weights(vlayer, t, None)
    keep += [t, tout, lin, kern, vlayer]
    return x, out, cases, keep


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--m", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0, help="of the per-round order of the calls")
    ap.add_argument("--json", default=None, help="also write the medians to this file")
    a = ap.parse_args()
    k, n, m = a.k, a.n, a.m
    rng = np.random.default_rng(0)
    cfg = mplinear.Config(k=k, n=n, wtype="uint4b8", act="bf16", group_size=128)
    words = rng.integers(-2 ** 31, 2 ** 31, size=(k // 8, n), dtype=np.int64).astype(np.int32)
    tensors = {"layout": "gptq", "weight": words,
               "scales": np.full((k // 128, n), 0x3C24, np.uint16)}  # bf16 0.01 as raw bits
    layer = mplinear.Layer(cfg, tensors, threads=a.threads)
    x, out, cases, _keep = cases_for(layer, k, n, m)
    with tempfile.TemporaryDirectory() as tmp:
        _so, time_c = build_c(tmp)
        apply_addr = ctypes.cast(_lib.lib.mpl_layer_apply, ctypes.c_void_p).value
        h, xp, yp = layer._h, x.ctypes.data, out.ctypes.data

        def c_call():
            t = time_c(apply_addr, h, m, xp, None, yp)
            if t < 0:
                raise RuntimeError(f"mpl_layer_apply failed: {_lib.lib.mpl_last_error().decode()}")
            return t

        fns = list(cases.values())
        for _ in range(a.warmup):
            c_call()
            for fn in fns:
                fn()
        clock = time.perf_counter_ns
        tc = []
        tp = [[] for _ in fns]
        order = list(range(-1, len(fns)))  # -1: the C call
        shuffle = random.Random(a.seed).shuffle
        for _ in range(a.reps):
            shuffle(order)  # a new order each round: no path always runs first, or right after another
            for i in order:
                if i < 0:
                    tc.append(c_call())
                    continue
                fn = fns[i]
                t0 = clock()
                fn()
                tp[i].append(clock() - t0)
    us = 1e-3
    rows = [("C mpl_layer_apply", statistics.median(tc) * us, None)]
    for name, t in zip(cases, tp):
        rows.append((name, statistics.median(t) * us, statistics.median([p - c for p, c in zip(t, tc)]) * us))
    print(f"layer {k} x {n} uint4b8 g128 bf16, m = {m}, kernel {layer.kernel} (path {layer.path(max(m, 1))}), "
          f"threads {layer.threads}, {a.reps} rounds (C call + each Python path once per round, shuffled), one process")
    binding = "ctypes (MPLINEAR_NO_EXT)" if os.environ.get("MPLINEAR_NO_EXT", "") not in ("", "0") else "ctypes"
    fast = getattr(mplinear, "_fast", None)
    if fast is not None:
        binding = f"compiled {os.path.basename(fast.__file__)}"
    print(f"mplinear {mplinear.version()} ({mplinear.__file__}; Layer.apply: {binding}), Python {platform.python_version()}, numpy {np.__version__}"
          + (f", torch {__import__('torch').__version__}" if "torch Layer.apply" in cases else ""))
    print(f"{'call':28s} {'median us':>10s} {'median of (call - C) us':>24s}")
    for name, med, over in rows:
        print(f"{name:28s} {med:10.2f} {'' if over is None else f'{over:+.2f}':>24s}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"k": k, "n": n, "m": m, "reps": a.reps, "threads": layer.threads, "kernel": layer.kernel,
                       "rows": [{"call": r[0], "median_us": r[1], "over_c_us": r[2]} for r in rows]}, f, indent=1)


if __name__ == "__main__":
    main()

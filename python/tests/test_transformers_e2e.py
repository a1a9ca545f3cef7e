"""transformers end to end: a random Llama (hidden 256, 2 layers) quantized and saved as a
compressed-tensors pack-quantized checkpoint, every quantized linear replaced by mplinear's
QuantLinear, against the same model run on its own dequantized weights.

Quantizer: llm-compressor's GPTQ (oneshot, CPU) when llmcompressor imports, else a round-to-nearest
written here that saves the same format (MPL_E2E_QUANTIZER=rtn forces it, =llmcompressor demands the
real one). Two schemes: W4A16 symmetric group 128, and asymmetric group 64.

Checks, per scheme:
  * the checkpoint folder read by mplinear.Model (the C reader) and by QuantLinear.from_compressed_tensors
    (tensors from safetensors) give bit-identical logits (same kernel, same weights);
  * logits against the dequantized-weight model: both are fp32 computations of the same float64
    function; every fp32 dot product of length K has |err| <= (K + 4) 2^-24 sum|x||w| (torch's GEMM and
    mplinear's kernels alike), so mplinear's distance to the float64 model must be of the size of
    torch's own fp32 distance to it: at most 8x it (summation orders differ, not the bound), plus 2^-20
    of the logits' scale for the case where torch's error happens to be tiny;
  * greedy generation of 32 tokens identical.
"""
import json
import os
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

import mplinear  # noqa: E402
import mplinear.torch as mt  # noqa: E402
from packing import pack  # noqa: E402

HIDDEN, INTER, LAYERS, VOCAB = 256, 512, 2, 128
SCHEMES = {"w4a16-g128": dict(symmetric=True, group_size=128), "w4a16-asym-g64": dict(symmetric=False, group_size=64)}


def report(line):
    """Printed, and appended to $MPL_E2E_REPORT when set (python/ci.sh prints that file)."""
    print(line)
    path = os.environ.get("MPL_E2E_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def tiny_llama(seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTER, num_hidden_layers=LAYERS,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = LlamaForCausalLM(cfg).float().eval()
    with torch.no_grad():  # transformers' init (std 0.02) gives near-uniform logits: widen them so greedy
        for name, p in model.named_parameters():  # decoding has clear winners
            if name.endswith("lm_head.weight") or name.endswith("embed_tokens.weight"):
                p.normal_(0, 1.0)
            elif p.ndim == 2:
                p.normal_(0, 1.0 / p.shape[1] ** 0.5)
    return model


def calibration(n=8, length=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (n, length), generator=g)


def quantize_llmcompressor(model, out, symmetric, group_size):
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import GPTQModifier

    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    # oneshot wants a processor even for a tokenized dataset: a word-level one over the vocabulary
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(
        vocab={f"w{i}": i for i in range(VOCAB)}, unk_token="w3")), unk_token="w3", pad_token="w0",
        bos_token="w1", eos_token="w2")
    # oneshot re-reads the model's config from model.config.name_or_path: give it a folder
    src = out + "-fp"
    model.save_pretrained(src)
    model = type(model).from_pretrained(src, dtype=torch.float32).eval()
    ids = calibration()
    ds = Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": torch.ones_like(ids).tolist()})
    scheme = QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(
        num_bits=4, type="int", symmetric=symmetric, strategy="group", group_size=group_size))
    oneshot(model=model, dataset=ds, recipe=GPTQModifier(config_groups={"group_0": scheme}, ignore=["lm_head"]),
            num_calibration_samples=len(ds), max_seq_length=ids.shape[1], pipeline="basic", processor=tok)
    model.save_pretrained(out, save_compressed=True)


def quantize_rtn(model, out, symmetric, group_size):
    """Round to nearest with compressed-tensors' rules (scale = absmax / 7.5 symmetric, range / 15 with a zero
    point otherwise), written in its pack-quantized format: stored code = q + 8, zeros likewise shifted."""
    sd = {}
    for name, mod in model.named_modules():
        if not isinstance(mod, torch.nn.Linear) or name.endswith("lm_head"):
            continue
        w = mod.weight.detach().double()
        n, k = w.shape
        g = w.reshape(n, k // group_size, group_size)
        if symmetric:
            scale = (g.abs().amax(-1) / 7.5).float()
            q = torch.clamp(torch.round(g / scale.double()[..., None]), -8, 7) + 8
            zeros = None
        else:
            lo, hi = torch.clamp(g.amin(-1), max=0), torch.clamp(g.amax(-1), min=0)
            scale = ((hi - lo) / 15).float()
            z = torch.clamp(torch.round(-lo / scale.double()), 0, 15)
            q = torch.clamp(torch.round(g / scale.double()[..., None]) + z[..., None], 0, 15)
            zeros = z.long().numpy()
        codes = q.reshape(n, k).long().numpy()
        t = pack("ct", 4, codes, scale.numpy(), zeros)
        sd[name + ".weight_packed"] = torch.from_numpy(t["weight"])
        sd[name + ".weight_scale"] = scale
        sd[name + ".weight_shape"] = torch.tensor([n, k])
        if zeros is not None:
            sd[name + ".weight_zero_point"] = torch.from_numpy(t["zeros"])
    for name, p in model.state_dict().items():
        mod = name.rsplit(".", 1)[0]
        if mod + ".weight_packed" not in sd:
            sd[name] = p.contiguous()
    os.makedirs(out, exist_ok=True)
    safetensors_torch.save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    cfg = model.config.to_dict()
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 4, "type": "int", "symmetric": symmetric, "strategy": "group", "group_size": group_size,
            "dynamic": False}, "input_activations": None}}, "ignore": ["lm_head"]}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)


def quantizer():
    want = os.environ.get("MPL_E2E_QUANTIZER", "")
    if want == "rtn":
        return "rtn"
    try:
        import llmcompressor  # noqa: F401

        return "llmcompressor"
    except Exception as e:  # noqa: BLE001
        if want == "llmcompressor":
            raise
        print(f"llmcompressor not importable ({e!r}): RTN quantizer")
        return "rtn"


def load_state(out):
    sd = {}
    for f in sorted(os.listdir(out)):
        if f.endswith(".safetensors"):
            sd.update(safetensors_torch.load_file(os.path.join(out, f)))
    return sd


def dequantize_ct(sd, prefix, symmetric):
    """W [N, K] float64 from the pack-quantized tensors: scale * (q - z) (sym: q stored + 8)."""
    wp = sd[prefix + ".weight_packed"].numpy().view(np.uint32)
    n = wp.shape[0]
    codes = np.stack([(wp >> (4 * i)) & 15 for i in range(8)], axis=-1).reshape(n, -1).astype(np.int64)
    k = int(sd[prefix + ".weight_shape"][1]) if prefix + ".weight_shape" in sd else codes.shape[1]
    codes = codes[:, :k]
    scale = sd[prefix + ".weight_scale"].double().numpy()
    gs = k // scale.shape[1]
    if symmetric:
        zeros = np.full(scale.shape, 8, np.int64)
    else:
        zp = sd[prefix + ".weight_zero_point"].numpy().view(np.uint32)
        zeros = np.stack([(zp >> (4 * i)) & 15 for i in range(8)], axis=1).reshape(-1, zp.shape[1])[:n]
    gi = np.arange(k) // gs
    return scale[:, gi] * (codes - zeros[:, gi].astype(np.int64))


def base_model(out, sd):
    """The checkpoint's architecture with its unquantized tensors (embeddings, norms, lm_head) loaded."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    cfg.pop("quantization_config", None)
    model = LlamaForCausalLM(LlamaConfig(**cfg)).float().eval()
    plain = {k: v.float() for k, v in sd.items() if k in dict(model.named_parameters()) or k in model.state_dict()}
    model.load_state_dict(plain, strict=False)
    return model


def quantized_prefixes(sd):
    return sorted(k[: -len(".weight_packed")] for k in sd if k.endswith(".weight_packed"))


def set_module(model, name, new):
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent), child, new)


@pytest.fixture(scope="module", params=sorted(SCHEMES))
def checkpoint(request, tmp_path_factory):
    scheme = SCHEMES[request.param]
    out = str(tmp_path_factory.mktemp(request.param))
    q = quantizer()
    t0 = time.perf_counter()
    model = tiny_llama()
    (quantize_llmcompressor if q == "llmcompressor" else quantize_rtn)(model, out, **scheme)
    report(f"{request.param}: quantized with {q} in {time.perf_counter() - t0:.1f} s")
    return request.param, scheme, out, q


def test_end_to_end(checkpoint):
    name, scheme, out, q = checkpoint
    sd = load_state(out)
    prefixes = quantized_prefixes(sd)
    assert len(prefixes) == 7 * LAYERS, prefixes

    # reference: the model on its own dequantized weights (fp32), and the same in float64
    ref = base_model(out, sd)
    for p in prefixes:
        lin = ref.get_submodule(p)
        lin.weight.data = torch.from_numpy(dequantize_ct(sd, p, scheme["symmetric"])).float()
    ref64 = base_model(out, sd).double()
    for p in prefixes:
        ref64.get_submodule(p).weight.data = torch.from_numpy(dequantize_ct(sd, p, scheme["symmetric"]))

    # mplinear, two ways: QuantLinear from the tensors, and replace_linears over the folder (the C reader)
    a = base_model(out, sd)
    for p in prefixes:
        set_module(a, p, mt.QuantLinear.from_compressed_tensors(
            sd[p + ".weight_packed"], sd[p + ".weight_scale"], sd[p + ".weight_shape"],
            sd.get(p + ".weight_zero_point"), dtype=torch.float32))
    b = base_model(out, sd)
    with mplinear.Model(out) as m:
        assert m.quant_method == "compressed-tensors"
        # the library lists layers in forward order (include/mplinear.h, mpl_model_layer_count): by block,
        # then Llama's projection order
        proj = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        assert [li.name for li in m.layers] == sorted(
            prefixes, key=lambda s: (int(s.split(".")[2]), proj.index(s.rsplit(".", 1)[1])))
        cfg = m.info(prefixes[0]).config
        assert cfg.group_size == scheme["group_size"] and cfg.zero_points == (not scheme["symmetric"])
        assert sorted(mt.replace_linears(b, m, dtype=torch.float32)) == prefixes
    kernels = {mod.layer.kernel for mod in a.modules() if isinstance(mod, mt.QuantLinear)}
    assert all(isinstance(a.get_submodule(p), mt.QuantLinear) for p in prefixes)

    ids = calibration(n=2, length=24, seed=7)
    with torch.no_grad():
        la, lb = a(ids).logits, b(ids).logits
        lref, l64 = ref(ids).logits, ref64(ids).logits.float()
    assert torch.equal(la, lb), "tensor route and folder route differ"
    err_mpl = (la - l64).abs().max().item()
    err_ref = (lref - l64).abs().max().item()
    scale = l64.abs().max().item()
    tol = 8 * err_ref + 2.0 ** -20 * scale
    report(f"{name} ({q}; kernels {sorted(kernels)}): max|logits| {scale:.3g}, mplinear vs float64 {err_mpl:.3g}, "
          f"torch fp32 vs float64 {err_ref:.3g}, bound {tol:.3g}, mplinear vs torch fp32 "
          f"{(la - lref).abs().max().item():.3g}")
    assert err_mpl <= tol

    prompt = calibration(n=1, length=8, seed=11)
    gen = dict(max_new_tokens=32, min_new_tokens=32, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        ta = a.generate(prompt, **gen)
        tr = ref.generate(prompt, **gen)
    assert ta.shape[1] == prompt.shape[1] + 32
    assert torch.equal(ta, tr), f"greedy tokens differ:\n{ta}\n{tr}"
    report(f"{name}: 32 greedy tokens identical: {ta[0, 8:].tolist()}")

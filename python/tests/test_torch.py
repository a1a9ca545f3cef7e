"""torch: Layer on torch tensors, torch.ops.mplinear.apply (opcheck, torch.compile) and QuantLinear from
GPTQ / AWQ / compressed-tensors tensors. Exact comparisons as in test_numpy.py (integer x, scales
i * 2^-8): every result below is bit-exact against the float64 oracle rounded once."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mplinear  # noqa: E402
import mplinear.torch as mt  # noqa: E402
from packing import dequantize, pack, random_layer, wtype_bits  # noqa: E402


def tensors(layout, wtype, k, n, group_size, act_order=False, seed=0, scale_dtype=torch.float32):
    rng = np.random.default_rng(seed)
    codes, scales, zeros, g_idx = random_layer(rng, k, n, wtype, group_size, act_order)
    t = pack(layout, wtype_bits(wtype), codes, scales, zeros, g_idx)
    tt = {key: (v if isinstance(v, str) else torch.from_numpy(np.ascontiguousarray(v))) for key, v in t.items()}
    tt["scales"] = tt["scales"].to(scale_dtype)
    w = torch.from_numpy(dequantize(codes, scales, zeros, g_idx, wtype, group_size))
    return tt, w


def int_x(shape, dtype, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-4, 5, shape, generator=g).to(dtype)


def oracle(x, w, bias=None):
    y = x.double() @ w.T
    if bias is not None:
        y = y + bias.double()
    return y.to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_layer_torch_tensors(dtype):
    t, w = tensors("gptq", "uint4", 256, 48, 64, scale_dtype=dtype)
    act = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    layer = mplinear.Layer(mplinear.Config(k=256, n=48, wtype="uint4", act=act, group_size=64, zero_points=True), t)
    x = int_x((3, 256), dtype)
    bias = torch.arange(48).to(dtype) / 4
    y = layer.apply(x, bias)
    assert isinstance(y, torch.Tensor) and y.dtype == dtype and y.shape == (3, 48)
    assert torch.equal(y, oracle(x, w, bias))
    out = torch.empty(3, 48, dtype=dtype)
    assert layer.apply(x, bias, out=out) is out
    with pytest.raises(mplinear.InvalidArgument, match="dtype"):
        layer.apply(x.double())


def test_op_registered_and_opcheck():
    assert hasattr(torch.ops.mplinear, "apply")
    t, w = tensors("ct", "uint4b8", 128, 32, 32)
    lin = mt.QuantLinear(mplinear.Layer(mplinear.Config(k=128, n=32, act="f32", group_size=32), t))
    x = int_x((2, 5, 128), torch.float32)
    y = torch.ops.mplinear.apply(x, lin.layer_id, 32, None)
    assert y.shape == (2, 5, 32) and torch.equal(y, oracle(x, w))
    # schema, fake (meta) kernel against the real one, and dispatch consistency
    torch.library.opcheck(torch.ops.mplinear.apply.default, (x, lin.layer_id, 32, None),
                          test_utils=("test_schema", "test_faketensor"))
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fy = torch.ops.mplinear.apply(torch.empty(7, 128), lin.layer_id, 32, None)
        assert fy.shape == (7, 32)
    with pytest.raises(mplinear.InvalidArgument, match="layer id"):
        torch.ops.mplinear.apply(x, 10 ** 9, 32, None)


@pytest.mark.parametrize("fmt", ["gptq", "gptq_v2", "gptq_sym_actorder", "awq", "ct", "ct_asym", "ct_8bit",
                                 "gptq_3bit_asym", "ct_2bit", "ct_3bit_asym"])
def test_quantlinear_constructors(fmt):
    k, n, gs = 256, 64, 32
    dtype = torch.float16
    if fmt in ("gptq", "gptq_v2"):
        t, w = tensors("gptq" if fmt == "gptq" else "gptq-v2", "uint4", k, n, gs, scale_dtype=dtype)
        lin = mt.QuantLinear.from_gptq(t["weight"], t["scales"], t["zeros"], bits=4, group_size=gs, sym=False,
                                       checkpoint_format=fmt)
    elif fmt == "gptq_sym_actorder":
        t, w = tensors("gptq", "uint4b8", k, n, gs, act_order=True, scale_dtype=dtype)
        qzeros = torch.full((k // gs, n // 8), 0x77777777, dtype=torch.int32)  # what symmetric GPTQ stores
        lin = mt.QuantLinear.from_gptq(t["weight"], t["scales"], qzeros, t["g_idx"], bits=4, group_size=gs,
                                       sym=True, desc_act=True)
        assert lin.layer.config.act_order
    elif fmt == "awq":
        t, w = tensors("awq", "uint4", k, n, gs, scale_dtype=dtype)
        lin = mt.QuantLinear.from_awq(t["weight"], t["scales"], t["zeros"], group_size=gs)
    elif fmt == "ct":
        t, w = tensors("ct", "uint4b8", k, n, gs, scale_dtype=dtype)
        lin = mt.QuantLinear.from_compressed_tensors(t["weight"], t["scales"], torch.tensor([n, k]))
    elif fmt == "ct_asym":
        t, w = tensors("ct", "uint4", k, n, gs, scale_dtype=dtype)
        lin = mt.QuantLinear.from_compressed_tensors(t["weight"], t["scales"], torch.tensor([n, k]), t["zeros"])
    elif fmt == "gptq_3bit_asym":
        t, w = tensors("gptq", "uint3", k, n, gs, scale_dtype=dtype)
        lin = mt.QuantLinear.from_gptq(t["weight"], t["scales"], t["zeros"], bits=3, group_size=gs, sym=False)
    elif fmt == "ct_2bit":
        t, w = tensors("ct", "uint2b2", k, n, gs, scale_dtype=dtype)
        lin = mt.QuantLinear.from_compressed_tensors(t["weight"], t["scales"], torch.tensor([n, k]), num_bits=2)
    elif fmt == "ct_3bit_asym":
        t, w = tensors("ct", "uint3", k, n, gs, scale_dtype=dtype)
        lin = mt.QuantLinear.from_compressed_tensors(t["weight"], t["scales"], torch.tensor([n, k]), t["zeros"],
                                                     num_bits=3)
    else:
        t, w = tensors("ct", "uint8b128", k, n, -1, scale_dtype=dtype)
        lin = mt.QuantLinear.from_compressed_tensors(t["weight"], t["scales"], num_bits=8)
    assert (lin.in_features, lin.out_features) == (k, n)
    x = int_x((4, k), dtype)
    assert torch.equal(lin(x), oracle(x, w))
    # forward casts other dtypes to the layer's and back
    y32 = lin(x.float())
    assert y32.dtype == torch.float32 and torch.equal(y32, oracle(x, w).float())


def test_quantlinear_bias_and_compile():
    t, w = tensors("ct", "uint4", 128, 64, 64)
    bias = torch.arange(64, dtype=torch.float32) / 8
    lin = mt.QuantLinear.from_compressed_tensors(t["weight"], t["scales"], None, t["zeros"], bias=bias)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return torch.relu(self.lin(x)) * 2

    net = Net()
    x = int_x((3, 128), torch.float32)
    want = torch.relu(oracle(x, w, bias)) * 2
    assert torch.equal(net(x), want)
    # fullgraph: the op must trace (fake kernel) without a graph break; aot_eager runs the traced graph.
    compiled = torch.compile(net, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(x), want)
    graphs = []

    def record(gm, example_inputs):  # a backend that keeps the graph Dynamo traced
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    assert torch.equal(torch.compile(net, backend=record, fullgraph=True)(x), want)
    assert len(graphs) == 1 and any("mplinear" in str(nd.target) for nd in graphs[0].graph.nodes)


def test_model_layers_replace_linears(tmp_path):
    """replace_linears over a checkpoint folder written here in the compressed-tensors format."""
    pytest.importorskip("safetensors")
    import json

    from safetensors.torch import save_file

    k, n = 128, 32
    t, w = tensors("ct", "uint4", k, n, 32)
    sd = {"proj.weight_packed": t["weight"], "proj.weight_scale": t["scales"].to(torch.bfloat16),
          "proj.weight_zero_point": t["zeros"], "proj.weight_shape": torch.tensor([n, k]),
          "proj.bias": torch.arange(n, dtype=torch.bfloat16)}
    save_file(sd, str(tmp_path / "model.safetensors"))
    qc = {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "num_bits": 4, "type": "int", "symmetric": False, "strategy": "group", "group_size": 32,
              "dynamic": False}}}, "ignore": []}
    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16", "quantization_config": qc}))
    net = torch.nn.Sequential()
    net.add_module("proj", torch.nn.Linear(k, n))
    assert mt.replace_linears(net, str(tmp_path), dtype=torch.float32) == ["proj"]
    assert isinstance(net.proj, mt.QuantLinear)
    x = int_x((2, k), torch.float32)
    wb = dequantize(*_ct_back(t), "uint4", 32)  # the same weights with bf16-rounded scales (exact here)
    assert torch.equal(net(x), oracle(x, torch.from_numpy(wb), torch.arange(n, dtype=torch.float32)))


def _ct_back(t):
    """codes, scales, zeros, g_idx back from ct tensors (the inverse of packing.pack, for the test above)."""
    wp = t["weight"].numpy().view(np.uint32)
    n = wp.shape[0]
    codes = np.stack([(wp >> (4 * i)) & 15 for i in range(8)], axis=-1).reshape(n, -1)
    zp = t["zeros"].numpy().view(np.uint32)
    zeros = np.stack([(zp >> (4 * i)) & 15 for i in range(8)], axis=1).reshape(-1, zp.shape[1])[:n]
    return codes, t["scales"].to(torch.bfloat16).float().numpy(), zeros, None


def test_layer_torch_shape_cache_and_checks():
    """The torch path checks a shape once and then looks it up: every shape, and the checks that are not
    cached (dtype, device, contiguity, out=), still hold after a shape is cached."""
    t, w = tensors("gptq", "uint4b8", 128, 32, 32)
    layer = mplinear.Layer(mplinear.Config(k=128, n=32, act="f32", group_size=32), t)
    for shape in [(1, 128), (5, 128), (128,), (2, 3, 128), (0, 128), (1, 128)]:
        x = int_x(shape, torch.float32)
        y = layer.apply(x)
        assert y.shape == shape[:-1] + (32,) and torch.equal(y, oracle(x, w))
    x = int_x((4, 256), torch.float32)[:, ::2]  # non-contiguous, shape (4, 128)
    assert torch.equal(layer.apply(x), oracle(x, w))
    x = int_x((1, 128), torch.float32)
    with pytest.raises(mplinear.InvalidArgument, match="dtype"):
        layer.apply(x.double())
    with pytest.raises(mplinear.InvalidArgument, match="shape"):
        layer.apply(int_x((1, 64), torch.float32))
    with pytest.raises(mplinear.InvalidArgument, match="shape"):
        layer.apply(torch.tensor(1.0))
    with pytest.raises(mplinear.InvalidArgument, match="out"):
        layer.apply(x, out=torch.empty(2, 32))
    with pytest.raises(mplinear.InvalidArgument, match="out"):
        layer.apply(x, out=torch.empty(1, 32, dtype=torch.float64))
    with pytest.raises(mplinear.InvalidArgument, match="out"):
        layer.apply(x, out=torch.empty(32, 2).T)
    with pytest.raises(mplinear.InvalidArgument, match="on meta"):
        layer.apply(torch.empty(1, 128, device="meta"))
    with pytest.raises(mplinear.InvalidArgument, match="bias"):
        layer.apply(x, torch.zeros(31))
    out = torch.empty(1, 32)
    assert layer.apply(x, torch.ones(32), out=out) is out and torch.equal(out, oracle(x, w, torch.ones(32)))


def test_quantlinear_direct_and_op_paths():
    """QuantLinear.forward calls the layer itself in eager inference and the op whenever something traces
    or records (compile, jit.trace, dispatch modes, autograd): the same result either way, and the op in
    every captured graph."""
    t, w = tensors("ct", "uint4b8", 128, 32, 32)
    bias = torch.arange(32, dtype=torch.float32) / 4
    lin = mt.QuantLinear(mplinear.Layer(mplinear.Config(k=128, n=32, act="f32", group_size=32), t), bias)
    x = int_x((3, 128), torch.float32)
    want = oracle(x, w, bias)
    assert mt._direct(x)
    with torch.inference_mode():
        xi = x.clone()
        assert mt._direct(xi) and torch.equal(lin(xi), want)
    assert torch.equal(lin(x), want)
    assert torch.equal(torch.ops.mplinear.apply(x, lin.layer_id, 32, lin.bias), want)
    xg = x.clone().requires_grad_()
    assert not mt._direct(xg)
    assert torch.equal(lin(xg).detach(), want)
    with torch._subclasses.fake_tensor.FakeTensorMode(allow_non_fake_inputs=True):  # the bias buffer is real
        fx = torch.empty(3, 128)
        assert not mt._direct(fx) and lin(fx).shape == (3, 32)
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False):
        assert not mt._direct(x) and torch.equal(lin(x), want)
    with torch.device("cpu"):  # a torch function mode
        assert not mt._direct(x) and torch.equal(lin(x), want)
    traced = torch.jit.trace(lin, (x,), check_trace=False)
    assert "mplinear::apply" in str(traced.graph) and torch.equal(traced(x), want)
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lin)(x)
    assert any("mplinear" in str(nd.target) for nd in gm.graph.nodes) and torch.equal(gm(x), want)
    ep = torch.export.export(lin, (x,))
    assert any("mplinear" in str(nd.target) for nd in ep.graph.nodes)
    assert torch.equal(ep.module()(x), want)


def test_op_opcheck_more():
    """opcheck beyond schema and fake tensors: the op under AOT dispatch (dynamic shapes) too."""
    t, w = tensors("ct", "uint4b8", 128, 32, 32)
    lin = mt.QuantLinear(mplinear.Layer(mplinear.Config(k=128, n=32, act="f32", group_size=32), t))
    x = int_x((2, 128), torch.float32)
    for b in (None, torch.arange(32, dtype=torch.float32)):
        torch.library.opcheck(torch.ops.mplinear.apply.default, (x, lin.layer_id, 32, b),
                              test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))

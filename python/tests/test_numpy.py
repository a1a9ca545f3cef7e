"""mplinear.Layer on numpy arrays against a float64 oracle (python/tests/packing.py).

Exactness: x holds small integers (|x| <= 4) and scales are i * 2^-8 with i < 16, so every product,
per-group integer sum (|sum| <= K * 4 * 255 < 2^24) and scaled group term is exact in fp32, and so is
their sum (all multiples of 2^-8 below 2^24 * 2^-8). The library's W4A16 contract (fp32 accumulation,
output rounded once to the activation type) then gives exactly the oracle rounded once: the comparison
is bit-exact for f32, f16 and bf16 activations.
"""

import numpy as np
import pytest

import mplinear
from packing import assert_gil_released, dequantize, pack, random_layer


def f32_to_bf16_bits(a):
    b = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


def bf16_bits_to_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def make(layout, wtype, k=256, n=40, group_size=32, act_order=False, act="f32", seed=0, **opts):
    rng = np.random.default_rng(seed)
    codes, scales, zeros, g_idx = random_layer(rng, k, n, wtype, group_size, act_order)
    bits = 8 if wtype.startswith("uint8") else 4
    t = pack(layout, bits, codes, scales, zeros, g_idx)
    cfg = mplinear.Config(k=k, n=n, wtype=wtype, act=act, group_size=group_size, zero_points=zeros is not None,
                          act_order=act_order)
    w = dequantize(codes, scales, zeros, g_idx, wtype, group_size)
    return mplinear.Layer(cfg, t, **opts), w, rng


CASES = [("ct", "uint4b8", 32, False), ("ct", "uint4", 64, False), ("ct", "uint8b128", -1, False),
         ("ct", "uint8", 32, False), ("ct", "uint4b8", 32, True), ("gptq", "uint4b8", 32, False),
         ("gptq", "uint4", 32, True), ("gptq", "uint8", 64, False), ("gptq-v2", "uint4", 32, False),
         ("awq", "uint4", 32, False), ("awq", "uint4", -1, False)]


@pytest.mark.parametrize("kernel", [None, "ref"])
@pytest.mark.parametrize("layout,wtype,group_size,act_order", CASES)
def test_layouts_exact(layout, wtype, group_size, act_order, kernel):
    layer, w, rng = make(layout, wtype, group_size=group_size, act_order=act_order, kernel=kernel)
    for m in (1, 3, 17):
        x = rng.integers(-4, 5, size=(m, layer.k)).astype(np.float32)
        y = layer.apply(x)
        assert type(y) is np.ndarray and y.dtype == np.float32 and y.shape == (m, layer.n)
        np.testing.assert_array_equal(y, (x.astype(np.float64) @ w.T).astype(np.float32),
                                      err_msg=f"{layout} {wtype} g{group_size} m={m} kernel={layer.kernel}")
    if kernel:
        assert layer.kernel == kernel


@pytest.mark.parametrize("act", ["f16", "bf16"])
def test_half_activations_rounded_once(act):
    layer, w, rng = make("gptq", "uint4b8", act=act)
    x64 = rng.integers(-4, 5, size=(5, layer.k)).astype(np.float64)
    bias64 = rng.integers(-8, 9, size=layer.n).astype(np.float64) / 4
    ref = x64 @ w.T + bias64
    if act == "f16":
        x, bias, want = x64.astype(np.float16), bias64.astype(np.float16), ref.astype(np.float16)
    else:
        x, bias, want = f32_to_bf16_bits(x64), f32_to_bf16_bits(bias64), f32_to_bf16_bits(ref.astype(np.float32))
    y = layer.apply(x, bias)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, want)


def test_shapes_out_and_bias():
    layer, w, rng = make("ct", "uint4", k=128, n=24)
    x = rng.integers(-4, 5, size=(2, 3, 128)).astype(np.float32)
    bias = np.arange(24, dtype=np.float32)
    out = np.full((2, 3, 24), np.nan, np.float32)
    y = layer.apply(x, bias=bias, out=out)
    assert y is out
    np.testing.assert_array_equal(y, (x.astype(np.float64) @ w.T + bias).astype(np.float32))
    np.testing.assert_array_equal(layer.apply(x[0, 0]), (x[0, 0] @ w.T).astype(np.float32))  # 1-D x
    xt = np.asfortranarray(x[0])  # non-contiguous x is copied
    np.testing.assert_array_equal(layer.apply(xt), (x[0].astype(np.float64) @ w.T).astype(np.float32))
    assert layer.apply(np.zeros((0, 128), np.float32)).shape == (0, 24)


def test_kernel_path_choose():
    layer, _, _ = make("gptq", "uint4b8", k=256, n=64)
    assert layer.kernel in [kinfo["name"] for kinfo in mplinear.kernels()]
    assert layer.path(1).startswith(layer.kernel + ":")
    assert layer.path(0) is None
    assert layer.weight_bytes > 0 and layer.threads >= 1 and layer.weight_rounding(1) == 0.0
    ch = mplinear.choose(layer.config)
    assert ch.kernel == layer.kernel and ch.path == layer.path(1)
    cpu = [kinfo["name"] for kinfo in mplinear.kernels() if kinfo["backend"] == "cpu"]
    assert [v.kernel for v in ch] == cpu  # every CPU kernel, in priority order
    assert [v.kernel for v in ch if v.chosen] == [layer.kernel]
    for v in ch:
        assert v.ok == (v.reason == "OK") and (v.ok or v.message)
    ref = [v for v in ch if v.kernel == "ref"][0]
    assert ref.ok  # ref implements everything
    forced = mplinear.choose(layer.config, kernel="ref")
    assert forced.kernel == "ref" and forced.path == "ref:scalar"


def test_choose_reasons():
    # group size 48 is valid (divides 192) but the x86 W4A16 kernels need multiples of 16... 48 is one;
    # 24 is not: every optimized W4A16 kernel refuses with GROUP_SIZE (or ISA_MISSING), ref takes it.
    ch = mplinear.choose(mplinear.Config(k=192, n=64, act="f32", group_size=24))
    assert ch.kernel == "ref"
    w4a16 = [v for v in ch if "w4a16" in v.kernel]
    assert w4a16 and all(v.reason in ("GROUP_SIZE", "ISA_MISSING") for v in w4a16)
    assert all("24" in v.message for v in w4a16 if v.reason == "GROUP_SIZE")
    w4a8 = mplinear.choose(mplinear.Config(k=256, n=64, act="f32", group_size=64, w4a8=True))
    assert w4a8.kernel is not None
    assert all(v.reason == "MODE" for v in w4a8 if "w4a16" in v.kernel and v.reason != "ISA_MISSING")


def test_w4a8_semantics():
    """W4A8 as include/mplinear.h defines it: q = rint(x * 127 / amax) clamped, sx = amax / 127."""
    layer, w, rng = make("ct", "uint4b8", k=128, n=16, group_size=32)
    cfg = layer.config
    cfg8 = mplinear.Config(**{**cfg.__dict__, "w4a8": True})
    rng = np.random.default_rng(3)
    codes, scales, zeros, g_idx = random_layer(rng, 128, 16, "uint4b8", 32)
    l8 = mplinear.Layer(cfg8, pack("ct", 4, codes, scales))
    x = rng.standard_normal((4, 128)).astype(np.float32)
    amax = np.abs(x).max(axis=1, keepdims=True)
    q = np.clip(np.rint(x * (np.float32(127.0) / amax)), -127, 127)
    want = (q.astype(np.float64) @ dequantize(codes, scales, None, None, "uint4b8", 32).T) * (amax / np.float32(127.0))
    y = l8.apply(x)
    # One fp32 rounding of the group sum times sx (plus the rounding of sx itself): 4 ulps of |y|.
    np.testing.assert_allclose(y, want, rtol=4 * 2.0 ** -23 * 4, atol=1e-6 * np.abs(want).max())


def test_torch_free_dlpack_producer():
    layer, w, rng = make("gptq", "uint4b8", k=64, n=16)
    x = rng.integers(-4, 5, size=(2, 64)).astype(np.float32)

    class Producer:  # any object with the DLPack protocol
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    y = layer.apply(Producer(x))
    assert type(y) is np.ndarray
    np.testing.assert_array_equal(y, (x.astype(np.float64) @ w.T).astype(np.float32))


def test_gil_released_during_apply():
    """While one thread runs a long apply (the scalar reference kernel), another Python thread keeps running."""
    layer, _, rng = make("ct", "uint4b8", k=2048, n=2048, group_size=128, kernel="ref", threads=1)
    x = rng.standard_normal((32, 2048)).astype(np.float32)
    assert_gil_released(lambda: layer.apply(x))


def test_model_fixture_matches_the_tool():
    """A compressed-tensors checkpoint folder (tests/fixtures, written by compressed-tensors) against the
    outputs computed from the tool's own dequantization (beside it)."""
    import os

    st = pytest.importorskip("safetensors.numpy")
    root = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures")
    d = os.path.join(root, "ct-w4a16-asym")
    if not os.path.isdir(d):
        pytest.skip("tests/fixtures not present (installed without the source tree)")
    expected = st.load_file(d + ".expected.safetensors")
    with mplinear.Model(d) as model:
        assert model.quant_method == "compressed-tensors" and model.layers
        for info in model.layers:
            layer = model.layer(info.name, act="f32")
            x, want = expected[info.name + ".x"], expected[info.name + ".y"]
            y = layer.apply(np.ascontiguousarray(x, np.float32))
            # As tests/test_checkpoint.c: fp32 accumulation over K (plus the group scaling and the y
            # rounding) against a float64 oracle, |err| <= ((K + 4) 2^-24 + u_tool) * s, s = |x| |W|^T
            # stored beside y, u_tool the unit roundoff of the tool's dequantized weights.
            k = info.config.k
            tol = ((k + 4) * 2.0 ** -24 + float(expected["tool_roundoff"][0])) * expected[info.name + ".s"] + 1e-30
            if info.has_bias:
                pass  # bias is in y and in the layer (apply adds the checkpoint's bias by default)
            assert np.all(np.abs(y - want) <= tol), info.name

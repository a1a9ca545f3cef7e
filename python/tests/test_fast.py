"""mplinear._fast, the compiled hot path of Layer.apply (python/ext/fast.c), against the ctypes path it
stands in for (Layer._apply_py): the same outputs bit for bit, the same errors, the GIL released; and the
package without it (MPLINEAR_NO_EXT=1: the ctypes fallback)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mplinear
from packing import assert_gil_released, pack, random_layer

fast = pytest.mark.skipif(mplinear._fast is None, reason="mplinear._fast not built (no Python headers?)")


def test_extension_built_when_required():
    # python/ci.sh sets MPL_REQUIRE_EXT=1: CI's wheel must carry the extension, not silently fall back.
    if os.environ.get("MPL_REQUIRE_EXT") == "1":
        assert mplinear._fast is not None
    if mplinear._fast is not None:
        assert mplinear.Layer.apply is mplinear._fast.LayerBase.apply
    else:
        assert mplinear.Layer.apply is mplinear.Layer._apply_py


def layer_for(act, k=256, n=40, seed=0, **opts):
    rng = np.random.default_rng(seed)
    codes, scales, zeros, g_idx = random_layer(rng, k, n, "uint4b8", 32, False)
    cfg = mplinear.Config(k=k, n=n, wtype="uint4b8", act=act, group_size=32)
    return mplinear.Layer(cfg, pack("ct", 4, codes, scales, zeros, g_idx), **opts), rng


NP_ACT = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


def np_x(rng, shape, act):
    v = rng.standard_normal(shape).astype(np.float32)
    if act == "bf16":
        return (v.view(np.uint32) >> 16).astype(np.uint16)  # bf16 raw bits (truncated: any value will do)
    return v.astype(NP_ACT[act])


@fast
@pytest.mark.parametrize("act", ["f32", "f16", "bf16"])
def test_numpy_same_as_ctypes_path(act):
    layer, rng = layer_for(act)
    k, n = layer.k, layer.n
    bias = np_x(rng, (n,), act)
    for shape in [(k,), (1, k), (3, k), (2, 3, k), (0, k), (1, k), (3, k)]:  # repeats: the shape cache
        x = np_x(rng, shape, act)
        for b in (None, bias):
            want = layer._apply_py(x, b)
            got = layer.apply(x, b)
            assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            out = np.full(shape[:-1] + (n,), 7, NP_ACT[act])
            assert layer.apply(x, bias=b, out=out) is out
            np.testing.assert_array_equal(out, want)
    # the layer's own bias (Model.layer sets it), used when apply is given none
    x = np_x(rng, (2, k), act)
    layer.bias = bias
    np.testing.assert_array_equal(layer.apply(x), layer._apply_py(x, bias))
    layer.bias = None
    np.testing.assert_array_equal(layer.apply(x), layer._apply_py(x))
    # cases the C path hands to Python: non-contiguous x, a bias list, an ndarray subclass
    xt = np_x(rng, (k, 3), act).T
    np.testing.assert_array_equal(layer.apply(xt), layer._apply_py(np.ascontiguousarray(xt)))
    np.testing.assert_array_equal(layer.apply(x, list(bias)), layer._apply_py(x, bias))


@fast
def test_numpy_layout_checks_hand_over():
    """The C path reads numpy's array fields itself (np_get): what it must not take -- another byte order,
    a misaligned or read-only buffer, another dtype -- goes to the Python path, which gives what it gives
    (a result or the same exception)."""
    layer, rng = layer_for("f32")
    k, n = layer.k, layer.n

    def same(x, **kw):
        try:
            want = layer._apply_py(x, **kw)
        except Exception as e:  # the Python path's refusal must be the fast path's too
            with pytest.raises(type(e)):
                layer.apply(x, **kw)
            return
        np.testing.assert_array_equal(layer.apply(x, **kw), want)

    x = np_x(rng, (2, k), "f32")
    same(x.astype(">f4"))                              # big-endian
    same(x.astype(np.float64))                         # another dtype
    raw = np.zeros(2 * k * 4 + 1, np.uint8)[1:].view(np.float32).reshape(2, k)  # misaligned
    raw[...] = x
    assert not raw.flags.aligned
    same(raw)
    ro = x.copy()
    ro.flags.writeable = False                         # read-only x is fine to read
    np.testing.assert_array_equal(layer.apply(ro), layer._apply_py(x))
    out = np.zeros((2, n), np.float32)
    out.flags.writeable = False                        # a read-only out is refused like the Python path
    same(x, out=out)
    assert not out.any()


def test_numpy_output_reuse_is_safe():
    """The C path reuses its last numpy output only when nothing else references it: a view, an exported
    buffer or the array itself kept by the caller must keep their values through later applies."""
    layer, rng = layer_for("f32")
    xs = [np_x(rng, (1, layer.k), "f32") for _ in range(4)]
    want = [layer._apply_py(x) for x in xs]
    y0 = layer.apply(xs[0])
    v1 = layer.apply(xs[1])[0]         # a view: holds its base array
    m2 = memoryview(layer.apply(xs[2]))  # an exported buffer
    y3 = layer.apply(xs[3])
    np.testing.assert_array_equal(y0, want[0])
    np.testing.assert_array_equal(v1, want[1][0])
    np.testing.assert_array_equal(np.asarray(m2), want[2])
    np.testing.assert_array_equal(y3, want[3])
    y = layer.apply(xs[1])
    y.flags.writeable = False  # a read-only array is not written again
    del y
    np.testing.assert_array_equal(layer.apply(xs[2]), want[2])


@fast
def test_torch_same_as_ctypes_path():
    torch = pytest.importorskip("torch")
    for act, dt in (("f32", torch.float32), ("bf16", torch.bfloat16), ("f16", torch.float16)):
        layer, rng = layer_for(act, seed=1)
        k, n = layer.k, layer.n
        bias = torch.randn(n).to(dt)
        for shape in [(1, k), (1, k), (4, k), (1, k), (2, 2, k), (2, 2, k), (k,), (0, k)]:
            x = torch.randn(*shape).to(dt)
            for b in (None, bias):
                want = layer._apply_py(x, b)
                got = layer.apply(x, b)
                assert type(got) is torch.Tensor and got.dtype == dt and got.shape == want.shape
                assert torch.equal(got, want)
                out = torch.full(shape[:-1] + (n,), 7.0, dtype=dt)
                assert layer.apply(x, b, out) is out and torch.equal(out, want)
        # a non-contiguous x, a numpy bias (converted on the Python path), a wrong-shape out
        xt = torch.randn(k, 3).to(dt).t()
        assert torch.equal(layer.apply(xt), layer._apply_py(xt.contiguous()))
        with pytest.raises(mplinear.InvalidArgument, match="out"):
            layer.apply(torch.randn(1, k).to(dt), out=torch.empty(1, n + 1, dtype=dt))
        with pytest.raises(mplinear.InvalidArgument, match="dtype"):
            layer.apply(torch.randn(1, k, dtype=torch.float64))


def huge_m_arrays(k, n):
    """x [2^31, k] and out [2^31, n], C-contiguous views of small buffers: m is out of the library's range
    (0..2^31-1), so mpl_layer_apply refuses before it reads or writes anything."""
    as_strided = np.lib.stride_tricks.as_strided
    m = 2 ** 31
    x = as_strided(np.zeros(k, np.float32), shape=(m, k), strides=(4 * k, 4), writeable=False)
    out = as_strided(np.zeros(n, np.float32), shape=(m, n), strides=(4 * n, 4))
    assert x.flags.c_contiguous and out.flags.c_contiguous
    return x, out


@pytest.mark.parametrize("path", ["apply", "_apply_py"])
def test_library_error_raised_with_status_and_message(path):
    layer, _ = layer_for("f32")
    x, out = huge_m_arrays(layer.k, layer.n)
    with pytest.raises(mplinear.InvalidArgument) as e:
        getattr(layer, path)(x, out=out)
    assert e.value.status == 1 and e.value.status_name and e.value.message
    assert e.value.call == "mpl_layer_apply"
    assert str(2 ** 31) in e.value.message or "m" in e.value.message


def test_gil_released_torch():
    """A CPU torch tensor through the C path (the second call of a shape) leaves other threads running."""
    torch = pytest.importorskip("torch")
    layer, rng = layer_for("f32", k=2048, n=2048, kernel="ref", threads=1)
    x = torch.randn(32, 2048)
    layer.apply(x)  # the first call of a shape takes the Python path; the next ones the C path
    assert_gil_released(lambda: layer.apply(x))


FALLBACK = r"""
import numpy as np, mplinear
from packing import pack, random_layer
assert mplinear._fast is None and mplinear.Layer.apply is mplinear.Layer._apply_py
rng = np.random.default_rng(0)
codes, scales, zeros, g_idx = random_layer(rng, 256, 40, "uint4b8", 32, False)
layer = mplinear.Layer(mplinear.Config(k=256, n=40, act="f32", group_size=32), pack("ct", 4, codes, scales, zeros, g_idx))
np.save(__OUT__, layer.apply(np.load(__X__)))
try:
    layer.apply(np.zeros((1, 7), np.float32))
except mplinear.InvalidArgument as e:
    print("error", e.status, e.message)
"""


def test_ctypes_fallback_same_outputs(tmp_path):
    """MPLINEAR_NO_EXT=1 (as without the extension): Layer.apply is the ctypes path, same results."""
    layer, rng = layer_for("f32")
    x = np_x(rng, (3, layer.k), "f32")
    np.save(tmp_path / "x.npy", x)
    code = FALLBACK.replace("__OUT__", repr(str(tmp_path / "y.npy"))).replace("__X__", repr(str(tmp_path / "x.npy")))
    env = dict(os.environ, MPLINEAR_NO_EXT="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__)] + sys.path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "error 1" in r.stdout and "last dimension" in r.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), layer.apply(x))

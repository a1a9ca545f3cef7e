"""torch pieces: the torch.ops.mplinear.apply operator and QuantLinear, an nn.Module over an mplinear layer.

    from mplinear.torch import QuantLinear
    lin = QuantLinear.from_gptq(qweight, scales, qzeros, bits=4, group_size=128, sym=True)
    y = lin(x)                      # x [..., in_features] in the layer's activation dtype

torch.ops.mplinear.apply(x, layer_id, n, bias) is a torch.library custom op: its fake (meta) kernel gives
the output's shape and dtype, so torch.compile traces through it (a graph break-free call), and it
allocates nothing but its output. layer_id names a live mplinear.Layer (mplinear.torch.register_layer);
QuantLinear does this itself.
"""
import itertools
import weakref
from typing import Optional

import torch

import mplinear

__all__ = ["QuantLinear", "register_layer", "replace_linears", "apply"]

# id -> weakref to an mplinear.Layer (a QuantLinear or the vLLM layer holds the strong reference); the
# callback drops the entry when the layer goes. A plain dict of weakrefs rather than a
# WeakValueDictionary: its __getitem__ is Python code, one more frame on the op's every call.
_layers = {}
_next_id = itertools.count(1)


def _dead():  # the lookup's default: called like a dead weakref
    return None


def register_layer(layer: mplinear.Layer) -> int:
    """An id for torch.ops.mplinear.apply; valid while the layer is alive."""
    i = next(_next_id)
    _layers[i] = weakref.ref(layer, lambda _, i=i: _layers.pop(i, None))
    return i


def _layer(layer_id: int) -> mplinear.Layer:
    layer = _layers.get(layer_id, _dead)()
    if layer is None:
        raise mplinear.InvalidArgument(1, f"layer id {layer_id}: no live mplinear layer has it")
    return layer


# The operator is defined with torch.library.Library (schema + a CPU and a CUDA kernel + a fake kernel)
# rather than torch.library.custom_op: the same dispatcher entry, schema and fake kernel, but
# custom_op's Python wrapper (its autograd and dispatch layers in Python) costs ~40 us a call more
# (docs/python.md, Overhead). No autograd kernel: the dispatcher's fallback lets a forward through and
# a backward through it fails (inference only).
_lib = torch.library.Library("mplinear", "DEF")
_lib.define("apply(Tensor x, int layer_id, int n, Tensor? bias=None) -> Tensor")


def _apply_impl(x, layer_id, n, bias=None):
    layer = _layers.get(layer_id, _dead)()
    if layer is None:
        raise mplinear.InvalidArgument(1, f"layer id {layer_id}: no live mplinear layer has it")
    if layer.n != n:
        raise mplinear.InvalidArgument(1, f"n = {n}: layer {layer_id} has n = {layer.n}")
    return layer.apply(x, bias)  # makes x contiguous when it is not


_lib.impl("apply", _apply_impl, "CPU")
_lib.impl("apply", _apply_impl, "CUDA")


@torch.library.register_fake("mplinear::apply", lib=_lib)
def _apply_fake(x, layer_id, n, bias=None):
    return x.new_empty((*x.shape[:-1], n))


apply = torch.ops.mplinear.apply
"""torch.ops.mplinear.apply(x, layer_id, n, bias=None): y[..., n] = x[..., k] W^T + bias through mplinear layer
layer_id (x in the layer's activation dtype)."""


_op = torch.ops.mplinear.apply.default
_Tensor = torch.Tensor
_is_compiling = torch.compiler.is_compiling
_tracing_state = torch._C._get_tracing_state
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled


def _direct(x) -> bool:
    """True when QuantLinear.forward may call the layer itself (~the C call's cost) instead of the op (the
    dispatcher's Python kernel, ~10 us more): a plain eager tensor that needs no gradient, with nothing
    that must see the op: not under torch.compile / export (Dynamo folds is_compiling to True, so the
    traced graph always holds torch.ops.mplinear.apply), torch.jit.trace, a torch dispatch mode
    (make_fx, FakeTensorMode, FlopCounterMode) or a torch function mode. Tensor subclasses
    (FakeTensor, functorch wrappers) take the op."""
    return (not _is_compiling() and type(x) is _Tensor and not x.requires_grad and _tracing_state() is None
            and not _dispatch_modes() and not _function_modes())


_TORCH_ACT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
_ACT_NAME = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}


# (bits, symmetric) -> mplinear weight type (vLLM's scalar types): symmetric = code - 2^(bits-1), else code - zero
_WTYPES = {(2, True): "uint2b2", (3, True): "uint3b4", (4, True): "uint4b8", (8, True): "uint8b128",
           (2, False): "uint2", (3, False): "uint3", (4, False): "uint4", (8, False): "uint8"}


def _act_name(dtype) -> str:
    if dtype not in _ACT_NAME:
        raise mplinear.InvalidArgument(1, f"dtype {dtype}: activations must be float16, bfloat16 or float32")
    return _ACT_NAME[dtype]


class QuantLinear(torch.nn.Module):
    """y = x W^T + b with W held (packed) by an mplinear layer; inference only (no autograd).

    QuantLinear(layer, bias=None): from an mplinear.Layer; the constructors below build one from a
    checkpoint's own tensors. forward casts x to the layer's activation dtype when it differs and the
    result back to x's dtype.
    """

    def __init__(self, layer: mplinear.Layer, bias: Optional[torch.Tensor] = None):
        super().__init__()
        self.layer = layer
        self.in_features, self.out_features = layer.k, layer.n
        self.act_dtype = _TORCH_ACT[layer.config.act]
        self.layer_id = register_layer(layer)
        if bias is None and layer.bias is not None:  # a checkpoint layer's own bias (Model.layer)
            b = torch.from_numpy(layer.bias)
            bias = b.view(torch.bfloat16) if b.dtype == torch.uint16 else b
            layer.bias = None
        if bias is not None:
            bias = bias.detach().to(self.act_dtype).contiguous()
            if bias.shape != (self.out_features,):
                raise mplinear.InvalidArgument(1, f"bias: shape {tuple(bias.shape)}, expected ({self.out_features},)")
        self.register_buffer("bias", bias, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dt = x.dtype
        if dt is not self.act_dtype:
            x = x.to(self.act_dtype)
        bias = self._buffers["bias"]  # not self.bias: Module.__getattr__ costs ~1 us a call
        if _direct(x):
            y = self.layer.apply(x, bias)
        else:
            y = _op(x, self.layer_id, self.out_features, bias)
        return y if dt is self.act_dtype else y.to(dt)

    def extra_repr(self):
        c = self.layer.config
        return (f"in_features={self.in_features}, out_features={self.out_features}, wtype={c.wtype}, "
                f"group_size={c.group_size}, zero_points={c.zero_points}, act_order={c.act_order}, w4a8={c.w4a8}, "
                f"act={c.act}, kernel={self.layer.kernel}")

    # ---- constructors from checkpoint tensors ----

    @classmethod
    def _build(cls, cfg, tensors, bias, opts):
        return cls(mplinear.Layer(cfg, tensors, **opts), bias)

    @classmethod
    def from_gptq(cls, qweight, scales, qzeros=None, g_idx=None, *, bits: int = 4, group_size: int = 128,
                  sym: bool = True, desc_act: bool = False, checkpoint_format: str = "gptq", bias=None, dtype=None,
                  **opts) -> "QuantLinear":
        """A GPTQ (AutoGPTQ / GPTQModel) module's qweight [K/pf, N], scales [G, N], qzeros [G, N/pf] and
        g_idx [K]. bits 2, 3, 4 or 8; sym: uint2b2 / uint3b4 / uint4b8 / uint8b128 (qzeros ignored, as vLLM
        does); else uint2 / uint3 / uint4 / uint8 with zero points. desc_act: act-order through g_idx (dropped for group_size -1). checkpoint_format "gptq"
        (v1 zeros stored as z - 1) or "gptq_v2". dtype: activation dtype (default: the scales')."""
        wtype = _WTYPES.get((bits, bool(sym)))
        if wtype is None:
            raise mplinear.Unsupported(2, f"GPTQ bits = {bits}: mplinear reads 2, 3, 4 and 8")
        k, n = qweight.shape[0] * 32 // bits, qweight.shape[1]  # 32 // bits per word; 3-bit: 32 per 3 words
        act_order = bool(desc_act) and group_size != -1 and g_idx is not None
        cfg = mplinear.Config(k=k, n=n, wtype=wtype, act=_act_name(dtype or scales.dtype), group_size=group_size,
                              zero_points=not sym, act_order=act_order)
        layout = {"gptq": "gptq", "gptq_v2": "gptq-v2", "gptq-v2": "gptq-v2"}.get(checkpoint_format)
        if layout is None:
            raise mplinear.InvalidArgument(1, f"checkpoint_format {checkpoint_format!r}: gptq or gptq_v2")
        t = {"layout": layout, "weight": qweight, "scales": scales}
        if not sym:
            t["zeros"] = qzeros
        if act_order:
            t["g_idx"] = g_idx
        return cls._build(cfg, t, bias, opts)

    @classmethod
    def from_awq(cls, qweight, scales, qzeros, *, group_size: int = 128, bias=None, dtype=None,
                 **opts) -> "QuantLinear":
        """An AutoAWQ GEMM module's qweight [K, N/8], scales [G, N], qzeros [G, N/8] (uint4, zero points)."""
        k, n = qweight.shape[0], qweight.shape[1] * 8
        cfg = mplinear.Config(k=k, n=n, wtype="uint4", act=_act_name(dtype or scales.dtype), group_size=group_size,
                              zero_points=True)
        return cls._build(cfg, {"layout": "awq", "weight": qweight, "scales": scales, "zeros": qzeros}, bias, opts)

    @classmethod
    def from_compressed_tensors(cls, weight_packed, weight_scale, weight_shape=None, weight_zero_point=None,
                                weight_g_idx=None, *, num_bits: int = 4, symmetric: Optional[bool] = None,
                                group_size: Optional[int] = None, w4a8: bool = False, bias=None, dtype=None,
                                **opts) -> "QuantLinear":
        """A compressed-tensors pack-quantized module: weight_packed [N, K/pf], weight_scale [N, G],
        weight_shape [2] (N, K), weight_zero_point [ceil(N/pf), G] (asymmetric), weight_g_idx [K] (act-order).
        symmetric defaults to "no zero-point tensor"; group_size defaults to K / G (-1 when G = 1, channel);
        w4a8: dynamic per-token int8 activations (input_activations num_bits 8)."""
        n = weight_packed.shape[0]
        k = int(weight_shape[1]) if weight_shape is not None else weight_packed.shape[1] * 32 // num_bits
        if symmetric is None:
            symmetric = weight_zero_point is None
        if group_size is None:
            g = weight_scale.shape[1] if weight_scale.ndim == 2 else 1
            group_size = -1 if g == 1 else k // g
        wtype = _WTYPES.get((num_bits, bool(symmetric)))
        if wtype is None:
            raise mplinear.Unsupported(2, f"compressed-tensors num_bits = {num_bits}: mplinear reads 2, 3, 4 and 8")
        cfg = mplinear.Config(k=k, n=n, wtype=wtype, act=_act_name(dtype or weight_scale.dtype),
                              group_size=group_size, zero_points=not symmetric, act_order=weight_g_idx is not None,
                              w4a8=w4a8)
        t = {"layout": "ct", "weight": weight_packed, "scales": weight_scale}
        if not symmetric:
            t["zeros"] = weight_zero_point
        if weight_g_idx is not None:
            t["g_idx"] = weight_g_idx
        return cls._build(cfg, t, bias, opts)

    @classmethod
    def from_model(cls, model: mplinear.Model, name: str, *, dtype=None, **opts) -> "QuantLinear":
        """Layer name of an open checkpoint folder (mplinear.Model), with its bias."""
        act = _act_name(dtype) if dtype is not None else None
        return cls(model.layer(name, act=act, **opts))


def replace_linears(module: torch.nn.Module, checkpoint, *, dtype=None, **opts) -> list:
    """Replaces every submodule of module that the checkpoint folder (a path or mplinear.Model) holds as a
    quantized linear layer by a QuantLinear of it (matched by module name); returns the names replaced.
    A checkpoint layer with no module of that name is an error."""
    model = checkpoint if isinstance(checkpoint, mplinear.Model) else mplinear.Model(checkpoint)
    names = dict(module.named_modules())
    done = []
    for info in model.layers:
        if info.name not in names:
            raise mplinear.InvalidArgument(1, f"checkpoint layer {info.name}: the module has no submodule of that name")
        parent_name, _, child = info.name.rpartition(".")
        parent = names[parent_name] if parent_name else module
        setattr(parent, child, QuantLinear.from_model(model, info.name, dtype=dtype, **opts))
        done.append(info.name)
    return done

"""vLLM plugin: mplinear as an MPLinearKernel, first in vLLM's mixed-precision kernel list for the CPU
(and for CUDA when libmplinear was built with CUDA).

pyproject.toml declares the entry point (group vllm.general_plugins, name mplinear), so an installed
mplinear is loaded by every vLLM process; VLLM_PLUGINS=... limits which plugins load, and
VLLM_DISABLED_KERNELS=MplinearLinearKernel leaves vLLM's own kernels in charge. The chooser calls
can_implement with the layer's MPLinearLayerConfig: mplinear.choose() gives the answer and, when no
mplinear kernel takes the config, every kernel's reason. process_weights_after_loading creates the
mplinear layer once from the loaded checkpoint tensors (forced into the compressed-tensors layout
with vLLM's own permute_param_layout_) and frees them; apply_weights runs torch.ops.mplinear.apply (the layer
itself in eager mode: mplinear.torch._direct).
"""
import logging

# Under "vllm.": vLLM configures its handler and format on the "vllm" logger only, so this is the name
# whose INFO lines (the kernel each layer got) reach vLLM's log.
logger = logging.getLogger("vllm.plugins.mplinear")

KERNEL_NAME = "MplinearLinearKernel"


def _imports():
    """vLLM moved the mixed-precision kernels in Feb 2026: the new path first, then the old one."""
    try:
        from vllm.model_executor.kernels import linear as registry
        from vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel import MPLinearKernel
    except ImportError:
        from vllm.model_executor.layers.quantization.kernels import mixed_precision as registry
        from vllm.model_executor.layers.quantization.kernels.mixed_precision.MPLinearKernel import MPLinearKernel
    return registry, MPLinearKernel


def _permute_param_layout():
    """vLLM's helper that forces a parameter into a given (input, output, packed) dim layout: in
    vllm.model_executor.parameter in vLLM 0.32, in quantization.utils.quant_utils in older versions; None
    when neither has it."""
    try:
        from vllm.model_executor.parameter import permute_param_layout_
    except ImportError:
        try:
            from vllm.model_executor.layers.quantization.utils.quant_utils import permute_param_layout_
        except ImportError:
            return None
    return permute_param_layout_


def _config(c):
    """MPLinearLayerConfig -> mplinear.Config, or (None, why)."""
    import torch

    import mplinear

    acts = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}
    if c.act_type not in acts:
        return None, f"activation dtype {c.act_type}: mplinear takes float16, bfloat16, float32"
    if getattr(c, "out_type", None) not in (None, c.act_type):
        return None, f"out_type {c.out_type}: mplinear writes the activation dtype"
    wtype = str(c.weight_type)
    takes = ("uint4b8", "uint4", "uint8b128", "uint8", "uint3b4", "uint3", "uint2b2", "uint2")
    if wtype not in takes:
        return None, f"weight type {wtype}: mplinear takes {', '.join(takes)} from vLLM"
    k, n = c.partition_weight_shape
    full_k, full_n = c.full_weight_shape
    group = c.group_size if c.group_size not in (0, full_k) else -1
    # has_g_idx: older vLLM's MPLinearLayerConfig had it (and the kernel a g_idx parameter name); 0.32's has not
    return mplinear.Config(k=k, n=n, full_k=full_k, full_n=full_n, wtype=wtype, act=acts[c.act_type], group_size=group,
                           zero_points=bool(c.zero_points), act_order=bool(getattr(c, "has_g_idx", False))), None


def make_kernel_class(MPLinearKernel, device="cpu"):
    import torch

    import mplinear
    import mplinear.torch as mt

    _direct, _op = mt._direct, mt._op  # bound once: apply_weights runs for every layer of every step

    class MplinearLinearKernel(MPLinearKernel):
        @classmethod
        def get_min_capability(cls) -> int:
            return 80 if device == "cuda" else -1

        @classmethod
        def can_implement(cls, c):
            cfg, why = _config(c)
            if cfg is None:
                return False, why
            try:
                ch = mplinear.choose(cfg, device=device)
            except mplinear.Error as e:
                return False, f"mplinear: {e}"
            if ch.kernel is None:
                return False, "mplinear: " + "; ".join(f"{v.kernel} {v.reason}: {v.message}" for v in ch if not v.ok)
            return True, None

        def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
            permute_param_layout_ = _permute_param_layout()
            cfg, why = _config(self.config)
            # the base class's _get_weight_params gives (w_q, w_s, w_zp) in vLLM 0.32 and added w_gidx in
            # older versions: read the parameters by the names the scheme gave instead
            w_gidx_name = getattr(self, "w_gidx_name", None)
            w_q, w_s, w_zp, w_gidx = (getattr(layer, name or "", None) for name in (self.w_q_name, self.w_s_name,
                                                                                     self.w_zp_name, w_gidx_name))

            def force(p, **dims):
                # only vLLM's parameters say which dim is which (input_dim / output_dim); a plain tensor
                # is taken as already in the compressed-tensors layout
                if permute_param_layout_ is not None and (getattr(p, "input_dim", None) is not None
                                                          or getattr(p, "output_dim", None) is not None):
                    permute_param_layout_(p, **dims)

            # the compressed-tensors layout: weight [N, K/pf] packed along K, scales [N, G], zeros
            # [N/pf, G] packed along N (vLLM's CPU kernel forces the GPTQ one the same way)
            force(w_q, input_dim=1, output_dim=0, packed_dim=1)
            force(w_s, input_dim=1, output_dim=0)
            if w_zp is not None and self.config.zero_points:
                force(w_zp, input_dim=1, output_dim=0, packed_dim=0)
            t = {"layout": "ct", "weight": w_q.data.contiguous(), "scales": w_s.data.contiguous()}
            if self.config.zero_points:
                t["zeros"] = w_zp.data.contiguous()
            if cfg.act_order:
                t["g_idx"] = w_gidx.data.to(torch.int32).contiguous()
            if device == "cpu":
                t = {k: (v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in t.items()}
            lay = mplinear.Layer(cfg, t, device=device,
                                 cuda_device=(w_q.device.index or 0) if device == "cuda" else 0)
            layer.mplinear_layer = lay
            layer.mplinear_id = mt.register_layer(lay)
            logger.info("mplinear: %s k=%d n=%d %s group %d -> kernel %s", KERNEL_NAME, cfg.k, cfg.n, cfg.wtype,
                        cfg.group_size, lay.kernel)
            # the layer holds its own packed copy: the checkpoint tensors go
            for name in (self.w_q_name, self.w_s_name, self.w_zp_name, w_gidx_name):
                if name and getattr(layer, name, None) is not None:
                    setattr(layer, name, torch.nn.Parameter(torch.empty(0, dtype=torch.int32), requires_grad=False))

        def apply_weights(self, layer: torch.nn.Module, x: torch.Tensor, bias=None) -> torch.Tensor:
            # x [..., k] -> [..., n] as it comes (the layer and the op take any leading dims: no reshape);
            # vLLM's bias is already in the activation dtype (params_dtype), else it is cast here.
            if bias is not None and bias.dtype is not x.dtype:
                bias = bias.to(x.dtype)
            # eager: the layer itself (no dispatcher round trip); traced / compiled: the op (mt._direct)
            if _direct(x):
                return layer.mplinear_layer.apply(x, bias)
            return _op(x, layer.mplinear_id, layer.mplinear_layer.n, bias)

    MplinearLinearKernel.__name__ = MplinearLinearKernel.__qualname__ = KERNEL_NAME
    return MplinearLinearKernel


def register():
    """The vllm.general_plugins entry point: put mplinear first for the CPU (and CUDA when built with it)."""
    try:
        registry, MPLinearKernel = _imports()
        from vllm.platforms import PlatformEnum
    except Exception as e:  # noqa: BLE001 - a vLLM without this subsystem: nothing to register
        logger.warning("mplinear: vLLM's mixed-precision kernel registry not found (%s): plugin inactive", e)
        return
    import mplinear

    kernels = getattr(registry, "_POSSIBLE_KERNELS", None)
    targets = [("cpu", PlatformEnum.CPU)]
    if mplinear.platform()["cuda_built"]:
        targets.append(("cuda", PlatformEnum.CUDA))
    for device, plat in targets:
        cls = make_kernel_class(MPLinearKernel, device)
        if isinstance(kernels, dict):
            lst = kernels.setdefault(plat, [])
            if not any(getattr(k, "__name__", "") == KERNEL_NAME for k in lst):
                lst.insert(0, cls)
        elif hasattr(registry, "register_linear_kernel"):  # appends: lowest priority
            registry.register_linear_kernel(cls, plat, kernel_type="mp")
        logger.info("mplinear: %s registered first for %s", KERNEL_NAME, plat)

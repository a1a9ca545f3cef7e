"""mplinear: mixed-precision linear-layer kernels (y = x W^T + b, W in 4 or 8 bits) from Python.

    import mplinear
    layer = mplinear.Layer(mplinear.Config(k=4096, n=4096, wtype="uint4b8", act="f32", group_size=128),
                           {"layout": "gptq", "weight": qweight, "scales": scales})
    y = layer.apply(x)

A thin ctypes binding of include/mplinear.h (the packaged libmplinear.so): the C header is the
specification of every call; docs/python.md describes the Python side. Layer.apply's common cases run in
the compiled module mplinear._fast when it is there (the overhead of a call; MPLINEAR_NO_EXT=1 turns it
off), and through ctypes otherwise.
"""
import ctypes
import dataclasses
import os
import sys
from ctypes import byref, c_char_p, c_int, c_void_p
from typing import Any, Mapping, Optional

import numpy as np

from . import _lib
from ._lib import lib as _c

__all__ = ["Config", "Layer", "Model", "LayerInfo", "Verdict", "Choice", "Error", "InvalidArgument", "Unsupported",
           "NoHardware", "OutOfMemory", "Overflow", "IOFailure", "FormatError", "CudaError", "InternalError",
           "choose", "kernels", "platform", "version", "library_path", "header_path"]

library_path = _lib.library_path
header_path = _lib.header_path


def version() -> str:
    """The linked library's version string (MPL_VERSION_STRING)."""
    return _c.mpl_version().decode()


__version__ = version()

# ---- errors: one class per mpl_status, each carrying the status and mpl_last_error() ----


class Error(Exception):
    """A call into libmplinear failed. status: the mpl_status value; message: mpl_last_error()."""

    status = None

    def __init__(self, status: int, message: str, call: str = ""):
        self.status = status
        self.status_name = _c.mpl_status_string(status).decode()
        self.message = message
        self.call = call
        super().__init__(f"{call + ': ' if call else ''}{self.status_name}: {message}")


class InvalidArgument(Error, ValueError):
    """MPL_ERR_INVALID_ARGUMENT: a parameter or config field breaks a rule."""


class Unsupported(Error, NotImplementedError):
    """MPL_ERR_UNSUPPORTED: valid, but no (or the forced) kernel implements it."""


class NoHardware(Error, RuntimeError):
    """MPL_ERR_NO_HARDWARE: the hardware, ISA or device needed is absent."""


class OutOfMemory(Error, MemoryError):
    """MPL_ERR_OUT_OF_MEMORY."""


class Overflow(Error, OverflowError):
    """MPL_ERR_OVERFLOW: a size or byte count overflows."""


class IOFailure(Error, OSError):
    """MPL_ERR_IO: a file could not be opened, read or written."""


class FormatError(Error, ValueError):
    """MPL_ERR_FORMAT: a file or tensor is malformed."""


class CudaError(Error, RuntimeError):
    """MPL_ERR_CUDA: a CUDA runtime error."""


class InternalError(Error, RuntimeError):
    """MPL_ERR_INTERNAL."""


_ERRORS = {1: InvalidArgument, 2: Unsupported, 3: NoHardware, 4: OutOfMemory, 5: Overflow, 6: IOFailure,
           7: FormatError, 8: CudaError, 9: InternalError}


def _raise(status: int, call: str):
    # mpl_last_error is thread-local in the library; ctypes runs the call that failed and this one on
    # the same OS thread, so the message is the one of that failure.
    msg = _c.mpl_last_error().decode(errors="replace")
    raise _ERRORS.get(status, Error)(status, msg, call)


def _check(status: int, call: str):
    if status != 0:
        _raise(status, call)


def _load_fast():
    """mplinear._fast (python/ext/fast.c: apply's common cases in C), bound to the library loaded above; None
    when it was not built or MPLINEAR_NO_EXT is set (then the ctypes path does everything)."""
    if os.environ.get("MPLINEAR_NO_EXT", "") not in ("", "0"):
        return None
    try:
        from . import _fast
    except ImportError:
        return None
    _fast.setup(ctypes.cast(_c.mpl_layer_apply, c_void_p).value, np.ndarray, np.empty, _raise)
    return _fast


_fast = _load_fast()


def _bad(msg: str):
    """An argument error found on the Python side (not by the library): same class as the library's."""
    return InvalidArgument(1, msg)


# ---- names <-> enum values, through the library's own parsers ----


def _parse(fn, what: str, s) -> int:
    if isinstance(s, int):
        return s
    v = c_int(0)
    _check(fn(str(s).encode(), byref(v)), f"{what} {s!r}")
    return v.value


_ACT_NP = {1: np.dtype(np.float16), 3: np.dtype(np.float32)}  # bf16 (2): see _bf16_dtypes
_ACT_TORCH = {1: "float16", 2: "bfloat16", 3: "float32"}
_DEVICES = {"cpu": 0, "cuda": 1}


def _bf16_dtypes():
    """numpy dtypes that hold bfloat16: uint16 (raw bits, the CLI's convention) and ml_dtypes.bfloat16 if loaded."""
    out = [np.dtype(np.uint16)]
    mld = sys.modules.get("ml_dtypes")
    if mld is not None:
        out.append(np.dtype(mld.bfloat16))
    return out


@dataclasses.dataclass
class Config:
    """mpl_config: the layer's shape and quantization. Names as the CLI's config flags.

    wtype: uint4b8 | uint4 | int4 | uint8b128 | uint8 | uint3b4 | uint3 | uint2b2 | uint2; act: f16 | bf16 | f32; group_size: -1 (one group
    over K) or a positive divisor of k; w4a8: quantize each row of x to int8 on the fly (mode W4A8);
    full_k, full_n: the whole layer when this is a tensor-parallel slice (0 = the same).
    """

    k: int
    n: int
    wtype: str = "uint4b8"
    act: str = "bf16"
    group_size: int = -1
    zero_points: bool = False
    act_order: bool = False
    w4a8: bool = False
    full_k: int = 0
    full_n: int = 0

    def _c(self) -> _lib.Config:
        c = _lib.Config()
        _c.mpl_config_init(byref(c), int(self.k), int(self.n))
        c.full_k, c.full_n = int(self.full_k), int(self.full_n)
        c.wtype = _parse(_c.mpl_wtype_parse, "wtype", self.wtype)
        c.act = _parse(_c.mpl_act_parse, "act", self.act)
        c.group_size = int(self.group_size)
        c.zero_points = int(bool(self.zero_points))
        c.act_order = int(bool(self.act_order))
        c.mode = 1 if self.w4a8 else 0
        return c

    @classmethod
    def _from_c(cls, c: _lib.Config) -> "Config":
        return cls(k=c.k, n=c.n, wtype=_c.mpl_wtype_name(c.wtype).decode(), act=_c.mpl_act_name(c.act).decode(),
                   group_size=c.group_size, zero_points=bool(c.zero_points), act_order=bool(c.act_order),
                   w4a8=c.mode == 1, full_k=c.full_k, full_n=c.full_n)

    def validate(self) -> None:
        """Raises InvalidArgument (the library's message) when the config breaks a rule."""
        c = self._c()
        _check(_c.mpl_config_validate(byref(c)), "config")


def _as_config(config) -> Config:
    if isinstance(config, Config):
        return config
    if isinstance(config, Mapping):
        return Config(**config)
    raise TypeError(f"config: expected mplinear.Config or a dict, got {type(config).__name__}")


def _options(kernel, threads, device, cuda_device) -> _lib.Options:
    o = _lib.Options()
    _c.mpl_options_init(byref(o))
    o.kernel = kernel.encode() if kernel else None
    o.threads = int(threads)
    if device not in _DEVICES:
        raise _bad(f"device {device!r}: must be 'cpu' or 'cuda'")
    o.device = _DEVICES[device]
    o.cuda_device = int(cuda_device)
    return o


# ---- caller tensors -> mpl_tensor ----

_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _np_addr(a) -> int:
    """Address of a C-contiguous array's data. ctypes' from_buffer is ~6x cheaper than a.ctypes.data
    (which builds a helper object per call) but needs a writeable, non-empty buffer."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


_NP_DTYPES = {np.dtype(np.int32): 1, np.dtype(np.int8): 2, np.dtype(np.uint8): 3, np.dtype(np.float16): 4,
              np.dtype(np.float32): 6, np.dtype(np.int64): 7}
_TORCH_DTYPES = {"int32": 1, "int8": 2, "uint8": 3, "float16": 4, "bfloat16": 5, "float32": 6, "int64": 7}


def _torch_tensor_type():
    t = sys.modules.get("torch")
    return t.Tensor if t is not None else None


def _host_tensor(obj, what: str, bf16_ok: bool = True):
    """(mpl_tensor, keepalive) for a numpy array, a torch CPU tensor or any CPU DLPack producer."""
    tt = _torch_tensor_type()
    if tt is not None and isinstance(obj, tt):
        if obj.device.type != "cpu":
            raise _bad(f"{what}: checkpoint tensors must be on the CPU (got {obj.device}); the layer copies them")
        t = obj.detach().contiguous()
        dt = _TORCH_DTYPES.get(str(t.dtype).replace("torch.", ""))
        if dt is None:
            raise _bad(f"{what}: dtype {t.dtype} is not one of int32 int8 uint8 float16 bfloat16 float32 int64")
        ptr, shape, keep = t.data_ptr(), tuple(t.shape), t
    else:
        if not isinstance(obj, np.ndarray):
            if hasattr(obj, "__dlpack__"):
                obj = np.from_dlpack(obj)
            else:
                obj = np.asarray(obj)
        a = np.ascontiguousarray(obj)
        if a.dtype in _NP_DTYPES:
            dt = _NP_DTYPES[a.dtype]
        elif bf16_ok and a.dtype in _bf16_dtypes():
            dt = 5
        else:
            raise _bad(f"{what}: dtype {a.dtype} is not one of int32 int8 uint8 float16 float32 int64 "
                       f"(bfloat16: ml_dtypes.bfloat16 or uint16 raw bits)")
        ptr, shape, keep = a.ctypes.data, a.shape, a
    if len(shape) > _lib.MAX_DIMS:
        raise _bad(f"{what}: {len(shape)} dimensions, at most {_lib.MAX_DIMS}")
    t = _lib.Tensor()
    t.data, t.dtype, t.ndim = ptr, dt, len(shape)
    for i, s in enumerate(shape):
        t.shape[i] = s
    return t, keep


# ---- owned C handles ----


class _Handle:
    """An owned C handle (self._h): close() frees it once, also at collection; a context manager."""

    _h = None

    def _free(self, h) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Frees the C object now (also done when the object is collected). Idempotent."""
        if self._h:
            h, self._h = self._h, None
            self._free(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- the layer ----


_NP_FORMAT = {1: "e", 2: "H", 3: "f"}  # act -> the buffer format _fast accepts (bf16: uint16 raw bits)


class Layer(_Handle, _fast.LayerBase if _fast else object):
    """A packed quantized linear layer (mpl_layer): y = x W^T + b.

    Layer(config, tensors, *, kernel=None, threads=0, device="cpu", cuda_device=0)
      config: Config (or a dict of its fields).
      tensors: {"layout": "ct"|"gptq"|"gptq-v2"|"awq"|"ct-int", "weight": ..., "scales": ...,
                "zeros": ... (zero points), "g_idx": ... (act-order)} in the checkpoint's own shapes and
                dtypes: numpy arrays, torch CPU tensors or any DLPack producer. The layer packs its own
                copy; the caller may free them afterwards.
      kernel: force a kernel or path ("x86_avx2_w4a16", "ref", "x86_avx512_w4a16:decode").
      threads: CPU threads an apply uses (0 = all cores of the affinity mask).
    """

    def __init__(self, config, tensors: Mapping[str, Any], *, kernel: Optional[str] = None, threads: int = 0,
                 device: str = "cpu", cuda_device: int = 0, bias=None):
        self._h = None
        cfg = _as_config(config)
        ccfg = cfg._c()
        ck = _lib.CheckpointTensors()
        if "layout" not in tensors:
            raise _bad("tensors: missing 'layout' (ct, gptq, gptq-v2, awq or ct-int)")
        ck.layout = _parse(_c.mpl_layout_parse, "layout", tensors["layout"])
        unknown = set(tensors) - {"layout", "weight", "scales", "zeros", "g_idx"}
        if unknown:
            raise _bad(f"tensors: unknown key(s) {sorted(unknown)}: expected layout, weight, scales, zeros, g_idx")
        keep = []
        for name in ("weight", "scales", "zeros", "g_idx"):
            v = tensors.get(name)
            if v is not None:
                t, k = _host_tensor(v, name)
                setattr(ck, name, t)
                keep.append(k)
        opt = _options(kernel, threads, device, cuda_device)
        h = c_void_p()
        _check(_c.mpl_layer_create(byref(ccfg), byref(ck), byref(opt), byref(h)), "mpl_layer_create")
        self._init_handle(h.value, device, bias)

    @classmethod
    def _from_handle(cls, handle: int, device: str, bias=None) -> "Layer":
        self = cls.__new__(cls)
        self._h = None
        self._init_handle(handle, device, bias)
        return self

    def _init_handle(self, handle, device, bias):
        self._h = handle
        self._destroy = _c.mpl_layer_destroy
        self._apply_fn = _c.mpl_layer_apply
        c = _c.mpl_layer_config(handle).contents
        self.config = Config._from_c(c)
        self.k, self.n, self._act = c.k, c.n, c.act
        self.device = device
        self.kernel = _c.mpl_layer_kernel(handle).decode()
        self._np_act = _ACT_NP.get(self._act)  # None for bf16: x's own dtype (uint16 or ml_dtypes.bfloat16)
        self._np_ok = (self._np_act,) if self._np_act is not None else tuple(_bf16_dtypes())
        self._torch_act = None
        self._tensor_type = None
        self.bias = None
        if bias is not None:
            self.bias = bias
        if _fast:
            self._fast_bind(handle, self.k, self.n, _NP_FORMAT[self._act], self._np_ok[0])

    def _free(self, h) -> None:  # the packed weights (mpl_layer_destroy, bound at creation)
        if _fast:
            self._fast_unbind()
        self._destroy(h)

    def _handle(self):
        if not self._h:
            raise _bad("layer: used after close()")
        return self._h

    def __repr__(self):
        c = self.config
        return (f"mplinear.Layer(k={c.k}, n={c.n}, wtype={c.wtype}, act={c.act}, group_size={c.group_size}, "
                f"zero_points={c.zero_points}, act_order={c.act_order}, w4a8={c.w4a8}, kernel={self.kernel!r})")

    def path(self, m: int) -> Optional[str]:
        """The "<kernel>:<path>" an apply of m rows takes (mpl_layer_path); None if no path can run m."""
        p = _c.mpl_layer_path(self._handle(), int(m))
        return p.decode() if p else None

    @property
    def threads(self) -> int:
        return _c.mpl_layer_threads(self._handle())

    @property
    def weight_bytes(self) -> int:
        return _c.mpl_layer_weight_bytes(self._handle())

    def weight_rounding(self, m: int) -> float:
        """mpl_layer_weight_rounding: 0 when the path for m rows keeps the exact per-group contract."""
        return _c.mpl_layer_weight_rounding(self._handle(), int(m))

    def _apply_py(self, x, bias=None, out=None):
        """y = x W^T + bias for x of shape [..., k] in the activation type; returns y [..., n].

        x: a numpy array (bf16: uint16 raw bits or ml_dtypes.bfloat16), a torch tensor (CPU, or CUDA for a
        CUDA layer: asynchronous on the current stream) or any CPU DLPack producer (the result is then a
        numpy array). bias: [n] in the activation type, or None (the layer's own bias, if it has one).
        out: a C-contiguous array of the same kind, shape [..., n] and dtype to write into (returned).
        The GIL is released while the kernel runs.

        With mplinear._fast, apply is its C method, which runs the common cases (numpy arrays and CPU torch
        tensors of the layer's dtype, contiguous, a shape seen before) and passes every other call to this
        method; without it, this method is apply.
        """
        h = self._h
        if not h:
            self._handle()
        if bias is None:
            bias = self.bias
        tx = type(x)
        if tx is np.ndarray:
            return self._apply_numpy(h, x, bias, out)
        if tx is self._tensor_type:  # torch.Tensor, once the torch path has run
            return self._apply_torch(h, x, bias, out)
        tt = _torch_tensor_type()
        if tt is not None and isinstance(x, tt):
            return self._apply_torch(h, x, bias, out)
        if hasattr(x, "__dlpack__"):
            return self._apply_numpy(h, np.from_dlpack(x), bias, out)
        raise TypeError(f"x: expected a numpy array, a torch tensor or a DLPack producer, got {type(x).__name__}")

    if not _fast:
        apply = _apply_py

    def _apply_numpy(self, h, x, bias, out):
        shape = x.shape
        if not shape or shape[-1] != self.k:
            raise _bad(f"x: shape {shape}: the last dimension must be k = {self.k}")
        dt = x.dtype
        if dt not in self._np_ok:
            raise _bad(f"x: dtype {dt}: the layer's activation type is {self.config.act} "
                       f"({' or '.join(str(d) for d in self._np_ok)})")
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        oshape = shape[:-1] + (self.n,)
        if out is None:
            out = np.empty(oshape, dt)
        elif type(out) is not np.ndarray or out.shape != oshape or out.dtype != dt or not out.flags.c_contiguous \
                or not out.flags.writeable:
            raise _bad(f"out: must be a writeable C-contiguous numpy array of shape {oshape} and dtype {dt}")
        m = x.size // self.k if self.k else (out.size // self.n if self.n else 0)
        bp = None
        if bias is not None:
            if type(bias) is not np.ndarray:
                bias = np.from_dlpack(bias) if hasattr(bias, "__dlpack__") else np.asarray(bias)
            if bias.shape != (self.n,) or bias.dtype != dt:
                raise _bad(f"bias: must be shape ({self.n},) and dtype {dt}, got {bias.shape} {bias.dtype}")
            bias = np.ascontiguousarray(bias)
            bp = _np_addr(bias)
        st = self._apply_fn(h, m, _np_addr(x), bp, _np_addr(out))
        if st:
            _raise(st, "mpl_layer_apply")
        return out

    def _torch_init(self):
        """Per-layer constants of the torch path, made on its first call (torch is imported by then)."""
        import torch

        self._torch = torch
        self._tensor_type = torch.Tensor
        self._torch_act = getattr(torch, _ACT_TORCH[self._act])
        self._cuda = self.device == "cuda"
        self._tshapes = {}  # x.shape -> (m, output shape), for the shapes seen (bounded: see _torch_shape)
        if _fast and not self._cuda:  # _fast runs CPU layers' torch calls (a CUDA layer needs the stream)
            # torch._C._to_dlpack: one call for x's dtype, device, shape, strides and address (private; without
            # it every torch call takes this Python path)
            _fast.set_torch(torch.Tensor, getattr(torch._C, "_to_dlpack", None))
            self._fast_torch()

    def _torch_shape(self, shape):
        """(m, output shape) for x of shape `shape`, checked once per shape and then looked up."""
        if not shape or shape[-1] != self.k:
            raise _bad(f"x: shape {tuple(shape)}: the last dimension must be k = {self.k}")
        oshape = tuple(shape[:-1]) + (self.n,)
        m = 1
        for d in shape[:-1]:
            m *= d
        if len(self._tshapes) >= 64:  # many distinct shapes (prefill lengths): start over, stay small
            self._tshapes.clear()
        self._tshapes[shape] = r = (m, oshape)
        return r

    def _apply_torch(self, h, x, bias, out):
        # The fixed cost of this path is the binding's overhead on every decode call: the checks are the
        # cheap forms (is_cuda, not device.type), the shape check is a dict lookup after the first call of
        # a shape, and the output comes from x.new_empty(*dims) (x's dtype and device; about half the
        # cost of torch.empty(shape, dtype=..., device=...)).
        if self._torch_act is None:
            self._torch_init()
        shape = x.shape
        r = self._tshapes.get(shape)
        m, oshape = r if r is not None else self._torch_shape(shape)
        if x.dtype is not self._torch_act:
            raise _bad(f"x: dtype {x.dtype}: the layer's activation type is {self._torch_act}")
        cuda = self._cuda
        if not (x.is_cuda if cuda else x.is_cpu):
            raise _bad(f"x: on {x.device}, the layer is a {self.device} layer")
        if not x.is_contiguous():
            x = x.contiguous()
        if out is None:
            out = x.new_empty(*oshape)
        elif not isinstance(out, self._torch.Tensor) or out.shape != oshape or out.dtype is not x.dtype \
                or not (out.device == x.device if cuda else out.is_cpu) or not out.is_contiguous():
            raise _bad(f"out: must be a contiguous {x.dtype} tensor of shape {oshape} on {x.device}")
        bp = None
        if bias is not None:
            torch = self._torch
            if not isinstance(bias, torch.Tensor):
                bias = torch.from_numpy(np.ascontiguousarray(bias))
                if bias.dtype == torch.uint16:  # numpy's bf16 convention: raw bits
                    bias = bias.view(torch.bfloat16)
                bias = bias.to(x.device)
            if bias.shape != (self.n,) or bias.dtype is not x.dtype \
                    or not (bias.device == x.device if cuda else bias.is_cpu):
                raise _bad(f"bias: must be a {x.dtype} tensor of shape ({self.n},) on {x.device}")
            if not bias.is_contiguous():
                bias = bias.contiguous()
            bp = bias.data_ptr()
        if cuda:
            stream = self._torch.cuda.current_stream(x.device).cuda_stream
            st = _c.mpl_layer_apply_device(h, m, x.data_ptr(), bp, out.data_ptr(), stream)
            if st:
                _raise(st, "mpl_layer_apply_device")
            return out
        st = self._apply_fn(h, m, x.data_ptr(), bp, out.data_ptr())
        if st:
            _raise(st, "mpl_layer_apply")
        return out


# ---- the chooser ----


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The chooser's verdict on one kernel: ok, or the reason code (mpl_reason name) and the message."""

    kernel: str
    ok: bool
    reason: str
    message: str
    chosen: bool = False


@dataclasses.dataclass(frozen=True)
class Choice:
    """mplinear.choose's answer: the chosen kernel (None if none can run the config), the path an apply of m
    rows takes, and every kernel's verdict of the backend, in priority order."""

    kernel: Optional[str]
    path: Optional[str]
    verdicts: tuple
    message: str = ""

    def __iter__(self):
        return iter(self.verdicts)


def kernels():
    """Every kernel of every backend built: dicts of name, backend, layout, requires, paths (the paths' rows)."""
    out = []
    for i in range(_c.mpl_kernel_count()):
        ki = _lib.KernelInfo()
        _check(_c.mpl_kernel_get(i, byref(ki)), "mpl_kernel_get")
        paths = []
        for j in range(ki.paths):
            pi = _lib.PathInfo()
            _check(_c.mpl_path_get(i, j, byref(pi)), "mpl_path_get")
            paths.append({"name": pi.name.decode(), "requires": pi.requires.decode(), "m_min": pi.m_min,
                          "m_max": pi.m_max, "m_limit": pi.m_limit, "why": pi.why.decode()})
        out.append({"name": ki.name.decode(), "backend": ki.backend.decode(), "layout": ki.layout.decode(),
                    "requires": ki.requires.decode(), "paths": paths})
    return out


def choose(config, *, kernel: Optional[str] = None, device: str = "cpu", cuda_device: int = 0, m: int = 1) -> Choice:
    """The chooser's verdict on every kernel of the device's backend for config on this machine (mpl_check for
    each kernel, mpl_choose for the pick, mpl_choose_path for m rows), without creating a layer."""
    cfg = _as_config(config)._c()
    opt = _options(kernel, 0, device, cuda_device)
    backend = "cuda" if device == "cuda" else "cpu"
    chosen = c_char_p()
    entries = (_lib.ChoiceEntry * 64)()
    count = c_int(0)
    st = _c.mpl_choose(byref(cfg), byref(opt), byref(chosen), entries, 64, byref(count))
    message = ""
    if st == 2:  # MPL_ERR_UNSUPPORTED: no kernel; the verdicts below say why
        message = _c.mpl_last_error().decode(errors="replace")
    elif st:
        _raise(st, "mpl_choose")
    name = chosen.value.decode() if chosen.value else None
    verdicts = []
    for kinfo in kernels():
        if kinfo["backend"] != backend:
            continue
        v = _lib.Verdict()
        _check(_c.mpl_check(byref(cfg), byref(opt), kinfo["name"].encode(), byref(v)), "mpl_check")
        verdicts.append(Verdict(kernel=kinfo["name"], ok=v.reason == 0, reason=_c.mpl_reason_name(v.reason).decode(),
                                message=v.message.decode(errors="replace"), chosen=kinfo["name"] == name))
    path = None
    if name is not None:
        p = c_char_p()
        if _c.mpl_choose_path(byref(cfg), byref(opt), int(m), byref(p)) == 0 and p.value:
            path = p.value.decode()
    return Choice(kernel=name, path=path, verdicts=tuple(verdicts), message=message)


def platform() -> dict:
    """mpl_platform_get: CPU model, usable ISA (after MPL_MAX_ISA), threads, CUDA devices."""
    p = _lib.PlatformInfo()
    _check(_c.mpl_platform_get(byref(p)), "mpl_platform_get")
    buf = ctypes.create_string_buffer(512)
    _c.mpl_isa_string(p.isa, buf, 512)
    return {"cpu_model": p.cpu_model.decode(), "isa": buf.value.decode(), "cpu_threads": p.cpu_threads,
            "isa_cap": p.isa_cap.decode(), "cuda_built": bool(p.cuda_built), "cuda_devices": p.cuda_devices,
            "cuda_name": p.cuda_name.decode(), "cuda_cc": p.cuda_cc, "cuda_note": p.cuda_note.decode()}


# ---- checkpoint folders ----


@dataclasses.dataclass(frozen=True)
class LayerInfo:
    """One quantized linear module of a checkpoint folder (mpl_model_layer_info)."""

    index: int
    name: str
    config: Config
    layout: str
    has_bias: bool
    file: str


class Model(_Handle):
    """A quantized checkpoint folder (config.json + *.safetensors: GPTQ, AWQ, compressed-tensors), mapped
    read-only (mpl_model_open; docs/checkpoints.md). Layers created from it outlive it."""

    def __init__(self, path):
        self._h = None
        h = c_void_p()
        _check(_c.mpl_model_open(str(path).encode(), byref(h)), f"mpl_model_open {path}")
        self._h = h.value
        self.path = str(path)
        self.quant_method = _c.mpl_model_quant_method(self._h).decode()
        self.act = _c.mpl_act_name(_c.mpl_model_act(self._h)).decode()
        self.layers = []
        for i in range(_c.mpl_model_layer_count(self._h)):
            li = _lib.ModelLayerInfo()
            _check(_c.mpl_model_layer_get(self._h, i, byref(li)), "mpl_model_layer_get")
            self.layers.append(LayerInfo(index=i, name=li.name.decode(), config=Config._from_c(li.config),
                                         layout=_c.mpl_layout_name(li.layout).decode(), has_bias=bool(li.has_bias),
                                         file=li.file.decode()))
        self._by_name = {li.name: li for li in self.layers}

    def _free(self, h) -> None:
        _c.mpl_model_close(h)

    def __repr__(self):
        return f"mplinear.Model({self.path!r}, quant_method={self.quant_method!r}, layers={len(self.layers)})"

    def info(self, name) -> LayerInfo:
        if isinstance(name, int):
            return self.layers[name]
        if name not in self._by_name:
            raise _bad(f"layer {name!r}: no quantized linear layer of that name in {self.path}")
        return self._by_name[name]

    def bias(self, name, act: Optional[str] = None):
        """The layer's bias ([n], numpy, in act; bf16 as uint16 bits), or None when it has none."""
        li = self.info(name)
        if not li.has_bias:
            return None
        a = _parse(_c.mpl_act_parse, "act", act) if act else _c.mpl_model_act(self._h)
        out = np.empty(li.config.n, _ACT_NP.get(a, np.dtype(np.uint16)))
        _check(_c.mpl_model_layer_bias(self._h, li.index, a, out.ctypes.data), "mpl_model_layer_bias")
        return out

    def layer(self, name, *, act: Optional[str] = None, kernel: Optional[str] = None, threads: int = 0,
              device: str = "cpu", cuda_device: int = 0) -> Layer:
        """Creates the layer (mpl_model_layer_create) with activation type act (None = the checkpoint's);
        the layer's bias attribute holds the checkpoint's bias, which apply adds by default."""
        if not self._h:
            raise _bad("model: used after close()")
        li = self.info(name)
        a = _parse(_c.mpl_act_parse, "act", act) if act else 0
        opt = _options(kernel, threads, device, cuda_device)
        h = c_void_p()
        _check(_c.mpl_model_layer_create(self._h, li.index, byref(opt), a, byref(h)), f"layer {li.name}")
        return Layer._from_handle(h.value, device, self.bias(li.index, act))

"""ctypes declarations of include/mplinear.h, loaded from the libmplinear.so inside this package.

Every struct here mirrors the header field for field; tests/test_abi.py compiles a C program against
the header shipped in the package and checks sizeof and offsetof of each one against these.
ctypes.CDLL (not PyDLL) releases the GIL around every foreign call, so a long apply does not block
other Python threads.
"""
import ctypes
import os
from ctypes import POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int64, c_size_t, c_uint16, c_uint32, c_void_p, c_float

MAX_DIMS = 4


class Config(Structure):
    _fields_ = [("k", c_int64), ("n", c_int64), ("full_k", c_int64), ("full_n", c_int64),
                ("wtype", c_int), ("act", c_int), ("group_size", c_int64), ("zero_points", c_int),
                ("act_order", c_int), ("mode", c_int)]


class Tensor(Structure):
    _fields_ = [("data", c_void_p), ("dtype", c_int), ("ndim", c_int), ("shape", c_int64 * MAX_DIMS)]


class CheckpointTensors(Structure):
    _fields_ = [("layout", c_int), ("weight", Tensor), ("scales", Tensor), ("zeros", Tensor), ("g_idx", Tensor)]


class Options(Structure):
    _fields_ = [("kernel", c_char_p), ("threads", c_int), ("device", c_int), ("cuda_device", c_int),
                ("vulkan_device", c_int), ("vulkan_device_name", c_char_p)]


class KernelInfo(Structure):
    _fields_ = [("name", c_char_p), ("backend", c_char_p), ("layout", c_char_p), ("requires", c_char_p),
                ("paths", c_int)]


class PathInfo(Structure):
    _fields_ = [("name", c_char_p), ("kernel", c_char_p), ("requires", c_char_p), ("m_min", c_int64),
                ("m_max", c_int64), ("m_limit", c_int64), ("why", c_char_p)]


class ChoiceEntry(Structure):
    _fields_ = [("kernel", c_char_p), ("reason", c_int), ("message", c_char * 256)]


class Verdict(Structure):
    _fields_ = [("reason", c_int), ("message", c_char * 256), ("m_min", c_int64), ("m_max", c_int64)]


class PlatformInfo(Structure):
    _fields_ = [("cpu_model", c_char * 64), ("isa", c_uint32), ("isa_cpuid", c_uint32), ("cpu_threads", c_int),
                ("isa_cap", c_char * 16), ("cuda_built", c_int), ("cuda_devices", c_int), ("cuda_name", c_char * 64),
                ("cuda_cc", c_int), ("cuda_note", c_char * 128)]


class ModelLayerInfo(Structure):
    _fields_ = [("name", c_char_p), ("config", Config), ("layout", c_int), ("has_bias", c_int), ("file", c_char_p),
                ("zeros_word_add", c_uint32)]


# (name, restype, argtypes) of every function the package calls.
_SIGNATURES = [
    ("mpl_status_string", c_char_p, [c_int]),
    ("mpl_last_error", c_char_p, []),
    ("mpl_version", c_char_p, []),
    ("mpl_version_number", c_int, []),
    ("mpl_config_init", None, [POINTER(Config), c_int64, c_int64]),
    ("mpl_config_validate", c_int, [POINTER(Config)]),
    ("mpl_wtype_name", c_char_p, [c_int]),
    ("mpl_act_name", c_char_p, [c_int]),
    ("mpl_wtype_parse", c_int, [c_char_p, POINTER(c_int)]),
    ("mpl_act_parse", c_int, [c_char_p, POINTER(c_int)]),
    ("mpl_layout_name", c_char_p, [c_int]),
    ("mpl_layout_parse", c_int, [c_char_p, POINTER(c_int)]),
    ("mpl_dtype_name", c_char_p, [c_int]),
    ("mpl_options_init", None, [POINTER(Options)]),
    ("mpl_layer_create", c_int, [POINTER(Config), POINTER(CheckpointTensors), POINTER(Options), POINTER(c_void_p)]),
    ("mpl_layer_apply", c_int, [c_void_p, c_int64, c_void_p, c_void_p, c_void_p]),
    ("mpl_layer_apply_device", c_int, [c_void_p, c_int64, c_void_p, c_void_p, c_void_p, c_void_p]),
    ("mpl_layer_destroy", None, [c_void_p]),
    ("mpl_layer_kernel", c_char_p, [c_void_p]),
    ("mpl_layer_path", c_char_p, [c_void_p, c_int64]),
    ("mpl_layer_config", POINTER(Config), [c_void_p]),
    ("mpl_layer_threads", c_int, [c_void_p]),
    ("mpl_layer_weight_bytes", c_size_t, [c_void_p]),
    ("mpl_layer_weight_rounding", c_double, [c_void_p, c_int64]),
    ("mpl_reason_name", c_char_p, [c_int]),
    ("mpl_kernel_count", c_int, []),
    ("mpl_kernel_get", c_int, [c_int, POINTER(KernelInfo)]),
    ("mpl_path_get", c_int, [c_int, c_int, POINTER(PathInfo)]),
    ("mpl_choose", c_int, [POINTER(Config), POINTER(Options), POINTER(c_char_p), POINTER(ChoiceEntry), c_int,
                           POINTER(c_int)]),
    ("mpl_check", c_int, [POINTER(Config), POINTER(Options), c_char_p, POINTER(Verdict)]),
    ("mpl_choose_path", c_int, [POINTER(Config), POINTER(Options), c_int64, POINTER(c_char_p)]),
    ("mpl_platform_get", c_int, [POINTER(PlatformInfo)]),
    ("mpl_isa_string", None, [c_uint32, c_char_p, c_size_t]),
    ("mpl_f32_to_bf16", c_uint16, [c_float]),
    ("mpl_bf16_to_f32", c_float, [c_uint16]),
    ("mpl_model_open", c_int, [c_char_p, POINTER(c_void_p)]),
    ("mpl_model_close", None, [c_void_p]),
    ("mpl_model_quant_method", c_char_p, [c_void_p]),
    ("mpl_model_act", c_int, [c_void_p]),
    ("mpl_model_layer_count", c_int, [c_void_p]),
    ("mpl_model_layer_get", c_int, [c_void_p, c_int, POINTER(ModelLayerInfo)]),
    ("mpl_model_find_layer", c_int, [c_void_p, c_char_p, POINTER(c_int)]),
    ("mpl_model_layer_create", c_int, [c_void_p, c_int, POINTER(Options), c_int, POINTER(c_void_p)]),
    ("mpl_model_layer_bias", c_int, [c_void_p, c_int, c_int, c_void_p]),
]


def library_path():
    """The shared library this package loads: MPLINEAR_LIBRARY if set (a build tree's), else the packaged one."""
    env = os.environ.get("MPLINEAR_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libmplinear.so")


def header_path():
    """The mplinear.h the packaged library was built from."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include", "mplinear.h")


def _load():
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"mplinear: cannot load the shared library {path}: {e}") from e
    for name, restype, argtypes in _SIGNATURES:
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes
    return lib


lib = _load()

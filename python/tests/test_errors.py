"""Errors carry the library's status and message; the ctypes structs match the C header."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import mplinear
from mplinear import _lib
from packing import pack, random_layer


def ct_layer_tensors(k=128, n=16, group_size=32, wtype="uint4b8"):
    codes, scales, zeros, g_idx = random_layer(np.random.default_rng(0), k, n, wtype, group_size)
    return pack("ct", 4, codes, scales, zeros, g_idx)


def test_invalid_config_names_field_and_rule():
    with pytest.raises(mplinear.InvalidArgument) as e:
        mplinear.Config(k=128, n=16, act="f32", group_size=48).validate()
    assert e.value.status == 1 and e.value.status_name == "invalid argument"
    assert "48" in e.value.message and "group" in e.value.message
    assert isinstance(e.value, ValueError)  # idiomatic catching works too


def test_unknown_names():
    with pytest.raises(mplinear.InvalidArgument, match="wtype"):
        mplinear.Layer(mplinear.Config(k=128, n=16, wtype="uint3"), ct_layer_tensors())
    with pytest.raises(mplinear.InvalidArgument, match="layout"):
        mplinear.Layer(mplinear.Config(k=128, n=16, act="f32", group_size=32), {**ct_layer_tensors(), "layout": "gguf"})
    with pytest.raises(mplinear.InvalidArgument, match="unknown key"):
        mplinear.Layer(mplinear.Config(k=128, n=16, act="f32", group_size=32), {**ct_layer_tensors(), "qweight": 1})
    with pytest.raises(mplinear.InvalidArgument, match="device"):
        mplinear.Layer(mplinear.Config(k=128, n=16, act="f32", group_size=32), ct_layer_tensors(), device="tpu")


def test_tensor_shape_mismatch_names_the_tensor():
    t = ct_layer_tensors()
    t["weight"] = t["weight"][:, :-1].copy()
    with pytest.raises(mplinear.InvalidArgument) as e:
        mplinear.Layer(mplinear.Config(k=128, n=16, act="f32", group_size=32), t)
    assert "weight_packed" in e.value.message or "weight" in e.value.message
    assert "mpl_layer_create" in str(e.value)


def test_missing_zero_points():
    t = ct_layer_tensors(wtype="uint4")
    del t["zeros"]
    with pytest.raises(mplinear.InvalidArgument, match="zero"):
        mplinear.Layer(mplinear.Config(k=128, n=16, wtype="uint4", act="f32", group_size=32, zero_points=True), t)


def test_unknown_forced_kernel_and_unsupported():
    cfg = mplinear.Config(k=128, n=16, act="f32", group_size=32)
    with pytest.raises(mplinear.InvalidArgument, match="no_such_kernel"):
        mplinear.Layer(cfg, ct_layer_tensors(), kernel="no_such_kernel")
    # a W4A16 config forced onto a W4A8 kernel: valid config, the kernel refuses it
    with pytest.raises((mplinear.Unsupported, mplinear.NoHardware)) as e:
        mplinear.Layer(cfg, ct_layer_tensors(), kernel="x86_avx2_w4a8")
    assert e.value.status in (2, 3) and e.value.message


def test_apply_argument_errors():
    layer = mplinear.Layer(mplinear.Config(k=128, n=16, act="f32", group_size=32), ct_layer_tensors())
    with pytest.raises(mplinear.InvalidArgument, match="last dimension"):
        layer.apply(np.zeros((2, 64), np.float32))
    with pytest.raises(mplinear.InvalidArgument, match="dtype"):
        layer.apply(np.zeros((2, 128), np.float64))
    with pytest.raises(mplinear.InvalidArgument, match="out"):
        layer.apply(np.zeros((2, 128), np.float32), out=np.zeros((2, 17), np.float32))
    with pytest.raises(mplinear.InvalidArgument, match="bias"):
        layer.apply(np.zeros((2, 128), np.float32), bias=np.zeros(15, np.float32))
    with pytest.raises(TypeError):
        layer.apply("x")
    layer.close()
    layer.close()  # idempotent
    with pytest.raises(mplinear.InvalidArgument, match="after close"):
        layer.apply(np.zeros((1, 128), np.float32))


def test_model_errors(tmp_path):
    with pytest.raises(mplinear.Error) as e:
        mplinear.Model(str(tmp_path / "nope"))
    assert e.value.status in (6, 7) and "nope" in str(e.value)  # MPL_ERR_IO (or FORMAT), naming the path
    (tmp_path / "config.json").write_text('{"quantization_config": {"quant_method": "bitsandbytes"}}')
    with pytest.raises(mplinear.Error) as e:
        mplinear.Model(str(tmp_path))
    assert e.value.status in (2, 6, 7) and e.value.message


ABI_PROGRAM = r"""
#include <stddef.h>
#include <stdio.h>
#include "mplinear.h"
#define S(t) printf(#t " %zu\n", sizeof(t));
#define O(t, f) printf(#t "." #f " %zu\n", offsetof(t, f));
int main(void) {
    S(mpl_config) O(mpl_config, group_size) O(mpl_config, mode)
    S(mpl_tensor) O(mpl_tensor, shape)
    S(mpl_checkpoint_tensors) O(mpl_checkpoint_tensors, g_idx)
    S(mpl_options) O(mpl_options, cuda_device)
    S(mpl_kernel_info) O(mpl_kernel_info, paths)
    S(mpl_path_info) O(mpl_path_info, why)
    S(mpl_choice_entry) O(mpl_choice_entry, message)
    S(mpl_verdict) O(mpl_verdict, m_max)
    S(mpl_platform_info) O(mpl_platform_info, cuda_note)
    S(mpl_model_layer_info) O(mpl_model_layer_info, file)
    return 0;
}
"""

STRUCTS = {"mpl_config": _lib.Config, "mpl_tensor": _lib.Tensor, "mpl_checkpoint_tensors": _lib.CheckpointTensors,
           "mpl_options": _lib.Options, "mpl_kernel_info": _lib.KernelInfo, "mpl_path_info": _lib.PathInfo,
           "mpl_choice_entry": _lib.ChoiceEntry, "mpl_verdict": _lib.Verdict, "mpl_platform_info": _lib.PlatformInfo,
           "mpl_model_layer_info": _lib.ModelLayerInfo}


def test_ctypes_structs_match_the_header(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None or not os.path.exists(mplinear.header_path()):
        pytest.skip("no C compiler or no packaged header")
    src = tmp_path / "abi.c"
    src.write_text(ABI_PROGRAM)
    exe = tmp_path / "abi"
    subprocess.run([cc, "-std=c11", "-I", os.path.dirname(mplinear.header_path()), str(src), "-o", str(exe)],
                   check=True)
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        name, value = line.split()
        value = int(value)
        if "." in name:
            struct, field = name.split(".")
            assert getattr(STRUCTS[struct], field).offset == value, name
        else:
            assert __import__("ctypes").sizeof(STRUCTS[name]) == value, name


def test_version_matches_header():
    with open(mplinear.header_path()) as f:
        assert f'#define MPL_VERSION_STRING "{mplinear.version()}"' in f.read()

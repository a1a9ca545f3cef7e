#!/usr/bin/env python3
"""Writes the fuzz seed corpus (standard library only): small valid safetensors images of
every dtype mplinear meets, a sharded-style GPTQ layer, edge cases (empty, metadata only,
zero-size tensors), and the config.json / quantize_config.json files of every method."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"F16": 2, "BF16": 2, "F32": 4, "I32": 4, "I64": 8, "I8": 1, "U8": 1, "F64": 8, "BOOL": 1}


def st(tensors, meta=None, pad=True):
    hdr, data = {}, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        nbytes = n * SIZES[dtype]
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + nbytes]}
        data += bytes((i * 37 + len(name)) & 0xFF for i in range(nbytes))
    h = json.dumps(hdr, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def write(sub, name, blob):
    os.makedirs(os.path.join(HERE, sub), exist_ok=True)
    with open(os.path.join(HERE, sub, name), "wb") as f:
        f.write(blob if isinstance(blob, bytes) else blob.encode())


write("safetensors", "gptq_layer", st({"m.l.qweight": ("I32", [8, 8]), "m.l.scales": ("F16", [2, 8]),
                                       "m.l.qzeros": ("I32", [2, 1]), "m.l.g_idx": ("I32", [64])}, {"format": "pt"}))
write("safetensors", "ct_layer", st({"m.l.weight_packed": ("I32", [8, 8]), "m.l.weight_scale": ("BF16", [8, 2]),
                                     "m.l.weight_zero_point": ("I32", [1, 2]), "m.l.weight_shape": ("I64", [2]),
                                     "m.l.bias": ("F32", [8])}))
write("safetensors", "ct_int", st({"m.l.weight": ("I8", [4, 16]), "m.l.weight_scale": ("F16", [4, 1])}))
write("safetensors", "dtypes", st({"a": ("F64", [2]), "b": ("BOOL", [3]), "c": ("U8", [0]), "d": ("F32", []),
                                   "e": ("I64", [1, 1, 1, 1, 1])}, pad=False))
write("safetensors", "metadata_only", st({}, {"k": "v", "format": "pt"}))
write("safetensors", "empty_object", st({}))
write("safetensors", "zero_sized", st({"z": ("F16", [0, 4]), "w": ("F16", [2])}))

cfg = lambda q, **kw: json.dumps(dict(kw, quantization_config=q), indent=1)
write("hfconfig", "gptq", cfg({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True, "sym": True,
                               "checkpoint_format": "gptq"}, torch_dtype="float16"))
write("hfconfig", "gptq_v2_asym", cfg({"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": False,
                                       "sym": False, "format": "gptq_v2", "dynamic": {}}, dtype="bfloat16"))
write("hfconfig", "awq", cfg({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                              "version": "gemm", "modules_to_not_convert": ["visual"]}, torch_dtype="float16"))
write("hfconfig", "quantize_config", json.dumps({"bits": 4, "group_size": 32, "desc_act": False, "sym": True}))
write("hfconfig", "quant_config_awq", json.dumps({"w_bit": 4, "q_group_size": 64, "zero_point": True,
                                                  "version": "GEMM"}))
write("hfconfig", "ct_mixed", cfg({
    "quant_method": "compressed-tensors", "format": "mixed-precision", "quantization_status": "compressed",
    "sparsity_config": {}, "transform_config": {}, "ignore": ["lm_head", "re:.*\\.gate$"],
    "config_groups": {
        "group_0": {"format": "pack-quantized", "targets": ["re:.*self_attn\\..*", "model.x.y"],
                    "weights": {"num_bits": 4, "type": "int", "symmetric": False, "strategy": "group",
                                "group_size": 32, "actorder": "group", "dynamic": False}},
        "group_1": {"format": "int-quantized", "targets": ["Linear"],
                    "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "channel"},
                    "input_activations": {"num_bits": 8, "type": "int", "symmetric": True, "dynamic": True,
                                          "strategy": "token"}}}}, torch_dtype="bfloat16"))
write("hfconfig", "ct_unknown_format", cfg({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                                            "config_groups": {"g": {"targets": ["Linear"],
                                                                    "weights": {"num_bits": 4, "type": "float"}}}}))
write("hfconfig", "unknown_method", cfg({"quant_method": "bitsandbytes", "load_in_4bit": True}))
write("hfconfig", "plain_model", json.dumps({"architectures": ["LlamaForCausalLM"], "torch_dtype": "float32"}))

# ---- .npy images (fuzz_npy): every dtype the reader takes, versions 1.0/2.0/3.0, 0-d, empty, 1-D ----


def npy(descr, shape, major=1, payload=None):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    pre = 10 if major == 1 else 12
    total = (pre + len(d) + 1 + 63) // 64 * 64
    h = (d + " " * (total - pre - len(d) - 1) + "\n").encode()
    size = {"<i4": 4, "<i8": 8, "|i1": 1, "|u1": 1, "<f2": 2, "<f4": 4, "<u2": 2}[descr]
    n = 1
    for s in shape:
        n *= s
    if payload is None:
        payload = bytes((i * 29 + 3) & 0xFF for i in range(n * size))
    hl = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + hl + h + payload


for descr, tag in [("<i4", "i4"), ("<i8", "i8"), ("|i1", "i1"), ("|u1", "u1"), ("<f2", "f2"), ("<f4", "f4"),
                   ("<u2", "bf16")]:
    write("npy", "2d_" + tag, npy(descr, [3, 5]))
write("npy", "v2", npy("<f4", [2, 8], major=2))
write("npy", "v3", npy("<i4", [4], major=3))
write("npy", "scalar", npy("<f4", []))
write("npy", "empty", npy("<f2", [0, 7]))
write("npy", "rank8", npy("|u1", [1, 2, 1, 2, 1, 2, 1, 2]))


# fuzz_decode: the first six bytes pick the layer (k = 16 (1 + b0 % 20), n = 1 + b1 % 80, weight type, group size /
# act-order / scale dtype, layout, spoil: fuzz/fuzz_decode.c); the rest fills codes, scales, zeros, g_idx and then the
# spoiling. Types: 0 uint4b8 1 uint4 2 int4 3 uint8b128 4 uint8 5 uint3b4 6 uint3 7 uint2b2 8 uint2; group sizes:
# 0 -1, 1 16, 2 32, 3 64, 4 128 (bits 0-2; + 8: act-order; + 16 / 32: bf16 / f32 scales); layouts: 0 ct 1 gptq 2 gptq-v2 3 awq
# 4 ct-int.
def decode_seed(k16, n, wtype, group, layout, spoil, length=1500):
    head = bytes([k16 - 1, n - 1, wtype, group, layout, spoil])
    return head + bytes((i * 131 + 7 * k16 + wtype) & 0xFF for i in range(length))


for name, args in [("gptq_uint4b8_g128", (8, 16, 0, 4, 1, 0)), ("gptq_uint3b4_act_g32", (4, 32, 5, 2 + 8, 1, 0)),
                   ("ct_uint8_g16_bf16", (2, 8, 4, 1 + 16, 0, 0)), ("awq_uint4_g64", (8, 16, 1, 3, 3, 0)),
                   ("ctint_int4_f32", (4, 4, 2, 32, 4, 0)), ("gptqv2_uint2_g_1", (16, 40, 8, 0, 2, 0)),
                   ("ct_uint2b2_xor", (8, 16, 7, 4, 0, 1)), ("gptq_uint4b8_shape", (8, 16, 0, 4, 1, 2)),
                   ("gptq_uint8b128_act_both", (8, 8, 3, 3 + 8, 1, 3))]:
    write("decode", name, decode_seed(*args))

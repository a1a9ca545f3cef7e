"""Test oracle: checkpoint packers written from docs/layouts/checkpoints.md (independent of the C
encoder), exact dequantization in float64, and random quantized layers."""
import numpy as np

AWQ_ORDER = {4: [0, 2, 4, 6, 1, 3, 5, 7], 8: [0, 2, 1, 3]}


def _pack_last(codes, bits):
    """Packs the last axis: field i of word w = codes[..., pf*w + i] (little-endian fields); 3-bit: the dense
    bit stream, value j at stream bits 3j .. 3j + 2 (word 3j // 32), straddling words."""
    if bits == 3:
        c = codes.astype(np.uint64)
        nw = (c.shape[-1] * 3 + 31) // 32
        words = np.zeros((*c.shape[:-1], nw + 1), np.uint64)
        for j in range(c.shape[-1]):
            w, sh = divmod(3 * j, 32)
            v = c[..., j] << np.uint64(sh)
            words[..., w] |= v & np.uint64(0xFFFFFFFF)
            words[..., w + 1] |= v >> np.uint64(32)
        return words[..., :nw].astype(np.uint32).view(np.int32)
    pf = 32 // bits
    c = codes.astype(np.uint32).reshape(*codes.shape[:-1], codes.shape[-1] // pf, pf)
    words = np.zeros(c.shape[:-1], np.uint32)
    for i in range(pf):
        words |= c[..., i] << np.uint32(bits * i)
    return words.view(np.int32)


def _pad_to(a, axis, mult):
    r = (-a.shape[axis]) % mult
    if r == 0:
        return a
    pad = [(0, 0)] * a.ndim
    pad[axis] = (0, r)
    return np.pad(a, pad)


def pack(layout, bits, codes, scales, zeros=None, g_idx=None):
    """codes [N, K] stored codes, scales [N, G], zeros [N, G] raw zero points or None: the checkpoint tensors."""
    pf = 1 if bits == 3 else 32 // bits  # whole values per word (3-bit: a dense stream, no padding to a word)
    n, k = codes.shape
    t = {"layout": layout}
    if layout == "ct":
        t["weight"] = _pack_last(codes, bits)
        t["scales"] = scales
        if zeros is not None:
            t["zeros"] = np.ascontiguousarray(_pack_last(_pad_to(zeros.T, 1, pf), bits).T)  # [Np, G]
    elif layout in ("gptq", "gptq-v2"):
        t["weight"] = np.ascontiguousarray(_pack_last(codes, bits).T)  # [K/pf, N]
        t["scales"] = np.ascontiguousarray(scales.T)
        if zeros is not None:
            z = zeros.T.astype(np.int64)  # [G, N]
            if layout == "gptq":
                z = (z - 1) % (1 << bits)
            t["zeros"] = _pack_last(_pad_to(z, 1, pf), bits)
    elif layout == "awq":
        order = AWQ_ORDER[bits]

        def interleave(a):  # a [R, N]: nibble i of each group of pf columns holds column order[i]
            r, cols = a.shape
            g = a.reshape(r, cols // pf, pf)[:, :, order]
            return _pack_last(g.reshape(r, cols), bits)

        t["weight"] = interleave(np.ascontiguousarray(codes.T))
        t["scales"] = np.ascontiguousarray(scales.T)
        t["zeros"] = interleave(np.ascontiguousarray(zeros.T))
    else:
        raise ValueError(layout)
    if g_idx is not None:
        t["g_idx"] = g_idx
    return t


def dequantize(codes, scales, zeros, g_idx, wtype, group_size):
    """W [N, K] float64: scale[n, g(k)] * (code - zero)."""
    n, k = codes.shape
    bias = {"uint4b8": 8, "uint8b128": 128, "uint3b4": 4, "uint2b2": 2, "int4": 0}.get(wtype)
    if g_idx is None:
        g_idx = np.arange(k) // (group_size if group_size > 0 else k)
    s = scales.astype(np.float64)[:, g_idx]
    if wtype == "int4":
        v = np.where(codes >= 8, codes.astype(np.int64) - 16, codes)
    elif bias is not None:
        v = codes.astype(np.int64) - bias
    else:
        v = codes.astype(np.int64) - zeros.astype(np.int64)[:, g_idx]
    return s * v


def wtype_bits(wtype):
    return {"uint8": 8, "uint3": 3, "uint2": 2}.get(wtype[:5], 4)


def random_layer(rng, k, n, wtype="uint4b8", group_size=-1, act_order=False, scale_dtype=np.float32):
    bits = wtype_bits(wtype)
    g = 1 if group_size == -1 else k // group_size
    codes = rng.integers(0, 1 << bits, size=(n, k), dtype=np.int64)
    # Scales that are exact in f16: small powers of two times small integers.
    scales = (rng.integers(1, 16, size=(n, g)) * 2.0 ** -8).astype(scale_dtype)
    zeros = rng.integers(0, 1 << bits, size=(n, g), dtype=np.int64) if wtype in ("uint2", "uint3", "uint4", "uint8") else None
    g_idx = rng.permutation(np.arange(k) // (k // g)).astype(np.int32) if act_order else None
    return codes, scales, zeros, g_idx


def assert_gil_released(call):
    """call() (a long apply) timed alone, then run on a second thread while this one ticks every ms: a held
    GIL would freeze this thread for the whole call (ticks ~ 0); released, it ticks throughout."""
    import threading
    import time

    t0 = time.perf_counter()
    call()
    single = time.perf_counter() - t0
    done = threading.Event()
    ticks = 0

    def work():
        call()
        done.set()

    th = threading.Thread(target=work)
    th.start()
    time.sleep(0)
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    th.join()
    assert ticks >= min(5, int(single * 1000) // 4), (ticks, single)

#!/usr/bin/env python3
"""Writes the committed seed corpora of the reader fuzzers (stdlib only):
small valid files of every supported kind and a few edge and broken ones.
Run from anywhere: python3 tests/fuzz/make_seeds.py"""
import json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))

def npy(descr, shape, payload, major=1, fortran=False, pad=64, dict_text=None):
    d = dict_text or "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False",
        "(" + "".join("%d," % s for s in shape) + ")" if len(shape) == 1 else
        "(" + ", ".join(str(s) for s in shape) + ")")
    pre = 10 if major == 1 else 12
    total = (pre + len(d) + 1 + pad - 1) // pad * pad
    h = d + " " * (total - pre - len(d) - 1) + "\n"
    lenf = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + lenf + h.encode() + payload

def st(tensors, meta=None, pad=True):
    """tensors: list of (name, dtype, shape, bytes)"""
    hdr, off, data = {}, 0, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dt, shape, b in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        data += b
    j = json.dumps(hdr, separators=(",", ":")).encode()
    if pad:
        j += b" " * ((8 - len(j) % 8) % 8)
    return struct.pack("<Q", len(j)) + j + data

def raw_st(hdr, data):
    j = json.dumps(hdr, separators=(",", ":")).encode()
    return struct.pack("<Q", len(j)) + j + data

def f32(*v): return struct.pack("<%df" % len(v), *v)
def f64(*v): return struct.pack("<%dd" % len(v), *v)
def f16(*v): return struct.pack("<%de" % len(v), *v)

def write(dirname, files):
    d = os.path.join(HERE, dirname)
    os.makedirs(d, exist_ok=True)
    for name, b in files.items():
        with open(os.path.join(d, name), "wb") as fp:
            fp.write(b)

write("corpus_npy", {
    "f4_2x3.npy": npy("<f4", (2, 3), f32(1, 2, 3, -0.5, 1e-8, 65520)),
    "f8_v2.npy": npy("<f8", (4,), f64(1, float("inf"), float("nan"), 2 ** -1074), major=2),
    "f2_v3.npy": npy("<f2", (2, 2), f16(1, 0.5, -2, 65504), major=3),
    "scalar.npy": npy("<f4", (), f32(3.25)),
    "empty.npy": npy("<f4", (0,), b""),
    "native.npy": npy("=f4", (1,), f32(7)),
    "fortran_1d.npy": npy("<f8", (2,), f64(1, 2), fortran=True),
    "old16.npy": npy("<f4", (2,), f32(1, 2), pad=16),
    "dq.npy": npy("<f4", (1,), f32(1), dict_text='{"descr": "<f4", "fortran_order": False, "shape": (1,)}'),
    "bad_dtype.npy": npy("<i4", (1,), b"\0\0\0\0"),
    "bad_trunc.npy": npy("<f4", (3,), f32(1, 2)),
    "bad_fortran.npy": npy("<f4", (2, 2), f32(1, 2, 3, 4), fortran=True),
    "bad_hdr.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'",
})

write("corpus_safetensors", {
    "two.safetensors": st([("a.weight", "F32", [2, 2], f32(1, 2, 3, 4)), ("b", "F64", [1], f64(0.1))]),
    "meta.safetensors": st([("x", "F16", [3], f16(1, 2, 3))], meta={"format": "pt"}),
    "bf16.safetensors": st([("h.0.attn", "BF16", [2], b"\x80\x3f\x00\x40")]),
    "scalar.safetensors": st([("s", "F32", [], f32(5))]),
    "zero.safetensors": st([("z", "F32", [0, 3], b""), ("y", "F32", [1], f32(1))]),
    "empty.safetensors": st([]),
    "unpadded.safetensors": st([("u", "F64", [2], f64(1, 2))], pad=False),
    "bad_dtype.safetensors": st([("i", "I32", [1], b"\0\0\0\0")]),
    "bad_overlap.safetensors": raw_st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                       "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, f32(1, 2)),
    "bad_past_end.safetensors": raw_st({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}, f32(1, 2)),
    "bad_len.safetensors": struct.pack("<Q", 1 << 40) + b"{}",
})
print("seeds written under", HERE)

#!/usr/bin/env python3
"""Writes the extra seeds of tests/fuzz/corpus_npz with numpy itself (the two
fixtures of tests/ref are copied in as stored.npz, deflated.npz, mixed.npz): one
member of each kind, a truncated file, a CRC error, a non-zip and a zip whose
member is not a .npy. Run: /usr/bin/python3 tests/fuzz/make_seeds_npz.py"""
import io, os, shutil, zipfile
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
D = os.path.join(HERE, "corpus_npz")
os.makedirs(D, exist_ok=True)
for n in ("stored", "deflated", "mixed"):
    shutil.copy(os.path.join(HERE, "..", "ref", "npz_%s.npz" % n), os.path.join(D, n + ".npz"))

def save(name, data):
    with open(os.path.join(D, name), "wb") as f:
        f.write(data)

b = io.BytesIO(); np.savez(b, a=np.array([1, 2], dtype=np.float16)); one = b.getvalue()
save("one_f2.npz", one)
b = io.BytesIO(); np.savez_compressed(b, a=np.zeros(64, dtype=np.float32)); save("one_deflated.npz", b.getvalue())
save("trunc.npz", one[: len(one) // 2])
bad = bytearray(one); bad[one.index(b"\x93NUMPY") + 60] ^= 1
save("badcrc.npz", bytes(bad))
save("notzip.npz", b"hello world, not a zip archive at all....")
b = io.BytesIO()
with zipfile.ZipFile(b, "w") as z:
    z.writestr("x.txt", "hi")
save("txt_member.npz", b.getvalue())

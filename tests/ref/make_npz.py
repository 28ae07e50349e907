#!/usr/bin/env python3
"""Writes the .npz fixtures of tests/check_npz.c and tests/check_analyze.c
with numpy itself: npz_stored.npz (numpy.savez) and npz_deflated.npz
(numpy.savez_compressed), the same three arrays in each; npz_mixed.npz, a
float member beside integer and bool ones.
Run: /usr/bin/python3 tests/ref/make_npz.py"""
import os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
arrays = {
    "w": (np.arange(12, dtype=np.float32).reshape(3, 4) * 0.25 - 1),
    "h": np.array([1, -2, 65504, 6e-8], dtype=np.float16),
    "d": np.array([0.1, 1e300, -3.0], dtype=np.float64),
}
np.savez(os.path.join(HERE, "npz_stored.npz"), **arrays)
np.savez_compressed(os.path.join(HERE, "npz_deflated.npz"), **arrays)
# a float member beside integer and bool ones (left out by the reader)
np.savez_compressed(os.path.join(HERE, "npz_mixed.npz"), labels=np.arange(5, dtype=np.int64),
                    x=np.array([0.5, -1.5], dtype=np.float32), mask=np.array([True, False]))

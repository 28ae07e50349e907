#!/usr/bin/python3
"""Golden outputs of two PyTorch CPU kernels whose arithmetic ampsim's
bf16-amp-cpu policy reproduces bit for bit (policy key "kernels": "torch_cpu"):

  gelu_bf16.f32       GELU (approximate='tanh') forward and backward on bf16
                      tensors, as CPU autocast runs it on a bf16 GEMM output:
                      n = 8203 values (not a multiple of the vector width);
                      arrays x, dy, y, dx in that order, each n float32
                      (every value is a bf16 value)
  layernorm_f32.f32   torch.native_layer_norm on float32 rows (eps 1e-5) for
                      the widths 13 32 35 48 128 200 300 1000 (one to eight
                      16-vector chunks, scalar tails); per width, 16 rows:
                      x (16*C), weight (C), bias (C), y (16*C), mean (16),
                      rstd (16)

All little-endian float32 (no oneDNN kernel is involved). Run with Debian's
interpreter:
  /usr/bin/python3 tests/ref/torch_cpu_kernels.py   (python3-torch 1.13, CPU,
one thread; its CPU capability is AVX2, 8 float lanes)."""
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "shapes")
WIDTHS = (13, 32, 35, 48, 128, 200, 300, 1000)
ROWS = 16


def f32(t):
    return t.detach().float().contiguous().numpy().astype("<f4").tobytes()


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(20261201)
    n = 8203
    x = (torch.randn(n, generator=g) * 2.5).bfloat16()
    dy = torch.randn(n, generator=g).bfloat16()
    xr = x.clone().requires_grad_(True)
    y = F.gelu(xr, approximate="tanh")
    y.backward(dy)
    with open(os.path.join(OUT, "gelu_bf16.f32"), "wb") as f:
        for t in (x, dy, y, xr.grad):
            f.write(f32(t))
    with open(os.path.join(OUT, "layernorm_f32.f32"), "wb") as f:
        for C in WIDTHS:
            xs = torch.randn(ROWS, C, generator=g) * 1.7 + 0.3
            w = torch.randn(C, generator=g) * 0.5 + 1.0
            b = torch.randn(C, generator=g) * 0.1
            yl, mean, rstd = torch.native_layer_norm(xs, (C,), w, b, 1e-5)
            for t in (xs, w, b, yl, mean, rstd):
                f.write(f32(t))
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()

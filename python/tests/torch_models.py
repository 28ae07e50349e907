"""Models and data shared by the ampsim.torch tests, the benchmark and the
tutorial: the project's MLP written in PyTorch (tests/ref/mlp_torch.py's
names, init file and batches), a small CNN and a nanoGPT-style block with
functional attention."""
import csv
import gzip
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MLP_INIT = os.path.join(ROOT, "tests", "ref", "mlp_init.safetensors")
DIGITS = os.path.join(ROOT, "datasets", "digits.csv.gz")


def load_digits():
    """digits.csv.gz as (x [1797,64] float32 pixel/16, y [1797] int64), file order."""
    xs, ys = [], []
    with gzip.open(DIGITS, "rt") as f:
        for row in csv.reader(f):
            v = [int(t) for t in row]
            xs.append([p / 16.0 for p in v[:64]])
            ys.append(v[64])
    return torch.tensor(xs, dtype=torch.float32), torch.tensor(ys, dtype=torch.int64)


def load_safetensors(path):
    """{name: float32 tensor} of an F32 safetensors file (struct + json)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).reshape(v["shape"]).clone()
    return out


def batch_rows(step, B, n):
    """Rows of batch `step` under ``ampsim train --no-shuffle``: (B*step + j) mod n."""
    return torch.tensor([(B * step + j) % n for j in range(B)])


class MLP(nn.Module):
    """64-32-10 ReLU MLP with the C emulator's tensor names (fc1, relu1, fc2)."""

    def __init__(self, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class CNN(nn.Module):
    """Conv2d, BatchNorm2d, MaxPool2d, Linear and LayerNorm on 8x8 images.
    The LayerNorm reads the FP32 input: PyTorch 1.13's CPU autocast cannot run
    a LayerNorm on a bf16 tensor with FP32 parameters."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([1, 8, 8])
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(self.ln(x)))))
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class SelfAttention(nn.Module):
    """Causal self-attention written with functional ops (nanoGPT style)."""

    def __init__(self, C, heads):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        hs = C // self.heads
        q = q.view(B, T, self.heads, hs).transpose(1, 2)
        k = k.view(B, T, self.heads, hs).transpose(1, 2)
        v = v.view(B, T, self.heads, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        mask = torch.ones(T, T).tril().view(1, 1, T, T)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    """Pre-norm transformer block: attention and a GELU MLP, both residual."""

    def __init__(self, C, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C)
        self.attn = SelfAttention(C, heads)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class TinyGPT(nn.Module):
    """Token and position embeddings, L blocks, final LayerNorm, LM head."""

    def __init__(self, vocab=96, C=32, heads=4, layers=1, ctx=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, C)
        self.wpe = nn.Embedding(ctx, C)
        self.h = nn.ModuleList([Block(C, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, vocab, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def token_batches(steps, B, T, vocab=96, seed=0):
    """Deterministic (x, y) next-token batches of a repeating pattern."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randint(0, vocab, (4 * T,), generator=g)
    out = []
    for s in range(steps):
        starts = torch.randint(0, 3 * T - 1, (B,), generator=g)
        x = torch.stack([base[i:i + T] for i in starts])
        y = torch.stack([base[i + 1:i + T + 1] for i in starts])
        out.append((x, y))
    return out

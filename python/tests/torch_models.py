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


class ResMLP(nn.Module):
    """An MLP with residual blocks: h = h + gelu(linear(h)); the residual
    stream is used twice per block (its gradient sums two contributions)."""

    def __init__(self, d_in=37, width=53, depth=3, n_out=11):
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.out = nn.Linear(width, n_out)

    def forward(self, x):
        h = F.relu(self.inp(x))
        for b in self.blocks:
            h = h + F.gelu(b(h))
        return self.out(h)


class BlockNet(nn.Module):
    """One pre-norm transformer Block on an FP32 input stream, and a head.
    (The residual stream stays FP32 under CPU autocast: x + bf16 promotes, so
    the LayerNorms read FP32 tensors, which PyTorch 1.13's CPU autocast needs.)"""

    def __init__(self, C=36, heads=3, n_out=13):
        super().__init__()
        self.block = Block(C, heads)
        self.head = nn.Linear(C, n_out)

    def forward(self, x):
        return self.head(self.block(x))


class MHANet(nn.Module):
    """nn.MultiheadAttention on a Linear's output: self-attention on a
    low-precision tensor (query, key and value one tensor, used by one packed
    projection), optionally with a causal mask, then a residual and a head."""

    def __init__(self, C=12, heads=3, batch_first=True, masked=False, n_out=5):
        super().__init__()
        self.batch_first, self.masked = batch_first, masked
        self.inp = nn.Linear(C, C)
        self.attn = nn.MultiheadAttention(C, heads, batch_first=batch_first)
        self.head = nn.Linear(C, n_out)

    def forward(self, x):
        h = self.inp(x)
        s = h if self.batch_first else h.transpose(0, 1)
        T = x.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if self.masked else None
        a = self.attn(s, s, s, attn_mask=mask, need_weights=False)[0]
        return self.head((a if self.batch_first else a.transpose(0, 1)) + x)


class BNCNN(nn.Module):
    """Two Conv2d + BatchNorm2d + ReLU + MaxPool stages, then an
    attention-like product of the features with themselves (h @ h.T, softmax,
    a @ h, a residual: h is used three times) and two Linear layers."""

    def __init__(self, c_in=3, n_out=10):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 12, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(12)
        self.fc1 = nn.Linear(12 * 4 * 4, 40)
        self.fc2 = nn.Linear(40, n_out)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        h = F.max_pool2d(F.relu(self.bn2(self.conv2(h))), 2).flatten(1)
        a = F.softmax(h @ h.T, dim=-1)
        h = h + a @ h
        return self.fc2(F.relu(self.fc1(h)))


class OpsNet(nn.Module):
    """Elementwise ops whose backward reads the output (tanh, sigmoid, exp,
    softmax) or rounds several times (a / b), reductions, SiLU, cat, a
    Python-number operand, a cast back to FP32 (x.float()) and an FP32
    LayerNorm; the first layer's output is used eight times."""

    def __init__(self, d_in=19, width=23, n_out=7):
        super().__init__()
        self.a = nn.Linear(d_in, width)
        self.b = nn.Linear(width, width)
        self.c = nn.Linear(2 * width, n_out)
        self.ln = nn.LayerNorm(width)
        self.register_buffer("proj", torch.linspace(-1, 1, d_in * width).view(d_in, width))

    def forward(self, x):
        h = self.a(x)
        t = torch.tanh(h) * torch.sigmoid(h) + h / (h.abs() + 1.5)
        u = self.b(t)
        u = u * u - u.mean(-1, keepdim=True) + F.silu(u) + torch.exp(-u.abs())
        s = u.sum(-1, keepdim=True)
        v = self.ln((x @ self.proj).float()) + u.float()
        z = torch.cat([u, F.softmax(h, -1) * s], -1)
        return self.c(z) + v[:, :self.c.out_features]


class PrivateKernelNet(nn.Module):
    """A linear layer, then a private kernel that the op table does not list
    (torch._C._nn._upsample_bilinear2d_aa): it passes through unemulated and
    is listed, and strict=True refuses it. Input (2, 8)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch._C._nn._upsample_bilinear2d_aa(self.fc(x).view(2, 1, 2, 4), None, False, [1.0, 1.0])


class SharedNet(nn.Module):
    """One hidden Linear applied `repeat` times (weight sharing, as in ALBERT or
    a recurrent cell called in a loop): the step's cast copy of its weight has
    several uses, whose gradient shares autocast sums in the low format."""

    def __init__(self, d_in=23, width=31, n_out=11, repeat=3):
        super().__init__()
        self.a = nn.Linear(d_in, width)
        self.h = nn.Linear(width, width)
        self.o = nn.Linear(width, n_out)
        self.repeat = repeat

    def forward(self, x):
        h = F.relu(self.a(x))
        for _ in range(self.repeat):
            h = F.relu(self.h(h))
        return self.o(h)


class HandBackNet(nn.Module):
    """Ops that hand back their input (dropout with p = 0 in training,
    contiguous() of a contiguous tensor) between a layer and the several uses
    of its output: in PyTorch's graph those uses are the layer output's own.
    With p > 0 the dropout draws a mask (diff_grads: the same in both runs)."""

    def __init__(self, d_in=19, width=37, n_out=11, p=0.0):
        super().__init__()
        self.a = nn.Linear(d_in, width)
        self.drop = nn.Dropout(p)
        self.o = nn.Linear(width, n_out)

    def forward(self, x):
        h = self.a(x)
        d = self.drop(h)
        c = d.contiguous()
        return self.o(torch.tanh(d) + d * 0.5 + c * h + h)


class RecurrentLM(nn.Module):
    """An embedding, an nn.LSTM or nn.GRU and a linear head. CPU autocast
    leaves the recurrent module off its lists: only its inner GEMMs run in
    bf16, and the state and the gates' products stay FP32 where they meet
    it (aten's RNN.cpp cells)."""

    def __init__(self, cell="lstm", vocab=29, C=24, layers=2, batch_first=True, bidirectional=False, proj=0):
        super().__init__()
        self.emb = nn.Embedding(vocab, C)
        kw = dict(proj_size=proj) if proj else {}       # (an LSTM's projected hidden state)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(C, C, num_layers=layers, batch_first=batch_first,
                                                           bidirectional=bidirectional, **kw)
        self.head = nn.Linear((proj or C) * (2 if bidirectional else 1), vocab)
        self.batch_first = batch_first

    def forward(self, idx):
        x = self.emb(idx if self.batch_first else idx.t())
        y = self.head(self.rnn(x)[0])
        return y if self.batch_first else y.transpose(0, 1)


class PoolNet(nn.Module):
    """Selections that pick an element more than once, so that their backward
    adds gradients: max pooling with overlapping windows (3x3, stride 2, as
    resnet's stem), index_select and gather with repeated indices."""

    def __init__(self, c_in=3, width=10, n_out=11):
        super().__init__()
        self.conv = nn.Conv2d(c_in, width, 3, padding=1)
        self.bn = nn.BatchNorm2d(width)
        self.fc = nn.Linear(2 * width, n_out)
        self.register_buffer("pick", torch.tensor([0, 1, 1, 2, 0, 3] + list(range(4, width))))

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 3, 2, padding=1)
        h = h.index_select(1, self.pick)
        v = h.flatten(2)
        idx = torch.argsort(v.detach(), dim=2)[:, :, -2:].repeat(1, 1, 2)
        g = v.gather(2, idx)
        return self.fc(torch.cat([g.mean(2), v.amax(2)], 1)[:, :self.fc.in_features])


class InplaceNet(nn.Module):
    """A residual block written as torchvision writes it: activations with
    inplace=True and ``out += identity``."""

    def __init__(self, c=6, n_out=11):
        super().__init__()
        self.conv1 = nn.Conv2d(3, c, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c)
        self.act = nn.Hardswish(inplace=True)
        self.fc = nn.Linear(c, n_out)

    def forward(self, x):
        h = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(h))
        out += h
        out = self.act(out)
        return self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))


# kinds of backward_case on a flat input: (model class, its first and last Linear)
_FLAT_CASES = {"mlp": (ResMLP, "inp", "out"), "ops": (OpsNet, "a", "c"), "handback": (HandBackNet, "a", "o"),
               "shared": (SharedNet, "a", "o")}


def backward_case(kind, seed=0, **shape):
    """(model, loss_fn) of the backward-fidelity tests: kind "mlp" (ResMLP),
    "block" (BlockNet), "mha" (MHANet) or "cnn" (BNCNN, 16x16 images); loss_fn(model) is the
    cross-entropy of one fixed batch. shape: the model's keyword arguments
    plus batch (B) and, for "block", "mha" and "gpt" (TinyGPT), context (T); kind
    "ops" is OpsNet, "shared" SharedNet, "handback" HandBackNet, "lstm" and "gru"
    RecurrentLM (context T), "pool" PoolNet (11x11 images),
    "inplace" InplaceNet (9x9 images)."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    shape = dict(shape)
    B = shape.pop("B", 16)
    if kind in _FLAT_CASES:
        cls, inp, out = _FLAT_CASES[kind]
        m = cls(**shape)
        x = torch.randn(B, getattr(m, inp).in_features, generator=g)
        y = torch.randint(0, getattr(m, out).out_features, (B,), generator=g)
    elif kind in ("block", "mha"):
        T = shape.pop("T", 16 if kind == "block" else 7)
        m = (BlockNet if kind == "block" else MHANet)(**shape)
        C = m.head.in_features
        x = torch.randn(B, T, C, generator=g)
        y = torch.randint(0, m.head.out_features, (B * T,), generator=g)
        return m, lambda mod: F.cross_entropy(mod(x).flatten(0, 1), y)
    elif kind in ("lstm", "gru"):
        T = shape.pop("T", 9)
        m = RecurrentLM(kind, **shape)
        V = m.head.out_features
        x = torch.randint(0, V, (B, T), generator=g)
        y = torch.randint(0, V, (B * T,), generator=g)
        return m, lambda mod: F.cross_entropy(mod(x).flatten(0, 1), y)
    elif kind == "gpt":
        T = shape.pop("T", 16)
        m = TinyGPT(ctx=T, **shape)
        V = m.lm_head.out_features
        x = torch.randint(0, V, (B, T), generator=g)
        y = torch.randint(0, V, (B * T,), generator=g)
        return m, lambda mod: F.cross_entropy(mod(x).flatten(0, 1), y)
    elif kind == "inplace":
        m = InplaceNet(**shape)
        x = torch.randn(B, 3, 9, 9, generator=g)
        y = torch.randint(0, m.fc.out_features, (B,), generator=g)
    elif kind == "pool":
        m = PoolNet(**shape)
        x = torch.randn(B, m.conv.in_channels, 11, 11, generator=g)
        y = torch.randint(0, m.fc.out_features, (B,), generator=g)
    elif kind == "cnn":
        m = BNCNN(**shape)
        x = torch.randn(B, m.conv1.in_channels, 16, 16, generator=g)
        y = torch.randint(0, m.fc2.out_features, (B,), generator=g)
    else:
        raise ValueError("backward_case: unknown kind %r" % kind)
    return m, lambda mod: F.cross_entropy(mod(x), y)


def diagnose_demo():
    """(model, loss_fn) for ``python3 -m ampsim.torch.diagnose torch_models:diagnose_demo``."""
    return backward_case("block", C=30, heads=5, T=11, B=3)

#!/usr/bin/python3
"""The script of docs/torch.md: a small character-level transformer (your own
model: nothing ampsim-specific in it) trained under ampsim.torch.emulate with a
GradScaler, then compared across policies and drawn by `ampsim report`.

Usage (from the source tree, after `make`):
    PYTHONPATH=python /usr/bin/python3 docs/torch_tutorial.py OUTDIR
writes OUTDIR/run (one emulated run) and OUTDIR/cmp (the comparison); then
    build/ampsim report OUTDIR/run
    build/ampsim report OUTDIR/cmp"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import ampsim
import ampsim.torch as at

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(HERE, "..", "datasets", "austen.txt")


# ---- your model: plain PyTorch, attention written with functional ops ----------------
class Block(nn.Module):
    def __init__(self, C, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.heads))
        att = att.masked_fill(torch.ones(T, T).tril() == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class CharGPT(nn.Module):
    def __init__(self, C=64, heads=4, layers=2, ctx=32):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(256, C), nn.Embedding(ctx, C)
        self.h = nn.ModuleList([Block(C, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, 256, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def batches(steps, B=16, T=32, seed=0):
    data = torch.tensor(list(open(TEXT, "rb").read(200000)), dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        i = torch.randint(0, len(data) - T - 1, (B,), generator=g)
        yield torch.stack([data[j:j + T] for j in i]), torch.stack([data[j + 1:j + T + 1] for j in i])


STEPS = 150


# ---- 1. one run under a policy ----------------------------------------------------------
def one_run(out):
    torch.manual_seed(0)
    model = CharGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = at.GradScaler("torch")                   # torch.cuda.amp.GradScaler's rule, on the CPU
    with at.emulate(model, "fp16-amp", out=out, log_every=10, hist_every=50) as emu:
        for x, y in batches(STEPS):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()                           # ends the step: metrics, tensor rows
    return emu


# ---- 2. the same training function under several policies -------------------------------
def train(run):
    torch.manual_seed(0)                              # compare also seeds every run
    model = CharGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    with run.emulate(model):
        for x, y in batches(STEPS):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            run.scaler.scale(loss).backward()
            run.scaler.step(opt)
            run.scaler.update()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "torch-tutorial"
    one_run(os.path.join(out, "run"))
    r = ampsim.read_run(os.path.join(out, "run"))
    print("final loss %.4f, loss scale %g" % (r["metrics"]["loss"][-1], r["metrics"]["loss_scale"][-1]))
    res = at.compare(train, runs=[("fp32", None), ("fp16-amp", "none"), ("fp16-amp", "torch"),
                                  ("bf16-amp", None), ("fp8-hybrid", "delayed")],
                     out=os.path.join(out, "cmp"), seed=0, log_every=10, hist_every=50)
    print(open(os.path.join(out, "cmp", "summary.csv")).read())
    if res["errors"]:
        sys.exit("failed runs: %s" % ", ".join(res["errors"]))


if __name__ == "__main__":
    main()

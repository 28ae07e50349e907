#!/usr/bin/python3
"""PyTorch references for ampsim's GPT and MLP at shapes beyond the two that
gpt_torch.py and mlp_torch.py cover: the same models, data, batches and
optimizers (this script imports them and changes only the sizes).

GPT (nanoGPT, AdamW lr 1e-3, 40 steps, validation every 10 steps), float32 and
under CPU bf16 autocast:
  gpt_odd   2 layers, width 35, 5 heads (odd width, head size 7), ctx 16, batch 4
  gpt_h3    2 layers, width 48, 3 heads (a head count not a power of two)
  gpt_t13   2 layers, width 32, 4 heads, ctx 13 (not a power of two)
  gpt_b1    the tiny model (2 x 32, 4 heads, ctx 16) at batch 1
  gpt_l1    1 layer, width 32, 4 heads
  gpt_l6    6 layers, width 16, 2 heads
MLP (digits, batch 32, 200 steps in file order):
  mlp_l1            1 linear layer (64-10), SGD lr 0.1, float32 and bf16 autocast
  mlp_l5_w37_gelu   5 layers of width 37, GELU (tanh form), AdamW lr 0.01, float32
                    and bf16 autocast
  mlp_l3_w20_gelu   3 layers of width 20, GELU, SGD momentum 0.9 lr 0.05, float32
  mlp_l4_w13        4 layers of width 13, ReLU, SGD lr 0.1, float32

Writes tests/ref/shapes/NAME_init.safetensors (gpt_b1 uses gpt_tiny_init) and
NAME_losses.csv / NAME_bf16cpu_losses.csv (step,loss[,val_loss]).

Run with Debian's interpreter (python3-torch 1.13, CPU, one thread):
  ONEDNN_MAX_CPU_ISA=AVX512_CORE /usr/bin/python3 tests/ref/shapes_torch.py
PyTorch sends CPU bf16 GEMMs to oneDNN, whose kernel depends on the processor:
on one with AMX the default path (brg:avx512_core_amx_bf16) accumulates in
another order than the AVX512_CORE path, and the bf16 loss curves differ by up
to ~5e-4 over 40 steps. The environment variable pins the AVX512_CORE kernels,
which gpt_tiny_bf16cpu_losses.csv also matches. float32 results do not depend
on it."""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "shapes")
sys.path.insert(0, HERE)
import gpt_torch as G  # noqa: E402
import mlp_torch as M  # noqa: E402

GPT_SHAPES = [  # name, layers, heads, width, ctx, batch
    ("gpt_odd", 2, 5, 35, 16, 4),
    ("gpt_h3", 2, 3, 48, 16, 4),
    ("gpt_t13", 2, 4, 32, 13, 4),
    ("gpt_b1", 2, 4, 32, 16, 1),
    ("gpt_l1", 1, 4, 32, 16, 4),
    ("gpt_l6", 6, 2, 16, 16, 4),
]

MLP_RUNS = [  # name, layers, hidden, act, optimizer, lr, bf16 too
    ("mlp_l1", 1, 32, "relu", "sgd", 0.1, True),
    ("mlp_l5_w37_gelu", 5, 37, "gelu", "adamw", 0.01, True),
    ("mlp_l3_w20_gelu", 3, 20, "gelu", "momentum", 0.05, False),
    ("mlp_l4_w13", 4, 13, "relu", "sgd", 0.1, False),
]


def gpt_runs(text):
    for name, layers, heads, width, ctx, batch in GPT_SHAPES:
        G.L, G.NH, G.C, G.T, G.B = layers, heads, width, ctx, batch
        if name != "gpt_b1":
            torch.manual_seed(G.TORCH_SEED)
            G.write_safetensors(os.path.join(OUT, name + "_init.safetensors"), list(G.GPT().named_parameters()))
        for autocast, suffix in ((False, "_losses.csv"), (True, "_bf16cpu_losses.csv")):
            _, rows = G.run(text, autocast)
            with open(os.path.join(OUT, name + suffix), "w") as f:
                f.write("step,loss,val_loss\n")
                for r in rows:
                    f.write(r + "\n")
            print(name + suffix, rows[0], rows[-1])


class MLP(torch.nn.Module):
    def __init__(self, layers, hidden, act):
        super().__init__()
        dims = [64] + [hidden] * (layers - 1) + [10]
        for i in range(layers):
            setattr(self, "fc%d" % (i + 1), torch.nn.Linear(dims[i], dims[i + 1]))
        self.layers, self.act = layers, act

    def forward(self, x):
        for i in range(self.layers):
            x = getattr(self, "fc%d" % (i + 1))(x)
            if i < self.layers - 1:
                x = F.relu(x) if self.act == "relu" else F.gelu(x, approximate="tanh")
        return x


def mlp_runs():
    x, y = M.load_digits(M.DATA)
    n = x.shape[0]
    for name, layers, hidden, act, optim, lr, bf16 in MLP_RUNS:
        torch.manual_seed(M.SEED)
        model = MLP(layers, hidden, act)
        M.write_safetensors(os.path.join(OUT, name + "_init.safetensors"), list(model.state_dict().items()))
        init = {k: v.clone() for k, v in model.state_dict().items()}
        for autocast in (False, True) if bf16 else (False,):
            model.load_state_dict(init)
            if optim == "sgd":
                opt = torch.optim.SGD(model.parameters(), lr=lr)
            elif optim == "momentum":
                opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
            else:
                opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
            rows = []
            for s in range(M.STEPS):
                idx = torch.tensor([(M.B * s + j) % n for j in range(M.B)])
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                    loss = F.cross_entropy(model(x[idx]), y[idx])
                rows.append((s, loss.item()))
                opt.zero_grad()
                loss.backward()
                opt.step()
            fname = name + ("_bf16cpu_losses.csv" if autocast else "_losses.csv")
            with open(os.path.join(OUT, fname), "w") as f:
                f.write("step,loss\n")
                for s, l in rows:
                    f.write("%d,%.9g\n" % (s, l))
            print(fname, rows[0][1], rows[-1][1])


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    with open(G.DATA, "rb") as f:
        text = f.read()
    gpt_runs(text)
    mlp_runs()
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()

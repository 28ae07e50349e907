#!/usr/bin/python3
"""PyTorch reference for ampsim's MLP: a 64-32-10 ReLU MLP trained in
float32 with SGD (lr 0.1), batch 32, 200 steps, batches in file order
(batch s = rows (32*s + j) mod 1797, as `ampsim train --no-shuffle`).

Writes, next to this script:
  mlp_init.safetensors  the initial weights (fc1.weight [32,64], fc1.bias [32],
                        fc2.weight [10,32], fc2.bias [10]); written with
                        struct + json, no safetensors package needed
  mlp_losses.csv        step,loss: the loss of batch s before its update
  mlp_losses_momentum.csv, mlp_losses_adamw.csv   the same from the same weights with
                        SGD momentum 0.9 (lr 0.05) and AdamW (lr 0.01, betas 0.9/0.999,
                        eps 1e-8, weight decay 0.01)
  mlp_losses_bf16_autocast.csv   SGD lr 0.1 under torch.autocast("cpu", torch.bfloat16):
                        ampsim's bf16-amp-cpu policy (bf16 GEMM operands, FP32
                        accumulation, bias before the one bf16 output rounding, FP32
                        cross-entropy, bf16 loss gradient and backward GEMM outputs,
                        FP32 master weights)

Run with Debian's interpreter:  /usr/bin/python3 tests/ref/mlp_torch.py
(python3-torch 1.13, CPU, one thread)."""
import csv
import gzip
import json
import os
import struct

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "datasets", "digits.csv.gz")
H, B, STEPS, LR, SEED = 32, 32, 200, 0.1, 0


def load_digits(path):
    xs, ys = [], []
    with gzip.open(path, "rt") as f:
        for row in csv.reader(f):
            v = [int(t) for t in row]
            xs.append([p / 16.0 for p in v[:64]])
            ys.append(v[64])
    return torch.tensor(xs, dtype=torch.float32), torch.tensor(ys, dtype=torch.int64)


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        data = t.detach().contiguous().to(torch.float32).numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, H)
        self.fc2 = torch.nn.Linear(H, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    x, y = load_digits(DATA)
    n = x.shape[0]
    model = MLP()
    write_safetensors(os.path.join(HERE, "mlp_init.safetensors"),
                      [(k, v) for k, v in model.state_dict().items()])
    init = {k: v.clone() for k, v in model.state_dict().items()}
    runs = [("mlp_losses.csv", lambda p: torch.optim.SGD(p, lr=LR)),
            ("mlp_losses_bf16_autocast.csv", lambda p: torch.optim.SGD(p, lr=LR)),
            ("mlp_losses_momentum.csv", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
            ("mlp_losses_adamw.csv", lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.9, 0.999),
                                                                  eps=1e-8, weight_decay=0.01))]
    for fname, make_opt in runs:
        model.load_state_dict(init)
        opt = make_opt(model.parameters())
        rows = []
        for s in range(STEPS):
            idx = torch.tensor([(B * s + j) % n for j in range(B)])
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled="bf16" in fname):
                loss = F.cross_entropy(model(x[idx]), y[idx])
            rows.append((s, loss.item()))
            opt.zero_grad()
            loss.backward()
            opt.step()
        with open(os.path.join(HERE, fname), "w") as f:
            f.write("step,loss\n")
            for s, l in rows:
                f.write("%d,%.9g\n" % (s, l))
        print(fname, "final loss", rows[-1][1])
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()

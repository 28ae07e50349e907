#!/usr/bin/python3
"""PyTorch reference for ampsim's GPT : nanoGPT's model (bias=True,
dropout 0, non-flash attention, lm_head tied to wte) with GELU in its tanh form,
trained in float32 on byte-level Austen with AdamW (lr 1e-3, betas 0.9/0.999,
eps 1e-8, weight decay 0.01 on every parameter: torch.optim.AdamW defaults over
model.parameters()).

Tiny configuration: 2 layers, 4 heads, width 32, context 16, batch 4, 40 steps.

The batches are the ones `ampsim` draws (sim/data_austen.c): the last n//10
bytes of datasets/austen.txt are validation text, the rest training text;
window j of batch s starts at floor(r * (len - T) / 2^64) with
r = amp_rand64(seed, 0x7a1, s*B + j) (the counter-based generator of
sim/base.c, re-implemented below), seed 1 (ampsim's default).

Writes, next to this script:
  gpt_tiny_init.safetensors  the initial weights, nanoGPT names (no lm_head.weight:
                             tied), written with struct + json
  gpt_tiny_losses.csv        step,loss: the loss of batch s before its update,
                             and val_loss every 10 steps (mean over 2 validation
                             batches, stream 0x7a2, batch indices 0 and 1)
  gpt_tiny_bf16cpu_losses.csv  the same run under CPU bf16 autocast
                             (torch.autocast("cpu", dtype=torch.bfloat16)),
                             for ampsim's bf16-amp-cpu policy

Run with Debian's interpreter:  /usr/bin/python3 tests/ref/gpt_torch.py
(python3-torch 1.13, CPU, one thread)."""
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "datasets", "austen.txt")
L, NH, C, T, B, STEPS, LR, SEED, TORCH_SEED = 2, 4, 32, 16, 4, 40, 1e-3, 1, 0
EVAL_EVERY, EVAL_BATCHES = 10, 2
V = 256
M64 = (1 << 64) - 1


# ---- ampsim's counter-based generator (sim/base.c) --------------------------
def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rand64(seed, stream, index):
    k = mix64(seed ^ 0x6A09E667F3BCC909) ^ mix64((stream + 0x3C6EF372FE94F82B) & M64)
    return mix64(mix64((k + index * 0x9E3779B97F4A7C15) & M64) ^ k)


def batch(text, stream, seed, s):
    n = len(text)
    if stream == 0x7A1:
        part = text[: n - n // 10]
    else:
        part = text[n - n // 10:]
    xs, ys = [], []
    for j in range(B):
        off = (rand64(seed, stream, s * B + j) * (len(part) - T)) >> 64
        w = part[off: off + T + 1]
        xs.append(list(w[:T]))
        ys.append(list(w[1:]))
    return torch.tensor(xs, dtype=torch.int64), torch.tensor(ys, dtype=torch.int64)


# ---- the model (nanoGPT model.py, manual attention) -------------------------
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(C)
        self.attn = torch.nn.Module()
        self.attn.c_attn = torch.nn.Linear(C, 3 * C)
        self.attn.c_proj = torch.nn.Linear(C, C)
        self.ln_2 = torch.nn.LayerNorm(C)
        self.mlp = torch.nn.Module()
        self.mlp.c_fc = torch.nn.Linear(C, 4 * C)
        self.mlp.c_proj = torch.nn.Linear(4 * C, C)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T), persistent=False)

    def attention(self, x):
        Bx, Tx, Cx = x.size()
        q, k, v = self.attn.c_attn(x).split(C, dim=2)
        k = k.view(Bx, Tx, NH, Cx // NH).transpose(1, 2)
        q = q.view(Bx, Tx, NH, Cx // NH).transpose(1, 2)
        v = v.view(Bx, Tx, NH, Cx // NH).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :Tx, :Tx] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(Bx, Tx, Cx)
        return self.attn.c_proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        x = x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))
        return x


class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = torch.nn.ModuleDict(dict(
            wte=torch.nn.Embedding(V, C),
            wpe=torch.nn.Embedding(T, C),
            h=torch.nn.ModuleList([Block() for _ in range(L)]),
            ln_f=torch.nn.LayerNorm(C),
        ))
        self.lm_head = torch.nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.transformer.wte.weight   # tied
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * L))

    def _init_weights(self, module):
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, torch.nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for blk in self.transformer.h:
            x = blk(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


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


def run(text, autocast):
    """Trains from the same initial weights; float32, or under CPU bf16 autocast
    (torch.autocast("cpu", dtype=torch.bfloat16): ampsim's bf16-amp-cpu)."""
    torch.manual_seed(TORCH_SEED)
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    rows = []
    for s in range(STEPS):
        val = ""
        # separate autocast regions: a weight cast made under no_grad and kept in
        # autocast's cache would have no grad_fn, and the training forward in the
        # same region would silently give those weights no gradient
        if s % EVAL_EVERY == 0:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast), torch.no_grad():
                vl = [model(*batch(text, 0x7A2, SEED, i)).item() for i in range(EVAL_BATCHES)]
            val = "%.9g" % (sum(vl) / len(vl))
        x, y = batch(text, 0x7A1, SEED, s)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        rows.append("%d,%.9g,%s" % (s, loss.item(), val))
    return model, rows


def main():
    torch.set_num_threads(1)
    with open(DATA, "rb") as f:
        text = f.read()
    for autocast, name in ((False, "gpt_tiny_losses.csv"), (True, "gpt_tiny_bf16cpu_losses.csv")):
        torch.manual_seed(TORCH_SEED)
        if not autocast:
            # named_parameters() lists the tied weight once, as transformer.wte.weight
            write_safetensors(os.path.join(HERE, "gpt_tiny_init.safetensors"), list(GPT().named_parameters()))
        _, rows = run(text, autocast)
        with open(os.path.join(HERE, name), "w") as f:
            f.write("step,loss,val_loss\n")
            for r in rows:
                f.write(r + "\n")
        print(name)
        print("\n".join(rows[:3] + rows[-3:]))


if __name__ == "__main__":
    main()

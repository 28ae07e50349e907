#!/usr/bin/python3
"""The GPT's first step under PyTorch's CUDA autocast lists (ampsim's fp16-amp and
bf16-amp), built by hand: every value held in float64 and rounded into fp16, bf16
or float32 exactly where autocast's graph rounds, forward and backward. The CUDA
lists cannot run on a CPU, so this graph is the reference for their rules:

forward   emb = wte[idx] + wpe (FP32); per block: ln_1 (FP32: layer_norm is on
          the FP32 list); c_attn = r(r(x) r(W)^T + r(b)) (linear on the low list,
          inputs cast, FP32 sum, one rounding); scores r(q k^T), r(scores * s)
          (the scalar in float, not rounded: CUDA's opmath); prob = softmax in
          FP32 of the scores cast up; y = r(r(prob) v); c_proj; res_1 = x + out
          (FP32: type promotion); ln_2; c_fc; gelu in float rounded once; c_proj;
          res_2; ln_f; logits = r(r(ln_f) r(wte)^T); the loss in FP32.
backward  the same graph: a cast's backward rounds into the source format; a
          GEMM's dX and dW and the bias's row sum are rounded once into the low
          format; the FP32 softmax's input gradient is rounded by the cast's
          backward; a residual branch gets the FP32 gradient rounded into its
          format; weight gradients are the low-format values widened; the tied
          wte adds the head's widened gradient and the embedding's FP32 one.

r() rounds a float64 value correctly into the format (no double rounding).
The sums themselves are float64 here; ampsim's are FP32 in its own fixed
order, so the comparison allows what that order can do: per weight, the
largest difference relative to the tensor's largest value (BOUND_REL). Run:
  /usr/bin/python3 tests/ref/gpt_cuda_lists.py [--precision bf16-amp|fp16-amp]
        [--shape tiny] [--ampsim build/ampsim] [--drop RULE]
--drop removes one rounding from the reference (cast-dx, bias-sum, softmax-cast,
branch) to show the comparison notices it. Exit 1 when a bound is exceeded."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import gpt_grads_torch as GG  # noqa: E402

FMT = {"bf16": (8, -133), "fp16": (11, -24), "fp32": (24, -149)}   # significand bits, exponent of the least ulp
# Largest difference allowed, relative to each weight gradient's largest value.
# bf16-amp: measured 6.1e-8 (the FP32 LayerNorm and embedding gradients: float32
# against float64 arithmetic; every bf16-held gradient is identical), while
# removing any one rounding of the graph (--drop) gives 2.8e-3 or more.
# fp16-amp: fp16's 3 more bits let FP32-against-float64 sums flip fp16
# roundings in the forward and the backward (measured 7.0e-4, under one fp16
# ulp of the largest value, 4.9e-4 relative, times 2); a dropped rounding moves
# values by the same amount, so at fp16 this checks the scale of the
# agreement, and the rules are checked by the bf16 run of the same code.
BOUND_REL = {"bf16-amp": 1e-5, "fp16-amp": 2e-3}


def rnd(x, f):
    """x (float64 array) rounded to nearest even into format f."""
    p, qmin = FMT[f]
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)
    q = np.maximum(e - p, qmin).astype(np.float64)
    return np.round(np.ldexp(x, (-q).astype(np.int64))) * np.exp2(q)


def ln_fwd(x, w, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    rs = 1.0 / np.sqrt(v + 1e-5)
    n = (x - m) * rs
    return n * w + b, (n, rs)


def ln_bwd(g, w, cache):
    n, rs = cache
    gw = g * w
    dx = rs * (gw - gw.mean(-1, keepdims=True) - n * (gw * n).mean(-1, keepdims=True))
    return dx, (g * n).sum(0), g.sum(0)


K_GELU, A_GELU = np.sqrt(2.0 / np.pi), 0.044715


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(K_GELU * (x + A_GELU * x ** 3)))


def gelu_d(x):
    th = np.tanh(K_GELU * (x + A_GELU * x ** 3))
    return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * K_GELU * (1 + 3 * A_GELU * x * x)


def reference(W, idx, tgt, L, NH, lo, drop=""):
    """Step-0 weight gradients (float64 arrays holding FP32 values) of the GPT under
    the CUDA lists with low format lo."""
    r = lambda x: rnd(x, lo)                  # noqa: E731
    f32 = lambda x: rnd(x, "fp32")            # noqa: E731
    B, T = idx.shape
    C = W["transformer.wte.weight"].shape[1]
    hs = C // NH
    N = B * T
    wl = {k: r(v) for k, v in W.items()}      # the cast cache: one low copy per weight
    G = {k: np.zeros_like(v) for k, v in W.items()}
    x = f32(W["transformer.wte.weight"][idx.reshape(-1)] + np.tile(W["transformer.wpe.weight"][:T], (B, 1)))
    mask = np.tril(np.ones((T, T), bool))
    caches, xs = [], [x]

    def linear(name, xin, bias=True):
        xo = r(xin)
        out = xo @ wl[name + ".weight"].T + (wl[name + ".bias"] if bias else 0.0)
        return r(out), xo

    scale = f32(1.0 / np.sqrt(hs))            # a Python scalar: float on CUDA (opmath), not rounded to lo
    for l in range(L):
        p = "transformer.h.%d." % l
        h = {}
        h["ln1"], h["ln1c"] = ln_fwd(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"])
        h["ln1"] = f32(h["ln1"])
        h["qkv"], h["qkv_in"] = linear(p + "attn.c_attn", h["ln1"])
        q, k, v = [h["qkv"][:, i * C:(i + 1) * C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3) for i in range(3)]
        raw = r(q @ k.transpose(0, 1, 3, 2))
        att = r(f32(raw * scale))
        a = np.where(mask, att, -np.inf)
        e = np.exp(a - a.max(-1, keepdims=True))
        prob = f32(e / e.sum(-1, keepdims=True))
        plo = r(prob)
        y = r(plo @ v).transpose(0, 2, 1, 3).reshape(N, C)
        h.update(q=q, k=k, v=v, prob=prob, plo=plo, y=y)
        h["proj"], h["proj_in"] = linear(p + "attn.c_proj", y)
        h["res1"] = f32(x + h["proj"])
        h["ln2"], h["ln2c"] = ln_fwd(h["res1"], W[p + "ln_2.weight"], W[p + "ln_2.bias"])
        h["ln2"] = f32(h["ln2"])
        h["fc"], h["fc_in"] = linear(p + "mlp.c_fc", h["ln2"])
        h["gelu"] = r(gelu(h["fc"]))
        h["mproj"], h["mproj_in"] = linear(p + "mlp.c_proj", h["gelu"])
        x = f32(h["res1"] + h["mproj"])
        caches.append(h)
        xs.append(x)
    lnf, lnfc = ln_fwd(x, W["transformer.ln_f.weight"], W["transformer.ln_f.bias"])
    lnf = f32(lnf)
    lnf_lo = r(lnf)
    logits = r(lnf_lo @ wl["transformer.wte.weight"].T)
    z = logits - logits.max(-1, keepdims=True)
    pz = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    dlog = pz.copy()
    dlog[np.arange(N), tgt.reshape(-1)] -= 1.0
    dlog = r(f32(dlog / N))                    # FP32 loss gradient, then the cast's backward

    def lin_bwd(name, gout, xo, bias=True, dx_to=None):
        G[name + ".weight"] += r(gout.T @ xo)
        if bias:
            G[name + ".bias"] += r(gout.sum(0)) if drop != "bias-sum" else gout.sum(0)
        dx = r(gout @ wl[name + ".weight"])
        if dx_to == "fp32" and drop == "cast-dx":
            dx = gout @ wl[name + ".weight"]
        return dx

    G["transformer.wte.weight"] += r(dlog.T @ lnf_lo)
    dx = dlog @ wl["transformer.wte.weight"]
    dx = r(dx) if drop != "cast-dx" else dx
    dres, dw, db = ln_bwd(dx, W["transformer.ln_f.weight"], lnfc)
    G["transformer.ln_f.weight"] += dw
    G["transformer.ln_f.bias"] += db
    dres = f32(dres)
    for l in range(L - 1, -1, -1):
        p = "transformer.h.%d." % l
        h = caches[l]
        gb = r(dres) if drop != "branch" else dres   # the bf16 branch of res_2
        dgelu = lin_bwd(p + "mlp.c_proj", gb, h["mproj_in"])
        dfc = r(dgelu * gelu_d(h["fc"]))
        dln2 = lin_bwd(p + "mlp.c_fc", dfc, h["fc_in"], dx_to="fp32")
        d, dw, db = ln_bwd(dln2, W[p + "ln_2.weight"], h["ln2c"])
        G[p + "ln_2.weight"] += dw
        G[p + "ln_2.bias"] += db
        dres1 = f32(dres + d)
        gb = r(dres1) if drop != "branch" else dres1
        dy = lin_bwd(p + "attn.c_proj", gb, h["proj_in"])
        dy4 = dy.reshape(B, T, NH, hs).transpose(0, 2, 1, 3)
        dplo = r(dy4 @ h["v"].transpose(0, 1, 3, 2))
        dv = r(h["plo"].transpose(0, 1, 3, 2) @ dy4)
        dprob = dplo                                   # widened by the cast's backward
        s = (dprob * h["prob"]).sum(-1, keepdims=True)
        datt = np.where(mask, h["prob"] * (dprob - s), 0.0)
        datt = r(f32(datt)) if drop != "softmax-cast" else f32(datt)
        ds = r(f32(datt * scale))
        dq = r(ds @ h["k"])
        dk = r(ds.transpose(0, 1, 3, 2) @ h["q"])
        dqkv = np.concatenate([t.transpose(0, 2, 1, 3).reshape(N, C) for t in (dq, dk, dv)], axis=1)
        dln1 = lin_bwd(p + "attn.c_attn", dqkv, h["qkv_in"], dx_to="fp32")
        d, dw, db = ln_bwd(dln1, W[p + "ln_1.weight"], h["ln1c"])
        G[p + "ln_1.weight"] += dw
        G[p + "ln_1.bias"] += db
        dres = f32(dres1 + d)
    demb = dres.reshape(B, T, C)
    np.add.at(G["transformer.wte.weight"], idx.reshape(-1), demb.reshape(N, C))
    G["transformer.wpe.weight"][:T] += demb.sum(0)
    return G


def compare(ours, ref, L):
    """(worst share of differing elements, worst relative difference, rows) over
    the weights."""
    rows, ws, wr = [], 0.0, 0.0
    for n in GG.backward_order(set(ref), L):
        a, e = ours[n].astype(np.float64), ref[n]
        d = np.abs(a - e)
        top = np.abs(e).max() or 1.0
        share = float((d > 0).mean())
        rel = float(d.max() / top)
        rows.append((n, share, rel))
        ws, wr = max(ws, share), max(wr, rel)
    return ws, wr, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precision", default="bf16-amp", choices=["bf16-amp", "fp16-amp"])
    ap.add_argument("--shape", default="tiny", choices=sorted(GG.SHAPES))
    ap.add_argument("--ampsim", default=os.path.join(ROOT, "build", "ampsim"))
    ap.add_argument("--drop", default="", choices=["", "cast-dx", "bias-sum", "softmax-cast", "branch"])
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    L, NH, C, T, B = GG.SHAPES[a.shape]
    G = GG.G
    G.L, G.NH, G.C, G.T, G.B = L, NH, C, T, B
    init = os.path.join(HERE, "gpt_tiny_init.safetensors" if a.shape in ("tiny", "gpt_b1")
                        else os.path.join("shapes", a.shape + "_init.safetensors"))
    with tempfile.TemporaryDirectory() as tmp:
        gfile = os.path.join(tmp, "g.safetensors")
        cmd = [a.ampsim, "train", "--model", "gpt", "--data", G.DATA, "--init", init, "--layers", str(L), "--heads",
               str(NH), "--dim", str(C), "--ctx", str(T), "--batch", str(B), "--steps", "1", "--precision",
               a.precision, "--log-every", "0", "--hist-every", "0", "--save-grads", gfile, "--out",
               os.path.join(tmp, "run")]
        rr = subprocess.run(cmd, capture_output=True, text=True)
        if rr.returncode:
            sys.stderr.write(rr.stderr)
            sys.exit(2)
        ours = GG.read_safetensors(gfile)
    W = {k: v.astype(np.float64) for k, v in GG.read_safetensors(init).items()}
    with open(G.DATA, "rb") as f:
        text = f.read()
    x, y = G.batch(text, 0x7A1, G.SEED, 0)
    ref = reference(W, x.numpy(), y.numpy(), L, NH, "bf16" if a.precision == "bf16-amp" else "fp16", a.drop)
    ws, wr, rows = compare(ours, ref, L)
    if not a.quiet:
        for n, share, rel in rows:
            print("%-40s %6.2f%% of elements differ, max |diff| %.3g of max |g|" % (n, 100 * share, rel))
    ok = wr <= BOUND_REL[a.precision]
    print("%s %s%s: worst share of differing elements %.4f, worst relative difference %.3g (bound %g): %s"
          % (a.shape, a.precision, " without " + a.drop if a.drop else "", ws, wr, BOUND_REL[a.precision],
             "within" if ok else "OUTSIDE"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

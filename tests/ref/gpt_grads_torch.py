#!/usr/bin/python3
"""Step-0 weight gradients of ampsim's GPT against nanoGPT under PyTorch, per
tensor: how many elements are not bit-identical, the largest difference, and
the first tensor in backward order where they differ.

  /usr/bin/python3 tests/ref/gpt_grads_torch.py [--precision bf16-amp-cpu|fp32]
        [--shape NAME | --layers L --heads H --dim C --ctx T --batch B]
        [--init FILE.safetensors] [--ampsim build/ampsim] [--gemm blas]
        [--min-identical 0.999]

The model is tests/ref/gpt_torch.py's nanoGPT (the same init, the same batch 0
that `ampsim train` draws); under bf16-amp-cpu its forward and backward run in
torch.autocast("cpu", dtype=torch.bfloat16). ampsim runs one step with
`--save-grads` and the same weights (--init, or the shape's file under
tests/ref/shapes, or PyTorch's initialisation at the given sizes written to a
temporary file). Both gradients are float32 (autocast widens a bf16 weight
gradient through the weight cast's backward); they are compared as bits.

PyTorch's CPU bf16 GEMMs run in oneDNN, whose kernel depends on the processor;
run with ONEDNN_MAX_CPU_ISA=AVX512_CORE as the loss references are (the script
sets it when it is unset). Exit 1 when the share of identical weight-gradient
elements is below --min-identical, 2 on bad arguments."""
import argparse
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX512_CORE")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import gpt_torch as G  # noqa: E402

SHAPES = {  # name: layers, heads, width, ctx, batch (tests/ref/shapes_torch.py)
    "tiny": (2, 4, 32, 16, 4),
    "gpt_odd": (2, 5, 35, 16, 4),
    "gpt_h3": (2, 3, 48, 16, 4),
    "gpt_t13": (2, 4, 32, 13, 4),
    "gpt_b1": (2, 4, 32, 16, 1),
    "gpt_l1": (1, 4, 32, 16, 4),
    "gpt_l6": (6, 2, 16, 16, 4),
}


def read_safetensors(path):
    """name -> float32 numpy array (F32 tensors only, as ampsim writes them)."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        blob = f.read()
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(blob[a:b], dtype="<f4").reshape(v["shape"])
    return out


def backward_order(names, layers):
    """Tensor names in the order autograd produces their gradients."""
    order = ["transformer.wte.weight", "transformer.ln_f.weight", "transformer.ln_f.bias"]
    for l in range(layers - 1, -1, -1):
        p = "transformer.h.%d." % l
        order += [p + s for s in ("mlp.c_proj.weight", "mlp.c_proj.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                                  "ln_2.weight", "ln_2.bias", "attn.c_proj.weight", "attn.c_proj.bias",
                                  "attn.c_attn.weight", "attn.c_attn.bias", "ln_1.weight", "ln_1.bias")]
    order.append("transformer.wpe.weight")
    return [n for n in order if n in names] + sorted(n for n in names if n not in order)


def torch_grads(text, init, autocast):
    torch.manual_seed(G.TORCH_SEED)
    model = G.GPT()
    w = read_safetensors(init)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.from_numpy(w[n].copy()))
    x, y = G.batch(text, 0x7A1, G.SEED, 0)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = model(x, y)
    loss.backward()
    return loss.item(), {n: p.grad.detach().numpy().copy() for n, p in model.named_parameters()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precision", default="bf16-amp-cpu", choices=["bf16-amp-cpu", "fp32"])
    ap.add_argument("--shape", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--dim", type=int)
    ap.add_argument("--ctx", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--init")
    ap.add_argument("--ampsim", default=os.path.join(ROOT, "build", "ampsim"))
    ap.add_argument("--gemm", default="blas", choices=["blas", "reproducible"])
    ap.add_argument("--min-identical", type=float, default=0.0)
    ap.add_argument("--quiet", action="store_true", help="print the total line only")
    a = ap.parse_args()
    shape = SHAPES[a.shape or "tiny"]
    L, NH, C, T, B = [v if v is not None else d for v, d in
                      zip((a.layers, a.heads, a.dim, a.ctx, a.batch), shape)]
    if C % NH:
        ap.error("--heads %d does not divide --dim %d" % (NH, C))
    G.L, G.NH, G.C, G.T, G.B = L, NH, C, T, B
    torch.set_num_threads(1)
    with open(G.DATA, "rb") as f:
        text = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        init = a.init
        if init is None and a.shape and (a.layers, a.heads, a.dim, a.ctx, a.batch) == (None,) * 5:
            init = os.path.join(HERE, "gpt_tiny_init.safetensors" if a.shape in ("tiny", "gpt_b1")
                                else os.path.join("shapes", a.shape + "_init.safetensors"))
        if init is None:
            init = os.path.join(tmp, "init.safetensors")
            torch.manual_seed(G.TORCH_SEED)
            G.write_safetensors(init, list(G.GPT().named_parameters()))
        gfile = os.path.join(tmp, "grads.safetensors")
        cmd = [a.ampsim, "train", "--model", "gpt", "--data", G.DATA, "--init", init, "--layers", str(L),
               "--heads", str(NH), "--dim", str(C), "--ctx", str(T), "--batch", str(B), "--steps", "1",
               "--optim", "adamw", "--lr", "0.001", "--precision", a.precision, "--gemm", a.gemm,
               "--log-every", "0", "--hist-every", "0", "--save-grads", gfile, "--out", os.path.join(tmp, "run")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            sys.stderr.write(r.stderr)
            sys.exit(2)
        ours = read_safetensors(gfile)
        loss, ref = torch_grads(text, init, a.precision != "fp32")
    tot = same = 0
    first = None
    for n in backward_order(set(ref), L):
        g, e = ours[n], ref[n]
        d = (g.view(np.uint32) != e.view(np.uint32))
        nd = int(d.sum())
        tot += g.size
        same += g.size - nd
        if nd and first is None:
            first = n
        if not a.quiet:
            md = float(np.max(np.abs(g.astype(np.float64) - e))) if nd else 0.0
            rel = md / float(np.max(np.abs(e))) if nd and np.max(np.abs(e)) > 0 else 0.0
            print("%-40s %7d of %7d differ  max |diff| %.3g (%.3g of max |g|)" % (n, nd, g.size, md, rel))
    frac = same / tot
    print("%s L%d H%d C%d T%d B%d %s (--gemm %s): %d of %d weight-gradient elements bit-identical (%.4f%%); "
          "first differing tensor in backward order: %s" % (a.shape or "custom", L, NH, C, T, B, a.precision,
                                                            a.gemm, same, tot, 100.0 * frac, first or "none"))
    sys.exit(1 if frac < a.min_identical else 0)


if __name__ == "__main__":
    main()

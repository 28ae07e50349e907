"""The model zoo under ampsim.torch (long; ``make check-long``): resnet18,
mobilenet_v3_small, a small VisionTransformer, nn.TransformerEncoder, an LSTM
and a GRU language model train a few steps under fp32, fp16-amp with
GradScaler("torch"), bf16-amp-cpu and fp8-hybrid. Checked: no function that
is neither emulated nor classified (strict=True and coverage.csv), a
tensors.csv row for every parameter that reaches a GEMM, fp32 bit-identical
to the plain loop, and a report that draws."""
import csv
import importlib.util
import os
import unittest

from support import HAVE_TORCH, cli, import_torch, tmpdir

HAVE_TORCHVISION = HAVE_TORCH and importlib.util.find_spec("torchvision") is not None
if HAVE_TORCHVISION:
    torch = import_torch()

    import ampsim.torch as at
    from zoo_models import ZOO, train_step

STEPS = 3


def train(name, policy, out):
    """Losses and final parameters of STEPS SGD steps (policy None: plain)."""
    make, batch, loss_fn = ZOO[name]
    torch.manual_seed(0)
    m = make()
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    losses = []
    emu = sc = None
    if policy is not None:
        emu = at.emulate(m, policy, out=out, log_every=1, hist_every=1, strict=True)
        emu.__enter__()
        if policy.startswith("fp16"):
            sc = at.GradScaler("torch")
    try:
        for s in range(STEPS):
            torch.manual_seed(1000 + s)         # dropout masks
            x, y = batch(s)
            loss = train_step(m, opt, loss_fn, x, y, sc)
            if sc is None and emu is not None:
                emu.step(loss=loss)
            losses.append(loss.detach().clone())
    finally:
        if emu is not None:
            emu.__exit__(None, None, None)
    return m, losses, [p.detach().clone() for p in m.parameters()]


def gemm_params(model):
    """Names of the parameters that reach a GEMM (weights of linear, conv and
    recurrent layers and of attention's projections; not norms or embeddings)."""
    out = []
    for n, p in model.named_parameters():
        leaf = n.rsplit(".", 1)[-1]
        mod = model.get_submodule(n.rsplit(".", 1)[0]) if "." in n else model
        if isinstance(mod, (torch.nn.Embedding, torch.nn.LayerNorm, torch.nn.BatchNorm2d, torch.nn.GroupNorm)):
            continue
        if leaf.startswith(("weight", "in_proj_weight")) and p.dim() >= 2:
            out.append(n)
    return out


@unittest.skipUnless(HAVE_TORCHVISION, "PyTorch (python3-torch, python3-torchvision) is not installed")
class TestZoo(unittest.TestCase):
    def check(self, name):
        d = tmpdir(self)
        _, ref_l, ref_p = train(name, None, None)
        for pol in ("fp32", "fp16-amp", "bf16-amp-cpu", "fp8-hybrid"):
            with self.subTest(model=name, policy=pol):
                out = os.path.join(d, pol)
                m, l, p = train(name, pol, out)
                with open(os.path.join(out, "coverage.csv")) as f:
                    cov = list(csv.DictReader(f))
                self.assertFalse([r["op"] for r in cov if r["class"] in ("unclassified", "gemm_unrounded")])
                with open(os.path.join(out, "tensors.csv")) as f:
                    names = {r["tensor"] for r in csv.DictReader(f)}
                if pol != "fp32":
                    need = gemm_params(m)
                    self.assertTrue(need)
                    self.assertEqual([n for n in need if n not in names], [])
                else:
                    self.assertTrue(all(torch.equal(a, b) for a, b in zip(ref_l, l)), (ref_l, l))
                    self.assertTrue(all(torch.equal(a, b) for a, b in zip(ref_p, p)))
                cli("report", out)
                self.assertTrue(os.path.exists(os.path.join(out, "report", "index.html")))

    def test_resnet18(self):
        self.check("resnet18")

    def test_mobilenet_v3_small(self):
        self.check("mobilenet_v3_small")

    def test_vit(self):
        self.check("vit")

    def test_transformer_encoder(self):
        self.check("transformer_encoder")

    def test_lstm_lm(self):
        self.check("lstm_lm")

    def test_gru_lm(self):
        self.check("gru_lm")


if __name__ == "__main__":
    unittest.main()

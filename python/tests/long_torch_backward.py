#!/usr/bin/python3
"""25-step trajectories of emulate(policy="bf16-amp-cpu") against
torch.autocast("cpu", bfloat16), for the residual MLP, the transformer block,
a small GPT (embeddings, two or three blocks) and the CNN at several shapes (odd widths, 3 and 5 heads, odd contexts), with
SGD and AdamW: max |loss(emulated) - loss(autocast)| over the steps must be at
most max(1e-5, 0.1 * max |loss(FP32) - loss(autocast)|), i.e. the emulator
explains at least 90% of what bf16 does to the loss. Prints one line per run.

Run by `make check-long` (python/run_tests.py --long), not by make check.
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from support import HAVE_TORCH, NO_TORCH, import_torch  # noqa: E402  (puts the package on the path)

if HAVE_TORCH:
    torch = import_torch()

    import ampsim.torch as at
    from torch_models import backward_case

STEPS = 25
CASES = [("mlp", {}), ("mlp", dict(d_in=29, width=61, depth=2, n_out=7, B=24)),
         ("mlp", dict(d_in=50, width=97, depth=4, n_out=13, B=9)),
         ("block", {}), ("block", dict(C=30, heads=5, T=11, B=3)),
         ("block", dict(C=51, heads=3, T=7, B=5)), ("cnn", {}), ("shared", dict(width=40, repeat=4, B=21)),
         ("gpt", dict(vocab=61, C=30, heads=5, layers=2, T=13, B=3)),
         ("gpt", dict(vocab=96, C=36, heads=3, layers=3, T=9, B=4))]
OPTS = [("sgd", 0.05), ("adamw", 3e-3)]


def losses(kind, shape, mode, opt, lr):
    m, loss_fn = backward_case(kind, **shape)
    o = (torch.optim.SGD if opt == "sgd" else torch.optim.AdamW)(m.parameters(), lr=lr)
    emu = at.emulate(m, "bf16-amp-cpu") if mode == "emulate" else None
    out = []
    if emu:
        emu.__enter__()
    try:
        for _ in range(STEPS):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast"):
                loss = loss_fn(m)
            o.zero_grad()
            loss.backward()
            o.step()
            out.append(loss.item())
    finally:
        if emu:
            emu.__exit__(None, None, None)
    return out


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestTrajectories(unittest.TestCase):
    def test_bf16_amp_cpu_tracks_autocast(self):
        for kind, shape in CASES:
            for opt, lr in OPTS:
                with self.subTest(kind=kind, opt=opt, **shape):
                    ac = losses(kind, shape, "autocast", opt, lr)
                    em = losses(kind, shape, "emulate", opt, lr)
                    fp = losses(kind, shape, "fp32", opt, lr)
                    d_emu = max(abs(a - b) for a, b in zip(ac, em))
                    d_fp = max(abs(a - b) for a, b in zip(ac, fp))
                    print("%-6s %-40s %-5s max|emulated-autocast| %.3g  max|fp32-autocast| %.3g"
                          % (kind, shape, opt, d_emu, d_fp), flush=True)
                    self.assertLessEqual(d_emu, max(1e-5, 0.1 * d_fp))
                    self.assertGreater(d_fp, 1e-5)      # the comparison can fail


if __name__ == "__main__":
    unittest.main()

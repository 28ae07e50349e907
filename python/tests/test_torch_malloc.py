"""Freed memory kept in the process (_malloc.py): an emulated step of a CNN
with a hundred weight tensors reuses the pages of the last, where glibc's
own thresholds give it thousands of fresh ones (each a page fault),
measured in two new processes; and the thresholds are left alone when
asked (AMPSIM_MALLOC=system)."""
import os
import subprocess
import sys
import unittest

from support import HAVE_TORCH, NO_TORCH

HERE = os.path.dirname(os.path.abspath(__file__))

# minor page faults of steps 4 to 7 of torchvision's regnet_x_400mf (5.5
# million weights in 100 tensors, 32x32 images)
STEPS = r"""
import resource, sys, tempfile
sys.path.insert(0, %r)
import torch
import torchvision
import ampsim.torch as at
from ampsim.torch import _malloc
torch.manual_seed(0)
m = torchvision.models.regnet_x_400mf(num_classes=10)
opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
with at.emulate(m, "fp16-amp", out=tempfile.mkdtemp() + "/run") as emu:
    sc = at.GradScaler("torch")
    for s in range(8):
        if s == 4:
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        sc.scale(loss).backward()
        sc.step(opt)
        sc.update()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0, int(_malloc.keep()))
""" % os.path.dirname(HERE)


def faults(**env):
    """(page faults of the steps, whether the thresholds were set) in a new process."""
    e = dict(os.environ, OMP_NUM_THREADS="1", **env)
    for k in ("GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "AMPSIM_MALLOC"):
        if k not in env:
            e.pop(k, None)
    out = subprocess.run([sys.executable, "-c", STEPS], env=e, capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise AssertionError(out.stderr)
    n, kept = out.stdout.split()
    return int(n), bool(int(kept))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestKeptMemory(unittest.TestCase):
    def test_steps_reuse_pages(self):
        import platform
        if platform.libc_ver()[0] != "glibc":
            self.skipTest("the C library is not glibc: nothing is set")
        kept, on = faults()
        system, off = faults(AMPSIM_MALLOC="system")
        self.assertTrue(on)
        self.assertFalse(off)
        # (each step's weight copies alone are 22 MB: 5400 pages)
        self.assertGreater(system, 4 * 2000, "glibc's own thresholds: %d faults" % system)
        self.assertLess(kept, 4 * 100, "kept: %d faults" % kept)


if __name__ == "__main__":
    unittest.main()

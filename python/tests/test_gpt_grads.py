"""Step-0 weight gradients of `ampsim train --model gpt --precision
bf16-amp-cpu` against nanoGPT under torch.autocast("cpu", bfloat16), element
by element (tests/ref/gpt_grads_torch.py, run as a subprocess so that oneDNN
is pinned to its AVX512_CORE kernels before PyTorch loads it).

The tiny shape runs here; python/tests/long_gpt_grads.py runs every shape of
tests/ref/shapes. Every weight-gradient element must be bit-identical
(measured: all of them at the seven shapes); the issue's bar is 99.9%."""
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support import CLI, HAVE_TORCH, NO_TORCH, ROOT  # noqa: E402
SCRIPT = os.path.join(ROOT, "tests", "ref", "gpt_grads_torch.py")


def identical(shape, precision="bf16-amp-cpu"):
    """(same, total) weight-gradient elements of one shape; raises on failure."""
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE", OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, SCRIPT, "--shape", shape, "--precision", precision, "--ampsim", CLI,
                        "--quiet"], capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError("gpt_grads_torch.py --shape %s: %s" % (shape, r.stderr.strip()[-400:]))
    m = re.search(r": (\d+) of (\d+) weight-gradient elements bit-identical", r.stdout)
    if not m:
        raise RuntimeError("gpt_grads_torch.py printed no total: %r" % r.stdout)
    return int(m.group(1)), int(m.group(2))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class GptGrads(unittest.TestCase):
    def test_tiny_bit_identical(self):
        same, total = identical("tiny")
        self.assertEqual(same, total, "%d of %d weight-gradient elements differ from autocast's"
                         % (total - same, total))


if __name__ == "__main__":
    unittest.main()

"""python/tests/test_cuda_lists.py at more shapes, with every dropped rounding,
and under fp16-amp (about 40 s; `make check-long`)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import HAVE_TORCH, NO_TORCH  # noqa: E402
from test_cuda_lists import run  # noqa: E402


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class CudaListsLong(unittest.TestCase):
    def test_bf16_amp_graph(self):
        for shape in ("tiny", "gpt_t13", "gpt_b1"):
            with self.subTest(shape=shape):
                ok, line = run("--precision", "bf16-amp", "--shape", shape)
                self.assertTrue(ok, line)

    def test_each_rounding_is_seen(self):
        for rule in ("cast-dx", "bias-sum", "softmax-cast", "branch"):
            with self.subTest(rule=rule):
                ok, line = run("--precision", "bf16-amp", "--drop", rule)
                self.assertFalse(ok, "without %s the reference still agrees: %s" % (rule, line))

    def test_fp16_amp_graph(self):
        ok, line = run("--precision", "fp16-amp")
        self.assertTrue(ok, line)


if __name__ == "__main__":
    unittest.main()

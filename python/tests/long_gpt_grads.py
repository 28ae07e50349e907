"""The step-0 gradient comparison of test_gpt_grads.py at every GPT shape of
tests/ref/shapes (odd width with head size 7, 3 heads of 16, context 13,
batch 1, one layer, six layers): every weight-gradient element bit-identical to
CPU bf16 autocast (the issue's bar is 99.9%). About 10 s; `make check-long`."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import HAVE_TORCH, NO_TORCH  # noqa: E402
from test_gpt_grads import identical  # noqa: E402


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class GptGradsShapes(unittest.TestCase):
    def test_every_shape(self):
        for shape in ("gpt_odd", "gpt_h3", "gpt_t13", "gpt_b1", "gpt_l1", "gpt_l6"):
            with self.subTest(shape=shape):
                same, total = identical(shape)
                print("%s: %d of %d bit-identical" % (shape, same, total), file=sys.stderr)
                self.assertEqual(same, total)


if __name__ == "__main__":
    unittest.main()

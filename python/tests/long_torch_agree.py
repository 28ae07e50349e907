"""The long agreement runs (make check-long, python/run_tests.py --long):
every test of test_torch_agree.TestAgreeWithC for 200 steps instead of 30:
ampsim.torch.emulate and the C emulator agree to the same bits and counts
over the whole run."""
import unittest

import test_torch_agree as base


class TestAgreeWithCLong(base.TestAgreeWithC):
    steps = 200


if __name__ == "__main__":
    unittest.main()

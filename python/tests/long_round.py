"""The long CLI agreement (make check-long, python/run_tests.py --long): every
format x deterministic mode x saturate/ftz/daz combination on 10^6 values,
ampsim.round against the bits `ampsim round` writes (test_round.py runs one
combination per format and mode on 10^5 values)."""
import unittest

from test_round import EveryCaseCLI


class TestEveryCaseCLILong(EveryCaseCLI, unittest.TestCase):
    n_cli = 10 ** 6
    all_flags = True


if __name__ == "__main__":
    unittest.main()

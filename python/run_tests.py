#!/usr/bin/python3
"""Run every test of the Python package (python/tests/test*.py) with unittest.

With --long, run the long tests instead (python/tests/long_*.py: agreement
runs too slow for `make check`, which `make check-long` runs).

Prints the usual unittest report, then a closing line

    python: N passed, N failed, N skipped

and exits 1 if any test failed or errored (a module that cannot be imported
counts as a failed test). With CI=true in the environment a test skipped
because PyTorch or mpi4py is missing counts as failed: CI must run those tests.

Usage: /usr/bin/python3 python/run_tests.py [-v] [--long] [-k PATTERN] [MODULE...]
"""
import argparse
import os
import sys
import unittest

# OpenBLAS's own thread pool (not torch.set_num_threads) decides how a float32
# GEMM is split, and with it the bits of the result on some CPUs (the Zen
# kernels): one BLAS thread, as `ampsim train` runs it (amp_gemm_init), before
# any test imports torch, so that the agreement tests compare like with like.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "tests")


class CountingResult(unittest.TextTestResult):
    """TextTestResult that also counts passes and, under CI=true, turns
    skips for a missing torch or mpi4py into failures."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed = 0
        self.ci = os.environ.get("CI", "").lower() == "true"
        self.failed_tests = set()

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.failed_tests.add(test.id())

    def addError(self, test, err):
        super().addError(test, err)
        self.failed_tests.add(test.id())

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self.failed_tests.add(test.id())

    def addSkip(self, test, reason):
        if self.ci and ("torch" in reason.lower() or "mpi4py" in reason.lower()):
            try:
                raise AssertionError("skipped under CI=true (PyTorch and mpi4py must be installed): " + reason)
            except AssertionError:
                self.addFailure(test, sys.exc_info())
            return
        super().addSkip(test, reason)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("-k", dest="patterns", action="append", default=None,
                    help="only tests whose name contains PATTERN (unittest -k)")
    ap.add_argument("--long", action="store_true",
                    help="the long tests (python/tests/long_*.py) instead of test*.py")
    ap.add_argument("modules", nargs="*", help="test modules (e.g. test_round); default: all")
    args = ap.parse_args(argv)
    sys.path[:0] = [TESTS, HERE]
    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = ["*%s*" % p for p in args.patterns]
    if args.modules:
        suite = unittest.TestSuite(loader.loadTestsFromName(m) for m in args.modules)
    else:
        suite = loader.discover(TESTS, pattern="long_*.py" if args.long else "test*.py", top_level_dir=TESTS)
    runner = unittest.TextTestRunner(resultclass=CountingResult, verbosity=2 if args.verbose else 1,
                                     stream=sys.stdout)
    res = runner.run(suite)
    # a test counts once: failed if it or any of its subtests failed
    failed = len(res.failed_tests) + len(res.unexpectedSuccesses)
    print("python: %d passed, %d failed, %d skipped" % (res.passed, failed, len(res.skipped)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Speed of the Python package, as ratios measured in one run (not a test).

    /usr/bin/python3 python/bench.py [--log2n 24] [--repeat 7]

Prints, for N = 2^log2n float32 values (best of --repeat runs each):
  numpy.copyto(dst, x)                           the yardstick
  ampsim.round(x, "fp16")                        speed relative to copyto (target >= 0.5x)
  ampsim.round(x, "fp16", out=dst)               the same without allocating the result
  ampsim.round(x, "fp16", stats=True)            with statistics (target >= 0.3x)
and the cost of one call: a bare ctypes call into the library and
ampsim.round on a 1-element array (target <= 5 us per call).
"""
import argparse
import ctypes
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ampsim  # noqa: E402
from ampsim import _lib  # noqa: E402


def best(fn, repeat):
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def per_call(fn, calls):
    fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def main():
    ap = argparse.ArgumentParser(description="ampsim Python package speed (ratios)")
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--threads", default="1,0",
                    help="thread counts of the rounding kernels to measure (0 = all; default 1,0)")
    a = ap.parse_args()
    n = 1 << a.log2n
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(n) * np.exp2(rng.uniform(-20, 20, n))).astype(np.float32)
    dst = np.empty_like(x)
    np.copyto(dst, x)
    print("library %s, N = 2^%d float32 (%.0f MiB), wall time, best of %d; ratio = copyto time / time"
          % (ampsim.library_path, a.log2n, n * 4 / 2 ** 20, a.repeat))
    for th in (int(t) for t in a.threads.split(",")):
        ampsim.set_threads(th)
        print("threads %d (%s):" % (ampsim.get_threads(), "all" if th == 0 else "set"))
        t_copy = best(lambda: np.copyto(dst, x), a.repeat)
        rows = [("numpy.copyto(dst, x)", t_copy)]
        rows.append(('ampsim.round(x, "fp16")', best(lambda: ampsim.round(x, "fp16"), a.repeat)))
        rows.append(('ampsim.round(x, "fp16", out=dst)', best(lambda: ampsim.round(x, "fp16", out=dst), a.repeat)))
        rows.append(('ampsim.round(x, "fp16", stats=True)',
                     best(lambda: ampsim.round(x, "fp16", stats=True), a.repeat)))
        rows.append(('ampsim.round(x, "fp16", stats=True, out=dst)',
                     best(lambda: ampsim.round(x, "fp16", stats=True, out=dst), a.repeat)))
        rows.append(('ampsim.round(x, "e4m3", stats=True)',
                     best(lambda: ampsim.round(x, "e4m3", stats=True), a.repeat)))
        for name, t in rows:
            print("  %-46s %8.2f ms  %6.2f GB/s  %5.2fx" % (name, t * 1e3, n * 8 / t / 1e9, t_copy / t))
    # two Python threads, each rounding its own array with one kernel thread:
    # the C calls release the GIL, so they overlap
    ampsim.set_threads(1)
    halves = [x[: n // 2].copy(), x[n // 2:].copy()]
    outs = [np.empty_like(h) for h in halves]

    def serial():
        for h, o in zip(halves, outs):
            ampsim.round(h, "fp16", stats=True, out=o)

    def parallel():
        ts = [threading.Thread(target=ampsim.round, args=(h, "fp16"), kwargs={"stats": True, "out": o})
              for h, o in zip(halves, outs)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    t_ser, t_par = best(serial, a.repeat), best(parallel, a.repeat)
    print("two Python threads, one kernel thread each (stats=True): serial %.2f ms, threads %.2f ms: %.2fx"
          % (t_ser * 1e3, t_par * 1e3, t_ser / t_par))
    ampsim.set_threads(0)
    fn = _lib.lib.amp_get_threads
    one = np.ones(1, np.float32)
    out1 = np.empty(1, np.float32)
    fmt = ampsim.Format("fp16")
    c_bare = per_call(fn, a.calls)
    c_round = per_call(lambda: ampsim.round(one, fmt, out=out1), a.calls // 4)
    c_round_str = per_call(lambda: ampsim.round(one, "fp16"), a.calls // 4)
    print("per call:")
    print("  %-46s %8.3f us" % ("bare ctypes call (amp_get_threads)", c_bare * 1e6))
    print("  %-46s %8.3f us" % ("ampsim.round(1 value, Format, out=)", c_round * 1e6))
    print("  %-46s %8.3f us" % ('ampsim.round(1 value, "fp16")', c_round_str * 1e6))


if __name__ == "__main__":
    main()

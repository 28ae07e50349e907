"""Property-style fuzzing of the argument checking (fixed seed): odd shapes,
zero-size, read-only and negative-stride arrays, random dtypes, flags and
format strings. Nothing may crash; every rejection is a documented exception
(ValueError or TypeError); every accepted call equals the call on a clean
contiguous copy."""
import unittest

import numpy as np

from support import SEED, ampsim, bits_equal

N_CASES = 1500
DTYPES = ["<f2", "<f4", "<f8", ">f4", ">f8", ">f2", "<i4", "<i8", "u1", "?", "<c8", "<c16", "O", "<U3",
          "<M8[s]", "<u2"]
FORMATS = [r["name"] for r in ampsim.formats()] + ["e3m4", "e3m4fn", "e5m2fnuz", "float16", "bfloat16",
                                                   "e4m3fn", "e6m9", "e2m1fn"]
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto", "sr"]
ALLOWED = (ValueError, TypeError)


def rand_string(rng):
    alphabet = "efmnuz0123456789bfp_-.:=, \t\0\xe9"
    return "".join(rng.choice(list(alphabet)) for _ in range(int(rng.integers(0, 12))))


def rand_format(rng):
    r = rng.random()
    if r < 0.7:
        return str(rng.choice(FORMATS))
    if r < 0.8:
        f = str(rng.choice(FORMATS))
        i = int(rng.integers(0, len(f) + 1))
        return f[:i] + rand_string(rng) + f[i:]
    if r < 0.9:
        return rand_string(rng)
    return [None, 16, 3.5, b"fp16", ampsim.Format("e5m2"), ["fp16"], "x" * 300][int(rng.integers(0, 7))]


def rand_array(rng):
    dt = np.dtype(str(rng.choice(DTYPES[:5] if rng.random() < 0.6 else DTYPES)))
    ndim = int(rng.integers(0, 5))
    shape = tuple(int(rng.integers(0, 6)) for _ in range(ndim))
    n = int(np.prod(shape)) if shape else 1
    vals = rng.standard_normal(n) * np.exp2(rng.uniform(-30, 30, n))
    vals[rng.random(n) < 0.05] = np.nan
    vals[rng.random(n) < 0.05] = np.inf
    if dt.kind in "fc":
        with np.errstate(all="ignore"):
            a = vals.astype(dt).reshape(shape)
    elif dt.kind in "iu?":
        a = np.nan_to_num(vals).clip(-100, 100).astype(dt).reshape(shape)
    elif dt.kind == "M":
        a = np.zeros(shape, dt)
    else:
        a = np.array(vals.tolist(), dtype=dt).reshape(shape) if n else np.zeros(shape, dt)
    r = rng.random()
    if r < 0.15 and a.ndim:
        a = a[::-1]
    elif r < 0.3 and a.ndim >= 2:
        a = a.T
    elif r < 0.4 and a.ndim and a.shape[0] > 1:
        a = a[::2]
    if rng.random() < 0.2:
        a.setflags(write=False)
    if rng.random() < 0.05:
        a = a.tolist() if a.ndim else a
    return a


def rand_int_arg(rng, choices):
    return choices[int(rng.integers(0, len(choices)))]


class TestFuzzArguments(unittest.TestCase):
    def test_round_arguments(self):
        rng = np.random.default_rng(SEED)
        accepted = rejected = 0
        for case in range(N_CASES):
            x = rand_array(rng)
            fmt = rand_format(rng)
            mode = str(rng.choice(MODES)) if rng.random() < 0.9 else rand_int_arg(rng, [rand_string(rng), None, 3, "RNE"])
            kw = dict(saturate=bool(rng.random() < 0.5), ftz=bool(rng.random() < 0.3), daz=bool(rng.random() < 0.3))
            if rng.random() < 0.3:
                kw["sr_bits"] = rand_int_arg(rng, [None, 0, 1, 7, 64, 65, -1, 3.0, "4"])
            if rng.random() < 0.3:
                kw["seed"] = rand_int_arg(rng, [0, 1, 2 ** 64 - 1, 2 ** 64, -1, 1.5, None])
            if rng.random() < 0.2:
                kw["stream"] = rand_int_arg(rng, [0, 7, -3, 2 ** 70])
            stats = bool(rng.random() < 0.3)
            out_kind = int(rng.integers(0, 6)) if rng.random() < 0.3 else 0
            out = None
            shape = np.shape(x)
            if out_kind == 1:
                out = np.empty(shape, np.float32)
            elif out_kind == 2:
                out = np.empty(shape + (1,), np.float32)
            elif out_kind == 3:
                out = np.empty(shape, np.float64)
            elif out_kind == 4:
                out = np.empty(shape, np.float32)
                out.setflags(write=False)
            elif out_kind == 5:
                out = np.empty(tuple(s * 2 for s in shape), np.float32)[tuple(slice(None, None, 2) for _ in shape)] \
                    if shape else np.empty((), np.float32)
            try:
                res = ampsim.round(x, fmt, mode, stats=stats, out=out, **kw)
            except ALLOWED as e:
                rejected += 1
                self.assertTrue(str(e), "empty message (case %d)" % case)
                continue
            except Exception as e:  # pragma: no cover - the failure message
                self.fail("case %d: undocumented %s: %s (x %r, fmt %r, mode %r, %r)" % (
                    case, type(e).__name__, e, getattr(x, "dtype", type(x)), fmt, mode, kw))
            accepted += 1
            y, st = res if stats else (res, None)
            self.assertEqual(y.dtype, np.float32)
            self.assertEqual(y.shape, np.shape(x))
            if out is not None:
                self.assertIs(y, out)
            clean = np.array(x, dtype=np.float64 if np.asarray(x).dtype.itemsize == 8 else np.float32)
            ref = ampsim.round(clean, fmt, mode, **kw)
            self.assertTrue(bits_equal(ref, y), "case %d: result differs from the contiguous copy's" % case)
            if st is not None:
                self.assertEqual(st.n, clean.size)
        # both sides of the checking were exercised
        self.assertGreater(accepted, N_CASES // 10)
        self.assertGreater(rejected, N_CASES // 10)

    def test_encode_decode_arguments(self):
        rng = np.random.default_rng(SEED + 1)
        for case in range(N_CASES // 2):
            x = rand_array(rng)
            fmt = rand_format(rng)
            try:
                b = ampsim.encode(x, fmt, saturate=bool(rng.random() < 0.5))
            except ALLOWED:
                b = None
            if b is not None:
                self.assertIn(b.dtype, (np.uint8, np.uint16))
                self.assertEqual(b.shape, np.shape(x))
            bits = rng.integers(-2, 70000, size=int(rng.integers(0, 20))).astype(
                str(rng.choice(["u1", "<u2", "<i4", "<i8", "<f4", "?"])))
            try:
                y = ampsim.decode(bits, fmt)
            except ALLOWED:
                continue
            self.assertEqual(y.shape, bits.shape)

    def test_scaler_and_analyze_arguments(self):
        rng = np.random.default_rng(SEED + 2)
        kinds = list(ampsim.scaler_kinds())
        keys = ["init", "growth", "backoff", "interval", "window", "min", "max", "hysteresis", "history",
                "margin", "algo", "fmt", "block", "size", "pow2", "exp", "flush", "headroom", "underflow",
                "skip", "raise", "consecutive", "scale", "bogus"]
        vals = ["1", "0", "-1", "2^16", "1e400", "nan", "inf", "e4m3", "hybrid", "max", "ceil", "x", "", "0x1p3",
                "most_recent", "3.5"]
        for case in range(N_CASES):
            spec = str(rng.choice(kinds))
            if rng.random() < 0.7:
                spec += ":" + ",".join("%s=%s" % (rng.choice(keys), rng.choice(vals))
                                       for _ in range(int(rng.integers(1, 4))))
            if rng.random() < 0.1:
                spec = rand_string(rng)
            for cls in (ampsim.LossScaler, ampsim.FP8Scaler):
                try:
                    sc = cls(spec)
                except ALLOWED as e:
                    self.assertTrue(str(e))
                    continue
                try:
                    if cls is ampsim.LossScaler:
                        for f in rng.integers(0, 2, 5):
                            sc.update(bool(f))
                    else:
                        for a in (0.0, 1.0, float("nan"), 1e30):
                            sc.update(a, tensor=int(rng.integers(0, 3)))
                        sc.quantize(rand_array(rng) if rng.random() < 0.5 else np.ones((3, 5), np.float32),
                                    role=str(rng.choice(["act", "weight", "grad", "bias"])))
                except ALLOWED + (ampsim.ScalerStopped,):
                    pass
        for case in range(N_CASES // 5):
            x = rand_array(rng)
            fl = [rand_format(rng) for _ in range(int(rng.integers(0, 4)))]
            sl = [rand_int_arg(rng, [1.0, 2.0, 0.5, 0.0, -1.0, float("inf"), "auto", "x", 1e-45, 3e38])
                  for _ in range(int(rng.integers(0, 4)))]
            try:
                r = ampsim.analyze({"t": x}, formats=fl, scales=sl, auto=bool(rng.random() < 0.3), pandas=False)
            except ALLOWED:
                continue
            self.assertTrue((r["n"] == np.asarray(x).size).all())
            self.assertEqual(len(r) % max(len(fl), 1), 0)

    def test_format_strings(self):
        rng = np.random.default_rng(SEED + 3)
        for case in range(N_CASES * 2):
            s = rand_format(rng)
            try:
                f = ampsim.Format(s)
            except ALLOWED:
                continue
            self.assertEqual(ampsim.Format(f.name), f)
            self.assertGreater(f.max_finite, 0)


if __name__ == "__main__":
    unittest.main()

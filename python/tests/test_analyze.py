"""ampsim.analyze against `ampsim analyze --csv` on the same data."""
import csv
import io
import os
import unittest

import numpy as np

from support import SEED, ampsim, cli, tmpdir


def fmt_row(r):
    """A row as the CLI prints it (numbers %.9g; a column that does not
    apply, -1 or NaN here, is empty there)."""
    out = []
    for k in ampsim._analyze.COLUMNS[:-1]:
        v = r[k]
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (int, np.integer)):
            out.append("" if v == -1 else "%d" % v)
        else:
            out.append("" if np.isnan(v) and k.startswith(("scale_exp", "amax_sat")) else "%.9g" % v)
    return out


class TestAnalyze(unittest.TestCase):
    def tensors(self):
        rng = np.random.default_rng(SEED)
        g = (rng.standard_normal((64, 33)) * 1e-5).astype(np.float32)
        g[0, :4] = [0, np.inf, np.nan, 1e-30]
        a = (rng.standard_normal(5000) * np.exp2(rng.uniform(-20, 20, 5000)))
        h = (rng.standard_normal((10, 10)) * 100).astype(np.float16)
        # keyed as the CLI names a .npy tensor: the file's basename
        return {"grad.npy": g, "act64.npy": a, "half.npy": h}

    def test_rows_equal_cli(self):
        d = tmpdir(self)
        ts = self.tensors()
        files = []
        for name, x in ts.items():
            p = os.path.join(d, name)
            np.save(p, x)
            files.append(p)
        for formats, scales, auto, scale_arg in (
                (("fp16", "bf16", "e4m3", "e5m2"), (1.0,), False, None),
                (("e4m3", "e2m1", "e3m4fn"), (1.0, 1024.0, 0.1), False, "1,1024,0.1"),
                (("fp16", "e5m2", "e4m3fnuz"), (1.0, 3.0), True, "1,3,auto")):
            with self.subTest(formats=formats, scales=scales, auto=auto):
                args = ["analyze", "--csv", "--formats", ",".join(formats)]
                if scale_arg:
                    args += ["--scales", scale_arg]
                out = cli(*args, *files).stdout
                want = list(csv.reader(io.StringIO(out)))
                self.assertEqual(want[0], list(ampsim._analyze.COLUMNS[:-1]))
                rows = ampsim.analyze(ts, formats=formats, scales=scales, auto=auto, pandas=False)
                self.assertEqual(len(rows), len(want) - 1)
                got = [fmt_row(r) for r in rows]
                self.assertEqual(want[1:], got)
                if auto:
                    for r in rows:
                        if r["auto"]:
                            self.assertEqual(r["scale"], 2.0 ** r["scale_log2"])
                    self.assertEqual(int(rows["auto"].sum()), len(ts) * len(formats))

    def test_cast_options_and_scale_choices_equal_cli(self):
        d = tmpdir(self)
        ts = self.tensors()
        files = []
        for name, x in ts.items():
            p = os.path.join(d, name)
            np.save(p, x)
            files.append(p)
        out = cli("analyze", "--csv", "--formats", "e4m3,mx:e4m3", "--scales", "2^4,amax:margin=1,auto:count",
                  "--rounding", "rtz", "--saturate", *files).stdout
        want = list(csv.reader(io.StringIO(out)))
        rows = ampsim.analyze(ts, formats=("e4m3", "mx:e4m3"), scales=("2^4", "amax:margin=1", "auto:count"),
                              rounding="rtz", saturate=True, pandas=False)
        self.assertEqual(want[1:], [fmt_row(r) for r in rows])
        self.assertTrue(all(r["cast"] == "rtz:saturate" for r in rows))

    def test_errors(self):
        x = {"x": np.ones(4, np.float32)}
        with self.assertRaises(ValueError):
            ampsim.analyze(x, formats=("fp16", "nope"))
        with self.assertRaises(ValueError):
            ampsim.analyze(x, scales=(0.0,))
        with self.assertRaises(ValueError):
            ampsim.analyze(x, scales=(float("nan"),))
        with self.assertRaises(ValueError):
            ampsim.analyze(x, formats=("fp16",) * 40)
        with self.assertRaises(TypeError):
            ampsim.analyze({"i": np.arange(4)})
        with self.assertRaises(ValueError):
            ampsim.analyze({"": np.ones(2)})
        r = ampsim.analyze({"e": np.zeros(0, np.float32)}, formats=("fp16",), pandas=False)
        self.assertEqual(int(r["n"][0]), 0)


if __name__ == "__main__":
    unittest.main()

"""LossScaler and FP8Scaler against `ampsim scaler-replay`, step for step."""
import functools
import os
import unittest

import numpy as np

from support import SEED, ampsim, cli, tmpdir
from ampsim._scaler import format_scale  # noqa: E402

LOSS_SPECS = [
    "none", "static:1024", "static:scale=8,skip=1", "torch",
    "torch:init=2^4,interval=3,growth=4,backoff=0.25",
    "apex", "apex:init=2^10,window=3,min=1,max=2^12",
    "deepspeed", "deepspeed:init=2^8,window=4,hysteresis=3,consecutive=1,raise=0,min=2",
    "deepspeed:init=2^6,window=2,min=1",          # raises at its minimum: the run stops
    "megatron", "megatron:init=2^10,interval=3,hysteresis=2,min=4",
    "keras", "keras:init=2^6,interval=3",
    "underflow", "underflow:init=2^8,interval=5",
    "adaptive", "adaptive:init=2^8,min=1,max=2^12",
]
FP8_SPECS = [
    "delayed", "delayed:history=4,margin=1", "delayed:algo=most_recent,fmt=e5m2",
    "current", "current:pow2=1,fmt=e4m3", "mx", "mx:exp=ceil,fmt=e5m2,block=16",
    "block", "block:pow2=1,fmt=e4m3,size=64",
]


def found_inf_sequence(n, seed):
    """Runs of finite steps broken by bursts of overflow steps (and lone ones)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        out += [0] * int(rng.integers(0, 9))
        out += [1] * int(rng.integers(1, 4) if rng.random() < 0.5 else 1)
    return out[:n]


def amax_sequence(n, seed):
    rng = np.random.default_rng(seed)
    a = np.exp2(rng.uniform(-40, 40, n)).astype(np.float32)
    a[rng.integers(0, n, 8)] = 0.0
    a[rng.integers(0, n, 3)] = np.inf
    a[rng.integers(0, n, 3)] = np.nan
    a[5:15] = 1.0
    a[20:25] = 448.0
    a[30:33] = 1e-45
    a[40:43] = 3.4e38
    return a


def replay(case, spec, values, fp8):
    """`ampsim scaler-replay --events --scaler SPEC FILE` over values: (lines, exit code)."""
    path = os.path.join(tmpdir(case), "seq.txt")
    with open(path, "w") as fp:
        fp.write("# scripted sequence\n" + "\n".join(("%.9g" % v if fp8 else str(v)) for v in values) + "\n")
    p = cli("scaler-replay", "--events", "--scaler", spec, path, check=False)
    if p.returncode not in (0, 1):
        raise AssertionError("scaler-replay %s: exit %d: %s" % (spec, p.returncode, p.stderr))
    return p.stdout.splitlines(), p.returncode


def step(sc, f):
    """update(), with the run stopping (DeepSpeed at its minimum) as a result."""
    try:
        return sc.update(f)
    except ampsim.ScalerStopped:
        return "stopped"


class TestLossScalerReplay(unittest.TestCase):
    def test_every_spec_matches_replay(self):
        seq = found_inf_sequence(400, SEED)
        for spec in LOSS_SPECS:
            with self.subTest(spec=spec):
                lines, rc = replay(self, spec, seq, fp8=False)
                self.assertEqual(lines[0], "step,input,skipped,scale_used,scale_after,events")
                sc = ampsim.LossScaler(spec)
                rows, stopped = [], False
                for i, f in enumerate(seq):
                    scale_before, f32_before = sc.scale, sc.scale_f32
                    try:
                        sc.update(bool(f))
                    except ampsim.ScalerStopped:
                        stopped = True
                    r = sc.last_result
                    self.assertEqual(r["step"], i)
                    self.assertEqual(r["scale_used"], scale_before)
                    self.assertEqual(r["scale_f32_used"], f32_before)
                    fmt = functools.partial(format_scale, sc.kind)
                    rows.append("%d,%d,%d,%s,%s,%s" % (i, f, r["skipped"], fmt(r["scale_used"]), fmt(r["scale_after"]),
                                                      "|".join(e["event"] for e in r["events"])))
                    if stopped:
                        break
                self.assertEqual(rc == 1, stopped)
                self.assertEqual(lines[1:], rows)
                if stopped:  # every later call is refused again
                    with self.assertRaises(ampsim.ScalerStopped):
                        sc.update(False)

    def test_state_dict_round_trip(self):
        seq = found_inf_sequence(120, SEED + 1)
        for spec in LOSS_SPECS:
            if spec.startswith("deepspeed:init=2^6"):
                continue
            with self.subTest(spec=spec):
                a = ampsim.LossScaler(spec)
                for f in seq[:60]:
                    step(a, f)
                st = a.state_dict()
                b = ampsim.LossScaler(spec)
                b.load_state_dict(st)
                self.assertEqual(b.scale, a.scale)
                for f in seq[60:]:
                    self.assertEqual(step(a, f), step(b, f))
                    self.assertEqual(a.scale, b.scale)
                    self.assertEqual(a.last_result, b.last_result)
        with self.assertRaises(ValueError):
            ampsim.LossScaler("apex").load_state_dict(ampsim.LossScaler("torch").state_dict())
        with self.assertRaises(ValueError):
            ampsim.LossScaler("torch").load_state_dict({"state": b"garbage"})

    def test_bad_specs(self):
        for bad in ("", "torc", "torch:init=-1", "torch:bogus=1", "torch:init=1,init=2", "static:",
                    "deepspeed:hysteresis=0", "delayed", "mx"):
            with self.subTest(spec=bad):
                with self.assertRaises(ValueError) as cm:
                    ampsim.LossScaler(bad)
                self.assertTrue(str(cm.exception))
        for bad in ("torch", "delayed:history=0", "mx:block=0", "nope"):
            with self.subTest(spec=bad):
                with self.assertRaises(ValueError):
                    ampsim.FP8Scaler(bad)
        with self.assertRaises(TypeError):
            ampsim.LossScaler(None)

    def test_inv(self):
        for s in (1.0, 3.0, 65536.0, 2.0 ** -20, 7.0e5):
            self.assertEqual(ampsim.LossScaler.inv(s), float(np.float32(1.0 / np.float64(np.float32(s)))))


class TestDoubleScalePastFloat32(unittest.TestCase):
    """DeepSpeed's and apex's scale is a Python float (a double): it grows
    past 2^128 and stays finite there, as `ampsim scaler-replay` prints it;
    only the float32 that multiplies the loss (scale_f32) becomes inf."""

    def test_long_growth_run_matches_replay(self):
        # 3000 steps, a growth every 8 finite steps: the scale passes 2^128
        # near step 900 and reaches about 2^300; bursts of overflow back off
        rng = np.random.default_rng(SEED + 7)
        seq = [int(rng.random() < 0.01) for _ in range(3000)]
        for spec in ("deepspeed:window=8,hysteresis=1", "apex:window=8,max=2^1000"):
            with self.subTest(spec=spec):
                lines, rc = replay(self, spec, seq, fp8=False)
                self.assertEqual(rc, 0)
                sc = ampsim.LossScaler(spec)
                past = 0
                for i, f in enumerate(seq):
                    used = lines[1 + i].split(",")[3]
                    self.assertEqual(sc.scale, float(used), "step %d" % i)      # the replay's double
                    self.assertEqual(format_scale(sc.kind, sc.scale), used)
                    if sc.scale >= 2.0 ** 128:
                        past += 1
                        self.assertEqual(sc.scale_f32, float("inf"))
                    else:
                        self.assertEqual(sc.scale_f32, float(np.float32(sc.scale)))
                    sc.update(bool(f))
                    self.assertEqual(sc.last_result["scale_after"], float(lines[1 + i].split(",")[4]))
                self.assertGreater(past, 1000)
                self.assertGreater(sc.scale, 2.0 ** 250)
                self.assertTrue(np.isfinite(sc.scale))
                self.assertEqual(sc.state_dict()["scale"], sc.scale)

    def test_float32_scalers_hold_float32(self):
        # torch's scale is a float32 tensor: a growth to 2^128 (inf) is refused
        sc = ampsim.LossScaler("torch:init=2^127,interval=1")
        for _ in range(3):
            sc.update(False)
            self.assertEqual(sc.scale, 2.0 ** 127)
            self.assertEqual(sc.scale_f32, sc.scale)


class TestStatsDrivenScalers(unittest.TestCase):
    """underflow and adaptive read what their statistics say."""

    def grads(self, scale, magnitude, n=10000, seed=0):
        rng = np.random.default_rng(SEED + seed)
        g = (rng.standard_normal(n) * magnitude).astype(np.float32)
        return ampsim.round(g * np.float32(scale), "fp16", stats=True)[1]

    def test_underflow_raises_early_on_flushed_values(self):
        sc = ampsim.LossScaler("underflow:init=2^8,interval=1000,flush=1e-3")
        st = self.grads(sc.scale, 1e-10)          # most values flush to zero in fp16
        self.assertGreater(st.flushed / st.n, 1e-3)
        self.assertFalse(sc.update(False, [st]))
        self.assertEqual(sc.scale, 2.0 ** 9)
        self.assertEqual([e["event"] for e in sc.last_result["events"]], ["underflow_raise"])
        # well inside the range: nothing flushes, no early growth
        sc = ampsim.LossScaler("underflow:init=2^8,interval=1000,flush=1e-3")
        st = self.grads(sc.scale, 1e-2)
        self.assertEqual(st.flushed, 0)
        sc.update(False, {"fc1.weight.grad": st})
        self.assertEqual(sc.scale, 2.0 ** 8)
        self.assertEqual(sc.last_result["events"], [])
        # no statistics: only torch's rule
        sc = ampsim.LossScaler("underflow:init=2^8,interval=1000")
        sc.update(False)
        self.assertEqual(sc.scale, 2.0 ** 8)

    def test_adaptive_scales_follow_the_tensors(self):
        sc = ampsim.LossScaler("adaptive:init=2^8,min=1,max=2^40")
        self.assertTrue(sc.layerwise and sc.needs_stats)
        fmax = ampsim.Format("fp16").max_finite
        for step in range(6):
            small = self.grads(sc.tensor_scale(0), 1e-9, seed=step)
            large = self.grads(sc.tensor_scale(1), 1e-1, seed=step + 50)
            sc.update(False, [small, large], is_act=[False, True])
        s0, s1 = sc.tensor_scale(0), sc.tensor_scale(1)
        self.assertGreater(s0, s1)
        self.assertGreater(s0, 2.0 ** 8)
        for s in (s0, s1):
            self.assertEqual(np.log2(s), np.round(np.log2(s)))       # powers of two
        # no tensor's scaled amax (with headroom 2) overflows fp16
        self.assertLessEqual(self.grads(1.0, 1e-1, seed=55).amax * s1 * 2, fmax * 1.01)
        with self.assertRaises(TypeError):
            sc.update(False, [1.0])
        with self.assertRaises(ValueError):
            sc.update(False, [small], is_act=[True, False])


class TestFP8ScalerReplay(unittest.TestCase):
    def test_every_spec_matches_replay(self):
        seq = amax_sequence(300, SEED)
        for spec in FP8_SPECS:
            with self.subTest(spec=spec):
                lines, rc = replay(self, spec, seq, fp8=True)
                self.assertEqual(rc, 0)
                sc = ampsim.FP8Scaler(spec)
                rows = []
                for i, a in enumerate(seq):
                    used, after = sc.update(float(a))
                    rows.append("%d,%.9g,0,%.9g,%.9g," % (i, a, used, after))
                self.assertEqual(lines[1:], rows)

    def test_delayed_independent(self):
        # TE delayed scaling, margin 0, algo max: scale = fmax / max(history), the
        # history holding the last `history` amaxes; the first call uses scale 1.
        sc = ampsim.FP8Scaler("delayed:history=3,fmt=e4m3")
        amaxes = [2.0, 8.0, 1.0, 0.5, 0.25, 0.25]
        used = [sc.update(a)[0] for a in amaxes]
        want = [1.0] + [float(np.float32(448.0 / max(amaxes[max(0, i - 2):i + 1]))) for i in range(5)]
        self.assertEqual(used, want)

    def test_quantize(self):
        rng = np.random.default_rng(SEED)
        x = (rng.standard_normal((8, 64)) * 3).astype(np.float32)
        amax = float(np.abs(x).max())
        sc = ampsim.FP8Scaler("current:fmt=e4m3")
        r = sc.quantize(x, role="act", stats=True)
        scale = np.float32(448.0) / np.float32(amax)
        self.assertEqual(r["scale"], float(scale))
        q = ampsim.round(x * scale, "e4m3", saturate=True)
        self.assertTrue(np.array_equal(r["q"], q))
        self.assertEqual(r["stats"].n, x.size)
        self.assertEqual(r["format"].name, "e4m3")
        self.assertEqual(len(r["scale_inv"]), 1)
        self.assertTrue(np.array_equal(r["y"], (q * r["scale_inv"][0]).astype(np.float32)))
        # mx: one E8M0 scale per 32 values of a row, each a power of two; the
        # block's amax times its scale stays in range
        mx = ampsim.FP8Scaler("mx:fmt=e4m3")
        r = mx.quantize(x, role="weight")
        self.assertEqual(r["scale_inv"].shape, (8 * 2,))
        for b, s in enumerate(r["scale_inv"]):
            self.assertEqual(np.log2(s), np.round(np.log2(s)))
            blk = x[b // 2, (b % 2) * 32:(b % 2) * 32 + 32]
            self.assertEqual(float(s), mx.update(float(np.abs(blk).max()))[0] ** -1)
        # block: weights in size x size tiles
        bl = ampsim.FP8Scaler("block:size=4,fmt=e4m3")
        self.assertEqual(bl.quantize(x, role="weight")["scale_inv"].shape, (2 * 16,))
        self.assertEqual(bl.quantize(x, role="act")["scale_inv"].shape, (8 * 16,))
        self.assertEqual(ampsim.FP8Scaler("delayed").format("grad").name, "e5m2")
        self.assertEqual(ampsim.FP8Scaler("delayed").format("act").name, "e4m3")
        with self.assertRaises(ValueError):
            sc.quantize(np.zeros((2, 2, 2), np.float32))
        with self.assertRaises(ValueError):
            sc.quantize(x, role="bias")
        with self.assertRaises(TypeError):
            sc.quantize(np.zeros(4, np.int32))

    def test_state_dict(self):
        a = ampsim.FP8Scaler("delayed:history=5")
        seq = amax_sequence(40, SEED + 3)
        for v in seq[:20]:
            a.update(float(v), tensor=2)
        b = ampsim.FP8Scaler("delayed:history=5")
        b.load_state_dict(a.state_dict())
        for v in seq[20:]:
            self.assertEqual(a.update(float(v), tensor=2), b.update(float(v), tensor=2))


if __name__ == "__main__":
    unittest.main()

"""RunLog writes run directories that `ampsim report` draws; read_run reads them."""
import json
import os
import re
import unittest

import numpy as np

from support import SEED, ampsim, cli, tmpdir

FIG_RE = re.compile(r'(?:src|href)="([^"#:]+\.(?:png|svg|pdf))"')


def train(out, precision, scaler_spec, steps=40, seed=SEED):
    """A two-layer MLP on a synthetic task, with mixed precision emulated by
    ampsim.round: weights kept in FP32, GEMM operands and activations in
    `precision` ("fp32" = no rounding), the loss gradient scaled by a
    LossScaler and the gradients rounded into the format."""
    rng = np.random.default_rng(seed)
    B, I, H, C = 32, 16, 24, 4
    X = rng.standard_normal((256, I)).astype(np.float32)
    Wt = rng.standard_normal((I, C)).astype(np.float32)
    Y = np.argmax(X @ Wt, axis=1)
    W1 = (rng.uniform(-1, 1, (H, I)) / np.sqrt(I)).astype(np.float32)
    W2 = (rng.uniform(-1, 1, (C, H)) / np.sqrt(H)).astype(np.float32)
    low = precision != "fp32"
    fmt = {"fp16-amp": "fp16", "bf16-amp": "bf16"}.get(precision, "fp32")
    sc = ampsim.LossScaler(scaler_spec)
    lr = 0.2
    config = {"command": "train", "model": "mlp", "precision": precision, "scaler": sc.spec,
              "steps": steps, "batch": B, "lr": lr, "seed": str(seed), "hidden": H, "layers": 2}
    skipped_steps = 0
    with ampsim.RunLog(out, config) as log:
        for step in range(steps):
            idx = rng.integers(0, X.shape[0], B)
            x, y = X[idx], Y[idx]

            def cast(a, name, role):
                if not low:
                    r, st = ampsim.round(a, "fp32", stats=True)
                else:
                    r, st = ampsim.round(a, fmt, stats=True)
                log.tensor(step, name, role, fmt, st)
                return r, st

            w1, _ = cast(W1, "fc1.weight", "weight")
            w2, _ = cast(W2, "fc2.weight", "weight")
            h_pre, _ = cast(x @ w1.T, "fc1.out", "act")
            h = np.maximum(h_pre, 0)
            logits, _ = cast(h @ w2.T, "fc2.out", "act")
            z = logits - logits.max(axis=1, keepdims=True)
            p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
            loss = float(-np.log(p[np.arange(B), y] + 1e-30).mean())
            s = np.float32(sc.scale)
            g = p.copy()
            g[np.arange(B), y] -= 1
            with np.errstate(over="ignore", invalid="ignore"):
                dlogits, _ = cast((g / B * s).astype(np.float32), "fc2.out.grad", "act_grad")
                dW2, st2 = cast(dlogits.T @ h, "fc2.weight.grad", "weight_grad")
                dh, _ = cast((dlogits @ w2) * (h_pre > 0), "fc1.out.grad", "act_grad")
                dW1, st1 = cast(dh.T @ x, "fc1.weight.grad", "weight_grad")
                inv = np.float32(ampsim.LossScaler.inv(s))
                g1, g2 = dW1 * inv, dW2 * inv
            found_inf = not (np.isfinite(g1).all() and np.isfinite(g2).all())
            skipped = sc.update(found_inf, [st1, st2])
            for e in sc.last_result["events"]:
                log.event(step, e["event"], "", e["detail"])
            if found_inf:
                log.event(step, "nonfinite_grad", "fc1.weight.grad", "inf/NaN in the unscaled gradients")
            if not skipped:
                W1 -= lr * g1
                W2 -= lr * g2
            else:
                skipped_steps += 1
            gn = float(np.sqrt((g1.astype(np.float64) ** 2).sum() + (g2.astype(np.float64) ** 2).sum())) \
                if not found_inf else float("inf")
            log.metrics(step, loss=loss, loss_scale=float(s), skipped=skipped, lr=lr, grad_norm=gn,
                        nonfinite=int(found_inf))
        log.close(final_loss=loss, steps=steps, skipped_steps=skipped_steps, precision=precision)
    return skipped_steps


def figures_on_page(case, index):
    with open(index) as fp:
        html = fp.read()
    figs = sorted(set(FIG_RE.findall(html)))
    case.assertTrue(figs, "no figure on %s" % index)
    base = os.path.dirname(index)
    for f in figs:
        p = os.path.normpath(os.path.join(base, f))
        case.assertTrue(os.path.isfile(p) and os.path.getsize(p) > 0, "figure %s listed on %s is missing" % (f, index))
    return figs


class TestRunLog(unittest.TestCase):
    def test_training_loop_is_reported(self):
        d = os.path.join(tmpdir(self), "run")
        skipped = train(d, "fp16-amp", "torch:init=2^30,interval=8")
        self.assertGreater(skipped, 0)       # the huge initial scale overflows
        for f in ("config.json", "metrics.csv", "tensors.csv", "hist.csv", "events.csv", "summary.json"):
            self.assertTrue(os.path.isfile(os.path.join(d, f)), f)
        self.assertEqual([f for f in os.listdir(d) if ".tmp." in f], [])
        p = cli("report", d)
        index = p.stdout.strip().splitlines()[-1]
        self.assertTrue(index.endswith("index.html"), p.stdout)
        figs = figures_on_page(self, index)
        for fig in ("fig1_hist", "fig2_loss", "fig3_scale", "fig4_heat", "fig5_layers"):
            self.assertTrue(any(os.path.basename(f).startswith(fig) for f in figs), (fig, figs))

        run = ampsim.read_run(d, pandas=False)
        m = run["metrics"]
        self.assertEqual(list(m["step"]), list(range(40)))
        self.assertEqual(int(m["skipped"].sum()), skipped)
        self.assertTrue(np.isnan(m["val_loss"]).all())
        self.assertEqual(run["config"]["precision"], "fp16-amp")
        self.assertEqual(run["summary"]["skipped_steps"], skipped)
        t = run["tensors"]
        self.assertEqual(set(t["role"]), {"weight", "act", "act_grad", "weight_grad"})
        self.assertTrue({"backoff", "growth"} <= set(run["events"]["event"]))
        # a tensors.csv row holds the Stats it was given
        rng = np.random.default_rng(1)
        x = (rng.standard_normal(1000) * 1e-6).astype(np.float32)
        _, st = ampsim.round(x, "fp16", stats=True)
        d2 = os.path.join(tmpdir(self), "one")
        with ampsim.RunLog(d2, {"precision": "fp16-amp"}) as log:
            log.tensor(3, 'odd,"name"', "weight_grad", ampsim.Format("half"), st)
            log.metrics(3, loss=1.0)
        r = ampsim.read_run(d2, pandas=False)
        row = r["tensors"][0]
        self.assertEqual((row["step"], row["tensor"], row["format"], row["n"]), (3, 'odd,"name"', "fp16", 1000))
        for k in ("zero_in", "flushed", "subnormal", "saturated"):
            self.assertEqual(row[k], st.counts[k], k)
        self.assertEqual(row["amax"], float("%.9g" % st.amax))
        h = r["hist"]
        self.assertEqual({int(b): int(c) for b, c in zip(h["binade"], h["count"])}, st.hist)

    def test_compare_folder_is_reported(self):
        root = tmpdir(self)
        runs = [("ref", "fp32", "none"), ("fp16", "fp16-amp", "torch:init=2^20,interval=5"),
                ("bf16", "bf16-amp", "none"), ("fp16-static", "fp16-amp", "static:128")]
        losses = {}
        for name, prec, spec in runs:
            train(os.path.join(root, name), prec, spec, steps=30)
            losses[name] = ampsim.read_run(os.path.join(root, name), pandas=False)
        ref = losses["ref"]["metrics"]["loss"]
        head = ("name,precision,scaler,status,steps,final_loss,max_abs_diff,mean_abs_diff,skipped_steps,"
                "mean_flushed_frac_grads,first_divergence_step,tail_mean_loss,tail_diff")
        lines = [head]
        for name, prec, spec in runs:
            r = losses[name]
            loss = r["metrics"]["loss"]
            diff = np.abs(loss - ref)
            t = r["tensors"]
            gr = t[t["role"] == "weight_grad"]
            flushed = float((gr["flushed"] / gr["n"]).mean())
            first = int(np.argmax(diff > 0.05)) if (diff > 0.05).any() else -1
            tail = float(loss[-10:].mean())
            lines.append('%s,%s,"%s",ok,%d,%.9g,%.9g,%.9g,%d,%.9g,%d,%.9g,%.9g' % (
                name, prec, r["config"]["scaler"], len(loss), loss[-1], diff.max(), diff.mean(),
                int(r["metrics"]["skipped"].sum()), flushed, first, tail, tail - float(ref[-10:].mean())))
        with open(os.path.join(root, "summary.csv"), "w") as fp:
            fp.write("\n".join(lines) + "\n")
        p = cli("report", root)
        index = p.stdout.strip().splitlines()[-1]
        figures_on_page(self, index)
        c = ampsim.read_run(root, pandas=False)
        self.assertEqual(sorted(c["runs"]), sorted(n for n, _, _ in runs))
        self.assertEqual(list(c["summary"]["name"]), [n for n, _, _ in runs])

    def test_hist_rows_for_any_name(self):
        """hist.csv has the same rows (zero, the binades upward, inf, nan) for
        a plain name, a name CSV must quote and a long one, each read back
        as it was given."""
        import csv
        d = os.path.join(tmpdir(self), "run")
        log = ampsim.RunLog(d, {"x": 1})
        x = np.array([0.0, 1.0, 3.0, np.inf, np.nan, 1e-3] * 300, np.float32)
        _, st = ampsim.round(x, "fp16", stats=True)
        names = ["plain.t", 'a,b "q"\nc', "L" * 300]
        for n in names:
            log.tensor(7, n, "act", "fp16", st)
        log.close()
        with open(os.path.join(d, "hist.csv"), newline="") as f:
            rows = list(csv.reader(f))[1:]
        want = [["zero", "300"], ["-10", "300"], ["0", "300"], ["1", "300"], ["inf", "300"], ["nan", "300"]]
        for n in names:
            got = [r[2:] for r in rows if r[1] == n.replace("\n", " ") and r[0] == "7"]
            self.assertEqual(got, want, n[:20])
        self.assertEqual(len(rows), 3 * len(want))

    def test_unclosed_run_leaves_no_csv(self):
        d = os.path.join(tmpdir(self), "killed")
        log = ampsim.RunLog(d, {"precision": "fp32"})
        log.metrics(0, loss=1.0)
        self.assertFalse(os.path.exists(os.path.join(d, "metrics.csv")))
        self.assertTrue(os.path.exists(os.path.join(d, "config.json")))
        log.abort()
        self.assertEqual(sorted(os.listdir(d)), ["config.json"])
        with self.assertRaises(ZeroDivisionError):
            with ampsim.RunLog(d, {"precision": "fp32"}) as log:
                log.metrics(0, loss=1.0)
                1 / 0
        self.assertEqual(sorted(os.listdir(d)), ["config.json"])
        with self.assertRaises(ValueError):
            log.metrics(1, loss=1.0)   # closed
        with open(os.path.join(d, "config.json")) as fp:
            self.assertEqual(json.load(fp), {"precision": "fp32"})

    def test_bad_arguments(self):
        d = os.path.join(tmpdir(self), "bad")
        with self.assertRaises(ValueError):
            ampsim.RunLog(d, {"x": object()})
        with self.assertRaises(ValueError):
            ampsim.RunLog(d, "{not json")
        log = ampsim.RunLog(d, {})
        _, st = ampsim.round(np.ones(3, np.float32), "fp16", stats=True)
        with self.assertRaises(ValueError):
            log.tensor(0, "w", "bias", "fp16", st)
        with self.assertRaises(ValueError):
            log.tensor(0, "w", "weight", "fp99", st)
        with self.assertRaises(ValueError):
            log.tensor(0, "", "weight", "fp16", st)
        with self.assertRaises(TypeError):
            log.tensor(0, "w", "weight", "fp16", {"n": 3})
        with self.assertRaises(TypeError):
            log.metrics("zero", loss=1.0)
        with self.assertRaises(ValueError):
            log.close(bad=object())
        log.close()
        with self.assertRaises(FileNotFoundError):
            ampsim.read_run(os.path.join(d, "nothing"))

    def test_read_run_with_pandas_stand_in(self):
        # read_run builds DataFrames when pandas is importable: a stand-in
        # module records what it is given.
        import sys
        import types
        d = os.path.join(tmpdir(self), "pd")
        with ampsim.RunLog(d, {}) as log:
            log.metrics(0, loss=2.0)
            log.metrics(1, loss=1.0)
        fake = types.ModuleType("pandas")
        made = []

        def DataFrame(data, columns):
            made.append((dict(data), list(columns)))
            return ("frame", list(columns))
        fake.DataFrame = DataFrame
        old = sys.modules.get("pandas")
        sys.modules["pandas"] = fake
        try:
            r = ampsim.read_run(d)
        finally:
            if old is None:
                del sys.modules["pandas"]
            else:
                sys.modules["pandas"] = old
        self.assertEqual(r["metrics"][0], "frame")
        data, cols = made[0]
        self.assertEqual(cols[:3], ["step", "loss", "loss_scale"])
        self.assertEqual(list(data["loss"]), [2.0, 1.0])


if __name__ == "__main__":
    unittest.main()

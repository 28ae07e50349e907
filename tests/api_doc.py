#!/usr/bin/env python3
"""The C API reference, docs/api.md, made from the module headers: every
function declared with AMP_API (what libampsim.so exports), module by module
in dependency order, with the comment above it as its contract.

  python3 tests/api_doc.py            writes docs/api.md
  python3 tests/api_doc.py --check    exits 1 if docs/api.md is not what the
                                      headers give (make check runs this)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = [
    "sim/amp_base.h", "sim/amp_io.h", "sim/amp_format.h", "sim/amp_round.h", "sim/amp_tensorio.h",
    "sim/amp_scaler.h", "sim/amp_tensor.h", "sim/amp_policy.h", "sim/amp_gemm.h", "sim/amp_layers.h",
    "sim/amp_data.h", "sim/amp_model.h", "sim/amp_optim.h", "sim/amp_runlog.h", "sim/amp_checkpoint.h",
    "sim/amp_allreduce.h", "sim/amp_whatif.h", "sim/amp_train.h", "sim/amp_bench.h",
    "analysis/amp_analyze.h", "analysis/amp_csv.h", "analysis/amp_rundir.h", "analysis/amp_compare.h",
    "analysis/amp_sweep.h", "analysis/amp_accum.h", "reports/amp_report.h",
]


def headers():
    """Every public module header: the ORDER ones first, then any other."""
    found = []
    for d in ("sim", "analysis", "reports"):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if f.startswith("amp_") and f.endswith(".h"):
                found.append(d + "/" + f)
    return [h for h in ORDER if h in found] + [h for h in found if h not in ORDER]


def clean_comment(text):
    lines = []
    for ln in text.strip().split("\n"):
        ln = ln.strip()
        ln = re.sub(r"^/\*+\s?", "", ln)
        ln = re.sub(r"\s*\*+/$", "", ln)
        ln = re.sub(r"^\*\s?", "", ln)
        lines.append(ln)
    return " ".join(l for l in lines if l).strip()


def module(path):
    """(title, [(declaration, contract)]) of one header."""
    text = open(os.path.join(ROOT, path)).read()
    head = re.match(r"\s*(/\*.*?\*/)", text, re.S)
    title = clean_comment(head.group(1)).split(". ")[0] if head else ""
    title = re.sub(r"^ampsim\s*[—-]\s*", "", title)
    items = []
    # a comment (optional) right above an AMP_API declaration ending in ';'
    pat = re.compile(r"(?:(/\*(?:(?!\*/).)*\*/)\s*\n)?((?:AMP_API [^;{]*?\)));", re.S)
    pending = None
    for m in pat.finditer(text):
        comment, decl = m.group(1), m.group(2)
        decl = re.sub(r"\s+", " ", decl.replace("AMP_API ", "")).strip() + ";"
        if comment and "\n\n" not in text[m.start(1):m.start(2)].replace(comment, ""):
            pending = clean_comment(comment)
        items.append((decl, pending or ""))
        if comment is None:
            pass
        pending = None if comment else pending
    return title, items


def render():
    out = ["# The C API", "",
           "Every function that `libampsim.so` exports, module by module in dependency order",
           "(sim, then analysis, then reports). Each is declared with `AMP_API` in its module",
           "header; the text under it is the contract the header states (a function without its",
           "own text shares the contract above it). This page is made from the headers by",
           "`python3 tests/api_doc.py`, and `make check` fails when it differs from them.", ""]
    for h in headers():
        title, items = module(h)
        if not items:
            continue
        out += ["## `%s`: %s" % (os.path.basename(h), title), ""]
        for decl, contract in items:
            name = re.search(r"(amp_\w+)\s*\(", decl).group(1)
            out += ["### `%s`" % name, "", "```c", decl, "```", ""]
            if contract:
                out += [contract, ""]
    return "\n".join(out).rstrip() + "\n"


def main():
    doc = os.path.join(ROOT, "docs", "api.md")
    text = render()
    if "--check" in sys.argv:
        old = open(doc).read() if os.path.exists(doc) else ""
        if old != text:
            print("api: docs/api.md differs from the headers: run python3 tests/api_doc.py")
            return 1
        print("api: docs/api.md matches the headers (%d functions)" % text.count("\n### "))
        return 0
    open(doc, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

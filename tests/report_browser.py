#!/usr/bin/python3
"""Report pages in headless Chromium, and the report's PDFs through poppler.

Builds four examples with the given ampsim binary -- the demo (reports/demo.sh,
short), a run that goes NaN, a sweep reported with --out elsewhere, and a run
reported with --out elsewhere -- and for each page, at 1400 px and at 390 px:
nothing wider than the window outside a scrolling box (the whole page at
1400 px), every image loaded, no error event and no console message, every
link resolving to a file or folder (or an id on the page). Then the PDFs of
--figsize column and wide: page width 3.5 in / 7 in (pdfinfo), fonts embedded
(pdffonts), no text smaller than 8 pt and none outside the page (pdftohtml
-xml: font sizes and text boxes).

Chromium's smallest headless window is 500 px wide, so 390 px is checked by
narrowing the page's root element to 390 px before measuring.

    /usr/bin/python3 tests/report_browser.py PATH_TO_AMPSIM
Prints "ok ..." / "FAIL ..." per check and "N passed, N failed"; exit 1 on a failure.
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

AMPSIM = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/ampsim")
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
passed = failed = 0

INJECT = """<script>
var __errs = [];
window.addEventListener('error', function (e) {
  var t = e.target; __errs.push(t && (t.src || t.href) ? 'did not load: ' + (t.src || t.href) : String(e.message));
}, true);
window.addEventListener('load', function () {
  var want = %d, root = document.documentElement;
  if (window.innerWidth > want) root.style.width = want + 'px';
  var r = {w: want, page: 0, imgs: 0, broken: [], errs: __errs, wide: [], font: 99};
  document.querySelectorAll('img').forEach(function (i) {
    r.imgs++; if (!i.complete || i.naturalWidth == 0) r.broken.push(i.getAttribute('src'));
  });
  document.querySelectorAll('body *').forEach(function (el) {
    if (el.closest('.tw') || el.closest('pre') || el.closest('details:not([open])')) return;
    var b = el.getBoundingClientRect();
    if (b.width > 0) r.page = Math.max(r.page, Math.round(b.right));
    if (b.width > 0 && b.right > want + 1) r.wide.push(el.tagName + ' to ' + Math.round(b.right) + 'px: ' + (el.textContent || '').slice(0, 50));
  });
  document.querySelectorAll('p, li').forEach(function (el) {
    r.font = Math.min(r.font, parseFloat(getComputedStyle(el).fontSize));
  });
  if (window.innerWidth <= want) r.page = Math.max(r.page, root.scrollWidth);
  var p = document.createElement('pre'); p.id = 'check-result'; p.textContent = JSON.stringify(r);
  document.body.appendChild(p);
});
</script>"""


def result(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok", what)
    else:
        failed += 1
        print("FAIL", what + (": " + detail if detail else ""))


def run(args, cwd=None, ok=(0,), env=None):
    p = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode not in ok:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()[-400:]))
    return p.stdout


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for k in ("href", "src"):
            if a.get(k) is not None:
                self.refs.append(a[k])


def check_links(page, name):
    p = Links()
    with open(page, encoding="utf-8") as f:
        p.feed(f.read())
    bad = []
    for ref in p.refs:
        if ref.startswith("#"):
            if ref[1:] not in p.ids:
                bad.append(ref)
            continue
        u = urllib.parse.urlparse(ref)
        if u.scheme or u.netloc:
            bad.append(ref + " (not local)")
            continue
        target = os.path.normpath(os.path.join(os.path.dirname(page), urllib.parse.unquote(u.path)))
        if not os.path.exists(target):
            bad.append(ref)
    result(not bad and len(p.refs) > 5, "%s: all %d links resolve" % (name, len(p.refs)), ", ".join(bad[:6]))


def chromium(url, width, profile):
    p = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        "--user-data-dir=" + profile, "--window-size=%d,900" % max(width, 500),
                        "--enable-logging=stderr", "--v=0", "--dump-dom", url],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    return p.stdout, [l for l in p.stderr.splitlines() if ":CONSOLE" in l]


def check_page(page, name, profile):
    check_links(page, name)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    result('<meta name=viewport content="width=device-width, initial-scale=1">' in text, name + ": viewport meta tag")
    probe = os.path.join(os.path.dirname(page), "index.check.html")
    for width in (1400, 390):
        with open(probe, "w", encoding="utf-8") as f:
            f.write(text.replace("<head>", "<head>" + INJECT % width, 1))
        dom, console = chromium("file://" + probe, width, profile)
        m = re.search(r'<pre id="check-result">([^<]*)</pre>', dom)
        if not m:
            result(False, "%s at %d px: the page did not finish loading" % (name, width))
            continue
        r = json.loads(html.unescape(m.group(1)))
        what = "%s at %d px" % (name, width)
        result(r["imgs"] > 0 and not r["broken"], what + ": all %d images load" % r["imgs"], " ".join(r["broken"][:4]))
        result(not r["errs"] and not console, what + ": no error events or console messages",
               "; ".join((r["errs"] + console)[:4]))
        result(not r["wide"] and r["page"] <= width, what + ": nothing overflows (page %d px)" % r["page"],
               "; ".join(r["wide"][:4]))
        result(r["font"] >= 12, what + ": body text at least 12 px (smallest %g px)" % r["font"])
    os.unlink(probe)


def check_pdf(path, inches, need=()):
    name = os.path.basename(path)
    info = run(["pdfinfo", path])
    m = re.search(r"Page size:\s+([\d.]+) x ([\d.]+) pts", info)
    w = float(m.group(1)) if m else -1
    result(abs(w - inches * 72) < 1, "%s: %g in wide (%s pt)" % (name, inches, w))
    fonts = run(["pdffonts", path]).splitlines()[2:]
    emb = [l for l in fonts if l.split()[-5] == "yes"] if fonts else []
    result(fonts and len(emb) == len(fonts), "%s: %d fonts, all embedded" % (name, len(fonts)))
    # pdftohtml -xml at zoom 1.5 gives each font's size in px at 96 dpi (2 per pt)
    # and each text's box in px (1.5 per pt)
    xml = run(["pdftohtml", "-xml", "-stdout", "-i", "-zoom", "1.5", path])
    sizes = {k: int(v) / 2 for k, v in re.findall(r'<fontspec id="(\d+)" size="(\d+)"', xml)}
    texts = re.findall(r'<text top="(-?\d+)" left="(-?\d+)" width="(\d+)" height="\d+" font="(\d+)">(.*?)</text>', xml)
    small = [t for (_, _, _, f, t) in texts if sizes.get(f, 0) < 8]
    result(texts and not small, "%s: %d texts, the smallest at %g pt" % (name, len(texts), min(sizes.values() or [0])),
           "smaller than 8 pt: " + " | ".join(small[:6]))
    out = [t for (top, left, wd, _, t) in texts if int(left) < -1 or int(left) + int(wd) > w * 1.5 + 2]
    result(not out, "%s: no text outside the page" % name, " | ".join(out[:6]))
    # pdftohtml leaves out text wholly off the page: the labels must be there
    # (compared without spaces and ligatures: pdftohtml splits a rotated label
    # into pieces and keeps cairo's "fl" ligature as one character)
    shown = "".join(html.unescape(t) for (_, _, _, _, t) in texts).replace("\ufb02", "fl").replace("\ufb01", "fi")
    shown = shown.replace(" ", "")
    missing = [n for n in need if n.replace(" ", "") not in shown]
    result(not missing, "%s: shows %s" % (name, ", ".join(need) or "its text"), "missing: " + ", ".join(missing))


def main():
    if not shutil.which("chromium"):
        print("FAIL chromium is not installed (sh .ci/deps.sh browser)")
        return 1
    tmp = tempfile.mkdtemp(prefix="report_browser.")
    try:
        profile = os.path.join(tmp, "profile")
        env = dict(os.environ, AMPSIM_DEMO_DIR=os.path.join(tmp, "demo"), AMPSIM_DEMO_STEPS="200")
        run(["sh", os.path.join(SRC, "reports/demo.sh"), AMPSIM], env=env)
        run([AMPSIM, "train", "--precision", "fp16-amp", "--lr", "100", "--steps", "60", "--out", "nan"], cwd=tmp, ok=(1,))
        run([AMPSIM, "report", "nan", "--formats", "png", "--quiet"], cwd=tmp)
        with open(os.path.join(tmp, "grid.json"), "w") as f:
            f.write('{"train": {"steps": 60, "layers": 3}, "precisions": ["fp16-amp", "bf16-amp"], '
                    '"scalers": ["none", "torch"], "seeds": [1, 2], "vary": {"lr": [0.1, 0.3]}}')
        run([AMPSIM, "sweep", "grid.json", "--jobs", "2", "--out", "sweep"], cwd=tmp)
        run([AMPSIM, "report", "sweep", "--out", "elsewhere/sweep", "--formats", "png", "--quiet"], cwd=tmp)
        run([AMPSIM, "train", "--steps", "60", "--out", "run"], cwd=tmp)
        run([AMPSIM, "report", "run", "--out", "pages/deeper/run", "--formats", "png,pdf", "--figsize", "column",
             "--quiet"], cwd=tmp)
        pages = [("demo", "demo/report/index.html"), ("NaN run", "nan/report/index.html"),
                 ("sweep --out elsewhere", "elsewhere/sweep/index.html"),
                 ("run --out elsewhere", "pages/deeper/run/index.html")]
        for name, rel in pages:
            check_page(os.path.join(tmp, rel), name, profile)
        with open(os.path.join(tmp, "elsewhere/sweep/index.html"), encoding="utf-8") as f:
            groups = re.findall(r'<a href="([^"]*/report/index.html)"', f.read())
        result(len(groups) == 4, "sweep --out elsewhere: links to its 4 group pages (seeds x lr)")
        for pdf, need in (("fig2_loss.pdf", ("loss", "step")), ("fig1_hist.pdf", ("% of values", "log2 |gradient|")),
                          ("fig5_layers.pdf", ("layer (input to output)", "w-grad flushed (fraction)"))):
            check_pdf(os.path.join(tmp, "pages/deeper/run", pdf), 3.5, need)
        run([AMPSIM, "report", "demo", "--formats", "pdf", "--figsize", "column", "--quiet"], cwd=tmp)
        check_pdf(os.path.join(tmp, "demo/report/fig2_loss.pdf"), 3.5, ("loss", "|loss - ref|", "step", "ref (reference)"))
        run([AMPSIM, "report", "demo", "--formats", "pdf", "--figsize", "wide", "--quiet"], cwd=tmp)
        for pdf, need in (("fig2_loss.pdf", ("|loss - ref|", "step")), ("fig3_scale.pdf", ("log2(loss scale)", "step")),
                          ("fig4_heat_fp16-amp__none.pdf", ("flushed to zero", "step")),
                          ("fig6_accum.pdf", ("max over trials",))):
            check_pdf(os.path.join(tmp, "demo/report", pdf), 7, need)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        result(False, "setting up the examples", str(e))
    finally:
        if not os.environ.get("AMP_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept", tmp)
    print("report_browser: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

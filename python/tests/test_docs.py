"""The worked example of docs/python.md runs as written, prints what the
page says, and its run is drawn by `ampsim report`."""
import os
import re
import subprocess
import sys
import unittest

from support import PYDIR, ROOT, cli, tmpdir
from test_runlog import figures_on_page


class TestDocsExample(unittest.TestCase):
    def test_worked_example(self):
        with open(os.path.join(ROOT, "docs", "python.md")) as fp:
            page = fp.read()
        code = "\n".join(re.findall(r"```python\n(.*?)```", page, re.S))
        self.assertIn("ampsim.RunLog", code)
        d = tmpdir(self)
        env = dict(os.environ, PYTHONPATH=PYDIR)
        p = subprocess.run([sys.executable, "-c", code], cwd=d, capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        # the outputs the page quotes in its comments
        quoted = re.findall(r"^# (\d+ \d+\.\d+ (?:True|False) .*?)(?: \.\.\.)?$", page, re.M)
        self.assertEqual(len(quoted), 2)
        for q in quoted:
            self.assertIn(q, p.stdout)
        self.assertIn("200704 1572 199132 1.4195", p.stdout)
        out = cli("report", os.path.join(d, "runs", "py-demo")).stdout.strip().splitlines()[-1]
        figures_on_page(self, out)


if __name__ == "__main__":
    unittest.main()

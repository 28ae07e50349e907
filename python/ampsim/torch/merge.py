"""python3 -m ampsim.torch.merge DIR: write the summary of a compare folder
that ampsim.torch.compare filled in pieces (Slurm array tasks, interrupted or
distributed runs), from DIR/compare.json and the run directories.

A run without summary.json is "failed" in summary.csv. Runs whose config.json
lists other parameter names than the first finished run's are refused (exit 2,
nothing written). Exit status: 0 every run finished, 1 some run missing or
failed, 2 bad input."""
import argparse
import os
import sys

from .. import _lib
from . import _parallel


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m ampsim.torch.merge",
                                 description="Write DIR/summary.csv of a compare folder written by "
                                             "ampsim.torch.compare (from DIR/compare.json and its run directories).")
    ap.add_argument("dir", metavar="DIR", help="the compare folder (the out= of ampsim.torch.compare)")
    args = ap.parse_args(argv)
    try:
        grid = _parallel.read_grid(args.dir)
        missing = _parallel.summarize(args.dir, grid)
    except (ValueError, OSError, _lib.AmpsimError) as e:
        print("ampsim.torch.merge: %s" % e, file=sys.stderr)
        return 2
    _parallel.tasks_clear(args.dir)
    n = len(grid["runs"])
    print("%s: %d of %d runs finished" % (os.path.join(args.dir, "summary.csv"), n - missing, n))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

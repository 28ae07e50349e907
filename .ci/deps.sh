#!/bin/sh
# The one install step: installs the Debian packages ampsim needs, if missing.
#   sh .ci/deps.sh [GROUP...]     (default: base)
#   base    build, tests and demo: compiler, MPFR, GMP, Check, gnuplot, OpenBLAS,
#           zlib, cJSON, Open MPI, valgrind
#   python  the Python package and its tests: numpy, PyTorch (CPU), torchvision (model zoo),
#           mpi4py (the MPI tests)
#   fuzz    the fuzz harnesses: clang with libFuzzer and the OpenMP runtime
#   browser headless Chromium and poppler-utils, for the report's screenshots and
#           make check-long (the pages in Chromium, the PDFs through pdfinfo/pdffonts)
# As root it runs apt-get; otherwise it prints the exact apt-get line and fails.
[ $# -gt 0 ] || set -- base
PKGS=""
for g in "$@"; do
    case "$g" in
        base) PKGS="$PKGS build-essential pkg-config libmpfr-dev libgmp-dev check gnuplot-nox libopenblas-dev zlib1g-dev libcjson-dev openmpi-bin libopenmpi-dev valgrind" ;;
        python) PKGS="$PKGS python3 python3-numpy python3-torch python3-torchvision python3-mpi4py" ;;
        fuzz) PKGS="$PKGS clang libclang-rt-14-dev libomp-14-dev" ;;
        browser) PKGS="$PKGS chromium poppler-utils" ;;
        *) echo "deps: unknown group '$g' (base, python, fuzz, browser)" >&2; exit 2 ;;
    esac
done
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >&2 || exit 1
else
  echo "deps: missing packages; run: sudo apt-get install -y$missing" >&2
  exit 1
fi

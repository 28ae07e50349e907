#!/bin/sh
# The one install step: installs the Debian packages ampsim needs, if missing.
# As root it runs apt-get; otherwise it prints the exact apt-get line and fails.
# `deps.sh torch` also installs PyTorch (for ampsim.torch and its tests).
PKGS="build-essential pkg-config libmpfr-dev libgmp-dev check gnuplot-nox libopenblas-dev zlib1g-dev libcjson-dev openmpi-bin libopenmpi-dev valgrind python3 python3-numpy"
[ "$1" = torch ] && PKGS="$PKGS python3-torch"
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

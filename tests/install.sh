#!/bin/sh
# make install into a scratch prefix, then use it as a user would, from a
# folder with no source tree around: the installed ampsim trains (finding its
# data sets) and reports (finding its gnuplot scripts), and a C program builds
# against the installed library through pkg-config.
#   tests/install.sh BUILD
set -u
build=$1
src=$PWD
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
make -s --no-print-directory -C "$src" install BUILD="$build" ${AMP_MAKE_FLAGS:-} PREFIX="$tmp/prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; echo "install: make install failed"; exit 1; }
cd "$tmp" || exit 1
env -u AMP_SRCDIR -u AMP_DATADIR -u AMPSIM_REPORT_SCRIPTS "$tmp/prefix/bin/ampsim" train --steps 3 --out run >out.log 2>&1 ||
    { cat out.log; echo "install: the installed ampsim cannot train"; exit 1; }
env -u AMP_SRCDIR -u AMP_DATADIR -u AMPSIM_REPORT_SCRIPTS "$tmp/prefix/bin/ampsim" report run --quiet >out.log 2>&1 ||
    { cat out.log; echo "install: the installed ampsim cannot report"; exit 1; }
[ -f run/report/index.html ] || { echo "install: no report/index.html"; exit 1; }
for g in "$src"/reports/fig*.gp; do   # every figure script, the sweep report's included
    [ -f "$tmp/prefix/share/ampsim/reports/$(basename "$g")" ] || { echo "install: $(basename "$g") not installed"; exit 1; }
done
cat > user.c <<'C'
#include <stdio.h>
#include "amp_round.h"
int main(void)
{
    amp_format f;
    float x = 70000.0f, y;
    amp_round_opts o = amp_round_defaults();
    if (amp_format_parse("fp16", &f) || amp_round_f32(&f, &o, &x, &y, 1, NULL)) return 1;
    printf("%s %g\n", amp_version(), (double)y);
    return 0;
}
C
flags=$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs ampsim) ||
    { echo "install: pkg-config does not find ampsim"; exit 1; }
cc -std=c11 -o user user.c $flags -Wl,-rpath,"$tmp/prefix/lib" ${EXAMPLE_LDFLAGS:-} || { echo "install: cannot build against it"; exit 1; }
./user >user.out || { echo "install: the program fails"; exit 1; }
grep -q ' inf$' user.out || { cat user.out; echo "install: unexpected result"; exit 1; }
echo "install: trains, reports and links from $tmp/prefix"

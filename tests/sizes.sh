#!/bin/sh
# Size limits of the library and the CLI: no file over 800 lines, no function
# over 120 lines (tests and generated tables aside). A function is counted
# from its first line at column 0 to its closing "}" at column 0.
#   tests/sizes.sh [SRCDIR]
cd "${1:-.}" || exit 2
status=0
for f in sim/*.c sim/*.h analysis/*.c analysis/*.h reports/*.c reports/*.h sim/mpi/*.c; do
    n=$(wc -l < "$f")
    if [ "$n" -gt 800 ]; then echo "sizes: $f has $n lines (at most 800)"; status=1; fi
done
awk '
    FNR == 1 { start = 0 }
    /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ && !/^(typedef|struct|enum|union|#)/ { start = FNR; name = $0 }
    /^}/ && start { len = FNR - start + 1; if (len > 120) { printf "sizes: %s:%d: function of %d lines (at most 120): %s\n", FILENAME, start, len, name; bad = 1 } start = 0 }
    END { exit bad }
' sim/*.c analysis/*.c reports/*.c sim/mpi/*.c || status=1
[ $status = 0 ] && echo "sizes: ok (files <= 800 lines, functions <= 120 lines)"
exit $status

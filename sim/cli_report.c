/* ampsim report DIR [--formats png,pdf,svg]: the HTML report and figures of a
 * run or compare directory (reports/report.c). */
#include "cli.h"
#include "amp_report.h"

#include <stdio.h>
#include <string.h>


static void help(void)
{
    printf("usage: ampsim report DIR [--formats png,pdf,svg] [--quiet]\n"
           "Writes DIR/report/index.html and the figures of a run directory (written by\n"
           "`ampsim train`) or a compare directory (written by `ampsim compare`: summary.csv\n"
           "and one run directory per configuration). Figures, drawn by gnuplot with the\n"
           "scripts reports/fig*.gp:\n"
           "  1 gradient-magnitude histograms (log2|g| per binade, zero bin) with the format's\n"
           "    normal, subnormal, flush-to-zero and overflow bands, unscaled and after the\n"
           "    loss scale: pooled, per tensor (run) or per run (compare)\n"
           "  2 loss curves against the FP32 reference, with |loss - reference| below\n"
           "  3 loss-scale trajectories (log2), skipped steps marked\n"
           "  4 heat maps tensor x step: flushed fraction, saturated+overflow fraction\n"
           "  5 per-layer underflow rate of the weight gradients, one line per run\n"
           "  6 dot-product error vs length K (from DIR/accum.csv, made by\n"
           "    `ampsim bench accum --csv > DIR/accum.csv`)\n"
           "PNG is always written (the page shows it); --formats adds PDF and SVG for papers\n"
           "(default: png,pdf,svg). The compare's reference is the run folder named ref (as\n"
           "`ampsim compare` names it), else a run whose config.json has precision fp32.\n"
           "Runs that summary.csv marks as failed are left out (and named on the page).\n"
           "Every file is written atomically. A missing or malformed input file is exit 2\n"
           "with a message naming the file and line. Prints the path of index.html.\n"
           "Options:\n"
           "  --formats LIST   any of png,pdf,svg\n"
           "  --quiet          no gnuplot warnings on stderr\n"
           "  --scripts DIR    folder holding the fig*.gp scripts (default: found next to the\n"
           "                   binary, or $AMPSIM_REPORT_SCRIPTS)\n"
           "  --gnuplot PROG   the gnuplot program (default: gnuplot on PATH)\n");
}

int amp_cli_report(int argc, char **argv)
{
    amp_report_opts o = { .formats = AMP_REPORT_PNG | AMP_REPORT_PDF | AMP_REPORT_SVG };
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (amp_cli_is_help(a)) { help(); return 0; }
        if (!strcmp(a, "--formats") || !strcmp(a, "--scripts") || !strcmp(a, "--gnuplot")) {
            if (i + 1 >= argc) return amp_cli_usage_error("report", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--formats")) {
                if (amp_report_parse_formats(v, &o.formats))
                    return amp_cli_usage_error("report", "%s", amp_errmsg());
            } else if (!strcmp(a, "--scripts")) {
                o.scripts_dir = v;
            } else {
                o.gnuplot = v;
            }
        } else if (!strncmp(a, "--formats=", 10)) {
            if (amp_report_parse_formats(a + 10, &o.formats))
                return amp_cli_usage_error("report", "%s", amp_errmsg());
        } else if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            return amp_cli_usage_error("report", "unknown option '%s' (try --help)", a);
        } else if (dir) {
            return amp_cli_usage_error("report", "one directory only ('%s' and '%s')", dir, a);
        } else {
            dir = a;
        }
    }
    if (!dir) return amp_cli_usage_error("report", "missing DIR (try --help)");
    char index[4200];
    amp_status st = amp_report_write(dir, &o, index, sizeof index);
    if (st) return amp_cli_fail(st);
    printf("%s\n", index);
    return 0;
}

/* ampsim report DIR [--formats png,pdf,svg]: the HTML report and figures of a
 * run or compare directory (reports/report.c). */
#include "cli.h"
#include "amp_report.h"

#include <stdio.h>
#include <string.h>


static void help(void)
{
    printf("usage: ampsim report DIR [--formats png,pdf,svg] [--figsize column|wide] [--quiet] [--out OUT]\n"
           "       ampsim report DIR1 DIR2 ... --out OUT\n"
           "Writes DIR/report/index.html (or OUT/index.html) and the figures of a run directory\n"
           "(written by `ampsim train`) or a compare directory (written by `ampsim compare`:\n"
           "summary.csv and one run directory per configuration). Several folders (runs or\n"
           "compares) are overlaid on one page in OUT, each run labelled FOLDER or FOLDER/RUN.\n"
           "A sweep directory (`ampsim sweep` with seeds or vary) gets each group's compare page\n"
           "and a page that aggregates over the seeds: per configuration and varied value the\n"
           "paired gap to the reference (mean, sd over the seeds; \"no effect beyond seed noise\"\n"
           "when it holds), the tail loss and flushed share, stuck and diverged runs.\n"
           "The page opens with findings computed from the runs (docs/reports.md). Figures,\n"
           "drawn by gnuplot with the scripts reports/fig*.gp:\n"
           "  1 gradient-magnitude histograms (log2|g| per binade, zero bin) with the format's\n"
           "    normal, subnormal, flush-to-zero and overflow bands, unscaled and after the\n"
           "    loss scale: pooled, per tensor (run) or per run (compare)\n"
           "  2 loss curves against the FP32 reference, with |loss - reference| below\n"
           "  3 loss-scale trajectories (log2), skipped steps marked\n"
           "  4 heat maps tensor x step: flushed fraction, saturated+overflow fraction\n"
           "  5 per-layer underflow rate of the weight gradients, one line per run\n"
           "  6 dot-product error vs length K (from DIR/accum.csv, made by\n"
           "    `ampsim bench accum --csv > DIR/accum.csv`)\n"
           "  7 (sweep) the tail-loss gap to the reference paired per seed, and the flushed\n"
           "    share, per configuration and varied value\n"
           "  8 what-if loss scalers (runs with whatif.csv)\n"
           "Non-finite values (NaN, inf) are counted alike in every figure and in the findings;\n"
           "runs that trained exactly alike are one entry (A = B), gaps below the noise floor\n"
           "are ties, and a sweep's verdict pairs each seed's run with that seed's reference.\n"
           "Every link is relative to OUT, so it resolves wherever --out puts the page.\n"
           "PNG is always written (the page shows it); --formats adds PDF and SVG for papers\n"
           "(at --figsize; each figure's exact gnuplot command is on the page)\n"
           "(default: png,pdf,svg). The compare's reference is the run folder named ref (as\n"
           "`ampsim compare` names it), else a run whose config.json has precision fp32.\n"
           "Runs that summary.csv marks as failed are left out (and named on the page).\n"
           "Every file is written atomically. A missing or malformed input file is exit 2\n"
           "with a message naming the file and line. Prints the path of index.html.\n"
           "Options:\n"
           "  --formats LIST   any of png,pdf,svg\n"
           "  --figsize SIZE   PDF and SVG for a paper: wide (7 in, the default) or column\n"
           "                   (3.5 in); text at 8 pt or more at that size\n"
           "  --quiet          no gnuplot warnings on stderr\n"
           "  --out OUT        write the page and figures into OUT (default DIR/report)\n"
           "  --scripts DIR    folder holding the fig*.gp scripts (default: found next to the\n"
           "                   binary, or $AMPSIM_REPORT_SCRIPTS)\n"
           "  --gnuplot PROG   the gnuplot program (default: gnuplot on PATH)\n");
}

static amp_status parse_formats(const char *v, void *dst) { return amp_report_parse_formats(v, dst); }
static amp_status parse_figsize(const char *v, void *dst) { return amp_report_parse_figsize(v, dst); }

int amp_cli_report(int argc, char **argv)
{
    amp_report_opts o = { .formats = AMP_REPORT_PNG | AMP_REPORT_PDF | AMP_REPORT_SVG };
    const char *pos[64];
    amp_cli_list dirs = { pos, 0, 64 };
    const amp_cli_opt opts[] = {
        { "--formats", AMP_OPT_FN, &o.formats, 0, 0, parse_formats },
        { "--scripts", AMP_OPT_STR, &o.scripts_dir, 0, 0, NULL },
        { "--gnuplot", AMP_OPT_STR, &o.gnuplot, 0, 0, NULL },
        { "--quiet", AMP_OPT_FLAG, &o.quiet, 1, 0, NULL },
        { "--out", AMP_OPT_STR, &o.out, 0, 0, NULL },
        { "--figsize", AMP_OPT_FN, &o.figsize, 0, 0, parse_figsize },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("report", argc, argv, opts, &dirs, AMP_CLI_POSITIONAL, help);
    if (rc) return rc < 0 ? 0 : rc;
    if (!dirs.n) return amp_cli_usage_error("report", "missing DIR (try --help)");
    char index[4200];
    amp_cli_catch_signals();
    o.stop = amp_cli_stop_flag();
    if (dirs.n > 1 && !o.out) return amp_cli_usage_error("report", "several folders go on one page: give --out DIR");
    amp_status st = amp_report_write_many((const char *const *)dirs.v, dirs.n, &o, index, sizeof index);
    if (st == AMP_EINTR || (st && amp_cli_interrupted())) return amp_cli_interrupt_exit("report", "interrupted; run the same command again to redraw");
    if (st) return amp_cli_fail(st);
    printf("%s\n", index);
    return 0;
}

/* ampsim formats [--csv]: the format table with its derived figures. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void help(void)
{
    printf("usage: ampsim formats [--csv]\n"
           "Lists every built-in format: bits, exponent/mantissa bits, bias, max finite,\n"
           "min normal, min subnormal, inf, NaN encoding. Custom formats eXmY (IEEE-like),\n"
           "eXmYfn (OCP-style, no inf) and eXmYfnuz (no inf, no -0) are accepted anywhere\n"
           "a format name is.\n");
}

int amp_cli_formats(int argc, char **argv)
{
    int csv = 0;
    const amp_cli_opt opts[] = {
        { "--csv", AMP_OPT_FLAG, &csv, 1, 0, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("formats", argc, argv, opts, NULL, AMP_CLI_STRICT, help);
    if (rc) return rc < 0 ? 0 : rc;
    char row[256];
    if (csv) {
        printf("%s\n", amp_format_csv_header());
        for (int k = 0; k < AMP_FMT_COUNT; k++) {
            amp_format_csv_row(amp_format_get(k), row, sizeof row);
            printf("%s\n", row);
        }
        return 0;
    }
    printf("%-10s %4s %3s %3s %4s %14s %14s %14s %4s %s\n", "name", "bits", "E", "M", "bias",
           "max_finite", "min_normal", "min_subnormal", "inf", "nan");
    for (int k = 0; k < AMP_FMT_COUNT; k++) {
        const amp_format *f = amp_format_get(k);
        printf("%-10s %4d %3d %3d %4d %14.9g %14.9g %14.9g %4s %s\n", f->name, f->bits, f->ebits,
               f->mbits, f->bias, f->max_finite, f->min_normal, f->min_subnormal,
               f->has_inf ? "yes" : "no", amp_nan_name(f->nan));
    }
    return 0;
}

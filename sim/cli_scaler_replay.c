/* ampsim scaler-replay --scaler SPEC [--csv] [--events] FILE
 * Replays a scaler over a scripted sequence (docs/scalers.md): one value per line,
 * 0/1 found-inf flags for loss scalers, amax values (held as float32) for FP8
 * scalers. Prints CSV step,input,skipped,scale_used,scale_after. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "scaler-replay";

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: ampsim scaler-replay --scaler SPEC [--csv] [--events] FILE\n"
            "Replays a scaling strategy over a scripted sequence, one value per line ('-' reads\n"
            "stdin; empty lines and lines starting with '#' are skipped):\n"
            "  loss scalers: 0 (finite step) or 1 (inf/NaN found);\n"
            "  FP8 scalers:  the tensor's amax (held as float32; nan and inf allowed); the scale\n"
            "                is the multiplier q = x*scale, with max 448 (e4m3) unless fmt=... says\n"
            "                otherwise (fmt=e5m2: 57344); mx and block treat each line as one block.\n"
            "Prints CSV step,input,skipped,scale_used,scale_after (step from 0). Scales are shown\n"
            "as the framework holds them: float32 scales with %%.9g, the double of apex and\n"
            "deepspeed with the fewest digits that read back to the same double (2^129 is\n"
            "6.80564733841877e+38; it multiplies the float32 loss as inf).\n"
            "--events adds a column with the events of each step ('|'-separated).\n"
            "--csv is accepted for symmetry (the output is always CSV).\n"
            "Exit 0; 1 when the scaler stops the run (deepspeed at its minimum scale, after\n"
            "printing that step); 2 for a bad SPEC, option or input line (named as FILE:LINE).\n\n%s",
            amp_scaler_spec_help());
}

typedef struct { double *v; size_t n, cap; } values;

static int push(values *vs, double d)
{
    if (vs->n == vs->cap) {
        size_t nc = vs->cap ? vs->cap * 2 : 256;
        double *nv = realloc(vs->v, nc * sizeof *nv);
        if (!nv) return -1;
        vs->v = nv;
        vs->cap = nc;
    }
    vs->v[vs->n++] = d;
    return 0;
}

/* Reads every value first, so a bad line is reported before any output. */
static int read_values(const char *path, int fp8, values *vs)
{
    FILE *fp = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!fp) return amp_cli_usage_error(CMD, "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int rc = 0;
    while (getline(&line, &cap, fp) >= 0) {
        lineno++;
        char *s = line, *e;
        while (*s == ' ' || *s == '\t') s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
        if (!*s || *s == '#') continue;
        double d;
        if (!fp8) {
            if (strcmp(s, "0") && strcmp(s, "1")) {
                rc = amp_cli_usage_error(CMD, "%s:%ld: expected 0 or 1 (found-inf flag), got '%s'", path, lineno, s);
                break;
            }
            d = s[0] == '1';
        } else {
            char *end;
            d = strtod(s, &end);
            if (end == s || *end || d < 0) {
                rc = amp_cli_usage_error(CMD, "%s:%ld: expected an amax >= 0 (or nan, inf), got '%s'", path, lineno, s);
                break;
            }
        }
        if (push(vs, d)) { rc = amp_cli_usage_error(CMD, "%s: out of memory", path); break; }
    }
    if (!rc && ferror(fp)) rc = amp_cli_usage_error(CMD, "%s: read error", path);
    free(line);
    if (fp != stdin) fclose(fp);
    return rc;
}

static void print_events(const amp_scaler_result *r)
{
    putchar(',');
    for (int i = 0; i < r->n_events; i++)
        printf("%s%s", i ? "|" : "", amp_scaler_event_name(r->events[i].kind));
}

int amp_cli_scaler_replay(int argc, char **argv)
{
    const char *spec_text = NULL, *path = NULL;
    int events = 0;
    for (int i = 1; i < argc; i++) {
        if (amp_cli_is_help(argv[i])) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--scaler")) {
            if (++i >= argc) return amp_cli_usage_error(CMD, "--scaler needs a SPEC");
            spec_text = argv[i];
        } else if (!strncmp(argv[i], "--scaler=", 9)) {
            spec_text = argv[i] + 9;
        } else if (!strcmp(argv[i], "--csv")) {
        } else if (!strcmp(argv[i], "--events")) {
            events = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return amp_cli_usage_error(CMD, "unknown option '%s' (try --help)", argv[i]);
        } else {
            if (path) return amp_cli_usage_error(CMD, "one FILE only (got '%s' and '%s')", path, argv[i]);
            path = argv[i];
        }
    }
    if (!spec_text) return amp_cli_usage_error(CMD, "--scaler SPEC is required (try --help)");
    if (!path) return amp_cli_usage_error(CMD, "FILE is required ('-' for stdin)");
    amp_scaler_spec spec;
    amp_status st = amp_scaler_spec_parse(spec_text, &spec);
    if (st) return amp_cli_fail(st);
    int fp8 = amp_scaler_kind_is_fp8(spec.kind);
    values vs = { 0 };
    int rc = read_values(path, fp8, &vs);
    if (rc) { free(vs.v); return rc; }

    printf("step,input,skipped,scale_used,scale_after%s\n", events ? ",events" : "");
    if (fp8) {
        amp_fp8_scaler sc;
        st = amp_fp8_init(&sc, &spec);
        for (size_t i = 0; !st && i < vs.n; i++) {
            float amax = (float)vs.v[i], used, after;
            st = amp_fp8_observe_amax(&sc, 0, NULL, amax, &used, &after);
            if (!st) printf("%zu,%.9g,0,%.9g,%.9g%s\n", i, amax, used, after, events ? "," : "");
        }
        amp_fp8_free(&sc);
    } else {
        amp_scaler sc;
        st = amp_scaler_init(&sc, &spec);
        for (size_t i = 0; !st && i < vs.n; i++) {
            amp_scaler_obs obs = { .found_inf = vs.v[i] != 0 };
            amp_scaler_result r;
            st = amp_scaler_update(&sc, &obs, &r);
            if (st != AMP_OK && st != AMP_ERUN) break;
            char su[40], sa[40];
            amp_scaler_fmt_scale(spec.kind, r.held_used, su, sizeof su);
            amp_scaler_fmt_scale(spec.kind, r.held_after, sa, sizeof sa);
            printf("%zu,%d,%d,%s,%s", i, obs.found_inf, r.skipped, su, sa);
            if (events) print_events(&r);
            putchar('\n');
        }
        amp_scaler_free(&sc);
    }
    free(vs.v);
    fflush(stdout);
    if (st) return amp_cli_fail(st);
    return ferror(stdout) ? amp_cli_usage_error(CMD, "write error on stdout") : 0;
}

/* The plumbing every figure of the report uses: gnuplot literals, data files
 * written atomically under report/data/, figure slots, source links, notes,
 * and the gnuplot run that draws a figure. gnuplot writes to a temporary name
 * that is checked (PNG/PDF/SVG signature) and renamed, so a figure is either
 * complete or absent. The scripts are copied to report/scripts/ so the folder
 * redraws on its own. */
#include "report_internal.h"
#include "amp_base.h"
#include "amp_io.h"
#include "amp_report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- small helpers ------------------------------------------------------ */

void rp_relpath(const char *from, const char *to, char *out, size_t len)
{
    char a[RP_PATH], b[RP_PATH];
    if (!realpath(from, a) || !realpath(to, b)) { snprintf(out, len, "%s", to); return; }
    size_t k = 0;                     /* a[0..k) and b[0..k): the common whole components */
    for (size_t i = 0;; i++) {
        int ea = a[i] == '/' || !a[i], eb = b[i] == '/' || !b[i];
        if (ea && eb) k = i;
        if (!a[i] || !b[i] || a[i] != b[i]) break;
    }
    size_t o = 0;
    out[0] = 0;
    for (const char *s = a + k; *s; s++)   /* one ".." per component of a below the common part */
        if (*s != '/' && (s == a + k || s[-1] == '/') && o + 4 < len) { memcpy(out + o, "../", 4); o += 3; }
    const char *rest = b + k;
    while (*rest == '/') rest++;
    if (*rest) snprintf(out + o, len - o, "%s", rest);
    else if (o) out[o - 1] = 0;           /* drop the last '/' */
    else snprintf(out, len, ".");
}

/* Writes a gnuplot double-quoted string literal ('\n' stays a line break). */
void rp_gp_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '\n') { fputs("\\n", fp); continue; }   /* a line break in a title */
        if (*s == '"' || *s == '\\') fputc('\\', fp);
        if ((unsigned char)*s >= 32) fputc(*s, fp);
    }
    fputc('"', fp);
}

void rp_gp_str_array(FILE *fp, const char *name, const char *const *v, int n)
{
    fprintf(fp, "array %s[%d] = [", name, n);
    for (int i = 0; i < n; i++) { if (i) fputs(", ", fp); rp_gp_str(fp, v[i]); }
    fputs("]\n", fp);
}

void rp_gp_num_array(FILE *fp, const char *name, const double *v, int n)
{
    fprintf(fp, "array %s[%d] = [", name, n);
    for (int i = 0; i < n; i++) fprintf(fp, "%s%.9g", i ? ", " : "", v[i]);
    fputs("]\n", fp);
}

double rp_sdev(double s, double s2, size_t n)
{
    if (n < 2) return n ? 0 : NAN;
    double m = s / (double)n, v = (s2 - (double)n * m * m) / (double)(n - 1);
    return v > 0 ? sqrt(v) : 0;
}

double rp_noise_floor(double s, double s2, size_t n)
{
    return 2 * rp_sdev(s, s2, n) / sqrt((double)n);
}

void rp_gp_num(FILE *fp, double v)
{
    if (isnan(v) || isinf(v)) fputs("NaN", fp);
    else fprintf(fp, "%.9g", v);
}

void rp_add_note(rp_ctx *ctx, const char *fmt, ...)
{
    if (ctx->nnotes >= (int)(sizeof ctx->notes / sizeof ctx->notes[0])) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->notes[ctx->nnotes++], sizeof ctx->notes[0], fmt, ap);
    va_end(ap);
}

static int file_has_signature(const char *path, unsigned fmt)
{
    /* Head and tail: a file cut short (disk full while gnuplot wrote it) has
     * the right header but no PNG IEND chunk, PDF %%EOF or closing </svg>. */
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    char b[512], t[65];
    size_t n = fread(b, 1, sizeof b - 1, fp), tn = 0;
    b[n] = 0;
    if (fseek(fp, -64, SEEK_END) != 0) rewind(fp);
    tn = fread(t, 1, sizeof t - 1, fp);
    fclose(fp);
    t[tn] = 0;
    if (fmt == AMP_REPORT_PNG)
        return n > 24 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8) && !memcmp(b + 12, "IHDR", 4) &&
               tn >= 12 && !memcmp(t + tn - 8, "IEND\xae\x42\x60\x82", 8);
    if (fmt == AMP_REPORT_PDF) return n > 8 && !memcmp(b, "%PDF-", 5) && memmem(t, tn, "%%EOF", 5) != NULL;
    return n > 0 && strstr(b, "<svg") != NULL && memmem(t, tn, "</svg>", 6) != NULL;
}

/* Copies reports/<script> to report/scripts/<script> (atomically). */
static amp_status copy_script(rp_ctx *ctx, const char *script)
{
    char src[RP_PATH + 64], dst[RP_PATH + 64];
    snprintf(src, sizeof src, "%s/%s", ctx->scripts, script);
    snprintf(dst, sizeof dst, "%s/scripts/%s", ctx->out, script);
    char *data;
    size_t len;
    amp_status st = amp_read_file(src, 1 << 20, &data, &len);
    if (st) return st;
    char *old = NULL;
    size_t olen = 0;
    if (!amp_read_file(dst, 1 << 20, &old, &olen) && olen == len && !memcmp(old, data, len)) {
        free(old);   /* already there (figures share scripts; reports are redrawn) */
        free(data);
        return AMP_OK;
    }
    free(old);
    st = amp_write_file_atomic(dst, data, len);
    free(data);
    return st;
}

/* The terminal of one format. PNG (the page's) is w x h pixels; PDF and
 * SVG are --figsize: 7 in wide (wide, the default) or 3.5 in (column),
 * height in proportion (column: 1.5 times taller, for the key), text at 8 pt
 * or more (fontscale 1: pdfcairo's default halves every font); "paper" tells
 * the scripts which layout to use (0 screen, 1 column, 2 wide). SVG units
 * are points (72 per inch). */
void rp_gp_term(const rp_ctx *ctx, unsigned fmt, int w, int h, char *term, size_t len)
{
    int paper = ctx->opts->figsize == AMP_REPORT_FIG_COLUMN ? 1 : 2;
    double win = paper == 1 ? 3.5 : 7.0, hin = win * h / w * (paper == 1 ? 1.5 : 1.0);
    /* the canvas in the units the scripts place things in (pixels of the
     * 11-point PNG): text of 8 pt on win inches is as wide as 11 px on pxw px */
    int pxw = (int)lround(win * 72 * 11 / 8), pxh = (int)lround(hin * 72 * 11 / 8);
    if (fmt == AMP_REPORT_PNG)
        snprintf(term, len, "pngcairo size %d,%d font 'DejaVu Sans,11' noenhanced; paper = 0", w, h);
    else if (fmt == AMP_REPORT_PDF)
        snprintf(term, len, "pdfcairo size %.2fin,%.2fin font 'DejaVu Sans,8' fontscale 1 noenhanced; paper = %d; "
                 "pxw = %d; pxh = %d", win, hin, paper, pxw, pxh);
    else
        snprintf(term, len, "svg size %d,%d font 'DejaVu Sans,8' noenhanced background '#ffffff'; paper = %d; pxw = %d; pxh = %d",
                 (int)lround(win * 72), (int)lround(hin * 72), paper, pxw, pxh);
}

const rp_format rp_formats[RP_NFORMATS] = {
    { AMP_REPORT_PNG, "png", "PNG" }, { AMP_REPORT_PDF, "pdf", "PDF" }, { AMP_REPORT_SVG, "svg", "SVG" } };

void rp_redraw_cmd(const rp_fig *f, int k, char *buf, size_t len)
{
    snprintf(buf, len, "gnuplot -e \"set terminal %s; set output '%s.%s'; load 'data/%s.gp'\" scripts/%s",
             f->term[k], f->id, rp_formats[k].ext, f->id, f->script);
}

/* Runs gnuplot in ctx->out for figure f: once per requested format, with
 * data/<id>.gp loaded before scripts/<script>. Checks and renames each file. */
amp_status rp_gp_draw(rp_ctx *ctx, rp_fig *f, int w, int h)
{
    amp_status st = copy_script(ctx, f->script);
    if (st) return st;
    unsigned want = ctx->opts->formats | AMP_REPORT_PNG;
    const rp_format *fm = rp_formats;
    const char *gnuplot = ctx->opts->gnuplot ? ctx->opts->gnuplot : "gnuplot";
    const volatile sig_atomic_t *stop = ctx->opts->stop;
    for (int k = 0; k < RP_NFORMATS; k++) {
        if (!(want & fm[k].flag)) continue;
        if (stop && *stop) return amp_fail(AMP_EINTR, "interrupted; run the same command again to redraw");
        char cmd[1024], tmp[256], fin[RP_PATH + 256], tmpabs[RP_PATH + 256], logp[RP_PATH + 64];
        rp_gp_term(ctx, fm[k].flag, w, h, f->term[k], sizeof f->term[k]);
        snprintf(tmp, sizeof tmp, "%s.%s.tmp.%ld", f->id, fm[k].ext, (long)getpid());
        snprintf(cmd, sizeof cmd, "set terminal %s; set output '%s'; load 'data/%s.gp'", f->term[k], tmp, f->id);
        snprintf(fin, sizeof fin, "%s/%s.%s", ctx->out, f->id, fm[k].ext);
        snprintf(tmpabs, sizeof tmpabs, "%s/%s", ctx->out, tmp);
        snprintf(logp, sizeof logp, "%s/data/.gnuplot.%ld.log", ctx->out, (long)getpid());
        char script[96];
        snprintf(script, sizeof script, "scripts/%s", f->script);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) return amp_fail(AMP_EIO, "cannot start gnuplot: %s", strerror(errno));
        if (pid == 0) {
            int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            int nul = open("/dev/null", O_RDWR);
            if (fd < 0 || nul < 0 || chdir(ctx->out) != 0) _exit(126);
            dup2(nul, 0);
            dup2(nul, 1);
            dup2(fd, 2);
            execlp(gnuplot, gnuplot, "-e", cmd, script, (char *)NULL);
            _exit(127);
        }
        int wst = 0;
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {}
        char *log = NULL;
        size_t ll = 0;
        if (amp_read_file(logp, 1 << 20, &log, &ll)) log = NULL;
        unlink(logp);
        if (stop && *stop) {
            free(log);
            unlink(tmpabs);
            return amp_fail(AMP_EINTR, "interrupted; run the same command again to redraw");
        }
        int code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128;
        if (code != 0 || !file_has_signature(tmpabs, fm[k].flag)) {
            unlink(tmpabs);
            char first[300] = "";
            if (log) {
                /* the line that says what went wrong ("...line N: message") */
                char *e = strstr(log, "line ");
                char *s = e ? e : log;
                size_t n = strcspn(s, "\n");
                while (*s && n == 0) { s++; n = strcspn(s, "\n"); }
                snprintf(first, sizeof first, "%.*s", (int)(n < 280 ? n : 280), s);
            }
            free(log);
            if (code == 127)
                return amp_fail(AMP_EIO, "gnuplot not found ('%s'): install gnuplot-nox (apt-get install gnuplot-nox)", gnuplot);
            return amp_fail(AMP_EIO, "%s: gnuplot failed drawing %s.%s (exit %d)%s%s", ctx->dir, f->id, fm[k].ext,
                            code, *first ? ": " : "", first);
        }
        if (log && ll && !ctx->opts->quiet) fprintf(stderr, "ampsim report: gnuplot said, drawing %s.%s:\n%s", f->id, fm[k].ext, log);
        free(log);
        if (rename(tmpabs, fin) != 0) {
            int e = errno;
            unlink(tmpabs);
            return amp_fail(AMP_EIO, "%s: cannot rename: %s", fin, strerror(e));
        }
        f->made |= fm[k].flag;
    }
    return AMP_OK;
}

/* Opens data/<id>.<ext> atomically. */
amp_status rp_open_data(rp_ctx *ctx, const char *id, const char *ext, amp_afile *af)
{
    char p[RP_PATH + 160];
    snprintf(p, sizeof p, "%s/data/%s.%s", ctx->out, id, ext);
    return amp_afile_open(af, p);
}

rp_fig *rp_new_fig(rp_ctx *ctx, const char *id, const char *script, const char *title)
{
    if (ctx->nfig >= (int)(sizeof ctx->figs / sizeof ctx->figs[0])) return NULL;
    rp_fig *f = &ctx->figs[ctx->nfig];
    memset(f, 0, sizeof *f);
    snprintf(f->id, sizeof f->id, "%s", id);
    snprintf(f->script, sizeof f->script, "%s", script);
    snprintf(f->title, sizeof f->title, "%s", title);
    return f;
}

/* Appends "<a href=REL/FILE>LABEL/FILE</a>" entries to f->sources. */
void rp_add_source(rp_ctx *ctx, rp_fig *f, const rp_run *r, const char *file)
{
    size_t o = strlen(f->sources);
    char rel[RP_PATH];
    snprintf(rel, sizeof rel, "%s", r ? r->link : ctx->dirlink);
    const char *shown = r && ctx->compare ? r->label : "";
    if (o + strlen(rel) + 300 < sizeof f->sources)
        snprintf(f->sources + o, sizeof f->sources - o, "%s<a href=\"%s/%s\">%s%s%s</a>", o ? ", " : "",
                 rel, file, shown, *shown ? "/" : "", file);
}

void rp_add_sources_all(rp_ctx *ctx, rp_fig *f, const char *file, int skip_ref)
{
    size_t n = 0;
    for (size_t i = 0; i < ctx->nr; i++) {
        if (skip_ref && (int)i == ctx->ref && ctx->nr > 1) continue;
        if (n++ >= 12) {
            size_t o = strlen(f->sources);
            snprintf(f->sources + o, sizeof f->sources - o, ", …");
            return;
        }
        rp_add_source(ctx, f, &ctx->r[i], file);
    }
}

amp_status rp_commit2(amp_afile *a, amp_afile *b)
{
    amp_status st = amp_afile_commit(a);
    if (st) { amp_afile_abort(b); return st; }
    return amp_afile_commit(b);
}

/* ---- figure 2: loss curves against the reference ------------------------ */

/* 1 if the run's scaler is a per-tensor FP8 strategy: its hist.csv holds
 * values after each tensor's own scale, which the run directory does not log. */
int rp_fp8_scaled(const rp_run *r)
{
    static const char *const s[] = { "delayed", "current", "mx", "block" };
    if (*r->fp8_scaler) return 1;
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        size_t n = strlen(s[i]);
        if (!strncmp(r->scaler, s[i], n) && (r->scaler[n] == 0 || r->scaler[n] == ':')) return 1;
    }
    return 0;
}

/* "scaler X" or "scaler X, FP8 scaling Y" for titles, with the strategies'
 * names only (their options are on the page, in config.json). */
const char *rp_scaler_desc(const rp_run *r, char *buf, size_t len)
{
    int a = (int)strcspn(r->scaler, ":"), b = (int)strcspn(r->fp8_scaler, ":");
    if (a > 40) a = 40;
    if (b > 40) b = 40;
    if (*r->fp8_scaler) snprintf(buf, len, "scaler %.*s, FP8 scaling %.*s", a, r->scaler, b, r->fp8_scaler);
    else snprintf(buf, len, "scaler %.*s", a, r->scaler);
    return buf;
}

/* The run directory (docs/design.md, "Run directory"). config.json is written atomically at open;
 * metrics.csv, tensors.csv, hist.csv and events.csv are streamed into
 * temporary files (amp_afile: NAME.tmp.<pid>) and renamed only by
 * amp_runlog_close, so a killed run never leaves a half-written file under a
 * final name; summary.json is written (atomically) last.
 *
 * tensors.csv columns: step,tensor,role,format,n,zero_in,flushed,subnormal,
 * saturated,overflow,nan,amax,amin_nonzero,rel_err -- the fused counters of
 * the tensor's roundings at that step (amp_stats): zero_in, flushed,
 * subnormal, saturated are the classes of the same name; overflow counts
 * finite inputs that became inf/NaN plus infinite inputs; nan counts NaN
 * inputs; amax / amin_nonzero are of the rounding's input (amin_nonzero 0 when
 * no nonzero finite input); rel_err is the RMS relative rounding error.
 * metrics.csv: step,loss,loss_scale,skipped,grad_norm,lr,vanished,nonfinite,val_loss;
 * loss_scale is the scale as the scaler holds it (%.9g of a float32; apex and
 * deepspeed: their double, in the fewest digits that read back exactly);
 * grad_norm is the L2 norm of the unscaled FP32 weight gradients; vanished the
 * updates lost in the weight's format; nonfinite the count of non-finite values
 * in the first tensor of the step that had any (0: none); val_loss empty unless
 * evaluated at that step.
 * hist.csv: step,tensor,binade,count, sparse, binade = floor(log2|x|) of the
 * input or zero / inf / nan.
 * With --dp R > 1 (sim/train_dp.c) every logged step also has one row per
 * weight gradient named "<grad>.allreduce" (role weight_grad, format = the
 * all-reduce format): the counters of EVERY rounding the emulated collective
 * made, n = R*size quantizations + (R-1)*size partial sums, amax etc. of the
 * rounded values (times the --allreduce-scale factor, and the loss scale);
 * the model's own rows then count the R micro-batches together. events.csv
 * gets allreduce_overflow (any step with an overflow in the reduction) and,
 * with --allreduce-scale, allreduce_scale at steps with tensors.csv rows. */
#include "amp_base.h"
#include "amp_io.h"
#include "amp_round.h"
#include "amp_runlog.h"
#include "amp_scaler.h"
#include "amp_tensor.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { F_METRICS, F_TENSORS, F_HIST, F_EVENTS, F_COUNT };
_Static_assert(F_COUNT == AMP_RUNLOG_FILES, "AMP_RUNLOG_FILES counts the CSV streams");
static const char *const file_names[F_COUNT] = { AMP_RUN_METRICS, AMP_RUN_TENSORS, AMP_RUN_HIST, AMP_RUN_EVENTS };
static const char *const headers[F_COUNT] = {
    AMP_RUN_METRICS_COLS "\n", AMP_RUN_TENSORS_COLS "\n", AMP_RUN_HIST_COLS "\n", AMP_RUN_EVENTS_COLS "\n",
};

struct amp_runlog {
    char dir[3900];
    amp_afile f[F_COUNT];
};

static amp_status path_in(const amp_runlog *l, const char *name, char *out, size_t len)
{
    if ((size_t)snprintf(out, len, "%s/%s", l->dir, name) >= len)
        return amp_fail(AMP_EINVAL, "%s: path too long", l->dir);
    return AMP_OK;
}

/* Removes temporaries a killed run left in dir: NAME.tmp.<pid> / NAME.sync.<pid>
 * of the run directory's own files, for pids other than ours. */
static void remove_stale(const char *dir)
{
    static const char *const own[] = { AMP_RUN_METRICS, AMP_RUN_TENSORS, AMP_RUN_HIST, AMP_RUN_EVENTS,
                                       AMP_RUN_SUMMARY, AMP_RUN_CONFIG, AMP_RUN_CHECKPOINT };
    DIR *d = opendir(dir);
    if (!d) return;
    char mine[32], path[4400];
    snprintf(mine, sizeof mine, "%ld", (long)getpid());
    struct dirent *e;
    while ((e = readdir(d))) {
        for (size_t k = 0; k < sizeof own / sizeof own[0]; k++) {
            size_t n = strlen(own[k]);
            if (strncmp(e->d_name, own[k], n)) continue;
            const char *rest = e->d_name + n;
            if (!strncmp(rest, ".tmp.", 5)) rest += 5;
            else if (!strncmp(rest, ".sync.", 6)) rest += 6;
            else continue;
            if (!*rest || strspn(rest, "0123456789") != strlen(rest) || !strcmp(rest, mine)) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

void amp_runlog_abort(amp_runlog *l)
{
    if (!l) return;
    for (int i = 0; i < F_COUNT; i++) amp_afile_abort(&l->f[i]);
    free(l);
}

amp_status amp_runlog_open(amp_runlog **out, const char *dir, const char *config_json)
{
    *out = NULL;
    amp_runlog *l = calloc(1, sizeof *l);
    if (!l) return amp_fail(AMP_ENOMEM, "out of memory");
    if (strlen(dir) >= sizeof l->dir - 32) { free(l); return amp_fail(AMP_EINVAL, "%s: path too long", dir); }
    snprintf(l->dir, sizeof l->dir, "%s", dir);
    amp_status s = amp_mkdir_p(dir);
    if (!s) remove_stale(dir);
    char path[4096];
    if (!s) s = path_in(l, "config.json", path, sizeof path);
    if (!s) s = amp_write_file_atomic(path, config_json, strlen(config_json));
    for (int i = 0; i < F_COUNT && !s; i++) {
        s = path_in(l, file_names[i], path, sizeof path);
        if (!s) s = amp_afile_open(&l->f[i], path);
        if (!s && fputs(headers[i], l->f[i].fp) < 0) s = amp_fail(AMP_EIO, "%s: write failed", path);
    }
    if (s) { amp_runlog_abort(l); return s; }
    *out = l;
    return AMP_OK;
}

static amp_status chk(amp_runlog *l, int i)
{
    return ferror(l->f[i].fp) ? amp_fail(AMP_EIO, "%s: write failed", l->f[i].path) : AMP_OK;
}

amp_status amp_runlog_metrics(amp_runlog *l, int64_t step, float loss, double scale,
                              amp_scaler_kind scale_kind, int skipped,
                              double grad_norm, float lr, uint64_t vanished, uint64_t nonfinite,
                              double val_loss)
{
    char sbuf[40];
    amp_scaler_fmt_scale(scale_kind, scale, sbuf, sizeof sbuf);
    fprintf(l->f[F_METRICS].fp, "%lld,%.9g,%s,%d,%.9g,%.9g,%llu,%llu,", (long long)step, (double)loss,
            sbuf, skipped, grad_norm, (double)lr, (unsigned long long)vanished,
            (unsigned long long)nonfinite);
    if (!isnan(val_loss)) fprintf(l->f[F_METRICS].fp, "%.9g", val_loss);
    fputc('\n', l->f[F_METRICS].fp);
    return chk(l, F_METRICS);
}

/* CSV field: quoted when it holds a comma, quote or newline. */
static void put_field(FILE *fp, const char *s)
{
    if (!s) return;
    if (!strpbrk(s, ",\"\n")) { fputs(s, fp); return; }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"') fputc('"', fp);
        fputc(*s == '\n' ? ' ' : *s, fp);
    }
    fputc('"', fp);
}

/* The decimal digits of u at p; returns the end. */
static char *put_uint(char *p, unsigned long long u)
{
    char d[24];
    int n = 0;
    do d[n++] = (char)('0' + u % 10); while (u /= 10);
    while (n) *p++ = d[--n];
    return p;
}

/* The same for v, a minus sign first when it is negative. */
static char *put_int(char *p, long long v)
{
    if (v < 0) *p++ = '-';
    return put_uint(p, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
}

/* One tensor's hist.csv rows "step,name,binade,count": the prefix "step,name,"
 * formed once (pl 0: a name that needs quoting, or a long one, is written
 * field by field with put_field), the rows gathered in buf and written in
 * blocks; a tensor has tens of rows at every logged step. */
typedef struct {
    FILE *fp;
    int64_t step;
    const char *name;
    char pre[240];
    size_t pl, used;
    char buf[8192];
} hist_out;

static void hist_begin(hist_out *h, FILE *fp, int64_t step, const char *name)
{
    size_t nl = strlen(name);
    h->fp = fp, h->step = step, h->name = name, h->pl = 0, h->used = 0;
    if (nl > 200 || strpbrk(name, ",\"\n")) return;
    char *e = put_int(h->pre, (long long)step);
    *e++ = ',';
    memcpy(e, name, nl);
    e += nl;
    *e++ = ',';
    h->pl = (size_t)(e - h->pre);
}

static void hist_flush(hist_out *h)
{
    if (h->used) fwrite(h->buf, 1, h->used, h->fp);
    h->used = 0;
}

/* A row for the binade label (or, label NULL, the binade number bin). */
static void hist_put(hist_out *h, const char *label, long long bin, uint64_t count)
{
    char tail[64], *p = tail;
    if (label) {
        size_t n = strlen(label);
        memcpy(p, label, n);
        p += n;
    } else {
        p = put_int(p, bin);
    }
    *p++ = ',';
    p = put_uint(p, (unsigned long long)count);
    *p++ = '\n';
    size_t tl = (size_t)(p - tail);
    if (!h->pl) {
        hist_flush(h);
        fprintf(h->fp, "%lld,", (long long)h->step);
        put_field(h->fp, h->name);
        fputc(',', h->fp);
        fwrite(tail, 1, tl, h->fp);
        return;
    }
    if (h->used + h->pl + tl > sizeof h->buf) hist_flush(h);
    memcpy(h->buf + h->used, h->pre, h->pl);
    memcpy(h->buf + h->used + h->pl, tail, tl);
    h->used += h->pl + tl;
}

amp_status amp_runlog_tensor(amp_runlog *l, int64_t step, const char *name, amp_role role,
                             const char *format, const amp_stats *st, int tensors, int hist)
{
    if (role < 0 || role >= AMP_ROLE_COUNT) return amp_fail(AMP_EINVAL, "%s: role %d out of range", l->dir, (int)role);
    if (!name || !*name || !format || !*format || !st)
        return amp_fail(AMP_EINVAL, "%s: a tensor row needs a tensor name, a format and statistics", l->dir);
    if (tensors) {
        FILE *fp = l->f[F_TENSORS].fp;
        fprintf(fp, "%lld,", (long long)step);
        put_field(fp, name);
        fprintf(fp, ",%s,", amp_role_name(role));
        put_field(fp, format);
        fprintf(fp, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.9g,%.9g,%.6g\n", (unsigned long long)st->n,
                (unsigned long long)st->cls[AMP_CLS_ZERO_IN], (unsigned long long)st->cls[AMP_CLS_FLUSHED],
                (unsigned long long)st->cls[AMP_CLS_SUBNORMAL], (unsigned long long)st->cls[AMP_CLS_SATURATED],
                (unsigned long long)(st->cls[AMP_CLS_OVERFLOW] + st->cls[AMP_CLS_INF_IN]),
                (unsigned long long)st->cls[AMP_CLS_NAN_IN], st->amax,
                isinf(st->amin_nonzero) ? 0.0 : st->amin_nonzero, amp_stats_rel_err(st));
    }
    if (hist) {
        /* zero first, then the binades upward, then inf and nan */
        hist_out h;
        hist_begin(&h, l->f[F_HIST].fp, step, name);
        if (st->cls[AMP_CLS_ZERO_IN]) hist_put(&h, "zero", 0, st->cls[AMP_CLS_ZERO_IN]);
        for (int b = 0; b < AMP_HIST_BINS; b++)
            if (st->hist[b]) hist_put(&h, NULL, (long long)b + AMP_HIST_LO, st->hist[b]);
        if (st->cls[AMP_CLS_INF_IN]) hist_put(&h, "inf", 0, st->cls[AMP_CLS_INF_IN]);
        if (st->cls[AMP_CLS_NAN_IN]) hist_put(&h, "nan", 0, st->cls[AMP_CLS_NAN_IN]);
        hist_flush(&h);
    }
    amp_status s = chk(l, F_TENSORS);
    return s ? s : chk(l, F_HIST);
}

amp_status amp_runlog_tensors(amp_runlog *l, const amp_tensors *r, int64_t step, int tensors, int hist)
{
    for (int i = 0; i < r->n; i++) {
        const amp_tensor *t = r->t[i];
        if (!t->log || !t->stats_valid || !t->stats) continue;
        amp_status s = amp_runlog_tensor(l, step, t->name, t->role, t->fmt.name, t->stats, tensors, hist);
        if (s) return s;
    }
    amp_status s = chk(l, F_TENSORS);
    return s ? s : chk(l, F_HIST);
}

amp_status amp_runlog_event(amp_runlog *l, int64_t step, const char *event, const char *tensor, const char *detail)
{
    FILE *fp = l->f[F_EVENTS].fp;
    fprintf(fp, "%lld,", (long long)step);
    put_field(fp, event);
    fputc(',', fp);
    put_field(fp, tensor);
    fputc(',', fp);
    put_field(fp, detail);
    fputc('\n', fp);
    return chk(l, F_EVENTS);
}

/* Copies the first len bytes of file src to the stream out. */
static amp_status copy_prefix(const char *src, uint64_t len, FILE *out, const char *what)
{
    FILE *in = fopen(src, "rb");
    if (!in) return amp_fail(AMP_EIO, "%s: cannot read: %s", src, strerror(errno));
    amp_status s = AMP_OK;
    char buf[1 << 15];
    uint64_t left = len;
    while (left && !s) {
        size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        size_t got = fread(buf, 1, want, in);
        if (got != want) s = amp_fail(AMP_EIO, "%s: shorter than %llu bytes", src, (unsigned long long)len);
        else if (fwrite(buf, 1, got, out) != got) s = amp_fail(AMP_EIO, "%s: write failed", what);
        left -= got;
    }
    fclose(in);
    return s;
}

/* Publishes the first len bytes of the stream's temporary as its final file:
 * written to FINAL.sync.<pid>, flushed, fsync'ed and renamed (atomic). (The
 * amp_afile temporary name FINAL.tmp.<pid> is the stream itself.) */
static amp_status publish(const amp_afile *f, uint64_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.sync.%ld", f->path, (long)getpid());
    FILE *out = fopen(tmp, "wb");
    if (!out) return amp_fail(AMP_EIO, "%s: cannot write: %s", tmp, strerror(errno));
    amp_status s = copy_prefix(f->tmp, len, out, f->path);
    if (!s && (fflush(out) != 0 || fsync(fileno(out)) != 0)) s = amp_fail(AMP_EIO, "%s: write failed: %s", f->path, strerror(errno));
    if (fclose(out) != 0 && !s) s = amp_fail(AMP_EIO, "%s: write failed", f->path);
    if (!s && rename(tmp, f->path) != 0) s = amp_fail(AMP_EIO, "%s: cannot rename: %s", f->path, strerror(errno));
    if (s) unlink(tmp);
    return s;
}

amp_status amp_runlog_sync(amp_runlog *l, uint64_t offsets[AMP_RUNLOG_FILES])
{
    for (int i = 0; i < F_COUNT; i++) {
        FILE *fp = l->f[i].fp;
        if (fflush(fp) != 0 || ferror(fp)) return amp_fail(AMP_EIO, "%s: write failed", l->f[i].path);
        long off = ftell(fp);
        if (off < 0) return amp_fail(AMP_EIO, "%s: cannot tell position", l->f[i].path);
        offsets[i] = (uint64_t)off;
        amp_status s = publish(&l->f[i], offsets[i]);
        if (s) return s;
    }
    return AMP_OK;
}

amp_status amp_runlog_reopen(amp_runlog **out, const char *dir, const uint64_t offsets[AMP_RUNLOG_FILES])
{
    *out = NULL;
    amp_runlog *l = calloc(1, sizeof *l);
    if (!l) return amp_fail(AMP_ENOMEM, "out of memory");
    if (strlen(dir) >= sizeof l->dir - 32) { free(l); return amp_fail(AMP_EINVAL, "%s: path too long", dir); }
    snprintf(l->dir, sizeof l->dir, "%s", dir);
    remove_stale(dir);
    char path[4096];
    amp_status s = AMP_OK;
    for (int i = 0; i < F_COUNT && !s; i++) {
        s = path_in(l, file_names[i], path, sizeof path);
        if (!s) s = amp_afile_open(&l->f[i], path);
        if (!s) s = copy_prefix(path, offsets[i], l->f[i].fp, l->f[i].path);
    }
    if (s) { amp_runlog_abort(l); return s; }
    *out = l;
    return AMP_OK;
}

amp_status amp_runlog_close(amp_runlog *l, const char *summary_json)
{
    amp_status s = AMP_OK;
    for (int i = 0; i < F_COUNT; i++) {
        amp_status si = l->f[i].fp ? amp_afile_commit(&l->f[i]) : AMP_OK;
        if (si && !s) s = si;
    }
    char path[4096];
    if (!s && summary_json) {
        s = path_in(l, "summary.json", path, sizeof path);
        if (!s) s = amp_write_file_atomic(path, summary_json, strlen(summary_json));
    }
    if (s) for (int i = 0; i < F_COUNT; i++) amp_afile_abort(&l->f[i]);
    free(l);
    return s;
}

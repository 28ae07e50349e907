/* compare: planning the runs and summarising them against the reference. */
#include "amp_base.h"
#include "amp_io.h"
#include "amp_policy.h"
#include "amp_runlog.h"
#include "amp_scaler.h"
#include "amp_compare.h"
#include "amp_csv.h"
#include "amp_rundir.h"
#include "amp_sweep.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int amp_compare_split_specs(const char *list, char out[][256], int max)
{
    int n = 0;
    const char *p = list;
    while (p && *p) {
        size_t len = strcspn(p, ",;");
        char piece[256];
        if (len >= sizeof piece) return -1;
        memcpy(piece, p, len);
        piece[len] = 0;
        int continues = n > 0 && !strchr(piece, ':') && strchr(piece, '=') && strchr(out[n - 1], ':') &&
                        p > list && p[-1] == ',';
        if (continues) {
            size_t have = strlen(out[n - 1]);
            if (have + 1 + len >= 256) return -1;
            out[n - 1][have] = ',';
            memcpy(out[n - 1] + have + 1, piece, len + 1);
        } else if (len > 0) {
            if (n == max) return -1;
            memcpy(out[n++], piece, len + 1);
        }
        p += len;
        if (*p) p++;
    }
    return n;
}

static void clean_name(char *dst)
{
    for (char *c = dst; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '.' && *c != '_') *c = '-';
}

static amp_status check_precision(const char *p, int *fp8)
{
    amp_policy pol;
    amp_status st = amp_policy_preset(p, &pol);
    if (st) return st;
    *fp8 = pol.fp8_scaling;
    return AMP_OK;
}

/* Appends one line to the dropped-pairs text (best effort: on ENOMEM the
 * line is lost, never the plan). */
static void note(char **txt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(char **txt, const char *fmt, ...)
{
    if (!txt) return;
    char line[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t have = *txt ? strlen(*txt) : 0, add = strlen(line);
    char *n = realloc(*txt, have + add + 2);
    if (!n) return;
    memcpy(n + have, line, add);
    n[have + add] = '\n';
    n[have + add + 1] = 0;
    *txt = n;
}

/* fp8: the precision scales FP8 tensors per tensor. The name states what
 * runs: the loss scaler and, with FP8 scaling, the FP8 strategy (an FP8
 * strategy as SPEC means no loss scaling; a loss scaler means the default
 * strategy, delayed). */
static amp_status add_run(amp_run_cfg **runs, int *n, int *cap, const char *prec, const char *scaler, int is_ref,
                          int fp8, char **dropped)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        amp_run_cfg *r = realloc(*runs, (size_t)nc * sizeof *r);
        if (!r) return amp_fail(AMP_ENOMEM, "compare: out of memory");
        *runs = r;
        *cap = nc;
    }
    amp_run_cfg *r = &(*runs)[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->precision, sizeof r->precision, "%s", prec);
    snprintf(r->scaler, sizeof r->scaler, "%s", scaler);
    amp_scaler_spec sp;
    int is_fp8 = !amp_scaler_spec_parse(scaler, &sp) && amp_scaler_kind_is_fp8(sp.kind);
    snprintf(r->loss_scaler, sizeof r->loss_scaler, "%s", is_fp8 ? "none" : scaler);
    if (fp8) snprintf(r->fp8, sizeof r->fp8, "%s", is_fp8 ? scaler : "delayed");
    r->is_ref = is_ref;
    if (is_ref) snprintf(r->name, sizeof r->name, "ref");
    else if (fp8) snprintf(r->name, sizeof r->name, "%.60s__%.45s__%.45s", prec, r->loss_scaler, r->fp8);
    else snprintf(r->name, sizeof r->name, "%.60s__%.90s", prec, scaler);
    clean_name(r->name);
    for (int i = 0; i < *n - 1; i++)
        if (!strcmp((*runs)[i].name, r->name)) {   /* the same run twice: run once */
            if (!(*runs)[i].is_ref && !is_ref && strcmp((*runs)[i].scaler, scaler))
                note(dropped, "%s with %s: the same run as %s with %s (loss scaler %s, FP8 strategy %s): run once as %s",
                     prec, scaler, prec, (*runs)[i].scaler, r->loss_scaler, r->fp8, r->name);
            (*n)--;
            break;
        }
    return AMP_OK;
}

amp_status amp_compare_plan(const char *precisions, const char *scalers, char *const *extra,
                            int n_extra, const char *ref_precision, amp_run_cfg **runs, int *n)
{
    return amp_compare_plan_dropped(precisions, scalers, extra, n_extra, ref_precision, runs, n, NULL);
}

amp_status amp_compare_plan_dropped(const char *precisions, const char *scalers, char *const *extra,
                                    int n_extra, const char *ref_precision, amp_run_cfg **runs, int *n,
                                    char **dropped)
{
    enum { MAXL = 64 };
    static char precs[MAXL][256], specs[MAXL][256];
    int np = 0, ns = 0, cap = 0, fp8;
    amp_status st;
    *runs = NULL;
    *n = 0;
    if (dropped) *dropped = NULL;
    if ((st = check_precision(ref_precision, &fp8))) return st;
    if (precisions && (np = amp_compare_split_specs(precisions, precs, MAXL)) < 0)
        return amp_fail(AMP_EINVAL, "--precisions: too many or too long");
    if (scalers && (ns = amp_compare_split_specs(scalers, specs, MAXL)) < 0)
        return amp_fail(AMP_EINVAL, "--scalers: too many or too long");
    if (np && !ns) { strcpy(specs[0], "none"); ns = 1; }
    if (ns && !np) return amp_fail(AMP_EINVAL, "--scalers needs --precisions");
    for (int i = 0; i < ns; i++) {
        amp_scaler_spec sp;
        if ((st = amp_scaler_spec_parse(specs[i], &sp))) return st;
    }
    if ((st = add_run(runs, n, &cap, ref_precision, "none", 1, 0, NULL))) goto fail;
    for (int i = 0; i < np; i++) {
        if ((st = check_precision(precs[i], &fp8))) goto fail;
        for (int j = 0; j < ns; j++) {
            amp_scaler_spec sp;
            amp_scaler_spec_parse(specs[j], &sp);
            if (amp_scaler_kind_is_fp8(sp.kind) && !fp8) {
                note(dropped, "%s with %s: not run: %s is an FP8 scaling strategy and %s has no per-tensor FP8 scaling "
                     "(use it with fp8-hybrid)", precs[i], specs[j], specs[j], precs[i]);
                continue;
            }
            if ((st = add_run(runs, n, &cap, precs[i], specs[j], 0, fp8, dropped))) goto fail;
        }
    }
    for (int k = 0; k < n_extra; k++) {
        const char *at = strchr(extra[k], '@');
        char prec[64];
        size_t len = at ? (size_t)(at - extra[k]) : strlen(extra[k]);
        if (len == 0 || len >= sizeof prec) { st = amp_fail(AMP_EINVAL, "--run '%s': expected PRECISION@SPEC", extra[k]); goto fail; }
        memcpy(prec, extra[k], len);
        prec[len] = 0;
        const char *spec = at ? at + 1 : "none";
        amp_scaler_spec sp;
        if ((st = check_precision(prec, &fp8))) goto fail;
        if ((st = amp_scaler_spec_parse(spec, &sp))) goto fail;
        if (amp_scaler_kind_is_fp8(sp.kind) && !fp8) {
            st = amp_fail(AMP_EINVAL, "--run '%s': %s is an FP8 strategy but %s has no per-tensor FP8 scaling", extra[k], spec, prec);
            goto fail;
        }
        if ((st = add_run(runs, n, &cap, prec, spec, 0, fp8, dropped))) goto fail;
    }
    return AMP_OK;
fail:
    free(*runs);
    *runs = NULL;
    *n = 0;
    if (dropped) { free(*dropped); *dropped = NULL; }
    return st;
}

/* Per-run figures read back from its run directory. */
typedef struct run_data {
    size_t nsteps;
    double *loss;
    long skipped;
    double flushed_frac;   /* mean over gradient rows; NAN if none logged */
} run_data;

static amp_status read_run(const char *dir, const char *name, run_data *rd)
{
    char path[4300];
    amp_run_metrics m;
    amp_run_tensors t;
    amp_status st;
    memset(rd, 0, sizeof *rd);
    rd->flushed_frac = NAN;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((st = amp_run_read_metrics(path, &m))) return st;
    for (size_t r = 0; r < m.n; r++) {
        if (m.step[r] != (long)r) {
            amp_run_metrics_free(&m);
            return amp_fail(AMP_EFORMAT, "%s/%s: step %zu is missing (the loss curves are compared step by step)",
                            path, AMP_RUN_METRICS, r);
        }
        rd->skipped += m.skipped[r];
    }
    rd->nsteps = m.n;
    rd->loss = m.loss;           /* taken over */
    m.loss = NULL;
    amp_run_metrics_free(&m);
    if ((st = amp_run_read_tensors(path, &t))) { free(rd->loss); rd->loss = NULL; return st; }
    double sum = 0;
    size_t cnt = 0;
    for (size_t r = 0; r < t.n; r++) {
        const amp_run_tensor_row *w = &t.row[r];
        if (strcmp(w->role, "weight_grad") && strcmp(w->role, "act_grad")) continue;
        if (w->n > 0) { sum += (double)w->flushed / (double)w->n; cnt++; }
    }
    if (cnt) rd->flushed_frac = sum / (double)cnt;
    amp_run_tensors_free(&t);
    return AMP_OK;
}

/* Mean loss over the last quarter of the steps (at least one): a single
 * batch's loss is noisy, this is what a run "ends at". */
static double tail_mean(const run_data *rd)
{
    if (!rd->nsteps) return NAN;
    size_t from = rd->nsteps - (rd->nsteps / 4 ? rd->nsteps / 4 : 1);
    double sum = 0;
    for (size_t s = from; s < rd->nsteps; s++) sum += rd->loss[s];
    return sum / (double)(rd->nsteps - from);
}

static void put_num(FILE *fp, double v)
{
    if (isnan(v)) fputs(",nan", fp);
    else if (isinf(v)) fputs(v > 0 ? ",inf" : ",-inf", fp);
    else fprintf(fp, ",%.9g", v);
}

static int has_summary(const char *dir, const char *name)
{
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s/summary.json", dir, name);
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

amp_status amp_compare_summarize(const char *dir, const amp_run_cfg *runs, int n,
                                 const int *status, double tol)
{
    char path[4200];
    amp_status st;
    run_data ref = { 0 };
    int ref_ok = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].is_ref && status[i] == 0) {
            if ((st = read_run(dir, runs[i].name, &ref))) return st;
            ref_ok = 1;
        }
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    amp_afile af;
    if ((st = amp_afile_open(&af, path))) { free(ref.loss); return st; }
    fprintf(af.fp, "name,precision,scaler,status,steps,final_loss,max_abs_diff,mean_abs_diff,"
                   "skipped_steps,mean_flushed_frac_grads,first_divergence_step,tail_mean_loss,tail_diff,"
                   "loss_scaler,fp8_scaling,same_as\n");
    double ref_tail = ref_ok ? tail_mean(&ref) : NAN;
    for (int i = 0; i < n; i++) {
        const amp_run_cfg *r = &runs[i];
        fprintf(af.fp, "%s,%s,\"%s\"", r->name, r->precision, r->scaler);
        run_data rd;
        /* exit 1 with a complete summary.json: the run ended non-finite or was
         * stopped; its logs are complete, so it is reported (status nonfinite
         * or stopped) */
        int ended = status[i] == 0 || (status[i] == 1 && has_summary(dir, r->name));
        if (!ended || (st = read_run(dir, r->name, &rd))) {
            if (ended) fprintf(stderr, "ampsim compare: %s\n", amp_errmsg());
            fprintf(af.fp, ",failed,,,,,,,,,,\"%s\",\"%s\",\n", r->loss_scaler, *r->fp8 ? r->fp8 : "none");
            continue;
        }
        double fin = rd.nsteps ? rd.loss[rd.nsteps - 1] : NAN;
        double mx = NAN, mean = NAN;
        long first = -1;
        if (ref_ok) {
            size_t m = rd.nsteps < ref.nsteps ? rd.nsteps : ref.nsteps;
            double sum = 0;
            mx = 0;
            for (size_t s = 0; s < m; s++) {
                double d = fabs(rd.loss[s] - ref.loss[s]);
                if (!isfinite(rd.loss[s])) d = INFINITY;
                if (d > mx) mx = d;
                sum += d;
                if (first < 0 && !(d <= tol)) first = (long)s;
            }
            mean = m ? sum / (double)m : NAN;
        }
        /* from the logs, not the exit code: a run kept from an earlier compare
         * (already done, status 0) gets the same word as when it ran */
        fprintf(af.fp, ",%s,%zu", !isfinite(fin) ? "nonfinite" : status[i] == 0 ? "ok" : "stopped", rd.nsteps);
        put_num(af.fp, fin);
        put_num(af.fp, mx);
        put_num(af.fp, mean);
        fprintf(af.fp, ",%ld", rd.skipped);
        put_num(af.fp, rd.flushed_frac);
        if (first >= 0) fprintf(af.fp, ",%ld", first);
        else fputc(',', af.fp);
        double tail = tail_mean(&rd);
        put_num(af.fp, tail);
        put_num(af.fp, tail - ref_tail);
        fprintf(af.fp, ",\"%s\",\"%s\",", r->loss_scaler, *r->fp8 ? r->fp8 : "none");
        for (int j = 0; j < i; j++) {
            char a[4400], b[4400];
            snprintf(a, sizeof a, "%s/%s", dir, runs[j].name);
            snprintf(b, sizeof b, "%s/%s", dir, r->name);
            if (status[j] == 0 && amp_run_identical(a, b)) { fputs(runs[j].name, af.fp); break; }
        }
        fputc('\n', af.fp);
        free(rd.loss);
    }
    free(ref.loss);
    return amp_afile_commit(&af);
}

size_t amp_compare_abi_size(const char *type)
{
    if (!type) return 0;
    if (!strcmp(type, "amp_run_cfg")) return sizeof(amp_run_cfg);
    if (!strcmp(type, "amp_sweep")) return sizeof(amp_sweep);
    if (!strcmp(type, "amp_sweep_group")) return sizeof(amp_sweep_group);
    return 0;
}

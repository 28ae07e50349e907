/* libFuzzer harness for the run-directory reader (amp_rundir.h). The input is
 * cut at the byte 0x1e into up to seven files of one run directory, in this
 * order: metrics.csv, tensors.csv, hist.csv, events.csv, config.json,
 * summary.json, whatif.csv (a missing part: no file). Every reader must give AMP_OK with
 * rows that respect its contract (steps increasing, class counts <= n, bins
 * in range), or an error whose message names the directory. */
#include "amp_base.h"
#include "amp_runlog.h"
#include "amp_rundir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fuzz_dir(void)
{
    static char dir[64];
    if (!*dir) {
        snprintf(dir, sizeof dir, "%s/ampsim-fuzz-rundir-XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
        if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
    }
    return dir;
}

static void put(const char *dir, const char *name, const uint8_t *p, size_t n, int present)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!present) { unlink(path); return; }
    FILE *fp = fopen(path, "wb");
    if (!fp || (n && fwrite(p, 1, n, fp) != n) || fclose(fp)) { perror(path); abort(); }
}

static void check_err(amp_status st, const char *dir)
{
    AMP_ASSERT(st == AMP_EFORMAT || st == AMP_EIO || st == AMP_ENOMEM || st == AMP_EINVAL);
    AMP_ASSERT(strstr(amp_errmsg(), dir) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const files[7] = { AMP_RUN_METRICS, AMP_RUN_TENSORS, AMP_RUN_HIST, AMP_RUN_EVENTS,
                                          AMP_RUN_CONFIG, AMP_RUN_SUMMARY, AMP_RUN_WHATIF };
    const char *dir = fuzz_dir();
    size_t at = 0;
    for (int k = 0; k < 7; k++) {
        const uint8_t *end = at <= size ? memchr(data + at, 0x1e, size - at) : NULL;
        size_t n = end ? (size_t)(end - (data + at)) : size - at;
        put(dir, files[k], data + at, n, at <= size);
        at += n + 1;
    }
    amp_run_metrics m;
    amp_status st = amp_run_read_metrics(dir, &m);
    if (st) check_err(st, dir);
    else {
        AMP_ASSERT(m.n >= 1);
        for (size_t i = 0; i < m.n; i++) {
            AMP_ASSERT(i == 0 || m.step[i] > m.step[i - 1]);
            AMP_ASSERT(m.scale[i] >= 0 && (m.skipped[i] == 0 || m.skipped[i] == 1));
        }
        amp_run_metrics_free(&m);
    }
    amp_run_whatif w;
    if (amp_run_has_whatif(dir)) {
        if ((st = amp_run_read_whatif(dir, &w))) check_err(st, dir);
        else {
            for (size_t i = 0; i < w.n; i++) {
                const amp_run_whatif_row *r = &w.row[i];
                AMP_ASSERT(i == 0 || r->step >= w.row[i - 1].step);
                AMP_ASSERT(r->scale >= 0 && r->flushed >= 0 && r->overflow >= 0 && r->flushed + r->overflow <= r->n);
                AMP_ASSERT(r->scaler && *r->scaler && (r->skipped == 0 || r->skipped == 1));
            }
            amp_run_whatif_free(&w);
        }
    }
    amp_run_tensors t;
    if ((st = amp_run_read_tensors(dir, &t))) check_err(st, dir);
    else {
        for (size_t i = 0; i < t.n; i++) {
            const amp_run_tensor_row *r = &t.row[i];
            AMP_ASSERT(r->zero_in + r->flushed + r->subnormal + r->saturated + r->overflow + r->nan <= r->n);
            AMP_ASSERT(r->tensor && *r->tensor && r->role && r->format);
        }
        amp_run_tensors_free(&t);
    }
    amp_run_hist h;
    if ((st = amp_run_read_hist(dir, &h))) check_err(st, dir);
    else {
        for (size_t i = 0; i < h.n; i++) {
            AMP_ASSERT(i == 0 || h.row[i].step >= h.row[i - 1].step);
            AMP_ASSERT(h.row[i].binade >= AMP_RUN_BINADE_MIN && h.row[i].binade <= AMP_RUN_BINADE_MAX);
            AMP_ASSERT(h.row[i].count >= 0);
        }
        amp_run_hist_free(&h);
    }
    amp_run_events e;
    if ((st = amp_run_read_events(dir, &e))) check_err(st, dir);
    else amp_run_events_free(&e);
    char *text = NULL, buf[64];
    if ((st = amp_run_read_config(dir, &text))) check_err(st, dir);
    else {
        (void)amp_run_json_str(text, "precision", buf, sizeof buf);
        free(text);
    }
    if ((st = amp_run_read_summary(dir, &text))) check_err(st, dir);
    else free(text);
    return 0;
}

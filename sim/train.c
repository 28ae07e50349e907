/* The training step (forward -> zero_grad -> backward -> unscale/check ->
 * update -> scaler update) and the whole run of `ampsim train`. */
#include "ampsim.h"

#include "amp_checkpoint.h"
#include "amp_train_dp.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void amp_train_opts_defaults(amp_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->model = "mlp";
    o->data = NULL;
    o->precision = "fp32";
    o->scaler = "none";
    o->steps = 200;
    o->batch = 32;
    o->lr = 0.1;
    o->optim = "sgd";
    o->seed = 1;
    o->shuffle = 1;
    o->log_every = 10;
    o->hist_every = 50;
    o->threads = 1;
    o->hidden = 32;
    o->layers = 0;
    o->act = "relu";
    o->heads = 4;
    o->dim = 128;
    o->ctx = 64;
    o->eval_every = 0;
    o->eval_batches = 8;
    o->dp = 1;
    o->out = "ampsim-run";
}

#define GRAD_ROLES ((1u << AMP_ROLE_WEIGHT_GRAD) | (1u << AMP_ROLE_ACT_GRAD))

float amp_train_step_begin(amp_model *m, amp_scaler *sc, int64_t step, unsigned stats_roles,
                           amp_step_info *info, amp_scaler_result *res)
{
    amp_tensors *r = &m->reg;
    memset(info, 0, sizeof *info);
    memset(res, 0, sizeof *res);
    float scale = sc ? amp_scaler_scale(sc) : 1.0f;
    if (sc && amp_scaler_needs_stats(sc)) stats_roles |= GRAD_ROLES;
    amp_tensors_begin_step(r, step, stats_roles);
    info->scale = scale;
    info->scale_held = sc ? amp_scaler_held(sc) : 1.0;
    info->scale_kind = sc ? sc->spec.kind : AMP_SCALER_NONE;

    /* gradient scales: the loss scale, or each gradient tensor's own (layer-wise) */
    r->layerwise = sc && amp_scaler_is_layerwise(sc) && m->layerwise_ok;
    r->src_gscale = scale;                   /* the loss gradient is computed times `scale` */
    for (int i = 0, k = 0; i < r->n; i++) {
        amp_tensor *t = r->t[i];
        if (t->role != AMP_ROLE_WEIGHT_GRAD && t->role != AMP_ROLE_ACT_GRAD) continue;
        t->gscale = r->layerwise ? amp_scaler_tensor_scale(sc, (size_t)k) : scale;
        k++;
    }
    return scale;
}

amp_status amp_train_step(amp_model *m, amp_optim *opt, amp_scaler *sc, const amp_batch *b,
                          int64_t step, unsigned stats_roles, amp_step_info *info, amp_scaler_result *res)
{
    amp_tensors *r = &m->reg;
    amp_status s;
    float scale = amp_train_step_begin(m, sc, step, stats_roles, info, res);

    /* forward (weights cast once from their masters: the cast cache) */
    r->phase = AMP_PHASE_FORWARD;
    if ((s = amp_model_cast_weights(m))) return s;
    if ((s = m->forward(m, b, &info->loss))) return s;
    /* zero_grad: begin_step cleared every 'written' flag, so the first backward
     * write of each gradient is a plain rounding (amp_tensor_accum) */
    if ((s = m->backward(m, b, scale))) return s;
    return amp_train_step_end(m, opt, sc, scale, info, res);
}

amp_status amp_train_step_end(amp_model *m, amp_optim *opt, amp_scaler *sc, float scale,
                              amp_step_info *info, amp_scaler_result *res)
{
    amp_tensors *r = &m->reg;
    amp_status s;
    /* unscale in FP32 and check */
    float inv = sc ? amp_scaler_inv(scale) : 1.0f;
    int found_inf = 0;
    double sq = 0.0;
    size_t ngrads = 0;
    for (int i = 0; i < r->n; i++) {
        amp_tensor *w = r->t[i];
        if (w->role == AMP_ROLE_WEIGHT_GRAD || w->role == AMP_ROLE_ACT_GRAD) ngrads++;
        if (w->role != AMP_ROLE_WEIGHT) continue;
        const float *g = w->grad->data;
        float winv = r->layerwise ? amp_scaler_inv(w->grad->gscale) : inv;
        for (size_t k = 0; k < w->n; k++) {
            float v = winv == 1.0f ? g[k] : g[k] * winv;
            w->grad32[k] = v;
            found_inf |= !isfinite(v);
            sq += (double)v * v;
        }
    }
    info->grad_norm = sqrt(sq);
    info->nonfinite = r->nonfinite_tensor ? r->nonfinite_count : 0;

    /* the scaler decides whether the step is skipped */
    res->skipped = 0;
    amp_status srun = AMP_OK;
    if (sc) {
        amp_scaler_tensor *ts = calloc(ngrads ? ngrads : 1, sizeof *ts);
        if (!ts) return amp_fail(AMP_ENOMEM, "out of memory");
        size_t k = 0;
        for (int i = 0; i < r->n; i++) {
            amp_tensor *t = r->t[i];
            if (t->role != AMP_ROLE_WEIGHT_GRAD && t->role != AMP_ROLE_ACT_GRAD) continue;
            ts[k].name = t->name;
            ts[k].is_act = t->role == AMP_ROLE_ACT_GRAD;
            ts[k].fmt = &t->fmt;
            ts[k].st = t->stats_valid ? t->stats : NULL;
            ts[k].scale = r->layerwise ? t->gscale : 0.0f;
            k++;
        }
        amp_scaler_obs obs = { .found_inf = found_inf, .n_tensors = ngrads, .tensors = ts };
        srun = amp_scaler_update(sc, &obs, res);
        free(ts);
        if (srun && srun != AMP_ERUN) return srun;
    }
    /* --on-nonfinite: a non-finite loss or gradient (and, under stop, a loss
     * scale that collapsed to 0) overrides the scaler's decision */
    int bad = found_inf || !isfinite(info->loss);
    if (bad && opt->on_nonfinite == AMP_NF_SKIP) res->skipped = 1;
    if (!srun && opt->on_nonfinite == AMP_NF_STOP) {
        if (bad) {
            res->skipped = 1;
            srun = amp_fail(AMP_ERUN, "non-finite %s at this step (--on-nonfinite stop)",
                            !isfinite(info->loss) ? "loss" : "weight gradients");
        } else if (sc && !(res->scale_after > 0)) {
            srun = amp_fail(AMP_ERUN, "loss scale collapsed to 0 (--on-nonfinite stop)");
        }
    }
    info->skipped = res->skipped;
    if (!res->skipped && !srun && (s = amp_optim_step(opt, m, &info->vanished))) return s;
    return srun;
}

amp_status amp_nonfinite_parse(const char *s, amp_nonfinite_policy *out)
{
    static const char *const names[] = { "continue", "skip", "stop" };
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, names[i])) { *out = (amp_nonfinite_policy)i; return AMP_OK; }
    return amp_fail(AMP_EINVAL, "--on-nonfinite: '%s' is not continue, skip or stop", s ? s : "");
}

/* ---- the run -------------------------------------------------------------- */
static char *config_json(const amp_train_opts *o, const amp_policy *pol, const amp_scaler *sc,
                         const amp_fp8_scaler *fp8, const char *data_path, const char *sha, int layers,
                         const amp_allreduce_opts *ao)
{
    cJSON *c = cJSON_CreateObject();
    char spec[512];
    cJSON_AddStringToObject(c, "ampsim_version", amp_version());
    cJSON_AddStringToObject(c, "command", "train");
    cJSON_AddStringToObject(c, "model", o->model);
    cJSON_AddStringToObject(c, "data", o->data ? o->data : !strcmp(o->model, "gpt") ? "austen" : "digits");
    cJSON_AddStringToObject(c, "data_path", data_path);
    cJSON_AddStringToObject(c, "data_sha256", sha);
    cJSON_AddStringToObject(c, "precision", pol->name);
    cJSON_AddStringToObject(c, "policy_file", o->policy_file ? o->policy_file : "");
    char *pj = amp_policy_to_json(pol);
    cJSON_AddItemToObject(c, "policy", pj ? cJSON_Parse(pj) : cJSON_CreateNull());
    free(pj);
    amp_scaler_spec_str(&sc->spec, spec, sizeof spec);
    cJSON_AddStringToObject(c, "scaler", spec);
    if (fp8) {
        amp_scaler_spec_str(&fp8->spec, spec, sizeof spec);
        cJSON_AddStringToObject(c, "fp8_scaler", spec);
    }
    cJSON_AddNumberToObject(c, "steps", (double)o->steps);
    cJSON_AddNumberToObject(c, "batch", o->batch);
    cJSON_AddNumberToObject(c, "lr", o->lr);
    cJSON_AddStringToObject(c, "optim", o->optim);
    {
        static const char *const nf[] = { "continue", "skip", "stop" };
        cJSON_AddStringToObject(c, "on_nonfinite", nf[o->on_nonfinite]);
    }
    snprintf(spec, sizeof spec, "%llu", (unsigned long long)o->seed);
    cJSON_AddStringToObject(c, "seed", spec);
    cJSON_AddStringToObject(c, "init", o->init ? o->init : "");
    cJSON_AddStringToObject(c, "save", o->save ? o->save : "");
    cJSON_AddBoolToObject(c, "shuffle", o->shuffle);
    cJSON_AddNumberToObject(c, "log_every", (double)o->log_every);
    cJSON_AddNumberToObject(c, "hist_every", (double)o->hist_every);
    cJSON_AddNumberToObject(c, "threads", o->threads);
    cJSON_AddNumberToObject(c, "hidden", o->hidden);
    cJSON_AddNumberToObject(c, "layers", layers);
    if (strcmp(o->model, "gpt")) cJSON_AddStringToObject(c, "act", o->act ? o->act : "relu");
    if (!strcmp(o->model, "gpt")) {
        cJSON_AddNumberToObject(c, "heads", o->heads);
        cJSON_AddNumberToObject(c, "dim", o->dim);
        cJSON_AddNumberToObject(c, "ctx", o->ctx);
        cJSON_AddNumberToObject(c, "eval_every", (double)o->eval_every);
        cJSON_AddNumberToObject(c, "eval_batches", o->eval_batches);
    }
    if (ao) {                                /* --dp > 1 only: --dp 1 configs are unchanged */
        cJSON_AddNumberToObject(c, "dp", o->dp);
        cJSON_AddStringToObject(c, "allreduce", amp_allreduce_algo_name(ao->algo));
        cJSON_AddStringToObject(c, "allreduce_format", ao->fmt.name);
        cJSON_AddStringToObject(c, "allreduce_scale", amp_allreduce_scaling_name(ao->scaling));
    }
    char *s = cJSON_Print(c);
    cJSON_Delete(c);
    return s;
}

/* Counters of a run that go into summary.json (and into checkpoints). */
typedef struct run_state {
    int64_t next_step, skipped, nonfinite_steps;
    uint64_t vanished;
    double last_loss, min_loss;
    int first_seen;
    int64_t nf_step;
    uint64_t nf_phase;
    char nf_tensor[AMP_TENSOR_NAME];
} run_state;

static amp_status log_step_events(amp_runlog *log, const amp_model *m, int64_t step, const amp_step_info *info,
                                  const amp_scaler_result *res, run_state *rs)
{
    const amp_tensors *r = &m->reg;
    char detail[160];
    amp_status s = AMP_OK;
    if (r->nonfinite_tensor) {
        snprintf(detail, sizeof detail, "%s; %llu values", amp_phase_name(r->nonfinite_phase),
                 (unsigned long long)r->nonfinite_count);
        if (!rs->first_seen) {
            rs->first_seen = 1;
            rs->nf_step = step;
            rs->nf_phase = (uint64_t)r->nonfinite_phase;
            snprintf(rs->nf_tensor, sizeof rs->nf_tensor, "%s", r->nonfinite_tensor->name);
            s = amp_runlog_event(log, step, "first_nonfinite", r->nonfinite_tensor->name, detail);
        } else {
            s = amp_runlog_event(log, step, "nonfinite", r->nonfinite_tensor->name, detail);
        }
    }
    if (!s && info->skipped) {
        char sbuf[40];
        amp_scaler_fmt_scale(info->scale_kind, info->scale_held, sbuf, sizeof sbuf);
        snprintf(detail, sizeof detail, "scale %s", sbuf);
        s = amp_runlog_event(log, step, "skip", "", detail);
    }
    for (int e = 0; e < res->n_events && !s; e++) {
        const amp_scaler_event *ev = &res->events[e];
        const char *tn = "";
        if (ev->tensor >= 0) {
            long k = 0;
            for (int i = 0; i < r->n; i++) {
                const amp_tensor *t = r->t[i];
                if (t->role != AMP_ROLE_WEIGHT_GRAD && t->role != AMP_ROLE_ACT_GRAD) continue;
                if (k++ == ev->tensor) { tn = t->name; break; }
            }
        }
        s = amp_runlog_event(log, step, amp_scaler_event_name(ev->kind), tn, ev->detail);
    }
    return s;
}

/* ---- checkpoints (DIR/checkpoint.bin, sim/amp_checkpoint.h) ------------------
 * Holds what the next step depends on: weights, masters and optimizer states
 * (activations and gradients are recomputed), the optimizer's update count,
 * the scaler states, the run counters and the byte lengths of the CSV logs at
 * that point. Batches and SR draws are functions of (seed, step): no generator
 * state. The logs are published (amp_runlog_sync) before the checkpoint is
 * committed, so a checkpoint never refers to log bytes that are not on disk. */
#define CKPT_ROLES ((1u << AMP_ROLE_WEIGHT) | (1u << AMP_ROLE_MASTER) | (1u << AMP_ROLE_OPTIM_STATE))

static amp_status ckpt_path(const char *dir, char *out, size_t len)
{
    if ((size_t)snprintf(out, len, "%s/checkpoint.bin", dir) >= len) return amp_fail(AMP_EINVAL, "%s: path too long", dir);
    return AMP_OK;
}

static amp_status write_checkpoint(const char *dir, amp_runlog *log, amp_model *m, const amp_optim *opt,
                                   const amp_scaler *sc, const amp_fp8_scaler *fp8, const run_state *rs)
{
    char path[4200], name[16];
    uint64_t off[AMP_RUNLOG_FILES];
    amp_status s = ckpt_path(dir, path, sizeof path);
    if (!s) s = amp_runlog_sync(log, off);
    if (s) return s;
    amp_ckpt_writer w;
    if ((s = amp_ckpt_create(&w, path))) return s;
    s = amp_ckpt_put_u64(&w, "run/next_step", (uint64_t)rs->next_step);
    if (!s) s = amp_ckpt_put_u64(&w, "run/skipped", (uint64_t)rs->skipped);
    if (!s) s = amp_ckpt_put_u64(&w, "run/nonfinite_steps", (uint64_t)rs->nonfinite_steps);
    if (!s) s = amp_ckpt_put_u64(&w, "run/vanished", rs->vanished);
    if (!s) s = amp_ckpt_put_f64(&w, "run/last_loss", rs->last_loss);
    if (!s) s = amp_ckpt_put_f64(&w, "run/min_loss", rs->min_loss);
    if (!s) s = amp_ckpt_put_u64(&w, "run/first_seen", (uint64_t)rs->first_seen);
    if (!s) s = amp_ckpt_put_u64(&w, "run/nf_step", (uint64_t)rs->nf_step);
    if (!s) s = amp_ckpt_put_u64(&w, "run/nf_phase", rs->nf_phase);
    if (!s) s = amp_ckpt_put(&w, "run/nf_tensor", rs->nf_tensor, sizeof rs->nf_tensor);
    for (int i = 0; i < AMP_RUNLOG_FILES && !s; i++) {
        snprintf(name, sizeof name, "log/%d", i);
        s = amp_ckpt_put_u64(&w, name, off[i]);
    }
    if (!s) s = amp_ckpt_put_tensors(&w, &m->reg, CKPT_ROLES);
    if (!s) s = amp_ckpt_put_optim(&w, opt);
    if (!s) s = amp_ckpt_put_scaler(&w, sc);
    if (!s && fp8) s = amp_ckpt_put_fp8(&w, fp8);
    if (!s) s = amp_ckpt_commit(&w);
    amp_ckpt_abort(&w);
    return s;
}

/* 1 if the two config.json texts describe the same run (--threads may differ). */
static int same_config(const char *a, const char *b)
{
    cJSON *ja = cJSON_Parse(a), *jb = cJSON_Parse(b);
    int same = 0;
    if (ja && jb) {
        cJSON_DeleteItemFromObjectCaseSensitive(ja, "threads");
        cJSON_DeleteItemFromObjectCaseSensitive(jb, "threads");
        same = cJSON_Compare(ja, jb, 1);
    }
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    return same;
}

/* --resume: restores everything from DIR/checkpoint.bin and reopens the logs.
 * *found = 0 when there is no checkpoint (the run starts from scratch). */
static amp_status resume(const char *dir, const char *cfg, amp_runlog **log, amp_model *m, amp_optim *opt,
                         amp_scaler *sc, amp_fp8_scaler *fp8, run_state *rs, int *found)
{
    char path[4200], name[16];
    uint64_t off[AMP_RUNLOG_FILES], v[5];
    amp_status s = ckpt_path(dir, path, sizeof path);
    *found = 0;
    if (s) return s;
    FILE *fp = fopen(path, "rb");
    if (!fp) return AMP_OK;
    fclose(fp);
    char cpath[4200], *old;
    size_t len;
    snprintf(cpath, sizeof cpath, "%s/config.json", dir);
    if ((s = amp_read_file(cpath, 1 << 24, &old, &len))) return s;
    int same = same_config(old, cfg);
    free(old);
    if (!same) return amp_fail(AMP_EINVAL, "--resume: the options differ from those in %s", cpath);
    amp_ckpt ck;
    if ((s = amp_ckpt_load(path, &ck))) return s;
    s = amp_ckpt_get_u64(&ck, "run/next_step", &v[0]);
    if (!s) s = amp_ckpt_get_u64(&ck, "run/skipped", &v[1]);
    if (!s) s = amp_ckpt_get_u64(&ck, "run/nonfinite_steps", &v[2]);
    if (!s) s = amp_ckpt_get_u64(&ck, "run/vanished", &rs->vanished);
    if (!s) s = amp_ckpt_get_f64(&ck, "run/last_loss", &rs->last_loss);
    if (!s) s = amp_ckpt_get_f64(&ck, "run/min_loss", &rs->min_loss);
    if (!s) s = amp_ckpt_get_u64(&ck, "run/first_seen", &v[3]);
    if (!s) s = amp_ckpt_get_u64(&ck, "run/nf_step", &v[4]);
    if (!s) s = amp_ckpt_get_u64(&ck, "run/nf_phase", &rs->nf_phase);
    if (!s) s = amp_ckpt_get(&ck, "run/nf_tensor", rs->nf_tensor, sizeof rs->nf_tensor);
    for (int i = 0; i < AMP_RUNLOG_FILES && !s; i++) {
        snprintf(name, sizeof name, "log/%d", i);
        s = amp_ckpt_get_u64(&ck, name, &off[i]);
    }
    if (!s) s = amp_ckpt_get_tensors(&ck, &m->reg, CKPT_ROLES);
    if (!s) s = amp_ckpt_get_optim(&ck, opt);
    if (!s) s = amp_ckpt_get_scaler(&ck, sc);
    if (!s && fp8) s = amp_ckpt_get_fp8(&ck, fp8);
    amp_ckpt_free(&ck);
    if (s) return s;
    rs->nf_tensor[sizeof rs->nf_tensor - 1] = 0;
    rs->next_step = (int64_t)v[0];
    rs->skipped = (int64_t)v[1];
    rs->nonfinite_steps = (int64_t)v[2];
    rs->first_seen = v[3] != 0;
    rs->nf_step = (int64_t)v[4];
    if ((s = amp_runlog_reopen(log, dir, off))) return s;
    *found = 1;
    return AMP_OK;
}

/* The data of a run: digits for the MLP, Austen bytes for the GPT. */
typedef struct run_data {
    int gpt;
    amp_digits dig;
    amp_austen aus;
    int32_t *tok, *y;
    char path[4096];
    char sha256[65];
} run_data;

static amp_status data_open(run_data *d, const amp_train_opts *o)
{
    const char *name = o->data ? o->data : d->gpt ? "austen" : "digits";
    amp_status s = AMP_OK;
    if (!strcmp(name, "digits")) s = amp_data_find("digits.csv.gz", d->path, sizeof d->path);
    else if (!strcmp(name, "austen")) s = amp_data_find("austen.txt", d->path, sizeof d->path);
    else snprintf(d->path, sizeof d->path, "%s", name);
    if (s) return s;
    if (!d->gpt) {
        if ((s = amp_digits_load(d->path, &d->dig))) return s;
        memcpy(d->sha256, d->dig.sha256, sizeof d->sha256);
        return AMP_OK;
    }
    if ((s = amp_sha256_file(d->path, d->sha256))) return s;
    if ((s = amp_austen_load(&d->aus, d->path))) return s;
    size_t n = (size_t)o->batch * (size_t)o->ctx;
    d->tok = malloc(n * sizeof *d->tok);
    d->y = malloc(n * sizeof *d->y);
    if (!d->tok || !d->y) return amp_fail(AMP_ENOMEM, "out of memory for batches");
    return AMP_OK;
}

static amp_status data_batch(run_data *d, const amp_train_opts *o, int64_t step, amp_batch *b)
{
    if (!d->gpt) return amp_digits_batch(&d->dig, step, o->batch, o->shuffle, o->seed, b);
    amp_status s = amp_austen_batch(&d->aus, AMP_SPLIT_TRAIN, o->seed, step, o->batch, o->ctx, d->tok, d->y);
    if (s) return s;
    memset(b, 0, sizeof *b);
    b->B = o->batch;
    b->D = o->ctx;
    b->tok = d->tok;
    b->y = d->y;
    return AMP_OK;
}

static void data_close(run_data *d)
{
    amp_digits_free(&d->dig);
    if (d->gpt) amp_austen_free(&d->aus);
    free(d->tok);
    free(d->y);
}

amp_status amp_train_run(const amp_train_opts *o)
{
    amp_status s;
    amp_policy pol;
    amp_scaler sc;
    amp_fp8_scaler fp8;
    int has_fp8 = 0;
    run_data data;
    amp_model m;
    amp_optim opt;
    amp_runlog *log = NULL;
    amp_whatif *wi = NULL;                   /* --what-if */
    amp_dp *dp = NULL;
    amp_allreduce_opts ao = amp_allreduce_defaults();
    char stopmsg[512] = "";
    memset(&sc, 0, sizeof sc);
    memset(&data, 0, sizeof data);
    memset(&m, 0, sizeof m);

    if (o->steps < 1) return amp_fail(AMP_EINVAL, "--steps must be positive");
    if (o->batch < 1) return amp_fail(AMP_EINVAL, "--batch must be positive");
    if (!(o->lr >= 0) || !isfinite(o->lr)) return amp_fail(AMP_EINVAL, "--lr must be a finite number >= 0");
    if (strcmp(o->model, "mlp") && strcmp(o->model, "gpt"))
        return amp_fail(AMP_EINVAL, "--model %s: unknown model (mlp, gpt)", o->model);
    data.gpt = !strcmp(o->model, "gpt");
    int layers = o->layers > 0 ? o->layers : data.gpt ? 4 : 2;
    /* --dp R: R emulated ranks of batch/R rows (sim/train_dp.c) */
    const int R = o->dp > 0 ? o->dp : 1;
    if (R > 1024) return amp_fail(AMP_EINVAL, "--dp %d: at most 1024 ranks", R);
    if (R == 1 && (o->allreduce || o->allreduce_format || o->allreduce_scale))
        return amp_fail(AMP_EINVAL, "--%s needs --dp > 1", o->allreduce ? "allreduce" : o->allreduce_format ?
                        "allreduce-format" : "allreduce-scale");
    if (o->batch % R) return amp_fail(AMP_EINVAL, "--batch %d is not divisible by --dp %d", o->batch, R);
    if (R > 1 && data.gpt && o->eval_every > 0)
        return amp_fail(AMP_EINVAL, "--eval-every with --dp %d: not supported (the evaluation would use batch/dp rows)", R);
    if (o->allreduce && amp_allreduce_algo_parse(o->allreduce, &ao.algo))
        return amp_fail(AMP_EINVAL, "--allreduce %s: expected ring or tree", o->allreduce);
    if (o->allreduce_format && amp_format_parse(o->allreduce_format, &ao.fmt))
        return amp_fail(AMP_EINVAL, "--allreduce-format %s: unknown format", o->allreduce_format);
    if (o->allreduce_scale && amp_allreduce_scaling_parse(o->allreduce_scale, &ao.scaling))
        return amp_fail(AMP_EINVAL, "--allreduce-scale %s: expected none, amax or pow2", o->allreduce_scale);
    ao.average = 1;
    amp_set_threads(o->threads);
    amp_gemm_init();
    s = o->policy_file ? amp_policy_load(o->policy_file, &pol) : amp_policy_preset(o->precision, &pol);
    if (s) return s;
    if (R > 1 && pol.fp8_scaling)
        return amp_fail(AMP_EINVAL, "--dp %d with --precision %s: FP8 per-tensor scaling is not supported with --dp "
                        "(each micro-batch would advance the scaling history)", R, pol.name);
    amp_optim_kind ok;
    if ((s = amp_optim_parse(o->optim, &ok))) return s;
    /* --scaler: a loss scaler, or an FP8 strategy (delayed, current, mx, block)
     * for a policy with FP8 scaling; fp8-hybrid defaults to delayed scaling */
    amp_scaler_spec spec;
    if ((s = amp_scaler_spec_parse(o->scaler, &spec))) return s;
    if (amp_scaler_kind_is_fp8(spec.kind)) {
        if (!pol.fp8_scaling)
            return amp_fail(AMP_EINVAL, "--scaler %s is an FP8 scaling strategy: use it with --precision fp8-hybrid", o->scaler);
        if ((s = amp_fp8_init(&fp8, &spec))) return s;
        has_fp8 = 1;
        s = amp_scaler_init_str(&sc, "none");
    } else {
        s = amp_scaler_init(&sc, &spec);
        if (!s && pol.fp8_scaling) {
            if ((s = amp_fp8_init_str(&fp8, "delayed"))) { amp_scaler_free(&sc); return s; }
            has_fp8 = 1;
        }
    }
    if (s) { if (has_fp8) amp_fp8_free(&fp8); return s; }
    if ((s = data_open(&data, o))) goto done;
    if (data.gpt) s = amp_gpt_create(&m, &pol, o->batch / R, o->ctx, o->dim, layers, o->heads, o->seed);
    else {
        amp_act act;
        s = amp_act_parse(o->act ? o->act : "relu", &act);
        if (!s) s = amp_mlp_create_act(&m, &pol, o->batch / R, 64, o->hidden, layers, 10, o->seed, act);
    }
    if (s) goto done;
    if (has_fp8) m.reg.fp8 = &fp8;
    if (o->init && (s = amp_model_load(&m, o->init))) goto done;
    amp_optim_defaults(&opt, ok, (float)o->lr);
    opt.on_nonfinite = o->on_nonfinite;
    if ((s = amp_optim_attach(&opt, &m))) goto done;
    if (R > 1 && (s = amp_dp_create(&dp, &m, R, &ao))) goto done;
    char *cfg = config_json(o, &pol, &sc, has_fp8 ? &fp8 : NULL, data.path, data.sha256, layers, dp ? &ao : NULL);
    if (!cfg) { s = amp_fail(AMP_ENOMEM, "out of memory"); goto done; }
    run_state rs;
    memset(&rs, 0, sizeof rs);
    rs.last_loss = NAN;
    rs.min_loss = INFINITY;
    int resumed = 0;
    if (o->whatif && o->resume)
        s = amp_fail(AMP_EINVAL, "--what-if with --resume: not supported (the shadow scalers are not checkpointed)");
    else if (o->resume) s = resume(o->out, cfg, &log, &m, &opt, &sc, has_fp8 ? &fp8 : NULL, &rs, &resumed);
    /* --what-if: shadow scalers (sim/amp_whatif.h); they are not checkpointed */
    if (!s && o->whatif) s = amp_whatif_open(&wi, o->out, o->whatif);
    if (!s && wi && o->whatif_format) {
        amp_format wf;
        if (amp_format_parse(o->whatif_format, &wf))
            s = amp_fail(AMP_EINVAL, "--what-if-format %s: unknown format", o->whatif_format);
        else amp_whatif_set_format(wi, &wf);
    }
    if (!s && !resumed) s = amp_runlog_open(&log, o->out, cfg);
    free(cfg);
    if (s) goto done;

    double val_loss = NAN;
    amp_step_info info;
    amp_scaler_result res;
    for (int64_t step = rs.next_step; step < o->steps && !s; step++) {
        amp_batch b;
        double v = NAN;
        if (data.gpt && o->eval_every > 0 && step % o->eval_every == 0 &&
            (s = amp_gpt_eval(&m, &data.aus, o->seed, step, o->eval_batches, &v))) break;
        if ((s = data_batch(&data, o, step, &b))) break;
        int do_t = o->log_every > 0 && step % o->log_every == 0;
        int do_h = o->hist_every > 0 && step % o->hist_every == 0;
        unsigned roles = (do_t || do_h) ? AMP_ROLES_LOGGED : 0;
        s = dp ? amp_train_step_dp(dp, &m, &opt, &sc, &b, step, roles, &info, &res)
               : amp_train_step(&m, &opt, &sc, &b, step, roles, &info, &res);
        if (s == AMP_ERUN) snprintf(stopmsg, sizeof stopmsg, "%s", amp_errmsg());
        if (s && s != AMP_ERUN) break;
        amp_status s2 = amp_runlog_metrics(log, step, info.loss, info.scale_held, info.scale_kind,
                                           info.skipped, info.grad_norm,
                                           opt.lr, info.vanished, info.nonfinite, v);
        if (!s2 && (do_t || do_h)) s2 = amp_runlog_tensors(log, &m.reg, step, do_t, do_h);
        if (!s2) s2 = log_step_events(log, &m, step, &info, &res, &rs);
        if (!s2 && s == AMP_ERUN) s2 = amp_runlog_event(log, step, "stop", "", stopmsg);
        if (!s2 && dp) s2 = amp_dp_log(dp, log, step, do_t, do_h);
        if (!s2 && wi) s2 = amp_whatif_step_reg(wi, &m.reg, step, do_t);
        if (s2) { s = s2; break; }
        rs.skipped += info.skipped;
        rs.nonfinite_steps += info.nonfinite != 0;
        rs.vanished += info.vanished;
        rs.last_loss = info.loss;
        if (info.loss < rs.min_loss) rs.min_loss = info.loss;
        rs.next_step = step + 1;
        if (!s && o->checkpoint_every > 0 && rs.next_step % o->checkpoint_every == 0 && rs.next_step < o->steps &&
            (s = write_checkpoint(o->out, log, &m, &opt, &sc, has_fp8 ? &fp8 : NULL, &rs)))
            break;
        if (o->progress && (step % 10 == 0 || step == o->steps - 1))
            fprintf(stderr, "\rstep %lld/%lld loss %.4f scale %g", (long long)step + 1, (long long)o->steps,
                    (double)info.loss, info.scale_held);
    }
    if (o->progress) fputc('\n', stderr);
    amp_status srun = s;
    if (s == AMP_ERUN) s = AMP_OK;           /* the logs of a stopped run are complete up to the stop */
    if (!s && data.gpt && o->eval_every > 0)
        s = amp_gpt_eval(&m, &data.aus, o->seed, o->steps, o->eval_batches, &val_loss);
    if (!s && o->save) s = amp_model_save(&m, o->save);
    if (!s && wi) { s = amp_whatif_close(wi); wi = NULL; }
    if (!s) {
        cJSON *summary = cJSON_CreateObject();
        cJSON_AddNumberToObject(summary, "steps", (double)o->steps);
        cJSON_AddNumberToObject(summary, "final_loss", isfinite(rs.last_loss) ? rs.last_loss : 0.0);
        cJSON_AddBoolToObject(summary, "final_loss_finite", isfinite(rs.last_loss));
        cJSON_AddNumberToObject(summary, "min_loss", isfinite(rs.min_loss) ? rs.min_loss : 0.0);
        if (isfinite(val_loss)) cJSON_AddNumberToObject(summary, "val_loss", val_loss);
        cJSON_AddNumberToObject(summary, "skipped_steps", (double)rs.skipped);
        cJSON_AddNumberToObject(summary, "nonfinite_steps", (double)rs.nonfinite_steps);
        cJSON_AddNumberToObject(summary, "vanished_updates", (double)rs.vanished);
        cJSON_AddNumberToObject(summary, "final_scale", amp_scaler_held(&sc));
        cJSON_AddNullToObject(summary, "divergence_from_reference");
        cJSON_AddBoolToObject(summary, "stopped", srun == AMP_ERUN);
        if (srun == AMP_ERUN) cJSON_AddStringToObject(summary, "stop_reason", stopmsg);
        if (rs.first_seen) {
            cJSON *f = cJSON_AddObjectToObject(summary, "first_nonfinite");
            cJSON_AddNumberToObject(f, "step", (double)rs.nf_step);
            cJSON_AddStringToObject(f, "phase", amp_phase_name((amp_phase)rs.nf_phase));
            cJSON_AddStringToObject(f, "tensor", rs.nf_tensor);
        } else {
            cJSON_AddNullToObject(summary, "first_nonfinite");
        }
        char *sj = cJSON_Print(summary);
        s = sj ? amp_runlog_close(log, sj) : amp_fail(AMP_ENOMEM, "out of memory");
        if (!sj) amp_runlog_abort(log);
        log = NULL;
        free(sj);
        cJSON_Delete(summary);
    }
    if (!s && srun == AMP_ERUN) s = amp_fail(AMP_ERUN, "%s", stopmsg);
done:
    amp_whatif_free(wi);
    amp_dp_free(dp);
    if (log) amp_runlog_abort(log);
    amp_model_free(&m);
    data_close(&data);
    amp_scaler_free(&sc);
    if (has_fp8) amp_fp8_free(&fp8);
    return s;
}

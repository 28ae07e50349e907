/* The whole run of `ampsim train`: options, data, model, scalers, the step
 * loop with its logs and checkpoints, and the summary. */
#include "amp_base.h"
#include "amp_allreduce.h"
#include "amp_checkpoint.h"
#include "amp_data.h"
#include "amp_format.h"
#include "amp_gemm.h"
#include "amp_io.h"
#include "amp_layers.h"
#include "amp_model.h"
#include "amp_optim.h"
#include "amp_policy.h"
#include "amp_round.h"
#include "amp_runlog.h"
#include "amp_scaler.h"
#include "amp_tensor.h"
#include "amp_train.h"
#include "amp_whatif.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

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
        if (ev->tensor >= 0 && ev->tensor < r->ngrads) tn = r->grads[ev->tensor]->name;
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

/* The run counters in a checkpoint, in file order: one table for writing and
 * reading. Kinds: 'i' int64_t, 'u' uint64_t, 'b' int stored as 0/1 in a u64,
 * 'd' double, 's' a char array of `len` bytes. */
typedef struct run_field { const char *name; size_t off; char kind; size_t len; } run_field;
#define RUN_FIELD(n, f, k) { "run/" n, offsetof(run_state, f), k, sizeof(((run_state *)0)->f) }
static const run_field RUN_FIELDS[] = {
    RUN_FIELD("next_step", next_step, 'i'),
    RUN_FIELD("skipped", skipped, 'i'),
    RUN_FIELD("nonfinite_steps", nonfinite_steps, 'i'),
    RUN_FIELD("vanished", vanished, 'u'),
    RUN_FIELD("last_loss", last_loss, 'd'),
    RUN_FIELD("min_loss", min_loss, 'd'),
    RUN_FIELD("first_seen", first_seen, 'b'),
    RUN_FIELD("nf_step", nf_step, 'i'),
    RUN_FIELD("nf_phase", nf_phase, 'u'),
    RUN_FIELD("nf_tensor", nf_tensor, 's'),
};
#define RUN_NFIELDS (sizeof RUN_FIELDS / sizeof RUN_FIELDS[0])

static amp_status put_field(amp_ckpt_writer *w, const run_field *f, const run_state *rs)
{
    const char *p = (const char *)rs + f->off;
    switch (f->kind) {
    case 'i': return amp_ckpt_put_u64(w, f->name, (uint64_t)*(const int64_t *)p);
    case 'u': return amp_ckpt_put_u64(w, f->name, *(const uint64_t *)p);
    case 'b': return amp_ckpt_put_u64(w, f->name, (uint64_t)*(const int *)p);
    case 'd': return amp_ckpt_put_f64(w, f->name, *(const double *)p);
    default: return amp_ckpt_put(w, f->name, p, f->len);
    }
}

static amp_status get_field(const amp_ckpt *ck, const run_field *f, run_state *rs)
{
    char *p = (char *)rs + f->off;
    uint64_t v;
    amp_status s;
    switch (f->kind) {
    case 'd': return amp_ckpt_get_f64(ck, f->name, (double *)p);
    case 's':
        if ((s = amp_ckpt_get(ck, f->name, p, f->len))) return s;
        p[f->len - 1] = 0;
        return AMP_OK;
    default:
        if ((s = amp_ckpt_get_u64(ck, f->name, &v))) return s;
        if (f->kind == 'i') *(int64_t *)p = (int64_t)v;
        else if (f->kind == 'u') *(uint64_t *)p = v;
        else *(int *)p = v != 0;
        return AMP_OK;
    }
}

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
    for (size_t i = 0; i < RUN_NFIELDS && !s; i++) s = put_field(&w, &RUN_FIELDS[i], rs);
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
    uint64_t off[AMP_RUNLOG_FILES];
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
    run_state got = *rs;
    for (size_t i = 0; i < RUN_NFIELDS && !s; i++) s = get_field(&ck, &RUN_FIELDS[i], &got);
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
    *rs = got;
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
        /* the digits layout (65 integers, pixels 0..16 scaled by 1/16), else any CSV or .npy pair */
        if (!strcmp(name, "digits") || !strchr(name, ',')) s = amp_digits_load(d->path, &d->dig);
        if (strcmp(name, "digits") && (s || strchr(name, ','))) s = amp_table_load(d->path, &d->dig);
        if (s) return s;
        memcpy(d->sha256, d->dig.sha256, sizeof d->sha256);
        if (o->batch > d->dig.N)
            return amp_fail(AMP_EINVAL, "--batch %d is larger than the data set (%d rows in %s): every batch would repeat rows",
                            o->batch, d->dig.N, d->path);
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

/* ---- the run ------------------------------------------------------------------ */
/* Everything one `ampsim train` holds between its steps. */
typedef struct run {
    const amp_train_opts *o;
    int R, layers;               /* --dp ranks; blocks/linear layers */
    amp_allreduce_opts ao;
    amp_policy pol;
    amp_optim_kind optim;
    amp_scaler sc;
    amp_fp8_scaler fp8;
    int has_fp8;
    run_data data;
    amp_model m;
    amp_optim opt;
    amp_runlog *log;
    amp_whatif *wi;              /* --what-if shadows (NULL = off) */
    amp_dp *dp;                  /* --dp > 1 (NULL = the plain step) */
    run_state rs;
    char stopmsg[512];
} run;

/* The options that need no data or model: sizes, --dp and its all-reduce,
 * threads, the policy and the optimizer's name. */
static amp_status run_check_opts(run *u)
{
    const amp_train_opts *o = u->o;
    if (o->steps < 1) return amp_fail(AMP_EINVAL, "--steps must be positive");
    if (o->batch < 1) return amp_fail(AMP_EINVAL, "--batch must be positive");
    if (!(o->lr >= 0) || !isfinite(o->lr)) return amp_fail(AMP_EINVAL, "--lr must be a finite number >= 0");
    if (strcmp(o->model, "mlp") && strcmp(o->model, "gpt"))
        return amp_fail(AMP_EINVAL, "--model %s: unknown model (mlp, gpt)", o->model);
    u->data.gpt = !strcmp(o->model, "gpt");
    u->layers = o->layers > 0 ? o->layers : u->data.gpt ? 4 : 2;
    /* --dp R: R emulated ranks of batch/R rows (sim/train_dp.c) */
    u->R = o->dp > 0 ? o->dp : 1;
    const int R = u->R;
    if (R > 1024) return amp_fail(AMP_EINVAL, "--dp %d: at most 1024 ranks", R);
    if (R == 1 && (o->allreduce || o->allreduce_format || o->allreduce_scale))
        return amp_fail(AMP_EINVAL, "--%s needs --dp > 1", o->allreduce ? "allreduce" : o->allreduce_format ?
                        "allreduce-format" : "allreduce-scale");
    if (o->batch % R) return amp_fail(AMP_EINVAL, "--batch %d is not divisible by --dp %d", o->batch, R);
    if (R > 1 && u->data.gpt && o->eval_every > 0)
        return amp_fail(AMP_EINVAL, "--eval-every with --dp %d: not supported (the evaluation would use batch/dp rows)", R);
    u->ao = amp_allreduce_defaults();
    if (o->allreduce && amp_allreduce_algo_parse(o->allreduce, &u->ao.algo))
        return amp_fail(AMP_EINVAL, "--allreduce %s: expected ring or tree", o->allreduce);
    if (o->allreduce_format && amp_format_parse(o->allreduce_format, &u->ao.fmt))
        return amp_fail(AMP_EINVAL, "--allreduce-format %s: unknown format", o->allreduce_format);
    if (o->allreduce_scale && amp_allreduce_scaling_parse(o->allreduce_scale, &u->ao.scaling))
        return amp_fail(AMP_EINVAL, "--allreduce-scale %s: expected none, amax, pow2 or mx", o->allreduce_scale);
    u->ao.average = 1;
    amp_set_threads(o->threads);
    amp_gemm_init();
    amp_status s = o->policy_file ? amp_policy_load(o->policy_file, &u->pol) : amp_policy_preset(o->precision, &u->pol);
    if (!s && o->gemm) s = amp_gemm_kind_parse(o->gemm, &u->pol.gemm);
    if (s) return s;
    if (R > 1 && u->pol.fp8_scaling)
        return amp_fail(AMP_EINVAL, "--dp %d with --precision %s: FP8 per-tensor scaling is not supported with --dp "
                        "(each micro-batch would advance the scaling history)", R, u->pol.name);
    return amp_optim_parse(o->optim, &u->optim);
}

/* --scaler: a loss scaler, or an FP8 strategy (delayed, current, mx, block)
 * for a policy with FP8 scaling; fp8-hybrid defaults to delayed scaling. */
static amp_status run_scalers(run *u)
{
    const char *spec_s = u->o->scaler;
    amp_scaler_spec spec;
    amp_status s = amp_scaler_spec_parse(spec_s, &spec);
    if (s) return s;
    if (amp_scaler_kind_is_fp8(spec.kind)) {
        if (!u->pol.fp8_scaling)
            return amp_fail(AMP_EINVAL, "--scaler %s is an FP8 scaling strategy: use it with --precision fp8-hybrid", spec_s);
        if ((s = amp_fp8_init(&u->fp8, &spec))) return s;
        u->has_fp8 = 1;
        return amp_scaler_init_str(&u->sc, "none");
    }
    if ((s = amp_scaler_init(&u->sc, &spec))) return s;
    if (u->pol.fp8_scaling) {
        if ((s = amp_fp8_init_str(&u->fp8, "delayed"))) return s;
        u->has_fp8 = 1;
    }
    return AMP_OK;
}

/* Data, model (with --init), optimizer and the data-parallel buffers. */
static amp_status run_model(run *u)
{
    const amp_train_opts *o = u->o;
    amp_status s = data_open(&u->data, o);
    if (s) return s;
    if (u->data.gpt) s = amp_gpt_create(&u->m, &u->pol, o->batch / u->R, o->ctx, o->dim, u->layers, o->heads, o->seed);
    else {
        amp_act act;
        s = amp_act_parse(o->act ? o->act : "relu", &act);
        if (!s) s = amp_mlp_create_act(&u->m, &u->pol, o->batch / u->R, u->data.dig.D, o->hidden, u->layers, u->data.dig.C,
                                       o->seed, act);
    }
    if (s) return s;
    if (u->has_fp8) u->m.reg.fp8 = &u->fp8;
    if (o->init && (s = amp_model_load(&u->m, o->init))) return s;
    amp_optim_defaults(&u->opt, u->optim, (float)o->lr);
    u->opt.on_nonfinite = o->on_nonfinite;
    if ((s = amp_optim_attach(&u->opt, &u->m))) return s;
    if (u->R > 1) return amp_dp_create(&u->dp, &u->m, u->R, &u->ao);
    return AMP_OK;
}

/* config.json, then --resume from a checkpoint or a new run directory, and
 * the --what-if shadows. */
static amp_status run_open_logs(run *u)
{
    const amp_train_opts *o = u->o;
    char *cfg = config_json(o, &u->pol, &u->sc, u->has_fp8 ? &u->fp8 : NULL, u->data.path, u->data.sha256, u->layers,
                            u->dp ? &u->ao : NULL);
    if (!cfg) return amp_fail(AMP_ENOMEM, "out of memory");
    u->rs.last_loss = NAN;
    u->rs.min_loss = INFINITY;
    int resumed = 0;
    amp_status s = AMP_OK;
    if (o->whatif && o->resume)
        s = amp_fail(AMP_EINVAL, "--what-if with --resume: not supported (the shadow scalers are not checkpointed)");
    else if (o->resume)
        s = resume(o->out, cfg, &u->log, &u->m, &u->opt, &u->sc, u->has_fp8 ? &u->fp8 : NULL, &u->rs, &resumed);
    if (!s && o->whatif) s = amp_whatif_open(&u->wi, o->out, o->whatif);
    if (!s && u->wi && o->whatif_format) {
        amp_format wf;
        if (amp_format_parse(o->whatif_format, &wf))
            s = amp_fail(AMP_EINVAL, "--what-if-format %s: unknown format", o->whatif_format);
        else amp_whatif_set_format(u->wi, &wf);
    }
    if (!s && !resumed) s = amp_runlog_open(&u->log, o->out, cfg);
    free(cfg);
    return s;
}

/* One step and its logs. AMP_ERUN when the run stops at this step (its logs
 * are written first; u->stopmsg says why). */
static amp_status run_step(run *u, int64_t step)
{
    const amp_train_opts *o = u->o;
    amp_step_info info;
    amp_scaler_result res;
    amp_batch b;
    double v = NAN;
    amp_status s;
    if (u->data.gpt && o->eval_every > 0 && step % o->eval_every == 0 &&
        (s = amp_gpt_eval(&u->m, &u->data.aus, o->seed, step, o->eval_batches, &v)))
        return s;
    if ((s = data_batch(&u->data, o, step, &b))) return s;
    int do_t = o->log_every > 0 && step % o->log_every == 0;
    int do_h = o->hist_every > 0 && step % o->hist_every == 0;
    unsigned roles = (do_t || do_h) ? AMP_ROLES_LOGGED : 0;
    s = u->dp ? amp_train_step_dp(u->dp, &u->m, &u->opt, &u->sc, &b, step, roles, &info, &res)
              : amp_train_step(&u->m, &u->opt, &u->sc, &b, step, roles, &info, &res);
    if (s == AMP_ERUN) snprintf(u->stopmsg, sizeof u->stopmsg, "%s", amp_errmsg());
    if (s && s != AMP_ERUN) return s;
    if (o->save_grads && step == 0) {
        amp_status sg = amp_model_save_grads(&u->m, o->save_grads);
        if (sg) return sg;
    }
    amp_runlog *log = u->log;
    amp_status s2 = amp_runlog_metrics(log, step, info.loss, info.scale_held, info.scale_kind, info.skipped,
                                       info.grad_norm, u->opt.lr, info.vanished, info.nonfinite, v);
    if (!s2 && (do_t || do_h)) s2 = amp_runlog_tensors(log, &u->m.reg, step, do_t, do_h);
    if (!s2) s2 = log_step_events(log, &u->m, step, &info, &res, &u->rs);
    if (!s2 && s == AMP_ERUN) s2 = amp_runlog_event(log, step, "stop", "", u->stopmsg);
    if (!s2 && u->dp) s2 = amp_dp_log(u->dp, log, step, do_t, do_h);
    if (!s2 && u->wi) s2 = amp_whatif_step_reg(u->wi, &u->m.reg, step, do_t);
    if (s2) return s2;
    run_state *rs = &u->rs;
    rs->skipped += info.skipped;
    rs->nonfinite_steps += info.nonfinite != 0;
    rs->vanished += info.vanished;
    rs->last_loss = info.loss;
    if (info.loss < rs->min_loss) rs->min_loss = info.loss;
    rs->next_step = step + 1;
    if (!s && o->checkpoint_every > 0 && rs->next_step % o->checkpoint_every == 0 && rs->next_step < o->steps)
        s = write_checkpoint(o->out, log, &u->m, &u->opt, &u->sc, u->has_fp8 ? &u->fp8 : NULL, rs);
    if (o->progress && (step % 10 == 0 || step == o->steps - 1))
        fprintf(stderr, "\rstep %lld/%lld loss %.4f scale %g", (long long)step + 1, (long long)o->steps,
                (double)info.loss, info.scale_held);
    return s;
}

/* summary.json of a finished (or stopped: srun == AMP_ERUN) run. */
static char *run_summary(const run *u, amp_status srun, double val_loss)
{
    const run_state *rs = &u->rs;
    cJSON *summary = cJSON_CreateObject();
    cJSON_AddNumberToObject(summary, "steps", (double)u->o->steps);
    /* JSON has no NaN or Inf: a non-finite loss is null */
    if (isfinite(rs->last_loss)) cJSON_AddNumberToObject(summary, "final_loss", rs->last_loss);
    else cJSON_AddNullToObject(summary, "final_loss");
    cJSON_AddBoolToObject(summary, "final_loss_finite", isfinite(rs->last_loss));
    if (isfinite(rs->min_loss)) cJSON_AddNumberToObject(summary, "min_loss", rs->min_loss);
    else cJSON_AddNullToObject(summary, "min_loss");
    if (isfinite(val_loss)) cJSON_AddNumberToObject(summary, "val_loss", val_loss);
    cJSON_AddNumberToObject(summary, "skipped_steps", (double)rs->skipped);
    cJSON_AddNumberToObject(summary, "nonfinite_steps", (double)rs->nonfinite_steps);
    cJSON_AddNumberToObject(summary, "vanished_updates", (double)rs->vanished);
    cJSON_AddNumberToObject(summary, "final_scale", amp_scaler_held(&u->sc));
    cJSON_AddNullToObject(summary, "divergence_from_reference");
    cJSON_AddBoolToObject(summary, "stopped", srun == AMP_ERUN);
    if (srun == AMP_ERUN) cJSON_AddStringToObject(summary, "stop_reason", u->stopmsg);
    if (rs->first_seen) {
        cJSON *f = cJSON_AddObjectToObject(summary, "first_nonfinite");
        cJSON_AddNumberToObject(f, "step", (double)rs->nf_step);
        cJSON_AddStringToObject(f, "phase", amp_phase_name((amp_phase)rs->nf_phase));
        cJSON_AddStringToObject(f, "tensor", rs->nf_tensor);
    } else {
        cJSON_AddNullToObject(summary, "first_nonfinite");
    }
    char *sj = cJSON_Print(summary);
    cJSON_Delete(summary);
    return sj;
}

/* After the last step: final evaluation, --save, the shadows, summary.json. */
static amp_status run_finish(run *u, amp_status srun)
{
    const amp_train_opts *o = u->o;
    double val_loss = NAN;
    amp_status s = AMP_OK;
    if (u->data.gpt && o->eval_every > 0)
        s = amp_gpt_eval(&u->m, &u->data.aus, o->seed, o->steps, o->eval_batches, &val_loss);
    if (!s && o->save) s = amp_model_save(&u->m, o->save);
    if (!s && u->wi) { s = amp_whatif_close(u->wi); u->wi = NULL; }
    if (s) return s;
    char *sj = run_summary(u, srun, val_loss);
    s = sj ? amp_runlog_close(u->log, sj) : amp_fail(AMP_ENOMEM, "out of memory");
    if (!sj) amp_runlog_abort(u->log);
    u->log = NULL;
    free(sj);
    return s;
}

static void run_free(run *u)
{
    amp_whatif_free(u->wi);
    amp_dp_free(u->dp);
    if (u->log) amp_runlog_abort(u->log);
    amp_model_free(&u->m);
    data_close(&u->data);
    amp_scaler_free(&u->sc);
    if (u->has_fp8) amp_fp8_free(&u->fp8);
}

static int path_exists(const char *dir, const char *name)
{
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

/* A finished run (summary.json) in --out is kept unless --force (or
 * --resume, which keeps what it can); --force removes its files first so an
 * interrupted overwrite never mixes two runs. */
static amp_status run_check_out(const amp_train_opts *o)
{
    static const char *const own[] = { AMP_RUN_SUMMARY, AMP_RUN_CONFIG, AMP_RUN_METRICS, AMP_RUN_TENSORS,
                                       AMP_RUN_HIST, AMP_RUN_EVENTS, AMP_RUN_CHECKPOINT };
    if (!path_exists(o->out, AMP_RUN_SUMMARY) || o->resume) return AMP_OK;
    if (!o->force)
        return amp_fail(AMP_EINVAL, "%s holds a finished run (%s); give --force to overwrite it, or another --out",
                        o->out, AMP_RUN_SUMMARY);
    char p[4200];
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", o->out, own[i]);
        if (unlink(p) != 0 && errno != ENOENT) return amp_fail(AMP_EIO, "%s: cannot remove: %s", p, strerror(errno));
    }
    return AMP_OK;
}

/* After a stop request: the temporaries are gone (run_free); what is left
 * is a checkpoint to resume from, or else nothing of this run. */
static amp_status run_interrupted(run *u, int had_dir)
{
    const amp_train_opts *o = u->o;
    if (path_exists(o->out, AMP_RUN_CHECKPOINT))
        return amp_fail(AMP_EINTR, "interrupted at step %lld; run the same command again%s to resume from the last checkpoint",
                        (long long)u->rs.next_step, o->resume ? "" : " with --resume");
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", o->out, AMP_RUN_CONFIG);
    unlink(p);
    if (!had_dir) rmdir(o->out);
    return amp_fail(AMP_EINTR, "interrupted at step %lld; nothing kept (no checkpoint: give --checkpoint-every K to make "
                    "a run resumable)", (long long)u->rs.next_step);
}

amp_status amp_train_run(const amp_train_opts *o)
{
    run *u = calloc(1, sizeof *u);
    if (!u) return amp_fail(AMP_ENOMEM, "out of memory");
    u->o = o;
    int had_dir = path_exists(o->out, ".");
    amp_status s = run_check_out(o);
    if (!s) s = run_check_opts(u);
    if (!s) s = run_scalers(u);
    if (!s) s = run_model(u);
    if (!s) s = run_open_logs(u);
    for (int64_t step = u->rs.next_step; step < o->steps && !s; step++) {
        if (o->stop && *o->stop) { s = AMP_EINTR; break; }
        s = run_step(u, step);
    }
    if (o->progress) fputc('\n', stderr);
    if (s == AMP_EINTR) {
        run_free(u);
        s = run_interrupted(u, had_dir);
        free(u);
        return s;
    }
    amp_status srun = s;
    if (s == AMP_ERUN) s = AMP_OK;           /* the logs of a stopped run are complete up to the stop */
    if (!s) s = run_finish(u, srun);
    if (!s && srun == AMP_ERUN) s = amp_fail(AMP_ERUN, "%s", u->stopmsg);
    run_free(u);
    free(u);
    return s;
}

/* `ampsim bench gemm` and `ampsim bench train`: speed ratios measured in one run
 * (one thread; CPU time of the calling thread, so that other processes on a
 * loaded machine do not count; 7 alternating rounds, best of each).
 *
 * gemm: C[M,N] = A[M,K] W[N,K]^T as the linear layer runs it under fp16-amp:
 *   plain   OpenBLAS sgemm on float32 data
 *   amp     sgemm on operands already in fp16 (activations arrive rounded from
 *           the previous layer, weights from the once-per-step cast cache) and
 *           the single rounding of the output into fp16 -- what a step pays
 *   amp+cast  amp plus rounding A and W into fp16 at every call (worst case:
 *           no cast cache, fp32 activations)
 *   ratio = t_plain / t_amp (speed relative to plain sgemm; >= 0.8 wanted).
 *   reproducible  ampsim's reproducible GEMM (amp_gemm, --gemm reproducible) on
 *           the float32 operands of plain; ratio_reproducible = t_plain /
 *           t_reproducible (>= 0.9 wanted).
 * train: time per step of fp32 (no statistics) vs fp16-amp with statistics of
 *   every tensor at every step; ratio = t_fp16amp+stats / t_fp32 (<= 1.25
 *   wanted); also against fp32 with the same statistics, and fp16-amp without
 *   statistics against fp32. Throughput: tokens per second, B*T / step time
 *   (B for the MLP, one token per sample), for fp32, fp16-amp with statistics
 *   and fp16-amp without (the CPU time of one thread, as above). */
#include "amp_base.h"
#include "amp_bench.h"
#include "amp_data.h"
#include "amp_format.h"
#include "amp_gemm.h"
#include "amp_model.h"
#include "amp_optim.h"
#include "amp_policy.h"
#include "amp_round.h"
#include "amp_scaler.h"
#include "amp_tensor.h"
#include "amp_train.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);   /* CPU time of this thread: robust to load */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Times k functions: each is repeated enough to fill ~10 ms, and the rounds
 * alternate between them (7 rounds, best of each) so that load from other
 * processes hits all of them alike. t[i] = seconds per call. */
typedef void (*bench_fn)(void *ctx);
static void time_many(int k, bench_fn *fn, void **ctx, double *t)
{
    long reps[8];
    AMP_ASSERT(k <= 8);
    for (int i = 0; i < k; i++) {
        reps[i] = 1;
        for (;;) {
            double t0 = now();
            for (long r = 0; r < reps[i]; r++) fn[i](ctx[i]);
            if (now() - t0 > 0.01 || reps[i] > (1L << 24)) break;
            reps[i] *= 2;
        }
        t[i] = INFINITY;
    }
    for (int round = 0; round < 7; round++)
        for (int i = 0; i < k; i++) {
            double t0 = now();
            for (long r = 0; r < reps[i]; r++) fn[i](ctx[i]);
            double dt = (now() - t0) / (double)reps[i];
            if (dt < t[i]) t[i] = dt;
        }
}

typedef struct gemm_case {
    int M, N, K;
    float *a, *w, *a16, *w16, *c;
    const amp_format *f16;
    amp_round_opts ro;
    amp_gemm_cfg repro;
} gemm_case;

static void run_plain(void *p)
{
    gemm_case *g = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g->M, g->N, g->K, 1.0f, g->a, g->K, g->w, g->K, 0.0f, g->c, g->N);
}

static void run_amp(void *p)
{
    gemm_case *g = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g->M, g->N, g->K, 1.0f, g->a16, g->K, g->w16, g->K, 0.0f, g->c, g->N);
    amp_round_f32(g->f16, &g->ro, g->c, g->c, (size_t)g->M * g->N, NULL);
}

static void run_repro(void *p)
{
    gemm_case *g = p;
    amp_gemm(&g->repro, 0, 1, g->M, g->N, g->K, g->a, g->K, g->w, g->K, 0.0f, g->c, g->N);
}

static void run_amp_cast(void *p)
{
    gemm_case *g = p;
    amp_round_f32(g->f16, &g->ro, g->a, g->a16, (size_t)g->M * g->K, NULL);
    amp_round_f32(g->f16, &g->ro, g->w, g->w16, (size_t)g->N * g->K, NULL);
    run_amp(p);
}

int amp_bench_gemm(FILE *out, int csv)
{
    static const struct { const char *name; int M, N, K; } shapes[] = {
        { "mlp fc1 fwd (B=32, 64->32)", 32, 32, 64 },
        { "mlp fc2 fwd (B=32, 32->10)", 32, 10, 32 },
        { "mlp wide fwd (B=256, 512->512)", 256, 512, 512 },
        { "gpt c_attn (B*T=256, 128->384)", 256, 384, 128 },
        { "gpt c_fc (B*T=256, 128->512)", 256, 512, 128 },
        { "gpt c_proj (B*T=256, 512->128)", 256, 128, 512 },
        { "gpt lm_head (B*T=256, 128->256)", 256, 256, 128 },
    };
    amp_gemm_init();
    amp_set_threads(1);
    amp_policy fp32;
    amp_policy_preset("fp32", &fp32);
    fp32.gemm = AMP_GEMM_REPRODUCIBLE;
    if (csv) fprintf(out, "shape,M,N,K,t_plain_us,t_amp_us,t_amp_cast_us,ratio,ratio_cast,t_reproducible_us,"
                          "ratio_reproducible\n");
    else {
        amp_bench_paths(out);
        fprintf(out, "%-34s %8s %8s %10s %7s %10s %8s %8s\n", "shape (fp16 operands, fp32 acc)", "plain us", "amp us",
                "amp+cast us", "ratio", "ratio_cast", "repro us", "ratio_repro");
    }
    int ok = 1;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        gemm_case g = { .M = shapes[i].M, .N = shapes[i].N, .K = shapes[i].K };
        size_t na = (size_t)g.M * g.K, nw = (size_t)g.N * g.K, nc = (size_t)g.M * g.N;
        g.a = malloc(na * 4); g.w = malloc(nw * 4); g.a16 = malloc(na * 4); g.w16 = malloc(nw * 4); g.c = malloc(nc * 4);
        if (!g.a || !g.w || !g.a16 || !g.w16 || !g.c) { ok = 0; break; }
        for (size_t k = 0; k < na; k++) g.a[k] = (float)(2 * amp_rand_uniform(1, 1, k) - 1);
        for (size_t k = 0; k < nw; k++) g.w[k] = (float)(0.1 * (2 * amp_rand_uniform(1, 2, k) - 1));
        g.f16 = amp_format_get(AMP_FMT_FP16);
        g.ro = amp_round_defaults();
        g.repro = amp_gemm_cfg_of(&fp32);
        amp_round_f32(g.f16, &g.ro, g.a, g.a16, na, NULL);
        amp_round_f32(g.f16, &g.ro, g.w, g.w16, nw, NULL);
        bench_fn fns[4] = { run_plain, run_amp, run_amp_cast, run_repro };
        void *ctxs[4] = { &g, &g, &g, &g };
        double tt[4];
        time_many(4, fns, ctxs, tt);
        double tp = tt[0], ta = tt[1], tc = tt[2], tr = tt[3];
        if (csv)
            fprintf(out, "\"%s\",%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", shapes[i].name, g.M, g.N, g.K,
                    tp * 1e6, ta * 1e6, tc * 1e6, tp / ta, tp / tc, tr * 1e6, tp / tr);
        else
            fprintf(out, "%-34s %8.2f %8.2f %10.2f %7.3f %10.3f %8.2f %8.3f\n", shapes[i].name, tp * 1e6, ta * 1e6,
                    tc * 1e6, tp / ta, tp / tc, tr * 1e6, tp / tr);
        free(g.a); free(g.w); free(g.a16); free(g.w16); free(g.c);
    }
    if (!ok) { fprintf(stderr, "ampsim bench gemm: out of memory\n"); return 2; }
    return 0;
}

/* ---- train step ------------------------------------------------------------ */
typedef struct step_case {
    amp_model m;
    amp_optim opt;
    amp_batch b;
    unsigned roles;
    int64_t step;
} step_case;

static void run_step(void *p)
{
    step_case *c = p;
    amp_step_info info;
    amp_scaler_result res;
    amp_status s = amp_train_step(&c->m, &c->opt, NULL, &c->b, c->step++, c->roles, &info, &res);
    AMP_ASSERT(s == AMP_OK);
}

static const struct { const char *name; int B, H, L; } mlps[] = {
    { "mlp 64-32-10, B=32 (default)", 32, 32, 2 },
    { "mlp 64-512-512-10, B=256", 256, 512, 3 },
};
static const struct { const char *name; int B, T, C, L, NH; } gpts[] = {
    { "gpt L=4 C=128 NH=4 T=64, B=4", 4, 64, 128, 4, 4 },
};

/* Case i of the MLP or GPT table in policy pol with GEMM kernel kind; its data
 * buffers are c->xs/toks/ys (freed by case_free). 0 and a message on failure. */
typedef struct bench_case {
    step_case sc;
    float *xs;
    int32_t *toks, *ys;
} bench_case;

static int case_make(bench_case *c, const char *pol_name, amp_gemm_kind kind, int gpt, int i)
{
    memset(c, 0, sizeof *c);
    amp_policy pol;
    amp_policy_preset(pol_name, &pol);
    pol.gemm = kind;
    amp_status s;
    size_t nx;
    if (gpt) {
        s = amp_gpt_create(&c->sc.m, &pol, gpts[i].B, gpts[i].T, gpts[i].C, gpts[i].L, gpts[i].NH, 1);
        nx = (size_t)gpts[i].B * gpts[i].T;
        c->toks = malloc(nx * sizeof(int32_t));
        c->ys = malloc(nx * sizeof(int32_t));
        for (size_t j = 0; c->toks && c->ys && j < nx; j++)
            c->toks[j] = (int32_t)(amp_rand64(5, 0, j) % 256), c->ys[j] = (int32_t)(amp_rand64(5, 1, j) % 256);
        c->sc.b = (amp_batch){ .B = gpts[i].B, .D = gpts[i].T, .tok = c->toks, .y = c->ys };
    } else {
        s = amp_mlp_create(&c->sc.m, &pol, mlps[i].B, 64, mlps[i].H, mlps[i].L, 10, 1);
        nx = (size_t)mlps[i].B;
        c->xs = malloc(nx * 64 * sizeof(float));
        c->ys = malloc(nx * sizeof(int32_t));
        for (size_t j = 0; c->xs && c->ys && j < nx * 64; j++) c->xs[j] = (float)(amp_rand64(5, 0, j) % 17) / 16.0f;
        for (size_t j = 0; c->ys && j < nx; j++) c->ys[j] = (int32_t)(amp_rand64(5, 1, j) % 10);
        c->sc.b = (amp_batch){ .B = mlps[i].B, .D = 64, .x = c->xs, .y = c->ys };
    }
    if (s || !c->ys || (gpt ? !c->toks : !c->xs)) {
        fprintf(stderr, "ampsim bench train: %s\n", s ? amp_errmsg() : "out of memory");
        return 0;
    }
    amp_optim_defaults(&c->sc.opt, AMP_OPT_SGD, 0.01f);
    amp_optim_attach(&c->sc.opt, &c->sc.m);
    return 1;
}

static void case_free(bench_case *c)
{
    amp_model_free(&c->sc.m);
    free(c->xs); free(c->toks); free(c->ys);
}

/* The cost of the reproducible GEMM: fp32 and fp16-amp steps (no statistics)
 * with --gemm reproducible and with --gemm blas, timed side by side;
 * cost = t_reproducible / t_blas. */
static int bench_kinds(FILE *out, int csv, int gpt, int ncases)
{
    if (csv) fprintf(out, "\nmodel,t_fp32_repro_ms,t_fp32_blas_ms,t_fp16amp_repro_ms,t_fp16amp_blas_ms,cost_fp32,cost_fp16amp\n");
    else fprintf(out, "\n%-32s %13s %11s %17s %15s %10s %13s\n", "model (one step, gemm kind)", "fp32 repro ms",
                 "fp32 blas ms", "fp16-amp repro ms", "fp16-amp blas ms", "cost fp32", "cost fp16-amp");
    for (int i = 0; i < ncases; i++) {
        static const char *const pols[4] = { "fp32", "fp32", "fp16-amp", "fp16-amp" };
        static const amp_gemm_kind kinds[4] = { AMP_GEMM_REPRODUCIBLE, AMP_GEMM_BLAS, AMP_GEMM_REPRODUCIBLE, AMP_GEMM_BLAS };
        bench_case c[4];
        int ok = 1;
        for (int k = 0; k < 4; k++) ok = ok && case_make(&c[k], pols[k], kinds[k], gpt, i);
        if (!ok) return 2;
        bench_fn fns[4] = { run_step, run_step, run_step, run_step };
        void *ctxs[4] = { &c[0].sc, &c[1].sc, &c[2].sc, &c[3].sc };
        double t[4];
        time_many(4, fns, ctxs, t);
        for (int k = 0; k < 4; k++) case_free(&c[k]);
        const char *name = gpt ? gpts[i].name : mlps[i].name;
        if (csv) fprintf(out, "\"%s\",%.4f,%.4f,%.4f,%.4f,%.3f,%.3f\n", name, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3, t[3] * 1e3,
                         t[0] / t[1], t[2] / t[3]);
        else fprintf(out, "%-32s %13.4f %11.4f %17.4f %15.4f %10.3f %13.3f\n", name, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3,
                     t[3] * 1e3, t[0] / t[1], t[2] / t[3]);
    }
    return 0;
}

int amp_bench_train(FILE *out, int csv, const char *model)
{
    int gpt = model && !strcmp(model, "gpt");
    if (model && !gpt && strcmp(model, "mlp")) {
        fprintf(stderr, "ampsim bench train: unknown model '%s' (mlp, gpt)\n", model);
        return 2;
    }
    const int ncases = gpt ? 1 : 2;
    amp_gemm_init();
    amp_set_threads(1);
    if (csv) fprintf(out, "model,t_fp32_ms,t_fp32_stats_ms,t_fp16amp_stats_ms,t_fp16amp_ms,ratio,ratio_vs_fp32_stats,ratio_nostats,"
                          "tokens,fp32_tok_s,fp16amp_stats_tok_s,fp16amp_tok_s\n");
    else {
        amp_bench_paths(out);
        fprintf(out, "%-32s %8s %13s %16s %12s %6s %9s %9s %10s %13s %11s\n", "model (one step)", "fp32 ms",
                "fp32+stats ms", "fp16-amp+st ms", "fp16-amp ms", "ratio", "ratio(st)", "ratio(no)", "fp32 tok/s",
                "amp+st tok/s", "amp tok/s");
    }
    for (int i = 0; i < ncases; i++) {
        double t[4];
        const char *pols[4] = { "fp32", "fp32", "fp16-amp", "fp16-amp" };
        bench_case c[4];
        int ok = 1;
        for (int k = 0; k < 4; k++) {
            ok = ok && case_make(&c[k], pols[k], AMP_GEMM_REPRODUCIBLE, gpt, i);
            if (ok) c[k].sc.roles = (k == 1 || k == 2) ? AMP_ROLES_LOGGED : 0;
        }
        if (!ok) return 2;
        bench_fn fns[4] = { run_step, run_step, run_step, run_step };
        void *ctxs[4] = { &c[0].sc, &c[1].sc, &c[2].sc, &c[3].sc };
        time_many(4, fns, ctxs, t);
        for (int k = 0; k < 4; k++) case_free(&c[k]);
        const char *name = gpt ? gpts[i].name : mlps[i].name;
        /* tokens per step: B*T for the GPT, B samples for the MLP */
        double ntok = gpt ? (double)gpts[i].B * gpts[i].T : (double)mlps[i].B;
        if (csv) fprintf(out, "\"%s\",%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.0f,%.1f,%.1f,%.1f\n", name, t[0] * 1e3, t[1] * 1e3,
                         t[2] * 1e3, t[3] * 1e3, t[2] / t[0], t[2] / t[1], t[3] / t[0], ntok, ntok / t[0], ntok / t[2], ntok / t[3]);
        else fprintf(out, "%-32s %8.4f %13.4f %16.4f %12.4f %6.3f %9.3f %9.3f %10.0f %13.0f %11.0f\n", name, t[0] * 1e3, t[1] * 1e3,
                     t[2] * 1e3, t[3] * 1e3, t[2] / t[0], t[2] / t[1], t[3] / t[0], ntok / t[0], ntok / t[2], ntok / t[3]);
    }
    return bench_kinds(out, csv, gpt, ncases);
}

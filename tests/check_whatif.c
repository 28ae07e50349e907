/* Check suite: --what-if shadow scalers (sim/whatif.c).
 *
 * Expected values come from construction, not from the code under test:
 * - gradients 2^-k (k = 0..40) in fp16: at scale 2^s the product is 2^(s-k),
 *   which flushes iff s-k <= -25 (2^-25 is the tie between 0 and 2^-24: RNE
 *   gives 0) and overflows iff s-k >= 16 (2^16 > 65504, past the rounding
 *   boundary 65520), so the counts are counts of integers k;
 * - the golden torch and megatron traces of docs/scalers.md (typed in),
 *   driven by steps whose gradients hold an inf (I) or small values (F), and a
 *   separate amp_scaler replayed over the same flags;
 * - the frameworks' rules (docs/scalers.md) for a single overflowing step (torch halves,
 *   deepspeed's hysteresis 2 absorbs the first one, raise at the minimum). */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQUIRE(c, ...) do { if (!(c)) ck_abort_msg(__VA_ARGS__); } while (0)

static const amp_format *fp16(void) { return amp_format_get(AMP_FMT_FP16); }

static size_t find(const amp_whatif *w, const char *name)
{
    for (size_t i = 0; i < amp_whatif_count(w); i++)
        if (!strcmp(amp_whatif_name(w, i), name)) return i;
    ck_abort_msg("no shadow %s", name);
    return 0;
}

/* Two fp16 gradients: A = +-2^-k for k = 0..20 (sign alternating), B = 2^-k
 * for k = 21..40 plus 5 zeros. */
#define NA 21
#define NB 25
static float ga[NA], gb[NB];
static amp_whatif_grad grads[2];
static void make_binades(void)
{
    for (int k = 0; k <= 20; k++) ga[k] = (k & 1 ? -1.0f : 1.0f) * ldexpf(1.0f, -k);
    for (int k = 21; k <= 40; k++) gb[k - 21] = ldexpf(1.0f, -k);
    for (int j = 20; j < NB; j++) gb[j] = 0.0f;
    grads[0] = (amp_whatif_grad){ .name = "a.weight.grad", .g = ga, .n = NA, .fmt = fp16(),
                                  .ro = amp_round_defaults() };
    grads[1] = (amp_whatif_grad){ .name = "b.weight.grad", .g = gb, .n = NB, .fmt = fp16(),
                                  .ro = amp_round_defaults() };
}

/* ---- counts at static scales ------------------------------------------------ */
START_TEST(static_counts)
{
    make_binades();
    float copy_a[NA], copy_b[NB];
    memcpy(copy_a, ga, sizeof ga);
    memcpy(copy_b, gb, sizeof gb);
    static const int sexp[] = { -10, 0, 10, 16, 20, 30 };
    char specs[512] = "";
    for (size_t j = 0; j < sizeof sexp / sizeof *sexp; j++)
        snprintf(specs + strlen(specs), sizeof specs - strlen(specs), "%sstatic:2^%d", j ? ";" : "", sexp[j]);
    amp_whatif *w;
    ck_assert_int_eq(amp_whatif_create(&w, specs), AMP_OK);
    ck_assert_uint_eq(amp_whatif_count(w), 6);
    for (int step = 0; step < 3; step++) {
        ck_assert_int_eq(amp_whatif_step(w, step, grads, 2, 1, NULL), AMP_OK);
        for (size_t j = 0; j < 6; j++) {
            int s = sexp[j];
            uint64_t wf = 0, wo = 0;
            for (int k = 0; k <= 40; k++) {
                wf += s - k <= -25;
                wo += s - k >= 16;
            }
            const amp_whatif_row *r = amp_whatif_last(w, j);
            REQUIRE(r->step == step, "step %lld", (long long)r->step);
            REQUIRE(r->scale == ldexpf(1.0f, s), "scale %.9g at 2^%d", (double)r->scale, s);
            REQUIRE(r->flushed == wf, "2^%d: flushed %llu, want %llu", s, (unsigned long long)r->flushed,
                    (unsigned long long)wf);
            REQUIRE(r->overflow == wo, "2^%d: overflow %llu, want %llu", s, (unsigned long long)r->overflow,
                    (unsigned long long)wo);
            REQUIRE(r->n == NA + NB, "n %llu", (unsigned long long)r->n);
            REQUIRE(r->found_inf == (wo > 0), "2^%d: found_inf %d", s, r->found_inf);
            REQUIRE(r->scale_after == r->scale, "static scale moved");
        }
    }
    /* the gradients are read, never written */
    ck_assert(!memcmp(copy_a, ga, sizeof ga) && !memcmp(copy_b, gb, sizeof gb));
    amp_whatif_free(w);
}
END_TEST

/* E5M2 (min subnormal 2^-16, max 57344): at scale 1 values 2^-k flush iff
 * k >= 17 (2^-17 is the tie to 0); at 2^20 they overflow iff 20-k >= 16. */
START_TEST(e5m2_counts)
{
    make_binades();
    for (int variant = 0; variant < 2; variant++) {
        /* 0: the gradients say e5m2; 1: they say fp16, amp_whatif_set_format(e5m2) */
        amp_whatif_grad g[2] = { grads[0], grads[1] };
        if (!variant) g[0].fmt = g[1].fmt = amp_format_get(AMP_FMT_E5M2);
        amp_whatif *w;
        ck_assert_int_eq(amp_whatif_create(&w, "none;static:2^20"), AMP_OK);
        if (variant) amp_whatif_set_format(w, amp_format_get(AMP_FMT_E5M2));
        ck_assert_int_eq(amp_whatif_step(w, 0, g, 2, 1, NULL), AMP_OK);
        const amp_whatif_row *r0 = amp_whatif_last(w, 0), *r1 = amp_whatif_last(w, 1);
        ck_assert(r0->scale == 1.0f);
        ck_assert_uint_eq(r0->flushed, 40 - 17 + 1);
        ck_assert_uint_eq(r0->overflow, 0);
        ck_assert_uint_eq(r1->flushed, 40 - 37 + 1);   /* 20-k <= -17 */
        ck_assert_uint_eq(r1->overflow, 5);            /* k = 0..4 */
        amp_whatif_free(w);
    }
}
END_TEST

/* ---- trajectories: golden traces and an independent replay ------------------- */
static const char golden_pattern[] = "FFFIFFFFIIIFFFIIIII";
static const float golden_torch[19] = { 1024, 1024, 1024, 2048, 1024, 1024, 1024, 2048, 2048, 1024,
                                        512, 256, 256, 256, 512, 256, 128, 64, 32 };
static const float golden_megatron[19] = { 1024, 1024, 1024, 2048, 2048, 2048, 2048, 4096, 4096, 4096,
                                           2048, 1024, 1024, 1024, 2048, 2048, 1024, 512, 256 };

START_TEST(golden_trajectories)
{
    const char *specs = "torch:init=1024,interval=3;megatron:init=1024,interval=3,hysteresis=2,min=256";
    amp_whatif *w;
    ck_assert_int_eq(amp_whatif_create(&w, specs), AMP_OK);
    amp_scaler ref;
    ck_assert_int_eq(amp_scaler_init_str(&ref, "torch:init=1024,interval=3"), AMP_OK);
    float fin[8], bad[8];
    for (int i = 0; i < 8; i++) fin[i] = bad[i] = ldexpf(1.0f, -5 - i);
    bad[3] = INFINITY;                       /* the run's own gradient held an inf */
    size_t it = find(w, "torch:init=1024,interval=3");
    size_t im = find(w, "megatron:init=1024,interval=3,hysteresis=2,min=256");
    for (int i = 0; golden_pattern[i]; i++) {
        int inf = golden_pattern[i] == 'I';
        amp_whatif_grad g = { .g = inf ? bad : fin, .n = 8, .fmt = fp16(), .ro = amp_round_defaults() };
        ck_assert_int_eq(amp_whatif_step(w, i, &g, 1, 0, NULL), AMP_OK);
        amp_scaler_obs obs = { .found_inf = inf };
        amp_scaler_result rr;
        ck_assert_int_eq(amp_scaler_update(&ref, &obs, &rr), AMP_OK);
        const amp_whatif_row *t = amp_whatif_last(w, it), *m = amp_whatif_last(w, im);
        REQUIRE(t->scale == golden_torch[i], "torch step %d: %.9g, want %.9g", i, (double)t->scale,
                (double)golden_torch[i]);
        REQUIRE(m->scale == golden_megatron[i], "megatron step %d: %.9g, want %.9g", i, (double)m->scale,
                (double)golden_megatron[i]);
        REQUIRE(t->scale == rr.scale_used && t->scale_after == rr.scale_after && t->skipped == rr.skipped,
                "torch step %d differs from the replay", i);
        REQUIRE(t->skipped == inf && t->found_inf == inf, "torch step %d: skipped %d", i, t->skipped);
        REQUIRE(t->overflow == (uint64_t)inf, "step %d: overflow %llu", i, (unsigned long long)t->overflow);
    }
    amp_scaler_free(&ref);
    amp_whatif_free(w);
}
END_TEST

/* ---- overflow at the shadow's own scale -------------------------------------- */
START_TEST(overflow_backoff)
{
    /* g = 1: at 2^16 the product 65536 overflows fp16; at 2^15 it is exact */
    float g1[4] = { 1.0f, 0.5f, -0.25f, 0.0f };
    amp_whatif_grad g = { .g = g1, .n = 4, .fmt = fp16(), .ro = amp_round_defaults() };
    amp_whatif *w;
    ck_assert_int_eq(amp_whatif_create(&w, "torch;deepspeed;apex;none"), AMP_OK);
    size_t it = find(w, "torch"), id = find(w, "deepspeed"), ia = find(w, "apex"), in = find(w, "none");
    ck_assert_int_eq(amp_whatif_step(w, 0, &g, 1, 1, NULL), AMP_OK);
    const amp_whatif_row *t = amp_whatif_last(w, it), *d = amp_whatif_last(w, id), *a = amp_whatif_last(w, ia),
                         *n = amp_whatif_last(w, in);
    ck_assert(t->scale == 65536.0f && t->skipped && t->overflow == 1 && t->scale_after == 32768.0f);
    ck_assert(a->scale == 65536.0f && a->skipped && a->scale_after == 32768.0f);
    /* deepspeed: hysteresis 2 absorbs the first overflow, the step is still skipped */
    ck_assert(d->skipped && d->scale_after == 65536.0f);
    ck_assert(n->scale == 1.0f && !n->skipped && n->overflow == 0 && n->flushed == 0);
    ck_assert_int_eq(amp_whatif_step(w, 1, &g, 1, 1, NULL), AMP_OK);
    ck_assert(t->scale == 32768.0f && !t->skipped && t->overflow == 0);
    ck_assert(d->scale == 65536.0f && d->skipped && d->scale_after == 32768.0f);
    ck_assert_int_eq(amp_whatif_step(w, 2, &g, 1, 1, NULL), AMP_OK);
    ck_assert(d->scale == 32768.0f && !d->skipped);
    amp_whatif_free(w);
}
END_TEST

/* deepspeed at its minimum with raise=1 stops: a row at that step (even when
 * not logged), none after; the thread's error message is left alone. */
START_TEST(deepspeed_stop_and_csv)
{
    char dir[] = "/tmp/check_whatif_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    amp_whatif *w;
    ck_assert_int_eq(amp_whatif_open(&w, dir, "deepspeed:init=1,min=1; torch:init=1024,interval=3"), AMP_OK);
    char path[4200];
    snprintf(path, sizeof path, "%s/whatif.csv", dir);
    float fin[3] = { 0x1p-20f, 1.0f, 0.0f }, bad[3] = { 0x1p-20f, NAN, 0.0f };
    amp_fail(AMP_EINVAL, "sentinel");
    for (int step = 0; step < 5; step++) {
        amp_whatif_grad g = { .g = step == 1 || step == 2 ? bad : fin, .n = 3, .fmt = fp16(),
                              .ro = amp_round_defaults() };
        ck_assert_int_eq(amp_whatif_step(w, step, &g, 1, step % 2 == 0, NULL), AMP_OK);
    }
    ck_assert_str_eq(amp_errmsg(), "sentinel");
    ck_assert(amp_whatif_last(w, 0)->stopped);
    ck_assert_int_eq(access(path, F_OK), -1);  /* not under its final name before close */
    ck_assert_int_eq(amp_whatif_close(w), AMP_OK);
    char *text;
    size_t len;
    ck_assert_int_eq(amp_read_file(path, 1 << 20, &text, &len), AMP_OK);
    /* deepspeed: step 1 NaN -> hysteresis, step 2 NaN at min 1 -> stop.
     * torch 1024: F I I F F -> 1024, 1024(skip), 512(skip), 256, 256.
     * fp16 at 1024: 2^-20*2^10 = 2^-10 (exact), 1024 (exact); at 1: 2^-20 is
     * subnormal, not flushed. */
    const char *want =
        "step,scaler,scale,skipped,flushed,overflow,n\n"
        "0,\"deepspeed:init=1,min=1\",1,0,0,0,3\n"
        "0,\"torch:init=1024,interval=3\",1024,0,0,0,3\n"
        "2,\"deepspeed:init=1,min=1\",1,1,0,1,3\n"
        "2,\"torch:init=1024,interval=3\",512,1,0,1,3\n"
        "4,\"torch:init=1024,interval=3\",256,0,0,0,3\n";
    ck_assert_str_eq(text, want);
    free(text);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---- registry form ------------------------------------------------------------- */
START_TEST(registry_form)
{
    amp_tensors r;
    amp_tensors_init(&r, 1, AMP_RND_NE, 0);
    size_t shp[1] = { 41 };
    amp_tensor *w1, *g1, *act;
    ck_assert_int_eq(amp_tensors_add(&r, "fc.weight", AMP_ROLE_WEIGHT, amp_format_get(AMP_FMT_FP32), 1, shp, &w1), AMP_OK);
    ck_assert_int_eq(amp_tensors_add(&r, "fc.weight.grad", AMP_ROLE_WEIGHT_GRAD, fp16(), 1, shp, &g1), AMP_OK);
    ck_assert_int_eq(amp_tensors_add(&r, "fc.out", AMP_ROLE_ACT, fp16(), 1, shp, &act), AMP_OK);
    w1->grad = g1;
    w1->grad32 = calloc(41, sizeof(float));
    for (int k = 0; k <= 40; k++) w1->grad32[k] = ldexpf(1.0f, -k);
    amp_whatif *w;
    ck_assert_int_eq(amp_whatif_create(&w, "static:1"), AMP_OK);
    ck_assert_int_eq(amp_whatif_step_reg(w, &r, 0, 1), AMP_OK);
    ck_assert_uint_eq(amp_whatif_last(w, 0)->n, 41);
    ck_assert_uint_eq(amp_whatif_last(w, 0)->flushed, 16);   /* k = 25..40 */
    ck_assert_ptr_null(g1->stats);                            /* the run's statistics untouched */
    amp_whatif_free(w);
    amp_tensors_free(&r);
}
END_TEST

/* ---- riding along a real training loop --------------------------------------------
 * A 6-layer fp16-amp MLP on synthetic data with torch at 2^24: the loss
 * gradient overflows fp16 for the first steps. A shadow with the run's own
 * SPEC sees S * grad32 = the fp16 gradient exactly (power-of-two scales), so
 * its trajectory must equal the run's, step for step (skips included); and the
 * run with shadows must be bit-identical to the run without. */
#define TB 16
#define TSTEPS 40
static void train_mlp(int with_whatif, float *loss, float *scale, int *skipped, int *wi_ok)
{
    amp_gemm_init();
    amp_policy pol;
    ck_assert_int_eq(amp_policy_preset("fp16-amp", &pol), AMP_OK);
    amp_model m;
    ck_assert_int_eq(amp_mlp_create(&m, &pol, TB, 64, 16, 6, 10, 7), AMP_OK);
    amp_optim opt;
    amp_optim_defaults(&opt, AMP_OPT_SGD, 0.1f);
    ck_assert_int_eq(amp_optim_attach(&opt, &m), AMP_OK);
    amp_scaler sc;
    const char *spec = "torch:init=2^24,interval=8";
    ck_assert_int_eq(amp_scaler_init_str(&sc, spec), AMP_OK);
    amp_whatif *w = NULL;
    if (with_whatif) ck_assert_int_eq(amp_whatif_create(&w, "torch:init=2^24,interval=8;none;adaptive"), AMP_OK);
    static float x[TB * 64];
    static int32_t y[TB];
    *wi_ok = 1;
    for (int step = 0; step < TSTEPS; step++) {
        for (int i = 0; i < TB * 64; i++) x[i] = (float)amp_rand_uniform(3, (uint64_t)step, (uint64_t)i);
        for (int i = 0; i < TB; i++) y[i] = (step + i) % 10;
        amp_batch b = { .B = TB, .D = 64, .x = x, .y = y };
        amp_step_info info;
        amp_scaler_result res;
        ck_assert_int_eq(amp_train_step(&m, &opt, &sc, &b, step, step % 5 ? 0 : AMP_ROLES_LOGGED, &info, &res), AMP_OK);
        loss[step] = info.loss;
        scale[step] = info.scale;
        skipped[step] = info.skipped;
        if (w) {
            ck_assert_int_eq(amp_whatif_step_reg(w, &m.reg, step, 1), AMP_OK);
            const amp_whatif_row *r = amp_whatif_last(w, 0);
            if (r->scale != info.scale || r->skipped != info.skipped) *wi_ok = 0;
        }
    }
    amp_whatif_free(w);
    amp_scaler_free(&sc);
    amp_model_free(&m);
}

START_TEST(rides_along_training)
{
    float l0[TSTEPS], s0[TSTEPS], l1[TSTEPS], s1[TSTEPS];
    int k0[TSTEPS], k1[TSTEPS], ok0, ok1, nskip = 0;
    train_mlp(0, l0, s0, k0, &ok0);
    train_mlp(1, l1, s1, k1, &ok1);
    for (int i = 0; i < TSTEPS; i++) {
        REQUIRE(amp_f2u(l0[i]) == amp_f2u(l1[i]) && s0[i] == s1[i] && k0[i] == k1[i],
                "step %d: run changed by --what-if (loss %a vs %a)", i, (double)l0[i], (double)l1[i]);
        nskip += k0[i];
    }
    ck_assert_msg(nskip >= 2, "the scripted run should overflow at 2^24 (skipped %d)", nskip);
    ck_assert_msg(ok1, "the shadow torch differs from the run's torch");
}
END_TEST

/* ---- lists ------------------------------------------------------------------------ */
START_TEST(spec_lists)
{
    amp_whatif *w;
    ck_assert_int_eq(amp_whatif_create(&w, NULL), AMP_OK);
    static const char *kinds[] = { "none", "static", "torch", "apex", "deepspeed", "megatron", "keras",
                                   "adaptive", "underflow" };
    ck_assert_uint_eq(amp_whatif_count(w), 9);
    ck_assert_str_eq(amp_whatif_name(w, 1), "static:65536");
    ck_assert(amp_scaler_scale(amp_whatif_scaler(w, 1)) == 65536.0f);
    for (size_t i = 0; i < 9; i++) {
        if (i != 1) ck_assert_str_eq(amp_whatif_name(w, i), kinds[i]);
        ck_assert_str_eq(amp_scaler_kind_name(amp_whatif_scaler(w, i)->spec.kind), kinds[i]);
    }
    /* every default shadow runs on the binade gradients; n is the same for all */
    make_binades();
    for (int step = 0; step < 4; step++) ck_assert_int_eq(amp_whatif_step(w, step, grads, 2, 1, NULL), AMP_OK);
    for (size_t i = 0; i < 9; i++) ck_assert_uint_eq(amp_whatif_last(w, i)->n, NA + NB);
    amp_whatif_free(w);
    ck_assert_int_eq(amp_whatif_create(&w, "torch;bogus"), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "bogus"));
    ck_assert_int_eq(amp_whatif_create(&w, "torch;delayed"), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "delayed"));
    ck_assert_int_eq(amp_whatif_create(&w, "torch; torch"), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "twice"));
    ck_assert_int_eq(amp_whatif_create(&w, "torch:nokey=1"), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "nokey"));
    ck_assert_int_eq(amp_whatif_create(&w, "torch;;apex"), AMP_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("whatif");
    TCase *tc = tcase_create("whatif");
    tcase_add_test(tc, static_counts);
    tcase_add_test(tc, e5m2_counts);
    tcase_add_test(tc, golden_trajectories);
    tcase_add_test(tc, overflow_backoff);
    tcase_add_test(tc, deepspeed_stop_and_csv);
    tcase_add_test(tc, registry_form);
    tcase_add_test(tc, spec_lists);
    tcase_add_test(tc, rides_along_training);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}

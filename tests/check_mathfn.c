/* ampsim's elementary functions (sim/amp_math.h) against MPFR at 256 bits:
 * the error bound each one states, over random arguments spread across its
 * whole range (log-uniform magnitudes) and the hard places (near 0, near 1 for
 * log, the overflow and underflow edges, quadrant boundaries for cos2pi).
 * Prints the largest error seen. AMP_SEED changes the arguments. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ampsim.h"

static uint64_t seed = 777;
enum { N = 200000 };

static double U(uint64_t st, uint64_t i) { return amp_rand_uniform(seed, st, i); }

/* |got - exact| in units of the last place of exact at precision p (53 or 24,
 * with the subnormal quantum emin_q) */
static double ulp_err(double got, const mpfr_t exact, int p, int emin_q)
{
    if (mpfr_zero_p(exact)) return got == 0.0 ? 0.0 : INFINITY;
    mpfr_t d;
    mpfr_init2(d, 256);
    mpfr_set_d(d, got, MPFR_RNDN);
    mpfr_sub(d, d, exact, MPFR_RNDN);
    long e = mpfr_get_exp(exact) - 1 - (p - 1);   /* |exact| in [2^(E), 2^(E+1)): ulp 2^(E-p+1) */
    if (e < emin_q) e = emin_q;
    mpfr_mul_2si(d, d, -e, MPFR_RNDN);
    double r = fabs(mpfr_get_d(d, MPFR_RNDN));
    mpfr_clear(d);
    return r;
}

typedef int (*mpfr_fn)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

static double check_d(const char *name, double (*f)(double), mpfr_fn g, const double *x, int n, double bound)
{
    mpfr_t a, y;
    mpfr_init2(a, 256);
    mpfr_init2(y, 256);
    double worst = 0, wx = 0;
    for (int i = 0; i < n; i++) {
        mpfr_set_d(a, x[i], MPFR_RNDN);
        g(y, a, MPFR_RNDN);
        double e = ulp_err(f(x[i]), y, 53, -1074);
        if (e > worst) worst = e, wx = x[i];
    }
    printf("%-10s max error %.4f ulp (at %a), bound %g\n", name, worst, wx, bound);
    ck_assert_msg(worst < bound, "%s(%a): error %.4f ulp, bound %g", name, wx, worst, bound);
    mpfr_clear(a);
    mpfr_clear(y);
    return worst;
}

static void check_f(const char *name, float (*f)(float), mpfr_fn g, const float *x, int n, double bound)
{
    mpfr_t a, y;
    mpfr_init2(a, 256);
    mpfr_init2(y, 256);
    double worst = 0;
    float wx = 0;
    for (int i = 0; i < n; i++) {
        mpfr_set_d(a, x[i], MPFR_RNDN);
        g(y, a, MPFR_RNDN);
        double e = ulp_err(f(x[i]), y, 24, -149);
        if (e > worst) worst = e, wx = x[i];
    }
    printf("%-10s max error %.6f ulp (at %a), bound %.6f\n", name, worst, wx, bound);
    ck_assert_msg(worst < bound, "%s(%a): error %.6f ulp, bound %g", name, wx, worst, bound);
    mpfr_clear(a);
    mpfr_clear(y);
}

START_TEST(test_exp)
{
    static double x[N];
    for (int i = 0; i < N; i++) {
        double u = U(1, i);
        x[i] = i % 3 == 0 ? -745.0 + u * (709.78 + 745.0)                      /* whole range */
               : i % 3 == 1 ? (U(2, i) < 0.5 ? -1 : 1) * ldexp(1.0, -60 + (int)(64 * u)) * (1 + U(3, i))
               : -708.0 - u * 37.0;                                            /* subnormal results */
    }
    x[0] = 0.0; x[1] = 709.78; x[2] = -745.1; x[3] = 1.0; x[4] = -1.0;
    check_d("exp", amp_exp, mpfr_exp, x, N, 1.0);
    ck_assert(amp_exp(710.0) == HUGE_VAL && amp_exp(-746.0) == 0.0 && isnan(amp_exp(NAN)));
}
END_TEST

START_TEST(test_log)
{
    static double x[N];
    for (int i = 0; i < N; i++) {
        double u = U(4, i);
        x[i] = i % 2 ? ldexp(1.0 + U(5, i), -1074 + (int)(2097 * u))                 /* every binade */
                     : 1.0 + (U(6, i) < 0.5 ? -1 : 1) * ldexp(1.0 + U(7, i), -(int)(52 * u) - 1);   /* near 1 */
        if (x[i] == 0.0) x[i] = 0x1p-1074;
    }
    x[0] = 1.0; x[1] = 0x1p-1074; x[2] = 0x1.fffffffffffffp1023; x[3] = 2.0; x[4] = 0.5;
    check_d("log", amp_log, mpfr_log, x, N, 1.0);
    ck_assert(amp_log(0.0) == -HUGE_VAL && isnan(amp_log(-1.0)) && amp_log(HUGE_VAL) == HUGE_VAL);
}
END_TEST

START_TEST(test_pown)
{
    mpfr_t a, y;
    mpfr_init2(a, 256);
    mpfr_init2(y, 256);
    double worst = 0;
    static const double betas[] = { 0.9, 0.999, 0.95, 0.98, 0.9999, 0.5, 1.5, -0.75 };
    for (int i = 0; i < 20000; i++) {
        double x = i < 8 ? betas[i] : i % 2 ? 0.5 + 0.5 * U(8, i) : 0.1 + 3.0 * U(9, i);
        int64_t n = i % 4 == 0 ? (int64_t)(U(10, i) * 100) : (int64_t)ldexp(U(10, i), (int)(U(11, i) * 30));
        if (fabs(x) > 1.0 && n > 600) n = 600;
        mpfr_set_d(a, x, MPFR_RNDN);
        mpfr_pow_si(y, a, (long)n, MPFR_RNDN);
        if (mpfr_get_exp(y) < -900 || mpfr_get_exp(y) > 900) continue;   /* outside the stated range */
        double e = ulp_err(amp_pown(x, n), y, 53, -1074);
        ck_assert_msg(e < 1.0, "pown(%a, %lld): error %.4f ulp", x, (long long)n, e);
        if (e > worst) worst = e;
    }
    printf("%-10s max error %.4f ulp, bound 1\n", "pown", worst);
    ck_assert(amp_pown(0.9, 0) == 1.0 && amp_pown(2.0, 10) == 1024.0 && amp_pown(0.5, -2) == 4.0);
    mpfr_clear(a);
    mpfr_clear(y);
}
END_TEST

START_TEST(test_cos2pi)
{
    mpfr_t a, y, pi2;
    mpfr_inits2(256, a, y, pi2, (mpfr_ptr)0);
    mpfr_const_pi(pi2, MPFR_RNDN);
    mpfr_mul_2si(pi2, pi2, 1, MPFR_RNDN);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double u = i < 9 ? i / 8.0 : i % 4 == 0 ? (double)(i % 16) / 16.0 + ldexp(U(12, i) - 0.5, -40) : U(12, i) * 3.0 - 1.0;
        mpfr_set_d(a, u, MPFR_RNDN);
        mpfr_mul(a, a, pi2, MPFR_RNDN);
        mpfr_cos(y, a, MPFR_RNDN);
        mpfr_sub_d(y, y, amp_cos2pi(u), MPFR_RNDN);
        double e = fabs(mpfr_get_d(y, MPFR_RNDN)) / 0x1p-52;
        ck_assert_msg(e < 1.0, "cos2pi(%a): error %.3f x 2^-52", u, e);
        if (e > worst) worst = e;
    }
    printf("%-10s max error %.4f x 2^-52 absolute, bound 1\n", "cos2pi", worst);
    ck_assert(amp_cos2pi(0.0) == 1.0 && amp_cos2pi(0.5) == -1.0 && amp_cos2pi(0.25) == 0.0);
    mpfr_clears(a, y, pi2, (mpfr_ptr)0);
}
END_TEST

static float F(uint64_t st, uint64_t i, float lo, float hi) { return lo + (hi - lo) * (float)U(st, i); }

START_TEST(test_float)
{
    static float x[N];
    for (int i = 0; i < N; i++) x[i] = i % 2 ? F(13, i, -103.9f, 88.72f) : ldexpf(F(14, i, -1, 1), -(i % 40));
    check_f("expf", amp_expf, mpfr_exp, x, N, 0.5 + 0x1p-20);
    for (int i = 0; i < N; i++) {
        x[i] = i % 2 ? ldexpf(1.0f + (float)U(15, i), -149 + (int)(277 * U(16, i))) : 1.0f + F(17, i, -0.25f, 0.25f);
        if (x[i] == 0.0f) x[i] = 0x1p-149f;
    }
    check_f("logf", amp_logf, mpfr_log, x, N, 0.5 + 0x1p-20);
    for (int i = 0; i < N; i++)
        x[i] = i % 3 == 0 ? F(18, i, -10, 10) : i % 3 == 1 ? F(18, i, -1, 1) : ldexpf(F(19, i, -1, 1), -(int)(40 * U(20, i)));
    x[0] = 0x1p-10f; x[1] = -0x1p-10f; x[2] = 9.1f; x[3] = 9.0999994f; x[4] = 0x1.fffffep-11f;
    check_f("tanhf", amp_tanhf, mpfr_tanh, x, N, 0.5 + 0x1p-16);
    ck_assert(amp_tanhf(INFINITY) == 1.0f && amp_tanhf(-INFINITY) == -1.0f && isnan(amp_tanhf(NAN)));
}
END_TEST

/* The array versions (vectorised, one clone per instruction set) give the
 * scalar functions' bits. */
START_TEST(test_arrays)
{
    static float x[N], y[N];
    static double xd[N], yd[N];
    for (int i = 0; i < N; i++) {
        x[i] = i % 7 == 0 ? amp_u2f((uint32_t)amp_rand64(seed, 30, i)) : F(31, i, -120, 100);
        xd[i] = i % 5 == 0 ? -745.0 + 1460.0 * U(32, i) : 40.0 * (U(33, i) - 0.5);
    }
    x[0] = NAN; x[1] = INFINITY; x[2] = -INFINITY; xd[0] = NAN; xd[1] = -INFINITY; xd[2] = 1e6;
    amp_expf_n(x, y, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(amp_f2u(y[i]) == amp_f2u(amp_expf(x[i])), "expf_n(%a) = %a, expf %a", x[i], y[i], amp_expf(x[i]));
    amp_tanhf_n(x, y, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(amp_f2u(y[i]) == amp_f2u(amp_tanhf(x[i])), "tanhf_n(%a) = %a, tanhf %a", x[i], y[i], amp_tanhf(x[i]));
    amp_exp_n(xd, yd, N);
    for (int i = 0; i < N; i++) {
        double w = amp_exp(xd[i]);
        ck_assert_msg(memcmp(&w, &yd[i], sizeof w) == 0, "exp_n(%a) = %a, exp %a", xd[i], yd[i], w);
    }
}
END_TEST

/* sqrt is used from the C library as it is: IEEE-754 makes it correctly rounded. */
START_TEST(test_sqrt)
{
    mpfr_t a, y;
    mpfr_init2(a, 256);
    mpfr_init2(y, 256);
    for (int i = 0; i < N; i++) {
        double x = ldexp(1.0 + U(21, i), -1022 + (int)(2045 * U(22, i)));
        mpfr_set_d(a, x, MPFR_RNDN);
        mpfr_sqrt(y, a, MPFR_RNDN);
        ck_assert_msg(sqrt(x) == mpfr_get_d(y, MPFR_RNDN), "sqrt(%a) not correctly rounded", x);
        float xf = (float)x;
        if (xf > 0 && isfinite(xf)) {
            mpfr_set_d(a, xf, MPFR_RNDN);
            mpfr_sqrt(y, a, MPFR_RNDN);
            ck_assert_msg(sqrtf(xf) == mpfr_get_flt(y, MPFR_RNDN), "sqrtf(%a) not correctly rounded", xf);
        }
    }
    mpfr_clear(a);
    mpfr_clear(y);
}
END_TEST

int main(void)
{
    amp_check_seed("check_mathfn", "AMP_SEED", &seed);
    Suite *s = suite_create("mathfn");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_exp);
    tcase_add_test(tc, test_log);
    tcase_add_test(tc, test_pown);
    tcase_add_test(tc, test_cos2pi);
    tcase_add_test(tc, test_float);
    tcase_add_test(tc, test_sqrt);
    tcase_add_test(tc, test_arrays);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
